"""Optimizers with Keras 3 update rules: SGD, Adam, AdamW, RMSprop, Adagrad.

``get(identifier)`` resolves a string name (``'sgd'``, ``'adam'``, ``'adamw'``,
``'rmsprop'``, ``'adagrad'``), a config dict or an instance.
"""
from __future__ import annotations

from layerkit._core.serialization import serialize_object
from layerkit.optimizers import schedules
from layerkit.optimizers.adagrad import Adagrad
from layerkit.optimizers.adam import Adam, AdamW
from layerkit.optimizers.optimizer import Optimizer
from layerkit.optimizers.rmsprop import RMSprop
from layerkit.optimizers.sgd import SGD

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "schedules", "get",
           "serialize", "deserialize"]

_BY_NAME = {"sgd": SGD, "adam": Adam, "adamw": AdamW, "rmsprop": RMSprop, "adagrad": Adagrad}


def serialize(optimizer: Optimizer) -> dict:
    """``{'class_name': ..., 'config': ...}`` for an optimizer."""
    return serialize_object(optimizer)


def deserialize(config: dict, custom_objects: dict | None = None) -> Optimizer:
    """Rebuild an optimizer (without state) from :func:`serialize` output."""
    name = config.get("class_name", "")
    table = {c.__name__: c for c in _BY_NAME.values()}
    table.update(custom_objects or {})
    cls = table.get(name) or _BY_NAME.get(str(name).lower())
    if cls is None:
        raise ValueError(f"unknown optimizer class {name!r}; expected one of {sorted(table)}")
    return cls.from_config(config.get("config", {}), custom_objects)


def get(identifier) -> Optimizer:
    """An optimizer from a name, a config dict or an instance (returned as is).

    Raises:
        ValueError: an unknown name, naming the known ones.
    """
    if isinstance(identifier, Optimizer):
        return identifier
    if isinstance(identifier, dict):
        return deserialize(identifier)
    if isinstance(identifier, str):
        cls = _BY_NAME.get(identifier.lower())
        if cls is None:
            raise ValueError(
                f"unknown optimizer {identifier!r}; expected one of {sorted(_BY_NAME)} "
                f"or an Optimizer instance"
            )
        return cls()
    raise ValueError(
        f"could not interpret optimizer identifier {identifier!r}: expected a name "
        f"({sorted(_BY_NAME)}), a config dict or an Optimizer instance"
    )
