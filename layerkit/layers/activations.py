"""Activation lookup: Keras names (``'relu'``, ``'softmax'``, ...) to layerkit functions."""
from __future__ import annotations

from typing import Any

from layerkit._core.tensor import Tensor
from layerkit._core.types import TensorLike
from layerkit.primitives import elementwise as _ew
from layerkit.primitives import nn as _nn

__all__ = ["get", "serialize", "linear"]


def linear(x: TensorLike) -> Any:
    """The identity activation."""
    return x


def softsign(x: TensorLike) -> Tensor:
    """``x / (1 + |x|)``."""
    return _ew.divide(x, _ew.add(_ew.abs(x), 1.0))


def hard_sigmoid(x: TensorLike) -> Tensor:
    """Keras 3's piecewise-linear sigmoid: ``relu6(x + 3) / 6``."""
    return _ew.divide(_nn.relu6(_ew.add(x, 3.0)), 6.0)


def hard_silu(x: TensorLike) -> Tensor:
    """``x * hard_sigmoid(x)`` (Keras's ``hard_silu`` / ``hard_swish``)."""
    return _ew.multiply(x, hard_sigmoid(x))


def mish(x: TensorLike) -> Tensor:
    """``x * tanh(softplus(x))``."""
    return _ew.multiply(x, _ew.tanh(_nn.softplus(x)))


def keras_relu(x: TensorLike, negative_slope: float = 0.0, max_value: float | None = None,
               threshold: float = 0.0) -> Tensor:
    """Keras's ``relu(x, negative_slope=0.0, max_value=None, threshold=0.0)``: ``x`` above
    ``threshold``, ``negative_slope * (x - threshold)`` below it, capped at ``max_value``."""
    if not negative_slope and max_value is None and not threshold:
        return _nn.relu(x)
    above = _ew.where(_ew.greater(x, threshold), x, 0.0) if threshold else _nn.relu(x)
    if max_value is not None:
        above = _ew.minimum(above, max_value)
    if negative_slope:
        below = _nn.relu(_ew.subtract(threshold, x)) if threshold else _nn.relu(_ew.negative(x))
        above = _ew.subtract(above, _ew.multiply(negative_slope, below))
    return above


def keras_leaky_relu(x: TensorLike, negative_slope: float = 0.2) -> Tensor:
    """Keras's ``leaky_relu(x, negative_slope=0.2)``."""
    return _nn.leaky_relu(x, alpha=negative_slope)


def keras_elu(x: TensorLike, alpha: float = 1.0) -> Tensor:
    """Keras's ``elu(x, alpha=1.0)``."""
    return _nn.elu(x, alpha=alpha)


# Keras-signature forms (lk.keras.activations) and the function layers use for each name:
# layers compare against the latter to pick fused kernels.
_KERAS_FORMS = {keras_relu: _nn.relu, keras_leaky_relu: _nn.leaky_relu, keras_elu: _nn.elu}


def _names() -> dict:
    return {
        "linear": linear, "relu": _nn.relu, "relu6": _nn.relu6, "leaky_relu": _nn.leaky_relu,
        "elu": _nn.elu, "selu": _nn.selu, "gelu": _nn.gelu, "softplus": _nn.softplus,
        "silu": _nn.silu, "swish": _nn.silu, "softmax": _nn.softmax,
        "log_softmax": _nn.log_softmax, "sigmoid": _ew.sigmoid, "tanh": _ew.tanh,
        "exponential": _ew.exp, "softsign": softsign, "hard_sigmoid": hard_sigmoid,
        "hard_silu": hard_silu, "hard_swish": hard_silu, "mish": mish,
    }


def get(identifier: Any) -> Any:
    """The activation function for a name, a config dict, a callable, or None (linear).

    Names are Keras's; a name that is not built in is looked up among the registered
    and scoped custom objects (``lk.saving``). A dict is a serialized function
    (``{"class_name": "function", "config": name, ...}``) or object.

    Raises:
        ValueError: for an unknown name, listing the known ones.
    """
    if identifier is None:
        return linear
    if isinstance(identifier, dict):
        from layerkit.saving.serialization_lib import deserialize_keras_object

        identifier = deserialize_keras_object(identifier, kind="activations")
    if isinstance(identifier, str):
        names = _names()
        if identifier in names:
            return names[identifier]
        from layerkit.saving.object_registration import get_registered_object

        found = get_registered_object(identifier)
        if found is None or not callable(found):
            raise ValueError(f"unknown activation {identifier!r}; known: {sorted(names)}")
        return found
    if callable(identifier):
        return _KERAS_FORMS.get(identifier, identifier)
    raise ValueError(f"cannot interpret {identifier!r} as an activation")


def serialize(fn: Any) -> Any:
    """The Keras name of a built-in activation, else Keras's config of the function or
    object (``lk.saving.serialize_keras_object``)."""
    fn = _KERAS_FORMS.get(fn, fn)
    for name, f in _names().items():
        if f is fn:
            return name
    from layerkit.saving.serialization_lib import serialize_keras_object

    return serialize_keras_object(fn)
