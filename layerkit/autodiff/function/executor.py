"""The executor: a graph compiled to one flat Python function over NumPy arrays.

Each node becomes one line of generated code (``r7 = F3(r2, r5, axis=A3_0)``): no
Tensor objects, no recorder checks, no dict lookups, values in local variables. This
is what removes eager mode's per-op overhead (see benchmarks/bench_function.py).

Each value computed in the graph is deleted right after its last reader runs (a liveness
pass at compile time; see ``Program._deaths``), so a call holds no more arrays at once
than eager execution of the same code: values that are never read (a record's unused
extra outputs) are dropped as soon as they are made.

Elementwise ops whose forward is a NumPy ufunc write into preallocated output buffers
(``out=``) that are reused across calls and, within a call, by later values once a
buffer's last reader has run (in place when an input dies at the op that replaces it).
Buffers never escape: a value that is returned, kept for the backward pass, or may be
a view of such a value gets a fresh array on every call. A call that finds the buffers
in use (another thread, recursion) allocates its own set.

Fused regions run in the mode chosen by the dispatch rule in :mod:`.numexpr_kernel`:
``numexpr`` (one compiled expression), ``blocks`` (the region's ufuncs over row blocks
that stay in cache) or ``numpy`` (the region's ufuncs inline, with buffers).
"""
from __future__ import annotations

import threading

import numpy as np

from layerkit._core.variable import graph_assign
from layerkit.autodiff.function import numexpr_kernel as nek
from layerkit.autodiff.function.fuse import Region, render
from layerkit.autodiff.function.graph import Graph, Node

_PY_SCALARS = (bool, int, float, complex)


# Assign nodes run Variable.assign/assign_add/assign_sub's own update (core/variable.py).
_ASSIGN = {m: graph_assign(m) for m in ("assign", "assign_add", "assign_sub")}


def fresh(a, *sources):
    """``a``, or a copy if it shares memory with one of ``sources`` (is one of them, a
    view of one, or viewed by one)."""
    if type(a) is np.ndarray:
        if a.base is None:  # owns its memory: only identity or a view of it can share
            for s in sources:
                if a is s or getattr(s, "base", None) is a:
                    return a.copy()
            return a
        for s in sources:
            if np.may_share_memory(a, s):
                return a.copy()
    return a


def view_sources(graph: Graph, instrs: list) -> dict:
    """vid -> the parameters, Variable reads and array constants whose memory the value
    may share. Ufunc and fused-kernel results are new arrays; any other forward may
    return a view of an input, or the input itself (reshape, getitem, identity, cast)."""
    src: dict = {p: frozenset((p,)) for p in graph.params}
    for n in instrs:
        if n.kind == "read":
            src[n.outs[0]] = frozenset(n.outs)
        elif n.kind == "op" and not _is_ufunc_node(n):
            s: set = set()
            for i in n.ins:
                if i in src:
                    s |= src[i]
                elif graph.values[i].kind == "const" and graph.values[i].nd:
                    s.add(i)
            if s:
                fs = frozenset(s)
                for o in n.outs:
                    src[o] = fs
    return src


def _guards(graph: Graph, instrs: list, views: dict, keep: list) -> dict:
    """Before each instruction that updates Variables in place (an optimizer step in the
    graph): the values still used after it that may share a read of one of those
    Variables, with those reads (instruction index -> [(vid, read vids)]). Such a value
    is copied first if it does share the buffer, so it keeps the value read, as in eager
    mode."""
    updates = {}
    for k, n in enumerate(instrs):
        fn = getattr(n.op, "updates", None) if n.kind == "op" else None
        if fn is not None:
            updates[k] = {id(v) for v in fn(n.attrs)}
    if not updates:
        return {}
    reads = {n.outs[0]: id(n.var) for n in instrs if n.kind == "read"}
    born: dict = {}   # vid -> index of the instruction that makes it
    last: dict = {}   # vid -> index of the last instruction that uses it
    for j, n in enumerate(instrs):
        for i in n.ins:
            last[i] = j
        for o in n.outs:
            born[o] = j
    for vid in list(graph.output_vids()) + list(keep):
        last[vid] = len(instrs)
    out = {}
    for j, changed in updates.items():
        guard = []
        for vid, roots in views.items():
            if born.get(vid, -1) < j < last.get(vid, -1):
                hit = sorted(r for r in roots if reads.get(r) in changed)
                if hit:
                    guard.append((vid, hit))
        if guard:  # the reads themselves last: the others are checked against them
            out[j] = sorted(guard, key=lambda e: e[0] in reads)
    return out


