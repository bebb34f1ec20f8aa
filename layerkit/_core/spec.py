"""TensorSpec: a shape (``None`` = unknown dimension) and a dtype.

One class serves ``lk.function`` input signatures and ``lk.data`` element specs.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from layerkit._core.convert import as_dtype, to_array
from layerkit._core.shape import TensorShape
from layerkit._core.tensor import Tensor
from layerkit._core.types import DTypeLike, ShapeLike, TensorLike


def _norm_dtype(dt: np.dtype) -> np.dtype:
    # Fixed-width strings of every length describe the same stream of strings.
    if dt.kind in "SU":
        return np.dtype(dt.kind)
    return dt


def shapes_compatible(a, b) -> bool:
    """True if two shapes (tuples with ``None`` wildcards, or None for any rank) agree."""
    if a is None or b is None:
        return True
    if len(a) != len(b):
        return False
    return all(x is None or y is None or x == y for x, y in zip(a, b))


class TensorSpec:
    """Describes tensors: a shape (``None`` = any size) and a dtype.

    Args:
        shape: a tuple of ints and ``None`` (unknown dimension), or ``None`` for any rank.
        dtype: the dtype (float32 by default); ``np.dtype('S')`` stands for byte strings
            of any length.
        name: an optional name, shown in signatures.

    Examples:
        >>> import layerkit as lk
        >>> spec = lk.TensorSpec([None, 3], "float32")
        >>> spec.is_compatible_with(lk.zeros((5, 3)))
        True
    """

    __slots__ = ("shape", "dtype", "name")

    def __init__(self, shape: ShapeLike | None = None, dtype: DTypeLike = "float32",
                 name: str | None = None) -> None:
        if isinstance(shape, TensorShape):
            shape = shape.dims
        if shape is not None:
            try:
                if isinstance(shape, str):
                    raise TypeError
                shape = tuple(None if d is None else int(d) for d in shape)
            except (TypeError, ValueError):
                raise TypeError(f"TensorSpec: shape must be a sequence of ints and None, "
                                f"received {shape!r}") from None
            if any(d is not None and d < 0 for d in shape):
                raise ValueError(f"TensorSpec: dimensions must be >= 0 or None (unknown), "
                                 f"received shape {shape}")
        self.shape = shape
        self.dtype = _norm_dtype(as_dtype(dtype))
        self.name = name

    @classmethod
    def from_tensor(cls, tensor: TensorLike, name: str | None = None) -> TensorSpec:
        """The spec of an existing tensor or array."""
        a = np.asarray(tensor._v) if isinstance(tensor, Tensor) else to_array(tensor)
        return cls(a.shape, a.dtype, name)

    def is_compatible_with(self, value: Any) -> bool:
        """True if ``value`` (a tensor, array, or a TensorSpec) fits this spec."""
        if not isinstance(value, TensorSpec):
            value = TensorSpec.from_tensor(value)
        return value.dtype == self.dtype and shapes_compatible(self.shape, value.shape)

    def __eq__(self, other) -> bool:
        return (isinstance(other, TensorSpec) and self.shape == other.shape
                and self.dtype == other.dtype and self.name == other.name)

    def __hash__(self) -> int:
        return hash((self.shape, self.dtype, self.name))

    def __repr__(self) -> str:
        name = f", name={self.name!r}" if self.name else ""
        return f"TensorSpec(shape={self.shape}, dtype={self.dtype.name}{name})"
