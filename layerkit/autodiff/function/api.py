"""``lk.function``: trace a Python function into a graph, once per input signature.

A :class:`Function` keeps a cache of :class:`ConcreteFunction` objects keyed by the
call's signature (see :mod:`.signature`). A missing key traces: the Python function
runs once, eagerly, with a tracer recording every op (so that call returns real
results); the graph is optimised (:mod:`.passes`), its elementwise regions fused
(:mod:`.fuse`) and compiled to a flat program (:mod:`.executor`). Later calls with the
same key run the program on the arrays: no Python function, no Tensor objects.
"""
from __future__ import annotations

import copy
import functools
import inspect
import threading
import warnings
import weakref
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from layerkit._core import context
from layerkit._core.nest import flatten
from layerkit._core.nest import pack_sequence_as as pack_like
from layerkit._core.op import Op, wrap
from layerkit._core.tensor import Tensor
from layerkit._core.variable import Variable, replace_value
from layerkit.autodiff.function import executor as _executor
from layerkit.autodiff.function import fuse as _fuse
from layerkit.autodiff.function import gradient as _gradient
from layerkit.autodiff.function import passes as _passes
from layerkit.autodiff.function import trace as _trace
from layerkit.autodiff.function.signature import (
    SignatureMismatchError,
    TensorSpec,
    build_key,
    conform,
    fits,
    flatten_specs,
    generalize,
    rebuild,
    retrace_reason,
    signature_masks,
)
from layerkit.autodiff.function.trace import Tracer

_new = object.__new__
_MISSING = object()

# ``y = x`` for tapes only: links the fresh graph input made for a repeated argument.
_ALIAS = Op("alias", lambda x: x, lambda g, ins, out, needs: (g,))


def _link_repeated(tracer: Tracer, owned: list, leaves: list) -> None:
    """Record ``leaf = alias(caller's tensor)`` on the caller's tapes for each tensor
    passed more than once: the tracer traces only its first occurrence in place, so the
    other occurrences are fresh tensors that the tapes would not know (``f(x, x)`` then
    lost the gradient through the second argument on the tracing call)."""
    for o, t in zip(owned, leaves):
        if t is o or not isinstance(o, Tensor) or isinstance(o, Variable):
            continue
        for r in tuple(context.RECORDERS):
            if r is not tracer and not getattr(r, "tracing", False):
                r.record(_ALIAS, (o,), (t,), {})

# Warn from the sixth trace of one function on (TensorFlow warns at a similar count).
MAX_TRACES = 5


class RetracingWarning(UserWarning):
    """An lk.function was traced many times (each trace runs the Python function)."""


class EagerFallbackWarning(UserWarning):
    """An lk.function could not be turned into a graph and runs eagerly (still correct)."""


def _rng_state():
    try:
        from layerkit.primitives import random as _random

        return _random.get_state()
    except (ImportError, AttributeError):
        return None


def _rng_restore(state) -> None:
    if state is not None:
        from layerkit.primitives import random as _random

        _random.set_state(state)