def _is_ufunc_node(node: Node) -> bool:
    return node.kind == "op" and isinstance(node.op.forward, np.ufunc) and not node.attrs


def _bufferable(graph: Graph, vid: int) -> bool:
    v = graph.values[vid]
    return v.nd and len(v.shape) >= 1


class Program:
    """A compiled graph: ``run(*param_arrays) -> list of flat output values``."""

    def __init__(self, graph: Graph, keep: list | None = None, shapes: dict | None = None,
                 capture: bool = False) -> None:
        self.graph = graph
        self.keep = list(keep or [])
        # A graph with symbolic (None) dimensions (``graph.generic``) gets buffers only
        # from a plan for one set of concrete shapes (``shapes``: vid -> shape, captured
        # by a run of the ``capture`` program, which has no buffers and records them).
        self._shapes = shapes
        self._capture = capture
        self.source = ""
        self._fn = None
        self._buf_specs: list = []
        self._bufs = None
        self._lock = threading.Lock()
        self._build()

    # ---- running ---------------------------------------------------------------------------
    def run(self, params: list):
        lock = self._lock
        if lock.acquire(False):
            try:
                bufs = self._bufs
                return self._fn(self._alloc() if bufs is None else bufs, *params)
            finally:
                lock.release()
        return self._fn([np.empty(s, d) for s, d in self._buf_specs], *params)

    def run_capture(self, params: list) -> tuple:
        """Run a ``capture`` program: (flat outputs, {vid: shape of each value made})."""
        shapes: dict = {}
        return self._fn(shapes, *params), shapes

    def _shape(self, vid: int) -> tuple:
        if self._shapes is not None and vid in self._shapes:
            return self._shapes[vid]
        return tuple(self.graph.values[vid].shape)

    def _alloc(self) -> list:
        self._bufs = [np.empty(s, d) for s, d in self._buf_specs]
        return self._bufs

    # ---- code generation ---------------------------------------------------------------------
    def _build(self) -> None:
        g = self.graph
        ns: dict = {"np": np}
        self._ns = ns
        instrs = self._linearize()
        plan = self._plan_buffers(instrs)
        lines = [f"def __run(B, {', '.join(f'r{p}' for p in g.params)}):"
                 if g.params else "def __run(B):"]
        if self._buf_specs:
            names = ", ".join(f"b{j}" for j in range(len(self._buf_specs)))
            lines.append(f"    {names}, = B")
        views = view_sources(g, instrs)
        guards = _guards(g, instrs, views, self.keep)
        if guards:
            ns["_fresh"] = fresh
        dead = self._deaths(instrs)
        for k, ins in enumerate(instrs):
            for vid, reads in guards.get(k, ()):
                refs = ", ".join(f"r{r}" for r in reads)
                lines.append(f"    r{vid} = _fresh(r{vid}, {refs})")
            lines.extend("    " + ln for ln in self._emit(k, ins, plan.get(k)))
            if self._capture and ins.kind in ("op", "fused", "read"):
                lines.extend(f"    B[{o}] = np.shape(r{o})" for o in ins.outs)
            if k in dead:
                lines.append(f"    del {', '.join(f'r{v}' for v in dead[k])}")
        outs = []
        # Returned arrays must be the caller's own: a Variable's array may later be
        # updated in place (optimizers do), a constant is shared by every call, and the
        # caller may change an array it passed. Other results are new arrays already.
        read_vids = {n.outs[0] for n in g.nodes if n.kind == "read"}
        for kind, x in g.outputs:
            if kind == "value":
                v = g.values[x]
                ref = self._ref(x)
                if x in read_vids or (v.kind == "const" and v.nd):
                    outs.append(f"{ref}.copy()")
                elif views.get(x):
                    ns["_fresh"] = fresh
                    srcs = ", ".join(self._ref(i) for i in sorted(views[x]))
                    outs.append(f"_fresh({ref}, {srcs})")
                else:
                    outs.append(ref)
        for vid in self.keep:
            outs.append(self._ref(vid))
        lines.append(f"    return ({', '.join(outs)}{',' if outs else ''})")
        self.source = "\n".join(lines)
        exec(compile(self.source, f"<lk.function {g.name}>", "exec"), ns)  # noqa: S102
        self._fn = ns["__run"]

    def _ref(self, vid: int) -> str:
        v = self.graph.values[vid]
        if v.kind == "const":
            name = f"k{vid}"
            self._ns[name] = v.const
            return name
        return f"r{vid}"

    def _linearize(self) -> list:
        """Instructions: nodes, with ``numpy``-mode regions expanded to their members."""
        out = []
        for n in self.graph.nodes:
            if n.kind == "fused" and n.region.mode == "numpy":
                out.extend(n.region.members)
            else:
                out.append(n)
        return out

    def _deaths(self, instrs: list) -> dict:
        """Instruction index -> the values computed in the graph that are read for the
        last time there (or never read: unused extra outputs die where they are made).

        The generated code deletes their locals right after that instruction, so each
        array is freed after its last use, as in eager execution, instead of living
        until the call returns. Outputs and values kept for a backward program live to
        the end; parameters and Variable reads belong to the caller.
        """
        made: dict[int, int] = {}
        for k, n in enumerate(instrs):
            if n.kind in ("op", "fused"):
                for o in n.outs:
                    made[o] = k
        last = dict(made)
        for k, n in enumerate(instrs):
            for i in n.ins:
                if i in made:
                    last[i] = k
        alive = set(self.graph.output_vids()) | set(self.keep)
        dead: dict[int, list] = {}
        for vid, k in sorted(last.items()):
            if vid not in alive:
                dead.setdefault(k, []).append(vid)
        return dead

    # ---- buffer planning ---------------------------------------------------------------------
    def _plan_buffers(self, instrs: list) -> dict:
        """Map instruction index -> buffer index for its output (see the module docstring)."""
        g = self.graph
        if self._capture or (getattr(g, "generic", False) and self._shapes is None):
            return {}
        roots: dict[int, frozenset] = {}
        candidate: set = set()
        for n in instrs:
            elementwise = _is_ufunc_node(n) or (n.kind == "fused" and n.region.mode != "numpy")
            if elementwise and len(n.outs) == 1 and _bufferable(g, n.outs[0]):
                candidate.add(n.outs[0])
                roots[n.outs[0]] = frozenset((n.outs[0],))
            elif n.kind in ("op", "fused"):
                # Non-ufunc forwards may return views of their inputs (reshape, getitem,
                # transpose, identity): their outputs alias every input's buffers.
                al = frozenset().union(*[roots.get(i, frozenset()) for i in n.ins])
                for o in n.outs:
                    roots[o] = al
        escaped: set = set()
        for vid in list(g.output_vids()) + self.keep:
            escaped |= roots.get(vid, frozenset())
        for n in instrs:
            if n.kind == "op" and n.stateful:
                for i in n.ins:
                    escaped |= roots.get(i, frozenset())
        candidate -= escaped
        last_use: dict[int, int] = {}
        for k, n in enumerate(instrs):
            for i in n.ins:
                for r in roots.get(i, ()):
                    last_use[r] = k
        pool: dict = {}
        owner: dict[int, int] = {}   # root vid -> buffer index
        plan: dict[int, int] = {}
        for k, n in enumerate(instrs):
            dying = [r for r in {r for i in n.ins for r in roots.get(i, ())}
                     if last_use.get(r) == k and r in owner]
            if len(n.outs) == 1 and n.outs[0] in candidate:
                o = n.outs[0]
                v = g.values[o]
                key = (self._shape(o), np.dtype(v.dtype).str)
                buf = None
                for r in dying:  # in place: only an input that *is* the buffer's root
                    if r in n.ins and owner.get(r) is not None:
                        rv = g.values[r]
                        if (self._shape(r), np.dtype(rv.dtype).str) == key:
                            buf = owner.pop(r)
                            dying.remove(r)
                            break
                if buf is None:
                    free = pool.get(key)
                    if free:
                        buf = free.pop()
                    else:
                        buf = len(self._buf_specs)
                        self._buf_specs.append((key[0], np.dtype(v.dtype)))
                owner[o] = buf
                plan[k] = buf
                if last_use.get(o) is None:  # never read (kept alive by a stateful node)
                    pass
            for r in dying:
                b = owner.pop(r, None)
                if b is not None:
                    s, d = self._buf_specs[b]
                    pool.setdefault((s, d.str), []).append(b)
        return plan

    # ---- emitting one instruction ------------------------------------------------------------
    def _call_args(self, k: int, n: Node) -> str:
        args = [self._ref(i) for i in n.ins]
        for j, (name, val) in enumerate(n.attrs.items()):
            an = f"A{k}_{j}"
            self._ns[an] = val
            args.append(f"{name}={an}" if name.isidentifier() else None)
        if any(a is None for a in args):  # attr names that are not identifiers
            an = f"AD{k}"
            self._ns[an] = dict(n.attrs)
            args = [self._ref(i) for i in n.ins] + [f"**{an}"]
        return ", ".join(args)

    def _emit(self, k: int, n: Node, buf: int | None) -> list:
        ns = self._ns
        if n.kind == "read":
            ns[f"V{k}"] = n.var
            return [f"r{n.outs[0]} = V{k}._v"]
        if n.kind == "assign":
            ns[f"V{k}"] = n.var
            ns[f"S{k}"] = _ASSIGN[n.method]
            return [f"S{k}(V{k}, {self._ref(n.ins[0])})"]
        if n.kind == "fused":
            return self._emit_region(k, n, buf)
        ns[f"F{k}"] = n.op.forward
        call = f"F{k}({self._call_args(k, n)}{'' if buf is None else f', out=b{buf}'})"
        if not n.outs:
            return [call]
        if len(n.outs) == 1 and n.op.num_outputs == 1:
            return [f"r{n.outs[0]} = {call}"]
        return [f"{', '.join(f'r{o}' for o in n.outs)}, = {call}"]

    def _emit_region(self, k: int, n: Node, buf: int | None) -> list:
        r: Region = n.region
        o = n.outs[0]
        out = "None" if buf is None else f"b{buf}"
        ns = self._ns
        if r.mode == "numexpr":
            ns[f"N{k}"] = r.kernel
            args = []
            for nm, vid, dt in r.locals:
                if dt is not None:
                    c = f"c{k}_{nm}"
                    ns[c] = np.asarray(self.graph.values[vid].const, dtype=dt)
                    args.append(c)
                else:
                    args.append(self._ref(vid))
            order = {nm: a for (nm, _, _), a in zip(r.locals, args)}
            return [f"r{o} = N{k}([{', '.join(order[nm] for nm in r.kernel.names)}], {out})"]
        # blocks
        ns[f"K{k}"] = r.kernel
        v = self.graph.values[o]
        if buf is None:
            ns[f"E{k}"] = (tuple(v.shape), np.dtype(v.dtype))
            out = f"np.empty(*E{k})"
        return [f"r{o} = K{k}({out}, {', '.join(self._ref(i) for i in r.inputs)})"]


