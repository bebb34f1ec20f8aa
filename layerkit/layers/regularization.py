"""Regularization layers: SpatialDropout1D/2D/3D, GaussianNoise, GaussianDropout,
AlphaDropout, ActivityRegularization.

The random ones act only with ``training=True`` (``fit`` passes it) and are the identity
otherwise. They draw from ``lk.random``'s global generator, so ``lk.random.set_seed``
reproduces them, or from their own stream with ``seed=`` (see ``SeededLayer``); inside
``lk.function`` each call draws afresh, as eagerly.
"""
from __future__ import annotations

import math
from typing import Any

from layerkit import regularizers
from layerkit.layers.core import Dropout, SeededLayer
from layerkit.layers.input_spec import InputSpec
from layerkit.layers.layer import Layer
from layerkit.primitives import elementwise as _ew
from layerkit.primitives import nn as _nn
from layerkit.primitives import random as _random

__all__ = ["SpatialDropout1D", "SpatialDropout2D", "SpatialDropout3D", "GaussianNoise",
           "GaussianDropout", "AlphaDropout", "ActivityRegularization"]


def _rate(layer: str, arg: str, value, top_open: bool = False) -> float:
    value = float(value)
    if not 0.0 <= value <= 1.0 or (top_open and value == 1.0):
        bound = "[0, 1)" if top_open else "[0, 1]"
        raise ValueError(f"{layer}: `{arg}` must be in {bound}; received {arg}={value}")
    return value


class _SpatialDropout(Dropout):
    """Dropout of whole feature maps: one keep/drop draw per (sample, channel)."""

    _rank = 3

    def __init__(self, rate: float, data_format: str | None = None, seed: int | None = None,
                 **kwargs: Any) -> None:
        super().__init__(rate, seed=seed, **kwargs)
        if data_format not in (None, "channels_last", "channels_first"):
            raise ValueError(f"{type(self).__name__}: `data_format` must be 'channels_last' or "
                             f"'channels_first'; received {data_format!r}")
        self.data_format = (data_format or "channels_last") if self._rank > 3 else None
        self.input_spec = InputSpec(ndim=self._rank)

    def call(self, inputs: Any, training: bool | None = None) -> Any:
        if not training or self.rate == 0:
            return inputs
        shape = inputs.shape
        if self.data_format == "channels_first":
            noise = (shape[0], shape[1]) + (1,) * (len(shape) - 2)
        else:
            noise = (shape[0],) + (1,) * (len(shape) - 2) + (shape[-1],)
        return _nn.dropout(inputs, self.rate, noise_shape=noise, seed=self._generator)

    def get_config(self) -> dict:
        config = {k: v for k, v in super().get_config().items() if k != "noise_shape"}
        if self._rank > 3:
            config["data_format"] = self.data_format
        return config


class SpatialDropout1D(_SpatialDropout):
    """Drops whole channels of ``(batch, steps, channels)`` inputs (the same channels at
    every step) and scales the rest by ``1 / (1 - rate)``, in training only.

    Args:
        rate: fraction of channels to drop, in [0, 1).
        seed: optional int for a reproducible stream of its own.
    """

    _rank = 3

    def __init__(self, rate: float, seed: int | None = None, **kwargs: Any) -> None:
        super().__init__(rate, seed=seed, **kwargs)


class SpatialDropout2D(_SpatialDropout):
    """Drops whole feature maps of ``(batch, h, w, channels)`` images (or
    ``(batch, channels, h, w)`` with ``data_format='channels_first'``), in training only.

    Args:
        rate: fraction of feature maps to drop, in [0, 1).
        data_format: ``'channels_last'`` (default) or ``'channels_first'``.
        seed: optional int for a reproducible stream of its own.
    """

    _rank = 4


class SpatialDropout3D(_SpatialDropout):
    """Drops whole feature maps of ``(batch, d1, d2, d3, channels)`` volumes (or channels
    first), in training only. Arguments as :class:`SpatialDropout2D`."""

    _rank = 5


class _Noise(SeededLayer):
    supports_masking = True
    _cast_int_inputs = True


