"""Weight constraints: projections applied to a weight after each optimizer update.

A constraint is called as ``constraint(w) -> w'`` with layerkit ops, so it runs inside
traced train steps too. Layers take them as ``kernel_constraint``, ``bias_constraint``
(and the like) and give them to ``add_weight``; every optimizer assigns
``w = constraint(w)`` right after it updates ``w``, as Keras 3 does.

The formulas are Keras 3's (``epsilon = 1e-7``); norms are taken over ``axis``, which
for a ``Dense`` kernel ``(input_dim, units)`` means ``axis=0`` constrains each unit's
incoming weight vector.

Examples:
    >>> import layerkit as lk
    >>> w = lk.constant([[3.0, 0.0], [4.0, 0.5]])
    >>> lk.constraints.MaxNorm(1.0)(w).numpy().round(3)
    array([[0.6, 0. ],
           [0.8, 0.5]], dtype=float32)
"""
from __future__ import annotations

from typing import Any

from layerkit import primitives as prim
from layerkit._core.types import AxisLike, TensorLike

__all__ = ["Constraint", "MaxNorm", "MinMaxNorm", "NonNeg", "UnitNorm", "max_norm",
           "min_max_norm", "non_neg", "unit_norm", "get", "serialize", "deserialize"]

EPSILON = 1e-7


def _norms(w, axis):
    return prim.sqrt(prim.reduce_sum(prim.square(w), axis=axis, keepdims=True))


class Constraint:
    """Base class: override ``__call__(w)``; the base returns ``w`` unchanged."""

    def __call__(self, w: TensorLike) -> Any:
        return w

    def get_config(self) -> dict:
        return {}

    @classmethod
    def from_config(cls, config: dict) -> Constraint:
        """A constraint from :meth:`get_config` output."""
        from layerkit._core.serialization import init_kwargs

        return cls(**init_kwargs(cls, config))

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_config().items())
        return f"{type(self).__name__}({args})"


class MaxNorm(Constraint):
    """Scale the weight vectors along ``axis`` whose norm exceeds ``max_value`` down to it:
    ``w * clip(n, 0, max_value) / (epsilon + n)`` with ``n`` the norms.

    Args:
        max_value: the largest norm allowed (default 2).
        axis: int or list of ints; the axes the norm is taken over (default 0).
    """

    def __init__(self, max_value: float = 2, axis: AxisLike = 0) -> None:
        self.max_value = max_value
        self.axis = axis

    def __call__(self, w: TensorLike) -> Any:
        norms = _norms(w, self.axis)
        desired = prim.clip_by_value(norms, 0.0, float(self.max_value))
        return prim.multiply(w, prim.divide(desired, prim.add(norms, EPSILON)))

    def get_config(self) -> dict:
        return {"max_value": self.max_value, "axis": self.axis}


class NonNeg(Constraint):
    """Replace negative weights by 0: ``maximum(w, 0)``."""

    def __call__(self, w: TensorLike) -> Any:
        return prim.maximum(w, 0.0)


class UnitNorm(Constraint):
    """Scale the weight vectors along ``axis`` to norm 1: ``w / (epsilon + n)``.

    Args:
        axis: int or list of ints (default 0).
    """

    def __init__(self, axis: AxisLike = 0) -> None:
        self.axis = axis

    def __call__(self, w: TensorLike) -> Any:
        return prim.divide(w, prim.add(_norms(w, self.axis), EPSILON))

    def get_config(self) -> dict:
        return {"axis": self.axis}


class MinMaxNorm(Constraint):
    """Move the norms ``n`` of the weight vectors into ``[min_value, max_value]``:
    ``w * (rate * clip(n, min_value, max_value) + (1 - rate) * n) / (epsilon + n)``.

    Args:
        min_value: the norm bounds (default 0 and 1).
        max_value: the norm bounds (default 0 and 1).
        rate: 1 enforces the bounds at once; smaller values move towards them.
        axis: int or list of ints (default 0).
    """

    def __init__(self, min_value: float = 0.0, max_value: float = 1.0, rate: float = 1.0,
                 axis: AxisLike = 0) -> None:
        self.min_value, self.max_value, self.rate, self.axis = min_value, max_value, rate, axis

    def __call__(self, w: TensorLike) -> Any:
        norms = _norms(w, self.axis)
        clipped = prim.clip_by_value(norms, float(self.min_value), float(self.max_value))
        desired = prim.add(prim.multiply(float(self.rate), clipped),
                          prim.multiply(1.0 - float(self.rate), norms))
        return prim.multiply(w, prim.divide(desired, prim.add(norms, EPSILON)))

    def get_config(self) -> dict:
        return {"min_value": self.min_value, "max_value": self.max_value, "rate": self.rate,
                "axis": self.axis}


# Keras's lowercase aliases.
max_norm, min_max_norm, non_neg, unit_norm = MaxNorm, MinMaxNorm, NonNeg, UnitNorm
_BY_NAME = {"MaxNorm": MaxNorm, "MinMaxNorm": MinMaxNorm, "NonNeg": NonNeg,
            "UnitNorm": UnitNorm, "max_norm": MaxNorm, "min_max_norm": MinMaxNorm,
            "non_neg": NonNeg, "unit_norm": UnitNorm}


def get(identifier: Any) -> Any:
    """A constraint from a name, a config dict, a class, an instance or a callable.

    None stays None; a plain function ``fn(w) -> w'`` is used as is.

    Raises:
        ValueError: an unknown name or an uninterpretable identifier.
    """
    if identifier is None or isinstance(identifier, Constraint):
        return identifier
    if isinstance(identifier, str):
        cls = _BY_NAME.get(identifier)
        if cls is None:
            raise ValueError(f"unknown constraint {identifier!r}; known: "
                             f"{sorted(k for k in _BY_NAME if k.islower())}")
        return cls()
    if isinstance(identifier, dict):
        return deserialize(identifier)
    if isinstance(identifier, type) and issubclass(identifier, Constraint):
        return identifier()
    if callable(identifier):
        return identifier
    raise ValueError(f"cannot interpret {identifier!r} as a constraint")


def serialize(constraint: Any) -> Any:
    """Keras's config of a constraint (None stays None; see ``lk.saving``)."""
    from layerkit.saving.serialization_lib import serialize_keras_object

    return serialize_keras_object(constraint)


def deserialize(config: dict[str, Any], custom_objects: dict | None = None) -> Any:
    """A constraint from :func:`serialize` output (or Keras's)."""
    from layerkit.saving.serialization_lib import deserialize_keras_object

    return deserialize_keras_object(config, custom_objects, kind="constraints")
