"""Reduction records: reduce_sum/mean/max/min/prod/logsumexp, cumsum/cumprod, argmax/argmin.

Every reduction takes ``axis=None|int|tuple|list`` (negative axes allowed, ``None`` means
all axes, ``()`` means none, a repeated axis counts once as in TF; non-integers are a
TypeError) and ``keepdims``. The axis is normalised once, in the public function, to a
sorted tuple of non-negative ints: that tuple is the record's attribute.

dtypes: integer sums, products and cumulative sums stay in the input dtype and wrap
around as in TensorFlow; integer means truncate toward zero and are exact (summed in 64
bits, or Python ints when that could wrap); float16 means sum in float32. The float-only
reductions (logsumexp, variance, std) refuse integer and bool input with a TypeError.

Gradient conventions (TensorFlow's):
- ``reduce_max``/``reduce_min`` split the upstream gradient equally among tied extrema.
- ``reduce_prod`` is exact at zeros for the first derivative (products of the *other*
  elements via two exclusive cumulative products, no division); its second derivative
  goes through ``cumprod``'s rule, which divides by the input (as TensorFlow's does) and
  is therefore exact only where the input has no zeros.
- ``reduce_logsumexp`` is computed stably (max shift) and its gradient is the softmax.
"""
from __future__ import annotations

from functools import lru_cache
from math import prod as _prod

import numpy as np

from layerkit._core.context import dynamic_dims
from layerkit._core.convert import convert_to_tensor
from layerkit._core.op import RECORDERS, Op, apply
from layerkit._core.tensor import Tensor
from layerkit._core.tuning import REDUCE_AXES_CACHE
from layerkit._core.types import AxisLike, DTypeLike, TensorLike
from layerkit.primitives import array as _array
from layerkit.primitives import elementwise as _ew
from layerkit.primitives.creation import axis_arg, int_arg
from layerkit.primitives.registry import export, top_level


# ---- axis handling ------------------------------------------------------------------
def _ndim(x) -> int:
    return x._rv.ndim if isinstance(x, Tensor) else np.ndim(x)


def _shape(x) -> tuple:
    return x._rv.shape if isinstance(x, Tensor) else np.shape(x)


def _norm_axis(axis, ndim: int, op: str = "reduce"):
    """Normalise ``axis`` to None or a sorted tuple of distinct non-negative ints.

    A repeated axis is reduced once, as in TensorFlow (NumPy refuses it).

    Raises:
        TypeError: an axis is not an integer (``axis=1.5`` never means axis 1).
        ValueError: naming ``op``, the axis and the rank when an axis is out of range.
    """
    if axis is None:
        return None
    if type(axis) is int:
        return _norm_axes_cached((axis,), ndim, op)
    if isinstance(axis, Tensor):
        axis = axis._v
    if isinstance(axis, np.ndarray) and axis.ndim:
        axis = axis.tolist()
    if isinstance(axis, (list, tuple)):
        # Checked before the cache (1.0 and True hash and compare equal to 1); plain ints
        # by one set test, ~10x cheaper than int_arg per element.
        if not _JUST_INT.issuperset(map(type, axis)):
            axis = [int_arg(a, op) for a in axis]
        return _norm_axes_cached(tuple(axis), ndim, op)
    return _norm_axes_cached((int_arg(axis, op),), ndim, op)


_JUST_INT = frozenset([int])


@lru_cache(maxsize=REDUCE_AXES_CACHE)
def _norm_axes_cached(axes: tuple, ndim: int, op: str) -> tuple:
    return tuple(sorted({axis_arg(a, ndim, op) for a in axes}))


def _kept_shape(shape: tuple, axis) -> tuple:
    """The shape the reduction would have with keepdims=True (for broadcasting back)."""
    if axis is None:
        return (1,) * len(shape)
    return tuple(1 if i in axis else n for i, n in enumerate(shape))


def _count(shape: tuple, axis) -> int:
    if axis is None:
        return _prod(shape)
    return _prod(shape[i] for i in axis)


