"""Export a layerkit model or function, check the file and run it in ONNX Runtime."""
import numpy as np

import layerkit as lk

TOL = 1e-5
BATCHES = (1, 4)   # the exporter traces at batch 2 and 3: test other sizes
RNG = np.random.default_rng(3)


def _sized(shape, b) -> tuple:
    return tuple(b if d is None else d for d in shape)


def floats(*shape):
    """An input maker: standard normal float32 of ``shape`` (None = the batch size)."""
    return lambda b: RNG.standard_normal(_sized(shape, b)).astype(np.float32)


def ints(hi, *shape):
    """An input maker: int32 in [0, hi) of ``shape`` (None = the batch size)."""
    return lambda b: RNG.integers(0, hi, _sized(shape, b)).astype(np.int32)


def session(path):
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    return ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])


def export_and_run(obj, sig, makers, path, call=None, batches=BATCHES, **kwargs):
    """Export ``obj``, check the model, and compare ONNX Runtime with ``call`` (default
    ``obj``) on inputs from ``makers`` (one per input, called with the batch size).
    Returns the largest absolute difference seen."""
    import onnx

    proto = lk.onnx.export(obj, path, input_signature=sig, **kwargs)
    onnx.checker.check_model(onnx.load(str(path)), full_check=True)
    sess = session(path)
    call = obj if call is None else call
    worst = 0.0
    for b in batches:
        xs = [m(b) for m in makers]
        want = call(*xs)
        want = [np.asarray(w) for w in (want if isinstance(want, (list, tuple)) else [want])]
        got = sess.run(None, {i.name: x for i, x in zip(sess.get_inputs(), xs)})
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert g.shape == w.shape and g.dtype == w.dtype, (g.shape, w.shape, g.dtype, w.dtype)
            np.testing.assert_allclose(g, w, rtol=0, atol=TOL)
            if g.size:
                worst = max(worst, float(np.max(np.abs(g.astype(np.float64) - w))))
    return proto, worst
