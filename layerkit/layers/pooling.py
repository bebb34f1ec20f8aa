"""Pooling layers over 1, 2 or 3 spatial axes: MaxPooling1D/2D/3D, AveragePooling1D/2D/3D
and the global poolings GlobalMaxPooling1D/2D/3D, GlobalAveragePooling1D/2D/3D.

TensorFlow semantics for ``padding='same'``: padding never wins a max and is not counted
in a mean. ``data_format='channels_first'`` pools through a transpose to channels last.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from layerkit.layers.conv import (
    check_data_format,
    check_padding,
    from_channels_last,
    ntuple,
    resolve_pads,
    to_channels_last,
)
from layerkit.layers.input_spec import InputSpec
from layerkit.layers.layer import Layer
from layerkit.primitives import array as _array
from layerkit.primitives import conv_nd as _cnd
from layerkit.primitives import elementwise as _ew
from layerkit.primitives import reduce as _reduce

__all__ = ["MaxPooling1D", "MaxPooling2D", "MaxPooling3D", "AveragePooling1D",
           "AveragePooling2D", "AveragePooling3D", "GlobalMaxPooling1D", "GlobalMaxPooling2D",
           "GlobalMaxPooling3D", "GlobalAveragePooling1D", "GlobalAveragePooling2D",
           "GlobalAveragePooling3D"]


class _Pool(Layer):
    rank = 2
    kind = "max"

    def __init__(self, pool_size: int | Sequence[int] = 2,
                 strides: int | Sequence[int] | None = None, padding: str = "valid",
                 data_format: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        cls, n = type(self).__name__, self.rank
        self.pool_size = ntuple(cls, "pool_size", pool_size, n)
        self.strides = ntuple(cls, "strides", strides, n) if strides is not None \
            else self.pool_size
        self.padding = check_padding(cls, padding)
        self.data_format = check_data_format(cls, data_format)
        self.input_spec = InputSpec(ndim=n + 2)

    def call(self, inputs: Any) -> Any:
        x = to_channels_last(inputs, self.data_format)
        pads = resolve_pads(self.padding, x.shape[1:-1], self.pool_size, self.strides,
                            (1,) * self.rank)
        y = _cnd.pool_resolved(self.kind, x, self.pool_size, self.strides, pads)
        return from_channels_last(y, self.data_format)

    def get_config(self) -> dict:
        return {**super().get_config(), "pool_size": self.pool_size, "strides": self.strides,
                "padding": self.padding, "data_format": self.data_format}


class MaxPooling1D(_Pool):
    """Maximum over ``pool_size`` steps moved by ``strides`` (default: ``pool_size``).

    Input shape: ``(batch, steps, channels)``. Output: ``(batch, steps', channels)`` with
    ``steps' = (steps - pool) // stride + 1`` ('valid') or ``ceil(steps / stride)``
    ('same').

    Examples:
        >>> import layerkit as lk
        >>> lk.layers.MaxPooling1D()(lk.ones((1, 5, 3))).shape
        (1, 2, 3)
    """

    rank = 1

    def __init__(self, pool_size: int | Sequence[int] = 2,
                 strides: int | Sequence[int] | None = None, padding: str = "valid",
                 data_format: str | None = None, **kwargs: Any) -> None:
        super().__init__(pool_size, strides, padding, data_format, **kwargs)


class MaxPooling2D(_Pool):
    """Maximum over ``pool_size`` windows moved by ``strides`` (default: ``pool_size``).

    Input shape: ``(batch, h, w, c)``. Output shape: ``(batch, h', w', c)``; for
    ``'valid'``, ``h' = (h - pool_h) // stride_h + 1``; for ``'same'``, ``ceil(h / stride_h)``.

    Examples:
        >>> import layerkit as lk
        >>> lk.layers.MaxPooling2D()(lk.ones((1, 4, 4, 3))).shape
        (1, 2, 2, 3)
    """

    rank = 2

    def __init__(self, pool_size: int | Sequence[int] = (2, 2),
                 strides: int | Sequence[int] | None = None, padding: str = "valid",
                 data_format: str | None = None, **kwargs: Any) -> None:
        super().__init__(pool_size, strides, padding, data_format, **kwargs)


class MaxPooling3D(_Pool):
    """Maximum over ``pool_size`` boxes of ``(batch, d, h, w, c)`` volumes; shapes as
    :class:`MaxPooling2D` per axis."""

    rank = 3

    def __init__(self, pool_size: int | Sequence[int] = (2, 2, 2),
                 strides: int | Sequence[int] | None = None, padding: str = "valid",
                 data_format: str | None = None, **kwargs: Any) -> None:
        super().__init__(pool_size, strides, padding, data_format, **kwargs)


class _AvgPool(_Pool):
    _cast_int_inputs = True
    kind = "avg"

    def __init__(self, pool_size: int | Sequence[int], strides: int | Sequence[int] | None = None,
                 padding: str = "valid", data_format: str | None = None, **kwargs: Any) -> None:
        super().__init__(pool_size, strides, padding, data_format, **kwargs)


class AveragePooling1D(_AvgPool):
    """Mean over ``pool_size`` steps; with ``'same'`` padding, padded positions are not
    counted (TensorFlow semantics). Shapes as for :class:`MaxPooling1D`."""

    rank = 1


class AveragePooling2D(_AvgPool):
    """Mean over ``pool_size`` windows; with ``'same'`` padding, padded positions are not
    counted (TensorFlow semantics). Shapes as for :class:`MaxPooling2D`.

    ``pool_size`` defaults to (2, 2) here (Keras requires it)."""

    rank = 2

    def __init__(self, pool_size: int | Sequence[int] = (2, 2),
                 strides: int | Sequence[int] | None = None, padding: str = "valid",
                 data_format: str | None = None, **kwargs: Any) -> None:
        super().__init__(pool_size, strides, padding, data_format, **kwargs)


class AveragePooling3D(_AvgPool):
    """Mean over ``pool_size`` boxes of ``(batch, d, h, w, c)`` volumes (padding not
    counted)."""

    rank = 3


class _GlobalPool(Layer):
    rank = 2
    _reduce: Callable[..., Any]  # each subclass sets it

    def __init__(self, data_format: str | None = None, keepdims: bool = False,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.data_format = check_data_format(type(self).__name__, data_format)
        self.keepdims = bool(keepdims)
        self.input_spec = InputSpec(ndim=self.rank + 2)

    def _axes(self) -> tuple:
        first = 1 if self.data_format == "channels_last" else 2
        return tuple(range(first, first + self.rank))

    def call(self, inputs: Any) -> Any:
        return self._reduce(inputs, axis=self._axes(), keepdims=self.keepdims)

    def get_config(self) -> dict:
        return {**super().get_config(), "data_format": self.data_format,
                "keepdims": self.keepdims}


class GlobalAveragePooling1D(_GlobalPool):
    """Mean over the steps: ``(batch, steps, c) -> (batch, c)`` (``(batch, 1, c)`` with
    ``keepdims=True``).

    ``call(inputs, mask=None)``: a ``(batch, steps)`` mask excludes the steps where it is
    False/0 from the mean, as Keras (an all-masked sample gives NaN, as in Keras).

    Examples:
        >>> import numpy as np, layerkit as lk
        >>> x = np.array([[[1.0], [3.0], [100.0]]])
        >>> lk.layers.GlobalAveragePooling1D()(x, mask=np.array([[1, 1, 0]])).numpy()
        array([[2.]], dtype=float32)
    """

    _cast_int_inputs = True
    rank = 1

    _reduce = staticmethod(_reduce.reduce_mean)

    def call(self, inputs: Any, mask: Any = None) -> Any:
        if mask is None:
            return super().call(inputs)
        axis = self._axes()[0]
        keep = _ew.not_equal(mask, 0)
        if len(keep.shape) != 2 or tuple(keep.shape) != (inputs.shape[0],
                                                         inputs.shape[axis]):
            raise ValueError(f"GlobalAveragePooling1D '{self.name}': mask must have shape "
                             f"(batch, steps) = {(inputs.shape[0], inputs.shape[axis])}; "
                             f"received shape {tuple(keep.shape)}")
        keep = _array.expand_dims(keep, 2 if axis == 1 else 1)
        total = _reduce.reduce_sum(_ew.where(keep, inputs, 0.0), axis=axis,
                                   keepdims=self.keepdims)
        count = _reduce.reduce_sum(_ew.cast(keep, inputs.dtype), axis=axis,
                                   keepdims=self.keepdims)
        return _ew.divide(total, count)


class GlobalAveragePooling2D(_GlobalPool):
    """Mean over height and width: ``(batch, h, w, c) -> (batch, c)`` (or
    ``(batch, 1, 1, c)`` with ``keepdims=True``)."""

    _cast_int_inputs = True
    rank = 2

    _reduce = staticmethod(_reduce.reduce_mean)


class GlobalAveragePooling3D(_GlobalPool):
    """Mean over depth, height and width: ``(batch, d, h, w, c) -> (batch, c)``."""

    _cast_int_inputs = True
    rank = 3

    _reduce = staticmethod(_reduce.reduce_mean)


class GlobalMaxPooling1D(_GlobalPool):
    """Maximum over the steps: ``(batch, steps, c) -> (batch, c)``."""

    rank = 1

    _reduce = staticmethod(_reduce.reduce_max)


class GlobalMaxPooling2D(_GlobalPool):
    """Maximum over height and width: ``(batch, h, w, c) -> (batch, c)``."""

    rank = 2

    _reduce = staticmethod(_reduce.reduce_max)


class GlobalMaxPooling3D(_GlobalPool):
    """Maximum over depth, height and width: ``(batch, d, h, w, c) -> (batch, c)``."""

    rank = 3

    _reduce = staticmethod(_reduce.reduce_max)
