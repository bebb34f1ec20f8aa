"""Functional models as Keras 3 configs, and Keras 3's order of a graph's layers.

A functional model's config is Keras 3's::

    {"name": ..., "trainable": ...,
     "layers": [{"module", "class_name", "config", "registered_name", "build_config",
                 "name": <layer name>, "inbound_nodes": [{"args": [...], "kwargs": {...}}]},
                ...],
     "input_layers": <structure of [name, node_index, tensor_index]>,
     "output_layers": <the same for the outputs>}

Each model input is an ``InputLayer`` entry. In a node's arguments a tensor is
``{"class_name": "__keras_tensor__", "config": {"shape", "dtype", "keras_history":
[layer name, node index, tensor index]}}``: the ``tensor_index``-th (flattened) output
of the ``node_index``-th call of that layer within this model. As in Keras, a nested
functional model counts one extra call (the one linking its own inputs to outputs), so
its node indices start at 1.

Rebuilding creates every layer first, then replays the calls in rounds until every
node's inputs exist (a layer shared at several depths waits for its inputs), as Keras's
``functional_from_config`` does. ``training`` arguments recorded in nodes are dropped:
the enclosing model call decides training mode (Keras lets the outer flag win too), and
``mask=None`` entries (Keras writes them) are dropped.
"""
from __future__ import annotations

from layerkit._core.nest import flatten, pack_sequence_as
from layerkit.layers.layer import Layer
from layerkit.layers.symbolic import SymbolicTensor

__all__ = ["keras_operation_order", "functional_config", "functional_from_config"]


def _is_functional(layer) -> bool:
    """A functional model (Keras's ``Functional``): its node indices start at 1."""
    from layerkit.models.sequential import Sequential

    return layer.__dict__.get("_graph") is not None and not isinstance(layer, Sequential)


def keras_operation_order(graph) -> list:
    """The graph's inputs (SymbolicTensors) and layers in Keras 3's operation order.

    Keras orders a functional model's operations by decreasing depth (the longest path
    to an output), ties broken by the order a depth-first walk from the outputs first
    reaches them. That order names the weight groups of ``.keras``/``.weights.h5`` files
    (``layers/dense``, ``layers/dense_1``, ...), so it must be reproduced exactly.
    """
    input_ids = {id(t) for t in graph.flat_inputs}

    def node_of(t):
        return t if id(t) in input_ids else t.node

    def op_of(node):
        return node if isinstance(node, SymbolicTensor) else node.layer

    def parents(node) -> list:
        return [] if isinstance(node, SymbolicTensor) else [node_of(t) for t in node.inputs]

    finished, ordered, op_index, ops = set(), [], {}, {}
    for out in graph.flat_outputs:
        stack = [(out, False)]
        while stack:
            t, done = stack.pop()
            node = node_of(t)
            if done:
                if id(node) not in finished:
                    finished.add(id(node))
                    ordered.append(node)
                continue
            if id(node) in finished:
                continue
            op = op_of(node)
            if id(op) not in op_index:
                op_index[id(op)] = len(op_index)
                ops[id(op)] = op
            stack.append((t, True))
            if not isinstance(node, SymbolicTensor):
                stack.extend((p, False) for p in reversed(node.inputs))
    node_depth: dict = {}
    op_depth: dict = {}
    for node in reversed(ordered):
        op = op_of(node)
        depth = max(node_depth.setdefault(id(node), 0), op_depth.get(id(op), 0))
        op_depth[id(op)] = node_depth[id(node)] = depth
        for parent in parents(node):
            if id(parent) in finished:
                node_depth[id(parent)] = max(depth + 1, node_depth.get(id(parent), 0))
    for t in graph.flat_inputs:  # inputs the outputs do not use
        if id(t) not in op_depth:
            op_depth[id(t)], op_index[id(t)], ops[id(t)] = 0, -1, t
    keys = sorted(op_depth, key=lambda k: (-op_depth[k], op_index[k]))
    return [ops[k] for k in keys]


