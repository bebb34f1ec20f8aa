"""1-D and 3-D convolution layers and separable convolutions: Conv1D, Conv3D,
Conv1DTranspose, Conv3DTranspose, DepthwiseConv1D, SeparableConv1D, SeparableConv2D.

Arguments, defaults and weight layouts are Keras 3's; the shared machinery (channels
checks, the channels-first transpose path, padding) is in ``conv.py``.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from layerkit import constraints, initializers, regularizers
from layerkit.layers import activations
from layerkit.layers.conv import _Conv, _ConvND, _ConvTranspose, _DepthwiseConv, ntuple
from layerkit.primitives import conv_nd as _cnd
from layerkit.primitives import nn as _nn

__all__ = ["Conv1D", "Conv3D", "Conv1DTranspose", "Conv3DTranspose", "DepthwiseConv1D",
           "SeparableConv1D", "SeparableConv2D"]


class Conv1D(_ConvND):
    """1-D convolution over sequences (a height-1 2-D convolution: one im2col GEMM).

    Args:
        filters: number of output channels.
        kernel_size: int or 1-tuple.
        strides: int or 1-tuple.
        dilation_rate: int or 1-tuple.
        padding: ``'valid'`` (default), ``'same'`` or ``'causal'`` (``(k - 1) * dilation``
            zeros before the sequence, none after: output ``t`` sees inputs ``<= t``).
        data_format: ``'channels_last'`` (default, ``(batch, steps, channels)``) or
            ``'channels_first'``.
        groups: channel groups convolved separately.
        activation: as for ``Dense``.
        use_bias: as for ``Dense``.
        **kwargs: ``kernel_initializer``, ``bias_initializer``, their regularizers and
            constraints as for ``Dense``; then the base ``Layer`` arguments.

    Weights: ``kernel`` (k, channels / groups, filters), ``bias`` (filters,).

    Examples:
        >>> import layerkit as lk
        >>> lk.layers.Conv1D(4, 3, padding="causal")(lk.ones((2, 7, 3))).shape
        (2, 7, 4)
    """

    rank = 1
    causal_ok = True


class Conv3D(_ConvND):
    """3-D convolution over volumes ``(batch, depth, height, width, channels)``.

    Arguments as :class:`Conv1D` (no ``'causal'``), with triples for ``kernel_size``,
    ``strides`` and ``dilation_rate``.
    Weights: ``kernel`` (kd, kh, kw, channels / groups, filters), ``bias`` (filters,).

    Examples:
        >>> import layerkit as lk
        >>> lk.layers.Conv3D(2, 3)(lk.ones((1, 4, 5, 6, 1))).shape
        (1, 2, 3, 4, 2)
    """

    rank = 3


class Conv1DTranspose(_ConvTranspose):
    """Transposed 1-D convolution (the gradient of ``Conv1D`` with respect to its input).

    Args:
        filters: number of output channels.
        kernel_size: int or 1-tuple.
        strides: int or 1-tuple.
        dilation_rate: int or 1-tuple.
        padding: ``'valid'`` or ``'same'``.
        output_padding: optional extra steps at the end of the output (< stride).

    Weights: ``kernel`` (k, filters, channels), ``bias`` (filters,).
    """

    rank = 1


class Conv3DTranspose(_ConvTranspose):
    """Transposed 3-D convolution; arguments as :class:`Conv1DTranspose` with triples.

    Note Keras's argument order here: ``data_format`` comes before ``output_padding``.
    Weights: ``kernel`` (kd, kh, kw, filters, channels), ``bias`` (filters,).
    """

    rank = 3

    def __init__(self, filters: int, kernel_size: int | Sequence[int],
                 strides: int | Sequence[int] = (1, 1, 1), padding: str = "valid",
                 data_format: str | None = None, output_padding: Any = None,
                 dilation_rate: int | Sequence[int] = (1, 1, 1),
                 activation: str | Callable | None = None, use_bias: bool = True,
                 **kwargs: Any) -> None:
        super().__init__(filters, kernel_size, strides, padding, output_padding, data_format,
                         dilation_rate, activation, use_bias, **kwargs)


class DepthwiseConv1D(_DepthwiseConv):
    """Depthwise 1-D convolution: each input channel gets ``depth_multiplier`` filters.

    Output channel ``c * M + m`` is channel ``c`` convolved with ``kernel[:, c, m]``.
    Weights: ``kernel`` (k, channels, depth_multiplier), ``bias``
    (channels * depth_multiplier,).
    """

    rank = 1


class _SeparableConv(_Conv):
    """Depthwise convolution (``depth_multiplier`` filters per channel) then a pointwise
    (1x...x1) convolution to ``filters`` channels, then bias and activation."""

    def __init__(self, filters: int, kernel_size: int | Sequence[int],
                 strides: int | Sequence[int] = 1, padding: str = "valid",
                 data_format: str | None = None, dilation_rate: int | Sequence[int] = 1,
                 depth_multiplier: int = 1, activation: str | Callable | None = None,
                 use_bias: bool = True, depthwise_initializer: Any = "glorot_uniform",
                 pointwise_initializer: Any = "glorot_uniform", bias_initializer: Any = "zeros",
                 depthwise_regularizer: Any = None, pointwise_regularizer: Any = None,
                 bias_regularizer: Any = None, depthwise_constraint: Any = None,
                 pointwise_constraint: Any = None, bias_constraint: Any = None,
                 **kwargs: Any) -> None:
        super().__init__(kernel_size, strides, padding, data_format, dilation_rate, activation,
                         use_bias, depthwise_initializer, bias_initializer,
                         depthwise_regularizer, bias_regularizer, depthwise_constraint,
                         bias_constraint, **kwargs)
        cls = type(self).__name__
        self.filters = ntuple(cls, "filters", filters, 1)[0]
        self.depth_multiplier = ntuple(cls, "depth_multiplier", depth_multiplier, 1)[0]
        self.pointwise_initializer = initializers.get(pointwise_initializer)
        self.pointwise_regularizer = regularizers.get(pointwise_regularizer)
        self.pointwise_constraint = constraints.get(pointwise_constraint)

    def build(self, input_shape: Any) -> None:
        c = self._channels(input_shape)
        self.depthwise_kernel = self.add_weight(
            "depthwise_kernel", self.kernel_size + (c, self.depth_multiplier),
            self.kernel_initializer, regularizer=self.kernel_regularizer,
            constraint=self.kernel_constraint)
        self.pointwise_kernel = self.add_weight(
            "pointwise_kernel", (1,) * self.rank + (c * self.depth_multiplier, self.filters),
            self.pointwise_initializer, regularizer=self.pointwise_regularizer,
            constraint=self.pointwise_constraint)
        self.bias = self.add_weight("bias", (self.filters,), self.bias_initializer,
                                    regularizer=self.bias_regularizer,
                                    constraint=self.bias_constraint) if self.use_bias else None
        self._fix_channels(c)

    def _forward(self, x):
        y = _cnd.depthwise_resolved(x, self.depthwise_kernel, self.strides, self._pads(x),
                                    self.dilation_rate)
        act = self.activation
        relu = act is _nn.relu
        zero = ((0, 0),) * self.rank
        one = (1,) * self.rank
        y = _cnd.conv_bias_resolved(y, self.pointwise_kernel, self.bias, one, zero, one,
                                    relu=relu)
        return y if relu or act is activations.linear else act(y)

    def get_config(self) -> dict:
        config = super().get_config()
        config["depthwise_initializer"] = config.pop("kernel_initializer")
        config["depthwise_regularizer"] = config.pop("kernel_regularizer")
        config["depthwise_constraint"] = config.pop("kernel_constraint")
        return {**config, "filters": self.filters, "depth_multiplier": self.depth_multiplier,
                "pointwise_initializer": initializers.serialize(self.pointwise_initializer),
                "pointwise_regularizer": regularizers.serialize(self.pointwise_regularizer),
                "pointwise_constraint": constraints.serialize(self.pointwise_constraint)}


class SeparableConv1D(_SeparableConv):
    """Depthwise separable 1-D convolution (a depthwise then a pointwise convolution).

    Args:
        filters: output channels of the pointwise step.
        kernel_size: of the depthwise step (int or 1-tuple).
        strides: of the depthwise step (int or 1-tuple).
        dilation_rate: of the depthwise step (int or 1-tuple).
        padding: ``'valid'`` or ``'same'`` (of the depthwise step).
        depth_multiplier: depthwise filters per input channel.

    Weights: ``depthwise_kernel`` (k, channels, depth_multiplier), ``pointwise_kernel``
    (1, channels * depth_multiplier, filters), ``bias`` (filters,).
    """

    rank = 1


class SeparableConv2D(_SeparableConv):
    """Depthwise separable 2-D convolution; arguments as :class:`SeparableConv1D` with
    pairs.

    Weights: ``depthwise_kernel`` (kh, kw, channels, depth_multiplier), ``pointwise_kernel``
    (1, 1, channels * depth_multiplier, filters), ``bias`` (filters,).

    Examples:
        >>> import layerkit as lk
        >>> lk.layers.SeparableConv2D(4, 3, padding="same")(lk.ones((1, 5, 5, 2))).shape
        (1, 5, 5, 4)
    """

    rank = 2
