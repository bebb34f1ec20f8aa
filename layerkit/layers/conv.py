"""Convolution layers (NHWC images, Keras kernel layouts): Conv2D, Conv2DTranspose,
DepthwiseConv2D."""
from __future__ import annotations

from layerkit.layers import activations
from layerkit.layers.core import add_kernel_bias, kernel_bias_config, kernel_bias_options
from layerkit.layers.input_spec import InputSpec
from layerkit.layers.layer import Layer
from layerkit.ops import conv as _conv
from layerkit.ops import elementwise as _ew
from layerkit.ops import nn as _nn

__all__ = ["Conv2D", "Conv2DTranspose", "DepthwiseConv2D"]


def pair(layer: str, arg: str, value) -> tuple[int, int]:
    """Normalise an int or a pair of positive ints (Keras ``kernel_size``, ``strides``)."""
    v = (value, value) if isinstance(value, int) else tuple(value)
    if len(v) != 2 or not all(isinstance(n, int) and n > 0 for n in v):
        raise ValueError(f"{layer}: `{arg}` must be a positive int or a pair of them; "
                         f"received {arg}={value!r}")
    return v


def check_padding(layer: str, padding: str) -> str:
    if not isinstance(padding, str) or padding.lower() not in ("valid", "same"):
        raise ValueError(f"{layer}: `padding` must be 'valid' or 'same'; received {padding!r}")
    return padding.lower()


def check_data_format(layer: str, data_format) -> str:
    if data_format not in (None, "channels_last"):
        raise ValueError(f"{layer}: only data_format='channels_last' (NHWC) is supported; "
                         f"received {data_format!r}")
    return "channels_last"


class _Conv(Layer):
    """Shared arguments, kernel/bias creation and the bias + activation epilogue."""

    _cast_int_inputs = True

    kernel_name = "kernel"

    def __init__(self, kernel_size, strides=(1, 1), padding="valid", data_format=None,
                 dilation_rate=(1, 1), activation=None, use_bias=True,
                 kernel_initializer="glorot_uniform", bias_initializer="zeros",
                 kernel_regularizer=None, bias_regularizer=None, kernel_constraint=None,
                 bias_constraint=None, **kwargs) -> None:
        super().__init__(**kwargs)
        cls = type(self).__name__
        self.kernel_size = pair(cls, "kernel_size", kernel_size)
        self.strides = pair(cls, "strides", strides)
        self.padding = check_padding(cls, padding)
        self.data_format = check_data_format(cls, data_format)
        self.dilation_rate = pair(cls, "dilation_rate", dilation_rate)
        kernel_bias_options(self, activation, use_bias, kernel_initializer, bias_initializer,
                            kernel_regularizer, bias_regularizer, kernel_constraint,
                            bias_constraint)
        self.input_spec = InputSpec(ndim=4)

    def _make_weights(self, input_shape, kernel_shape: tuple, out_channels: int) -> None:
        channels = input_shape[-1]
        if channels is None:
            raise ValueError(f"{type(self).__name__} '{self.name}': the channel dimension of "
                             f"the input must be known; received shape {tuple(input_shape)}")
        add_kernel_bias(self, self.kernel_name, kernel_shape, out_channels)
        self.input_spec = InputSpec(ndim=4, axes={-1: channels})

    def _epilogue(self, y):
        if self.bias is not None:
            y = _ew.add(y, self.bias)
        return self.activation(y)

    def get_config(self) -> dict:
        return {**super().get_config(), "kernel_size": self.kernel_size,
                "strides": self.strides, "padding": self.padding,
                "data_format": self.data_format, "dilation_rate": self.dilation_rate,
                **kernel_bias_config(self)}


class Conv2D(_Conv):
    """2-D convolution over NHWC images (one im2col GEMM per call).

    Args:
        filters: number of output channels.
        kernel_size, strides, dilation_rate: int or pair.
        padding: ``'valid'`` (default) or ``'same'``.
        activation, use_bias, initializers, regularizers, constraints: as for ``Dense``.

    Input shape: ``(batch, h, w, channels)``. Output shape: ``(batch, h', w', filters)``.
    Weights: ``kernel`` (kh, kw, channels, filters), ``bias`` (filters,).

    Example:
        >>> import layerkit as lk
        >>> lk.layers.Conv2D(8, 3, padding="same")(lk.ones((1, 5, 5, 2))).shape
        (1, 5, 5, 8)
    """

    def __init__(self, filters: int, kernel_size, strides=(1, 1), padding="valid", **kwargs):
        super().__init__(kernel_size, strides, padding, **kwargs)
        self.filters = int(filters)
        if self.filters <= 0:
            raise ValueError(f"Conv2D: `filters` must be a positive int; received {filters!r}")

    def build(self, input_shape) -> None:
        self._make_weights(input_shape, self.kernel_size + (input_shape[-1], self.filters),
                           self.filters)

    def call(self, inputs):
        # One fused record for conv + bias (+ ReLU): see ops/conv.py fused_conv2d.
        act = self.activation
        fused = "relu" if act is _nn.relu else "linear"
        y = _conv.fused_conv2d(inputs, self.kernel, self.bias, strides=self.strides,
                               padding=self.padding.upper(), dilations=self.dilation_rate,
                               activation=fused)
        return y if fused == "relu" or act is activations.linear else act(y)

    def get_config(self) -> dict:
        return {**super().get_config(), "filters": self.filters}


