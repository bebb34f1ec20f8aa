"""A compiled function as one tape node whose vjp is a compiled backward graph.

Called under a GradientTape, a ConcreteFunction in graph mode runs its forward program
(also returning the forward values the backward pass needs) and records one node:
inputs = the call's tensor arguments + the Variables the graph reads, outputs = the
returned tensors. Its vjp runs the *backward graph*, which is traced once, lazily, by
running the ops' own vjps (``backprop.backward``) on tracing tensors that stand for
the forward values, then optimised, fused and compiled like any graph.

If the vjp is itself being recorded (a gradient of a gradient), it replays the forward
graph with lk ops under a private tape and differentiates that instead, so higher
orders stay exact.

Only pure graphs take this path: a graph that assigns Variables, holds stateful ops or
custom-gradient nodes runs its Python body eagerly under a tape (see ``api.py``).
"""
from __future__ import annotations

from contextlib import contextmanager

import numpy as np

from layerkit._core import context
from layerkit._core.op import Op, apply, wrap
from layerkit._core.tensor import Tensor
from layerkit.autodiff.backprop import backward
from layerkit.autodiff.function import executor as _executor
from layerkit.autodiff.function import fuse as _fuse
from layerkit.autodiff.function import passes as _passes
from layerkit.autodiff.function.trace import Tracer


def differentiable(graph, tracer: Tracer) -> bool:
    """True if the graph can be one tape node (no assigns, no state, no custom vjps)."""
    if tracer.has_alias or tracer.stateful_ops:
        return False
    return not any(n.kind == "assign" or n.stateful for n in graph.nodes)


