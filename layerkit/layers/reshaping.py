"""Reshaping layers: RepeatVector, Permute."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from layerkit.layers.input_spec import InputSpec
from layerkit.layers.layer import Layer
from layerkit.primitives import array as _array

__all__ = ["RepeatVector", "Permute"]


class RepeatVector(Layer):
    """Repeats each sample ``n`` times: ``(batch, features) -> (batch, n, features)``.

    Args:
        n: the number of repetitions (a positive int).

    Examples:
        >>> import layerkit as lk
        >>> lk.layers.RepeatVector(3)(lk.ones((2, 4))).shape
        (2, 3, 4)
    """

    def __init__(self, n: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if not isinstance(n, int) or isinstance(n, bool):
            raise TypeError(f"RepeatVector: `n` must be an int; received {type(n).__name__}")
        if n <= 0:
            raise ValueError(f"RepeatVector: `n` must be a positive integer; received n={n}")
        self.n = n
        self.input_spec = InputSpec(ndim=2)

    def call(self, inputs: Any) -> Any:
        return _array.tile(_array.expand_dims(inputs, 1), (1, self.n, 1))

    def compute_output_shape(self, input_shape: Any) -> Any:
        return (input_shape[0], self.n, input_shape[1])

    def get_config(self) -> dict:
        return {**super().get_config(), "n": self.n}


class Permute(Layer):
    """Permutes the non-batch axes: ``dims`` is a permutation of ``1..rank-1``.

    Args:
        dims: e.g. ``(2, 1)`` swaps the two axes of ``(batch, a, b)`` inputs.

    Examples:
        >>> import layerkit as lk
        >>> lk.layers.Permute((2, 1))(lk.ones((2, 3, 5))).shape
        (2, 5, 3)
    """

    def __init__(self, dims: Sequence[int], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.dims = tuple(int(d) for d in dims)
        if sorted(self.dims) != list(range(1, len(self.dims) + 1)):
            raise ValueError(f"Permute: `dims` must be a permutation of 1..{len(self.dims)} "
                             f"(the batch axis 0 stays first); received dims={tuple(dims)}")
        self.input_spec = InputSpec(ndim=len(self.dims) + 1)

    def call(self, inputs: Any) -> Any:
        return _array.transpose(inputs, (0,) + self.dims)

    def compute_output_shape(self, input_shape: Any) -> Any:
        return (input_shape[0],) + tuple(input_shape[d] for d in self.dims)

    def get_config(self) -> dict:
        return {**super().get_config(), "dims": list(self.dims)}
