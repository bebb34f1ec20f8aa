"""The tracing recorder and the tracing tensor.

Tracing runs the user's function once, eagerly, on the real inputs, with a
:class:`Tracer` pushed on ``layerkit._core.context.RECORDERS``: every op reports
``record(op, ins, outs, attrs)``, so the tracer appends one node per op and the first
call returns real results. Outputs of recorded ops are switched (``__class__``) to
:class:`TracedTensor`, a layout-identical Tensor subclass, for the duration of the
trace; at the end they become plain Tensors again.

A TracedTensor refuses ``bool()``, ``float()``, ``int()``, ``.numpy()`` and
``np.asarray()``: their answer would be baked into the graph as a Python value
(data-dependent Python control flow), so the error names the user's line.

Library code that reads a traced tensor's array outside a recorded op, for anything
but its shape or dtype, takes data out of the graph where later calls cannot see it (a
mask computed in NumPy inside a gradient rule, an optimizer updating arrays in place).
The protocol that tells those reads apart is declared where the reading happens, never
in a list of names: a TracedTensor's ``_v`` is a property that reports every read as
such a *leak*, while code that reads only to record an op or to look at the shape and
dtype reads ``t._rv``, the same slot under its other name (see ``layerkit._core.tensor``).
A leak makes the function run eagerly on every call, with a warning that names the
reading line: slower, never wrong.
"""
from __future__ import annotations

import linecache
import os
import sys
import threading

import numpy as np

from layerkit._core import context
from layerkit._core.shape import StaticShape, static_shape
from layerkit._core.tensor import Tensor
from layerkit._core.variable import Variable
from layerkit.autodiff.function.graph import Graph, Node, is_stateful_op

_SLOT = Tensor.__dict__["_v"]
_SHAPE = Tensor.__dict__["shape"].fget

_PKG_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_ACTIVE: list = []          # tracers currently tracing (any thread)


class TracingError(TypeError):
    """A traced tensor was used where its value is needed while tracing (lk.function)."""


# ---- locating the user's line ---------------------------------------------------------------
def user_frame(frame):
    """The innermost frame outside the layerkit package (the user's code), or None."""
    f = frame
    while f is not None:
        fn = os.path.abspath(f.f_code.co_filename)
        if not fn.startswith(_PKG_DIR + os.sep):
            return f
        f = f.f_back
    return None


_AUTOGRAPH_DIR = os.path.join(_PKG_DIR, "autograph") + os.sep


def _in_package(frame) -> bool:
    """Whether ``frame`` runs library code. AutoGraph's run-time helpers are skipped:
    they only forward the user's own calls (``len(x)`` in converted code reaches
    ``__len__`` through ``converted_call``), so the user's frame decides."""
    path = os.path.abspath(frame.f_code.co_filename)
    while path.startswith(_AUTOGRAPH_DIR) and frame.f_back is not None:
        frame = frame.f_back
        path = os.path.abspath(frame.f_code.co_filename)
    return path.startswith(_PKG_DIR + os.sep)


def where(frame) -> str:
    if frame is None:
        return "<unknown location>"
    fn, line = frame.f_code.co_filename, frame.f_lineno
    src = linecache.getline(fn, line).strip()
    return f"{fn}:{line}" + (f": `{src}`" if src else "")


def _owner(t):
    key = id(t)
    for tr in _ACTIVE:
        if key in tr.ids:
            return tr
    return None


def _control_flow_error(t, what: str) -> TracingError:
    tr = _owner(t)
    fname = tr.graph.name if tr is not None else "the function"
    loc = where(user_frame(sys._getframe(2)))
    return TracingError(
        f"lk.function: cannot use a traced tensor as {what} while tracing '{fname}'. "
        f"Inside lk.function the Python code runs once to record a graph, so a tensor's "
        f"value is not known there: data-dependent Python control flow (if/while on a "
        f"tensor, float(t), t.numpy()) is not allowed. At {loc}. Use lk.where / lk ops "
        f"for the data-dependent part, compute it outside the function, or pass a "
        f"Python value as an argument (each new value retraces)."
    )


