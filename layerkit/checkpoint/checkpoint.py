"""``lk.Checkpoint``: save and restore object graphs by attribute path.

A checkpoint walks its objects through the trackable protocol (see ``trackable.py``):
named children, own variables, and non-variable state. Every variable is stored under
its path (``model/dense/kernel``, ``optimizer/m/0``), so a model rebuilt by the same
code restores whatever order its variables were created in. Restores read and verify
everything before assigning anything; values for things that do not exist yet are
parked on the nearest existing object along their path and applied when they appear
(see ``trackable.py``: variables created later, layers built later, lists filled later).

Checkpoint files are untrusted input: the object graph in a file's manifest is checked
in full (types, paths, references into the data area) and anything malformed raises a
:class:`CheckpointError` naming the file, before anything is assigned.
"""
from __future__ import annotations

import base64
import binascii
import os
import warnings
import weakref
from typing import Any

import numpy as np

from layerkit._core.atomic import remove_stale_temps
from layerkit._core.context import RECORDERS
from layerkit._core.tensor import Tensor
from layerkit._core.types import PathLike
from layerkit._core.variable import KEEPERS, Variable, replace_value
from layerkit.checkpoint import index as _index
from layerkit.checkpoint import trackable
from layerkit.checkpoint.format import (
    CheckpointError,
    CheckpointNotFoundError,
    CheckpointReader,
    write_file,
)
from layerkit.primitives import random as _random

__all__ = ["Checkpoint", "CheckpointLoadStatus", "GlobalRNG"]

_STATE_TAG = ".state"
_META_KIND = "layerkit.Checkpoint"


# ---- the object graph ------------------------------------------------------------------------
def _is_variable(x) -> bool:
    return isinstance(x, Variable)


def _is_trackable(x) -> bool:
    return (_is_variable(x) or isinstance(x, (list, tuple, dict)) or trackable.has_state(x)
            or hasattr(x, "_checkpoint_children") or hasattr(x, "_checkpoint_variables"))


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
        stack: list[tuple[tuple[str, ...], Any]] = [((), root)]
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
            later: list[tuple[tuple[str, ...], Any]] = []
            for name, child in trackable.children(obj).items():
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

    def park_site(self, segs: tuple) -> tuple:
        """``(object, rest)``: the deepest existing object along ``segs`` that can hold
        parked values, and the path from it to ``segs``."""
        for i in range(len(segs), -1, -1):
            obj = self.objects.get(segs[:i])
            if obj is not None and trackable.can_park(obj):
                return obj, segs[i:]
        return None, segs

    def is_nested_save_counter(self, segs: tuple, name: str) -> bool:
        # A Checkpoint tracked by another one has its own save counter, which TensorFlow
        # creates only when that checkpoint itself saves: never "missing" from a file.
        return name == "save_counter" and isinstance(self.objects.get(segs), Checkpoint)


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


class _BadState(ValueError):
    """A state in a manifest that :func:`_encode` cannot have written."""


def _array_ref(body, arrays: list, tag: str) -> np.ndarray:
    if type(body) is not int or not 0 <= body < len(arrays):
        raise _BadState(f"{{{tag!r}: {body!r:.40}}} does not refer to one of its "
                        f"{len(arrays)} stored array(s)")
    return arrays[body]


def _decode(value, arrays: list):
    """The inverse of :func:`_encode`; raises :class:`_BadState` for anything it could
    not have produced (and RecursionError for absurd nesting)."""
    if isinstance(value, list):
        return [_decode(v, arrays) for v in value]
    if not isinstance(value, dict):
        return value
    if len(value) == 1:
        (tag, body), = value.items()
        if tag in ("__ndarray__", "__tensor__"):
            a = _array_ref(body, arrays, tag)
            return a if tag == "__ndarray__" else Tensor(a)
        if tag == "__npscalar__":
            a = _array_ref(body, arrays, tag)
            if a.ndim:
                raise _BadState(f"{{'__npscalar__': {body}}} refers to an array of shape "
                                f"{a.shape}, not a scalar")
            return a[()]
        if tag == "__bytes__":
            try:
                return base64.b64decode(body, validate=True)
            except (TypeError, ValueError, binascii.Error):
                raise _BadState(f"{{'__bytes__': {body!r:.40}}} is not base64 text") from None
        if tag == "__tuple__":
            if not isinstance(body, list):
                raise _BadState(f"'__tuple__' holds a {type(body).__name__}, not a list")
            return tuple(_decode(v, arrays) for v in body)
        if tag == "__dict__":
            if not isinstance(body, list):
                raise _BadState(f"'__dict__' holds a {type(body).__name__}, not a list")
            out = {}
            for item in body:
                if not isinstance(item, list) or len(item) != 2:
                    raise _BadState(f"a '__dict__' item is {item!r:.40}, not a [key, value] "
                                    f"pair")
                k = _decode(item[0], arrays)
                k = tuple(k) if isinstance(k, list) else k
                try:
                    out[k] = _decode(item[1], arrays)
                except TypeError:
                    raise _BadState(f"a '__dict__' key is a {type(k).__name__}, which "
                                    f"cannot be a dict key") from None
            return out
    return {k: _decode(v, arrays) for k, v in value.items()}


