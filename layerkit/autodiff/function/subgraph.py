"""Graph-level control flow: ``cond`` and ``while`` nodes that hold traced sub-graphs.

Inside ``lk.function`` a predicate computed from the inputs is not known while tracing,
so a data-dependent branch or loop cannot be Python control flow. Instead each branch
(or the loop's predicate and body) is traced once into its own :class:`Graph` by a
:class:`SubTracer`, compiled to an executor :class:`Program`, and the enclosing graph gets
one node whose forward runs those programs on every call: a ``cond`` node runs only the
branch its predicate picks; a ``while`` node runs the body until the predicate is false,
so each call runs as many iterations as its data asks for.

Sub-graphs *capture* the values of the enclosing trace they use (tensors and Variables):
those become extra inputs of the node, so gradients reach them. A node is an ordinary
op record with the sub-graph bundle as its attribute, so the outer graph's passes,
executor and backward tracing treat it like any op:

* its vjp is another node (``cond_grad`` / ``while_grad``) whose forward runs the
  sub-graph's gradient program: for a loop it runs the iterations again, keeping each
  iteration's loop variables, then runs the body's gradient program for them in reverse.
  The gradient program recomputes the body and differentiates it (traced once, lazily);
* under a tape that records the gradient computation (a gradient of a gradient) the vjp
  replays the iterations with lk ops instead, so higher orders stay exact.

Sub-graphs that assign Variables, print or hold other stateful nodes make the node
stateful (it runs on every call, in order, and is never folded or removed).

Tracing runs the taken branch, or the loop's first iteration, on the real values as
every trace does; a branch that is not taken (or a loop body that runs zero times) is
traced as a *dry run*: its Variable assignments and random draws are undone and its
prints skipped, so the tracing call has exactly the effects of the iterations it runs.
"""
from __future__ import annotations

import sys
import threading
from typing import Any

import numpy as np

from layerkit._core import context
from layerkit._core.op import Op, apply, wrap
from layerkit._core.tensor import Tensor
from layerkit._core.variable import Variable, replace_value
from layerkit.autodiff.function import executor as _executor
from layerkit.autodiff.function import passes as _passes
from layerkit.autodiff.function import trace as _trace
from layerkit.autodiff.function.graph import Node
from layerkit.autodiff.function.trace import Tracer

__all__ = ["SubGraph", "trace_sub", "graph_cond", "graph_while", "active_tracer"]


def active_tracer() -> Tracer | None:
    """The innermost tracer of this thread that is recording, or None."""
    me = threading.get_ident()
    for r in reversed(context.RECORDERS):
        if getattr(r, "tracing", False) and getattr(r, "thread", None) == me:
            return r
    return None


class SubTracer(Tracer):
    """A tracer for one branch or loop part: values of the enclosing traces it uses
    become *captures* (extra parameters of the sub-graph, inputs of the node)."""

    def __init__(self, name: str, outer: Tracer | None) -> None:
        super().__init__(name)
        self.outer = outer
        self.captures: list = []             # outer Tensors / Variables, in param order
        self._cap_vid: dict[int, int] = {}   # id(outer object) -> capture param vid
        self._cap_keep: set = set()

    def _known_outside(self, t) -> bool:
        tr: Any = self.outer
        while tr is not None:
            if id(t) in tr.ids:
                return True
            tr = getattr(tr, "outer", None)
        return False

    def _capture(self, t) -> int:
        vid = self._cap_vid.get(id(t))
        if vid is None:
            a = t._rv
            g = self.graph
            v = g.new_value("param", np.shape(a), getattr(a, "dtype", None),
                            getattr(t, "name", "") if isinstance(t, Variable) else "capture")
            v.traced = a
            v.nd = type(a) is np.ndarray
            g.params.append(v.id)
            g.param_names.append(v.name)
            self.captures.append(t)
            vid = self._cap_vid[id(t)] = v.id
            self._cap_keep.add(id(t))
        return vid

    def vid_of(self, t) -> int:
        vid = self.ids.get(id(t))
        if vid is not None:
            return vid
        if isinstance(t, Variable):
            if id(t) in self.assigned:   # assigned in this part: read it live
                return self._read(t)
            return self._capture(t)
        if isinstance(t, Tensor) and self._known_outside(t):
            return self._capture(t)
        return super().vid_of(t)

    def record_read_value(self, var: Variable, tensor: Tensor) -> None:
        if threading.get_ident() != self.thread:
            return
        self.variables_read.setdefault(id(var), var)
        self.ids[id(tensor)] = self.vid_of(var)
        self._keep.append(tensor)
        if type(tensor) is Tensor:
            tensor.__class__ = _trace.TracedTensor

    def __exit__(self, *exc) -> None:
        context.pop(self)
        _trace._ACTIVE.remove(self)
        for t in self._keep:
            if type(t) is _trace.TracedTensor:
                # Values of this sub-graph are not values of the enclosing graph: using
                # one there (kept in a Python list, say) is an error, never a constant.
                t.__class__ = _trace.EscapedTensor


