"""Inference time of exported ONNX models in ONNX Runtime vs the same models in layerkit.

Run: python benchmarks/bench_onnx.py [--quick] [--repeats 11] [--threads=N]
Needs the optional packages onnx and onnxruntime (pip install "layerkit[onnx]" onnxruntime).

Models (tests/onnx/architectures.py, at the sizes below), each exported once with
``lk.onnx.export`` (dynamic batch) and run on the same inputs at batch 1 and 32:
  mlp          784-512-256-10 (Dense relu / tanh, Dropout, softmax)
  cnn          28x28x1: Conv2D, BatchNorm, MaxPool, DepthwiseConv2D, Conv2D/2, Dense
  lstm_text    64 tokens, Embedding 64, LSTM 128 (sequences), Bidirectional LSTM 64
  generator    the keras-io DCGAN generator: Dense 6272, 2x Conv2DTranspose 128, Conv2D
  transformer  64 tokens, dim 64, 4 heads, MultiHeadAttention + LayerNorm + FFN 256
Columns (ms per call, one call = one batch): layerkit eager (``model(x,
training=False)``), layerkit graph (the same call as an ``lk.function``), ONNX Runtime
(``session.run``, CPU provider, default graph optimisations), and ONNX Runtime's speed-up
over the faster layerkit column. Medians of interleaved repeats (every round runs every
variant once, so load from other processes hits them alike); outputs are checked first
(max |ORT - layerkit| in the last column). ``--threads=N`` sets BLAS's and ONNX Runtime's
intra-op threads (default: each library's own default, 2 on the 2-core box).

The process unsets OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE for itself (benchmarks/_common.py).
"""
from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import clean_blas_env, table, timeit_interleaved  # noqa: E402,I001

_THREADS = next((a.split("=", 1)[1] for a in sys.argv if a.startswith("--threads=")), None)
if _THREADS:  # BLAS reads its thread count when NumPy loads: set it before the import
    os.environ["OPENBLAS_NUM_THREADS"] = os.environ["OMP_NUM_THREADS"] = _THREADS
clean_blas_env()

import argparse  # noqa: E402

import numpy as np  # noqa: E402

import layerkit as lk  # noqa: E402
from tests.onnx import architectures as arch  # noqa: E402

MODELS = {
    "mlp": lambda: arch.mlp(784, (512, 256), 10),
    "cnn": lambda: arch.cnn(28, 10),
    "lstm_text": lambda: arch.lstm_text(seq_len=64, vocab=1000, dim=64, units=128),
    "generator": arch.dcgan_generator,
    "transformer": lambda: arch.transformer_block(seq_len=64, vocab=1000, dim=64, heads=4,
                                                  ff=256),
}


def _number(fn, budget: float) -> int:
    t0 = time.perf_counter()
    fn()
    return max(1, min(2000, int(budget / max(time.perf_counter() - t0, 1e-7))))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer, shorter repeats")
    parser.add_argument("--repeats", type=int, default=None)
    args, _ = parser.parse_known_args()
    repeats = args.repeats or (5 if args.quick else 11)
    budget = 0.02 if args.quick else 0.05
    try:
        import onnxruntime as ort
    except ImportError:
        sys.exit("bench_onnx needs onnxruntime (and onnx): pip install onnx onnxruntime")
    opts = ort.SessionOptions()
    if _THREADS:
        opts.intra_op_num_threads = int(_THREADS)
    print(f"onnxruntime {ort.__version__}, layerkit {lk.__version__}, numpy {np.__version__}"
          + (f", {_THREADS} thread(s)" if _THREADS else ""))
    rng = np.random.default_rng(0)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, build in MODELS.items():
            lk.random.set_seed(0)
            model = build()
            path = os.path.join(tmp, f"{name}.onnx")
            lk.onnx.export(model, path)
            sess = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
            feed_name = sess.get_inputs()[0].name
            graph = lk.function(lambda x, model=model: model(x, training=False))
            for batch in (1, 32):
                x = arch.example_input(model, batch, rng)
                xt = lk.constant(x)
                want = model(xt, training=False).numpy()
                got = sess.run(None, {feed_name: x})[0]
                diff = float(np.max(np.abs(got - want)))
                assert np.allclose(graph(xt).numpy(), want, rtol=1e-5, atol=1e-6)
                fns = {"eager": lambda xt=xt, model=model: model(xt, training=False),
                       "graph": lambda xt=xt, graph=graph: graph(xt),
                       "ort": lambda x=x, sess=sess, feed=feed_name: sess.run(None,
                                                                               {feed: x})}
                number = _number(fns["eager"], budget)
                t = timeit_interleaved(fns, number=number, repeat=repeats)
                best = min(t["eager"], t["graph"])
                rows.append([name, batch, f"{t['eager'] * 1e3:.3f}", f"{t['graph'] * 1e3:.3f}",
                             f"{t['ort'] * 1e3:.3f}", f"{best / t['ort']:.2f}x", f"{diff:.1e}"])
                print(f"  {name} batch {batch} done", file=sys.stderr)
    print()
    print(table(rows, ["model", "batch", "layerkit eager ms", "layerkit graph ms",
                       "onnxruntime ms", "ORT speed-up", "max |diff|"]))


if __name__ == "__main__":
    main()
