"""``lk.keras.dtype_policies``: Keras 3's dtype-policy names (see ``lk.keras.mixed_precision``)."""
from __future__ import annotations

from typing import Any

from layerkit.keras.mixed_precision import DTypePolicy

FloatDTypePolicy = DTypePolicy

__all__ = ["DTypePolicy", "FloatDTypePolicy", "get", "serialize", "deserialize"]


def get(identifier: Any) -> DTypePolicy:
    """A policy from a policy, its name or its serialized config."""
    if isinstance(identifier, DTypePolicy):
        return identifier
    if isinstance(identifier, dict):
        return deserialize(identifier)
    return DTypePolicy(str(identifier))


def serialize(policy: DTypePolicy) -> dict:
    """Keras's config of a policy."""
    return {"module": "keras", "class_name": "DTypePolicy", "config": {"name": policy.name},
            "registered_name": None}


def deserialize(config: dict) -> DTypePolicy:
    """The policy of a :func:`serialize` config."""
    return DTypePolicy(config.get("config", {}).get("name", "float32"))
