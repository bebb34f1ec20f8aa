"""dtype policy and conversion of Python/NumPy values to arrays and Tensors.

Rules (API.md section 1): Python floats and lists of floats become float32, Python ints
int64, bools bool; NumPy arrays keep their dtype. Inside a binary op a bare Python
scalar stays *weak* (NumPy 2 promotion), so ``float32_tensor * 2.0`` stays float32.
"""
from __future__ import annotations

import numpy as np

from layerkit._core.tensor import Tensor

FLOATX = np.dtype("float32")
_new = object.__new__


def as_dtype(dtype) -> np.dtype | None:
    """Normalise a dtype spec (``'float32'``, ``np.float32``, ``np.dtype``) or None."""
    if dtype is None:
        return None
    if isinstance(dtype, str) and dtype == "float":
        return FLOATX
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
        a = np.asarray(value, dtype=np.int64)
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
    if isinstance(value, (list, tuple)) and any(isinstance(v, Tensor) for v in _flat(value)):
        value = _replace_tensors(value)
    try:
        a = np.asarray(value)
    except ValueError as e:
        raise ValueError(f"cannot convert {type(value).__name__} to a tensor: {e}") from None
    if a.dtype == object:
        raise TypeError(
            f"cannot convert {type(value).__name__} to a tensor: elements are not numbers "
            f"or the nesting is ragged"
        )
    if a.dtype == np.float64 and not _has_numpy_float64(value):
        a = a.astype(FLOATX)
    return a


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


def _has_numpy_float64(value) -> bool:
    # An explicit float64 array/scalar inside a list keeps float64; Python floats do not.
    return any(
        isinstance(v, (np.ndarray, np.generic)) and np.asarray(v).dtype == np.float64
        for v in _flat(value)
    )


def convert_to_tensor(value, dtype=None) -> Tensor:
    """Return ``value`` as a Tensor (Tensors and Variables pass through unchanged; a NumPy
    array is copied, so changing it later does not change the Tensor).

    Args:
        value: a Tensor, Variable, NumPy array, Python scalar or nested list.
        dtype: optional dtype; a Tensor of another dtype raises ``TypeError`` (use
            :func:`layerkit.cast` to convert deliberately).
    """
    if isinstance(value, Tensor):
        if dtype is not None and value.dtype != as_dtype(dtype):
            raise TypeError(
                f"convert_to_tensor: tensor has dtype {value.dtype.name}, "
                f"requested {as_dtype(dtype).name}; use lk.cast to convert"
            )
        return value
    a = to_array(value, dtype)
    if a is value:  # never alias the caller's array: Tensors are immutable (TF copies)
        a = a.copy()
    t = _new(Tensor)
    t._v = a
    return t


def constant(value, dtype=None, shape=None, name=None) -> Tensor:
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