def _check_nonempty(op: str, shape: tuple, axis) -> None:
    axes = range(len(shape)) if axis is None else axis
    if any(shape[i] == 0 for i in axes):
        raise ValueError(
            f"{op}: cannot reduce over an empty axis (input shape {shape}, axis "
            f"{None if axis is None else tuple(axis)}, rank {len(shape)}): there is no identity"
        )


def _expand(g: Tensor, x: Tensor, axis, keepdims: bool) -> Tensor:
    """Reshape a reduced gradient so that it broadcasts against ``x``."""
    if keepdims or (axis is None and not g.shape):  # a 0-d gradient broadcasts as is
        return g
    return _array.reshape(g, _kept_shape(x.shape, axis))


# ---- sum / mean ---------------------------------------------------------------------
def _int_dtype(x):
    # Keep integer dtypes (TF) instead of NumPy's promotion of int32 sums to int64.
    return x.dtype if x.dtype.kind in "iu" else None


def _sum_fwd(x, axis, keepdims):
    if x.dtype.kind in "iu":
        return np.sum(x, axis=axis, keepdims=keepdims, dtype=x.dtype)
    # np.add.reduce skips np.sum's ~1 us of Python dispatch.
    return np.add.reduce(x, axis=axis, keepdims=keepdims)


_NUMPY = (np.ndarray, np.generic)
_new = object.__new__


def _spread(gv, x: Tensor, axis, keepdims) -> Tensor:
    """NumPy form of ``broadcast_to(_expand(g), x.shape)`` for the no-recorder backward
    (nothing is recorded then, so the two records' dispatch can be skipped)."""
    shape = x._v.shape  # (no Tensor.shape property frame: this runs once per loss)
    if not keepdims and axis is not None:
        gv = np.reshape(gv, _kept_shape(shape, axis))
    t = _new(Tensor)
    t._v = _array._broadcast_to_fwd(gv, shape)
    return t


def _spread_fwd(g, x, axis, keepdims, mean):
    shape = np.shape(x)
    if not keepdims and axis is not None:
        g = np.reshape(g, _kept_shape(shape, axis))
    if mean:
        n = _count(shape, axis)
        g = g * np.asarray(1.0 / n, g.dtype) if n else g
    return _array._broadcast_to_fwd(g, shape)


def _spread_vjp(gg, ins, y, needs, axis, keepdims, mean):
    return (apply(_MEAN if mean else _SUM, gg, axis=axis, keepdims=keepdims), None)


# The gradient of a sum/mean as one record that reads the input's shape when it runs:
# used while tracing with None dimensions, so the graph holds no trace-time size.
_SPREAD = Op("reduce_grad", _spread_fwd, _spread_vjp)


def _generic_grad(g, x, axis, keepdims, mean: bool):
    if RECORDERS and dynamic_dims(x) is not None:
        return (apply(_SPREAD, g, x, axis=axis, keepdims=keepdims, mean=mean),)
    return None


def _sum_vjp(g, ins, y, needs, axis, keepdims):
    x = ins[0]
    if RECORDERS:
        out = _generic_grad(g, x, axis, keepdims, False)
        if out is not None:
            return out
    if not RECORDERS and isinstance(g._v, _NUMPY):
        return (_spread(g._v, x, axis, keepdims),)
    return (apply(_array._BROADCAST_TO, _expand(g, x, axis, keepdims), shape=x.shape),)


_SUM = Op("reduce_sum", _sum_fwd, _sum_vjp, reads=())


@export("lk", "math")
def reduce_sum(x: TensorLike, axis: AxisLike = None, keepdims: bool = False) -> Tensor:
    """Sum of elements across ``axis`` (None: all axes).

    Args:
        x: a tensor-like value.
        axis: None, an int or a tuple/list of ints (negative counts from the end; a
            repeated axis is reduced once, as in TensorFlow).
        keepdims: keep reduced axes with length 1.

    Raises:
        TypeError: an axis is not an integer (``axis=1.5``).
        ValueError: an axis is out of range (names the axis and rank).
    """
    if axis is None:  # the loss case: skip the axis normalisation
        return apply(_SUM, x, axis=None, keepdims=keepdims is True or bool(keepdims))
    return apply(_SUM, x, axis=_norm_axis(axis, _ndim(x), "reduce_sum"), keepdims=bool(keepdims))


