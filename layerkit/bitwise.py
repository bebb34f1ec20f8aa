"""``lk.bitwise``: TensorFlow's bitwise ops on integer tensors (no gradients).

    >>> import layerkit as lk
    >>> int(lk.bitwise.bitwise_and(12, 10)), int(lk.bitwise.left_shift(1, 3))
    (8, 8)
"""
from __future__ import annotations

from typing import Any

from layerkit import keras_ops as _keras_ops

_ops: Any = _keras_ops  # its functions are made in a loop, which mypy cannot type

bitwise_and = _ops.bitwise_and
bitwise_or = _ops.bitwise_or
bitwise_xor = _ops.bitwise_xor
invert = _ops.bitwise_invert
left_shift = _ops.left_shift
right_shift = _ops.right_shift

__all__ = ["bitwise_and", "bitwise_or", "bitwise_xor", "invert", "left_shift", "right_shift"]
