"""Creation ops (no gradients): zeros, ones, fill, eye, range, linspace, one_hot, ...

Note: this module defines ``range`` (TensorFlow's name), which shadows the builtin
here: code in this module must not use the builtin ``range`` (use ``builtins.range``).
"""
from __future__ import annotations

import math
import sys

import numpy as np

from layerkit._core import context
from layerkit._core.convert import FLOATX, as_dtype, to_array
from layerkit._core.op import Op, apply, wrap
from layerkit._core.tensor import Tensor
from layerkit._core.types import DTypeLike, ShapeLike, TensorLike
from layerkit.primitives.registry import export, top_level


def _pack_fwd(*dims, layout):
    it = iter(dims)
    return np.array([int(next(it)) if d is None else d for d in layout], np.int64)


def _dims(shape) -> tuple:
    """A shape given as an array (a run-time shape) as a tuple of ints."""
    return tuple(int(d) for d in np.reshape(shape, -1))


_PACK_SHAPE = Op("pack_shape", _pack_fwd)
_ZEROS = Op("zeros", lambda shape, dtype: np.zeros(_dims(shape), dtype))
_ONES = Op("ones", lambda shape, dtype: np.ones(_dims(shape), dtype))
_ZEROS_LIKE = Op("zeros_like", lambda x, dtype: np.zeros(np.shape(x), dtype))
_ONES_LIKE = Op("ones_like", lambda x, dtype: np.ones(np.shape(x), dtype))
_FILL = Op("fill", lambda shape, value: np.full(_dims(shape), value, value.dtype))


def dynamic_shape(shape, op: str):
    """While tracing: a shape argument given (partly) by traced tensors, such as
    ``[lk.shape(x)[0], 3]`` in an ``lk.function`` with ``None`` input dimensions, as a
    traced 1-D int64 tensor computed when the graph runs; None for any other shape.

    Raises:
        TypeError: an entry is a traced tensor that is not an integer scalar (names ``op``).
    """
    if not context.RECORDERS or not context.tracing():
        return None
    if isinstance(shape, Tensor):
        if not context.traced(shape):
            return None
        if shape.ndim > 1 or shape.dtype.kind not in "iu":
            raise TypeError(f"{op}: a shape tensor must be a 1-D integer tensor, received "
                            f"shape {shape._rv.shape} dtype {shape.dtype.name}")
        return shape
    if not isinstance(shape, (list, tuple)):
        return None
    if not any(isinstance(d, Tensor) and context.traced(d) for d in shape):
        return None
    layout: list = []
    dims: list = []
    for d in shape:
        if isinstance(d, Tensor):
            if np.ndim(d._rv) != 0 or d.dtype.kind not in "iu":
                raise TypeError(f"{op}: shape entries must be integer scalars, received a "
                                f"tensor of shape {d._rv.shape} dtype {d.dtype.name}")
            layout.append(None)
            dims.append(d)
        else:
            layout.append(int_arg(d, op, "a shape entry"))
    return apply(_PACK_SHAPE, *dims, layout=tuple(layout))


def shape_arg(shape, op: str, error: type[Exception] = ValueError) -> tuple:
    """A user's shape argument (an int, a sequence of ints, an array or Tensor) as a tuple.

    Args:
        shape: the argument.
        op: the name to start error messages with.
        error: the exception type for entries that are not integers (``2.5``, ``"a"``).

    Raises:
        ``error``: naming ``op`` and the argument, if an entry is not an integer.
        ValueError: naming ``op`` and the shape, if a dimension is negative or the shape
            has more elements than any array can hold.
    """
    if isinstance(shape, Tensor):
        shape = np.asarray(shape._v).tolist()
    elif isinstance(shape, np.ndarray):
        shape = shape.tolist()
    if isinstance(shape, (int, np.integer)):
        shape = (shape,)
    try:
        dims = tuple(int(s) for s in shape)
        ok = all(d == s for d, s in zip(dims, shape))
    except (TypeError, ValueError):
        ok = False
    if not ok:
        raise error(f"{op}: shape must be a sequence of ints, received {shape!r}")
    if any(d < 0 for d in dims):
        raise ValueError(f"{op}: shape {dims} has a negative dimension")
    if math.prod(dims) > _MAX_ELEMENTS:  # NumPy's bare "array is too big", named
        raise ValueError(f"{op}: shape {dims} has {math.prod(dims):.3g} elements, more than "
                         f"any tensor can hold")
    return dims


