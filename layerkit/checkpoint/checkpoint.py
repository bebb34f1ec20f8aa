"""``lk.Checkpoint``: save and restore object graphs by attribute path.

A checkpoint walks its objects through the trackable protocol (see ``trackable.py``):
named children, own variables, and non-variable state. Every variable is stored under
its path (``model/dense/kernel``, ``optimizer/m/0``), so a model rebuilt by the same
code restores whatever order its variables were created in. Restores read and verify
everything before assigning anything; values for variables that do not exist yet are
parked on their owner (:func:`trackable.defer`) and applied when it creates them.
"""
from __future__ import annotations

import base64
import os
import warnings

import numpy as np

from layerkit._core.context import RECORDERS
from layerkit._core.tensor import Tensor
from layerkit._core.variable import KEEPERS, Variable
from layerkit.checkpoint import index as _index
from layerkit.checkpoint import trackable
from layerkit.checkpoint.format import (
    CheckpointError,
    CheckpointNotFoundError,
    CheckpointReader,
    write_file,
)
from layerkit.ops import random as _random

__all__ = ["Checkpoint", "CheckpointLoadStatus", "GlobalRNG"]

_STATE_TAG = ".state"
_META_KIND = "layerkit.Checkpoint"


# ---- the object graph ------------------------------------------------------------------------
def _is_variable(x) -> bool:
    return isinstance(x, Variable)


def _is_trackable(x) -> bool:
    return (_is_variable(x) or isinstance(x, (list, tuple, dict)) or trackable.has_state(x)
            or hasattr(x, "_checkpoint_children") or hasattr(x, "_checkpoint_variables"))


