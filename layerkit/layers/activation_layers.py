"""Activations as layers (Keras 3): ReLU, LeakyReLU, PReLU, ELU, Softmax.

All of them pass Keras masks through (``supports_masking``); ``Softmax`` also takes an
explicit ``mask`` that excludes positions from the normalisation.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from layerkit import initializers, regularizers
from layerkit.layers.input_spec import InputSpec
from layerkit.layers.layer import Layer
from layerkit.primitives import elementwise as _ew
from layerkit.primitives import nn as _nn
from layerkit.primitives import reduce as _reduce

__all__ = ["ReLU", "LeakyReLU", "PReLU", "ELU", "Softmax"]


def _non_negative(layer: str, arg: str, value, none_ok: bool = False):
    if value is None and none_ok:
        return None
    if value is None or isinstance(value, bool) or not isinstance(value, (int, float)) \
            or value < 0:
        raise ValueError(f"{layer}: `{arg}` must be a non-negative number; received "
                         f"{arg}={value!r}")
    return value


class _Elementwise(Layer):
    supports_masking = True
    _cast_int_inputs = True  # float math: integer inputs become the layer's float dtype

    def compute_output_shape(self, input_shape: Any) -> Any:
        return input_shape


class ReLU(_Elementwise):
    """Rectified linear unit with Keras 3's options.

    ``f(x) = min(x, max_value)`` for ``x > threshold``, and
    ``negative_slope * (x - threshold)`` otherwise (with the defaults: ``max(x, 0)``).

    Args:
        max_value: optional upper bound of the output (>= 0).
        negative_slope: slope below the threshold (>= 0, default 0).
        threshold: the threshold (>= 0, default 0).

    Examples:
        >>> import layerkit as lk
        >>> lk.layers.ReLU(max_value=1.0)(lk.constant([-1.0, 0.5, 3.0])).numpy()
        array([0. , 0.5, 1. ], dtype=float32)
    """

    _cast_int_inputs = False  # (Keras: relu of integers stays integer)

    def __init__(self, max_value: float | None = None, negative_slope: float = 0.0,
                 threshold: float = 0.0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.max_value = _non_negative("ReLU", "max_value", max_value, none_ok=True)
        self.negative_slope = _non_negative("ReLU", "negative_slope", negative_slope)
        self.threshold = _non_negative("ReLU", "threshold", threshold)

    def call(self, inputs: Any) -> Any:
        slope, top, thr = self.negative_slope, self.max_value, self.threshold
        if slope and top is None and not thr:
            return _nn.leaky_relu(inputs, slope)
        y = _ew.where(_ew.greater(inputs, thr), inputs, 0.0) if thr else _nn.relu(inputs)
        if top is not None:
            y = _ew.minimum(y, float(top))
        if slope:  # below the threshold: slope * (x - threshold)
            below = _nn.relu(_ew.subtract(float(thr), inputs) if thr else _ew.negative(inputs))
            y = _ew.subtract(y, _ew.multiply(below, float(slope)))
        return y

    def get_config(self) -> dict:
        return {**super().get_config(), "max_value": self.max_value,
                "negative_slope": self.negative_slope, "threshold": self.threshold}


class LeakyReLU(_Elementwise):
    """``x`` for ``x >= 0``, else ``negative_slope * x`` (Keras 3 default slope 0.3).

    Args:
        negative_slope: the slope for negative inputs (>= 0). Keras 2's ``alpha`` is
            accepted as an alias.
    """

    def __init__(self, negative_slope: float = 0.3, **kwargs: Any) -> None:
        if "alpha" in kwargs:
            negative_slope = kwargs.pop("alpha")
        super().__init__(**kwargs)
        self.negative_slope = _non_negative("LeakyReLU", "negative_slope", negative_slope)

    def call(self, inputs: Any) -> Any:
        return _nn.leaky_relu(inputs, self.negative_slope)

    def get_config(self) -> dict:
        return {**super().get_config(), "negative_slope": self.negative_slope}


class PReLU(_Elementwise):
    """Parametric ReLU: ``x`` for ``x >= 0``, else ``alpha * x`` with a learned ``alpha``.

    Args:
        alpha_initializer: default ``'Zeros'``.
        alpha_regularizer: optional.
        alpha_constraint: optional.
        shared_axes: axes (counting the batch as 0) along which ``alpha`` is shared,
            e.g. ``[1, 2]`` for one slope per channel of ``(batch, h, w, c)`` images.

    Weights: ``alpha`` of the input's sample shape, with 1 on the shared axes.
    """

    def __init__(self, alpha_initializer: str = "Zeros", alpha_regularizer: Any = None,
                 alpha_constraint: Any = None, shared_axes: Any = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.alpha_initializer = initializers.get(alpha_initializer)
        self.alpha_regularizer = regularizers.get(alpha_regularizer)
        self.alpha_constraint = alpha_constraint
        if shared_axes is None:
            self.shared_axes = None
        else:
            axes = shared_axes if isinstance(shared_axes, (list, tuple)) else [shared_axes]
            self.shared_axes = [int(a) for a in axes]

    def build(self, input_shape: Any) -> None:
        rank = len(input_shape)
        shared = self.shared_axes or []
        if any(not 1 <= a < rank for a in shared):
            raise ValueError(f"PReLU '{self.name}': shared_axes {shared} must be axes 1..{rank - 1}"
                             f" of the input; received input shape {tuple(input_shape)}")
        shape = tuple(1 if i in shared else input_shape[i] for i in range(1, rank))
        if None in shape:
            raise ValueError(f"PReLU '{self.name}': every non-shared axis of the input must be "
                             f"known; received input shape {tuple(input_shape)}")
        self.alpha = self.add_weight("alpha", shape, self.alpha_initializer,
                                     regularizer=self.alpha_regularizer,
                                     constraint=self.alpha_constraint)
        self.input_spec = InputSpec(ndim=rank, axes={i: input_shape[i] for i in range(1, rank)
                                                     if i not in shared})

    def call(self, inputs: Any) -> Any:
        neg = _nn.relu(_ew.negative(inputs))
        return _ew.subtract(_nn.relu(inputs), _ew.multiply(self.alpha, neg))

    def get_config(self) -> dict:
        return {**super().get_config(),
                "alpha_initializer": initializers.serialize(self.alpha_initializer),
                "alpha_regularizer": regularizers.serialize(self.alpha_regularizer),
                "shared_axes": self.shared_axes}


class ELU(_Elementwise):
    """Exponential linear unit: ``x`` for ``x > 0``, else ``alpha * (exp(x) - 1)``.

    Args:
        alpha: the scale of the negative part (default 1.0).
    """

    def __init__(self, alpha: float = 1.0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.alpha = float(alpha)

    def call(self, inputs: Any) -> Any:
        return _nn.elu(inputs, self.alpha)

    def get_config(self) -> dict:
        # (Keras 3 leaves alpha out of ELU's config; it is kept here so configs round-trip)
        return {**super().get_config(), "alpha": self.alpha}


class Softmax(_Elementwise):
    """Softmax over ``axis`` (an int or a tuple of axes; default the last).

    Call arguments: ``inputs``; ``mask`` (optional), broadcastable to ``inputs`` with
    size 1 or the input's size on each of its (trailing) axes: masked-out positions get
    probability 0 and the others share 1, as in Keras 3 (a row masked entirely gives
    zeros).

    Examples:
        >>> import layerkit as lk
        >>> y = lk.layers.Softmax()(lk.constant([[1.0, 1.0, 5.0]]), mask=[[1, 1, 0]])
        >>> y.numpy()
        array([[0.5, 0.5, 0. ]], dtype=float32)
    """

    def __init__(self, axis: int | Sequence[int] = -1, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.axis = axis if isinstance(axis, int) else [int(a) for a in axis]

    def call(self, inputs: Any, mask: Any = None) -> Any:
        if mask is not None:
            mask = self._check_mask(inputs, mask)
            inputs = _ew.where(mask, inputs, -1e9)
        axis = self.axis
        if isinstance(axis, list) and len(axis) > 1:
            lse = _reduce.reduce_logsumexp(inputs, axis=axis, keepdims=True)
            y = _ew.exp(_ew.subtract(inputs, lse))
        else:
            y = _nn.softmax(inputs, axis=axis[0] if isinstance(axis, list) else axis)
        return _ew.where(mask, y, 0.0) if mask is not None else y

    def _check_mask(self, inputs, mask):
        shape, mshape = tuple(inputs.shape), tuple(np.shape(mask))
        if len(mshape) > len(shape) or any(m not in (1, s) for m, s in
                                             zip(mshape[::-1], shape[::-1])):
            raise ValueError(f"Softmax '{self.name}': the mask must be broadcastable to the "
                             f"inputs (each mask axis, aligned from the last, of size 1 or the "
                             f"input's size); received inputs of shape {shape} and a mask of "
                             f"shape {mshape}")
        if getattr(mask, "dtype", None) is None or mask.dtype.kind != "b":
            mask = _ew.greater(mask, 0.5)
        return mask

    def get_config(self) -> dict:
        return {**super().get_config(), "axis": self.axis}
