"""Normalization layers: BatchNormalization, LayerNormalization, GroupNormalization,
UnitNormalization."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from layerkit import constraints, initializers, regularizers
from layerkit._core.types import AxisLike
from layerkit.layers.input_spec import InputSpec
from layerkit.layers.layer import Layer
from layerkit.primitives import array as _array
from layerkit.primitives import elementwise as _ew
from layerkit.primitives import nn as _nn
from layerkit.primitives import reduce as _reduce

__all__ = ["BatchNormalization", "LayerNormalization", "GroupNormalization",
           "UnitNormalization"]


def _axes(layer: Layer, axis, input_shape) -> tuple:
    rank = len(input_shape)
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    if not all(-rank <= a < rank for a in axes):
        raise ValueError(f"{type(layer).__name__} '{layer.name}': axis {axis} is out of range "
                         f"for an input of shape {tuple(input_shape)}")
    axes = tuple(sorted(a % rank for a in axes))
    if any(input_shape[a] is None for a in axes):
        raise ValueError(f"{type(layer).__name__} '{layer.name}': the normalized axis {axis} of "
                         f"the input must be known; received shape {tuple(input_shape)}")
    return axes


def _normalize(x, mean, var, epsilon: float, gamma, beta):
    """``(x - mean) / sqrt(var + epsilon) * gamma + beta`` with one multiply on x."""
    inv = _ew.rsqrt(_ew.add(var, epsilon))
    if gamma is not None:
        inv = _ew.multiply(inv, gamma)
    y = _ew.multiply(_ew.subtract(x, mean), inv)
    return _ew.add(y, beta) if beta is not None else y


class _Norm(Layer):
    _cast_int_inputs = True
    supports_masking = True

    def __init__(self, axis: int | Sequence[int] = -1, epsilon: float = 1e-3, center: bool = True,
                 scale: bool = True, beta_initializer: Any = "zeros",
                 gamma_initializer: Any = "ones", beta_regularizer: Any = None,
                 gamma_regularizer: Any = None, beta_constraint: Any = None,
                 gamma_constraint: Any = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.axis = axis if isinstance(axis, int) else tuple(axis)
        self.epsilon, self.center, self.scale = float(epsilon), bool(center), bool(scale)
        self.beta_initializer = initializers.get(beta_initializer)
        self.gamma_initializer = initializers.get(gamma_initializer)
        self.beta_regularizer = regularizers.get(beta_regularizer)
        self.gamma_regularizer = regularizers.get(gamma_regularizer)
        self.beta_constraint = constraints.get(beta_constraint)
        self.gamma_constraint = constraints.get(gamma_constraint)

    def _scale_offset(self, input_shape) -> tuple:
        """Create gamma then beta (Keras order) of the normalized axes' shape."""
        self._norm_axes = _axes(self, self.axis, input_shape)
        shape = tuple(input_shape[a] for a in self._norm_axes)
        # Broadcast shape of the parameters against the input.
        self._bshape = tuple(input_shape[a] if a in self._norm_axes else 1
                             for a in range(len(input_shape)))
        self.gamma = self.add_weight("gamma", shape, self.gamma_initializer,
                                     regularizer=self.gamma_regularizer,
                                     constraint=self.gamma_constraint) if self.scale else None
        self.beta = self.add_weight("beta", shape, self.beta_initializer,
                                    regularizer=self.beta_regularizer,
                                    constraint=self.beta_constraint) if self.center else None
        self.input_spec = InputSpec(ndim=len(input_shape),
                                    axes={a: input_shape[a] for a in self._norm_axes})
        return shape

    def _b(self, w):
        """A parameter reshaped to broadcast against the input (no-op for the last axis)."""
        if w is None or len(self._norm_axes) == 1 and self._norm_axes[0] == len(self._bshape) - 1:
            return w
        return _array.reshape(w, self._bshape)

    def get_config(self) -> dict:
        return {**super().get_config(), "axis": self.axis, "epsilon": self.epsilon,
                "center": self.center, "scale": self.scale,
                "beta_initializer": initializers.serialize(self.beta_initializer),
                "gamma_initializer": initializers.serialize(self.gamma_initializer),
                "beta_regularizer": regularizers.serialize(self.beta_regularizer),
                "gamma_regularizer": regularizers.serialize(self.gamma_regularizer),
                "beta_constraint": constraints.serialize(self.beta_constraint),
                "gamma_constraint": constraints.serialize(self.gamma_constraint)}


