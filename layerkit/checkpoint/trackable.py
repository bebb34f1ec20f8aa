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
checkpoint itself (a Variable child is saved as a variable of its parent, a container's
elements are its children ``0``, ``1``, ... or its keys).

Deferred restoration: when a checkpoint holds a value for something that does not exist
yet (a variable of an unbuilt layer, optimizer slots before the first step, a sublayer
created in ``build``, a list that is filled later), the restore parks the value on the
nearest existing object along its path (:func:`park`). The value is applied when the
thing appears: owners that create variables call :func:`apply_deferred` (or
:func:`take_deferred`); attribute assignment on layers and checkpoints, and changes to
the :class:`TrackedList` / :class:`TrackedDict` containers they hold, call
:func:`settle`, which assigns what now exists and moves the rest down to the newly
attached objects.

This module imports nothing above the core.
"""
from __future__ import annotations

import weakref

import numpy as np

from layerkit._core.variable import Variable, replace_value
from layerkit.checkpoint.format import CheckpointError

_PENDING_ATTR = "_lk_deferred_restores"
STATE = None   # the "name" under which an object's non-variable state is parked


class Parked:
    """A value held for a variable (or an object's state) that does not exist yet.

    Attributes:
        value: the array (or state), or a zero-argument callable producing it (read
            from the checkpoint file only when it is needed).
        source: ``(checkpoint file, path in the checkpoint)`` for error messages.
        exact: parked on the object that will own it (rather than on an ancestor).
        done: applied (or taken).
    """

    __slots__ = ("value", "on_apply", "source", "exact", "done")

    def __init__(self, value, on_apply=None, source=None) -> None:
        self.value = value
        self.on_apply = on_apply
        self.source = source
        self.exact = True
        self.done = False

    def get(self):
        if callable(self.value):
            self.value = self.value()
        return self.value

    def finish(self, name) -> None:
        self.done = True
        if self.on_apply is not None:
            self.on_apply(name)


def _pending(owner, create: bool = False) -> dict | None:
    d = getattr(owner, "__dict__", None)
    if d is None:
        return None
    pending = d.get(_PENDING_ATTR)
    if pending is None and create:
        pending = d[_PENDING_ATTR] = {}
    return pending


def can_park(obj) -> bool:
    """Whether deferred values can be parked on ``obj`` (it has a ``__dict__``)."""
    return hasattr(obj, "__dict__") and not isinstance(obj, Variable)


def park(owner, segs: tuple, name, record: Parked) -> None:
    """Hold ``record`` on ``owner`` for the variable ``name`` (or the state, if
    ``name`` is :data:`STATE`) of the object at the relative path ``segs`` below it."""
    record.exact = not segs
    _pending(owner, create=True)[(tuple(segs), name)] = record


def defer(owner, name: str, value: np.ndarray, on_apply=None, source=None) -> None:
    """Park ``value`` for variable ``name`` of ``owner`` until it is created.

    ``source`` is ``(checkpoint file, path in the checkpoint)``, named by the error
    :func:`apply_deferred` raises when the created variable does not fit the value.
    """
    park(owner, (), name, Parked(value, on_apply, source))


def take_deferred(owner, name: str):
    """Pop the parked value for ``owner``'s variable ``name`` (None if there is none)."""
    pending = _pending(owner)
    record = pending.pop(((), name), None) if pending else None
    if record is None:
        return None
    value = record.get()
    record.finish(name)
    return value


def has_deferred(owner, name: str) -> bool:
    """Whether a restore parked a value for ``owner``'s variable ``name``."""
    pending = _pending(owner)
    return bool(pending) and ((), name) in pending


def _assign(record: Parked, variable) -> None:
    value = record.get()
    shape, dtype = tuple(variable.shape), np.dtype(variable.dtype)
    if value.shape != shape or value.dtype != dtype:
        path, key = record.source if record.source is not None else (None, variable.name)
        raise CheckpointError(path, f"'{key}': the checkpoint has {value.dtype.name} "
                                    f"{value.shape}, the variable created for it is "
                                    f"{dtype.name} {shape}")
    if type(variable).assign is Variable.assign:
        # Set the buffer, not assign(): a variable created inside an lk.function trace
        # (a layer built or optimizer slots made on the first call) would get an assign
        # node that the graph replays on every call, resetting it to the checkpoint.
        replace_value(variable, np.array(value, dtype=dtype, copy=True))
    else:
        variable.assign(value)


def apply_deferred(owner, name: str, variable) -> bool:
    """Assign the parked value for ``owner``'s variable ``name`` to ``variable``, if any.

    Returns:
        whether a value was assigned.

    Raises:
        CheckpointError: the value's shape or dtype does not match ``variable`` (a model
            built differently from the saved one); the error names the checkpoint file
            and the path, and the value stays parked.
    """
    pending = _pending(owner)
    record = pending.get(((), name)) if pending else None
    if record is None:
        return False
    _assign(record, variable)
    del pending[((), name)]
    record.finish(name)
    return True


def settle(owner) -> None:
    """Apply the values parked on ``owner`` whose variable or object now exists.

    Called after something was attached to ``owner`` (an attribute, a list element).
    A value whose object now exists but whose variable does not yet (an unbuilt layer)
    moves down to that object, which applies it when it creates the variable.

    Raises:
        CheckpointError: a value does not fit the variable now found for it (it stays
            parked).
    """
    pending = _pending(owner)
    if not pending:
        return
    kids = own = None   # computed once per call: a model being built settles often
    for (segs, name), record in list(pending.items()):
        if pending.get((segs, name)) is not record:
            continue   # handled meanwhile (re-entrant settle)
        obj, depth = owner, 0
        if segs:
            kids = children(owner) if kids is None else kids
            child = kids.get(segs[0])
            if child is None or isinstance(child, Variable):
                continue
            obj, depth = child, 1
            while depth < len(segs):
                child = children(obj).get(segs[depth])
                if child is None or isinstance(child, Variable):
                    break
                obj, depth = child, depth + 1
        rest = segs[depth:]
        if rest or name is STATE:
            if rest and depth and can_park(obj):   # deeper than before: move it down
                del pending[(segs, name)]
                park(obj, rest, name, record)
            elif not rest and depth and has_state(obj):
                del pending[(segs, name)]
                set_state(obj, record.get())
                record.finish(name)
            continue
        if obj is owner:
            own = own_variables(owner) if own is None else own
            var = own.get(name)
        else:
            var = own_variables(obj).get(name)
        if var is not None:
            _assign(record, var)
            del pending[(segs, name)]
            record.finish(name)
        elif obj is not owner and can_park(obj):   # it will create the variable later
            del pending[(segs, name)]
            park(obj, (), name, record)


def clear_parked(owner) -> None:
    """Drop every value parked on ``owner`` (a newer restore replaces them)."""
    d = getattr(owner, "__dict__", None)
    if d is not None and d.get(_PENDING_ATTR):
        d[_PENDING_ATTR] = {}


# ---- containers that report additions --------------------------------------------------
def track(value, owner):
    """``value`` with plain lists and dicts (also nested ones) replaced by
    :class:`TrackedList` / :class:`TrackedDict` copies that call :func:`settle` on
    ``owner`` when something is added. Other values are returned unchanged."""
    t = type(value)
    if t is list or t is dict:
        return (TrackedList if t is list else TrackedDict)(value, owner=owner)
    if t is TrackedList or t is TrackedDict:
        value._add_owner(owner)
    return value


class _Tracking:
    __slots__ = ()

    def _add_owner(self, owner) -> None:
        if owner is not None and not any(r() is owner for r in self._owners):
            self._owners = self._owners + (weakref.ref(owner),)

    def _wrap(self, value):
        for ref in self._owners:
            owner = ref()
            if owner is not None:
                value = track(value, owner)
        return value

    def _changed(self) -> None:
        for ref in self._owners:
            owner = ref()
            if owner is not None:
                settle(owner)


class TrackedList(_Tracking, list):
    """A list held by a layer or checkpoint: elements added later (``append``, ``extend``,
    ``insert``, item assignment, ``+=``) are restored from a checkpoint restored before
    (deferred restoration), as in Keras and TensorFlow. Otherwise a plain list."""

    __slots__ = ("_owners",)

    def __init__(self, iterable=(), owner=None) -> None:
        self._owners = ()
        self._add_owner(owner)
        list.__init__(self, (self._wrap(v) for v in iterable))

    def append(self, value) -> None:
        list.append(self, self._wrap(value))
        self._changed()

    def extend(self, values) -> None:
        list.extend(self, [self._wrap(v) for v in values])
        self._changed()

    def insert(self, index, value) -> None:
        list.insert(self, index, self._wrap(value))
        self._changed()

    def __setitem__(self, index, value) -> None:
        if isinstance(index, slice):
            value = [self._wrap(v) for v in value]
        else:
            value = self._wrap(value)
        list.__setitem__(self, index, value)
        self._changed()

    def __iadd__(self, values):
        self.extend(values)
        return self

    def __reduce_ex__(self, protocol):
        return list, (list(self),)

    def __copy__(self) -> list:
        return list(self)


class TrackedDict(_Tracking, dict):
    """A dict held by a layer or checkpoint: entries added later are restored from a
    checkpoint restored before (see :class:`TrackedList`). Otherwise a plain dict."""

    __slots__ = ("_owners",)

    def __init__(self, *args, owner=None, **kwargs) -> None:
        self._owners = ()
        self._add_owner(owner)
        dict.__init__(self, {k: self._wrap(v) for k, v in dict(*args, **kwargs).items()})

    def __setitem__(self, key, value) -> None:
        dict.__setitem__(self, key, self._wrap(value))
        self._changed()

    def update(self, *args, **kwargs) -> None:
        dict.update(self, {k: self._wrap(v) for k, v in dict(*args, **kwargs).items()})
        self._changed()

    def setdefault(self, key, default=None):
        if key not in self:
            self[key] = default
        return dict.__getitem__(self, key)

    def __ior__(self, other):
        self.update(other)
        return self

    def __reduce_ex__(self, protocol):
        return dict, (dict(self),)

    def __copy__(self) -> dict:
        return dict(self)


# ---- walking objects ----------------------------------------------------------------------
def children(obj) -> dict:
    """Named sub-objects: a container's elements (by index or key) or the protocol's."""
    if isinstance(obj, dict):
        return {str(k): v for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return {str(i): v for i, v in enumerate(obj)}
    fn = getattr(obj, "_checkpoint_children", None)
    return dict(fn()) if fn is not None else {}


def variables(obj) -> dict:
    """``obj``'s own variables by name (``_checkpoint_variables()``; empty if none)."""
    fn = getattr(obj, "_checkpoint_variables", None)
    return dict(fn()) if fn is not None else {}


def own_variables(obj) -> dict:
    """The variables saved under ``obj``: its own, plus Variable children."""
    out = variables(obj)
    out.update((k, v) for k, v in children(obj).items() if isinstance(v, Variable))
    return out


def has_state(obj) -> bool:
    """Whether ``obj`` carries non-variable state (``_checkpoint_state`` or get/set_state)."""
    if hasattr(obj, "_checkpoint_state"):
        return hasattr(obj, "_restore_checkpoint_state")
    return callable(getattr(obj, "get_state", None)) and callable(getattr(obj, "set_state", None))


def get_state(obj):
    """``obj``'s non-variable state (``_checkpoint_state()`` or ``get_state()``)."""
    fn = getattr(obj, "_checkpoint_state", None) or getattr(obj, "get_state", None)
    return fn() if fn is not None else None


def set_state(obj, state) -> None:
    """Give ``obj`` back a state from :func:`get_state`."""
    fn = getattr(obj, "_restore_checkpoint_state", None) or obj.set_state
    fn(state)