# ---- the tracing tensor ----------------------------------------------------------------------
def _leaked_read(self):
    # Every ``._v`` read of a traced tensor is a leak (reads that cannot leak use
    # ``._rv``); the frame is looked at only to name the reading line in the warning.
    tr = _owner(self)
    if tr is not None:
        tr.leak(sys._getframe(1))
    return self._rv


class TracedTensor(Tensor):
    """A Tensor recorded by a tracer (its value is real; Python may not branch on it)."""

    __slots__ = ()
    _v = property(_leaked_read, _SLOT.__set__)

    def numpy(self):
        raise _control_flow_error(self, "a NumPy array (.numpy())")

    def __array__(self, dtype=None, copy=None):
        raise _control_flow_error(self, "a NumPy array (np.asarray)")

    def __bool__(self):
        raise _control_flow_error(self, "a Python bool")

    def __float__(self):
        raise _control_flow_error(self, "a Python float")

    def __int__(self):
        raise _control_flow_error(self, "a Python int")

    def __index__(self):
        raise _control_flow_error(self, "a Python index")

    @property
    def shape(self) -> StaticShape:
        """The shape, with ``None`` for the dimensions that vary with the input's ``None``
        dimensions when asked from user code (TensorFlow's static shape in a graph:
        ``x.shape[0]`` cannot be baked into the graph as a Python int). Library code
        gets the trace-time sizes; shadow execution checks what it makes of them."""
        s = _SHAPE(self)
        tr = _owner(self)
        if tr is None or not tr.dyn:
            return s
        mask = tr.dynamic_dims(self)
        if mask is None or _in_package(sys._getframe(1)):
            return s
        return static_shape(tuple(None if d else n for n, d in zip(s, mask)))

    def _user_dynamic(self, what: str, dims) -> None:
        # From user code, a size that varies with a None input dimension has no value
        # while tracing (TensorFlow: unknown); library code gets the traced size.
        tr = _owner(self)
        mask = tr.dynamic_dims(self) if tr is not None and tr.dyn else None
        if mask and any(mask[i] for i in dims) and not _in_package(sys._getframe(2)):
            raise TracingError(
                f"lk.function: {what} of a tensor of shape "
                f"{tuple(None if m else n for n, m in zip(_SHAPE(self), mask))} is not known while "
                f"tracing '{tr.graph.name}' (it varies with a None input dimension). At "
                f"{where(user_frame(sys._getframe(2)))}. Use lk.shape(x) / lk.size(x), which "
                f"give the sizes when the graph runs.")

    @property
    def size(self) -> int:
        self._user_dynamic("the size", range(self.ndim))
        return int(np.size(self._rv))

    def __len__(self) -> int:
        if self.ndim:
            self._user_dynamic("len()", (0,))
        return Tensor.__len__(self)

    def __repr__(self) -> str:
        return f"<traced Tensor shape={self.shape} dtype={self.dtype.name}>"

    __str__ = __repr__