class _SubProgram(_executor.Program):
    """A program without preallocated buffers: a loop may change shapes between calls."""

    def _plan_buffers(self, instrs: list) -> dict:
        return {}


class SubGraph:
    """One traced part (a branch, a loop predicate or body): its graph, the captured
    outer values, the compiled program and, lazily, its gradient program."""

    def __init__(self, tracer: SubTracer, outputs: list) -> None:
        g: Any = tracer.graph
        self.name = g.name
        g.outputs = [("value", tracer.vid_of(x)) for x in outputs]
        self.n_args = len(g.params) - len(tracer.captures)
        self.captures = list(tracer.captures)
        g.out_structure = [None] * len(outputs)
        # Captured Variables that this part also assigns are read live, in order.
        live = [k for k, c in enumerate(self.captures)
                if isinstance(c, Variable) and id(c) in tracer.assigned]
        for k in reversed(live):
            var = self.captures.pop(k)
            vid = g.params.pop(self.n_args + k)
            g.param_names.pop(self.n_args + k)
            v = g.values[vid]
            v.kind = "node"
            node = Node("read", outs=[vid], var=var)
            g.nodes.insert(0, node)
            v.producer = node
            g.variables[id(var)] = var
        g.renumber()
        self.captures_len = len(self.captures)
        self.stateful = bool(tracer.stateful_ops) or any(
            n.kind == "assign" or n.stateful for n in g.nodes)
        self.assigned = dict(tracer.assigned)
        self.variables = dict(g.variables)
        self.leaks = list(tracer.leaks)
        self.has_alias = tracer.has_alias
        self.out_dtypes = [g.values[vid].dtype for _, vid in g.outputs]
        self.out_shapes = [tuple(g.values[vid].shape) for _, vid in g.outputs]
        _passes.optimize(g)
        self.graph = g
        self.program = _SubProgram(g)
        for v in g.values:
            if v.kind != "const":
                v.traced = None
        self._grad: Any = None
        self._lock = threading.Lock()

    def run(self, arrays: list) -> list:
        return list(self.program.run(arrays))

    # ---- gradients --------------------------------------------------------------------------
    def floats(self) -> list:
        return [k for k, d in enumerate(self.out_dtypes)
                if d is not None and np.dtype(d).kind in "fc"]

    def grad_run(self, arrays: list, seeds: list) -> list:
        """Gradients of the float outputs (weighted by ``seeds``, one per output, None for
        none) with respect to every parameter (zeros for non-float ones)."""
        with self._lock:
            if self._grad is None:
                self._grad = _trace_grad(self, arrays)
        prog, n_in = self._grad
        fl = self.floats()
        ss = [np.zeros(self.out_shapes[k], self.out_dtypes[k]) if seeds[k] is None
              else seeds[k] for k in fl]
        grads = list(prog.run(list(arrays) + ss))
        return grads

    def replay(self, inputs: list) -> list:
        """The sub-graph's outputs computed with lk ops (recorded by active tapes)."""
        from layerkit.autodiff.function.gradient import replay

        g = self.graph
        t = replay(g, g.nodes, dict(zip(g.params, inputs)), lambda node: node.var)
        return [t[vid] if vid in t else wrap(_const(g.values[vid])) for _, vid in g.outputs]


def _const(v):
    c = v.const
    return c if type(c) in (bool, int, float, complex) else wrap(c)


