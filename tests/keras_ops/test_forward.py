"""Forward values of every ``lk.keras_ops`` name against NumPy (or hand-derived) results.

One table: each row is ``(name, call, expected)`` where ``call(ops)`` runs the function
and ``expected()`` computes the reference with NumPy. ``test_every_name_has_a_row``
keeps the table complete as names are added.
"""
import math

import numpy as np
import pytest

import layerkit as lk
from layerkit import keras_ops as ops

R = np.random.default_rng(7)
A = R.standard_normal((3, 4)).astype(np.float32)
B = R.standard_normal((3, 4)).astype(np.float32)
V = R.standard_normal(5).astype(np.float32)
POS = (R.random((3, 4)) + 0.5).astype(np.float32)
UNIT = (R.random((3, 4)) * 1.8 - 0.9).astype(np.float32)
M = R.standard_normal((4, 4)).astype(np.float32)
SPD = (M @ M.T + 4 * np.eye(4)).astype(np.float32)
IN = np.array([[1, 5, 2], [7, 0, 3]], np.int32)
X3 = R.standard_normal((2, 3, 4)).astype(np.float32)
NANS = np.array([[1.0, np.nan, 3.0], [np.nan, np.nan, 2.0]], np.float32)
IMG = R.random((2, 6, 6, 3)).astype(np.float32)


def _softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def _erf(x):
    return np.vectorize(math.erf)(x.astype(np.float64)).astype(x.dtype)


def _gelu_tanh(x):
    return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))


def _conv2d_ref(x, k, stride=1):
    n, h, w, c = x.shape
    kh, kw, _, o = k.shape
    oh, ow = (h - kh) // stride + 1, (w - kw) // stride + 1
    out = np.zeros((n, oh, ow, o), np.float64)
    for i in range(oh):
        for j in range(ow):
            patch = x[:, i * stride:i * stride + kh, j * stride:j * stride + kw, :]
            out[:, i, j, :] = np.tensordot(patch, k, axes=([1, 2, 3], [0, 1, 2]))
    return out


def _unfold_ref(x, k):
    n, c, h, w = x.shape
    cols = []
    for i in range(h - k + 1):
        for j in range(w - k + 1):
            cols.append(x[:, :, i:i + k, j:j + k].reshape(n, -1))
    return np.stack(cols, -1)


def _dft(x):
    return np.fft.fft(x)


