"""The graph to export: one ``lk.function`` trace per size of each dynamic dimension.

A traced graph has concrete shapes, and some attributes and constants hold sizes that
came from the batch size (a ``reshape`` to ``(batch * 5, 8)``, the zero initial state
of an RNN). To tell those apart from fixed sizes, the function is traced once at base
sizes and once more per dynamic dimension with only that dimension changed. The traces
must have the same nodes; every size that differs between them is expressed as
``coef * product(symbols)`` (:class:`Dim`) and checked against each trace, so a size
that does not scale that way (``batch + 1``) is an error where it is used, never a
silently baked-in number.

Each node also gets the layer it was recorded in (the stack of Keras-style layer calls)
and the user's line, for error messages; each Variable read gets a name from the layer
that read it (``model/dense/kernel``), used for its ONNX initializer.
"""
from __future__ import annotations

import sys
import threading
from fractions import Fraction
from math import prod

import numpy as np

from layerkit._core import context
from layerkit._core.nest import flatten
from layerkit._core.nest import pack_sequence_as as pack_like
from layerkit._core.variable import Variable
from layerkit.autodiff.function import trace as _tracing
from layerkit.autodiff.function.api import Function
from layerkit.layers import layer as _layer

BATCH = "batch"
_BATCH_SIZES = (2, 3)     # base and changed size of the batch dimension
_OTHER_SIZES = (8, 16)    # of any other dynamic dimension (powers of 2 survive pooling)


class ExportError(ValueError):
    """The function cannot be written as ONNX (the message says why and where)."""


class Dim:
    """A size that depends on dynamic dimensions: ``coef * product(syms)``."""

    __slots__ = ("coef", "syms")

    def __init__(self, coef: Fraction, syms: tuple) -> None:
        self.coef = coef
        self.syms = syms

    def __eq__(self, other) -> bool:
        return isinstance(other, Dim) and (self.coef, self.syms) == (other.coef, other.syms)

    def __hash__(self) -> int:
        return hash((self.coef, self.syms))

    def __repr__(self) -> str:
        s = "*".join(self.syms)
        if self.coef.numerator != 1:
            s = f"{self.coef.numerator}*{s}"
        if self.coef.denominator != 1:
            s = f"{s}/{self.coef.denominator}"
        return s


class Symbol:
    """One dynamic dimension: its name, trace sizes and the (input, axis) pairs it sizes."""

    __slots__ = ("name", "base", "alt", "uses")

    def __init__(self, name: str, base: int, alt: int) -> None:
        self.name, self.base, self.alt = name, base, alt
        self.uses: list = []


class NotScaling(ExportError):
    """A size or attribute that changes with a dynamic dimension but not proportionally."""


class Traced:
    """The base trace plus what the other traces said about dynamic sizes."""

    def __init__(self) -> None:
        self.graph = None
        self.nodes: list = []
        self.symbols: list[Symbol] = []
        self.inputs: list = []       # (name, vid, symbolic shape, dtype) per graph input
        self.shapes: dict = {}       # vid -> symbolic shape (ints, Dims, None = not affine)
        self.dyn_attrs: dict = {}    # id(node) -> {attr: symbolic value or NotScaling}
        self.dyn_consts: dict = {}   # vid -> ("fill", scalar, shape) | ("dims", dims) | str
        self.where: dict = {}        # id(node) -> "in layer 'm/dense' at file:line"
        self.var_names: dict = {}    # id(Variable) -> path of the layer that read it


# ---- where each node came from ------------------------------------------------------------
class _Annotator:
    """A recorder pushed after the tracer: notes the layer stack and user line of each
    node the tracer just appended, and the layer that read each Variable."""

    tracing = True   # not a tape: code that tells tracers from tapes leaves it alone

    def __init__(self) -> None:
        self.where: dict = {}
        self.var_names: dict = {}
        self.keep: list = []
        self.thread = threading.get_ident()
        self.tracer = None
        self.outer = None

    def __enter__(self) -> _Annotator:
        self.tracer = _tracing._ACTIVE[-1] if _tracing._ACTIVE else None
        self.outer = _tracing.user_frame(sys._getframe(1))
        context.push(self)
        return self

    def __exit__(self, *exc) -> None:
        context.pop(self)

    @staticmethod
    def _layer_path() -> str:
        return "/".join(layer.name for layer, _ in _layer._STACK)

    def record(self, op, ins, outs, attrs) -> None:
        if threading.get_ident() != self.thread or self.tracer is None or op.forward is None:
            return
        for t in ins:
            if isinstance(t, Variable):
                self.read_variable(t)
        nodes = self.tracer.graph.nodes
        if not nodes or nodes[-1].op is not op or id(nodes[-1]) in self.where:
            return
        parts = []
        path = self._layer_path()
        if path:
            parts.append(f"in layer '{path}'")
        user = _tracing.user_frame(sys._getframe(1))
        if user is not None and user is not self.outer:
            parts.append(f"at {_tracing.where(user)}")
        self.where[id(nodes[-1])] = " ".join(parts)
        self.keep.append(nodes[-1])

    def read_variable(self, var) -> None:
        if threading.get_ident() == self.thread and id(var) not in self.var_names:
            path = self._layer_path()
            self.var_names[id(var)] = f"{path}/{var.name}" if path else var.name


