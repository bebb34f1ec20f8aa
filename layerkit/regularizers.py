"""Weight regularizers: penalties added to a layer's ``losses`` (Keras classes and names).

Examples:
    >>> import layerkit as lk
    >>> float(lk.regularizers.L2(0.5)(lk.constant([1.0, 2.0])))
    2.5
"""
from __future__ import annotations

from typing import Any

from layerkit import primitives as prim
from layerkit._core.serialization import init_kwargs
from layerkit._core.types import TensorLike

__all__ = ["Regularizer", "L1", "L2", "L1L2", "l1", "l2", "l1_l2", "get", "serialize",
           "deserialize"]


class Regularizer:
    """Base class: ``reg(weight) -> scalar Tensor`` written with layerkit ops."""

    def __call__(self, x: TensorLike) -> Any:
        raise NotImplementedError

    def get_config(self) -> dict:
        return {}

    @classmethod
    def from_config(cls, config: dict) -> Regularizer:
        """A regularizer from :meth:`get_config` output (Keras's too)."""
        return cls(**init_kwargs(cls, config))


class L1L2(Regularizer):
    """``l1 * sum(|x|) + l2 * sum(x**2)``."""

    def __init__(self, l1: float = 0.0, l2: float = 0.0) -> None:
        self.l1, self.l2 = float(l1), float(l2)

    def __call__(self, x: TensorLike) -> Any:
        total = None
        if self.l1:
            total = prim.multiply(self.l1, prim.reduce_sum(prim.abs(x)))
        if self.l2:
            term = prim.multiply(self.l2, prim.reduce_sum(prim.square(x)))
            total = term if total is None else prim.add(total, term)
        return total if total is not None else prim.multiply(0.0, prim.reduce_sum(x))

    def get_config(self) -> dict:
        return {"l1": self.l1, "l2": self.l2}


class L1(L1L2):
    """``l1 * sum(|x|)`` (Keras default ``l1=0.01``)."""

    def __init__(self, l1: float = 0.01) -> None:
        super().__init__(l1=l1)

    def get_config(self) -> dict:
        return {"l1": self.l1}


class L2(L1L2):
    """``l2 * sum(x**2)`` (Keras default ``l2=0.01``)."""

    def __init__(self, l2: float = 0.01) -> None:
        super().__init__(l2=l2)

    def get_config(self) -> dict:
        return {"l2": self.l2}


l1, l2, l1_l2 = L1, L2, L1L2
_BY_NAME = {"L1": L1, "L2": L2, "L1L2": L1L2, "l1": L1, "l2": L2, "l1_l2": L1L2}


def get(identifier: Any) -> Any:
    """A regularizer from a name, a config dict, an instance or a callable (None passes)."""
    if identifier is None or isinstance(identifier, Regularizer):
        return identifier
    if isinstance(identifier, str):
        if identifier not in _BY_NAME:
            raise ValueError(f"unknown regularizer {identifier!r}; known: 'l1', 'l2', 'l1_l2'")
        return _BY_NAME[identifier]()
    if isinstance(identifier, dict):
        return deserialize(identifier)
    if callable(identifier):
        return identifier
    raise ValueError(f"cannot interpret {identifier!r} as a regularizer")


def serialize(regularizer: Any) -> Any:
    """Keras's config of a regularizer (None and names stay as they are)."""
    if regularizer is None or isinstance(regularizer, str):
        return regularizer
    from layerkit.saving.serialization_lib import serialize_keras_object

    return serialize_keras_object(regularizer)


def deserialize(config: dict[str, Any], custom_objects: dict | None = None) -> Any:
    """A regularizer from :func:`serialize` output or Keras's (see ``lk.saving``)."""
    from layerkit.saving.serialization_lib import deserialize_keras_object

    obj = deserialize_keras_object(config, custom_objects, kind="regularizers")
    return get(obj) if isinstance(obj, str) else obj