class ShapePlans:
    """The program of a graph with symbolic (None) dimensions: one traced graph, one
    buffer/execution plan per concrete set of parameter shapes.

    The first call at new shapes runs an unbuffered program that records the shape of
    every value it makes; a :class:`Program` planned for those shapes then serves later
    calls at the same shapes (no Python function runs, no retrace). At most
    ``MAX_PLANS`` plans are kept; beyond that calls run unbuffered.
    """

    MAX_PLANS = 32

    def __init__(self, graph: Graph, keep: list | None = None) -> None:
        self.graph = graph
        self.keep = keep
        self._capture = Program(graph, keep, capture=True)
        # The trace's own shapes are known: their plan is made now.
        traced = tuple(tuple(graph.values[p].shape) for p in graph.params)
        self._plans: dict = {traced: Program(graph, keep, shapes={})}
        self.source = self._capture.source

    def run(self, params: list):
        key = tuple([np.shape(a) for a in params])
        prog = self._plans.get(key)
        if prog is not None:
            return prog.run(params)
        out, shapes = self._capture.run_capture(params)
        if len(self._plans) < self.MAX_PLANS:
            self._plans[key] = Program(self.graph, self.keep, shapes=shapes)
        return out

    @property
    def plans(self) -> int:
        """How many per-shape plans have been made."""
        return len(self._plans)


