"""``lk.keras.activations``: Keras's activation functions by name, with ``get``,
``serialize`` and ``deserialize``.

Examples:
    >>> import layerkit as lk
    >>> lk.keras.activations.get("relu") is lk.keras.activations.relu
    True
    >>> lk.keras.activations.relu(lk.constant([-1.0, 2.0])).numpy().tolist()
    [0.0, 2.0]
"""
from __future__ import annotations

from typing import Any

from layerkit.layers.activations import _names, get, serialize


def deserialize(config: dict[str, Any], custom_objects: dict | None = None) -> Any:
    """The activation function of a name or a serialized config (``get`` with a scope of
    ``custom_objects``)."""
    from layerkit.saving.object_registration import CustomObjectScope

    with CustomObjectScope(custom_objects):
        return get(config)


globals().update(_names())
__all__ = sorted(_names()) + ["deserialize", "get", "serialize"]
