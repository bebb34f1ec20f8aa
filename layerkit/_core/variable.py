"""Variable: a mutable Tensor with a name, a trainable flag and a fixed shape."""
from __future__ import annotations

import itertools

import numpy as np

from layerkit._core import distribution
from layerkit._core.context import RECORDERS
from layerkit._core.convert import as_dtype, to_array
from layerkit._core.tensor import Tensor

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

    Example:
        >>> import layerkit as lk
        >>> v = lk.Variable([1.0, 2.0], name="v")
        >>> _ = v.assign_add([1.0, 1.0])
        >>> v.numpy()
        array([2., 3.], dtype=float32)
    """

    __slots__ = ("_name", "_trainable", "_uid", "_on_create", "constraint")

    def __init__(self, initial_value, trainable: bool = True, name: str | None = None,
                 dtype=None) -> None:
        if callable(initial_value):
            initial_value = initial_value()
        a = _numeric(to_array(initial_value, as_dtype(dtype)), name or "Variable", "hold")
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
        a = _numeric(to_array(value), self._name, what)
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

    def assign(self, value) -> Variable:
        """Set the value in place; the shape must match. Returns the variable."""
        a = self._checked(value, "assign")
        # Replace rather than write in place: a tape may hold the old array.
        if RECORDERS or KEEPERS:  # before the update, so a tracer can also undo it
            keep_reads(self)
            _notify("record_assign", self, "assign", value)
        self._v = a.astype(self._v.dtype, copy=True)
        return self

    def assign_add(self, delta) -> Variable:
        a = self._checked(delta, "assign_add")
        if RECORDERS or KEEPERS:  # before the update, so a tracer can also undo it
            keep_reads(self)
            _notify("record_assign", self, "assign_add", delta)
        self._v = (self._v + a).astype(self._v.dtype, copy=False)
        return self

    def assign_sub(self, delta) -> Variable:
        a = self._checked(delta, "assign_sub")
        if RECORDERS or KEEPERS:  # before the update, so a tracer can also undo it
            keep_reads(self)
            _notify("record_assign", self, "assign_sub", delta)
        self._v = (self._v - a).astype(self._v.dtype, copy=False)
        return self

    def __repr__(self) -> str:
        body = np.array2string(self._v, separator=" ")
        return (f"<lk.Variable '{self._name}' shape={self.shape} dtype={self.dtype.name}, "
                f"numpy={body}>")

    __str__ = __repr__