class ConcreteFunction:
    """One traced signature of an :func:`function`: its graph and compiled program.

    Callable like the Python function, positionally or with keyword arguments; the
    Python (non-tensor) arguments it was traced with may be left out (they are part of
    the trace). Arguments that do not fit its signature raise TypeError.

    Attributes:
        graph: the optimised, fused :class:`~layerkit.autodiff.function.graph.Graph`;
            ``print(cf.graph)`` lists its nodes and fused kernels,
            ``cf.graph.get_operations()`` and ``cf.graph.as_graph_def()`` as in TF.
        mode: ``"graph"`` or ``"eager"`` (the function could not be represented as a
            graph; ``eager_reason`` says why).
    """

    def __init__(self, function: Function, key, graph, program, mode: str,
                 reason: str = "", stats: dict | None = None) -> None:
        self._function = function
        self._key = key
        self.graph = graph
        self._program = program
        self.mode = mode
        self.eager_reason = reason
        self.stats = stats or {}
        self.provisional = False
        self.ops_nodes: list = []
        self.differentiable = False
        self._backward = None
        self._backwards: dict = {}     # generic graphs: one backward per concrete shapes
        self._general: list = []       # per flat tensor argument: its shape (None = any)
        self._template: tuple = ((), {})  # the traced arguments, TensorSpecs for tensors
        self._in_specs: list = []      # the flat TensorSpecs, in argument order
        self._var_args: list = []      # the Variable arguments it was traced with
        self._variants: dict = {}      # ids of other Variable arguments -> re-bound copy
        self._out_specs: list = []
        # A single returned tensor (the common case) skips the generic packing.
        self._single = (mode == "graph" and len(graph.outputs) == 1
                        and graph.outputs[0][0] == "value" and graph.out_structure is None)

    @property
    def source(self) -> str:
        """The generated Python source of the compiled program (for debugging)."""
        return self._program.source if self._program is not None else ""

    @property
    def graph_generic(self) -> bool:
        """True if the graph serves every size of its None dimensions."""
        return bool(getattr(self.graph, "generic", False))

    # ---- signature ----------------------------------------------------------------------------
    def _set_signature(self, args, kwargs, general: list, paths: list, tracer) -> None:
        self._general = general
        arrays = build_key(args, kwargs, self._function._names).arrays
        specs = [TensorSpec(gs, np.asarray(a).dtype, name=_spec_name(p))
                 for gs, a, p in zip(general, arrays, paths)]
        self._template = rebuild(args, kwargs, specs)
        self._in_specs = specs
        outs = []
        for kind, x in self.graph.outputs:
            if kind == "value":
                v = self.graph.values[x]
                mask = tracer.dyn.get(x) if self.graph_generic else None
                outs.append(TensorSpec(generalize(tuple(v.shape), mask), v.dtype))
        self._out_specs = outs

    @property
    def structured_input_signature(self) -> tuple:
        """``(args, kwargs)`` as traced: TensorSpecs for tensors, Python values as given."""
        args, kwargs = self._template
        return tuple(args), dict(kwargs)

    @property
    def inputs(self) -> list:
        """TensorSpecs of the flat tensor inputs of the graph, in order."""
        return list(self._in_specs)

    @property
    def outputs(self) -> list:
        """TensorSpecs of the flat tensor outputs of the graph, in order."""
        return list(self._out_specs)

    @property
    def structured_outputs(self):
        """The returned structure with a TensorSpec for each tensor (Variables and Python
        values as returned)."""
        it = iter(self._out_specs)
        leaves = [next(it) if kind == "value" else x for kind, x in self.graph.outputs]
        if self.graph.out_structure is None:
            return leaves[0] if leaves else None
        return pack_like(self.graph.out_structure, leaves)

    @property
    def name(self) -> str:
        """The traced function's name."""
        return str(self._function._name)

    def pretty_printed_signature(self, verbose: bool = True) -> str:
        """The inputs, output type and captured Variables, as text (TensorFlow's layout)."""
        args, kwargs = self._template
        names = self._function._names
        lines = ["Input Parameters:"]
        for i, arg in enumerate(args):
            nm = names[i] if i < len(names) else f"args_{i}"
            lines.append(f"  {nm} (POSITIONAL_OR_KEYWORD): {_type_str(arg)}")
        for k, arg in kwargs.items():
            lines.append(f"  {k} (KEYWORD_ONLY): {_type_str(arg)}")
        lines.append("Output Type:")
        lines.append(f"  {_type_str(self.structured_outputs)}")
        lines.append("Captures:")
        caps = [f"  Variable '{v.name}': TensorSpec(shape={tuple(v.shape)}, dtype={v.dtype.name})"
                for v in self.graph.variables.values()]
        lines.extend(caps if (caps and verbose) else ["  None"] if not caps else
                     [f"  {len(caps)} Variable(s)"])
        return "\n".join(lines)

    # ---- calling --------------------------------------------------------------------------------
    def __call__(self, *args, **kwargs):
        f = self._function
        args, kwargs = self._bind(args, kwargs)
        if f._sig is not None:
            args = conform(f._name, f._sig, args, f._names)
        ck = build_key(args, kwargs, f._names)
        self._check(ck, args, kwargs)
        if context.RECORDERS or context.FUNCTIONS_EAGERLY[0]:
            # inside a trace (inlined) or eager debugging: the Python function; under a
            # tape: one tape node if the graph allows it, else the body for the tape
            if (self.mode == "graph" and self.differentiable and not _trace.tracing()
                    and not context.FUNCTIONS_EAGERLY[0]):
                return self._run_taped(ck)
            return f._python_fn(*args, **kwargs)
        return self._run(ck.arrays, args, kwargs)

    def _bind(self, args: tuple, kwargs: dict):
        """The full (args, kwargs) of a call: given ones by position or name, the others
        from the trace (Python values only; a missing tensor argument is an error)."""
        targs, tkwargs = self._template
        names = self._function._names
        order = [names[i] if i < len(names) else f"args_{i}" for i in range(len(targs))]
        built: dict = dict(zip(order, targs))
        built.update(tkwargs)
        order += list(tkwargs)
        n_traced = len(order)
        sig = self._function._pysig
        if sig is not None:  # parameters left to their defaults when tracing
            for k, p in sig.parameters.items():
                if k not in built and p.default is not p.empty and p.kind in (
                        p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY):
                    built[k] = p.default
                    order.append(k)
        tensor_keys = [k for k in order if _has_spec(built[k])]
        fname = self._function._name
        if len(args) > len(order):
            raise TypeError(f"ConcreteFunction '{fname}' takes {len(order)} argument(s) "
                            f"({', '.join(order)}), received {len(args)} positional")
        targets = tensor_keys if len(args) <= len(tensor_keys) else order
        given = dict(zip(targets, args))
        for k, v in kwargs.items():
            if k not in built:
                raise TypeError(f"ConcreteFunction '{fname}' got an unexpected keyword argument "
                                f"'{k}'; its arguments are {', '.join(order)}")
            if k in given:
                raise TypeError(f"ConcreteFunction '{fname}' got multiple values for "
                                f"argument '{k}'")
            given[k] = v
        values = {}
        for k in order:
            spec = built[k]
            if k in given:
                v = given[k]
                if not _has_spec(spec) and not _same_python(v, spec):
                    raise TypeError(f"ConcreteFunction '{fname}': argument '{k}' was traced "
                                    f"with the Python value {spec!r}, received {v!r}; call "
                                    f"the lk.function itself to trace for another value")
                values[k] = v
            elif _has_spec(spec):
                raise TypeError(f"ConcreteFunction '{fname}' missing required argument '{k}' "
                                f"(expected {_type_str(spec)})")
            else:
                values[k] = spec
        n = len(targs)
        return (tuple(values[k] for k in order[:n]),
                {k: values[k] for k in order[n:n_traced]})

    def _check(self, ck, args, kwargs) -> None:
        specs = self._in_specs
        fname = self._function._name
        if len(specs) != len(ck.arrays):
            raise TypeError(f"ConcreteFunction '{fname}': the arguments do not match the traced "
                            f"signature ({len(specs)} tensor(s) expected, received "
                            f"{len(ck.arrays)}); call the lk.function itself to retrace")
        for spec, a in zip(specs, ck.arrays):
            if a.dtype != spec.dtype:
                raise TypeError(f"ConcreteFunction '{fname}': argument '{spec.name}' does not "
                                f"match the traced signature: expected {spec}, received a "
                                f"tensor of dtype {a.dtype.name} and shape {a.shape}")
            if not fits(np.shape(a), spec.shape):
                raise SignatureMismatchError(
                    f"ConcreteFunction '{fname}': argument '{spec.name}' does not match the "
                    f"traced signature: expected {spec}, received a tensor of shape "
                    f"{a.shape} and dtype {a.dtype.name}")
        if not self.graph_generic and ck.key != self._key:
            raise TypeError(f"ConcreteFunction '{fname}': the arguments do not match the "
                            f"traced signature; call the lk.function itself to retrace")

    def _rebound(self, variables: list):
        """A copy whose graph reads and assigns ``variables`` where this one's reads and
        assigns its own Variable arguments (compiled again; the Python function does not
        run), or None if a node holds them otherwise (a Python-call node updating one)."""
        key = tuple(id(v) for v in variables)
        cf = self._variants.get(key)
        if cf is not None:
            return cf
        mapping = {id(a): b for a, b in zip(self._var_args, variables) if a is not b}
        g = self.graph
        for n in _all_nodes(g):
            if n.kind == "op" and any(_holds(v, mapping) for v in n.attrs.values()):
                return None
        nodes = [_with_var(n, mapping) for n in g.nodes]
        g2 = g.clone(nodes)
        g2.outputs = [(k, mapping.get(id(x), x)) if k == "var" else (k, x)
                      for k, x in g.outputs]
        g2.variables = {id(v): v for v in (mapping.get(i, v) for i, v in g.variables.items())}
        cf = ConcreteFunction(self._function, self._key, g2,
                              _executor.ShapePlans(g2) if g2.generic else _executor.Program(g2),
                              "graph", stats=self.stats)
        for name in ("_general", "_template", "_in_specs", "_out_specs"):
            setattr(cf, name, getattr(self, name))
        cf._var_args = list(variables)
        cf.ops_nodes = [_with_var(n, mapping) for n in self.ops_nodes]
        if len(self._variants) < 64:
            self._variants[key] = cf
        return cf

    def _run_taped(self, ck):
        if self.graph_generic:
            key = tuple(np.shape(a) for a in ck.arrays)
            bw = self._backwards.get(key)
            if bw is None:
                bw = self._backwards[key] = _gradient.Backward(self, ck.arrays,
                                                               self._function._jit)
        else:
            bw = self._backward
            if bw is None:
                bw = self._backward = _gradient.Backward(self, ck.arrays, self._function._jit)
        it = iter(bw.call(self._function._name, ck.leaves, ck.arrays))
        leaves = [next(it) if kind == "value" else x for kind, x in self.graph.outputs]
        return pack_like(self.graph.out_structure, leaves)

    def _run(self, arrays: list, args: tuple, kwargs: dict):
        if self.mode == "eager":
            return self._function._python_fn(*args, **kwargs)
        flat = self._program.run(arrays)
        if self._single:
            t = _new(Tensor)
            t._v = flat[0]
            return t
        it = iter(flat)
        leaves = []
        for kind, x in self.graph.outputs:
            if kind == "value":
                leaves.append(wrap(next(it)))
            else:
                leaves.append(x)
        return pack_like(self.graph.out_structure, leaves)

    def __repr__(self) -> str:
        return f"<ConcreteFunction {self._function._name} mode={self.mode}>"


