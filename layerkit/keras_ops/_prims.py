"""Helpers and the few op records keras.ops needs that layerkit's public ops lack.

Everything else in ``layerkit.keras_ops`` is composed from public layerkit ops (reached
through ``import layerkit as lk``), so it is recorded by tapes and traced by
``lk.function`` like any other op. The records here follow the project's op contract:
a NumPy ``forward`` and, where the function is differentiable, a ``vjp`` written with
layerkit ops (so higher-order gradients work too).
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import overload

import numpy as np

import layerkit as lk
from layerkit._core.op import Op, apply
from layerkit._core.tensor import Tensor
from layerkit.autodiff.function.trace import TracedTensor

FLOATX = np.dtype("float32")


# ---- conversion, dtypes and axes ---------------------------------------------------
def dtype_arg(dtype, who: str) -> np.dtype | None:
    """``dtype`` as a NumPy dtype (Keras spellings: "float32", "int32", "bool", ...)."""
    if dtype is None:
        return None
    try:
        return np.dtype(getattr(dtype, "name", dtype) if not isinstance(dtype, np.dtype)
                        else dtype)
    except TypeError:
        raise TypeError(f"keras_ops.{who}: dtype must name a NumPy dtype such as "
                        f"'float32' or 'int32', received {dtype!r}") from None


def _is_int_like(x) -> bool:
    if isinstance(x, bool):
        return False
    if isinstance(x, int):
        return True
    if isinstance(x, (list, tuple)) and x:
        arr = np.asarray(x)
        return arr.dtype.kind == "i"
    return False


def t(x, dtype=None) -> Tensor:
    """``x`` as a Tensor; Python ints become int32 as in Keras (floats float32)."""
    if isinstance(x, Tensor):
        return x if dtype is None or x.dtype == dtype else lk.cast(x, dtype)
    if dtype is None and _is_int_like(x):
        dtype = np.int32
    return lk.convert_to_tensor(x, dtype=dtype)


def is_traced(x) -> bool:
    """Whether ``x`` is being traced by ``lk.function`` (its value cannot be read)."""
    return isinstance(x, TracedTensor)


def floating(x, who: str = "") -> Tensor:
    """``x`` as a float Tensor: integer and bool inputs become float32 (Keras's rule for
    float-only math such as ``sqrt``, ``mean``, ``exp`` on ints)."""
    x = t(x)
    if x.dtype.kind in "fc":
        return x
    return lk.cast(x, FLOATX)


def result_dtype(dtypes, weak_float: bool = False) -> np.dtype:
    """Keras's promotion: floats win over integers without widening (int32 with
    float32 is float32, not NumPy's float64), and a Python float with only integer
    tensors gives float32; otherwise NumPy's rule."""
    floats = [d for d in dtypes if d.kind in "fc"]
    if floats:
        return np.result_type(*floats)
    if weak_float:
        return FLOATX
    return np.result_type(*dtypes)


def promote(values: list) -> list:
    """``values`` (Tensors and weak Python scalars) cast to Keras's common dtype when it
    is a float; integer combinations are left to NumPy's rule."""
    ts = [v for v in values if isinstance(v, Tensor)]
    weak = any(isinstance(v, float) for v in values if not isinstance(v, Tensor))
    dt = result_dtype([v.dtype for v in ts], weak)
    if dt.kind not in "fc":
        return values
    return [lk.cast(v, dt) if isinstance(v, Tensor) and v.dtype != dt else v for v in values]


def float_pair(x1, x2):
    """Both operands as floats of their common type (ints become float32)."""
    a = x1 if isinstance(x1, (float, int)) and not isinstance(x1, bool) else floating(x1)
    b = x2 if isinstance(x2, (float, int)) and not isinstance(x2, bool) else floating(x2)
    if isinstance(a, Tensor) and isinstance(b, Tensor) and a.dtype != b.dtype:
        common = np.result_type(a.dtype, b.dtype)
        a, b = lk.cast(a, common), lk.cast(b, common)
    if not isinstance(a, Tensor) and not isinstance(b, Tensor):
        a = t(float(a))
    return a, b


