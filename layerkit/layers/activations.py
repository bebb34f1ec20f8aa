"""Activation lookup: Keras names (``'relu'``, ``'softmax'``, ...) to layerkit functions."""
from __future__ import annotations

from layerkit.ops import elementwise as _ew
from layerkit.ops import nn as _nn

__all__ = ["get", "serialize", "linear"]


def linear(x):
    """The identity activation."""
    return x


def _names() -> dict:
    return {
        "linear": linear, "relu": _nn.relu, "relu6": _nn.relu6, "leaky_relu": _nn.leaky_relu,
        "elu": _nn.elu, "selu": _nn.selu, "gelu": _nn.gelu, "softplus": _nn.softplus,
        "silu": _nn.silu, "swish": _nn.silu, "softmax": _nn.softmax,
        "log_softmax": _nn.log_softmax, "sigmoid": _ew.sigmoid, "tanh": _ew.tanh,
        "exponential": _ew.exp,
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