def _ctc_brute(logits, label):
    """-log of the summed probability of every alignment that collapses to ``label``."""
    import itertools
    p = np.exp(logits - logits.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    total = 0.0
    for path in itertools.product(range(p.shape[1]), repeat=p.shape[0]):
        collapsed = [c for i, c in enumerate(path) if c != 0 and (i == 0 or c != path[i - 1])]
        if collapsed == list(label):
            total += np.prod(p[np.arange(p.shape[0]), path])
    return -np.log(total)


def _lu_ref(a):
    a = a.astype(np.float64).copy()
    n = a.shape[0]
    piv = np.zeros(n, np.int32)
    for k in range(n):
        i = k + int(np.argmax(np.abs(a[k:, k])))
        piv[k] = i
        a[[k, i]] = a[[i, k]]
        a[k + 1:, k] /= a[k, k]
        a[k + 1:, k + 1:] -= np.outer(a[k + 1:, k], a[k, k + 1:])
    return a, piv


def _hsv_ref(img):
    import colorsys
    flat = img.reshape(-1, 3).astype(np.float64)
    return np.array([colorsys.rgb_to_hsv(*p) for p in flat]).reshape(img.shape)


def _patches_ref(img, k):
    n, h, w, c = img.shape
    out = np.zeros((n, h // k, w // k, k * k * c), img.dtype)
    for i in range(h // k):
        for j in range(w // k):
            out[:, i, j] = img[:, i * k:(i + 1) * k, j * k:(j + 1) * k, :].reshape(n, -1)
    return out


def _blur_ref(img, k=3, s=1.0):
    g = np.exp(-0.5 * ((np.arange(k) - (k - 1) / 2) / s) ** 2)
    g /= g.sum()
    kern = np.outer(g, g)
    p = np.pad(img, [(0, 0), (k // 2, k // 2), (k // 2, k // 2), (0, 0)])
    out = np.zeros_like(img, dtype=np.float64)
    for i in range(img.shape[1]):
        for j in range(img.shape[2]):
            out[:, i, j, :] = np.einsum("nhwc,hw->nc", p[:, i:i + k, j:j + k, :], kern)
    return out


def _cce(t, p):
    p = p / p.sum(-1, keepdims=True)
    return -(t * np.log(np.clip(p, 1e-7, 1 - 1e-7))).sum(-1)


def _attention(q, k, v):
    logits = np.einsum("btnh,bsnh->bnts", q, k) / np.sqrt(q.shape[-1])
    return np.einsum("bnts,bsnh->btnh", _softmax(logits), v)


def _adaptive_avg(x, out):
    n = x.shape[1]
    cols = [x[:, (i * n) // out:-((-(i + 1) * n) // out)].mean(1) for i in range(out)]
    return np.stack(cols, 1)


Q = R.standard_normal((2, 3, 2, 4)).astype(np.float32)
K = R.standard_normal((2, 5, 2, 4)).astype(np.float32)
VV = R.standard_normal((2, 5, 2, 4)).astype(np.float32)
KER = R.standard_normal((3, 3, 3, 2)).astype(np.float32)
SEQ = R.standard_normal((2, 8, 3)).astype(np.float32)
SEG = np.array([0, 0, 2, 1, 2], np.int32)
DATA = R.standard_normal((5, 2)).astype(np.float32)
LOGITS = R.standard_normal((4, 3)).astype(np.float32)
PROBS = _softmax(LOGITS)
LABELS = np.array([0, 2, 1, 2], np.int32)
ONEHOT = np.eye(3, dtype=np.float32)[LABELS]
BIN_T = (R.random((3, 4)) > 0.5).astype(np.float32)
NCHW = R.standard_normal((1, 2, 4, 4)).astype(np.float32)
CTC = R.standard_normal((2, 4, 3)).astype(np.float32)

ROWS = [
    # ---- numpy: elementwise unary
    ("abs", lambda o: o.abs(A), lambda: np.abs(A)),
    ("absolute", lambda o: o.absolute(IN), lambda: np.abs(IN)),
    ("negative", lambda o: o.negative(A), lambda: -A),
    ("sign", lambda o: o.sign(A), lambda: np.sign(A)),
    ("square", lambda o: o.square(IN), lambda: np.square(IN)),
    ("sqrt", lambda o: o.sqrt(POS), lambda: np.sqrt(POS)),
    ("exp", lambda o: o.exp(A), lambda: np.exp(A)),
    ("exp2", lambda o: o.exp2(A), lambda: np.exp2(A)),
    ("expm1", lambda o: o.expm1(A), lambda: np.expm1(A)),
    ("log", lambda o: o.log(POS), lambda: np.log(POS)),
    ("log2", lambda o: o.log2(POS), lambda: np.log2(POS)),
    ("log10", lambda o: o.log10(POS), lambda: np.log10(POS)),
    ("log1p", lambda o: o.log1p(POS), lambda: np.log1p(POS)),
    ("sin", lambda o: o.sin(A), lambda: np.sin(A)),
    ("cos", lambda o: o.cos(A), lambda: np.cos(A)),
    ("tan", lambda o: o.tan(A), lambda: np.tan(A)),
    ("tanh", lambda o: o.tanh(A), lambda: np.tanh(A)),
    ("sinh", lambda o: o.sinh(A), lambda: np.sinh(A)),
    ("cosh", lambda o: o.cosh(A), lambda: np.cosh(A)),
    ("arcsin", lambda o: o.arcsin(UNIT), lambda: np.arcsin(UNIT)),
    ("arccos", lambda o: o.arccos(UNIT), lambda: np.arccos(UNIT)),
    ("arctan", lambda o: o.arctan(A), lambda: np.arctan(A)),
    ("arcsinh", lambda o: o.arcsinh(A * 10), lambda: np.arcsinh(A * 10)),
    ("arccosh", lambda o: o.arccosh(POS + 1), lambda: np.arccosh(POS + 1)),
    ("arctanh", lambda o: o.arctanh(UNIT), lambda: np.arctanh(UNIT)),
    ("cbrt", lambda o: o.cbrt(A), lambda: np.cbrt(A)),
    ("reciprocal", lambda o: o.reciprocal(POS), lambda: 1 / POS),
    ("sinc", lambda o: o.sinc(np.array([0.0, 0.5, 1.5], np.float32)),
     lambda: np.sinc(np.array([0.0, 0.5, 1.5], np.float32))),
    ("deg2rad", lambda o: o.deg2rad(A), lambda: np.deg2rad(A)),
    ("rad2deg", lambda o: o.rad2deg(A), lambda: np.rad2deg(A)),
    ("fabs", lambda o: o.fabs(IN), lambda: np.fabs(IN).astype(np.float32)),
    ("ceil", lambda o: o.ceil(A), lambda: np.ceil(A)),
    ("floor", lambda o: o.floor(A), lambda: np.floor(A)),
    ("trunc", lambda o: o.trunc(A * 3), lambda: np.trunc(A * 3)),
    ("round", lambda o: o.round(np.array([0.5, 1.5, 2.5, -0.5, 1.234], np.float32), 0),
     lambda: np.round(np.array([0.5, 1.5, 2.5, -0.5, 1.234], np.float32))),
    ("isfinite", lambda o: o.isfinite(np.array([1.0, np.inf, np.nan])),
     lambda: np.array([True, False, False])),
    ("isnan", lambda o: o.isnan(NANS), lambda: np.isnan(NANS)),
    ("isinf", lambda o: o.isinf(np.array([1.0, np.inf, -np.inf, np.nan])),
     lambda: np.array([False, True, True, False])),
    ("isposinf", lambda o: o.isposinf(np.array([1.0, np.inf, -np.inf])),
     lambda: np.array([False, True, False])),
    ("isneginf", lambda o: o.isneginf(np.array([1.0, np.inf, -np.inf])),
     lambda: np.array([False, False, True])),
    ("signbit", lambda o: o.signbit(np.array([-0.0, 0.0, -2.0], np.float32)),
     lambda: np.array([True, False, True])),
    ("isreal", lambda o: o.isreal(A), lambda: np.ones(A.shape, bool)),
    ("real", lambda o: o.real(A), lambda: A),
    ("imag", lambda o: o.imag(A), lambda: np.zeros_like(A)),
    ("conj", lambda o: o.conj(A), lambda: A),
    ("conjugate", lambda o: o.conjugate(A), lambda: A),
    ("angle", lambda o: o.angle(A), lambda: np.angle(A).astype(np.float32)),
    ("nan_to_num", lambda o: o.nan_to_num(np.array([np.nan, np.inf, -np.inf, 1.0],
                                                   np.float32), nan=5.0),
     lambda: np.nan_to_num(np.array([np.nan, np.inf, -np.inf, 1.0], np.float32), nan=5.0)),
    ("i0", lambda o: o.i0(A), lambda: np.i0(A)),
    # ---- numpy: elementwise binary
    ("add", lambda o: o.add(A, B), lambda: A + B),
    ("subtract", lambda o: o.subtract(A, 1.0), lambda: A - 1.0),
    ("multiply", lambda o: o.multiply(A, B), lambda: A * B),
    ("divide", lambda o: o.divide(IN, 4), lambda: (IN / 4).astype(np.float32)),
    ("true_divide", lambda o: o.true_divide(A, POS), lambda: A / POS),
    ("floor_divide", lambda o: o.floor_divide(IN, 3), lambda: IN // 3),
    ("mod", lambda o: o.mod(A, 0.7), lambda: np.mod(A, np.float32(0.7))),
    ("fmod", lambda o: o.fmod(A * 3, POS), lambda: np.fmod(A * 3, POS)),
    ("power", lambda o: o.power(POS, A), lambda: np.power(POS, A)),
    ("maximum", lambda o: o.maximum(A, B), lambda: np.maximum(A, B)),
    ("minimum", lambda o: o.minimum(A, B), lambda: np.minimum(A, B)),
    ("fmax", lambda o: o.fmax(NANS, 1.5), lambda: np.fmax(NANS, 1.5)),
    ("fmin", lambda o: o.fmin(NANS, 1.5), lambda: np.fmin(NANS, 1.5)),
    ("equal", lambda o: o.equal(IN, 3), lambda: IN == 3),
    ("not_equal", lambda o: o.not_equal(IN, 3), lambda: IN != 3),
    ("greater", lambda o: o.greater(A, B), lambda: A > B),
    ("greater_equal", lambda o: o.greater_equal(A, B), lambda: A >= B),
    ("less", lambda o: o.less(A, B), lambda: A < B),
    ("less_equal", lambda o: o.less_equal(A, B), lambda: A <= B),
    ("arctan2", lambda o: o.arctan2(A, B[0]), lambda: np.arctan2(A, B[0])),
    ("hypot", lambda o: o.hypot(A, B), lambda: np.hypot(A, B)),
    ("logaddexp", lambda o: o.logaddexp(A * 50, B), lambda: np.logaddexp(A * 50, B)),
    ("logaddexp2", lambda o: o.logaddexp2(A, B), lambda: np.logaddexp2(A, B)),
    ("heaviside", lambda o: o.heaviside(np.array([-1.0, 0.0, 2.0]), 0.5),
     lambda: np.heaviside(np.array([-1.0, 0.0, 2.0]), 0.5)),
    ("ldexp", lambda o: o.ldexp(A, IN[:, :1].repeat(4, 1)[:1]),
     lambda: A * 2.0 ** IN[:, :1].repeat(4, 1)[:1]),
    ("logical_and", lambda o: o.logical_and(A > 0, B > 0), lambda: (A > 0) & (B > 0)),
    ("logical_or", lambda o: o.logical_or(A > 0, B > 0), lambda: (A > 0) | (B > 0)),
    ("logical_xor", lambda o: o.logical_xor(A > 0, B > 0), lambda: (A > 0) ^ (B > 0)),
    ("logical_not", lambda o: o.logical_not(IN), lambda: IN == 0),
    ("bitwise_and", lambda o: o.bitwise_and(IN, 6), lambda: IN & 6),
    ("bitwise_or", lambda o: o.bitwise_or(IN, 6), lambda: IN | 6),
    ("bitwise_xor", lambda o: o.bitwise_xor(IN, 6), lambda: IN ^ 6),
    ("bitwise_invert", lambda o: o.bitwise_invert(IN), lambda: ~IN),
    ("bitwise_not", lambda o: o.bitwise_not(IN), lambda: ~IN),
    ("bitwise_left_shift", lambda o: o.bitwise_left_shift(IN, 2), lambda: IN << 2),
    ("bitwise_right_shift", lambda o: o.bitwise_right_shift(IN, 1), lambda: IN >> 1),
    ("left_shift", lambda o: o.left_shift(IN, 1), lambda: IN << 1),
    ("right_shift", lambda o: o.right_shift(IN, 1), lambda: IN >> 1),
    ("gcd", lambda o: o.gcd(IN, 4), lambda: np.gcd(IN, 4)),
    ("lcm", lambda o: o.lcm(IN, 4), lambda: np.lcm(IN, 4)),
    ("nextafter", lambda o: o.nextafter(A, B), lambda: np.nextafter(A, B)),
    ("divide_no_nan", lambda o: o.divide_no_nan(A, np.where(B > 0, B, 0)),
     lambda: np.where(B > 0, A / np.where(B > 0, B, 1), 0)),
    ("isclose", lambda o: o.isclose(A, A + 1e-7), lambda: np.isclose(A, A + 1e-7)),
    ("allclose", lambda o: o.allclose(A, A + 1e-3), lambda: np.allclose(A, A + 1e-3)),
    ("clip", lambda o: o.clip(A, -0.5, 0.5), lambda: np.clip(A, -0.5, 0.5)),
    ("where", lambda o: o.where(A > 0, A, B), lambda: np.where(A > 0, A, B)),
    ("select", lambda o: o.select([A > 0.5, A < -0.5], [A, B], 7.0),
     lambda: np.select([A > 0.5, A < -0.5], [A, B], 7.0)),
    # ---- creation
    ("zeros", lambda o: o.zeros((2, 3)), lambda: np.zeros((2, 3), np.float32)),
    ("ones", lambda o: o.ones(3), lambda: np.ones(3, np.float32)),
    ("empty", lambda o: o.empty((2,)), lambda: np.zeros(2, np.float32)),
    ("full", lambda o: o.full((2, 2), 3), lambda: np.full((2, 2), 3, np.float32)),
    ("zeros_like", lambda o: o.zeros_like(IN), lambda: np.zeros_like(IN)),
    ("ones_like", lambda o: o.ones_like(A), lambda: np.ones_like(A)),
    ("empty_like", lambda o: o.empty_like(A), lambda: np.zeros_like(A)),
    ("full_like", lambda o: o.full_like(IN, 9), lambda: np.full_like(IN, 9)),
    ("arange", lambda o: o.arange(2, 11, 3), lambda: np.arange(2, 11, 3, dtype=np.int32)),
    ("linspace", lambda o: o.linspace(0.0, 1.0, 7), lambda: np.linspace(0, 1, 7, dtype=np.float32)),
    ("logspace", lambda o: o.logspace(0.0, 2.0, 5), lambda: np.logspace(0, 2, 5)),
    ("geomspace", lambda o: o.geomspace(1.0, 1000.0, 4), lambda: np.geomspace(1, 1000, 4)),
    ("eye", lambda o: o.eye(3, 4, k=1), lambda: np.eye(3, 4, 1, dtype=np.float32)),
    ("identity", lambda o: o.identity(3), lambda: np.identity(3, np.float32)),
    ("tri", lambda o: o.tri(3, 4, -1), lambda: np.tri(3, 4, -1, dtype=np.float32)),
    ("tril", lambda o: o.tril(X3, 1), lambda: np.tril(X3, 1)),
    ("triu", lambda o: o.triu(X3, -1), lambda: np.triu(X3, -1)),
    ("diag", lambda o: o.diag(V[:3], -1), lambda: np.diag(V[:3], -1)),
    ("diagflat", lambda o: o.diagflat(A[:1, :2], 1), lambda: np.diagflat(A[:1, :2], 1)),
    ("diagonal", lambda o: o.diagonal(X3, 1, 1, 2), lambda: np.diagonal(X3, 1, 1, 2)),
    ("trace", lambda o: o.trace(A, -1), lambda: np.trace(A, -1)),
    ("vander", lambda o: o.vander(V[:3], 4), lambda: np.vander(V[:3], 4)),
    ("meshgrid", lambda o: o.meshgrid(V[:2], V[:3]), lambda: np.meshgrid(V[:2], V[:3])),
    ("bartlett", lambda o: o.bartlett(6), lambda: np.bartlett(6)),
    ("blackman", lambda o: o.blackman(6), lambda: np.blackman(6)),
    ("hamming", lambda o: o.hamming(6), lambda: np.hamming(6)),
    ("hanning", lambda o: o.hanning(6), lambda: np.hanning(6)),
    ("kaiser", lambda o: o.kaiser(6, 3.0), lambda: np.kaiser(6, 3.0)),
    # ---- reductions
    ("sum", lambda o: o.sum(X3, axis=(0, 2), keepdims=True),
     lambda: X3.sum(axis=(0, 2), keepdims=True)),
    ("prod", lambda o: o.prod(A, 1), lambda: A.prod(1)),
    ("mean", lambda o: o.mean(IN), lambda: np.float32(IN.mean())),
    ("var", lambda o: o.var(A, 0), lambda: A.var(0)),
    ("std", lambda o: o.std(A, 1, keepdims=True), lambda: A.std(1, keepdims=True)),
    ("max", lambda o: o.max(A, 0, initial=0.5), lambda: np.max(A, 0, initial=0.5)),
    ("min", lambda o: o.min(A, 1, keepdims=True), lambda: A.min(1, keepdims=True)),
    ("amax", lambda o: o.amax(A), lambda: A.max()),
    ("amin", lambda o: o.amin(A, 0), lambda: A.min(0)),
    ("all", lambda o: o.all(IN, 1), lambda: IN.all(1)),
    ("any", lambda o: o.any(IN == 0, 0), lambda: (IN == 0).any(0)),
    ("count_nonzero", lambda o: o.count_nonzero(IN, 0), lambda: np.count_nonzero(IN, 0)),
    ("ptp", lambda o: o.ptp(A, 1), lambda: np.ptp(A, 1)),
    ("average", lambda o: o.average(A, 1, V[:4]), lambda: np.average(A, 1, V[:4])),
    ("argmax", lambda o: o.argmax(A), lambda: np.argmax(A)),
    ("argmin", lambda o: o.argmin(A, 1, keepdims=True), lambda: np.argmin(A, 1, keepdims=True)),
    ("nanargmax", lambda o: o.nanargmax(NANS, 1), lambda: np.nanargmax(NANS, 1)),
    ("nanargmin", lambda o: o.nanargmin(NANS, 1), lambda: np.nanargmin(NANS, 1)),
    ("nansum", lambda o: o.nansum(NANS, 1), lambda: np.nansum(NANS, 1)),
    ("nanprod", lambda o: o.nanprod(NANS), lambda: np.nanprod(NANS)),
    ("nanmax", lambda o: o.nanmax(NANS, 0), lambda: np.nanmax(NANS, 0)),
    ("nanmin", lambda o: o.nanmin(NANS, 1), lambda: np.nanmin(NANS, 1)),
    ("nanmean", lambda o: o.nanmean(NANS, 1), lambda: np.nanmean(NANS, 1)),
    ("nanvar", lambda o: o.nanvar(NANS, 1), lambda: np.nanvar(NANS, 1)),
    ("nanstd", lambda o: o.nanstd(NANS), lambda: np.nanstd(NANS)),
    ("cumsum", lambda o: o.cumsum(A), lambda: np.cumsum(A)),
    ("cumprod", lambda o: o.cumprod(A, 1), lambda: np.cumprod(A, 1)),
    ("nancumsum", lambda o: o.nancumsum(NANS, 1), lambda: np.nancumsum(NANS, 1)),
    ("nancumprod", lambda o: o.nancumprod(NANS), lambda: np.nancumprod(NANS)),
    # ---- sorting and order statistics
    ("sort", lambda o: o.sort(X3, 1), lambda: np.sort(X3, 1)),
    ("argsort", lambda o: o.argsort(A, axis=None), lambda: np.argsort(A, None, kind="stable")),
    ("argpartition", lambda o: np.take_along_axis(
        A, o.argpartition(A, 1).numpy(), -1)[:, :2].max(1), lambda: np.sort(A, -1)[:, 1]),
    ("median", lambda o: o.median(A, 1), lambda: np.median(A, 1)),
    ("nanmedian", lambda o: o.nanmedian(NANS, 1), lambda: np.nanmedian(NANS, 1)),
    ("quantile", lambda o: o.quantile(X3, [0.1, 0.5], axis=(0, 2), keepdims=True),
     lambda: np.quantile(X3, [0.1, 0.5], axis=(0, 2), keepdims=True)),
    ("percentile", lambda o: o.percentile(A, 30, axis=1, method="nearest"),
     lambda: np.percentile(A, 30, axis=1, method="nearest")),
    ("nanquantile", lambda o: o.nanquantile(NANS, 0.75, axis=1),
     lambda: np.nanquantile(NANS, 0.75, axis=1)),
    ("nanpercentile", lambda o: o.nanpercentile(NANS, 40, method="midpoint"),
     lambda: np.nanpercentile(NANS, 40, method="midpoint")),
    ("searchsorted", lambda o: o.searchsorted(np.sort(V), A.ravel(), side="right"),
     lambda: np.searchsorted(np.sort(V), A.ravel(), side="right")),
    ("digitize", lambda o: o.digitize(A, np.sort(V)), lambda: np.digitize(A, np.sort(V))),
    ("bincount", lambda o: o.bincount(IN.ravel(), weights=A.ravel()[:6], minlength=9),
     lambda: np.bincount(IN.ravel(), A.ravel()[:6], 9)),
    ("histogram", lambda o: o.histogram(A.ravel(), 4), lambda: np.histogram(A.ravel(), 4)),
    ("unique", lambda o: o.unique(np.array([3, 1, 3, 2, 1]), return_inverse=True,
                                  return_counts=True),
     lambda: np.unique(np.array([3, 1, 3, 2, 1]), return_inverse=True, return_counts=True)),
    ("nonzero", lambda o: o.nonzero(IN), lambda: np.nonzero(IN)),
    ("isin", lambda o: o.isin(IN, [0, 5, 9]), lambda: np.isin(IN, [0, 5, 9])),
    ("unravel_index", lambda o: o.unravel_index(np.array([0, 5, 11]), (3, 4)),
     lambda: np.unravel_index(np.array([0, 5, 11]), (3, 4))),
    # ---- shapes
    ("reshape", lambda o: o.reshape(A, (2, -1)), lambda: A.reshape(2, -1)),
    ("ravel", lambda o: o.ravel(X3), lambda: X3.ravel()),
    ("expand_dims", lambda o: o.expand_dims(A, (0, -1)), lambda: np.expand_dims(A, (0, -1))),
    ("squeeze", lambda o: o.squeeze(A[None, :, None], (0, 2)), lambda: A),
    ("transpose", lambda o: o.transpose(X3, (2, 0, 1)), lambda: X3.transpose(2, 0, 1)),
    ("swapaxes", lambda o: o.swapaxes(X3, 0, 2), lambda: X3.swapaxes(0, 2)),
    ("moveaxis", lambda o: o.moveaxis(X3, (0, 1), (2, 0)), lambda: np.moveaxis(X3, (0, 1), (2, 0))),
    ("broadcast_to", lambda o: o.broadcast_to(V, (2, 5)), lambda: np.broadcast_to(V, (2, 5))),
    ("concatenate", lambda o: o.concatenate([A, B], axis=None),
     lambda: np.concatenate([A, B], axis=None)),
    ("append", lambda o: o.append(A, B, 1), lambda: np.append(A, B, 1)),
    ("stack", lambda o: o.stack([A, B], -1), lambda: np.stack([A, B], -1)),
    ("hstack", lambda o: o.hstack([A, B]), lambda: np.hstack([A, B])),
    ("vstack", lambda o: o.vstack([V, V]), lambda: np.vstack([V, V])),
    ("dstack", lambda o: o.dstack([A, B]), lambda: np.dstack([A, B])),
    ("split", lambda o: o.split(A, [1, 3], 1), lambda: np.split(A, [1, 3], 1)),
    ("array_split", lambda o: o.array_split(V, 3), lambda: np.array_split(V, 3)),
    ("hsplit", lambda o: o.hsplit(A, 2), lambda: np.hsplit(A, 2)),
    ("vsplit", lambda o: o.vsplit(A, 3), lambda: np.vsplit(A, 3)),
    ("dsplit", lambda o: o.dsplit(X3, [1]), lambda: np.dsplit(X3, [1])),
    ("tile", lambda o: o.tile(A, (2, 1, 2)), lambda: np.tile(A, (2, 1, 2))),
    ("repeat", lambda o: o.repeat(A, [1, 0, 2], axis=0), lambda: np.repeat(A, [1, 0, 2], 0)),
    ("flip", lambda o: o.flip(X3, (0, 2)), lambda: np.flip(X3, (0, 2))),
    ("fliplr", lambda o: o.fliplr(A), lambda: np.fliplr(A)),
    ("flipud", lambda o: o.flipud(A), lambda: np.flipud(A)),
    ("rot90", lambda o: o.rot90(X3, 3, (1, 2)), lambda: np.rot90(X3, 3, (1, 2))),
    ("roll", lambda o: o.roll(A, (1, -2), (0, 1)), lambda: np.roll(A, (1, -2), (0, 1))),
    ("pad", lambda o: o.pad(A, ((1, 2), (2, 0)), mode="symmetric"),
     lambda: np.pad(A, ((1, 2), (2, 0)), mode="symmetric")),
    ("copy", lambda o: o.copy(A), lambda: A.copy()),
    ("array", lambda o: o.array([[1, 2]], "float32"), lambda: np.array([[1, 2]], np.float32)),
    ("view", lambda o: o.view(A, "int32"), lambda: A.view(np.int32)),
    ("get_item", lambda o: o.get_item(X3, (slice(None), 1)), lambda: X3[:, 1]),
    ("take", lambda o: o.take(A, np.array([[0, -1]]), axis=1), lambda: np.take(A, [[0, -1]], 1)),
    ("take_along_axis", lambda o: o.take_along_axis(A, np.argsort(A, 1)[:, :2], 1),
     lambda: np.take_along_axis(A, np.argsort(A, 1)[:, :2], 1)),
    ("diff", lambda o: o.diff(A, 2, 1), lambda: np.diff(A, 2, 1)),
    ("ndim", lambda o: o.ndim(X3), lambda: 3),
    ("size", lambda o: o.size(X3), lambda: 24),
    # ---- products
    ("matmul", lambda o: o.matmul(X3, M), lambda: X3 @ M),
    ("dot", lambda o: o.dot(X3, M), lambda: np.dot(X3, M)),
    ("vdot", lambda o: o.vdot(A, B), lambda: np.vdot(A, B)),
    ("inner", lambda o: o.inner(A, B), lambda: np.inner(A, B)),
    ("outer", lambda o: o.outer(V, V[:3]), lambda: np.outer(V, V[:3])),
    ("tensordot", lambda o: o.tensordot(X3, A, ((1, 2), (0, 1))),
     lambda: np.tensordot(X3, A, ((1, 2), (0, 1)))),
    ("einsum", lambda o: o.einsum("bij,jk->bik", X3, M), lambda: np.einsum("bij,jk->bik", X3, M)),
    ("kron", lambda o: o.kron(A[:2, :2], B[:2, :3]), lambda: np.kron(A[:2, :2], B[:2, :3])),
    ("cross", lambda o: o.cross(A[:, :3], B[:, :3]), lambda: np.cross(A[:, :3], B[:, :3])),
    ("correlate", lambda o: o.correlate(V, V[:3], "full"), lambda: np.correlate(V, V[:3], "full")),
    ("corrcoef", lambda o: o.corrcoef(A), lambda: np.corrcoef(A)),
    ("trapezoid", lambda o: o.trapezoid(A, dx=0.5), lambda: np.trapezoid(A, dx=0.5)),
    ("vectorize", lambda o: o.vectorize(lambda a, b: a * 2 + b)(A, V[:4]),
     lambda: A * 2 + V[:4]),
    # ---- core
    ("convert_to_tensor", lambda o: o.convert_to_tensor([1, 2]),
     lambda: np.array([1, 2], np.int32)),
    ("convert_to_numpy", lambda o: o.convert_to_numpy(lk.constant(A)), lambda: A),
    ("is_tensor", lambda o: o.is_tensor(lk.constant(A)) and not o.is_tensor(A), lambda: True),
    ("shape", lambda o: o.shape(lk.constant(X3)), lambda: (2, 3, 4)),
    ("dtype", lambda o: o.dtype(IN), lambda: "int32"),
    ("cast", lambda o: o.cast(A * 3, "int32"), lambda: (A * 3).astype(np.int32)),
    ("saturate_cast", lambda o: o.saturate_cast(np.array([-300.0, 5.7, 300.0]), "uint8"),
     lambda: np.array([0, 5, 255], np.uint8)),
    ("stop_gradient", lambda o: o.stop_gradient(A), lambda: A),
    ("custom_gradient", lambda o: o.custom_gradient(lambda x: (x * 2, lambda g: g))(A),
     lambda: A * 2),
    ("cond", lambda o: o.cond(True, lambda: A, lambda: B), lambda: A),
    ("switch", lambda o: o.switch(5, [lambda x: x, lambda x: -x], A), lambda: -A),
    ("fori_loop", lambda o: o.fori_loop(0, 4, lambda i, v: v + i, A), lambda: A + 6),
    ("while_loop", lambda o: o.while_loop(lambda i, s: i < 3, lambda i, s: (i + 1, s * 2),
                                          (0, A))[1], lambda: A * 8),
    ("scan", lambda o: o.scan(lambda c, x: (c + x, c * x), V[0], V[1:]),
     lambda: (V.sum(), np.cumsum(np.r_[V[0], V[1:-1]]) * V[1:])),
    ("associative_scan", lambda o: o.associative_scan(lambda a, b: a + b, A, axis=1),
     lambda: np.cumsum(A, 1)),
    ("map", lambda o: o.map(lambda r: r * r, A), lambda: A * A),
    ("vectorized_map", lambda o: o.vectorized_map(lambda r: r.sum() if hasattr(r, "sum")
                                                  else lk.reduce_sum(r), A),
     lambda: A.sum(1)),
    ("scatter", lambda o: o.scatter([[0, 1], [2, 3], [0, 1]], [1.0, 2.0, 3.0], (3, 4)),
     lambda: np.array([[0, 4, 0, 0], [0, 0, 0, 0], [0, 0, 0, 2]], np.float32)),
    ("scatter_update", lambda o: o.scatter_update(A, [[0, 1], [2, 3]], [9.0, 8.0]),
     lambda: _set(A, [(0, 1), (2, 3)], [9.0, 8.0])),
    ("slice", lambda o: o.slice(X3, (0, 1, 1), (2, 2, 3)), lambda: X3[:, 1:3, 1:4]),
    ("slice_update", lambda o: o.slice_update(A, (1, 1), np.ones((2, 2), np.float32)),
     lambda: _block(A)),
    ("unstack", lambda o: o.unstack(A, axis=1), lambda: list(A.T)),
    # ---- nn
    ("relu", lambda o: o.relu(A), lambda: np.maximum(A, 0)),
    ("relu6", lambda o: o.relu6(A * 10), lambda: np.clip(A * 10, 0, 6)),
    ("sigmoid", lambda o: o.sigmoid(A), lambda: _sigmoid(A)),
    ("softplus", lambda o: o.softplus(A), lambda: np.log1p(np.exp(A))),
    ("softsign", lambda o: o.softsign(A), lambda: A / (1 + np.abs(A))),
    ("silu", lambda o: o.silu(A), lambda: A * _sigmoid(A)),
    ("swish", lambda o: o.swish(A), lambda: A * _sigmoid(A)),
    ("log_sigmoid", lambda o: o.log_sigmoid(A), lambda: np.log(_sigmoid(A))),
    ("leaky_relu", lambda o: o.leaky_relu(A), lambda: np.where(A > 0, A, 0.2 * A)),
    ("hard_sigmoid", lambda o: o.hard_sigmoid(A * 5), lambda: np.clip(A * 5 / 6 + 0.5, 0, 1)),
    ("hard_silu", lambda o: o.hard_silu(A * 5), lambda: A * 5 * np.clip(A * 5 / 6 + 0.5, 0, 1)),
    ("hard_swish", lambda o: o.hard_swish(A), lambda: A * np.clip(A / 6 + 0.5, 0, 1)),
    ("elu", lambda o: o.elu(A, 0.5), lambda: np.where(A > 0, A, 0.5 * np.expm1(A))),
    ("selu", lambda o: o.selu(A), lambda: 1.0507009873554805 * np.where(
        A > 0, A, 1.6732632423543772 * np.expm1(A))),
    ("gelu", lambda o: o.gelu(A), lambda: _gelu_tanh(A)),
    ("celu", lambda o: o.celu(A, 2.0), lambda: np.maximum(A, 0) + np.minimum(
        0, 2 * np.expm1(A / 2))),
    ("glu", lambda o: o.glu(A), lambda: A[:, :2] * _sigmoid(A[:, 2:])),
    ("hard_tanh", lambda o: o.hard_tanh(A * 2), lambda: np.clip(A * 2, -1, 1)),
    ("hard_shrink", lambda o: o.hard_shrink(A), lambda: np.where(np.abs(A) > 0.5, A, 0)),
    ("soft_shrink", lambda o: o.soft_shrink(A), lambda: np.sign(A) * np.maximum(
        np.abs(A) - 0.5, 0)),
    ("tanh_shrink", lambda o: o.tanh_shrink(A), lambda: A - np.tanh(A)),
    ("threshold", lambda o: o.threshold(A, 0.1, -5.0), lambda: np.where(A > 0.1, A, -5.0)),
    ("sparse_plus", lambda o: o.sparse_plus(A * 2), lambda: np.where(
        A * 2 <= -1, 0, np.where(A * 2 >= 1, A * 2, (A * 2 + 1) ** 2 / 4))),
    ("sparse_sigmoid", lambda o: o.sparse_sigmoid(A * 2), lambda: np.clip((A * 2 + 1) / 2, 0, 1)),
    ("squareplus", lambda o: o.squareplus(A, 2), lambda: (A + np.sqrt(A * A + 2)) / 2),
    ("sparsemax", lambda o: o.sparsemax(np.array([[0.1, 1.1, 0.5], [2.0, -1.0, 0.0]],
                                                 np.float32)),
     lambda: np.array([[0.0, 0.8, 0.2], [1.0, 0.0, 0.0]], np.float32)),
    ("softmax", lambda o: o.softmax(A), lambda: _softmax(A)),
    ("log_softmax", lambda o: o.log_softmax(A, axis=0), lambda: np.log(_softmax(A, 0))),
    ("one_hot", lambda o: o.one_hot(np.array([0, 2, 5]), 3, axis=0),
     lambda: np.array([[1, 0, 0], [0, 0, 0], [0, 1, 0]], np.float32)),
    ("multi_hot", lambda o: o.multi_hot(np.array([[0, 2], [1, 1]]), 4),
     lambda: np.array([[1, 0, 1, 0], [0, 1, 0, 0]], np.float32)),
    ("moments", lambda o: o.moments(A, axes=[1]), lambda: (A.mean(1), A.var(1))),
    ("batch_normalization", lambda o: o.batch_normalization(A, V[:4], POS[0], 1, B[0], A[0]),
     lambda: (A - V[:4]) / np.sqrt(POS[0] + 1e-3) * A[0] + B[0]),
    ("layer_normalization", lambda o: o.layer_normalization(A, B[0], A[0]),
     lambda: (A - A.mean(1, keepdims=True)) / np.sqrt(A.var(1, keepdims=True) + 1e-7) * B[0]
     + A[0]),
    ("rms_normalization", lambda o: o.rms_normalization(A, B[0]),
     lambda: A / np.sqrt((A * A).mean(1, keepdims=True) + 1e-7) * B[0]),
    ("normalize", lambda o: o.normalize(A, order=1, axis=0),
     lambda: A / np.abs(A).sum(0, keepdims=True)),
    ("binary_crossentropy", lambda o: o.binary_crossentropy(BIN_T, _sigmoid(A)),
     lambda: -(BIN_T * np.log(_sigmoid(A)) + (1 - BIN_T) * np.log(1 - _sigmoid(A)))),
    ("categorical_crossentropy", lambda o: o.categorical_crossentropy(ONEHOT, PROBS * 3),
     lambda: _cce(ONEHOT, PROBS)),
    ("sparse_categorical_crossentropy",
     lambda o: o.sparse_categorical_crossentropy(LABELS, LOGITS, from_logits=True),
     lambda: -np.log(PROBS[np.arange(4), LABELS])),
    ("conv", lambda o: o.conv(IMG, KER, strides=2), lambda: _conv2d_ref(IMG, KER, 2)),
    ("conv_transpose", lambda o: o.conv_transpose(IMG[:, :2, :2, :2], KER[..., :2, :],
                                                  strides=2).shape,
     lambda: (2, 5, 5, 2)),
    ("depthwise_conv", lambda o: o.depthwise_conv(IMG, KER[..., :1]),
     lambda: np.concatenate([_conv2d_ref(IMG[..., c:c + 1], KER[..., c:c + 1, :1])
                             for c in range(3)], -1)),
    ("separable_conv", lambda o: o.separable_conv(IMG, KER[..., :1], B[:3, :2][None, None]),
     lambda: np.concatenate([_conv2d_ref(IMG[..., c:c + 1], KER[..., c:c + 1, :1])
                             for c in range(3)], -1) @ B[:3, :2]),
    ("max_pool", lambda o: o.max_pool(IMG, 2), lambda: IMG.reshape(2, 3, 2, 3, 2, 3).max((2, 4))),
    ("average_pool", lambda o: o.average_pool(IMG, 3, data_format="channels_last"),
     lambda: IMG.reshape(2, 2, 3, 2, 3, 3).mean((2, 4))),
    ("adaptive_average_pool", lambda o: o.adaptive_average_pool(SEQ, 3),
     lambda: _adaptive_avg(SEQ, 3)),
    ("adaptive_max_pool", lambda o: o.adaptive_max_pool(SEQ, 4),
     lambda: SEQ.reshape(2, 4, 2, 3).max(2)),
    ("ctc_loss", lambda o: o.ctc_loss(np.array([[1, 2], [2, 2]]), CTC, np.array([2, 2]),
                                      np.array([4, 3])),
     lambda: np.array([_ctc_brute(CTC[0], [1, 2]), _ctc_brute(CTC[1, :3], [2, 2])])),
    ("ctc_decode", lambda o: o.ctc_decode(np.log(np.eye(3)[[1, 1, 0, 2, 2, 1]] + 0.1)[None],
                                          np.array([5])),
     lambda: (np.array([[[1, 2, -1, -1, -1, -1]]]),
              np.array([[-5 * np.log(1.1)]], np.float64))),
    ("polar", lambda o: o.polar(POS, A), lambda: POS * np.exp(1j * A)),
    ("view_as_real", lambda o: o.view_as_real(np.array([1 + 2j, 3 - 1j], np.complex64)),
     lambda: np.array([[1.0, 2.0], [3.0, -1.0]], np.float32)),
    ("view_as_complex", lambda o: o.view_as_complex(A[:, :2]), lambda: A[:, 0] + 1j * A[:, 1]),
    ("dot_product_attention", lambda o: o.dot_product_attention(Q, K, VV),
     lambda: _attention(Q, K, VV)),
    ("psnr", lambda o: o.psnr(POS, POS + 0.1, 2.0),
     lambda: 20 * np.log10(2.0) - 10 * np.log10(np.mean((0.1 * np.ones_like(POS)) ** 2))),
    ("depth_to_space", lambda o: o.depth_to_space(np.arange(16.0).reshape(1, 1, 1, 16), 2),
     lambda: np.arange(16.0).reshape(1, 2, 2, 4)),
    ("space_to_depth", lambda o: o.space_to_depth(np.arange(16.0).reshape(1, 2, 2, 4), 2),
     lambda: np.arange(16.0).reshape(1, 1, 1, 16)),
    ("unfold", lambda o: o.unfold(NCHW, 2), lambda: _unfold_ref(NCHW, 2)),
    ("fold", lambda o: o.fold(o.unfold(NCHW, 2), (4, 4), 2),
     lambda: NCHW * np.outer([1, 2, 2, 1], [1, 2, 2, 1])),
    # ---- math
    ("erf", lambda o: o.erf(A), lambda: _erf(A)),
    ("erfc", lambda o: o.erfc(A), lambda: 1 - _erf(A)),
    ("erfinv", lambda o: o.erf(o.erfinv(UNIT)), lambda: UNIT),
    ("logsumexp", lambda o: o.logsumexp(A, 1), lambda: np.log(np.exp(A).sum(1))),
    ("rsqrt", lambda o: o.rsqrt(POS), lambda: 1 / np.sqrt(POS)),
    ("top_k", lambda o: o.top_k(np.array([[1.0, 3.0, 3.0, 2.0]]), 3),
     lambda: (np.array([[3.0, 3.0, 2.0]]), np.array([[1, 2, 3]]))),
    ("in_top_k", lambda o: o.in_top_k(LABELS, LOGITS, 2),
     lambda: np.array([(LOGITS[i] > LOGITS[i, LABELS[i]]).sum() < 2 for i in range(4)])),
    ("segment_sum", lambda o: o.segment_sum(DATA, SEG, 4),
     lambda: np.stack([DATA[SEG == s].sum(0) for s in range(4)])),
    ("segment_max", lambda o: o.segment_max(DATA, SEG),
     lambda: np.stack([DATA[SEG == s].max(0) for s in range(3)])),
    ("segment_min", lambda o: o.segment_min(DATA, SEG),
     lambda: np.stack([DATA[SEG == s].min(0) for s in range(3)])),
    ("segment_prod", lambda o: o.segment_prod(DATA, SEG, 3),
     lambda: np.stack([DATA[SEG == s].prod(0) for s in range(3)])),
    ("extract_sequences", lambda o: o.extract_sequences(V, 3, 2),
     lambda: np.stack([V[0:3], V[2:5]])),
    ("logdet", lambda o: o.logdet(SPD), lambda: np.linalg.slogdet(SPD)[1]),
    ("fft", lambda o: o.fft((A, B)), lambda: (np.fft.fft(A + 1j * B).real,
                                              np.fft.fft(A + 1j * B).imag)),
    ("fft2", lambda o: o.fft2((A, B)), lambda: (np.fft.fft2(A + 1j * B).real,
                                                np.fft.fft2(A + 1j * B).imag)),
    ("ifft2", lambda o: o.ifft2((A, B)), lambda: (np.fft.ifft2(A + 1j * B).real,
                                                  np.fft.ifft2(A + 1j * B).imag)),
    ("rfft", lambda o: o.rfft(A, 6), lambda: (np.fft.rfft(A, 6).real, np.fft.rfft(A, 6).imag)),
    ("irfft", lambda o: o.irfft((A, B), 5), lambda: np.fft.irfft(A + 1j * B, 5)),
    ("stft", lambda o: o.stft(V, 4, 1, 4, window=None, center=False),
     lambda: (np.fft.rfft(np.stack([V[0:4], V[1:5]])).real,
              np.fft.rfft(np.stack([V[0:4], V[1:5]])).imag)),
    ("istft", lambda o: o.istft(o.stft(X3, 4, 2, 6), 4, 2, 6, length=4), lambda: X3),
    ("rearrange", lambda o: o.rearrange(X3, "b (h w) c -> (b c) w h", w=1),
     lambda: X3.transpose(0, 2, 1).reshape(8, 1, 3)),
    ("cdist", lambda o: o.cdist(A, B[:2]),
     lambda: np.sqrt(((A[:, None] - B[None, :2]) ** 2).sum(-1))),
    # ---- linalg
    ("inv", lambda o: o.inv(SPD), lambda: np.linalg.inv(SPD)),
    ("det", lambda o: o.det(M), lambda: np.linalg.det(M)),
    ("slogdet", lambda o: o.slogdet(M), lambda: np.linalg.slogdet(M)),
    ("solve", lambda o: o.solve(SPD, A.T), lambda: np.linalg.solve(SPD, A.T)),
    ("solve_triangular", lambda o: o.solve_triangular(SPD, V[:4], lower=True),
     lambda: np.linalg.solve(np.tril(SPD), V[:4])),
    ("cholesky", lambda o: o.cholesky(SPD, upper=True), lambda: np.linalg.cholesky(SPD).T),
    ("cholesky_inverse", lambda o: o.cholesky_inverse(np.linalg.cholesky(SPD)),
     lambda: np.linalg.inv(SPD)),
    ("eigh", lambda o: o.eigh(SPD)[0], lambda: np.linalg.eigvalsh(SPD)),
    ("eig", lambda o: np.sort(np.abs(o.eig(SPD)[0].numpy())), lambda: np.sort(
        np.linalg.eigvalsh(SPD))),
    ("qr", lambda o: o.matmul(*o.qr(M)), lambda: M),
    ("svd", lambda o: o.svd(M, compute_uv=False), lambda: np.linalg.svd(M, compute_uv=False)),
    ("lu_factor", lambda o: o.lu_factor(M), lambda: _lu_ref(M)),
    ("lstsq", lambda o: o.lstsq(A.T, V[:4]), lambda: np.linalg.lstsq(A.T, V[:4], rcond=None)[0]),
    ("pinv", lambda o: o.pinv(A), lambda: np.linalg.pinv(A)),
    ("matrix_rank", lambda o: o.matrix_rank(A[:, :2] @ B[:2]), lambda: 2),
    ("norm", lambda o: o.norm(A, ord=np.inf), lambda: np.linalg.norm(A, np.inf)),
    ("jvp", lambda o: o.jvp(lambda x: x * x, (A,), (B,)), lambda: (A * A, 2 * A * B)),
]


def _set(x, where, vals):
    y = x.copy()
    for (i, j), v in zip(where, vals):
        y[i, j] = v
    return y


def _block(x):
    y = x.copy()
    y[1:3, 1:3] = 1.0
    return y


def _leaves(v):
    if isinstance(v, (tuple, list)):
        out = []
        for e in v:
            out.extend(_leaves(e))
        return out
    return [v]


@pytest.mark.parametrize("row", ROWS, ids=[r[0] for r in ROWS])
def test_forward(row):
    name, call, expected = row
    with np.errstate(all="ignore"):
        got, want = call(ops), expected()
    got_l, want_l = _leaves(got), _leaves(want)
    assert len(got_l) == len(want_l), name
    for g, w in zip(got_l, want_l):
        g = np.asarray(g.numpy() if isinstance(g, lk.Tensor) else g)
        w = np.asarray(w)
        assert g.shape == w.shape, f"{name}: shape {g.shape} != {w.shape}"
        if w.dtype.kind in "fc":
            np.testing.assert_allclose(g, w, rtol=2e-5, atol=2e-5, err_msg=name)
        else:
            np.testing.assert_array_equal(g, w, err_msg=name)


def test_every_name_has_a_row():
    covered = {r[0] for r in ROWS}
    image_names = set(ops.image.__all__)
    missing = sorted(set(ops.__all__) - covered)
    assert not missing, missing
    assert image_names  # covered in test_image_and_semantics.py
