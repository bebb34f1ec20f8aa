"""Activation kernels whose NumPy formulation matters for speed.

Leaky ReLU, 64x28x28x128 float32 (the DCGAN generator's widest activation), CPU time on
the 2-core box: ``np.where(x > 0, x, alpha * x)`` 59 ms, ``np.maximum(x, alpha * x)``
3.9 ms (two passes, valid for 0 <= alpha <= 1); the gradient through ``np.where`` or a
masked ``np.copyto`` 29-38 ms, ``g * fmax(sign(x), alpha)`` 7.6 ms.

gelu, its gradient and softplus run float32 through block-wise kernels
(:func:`layerkit.kernels.blockwise.blockwise`: the whole ufunc chain on one block at a
time, ``out=`` into scratch that stays in the L2 cache; arrays of
``tuning.NN_PARALLEL_MIN`` elements or more split over two threads when NumPy's BLAS
is pinned to one thread, see ``blockwise.default_threads``).
Measured on the 2-core box (4M float32, benchmarks/bench_gelu.py, medians): exact
gelu forward 13 ms, forward + gradient 22 ms, where the same formula op by op takes 45
and 68 ms (torch's fused kernels: 1.4 and 5.5 ms); tanh form 6.2 / 16.7 ms vs 16.9 /
67 ms op by op (torch 4.8 / 11.9); softplus forward 5.9 ms vs 13 ms op by op and
100 ms for ``np.logaddexp``. Both gradients read the forward answer (Phi = y / x), so a
tape's backward is one pass that never re-evaluates erf or tanh (issue 15; CPU time,
one thread, a loaded Intel box: exact backward 10.9 ms vs torch 5.7, tanh form 8.6 ms
vs torch 11.0, where the tanh form's gradient re-evaluating tanh took ~11.3).
A ufunc call costs ~0.12 ns per element even in cache (L2 bandwidth), so a 23-call
chain cannot match one fused C loop.
Exact gelu needs erf, which NumPy lacks: float32 uses a rational approximation of
Mills' ratio fitted for this file (relative error 1.3e-7, so the gelu error is within
a few float32 ulps); other float dtypes use :func:`layerkit.kernels.special.erf`.
"""
from __future__ import annotations

import math

import numpy as np

from layerkit._core import tuning
from layerkit.kernels import blockwise as _bw
from layerkit.kernels.special import erf

SQRT_HALF = math.sqrt(0.5)
INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
TANH_K = math.sqrt(2.0 / math.pi)      # gelu tanh form: tanh(K * (x + C * x^3))
TANH_C = 0.044715


def leaky_relu(x: np.ndarray, alpha: float) -> np.ndarray:
    """``x`` where ``x > 0``, else ``alpha * x`` (NaN stays NaN)."""
    y = np.multiply(x, alpha)
    if 0 <= alpha <= 1:
        # (a 0-d input gives a NumPy scalar, which cannot be an ``out``)
        return np.maximum(x, y, out=y) if isinstance(y, np.ndarray) else np.maximum(x, y)
    return np.where(x > 0, x, y)


def leaky_relu_grad(g: np.ndarray, x: np.ndarray, alpha: float) -> np.ndarray:
    """``g`` where ``x > 0``, else ``alpha * g`` (TensorFlow's LeakyReluGrad: the slope at
    0 and at NaN is ``alpha``)."""
    dtype = np.result_type(g, x)
    if 0 <= alpha <= 1:
        s = np.sign(x).astype(dtype, copy=False)
        if not isinstance(s, np.ndarray):  # a 0-d input: NumPy gives a scalar
            s = np.asarray(s)
        np.fmax(s, np.asarray(alpha, dtype), out=s)  # 1 where x > 0, else alpha
        return np.multiply(s, g, out=s)
    return np.where(x > 0, g, np.multiply(g, alpha)).astype(dtype, copy=False)


# ---- float32 block-wise kernels ---------------------------------------------------------
def _f32(kernel, inputs: tuple, nscratch: int) -> np.ndarray:
    """``kernel`` block-wise over float32 ``inputs`` with ``nscratch`` float32 scratch
    buffers, on two threads for arrays of ``NN_PARALLEL_MIN`` elements or more when
    ``blockwise.THREADS`` allows."""
    threads = _bw.THREADS
    if inputs[0].size >= tuning.NN_PARALLEL_MIN and threads > 1:
        return _bw.blockwise(kernel, inputs, (np.float32,) * nscratch,
                             tuning.NN_BLOCK_THREADED, out_dtype=np.float32,
                             threads=threads, quiet=True)
    return _bw.blockwise(kernel, inputs, (np.float32,) * nscratch, tuning.NN_BLOCK,
                         out_dtype=np.float32, quiet=True)