# ---- region kernels ----------------------------------------------------------------------------
def prepare_region(graph: Graph, region: Region, allow_numexpr: bool = True) -> None:
    """Choose the region's mode (the measured rule) and build its kernel.

    Each kernel is checked once against the values the trace produced; a mismatch
    (a template that numexpr evaluates differently) falls back to inline NumPy.
    """
    out_v = graph.values[region.out]
    size = out_v.size
    dtypes = {np.dtype(graph.values[m.outs[0]].dtype) for m in region.members}
    dtypes |= {np.dtype(graph.values[i].dtype) for i in region.inputs
               if not graph.values[i].is_py_scalar}
    expr, order = render(graph, region)
    region.expr, region.locals = expr, order
    if (allow_numexpr and dtypes <= nek._NE_KINDS
            and nek.numexpr_wins(dtypes, len(region.members), size, expr)):
        try:
            sig = tuple((nm, dt if dt is not None else graph.values[vid].dtype)
                        for nm, vid, dt in order)
            kern = nek.compile_expr(expr, sig)
            if _check(graph, region, lambda args: kern(args), order, kern.names):
                region.kernel, region.mode = kern, "numexpr"
                region.note = f"numexpr: {expr}"
                return
        except Exception:  # noqa: BLE001 - any compile problem means: stay in NumPy
            pass
    if (size >= nek.BLOCK_MIN_SIZE and not getattr(graph, "generic", False)
            and _blockable(graph, region)):
        kern = _block_kernel(graph, region)
        try:
            ins = [graph.values[i].traced if not graph.values[i].is_py_scalar
                   else graph.values[i].const for i in region.inputs]
            got = kern(np.empty(out_v.shape, out_v.dtype), *ins)
            ok = _close(got, out_v.traced)
        except Exception:  # noqa: BLE001
            ok = False
        if ok:
            region.kernel, region.mode = kern, "blocks"
            region.note = f"numpy blocks of {kern.rows} {kern.unit}"
            return
    region.mode = "numpy"