# ---- writing ------------------------------------------------------------------------------
def functional_config(model) -> dict:
    """Keras 3's config of a functional model (see the module docstring).

    Raises:
        ValueError: two layers or inputs of the model share a name (the config refers
            to them by name).
    """
    from layerkit.saving.serialization_lib import serialize_keras_object

    graph = model._graph
    order = keras_operation_order(graph)
    names = [op.name for op in order]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise ValueError(f"model '{model.name}': the names {dupes} are used by several layers "
                         f"or inputs; a saved functional model refers to layers by name, so "
                         f"give them unique names")
    input_ids = {id(t) for t in graph.flat_inputs}
    node_index: dict = {}
    calls: dict = {}
    for node in graph.nodes:
        mine = calls.setdefault(id(node.layer), [])
        node_index[id(node)] = len(mine) + (1 if _is_functional(node.layer) else 0)
        mine.append(node)

    def history(t) -> list:
        if id(t) in input_ids:
            return [t.name, 0, 0]
        return [t.node.layer.name, node_index[id(t.node)], t.index]

    def arg(value):
        if isinstance(value, SymbolicTensor):
            return {"class_name": "__keras_tensor__",
                    "config": {"shape": list(value.shape), "dtype": value.dtype.name,
                               "keras_history": history(value)}}
        if isinstance(value, (list, tuple)):
            return [arg(v) for v in value]
        if isinstance(value, dict):
            return {k: arg(v) for k, v in value.items()}
        return serialize_keras_object(value)

    layers = []
    for op in order:
        if isinstance(op, SymbolicTensor):
            layers.append({
                "module": "keras.layers", "class_name": "InputLayer",
                "config": {"batch_shape": list(op.shape), "dtype": op.dtype.name,
                           "sparse": False, "ragged": False, "name": op.name,
                           "optional": False},
                "registered_name": None, "name": op.name, "inbound_nodes": []})
            continue
        entry = serialize_keras_object(op)
        entry["config"].pop("batch_input_shape", None)  # the InputLayer entries say it
        entry["name"] = op.name
        entry["inbound_nodes"] = [{"args": arg(list(n.call_args)), "kwargs": arg(n.call_kwargs)}
                                  for n in calls[id(op)]]
        layers.append(entry)
    return {"name": model.name, "trainable": model.trainable, "layers": layers,
            "input_layers": _map(history, graph.inputs),
            "output_layers": _map(history, graph.outputs)}


def _map(fn, structure):
    if isinstance(structure, SymbolicTensor):
        return fn(structure)
    return pack_sequence_as(structure, [fn(t) for t in flatten(structure)])


# ---- reading ------------------------------------------------------------------------------
class _NotReady(Exception):
    """A node's input is the output of a call that has not been replayed yet."""


def _is_ref(value) -> bool:
    return (isinstance(value, list) and len(value) == 3 and isinstance(value[0], str)
            and isinstance(value[1], int) and isinstance(value[2], int))