class BatchNormalization(_Norm):
    """Normalizes with batch statistics in training and moving averages at inference.

    In training (``training=True`` and the layer trainable) it uses the mean and (biased)
    variance over every axis but ``axis`` and updates
    ``moving = moving * momentum + batch * (1 - momentum)``. Otherwise it uses the moving
    statistics. A frozen layer (``trainable=False``) always runs in inference mode, as in
    Keras.

    Args:
        axis: the feature axis (default -1).
        momentum: moving-average momentum (default 0.99).
        epsilon: added to the variance (default 1e-3).
        **kwargs: ``center``, ``scale`` and the ``beta``/``gamma`` initializers,
            regularizers and constraints as :class:`LayerNormalization`; then the base
            ``Layer`` arguments.

    Weights (Keras order): ``gamma``, ``beta`` (trainable), ``moving_mean``,
    ``moving_variance`` (non-trainable), each of shape (features,).
    """

    def __init__(self, axis: int | Sequence[int] = -1, momentum: float = 0.99,
                 epsilon: float = 1e-3, moving_mean_initializer: Any = "zeros",
                 moving_variance_initializer: Any = "ones", **kwargs: Any) -> None:
        super().__init__(axis=axis, epsilon=epsilon, **kwargs)
        self.momentum = float(momentum)
        self.moving_mean_initializer = initializers.get(moving_mean_initializer)
        self.moving_variance_initializer = initializers.get(moving_variance_initializer)

    def build(self, input_shape: Any) -> None:
        shape = self._scale_offset(input_shape)
        self.moving_mean = self.add_weight("moving_mean", shape, self.moving_mean_initializer,
                                           trainable=False)
        self.moving_variance = self.add_weight("moving_variance", shape,
                                               self.moving_variance_initializer, trainable=False)
        self._reduce_axes = tuple(a for a in range(len(input_shape)) if a not in self._norm_axes)

    def call(self, inputs: Any, training: bool | None = None) -> Any:
        if training and self.trainable:
            mean = _reduce.reduce_mean(inputs, axis=self._reduce_axes, keepdims=True)
            var = _reduce.reduce_mean(_ew.square(_ew.subtract(inputs, mean)),
                                      axis=self._reduce_axes, keepdims=True)
            m = self.momentum
            for moving, stat in ((self.moving_mean, mean), (self.moving_variance, var)):
                stat = _array.reshape(stat, moving.shape)
                moving.assign(_ew.add(_ew.multiply(moving, m), _ew.multiply(stat, 1.0 - m)))
        else:
            mean, var = self._b(self.moving_mean), self._b(self.moving_variance)
        return _normalize(inputs, mean, var, self.epsilon, self._b(self.gamma), self._b(self.beta))

    def get_config(self) -> dict:
        return {**super().get_config(), "momentum": self.momentum,
                "moving_mean_initializer": initializers.serialize(self.moving_mean_initializer),
                "moving_variance_initializer":
                    initializers.serialize(self.moving_variance_initializer)}


class LayerNormalization(_Norm):
    """Normalizes each sample over ``axis`` (default the last): mean 0, variance 1, then
    ``* gamma + beta``.

    Args:
        axis: int or tuple of axes to normalize over.
        epsilon: added to the variance (default 1e-3, as Keras).
        center: whether to learn ``beta`` / ``gamma``.
        scale: whether to learn ``beta`` / ``gamma``.

    Weights: ``gamma``, ``beta`` with the shape of the normalized axes.

    Examples:
        >>> import layerkit as lk
        >>> y = lk.layers.LayerNormalization()(lk.constant([[1.0, 3.0]]))
        >>> [round(float(v), 4) for v in y.numpy()[0]]
        [-0.9995, 0.9995]
    """

    def build(self, input_shape: Any) -> None:
        self._scale_offset(input_shape)

    def call(self, inputs: Any) -> Any:
        mean = _reduce.reduce_mean(inputs, axis=self._norm_axes, keepdims=True)
        centered = _ew.subtract(inputs, mean)
        var = _reduce.reduce_mean(_ew.square(centered), axis=self._norm_axes, keepdims=True)
        inv = _ew.rsqrt(_ew.add(var, self.epsilon))
        y = _ew.multiply(centered, inv)
        if self.gamma is not None:
            y = _ew.multiply(y, self._b(self.gamma))
        return _ew.add(y, self._b(self.beta)) if self.beta is not None else y