def _mean_fwd(x, axis, keepdims):
    k = x.dtype.kind
    if k in "fc":
        n = _count(x.shape, axis)
        # add.reduce + one divide (rounded once, as NumPy and TF): np.mean's Python
        # dispatch costs ~4 us per call. An empty slice gives nan, without a warning.
        dt = x.dtype.type
        if x.dtype.itemsize < 4 and k == "f":  # float16 sums overflow: add in float32
            dt = np.float32
            s = np.add.reduce(x, axis=axis, keepdims=keepdims, dtype=dt)
        else:
            s = np.add.reduce(x, axis=axis, keepdims=keepdims)
        s = s / dt(n) if n else s * dt(np.nan)
        return s.astype(x.dtype, copy=False) if dt is np.float32 else s
    if k == "b":
        return np.mean(x, axis=axis, keepdims=keepdims, dtype=np.float32)
    # Integer mean truncates toward zero in the input dtype, like TensorFlow, but exactly:
    # the sum is taken in 64 bits (an int8 mean of [100, 100] is 100, not a wrapped -28),
    # and in Python ints when a 64-bit sum might wrap around (the mean always fits).
    s = np.sum(x, axis=axis, keepdims=keepdims, dtype=np.int64 if k == "i" else np.uint64)
    if x.dtype.itemsize == 8 and np.abs(np.sum(x, axis=axis, keepdims=keepdims,
                                               dtype=np.float64)).max(initial=0) >= 2.0 ** 62:
        s = np.asarray(np.sum(x.astype(object), axis=axis, keepdims=keepdims), dtype=object)
    q = np.asarray(np.abs(s) // max(_count(x.shape, axis), 1), dtype=s.dtype)
    return np.asarray(np.where(s < 0, -q, q)).astype(x.dtype)


def _mean_vjp(g, ins, y, needs, axis, keepdims):
    x = ins[0]
    if RECORDERS:
        out = _generic_grad(g, x, axis, keepdims, True)
        if out is not None:
            return out
    n = _count(x.shape, axis)
    if not RECORDERS and isinstance(g._v, _NUMPY):  # a loss's mean: ~3x cheaper
        return (_spread(g._v * (1.0 / n) if n else g._v, x, axis, keepdims),)
    g = _ew.multiply(g, 1.0 / n) if n else g
    return (apply(_array._BROADCAST_TO, _expand(g, x, axis, keepdims), shape=x.shape),)


_MEAN = Op("reduce_mean", _mean_fwd, _mean_vjp, reads=())


@export("lk", "math")
def reduce_mean(x: TensorLike, axis: AxisLike = None, keepdims: bool = False) -> Tensor:
    """Mean of elements across ``axis``; integer inputs give a truncated integer mean (TF).

    float16 is summed in float32 (no overflow for a representable mean); integers are
    summed in 64 bits; bool gives a float32 fraction. An empty float slice gives nan.

    Raises:
        TypeError: an axis is not an integer.
        ValueError: an axis is out of range (names the axis and rank).
    """
    return apply(_MEAN, x, axis=_norm_axis(axis, _ndim(x), "reduce_mean"),
                 keepdims=bool(keepdims))


# ---- max / min ----------------------------------------------------------------------
def _tie_weights_fwd(x, y, axis):
    # 1/k on each of the k elements equal to the extremum of their slice, 0 elsewhere.
    # Non-differentiable (piecewise constant), so the tape treats it as a constant.
    mask = x == np.reshape(y, _kept_shape(x.shape, axis))
    cnt = np.sum(mask, axis=axis, keepdims=True)
    return (mask / np.maximum(cnt, 1)).astype(x.dtype, copy=False)


_TIE_WEIGHTS = Op("reduce_extremum_weights", _tie_weights_fwd)


def _extremum_vjp(g, ins, y, needs, axis, keepdims):
    x = ins[0]
    w = apply(_TIE_WEIGHTS, x, y, axis=axis)
    return (_ew.multiply(_expand(g, x, axis, keepdims), w),)


_MAX = Op("reduce_max", lambda x, axis, keepdims: np.max(x, axis=axis, keepdims=keepdims),
          _extremum_vjp, reads=(0, "out"))
_MIN = Op("reduce_min", lambda x, axis, keepdims: np.min(x, axis=axis, keepdims=keepdims),
          _extremum_vjp, reads=(0, "out"))


def _extremum(op: Op, x, axis, keepdims) -> Tensor:
    shape = _shape(x)
    axis = _norm_axis(axis, len(shape), op.name)
    _check_nonempty(op.name, shape, axis)
    return apply(op, x, axis=axis, keepdims=bool(keepdims))


@export("lk", "math")
def reduce_max(x: TensorLike, axis: AxisLike = None, keepdims: bool = False) -> Tensor:
    """Maximum across ``axis``. The gradient is split equally among tied maxima (TF).

    Raises:
        ValueError: an axis is out of range, or a reduced axis is empty.
    """
    return _extremum(_MAX, x, axis, keepdims)


@export("lk", "math")
def reduce_min(x: TensorLike, axis: AxisLike = None, keepdims: bool = False) -> Tensor:
    """Minimum across ``axis``. The gradient is split equally among tied minima (TF)."""
    return _extremum(_MIN, x, axis, keepdims)


# ---- prod ---------------------------------------------------------------------------
def _prod_fwd(x, axis, keepdims):
    return np.prod(x, axis=axis, keepdims=keepdims, dtype=_int_dtype(x))


def _prod_vjp(g, ins, y, needs, axis, keepdims):
    x = ins[0]
    shape = x.shape
    axes = tuple(range(len(shape))) if axis is None else axis
    rest = tuple(i for i in range(len(shape)) if i not in axes)
    perm = axes + rest
    # Bring the reduced axes to the front as one axis, take the product of the other
    # elements as (exclusive cumprod from the left) * (exclusive cumprod from the right):
    # no division, so zeros in x are handled exactly.
    xt = x if perm == tuple(range(len(shape))) else _array.transpose(x, perm)
    tshape = xt.shape
    flat = _array.reshape(xt, (_count(shape, axes), -1))
    others = _ew.multiply(cumprod(flat, axis=0, exclusive=True),
                          cumprod(flat, axis=0, exclusive=True, reverse=True))
    others = _array.reshape(others, tshape)
    if xt is not x:
        others = _array.transpose(others, tuple(np.argsort(perm).tolist()))
    return (_ew.multiply(_expand(g, x, axis, keepdims), others),)


_PROD = Op("reduce_prod", _prod_fwd, _prod_vjp, reads=(0,))


@export("lk", "math")
def reduce_prod(x: TensorLike, axis: AxisLike = None, keepdims: bool = False) -> Tensor:
    """Product of elements across ``axis``.

    The first derivative is exact even where ``x`` has zeros (TF's formulation); the
    second derivative divides by ``x`` and is exact only away from zeros.
    """
    return apply(_PROD, x, axis=_norm_axis(axis, _ndim(x), "reduce_prod"),
                 keepdims=bool(keepdims))


# ---- logsumexp ----------------------------------------------------------------------
def _lse_fwd(x, axis, keepdims):
    dt = x.dtype
    if dt.itemsize < 4:  # float16: exp and sum in float32
        x = x.astype(np.float32)
    m = np.max(x, axis=axis, keepdims=True)
    # A slice of all -inf (or containing +inf) must not produce inf - inf = nan.
    m = np.where(np.isfinite(m), m, 0).astype(x.dtype, copy=False)
    with np.errstate(divide="ignore"):
        s = np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True)) + m
    if not keepdims:
        s = np.squeeze(s, axis=axis) if axis is not None else s.reshape(())
    return s.astype(dt, copy=False)