def _all_nodes(g):
    for n in g.nodes:
        if n.kind == "fused":
            yield from n.region.members
        else:
            yield n


def _holds(value, mapping: dict) -> bool:
    # An attribute that refers to a mapped Variable (directly or as a Python call's update).
    if id(value) in mapping:
        return True
    changed = getattr(value, "changed", None)
    if callable(changed):
        return any(id(v) in mapping for v in changed())
    if isinstance(value, (list, tuple)):
        return any(_holds(v, mapping) for v in value)
    return False


def _with_var(n, mapping: dict):
    if n.kind in ("read", "assign") and id(n.var) in mapping:
        m = copy.copy(n)
        m.var = mapping[id(n.var)]
        return m
    return n


def _spec_name(path: str) -> str:
    # "x[0]['a']" -> "x_0_a" (TensorFlow names the flat inputs of nested arguments so)
    out = path
    for ch in "[]'\"":
        out = out.replace(ch, "_" if ch == "[" else "")
    return out


def _has_spec(x) -> bool:
    return any(isinstance(v, TensorSpec) for v in flatten(x))


def _same_python(a, b) -> bool:
    try:
        return type(a) is type(b) and bool(a == b)
    except Exception:  # noqa: BLE001 - objects without a truthy ==
        return a is b


def _type_str(x) -> str:
    if isinstance(x, TensorSpec):
        return f"TensorSpec(shape={x.shape}, dtype={x.dtype.name}, name={x.name!r})"
    if isinstance(x, Variable):
        return f"Variable '{x.name}'"
    if isinstance(x, (list, tuple)) and not hasattr(x, "_fields"):
        inner = ", ".join(_type_str(v) for v in x)
        return f"List[{inner}]" if isinstance(x, list) else f"Tuple[{inner}]"
    if isinstance(x, dict):
        return "Dict[" + ", ".join(f"{k!r}: {_type_str(v)}" for k, v in x.items()) + "]"
    return f"Literal[{x!r}]"