_MAX_ELEMENTS = sys.maxsize // 32  # bytes fit in an index even for 32-byte elements


def int_arg(value, op: str, what: str = "axis") -> int:
    """A user's integer argument (an int, NumPy integer or integer 0-d Tensor) as an int.

    Floats, bools and strings are refused: ``axis=1.5`` must not mean axis 1.

    Raises:
        TypeError: naming ``op``, the argument and the value received.
    """
    if isinstance(value, Tensor):
        value = value._v
    if not isinstance(value, (bool, np.bool_)):
        if isinstance(value, (int, np.integer)):
            return int(value)
        if isinstance(value, np.ndarray) and value.ndim == 0 and value.dtype.kind in "iu":
            return int(value)
    raise TypeError(f"{op}: {what} must be an integer, received {value!r}")


def axis_arg(axis, ndim: int, op: str, extra: int = 0, what: str = "axis") -> int:
    """One axis of a rank-``ndim`` tensor, in ``[-(ndim+extra), ndim+extra)``, made
    non-negative (``extra=1`` for ops that insert an axis: ``expand_dims``, ``stack``).

    Raises:
        TypeError: the axis is not an integer.
        ValueError: the axis is out of range (names ``op``, the axis and the rank).
    """
    a = int_arg(axis, op, what)
    n = ndim + extra
    if not -n <= a < n:
        raise ValueError(
            f"{op}: {what} {a} is out of range for a tensor of rank {ndim} "
            + (f"(valid axes are {-n}..{n - 1})" if n else "(a scalar has no axes)"))
    return a % n


def _dtype(dtype) -> np.dtype:
    return FLOATX if dtype is None else as_dtype(dtype)


def allocate(op: str, make, shape: tuple, dtype, *args) -> np.ndarray:
    """``make(shape, *args, dtype)`` (``np.zeros``, ``np.full``, ...), with NumPy's bare
    out-of-memory error re-raised naming ``op``, the shape, dtype and size. (Shapes too
    large to address at all are refused by ``shape_arg`` before.)

    Raises:
        MemoryError: the allocation failed.
    """
    try:
        return make(shape, *args, dtype)
    except MemoryError:
        raise size_error(op, shape, dtype, MemoryError) from None


def size_error(op: str, shape: tuple, dtype, kind: type[Exception]) -> Exception:
    """The error for a tensor of ``shape`` and ``dtype`` that cannot be allocated."""
    dt = np.dtype(dtype)
    n = math.prod(shape) * dt.itemsize
    return kind(f"{op}: cannot allocate a tensor of shape {tuple(shape)} and dtype "
                f"{dt.name} ({n:.3g} bytes)")


@export("lk")
def zeros(shape: ShapeLike | TensorLike, dtype: DTypeLike = FLOATX) -> Tensor:
    """A tensor of zeros of ``shape`` (float32 by default).

    Raises:
        ValueError: a negative or non-integer dimension, or a size too large to address.
        MemoryError: the tensor does not fit in memory (names the shape and bytes).
    """
    dyn = dynamic_shape(shape, "zeros") if context.RECORDERS else None
    if dyn is not None:
        return apply(_ZEROS, dyn, dtype=_dtype(dtype))
    return wrap(allocate("zeros", np.zeros, shape_arg(shape, "zeros"), _dtype(dtype)))


@export("lk")
def ones(shape: ShapeLike | TensorLike, dtype: DTypeLike = FLOATX) -> Tensor:
    """A tensor of ones of ``shape`` (float32 by default); errors as for ``zeros``."""
    dyn = dynamic_shape(shape, "ones") if context.RECORDERS else None
    if dyn is not None:
        return apply(_ONES, dyn, dtype=_dtype(dtype))
    return wrap(allocate("ones", np.ones, shape_arg(shape, "ones"), _dtype(dtype)))