def _close(got, want) -> bool:
    got, want = np.asarray(got), np.asarray(want)
    if got.dtype != want.dtype or got.shape != want.shape:
        return False
    if want.dtype.kind in "fc":
        tol = 1e-5 if want.dtype.itemsize <= 4 else 1e-12
        return bool(np.allclose(got, want, rtol=tol, atol=tol, equal_nan=True))
    return bool(np.array_equal(got, want))


def _check(graph, region, call, order, names) -> bool:
    vals = {}
    for nm, vid, dt in order:
        v = graph.values[vid]
        vals[nm] = np.asarray(v.const, dtype=dt) if dt is not None else (
            v.traced if v.kind != "const" else v.const)
        if vals[nm] is None:
            return False
    got = call([vals[nm] for nm in names])
    return _close(got, graph.values[region.out].traced)


def _blockable(graph: Graph, region: Region) -> bool:
    shape = tuple(graph.values[region.out].shape)
    if len(shape) < 1 or shape[0] < 2:
        return False
    for m in region.members:
        if tuple(graph.values[m.outs[0]].shape) != shape or m.attrs:
            return False
    for i in region.inputs:
        v = graph.values[i]
        if v.is_py_scalar:
            continue
        s = tuple(v.shape)
        same_rank = len(s) == len(shape)
        if not (s == shape or len(s) < len(shape) or (same_rank and s[0] in (1, shape[0]))):
            return False
    return True


