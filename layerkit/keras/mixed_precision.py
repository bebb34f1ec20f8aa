"""``lk.keras.mixed_precision``: the policy API, for programs that set it.

layerkit computes in the layer's own dtype; a global policy of ``"float32"`` or
``"float64"`` sets the default dtype of new layers (as ``backend.set_floatx``). Mixed
policies (``"mixed_float16"``, ``"mixed_bfloat16"``) are refused with an error, since
NumPy on a CPU gains nothing from half-precision compute.
"""
from __future__ import annotations

from typing import Any

from layerkit.keras import backend

__all__ = ["DTypePolicy", "Policy", "global_policy", "set_global_policy"]


class DTypePolicy:
    """A dtype policy: ``name`` is both the compute and the variable dtype."""

    def __init__(self, name: str) -> None:
        if name in ("mixed_float16", "mixed_bfloat16"):
            raise ValueError(f"mixed_precision: the policy {name!r} is not supported by "
                             f"layerkit (CPU NumPy computes float16 no faster); use "
                             f"'float32'")
        backend._check_float(name, "mixed_precision.DTypePolicy")
        self.name = self.compute_dtype = self.variable_dtype = name

    def __repr__(self) -> str:
        return f'<DTypePolicy "{self.name}">'


Policy = DTypePolicy


def set_global_policy(policy: Any) -> None:
    """Set the default dtype of new layers from a policy or its name."""
    name = policy.name if isinstance(policy, DTypePolicy) else str(policy)
    backend.set_floatx(DTypePolicy(name).name)


def global_policy() -> DTypePolicy:
    """The policy new layers get (from ``backend.floatx()``)."""
    return DTypePolicy(backend.floatx())