def _trace_grad(sub: SubGraph, arrays: list):
    """Trace, optimise and compile ``params + seeds -> d(outputs . seeds)/d params``."""
    from layerkit.autodiff.tape import GradientTape

    fl = sub.floats()
    saved = list(context.RECORDERS)
    del context.RECORDERS[:]
    try:
        tracer = Tracer(f"{sub.name}_grad")
        with tracer:
            params = [tracer.param(np.asarray(a) if not isinstance(a, np.ndarray) else a,
                                   f"in{k}") for k, a in enumerate(arrays)]
            with GradientTape(watch_accessed_variables=False) as tape:
                for p in params:
                    if p.dtype.kind in "fc":
                        tape.watch(p)
                outs = sub.replay(params)
            targets = [outs[k] for k in fl]
            seeds = [tracer.param(np.ones(tuple(t.shape), sub.out_dtypes[k]), f"seed{k}")
                     for k, t in zip(fl, targets)]
            grads = tape.gradient(targets, params, output_gradients=seeds) if targets \
                else [None] * len(params)
            res = []
            for p, gr in zip(params, grads):
                res.append(gr if gr is not None else
                           wrap(np.zeros(np.shape(p._rv), np.asarray(p._rv).dtype)))
            g: Any = tracer.graph
            g.outputs = [("value", tracer.vid_of(x)) for x in res]
            g.out_structure = [None] * len(res)
    finally:
        context.RECORDERS[:0] = saved
    _passes.optimize(g)
    prog = _SubProgram(g)
    for v in g.values:
        if v.kind != "const":
            v.traced = None
    return prog, len(params)


# ---- tracing a part -------------------------------------------------------------------------
def trace_sub(fn, args: list, name: str, dry: bool = False):
    """Run ``fn(*params)`` under a :class:`SubTracer` (the enclosing tracer's recorders
    paused) and return ``(tracer, result)``; ``args`` give the parameters' values.

    With ``dry`` the part's Variable assignments and random draws are undone afterwards
    and its prints skip this run (a branch not taken, a loop body run zero times)."""
    outer = active_tracer()
    sub = SubTracer(name, outer)
    sub.dry_run = dry or bool(getattr(outer, "dry_run", False))
    from layerkit.autodiff.function.api import _rng_restore, _rng_state

    rng0 = _rng_state() if dry else None
    saved = list(context.RECORDERS)
    del context.RECORDERS[:]
    try:
        with sub:
            params = [sub.param(_array_of(a), f"arg{k}") for k, a in enumerate(args)]
            result = fn(*params)
    finally:
        context.RECORDERS[:0] = saved
    if dry:
        for var, old in sub.assigned.values():
            replace_value(var, old)
        _rng_restore(rng0)
        sub.assigned = {}
    return sub, params, result


def _array_of(t):
    a = t._rv if isinstance(t, Tensor) else t
    return a


def _emit(op: Op, ins: list, out_arrays: list, attrs: dict, subs: list) -> list:
    """Record one node (already computed: ``out_arrays``) on the active recorders and
    tell the enclosing tracer what the sub-graphs read, assign and leak."""
    outs = [wrap(a) for a in out_arrays]
    outer = active_tracer()
    if outer is not None:
        for s in subs:
            for var in s.variables.values():
                outer.graph.variables[id(var)] = var
                outer.variables_read.setdefault(id(var), var)
            for k, v in s.assigned.items():
                outer.assigned.setdefault(k, v)
            outer.leaks.extend(s.leaks)
            if s.has_alias:
                outer.has_alias = True
    recs = tuple(context.RECORDERS)
    for r in recs:
        for x in ins:
            if isinstance(x, Variable):
                r.read_variable(x)
    if outs or op.stateful:
        for r in recs:
            r.record(op, tuple(ins), tuple(outs), attrs)
    return outs


def _zeros_like(a):
    a = np.asarray(a)
    return np.zeros(a.shape, a.dtype)


# ---- cond ---------------------------------------------------------------------------------
class CondSpec:
    """The attribute of a ``cond`` node: both branches' sub-graphs."""

    __slots__ = ("true", "false", "n_out")

    def __init__(self, true: SubGraph, false: SubGraph, n_out: int) -> None:
        self.true, self.false, self.n_out = true, false, n_out

    def __repr__(self) -> str:
        return f"<cond {self.true.name}|{self.false.name}>"