class Function:
    """A Python function traced into graphs (see :func:`function`)."""

    def __init__(self, fn, input_signature=None, jit: bool = True, name: str | None = None,
                 reduce_retracing: bool = False, autograph: bool = True):
        if not callable(fn):
            raise TypeError(f"lk.function expects a callable, received {type(fn).__name__}")
        self._python_fn = fn
        self._autograph = bool(autograph)
        self._converted = None
        self._name = name or getattr(fn, "__name__", type(fn).__name__)
        self._jit = bool(jit)
        if input_signature is not None:
            input_signature = tuple(input_signature)
            flatten_specs(input_signature)  # validates
        self._sig = input_signature
        try:
            self._pysig = inspect.signature(fn)
            params = self._pysig.parameters
            self._names = [p for p, v in params.items()
                           if v.kind in (v.POSITIONAL_ONLY, v.POSITIONAL_OR_KEYWORD)]
        except (TypeError, ValueError):
            self._pysig = None
            self._names = []
        self._cache: dict = {}
        self._lock = threading.RLock()
        self._last_descs = None
        self._bound: dict = {}
        self.trace_count = 0
        self._reduce_retracing = bool(reduce_retracing)
        # Traces with symbolic (None) dimensions, per call structure (the key with each
        # shape replaced by its rank): [(general shapes, ConcreteFunction)]; structures
        # whose trace could not be generic; and (reduce_retracing) the shapes last traced.
        self._generic: dict = {}
        self._not_generic: set = set()
        self._seen: dict = {}
        functools.update_wrapper(self, fn, updated=())

    @property
    def python_function(self):
        """The wrapped Python function."""
        return self._python_fn

    @property
    def input_signature(self):
        """The ``input_signature`` given to :func:`function` (None if none was)."""
        return self._sig

    def _traced_fn(self):
        """The function that tracing runs: the AutoGraph-converted Python function
        (``layerkit.autograph``), or the function itself with ``autograph=False``."""
        conv = self._converted
        if conv is None:
            conv = self._python_fn
            if self._autograph:
                from layerkit.autograph.transformer import convert_callable

                conv = convert_callable(conv)
            self._converted = conv
        return conv

    def experimental_get_tracing_count(self) -> int:
        """How many times the Python function was traced (TensorFlow's name)."""
        return self.trace_count

    def concrete_functions(self) -> list:
        """The distinct traced :class:`ConcreteFunction` objects, in tracing order."""
        seen, out = set(), []
        for cf in self._cache.values():
            if id(cf) not in seen and not cf.provisional:
                seen.add(id(cf))
                out.append(cf)
        return out

    def pretty_printed_concrete_signatures(self, verbose: bool = True) -> str:
        """The signatures of every traced concrete function, one block each (TF's format)."""
        return "\n\n".join(cf.pretty_printed_signature(verbose)
                            for cf in self.concrete_functions())

    # ---- calling ------------------------------------------------------------------------
    def __call__(self, *args, **kwargs):
        if context.RECORDERS or context.FUNCTIONS_EAGERLY[0]:
            return self._call_recorded(args, kwargs)
        if not kwargs and self._sig is None:
            # Fast path: positional Tensor arguments and a single returned tensor.
            arrays, parts = [], []
            for x in args:
                if type(x) is not Tensor:
                    break
                a = x._v
                if type(a) is not np.ndarray:
                    break
                arrays.append(a)
                parts.append((a.shape, a.dtype))
            else:
                cf = self._cache.get(tuple(parts))
                if cf is not None and cf._single:
                    t = _new(Tensor)
                    t._v = cf._program.run(arrays)[0]
                    return t
        args, kwargs, ck, cf = self._lookup(args, kwargs)
        if cf is None or cf.provisional:
            return self._trace(args, kwargs, ck, previous=cf)[1]
        return cf._run(ck.arrays, args, kwargs)

    def _lookup(self, args, kwargs, private: bool = False):
        """``args``/``kwargs`` conformed to the input signature (if any: keyword arguments
        become positional), their cache key and entry.

        With ``private`` (a call under a tape, which keeps the inputs until the gradient)
        the caller's NumPy arrays are replaced by copies: the caller may change them
        meanwhile (TensorFlow converts them to tensors, which copies too)."""
        if self._sig is not None:
            if kwargs:
                args, kwargs = self._positional(args, kwargs), {}
            args = conform(self._name, self._sig, args, self._names, copy=private)
        ck = build_key(args, kwargs, self._names)
        if private and any(isinstance(x, np.ndarray) for x in ck.leaves):
            args, kwargs = rebuild(args, kwargs, [np.array(x) if isinstance(x, np.ndarray)
                                                  else x for x in ck.leaves])
            ck = build_key(args, kwargs, self._names)
        cf = self._cache.get(ck.key)
        if cf is None and self._generic:
            cf = self._match_generic(args, kwargs, ck)
        if ck.variables and cf is not None and not cf.provisional:
            cf = self._for_variables(cf, ck)
        return args, kwargs, ck, cf

    def _for_variables(self, cf, ck):
        """The trace for this call's Variable arguments: ``cf`` itself, ``cf`` re-bound to
        other Variables (no retrace), or, if its graph cannot be re-bound, the trace kept
        for these very Variables (``ck.key`` then names them; None if there is none)."""
        if cf.mode != "graph" or all(a is b for a, b in zip(cf._var_args, ck.variables)):
            return cf
        other = cf._rebound(ck.variables)
        if other is not None:
            return other
        ck.key = ck.key + (("variables",) + tuple(id(v) for v in ck.variables),)
        ck.refs.extend(ck.variables)
        return self._cache.get(ck.key)

    def _positional(self, args: tuple, kwargs: dict) -> tuple:
        """Keyword arguments of a function with an input_signature put in their places."""
        names = self._names
        out = list(args)
        for k, v in kwargs.items():
            if k not in names:
                raise TypeError(f"lk.function '{self._name}' got an unexpected keyword "
                                f"argument '{k}'; its arguments are {', '.join(names)}")
            i = names.index(k)
            if i < len(args):
                raise TypeError(f"lk.function '{self._name}' got multiple values for "
                                f"argument '{k}'")
            out.extend([_MISSING] * (i + 1 - len(out)))
            out[i] = v
        for i, v in enumerate(out):
            if v is _MISSING:
                raise TypeError(f"lk.function '{self._name}' missing required argument "
                                f"'{names[i]}'")
        return tuple(out)

    def _structure(self, args, kwargs):
        return build_key(args, kwargs, self._names, shape_key=len).key

    def _match_generic(self, args, kwargs, ck):
        """A trace with None dimensions that serves these arguments (remembered for their
        concrete key), or None."""
        entries = self._generic.get(self._structure(args, kwargs))
        if entries:
            shapes = [np.shape(a) for a in ck.arrays]
            for general, cf in entries:
                if all(fits(s, gs) for s, gs in zip(shapes, general)):
                    if len(self._cache) < 4096:
                        self._cache[ck.key] = cf
                    return cf
        return None

    def _masks(self, args, kwargs, ck, marks: dict | None = None):
        """Per flat tensor argument: the dimensions to trace as symbolic (or None):
        ``None`` dimensions of the input_signature or of TensorSpecs given to
        get_concrete_function, and with ``reduce_retracing`` the dimensions that differ
        from the previous trace of the same structure."""
        n = len(ck.arrays)
        masks: list = [None] * n
        if self._sig is not None:
            masks = signature_masks(self._sig, ck.arrays)
        if marks:
            masks = [marks.get(id(a), m) for a, m in zip(ck.arrays, masks)]
        structure = None
        if self._reduce_retracing:
            structure = self._structure(args, kwargs)
            shapes = [np.shape(a) for a in ck.arrays]
            prev = self._seen.get(structure)
            self._seen[structure] = shapes
            if prev is not None:
                masks = [tuple(x != y for x, y in zip(p, s)) if m is None else m
                         for p, s, m in zip(prev, shapes, masks)]
        if not any(m and any(m) for m in masks):
            return None, structure
        if structure is None:
            structure = self._structure(args, kwargs)
        if structure in self._not_generic:
            return None, structure
        return masks, structure

    def _call_recorded(self, args, kwargs):
        # Inside another function's trace: inline (the outer trace records the ops);
        # lk.config.run_functions_eagerly(True): run the Python function (TF's debug mode).
        if _trace.tracing():
            return self._traced_fn()(*args, **kwargs)
        if context.FUNCTIONS_EAGERLY[0]:
            return self._python_fn(*args, **kwargs)
        # Under a GradientTape. A first call traces on the caller's own tensors, so the
        # tape records that eager run; later calls of a pure graph are one tape node
        # whose vjp is the compiled backward graph (gradient.py); anything else (assigns,
        # stateful ops, custom gradients) runs its body eagerly for the tape to record.
        args, kwargs, ck, cf = self._lookup(args, kwargs, private=True)
        if cf is None or cf.provisional:
            return self._trace(args, kwargs, ck, previous=cf, own=True)[1]
        if cf.mode == "graph" and cf.differentiable:
            return cf._run_taped(ck)
        return self._python_fn(*args, **kwargs)

    def __get__(self, instance, owner):
        if instance is None:
            return self
        key = id(instance)
        entry = self._bound.get(key)
        if entry is not None and entry[0]() is instance:
            return _BoundFunction(entry[1], instance)
        # One Function (its own cache) per instance, holding the instance weakly so the
        # cache does not keep it alive.
        try:
            ref = weakref.ref(instance, lambda _, k=key: self._bound.pop(k, None))
        except TypeError:
            ref = lambda inst=instance: inst  # noqa: E731 - not weak-referenceable
        fn, traced = self._python_fn, self._traced_fn

        def method(*args, **kwargs):
            return (traced() if _trace.tracing() else fn)(ref(), *args, **kwargs)

        bound = Function(method, self._sig, self._jit, self._name, self._reduce_retracing,
                         autograph=False)
        bound._names = self._names[1:]
        if self._pysig is not None and self._pysig.parameters:
            bound._pysig = self._pysig.replace(
                parameters=list(self._pysig.parameters.values())[1:])
        self._bound[key] = (ref, bound)
        return _BoundFunction(bound, instance)

    # ---- tracing ------------------------------------------------------------------------
    def get_concrete_function(self, *args, **kwargs) -> ConcreteFunction:
        """The traced graph for these arguments (tracing if needed).

        ``TensorSpec`` arguments stand for tensors of that shape and dtype (``None``
        dimensions become 1). Tracing runs the Python function; assignments to
        Variables (also those of metric updates and optimizer steps) and draws from the
        global random generator made by this trace are undone, and ``lk.print`` prints
        nothing, so asking for a concrete function has no effect on state.
        """
        if not args and not kwargs and self._sig is not None:
            args = self._sig
        marks: dict = {}
        args, kwargs = _specs_to_arrays(args, marks), _specs_to_arrays(kwargs, marks)
        if self._sig is not None:
            if kwargs:
                args, kwargs = self._positional(args, kwargs), {}
            args = conform(self._name, self._sig, args, self._names)
        ck = build_key(args, kwargs, self._names)
        cf = self._cache.get(ck.key)
        if cf is not None and not cf.provisional and marks and not cf.graph_generic:
            # A trace for these sizes exists, but TensorSpecs with None ask for any size.
            if any(m and any(m) for m in marks.values()):
                cf = None
        if cf is None and self._generic:
            cf = self._match_generic(args, kwargs, ck)
        if cf is None or cf.provisional:
            cf = self._trace(args, kwargs, ck, previous=cf, rollback=True, marks=marks)[0]
        return cf

    def _trace(self, args, kwargs, ck, previous=None, rollback: bool = False,
               own: bool = False, marks: dict | None = None):
        with self._lock:
            cf = self._cache.get(ck.key)
            if cf is not None and cf is not previous and not cf.provisional:
                # another thread traced this signature while we waited for the lock
                return cf, self._call_traced(cf, args, kwargs, ck, rollback, own)
            if self._pysig is not None:  # a call the Python function cannot take
                params = self._pysig.parameters
                if not any(v.kind == v.VAR_KEYWORD for v in params.values()):
                    for k in kwargs:
                        if k not in params:
                            raise TypeError(f"lk.function '{self._name}' got an unexpected "
                                            f"keyword argument '{k}'")
                try:
                    self._pysig.bind(*args, **kwargs)
                except TypeError as e:
                    raise TypeError(f"lk.function '{self._name}': {e}") from None
            described = build_key(args, kwargs, self._names, describe=True)
            reason = (retrace_reason(self._last_descs, described.descs)
                      if self._last_descs is not None else "first call")
            self._last_descs = described.descs
            self.trace_count += 1
            if self.trace_count > MAX_TRACES:
                warnings.warn(
                    f"lk.function '{self._name}' has been traced {self.trace_count} times; "
                    f"this retrace: {reason}. Each trace runs the Python function again. "
                    f"Pass tensors instead of Python numbers that change, keep shapes and "
                    f"dtypes fixed, or give an input_signature.",
                    RetracingWarning, stacklevel=3)
            masks, structure = self._masks(args, kwargs, ck, marks)
            arrays = ck.arrays
            # Symbolic dimensions of size 0 or 1 are traced at size 2 instead (a size 1
            # would hide broadcasting from the shadow check), as a dry run; the call then
            # runs the graph.
            small = masks is not None and any(
                d < 2 for a, m in zip(arrays, masks) if m for d, f in zip(np.shape(a), m) if f)
            if small:
                arrays = [_trace.resized(np.asarray(a), m, lambda n: max(n, 2)) if m else a
                          for a, m in zip(arrays, masks)]
            dry = rollback or small
            rng0 = _rng_state()
            tracer = Tracer(self._name)
            tracer.dry_run = dry
            with tracer:
                owned = ck.leaves if own and not small else [None] * len(arrays)
                leaves = [tracer.param(a, p, o, m) for a, p, o, m in
                          zip(arrays, described.paths, owned, masks or [None] * len(owned))]
                if own:
                    _link_repeated(tracer, owned, leaves)
                targs, tkwargs = rebuild(args, kwargs, leaves)
                result = self._traced_fn()(*targs, **tkwargs)
                self._record_outputs(tracer, result)
            rng_changed = rng0 is not None and _rng_state() != rng0
            if dry:
                for var, old in tracer.assigned.values():
                    replace_value(var, old)
                _rng_restore(rng0)
            generic = masks is not None and tracer.not_generic is None
            if masks is not None and not generic:
                self._not_generic.add(structure)
                warnings.warn(f"lk.function '{self._name}': one graph cannot serve every size "
                              f"of the None dimension(s): {tracer.not_generic}. It is traced "
                              f"once per concrete shape instead.", RetracingWarning,
                              stacklevel=3)
                if small:  # that trace was made at other sizes: trace these
                    return self._trace(args, kwargs, ck, previous, rollback, own)
            tracer.graph.generic = generic
            cf = self._build(ck.key, tracer, rng_changed, previous)
            cf._var_args = list(ck.variables)
            self._cache[ck.key] = cf
            general = [generalize(np.shape(a), m if generic else None)
                       for a, m in zip(ck.arrays, masks or [None] * len(ck.arrays))]
            cf._set_signature(args, kwargs, general, described.paths, tracer)
            if generic and not cf.provisional:
                entries = self._generic.setdefault(structure, [])
                entries[:] = [e for e in entries if e[1] is not previous]
                entries.append((tuple(cf._general), cf))
            if cf.mode == "eager" and cf.eager_reason:
                warnings.warn(f"lk.function '{self._name}' runs eagerly: {cf.eager_reason}. "
                              f"Its calls stay correct but get no graph speed-up.",
                              EagerFallbackWarning, stacklevel=3)
            if small:
                result = self._call_traced(cf, args, kwargs, ck, rollback, own)
            return cf, result

    def _call_traced(self, cf, args, kwargs, ck, rollback: bool, own: bool):
        """The result of this call through an existing trace (None for a dry run)."""
        if rollback:
            return None
        if not own:
            return cf._run(ck.arrays, args, kwargs)
        if cf.mode == "graph" and cf.differentiable:
            return cf._run_taped(ck)
        return self._python_fn(*args, **kwargs)

    def _record_outputs(self, tracer: Tracer, result) -> None:
        g = tracer.graph
        outs = []
        for x in flatten(result):
            if isinstance(x, Variable):
                outs.append(("var", x))
            elif isinstance(x, Tensor):
                outs.append(("value", tracer.vid_of(x)))
            else:
                outs.append(("py", x))
        g.outputs = outs
        g.out_structure = result

    def _build(self, key, tracer: Tracer, rng_changed: bool, previous) -> ConcreteFunction:
        g = tracer.graph
        if tracer.leaks:
            return ConcreteFunction(self, key, g, None, "eager",
                                    "; ".join(tracer.leaks[:3]))
        if rng_changed and not tracer.stateful_ops:
            if previous is not None and previous.provisional:
                return ConcreteFunction(
                    self, key, g, None, "eager",
                    "it draws from the global random generator (lk.random ops or dropout "
                    "without a seed) through code that is not recorded as graph nodes, so a "
                    "graph would repeat the same random numbers on every call")
            # The first trace may have drawn random numbers only to create Variables
            # (layers building their weights): trace once more before deciding.
            cf = ConcreteFunction(self, key, g, None, "eager")
            cf.provisional = True
            return cf
        # Structure of the outputs: keep only the shape of the structure, not the values.
        g.out_structure = _skeleton(g.out_structure)
        if len(g.outputs) == 1 and not isinstance(g.out_structure, (list, tuple, dict)):
            g.out_structure = None
        stats = _passes.optimize(g)
        ops_nodes = list(g.nodes)
        if self._jit:
            regions = _fuse.find_regions(g)
            for r in regions:
                _executor.prepare_region(g, r)
            _fuse.apply_regions(g, regions)
            stats["fused_regions"] = len(regions)
        program = _executor.ShapePlans(g) if g.generic else _executor.Program(g)
        for v in g.values:  # trace-time arrays are no longer needed
            if v.kind != "const":
                v.traced = None
        cf = ConcreteFunction(self, key, g, program, "graph", stats=stats)
        cf.ops_nodes = ops_nodes
        cf.differentiable = _gradient.differentiable(g, tracer)
        return cf

    def __repr__(self) -> str:
        return f"<lk.function {self._name} traces={self.trace_count}>"


