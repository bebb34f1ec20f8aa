"""Graph IR of a traced function: values and nodes that reference op records.

A graph is a flat, topologically ordered list of nodes in the order the trace ran
them. Values are numbered; each is a parameter (a flattened tensor argument), a
constant captured or folded at trace time, or the output of a node. Node kinds:

* ``op``      one op record applied to values, with its static attrs;
* ``read``    the current value of a Variable (live: read when the node runs);
* ``assign``  ``assign``/``assign_add``/``assign_sub`` of a value to a Variable;
* ``fused``   an elementwise region built by :mod:`.fuse` (members are ``op`` nodes).

Nodes keep the op record itself (never a string), so a node maps to one op and its
plain attrs; that keeps the graph exportable (DESIGN.md "Later": ONNX).
"""
from __future__ import annotations

import numpy as np

_PY_SCALARS = (bool, int, float, complex)


class Value:
    """One SSA value: its trace-time shape/dtype and where it comes from."""

    __slots__ = ("id", "shape", "dtype", "kind", "const", "producer", "name", "traced", "nd")

    def __init__(self, vid: int, kind: str, shape: tuple, dtype, name: str = "") -> None:
        self.id = vid
        self.kind = kind            # "param" | "const" | "node"
        self.shape = shape
        self.dtype = dtype
        self.const = None           # the constant (array or weak Python scalar)
        self.producer = None        # the Node producing it
        self.name = name
        self.traced = None          # the value seen while tracing (dropped after compile)
        self.nd = False             # the value is an ndarray (not a NumPy/Python scalar)

    @property
    def is_py_scalar(self) -> bool:
        return self.kind == "const" and type(self.const) in _PY_SCALARS

    @property
    def size(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n

    def type_str(self) -> str:
        if self.is_py_scalar:
            return f"py:{type(self.const).__name__}"
        dt = np.dtype(self.dtype).name if self.dtype is not None else "?"
        return f"{dt}[{','.join(str(d) for d in self.shape)}]"


class Node:
    """One instruction of the graph (see the module docstring for the kinds)."""

    __slots__ = ("kind", "op", "ins", "outs", "attrs", "var", "method", "region", "pos")

    def __init__(self, kind: str, op=None, ins=(), outs=(), attrs=None, var=None,
                 method: str | None = None) -> None:
        self.kind = kind
        self.op = op
        self.ins = list(ins)
        self.outs = list(outs)
        self.attrs = attrs or {}
        self.var = var
        self.method = method
        self.region = None   # for "fused": the Region (see fuse.py)
        self.pos = 0

    @property
    def stateful(self) -> bool:
        """Must run exactly once per call, in order: assigns and stateful op records."""
        if self.kind == "assign":
            return True
        if self.kind != "op":
            return False
        return is_stateful_op(self.op)


def is_stateful_op(op) -> bool:
    """An op record is stateful if it says so or has no outputs (a pure side effect).

    ``Op`` has no ``stateful`` slot yet; random records that draw from a generator
    should set one (see the package docstring) so they are re-executed on every call
    and never folded, merged or removed.
    """
    return bool(getattr(op, "stateful", False)) or op.num_outputs == 0


class Graph:
    """Values, nodes in program order, parameters and the flat output spec."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.values: list[Value] = []
        self.nodes: list[Node] = []
        self.params: list[int] = []
        self.param_names: list[str] = []
        # Flat outputs: ("value", vid) | ("var", Variable) | ("py", object)
        self.outputs: list[tuple] = []
        self.out_structure = None
        self.variables: dict[int, object] = {}   # id -> Variable read or assigned
        # Traced with symbolic (None) dimensions: one graph serves every size, value
        # shapes are those of the trace (see executor.Program for per-shape plans).
        self.generic = False

    # ---- construction ---------------------------------------------------------------
    def new_value(self, kind: str, shape: tuple, dtype, name: str = "") -> Value:
        v = Value(len(self.values), kind, shape, dtype, name)
        self.values.append(v)
        return v

    def add_node(self, node: Node) -> Node:
        node.pos = len(self.nodes)
        self.nodes.append(node)
        for vid in node.outs:
            self.values[vid].producer = node
        return node

    def clone(self, nodes: list) -> Graph:
        """A graph sharing values, params and outputs, with its own node list."""
        g = Graph(self.name)
        g.values, g.params, g.param_names = self.values, list(self.params), self.param_names
        g.outputs, g.out_structure, g.variables = self.outputs, self.out_structure, self.variables
        g.generic = self.generic
        g.nodes = list(nodes)
        g.renumber()
        return g

    def renumber(self) -> None:
        for i, n in enumerate(self.nodes):
            n.pos = i

    def output_vids(self) -> list[int]:
        return [o[1] for o in self.outputs if o[0] == "value"]

    # ---- TensorFlow's views -----------------------------------------------------------
    def get_operations(self) -> list:
        """The graph's operations in program order (inputs first; the ops of fused regions
        one by one), each with ``name``, ``type``, ``inputs`` and ``outputs`` (names)."""
        names = {p: n for p, n in zip(self.params, self.param_names)}
        ops = [Operation(n or f"args_{k}", "Placeholder", [], [f"%{p}"])
               for k, (p, n) in enumerate(zip(self.params, self.param_names))]

        def ref(vid):
            v = self.values[vid]
            return names.get(vid, f"%{vid}") if v.kind != "const" else f"const_{vid}"

        nodes: list = []
        for n in self.nodes:
            nodes.extend(n.region.members if n.kind == "fused" else [n])
        for k, n in enumerate(nodes):
            if n.kind == "read":
                kind, name = "ReadVariableOp", f"read_{n.var.name}"
            elif n.kind == "assign":
                kind = {"assign": "AssignVariableOp", "assign_add": "AssignAddVariableOp",
                        "assign_sub": "AssignSubVariableOp"}[n.method]
                name = f"{n.method}_{n.var.name}"
            else:
                kind, name = n.op.name, n.op.name
            name = f"{name}_{k}"
            ops.append(Operation(name, kind, [ref(i) for i in n.ins], [f"%{o}" for o in n.outs]))
            for j, o in enumerate(n.outs):
                names[o] = name if j == 0 else f"{name}:{j}"
        return ops

    def as_graph_def(self) -> GraphDef:
        """A printable description of the graph: ``.node`` lists ``NodeDef``-like
        entries (``name``, ``op``, ``input``), as TensorFlow's ``GraphDef``."""
        return GraphDef(self.get_operations())

    # ---- printing -------------------------------------------------------------------
    def _ref(self, vid: int) -> str:
        v = self.values[vid]
        if v.kind == "const":
            if v.is_py_scalar:
                return repr(v.const)
            a = np.asarray(v.const)
            if a.size <= 4:
                return f"const({np.array2string(a, separator=',')}:{a.dtype.name})"
            return f"%{vid}"
        return f"%{vid}"

    def __str__(self) -> str:
        lines = [f"graph {self.name}("
                 + ", ".join(f"%{p}: {self.values[p].type_str()} {n}".rstrip()
                             for p, n in zip(self.params, self.param_names)) + ")"]
        shown = set()
        for n in self.nodes:
            for vid in n.ins:
                v = self.values[vid]
                if v.kind == "const" and vid not in shown and self._ref(vid).startswith("%"):
                    shown.add(vid)
                    lines.append(f"  %{vid} = constant {v.type_str()}")
            lines.append("  " + self._node_str(n))
        outs = []
        for kind, x in self.outputs:
            outs.append(self._ref(x) if kind == "value" else
                        f"<variable '{x.name}'>" if kind == "var" else repr(x))
        lines.append(f"  return {', '.join(outs)}")
        return "\n".join(lines)

    __repr__ = __str__

    def _node_str(self, n: Node) -> str:
        refs = ", ".join(self._ref(i) for i in n.ins)
        if n.kind == "read":
            v = self.values[n.outs[0]]
            return f"%{n.outs[0]} = read_variable '{n.var.name}'  {v.type_str()}"
        if n.kind == "assign":
            return f"{n.method} '{n.var.name}' <- {refs}"
        outs = ", ".join(f"%{o}" for o in n.outs)
        types = ", ".join(self.values[o].type_str() for o in n.outs)
        if n.kind == "fused":
            r = n.region
            return (f"{outs} = fused[{r.mode}, {len(r.members)} ops]({refs})  {types}\n"
                    f"      {r.describe(self)}")
        args = ", ".join([refs] * bool(refs) + [f"{k}={_short(v)}" for k, v in n.attrs.items()])
        lhs = f"{outs} = " if outs else ""
        return f"{lhs}{n.op.name}({args})  {types}".rstrip()