def _cond_forward(pred, *caps, cond: CondSpec):
    nt = cond.true.captures_len
    return tuple(cond.true.run(list(caps[:nt])) if pred else cond.false.run(list(caps[nt:])))


def _cond_grad_forward(pred, *arrays, cond: CondSpec):
    nt, nf = cond.true.captures_len, cond.false.captures_len
    caps = arrays[:nt + nf]
    seeds = list(arrays[nt + nf:])
    if pred:
        g = cond.true.grad_run(list(caps[:nt]), seeds)
        return tuple(g) + tuple(_zeros_like(c) for c in caps[nt:])
    g = cond.false.grad_run(list(caps[nt:]), seeds)
    return tuple(_zeros_like(c) for c in caps[:nt]) + tuple(g)


def _cond_vjp(gs, ins, outs, needs, cond: CondSpec):
    if context.RECORDERS and active_tracer() is None:
        # A tape records this gradient (higher order): replay the taken branch.
        nt = cond.true.captures_len
        if bool(np.asarray(ins[0]._v)):
            return _replay_vjp(lambda xs: cond.true.replay(xs[1:1 + nt]), gs, ins, needs)
        return _replay_vjp(lambda xs: cond.false.replay(xs[1 + nt:]), gs, ins, needs)
    seeds = [s if s is not None else wrap(np.zeros(o.shape, o.dtype))
             for s, o in zip(gs, outs)]
    res = apply(_COND_GRAD, *ins, *seeds, cond=cond)
    out = [None]
    for x, r, n in zip(ins[1:], res, needs[1:]):
        out.append(r if n and x.dtype.kind in "fc" else None)
    return tuple(out)


_cond_vjp.takes_none = True  # type: ignore[attr-defined]
COND = Op("cond", _cond_forward, _cond_vjp, num_outputs=-1)
COND_STATEFUL = Op("cond", _cond_forward, num_outputs=-1, stateful=True,
                   updates=lambda attrs: _assigned_vars(attrs["cond"].true, attrs["cond"].false))
_COND_GRAD = Op("cond_grad", _cond_grad_forward, num_outputs=-1)


def _assigned_vars(*subs) -> list:
    out: dict = {}
    for s in subs:
        for k, (var, _) in s.assigned.items():
            out[k] = var
    return list(out.values())


def _check_same(what: str, name: str, a: Tensor, b: Tensor, where: str,
                grows: bool = False) -> None:
    if a.dtype != b.dtype:
        raise TypeError(f"{what}: '{name}' has dtype {a.dtype.name} in one case and "
                        f"{b.dtype.name} in the other; it must keep one dtype{where}")
    sa, sb = tuple(a.shape), tuple(b.shape)
    if (sa[1:], len(sa)) != (sb[1:], len(sb)) if grows else sa != sb:
        raise ValueError(f"{what}: '{name}' has shape {tuple(a.shape)} in one case and "
                         f"{tuple(b.shape)} in the other; it must keep one shape{where}")


def graph_cond(pred: Tensor, true_fn, false_fn, names=None, where: str = "",
               finish=None, grows=()):
    """Run ``true_fn()`` / ``false_fn()`` (each returning a flat list of Tensors) as one
    ``cond`` node of the graph being traced; ``pred`` is a traced scalar bool.

    Returns the list of output Tensors. ``names`` label the outputs in error messages;
    ``finish(rt, rf) -> (flat_t, flat_f)`` turns the branches' results into those lists
    when they are not lists of Tensors already (it sees both before any is compiled).
    Outputs at the positions in ``grows`` may differ in their first dimension (the
    storage of a growing ``TensorArray``)."""
    p = bool(np.asarray(pred._rv))
    st, _, rt = trace_sub(lambda: true_fn(), [], "cond_true", dry=not p)
    sf, _, rf = trace_sub(lambda: false_fn(), [], "cond_false", dry=p)
    if finish is not None:
        rt, rf = finish(rt, rf)
    rt, rf = list(rt), list(rf)
    if len(rt) != len(rf):
        raise ValueError(f"lk.cond: true_fn returned {len(rt)} values and false_fn "
                         f"{len(rf)}; both branches must return the same structure{where}")
    names = names or [f"output {k}" for k in range(len(rt))]
    for k, (nm, a, b) in enumerate(zip(names, rt, rf)):
        _check_same("lk.cond", nm, a, b, where, k in grows)
    taken = rt if p else rf
    values = [_array_of(x) for x in taken]
    true, false = SubGraph(st, rt), SubGraph(sf, rf)
    spec = CondSpec(true, false, len(rt))
    stateful = true.stateful or false.stateful
    op = COND_STATEFUL if stateful else COND
    if stateful:
        outer = active_tracer()
        if outer is not None:
            outer.stateful_ops = True
    ins = [pred] + true.captures + false.captures
    values = [np.array(v, copy=True) if isinstance(v, np.ndarray) else v for v in values]
    return _emit(op, ins, values, {"cond": spec}, [true, false])