def axis_one(axis, ndim: int, who: str) -> int:
    """One axis in range, as a non-negative int."""
    if isinstance(axis, (bool, float)) or not isinstance(axis, (int, np.integer)):
        raise TypeError(f"keras_ops.{who}: axis must be an int, received {axis!r}")
    a = int(axis)
    if not -ndim <= a < max(ndim, 1):
        raise ValueError(f"keras_ops.{who}: axis {a} is out of range for a tensor of "
                         f"rank {ndim}")
    return a % max(ndim, 1)


@overload
def axes_arg(axis: None, ndim: int, who: str) -> None: ...
@overload
def axes_arg(axis: int | Sequence[int], ndim: int, who: str) -> tuple[int, ...]: ...
def axes_arg(axis, ndim: int, who: str) -> tuple[int, ...] | None:
    """``None`` or a tuple of non-negative axes (an int or a sequence of ints)."""
    if axis is None:
        return None
    if isinstance(axis, (list, tuple)):
        out = tuple(axis_one(a, ndim, who) for a in axis)
        if len(set(out)) != len(out):
            raise ValueError(f"keras_ops.{who}: repeated axis in {axis!r}")
        return out
    return (axis_one(axis, ndim, who),)


def swap_last(x: Tensor) -> Tensor:
    """Transpose of the last two axes."""
    n = x.ndim
    return lk.transpose(x, list(range(n - 2)) + [n - 1, n - 2])


def moveaxis_to_end(x: Tensor, axis: int) -> Tensor:
    perm = [i for i in range(x.ndim) if i != axis] + [axis]
    return lk.transpose(x, perm) if axis != x.ndim - 1 else x


def moveaxis_from_end(x: Tensor, axis: int) -> Tensor:
    n = x.ndim
    if axis == n - 1:
        return x
    perm = list(range(n - 1))
    perm.insert(axis, n - 1)
    return lk.transpose(x, perm)


# ---- gather / scatter along an axis (a pair closed under differentiation) -------------
def _along_index(idx: np.ndarray, axis: int) -> tuple:
    grids: list = list(np.indices(idx.shape, sparse=True))
    grids[axis] = idx
    return tuple(grids)


def _take_along_vjp(g, ins, y, needs, axis):
    return (put_along_add(g, ins[1], axis, tuple(ins[0].shape)), None)


def _put_along_vjp(g, ins, y, needs, axis, shape):
    return (take_along(g, ins[1], axis), None)


def _put_along_forward(u, idx, axis, shape):
    out = np.zeros(shape, u.dtype)
    np.add.at(out, _along_index(idx, axis), u)
    return out


_TAKE_ALONG = Op("keras_take_along_axis",
                 lambda x, idx, axis: np.take_along_axis(x, idx, axis), _take_along_vjp)
_PUT_ALONG = Op("keras_put_along_axis_add", _put_along_forward, _put_along_vjp)


def take_along(x, idx, axis: int) -> Tensor:
    """``np.take_along_axis`` (indices of idx's shape, non-negative), differentiable."""
    return apply(_TAKE_ALONG, x, idx, axis=axis)


def put_along_add(u, idx, axis: int, shape: tuple) -> Tensor:
    """Zeros of ``shape`` with ``u`` added at ``idx`` along ``axis`` (duplicates add)."""
    return apply(_PUT_ALONG, u, idx, axis=axis, shape=tuple(shape))


def _scatter_vjp(g, ins, y, needs, shape):
    return (None, lk.gather_nd(g, ins[0]))


def _scatter_forward(indices, values, shape):
    out = np.zeros(shape, values.dtype)
    np.add.at(out, tuple(np.moveaxis(indices, -1, 0)), values)
    return out


