"""LSTM and GRU layer speed at the issue-3 size: forward + backward, seq 50, batch 32,
input 64, hidden 128, float32.

Cases (each: run the sequence, loss = sum of the last hidden state, gradients of the
loss w.r.t. the three weights; the input is data and needs no gradient):
  layerkit    lk.layers.LSTM / GRU under a GradientTape (the fused sequence records)
  per-step    the same layer driven by the generic RNN loop (a stock cell subclass, so
              the fused path is not taken): ~12 eager ops per step each way
  numpy       hand-written NumPy BPTT: one GEMM for the input projection, per-step GEMM
              and gate math, weight gradients as one GEMM after the loop (the floor)
  torch       torch.nn.LSTM / GRU (batch_first) + autograd, when torch is installed

Every figure is the median of interleaved rounds (each round runs every case once, so
load from other processes hits all of them alike); ratios are to the NumPy floor of the
same run. The BLAS environment is cleaned first (benchmarks/_common.py says so).

Run: python benchmarks/bench_rnn.py [--repeats 15] [--threads=N] [--no-torch]
(--threads=1, for BLAS and torch alike, gives steadier figures on a machine shared with
other work: idle OpenMP/BLAS threads spinning after one case otherwise slow the next.)
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import clean_blas_env, table, timeit_interleaved, try_import_torch  # noqa: E402,I001

_THREADS = next((a.split("=", 1)[1] for a in sys.argv if a.startswith("--threads=")), None)
if _THREADS:  # BLAS reads its thread count when NumPy loads: set it before the import
    os.environ["OPENBLAS_NUM_THREADS"] = os.environ["OMP_NUM_THREADS"] = _THREADS
clean_blas_env()

import argparse  # noqa: E402

import numpy as np  # noqa: E402

import layerkit as lk  # noqa: E402
from layerkit.layers import GRU, LSTM, RNN, GRUCell, LSTMCell  # noqa: E402

SEQ, BATCH, INPUT, HIDDEN = 50, 32, 64, 128


# ---- the hand-written NumPy floor ----------------------------------------------------
def _sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


def numpy_lstm(x, w, r, b):
    """Forward + BPTT of sum(h_T) for a Keras-layout LSTM; returns (dW, dR, db)."""
    n, steps, _ = x.shape
    u = r.shape[0]
    xp = (x.reshape(n * steps, -1) @ w + b).reshape(n, steps, 4 * u)
    h = np.zeros((n, u), x.dtype)
    c = np.zeros((n, u), x.dtype)
    cache = []
    for t in range(steps):
        z = xp[:, t] + h @ r
        i, f = _sigmoid(z[:, :u]), _sigmoid(z[:, u:2 * u])
        g, o = np.tanh(z[:, 2 * u:3 * u]), _sigmoid(z[:, 3 * u:])
        c_new = f * c + i * g
        tc = np.tanh(c_new)
        cache.append((h, c, i, f, g, o, tc))
        h, c = o * tc, c_new
    dh, dc = np.ones_like(h), np.zeros_like(c)
    dz = np.empty((n, steps, 4 * u), x.dtype)
    h_prev = np.empty((n, steps, u), x.dtype)
    for t in range(steps - 1, -1, -1):
        hp, cp, i, f, g, o, tc = cache[t]
        dc = dc + dh * o * (1 - tc * tc)
        dz[:, t, :u] = dc * g * i * (1 - i)
        dz[:, t, u:2 * u] = dc * cp * f * (1 - f)
        dz[:, t, 2 * u:3 * u] = dc * i * (1 - g * g)
        dz[:, t, 3 * u:] = dh * tc * o * (1 - o)
        h_prev[:, t] = hp
        dc = dc * f
        dh = dz[:, t] @ r.T
    dz2 = dz.reshape(n * steps, -1)
    return x.reshape(n * steps, -1).T @ dz2, h_prev.reshape(n * steps, -1).T @ dz2, dz2.sum(0)


def numpy_gru(x, w, r, b):
    """Forward + BPTT of sum(h_T) for a Keras GRU (reset_after=True); returns grads."""
    n, steps, _ = x.shape
    u = r.shape[0]
    xp = (x.reshape(n * steps, -1) @ w + b[0]).reshape(n, steps, 3 * u)
    h = np.zeros((n, u), x.dtype)
    cache = []
    for t in range(steps):
        m = h @ r + b[1]
        z = _sigmoid(xp[:, t, :u] + m[:, :u])
        rr = _sigmoid(xp[:, t, u:2 * u] + m[:, u:2 * u])
        hh = np.tanh(xp[:, t, 2 * u:] + rr * m[:, 2 * u:])
        cache.append((h, z, rr, hh, m[:, 2 * u:]))
        h = z * h + (1 - z) * hh
    dh = np.ones_like(h)
    dx = np.empty((n, steps, 3 * u), x.dtype)
    dm = np.empty((n, steps, 3 * u), x.dtype)
    h_prev = np.empty((n, steps, u), x.dtype)
    for t in range(steps - 1, -1, -1):
        hp, z, rr, hh, mh = cache[t]
        dph = dh * (1 - z) * (1 - hh * hh)
        dpz = dh * (hp - hh) * z * (1 - z)
        dpr = dph * mh * rr * (1 - rr)
        dx[:, t] = np.concatenate([dpz, dpr, dph], 1)
        dm[:, t] = np.concatenate([dpz, dpr, dph * rr], 1)
        h_prev[:, t] = hp
        dh = dh * z + dm[:, t] @ r.T
    dx2, dm2 = dx.reshape(n * steps, -1), dm.reshape(n * steps, -1)
    return (x.reshape(n * steps, -1).T @ dx2, h_prev.reshape(n * steps, -1).T @ dm2,
            np.stack([dx2.sum(0), dm2.sum(0)]))


# ---- layerkit ------------------------------------------------------------------------
class _LoopLSTMCell(LSTMCell):
    """A stock cell seen as a user's cell: the RNN layer takes the per-step loop."""