# ---- while ----------------------------------------------------------------------------------
class WhileSpec:
    """The attribute of a ``while`` node: the predicate's and body's sub-graphs."""

    __slots__ = ("cond", "body", "n_vars")

    def __init__(self, cond: SubGraph, body: SubGraph, n_vars: int) -> None:
        self.cond, self.body, self.n_vars = cond, body, n_vars

    def __repr__(self) -> str:
        return f"<while {self.n_vars} vars>"


def _iterate(loop: WhileSpec, arrays, history: list | None = None) -> list:
    n, nc = loop.n_vars, loop.cond.captures_len
    vs = list(arrays[:n])
    cc = list(arrays[n:n + nc])
    bc = list(arrays[n + nc:])
    crun, brun = loop.cond.program.run, loop.body.program.run
    while crun(vs + cc)[0]:
        if history is not None:
            history.append(vs)
        vs = list(brun(vs + bc))
    return vs


def _while_forward(*arrays, loop: WhileSpec):
    return tuple(_iterate(loop, arrays))


def _while_grad_forward(*arrays, loop: WhileSpec):
    n, nc = loop.n_vars, loop.cond.captures_len
    nin = len(arrays) - n
    ins, seeds = arrays[:nin], list(arrays[nin:])
    bc = list(ins[n + nc:])
    history: list = []
    _iterate(loop, ins, history)
    gv = list(seeds)
    gc = [_zeros_like(c) for c in bc]
    for vs in reversed(history):
        g = loop.body.grad_run(vs + bc, gv)
        gv = g[:n]
        gc = [a + b for a, b in zip(gc, g[n:])]
    return tuple(gv) + tuple(_zeros_like(c) for c in ins[n:n + nc]) + tuple(gc)


def _while_vjp(gs, ins, outs, needs, loop: WhileSpec):
    if context.RECORDERS and active_tracer() is None:
        return _replay_vjp(lambda xs: _while_replay(loop, xs), gs, ins, needs)
    seeds = [s if s is not None else wrap(np.zeros(o.shape, o.dtype))
             for s, o in zip(gs, outs)]
    res = apply(_WHILE_GRAD, *ins, *seeds, loop=loop)
    return tuple(r if need and x.dtype.kind in "fc" else None
                 for x, r, need in zip(ins, res, needs))


def _replay_vjp(run, gs, ins, needs) -> tuple:
    """The vjp of a node whose gradient a tape records (a gradient of a gradient):
    ``run(inputs)`` recomputes the outputs with lk ops under a private tape."""
    from layerkit.autodiff.tape import GradientTape

    # One tensor per input position (a loop variable may start as a captured value):
    # each position gets its own gradient, as from the compiled gradient.
    xs = [apply(_IDENTITY, x) for x in ins]
    with GradientTape(watch_accessed_variables=False) as tape:
        tape.watch([x for x in xs if x.dtype.kind in "fc"])
        outs = run(xs)
    pairs = [(v, s) for v, s in zip(outs, gs) if s is not None and v.dtype.kind in "fc"]
    if not pairs:
        return tuple(None for _ in ins)
    got = tape.gradient([p[0] for p in pairs], xs, output_gradients=[p[1] for p in pairs])
    return tuple(gr if need else None for gr, need in zip(got, needs))


def _while_replay(loop: WhileSpec, ins: list) -> list:
    # The iterations again with lk ops (the predicate decides on the values).
    n, nc = loop.n_vars, loop.cond.captures_len
    vs, cc, bc = list(ins[:n]), list(ins[n:n + nc]), list(ins[n + nc:])
    while bool(np.asarray(loop.cond.run([_array_of(x) for x in vs + cc])[0])):
        vs = loop.body.replay(vs + bc)
    return vs


