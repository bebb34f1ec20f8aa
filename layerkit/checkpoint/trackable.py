"""The trackable protocol: how checkpoints walk objects without importing them.

An object takes part in checkpoints by defining any of:

- ``_checkpoint_children() -> dict[str, object]``: named sub-objects (layers,
  optimizers, iterators, nested checkpoints). Names become path segments.
- ``_checkpoint_variables() -> dict[str, Variable]``: its own variables by name.
- ``_checkpoint_state() -> nested dict/list of JSON values and ndarrays`` and
  ``_restore_checkpoint_state(state)``: non-variable state (RNG position, a dataset
  iterator's position and buffers). Objects with ``get_state()``/``set_state()`` (data
  iterators, ``lk.random.Generator``) are treated the same way.

Variables, lists, tuples and dicts found among the children are handled by the
checkpoint itself (a Variable child is saved as a variable of its parent).

Deferred restoration: when a checkpoint holds a value for a variable that its owner
has not created yet (an unbuilt layer, optimizer slots before the first step), the
checkpoint parks it with :func:`defer`; the owner calls :func:`take_deferred` when it
creates the variable, and assigns the value if one is returned.

This module imports nothing above the core.
"""
from __future__ import annotations

import numpy as np

from layerkit._core.variable import Variable

_PENDING_ATTR = "_lk_deferred_restores"


def defer(owner, name: str, value: np.ndarray, on_apply=None, source=None) -> None:
    """Park ``value`` for variable ``name`` of ``owner`` until it is created.

    ``source`` is ``(checkpoint file, path in the checkpoint)``, named by the error
    :func:`apply_deferred` raises when the created variable does not fit the value.
    """
    pending = owner.__dict__.setdefault(_PENDING_ATTR, {})
    pending[name] = (value, on_apply, source)


def take_deferred(owner, name: str):
    """Pop the parked value for ``owner``'s variable ``name`` (None if there is none)."""
    pending = getattr(owner, "__dict__", {}).get(_PENDING_ATTR)
    if not pending or name not in pending:
        return None
    value, on_apply, _ = pending.pop(name)
    if on_apply is not None:
        on_apply(name)
    return value


def has_deferred(owner, name: str) -> bool:
    """Whether a restore parked a value for ``owner``'s variable ``name``."""
    pending = getattr(owner, "__dict__", {}).get(_PENDING_ATTR)
    return bool(pending) and name in pending


def apply_deferred(owner, name: str, variable) -> bool:
    """Assign the parked value for ``owner``'s variable ``name`` to ``variable``, if any.

    Returns:
        whether a value was assigned.

    Raises:
        CheckpointError: the value's shape or dtype does not match ``variable`` (a model
            built differently from the saved one); the error names the checkpoint file
            and the path, and the value stays parked.
    """
    pending = getattr(owner, "__dict__", {}).get(_PENDING_ATTR)
    if not pending or name not in pending:
        return False
    value, _, source = pending[name]
    shape, dtype = tuple(variable.shape), np.dtype(variable.dtype)
    if value.shape != shape or value.dtype != dtype:
        from layerkit.checkpoint.format import CheckpointError
        path, key = source if source is not None else (None, name)
        raise CheckpointError(path, f"'{key}': the checkpoint has {value.dtype.name} "
                                    f"{value.shape}, the variable created for it is "
                                    f"{dtype.name} {shape}")
    value = take_deferred(owner, name)
    if type(variable).assign is Variable.assign:
        # Set the buffer, not assign(): a variable created inside an lk.function trace
        # (a layer built or optimizer slots made on the first call) would get an assign
        # node that the graph replays on every call, resetting it to the checkpoint.
        variable._v = np.array(value, dtype=dtype, copy=True)
    else:
        variable.assign(value)
    return True


def children(obj) -> dict:
    fn = getattr(obj, "_checkpoint_children", None)
    return dict(fn()) if fn is not None else {}


def variables(obj) -> dict:
    fn = getattr(obj, "_checkpoint_variables", None)
    return dict(fn()) if fn is not None else {}


def has_state(obj) -> bool:
    """Whether ``obj`` carries non-variable state (``_checkpoint_state`` or get/set_state)."""
    if hasattr(obj, "_checkpoint_state"):
        return hasattr(obj, "_restore_checkpoint_state")
    return callable(getattr(obj, "get_state", None)) and callable(getattr(obj, "set_state", None))


def get_state(obj):
    fn = getattr(obj, "_checkpoint_state", None) or getattr(obj, "get_state", None)
    return fn() if fn is not None else None


def set_state(obj, state) -> None:
    fn = getattr(obj, "_restore_checkpoint_state", None) or obj.set_state
    fn(state)
