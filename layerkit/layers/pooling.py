"""Pooling layers (NHWC): MaxPooling2D, AveragePooling2D, GlobalAveragePooling2D,
GlobalMaxPooling2D."""
from __future__ import annotations

from layerkit.layers.conv import check_data_format, check_padding, pair
from layerkit.layers.input_spec import InputSpec
from layerkit.layers.layer import Layer
from layerkit.ops import conv as _conv
from layerkit.ops import reduce as _reduce

__all__ = ["MaxPooling2D", "AveragePooling2D", "GlobalAveragePooling2D", "GlobalMaxPooling2D"]


class _Pool2D(Layer):
    def __init__(self, pool_size=(2, 2), strides=None, padding="valid", data_format=None,
                 **kwargs) -> None:
        super().__init__(**kwargs)
        cls = type(self).__name__
        self.pool_size = pair(cls, "pool_size", pool_size)
        self.strides = pair(cls, "strides", strides) if strides is not None else self.pool_size
        self.padding = check_padding(cls, padding)
        self.data_format = check_data_format(cls, data_format)
        self.input_spec = InputSpec(ndim=4)

    def call(self, inputs):
        return self._pool(inputs, self.pool_size, self.strides, self.padding.upper())

    def get_config(self) -> dict:
        return {**super().get_config(), "pool_size": self.pool_size, "strides": self.strides,
                "padding": self.padding, "data_format": self.data_format}


class MaxPooling2D(_Pool2D):
    """Maximum over ``pool_size`` windows moved by ``strides`` (default: ``pool_size``).

    Input shape: ``(batch, h, w, c)``. Output shape: ``(batch, h', w', c)``; for
    ``'valid'``, ``h' = (h - pool_h) // stride_h + 1``; for ``'same'``, ``ceil(h / stride_h)``.

    Example:
        >>> import layerkit as lk
        >>> lk.layers.MaxPooling2D()(lk.ones((1, 4, 4, 3))).shape
        (1, 2, 2, 3)
    """

    _pool = staticmethod(_conv.max_pool2d)


class AveragePooling2D(_Pool2D):
    """Mean over ``pool_size`` windows; with ``'same'`` padding, padded positions are not
    counted (TensorFlow semantics). Shapes as for :class:`MaxPooling2D`."""

    _cast_int_inputs = True

    _pool = staticmethod(_conv.avg_pool2d)


class _GlobalPool2D(Layer):
    def __init__(self, data_format=None, keepdims: bool = False, **kwargs) -> None:
        super().__init__(**kwargs)
        self.data_format = check_data_format(type(self).__name__, data_format)
        self.keepdims = bool(keepdims)
        self.input_spec = InputSpec(ndim=4)

    def call(self, inputs):
        return self._reduce(inputs, axis=(1, 2), keepdims=self.keepdims)

    def get_config(self) -> dict:
        return {**super().get_config(), "data_format": self.data_format,
                "keepdims": self.keepdims}


class GlobalAveragePooling2D(_GlobalPool2D):
    """Mean over height and width: ``(batch, h, w, c) -> (batch, c)`` (or
    ``(batch, 1, 1, c)`` with ``keepdims=True``)."""

    _cast_int_inputs = True

    _reduce = staticmethod(_reduce.reduce_mean)


class GlobalMaxPooling2D(_GlobalPool2D):
    """Maximum over height and width: ``(batch, h, w, c) -> (batch, c)``."""

    _reduce = staticmethod(_reduce.reduce_max)
