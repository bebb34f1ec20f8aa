"""Activation lookup: Keras names (``'relu'``, ``'softmax'``, ...) to layerkit functions."""
from __future__ import annotations

from layerkit.primitives import elementwise as _ew
from layerkit.primitives import nn as _nn

__all__ = ["get", "serialize", "linear"]


def linear(x):
    """The identity activation."""
    return x


def softsign(x):
    """``x / (1 + |x|)``."""
    return _ew.divide(x, _ew.add(_ew.abs(x), 1.0))


def hard_sigmoid(x):
    """Keras 3's piecewise-linear sigmoid: ``relu6(x + 3) / 6``."""
    return _ew.divide(_nn.relu6(_ew.add(x, 3.0)), 6.0)


def hard_silu(x):
    """``x * hard_sigmoid(x)`` (Keras's ``hard_silu`` / ``hard_swish``)."""
    return _ew.multiply(x, hard_sigmoid(x))


def mish(x):
    """``x * tanh(softplus(x))``."""
    return _ew.multiply(x, _ew.tanh(_nn.softplus(x)))


def _names() -> dict:
    return {
        "linear": linear, "relu": _nn.relu, "relu6": _nn.relu6, "leaky_relu": _nn.leaky_relu,
        "elu": _nn.elu, "selu": _nn.selu, "gelu": _nn.gelu, "softplus": _nn.softplus,
        "silu": _nn.silu, "swish": _nn.silu, "softmax": _nn.softmax,
        "log_softmax": _nn.log_softmax, "sigmoid": _ew.sigmoid, "tanh": _ew.tanh,
        "exponential": _ew.exp, "softsign": softsign, "hard_sigmoid": hard_sigmoid,
        "hard_silu": hard_silu, "hard_swish": hard_silu, "mish": mish,
    }


def get(identifier):
    """The activation function for a name, a callable, or None (linear).

    Raises:
        ValueError: for an unknown name, listing the known ones.
    """
    if identifier is None:
        return linear
    if isinstance(identifier, str):
        names = _names()
        if identifier not in names:
            raise ValueError(f"unknown activation {identifier!r}; known: {sorted(names)}")
        return names[identifier]
    if callable(identifier):
        return identifier
    raise ValueError(f"cannot interpret {identifier!r} as an activation")


def serialize(fn) -> str:
    """The Keras name of an activation (its function name for custom callables)."""
    for name, f in _names().items():
        if f is fn:
            return name
    return getattr(fn, "__name__", repr(fn))