_SCATTER = Op("keras_scatter_nd_add", _scatter_forward, _scatter_vjp)


def scatter_add(indices, values, shape: tuple) -> Tensor:
    """Zeros of ``shape`` with ``values`` added at ``indices`` (last axis indexes)."""
    return apply(_SCATTER, indices, values, shape=tuple(int(s) for s in shape))


# ---- forward-only records ------------------------------------------------------------
_NO_GRAD: dict = {}


def nograd(name: str, fn, num_outputs: int = 1):
    """Run ``fn`` on NumPy arrays as a recorded op without a gradient (int results,
    sorting orders, decompositions layerkit does not differentiate). Records are shared
    per function code; a closure gets its own record (its captured values may differ)."""
    if getattr(fn, "__closure__", None):
        return Op(f"keras_{name}", fn, num_outputs=num_outputs)
    key = (name, num_outputs, getattr(fn, "__code__", fn))
    op = _NO_GRAD.get(key)
    if op is None:
        op = _NO_GRAD[key] = Op(f"keras_{name}", fn, num_outputs=num_outputs)
    return op


def run(name: str, fn, *args, num_outputs: int = 1, **attrs):
    """``apply`` the forward-only record ``name`` (made on first use)."""
    return apply(nograd(name, fn, num_outputs), *args, **attrs)


def argsort_last(x: Tensor, descending: bool = False) -> Tensor:
    """Stable argsort along the last axis (int32)."""
    def fwd(a, descending):
        if descending:
            return (a.shape[-1] - 1 - np.argsort(a[..., ::-1], axis=-1, kind="stable")[
                ..., ::-1]).astype(np.int32)
        return np.argsort(a, axis=-1, kind="stable").astype(np.int32)
    return run("argsort", fwd, x, descending=bool(descending))


# ---- elementwise records that layerkit lacks --------------------------------------------
def _unary(name: str, fwd, deriv):
    """An elementwise op whose derivative is ``deriv(x, y)`` in lk ops."""
    def vjp(g, ins, y, needs):
        return (lk.multiply(g, deriv(ins[0], y)),)
    return Op(f"keras_{name}", fwd, vjp)


_ARCTAN = _unary("arctan", np.arctan, lambda x, y: 1.0 / (1.0 + x * x))
_ARCSIN = _unary("arcsin", np.arcsin, lambda x, y: lk.rsqrt(1.0 - x * x))
_ARCCOS = _unary("arccos", np.arccos, lambda x, y: -lk.rsqrt(1.0 - x * x))


def _erfinv_np(y: np.ndarray) -> np.ndarray:
    """Inverse error function: Giles's single-precision approximation refined by two
    Newton steps on ``erf`` in float64."""
    y64 = np.asarray(y, np.float64)
    w = -np.log(np.clip((1.0 - y64) * (1.0 + y64), 1e-300, None))
    small = w < 5.0
    ws = w - 2.5
    wl = np.sqrt(np.where(small, 5.0, w)) - 3.0
    ps = np.polyval([2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06,
                     0.00021858087, -0.00125372503, -0.00417768164, 0.246640727,
                     1.50140941], ws)
    pl = np.polyval([-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844,
                     0.00573950773, -0.0076224613, 0.00943887047, 1.00167406,
                     2.83297682], wl)
    x = np.where(small, ps, pl) * y64
    erf = np.vectorize(_math_erf, otypes=[np.float64])
    for _ in range(2):
        x = x - (erf(x) - y64) / (2.0 / np.sqrt(np.pi) * np.exp(-x * x))
    x = np.where(np.abs(y64) == 1.0, np.copysign(np.inf, y64), x)
    x = np.where(np.abs(y64) > 1.0, np.nan, x)
    return x.astype(y.dtype, copy=False)


def _math_erf(v: float) -> float:
    import math
    return math.erf(v) if np.isfinite(v) else float(np.sign(v))