def _k(v: float) -> np.ndarray:
    # 0-d float32 constants: cheaper per ufunc call than NumPy scalars, and never promote.
    return np.array(v, np.float32)


_ZERO, _HALF, _ONE, _NEG_HALF = _k(0.0), _k(0.5), _k(1.0), _k(-0.5)
_K_INV_SQRT_2PI = _k(INV_SQRT_2PI)


# ---- softplus ------------------------------------------------------------------------------
def _softplus32_block(x, y, e, m):
    # max(x, 0) + log1p(exp(-|x|)): exp never overflows and log1p keeps tiny tails.
    np.abs(x, e)
    np.negative(e, e)
    np.exp(e, e)
    np.log1p(e, y)
    np.maximum(x, _ZERO, out=m)
    np.add(y, m, y)


def softplus(x: np.ndarray) -> np.ndarray:
    """``log(1 + exp(x))`` without overflow (float32 block-wise)."""
    if x.dtype == np.float32:
        return _f32(_softplus32_block, (x,), 2)
    with np.errstate(over="ignore", under="ignore"):
        return np.maximum(x, 0) + np.log1p(np.exp(-np.abs(x)))


# ---- gelu and its gradient -----------------------------------------------------------------
# Exact form: gelu(x) = x * Phi(x). With a = |x| and Q(a) = 1 - Phi(a):
#     gelu(x) = max(x, 0) - a * Q(a),   Q(a) = exp(-a^2 / 2) * R(a),
# and R (Mills' ratio over sqrt(2 pi)) is smooth and monotone on [0, inf), so a
# rational P3(a) / Q4(a) matches it to a relative 1.3e-7 on [0, 8] (an iteratively
# reweighted least-squares fit made for this file; P(0)/Q(0) = 1/2, p3 ~ 1/sqrt(2 pi)
# as R ~ 1/(sqrt(2 pi) a) for large a), and to 4e-5 beyond 8, where a * Q(a) < 5e-15.
# Both branches use only a = |x|, so gelu stays accurate relative to its value in the
# negative tail too, up to float32 rounding of a^2 inside exp (relative a^2 * 6e-8).
# Measured against float64: absolute error <= 2.4e-7, and <= 20 ulp on [-6, 6].
# a is clamped at 20, where a * Q(a) is 0 in float32, so a^4 never overflows.
_GP = tuple(_k(v) for v in (13.426168209759314, 9.262810249111949, 2.9540849917590646,
                            0.3988053896318282))
_GQ = tuple(_k(v) for v in (26.852339959913014, 39.95049385202034, 24.359589038564025,
                            7.39425554840357))
_A_MAX = _k(20.0)


def _gelu32_block(x, y, a, p, q):
    np.abs(x, a)
    np.minimum(a, _A_MAX, out=a)
    np.multiply(a, _GP[3], p)                     # P(a), Horner
    np.add(p, _GP[2], p)
    np.multiply(p, a, p)
    np.add(p, _GP[1], p)
    np.multiply(p, a, p)
    np.add(p, _GP[0], p)
    np.add(a, _GQ[3], q)                          # Q(a), monic, Horner
    np.multiply(q, a, q)
    np.add(q, _GQ[2], q)
    np.multiply(q, a, q)
    np.add(q, _GQ[1], q)
    np.multiply(q, a, q)
    np.add(q, _GQ[0], q)
    np.divide(p, q, p)
    np.multiply(a, a, q)                          # exp(-a^2 / 2)
    np.multiply(q, _NEG_HALF, q)
    np.exp(q, q)
    np.multiply(p, q, p)
    np.multiply(p, a, p)                          # a * Q(a)
    np.maximum(x, _ZERO, out=y)
    np.subtract(y, p, y)


