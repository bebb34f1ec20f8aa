"""Argument helpers shared by the convolution and pooling front doors (ops/conv.py,
ops/conv_nd.py): TensorFlow's stride/size forms and SAME padding."""
from __future__ import annotations

import numpy as np

from layerkit._core.tensor import Tensor

__all__: list[str] = []


def spatial_arg(op: str, what: str, value, rank: int, default=None) -> tuple:
    """Normalise TF's int / [v] / [v1..vn] / [1, v1..vn, 1] to an n-tuple of ints >= 1."""
    if value is None:
        value = default
    if isinstance(value, Tensor):
        value = np.asarray(value._v).tolist()
    if isinstance(value, np.ndarray):
        value = value.tolist()
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        vals = (int(value),) * rank
    elif isinstance(value, (list, tuple)) and len(value) in {1, rank, rank + 2} and all(
            isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in value):
        value = [int(v) for v in value]
        if len(value) == rank + 2:
            if value[0] != 1 or value[-1] != 1:
                raise ValueError(f"{op}: {what} along the batch and channel axes must be 1; "
                                 f"received {what}={value}")
            value = value[1:-1]
        vals = tuple(value) * rank if len(value) == 1 else tuple(value)
    else:
        raise ValueError(f"{op}: {what} must be an int or a list of 1, {rank} or {rank + 2} "
                         f"ints; received {what}={value!r}")
    if min(vals) < 1:
        raise ValueError(f"{op}: {what} must be >= 1; received {what}={value!r}")
    return vals


def same_pads(size: int, k: int, stride: int, dilation: int = 1) -> tuple[int, int]:
    """TensorFlow's SAME padding of one axis: output ceil(size / stride), the odd element
    of padding after."""
    out = -(-size // stride)
    total = max((out - 1) * stride + (k - 1) * dilation + 1 - size, 0)
    return total // 2, total - total // 2
