"""``lk.keras.activations``: Keras's activation functions by name, with ``get``,
``serialize`` and ``deserialize``.

Examples:
    >>> import layerkit as lk
    >>> lk.keras.activations.relu(lk.constant([-1.0, 2.0])).numpy().tolist()
    [0.0, 2.0]
    >>> lk.keras.activations.relu(lk.constant([-1.0, 8.0]), negative_slope=0.5,
    ...                           max_value=6.0).numpy().tolist()
    [-0.5, 6.0]
    >>> lk.keras.activations.serialize(lk.keras.activations.relu)
    'relu'

``relu``, ``leaky_relu`` and ``elu`` take Keras's arguments (``negative_slope``,
``max_value``, ``threshold``, ``alpha``); a layer given one of them uses the same fused
kernel as ``activation="relu"``.
"""
from __future__ import annotations

from typing import Any

from layerkit.layers.activations import (
    _names,
    get,
    keras_elu,
    keras_leaky_relu,
    keras_relu,
    serialize,
)


def deserialize(config: dict[str, Any], custom_objects: dict | None = None) -> Any:
    """The activation function of a name or a serialized config (``get`` with a scope of
    ``custom_objects``)."""
    from layerkit.saving.object_registration import CustomObjectScope

    with CustomObjectScope(custom_objects):
        return get(config)


globals().update(_names())
relu, leaky_relu, elu = keras_relu, keras_leaky_relu, keras_elu
__all__ = sorted(_names()) + ["deserialize", "get", "serialize"]
