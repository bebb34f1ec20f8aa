"""Optimizers with Keras 3 update rules: SGD, Adam, AdamW, RMSprop, Adagrad, Nadam,
Adamax, Adadelta, Lion.

``get(identifier)`` resolves a string name (``'sgd'``, ``'adam'``, ``'adamw'``,
``'rmsprop'``, ``'adagrad'``, ``'nadam'``, ``'adamax'``, ``'adadelta'``, ``'lion'``), a
config dict or an instance.

Writing an optimizer follows Keras 3's contract: subclass :class:`Optimizer`, create the
slots in ``build(variables)`` with ``add_variable_from_reference`` and write the rule in
``update_step(gradient, variable, learning_rate)`` with layerkit ops and
``self.assign`` / ``assign_add`` / ``assign_sub`` (the :class:`Optimizer` docstring has a
runnable example). Such an optimizer works eagerly, under ``lk.function``, in ``fit``,
with checkpoints and ``.keras`` files, with no private names. The built-ins have the same
``update_step`` and, as a faster path, a fused NumPy kernel that gives the same numbers;
``optimizer.use_fused_kernel = False`` makes one use its ``update_step`` instead.
"""
from __future__ import annotations

from typing import Any

from layerkit.optimizers import schedules
from layerkit.optimizers.adadelta import Adadelta, Lion
from layerkit.optimizers.adagrad import Adagrad
from layerkit.optimizers.adam import Adam, AdamW
from layerkit.optimizers.adam_variants import Adamax, Nadam
from layerkit.optimizers.optimizer import Optimizer
from layerkit.optimizers.rmsprop import RMSprop
from layerkit.optimizers.sgd import SGD

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Nadam", "Adamax",
           "Adadelta", "Lion", "schedules", "get", "serialize", "deserialize", "legacy"]

_BY_NAME = {"sgd": SGD, "adam": Adam, "adamw": AdamW, "rmsprop": RMSprop, "adagrad": Adagrad,
            "nadam": Nadam, "adamax": Adamax, "adadelta": Adadelta, "lion": Lion}
_CLASS_NAMES = {c.__name__ for c in _BY_NAME.values()}


def _legacy_namespace():
    """``keras.optimizers.legacy`` (TF 2.11+): the same classes under the old spelling."""
    from types import ModuleType

    mod = ModuleType(f"{__name__}.legacy", "tf.keras's legacy optimizer names: the same "
                                           "classes as lk.optimizers.")
    for cls in (Optimizer, SGD, Adam, RMSprop, Adagrad, Nadam, Adamax, Adadelta):
        setattr(mod, cls.__name__, cls)
    return mod


legacy = _legacy_namespace()


def serialize(optimizer: Optimizer) -> dict:
    """Keras's config of an optimizer (see ``lk.saving``)."""
    from layerkit.saving.serialization_lib import serialize_keras_object

    return serialize_keras_object(optimizer)


def deserialize(config: dict, custom_objects: dict | None = None) -> Optimizer:
    """Rebuild an optimizer (without state) from :func:`serialize` output (or Keras's).

    A lowercase name as ``class_name`` (``'adam'``) is accepted too.
    """
    from layerkit.saving.serialization_lib import deserialize_keras_object

    name = config.get("class_name") if isinstance(config, dict) else None
    if isinstance(name, str) and name.lower() in _BY_NAME and name not in _CLASS_NAMES:
        config = {**config, "class_name": _BY_NAME[name.lower()].__name__}
    return deserialize_keras_object(config, custom_objects, kind="optimizers")


def get(identifier: str | dict[str, Any] | Optimizer) -> Optimizer:
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
