"""Convolution layers: the rank-generic bases and the 2-D layers Conv2D, Conv2DTranspose,
DepthwiseConv2D (1-D and 3-D layers and separable convolutions: ``conv_nd.py``).

Keras kernel layouts for every ``data_format``: ``(*kernel_size, in_channels / groups,
filters)`` (transposed: ``(*kernel_size, filters, in_channels)``). Ops compute channels
last; with ``data_format='channels_first'`` the layer transposes its input to channels
last and its output back (the Keras result, at the cost of two copies).
"""
from __future__ import annotations

import numbers
from collections.abc import Callable, Sequence
from typing import Any

from layerkit.layers import activations
from layerkit.layers.backend_config import image_data_format
from layerkit.layers.core import add_kernel_bias, kernel_bias_config, kernel_bias_options
from layerkit.layers.input_spec import InputSpec
from layerkit.layers.layer import Layer
from layerkit.primitives import array as _array
from layerkit.primitives import conv_nd as _cnd
from layerkit.primitives import elementwise as _ew
from layerkit.primitives import nn as _nn
from layerkit.primitives.spatial import same_pads

__all__ = ["Conv2D", "Conv2DTranspose", "DepthwiseConv2D"]


def ntuple(layer: str, arg: str, value, n: int, allow_zero: bool = False) -> tuple:
    """Normalise an int or ``n`` ints (Keras ``kernel_size``, ``strides``, ...) to a tuple
    of positive (or, with ``allow_zero``, non-negative) ints."""
    def is_int(k) -> bool:
        return isinstance(k, numbers.Integral) and not isinstance(k, bool)

    v = (value,) * n if is_int(value) else value
    try:
        v = tuple(v)
    except TypeError:
        v = ()
    low = 0 if allow_zero else 1
    if len(v) != n or not all(is_int(k) and k >= low for k in v):
        kind = "non-negative" if allow_zero else "positive"
        raise ValueError(f"{layer}: `{arg}` must be a {kind} int or a tuple of {n} of them; "
                         f"received {arg}={value!r}")
    return tuple(int(k) for k in v)


def pair(layer: str, arg: str, value) -> tuple[int, int]:
    """Normalise an int or a pair of positive ints (Keras ``kernel_size``, ``strides``)."""
    return ntuple(layer, arg, value, 2)


def check_padding(layer: str, padding: str, causal: bool = False) -> str:
    """'valid' or 'same' (and 'causal' where allowed), lower-cased."""
    allowed = ("valid", "same", "causal") if causal else ("valid", "same")
    if not isinstance(padding, str) or padding.lower() not in allowed:
        raise ValueError(f"{layer}: `padding` must be one of {allowed}; received {padding!r}")
    return padding.lower()


def check_data_format(layer: str, data_format) -> str:
    """``None`` (``lk.keras.backend.image_data_format()``, ``'channels_last'`` unless set),
    ``'channels_last'`` or ``'channels_first'``."""
    if data_format is None:
        return image_data_format()
    if data_format not in ("channels_last", "channels_first"):
        raise ValueError(f"{layer}: `data_format` must be 'channels_last' or "
                         f"'channels_first'; received {data_format!r}")
    return data_format


def to_channels_last(x, data_format: str):
    """(N, C, *spatial) -> (N, *spatial, C) for ``'channels_first'``; else ``x``."""
    if data_format == "channels_last":
        return x
    return _array.transpose(x, (0, *range(2, len(x.shape)), 1))


def from_channels_last(y, data_format: str):
    """The inverse of :func:`to_channels_last`."""
    if data_format == "channels_last":
        return y
    n = len(y.shape)
    return _array.transpose(y, (0, n - 1, *range(1, n - 1)))


def channel_axis(data_format: str) -> int:
    return -1 if data_format == "channels_last" else 1


def resolve_pads(padding: str, sizes, ksize, strides, dilations) -> tuple:
    """Per-axis (before, after) padding of a 'valid', 'same' or 'causal' layer."""
    if padding == "valid":
        return ((0, 0),) * len(sizes)
    if padding == "causal":
        return tuple(((k - 1) * d, 0) for k, d in zip(ksize, dilations))
    return tuple(same_pads(*a) for a in zip(sizes, ksize, strides, dilations))