class GaussianNoise(_Noise):
    """Adds zero-mean Gaussian noise of standard deviation ``stddev`` in training.

    Args:
        stddev: the noise's standard deviation, in [0, 1].
        seed: optional int for a reproducible stream of its own.

    Examples:
        >>> import layerkit as lk
        >>> layer = lk.layers.GaussianNoise(0.1)
        >>> bool((layer(lk.ones((2, 3))) == 1.0).numpy().all())   # inference: identity
        True
    """

    def __init__(self, stddev: float, seed: int | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.stddev = _rate("GaussianNoise", "stddev", stddev)
        self._set_seed(seed)

    def call(self, inputs: Any, training: bool | None = None) -> Any:
        if not training or self.stddev == 0:
            return inputs
        noise = _random.normal(inputs.shape, 0.0, self.stddev, inputs.dtype, self._generator)
        return _ew.add(inputs, noise)

    def get_config(self) -> dict:
        return {**super().get_config(), "stddev": self.stddev, "seed": self.seed}


class GaussianDropout(_Noise):
    """Multiplies the inputs by Gaussian noise of mean 1 and standard deviation
    ``sqrt(rate / (1 - rate))`` in training.

    Args:
        rate: the equivalent drop probability, in [0, 1].
        seed: optional int for a reproducible stream of its own.
    """

    def __init__(self, rate: float, seed: int | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.rate = _rate("GaussianDropout", "rate", rate)
        self._set_seed(seed)

    def call(self, inputs: Any, training: bool | None = None) -> Any:
        if not training or self.rate == 0:
            return inputs
        stddev = math.sqrt(self.rate / (1.0 - self.rate))
        noise = _random.normal(inputs.shape, 1.0, stddev, inputs.dtype, self._generator)
        return _ew.multiply(inputs, noise)

    def get_config(self) -> dict:
        return {**super().get_config(), "rate": self.rate, "seed": self.seed}


# SELU's constants: AlphaDropout keeps a self-normalising network's mean and variance.
_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


class AlphaDropout(_Noise):
    """Dropout for SELU networks: dropped entries are set to SELU's negative saturation
    value and an affine map keeps the mean and variance (Klambauer et al., 2017).

    In training, with ``keep ~ Bernoulli(1 - rate)`` and ``a' = -alpha * scale``:
    ``a * (x * keep + a' * (1 - keep)) + b`` where
    ``a = ((1 - rate) * (1 + rate * a'^2)) ** -0.5`` and ``b = -a * a' * rate``.

    Args:
        rate: drop probability, in [0, 1].
        noise_shape: optional shape of the keep mask (broadcast to the input).
        seed: optional int for a reproducible stream of its own.
    """

    def __init__(self, rate: float, noise_shape: Any = None, seed: int | None = None,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.rate = _rate("AlphaDropout", "rate", rate)
        self.noise_shape = None if noise_shape is None else list(noise_shape)
        self._set_seed(seed)

    def call(self, inputs: Any, training: bool | None = None) -> Any:
        if not training or self.rate == 0:
            return inputs
        shape = inputs.shape
        noise = shape if self.noise_shape is None else tuple(
            n if d is None else int(d) for d, n in zip(self.noise_shape, shape))
        rate, alpha_p = self.rate, -_SELU_ALPHA * _SELU_SCALE
        keep = _ew.cast(_ew.greater_equal(
            _random.uniform(noise, 0.0, 1.0, inputs.dtype, self._generator), rate),
            inputs.dtype)
        a = ((1 - rate) * (1 + rate * alpha_p ** 2)) ** -0.5
        b = -a * alpha_p * rate
        x = _ew.add(_ew.multiply(inputs, keep),
                    _ew.multiply(_ew.subtract(1.0, keep), alpha_p))
        return _ew.add(_ew.multiply(x, a), b)

    def get_config(self) -> dict:
        return {**super().get_config(), "rate": self.rate, "noise_shape": self.noise_shape,
                "seed": self.seed}


class ActivityRegularization(Layer):
    """The identity, adding ``l1 * sum(|x|) + l2 * sum(x^2)`` of its output (divided by
    the batch size, as every activity regularizer) to ``losses``.

    Args:
        l1: the penalty factors.
        l2: the penalty factors.
    """

    supports_masking = True

    def __init__(self, l1: float = 0.0, l2: float = 0.0, **kwargs: Any) -> None:
        kwargs.pop("activity_regularizer", None)
        super().__init__(activity_regularizer=regularizers.L1L2(l1=l1, l2=l2), **kwargs)
        self.l1, self.l2 = float(l1), float(l2)

    def call(self, inputs: Any) -> Any:
        return inputs

    def compute_output_shape(self, input_shape: Any) -> Any:
        return input_shape

    def get_config(self) -> dict:
        config = {**super().get_config(), "l1": self.l1, "l2": self.l2}
        config.pop("activity_regularizer", None)  # derived from l1/l2, as in Keras
        return config