def functional_from_config(cls, config: dict, custom_objects: dict | None = None):
    """Rebuild a functional model from :func:`functional_config` output (or Keras 3's).

    Args:
        cls: the model class (``lk.Model`` or a subclass with Model's constructor).
        config: the config dict.
        custom_objects: ``{name: class or function}`` for custom layers.

    Returns:
        A new model with freshly initialised weights.

    Raises:
        ValueError: a malformed config: a node naming an unknown layer, an index out of
            range, or calls that can never run (loops or disconnected nodes).
    """
    from layerkit.models.functional import Input
    from layerkit.saving.object_registration import CustomObjectScope
    from layerkit.saving.serialization_lib import deserialize_keras_object

    where = f"functional model {config.get('name')!r}"
    entries = config.get("layers")
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise ValueError(f"{where}: the config's 'layers' must be a list of layer configs")
    created: dict = {}
    outputs: dict = {}  # layer name -> flat outputs of each replayed call
    pending: dict = {}
    with CustomObjectScope(custom_objects):
        for entry in entries:
            inner = entry.get("config") if isinstance(entry.get("config"), dict) else {}
            name = entry.get("name", inner.get("name"))
            if not isinstance(name, str):
                raise ValueError(f"{where}: a layer entry has no name: {sorted(entry)}")
            if name in created:
                raise ValueError(f"{where}: two layers are named {name!r}")
            if entry.get("class_name") == "InputLayer":
                shape = inner.get("batch_shape", inner.get("batch_input_shape"))
                if not isinstance(shape, list):
                    raise ValueError(f"{where}: InputLayer {name!r} has no batch_shape")
                t = Input(batch_shape=tuple(shape), dtype=inner.get("dtype"),
                          name=inner.get("name", name))
                created[name], outputs[name] = t, [[t]]
                continue
            layer = deserialize_keras_object(entry, kind="layers")
            if not isinstance(layer, Layer):
                raise ValueError(f"{where}: entry {name!r} is a {type(layer).__name__}, not a "
                                 f"layer")
            created[name], outputs[name] = layer, []
            nodes = entry.get("inbound_nodes", [])
            if not isinstance(nodes, list):
                raise ValueError(f"{where}: the inbound_nodes of {name!r} must be a list")
            pending[name] = list(nodes)

        def tensor(ref):
            lname, index, position = ref
            if lname not in outputs:
                raise ValueError(f"{where}: a node refers to unknown layer {lname!r}")
            owner = created[lname]
            if isinstance(owner, Layer) and _is_functional(owner):
                index -= 1  # Keras: a nested functional model's own node comes first
            calls = outputs[lname]
            if index < 0 or position < 0:
                raise ValueError(f"{where}: invalid reference {ref!r}")
            if index >= len(calls):
                raise _NotReady
            if position >= len(calls[index]):
                raise ValueError(f"{where}: {ref!r} refers to output {position} of a call of "
                                 f"{lname!r}, which has {len(calls[index])} output(s)")
            return calls[index][position]

        def resolve(value):
            if isinstance(value, dict):
                if value.get("class_name") == "__keras_tensor__":
                    history = (value.get("config") or {}).get("keras_history")
                    if not _is_ref(history):
                        raise ValueError(f"{where}: malformed tensor reference {value!r}")
                    return tensor(history)
                if "class_name" in value and "config" in value:
                    return deserialize_keras_object(value)
                return {k: resolve(v) for k, v in value.items()}
            if isinstance(value, list):
                return [resolve(v) for v in value]
            return value

        def call_args(node) -> tuple:
            if isinstance(node, list):  # Keras 2's [[name, node, tensor, kwargs], ...]
                refs = [tensor(r[:3]) for r in node]
                kwargs = dict(node[0][3]) if node and len(node[0]) > 3 else {}
                return (refs[0] if len(refs) == 1 else refs,), kwargs
            if not isinstance(node, dict):
                raise ValueError(f"{where}: malformed node {node!r}")
            args = resolve(node.get("args", []))
            kwargs = resolve(node.get("kwargs", {}))
            if not isinstance(args, list) or not isinstance(kwargs, dict):
                raise ValueError(f"{where}: malformed node {node!r}")
            kwargs.pop("training", None)
            if kwargs.get("mask", 0) is None:
                del kwargs["mask"]
            return tuple(args), kwargs

        while any(pending.values()):
            progress = False
            for entry in entries:
                name = entry.get("name", (entry.get("config") or {}).get("name"))
                queue = pending.get(name)
                while queue:
                    try:
                        args, kwargs = call_args(queue[0])
                    except _NotReady:
                        break
                    outputs[name].append(flatten(created[name](*args, **kwargs)))
                    queue.pop(0)
                    progress = True
            if not progress:
                stuck = sorted(k for k, v in pending.items() if v)
                raise ValueError(f"{where}: the calls of layers {stuck} can never run (the "
                                 f"config's graph has loops or disconnected nodes)")

        def lookup(structure):
            if _is_ref(structure):
                return tensor(structure)
            if isinstance(structure, dict):
                return {k: lookup(v) for k, v in structure.items()}
            if isinstance(structure, (list, tuple)):
                return [lookup(v) for v in structure]
            raise ValueError(f"{where}: malformed input/output reference {structure!r}")

        for key in ("input_layers", "output_layers"):
            if key not in config:
                raise ValueError(f"{where}: the config has no {key!r}")
        inputs, outs = lookup(config["input_layers"]), lookup(config["output_layers"])
    return cls(inputs=inputs, outputs=outs, name=config.get("name"),
               trainable=config.get("trainable", True))
