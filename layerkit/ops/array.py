"""Shape records: reshape, transpose, broadcast_to, concat, stack, gather, getitem, ..."""
from __future__ import annotations

import numpy as np

from layerkit._core.op import Op, apply
from layerkit._core.tensor import Tensor
from layerkit.ops import broadcast as _bc

__all__ = ["reshape", "broadcast_to"]


def _shape_arg(shape) -> tuple:
    if isinstance(shape, Tensor):
        shape = np.asarray(shape._v).tolist()
    if isinstance(shape, (int, np.integer)):
        return (int(shape),)
    return tuple(int(s) for s in shape)


_RESHAPE = Op("reshape", lambda x, shape: np.reshape(x, shape),
              lambda g, ins, y, needs, shape: (reshape(g, ins[0].shape),))


def reshape(x, shape) -> Tensor:
    """Return ``x`` with a new shape (one dimension may be -1)."""
    return apply(_RESHAPE, x, shape=_shape_arg(shape))


def _broadcast_to_vjp(g, ins, y, needs, shape):
    return (_bc.sum_to_shape(g, ins[0].shape),)


_BROADCAST_TO = Op("broadcast_to", lambda x, shape: np.broadcast_to(x, shape), _broadcast_to_vjp)


def broadcast_to(x, shape) -> Tensor:
    """Broadcast ``x`` to ``shape`` (NumPy rules)."""
    return apply(_BROADCAST_TO, x, shape=_shape_arg(shape))
