"""``lk.function``: trace a Python function into a graph, once per input signature.

A :class:`Function` keeps a cache of :class:`ConcreteFunction` objects keyed by the
call's signature (see :mod:`.signature`). A missing key traces: the Python function
runs once, eagerly, with a tracer recording every op (so that call returns real
results); the graph is optimised (:mod:`.passes`), its elementwise regions fused
(:mod:`.fuse`) and compiled to a flat program (:mod:`.executor`). Later calls with the
same key run the program on the arrays: no Python function, no Tensor objects.
"""
from __future__ import annotations

import functools
import inspect
import threading
import warnings
import weakref

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
    TensorSpec,
    build_key,
    conform,
    flatten_specs,
    rebuild,
    retrace_reason,
)
from layerkit.autodiff.function.trace import Tracer

_new = object.__new__

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

    Attributes:
        graph: the optimised, fused :class:`~layerkit.autodiff.function.graph.Graph`;
            ``print(cf.graph)`` lists its nodes and fused kernels.
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
        # A single returned tensor (the common case) skips the generic packing.
        self._single = (mode == "graph" and len(graph.outputs) == 1
                        and graph.outputs[0][0] == "value" and graph.out_structure is None)

    @property
    def source(self) -> str:
        """The generated Python source of the compiled program (for debugging)."""
        return self._program.source if self._program is not None else ""

    def __call__(self, *args, **kwargs):
        f = self._function
        if f._sig is not None:
            args = conform(f._name, f._sig, args, f._names)
        ck = build_key(args, kwargs, f._names)
        if ck.key != self._key:
            raise TypeError(f"ConcreteFunction of '{f._name}': the arguments do not match the "
                            f"traced signature; call the lk.function itself to retrace")
        return self._run(ck.arrays, args, kwargs)

    def _run_taped(self, ck):
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


class Function:
    """A Python function traced into graphs (see :func:`function`)."""

    def __init__(self, fn, input_signature=None, jit: bool = True, name: str | None = None,
                 autograph: bool = True):
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
            params = inspect.signature(fn).parameters
            self._names = [p for p, v in params.items()
                           if v.kind in (v.POSITIONAL_ONLY, v.POSITIONAL_OR_KEYWORD)]
        except (TypeError, ValueError):
            self._names = []
        self._cache: dict = {}
        self._lock = threading.RLock()
        self._last_descs = None
        self._bound: dict = {}
        self.trace_count = 0
        functools.update_wrapper(self, fn, updated=())

    @property
    def python_function(self):
        """The wrapped Python function."""
        return self._python_fn

    @property
    def input_signature(self):
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
        args, ck, cf = self._lookup(args, kwargs)
        if cf is None or cf.provisional:
            return self._trace(args, kwargs, ck, previous=cf)[1]
        return cf._run(ck.arrays, args, kwargs)

    def _lookup(self, args, kwargs, private: bool = False):
        """``args`` conformed to the input signature (if any), their cache key and entry.

        With ``private`` (a call under a tape, which keeps the inputs until the gradient)
        the caller's NumPy arrays are replaced by copies: the caller may change them
        meanwhile (TensorFlow converts them to tensors, which copies too)."""
        if self._sig is not None:
            if kwargs:
                raise TypeError(f"lk.function '{self._name}' has an input_signature: pass "
                                f"its arguments positionally")
            args = conform(self._name, self._sig, args, self._names, copy=private)
        ck = build_key(args, kwargs, self._names)
        if private and any(isinstance(x, np.ndarray) for x in ck.leaves):
            args, kwargs = rebuild(args, kwargs, [np.array(x) if isinstance(x, np.ndarray)
                                                  else x for x in ck.leaves])
            ck = build_key(args, kwargs, self._names)
        return args, ck, self._cache.get(ck.key)

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
        args, ck, cf = self._lookup(args, kwargs, private=True)
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

        bound = Function(method, self._sig, self._jit, self._name, autograph=False)
        bound._names = self._names[1:]
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
        args, kwargs = _specs_to_arrays(args), _specs_to_arrays(kwargs)
        if self._sig is not None:
            args = conform(self._name, self._sig, args, self._names)
        ck = build_key(args, kwargs, self._names)
        cf = self._cache.get(ck.key)
        if cf is None or cf.provisional:
            cf = self._trace(args, kwargs, ck, previous=cf, rollback=True)[0]
        return cf

    def _trace(self, args, kwargs, ck, previous=None, rollback: bool = False,
               own: bool = False):
        with self._lock:
            cf = self._cache.get(ck.key)
            if cf is not None and cf is not previous and not cf.provisional:
                # another thread traced this signature while we waited for the lock
                if rollback:
                    return cf, None
                if not own:
                    return cf, cf._run(ck.arrays, args, kwargs)
                if cf.mode == "graph" and cf.differentiable:
                    return cf, cf._run_taped(ck)
                return cf, self._python_fn(*args, **kwargs)
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
            rng0 = _rng_state()
            tracer = Tracer(self._name)
            tracer.dry_run = rollback
            with tracer:
                owned = ck.leaves if own else [None] * len(ck.arrays)
                leaves = [tracer.param(a, p, o)
                          for a, p, o in zip(ck.arrays, described.paths, owned)]
                if own:
                    _link_repeated(tracer, owned, leaves)
                targs, tkwargs = rebuild(args, kwargs, leaves)
                result = self._traced_fn()(*targs, **tkwargs)
                self._record_outputs(tracer, result)
            rng_changed = rng0 is not None and _rng_state() != rng0
            if rollback:
                for var, old in tracer.assigned.values():
                    replace_value(var, old)
                _rng_restore(rng0)
            cf = self._build(ck.key, tracer, rng_changed, previous)
            self._cache[ck.key] = cf
            if cf.mode == "eager" and cf.eager_reason:
                warnings.warn(f"lk.function '{self._name}' runs eagerly: {cf.eager_reason}. "
                              f"Its calls stay correct but get no graph speed-up.",
                              EagerFallbackWarning, stacklevel=3)
            return cf, result

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
        program = _executor.Program(g)
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


def _specs_to_arrays(x):
    if isinstance(x, TensorSpec):
        shape = tuple(1 if d is None else d for d in (x.shape or ()))
        return np.ones(shape, x.dtype)
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return type(x)(*[_specs_to_arrays(v) for v in x])
    if isinstance(x, (list, tuple)):
        return type(x)(_specs_to_arrays(v) for v in x)
    if isinstance(x, dict):
        return {k: _specs_to_arrays(v) for k, v in x.items()}
    return x


def function(f=None, input_signature=None, jit: bool = True, autograph: bool = True):
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
            and dicts allowed), one per positional argument; arguments are converted to
            the spec dtypes and their shapes checked. ``None`` dimensions accept any
            size; each new concrete size is traced once (shapes are static in a graph).
        jit: fuse elementwise regions (True) or run the graph op by op (False).
        autograph: convert Python ``if``/``while``/``for`` statements on tensors into
            graph control flow (``lk.cond``/``lk.while_loop``; see
            :mod:`layerkit.autograph`); False traces the function as written.

    Returns:
        A :class:`Function` with ``trace_count`` and :meth:`Function.get_concrete_function`.

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
    if f is None:
        return lambda fn: Function(fn, input_signature, jit, autograph=autograph)
    return Function(f, input_signature, jit, autograph=autograph)
