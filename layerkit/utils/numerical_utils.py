"""``to_categorical`` and ``normalize`` (Keras 3's ``keras.utils`` numerical helpers)."""
from __future__ import annotations

from typing import Any

import numpy as np

from layerkit._core.tensor import Tensor
from layerkit._core.types import TensorLike
from layerkit.primitives import array as _shape
from layerkit.primitives import creation as _creation
from layerkit.primitives import elementwise as _ew
from layerkit.primitives import reduce as _red

__all__ = ["to_categorical", "normalize"]


def _class_indices(x, what: str) -> np.ndarray:
    a = np.asarray(x._v if isinstance(x, Tensor) else x)
    if a.dtype.kind == "f":
        if not np.all(np.isfinite(a)) or np.any(a != np.round(a)):
            raise ValueError(f"{what}: class labels must be whole numbers, received "
                             f"{a.ravel()[np.flatnonzero(a != np.round(a))[:5]].tolist()}")
    elif a.dtype.kind not in "iub":
        raise TypeError(f"{what}: class labels must be integers, received dtype {a.dtype}")
    return a.astype(np.int64)


def to_categorical(x: TensorLike, num_classes: int | None = None) -> Any:
    """One-hot encode class indices.

    A trailing axis of size 1 is dropped first (``(n, 1)`` labels give ``(n, classes)``),
    as in Keras.

    Args:
        x: class indices: an array-like (the result is a float64 NumPy array, as Keras's)
            or an ``lk.Tensor`` (the result is a float32 Tensor; with ``num_classes`` no
            value is read, so it works inside ``lk.function``, and as ``lk.one_hot`` an
            index outside the range gives a row of zeros).
        num_classes: the number of classes (default: the largest index + 1).

    Returns:
        The one-hot encoding, shape ``x.shape + (num_classes,)``.

    Raises:
        ValueError: a negative index, an index ``>= num_classes`` (Keras would wrap a
            negative one or fail with an IndexError), or non-integral float labels.

    Examples:
        >>> import layerkit as lk
        >>> lk.utils.to_categorical([0, 2, 1], num_classes=3)
        array([[1., 0., 0.],
               [0., 0., 1.],
               [0., 1., 0.]])
    """
    if isinstance(x, Tensor) and num_classes:
        # Graph-friendly (no values read, works in lk.function); as lk.one_hot, an index
        # outside [0, num_classes) gives a row of zeros.
        shape = tuple(x.shape)
        if len(shape) > 1 and shape[-1] == 1:
            x = _shape.reshape(x, shape[:-1])
        return _creation.one_hot(x, int(num_classes))
    labels = _class_indices(x, "to_categorical")
    shape = labels.shape
    if len(shape) > 1 and shape[-1] == 1:
        shape = shape[:-1]
    flat = labels.reshape(-1)
    if num_classes is None or num_classes == 0:
        num_classes = int(flat.max()) + 1 if flat.size else 0
    num_classes = int(num_classes)
    if flat.size and (flat.min() < 0 or flat.max() >= num_classes):
        bad = flat[(flat < 0) | (flat >= num_classes)][:5].tolist()
        raise ValueError(f"to_categorical: class indices must be in [0, {num_classes}) "
                         f"(num_classes={num_classes}), received {bad}")
    if isinstance(x, Tensor):
        return _creation.one_hot(flat.reshape(shape), num_classes)
    out = np.zeros((flat.size, num_classes))
    out[np.arange(flat.size), flat] = 1
    return out.reshape(tuple(shape) + (num_classes,))


def normalize(x: TensorLike, axis: int = -1, order: int = 2) -> Any:
    """Scale ``x`` to unit ``order``-norm along ``axis`` (zero vectors stay zero).

    Args:
        x: a NumPy array (the result is one) or an ``lk.Tensor`` (a Tensor, computed
            with lk ops, so it is differentiable).
        axis: the axis along which to normalize.
        order: the norm's order (2: L2, 1: L1, ...).

    Returns:
        ``x / norm(x)`` along ``axis``.

    Examples:
        >>> import numpy as np
        >>> import layerkit as lk
        >>> lk.utils.normalize(np.array([[3.0, 4.0], [0.0, 0.0]]))
        array([[0.6, 0.8],
               [0. , 0. ]])
    """
    if isinstance(x, Tensor):
        if order == 2:
            norm = _ew.sqrt(_red.reduce_sum(_ew.multiply(x, x), axis=axis, keepdims=True))
        else:
            norm = _ew.pow(_red.reduce_sum(_ew.pow(_ew.abs(x), order), axis=axis,
                                           keepdims=True), 1.0 / order)
        safe = _ew.where(_ew.equal(norm, 0), _creation.ones_like(norm), norm)
        return _ew.divide(x, safe)
    a = np.asarray(x)
    if a.dtype.kind not in "fc":
        a = a.astype(np.float64)
    lengths = np.linalg.norm(a, order, axis, keepdims=True) if a.ndim else np.abs(a)
    return a / np.where(lengths == 0, 1, lengths)