class _BoundFunction:
    """``obj.method`` of an lk.function method: the instance's own Function (its trace
    cache holds the instance weakly), plus a strong reference to the instance for as
    long as this object lives, so ``Temp().method(x)`` works on a temporary instance."""

    __slots__ = ("_function", "_instance")

    def __init__(self, function: Function, instance) -> None:
        self._function = function
        self._instance = instance

    def __call__(self, *args, **kwargs):
        return self._function(*args, **kwargs)

    def __getattr__(self, name: str):
        return getattr(self._function, name)

    def __repr__(self) -> str:
        return repr(self._function)


def _skeleton(structure):
    """The nested structure with every leaf replaced by None (drops references)."""
    leaves = flatten(structure)
    return pack_like(structure, [None] * len(leaves))


def _specs_to_arrays(x, marks: dict):
    """Example arrays for TensorSpecs (None dimensions of size 1); ``marks`` gets
    id(array) -> which dimensions were None."""
    if isinstance(x, TensorSpec):
        shape = tuple(1 if d is None else d for d in (x.shape or ()))
        a = np.ones(shape, x.dtype)
        marks[id(a)] = tuple(d is None for d in (x.shape or ()))
        return a
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return type(x)(*[_specs_to_arrays(v, marks) for v in x])
    if isinstance(x, (list, tuple)):
        return type(x)(_specs_to_arrays(v, marks) for v in x)
    if isinstance(x, dict):
        return {k: _specs_to_arrays(v, marks) for k, v in x.items()}
    return x