class BlockKernel:
    """A region's ufuncs run over row blocks of the output (scratch reused per call)."""

    def __init__(self, fn, rows: int, scratch: list) -> None:
        self._fn = fn
        self.rows = rows
        self._scratch = scratch
        self._lock = threading.Lock()

    def __call__(self, out, *ins):
        if self._lock.acquire(blocking=False):
            try:
                return self._fn(out, self._scratch, *ins)
            finally:
                self._lock.release()
        return self._fn(out, [np.empty_like(s) for s in self._scratch], *ins)


def _block_kernel(graph: Graph, region: Region) -> BlockKernel:
    shape = tuple(graph.values[region.out].shape)
    # Flat blocks when every array input has the full shape (the common case); otherwise
    # blocks of rows, with inputs that broadcast along axis 0 passed whole.
    flat = all(graph.values[i].is_py_scalar or len(graph.values[i].shape) == 0
               or tuple(graph.values[i].shape) == shape for i in region.inputs)
    row = 1
    for d in shape[1:]:
        row *= d
    rows = nek.BLOCK_ELEMS if flat else max(1, nek.BLOCK_ELEMS // max(row, 1))
    ns: dict = {"np": np}
    names = {}
    args = ", ".join(f"i{j}" for j in range(len(region.inputs)))
    lines = [f"def __blk(out, S, {args}):", "    res = out"]
    if flat:
        lines.append("    out = out.reshape(-1)")
    lines += ["    n = out.shape[0]",
              f"    for a in range(0, n, {rows}):",
              f"        b = a + {rows}",
              "        o = out[a:b]",
              "        m = o.shape[0]"]
    for j, vid in enumerate(region.inputs):
        v = graph.values[vid]
        if v.is_py_scalar or len(v.shape) == 0:
            lines.append(f"        x{j} = i{j}")
        elif flat:
            lines.insert(2, f"    i{j} = i{j}.reshape(-1)")
            lines.append(f"        x{j} = i{j}[a:b]")
        else:
            sliced = len(v.shape) == len(shape) and v.shape[0] == shape[0]
            lines.append(f"        x{j} = i{j}[a:b]" if sliced else f"        x{j} = i{j}")
        names[vid] = f"x{j}"
    scratch: list = []          # (dtype) per scratch slot
    free: dict = {}             # dtype str -> [slot]
    temp_slot: dict = {}        # member out vid -> slot (or None if freshly allocated)
    root = region.members[-1]
    for mi, m in enumerate(region.members):
        ns[f"F{mi}"] = m.op.forward
        args = ", ".join(names[i] for i in m.ins)
        ufunc = isinstance(m.op.forward, np.ufunc)
        dt = np.dtype(graph.values[m.outs[0]].dtype)
        # inputs that die here (every member output has exactly one reader)
        dying = [i for i in m.ins if i in temp_slot]
        if m is root:
            if ufunc:
                lines.append(f"        F{mi}({args}, out=o)")
            else:
                lines.append(f"        o[...] = F{mi}({args})")
        else:
            slot = None
            for i in dying:
                s = temp_slot.get(i)
                if s is not None and scratch[s] == dt:
                    slot = s
                    temp_slot[i] = None
                    break
            if slot is None and ufunc:
                pool = free.get(dt.str)
                if pool:
                    slot = pool.pop()
                else:
                    slot = len(scratch)
                    scratch.append(dt)
            t = f"t{mi}"
            if ufunc:
                lines.append(f"        {t} = F{mi}({args}, out=S[{slot}][:m])")
            else:
                lines.append(f"        {t} = F{mi}({args})")
                slot = None
            names[m.outs[0]] = t
            temp_slot[m.outs[0]] = slot
        for i in dying:
            s = temp_slot.pop(i, None)
            if s is not None:
                free.setdefault(scratch[s].str, []).append(s)
    lines.append("    return res")
    src = "\n".join(lines)
    exec(compile(src, "<lk.function block kernel>", "exec"), ns)  # noqa: S102
    bufs = [np.empty((rows,) if flat else (rows,) + shape[1:], dt) for dt in scratch]
    k = BlockKernel(ns["__blk"], rows, bufs)
    k.source = src
    k.unit = "elements" if flat else "rows"
    return k