def _short(v) -> str:
    s = repr(v)
    return s if len(s) <= 60 else s[:57] + "..."


class Operation:
    """One operation of :meth:`Graph.get_operations` (TensorFlow's ``tf.Operation`` view)."""

    __slots__ = ("name", "type", "inputs", "outputs")

    def __init__(self, name: str, type: str, inputs: list, outputs: list) -> None:  # noqa: A002
        self.name = name
        self.type = type
        self.inputs = inputs
        self.outputs = outputs

    @property
    def op(self) -> str:
        """The operation type (the ``op`` field of a ``NodeDef``)."""
        return self.type

    @property
    def input(self) -> list:
        """The input names (the ``input`` field of a ``NodeDef``)."""
        return self.inputs

    def __repr__(self) -> str:
        return f"<Operation '{self.name}' type={self.type}>"


class GraphDef:
    """The nodes of a graph, printable as text (TensorFlow's ``GraphDef`` view)."""

    def __init__(self, nodes: list) -> None:
        self.node = nodes

    def __str__(self) -> str:
        out = []
        for n in self.node:
            out.append("node {")
            out.append(f'  name: "{n.name}"')
            out.append(f'  op: "{n.type}"')
            out.extend(f'  input: "{i}"' for i in n.inputs)
            out.append("}")
        return "\n".join(out)

    __repr__ = __str__
