"""Whole-sequence recurrent loops in NumPy: LSTM, GRU (``reset_after=True``), simple RNN.

The records of :mod:`layerkit.primitives.rnn` call these: ``<family>_forward`` returns
the public outputs (the sequence as a (batch, time, units) view and the final states)
followed by the residuals its ``<family>_backward`` (BPTT) reads. Keras layouts: ``x``
(batch, time, features), ``kernel`` (features, G*units), ``rec`` (units, G*units);
LSTM gates i, f, c, o with ``bias`` (4*units,); GRU gates z, r, h with ``bias`` (2,
3*units) = [input bias, recurrent bias]. The backward passes compute only the gradients
``wanted`` names (zero-strided zero views for the others).

Speed notes (see benchmarks/bench_rnn.py; ratios measured on the shared 2-core box):

- The input projection of all steps is computed before the loop (one GEMM per gate over
  every step); inside the loop each step does one batched (batch, units) x (units,
  units) GEMM per gate in a single ``matmul`` call, and in-place ufuncs on preallocated
  buffers.
- Gate-major layout, (gates, time, batch, units): each gate of each step is a
  contiguous (batch, units) block. Ufuncs on the column slices of a row-major (batch,
  4*units) block ran 2x slower, and moving to this layout made the GRU 30% and the
  LSTM 12% faster overall.
- The LSTM computes its three sigmoids and the tanh of the cell input with ONE tanh
  over all gates: ``sigmoid(v) = 0.5 + 0.5 * tanh(v / 2)``, with the halving folded into
  copies of the weights (scaling by 0.5 is exact in binary floating point).
- States are time-major (time, batch, units); the sequence output is a (batch, time,
  units) transposed view, which the next recurrent layer reads back time-major with
  no copy. The weight gradients are one GEMM per gate over all steps after the loop.
"""
from __future__ import annotations

import numpy as np


# ---- helpers shared by the three families ----------------------------------------------
def _time_major(x: np.ndarray, go_backwards: bool) -> np.ndarray:
    """(batch, time, F) -> contiguous (time*batch, F) rows in processing order."""
    xt = x.transpose(1, 0, 2)
    if go_backwards:
        xt = xt[::-1]
    return np.ascontiguousarray(xt).reshape(x.shape[0] * x.shape[1], x.shape[2])


def _project(x, kernel, bias, gates: int, go_backwards: bool) -> np.ndarray:
    """The input projection of every step, gate-major: (gates, time, batch, units).

    One GEMM per gate over all steps at once (its kernel columns are a strided view that
    BLAS reads directly), each written into its own contiguous block.
    """
    x2 = _time_major(x, go_backwards)
    steps, batch = x.shape[1], x.shape[0]
    u = kernel.shape[1] // gates
    out = np.empty((gates, steps, batch, u), x.dtype)
    for g in range(gates):
        block = out[g].reshape(steps * batch, u)
        np.matmul(x2, kernel[:, g * u:(g + 1) * u], out=block)
        block += bias[g * u:(g + 1) * u]
    return out