_ERFINV = _unary("erfinv", _erfinv_np,
                 lambda x, y: float(np.sqrt(np.pi) / 2.0) * lk.exp(y * y))


def arctan(x) -> Tensor:
    return apply(_ARCTAN, x)


def arcsin(x) -> Tensor:
    return apply(_ARCSIN, x)


def arccos(x) -> Tensor:
    return apply(_ARCCOS, x)


def erfinv(x) -> Tensor:
    return apply(_ERFINV, x)


# ---- linear algebra records ----------------------------------------------------------------
def _inv_vjp(g, ins, y, needs):
    yt = swap_last(y)
    return (-lk.matmul(lk.matmul(yt, g), yt),)


_INV = Op("keras_inv", lambda a: np.linalg.inv(a), _inv_vjp)


def inv(a) -> Tensor:
    return apply(_INV, a)


def _solve_vjp(g, ins, y, needs, vec):
    a = ins[0]
    gb = solve(swap_last(a), g, vec)
    if vec:
        ga = -lk.expand_dims(gb, -1) * lk.expand_dims(y, -2)
    else:
        ga = -lk.matmul(gb, y, transpose_b=True)
    return (ga, gb)


def _solve_forward(a, b, vec):
    if vec:
        return np.linalg.solve(a, b[..., None])[..., 0]
    return np.linalg.solve(a, b)


_SOLVE = Op("keras_solve", _solve_forward, _solve_vjp)


def solve(a, b, vec: bool) -> Tensor:
    """``a x = b`` for square ``a`` (batched); ``vec``: b is a batch of vectors."""
    return apply(_SOLVE, a, b, vec=bool(vec))


def _slogdet_vjp(g, ins, y, needs):
    # d log|det A| = tr(A^-1 dA); the sign has no gradient.
    return (lk.expand_dims(lk.expand_dims(g[1], -1), -1) * swap_last(inv(ins[0])),)


_SLOGDET = Op("keras_slogdet", lambda a: tuple(np.linalg.slogdet(a)), _slogdet_vjp,
              num_outputs=2)


def slogdet(a) -> tuple:
    return apply(_SLOGDET, a)


def _cholesky_vjp(g, ins, L, needs):
    # For A = L L^T: P = Phi(L^T G) (lower triangle, diagonal halved),
    # S = L^-T P L^-1, dA = (S + S^T) / 2.
    n = L.shape[-1]
    lower = np.tril(np.ones((n, n), L.dtype))
    half = lower - 0.5 * np.eye(n, dtype=L.dtype)
    p = lk.matmul(L, g, transpose_a=True) * half
    linv = inv(L)
    s = lk.matmul(lk.matmul(linv, p, transpose_a=True), linv)
    return ((s + swap_last(s)) * 0.5,)


_CHOLESKY = Op("keras_cholesky", lambda a: np.linalg.cholesky(a), _cholesky_vjp)


def cholesky(a) -> Tensor:
    return apply(_CHOLESKY, a)


def _eigh_vjp(g, ins, outs, needs):
    w, v = outs
    gw, gv = g
    n = w.shape[-1]
    eye = np.eye(n, dtype=w.dtype)
    diff = lk.expand_dims(w, -2) - lk.expand_dims(w, -1)      # w_j - w_i
    f = lk.where(eye > 0, 0.0, 1.0 / lk.where(eye > 0, 1.0, diff))
    inner = lk.expand_dims(gw, -1) * eye
    if gv is not None:
        inner = inner + f * lk.matmul(v, gv, transpose_a=True)
    ga = lk.matmul(lk.matmul(v, inner), v, transpose_b=True)
    return ((ga + swap_last(ga)) * 0.5,)


_EIGH = Op("keras_eigh", lambda a: tuple(np.linalg.eigh(a)), _eigh_vjp, num_outputs=2)


def eigh(a) -> tuple:
    return apply(_EIGH, a)