def function(f: Callable[..., Any] | None = None, input_signature: Sequence[Any] | None = None,
             jit: bool = True, reduce_retracing: bool = False,
             experimental_relax_shapes: bool | None = None, autograph: bool = True,
             jit_compile: bool | None = None, name: str | None = None,
             experimental_compile: bool | None = None
             ) -> Function | Callable[[Callable[..., Any]], Function]:
    """Compile a Python function into a graph, traced once per input signature.

    The first call with a new signature (tensor shapes and dtypes, values of Python
    arguments) runs ``f`` eagerly while recording every op, and returns its real
    results; later calls run the recorded graph on the new arrays, with constant
    folding, common-subexpression and dead-node removal, and fused elementwise regions.
    Variables read or assigned inside are live: an ``assign`` between calls is seen,
    and assignments inside run on every call, in order. Python control flow on Python
    values runs once, while tracing; ``if``/``while``/``for`` statements on traced tensors
    become graph control flow (AutoGraph, ``autograph=True``); with ``autograph=False``
    branching on a traced tensor raises an error naming the line.
    Called under a :class:`~layerkit.GradientTape`, gradients flow to the arguments and
    to the Variables read inside: a graph without assignments or stateful ops is one
    tape node whose gradient is a compiled backward graph (higher orders replay it with
    lk ops); other functions run their Python body for the tape to record.

    Values that library code computes from a traced tensor outside recorded ops (e.g. a
    NumPy mask inside a gradient rule, an optimizer updating arrays in place) cannot be
    replayed; such a function runs eagerly on every call and warns once, naming the line.

    Random numbers: ``lk.random`` ops and ``dropout`` are stateful graph nodes that draw
    again on every call (never numbers frozen at trace time): seedless ones continue the
    global generator exactly as eager code would, and an op with an int ``seed`` owns a
    stream started from it (first call = the eager values, later calls continue it, as
    an op seed in a TensorFlow graph). Python prints and other side effects happen
    when the Python body runs (tracing, or a tape replaying it), not on graph calls.
    Random draws made by Python code outside recorded ops (e.g. creating weights) make
    the first trace provisional: the next call traces once more, and if that trace
    draws too, the function runs eagerly with a warning.

    Args:
        f: the function (or use ``@lk.function`` / ``@lk.function(...)``).
        input_signature: optional sequence of :class:`TensorSpec` (nested lists, tuples
            and dicts allowed), one per positional argument (also accepted by keyword);
            arguments are converted to the spec dtypes and their shapes checked
            (TypeError for a dtype or structure, :class:`SignatureMismatchError`, both a
            TypeError and a ValueError, for a shape). ``None`` dimensions accept any
            size with ONE trace: inside, ``x.shape`` shows them as None and
            ``lk.shape(x)`` gives their sizes at run time (usable in ``lk.zeros``,
            ``lk.reshape``, ``lk.random.*``); each new concrete size gets its own
            buffer plan without running Python. An op that needs the traced size (the
            trace checks each op on a second size) makes the function trace once per
            concrete shape instead, with a RetracingWarning naming the op.
        jit: fuse elementwise regions (True) or run the graph op by op (False).
        autograph: convert Python ``if``/``while``/``for`` statements on tensors into
            graph control flow (``lk.cond``/``lk.while_loop``; see
            :mod:`layerkit.autograph`); False traces the function as written.
        reduce_retracing: without an input_signature, trace a second shape of the same
            arguments with None in the dimensions that changed, so later sizes reuse
            that trace (TensorFlow's option; ``experimental_relax_shapes`` is its old
            name).
        experimental_relax_shapes: same as ``reduce_retracing``.
        jit_compile: TensorFlow's XLA switch; accepted and ignored (layerkit has no XLA:
            ``jit`` above is its own fusion), as is its older name
            ``experimental_compile``.
        name: accepted for TensorFlow compatibility.

    Variable arguments are read and assigned live; another Variable of the same shape
    and dtype does not retrace (the graph is re-bound to it). Python numbers and other
    non-tensor arguments are part of the trace: each new value traces again.

    Returns:
        A :class:`Function` with ``trace_count`` (``experimental_get_tracing_count()``),
        :meth:`Function.get_concrete_function` and
        :meth:`Function.pretty_printed_concrete_signatures`.

    Examples:
        >>> import layerkit as lk
        >>> @lk.function
        ... def f(x):
        ...     return lk.tanh(x) * 2.0 + 1.0
        >>> f(lk.constant([0.0, 1.0])).numpy().round(3)
        array([1.   , 2.523], dtype=float32)
        >>> f.trace_count
        1
    """
    relax = bool(reduce_retracing or experimental_relax_shapes)
    if f is None:
        return lambda fn: Function(fn, input_signature, jit, reduce_retracing=relax,
                                   autograph=autograph)
    return Function(f, input_signature, jit, reduce_retracing=relax, autograph=autograph)