@export("lk")
def zeros_like(x: TensorLike, dtype: DTypeLike = None) -> Tensor:
    """Zeros with the shape (and dtype, unless given) of ``x``."""
    if context.RECORDERS and context.dynamic_dims(x) is not None:  # a run-time shape
        return apply(_ZEROS_LIKE, x, dtype=as_dtype(dtype) or x.dtype)
    a = np.asarray(x._rv) if isinstance(x, Tensor) else to_array(x)  # shape, dtype only
    return wrap(np.zeros(a.shape, as_dtype(dtype) or a.dtype))


@export("lk")
def ones_like(x: TensorLike, dtype: DTypeLike = None) -> Tensor:
    """Ones with the shape (and dtype, unless given) of ``x``."""
    if context.RECORDERS and context.dynamic_dims(x) is not None:  # a run-time shape
        return apply(_ONES_LIKE, x, dtype=as_dtype(dtype) or x.dtype)
    a = np.asarray(x._rv) if isinstance(x, Tensor) else to_array(x)  # shape, dtype only
    return wrap(np.ones(a.shape, as_dtype(dtype) or a.dtype))


@export("lk")
def fill(dims: TensorLike, value: TensorLike) -> Tensor:
    """A tensor of shape ``dims`` filled with the scalar ``value``.

    The dtype is ``value``'s (Python float -> float32, int -> int32, as for constants).

    Raises:
        ValueError: ``value`` is not a scalar.
    """
    v = to_array(value)
    if v.ndim != 0:
        raise ValueError(f"fill: value must be a scalar, received shape {v.shape}")
    dyn = dynamic_shape(dims, "fill") if context.RECORDERS else None
    if dyn is not None:
        return apply(_FILL, dyn, v)
    return wrap(allocate("fill", np.full, shape_arg(dims, "fill"), v.dtype, v))


@export("lk", "linalg")
def eye(num_rows: int, num_columns: int | None = None, batch_shape: ShapeLike | None = None,
        dtype: DTypeLike = FLOATX) -> Tensor:
    """Identity matrix (or a batch of them): ones on the diagonal, zeros elsewhere.

    Args:
        num_rows: number of rows.
        num_columns: number of columns (default ``num_rows``).
        batch_shape: optional leading batch dimensions (TensorFlow's argument order).
        dtype: float32 by default.

    Returns:
        A tensor of shape ``batch_shape + (num_rows, num_columns)``.
    """
    rows = int_arg(num_rows, "eye", "num_rows")
    cols = rows if num_columns is None else int_arg(num_columns, "eye", "num_columns")
    if rows < 0 or cols < 0:
        raise ValueError(f"eye: sizes must be non-negative, received {rows} x {cols}")
    batch = () if batch_shape is None else shape_arg(batch_shape, "eye")
    m = allocate("eye", np.zeros, batch + (rows, cols), _dtype(dtype))
    diag = np.arange(min(rows, cols))
    m[..., diag, diag] = 1
    return wrap(m)