class EscapedTensor(TracedTensor):
    """A value of a traced branch or loop body (``lk.cond``/``lk.while_loop`` on traced
    data) that was kept outside it, e.g. in a Python list: the enclosing graph cannot
    use it (it exists only inside that sub-graph's runs)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"<Tensor of a traced branch or loop body shape={self.shape}>"

    __str__ = __repr__


def _escaped_error() -> TracingError:
    loc = where(user_frame(sys._getframe(2)))
    return TracingError(
        f"lk.function: a tensor computed inside a branch or loop body that depends on "
        f"traced data (lk.cond / lk.while_loop, or an if/while/for statement on a tensor) "
        f"is used outside it, at {loc}. Values leave a branch or loop only as its results "
        f"(the variables it assigns): assign the value to a variable inside it instead of "
        f"keeping it in a Python list or attribute.")


# ---- the recorder ------------------------------------------------------------------------------
class Tracer:
    """Recorder that builds a :class:`Graph` while the function runs eagerly."""

    tracing = True   # lets code that sees RECORDERS tell a tracer from a tape

    def __init__(self, name: str) -> None:
        self.graph = Graph(name)
        self.ids: dict[int, int] = {}        # id(tensor) -> vid
        self._keep: list = []                # tensors whose ids are in self.ids
        self._arrays: dict[int, int] = {}    # id(array) of traced values -> vid
        self._consts: dict = {}              # dedupe key -> vid
        self._const_keep: list = []
        self._reads: dict[int, int] = {}     # id(var) -> vid of the current read
        self.variables_read: dict[int, Variable] = {}
        self.leaks: list[str] = []
        self.assigned: dict[int, tuple] = {}  # id(var) -> (var, array before the first assign)
        # A dry run (get_concrete_function) undoes its changes of Variables afterwards,
        # and Python-call nodes that only have effects (lk.print) skip their trace run.
        self.dry_run = False
        self.thread = threading.get_ident()
        # Symbolic (None) dimensions: each op whose inputs depend on them also runs on
        # *shadow* values, where those dimensions have another size. A value's dims that
        # differ between its real and shadow arrays vary with the input (``dyn``); an op
        # that fails on the shadows needs the traced size (``not_generic`` says which).
        self.shadow: dict = {}                  # vid -> value at the shadow sizes
        self.dyn: dict[int, tuple] = {}         # vid -> per-dim "varies" flags
        self.not_generic: str | None = None

    # ---- lifecycle -------------------------------------------------------------------------
    def __enter__(self) -> Tracer:
        _ACTIVE.append(self)
        context.push(self)
        return self

    def __exit__(self, *exc) -> None:
        context.pop(self)
        _ACTIVE.remove(self)
        for t in self._keep:
            if type(t) is TracedTensor:
                t.__class__ = Tensor

    # ---- values ---------------------------------------------------------------------------
    def param(self, array, name: str, own: Tensor | None = None,
              dyn: tuple | None = None) -> TracedTensor:
        """A new graph input; ``own`` is the caller's Tensor to trace in place (tapes
        watching it then record the trace), else a fresh Tensor is made. ``dyn`` flags
        the dimensions that are symbolic (``None`` in the signature)."""
        a = array
        v = self.graph.new_value("param", np.shape(a), getattr(a, "dtype", None), name)
        v.traced = a
        v.nd = type(a) is np.ndarray
        if dyn is not None and any(dyn):
            self.shadow[v.id] = _grown(np.asarray(a), dyn)
            self.dyn[v.id] = tuple(dyn)
        self.graph.params.append(v.id)
        self.graph.param_names.append(name)
        if own is not None and type(own) is Tensor and id(own) not in self.ids:
            t = own
        else:
            t = object.__new__(Tensor)
            t._v = a
        self._register(t, v.id)
        return t

    def _register(self, t: Tensor, vid: int) -> None:
        self.ids[id(t)] = vid
        self._keep.append(t)
        if type(t) is Tensor:
            t.__class__ = TracedTensor
        a = t._rv
        if isinstance(a, (np.ndarray, np.generic)):
            self._arrays.setdefault(id(a), vid)

    def const(self, value) -> int:
        """The vid of a constant (deduplicated: scalars by value, arrays by identity)."""
        if type(value) in (bool, int, float, complex):
            key = (type(value), value)
        else:
            key = ("id", id(value))
        vid = self._consts.get(key)
        if vid is None:
            g = self.graph
            v = g.new_value("const", np.shape(value), np.asarray(value).dtype
                            if not isinstance(value, np.ndarray) else value.dtype)
            v.const = value
            v.traced = value
            v.nd = type(value) is np.ndarray
            vid = self._consts[key] = v.id
            self._const_keep.append(value)
        return vid

    def vid_of(self, t) -> int:
        vid = self.ids.get(id(t))
        if vid is not None:
            return vid
        if isinstance(t, Variable):
            return self._read(t)
        if isinstance(t, Tensor):
            if type(t) is EscapedTensor:
                raise _escaped_error()
            return self.const(t._rv)
        from layerkit._core.convert import to_array

        return self.const(to_array(t))

    def _read(self, var: Variable) -> int:
        vid = self._reads.get(id(var))
        if vid is None:
            a = var._rv
            g = self.graph
            v = g.new_value("node", np.shape(a), a.dtype, var.name)
            v.traced = a
            v.nd = type(a) is np.ndarray
            g.add_node(Node("read", outs=[v.id], var=var))
            g.variables[id(var)] = var
            vid = self._reads[id(var)] = v.id
        return vid

    # ---- recorder protocol ------------------------------------------------------------------
    def read_variable(self, var: Variable) -> None:
        if threading.get_ident() == self.thread:
            self.variables_read.setdefault(id(var), var)

    def record(self, op, ins: tuple, outs: tuple, attrs: dict) -> None:
        if threading.get_ident() != self.thread:
            return  # another thread's eager ops (RECORDERS is process-wide)
        if op.forward is None:
            self._alias(op, outs)
            return
        g = self.graph
        in_vids = [self.vid_of(t) for t in ins]
        out_vids = []
        for o in outs:
            a = o._rv
            v = g.new_value("node", np.shape(a), getattr(a, "dtype", None) if not
                            isinstance(a, (bool, int, float)) else np.asarray(a).dtype)
            v.traced = a
            v.nd = type(a) is np.ndarray
            out_vids.append(v.id)
        g.add_node(Node("op", op=op, ins=in_vids, outs=out_vids, attrs=dict(attrs)))
        for o, vid in zip(outs, out_vids):
            self._register(o, vid)
        if self.shadow and self.not_generic is None:
            shadow = self.shadow
            for i in in_vids:
                if i in shadow:
                    self._shadow_op(op, in_vids, out_vids, attrs)
                    break
        if is_stateful_op(op):
            self.stateful_ops = True
            changes = getattr(op, "updates", None)
            if changes is not None:  # reads before the node do not stand for reads after
                for var in changes(attrs):
                    self._reads.pop(id(var), None)

    stateful_ops = False
    has_alias = False   # a custom_gradient node: its own vjp must be used under a tape

    def _alias(self, op, outs: tuple) -> None:
        # custom_gradient records a node with no forward whose outputs wrap the arrays
        # of the body's results: those are graph values already.
        for o in outs:
            a = o._rv
            vid = self._arrays.get(id(a))
            if vid is None:
                if isinstance(a, (np.ndarray, np.generic)) or type(a) in (bool, int, float):
                    vid = self.const(a)
                else:  # pragma: no cover - defensive
                    self.leaks.append(f"op '{op.name}' has no forward function")
                    return
            self.has_alias = True
            self.ids[id(o)] = vid
            self._keep.append(o)
            if type(o) is Tensor:
                o.__class__ = TracedTensor

    # ---- symbolic dimensions ----------------------------------------------------------------
    def _shadow_op(self, op, in_vids: list, out_vids: list, attrs: dict) -> None:
        """Run ``op`` on the shadow values of its inputs (see ``__init__``)."""
        g = self.graph
        vals = [self.shadow[i] if i in self.shadow else g.values[i].traced for i in in_vids]
        if getattr(op, "updates", None) is not None or op.name == "python_call":
            # Python callbacks and in-place updates must not run twice: their outputs
            # are taken as static (a callback's result shape is its own business).
            return
        saved = _save_states(attrs) if op.stateful else None
        try:
            with np.errstate(all="ignore"):
                out = op.forward(*vals, **attrs)
        except Exception as e:  # noqa: BLE001 - any failure means: needs the traced size
            self.not_generic = (
                f"op '{op.name}' (at {where(user_frame(sys._getframe(3)))}) cannot run for "
                f"other sizes of the None dimension(s) ({type(e).__name__}: {e}); it needs "
                f"the size it was traced with")
            return
        finally:
            if saved is not None:
                _restore_states(saved)
        outs = (out,) if op.num_outputs == 1 else tuple(out)
        for vid, sv in zip(out_vids, outs):
            real = g.values[vid].traced
            rs, ss = np.shape(real), np.shape(sv)
            self.shadow[vid] = sv
            if rs != ss:
                if len(rs) != len(ss):
                    self.not_generic = (f"op '{op.name}' gives results of another rank for "
                                        f"other sizes of the None dimension(s)")
                    return
                self.dyn[vid] = tuple(a != b for a, b in zip(rs, ss))

    def dynamic_dims(self, t) -> tuple | None:
        """Per-dim "varies with the None dimensions" flags of a traced tensor, or None."""
        vid = self.ids.get(id(t))
        return None if vid is None else self.dyn.get(vid)

    def record_assign(self, var: Variable, method: str, value) -> None:
        """Called by Variable.assign/assign_add/assign_sub just before the update."""
        if threading.get_ident() != self.thread:
            return
        if self.shadow and isinstance(value, Tensor) and self.not_generic is None:
            vid = self.ids.get(id(value))
            if vid in self.shadow and np.shape(self.shadow[vid]) != np.shape(value._rv):
                self.not_generic = (f"{method} of Variable '{var.name}' takes a value whose "
                                    f"shape varies with the None dimension(s)")
        self.assigned.setdefault(id(var), (var, var._rv))
        if isinstance(value, Tensor):
            vid = self.vid_of(value)
        else:
            from layerkit._core.convert import to_array

            vid = self.const(to_array(value))
        g = self.graph
        g.add_node(Node("assign", ins=[vid], var=var, method=method))
        g.variables[id(var)] = var
        self._reads.pop(id(var), None)   # later reads see the new value

    def record_update(self, variables: list) -> None:
        """Called before a Python-call node changes ``variables`` (perhaps in place): a
        dry run keeps a copy of each to restore afterwards."""
        if self.dry_run and threading.get_ident() == self.thread:
            for var in variables:
                self.assigned.setdefault(id(var), (var, np.array(var._rv, copy=True)))

    def record_read_value(self, var: Variable, tensor: Tensor) -> None:
        """Called by Variable.value()/read_value(): the snapshot is a live read."""
        if threading.get_ident() != self.thread:
            return
        self.variables_read.setdefault(id(var), var)
        vid = self._read(var)
        self.ids[id(tensor)] = vid
        self._keep.append(tensor)
        if type(tensor) is Tensor:
            tensor.__class__ = TracedTensor

    # ---- leaks -------------------------------------------------------------------------------
    def leak(self, frame) -> None:
        if threading.get_ident() != self.thread or len(self.leaks) > 20:
            return
        code = frame.f_code
        reader = f"{code.co_name} ({code.co_filename}:{frame.f_lineno})"
        user = user_frame(frame)
        msg = f"{reader} reads a traced tensor's values outside a recorded op"
        if user is not None and user is not frame:
            msg += f", called from {where(user)}"
        if msg not in self.leaks:
            self.leaks.append(msg)


def resized(a: np.ndarray, dyn: tuple, size) -> np.ndarray:
    """``a`` with each flagged dimension of size ``n`` made ``size(n)`` long (its entries
    repeated cyclically; zeros if it was empty)."""
    for axis, d in enumerate(dyn):
        if d:
            n, m = a.shape[axis], size(a.shape[axis])
            if m != n:
                a = np.take(a, np.arange(m) % n, axis=axis) if n else np.zeros(
                    a.shape[:axis] + (m,) + a.shape[axis + 1:], a.dtype)
    return a


def _grown(a: np.ndarray, dyn: tuple) -> np.ndarray:
    # The shadow of a parameter: each symbolic dimension one longer.
    return resized(a, dyn, lambda n: n + 1)


def _save_states(attrs: dict) -> list:
    # A stateful record (a random draw) runs on shadows with its generators' states put
    # back afterwards: the global one and any attribute that has get_state/set_state.
    from layerkit.primitives import random as _random

    saved = [(_random, _random.get_state())]
    for v in attrs.values():
        if hasattr(v, "get_state") and hasattr(v, "set_state"):
            saved.append((v, v.get_state()))
    return saved


def _restore_states(saved: list) -> None:
    for obj, state in saved:
        obj.set_state(state)


def dynamic_dims(t) -> tuple | None:
    """For a tensor traced by an active tracer: per-dim flags of the dimensions that vary
    with the function's ``None`` input dimensions (None if none vary)."""
    if type(t) is not TracedTensor:
        return None
    tr = _owner(t)
    return None if tr is None else tr.dynamic_dims(t)


def tracing() -> bool:
    """True while some lk.function is being traced on this thread."""
    me = threading.get_ident()
    return any(t.thread == me for t in _ACTIVE)
