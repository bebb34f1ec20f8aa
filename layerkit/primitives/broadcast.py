"""Undo broadcasting in one place: sum a gradient down to an input's shape (lk ops).

Every binary elementwise rule is wrapped with :func:`sum_to_shape` by the record
constructor, so no rule re-implements unbroadcasting. Op modules refer to each other as
modules (``_array.reshape``) because gradient rules of reductions need shape ops and vice
versa; names resolve when a rule runs.
"""
from __future__ import annotations

from functools import lru_cache

from layerkit._core.tensor import Tensor
from layerkit._core.tuning import BROADCAST_CACHE
from layerkit.primitives import array as _array
from layerkit.primitives import reduce as _reduce


@lru_cache(maxsize=BROADCAST_CACHE)
def _plan(gshape: tuple, shape: tuple) -> tuple:
    """(axes to sum, whether a reshape is needed) to bring ``gshape`` down to ``shape``."""
    lead = len(gshape) - len(shape)
    if lead < 0 or any(n != 1 and n != gshape[i + lead] for i, n in enumerate(shape)):
        raise ValueError(
            f"sum_to_shape: a gradient of shape {gshape} cannot come from broadcasting an "
            f"input of shape {shape}"
        )
    axes = tuple(range(lead)) + tuple(
        i + lead for i, n in enumerate(shape) if n == 1 and gshape[i + lead] != 1
    )
    reduced = tuple(n for i, n in enumerate(gshape) if i not in axes)
    return axes, reduced != shape


def sum_to_shape(g: Tensor, shape: tuple) -> Tensor:
    """Sum ``g`` over the axes along which an input of ``shape`` was broadcast.

    Raises:
        ValueError: ``shape`` does not broadcast to ``g.shape`` (names both shapes).
    """
    gshape = g.shape
    if gshape == shape:
        return g
    shape = tuple(shape)
    if gshape == shape:
        return g
    axes, needs_reshape = _plan(gshape, shape)
    if axes:
        g = _reduce.reduce_sum(g, axis=axes)
    if needs_reshape:
        g = _array.reshape(g, shape)
    return g