def _lse_vjp(g, ins, y, needs, axis, keepdims):
    x = ins[0]
    # d/dx logsumexp = softmax(x) = exp(x - y); y >= max(x) keeps exp from overflowing.
    soft = _ew.exp(_ew.subtract(x, _expand(y, x, axis, keepdims)))
    return (_ew.multiply(_expand(g, x, axis, keepdims), soft),)


_LSE = Op("reduce_logsumexp", _lse_fwd, _lse_vjp, reads=(0, "out"))


@export("lk", "math")
def reduce_logsumexp(x: TensorLike, axis: AxisLike = None, keepdims: bool = False) -> Tensor:
    """``log(sum(exp(x)))`` across ``axis``, computed stably (shifted by the maximum).

    Raises:
        TypeError: ``x`` is an integer or bool tensor (float-only math, as in TF), or an
            axis is not an integer.
        ValueError: an axis is out of range, or a reduced axis is empty.
    """
    x = _floating(x, "reduce_logsumexp", "f")
    shape = x.shape
    axis = _norm_axis(axis, len(shape), "reduce_logsumexp")
    _check_nonempty("reduce_logsumexp", shape, axis)
    return apply(_LSE, x, axis=axis, keepdims=bool(keepdims))


# ---- variance / std (composites: two-pass, numerically sound) ------------------------
def _floating(x, op: str, kinds: str = "fc") -> Tensor:
    """``x`` as a float (or complex) Tensor; float-only reductions refuse other dtypes."""
    x = convert_to_tensor(x)
    if x.dtype.kind not in kinds:
        raise _ew.float_only_error(op, x.dtype, "c" in kinds)
    return x