def _gelu_grad32_block(x, y, g, dx, e, t):
    # gelu'(x) = Phi(x) + x * phi(x), with Phi = y / x taken from the forward answer:
    # one exp instead of re-running the rational approximation.
    np.multiply(x, x, e)
    zero = e.min() == 0                           # x == 0 somewhere (or |x| < 1e-19)?
    np.multiply(e, _NEG_HALF, e)
    np.exp(e, e)
    np.multiply(e, x, e)
    np.multiply(e, _K_INV_SQRT_2PI, e)
    np.divide(y, x, t)
    np.add(t, e, t)
    np.multiply(t, g, dx)
    if zero:                                      # 0/0 above: gelu'(0) = 1/2
        z = x == 0
        dx[z] = g[z] * _HALF


_TK, _TKC = _k(TANH_K), _k(TANH_K * TANH_C)
_TKC6, _TK2 = _k(6.0 * TANH_K * TANH_C), _k(2.0 * TANH_K)


def _gelu_tanh32_block(x, y, s):
    np.multiply(x, x, s)                          # u = K * (x + C x^3)
    np.multiply(s, _TKC, s)
    np.add(s, _TK, s)
    np.multiply(s, x, s)
    np.tanh(s, s)
    np.multiply(x, _HALF, y)                      # y = x/2 + x/2 * tanh(u)
    np.multiply(s, y, s)
    np.add(y, s, y)


def _gelu_tanh_grad32_block(x, y, g, dx, p, d):
    # gelu'(x) = (1 + t)/2 + x/2 * (1 - t^2) * u',  u' = K (1 + 3 C x^2), t = tanh(u).
    # The forward answer gives p = (1 + t)/2 = y / x, and 1 - t^2 = 4 p (1 - p): no tanh,
    # one pass over x, y and g (the forward kernel is not re-run).
    np.multiply(x, x, d)                          # d = 2 x u' = 4 * x u' / 2
    zero = d.min() == 0                           # x == 0 somewhere (or |x| < 1e-19)?
    np.multiply(d, _TKC6, d)
    np.add(d, _TK2, d)
    np.multiply(d, x, d)
    np.divide(y, x, p)
    np.subtract(_ONE, p, dx)                      # p + p (1 - p) d
    np.multiply(dx, p, dx)
    np.multiply(dx, d, dx)
    np.add(dx, p, dx)
    np.multiply(dx, g, dx)
    if zero:                                      # 0/0 above: gelu'(0) = 1/2
        z = x == 0
        dx[z] = g[z] * _HALF


def _upcast(f, *arrays, **attrs):
    # float16 and other narrow floats run the float32 kernels.
    dt = arrays[0].dtype
    return f(*(a.astype(np.float32) for a in arrays), **attrs).astype(dt)


def gelu(x: np.ndarray, approximate: bool) -> np.ndarray:
    """``x * Phi(x)`` (exact) or its tanh form; float16 runs in float32."""
    dt = x.dtype
    if dt == np.float32:
        if approximate:
            return _f32(_gelu_tanh32_block, (x,), 1)
        return _f32(_gelu32_block, (x,), 3)
    if dt.itemsize < 4:
        return _upcast(gelu, x, approximate=approximate)
    if approximate:
        return 0.5 * x * (1.0 + np.tanh(TANH_K * (x + TANH_C * x * x * x)))
    return 0.5 * x * (1.0 + erf(x * SQRT_HALF))


def gelu_grad(x: np.ndarray, y: np.ndarray, g: np.ndarray, approximate: bool) -> np.ndarray:
    """``g * gelu'(x)``, reading Phi off the forward answer ``y = gelu(x)``."""
    # Both forms read Phi (exact) or (1 + tanh(u))/2 (tanh form) off the forward answer,
    # y / x, so the gradient is one pass that never re-runs the forward (erf or tanh).
    dt = x.dtype
    if dt == np.float32 and g.dtype == np.float32:
        if approximate:
            return _f32(_gelu_tanh_grad32_block, (x, y, g), 2)
        return _f32(_gelu_grad32_block, (x, y, g), 2)
    if dt.itemsize < 4:
        return _upcast(gelu_grad, x, y, g, approximate=approximate)
    with np.errstate(over="ignore", under="ignore", divide="ignore", invalid="ignore"):
        p = y / x
        if not x.all():
            p = np.where(x == 0, 0.5, p)            # gelu'(0) = Phi(0) = 1/2
        if approximate:
            du = x * (0.5 * TANH_K) * (1.0 + 3.0 * TANH_C * x * x)
            return g * (p + 4.0 * du * p * (1.0 - p))
        return g * (p + x * np.exp(-0.5 * x * x) * INV_SQRT_2PI)