# ---- tracing ------------------------------------------------------------------------------
def _example(spec, sizes: dict, k: int):
    shape = tuple(sizes[(k, i)] if d is None else d for i, d in enumerate(spec.shape))
    dt = np.dtype(spec.dtype)
    return np.zeros(shape, dt) if dt.kind in "iu" else np.ones(shape, dt)


def _trace_once(fn, signature: list, sizes: dict, name: str):
    flat = flatten(signature)
    arrays = [_example(s, sizes, k) for k, s in enumerate(flat)]
    args = pack_like(signature, arrays)
    annot = _Annotator()

    def call(*a):
        with annot:
            return fn(*a)

    f = Function(call, jit=False, name=name)
    cf = f.get_concrete_function(*args)
    if cf.provisional:  # the first call created weights (random draws): trace again
        cf = f.get_concrete_function(*args)
    if cf.mode != "graph":
        raise ExportError(f"ONNX export of '{name}': the function cannot be traced into a "
                          f"graph: {cf.eager_reason or 'it runs eagerly'}")
    for n in cf.ops_nodes:
        if n.kind == "assign":
            raise ExportError(f"ONNX export of '{name}': the function assigns to Variable "
                              f"'{n.var.name}'; an exported model must be pure inference "
                              f"(BatchNormalization and Dropout run with training=False)")
    return cf, annot


def trace(fn, signature: list, names: list, name: str) -> Traced:
    """Trace ``fn(*signature)`` at base sizes and once per dynamic dimension.

    Args:
        fn: the callable to trace (tensors in, tensors out).
        signature: one structure of TensorSpecs per positional argument.
        names: the ONNX input name of each flat spec.
        name: the function name for messages.
    """
    flat = flatten(signature)
    symbols: dict = {}
    for k, (spec, nm) in enumerate(zip(flat, names)):
        if spec.shape is None:
            raise ExportError(f"ONNX export of '{name}': input '{nm}' needs a shape (rank) "
                              f"in the input signature")
        for axis, d in enumerate(spec.shape):
            if d is not None:
                continue
            sym = BATCH if axis == 0 else f"{nm}_dim{axis}"
            if sym not in symbols:
                symbols[sym] = Symbol(sym, *(_BATCH_SIZES if axis == 0 else _OTHER_SIZES))
            symbols[sym].uses.append((k, axis))
    syms = list(symbols.values())

    def sizes_for(changed):
        return {use: (s.alt if s is changed else s.base) for s in syms for use in s.uses}

    base_cf, annot = _trace_once(fn, signature, sizes_for(None), name)
    alts = [_trace_once(fn, signature, sizes_for(s), name)[0] for s in syms]
    t = Traced()
    t.graph, t.nodes, t.symbols = base_cf.graph, list(base_cf.ops_nodes), syms
    t.where, t.var_names = annot.where, annot.var_names
    _compare(t, base_cf, alts, name)
    g = t.graph
    t.inputs = [(nm, vid, t.shapes[vid], g.values[vid].dtype) for nm, vid in zip(names, g.params)]
    return t


# ---- comparing the traces -------------------------------------------------------------------
def _same(a, b) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return (isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and a.dtype == b.dtype
                and a.shape == b.shape and np.array_equal(a, b))
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return type(a) is type(b) and len(a) == len(b) and all(map(_same, a, b))
    if type(a) is not type(b):
        return False
    try:
        return bool(a == b)
    except (TypeError, ValueError):
        return a is b


def scaled(base: int, alts: list, syms: list):
    """``base`` as an int (unchanged in every trace), a :class:`Dim`, or None."""
    changed = [k for k, a in enumerate(alts) if a != base]
    if not changed:
        return base
    coef = Fraction(base, prod(syms[k].base for k in changed))
    for k in changed:
        want = coef * syms[k].alt * prod(syms[j].base for j in changed if j != k)
        if want != alts[k]:
            return None
    return Dim(coef, tuple(sorted(syms[k].name for k in changed)))


def _sym_attr(base, alts: list, syms: list, what: str):
    if all(_same(base, a) for a in alts):
        return base
    if type(base) is int and all(type(a) is int for a in alts):
        d = scaled(base, alts, syms)
        if d is None:
            raise NotScaling(f"{what} is {base} and changes to {alts} with the dynamic "
                             f"dimensions, not in proportion to them")
        return d
    if isinstance(base, (tuple, list)) and all(
            type(a) is type(base) and len(a) == len(base) for a in alts):
        return type(base)(_sym_attr(b, [a[i] for a in alts], syms, what)
                          for i, b in enumerate(base))
    raise NotScaling(f"{what} ({base!r}) changes with the dynamic dimensions "
                     f"(to {alts!r})")


