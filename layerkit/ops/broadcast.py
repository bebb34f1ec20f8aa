"""Undo broadcasting in one place: sum a gradient down to an input's shape (lk ops).

Op modules refer to each other as modules (``_array.reshape``) because gradient rules
of reductions need shape ops and vice versa; names resolve when a rule runs.
"""
from __future__ import annotations

from layerkit._core.tensor import Tensor
from layerkit.ops import array as _array
from layerkit.ops import reduce as _reduce


def sum_to_shape(g: Tensor, shape: tuple) -> Tensor:
    """Sum ``g`` over the axes along which an input of ``shape`` was broadcast."""
    gshape = g.shape
    if gshape == shape:
        return g
    lead = len(gshape) - len(shape)
    axes = tuple(range(lead)) + tuple(
        i + lead for i, n in enumerate(shape) if n == 1 and gshape[i + lead] != 1
    )
    if axes:
        g = _reduce.reduce_sum(g, axis=axes)
    if g.shape != tuple(shape):
        g = _array.reshape(g, shape)
    return g