def _children(obj) -> dict:
    if isinstance(obj, dict):
        return {str(k): v for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return {str(i): v for i, v in enumerate(obj)}
    return trackable.children(obj)


def _key(segs: tuple, name: str | None = None) -> str:
    return "/".join(segs + ((name,) if name is not None else ()))


class _Graph:
    """Variables, objects and stateful objects reachable from a root, by path.

    Depth-first in the children's own order; an object reached twice is visited once
    (first path wins), so cycles are harmless. A shared Variable keeps every path.
    """

    def __init__(self, root) -> None:
        self.variables: dict[tuple, Variable] = {}   # (object segs, name) -> Variable
        self.objects: dict[tuple, object] = {}       # object segs -> object
        self.stateful: dict[tuple, object] = {}      # object segs -> object with state
        seen = set()
        stack = [((), root)]
        while stack:
            segs, obj = stack.pop()
            if id(obj) in seen:
                continue
            seen.add(id(obj))
            self.objects[segs] = obj
            if trackable.has_state(obj):
                self.stateful[segs] = obj
            for name, var in trackable.variables(obj).items():
                self._add_var(segs, str(name), var)
            later = []
            for name, child in _children(obj).items():
                if child is None:
                    continue
                if _is_variable(child):
                    self._add_var(segs, name, child)
                elif _is_trackable(child):
                    later.append((segs + (name,), child))
                else:
                    raise TypeError(
                        f"Checkpoint: '{_key(segs, name)}' is a {type(child).__name__}, which "
                        f"cannot be checkpointed (expected a Variable, Layer, Model, optimizer, "
                        f"an object with get_state()/set_state(), or a list/dict of them)")
            stack.extend(reversed(later))

    def _add_var(self, segs: tuple, name: str, var) -> None:
        if not _is_variable(var):
            raise TypeError(f"Checkpoint: '{_key(segs, name)}' is listed as a variable but is "
                            f"a {type(var).__name__}, not an lk.Variable")
        self.variables[(segs, name)] = var


# ---- non-variable state: JSON with arrays stored in the data area ---------------------------
_MARKERS = frozenset({"__ndarray__", "__tensor__", "__npscalar__", "__bytes__", "__tuple__",
                      "__dict__"})


def _encode(value, arrays: list, where: str):
    """JSON-able form of a state value; arrays are appended to ``arrays`` and referenced."""
    if isinstance(value, np.generic):   # before float: np.float64 subclasses float
        arrays.append(np.asarray(value))
        return {"__npscalar__": len(arrays) - 1}
    if value is None or isinstance(value, (bool, str, int, float)):
        return value
    if isinstance(value, np.ndarray):
        arrays.append(value)
        return {"__ndarray__": len(arrays) - 1}
    if isinstance(value, Tensor):
        arrays.append(np.asarray(value._v))
        return {"__tensor__": len(arrays) - 1}
    if isinstance(value, (bytes, bytearray)):
        return {"__bytes__": base64.b64encode(bytes(value)).decode("ascii")}
    if isinstance(value, tuple):
        return {"__tuple__": [_encode(v, arrays, where) for v in value]}
    if isinstance(value, list):
        return [_encode(v, arrays, where) for v in value]
    if isinstance(value, dict):
        if all(isinstance(k, str) for k in value) and not _MARKERS.intersection(value):
            return {k: _encode(v, arrays, where) for k, v in value.items()}
        return {"__dict__": [[_encode(k, arrays, where), _encode(v, arrays, where)]
                             for k, v in value.items()]}
    raise TypeError(
        f"Checkpoint: the state of '{where}' contains a {type(value).__name__}; state may hold "
        f"only None, bool, int, float, str, bytes, tuples, lists, dicts, NumPy arrays and "
        f"Tensors")


def _decode(value, arrays: list):
    if isinstance(value, list):
        return [_decode(v, arrays) for v in value]
    if not isinstance(value, dict):
        return value
    if len(value) == 1:
        (tag, body), = value.items()
        if tag == "__ndarray__":
            return arrays[body]
        if tag == "__tensor__":
            return Tensor(arrays[body])
        if tag == "__npscalar__":
            return arrays[body][()]
        if tag == "__bytes__":
            return base64.b64decode(body)
        if tag == "__tuple__":
            return tuple(_decode(v, arrays) for v in body)
        if tag == "__dict__":
            out = {}
            for k, v in body:
                k = _decode(k, arrays)
                out[tuple(k) if isinstance(k, list) else k] = _decode(v, arrays)
            return out
    return {k: _decode(v, arrays) for k, v in value.items()}


def _state_array_key(segs: tuple, i: int) -> str:
    return _key(segs, f"{_STATE_TAG}/{i}")


# ---- restore status ---------------------------------------------------------------------------
class CheckpointLoadStatus:
    """What a restore matched, with assertions about it.

    Attributes:
        path: the file restored from (None for ``restore(None)``).
        matched: paths assigned from the file (variables and object states).
        missing: paths of existing variables/stateful objects the file has no value for.
        unexpected: paths in the file whose object does not exist in the live graph.
        pending: deferred paths still waiting for their variable to be created.
    """

    def __init__(self, path, matched, missing, unexpected) -> None:
        self.path = path
        self.matched = list(matched)
        self.missing = list(missing)
        self.unexpected = list(unexpected)
        self._pending: dict[str, bool] = {}
        self._expect_partial = False
        self._checked = False

    @property
    def pending(self) -> list:
        return [k for k, waiting in self._pending.items() if waiting]

    def _deferred_applied(self, key: str) -> None:
        if key in self._pending:
            self._pending[key] = False
            self.matched.append(key)

    def report(self) -> str:
        """A multi-line summary naming every missing, unexpected and pending path."""
        lines = [f"restore from '{self.path}': {len(self.matched)} matched"]
        for title, items in (("missing from the checkpoint", self.missing),
                             ("in the checkpoint but not in the objects", self.unexpected),
                             ("deferred, variable not created yet", self.pending)):
            if items:
                lines.append(f"  {title} ({len(items)}): " + ", ".join(items))
        return "\n".join(lines)

    def _fail(self, what: str):
        raise AssertionError(f"{what}\n{self.report()}")

    def assert_consumed(self) -> CheckpointLoadStatus:
        """Every value in the file was used and every existing variable was restored.

        Raises:
            AssertionError: something is missing, unexpected or still deferred.
        """
        self._checked = True
        if self.missing or self.unexpected or self.pending:
            self._fail("Checkpoint restore did not consume everything")
        return self

    def assert_existing_objects_matched(self) -> CheckpointLoadStatus:
        """Every variable and stateful object that exists now got a value.

        Values for objects that do not exist (or variables not created yet) are allowed.

        Raises:
            AssertionError: an existing variable or object had no value in the file.
        """
        self._checked = True
        if self.missing:
            self._fail("Checkpoint restore left existing objects unmatched")
        return self

    def assert_nontrivial_match(self) -> CheckpointLoadStatus:
        """At least one value was restored (or is waiting to be)."""
        self._checked = True
        if not self.matched and not self.pending:
            self._fail("Checkpoint restore matched nothing")
        return self

    def expect_partial(self) -> CheckpointLoadStatus:
        """Silence the warning about checkpoint values that were not used."""
        self._expect_partial = True
        return self

    def __repr__(self) -> str:
        return (f"<CheckpointLoadStatus '{self.path}' matched={len(self.matched)} "
                f"missing={len(self.missing)} unexpected={len(self.unexpected)} "
                f"pending={len(self.pending)}>")

    def __del__(self) -> None:
        if self.unexpected and not (self._expect_partial or self._checked) and warnings:
            warnings.warn(
                f"Checkpoint restore from '{self.path}' left {len(self.unexpected)} value(s) "
                f"unused: {', '.join(self.unexpected[:10])}"
                f"{' ...' if len(self.unexpected) > 10 else ''}. Call expect_partial() on "
                f"the status if this is intended.", UserWarning, stacklevel=2)


class _InitializationOnlyStatus(CheckpointLoadStatus):
    """Status of ``restore(None)``: nothing was restored (a fresh start)."""

    def __init__(self) -> None:
        super().__init__(None, (), (), ())

    def assert_consumed(self):
        raise AssertionError("no checkpoint was restored (restore(None))")

    assert_existing_objects_matched = assert_nontrivial_match = assert_consumed


# ---- the global RNG as a trackable -----------------------------------------------------------
class GlobalRNG:
    """Checkpoint the state of layerkit's global random generator.

    ``lk.random.set_seed`` replaces the global generator, so tracking the generator
    object itself would go stale; this wrapper always reads and writes the current one.
    Include it to make dropout, shuffling and initializers that draw seeds from the
    global generator continue exactly after a restore. A model may be built before or
    after the restore: weights created after it take their restored values without
    running their initializers, so they draw nothing from the restored generator.

    Example:
        >>> import layerkit as lk
        >>> ckpt = lk.Checkpoint(rng=GlobalRNG())   # usually with model=..., optimizer=...
        >>> ckpt
        <Checkpoint ['rng'] save_counter=0>
    """

    def get_state(self) -> dict:
        return _random.global_generator().get_state()

    def set_state(self, state: dict) -> None:
        _random.global_generator().set_state(state)

    def __repr__(self) -> str:
        return "<GlobalRNG>"


# ---- Checkpoint -------------------------------------------------------------------------------
class Checkpoint:
    """Save and restore models, layers, optimizers, Variables, iterators and more.

    Objects are tracked by the keyword names given here and, below them, by attribute
    path, so a checkpoint restores into objects rebuilt by the same code regardless of
    the order in which their variables are created. Anything implementing the trackable
    protocol works, as do Variables, objects with ``get_state()``/``set_state()``
    (dataset iterators, ``lk.random.Generator``, :class:`GlobalRNG`), lists/dicts of
    them and nested Checkpoints.

    Args:
        **objects: the objects to track, by name.

    Attributes:
        save_counter: an int64 Variable counting :meth:`save` calls; saved and restored
            with the checkpoint, so numbering continues after a restore.

    Example:
        >>> import os, tempfile, layerkit as lk
        >>> v = lk.Variable([1.0, 2.0])
        >>> ckpt = lk.Checkpoint(v=v)     # usually model=..., optimizer=..., rng=GlobalRNG()
        >>> path = ckpt.save(os.path.join(tempfile.mkdtemp(), "ckpt"))
        >>> os.path.basename(path)
        'ckpt-1'
        >>> _ = v.assign([0.0, 0.0])
        >>> ckpt.restore(path).assert_consumed()
        <CheckpointLoadStatus '...ckpt-1' matched=2 missing=0 unexpected=0 pending=0>
        >>> v.numpy()
        array([1., 2.], dtype=float32)
    """

    def __init__(self, **objects) -> None:
        object.__setattr__(self, "_objects", {})
        object.__setattr__(self, "_save_counter",
                           Variable(np.int64(0), trainable=False, name="save_counter"))
        for name, obj in objects.items():
            setattr(self, name, obj)

    # ---- tracking ----
    def __setattr__(self, name: str, value) -> None:
        if name.startswith("_"):
            object.__setattr__(self, name, value)
            return
        if name == "save_counter":
            raise ValueError("Checkpoint: 'save_counter' is reserved for the save counter")
        if not _is_trackable(value):
            raise TypeError(
                f"Checkpoint: '{name}' is a {type(value).__name__}, which cannot be "
                f"checkpointed (expected a Variable, Layer, Model, optimizer, an object with "
                f"get_state()/set_state(), a Checkpoint, or a list/dict of them)")
        if _is_variable(value):   # a value restored before this variable was attached
            trackable.apply_deferred(self, name, value)
        self._objects[name] = value

    def __getattr__(self, name: str):
        objects = self.__dict__.get("_objects", {})
        if name in objects:
            return objects[name]
        raise AttributeError(f"Checkpoint has no tracked object '{name}'")

    @property
    def save_counter(self) -> Variable:
        return self._save_counter

    def _checkpoint_children(self) -> dict:
        return dict(self._objects)

    def _checkpoint_variables(self) -> dict:
        return {"save_counter": self._save_counter}

    # ---- saving ----
    def write(self, path) -> str:
        """Write every tracked value to ``path`` atomically (the counter is unchanged).

        Returns:
            ``path``.

        Raises:
            TypeError: an object's state holds a value that cannot be stored.
            OSError: the file cannot be written; an existing file at ``path`` is intact.
        """
        path = os.fspath(path)
        graph = _Graph(self)
        tensors, variables, states = {}, {}, {}
        for (segs, name), var in graph.variables.items():
            key = _key(segs, name)
            if key in tensors:
                raise ValueError(f"Checkpoint: two different values map to the path '{key}'")
            tensors[key] = var._v
            variables[key] = {"object": list(segs), "name": name}
        for segs, obj in graph.stateful.items():
            where = _key(segs) or "<root>"
            arrays: list = []
            value = _encode(trackable.get_state(obj), arrays, where)
            keys = []
            for i, a in enumerate(arrays):
                k = _state_array_key(segs, i)
                if k in tensors:
                    raise ValueError(f"Checkpoint: two different values map to the path '{k}'")
                tensors[k] = a
                keys.append(k)
            states[where] = {"object": list(segs), "value": value, "arrays": keys}
        meta = {"kind": _META_KIND, "variables": variables, "states": states}
        write_file(path, tensors, meta)
        return path

    def save(self, file_prefix) -> str:
        """Increment :attr:`save_counter` and write ``{file_prefix}-{save_counter}``.

        Also records the file as the latest checkpoint of its directory, so
        :func:`layerkit.latest_checkpoint` finds it.

        Returns:
            the path written.
        """
        path = self._save_numbered(file_prefix, None)
        _index.record_save(path)
        return path

    def _save_numbered(self, file_prefix, number) -> str:
        self._save_counter.assign_add(np.int64(1))
        n = int(self._save_counter._v) if number is None else int(number)
        try:
            return self.write(f"{os.fspath(file_prefix)}-{n}")
        except BaseException:
            self._save_counter.assign_sub(np.int64(1))
            raise

    # ---- restoring ----
    def restore(self, save_path) -> CheckpointLoadStatus:
        """Restore from a file, the latest checkpoint of a directory, or nothing (None).

        Everything is read and verified before anything is assigned. Values for
        variables whose owner exists but has not created them yet are applied when it
        does (an unbuilt model, optimizer slots before the first step).

        Args:
            save_path: a checkpoint file, a directory (its latest checkpoint is used), or
                None (nothing is restored; the status' assertions fail).

        Returns:
            a :class:`CheckpointLoadStatus`.

        Raises:
            CheckpointError: the file is missing, not a checkpoint, truncated or corrupted,
                or a stored value's shape/dtype does not match its variable. Nothing has
                been assigned when this is raised.
        """
        if save_path is None:
            return _InitializationOnlyStatus()
        save_path = os.fspath(save_path)
        if os.path.isdir(save_path):
            found = _index.latest_checkpoint(save_path)
            if found is None:
                raise CheckpointNotFoundError(save_path, "the directory holds no checkpoint")
            save_path = found
        return self.read(save_path)

    def read(self, save_path) -> CheckpointLoadStatus:
        """Restore from one checkpoint file (see :meth:`restore`)."""
        save_path = os.fspath(save_path)
        with CheckpointReader(save_path) as reader:
            return _restore(self, reader)

    def __repr__(self) -> str:
        return f"<Checkpoint {sorted(self._objects)} save_counter={int(self._save_counter._v)}>"


def _restore(root, reader: CheckpointReader, skip_mismatch: bool = False
             ) -> CheckpointLoadStatus:
    """Restore ``root``'s object graph from ``reader``. With ``skip_mismatch``
    (``Model.load_weights``), variables whose shape or dtype differ from the file's keep
    their values, with a warning, instead of failing the whole restore."""
    path = reader.path
    meta = reader.meta
    if not isinstance(meta, dict) or meta.get("kind") != _META_KIND:
        raise CheckpointError(path, "holds arrays but no layerkit object graph (not written "
                                    "by lk.Checkpoint)")
    try:
        saved_vars = {k: (tuple(v["object"]), v["name"]) for k, v in meta["variables"].items()}
        saved_states = {k: (tuple(v["object"]), v["value"], list(v["arrays"]))
                        for k, v in meta["states"].items()}
    except (KeyError, TypeError, AttributeError) as e:
        raise CheckpointError(path, f"the object graph in the manifest is malformed ({e!r})") \
            from None
    for k in list(saved_vars) + [a for s in saved_states.values() for a in s[2]]:
        if k not in reader:
            raise CheckpointError(path, f"the object graph refers to tensor '{k}', which the "
                                        f"file does not contain")
    graph = _Graph(root)

    # ---- 1. match by path; check shapes and dtypes before reading anything ----
    assign, defer, unexpected, problems = {}, {}, [], []
    for key, (segs, name) in saved_vars.items():
        var = graph.variables.get((segs, name))
        if var is not None:
            shape, dtype = reader.shape(key), reader.dtype(key)
            if tuple(var.shape) != shape or np.dtype(var.dtype) != dtype.newbyteorder("="):
                problems.append(f"'{key}': the checkpoint has {dtype.name} {shape}, the "
                                f"variable is {np.dtype(var.dtype).name} {tuple(var.shape)}")
            else:
                assign[key] = var
        elif segs in graph.objects and hasattr(graph.objects[segs], "__dict__"):
            defer[key] = (graph.objects[segs], name)
        else:
            unexpected.append(key)
    if problems and skip_mismatch:
        warnings.warn(f"checkpoint '{path}': skipped {len(problems)} variable(s) whose "
                      f"shape/dtype differ:\n  " + "\n  ".join(problems), stacklevel=3)
    elif problems:
        raise CheckpointError(path, "shape/dtype mismatch, nothing was restored:\n  "
                              + "\n  ".join(problems))
    set_states = {}
    for where, (segs, value, keys) in saved_states.items():
        if segs in graph.stateful:
            set_states[where] = (graph.stateful[segs], value, keys)
        else:
            unexpected.append(where)
    saved_var_ids = {(segs, name) for segs, name in saved_vars.values()}
    missing = [_key(segs, name) for (segs, name) in graph.variables
               if (segs, name) not in saved_var_ids and (segs, name) != ((), "save_counter")]
    missing += [_key(segs) or "<root>" for segs in graph.stateful
                if (_key(segs) or "<root>") not in saved_states]

    # ---- 2. read and verify every needed array ----
    # Object states are read separately so that a long-lived iterator state array never
    # keeps a slab of variable memory alive.
    values = reader.read_many(list(assign) + list(defer))
    values.update(reader.read_many([k for s in set_states.values() for k in s[2]]))
    decoded = {where: _decode(value, [values[k] for k in keys])
               for where, (_, value, keys) in set_states.items()}

    # ---- 3. assign, undoing everything if an object rejects its state ----
    old_values = [(var, var._v) for var in assign.values()]
    old_states = []
    try:
        for key, var in assign.items():
            _assign_fresh(var, values[key])
        for where, (obj, _, _) in set_states.items():
            old_states.append((obj, trackable.get_state(obj)))
            trackable.set_state(obj, decoded[where])
    except BaseException as e:
        for var, old in old_values:
            var._v = old
        for obj, state in old_states:
            trackable.set_state(obj, state)
        if isinstance(e, Exception) and old_states:
            e.add_note(f"while restoring the state of '{where}' from checkpoint '{path}' "
                       f"(nothing was restored)")
        raise
    status = CheckpointLoadStatus(path, list(assign) + list(set_states), missing, unexpected)
    for key, (owner, name) in defer.items():
        status._pending[key] = True
        trackable.defer(owner, name, values[key],
                        on_apply=lambda _name, key=key: status._deferred_applied(key),
                        source=(path, key))
    return status


def _assign_fresh(var: Variable, value: np.ndarray) -> None:
    # ``value`` was just read into a new array that nothing else references, so it can
    # become the variable's buffer directly: Variable.assign would copy 1x the model again.
    # Under an active recorder (an lk.function trace) assign() must see the update, and
    # so must tapes that still hold ops reading the variable (KEEPERS).
    if type(var).assign is Variable.assign and not RECORDERS and not KEEPERS:
        var._v = value
    else:
        var.assign(value)
