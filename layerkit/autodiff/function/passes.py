"""Graph passes: constant folding, common subexpressions, dead-node removal.

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


def optimize(graph: Graph, keep: set | None = None) -> dict:
    """Run the passes in order; return how much each did (for ``.graph`` summaries)."""
    stats = {"folded": fold_constants(graph)}
    stats["merged"] = eliminate_common_subexpressions(graph)
    stats["removed"] = remove_dead_nodes(graph, keep)
    return stats
