"""Merge layers: Add, Concatenate (called on a list of tensors)."""
from __future__ import annotations

from layerkit.layers.layer import Layer
from layerkit.ops import array as _array
from layerkit.ops import elementwise as _ew

__all__ = ["Add", "Concatenate"]


class _Merge(Layer):
    def _check(self, inputs) -> list:
        if not isinstance(inputs, (list, tuple)) or len(inputs) < 2:
            got = len(inputs) if isinstance(inputs, (list, tuple)) else "a single tensor"
            raise ValueError(f"{type(self).__name__} '{self.name}' must be called on a list of "
                             f"at least 2 tensors; received {got}")
        return list(inputs)


class Add(_Merge):
    """Elementwise sum of a list of tensors of the same shape.

    Example:
        >>> import layerkit as lk
        >>> lk.layers.Add()([lk.ones((2, 3)), lk.ones((2, 3))]).numpy()[0]
        array([2., 2., 2.], dtype=float32)
    """

    def call(self, inputs):
        xs = self._check(inputs)
        shapes = [tuple(x.shape) for x in xs]
        if len(set(shapes)) > 1:
            raise ValueError(f"Add '{self.name}': inputs must all have the same shape; "
                             f"received shapes {shapes}")
        y = xs[0]
        for x in xs[1:]:
            y = _ew.add(y, x)
        return y


class Concatenate(_Merge):
    """Concatenates a list of tensors along ``axis`` (default -1); every other dimension
    must match."""

    def __init__(self, axis: int = -1, **kwargs) -> None:
        super().__init__(**kwargs)
        self.axis = int(axis)

    def call(self, inputs):
        xs = self._check(inputs)
        shapes = [tuple(x.shape) for x in xs]
        rank = len(shapes[0])
        if not -rank <= self.axis < rank:  # a wrapped axis would join along another one
            raise ValueError(f"Concatenate '{self.name}': axis {self.axis} is out of range "
                             f"for inputs of rank {rank}; received shapes {shapes}")
        axis = self.axis % rank
        rest = {s[:axis] + s[axis + 1:] for s in shapes}
        if any(len(s) != rank for s in shapes) or len(rest) > 1:
            raise ValueError(f"Concatenate '{self.name}' needs inputs with matching shapes "
                             f"except along axis {self.axis}; received shapes {shapes}")
        return _array.concat(xs, axis=axis)

    def get_config(self) -> dict:
        return {**super().get_config(), "axis": self.axis}