def _variance(x, axis, keepdims, op: str) -> Tensor:
    x = _floating(x, op)
    axis = _norm_axis(axis, x.ndim, op)
    centered = _ew.subtract(x, reduce_mean(x, axis, keepdims=True))
    if x.dtype.kind == "c":  # |x - mean|^2, real (TF and NumPy)
        centered = _ew.abs(centered)
    return reduce_mean(_ew.square(centered), axis, keepdims=keepdims)


@export("lk", "math")
def reduce_variance(x: TensorLike, axis: AxisLike = None, keepdims: bool = False) -> Tensor:
    """Population variance across ``axis`` (``mean((x - mean(x))**2)``, two-pass).

    Raises:
        TypeError: ``x`` is an integer or bool tensor (as in TF: cast it first), or an
            axis is not an integer.
        ValueError: an axis is out of range.
    """
    return _variance(x, axis, keepdims, "reduce_variance")


@export("lk", "math")
def reduce_std(x: TensorLike, axis: AxisLike = None, keepdims: bool = False) -> Tensor:
    """Population standard deviation across ``axis``.

    Its gradient is infinite/NaN where the variance is exactly 0 (as in TF).

    Raises:
        TypeError: ``x`` is an integer or bool tensor, or an axis is not an integer.
        ValueError: an axis is out of range.
    """
    return _ew.sqrt(_variance(x, axis, keepdims, "reduce_std"))


# ---- logical (no gradient) ----------------------------------------------------------
_ALL = Op("reduce_all", lambda x, axis, keepdims: np.all(x, axis=axis, keepdims=keepdims))
_ANY = Op("reduce_any", lambda x, axis, keepdims: np.any(x, axis=axis, keepdims=keepdims))


@export("lk", "math")
def reduce_all(x: TensorLike, axis: AxisLike = None, keepdims: bool = False) -> Tensor:
    """Logical AND across ``axis`` (non-bool inputs are tested for non-zero)."""
    return apply(_ALL, x, axis=_norm_axis(axis, _ndim(x), "reduce_all"), keepdims=bool(keepdims))


@export("lk", "math")
def reduce_any(x: TensorLike, axis: AxisLike = None, keepdims: bool = False) -> Tensor:
    """Logical OR across ``axis`` (non-bool inputs are tested for non-zero)."""
    return apply(_ANY, x, axis=_norm_axis(axis, _ndim(x), "reduce_any"), keepdims=bool(keepdims))


# ---- argmax / argmin (no gradient) --------------------------------------------------
_ARGMAX = Op("argmax", lambda x, axis, dtype: np.argmax(x, axis=axis).astype(dtype, copy=False))
_ARGMIN = Op("argmin", lambda x, axis, dtype: np.argmin(x, axis=axis).astype(dtype, copy=False))


def _arg(op: Op, x, axis, output_type) -> Tensor:
    shape = _shape(x)
    # TF: axis=None means axis 0 (not "flatten", as in NumPy).
    ax = (_single_axis(op.name, len(shape), 0 if axis is None else axis),)
    _check_nonempty(op.name, shape, ax)
    dtype = np.dtype(output_type)
    if dtype.kind not in "iu":
        raise TypeError(f"{op.name}: output_type must be an integer dtype, received {dtype}")
    return apply(op, x, axis=ax[0], dtype=dtype)


