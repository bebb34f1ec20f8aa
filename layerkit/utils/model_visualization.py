"""``plot_model``: a model's layer graph as a PNG/SVG/PDF (matplotlib), a text diagram or
Graphviz DOT source, with no graphviz or pydot needed.

:func:`layer_graph` (one node per layer, with its inbound layers and output shapes) is also
what ``lk.callbacks.TensorBoard`` writes as the model graph.
"""
from __future__ import annotations

import os
import warnings
from dataclasses import dataclass, field
from typing import Any

from layerkit._core.nest import flatten

__all__ = ["plot_model", "layer_graph"]


@dataclass
class GraphNode:
    """One box of the diagram: a layer (or an input) and the names of the boxes feeding it."""

    name: str
    class_name: str
    inbound: list = field(default_factory=list)
    output_shapes: list = field(default_factory=list)
    output_dtypes: list = field(default_factory=list)
    layer: object = None


def _outputs(tensors) -> tuple[list, list]:
    flat = [t for t in flatten(tensors) if hasattr(t, "shape")]
    return [tuple(t.shape) for t in flat], [getattr(getattr(t, "dtype", None), "name", None)
                                          for t in flat]


def layer_graph(model) -> list[GraphNode] | None:
    """The layers of a functional or Sequential model as :class:`GraphNode` s in
    topological order (inputs first; a shared layer is one node with every caller's
    inputs); None for other models, whose structure is only known by running them."""
    graph = model.__dict__.get("_graph")
    nodes: list[GraphNode] = []
    if graph is not None:
        for t, name in zip(graph.flat_inputs, graph.input_names):
            shapes, dtypes = _outputs(t)
            nodes.append(GraphNode(name, "InputLayer", [], shapes, dtypes))
        index: dict = {}
        for node in graph.nodes:
            layer = node.layer
            inputs = [t.layer.name if t.layer is not None else t.name for t in node.inputs]
            if id(layer) in index:
                entry = nodes[index[id(layer)]]
                entry.inbound.extend(i for i in inputs if i not in entry.inbound)
                continue
            index[id(layer)] = len(nodes)
            shapes, dtypes = _outputs(node.outputs)
            nodes.append(GraphNode(layer.name, type(layer).__name__, inputs, shapes, dtypes,
                                   layer))
        return nodes
    if "_stack" in model.__dict__.get("_tracked", {}):
        shape = model.__dict__.get("_input_shape")
        shapes = {id(layer): s for layer, s in model._symbolic_shapes()}
        previous: list = []
        if shape is not None:
            nodes.append(GraphNode("input_layer", "InputLayer", [], [tuple(shape)]))
            previous = ["input_layer"]
        for layer in model.layers:
            out = shapes.get(id(layer))
            dtype = getattr(getattr(layer, "compute_dtype", None), "name", None) or \
                getattr(layer, "dtype", None)
            nodes.append(GraphNode(layer.name, type(layer).__name__, previous,
                                   [tuple(out)] if out is not None else [],
                                   [str(getattr(dtype, "name", dtype))] if dtype else [],
                                   layer))
            previous = [layer.name]
        return nodes
    return None


# ---- labels ------------------------------------------------------------------------------
def _fmt_shapes(shapes: list) -> str:
    if not shapes:
        return "?"
    return str(shapes[0]) if len(shapes) == 1 else "[" + ", ".join(map(str, shapes)) + "]"


def _activation_name(layer) -> str | None:
    act = getattr(layer, "activation", None)
    if act is None:
        return None
    return getattr(act, "name", None) or getattr(act, "__name__", None) or str(act)


def _label(node: GraphNode, by_name: dict, opts: dict) -> list[str]:
    """The lines of a node's box (Keras's fields, in Keras's order)."""
    lines = [f"{node.name} ({node.class_name})" if opts["show_layer_names"]
             else node.class_name]
    layer = node.layer
    if opts["show_layer_activations"] and layer is not None:
        act = _activation_name(layer)
        if act is not None:
            lines.append(f"Activation: {act}")
    if opts["show_shapes"]:
        if node.class_name != "InputLayer":
            ins = [s for name in node.inbound for s in by_name[name].output_shapes] \
                if all(n in by_name for n in node.inbound) and node.inbound else []
            lines.append(f"Input shape: {_fmt_shapes(ins)}")
        lines.append(f"Output shape: {_fmt_shapes(node.output_shapes)}")
    if opts["show_dtype"]:
        dtypes = [d for d in node.output_dtypes if d]
        lines.append(f"Output dtype: {dtypes[0] if len(set(dtypes)) == 1 else dtypes or '?'}")
    if opts["show_trainable"] and layer is not None and getattr(layer, "weights", None):
        lines.append("Trainable" if layer.trainable else "Non-trainable")
    if opts["expand_nested"] and layer is not None:
        inner = _diagram_nodes(layer, opts, nested=True)
        if inner is not None:
            for sub in inner:
                lines.extend(("  " if i == 0 else "    ") + text
                             for i, text in enumerate(sub[1]))
    return lines