_while_vjp.takes_none = True  # type: ignore[attr-defined]
_IDENTITY = Op("identity", lambda x: x, lambda g, ins, out, needs: (g,))
WHILE = Op("while", _while_forward, _while_vjp, num_outputs=-1)
WHILE_STATEFUL = Op("while", _while_forward, num_outputs=-1, stateful=True,
                    updates=lambda attrs: _assigned_vars(attrs["loop"].cond, attrs["loop"].body))
_WHILE_GRAD = Op("while_grad", _while_grad_forward, num_outputs=-1)


def graph_while(cond_fn, body_fn, loop_vars: list, names=None, where: str = "",
                grows=()) -> list:
    """Run ``loop_vars = body_fn(*loop_vars)`` while ``cond_fn(*loop_vars)`` as one
    ``while`` node of the graph being traced (flat lists of Tensors in and out).

    The predicate and the body are traced once each; the node runs as many iterations
    as each call's data asks for. ``names`` label the loop variables in errors; those at
    the positions in ``grows`` may change their first dimension."""
    n = len(loop_vars)
    names = names or [f"loop variable {k}" for k in range(n)]
    sc, _, pred = trace_sub(lambda *v: cond_fn(*v), loop_vars, "while_cond")
    pred = _scalar_bool(pred, where)
    p = bool(np.asarray(_array_of(pred)))
    sb, _, new = trace_sub(lambda *v: body_fn(*v), loop_vars, "while_body", dry=not p)
    new = list(new)
    if len(new) != n:
        raise ValueError(f"lk.while_loop: the body returned {len(new)} loop variables, "
                         f"expected {n}{where}")
    for k, (nm, a, b) in enumerate(zip(names, loop_vars, new)):
        _check_same("lk.while_loop", nm, a, b, where, k in grows)
    csub = SubGraph(sc, [pred])
    bsub = SubGraph(sb, new)
    spec = WhileSpec(csub, bsub, n)
    stateful = csub.stateful or bsub.stateful
    ins = list(loop_vars) + csub.captures + bsub.captures
    # The traced run did the first iteration (if any): continue from its values (a dry
    # run, get_concrete_function, stops there: its results are not used, and the rest
    # would print).
    outer = active_tracer()
    if p and not getattr(outer, "dry_run", False):
        arrays = [_array_of(x) for x in new] + [_array_of(c) for c in ins[n:]]
        values = _iterate(spec, arrays)
    elif p:
        values = [_array_of(x) for x in new]
    else:
        values = [_array_of(x) for x in loop_vars]
    values = [np.array(v, copy=True) if isinstance(v, np.ndarray) else v for v in values]
    if stateful:
        outer = active_tracer()
        if outer is not None:
            outer.stateful_ops = True
    return _emit(WHILE_STATEFUL if stateful else WHILE, ins, values, {"loop": spec},
                 [csub, bsub])


def _scalar_bool(pred, where: str):
    from layerkit._core.convert import convert_to_tensor

    if not isinstance(pred, Tensor):
        pred = convert_to_tensor(pred)
    if tuple(pred.shape) != ():
        raise ValueError(f"lk.while_loop: the predicate must be a scalar bool; it has "
                         f"shape {tuple(pred.shape)}{where}")
    return pred


def current_line() -> str:
    """`` at <file>:<line>: `<source>` `` of the user's code calling in, or ''."""
    f = _trace.user_frame(sys._getframe(2))
    return f" (at {_trace.where(f)})" if f is not None else ""


# ---- for each element of a Python iterable (a dataset) -------------------------------------------
class ForEachSpec:
    """The attribute of a ``for_each`` node: the iterable (iterated again on every call)
    and the body's sub-graphs, one per shape signature of the elements (a dataset's last
    batch may be smaller), each with the positions of its captures among the node's."""

    __slots__ = ("iterable", "bodies", "n_vars")

    def __init__(self, iterable, n_vars: int) -> None:
        self.iterable, self.n_vars = iterable, n_vars
        self.bodies: dict = {}

    def __repr__(self) -> str:
        return f"<for each element of {type(self.iterable).__name__}>"