def _state_array_key(segs: tuple, i: int) -> str:
    return _key(segs, f"{_STATE_TAG}/{i}")


# ---- restore status ---------------------------------------------------------------------------
class CheckpointLoadStatus:
    """What a restore matched, with assertions about it.

    Attributes:
        path: the file restored from (None for ``restore(None)``).
        matched: paths assigned from the file (variables and object states), including
            values applied later, when their variable or object appeared.
        missing: paths of existing variables/stateful objects the file has no value for.
        unexpected: paths in the file whose object does not exist in the live graph (yet:
            they are applied if it is attached later, e.g. a list filled after restore).
        pending: paths waiting for their variable to be created by an existing object
            (an unbuilt layer, optimizer slots before the first step).
    """

    def __init__(self, path: PathLike | None, matched: Any, missing: Any, unexpected: Any) -> None:
        self.path = path
        self.matched = list(matched)
        self.missing = list(missing)
        self._unexpected = list(unexpected)
        self._parked: dict[str, trackable.Parked] = {}
        self._expect_partial = False
        self._checked = False
        self._lazy = False

    @property
    def pending(self) -> list:
        return [k for k, r in self._parked.items() if r.exact and not r.done]

    @property
    def unexpected(self) -> list:
        return self._unexpected + [k for k, r in self._parked.items()
                                   if not r.exact and not r.done]

    def _deferred_applied(self, key: str) -> None:
        if key in self._parked:
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
        if self._expect_partial or self._checked or not warnings:
            return
        unused = self.unexpected
        if unused:
            warnings.warn(
                f"Checkpoint restore from '{self.path}' left {len(unused)} value(s) "
                f"unused: {', '.join(unused[:10])}"
                f"{' ...' if len(unused) > 10 else ''}. Call expect_partial() on "
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

    Examples:
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

    Examples:
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

    def __init__(self, **objects: Any) -> None:
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
        value = trackable.track(value, self)   # lists/dicts report what is added later
        if _is_variable(value):   # a value restored before this variable was attached
            trackable.apply_deferred(self, name, value)
        self._objects[name] = value
        trackable.settle(self)   # values restored before this object was attached

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
    def write(self, path: PathLike, options: Any = None) -> str:
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

    def save(self, file_prefix: PathLike, options: Any = None) -> str:
        """Increment :attr:`save_counter` and write ``{file_prefix}-{save_counter}``.

        Also records the file as the latest checkpoint of its directory, so
        :func:`layerkit.latest_checkpoint` finds it. ``options`` (an
        ``lk.train.CheckpointOptions``, as in TensorFlow) is accepted and changes nothing;
        so is the same argument of ``write``, ``restore`` and ``read``.

        Returns:
            the path written.
        """
        path = self._save_numbered(file_prefix, None)
        _index.record_save(path)
        return path

    def _save_numbered(self, file_prefix, number) -> str:
        # Temporary files left by killed saves of earlier numbers are never rewritten by
        # a later save of the same name: clean up after dead writers of this prefix.
        directory, prefix = os.path.split(os.path.abspath(os.fspath(file_prefix)))
        if os.path.isdir(directory):
            remove_stale_temps(directory, _index.checkpoint_name_re(prefix).fullmatch)
        self._save_counter.assign_add(np.int64(1))
        n = int(self._save_counter._v) if number is None else int(number)
        try:
            return self.write(f"{os.fspath(file_prefix)}-{n}")
        except BaseException:
            self._save_counter.assign_sub(np.int64(1))
            raise

    # ---- restoring ----
    def restore(self, save_path: PathLike | None, options: Any = None) -> CheckpointLoadStatus:
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

    def read(self, save_path: PathLike, options: Any = None) -> CheckpointLoadStatus:
        """Restore from one checkpoint file (see :meth:`restore`)."""
        return restore_file(self, save_path)

    def __repr__(self) -> str:
        return f"<Checkpoint {sorted(self._objects)} save_counter={int(self._save_counter._v)}>"


def _segs(path, where: str, entry) -> tuple:
    segs = entry.get("object")
    if not isinstance(segs, list) or not all(isinstance(x, str) for x in segs):
        raise CheckpointError(path, f"the object graph in the manifest is malformed: "
                                    f"'{where:.200}' has no valid 'object' path (a list of "
                                    f"strings), it has {segs!r:.60}")
    return tuple(segs)


def _parse_graph(reader: CheckpointReader) -> tuple:
    """``(variables, states)`` of the object graph in ``reader``'s manifest, validated.

    ``variables`` maps each tensor key to ``(object path, name)``; ``states`` maps each
    object path key to ``(object path, encoded value, [tensor keys])``.
    """
    path, meta = reader.path, reader.meta
    if not isinstance(meta, dict) or meta.get("kind") != _META_KIND:
        raise CheckpointError(path, "holds arrays but no layerkit object graph (not written "
                                    "by lk.Checkpoint)")
    variables, states = meta.get("variables"), meta.get("states")
    if not isinstance(variables, dict) or not isinstance(states, dict):
        raise CheckpointError(path, "the object graph in the manifest is malformed: "
                                    "'variables' and 'states' must be objects")
    saved_vars, saved_states = {}, {}
    for key, v in variables.items():
        if not isinstance(v, dict) or not isinstance(v.get("name"), str):
            raise CheckpointError(path, f"the object graph in the manifest is malformed: "
                                        f"variable '{key:.200}' has no 'name' string")
        segs = _segs(path, key, v)
        if _key(segs, v["name"]) != key:
            raise CheckpointError(path, f"the object graph in the manifest is malformed: "
                                        f"variable '{key:.200}' claims the path "
                                        f"'{_key(segs, v['name']):.200}'")
        saved_vars[key] = (segs, v["name"])
    for where, v in states.items():
        if not isinstance(v, dict) or "value" not in v:
            raise CheckpointError(path, f"the object graph in the manifest is malformed: "
                                        f"state '{where:.200}' has no 'value'")
        segs = _segs(path, where, v)
        keys = v.get("arrays")
        if (_key(segs) or "<root>") != where or not isinstance(keys, list) \
                or not all(isinstance(k, str) for k in keys):
            raise CheckpointError(path, f"the object graph in the manifest is malformed: "
                                        f"state '{where:.200}' has a wrong path or 'arrays' "
                                        f"list")
        saved_states[where] = (segs, v["value"], keys)
    for k in list(saved_vars) + [a for s in saved_states.values() for a in s[2]]:
        if k not in reader:
            raise CheckpointError(path, f"the object graph refers to tensor '{k:.200}', which "
                                        f"the file does not contain")
    return saved_vars, saved_states


def _decode_state(path: str, where: str, value, arrays: list):
    try:
        return _decode(value, arrays)
    except _BadState as e:
        raise CheckpointError(path, f"the state of '{where:.200}' in the manifest is "
                                    f"malformed: {e}") from None
    except RecursionError:
        raise CheckpointError(path, f"the state of '{where:.200}' in the manifest is "
                                    f"nested too deeply") from None


def restore_file(root, save_path, skip_mismatch: bool = False, park_unknown: bool = True
                 ) -> CheckpointLoadStatus:
    """Open ``save_path`` and restore ``root`` from it (see :func:`_restore`).

    The file stays open only while values for objects that do not exist yet are parked
    for later (they are read when those objects are attached); otherwise it is closed.
    """
    reader = CheckpointReader(os.fspath(save_path))
    status = None
    try:
        status = _restore(root, reader, skip_mismatch, park_unknown)
    finally:
        if status is None or not status._lazy:
            reader.close()
    return status


def _restore(root, reader: CheckpointReader, skip_mismatch: bool = False,
             park_unknown: bool = True) -> CheckpointLoadStatus:
    """Restore ``root``'s object graph from ``reader``.

    With ``skip_mismatch`` (``Model.load_weights``), variables whose shape or dtype
    differ from the file's keep their values, with a warning, instead of failing the
    whole restore. With ``park_unknown``, values under names the root does not track
    at all are kept (read lazily from the still-open file) in case such an object is
    attached later; ``status._lazy`` then says the reader must stay open.
    """
    path = reader.path
    saved_vars, saved_states = _parse_graph(reader)
    graph = _Graph(root)

    # ---- 1. match by path; check shapes and dtypes before reading anything ----
    # park: key -> (site, rest, name or STATE, how) with how "read" (the value is read
    # now) or "lazy" (read when applied: values under a name the root does not track).
    assign, park, unexpected, problems = {}, {}, [], []

    def park_or_drop(key: str, segs: tuple, name) -> None:
        site, rest = graph.park_site(segs)
        lazy = bool(segs) and segs[:1] not in graph.objects
        if site is None or (name is trackable.STATE and not rest) or (
                lazy and not park_unknown):
            unexpected.append(key)
        else:
            park[key] = (site, rest, name, "lazy" if lazy else "read")

    for key, (segs, name) in saved_vars.items():
        var = graph.variables.get((segs, name))
        if var is not None:
            shape, dtype = reader.shape(key), reader.dtype(key)
            if tuple(var.shape) != shape or np.dtype(var.dtype) != dtype.newbyteorder("="):
                problems.append(f"'{key}': the checkpoint has {dtype.name} {shape}, the "
                                f"variable is {np.dtype(var.dtype).name} {tuple(var.shape)}")
            else:
                assign[key] = var
        else:
            park_or_drop(key, segs, name)
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
        elif segs in graph.objects:
            unexpected.append(where)   # the object exists but keeps no state
        else:
            park_or_drop(where, segs, trackable.STATE)
    saved_var_ids = {(segs, name) for segs, name in saved_vars.values()}
    missing = [_key(segs, name) for (segs, name) in graph.variables
               if (segs, name) not in saved_var_ids and (segs, name) != ((), "save_counter")
               and not graph.is_nested_save_counter(segs, name)]
    missing += [_key(segs) or "<root>" for segs in graph.stateful
                if (_key(segs) or "<root>") not in saved_states]

    # ---- 2. read and verify every needed array; decode the states ----
    # Object states are read separately so that a long-lived iterator state array never
    # keeps a slab of variable memory alive.
    read_now = [k for k, p in park.items() if p[3] == "read" and p[2] is not trackable.STATE]
    values = reader.read_many(list(assign) + read_now)
    state_keys = [k for s in set_states.values() for k in s[2]]
    state_keys += [k for w, p in park.items() if p[3] == "read" and p[2] is trackable.STATE
                   for k in saved_states[w][2]]
    values.update(reader.read_many(state_keys))
    decoded = {where: _decode_state(path, where, value, [values[k] for k in keys])
               for where, (_, value, keys) in set_states.items()}
    for where, p in park.items():
        if p[2] is trackable.STATE and p[3] == "read":
            _, value, keys = saved_states[where]
            decoded[where] = _decode_state(path, where, value, [values[k] for k in keys])

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
            replace_value(var, old)
        for obj, state in old_states:
            trackable.set_state(obj, state)
        if isinstance(e, Exception) and old_states:
            e.add_note(f"while restoring the state of '{where}' from checkpoint '{path}' "
                       f"(nothing was restored)")
        raise

    # ---- 4. park the rest; a newer restore replaces what earlier ones parked ----
    status = CheckpointLoadStatus(path, list(assign) + list(set_states), missing, unexpected)
    status._lazy = any(p[3] == "lazy" for p in park.values())
    for obj in graph.objects.values():
        trackable.clear_parked(obj)
    ref = weakref.ref(status)

    def on_apply(_name, key) -> None:
        st = ref()
        if st is not None:
            st._deferred_applied(key)

    for key, (site, rest, name, how) in park.items():
        if name is trackable.STATE:
            value = (decoded[key] if how == "read" else
                     _lazy_state(reader, key, *saved_states[key][1:]))
        else:
            value = values[key] if how == "read" else _lazy_array(reader, key)
        record = trackable.Parked(value, lambda n, key=key: on_apply(n, key), (path, key))
        trackable.park(site, rest, name, record)
        status._parked[key] = record
    return status


def _lazy_array(reader: CheckpointReader, key: str):
    return lambda: reader.read(key)


def _lazy_state(reader: CheckpointReader, where: str, value, keys: list):
    def load():
        arrays = reader.read_many(keys)
        return _decode_state(reader.path, where, value, [arrays[k] for k in keys])
    return load


def _assign_fresh(var: Variable, value: np.ndarray) -> None:
    # ``value`` was just read into a new array that nothing else references, so it can
    # become the variable's buffer directly: Variable.assign would copy 1x the model again.
    # Under an active recorder (an lk.function trace) assign() must see the update, and
    # so must tapes that still hold ops reading the variable (KEEPERS).
    if type(var).assign is Variable.assign and not RECORDERS and not KEEPERS:
        replace_value(var, value)
    else:
        var.assign(value)
