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

Library code that reads a traced tensor's array (``t._v``) outside a recorded op, for
anything but its shape or dtype, takes data out of the graph where later calls cannot
see it (a mask computed in NumPy inside a gradient rule, an optimizer updating arrays
in place). Those reads are detected (the reading frame is checked against the known
recording and metadata paths below) and the function then runs eagerly on every call,
with a warning that names the reading line: slower, never wrong.
"""
from __future__ import annotations

import linecache
import os
import sys
import threading

import numpy as np

from layerkit._core import context
from layerkit._core.tensor import Tensor
from layerkit._core.variable import Variable
from layerkit.autodiff.function.graph import Graph, Node, is_stateful_op

_SLOT = Tensor.__dict__["_v"]
_get_v = _SLOT.__get__
_set_v = _SLOT.__set__

_PKG_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_ACTIVE: list = []          # tracers currently tracing (any thread)
_SAFE: set = set()          # code objects allowed to read a traced tensor's array
_SAFE_VIA_TO_ARRAY: set = set()
_TO_ARRAY = None


class TracingError(TypeError):
    """A traced tensor was used where its value is needed while tracing (lk.function)."""


# ---- the reader whitelist ------------------------------------------------------------------
def _code_of(obj):
    if isinstance(obj, property):
        obj = obj.fget
    return getattr(obj, "__code__", None)


def _nested_code(fn, name: str):
    code = _code_of(fn)
    if code is None:
        return None
    for c in code.co_consts:
        if hasattr(c, "co_name") and c.co_name == name:
            return c
    return None


def _init_whitelist() -> None:
    """Resolve the functions that read ``_v`` only to record an op or for shape/dtype.

    Names that no longer exist are skipped: a missing entry only makes a function fall
    back to eager execution (with a warning), never compute something wrong.
    """
    global _TO_ARRAY
    if _SAFE:
        return
    import importlib

    direct = {
        "layerkit._core.op": ["_apply_recording", "_values", "is_float"],
        "layerkit._core.tensor": ["Tensor.shape", "Tensor.dtype", "Tensor.size", "Tensor.ndim",
                                  "Tensor.__len__"],
        "layerkit.autodiff.tape": ["_is_float", "_ones", "GradientTape.record",
                                   "GradientTape._watch_one", "GradientTape.read_variable"],
        "layerkit.autodiff.backprop": ["backward", "_sweep", "_checked"],
        "layerkit.primitives.elementwise": ["_py", "_broadcast_error", "clip_by_value"],
        "layerkit.primitives.array": ["_shape_of"],
        "layerkit.primitives.reduce": ["_ndim", "_shape"],
        "layerkit.primitives.linalg": ["_shape_of", "matmul"],
        "layerkit.primitives.conv": ["_value"],
    }
    via_to_array = {
        "layerkit._core.variable": ["Variable._checked", "Variable.__init__"],
        "layerkit.primitives.creation": ["zeros_like", "ones_like"],
    }

    def resolve(table, into):
        for mod_name, names in table.items():
            try:
                mod = importlib.import_module(mod_name)
            except ImportError:
                continue
            for qual in names:
                obj = mod
                for part in qual.split("."):
                    obj = (obj.__dict__.get(part) if isinstance(obj, type) else
                           getattr(obj, part, None))
                    if obj is None:
                        break
                code = _code_of(obj) if obj is not None else None
                if code is not None:
                    into.add(code)

    resolve(direct, _SAFE)
    resolve(via_to_array, _SAFE_VIA_TO_ARRAY)
    from layerkit._core import convert

    _TO_ARRAY = convert.to_array.__code__
    cg = importlib.import_module("layerkit.autodiff.custom_gradient")
    wrapper = _nested_code(cg.custom_gradient, "wrapper")
    if wrapper is not None:  # it wraps the body's result arrays in new output Tensors
        _SAFE.add(wrapper)
        _SAFE.update(c for c in wrapper.co_consts if getattr(c, "co_name", "") == "<genexpr>")


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
def _read_v(self):
    frame = sys._getframe(1)
    if frame.f_code not in _SAFE:
        if not (frame.f_code is _TO_ARRAY and frame.f_back is not None
                and frame.f_back.f_code in _SAFE_VIA_TO_ARRAY):
            tr = _owner(self)
            if tr is not None:
                tr.leak(frame)
    return _get_v(self)


class TracedTensor(Tensor):
    """A Tensor recorded by a tracer (its value is real; Python may not branch on it)."""

    __slots__ = ()
    _v = property(_read_v, _set_v)

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

    def __repr__(self) -> str:
        return f"<traced Tensor shape={self.shape} dtype={self.dtype.name}>"

    __str__ = __repr__


# ---- the recorder ------------------------------------------------------------------------------
class Tracer:
    """Recorder that builds a :class:`Graph` while the function runs eagerly."""

    tracing = True   # lets code that sees RECORDERS tell a tracer from a tape

    def __init__(self, name: str) -> None:
        _init_whitelist()
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
        self.thread = threading.get_ident()

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
    def param(self, array, name: str, own: Tensor | None = None) -> TracedTensor:
        """A new graph input; ``own`` is the caller's Tensor to trace in place (tapes
        watching it then record the trace), else a fresh Tensor is made."""
        a = array
        v = self.graph.new_value("param", np.shape(a), getattr(a, "dtype", None), name)
        v.traced = a
        v.nd = type(a) is np.ndarray
        self.graph.params.append(v.id)
        self.graph.param_names.append(name)
        if own is not None and type(own) is Tensor and id(own) not in self.ids:
            t = own
        else:
            t = object.__new__(Tensor)
            _set_v(t, a)
        self._register(t, v.id)
        return t

    def _register(self, t: Tensor, vid: int) -> None:
        self.ids[id(t)] = vid
        self._keep.append(t)
        if type(t) is Tensor:
            t.__class__ = TracedTensor
        a = _get_v(t)
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
            return self.const(_get_v(t))
        from layerkit._core.convert import to_array

        return self.const(to_array(t))

    def _read(self, var: Variable) -> int:
        vid = self._reads.get(id(var))
        if vid is None:
            a = _get_v(var)
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
            a = _get_v(o)
            v = g.new_value("node", np.shape(a), getattr(a, "dtype", None) if not
                            isinstance(a, (bool, int, float)) else np.asarray(a).dtype)
            v.traced = a
            v.nd = type(a) is np.ndarray
            out_vids.append(v.id)
        g.add_node(Node("op", op=op, ins=in_vids, outs=out_vids, attrs=dict(attrs)))
        for o, vid in zip(outs, out_vids):
            self._register(o, vid)
        if is_stateful_op(op):
            self.stateful_ops = True

    stateful_ops = False
    has_alias = False   # a custom_gradient node: its own vjp must be used under a tape

    def _alias(self, op, outs: tuple) -> None:
        # custom_gradient records a node with no forward whose outputs wrap the arrays
        # of the body's results: those are graph values already.
        for o in outs:
            a = _get_v(o)
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

    def record_assign(self, var: Variable, method: str, value) -> None:
        """Called by Variable.assign/assign_add/assign_sub just before the update."""
        if threading.get_ident() != self.thread:
            return
        self.assigned.setdefault(id(var), (var, _get_v(var)))
        if isinstance(value, Tensor):
            vid = self.vid_of(value)
        else:
            from layerkit._core.convert import to_array

            vid = self.const(to_array(value))
        g = self.graph
        g.add_node(Node("assign", ins=[vid], var=var, method=method))
        g.variables[id(var)] = var
        self._reads.pop(id(var), None)   # later reads see the new value

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


def tracing() -> bool:
    """True while some lk.function is being traced on this thread."""
    me = threading.get_ident()
    return any(t.thread == me for t in _ACTIVE)