class _Conv(Layer):
    """Shared arguments, channel checks, kernel/bias creation, the channels-first path and
    the bias + activation epilogue of the convolution layers of rank ``rank``."""

    _cast_int_inputs = True

    rank = 2
    kernel_name = "kernel"
    causal_ok = False  # Conv1D accepts padding='causal'

    def __init__(self, kernel_size: int | Sequence[int], strides: int | Sequence[int] = 1,
                 padding: str = "valid", data_format: str | None = None,
                 dilation_rate: int | Sequence[int] = 1, activation: str | Callable | None = None,
                 use_bias: bool = True, kernel_initializer: Any = "glorot_uniform",
                 bias_initializer: Any = "zeros", kernel_regularizer: Any = None,
                 bias_regularizer: Any = None, kernel_constraint: Any = None,
                 bias_constraint: Any = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        cls, n = type(self).__name__, self.rank
        self.kernel_size = ntuple(cls, "kernel_size", kernel_size, n)
        self.strides = ntuple(cls, "strides", strides, n)
        self.padding = check_padding(cls, padding, self.causal_ok)
        self.data_format = check_data_format(cls, data_format)
        self.dilation_rate = ntuple(cls, "dilation_rate", dilation_rate, n)
        kernel_bias_options(self, activation, use_bias, kernel_initializer, bias_initializer,
                            kernel_regularizer, bias_regularizer, kernel_constraint,
                            bias_constraint)
        self.input_spec = InputSpec(ndim=n + 2)

    def _no_strided_dilation(self) -> None:
        if max(self.strides) > 1 and max(self.dilation_rate) > 1:
            raise ValueError(f"{type(self).__name__}: `strides > 1` not supported in "
                             f"conjunction with `dilation_rate > 1`; received "
                             f"strides={self.strides} and dilation_rate={self.dilation_rate}")

    def _channels(self, input_shape) -> int:
        channels = input_shape[channel_axis(self.data_format)]
        if channels is None:
            raise ValueError(f"{type(self).__name__} '{self.name}': the channel dimension of "
                             f"the input must be known; received shape {tuple(input_shape)}")
        return channels

    def _make_weights(self, input_shape, kernel_shape: tuple, out_channels: int) -> None:
        channels = self._channels(input_shape)
        add_kernel_bias(self, self.kernel_name, kernel_shape, out_channels)
        self._fix_channels(channels)

    def _fix_channels(self, channels: int) -> None:
        """Later calls must bring the channel count the layer was built for."""
        self.input_spec = InputSpec(ndim=self.rank + 2,
                                    axes={channel_axis(self.data_format): channels})

    def _pads(self, x) -> tuple:
        return resolve_pads(self.padding, x.shape[1:-1], self.kernel_size, self.strides,
                            self.dilation_rate)

    def _epilogue(self, y):
        if self.bias is not None:
            y = _ew.add(y, self.bias)
        return self.activation(y)

    def call(self, inputs: Any) -> Any:
        return from_channels_last(self._forward(to_channels_last(inputs, self.data_format)),
                                  self.data_format)

    def _forward(self, x):
        raise NotImplementedError

    def get_config(self) -> dict:
        return {**super().get_config(), "kernel_size": self.kernel_size,
                "strides": self.strides, "padding": self.padding,
                "data_format": self.data_format, "dilation_rate": self.dilation_rate,
                **kernel_bias_config(self)}


class _ConvND(_Conv):
    """Conv1D/2D/3D: ``filters`` outputs, ``groups`` channel groups."""

    def __init__(self, filters: int, kernel_size: int | Sequence[int],
                 strides: int | Sequence[int] = 1, padding: str = "valid",
                 data_format: str | None = None, dilation_rate: int | Sequence[int] = 1,
                 groups: int = 1, activation: str | Callable | None = None, use_bias: bool = True,
                 **kwargs: Any) -> None:
        super().__init__(kernel_size, strides, padding, data_format, dilation_rate, activation,
                         use_bias, **kwargs)
        cls = type(self).__name__
        self.filters = ntuple(cls, "filters", filters, 1)[0]
        self.groups = ntuple(cls, "groups", groups, 1)[0]
        if self.filters % self.groups:
            raise ValueError(f"{cls}: the number of filters must be evenly divisible by the "
                             f"number of groups; received groups={self.groups}, "
                             f"filters={self.filters}")
        self._no_strided_dilation()

    def build(self, input_shape: Any) -> None:
        channels = self._channels(input_shape)
        if channels % self.groups:
            raise ValueError(f"{type(self).__name__} '{self.name}': the number of input "
                             f"channels must be evenly divisible by the number of groups; "
                             f"received groups={self.groups}, but the input has {channels} "
                             f"channels (input shape {tuple(input_shape)})")
        self._make_weights(input_shape,
                           self.kernel_size + (channels // self.groups, self.filters),
                           self.filters)

    def _forward(self, x):
        # Ranks 1 and 2 without groups run one fused record (conv + bias + ReLU).
        act = self.activation
        relu = act is _nn.relu
        y = _cnd.conv_bias_resolved(x, self.kernel, self.bias, self.strides, self._pads(x),
                                    self.dilation_rate, self.groups, relu)
        return y if relu or act is activations.linear else act(y)

    def get_config(self) -> dict:
        return {**super().get_config(), "filters": self.filters, "groups": self.groups}


def transpose_output_length(n: int, k: int, padding: str, output_padding, stride: int,
                            dilation: int) -> int:
    """Keras's output length of a transposed convolution along one axis."""
    k = (k - 1) * dilation + 1
    if output_padding is None:
        return n * stride + max(k - stride, 0) if padding == "valid" else n * stride
    pad = k // 2 if padding == "same" else 0
    return (n - 1) * stride + k - 2 * pad + output_padding


class _ConvTranspose(_Conv):
    """Conv1DTranspose/2D/3D: the gradient of a convolution with respect to its input."""

    def __init__(self, filters: int, kernel_size: int | Sequence[int],
                 strides: int | Sequence[int] = 1, padding: str = "valid",
                 output_padding: Any = None, data_format: str | None = None,
                 dilation_rate: int | Sequence[int] = 1, activation: str | Callable | None = None,
                 use_bias: bool = True, **kwargs: Any) -> None:
        super().__init__(kernel_size, strides, padding, data_format, dilation_rate, activation,
                         use_bias, **kwargs)
        cls = type(self).__name__
        self.filters = ntuple(cls, "filters", filters, 1)[0]
        self.output_padding = None if output_padding is None else ntuple(
            cls, "output_padding", output_padding, self.rank, allow_zero=True)
        if self.output_padding is not None and any(
                p >= s for p, s in zip(self.output_padding, self.strides)):
            raise ValueError(f"{cls}: each value of `output_padding` must be strictly less "
                             f"than the corresponding `strides` value; received "
                             f"output_padding={self.output_padding}, strides={self.strides}")
        self._no_strided_dilation()

    def build(self, input_shape: Any) -> None:
        self._make_weights(input_shape, self.kernel_size + (self.filters,
                                                            self._channels(input_shape)),
                           self.filters)

    def _forward(self, x):
        op = self.output_padding or (None,) * self.rank
        out = tuple(transpose_output_length(size, k, self.padding, p, s, d) for size, k, p, s, d
                    in zip(x.shape[1:-1], self.kernel_size, op, self.strides,
                           self.dilation_rate))
        pads = resolve_pads(self.padding, out, self.kernel_size, self.strides,
                            self.dilation_rate)
        y = _cnd.conv_transpose_resolved(x, self.kernel, (x.shape[0], *out, self.filters),
                                         self.strides, pads, self.dilation_rate)
        return self._epilogue(y)

    def get_config(self) -> dict:
        return {**super().get_config(), "filters": self.filters,
                "output_padding": self.output_padding}


class _DepthwiseConv(_Conv):
    """DepthwiseConv1D/2D: each input channel gets ``depth_multiplier`` filters."""

    def __init__(self, kernel_size: int | Sequence[int], strides: int | Sequence[int] = 1,
                 padding: str = "valid", depth_multiplier: int = 1, data_format: str | None = None,
                 dilation_rate: int | Sequence[int] = 1, activation: str | Callable | None = None,
                 use_bias: bool = True, depthwise_initializer: Any = "glorot_uniform",
                 bias_initializer: Any = "zeros", depthwise_regularizer: Any = None,
                 bias_regularizer: Any = None, depthwise_constraint: Any = None,
                 bias_constraint: Any = None, **kwargs: Any) -> None:
        super().__init__(kernel_size, strides, padding, data_format, dilation_rate, activation,
                         use_bias, depthwise_initializer, bias_initializer,
                         depthwise_regularizer, bias_regularizer, depthwise_constraint,
                         bias_constraint, **kwargs)
        self.depth_multiplier = ntuple(type(self).__name__, "depth_multiplier",
                                       depth_multiplier, 1)[0]

    def build(self, input_shape: Any) -> None:
        c = self._channels(input_shape)
        self._make_weights(input_shape, self.kernel_size + (c, self.depth_multiplier),
                           c * self.depth_multiplier)

    def _forward(self, x):
        y = _cnd.depthwise_resolved(x, self.kernel, self.strides, self._pads(x),
                                    self.dilation_rate)
        return self._epilogue(y)

    def get_config(self) -> dict:
        config = {**super().get_config(), "depth_multiplier": self.depth_multiplier}
        config["depthwise_initializer"] = config.pop("kernel_initializer")
        config["depthwise_regularizer"] = config.pop("kernel_regularizer")
        config["depthwise_constraint"] = config.pop("kernel_constraint")
        return config


class Conv2D(_ConvND):
    """2-D convolution over images (one im2col GEMM per call).

    Args:
        filters: number of output channels.
        kernel_size: int or pair (``strides > 1`` together with
            ``dilation_rate > 1`` is an error, as in Keras).
        strides: int or pair (``strides > 1`` together with
            ``dilation_rate > 1`` is an error, as in Keras).
        dilation_rate: int or pair (``strides > 1`` together with
            ``dilation_rate > 1`` is an error, as in Keras).
        padding: ``'valid'`` (default) or ``'same'`` (TensorFlow's split).
        data_format: ``'channels_last'`` (default, NHWC) or ``'channels_first'`` (NCHW).
        groups: split the channels into this many groups convolved separately (channels
            and ``filters`` must be multiples of it).
        activation: as for ``Dense``.
        use_bias: as for ``Dense``.
        **kwargs: ``kernel_initializer``, ``bias_initializer``, their regularizers and
            constraints as for ``Dense``; then the base ``Layer`` arguments.

    Input shape: ``(batch, h, w, channels)``. Output shape: ``(batch, h', w', filters)``.
    Weights: ``kernel`` (kh, kw, channels / groups, filters), ``bias`` (filters,).

    Examples:
        >>> import layerkit as lk
        >>> lk.layers.Conv2D(8, 3, padding="same")(lk.ones((1, 5, 5, 2))).shape
        (1, 5, 5, 8)
    """

    rank = 2


class Conv2DTranspose(_ConvTranspose):
    """Transposed 2-D convolution (the gradient of ``Conv2D`` with respect to its input).

    Args:
        filters: number of output channels.
        kernel_size: int or pair.
        strides: int or pair.
        dilation_rate: int or pair.
        padding: ``'valid'`` or ``'same'``.
        output_padding: optional int or pair: extra rows/columns on one side of the output
            (each less than its stride).
        data_format: ``'channels_last'`` (default) or ``'channels_first'``.

    Input shape: ``(batch, h, w, channels)``. Output shape: ``(batch, h', w', filters)``
    with ``h' = h * stride`` for ``'same'``.
    Weights: ``kernel`` (kh, kw, filters, channels) (Keras/TF layout), ``bias`` (filters,).
    """

    rank = 2


class DepthwiseConv2D(_DepthwiseConv):
    """Depthwise 2-D convolution: each input channel gets ``depth_multiplier`` filters.

    Input shape: ``(batch, h, w, channels)``. Output shape:
    ``(batch, h', w', channels * depth_multiplier)``; output channel ``c * M + m`` is
    channel ``c`` convolved with ``kernel[:, :, c, m]``.
    Weights: ``kernel`` (kh, kw, channels, depth_multiplier), ``bias``
    (channels * depth_multiplier,).
    """

    rank = 2
