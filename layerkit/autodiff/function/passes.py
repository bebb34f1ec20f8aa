"""Graph passes: constant folding, common subexpressions, dead-node removal, and the
peephole rewrites op records declare (a mask moved through the op that absorbs it).

All passes keep program order. Stateful nodes (assigns, stateful op records) are
never folded, merged or removed, and variable reads are never folded (they are live).
Because tracing ran every node on real values, folding needs no evaluation: a node
whose inputs are all constants becomes the constant it produced during the trace.
"""
from __future__ import annotations

from layerkit.autodiff.function.graph import Graph, Node


def _remap(graph: Graph, mapping: dict) -> None:
    if not mapping:
        return

    def m(v):
        while v in mapping:
            v = mapping[v]
        return v

    for n in graph.nodes:
        n.ins = [m(v) for v in n.ins]
    graph.outputs = [(k, m(x)) if k == "value" else (k, x) for k, x in graph.outputs]


def fold_constants(graph: Graph) -> int:
    """Replace pure op nodes whose inputs are all constants by their traced outputs."""
    vals = graph.values
    kept = []
    folded = 0
    for n in graph.nodes:
        if (n.kind == "op" and not n.stateful and n.ins
                and all(vals[i].kind == "const" for i in n.ins)
                and all(vals[o].traced is not None for o in n.outs)):
            for o in n.outs:
                v = vals[o]
                v.kind = "const"
                v.const = v.traced
                v.producer = None
            folded += 1
            continue
        kept.append(n)
    graph.nodes = kept
    graph.renumber()
    return folded


def _attrs_key(attrs: dict):
    try:
        key = tuple(sorted(attrs.items()))
        hash(key)
        return key
    except TypeError:
        return None


def _const_key(v):
    c = v.const
    if type(c) in (bool, int, float, complex):
        return ("py", type(c), c)
    return ("id", id(c))


def eliminate_common_subexpressions(graph: Graph) -> int:
    """Merge pure op nodes with the same record, inputs and attrs (first one wins)."""
    vals = graph.values
    seen: dict = {}
    consts: dict = {}
    mapping: dict = {}
    kept: list[Node] = []
    merged = 0
    for v in vals:
        if v.kind == "const":
            k = _const_key(v)
            first = consts.setdefault(k, v.id)
            if first != v.id:
                mapping[v.id] = first
    for n in graph.nodes:
        n.ins = [mapping.get(i, i) for i in n.ins]
        if n.kind != "op" or n.stateful:
            kept.append(n)
            continue
        ak = _attrs_key(n.attrs)
        if ak is None:
            kept.append(n)
            continue
        key = (id(n.op), tuple(n.ins), ak)
        prev = seen.get(key)
        if prev is None:
            seen[key] = n
            kept.append(n)
            continue
        for a, b in zip(n.outs, prev.outs):
            mapping[a] = b
        merged += 1
    graph.nodes = kept
    _remap(graph, mapping)
    graph.renumber()
    return merged


def remove_dead_nodes(graph: Graph, keep: set | None = None) -> int:
    """Drop nodes whose outputs reach no output, no stateful node and nothing in ``keep``."""
    live = set(graph.output_vids())
    if keep:
        live |= keep
    kept_rev = []
    removed = 0
    for n in reversed(graph.nodes):
        if n.stateful or any(o in live for o in n.outs):
            live.update(n.ins)
            kept_rev.append(n)
        else:
            removed += 1
    graph.nodes = kept_rev[::-1]
    graph.renumber()
    return removed


def sink_masks(graph: Graph, keep: set | None = None) -> int:
    """Rewrite ``m(P(y, p, g), y)`` as ``P(y, p, m(g, p))`` where the record ``P``
    declares ``m`` in its ``absorbs`` (see ``Op``): the mask runs on the smaller input.

    The one declared today is a ReLU mask moved through a max-pool gradient, 4x smaller
    for 2x2 pools (a ReLU then a max-pool is the usual CNN pattern; the pair's gradient
    cost 1.5 ms of a 37 ms CNN step at 64x28x28x32). Only applied when the pool
    gradient has no other reader. The pass knows no particular record.
    """
    vals = graph.values
    uses: dict[int, int] = {}
    for n in graph.nodes:
        for i in n.ins:
            uses[i] = uses.get(i, 0) + 1
    protected = set(graph.output_vids()) | set(keep or ())
    before: dict[int, Node] = {}   # id(pool-gradient node) -> relu node to run first
    dropped: set = set()
    mapping: dict = {}
    for n in graph.nodes:
        if n.kind != "op" or len(n.ins) != 2:
            continue
        a, y = n.ins
        src = vals[a].producer
        if (src is None or src.kind != "op" or n.op not in src.op.absorbs
                or len(src.ins) != 3 or src.ins[0] != y
                or uses.get(a) != 1 or a in protected or id(src) in before
                or (keep and n.outs[0] in keep)):
            continue
        _, p, g = src.ins
        gv, pv, out = vals[g], vals[p], vals[n.outs[0]]
        m = graph.new_value("node", tuple(gv.shape), out.dtype)
        m.nd = gv.nd
        gt = gv.traced if gv.kind != "const" else gv.const
        if gt is not None and pv.traced is not None:
            m.traced = n.op.forward(gt, pv.traced)
        mask = Node("op", op=n.op, ins=[g, p], outs=[m.id])
        m.producer = mask
        before[id(src)] = mask
        src.ins = [y, p, m.id]
        av = vals[a]
        av.dtype, av.traced = out.dtype, out.traced
        mapping[n.outs[0]] = a
        dropped.add(id(n))
    if not dropped:
        return 0
    nodes = []
    for n in graph.nodes:
        if id(n) in dropped:
            continue
        if id(n) in before:
            nodes.append(before[id(n)])
        nodes.append(n)
    graph.nodes = nodes
    _remap(graph, mapping)
    graph.renumber()
    return len(dropped)


def optimize(graph: Graph, keep: set | None = None) -> dict:
    """Run the passes in order; return how much each did (for ``.graph`` summaries)."""
    stats = {"folded": fold_constants(graph)}
    stats["relu_pool"] = sink_masks(graph, keep)
    stats["merged"] = eliminate_common_subexpressions(graph)
    stats["removed"] = remove_dead_nodes(graph, keep)
    return stats
