"""dtype policy and conversion of Python/NumPy values to arrays and Tensors.

Rules (API.md section 1): Python floats and lists of floats become float32; Python ints
and lists of ints int32, as in TensorFlow (int64 when a value does not fit in int32);
bools bool; NumPy arrays and scalars keep their dtype. Inside a binary op a bare Python
scalar stays *weak* (NumPy 2 promotion), so ``float32_tensor * 2.0`` stays float32.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from layerkit._core.tensor import Tensor
from layerkit._core.types import DTypeLike, ShapeLike

FLOATX = np.dtype("float32")
INT = np.dtype("int32")  # Python ints (TensorFlow's default integer)
_INT64 = np.dtype("int64")
_INT_MIN, _INT_MAX = -(2 ** 31), 2 ** 31 - 1
_new = object.__new__
_PY_DEFAULTS = {float: FLOATX, int: INT, "float": FLOATX}


def as_dtype(dtype) -> np.dtype | None:
    """Normalise a dtype spec (``'float32'``, ``np.float32``, ``lk.float32``, a
    ``np.dtype``) or None. ``'float'`` and Python's ``float`` mean float32, Python's
    ``int`` int32 (the dtypes of Python literals, as in TensorFlow)."""
    if dtype is None:
        return None
    try:
        return _PY_DEFAULTS[dtype]
    except (KeyError, TypeError):
        pass
    try:
        return np.dtype(dtype)
    except TypeError as e:
        raise TypeError(f"not a dtype: {dtype!r}") from e


def to_array(value, dtype=None) -> np.ndarray:
    """Convert ``value`` (Tensor, Variable, array, scalar, nested list) to an ndarray."""
    if isinstance(value, Tensor):
        a = value._v
        if not isinstance(a, np.ndarray):
            a = np.asarray(a)
    elif isinstance(value, np.ndarray):
        a = value
    elif isinstance(value, np.generic):  # before float: np.float64 subclasses float
        a = np.asarray(value)
    elif isinstance(value, bool):
        a = np.asarray(value, dtype=bool)
    elif isinstance(value, int):
        a = np.asarray(value, dtype=INT if _INT_MIN <= value <= _INT_MAX else _INT64)
    elif isinstance(value, float):
        a = np.asarray(value, dtype=FLOATX)
    else:
        a = _from_nested(value)
    if dtype is not None:
        dtype = as_dtype(dtype)
        if a.dtype != dtype:
            a = a.astype(dtype)
    return a


def _from_nested(value) -> np.ndarray:
    flags = _leaf_flags(value) if isinstance(value, (list, tuple)) else _OTHER
    if flags & _TENSOR:
        value = _replace_tensors(value)
    try:
        a = None
        if flags == _INT:  # Python ints only: int32 unless one does not fit (NumPy says)
            try:
                a = np.asarray(value, INT)
            except OverflowError:
                pass
        if a is None:
            a = np.asarray(value)
    except ValueError as e:
        raise ValueError(f"cannot convert {type(value).__name__} to a tensor: {e}") from None
    if a.dtype == object:
        raise TypeError(
            f"cannot convert {type(value).__name__} to a tensor: elements are not numbers "
            f"or the nesting is ragged"
        )
    if not flags & _OTHER:  # Python scalars only (or nothing): the defaults
        if a.dtype == np.float64:
            a = a.astype(FLOATX)
    elif a.dtype == np.float64 and not _has_explicit(value, a.dtype):
        a = a.astype(FLOATX)
    elif a.dtype == np.int64 and not _has_explicit(value, a.dtype) and a.size and \
            _INT_MIN <= a.min() and a.max() <= _INT_MAX:
        a = a.astype(INT)
    return a


# Kinds of leaves in a nested list (bit flags): a Tensor, anything but a Python scalar
# (NumPy values keep their dtype), a Python float, a Python int.
_TENSOR, _OTHER, _FLOAT, _INT = 1, 2, 4, 8
_LEAF_FLAGS = {int: _INT, float: _FLOAT, bool: 0}


def _leaf_flags(value) -> int:
    flags = 0
    for v in value:
        f = _LEAF_FLAGS.get(type(v))
        if f is not None:
            flags |= f
        elif isinstance(v, (list, tuple)):
            flags |= _leaf_flags(v)
        elif isinstance(v, Tensor):
            flags |= _TENSOR | _OTHER
        else:
            flags |= _OTHER
    return flags


def _flat(value):
    if isinstance(value, (list, tuple)):
        for v in value:
            yield from _flat(v)
    else:
        yield value


def _replace_tensors(value):
    if isinstance(value, (list, tuple)):
        return [_replace_tensors(v) for v in value]
    if isinstance(value, Tensor):
        return np.asarray(value._v)
    return value


def _has_explicit(value, dtype: np.dtype) -> bool:
    # An explicit 64-bit value (a NumPy array or scalar, a pandas column, ...) keeps its
    # dtype, inside a list or not; Python floats and ints get the defaults.
    return any(type(v) not in (float, int, bool, range) and np.asarray(v).dtype == dtype
               for v in _flat(value))


def convert_to_tensor(value: Any, dtype: DTypeLike = None, dtype_hint: DTypeLike = None,
                      name: str | None = None) -> Tensor:
    """Return ``value`` as a Tensor (Tensors and Variables pass through unchanged; a NumPy
    array is copied, so changing it later does not change the Tensor).

    Args:
        value: a Tensor, Variable, NumPy array, Python scalar or nested list.
        dtype: optional dtype; a Tensor of another dtype raises ``TypeError`` (use
            :func:`layerkit.cast` to convert deliberately).
        dtype_hint: the dtype to use when ``value`` has none of its own (Python numbers
            and lists) and converts to it without loss, as TensorFlow; ignored otherwise.
        name: accepted for TensorFlow compatibility.
    """
    if dtype is None and dtype_hint is not None and not isinstance(
            value, (Tensor, np.ndarray, np.generic)):
        a = to_array(value)
        hint = np.dtype(as_dtype(dtype_hint))
        if a.dtype != hint:
            with np.errstate(all="ignore"):
                cand = a.astype(hint)
            if a.dtype.kind in "iuf" and hint.kind in "iufc" and \
                    np.array_equal(cand, a, equal_nan=hint.kind in "fc" and a.dtype.kind == "f"):
                a = cand
        t = _new(Tensor)
        t._v = a
        return t
    if isinstance(value, Tensor):
        if dtype is not None and value.dtype != (want := as_dtype(dtype)):
            raise TypeError(
                f"convert_to_tensor: tensor has dtype {value.dtype.name}, "
                f"requested {want}; use lk.cast to convert"
            )
        return value
    a = to_array(value, dtype)
    if a is value:  # never alias the caller's array: Tensors are immutable (TF copies)
        a = a.copy()
    t = _new(Tensor)
    t._v = a
    return t


def constant(value: Any, dtype: DTypeLike = None, shape: ShapeLike | None = None,
             name: str | None = None) -> Tensor:
    """Create a Tensor holding a copy of ``value`` (optionally cast to ``dtype``).

    Args:
        value: a Tensor, NumPy array, Python scalar or nested list.
        dtype: optional dtype to cast to.
        shape: optional shape (TF): a one-element ``value`` is broadcast to it, any
            other ``value`` is reshaped to it and must have as many elements.
        name: accepted for TensorFlow compatibility; unused.

    Raises:
        ValueError: ``value`` does not fit ``shape``.
    """
    a = to_array(value, dtype)
    src = value._v if isinstance(value, Tensor) else value
    if a is src:  # never alias the caller's array: Tensors are immutable
        a = a.copy()
    if shape is not None:
        shape = tuple(int(d) for d in (np.asarray(shape).reshape(-1)))
        n = int(np.prod(shape, dtype=np.int64))
        if a.size == 1 and n != 1:
            a = np.full(shape, a.reshape(()), a.dtype)
        elif a.size == n:
            a = a.reshape(shape)
        else:
            raise ValueError(f"constant: value of shape {a.shape} ({a.size} elements) "
                             f"does not fit shape {shape} ({n} elements)")
    t = _new(Tensor)
    t._v = a
    return t