@export("lk")
def range(start: TensorLike, limit: TensorLike | None = None, delta: TensorLike = 1,
          dtype: DTypeLike = None) -> Tensor:
    """A 1-D tensor ``[start, start + delta, ...]`` stopping before ``limit``.

    Like ``tf.range``: ``range(n)`` counts from 0 to ``n - 1``. The dtype is int32 when
    every argument is a Python int (int64 if one does not fit in int32), float32 when a
    Python float is among them, the promoted dtype of tensor/array arguments otherwise,
    or ``dtype`` if given.

    Raises:
        ValueError: ``delta`` is 0.
    """
    if limit is None:
        start, limit = 0, start
    raw = (start, limit, delta)
    args = [to_array(a) for a in raw]
    for name, a in zip(("start", "limit", "delta"), args):
        if a.ndim != 0:
            raise ValueError(f"range: {name} must be a scalar, received shape {a.shape}")
    if dtype is not None:
        out_dtype = as_dtype(dtype)
    else:
        # Python numbers are weak: they never widen a tensor argument's dtype, but a
        # Python float among integers makes the result float32.
        strong = [a for r, a in zip(raw, args) if type(r) not in (int, float, bool)]
        any_float = any(type(r) is float for r in raw)
        out_dtype = np.result_type(*strong) if strong else np.result_type(
            *[a for r, a in zip(raw, args) if type(r) is int], np.int32)
        if any_float and out_dtype.kind not in "fc":
            out_dtype = FLOATX
    s, lim, d = (a.item() for a in args)
    if d == 0:
        raise ValueError("range: delta must not be 0")
    # Count in exact Python arithmetic (ints) or float64.
    n = max(0, -((s - lim) // d) if all(isinstance(v, int) for v in (s, lim, d))
            else math.ceil((lim - s) / d))
    if n > _MAX_ELEMENTS:
        raise size_error("range", (n,), out_dtype, ValueError)
    if out_dtype.kind in "iu" and all(isinstance(v, int) for v in (s, lim, d)):
        return wrap(allocate("range", lambda _, dt: np.arange(s, lim, d, dtype=dt), (n,),
                             out_dtype))
    # Then compute start + i * delta in float64 and round once (np.arange with a float32
    # dtype accumulates its own rounding).
    steps = allocate("range", lambda shape, dt: np.arange(shape[0], dtype=dt), (n,), np.float64)
    return wrap((s + steps * d).astype(out_dtype))


@export("lk")
def linspace(start: TensorLike, stop: TensorLike, num: int, axis: int = 0) -> Tensor:
    """``num`` evenly spaced values from ``start`` to ``stop`` inclusive.

    ``start`` and ``stop`` may be tensors of the same shape: the new axis is ``axis``.
    The dtype is that of float tensor arguments, otherwise float32.

    Raises:
        ValueError: ``num`` is negative.
    """
    a, b = to_array(start), to_array(stop)
    num = int_arg(num, "linspace", "num")
    if num < 0:
        raise ValueError(f"linspace: num must be non-negative, received {num}")
    axis = axis_arg(axis, np.broadcast(a, b).ndim, "linspace", extra=1)
    dt = np.result_type(a, b)
    dt = dt if dt.kind == "f" else FLOATX
    out = np.linspace(a.astype(np.float64), b.astype(np.float64), num, axis=axis)
    return wrap(out.astype(dt))


@export("lk")
def one_hot(indices: TensorLike, depth: int, on_value: TensorLike | None = None,
            off_value: TensorLike | None = None, axis: int | None = None,
            dtype: DTypeLike = None) -> Tensor:
    """One-hot encode integer ``indices`` along a new axis of size ``depth``.

    Indices outside ``[0, depth)`` (including negative ones) give an all-``off_value``
    vector, as in TensorFlow.

    Args:
        indices: integer tensor of any shape.
        depth: number of classes.
        on_value: values for hits and misses (default 1 and 0).
        off_value: values for hits and misses (default 1 and 0).
        axis: where to insert the new axis (default -1, the last).
        dtype: result dtype; default the dtype of ``on_value``/``off_value`` if given,
            else float32.

    Raises:
        TypeError: ``indices`` is not an integer tensor, or ``depth``/``axis`` is not an
            integer.
        ValueError: ``depth`` is negative, or ``axis`` is not in ``[-1, rank(indices)]``.
    """
    idx = to_array(indices)
    if idx.dtype.kind not in "iu":
        raise TypeError(f"one_hot: indices must be integers, received dtype {idx.dtype}")
    depth = int_arg(depth, "one_hot", "depth")
    if depth < 0:
        raise ValueError(f"one_hot: depth must be non-negative, received {depth}")
    if axis is not None:
        # TF: -1 (the default, last) or a position in [0, rank(indices)].
        axis = int_arg(axis, "one_hot")
        if not -1 <= axis <= idx.ndim:
            raise ValueError(f"one_hot: axis must be -1 or in [0, {idx.ndim}] for indices of "
                             f"rank {idx.ndim}, received {axis}")
    if dtype is not None:
        dt = as_dtype(dtype)
    elif on_value is not None or off_value is not None:
        given = [to_array(v) for v in (on_value, off_value) if v is not None]
        dt = np.result_type(*given)
    else:
        dt = FLOATX
    try:
        hits = idx[..., None] == np.arange(depth)
        if on_value is None and off_value is None:
            out = hits.astype(dt)
        else:
            on = to_array(1 if on_value is None else on_value)
            off = to_array(0 if off_value is None else off_value)
            out = np.where(hits, on, off).astype(dt)
    except MemoryError:
        raise size_error("one_hot", idx.shape + (depth,), dt, MemoryError) from None
    if axis is not None and axis != -1:
        out = np.moveaxis(out, -1, axis)
    return wrap(out)

__all__ = top_level(__name__)
