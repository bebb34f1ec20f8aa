"""Variable: a mutable Tensor with a name, a trainable flag and a fixed shape.

Every change of a Variable's value goes through this module: ``assign``/``assign_add``/
``assign_sub`` (checked, and recorded by an ``lk.function`` trace), and for library code
that already holds a checked array, :func:`replace_value` (a new array),
:func:`writable` (the arrays an in-place NumPy update writes into), :func:`adopt` (the
same value moved into a buffer the caller owns) and :func:`graph_assign` (a graph's
assign node). Those that change the value first call :func:`keep_reads`, so tapes
holding ops that read the old value keep it.
"""
from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from layerkit._core import distribution
from layerkit._core.context import RECORDERS
from layerkit._core.convert import as_dtype, to_array
from layerkit._core.tensor import Tensor
from layerkit._core.types import DTypeLike, TensorLike

_uid = itertools.count()
_new = object.__new__


def _notify(hook: str, *args) -> None:
    # Recorders that care (the lk.function tracer) record assignments and snapshot reads
    # as graph nodes; tapes have no such hook. Only reached when a recorder is active.
    for r in tuple(RECORDERS):
        fn = getattr(r, hook, None)
        if fn is not None:
            fn(*args)


# Weak references to the tapes holding recorded ops that read some Variable. A tape
# adds itself at its first Variable read (``weakref.ref(tape, KEEPERS.discard)``, hashed
# while alive) and leaves when its ops are dropped (answered by a non-persistent tape,
# reset, garbage-collected). Code that changes a Variable's value checks
# ``RECORDERS or KEEPERS`` first: outside tapes both are empty, so a change costs nothing
# more.
KEEPERS: set = set()


def keep_reads(*variables: Variable) -> None:
    """Call just before ``variables`` change value (assign, an optimizer's in-place
    update, a restore) while ``RECORDERS or KEEPERS``: every tape holding recorded ops
    that read one of them, whether its block is still open or not, hands those ops a
    snapshot of the old value shared by all tapes (TensorFlow's read semantics). A graph
    tracer sees the snapshot as a read of the variable made before the change."""
    if not KEEPERS:
        return
    changing = {id(v): v for v in variables}
    snaps: dict = {}  # id(var) -> the snapshot every tape shares
    for ref in tuple(KEEPERS):
        tape = ref()
        if tape is not None:
            tape.keep_reads(changing, snaps)
    if snaps and RECORDERS:
        for r in tuple(RECORDERS):
            if not hasattr(r, "keep_reads"):
                fn = getattr(r, "record_read_value", None)
                if fn is not None:
                    for key, snap in snaps.items():
                        fn(changing[key], snap)


def replace_value(var: Variable, array) -> None:
    """Give ``var`` the new array ``array`` (not copied; shape and dtype already right).

    For library code that changes a variable outside ``assign`` (optimizer steps, metric
    resets, checkpoint restores): tapes holding ops that read the old value keep it.
    Unlike ``assign`` it is not recorded by an ``lk.function`` trace.
    """
    if KEEPERS:
        keep_reads(var)
    var._v = array


def writable(*variables: Variable) -> list:
    """The arrays to update ``variables`` in place with NumPy (``np.add(a, x, out=a)``).

    Tapes holding ops that read one of them first keep the old values (one
    :func:`keep_reads` for all), and a variable whose array is not a writable ndarray of
    its own (a read-only or 0-d NumPy scalar value) first gets a private copy.
    """
    if KEEPERS:
        keep_reads(*variables)
    out = []
    for var in variables:
        a = var._v
        if type(a) is not np.ndarray or not a.flags.writeable:
            a = var._v = np.array(a)
        out.append(a)
    return out


def adopt(var: Variable, buffer: np.ndarray) -> None:
    """Copy ``var``'s value into ``buffer`` (an array of its shape) and make ``buffer``
    its array: the same value in storage the caller owns (an optimizer's flat buffer
    that updates many small variables in one kernel call). The value does not change,
    so tapes need not keep anything."""
    np.copyto(buffer, var._v, casting="unsafe")
    var._v = buffer


# The updates of assign / assign_add / assign_sub on a checked array ``a``.
def _set(var: Variable, a) -> None:
    var._v = np.asarray(a).astype(var._v.dtype, copy=True)


def _add(var: Variable, a) -> None:
    var._v = (var._v + a).astype(var._v.dtype, copy=False)


def _sub(var: Variable, a) -> None:
    var._v = (var._v - a).astype(var._v.dtype, copy=False)


_UPDATE = {"assign": _set, "assign_add": _add, "assign_sub": _sub}


# A compiled graph's assign nodes: the same updates without the checks, which ran when
# the graph was traced. One frame each (they run on every call of a traced train step).
def _graph_set(var: Variable, a) -> None:
    if KEEPERS:
        keep_reads(var)
    var._v = np.asarray(a).astype(var._v.dtype, copy=True)


def _graph_add(var: Variable, a) -> None:
    if KEEPERS:
        keep_reads(var)
    var._v = (var._v + a).astype(var._v.dtype, copy=False)


def _graph_sub(var: Variable, a) -> None:
    if KEEPERS:
        keep_reads(var)
    var._v = (var._v - a).astype(var._v.dtype, copy=False)


_GRAPH_UPDATE = {"assign": _graph_set, "assign_add": _graph_add, "assign_sub": _graph_sub}


def graph_assign(method: str):
    """The function ``(var, value)`` a compiled graph calls for an assign node of
    ``method`` (``'assign'``, ``'assign_add'``, ``'assign_sub'``): the update of
    ``Variable.<method>`` without the checks, which ran when the graph was traced.
    Replaces the array, never writes into it: a tape or an earlier result may hold it."""
    return _GRAPH_UPDATE[method]