class GroupNormalization(_Norm):
    """Normalizes each sample over groups of channels (Wu & He, 2018): the ``axis``
    channels split into ``groups`` groups, and each group is normalized over its channels
    and every other non-batch axis; then ``* gamma + beta`` per channel.

    ``groups=1`` is LayerNormalization over all non-batch axes; ``groups=-1`` (one group
    per channel) is instance normalization.

    Args:
        groups: number of groups (default 32), a divisor of the channel count, or -1.
        axis: the channel axis (default -1).
        epsilon: added to the variance (default 1e-3).
        **kwargs: ``center``, ``scale`` and the ``beta``/``gamma`` initializers,
            regularizers and constraints as :class:`LayerNormalization`; then the base
            ``Layer`` arguments.

    Weights: ``gamma``, ``beta`` of shape (channels,).

    Examples:
        >>> import layerkit as lk
        >>> lk.layers.GroupNormalization(groups=2)(lk.ones((1, 5, 4))).shape
        (1, 5, 4)
    """

    def __init__(self, groups: int = 32, axis: int = -1, epsilon: float = 1e-3,
                 **kwargs: Any) -> None:
        if not isinstance(groups, int) or isinstance(groups, bool) or (
                groups <= 0 and groups != -1):
            raise ValueError(f"GroupNormalization: `groups` must be a positive integer (or -1 "
                             f"for instance normalization); received groups={groups!r}")
        if not isinstance(axis, int):
            raise TypeError(f"GroupNormalization: `axis` must be an int; received {axis!r}")
        super().__init__(axis=axis, epsilon=epsilon, **kwargs)
        self.groups = groups

    def build(self, input_shape: Any) -> None:
        rank = len(input_shape)
        if not -rank <= self.axis < rank or self.axis % rank == 0:
            raise ValueError(f"GroupNormalization '{self.name}': axis {self.axis} must be a "
                             f"non-batch axis of the input; received shape "
                             f"{tuple(input_shape)}")
        dim = input_shape[self.axis]
        if dim is None:
            raise ValueError(f"GroupNormalization '{self.name}': axis {self.axis} of the input "
                             f"must be known; received shape {tuple(input_shape)}")
        if self.groups == -1:
            self.groups = dim
        if dim < self.groups or dim % self.groups:
            raise ValueError(f"GroupNormalization '{self.name}': the {dim} channels on axis "
                             f"{self.axis} cannot be split into groups={self.groups} equal "
                             f"groups")
        self._scale_offset(input_shape)

    def call(self, inputs: Any) -> Any:
        shape = inputs.shape
        a = self._norm_axes[0]
        grouped = shape[:a] + (self.groups, shape[a] // self.groups) + shape[a + 1:]
        x = _array.reshape(inputs, grouped)
        axes = tuple(i for i in range(1, len(grouped)) if i != a)
        mean = _reduce.reduce_mean(x, axis=axes, keepdims=True)
        centered = _ew.subtract(x, mean)
        var = _reduce.reduce_mean(_ew.square(centered), axis=axes, keepdims=True)
        y = _array.reshape(_ew.multiply(centered, _ew.rsqrt(_ew.add(var, self.epsilon))), shape)
        if self.gamma is not None:
            y = _ew.multiply(y, self._b(self.gamma))
        return _ew.add(y, self._b(self.beta)) if self.beta is not None else y

    def get_config(self) -> dict:
        return {**super().get_config(), "groups": self.groups}


class UnitNormalization(Layer):
    """Scales each sample to unit L2 norm over ``axis``: ``x / sqrt(sum(x^2))`` (an
    all-zero slice stays zero).

    Args:
        axis: an int or a list of axes (default -1).

    Examples:
        >>> import layerkit as lk
        >>> lk.layers.UnitNormalization()(lk.constant([[3.0, 4.0]])).numpy()
        array([[0.6, 0.8]], dtype=float32)
    """

    _cast_int_inputs = True
    supports_masking = True

    def __init__(self, axis: AxisLike = -1, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if isinstance(axis, (list, tuple)):
            self.axis = [int(a) for a in axis]
        elif isinstance(axis, int) and not isinstance(axis, bool):
            self.axis = axis
        else:
            raise TypeError(f"UnitNormalization: `axis` must be an int or a list of ints; "
                            f"received axis={axis!r}")

    def call(self, inputs: Any) -> Any:
        rank = inputs.ndim
        axes = self.axis if isinstance(self.axis, list) else [self.axis]
        if any(not -rank <= a < rank for a in axes):
            raise ValueError(f"UnitNormalization '{self.name}': axis {self.axis} is out of "
                             f"range for an input of shape {tuple(inputs.shape)}")
        # Keras: x * min(rsqrt(sum(x^2)), 1 / 1e-12)
        return _nn.l2_normalize(inputs, tuple(axes), epsilon=1e-24)

    def compute_output_shape(self, input_shape: Any) -> Any:
        return input_shape

    def get_config(self) -> dict:
        return {**super().get_config(), "axis": self.axis}