@export("lk", "math")
def argmax(x: TensorLike, axis: int | None = None, output_type: DTypeLike = np.int64) -> Tensor:
    """Index of the largest value along ``axis`` (TF: ``axis=None`` means 0); int64.

    Ties resolve to the first occurrence. Not differentiable.
    """
    return _arg(_ARGMAX, x, axis, output_type)


@export("lk", "math")
def argmin(x: TensorLike, axis: int | None = None, output_type: DTypeLike = np.int64) -> Tensor:
    """Index of the smallest value along ``axis`` (TF: ``axis=None`` means 0); int64."""
    return _arg(_ARGMIN, x, axis, output_type)


# ---- cumulative sums and products ---------------------------------------------------
def _scan(fn, identity, x, axis, exclusive, reverse):
    if reverse:
        x = np.flip(x, axis)
    dtype = x.dtype if x.dtype.kind in "iuf" else None
    y = fn(x, axis=axis, dtype=dtype)
    if exclusive:
        # Shift by one along the axis, filling with the identity.
        n = y.shape[axis]
        if n:
            head = np.full(y.shape[:axis] + (1,) + y.shape[axis + 1:], identity, y.dtype)
            body = np.take(y, np.arange(n - 1), axis=axis)
            y = np.concatenate([head, body], axis=axis)
    if reverse:
        y = np.flip(y, axis)
    return y


def _cumsum_vjp(g, ins, y, needs, axis, exclusive, reverse):
    return (cumsum(g, axis, exclusive=exclusive, reverse=not reverse),)


_CUMSUM = Op("cumsum", lambda x, axis, exclusive, reverse:
             _scan(np.cumsum, 0, x, axis, exclusive, reverse), _cumsum_vjp, reads=())


def _cumprod_vjp(g, ins, y, needs, axis, exclusive, reverse):
    # TF's rule: sum over later products divided by x; exact only where x != 0.
    s = cumsum(_ew.multiply(y, g), axis, exclusive=exclusive, reverse=not reverse)
    return (_ew.divide(s, ins[0]),)


_CUMPROD = Op("cumprod", lambda x, axis, exclusive, reverse:
              _scan(np.cumprod, 1, x, axis, exclusive, reverse), _cumprod_vjp, reads=(0, "out"))


def _single_axis(op: str, ndim: int, axis) -> int:
    """The one axis of argmax/argmin/cumsum/cumprod (a list is refused, as in TF)."""
    if isinstance(axis, (list, tuple)) or np.ndim(axis._v if isinstance(axis, Tensor)
                                                    else axis) > 0:
        raise ValueError(f"{op}: axis must be a single int, received {axis!r}")
    return axis_arg(axis, ndim, op)


def _scan_axis(op: str, x, axis) -> int:
    return _single_axis(op, _ndim(x), axis)


@export("lk", "math")
def cumsum(x: TensorLike, axis: int = 0, exclusive: bool = False, reverse: bool = False) -> Tensor:
    """Cumulative sum along ``axis`` (TF semantics).

    Args:
        x: a tensor-like value of rank >= 1.
        axis: the axis to scan (negative counts from the end).
        exclusive: element i is the sum of the elements *before* i (the first is 0).
        reverse: scan from the end towards the start.
    """
    return apply(_CUMSUM, x, axis=_scan_axis("cumsum", x, axis), exclusive=bool(exclusive),
                 reverse=bool(reverse))


@export("lk", "math")
def cumprod(x: TensorLike, axis: int = 0, exclusive: bool = False, reverse: bool = False) -> Tensor:
    """Cumulative product along ``axis`` (TF semantics; ``exclusive`` starts at 1).

    The gradient divides by ``x`` (as TF's does): it is exact only where ``x != 0``.
    """
    return apply(_CUMPROD, x, axis=_scan_axis("cumprod", x, axis), exclusive=bool(exclusive),
                 reverse=bool(reverse))

__all__ = top_level(__name__)