def transpose_output_length(n: int, k: int, padding: str, output_padding, stride: int,
                            dilation: int) -> int:
    """Keras's output length of a transposed convolution along one axis."""
    k = (k - 1) * dilation + 1
    if output_padding is None:
        return n * stride + max(k - stride, 0) if padding == "valid" else n * stride
    pad = k // 2 if padding == "same" else 0
    return (n - 1) * stride + k - 2 * pad + output_padding


class Conv2DTranspose(_Conv):
    """Transposed 2-D convolution (the gradient of ``Conv2D`` with respect to its input).

    Args:
        filters: number of output channels.
        kernel_size, strides, dilation_rate: int or pair.
        padding: ``'valid'`` or ``'same'``.
        output_padding: optional int or pair: extra rows/columns on one side of the output.

    Input shape: ``(batch, h, w, channels)``. Output shape: ``(batch, h', w', filters)``
    with ``h' = h * stride`` for ``'same'``.
    Weights: ``kernel`` (kh, kw, filters, channels) (Keras/TF layout), ``bias`` (filters,).
    """

    def __init__(self, filters: int, kernel_size, strides=(1, 1), padding="valid",
                 output_padding=None, **kwargs) -> None:
        super().__init__(kernel_size, strides, padding, **kwargs)
        self.filters = int(filters)
        self.output_padding = None if output_padding is None else (
            (output_padding,) * 2 if isinstance(output_padding, int) else tuple(output_padding))

    def build(self, input_shape) -> None:
        self._make_weights(input_shape, self.kernel_size + (self.filters, input_shape[-1]),
                           self.filters)

    def call(self, inputs):
        n, h, w, _ = inputs.shape
        op = self.output_padding or (None, None)
        out = tuple(transpose_output_length(size, k, self.padding, p, s, d) for size, k, p, s, d
                    in zip((h, w), self.kernel_size, op, self.strides, self.dilation_rate))
        y = _conv.conv2d_transpose(inputs, self.kernel, (n, *out, self.filters), self.strides,
                                   padding=self.padding.upper(), dilations=self.dilation_rate)
        return self._epilogue(y)

    def get_config(self) -> dict:
        return {**super().get_config(), "filters": self.filters,
                "output_padding": self.output_padding}


class DepthwiseConv2D(_Conv):
    """Depthwise 2-D convolution: each input channel gets ``depth_multiplier`` filters.

    Input shape: ``(batch, h, w, channels)``. Output shape:
    ``(batch, h', w', channels * depth_multiplier)``.
    Weights: ``kernel`` (kh, kw, channels, depth_multiplier), ``bias``
    (channels * depth_multiplier,).
    """

    def __init__(self, kernel_size, strides=(1, 1), padding="valid", depth_multiplier: int = 1,
                 depthwise_initializer="glorot_uniform", depthwise_regularizer=None,
                 depthwise_constraint=None, **kwargs) -> None:
        kwargs.setdefault("kernel_initializer", depthwise_initializer)
        kwargs.setdefault("kernel_regularizer", depthwise_regularizer)
        kwargs.setdefault("kernel_constraint", depthwise_constraint)
        super().__init__(kernel_size, strides, padding, **kwargs)
        self.depth_multiplier = int(depth_multiplier)

    def build(self, input_shape) -> None:
        c = input_shape[-1]
        self._make_weights(input_shape, self.kernel_size + (c, self.depth_multiplier),
                           (c or 0) * self.depth_multiplier)

    def call(self, inputs):
        y = _conv.depthwise_conv2d(inputs, self.kernel, strides=self.strides,
                                   padding=self.padding.upper(), dilations=self.dilation_rate)
        return self._epilogue(y)

    def get_config(self) -> dict:
        config = {**super().get_config(), "depth_multiplier": self.depth_multiplier}
        config["depthwise_initializer"] = config.pop("kernel_initializer")
        config["depthwise_regularizer"] = config.pop("kernel_regularizer")
        config["depthwise_constraint"] = config.pop("kernel_constraint")
        return config