def _array_of(value, dtype=None) -> np.ndarray:
    # to_array; a Tensor is read through ``_rv``: initialising or assigning a variable
    # from a traced tensor is not a leak (the assign is a graph node; creation runs once).
    if isinstance(value, Tensor):
        value = np.asarray(value._rv)
    return to_array(value, dtype)


def _numeric(a: np.ndarray, name: str, what: str) -> np.ndarray:
    # An object array (None or arbitrary objects inside) is not a value: casting it
    # would store NaN for None, or fail later far from the cause.
    if a.dtype.kind == "O":
        raise TypeError(f"Variable '{name}': cannot {what} an array of Python objects "
                        f"(dtype object, e.g. containing None); expected numbers")
    return a


class Variable(Tensor):
    """A mutable tensor, usable wherever a Tensor is.

    Trainable variables read inside a :class:`layerkit.GradientTape` block are watched
    automatically. The shape is fixed at creation.

    Args:
        initial_value: the value (array-like, Tensor, or a zero-argument callable).
        trainable: whether tapes watch it automatically and optimizers update it.
        name: a name for messages and checkpoints (default ``Variable``).
        dtype: optional dtype to cast the initial value to.

    Attributes:
        constraint: None, or a projection ``fn(variable) -> value`` that optimizers
            assign to the variable after each update (``lk.constraints``; layers set it
            from ``add_weight(constraint=...)``).

    Examples:
        >>> import layerkit as lk
        >>> v = lk.Variable([1.0, 2.0], name="v")
        >>> _ = v.assign_add([1.0, 1.0])
        >>> v.numpy()
        array([2., 3.], dtype=float32)
    """

    __slots__ = ("_name", "_trainable", "_uid", "_on_create", "constraint")

    def __init__(self, initial_value: TensorLike, trainable: bool = True, name: str | None = None,
                 dtype: DTypeLike = None) -> None:
        if callable(initial_value):
            initial_value = initial_value()
        a = _numeric(_array_of(initial_value, as_dtype(dtype)), name or "Variable", "hold")
        self._v = np.array(a, copy=True)
        self._name = name or "Variable"
        self._trainable = bool(trainable)
        self._uid = next(_uid)
        self.constraint = None
        if distribution.scope is not None:   # lk.distribute: rank 0's initial value
            distribution.scope._variable_created(self)

    @property
    def name(self) -> str:
        return self._name

    @property
    def trainable(self) -> bool:
        return self._trainable

    @trainable.setter
    def trainable(self, value: bool) -> None:
        self._trainable = bool(value)

    def numpy(self) -> np.ndarray:
        """A copy of the current value (optimizers update variables in place, so a
        returned view would change under the caller, unlike TensorFlow's snapshot)."""
        return np.array(self._v, copy=True)

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        return np.array(self._v, dtype=dtype, copy=True)

    def value(self) -> Tensor:
        """A Tensor snapshot of the current value."""
        t = _new(Tensor)
        t._v = self._v.copy()
        if RECORDERS:  # a tracer (lk.function) turns the snapshot into a live read
            _notify("record_read_value", self, t)
        return t

    def read_value(self) -> Tensor:
        return self.value()

    def _checked(self, value, what: str) -> np.ndarray:
        a = _numeric(_array_of(value), self._name, what)
        if a.shape != self._v.shape:
            raise ValueError(
                f"Variable '{self._name}': cannot {what} a value of shape {a.shape}; "
                f"the variable's shape is {self._v.shape}"
            )
        if a.dtype.kind in "fc" and self._v.dtype.kind in "biu":
            # Never a silent truncation (TF refuses too): 1.5 into an int variable.
            raise TypeError(
                f"Variable '{self._name}': cannot {what} a value of dtype {a.dtype.name} "
                f"to a variable of dtype {self._v.dtype.name}; cast it first (lk.cast)"
            )
        return a

    # ``use_locking`` and ``name`` are TensorFlow's (accepted, no effect); with
    # ``read_value=False`` the update returns None, as TF returns the op then.
    def assign(self, value: Any, use_locking: bool | None = None, name: str | None = None,
               read_value: bool = True) -> Variable | None:
        """Set the value in place; the shape must match. Returns the variable."""
        self._update("assign", value)
        return self if read_value else None

    def assign_add(self, delta: TensorLike, use_locking: bool | None = None,
                   name: str | None = None, read_value: bool = True) -> Variable | None:
        """Add ``delta`` to the value (shape must match). Returns the variable."""
        self._update("assign_add", delta)
        return self if read_value else None

    def assign_sub(self, delta: TensorLike, use_locking: bool | None = None,
                   name: str | None = None, read_value: bool = True) -> Variable | None:
        """Subtract ``delta`` from the value (shape must match). Returns the variable."""
        self._update("assign_sub", delta)
        return self if read_value else None

    def _update(self, method: str, value) -> Variable:
        a = self._checked(value, method)
        # Replace rather than write in place: a tape may hold the old array.
        if RECORDERS or KEEPERS:  # before the update, so a tracer can also undo it
            keep_reads(self)
            _notify("record_assign", self, method, value)
        _UPDATE[method](self, a)
        return self

    def __repr__(self) -> str:
        body = np.array2string(self._v, separator=" ")
        return (f"<lk.Variable '{self._name}' shape={self.shape} dtype={self.dtype.name}, "
                f"numpy={body}>")

    __str__ = __repr__