def _dyn_const(a, alts: list, syms: list):
    """How a constant that differs between traces can be rebuilt at run time."""
    if all(np.ndim(x) == np.ndim(a) for x in alts):
        shape = tuple(scaled(d, [np.shape(x)[i] for x in alts], syms)
                      for i, d in enumerate(np.shape(a)))
        flat = [np.asarray(x).reshape(-1) for x in (a, *alts)]
        if all(f.size for f in flat) and None not in shape:
            first = flat[0][0]
            if all((f == first).all() for f in flat):
                return ("fill", np.asarray(first, np.asarray(a).dtype), shape)
        if (np.ndim(a) <= 1 and np.asarray(a).dtype.kind in "iu"
                and all(np.shape(x) == np.shape(a) for x in alts)):
            dims = tuple(scaled(int(v), [int(np.reshape(x, -1)[i]) for x in alts], syms)
                         for i, v in enumerate(np.reshape(a, -1)))
            if None not in dims:
                return ("dims", dims)
    return (f"a constant of shape {np.shape(a)} whose values change with the dynamic "
            f"dimensions (neither a filled array nor sizes proportional to them)")


def _mismatch(name: str, sym: Symbol, what: str) -> ExportError:
    return ExportError(
        f"ONNX export of '{name}': the traced graph changes with the size of dynamic "
        f"dimension '{sym.name}' ({what}): the Python code depends on that size (a loop "
        f"over it, a branch on it). Give that dimension a fixed size in input_signature.")


def _compare(t: Traced, base_cf, alts: list, name: str) -> None:
    g = base_cf.graph
    syms = t.symbols
    graphs = [cf.graph for cf in alts]
    maps = [dict(zip(g.params, ga.params)) for ga in graphs]
    alt_nodes = [list(cf.ops_nodes) for cf in alts]
    consts: dict = {}
    for s, nodes in zip(syms, alt_nodes):
        if len(nodes) != len(t.nodes):
            raise _mismatch(name, s, f"{len(t.nodes)} nodes at one size, {len(nodes)} at "
                                     f"another")
    for i, n in enumerate(t.nodes):
        others = [nodes[i] for nodes in alt_nodes]
        what = n.op.name if n.op is not None else n.kind
        for k, (s, ga, m, o) in enumerate(zip(syms, graphs, maps, others)):
            if (o.kind != n.kind or o.op is not n.op or o.var is not n.var
                    or len(o.ins) != len(n.ins) or len(o.outs) != len(n.outs)):
                raise _mismatch(name, s, f"node {i}, '{what}', differs")
            for a, b in zip(n.ins, o.ins):
                if g.values[a].kind == "const":
                    if ga.values[b].kind != "const":
                        raise _mismatch(name, s, f"an input of '{what}' is a constant at "
                                                 f"one size only")
                    consts.setdefault(a, [None] * len(syms))[k] = ga.values[b].const
                elif m.setdefault(a, b) != b:
                    raise _mismatch(name, s, f"the inputs of node {i}, '{what}', differ")
            for a, b in zip(n.outs, o.outs):
                m[a] = b
        if n.kind == "op":
            dyn = {}
            for key, val in n.attrs.items():
                vals = [o.attrs.get(key) for o in others]
                if not all(_same(val, v) for v in vals):
                    try:
                        dyn[key] = _sym_attr(val, vals, syms, f"attribute '{key}' of '{what}'")
                    except NotScaling as e:
                        dyn[key] = e
            if dyn:
                t.dyn_attrs[id(n)] = dyn
    for k, ga in enumerate(graphs):   # constants returned as outputs
        for (kind, a), (_, b) in zip(g.outputs, ga.outputs):
            if kind == "value" and g.values[a].kind == "const":
                consts.setdefault(a, [None] * len(syms))[k] = ga.values[b].const
    for vid, vals in consts.items():
        a = g.values[vid].const
        if not all(_same(a, v) for v in vals):
            t.dyn_consts[vid] = _dyn_const(a, vals, syms)
    # Symbolic shapes of the values, from the same value in each trace.
    for vid, v in enumerate(g.values):
        if v.kind == "const" or v.shape is None:
            continue
        shapes = [ga.values[m[vid]].shape if vid in m else None for ga, m in zip(graphs, maps)]
        if any(s is None or len(s) != len(v.shape) for s in shapes):
            t.shapes[vid] = tuple(v.shape)
            continue
        t.shapes[vid] = tuple(scaled(d, [s[i] for s in shapes], syms)
                              for i, d in enumerate(v.shape))
