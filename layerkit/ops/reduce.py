"""Reduction records: reduce_sum, reduce_mean, reduce_max, ... and argmax/argmin."""
from __future__ import annotations

import numpy as np

from layerkit._core.op import Op, apply
from layerkit._core.tensor import Tensor
from layerkit.ops import array as _array

__all__ = ["reduce_sum"]


def _norm_axis(axis, ndim: int):
    if axis is None:
        return None
    if isinstance(axis, Tensor):
        axis = np.asarray(axis._v).tolist()
    if isinstance(axis, (list, tuple)):
        return tuple(int(a) % ndim if ndim else int(a) for a in axis)
    return (int(axis) % ndim,) if ndim else (int(axis),)


def _kept_shape(shape: tuple, axis) -> tuple:
    """The shape the reduction would have with keepdims=True (for broadcasting back)."""
    if axis is None:
        return (1,) * len(shape)
    return tuple(1 if i in axis else n for i, n in enumerate(shape))


def _sum_vjp(g, ins, y, needs, axis, keepdims):
    x = ins[0]
    if not keepdims:
        g = _array.reshape(g, _kept_shape(x.shape, axis))
    return (_array.broadcast_to(g, x.shape),)


_SUM = Op("reduce_sum", lambda x, axis, keepdims: np.sum(x, axis=axis, keepdims=keepdims),
          _sum_vjp)


def reduce_sum(x, axis=None, keepdims: bool = False) -> Tensor:
    """Sum of elements across ``axis`` (None: all axes)."""
    return apply(_SUM, x, axis=_norm_axis(axis, np.ndim(_val(x))), keepdims=bool(keepdims))


def _val(x):
    return x._v if isinstance(x, Tensor) else np.asarray(x)
