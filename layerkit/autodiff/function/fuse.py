"""Grouping of maximal elementwise regions (from the records' numexpr ``expr`` templates).

"Fusable" is a property of the record: an op with an ``expr`` template, one output and
no state. A region grows backwards from a root through producers whose only consumer
is inside the region, so regions are trees and every value with several consumers, a
graph output, or a value kept for the backward pass is materialised. Regions never
span a stateful node (an assign or a stateful op may change what a later read sees).
Reductions, matmul/conv, shape ops and records without a template are boundaries.
"""
from __future__ import annotations

import numpy as np

from layerkit.autodiff.function.graph import Graph, Node

_PY_SCALARS = (bool, int, float)


class Region:
    """A fused elementwise tree: members in program order, the last is the root."""

    __slots__ = ("members", "inputs", "out", "mode", "expr", "locals", "kernel", "note")

    def __init__(self, members: list, inputs: list, out: int) -> None:
        self.members = members
        self.inputs = inputs
        self.out = out
        self.mode = "numpy"      # "numpy" (inline ufuncs) | "blocks" | "numexpr"
        self.expr = None         # numexpr text with names i0, i1, ... and typed constants
        self.locals = ()         # (name, vid, dtype or None) in expression-name order
        self.kernel = None
        self.note = ""

    def describe(self, graph: Graph) -> str:
        """The region as one expression over %ids (what numexpr would evaluate)."""
        produced = {m.outs[0]: m for m in self.members}

        def r(vid):
            m = produced.get(vid)
            if m is None:
                return graph._ref(vid)
            return m.op.expr.format(*[r(i) for i in m.ins])

        text = r(self.out)
        return text + (f"   [{self.note}]" if self.note else "")


def fusable(node: Node, graph: Graph) -> bool:
    if node.kind != "op" or node.op.expr is None or len(node.outs) != 1 or node.stateful:
        return False
    v = graph.values[node.outs[0]]
    return v.nd and v.dtype is not None


def find_regions(graph: Graph, keep: set | None = None) -> list[Region]:
    """Group fusable nodes into regions of two or more ops (see the module docstring)."""
    nodes = graph.nodes
    users: dict[int, list] = {}
    for n in nodes:
        for i in n.ins:
            users.setdefault(i, []).append(n)
    external = set(graph.output_vids()) | (keep or set())
    # Stateful nodes seen before each position: a region may not straddle one.
    before = []
    count = 0
    for n in nodes:
        before.append(count)
        if n.stateful:
            count += 1
    region_of: dict[int, list] = {}
    for n in reversed(nodes):
        if not fusable(n, graph):
            continue
        out = n.outs[0]
        us = users.get(out, [])
        if (len(us) == 1 and out not in external and id(us[0]) in region_of
                and before[us[0].pos] == before[n.pos]):
            group = region_of[id(us[0])]
            group.append(n)
            region_of[id(n)] = group
        else:
            region_of[id(n)] = [n]
    regions = []
    seen = set()
    for group in region_of.values():
        if id(group) in seen or len(group) < 2:
            continue
        seen.add(id(group))
        members = sorted(group, key=lambda m: m.pos)
        produced = {m.outs[0] for m in members}
        inputs: list[int] = []
        for m in members:
            for i in m.ins:
                if i not in produced and i not in inputs:
                    inputs.append(i)
        regions.append(Region(members, inputs, members[-1].outs[0]))
    return regions


def apply_regions(graph: Graph, regions: list[Region]) -> None:
    """Replace each region's members by one ``fused`` node at the root's position."""
    member_ids = {}
    for r in regions:
        for m in r.members[:-1]:
            member_ids[id(m)] = None
        member_ids[id(r.members[-1])] = r
    new_nodes = []
    for n in graph.nodes:
        if id(n) not in member_ids:
            new_nodes.append(n)
            continue
        r = member_ids[id(n)]
        if r is None:
            continue
        f = Node("fused", ins=list(r.inputs), outs=[r.out])
        f.region = r
        graph.values[r.out].producer = f
        new_nodes.append(f)
    graph.nodes = new_nodes
    graph.renumber()


def scalar_dtype(graph: Graph, member: Node, vid: int):
    """The dtype a weak Python scalar input takes in ``member`` (NumPy 2 promotion)."""
    v = graph.values[vid]
    others = [graph.values[i].dtype for i in member.ins
              if i != vid and not graph.values[i].is_py_scalar]
    if not others:
        return np.asarray(v.const).dtype
    return np.result_type(*others, v.const)


def render(graph: Graph, region: Region) -> tuple[str, list]:
    """The region as one numexpr expression; its inputs as (name, vid, dtype) locals.

    Python scalars become typed 0-d locals (numexpr would turn a float literal into
    float64 and promote a float32 expression).
    """
    produced = {m.outs[0]: m for m in region.members}
    names: dict = {}
    order: list = []

    def name_for(vid, member):
        v = graph.values[vid]
        dt = scalar_dtype(graph, member, vid) if v.is_py_scalar else None
        key = (vid, None if dt is None else np.dtype(dt).str)
        nm = names.get(key)
        if nm is None:
            nm = names[key] = f"i{len(order)}"
            order.append((nm, vid, dt))
        return nm

    def r(vid, member):
        m = produced.get(vid)
        if m is None:
            return name_for(vid, member)
        return m.op.expr.format(*[r(i, m) for i in m.ins])

    text = r(region.out, None)
    return text, order