def _leaf_arrays(elem) -> list:
    from layerkit._core.nest import flatten

    return [x._v if isinstance(x, Tensor) else np.asarray(x) for x in flatten(elem)]


def _key(arrays: list) -> tuple:
    return tuple((np.shape(a), np.asarray(a).dtype.str) for a in arrays)


def _next(it):
    # The pipeline's own lk ops belong to no graph being traced.
    with context.untraced():
        return next(it, _END)


def _for_each_run(loop: ForEachSpec, vs: list, caps: list, it, trace_new=None) -> list:
    while True:
        elem = _next(it)
        if elem is _END:
            return vs
        leaves = _leaf_arrays(elem)
        entry = loop.bodies.get(_key(leaves))
        if entry is None:
            if trace_new is None:
                raise ValueError(
                    f"for loop over {type(loop.iterable).__name__} in lk.function: an "
                    f"element has shapes {[np.shape(a) for a in leaves]}, which the trace "
                    f"did not see (each call must iterate elements of the shapes the "
                    f"tracing call iterated)")
            vs = trace_new(elem, vs)
            continue
        sub, idx = entry
        vs = list(sub.program.run(leaves + vs + [caps[i] for i in idx]))


def _for_each_forward(*arrays, loop: ForEachSpec):
    n = loop.n_vars
    with context.untraced():
        it = iter(loop.iterable)
    return tuple(_for_each_run(loop, list(arrays[:n]), list(arrays[n:]), it))


FOR_EACH = Op("for_each", _for_each_forward, num_outputs=-1, stateful=True,
              updates=lambda attrs: _assigned_vars(*[b for b, _ in
                                                     attrs["loop"].bodies.values()]))


def graph_for_each(iterable, body_fn, loop_vars: list, names=None, where: str = "",
                   grows=()) -> list:
    """``for elem in iterable: loop_vars = body_fn(elem, *loop_vars)`` as one stateful
    ``for_each`` node: every call of the traced function iterates ``iterable`` afresh
    (a dataset's pipeline runs on each call) and runs the body's sub-graph per element.

    The tracing call traces the body on the first element of each shape signature (that
    run is the iteration of that element) and runs the compiled body for the others."""
    from layerkit._core.nest import flatten
    from layerkit._core.nest import pack_sequence_as as pack_like

    n = len(loop_vars)
    names = names or [f"loop variable {k}" for k in range(n)]
    with context.untraced():
        it = iter(iterable)
    spec = ForEachSpec(iterable, n)
    caps: list = []          # the node's captured outer values
    cap_pos: dict = {}
    subs: list = []

    def trace_new(elem, vs: list) -> list:
        leaves = [x if isinstance(x, Tensor) else wrap(np.asarray(x)) for x in flatten(elem)]
        ne = len(leaves)

        def body(*xs):
            return body_fn(pack_like(elem, list(xs[:ne])), *xs[ne:])

        start = [v if isinstance(v, Tensor) else wrap(v) for v in vs]
        sb, _, new = trace_sub(body, leaves + start, "for_each_body")
        new = list(new)
        if len(new) != n:
            raise ValueError(f"for loop: the body returned {len(new)} loop variables, "
                             f"expected {n}{where}")
        for k, (nm, a, b) in enumerate(zip(names, loop_vars, new)):
            _check_same("for loop over a dataset", nm, a, b, where, k in grows)
        sub = SubGraph(sb, new)
        idx = []
        for c in sub.captures:
            if id(c) not in cap_pos:
                cap_pos[id(c)] = len(caps)
                caps.append(c)
            idx.append(cap_pos[id(c)])
        spec.bodies[_key(_leaf_arrays(elem))] = (sub, idx)
        subs.append(sub)
        return [_array_of(x) for x in new]

    values = _for_each_run(spec, [_array_of(x) for x in loop_vars], [], it, trace_new)
    if not subs:
        return list(loop_vars)
    values = [np.array(v, copy=True) if isinstance(v, np.ndarray) else v for v in values]
    outer = active_tracer()
    if outer is not None:
        outer.stateful_ops = True
    return _emit(FOR_EACH, list(loop_vars) + caps, values, {"loop": spec}, subs)


_END = object()
