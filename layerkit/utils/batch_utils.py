"""``unpack_x_y_sample_weight`` / ``pack_x_y_sample_weight``: Keras's helpers for the
``(x, y, sample_weight)`` batches that ``fit`` and custom ``train_step``s handle.

    >>> import layerkit as lk
    >>> lk.utils.unpack_x_y_sample_weight((1, 2))
    (1, 2, None)
"""
from __future__ import annotations

from typing import Any

__all__ = ["unpack_x_y_sample_weight", "pack_x_y_sample_weight"]


def unpack_x_y_sample_weight(data: Any) -> tuple:
    """Split a batch into ``(x, y, sample_weight)`` (missing parts are None)."""
    if isinstance(data, list):
        data = tuple(data)
    if not isinstance(data, tuple):
        return data, None, None
    if len(data) == 1:
        return data[0], None, None
    if len(data) == 2:
        return data[0], data[1], None
    if len(data) == 3:
        return data
    raise ValueError(
        f"a batch must be x, (x,), (x, y) or (x, y, sample_weight); received a tuple of "
        f"length {len(data)}"
    )


def pack_x_y_sample_weight(x: Any, y: Any = None, sample_weight: Any = None) -> Any:
    """The inverse of :func:`unpack_x_y_sample_weight` (as in Keras, a lone ``x`` that
    is not a tuple or list is returned as is)."""
    if y is None:
        return x if not isinstance(x, (tuple, list)) else (x,)
    if sample_weight is None:
        return (x, y)
    return (x, y, sample_weight)