def _diagram_nodes(model, opts: dict, nested: bool = False):
    """``[(node, label lines)]``; for a subclassed model one node (Keras); None for a
    nested layer that is not a model."""
    nodes = layer_graph(model)
    if nodes is None:
        if nested:
            return None
        nodes = [GraphNode(model.name, type(model).__name__, layer=model)]
    by_name = {n.name: n for n in nodes}
    items = [(n, _label(n, by_name, opts)) for n in nodes]
    if "_stack" in model.__dict__.get("_tracked", {}):
        # Keras draws no input box for a Sequential model
        items = [(n, lines) for n, lines in items if n.layer is not None]
        kept = {n.name for n, _ in items}
        for n, _ in items:
            n.inbound = [i for i in n.inbound if i in kept]
    return items


# ---- writers -----------------------------------------------------------------------------
def _text(model, items) -> str:
    width = max(len(line) for _, lines in items for line in lines) + 4
    out = [f'Model: "{model.name}"']
    previous = None
    for node, lines in items:
        if previous is not None:
            if node.inbound == [previous]:
                out += [" " * (width // 2) + "|", " " * (width // 2) + "v"]
            else:
                out.append("")
        body = list(lines)
        if node.inbound and node.inbound != [previous]:
            body.append("Inputs: " + ", ".join(node.inbound))
        out.append("+" + "-" * (width - 2) + "+")
        out += [f"| {line:<{width - 4}} |" for line in body]
        out.append("+" + "-" * (width - 2) + "+")
        previous = node.name
    return "\n".join(out) + "\n"


def _dot(model, items, rankdir: str, dpi) -> str:
    def esc(s: str) -> str:
        for ch in '\\{}|<>"':
            s = s.replace(ch, "\\" + ch)
        return s

    out = [f'digraph "{esc(model.name)}" {{', f"  rankdir={rankdir};", f"  dpi={dpi};",
           '  node [shape=record, fontname="Helvetica"];']
    for node, lines in items:
        out.append(f'  "{esc(node.name)}" [label="{{' + "|".join(esc(x) for x in lines)
                   + '}"];')
    for node, _ in items:
        for src in node.inbound:
            out.append(f'  "{esc(src)}" -> "{esc(node.name)}";')
    return "\n".join(out) + "\n}\n"


def _ranks(items) -> dict:
    rank: dict = {}
    for node, _ in items:   # topological order: inbound ranks are known
        rank[node.name] = 1 + max((rank[i] for i in node.inbound if i in rank), default=-1)
    return rank


def _image(path: str, model, items, rankdir: str, dpi) -> None:
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    rank = _ranks(items)
    by_rank: dict = {}
    for node, _ in items:
        by_rank.setdefault(rank[node.name], []).append(node.name)
    n_ranks = max(by_rank) + 1
    n_across = max(len(v) for v in by_rank.values())
    chars = max(len(line) for _, lines in items for line in lines)
    rows = max(len(lines) for _, lines in items)
    box_w, box_h = 0.075 * chars + 0.5, 0.2 * rows + 0.35   # inches at fontsize 9
    vertical = rankdir in ("TB", "BT")
    along, across = (box_h + 0.6, box_w + 0.4) if vertical else (box_w + 0.8, box_h + 0.4)
    size_along, size_across = n_ranks * along, n_across * across
    fig_w, fig_h = (size_across, size_along) if vertical else (size_along, size_across)
    fig = plt.figure(figsize=(max(fig_w, 2.0), max(fig_h, 1.0)))
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_xlim(0, fig_w)
    ax.set_ylim(0, fig_h)
    ax.axis("off")
    pos = {}
    for r, names in by_rank.items():
        a = (r + 0.5) * along if rankdir in ("TB", "LR") else (n_ranks - r - 0.5) * along
        for i, name in enumerate(names):
            c = (i + 0.5) * size_across / len(names)
            pos[name] = (c, fig_h - a) if vertical else (a, fig_h - c)
    boxes = {}
    for node, lines in items:
        boxes[node.name] = ax.text(
            *pos[node.name], "\n".join(lines), ha="center", va="center", fontsize=9,
            family="monospace",
            bbox=dict(boxstyle="round,pad=0.4", fc="#eef3fb", ec="#33507a", lw=1.2))
    for node, _ in items:
        for src in node.inbound:
            if src in boxes:
                ax.annotate("", xy=pos[node.name], xytext=pos[src],
                            arrowprops=dict(arrowstyle="-|>", color="#33507a", lw=1.4,
                                            patchA=boxes[src].get_bbox_patch(),
                                            patchB=boxes[node.name].get_bbox_patch()))
    fig.savefig(path, dpi=dpi)
    plt.close(fig)


def plot_model(model: Any, to_file: str = "model.png", show_shapes: bool = False,
               show_dtype: bool = False, show_layer_names: bool = True, rankdir: str = "TB",
               expand_nested: bool = False, dpi: int = 200, show_layer_activations: bool = False,
               show_trainable: bool = False, **kwargs: Any) -> str:
    """Draw a model's layer graph (Keras 3's ``keras.utils.plot_model``, without graphviz).

    The boxes and their fields are Keras's (``name (Class)``, activation, input and
    output shapes, output dtype, trainable); the file's suffix picks the output:

    - ``.png``, ``.svg``, ``.pdf``, ``.jpg`` (or no suffix: PNG, as Keras): an image drawn
      with matplotlib (the optional ``examples``/``test`` extra). Without matplotlib, the
      text diagram is written next to it as ``<name>.txt`` instead, with a warning.
    - ``.txt``: a text diagram (boxes joined by arrows; a box fed by other than the box
      above it lists its inputs). ``rankdir`` does not apply.
    - ``.dot`` / ``.gv``: Graphviz DOT source (``dot -Tpng model.dot`` renders it).

    As in Keras, a Sequential model has no input box and a subclassed model is one box.
    ``expand_nested`` lists a nested model's layers inside its box (Keras draws a
    cluster of boxes).

    Args:
        model: a built model.
        to_file: the output file.
        show_shapes: whether the boxes show the output shapes.
        show_dtype: whether the boxes show the dtypes.
        show_layer_names: whether the boxes show the layer names.
        show_layer_activations: whether the boxes show the activations.
        show_trainable: whether the boxes show the trainable flags.
        rankdir: ``'TB'`` (top to bottom), ``'LR'``, ``'BT'`` or ``'RL'``.
        expand_nested: show the layers of nested models.
        dpi: the image resolution.

    Returns:
        The path written (Keras returns an IPython image when IPython is installed).

    Raises:
        ValueError: the model is not built, an unknown ``rankdir``, or an unexpected
            keyword argument (as Keras).

    Examples:
        >>> import layerkit as lk, tempfile, os
        >>> model = lk.Sequential([lk.Input((4,)), lk.layers.Dense(2, name="out")],
        ...                       name="mlp")
        >>> path = lk.utils.plot_model(model, os.path.join(tempfile.mkdtemp(), "m.txt"),
        ...                            show_shapes=True)
        >>> print(open(path).read().strip())
        Model: "mlp"
        +-------------------------+
        | out (Dense)             |
        | Input shape: (None, 4)  |
        | Output shape: (None, 2) |
        +-------------------------+
    """
    if kwargs.pop("layer_range", None) is not None:
        raise ValueError("plot_model: argument `layer_range` is no longer supported.")
    if kwargs:
        raise ValueError(f"plot_model: unrecognized keyword arguments: {sorted(kwargs)}")
    if not getattr(model, "built", False):
        raise ValueError(f"plot_model: model '{getattr(model, 'name', model)}' has not yet "
                         f"been built. Build the model first by calling `build()` or by "
                         f"calling the model on a batch of data.")
    if rankdir not in ("TB", "LR", "BT", "RL"):
        raise ValueError(f"plot_model: rankdir must be 'TB', 'LR', 'BT' or 'RL', received "
                         f"rankdir={rankdir!r}")
    opts = dict(show_shapes=show_shapes, show_dtype=show_dtype,
                show_layer_names=show_layer_names, expand_nested=expand_nested,
                show_layer_activations=show_layer_activations, show_trainable=show_trainable)
    items = _diagram_nodes(model, opts)
    path = os.fspath(to_file)
    ext = os.path.splitext(path)[1].lower()
    if ext in (".dot", ".gv"):
        text = _dot(model, items, rankdir, dpi)
    elif ext == ".txt":
        text = _text(model, items)
    else:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            path = os.path.splitext(path)[0] + ".txt"
            warnings.warn(f"plot_model: matplotlib is not installed, so no image is drawn; "
                          f"the text diagram is written to {path} instead (pip install "
                          f"matplotlib for images)", stacklevel=2)
            text = _text(model, items)
        else:
            _image(path if ext else path + ".png", model, items, rankdir, dpi)
            return path if ext else path + ".png"
    with open(path, "w") as f:
        f.write(text)
    return path
