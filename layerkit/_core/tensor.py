"""Tensor: an immutable wrapper of a NumPy array. No math lives here.

Operators are installed by ``layerkit.primitives.methods`` as calls to the op records.

A Tensor's array lives in one slot, reachable under two names:

* ``t._v``: the value. While an ``lk.function`` traces, the tensors it records are
  ``TracedTensor`` objects whose ``_v`` is a property that reports a *leak*: code that
  reads it takes a value out of the graph (a NumPy computation the graph cannot
  replay), so the function falls back to eager execution with a warning naming the
  reading line. On a plain Tensor it is the slot itself (the fastest read there is).
* ``t._rv``: the same slot, read without that report. Library code uses it where the
  read cannot leak a value: to record the op that reads it (the recording path of
  ``apply``, tapes, the backward sweep) or to look at the shape and dtype. The
  declaration is the read itself, at the reading site: no list of trusted functions,
  so renaming or wrapping a function never changes what is a leak.
"""
from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import numpy as np

from layerkit._core.shape import _STATIC, StaticShape, static_shape

if TYPE_CHECKING:
    from layerkit._core.types import TensorLike


class Tensor:
    """An immutable n-d array produced eagerly by every layerkit op.

    ``t.numpy()`` returns the NumPy value; ``np.asarray(t)`` works too. Tensors support
    the arithmetic, comparison and indexing operators; arithmetic and indexing are
    differentiable under a :class:`layerkit.GradientTape`.

    Examples:
        >>> import layerkit as lk
        >>> lk.constant([[4.0]])
        Tensor([[4.]], shape=(1, 1), dtype=float32)
    """

    # _keras_mask: the Keras mask a layer attached to its output (see layerkit.layers.layer);
    # unset on almost every tensor, and never touched by ops.
    __slots__ = ("_v", "_keras_mask", "__weakref__")
    # Make NumPy defer to our reflected operators (ndarray + Tensor -> Tensor.__radd__).
    __array_priority__ = 1000

    # (``_rv`` is the ``_v`` slot under a second name: see the module docstring; it is
    # attached after the class body, where the slot descriptor exists.)
    _v: np.ndarray
    _rv: np.ndarray

    if TYPE_CHECKING:  # installed at import by layerkit.primitives.methods
        _keras_mask: Any  # set by layers (see the comment on __slots__)

        def __getitem__(self, index: Any) -> Tensor: ...
        def __iter__(self) -> Iterator[Tensor]: ...
        def __add__(self, other: TensorLike) -> Tensor: ...
        def __radd__(self, other: TensorLike) -> Tensor: ...
        def __sub__(self, other: TensorLike) -> Tensor: ...
        def __rsub__(self, other: TensorLike) -> Tensor: ...
        def __mul__(self, other: TensorLike) -> Tensor: ...
        def __rmul__(self, other: TensorLike) -> Tensor: ...
        def __truediv__(self, other: TensorLike) -> Tensor: ...
        def __rtruediv__(self, other: TensorLike) -> Tensor: ...
        def __floordiv__(self, other: TensorLike) -> Tensor: ...
        def __rfloordiv__(self, other: TensorLike) -> Tensor: ...
        def __mod__(self, other: TensorLike) -> Tensor: ...
        def __rmod__(self, other: TensorLike) -> Tensor: ...
        def __pow__(self, other: TensorLike) -> Tensor: ...
        def __rpow__(self, other: TensorLike) -> Tensor: ...
        def __matmul__(self, other: TensorLike) -> Tensor: ...
        def __rmatmul__(self, other: TensorLike) -> Tensor: ...
        def __and__(self, other: TensorLike) -> Tensor: ...
        def __rand__(self, other: TensorLike) -> Tensor: ...
        def __or__(self, other: TensorLike) -> Tensor: ...
        def __ror__(self, other: TensorLike) -> Tensor: ...
        def __xor__(self, other: TensorLike) -> Tensor: ...
        def __rxor__(self, other: TensorLike) -> Tensor: ...
        def __lt__(self, other: TensorLike) -> Tensor: ...
        def __le__(self, other: TensorLike) -> Tensor: ...
        def __gt__(self, other: TensorLike) -> Tensor: ...
        def __ge__(self, other: TensorLike) -> Tensor: ...
        def __neg__(self) -> Tensor: ...
        def __pos__(self) -> Tensor: ...
        def __abs__(self) -> Tensor: ...
        def __invert__(self) -> Tensor: ...
        def __eq__(self, other: object) -> Any: ...  # an elementwise bool Tensor
        def __ne__(self, other: object) -> Any: ...

    def __init__(self, value: Any) -> None:
        if isinstance(value, Tensor):
            # A Variable changes in place (copy it); a Tensor's array never changes.
            from layerkit._core.variable import Variable
            value = np.array(value._v, copy=True) if isinstance(value, Variable) else value._v
        elif isinstance(value, np.ndarray):
            value = value.copy()  # the caller may change their array later (TF copies)
        elif isinstance(value, (list, tuple)):
            # ``lk.Tensor([1.0, 2.0])`` from user code: the conversion rules of
            # lk.constant (a bare list would report shape () and the wrong dtype).
            from layerkit._core.convert import to_array
            value = to_array(value)
        self._v = value

    # ---- value access -------------------------------------------------------------
    def numpy(self) -> np.ndarray:
        """Return the value as a new NumPy array (a copy, as in TensorFlow: changing it
        leaves the tensor as it was). ``np.asarray(t)`` gives a read-only view instead."""
        return np.array(self._v, copy=True)

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        # Zero-copy, but read-only: the tensor's array is never written after it was made.
        a = self._v
        if type(a) is not np.ndarray:
            a = np.asarray(a)
        elif a.flags.writeable:
            a = a.view()
            a.flags.writeable = False
        if dtype is not None and a.dtype != dtype:
            return a.astype(dtype)
        return a.copy() if copy else a

    # ---- DLPack: zero-copy exchange with NumPy, PyTorch, JAX, ... (see lk.from_dlpack) ---
    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """Export the value through DLPack; the consumer shares this tensor's buffer.

        Tensors are immutable, so the buffer is exported read-only (as ``np.asarray(t)``
        gives it): consumers of DLPack >= 1.0 are told so; older consumers (no
        ``max_version``), which cannot be told, get a copy unless they pass
        ``copy=False`` (then ``BufferError``). A Variable exports a snapshot of its
        value, as ``Variable.numpy()`` does (optimizer steps update it in place).
        """
        a = self.__array__()
        if copy is False and a is not self._v and not np.may_share_memory(a, self._v):
            raise BufferError("a Variable exports a snapshot of its value through DLPack, "
                              "so copy=False cannot be honoured; export var.value()")
        # Only the arguments given: NumPy 2.0's __dlpack__ knows ``stream`` alone.
        kwargs = {k: v for k, v in (("max_version", max_version), ("dl_device", dl_device),
                                    ("copy", copy)) if v is not None}
        try:
            return a.__dlpack__(stream=stream, **kwargs)
        except BufferError:
            if a.flags.writeable or copy is False:
                raise
            kwargs.pop("copy", None)
            return a.copy().__dlpack__(stream=stream, **kwargs)

    def __dlpack_device__(self) -> tuple:
        return np.asarray(self._v).__dlpack_device__()

    # Metadata reads ``_rv``: a shape or dtype is static in a traced graph, not a leak.
    @property
    def shape(self) -> StaticShape:
        """The shape: a tuple of ints that also has ``tf.TensorShape``'s methods
        (``as_list()``, ``rank``, ...)."""
        try:
            s = self._rv.shape
        except AttributeError:  # a bare Python scalar operand
            s = ()
        try:
            return _STATIC[s]
        except KeyError:
            return static_shape(s)

    def get_shape(self) -> StaticShape:
        """The shape (TensorFlow's older spelling of :attr:`shape`)."""
        return self.shape

    @property
    def dtype(self) -> np.dtype:
        try:
            return self._rv.dtype
        except AttributeError:
            return np.asarray(self._rv).dtype

    @property
    def device(self) -> str:
        """The device holding the value: always the CPU (TensorFlow's full name)."""
        return "/job:localhost/replica:0/task:0/device:CPU:0"

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.size(self._rv))

    def __len__(self) -> int:
        try:  # the array's own len(): no shape tuple on the per-batch data path
            return len(self._rv)
        except TypeError:
            raise TypeError("len() of a 0-d tensor is undefined (shape ())") from None

    def _scalar(self, kind: str):
        if self.size != 1:
            raise TypeError(
                f"{kind}() needs a tensor with exactly one element; received shape {self.shape}"
            )
        return np.asarray(self._v).reshape(())[()]

    def __float__(self) -> float:
        return float(self._scalar("float"))

    def __int__(self) -> int:
        return int(self._scalar("int"))

    def __index__(self) -> int:
        if self.dtype.kind not in "iu":
            raise TypeError(f"only integer tensors can be used as an index, not {self.dtype}")
        return int(self._scalar("index"))

    def __bool__(self) -> bool:
        return bool(self._scalar("bool"))

    def __repr__(self) -> str:
        body = np.array2string(np.asarray(self._v), separator=", " if False else " ")
        return f"Tensor({body}, shape={self.shape}, dtype={self.dtype.name})"

    __str__ = __repr__

    def __format__(self, spec: str) -> str:
        # f"{loss:.4f}" on a one-element tensor, as on a TF EagerTensor.
        if not spec:
            return str(self)
        if self.size == 1:
            return format(np.asarray(self._v).reshape(())[()], spec)
        return format(np.asarray(self._v), spec)

    def __hash__(self) -> int:  # tensors are used as dict keys by identity (like TF refs)
        return id(self)


# The value slot under its second name (see the module docstring). A member descriptor
# works under any class attribute name, and reading it costs exactly what ``t._v`` costs.
Tensor._rv = Tensor.__dict__["_v"]