class _LoopGRUCell(GRUCell):
    """A stock cell seen as a user's cell: the RNN layer takes the per-step loop."""


def _layer_step(layer, x):
    def step():
        with lk.GradientTape() as tape:
            loss = lk.reduce_sum(layer(x))
        return tape.gradient(loss, layer.trainable_weights)
    return step


def _torch_step(torch, module, x):
    xt = torch.from_numpy(x)

    def step():
        module.zero_grad(set_to_none=True)
        out, _ = module(xt)
        out[:, -1].sum().backward()
    return step


def _check_same(name, lk_grads, ref_grads):
    for g, ref in zip(lk_grads, ref_grads):
        np.testing.assert_allclose(np.asarray(g), ref, rtol=2e-3, atol=2e-4,
                                   err_msg=f"{name}: layerkit and NumPy gradients differ")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--no-torch", action="store_true", help="skip the torch cases")
    args, _ = parser.parse_known_args()
    torch = None if args.no_torch else try_import_torch()
    if torch is not None and _THREADS:
        torch.set_num_threads(int(_THREADS))
    rng = np.random.default_rng(0)
    x = rng.standard_normal((BATCH, SEQ, INPUT)).astype(np.float32)
    xt = lk.constant(x)
    rows = []
    for kind, layer_cls, cell_cls, floor in (("LSTM", LSTM, _LoopLSTMCell, numpy_lstm),
                                             ("GRU", GRU, _LoopGRUCell, numpy_gru)):
        layer = layer_cls(HIDDEN)
        layer(xt)
        loop = RNN(cell_cls(HIDDEN))
        loop(xt)
        loop.set_weights(layer.get_weights())
        w = [v.numpy() for v in layer.weights]
        _check_same(kind, _layer_step(layer, xt)(), floor(x, *w))
        _check_same(kind + " per-step", _layer_step(loop, xt)(), floor(x, *w))
        fns = {"layerkit": _layer_step(layer, xt), "per-step": _layer_step(loop, xt),
               "numpy": lambda w=w, floor=floor: floor(x, *w)}
        if torch is not None:
            mod = getattr(torch.nn, kind)(INPUT, HIDDEN, batch_first=True)
            fns["torch"] = _torch_step(torch, mod, x)
        times = timeit_interleaved(fns, number=1, repeat=args.repeats)
        base = times["numpy"]
        for name, sec in times.items():
            rows.append([kind, name, f"{sec * 1e3:.2f}", f"{sec / base:.2f}x"])
    threads = os.environ.get("OPENBLAS_NUM_THREADS", "default")
    print(f"seq {SEQ}, batch {BATCH}, input {INPUT}, hidden {HIDDEN}, float32; forward + "
          f"backward (weight gradients); BLAS threads: {threads}; median of "
          f"{args.repeats} interleaved rounds")
    print(table(rows, ["layer", "implementation", "ms", "vs numpy"]))


if __name__ == "__main__":
    main()