class Backward:
    """The forward program with saved values and the compiled backward programs."""

    def __init__(self, cf, arrays: list, jit: bool) -> None:
        g = cf.graph
        nodes = cf.ops_nodes
        self.graph = g
        self.ops_nodes = nodes
        self._jit = jit
        self.n_params = len(g.params)
        self.out_vids = [x for k, x in g.outputs if k == "value"]
        self.read_vids = [n.outs[0] for n in nodes if n.kind == "read"]
        self.variables = []           # distinct Variables, in first-read order
        self._var_index = {}
        for n in nodes:
            if n.kind == "read" and id(n.var) not in self._var_index:
                self._var_index[id(n.var)] = len(self.variables)
                self.variables.append(n.var)
        self._read_var = [self._var_index[id(n.var)] for n in nodes if n.kind == "read"]
        # read vid -> position of its Variable among the node's inputs: the backward pass
        # takes a read's value from there (the tape swaps in a snapshot if the variable
        # changes before the gradient is asked for).
        self._read_input = {vid: self.n_params + k
                            for vid, k in zip(self.read_vids, self._read_var)}
        self.seed_outs = [k for k, vid in enumerate(self.out_vids)
                          if g.values[vid].dtype is not None
                          and np.dtype(g.values[vid].dtype).kind in "fc"]
        # One backward graph per set of outputs that receive a gradient (an output the
        # loss does not use gives its inputs None, as in eager mode); all by default.
        self._traces: dict = {}
        self._programs: dict = {}
        full = (True,) * len(self.seed_outs)
        with _no_recorders():
            values = self._all_values(g, nodes, arrays)
            self._trace_backward(g, nodes, values, full)
            self._compile_forward(g, nodes, values, jit)

    # ---- construction -----------------------------------------------------------------------
    @staticmethod
    def _all_values(g, nodes, arrays) -> dict:
        # Real values of every forward value, from an op-by-op run of the graph.
        produced = [o for n in nodes for o in n.outs]
        prog = _executor.Program(g.clone(nodes), keep=produced)
        res = prog.run(arrays)
        n_out = len([1 for k, _ in g.outputs if k == "value"])
        values = dict(zip(produced, res[n_out:]))
        values.update(zip(g.params, arrays))
        return values

    def _trace_backward(self, g, nodes, values: dict, present: tuple) -> None:
        """Trace the backward graph seeded at the outputs marked in ``present``."""
        tracer = Tracer(f"{g.name}_grad")
        sources: list = []        # ("fwd", vid) | ("seed", j) per backward param
        with tracer:
            t: dict = {}

            def tensor(vid):
                x = t.get(vid)
                if x is None:
                    v = g.values[vid]
                    if v.kind == "const":
                        x = wrap(v.const)
                    else:
                        x = tracer.param(values[vid], f"%{vid}")
                        sources.append(("fwd", vid))
                    t[vid] = x
                return x

            tape_nodes = []
            for n in nodes:
                if n.kind == "op" and n.op.vjp is not None:
                    tape_nodes.append((n.op, tuple(tensor(i) for i in n.ins),
                                       tuple(tensor(o) for o in n.outs), n.attrs))
            targets, seeds = [], []
            for j, k in enumerate(self.seed_outs):
                if not present[j]:
                    continue
                vid = self.out_vids[k]
                targets.append(tensor(vid))
                a = np.asarray(values[vid]) if g.values[vid].kind != "const" else np.asarray(
                    g.values[vid].const)
                seeds.append(tracer.param(np.ones(a.shape, a.dtype), f"upstream{j}"))
                sources.append(("seed", j))
            srcs = [tensor(p) for p in g.params] + [tensor(r) for r in self.read_vids]
            grads = backward(tape_nodes, targets, seeds, srcs)
            bg = tracer.graph
            bg.outputs = [("value", tracer.vid_of(x)) if isinstance(x, Tensor) else ("py", None)
                          for x in grads]
            bg.out_structure = [None] * len(grads)
        _passes.optimize(bg)
        used = {i for n in bg.nodes for i in n.ins} | set(bg.output_vids())
        keep = [k for k, p in enumerate(bg.params) if p in used]
        bg.params = [bg.params[k] for k in keep]
        bg.param_names = [bg.param_names[k] for k in keep]
        # Compiled lazily per set of inputs that need a gradient (the rest is dead code);
        # the trace-time values stay on the base graph for checking region kernels.
        self._traces[present] = (bg, [sources[k] for k in keep])

    def _program_for(self, needs: tuple, present: tuple):
        n = self.n_params
        wanted = tuple(needs[:n]) + tuple(needs[n + k] for k in self._read_var)
        entry = self._programs.get((wanted, present))
        if entry is None:
            base, sources = self._traces[present]
            bg = base.clone(base.nodes)
            bg.outputs = [o if w else ("py", None) for o, w in zip(base.outputs, wanted)]
            _passes.remove_dead_nodes(bg)
            if self._jit:
                regions = _fuse.find_regions(bg)
                for r in regions:
                    _executor.prepare_region(bg, r)
                _fuse.apply_regions(bg, regions)
            entry = self._programs[(wanted, present)] = (bg, _executor.Program(bg), sources)
        return entry

    def _compile_forward(self, g, nodes, values: dict, jit: bool) -> None:
        params = set(g.params)
        _, sources = self._traces[(True,) * len(self.seed_outs)]
        # Values the backward pass needs, other than inputs and reads (taken from the
        # tape node's inputs when the gradient is computed).
        self.saved = list(dict.fromkeys(
            vid for kind, vid in sources
            if kind == "fwd" and vid not in params and vid not in self._read_input))
        # Saved values that may be views of a Variable's array (reshape(W), W[0]) are
        # copied if they are: the variable may be updated in place before the gradient.
        views = _executor.view_sources(g, nodes)
        reads = {vid: self._read_input[vid] - self.n_params for vid in self.read_vids}
        self._saved_views = []
        for vid in self.saved:
            idx = sorted({reads[r] for r in views.get(vid, ()) if r in reads})
            if idx:
                self._saved_views.append((vid, idx))
        fg = g.clone(nodes)
        if jit:
            for v in g.values:   # region kernels are checked against real values
                if v.kind != "const" and v.id in values:
                    v.traced = values[v.id]
            regions = _fuse.find_regions(fg, keep=set(self.saved))
            for r in regions:
                _executor.prepare_region(fg, r)
            _fuse.apply_regions(fg, regions)
            for v in g.values:
                if v.kind != "const":
                    v.traced = None
        self.fwd_program = _executor.Program(fg, keep=self.saved)
        self.n_out = len(self.out_vids)

    # ---- running ----------------------------------------------------------------------------
    def call(self, name: str, leaves: list, arrays: list):
        """Run forward, record one node on the active tapes; return the output arrays."""
        res = self.fwd_program.run(arrays)
        outs = res[:self.n_out]
        saved = dict(zip(self.saved, res[self.n_out:]))
        fresh, variables = _executor.fresh, self.variables
        for vid, idx in self._saved_views:
            saved[vid] = fresh(saved[vid], *[variables[i]._v for i in idx])
        ins = tuple(x if isinstance(x, Tensor) else wrap(a) for x, a in zip(leaves, arrays))
        out_tensors = tuple(wrap(a) for a in outs)
        if out_tensors:
            op = Op(f"function:{name}", None, self._vjp(saved),
                    num_outputs=1 if len(out_tensors) == 1 else len(out_tensors))
            node_ins = ins + tuple(self.variables)
            recs = tuple(context.RECORDERS)
            for r in recs:
                for var in self.variables:
                    r.read_variable(var)
            for r in recs:
                r.record(op, node_ins, out_tensors, {})
        return out_tensors

    def _vjp(self, saved: dict):
        def vjp(g, node_ins, outs, needs):
            gs = (g,) if len(self.out_vids) == 1 else tuple(g)
            if context.RECORDERS:
                grads = self._replay(node_ins, gs)
            else:
                grads = self._run_backward(node_ins, saved, gs, tuple(needs))
            return tuple(gr if n else None for gr, n in zip(grads, needs))

        vjp.takes_none = True  # None upstream for outputs the target does not use
        return vjp

    def _run_backward(self, node_ins: tuple, saved: dict, gs, needs: tuple) -> list:
        present = tuple(gs[k] is not None for k in self.seed_outs)
        if True not in present:
            return [None] * len(node_ins)
        if present not in self._traces:
            # Some output gets no gradient: trace the backward graph without its seed.
            # (It walks a subset of the full trace's nodes, so the forward values it
            # needs are among those saved for the full one.)
            arrays = [_array(x) for x in node_ins[:self.n_params]]
            with _no_recorders():
                values = self._all_values(self.graph, self.ops_nodes, arrays)
                self._trace_backward(self.graph, self.ops_nodes, values, present)
        bg, program, sources = self._program_for(needs, present)
        params = self.graph.params
        inputs = []
        for kind, x in sources:
            if kind == "seed":
                inputs.append(gs[self.seed_outs[x]]._v)
            elif x in saved:
                inputs.append(saved[x])
            elif x in self._read_input:
                inputs.append(node_ins[self._read_input[x]]._v)
            else:
                inputs.append(_array(node_ins[params.index(x)]))
        flat = program.run(inputs)
        it = iter(flat)
        grads = [wrap(next(it)) if kind == "value" else None for kind, _ in bg.outputs]
        return self._per_input(grads)

    def _per_input(self, grads: list) -> list:
        n = self.n_params
        out = list(grads[:n])
        var_grads = [None] * len(self.variables)
        for k, gr in zip(self._read_var, grads[n:]):
            if gr is not None:  # a Variable read several times: its gradients add up
                var_grads[k] = gr if var_grads[k] is None else var_grads[k] + gr
        return out + var_grads

    def _replay(self, node_ins: tuple, gs) -> list:
        # Higher order: the forward graph again, with lk ops, under a private tape.
        from layerkit.autodiff.tape import GradientTape

        g = self.graph
        n = self.n_params
        ins, variables = node_ins[:n], node_ins[n:]
        with GradientTape(watch_accessed_variables=False) as tape:
            tape.watch([x for x in node_ins if x.dtype.kind in "fc"])
            t = replay(g, self.ops_nodes, dict(zip(g.params, ins)),
                       lambda node: variables[self._var_index[id(node.var)]])
            targets = [t[self.out_vids[k]] if self.out_vids[k] in t
                       else _const(g.values[self.out_vids[k]]) for k in self.seed_outs]
        seeds = [gs[k] if gs[k] is not None else None for k in self.seed_outs]
        pairs = [(tg, s) for tg, s in zip(targets, seeds) if s is not None]
        if not pairs:
            return [None] * len(node_ins)
        return list(tape.gradient([p[0] for p in pairs], list(node_ins),
                                  output_gradients=[p[1] for p in pairs]))


def replay(graph, nodes, t: dict, read) -> dict:
    """Run ``nodes`` of ``graph`` with lk ops, so that active tapes record them: ``t``
    maps value ids to Tensors (the parameters), ``read(node)`` gives the Tensor or
    Variable a read node stands for. Returns ``t`` with every computed value."""
    for node in nodes:
        if node.kind == "read":
            t[node.outs[0]] = read(node)
            continue
        args = [t[i] if i in t else _const(graph.values[i]) for i in node.ins]
        res = apply(node.op, *args, **node.attrs)
        if len(node.outs) == 1 and node.op.num_outputs == 1:
            t[node.outs[0]] = res
        else:
            for o, r in zip(node.outs, res):
                t[o] = r
    return t


def _array(t: Tensor) -> np.ndarray:
    a = t._v
    return a if type(a) is np.ndarray else np.asarray(a)


@contextmanager
def _no_recorders():
    # Backward graphs are traced while the caller's tapes are active: keep them out.
    recorders = list(context.RECORDERS)
    del context.RECORDERS[:]
    try:
        yield
    finally:
        context.RECORDERS[:0] = recorders


def _const(v):
    c = v.const
    return c if type(c) in (bool, int, float, complex) else wrap(c)
