"""Creation ops (no gradients): zeros, ones, fill, eye, range, linspace, one_hot, ...

Note: this module defines ``range`` (TensorFlow's name), which shadows the builtin
here: code in this module must not use the builtin ``range`` (use ``builtins.range``).
"""
from __future__ import annotations

import math

import numpy as np

from layerkit._core.convert import FLOATX, as_dtype, to_array
from layerkit._core.op import wrap
from layerkit._core.tensor import Tensor

__all__ = ["zeros", "ones", "zeros_like", "ones_like", "fill", "eye", "range", "linspace",
           "one_hot"]


def shape_arg(shape, op: str, error: type[Exception] = ValueError) -> tuple:
    """A user's shape argument (an int, a sequence of ints, an array or Tensor) as a tuple.

    Args:
        shape: the argument.
        op: the name to start error messages with.
        error: the exception type for entries that are not integers (``2.5``, ``"a"``).

    Raises:
        ``error``: naming ``op`` and the argument, if an entry is not an integer.
        ValueError: naming ``op`` and the shape, if a dimension is negative.
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
    return dims


def _dtype(dtype) -> np.dtype:
    return FLOATX if dtype is None else as_dtype(dtype)


def zeros(shape, dtype=FLOATX) -> Tensor:
    """A tensor of zeros of ``shape`` (float32 by default)."""
    return wrap(np.zeros(shape_arg(shape, "zeros"), _dtype(dtype)))


def ones(shape, dtype=FLOATX) -> Tensor:
    """A tensor of ones of ``shape`` (float32 by default)."""
    return wrap(np.ones(shape_arg(shape, "ones"), _dtype(dtype)))


def zeros_like(x, dtype=None) -> Tensor:
    """Zeros with the shape (and dtype, unless given) of ``x``."""
    a = to_array(x)
    return wrap(np.zeros(a.shape, as_dtype(dtype) or a.dtype))


def ones_like(x, dtype=None) -> Tensor:
    """Ones with the shape (and dtype, unless given) of ``x``."""
    a = to_array(x)
    return wrap(np.ones(a.shape, as_dtype(dtype) or a.dtype))


def fill(dims, value) -> Tensor:
    """A tensor of shape ``dims`` filled with the scalar ``value``.

    The dtype is ``value``'s (Python float -> float32, int -> int64, as for constants).

    Raises:
        ValueError: ``value`` is not a scalar.
    """
    v = to_array(value)
    if v.ndim != 0:
        raise ValueError(f"fill: value must be a scalar, received shape {v.shape}")
    return wrap(np.full(shape_arg(dims, "fill"), v, v.dtype))


def eye(num_rows: int, num_columns: int | None = None, batch_shape=None,
        dtype=FLOATX) -> Tensor:
    """Identity matrix (or a batch of them): ones on the diagonal, zeros elsewhere.

    Args:
        num_rows: number of rows.
        num_columns: number of columns (default ``num_rows``).
        batch_shape: optional leading batch dimensions (TensorFlow's argument order).
        dtype: float32 by default.

    Returns:
        A tensor of shape ``batch_shape + (num_rows, num_columns)``.
    """
    rows = int(num_rows)
    cols = rows if num_columns is None else int(num_columns)
    if rows < 0 or cols < 0:
        raise ValueError(f"eye: sizes must be non-negative, received {rows} x {cols}")
    m = np.eye(rows, cols, dtype=_dtype(dtype))
    if batch_shape is not None:
        batch = shape_arg(batch_shape, "eye")
        m = np.broadcast_to(m, batch + m.shape).copy()
    return wrap(m)


def range(start, limit=None, delta=1, dtype=None) -> Tensor:
    """A 1-D tensor ``[start, start + delta, ...]`` stopping before ``limit``.

    Like ``tf.range``: ``range(n)`` counts from 0 to ``n - 1``. The dtype is int64 when
    every argument is an integer, float32 when a Python float is among them, the
    promoted dtype of tensor/array arguments otherwise, or ``dtype`` if given.

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
        out_dtype = np.result_type(*strong) if strong else np.dtype(np.int64)
        if any_float and out_dtype.kind not in "fc":
            out_dtype = FLOATX
    s, lim, d = (a.item() for a in args)
    if d == 0:
        raise ValueError("range: delta must not be 0")
    if out_dtype.kind in "iu" and all(isinstance(v, int) for v in (s, lim, d)):
        return wrap(np.arange(s, lim, d, dtype=out_dtype))
    # Count in exact Python arithmetic, then compute start + i * delta in float64 and
    # round once (np.arange with a float32 dtype accumulates its own rounding).
    n = max(0, math.ceil((lim - s) / d))
    return wrap((s + np.arange(n, dtype=np.float64) * d).astype(out_dtype))


def linspace(start, stop, num: int, axis: int = 0) -> Tensor:
    """``num`` evenly spaced values from ``start`` to ``stop`` inclusive.

    ``start`` and ``stop`` may be tensors of the same shape: the new axis is ``axis``.
    The dtype is that of float tensor arguments, otherwise float32.

    Raises:
        ValueError: ``num`` is negative.
    """
    a, b = to_array(start), to_array(stop)
    num = int(num)
    if num < 0:
        raise ValueError(f"linspace: num must be non-negative, received {num}")
    dt = np.result_type(a, b)
    dt = dt if dt.kind == "f" else FLOATX
    out = np.linspace(a.astype(np.float64), b.astype(np.float64), num, axis=axis)
    return wrap(out.astype(dt))


def one_hot(indices, depth: int, on_value=None, off_value=None, axis=None,
            dtype=None) -> Tensor:
    """One-hot encode integer ``indices`` along a new axis of size ``depth``.

    Indices outside ``[0, depth)`` (including negative ones) give an all-``off_value``
    vector, as in TensorFlow.

    Args:
        indices: integer tensor of any shape.
        depth: number of classes.
        on_value, off_value: values for hits and misses (default 1 and 0).
        axis: where to insert the new axis (default -1, the last).
        dtype: result dtype; default the dtype of ``on_value``/``off_value`` if given,
            else float32.

    Raises:
        TypeError: ``indices`` is not an integer tensor.
    """
    idx = to_array(indices)
    if idx.dtype.kind not in "iu":
        raise TypeError(f"one_hot: indices must be integers, received dtype {idx.dtype}")
    depth = int(depth)
    if dtype is not None:
        dt = as_dtype(dtype)
    elif on_value is not None or off_value is not None:
        given = [to_array(v) for v in (on_value, off_value) if v is not None]
        dt = np.result_type(*given)
    else:
        dt = FLOATX
    hits = idx[..., None] == np.arange(depth)
    if on_value is None and off_value is None:
        out = hits.astype(dt)
    else:
        on = to_array(1 if on_value is None else on_value)
        off = to_array(0 if off_value is None else off_value)
        out = np.where(hits, on, off).astype(dt)
    if axis is not None and axis != -1:
        if not -out.ndim <= axis < out.ndim:
            raise ValueError(f"one_hot: axis {axis} is out of range for a result of rank "
                             f"{out.ndim}")
        out = np.moveaxis(out, -1, axis)
    return wrap(out)