def _by_gate(w: np.ndarray, gates: int, transpose: bool = False) -> np.ndarray:
    """(n, gates*u) -> contiguous (gates, n, u), or (gates, u, n) when transposed."""
    n, width = w.shape
    w3 = w.reshape(n, gates, width // gates).transpose(1, 0, 2)
    return np.ascontiguousarray(w3.transpose(0, 2, 1) if transpose else w3)


def _states(first: np.ndarray, steps: int) -> np.ndarray:
    """A (steps+1, batch, units) time-major buffer whose slot 0 holds ``first``."""
    buf = np.empty((steps + 1,) + first.shape, first.dtype)
    buf[0] = first
    return buf


def _seq(hs: np.ndarray) -> np.ndarray:
    return hs[1:].transpose(1, 0, 2)


def _start(g: np.ndarray, dtype) -> np.ndarray:
    return np.array(g, dtype=dtype, order="C")  # a private, writable copy


def _param_grads(x, kernel, hs, dxg, dmg, bias_shape, go_backwards, wanted) -> list:
    """dx, dkernel, drecurrent, dbias from the pre-activation gradients of all steps.

    ``dxg`` (gates, time, batch, u) is the gradient of the input projection, ``dmg``
    that of the recurrent projection (the same array except for the GRU). Each weight
    gradient is one GEMM per gate over all steps. A gradient nobody asked for is a
    zero-strided zero view (no memory, no memset); the forward record's vjp returns
    None in its place.
    """
    gates, steps, batch, u = dxg.shape
    dx2 = dxg.reshape(gates, steps * batch, u)
    dm2 = dmg.reshape(gates, steps * batch, u)
    zero = np.zeros((), dxg.dtype)
    out = [np.broadcast_to(zero, x.shape), np.broadcast_to(zero, kernel.shape),
           np.broadcast_to(zero, (u, gates * u)), np.broadcast_to(zero, bias_shape)]

    def side_by_side(a, d2):  # [a^T @ d2[0], a^T @ d2[1], ...] along the columns
        return np.concatenate([a.T @ d2[g] for g in range(gates)], axis=1)

    if wanted[0]:
        kg = kernel.reshape(kernel.shape[0], gates, u)
        dxt = dx2[0] @ kg[:, 0].T
        for g in range(1, gates):
            dxt += dx2[g] @ kg[:, g].T
        dxt = dxt.reshape(steps, batch, x.shape[2])
        out[0] = (dxt[::-1] if go_backwards else dxt).transpose(1, 0, 2)
    if wanted[1]:
        out[1] = side_by_side(_time_major(x, go_backwards), dx2)
    if wanted[2]:
        out[2] = side_by_side(hs[:-1].reshape(steps * batch, u), dm2)
    if wanted[3]:
        ones = np.ones(steps * batch, dxg.dtype)  # GEMVs: 1.5x faster than sum(axis=0)
        db = np.concatenate([ones @ dx2[g] for g in range(gates)])
        if dmg is not dxg:
            db = np.stack([db, np.concatenate([ones @ dm2[g] for g in range(gates)])])
        out[3] = db
    return out


# =====================================================================================
# LSTM: forward and BPTT in NumPy
# =====================================================================================
def _gate_column(values: list, dtype) -> np.ndarray:
    return np.array(values, dtype).reshape(len(values), 1, 1)


def lstm_forward(x, kernel, rec, bias, h0, c0, go_backwards):
    steps, batch, u = x.shape[1], x.shape[0], rec.shape[0]
    # One tanh for all four gates: sigmoid(v) = 0.5 + 0.5 * tanh(v / 2) on i, f, o, with
    # the halving folded into copies of the weights.
    scale = _gate_column([0.5, 0.5, 1, 0.5], x.dtype)
    offset = _gate_column([0.5, 0.5, 0, 0.5], x.dtype)
    cols = np.repeat(scale.ravel(), u)
    acts = _project(x, kernel * cols, bias * cols, 4, go_backwards)  # becomes i, f, g, o
    rec_g = _by_gate(rec * cols, 4)
    hs, cs = _states(h0, steps), _states(c0, steps)
    tcs = np.empty((steps, batch, u), x.dtype)
    zr = np.empty((4, batch, u), x.dtype)
    ig = np.empty((batch, u), x.dtype)
    for t in range(steps):
        a = acts[:, t]
        np.matmul(hs[t], rec_g, out=zr)
        a += zr
        np.tanh(a, out=a)
        a *= scale
        a += offset
        i, f, g, o = a
        c = cs[t + 1]
        np.multiply(f, cs[t], out=c)
        np.multiply(i, g, out=ig)
        c += ig
        np.tanh(c, out=tcs[t])
        np.multiply(o, tcs[t], out=hs[t + 1])
    return _seq(hs), hs[steps], cs[steps], hs, cs, acts, tcs


def lstm_backward(x, kernel, rec, bias, h0, c0, hs, cs, acts, tcs, gseq, gh, gc,
              go_backwards, wanted):
    _, steps, batch, u = acts.shape
    # Activation derivatives per step, while the step's gates are in cache (1.7x faster
    # than whole-array passes): (1 - a) * (a + e) is a(1-a) for i, f, o and, with e = 1
    # for g, (1 - g)(1 + g) = 1 - g^2.
    e = _gate_column([0, 0, 1, 0], x.dtype)
    deriv = np.empty((4, batch, u), x.dtype)
    one_minus = np.empty((4, batch, u), x.dtype)
    back = np.empty((4, batch, u), x.dtype)
    dz = np.empty_like(acts)
    gs = gseq.transpose(1, 0, 2)
    dh, dc = _start(gh, x.dtype), _start(gc, x.dtype)
    tmp = np.empty((batch, u), x.dtype)
    rec_gt = _by_gate(rec, 4, transpose=True)
    for t in range(steps - 1, -1, -1):
        a, d, tc = acts[:, t], dz[:, t], tcs[t]
        i, f, g, o = a
        dh += gs[t]
        np.multiply(tc, tc, out=tmp)  # dc += dh * o * (1 - tanh(c)^2)
        np.subtract(1, tmp, out=tmp)
        tmp *= o
        tmp *= dh
        dc += tmp
        np.multiply(dc, g, out=d[0])
        np.multiply(dc, cs[t], out=d[1])
        np.multiply(dc, i, out=d[2])
        np.multiply(dh, tc, out=d[3])
        np.add(a, e, out=deriv)
        np.subtract(1, a, out=one_minus)
        deriv *= one_minus
        d *= deriv
        dc *= f
        np.matmul(d, rec_gt, out=back)  # dh = sum over gates of d_g @ R_g^T
        np.add.reduce(back, axis=0, out=dh)
    grads = _param_grads(x, kernel, hs, dz, dz, bias.shape, go_backwards, wanted)
    return (*grads, dh, dc)


# =====================================================================================
# GRU (reset_after=True): forward and BPTT in NumPy
# =====================================================================================
def gru_forward(x, kernel, rec, bias, h0, go_backwards):
    steps, batch, u = x.shape[1], x.shape[0], rec.shape[0]
    b_in = bias[0].copy()
    b_in[:2 * u] += bias[1, :2 * u]  # the recurrent z, r biases join the input ones
    acts = _project(x, kernel, b_in, 3, go_backwards)  # becomes z, r, hh
    mh = np.empty((steps, batch, u), x.dtype)  # h @ R_h + b_rh, kept for the backward
    rec_g = _by_gate(rec, 3)
    hs = _states(h0, steps)
    m = np.empty((3, batch, u), x.dtype)
    tmp = np.empty((batch, u), x.dtype)
    b_rh = bias[1, 2 * u:]
    for t in range(steps):
        a = acts[:, t]
        np.matmul(hs[t], rec_g, out=m)
        zr = a[:2]
        zr += m[:2]
        zr *= 0.5  # sigmoid(v) = 0.5 + 0.5 * tanh(v / 2)
        np.tanh(zr, out=zr)
        zr *= 0.5
        zr += 0.5
        z, r, hh = a
        np.add(m[2], b_rh, out=mh[t])
        np.multiply(r, mh[t], out=tmp)
        hh += tmp
        np.tanh(hh, out=hh)
        h = hs[t + 1]
        np.subtract(hs[t], hh, out=h)
        h *= z
        h += hh
    return _seq(hs), hs[steps], hs, acts, mh


def gru_backward(x, kernel, rec, bias, h0, hs, acts, mh, gseq, gh, go_backwards, wanted):
    _, steps, batch, u = acts.shape
    dxg = np.empty_like(acts)  # input-projection gradients
    dmg = np.empty_like(acts)  # recurrent-projection gradients
    one_minus = np.empty((3, batch, u), x.dtype)
    back = np.empty((3, batch, u), x.dtype)
    gs = gseq.transpose(1, 0, 2)
    dh = _start(gh, x.dtype)
    tmp = np.empty((batch, u), x.dtype)
    rec_gt = _by_gate(rec, 3, transpose=True)
    for t in range(steps - 1, -1, -1):
        a, d, dm = acts[:, t], dxg[:, t], dmg[:, t]
        z, r, hh = a
        dh += gs[t]
        np.subtract(1, a, out=one_minus)  # 1-z, 1-r, 1-hh
        dph = d[2]  # dh * (1 - z) * (1 - hh^2)
        np.add(hh, 1, out=dph)
        dph *= one_minus[2]
        dph *= one_minus[0]
        dph *= dh
        np.multiply(dph, mh[t], out=d[1])  # through r * (h @ R_h + b_rh)
        np.subtract(hs[t], hh, out=d[0])  # through z * (h_prev - hh)
        d[0] *= dh
        d[:2] *= a[:2]  # sigmoid derivatives of z and r
        d[:2] *= one_minus[:2]
        dm[:2] = d[:2]
        np.multiply(dph, r, out=dm[2])
        dh *= z
        np.matmul(dm, rec_gt, out=back)
        np.add.reduce(back, axis=0, out=tmp)
        dh += tmp
    grads = _param_grads(x, kernel, hs, dxg, dmg, bias.shape, go_backwards, wanted)
    return (*grads, dh)


# =====================================================================================
# Simple RNN (tanh): forward and BPTT in NumPy
# =====================================================================================
def rnn_forward(x, kernel, rec, bias, h0, go_backwards):
    steps = x.shape[1]
    pre = _project(x, kernel, bias, 1, go_backwards)[0]
    hs = _states(h0, steps)
    for t in range(steps):
        a = pre[t]
        a += hs[t] @ rec
        np.tanh(a, out=hs[t + 1])
    return _seq(hs), hs[steps], hs


def rnn_backward(x, kernel, rec, bias, h0, hs, gseq, gh, go_backwards, wanted):
    steps = hs.shape[0] - 1
    dz = np.multiply(hs[1:], hs[1:])
    np.subtract(1, dz, out=dz)  # 1 - h^2, overwritten step by step with dz
    gs = gseq.transpose(1, 0, 2)
    dh = _start(gh, x.dtype)
    rec_t = np.ascontiguousarray(rec.T)  # 1.5x faster per-step GEMM than the strided view
    for t in range(steps - 1, -1, -1):
        dh += gs[t]
        dz[t] *= dh
        np.matmul(dz[t], rec_t, out=dh)
    dzg = dz[None]  # one gate
    grads = _param_grads(x, kernel, hs, dzg, dzg, bias.shape, go_backwards, wanted)
    return (*grads, dh)
