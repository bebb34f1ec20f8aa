"""``Model.summary()``: a table of layers, output shapes and parameter counts."""
from __future__ import annotations

import numpy as np

from layerkit._core import context
from layerkit._core.nest import flatten
from layerkit.layers.symbolic import SymbolicTensor
from layerkit.models._data import zeros_like_shape


def _fmt_shape(shape) -> str:
    if shape is None:
        return "?"
    if isinstance(shape, list):
        return ", ".join(_fmt_shape(s) for s in shape)
    return "(" + ", ".join("None" if d is None else str(d) for d in shape) + \
        ("," if len(shape) == 1 else "") + ")"


def _count(variables) -> int:
    return int(sum(int(np.prod(v.shape)) for v in variables))


def _size(n: int, bytes_per: int = 4) -> str:
    b = float(n * bytes_per)
    for unit in ("B", "KB", "MB", "GB"):
        if b < 1024 or unit == "GB":
            return f"{b:.2f} {unit}"
        b /= 1024
    return f"{b:.2f} GB"


def _graph_shapes(model) -> dict:
    """Output shapes per layer (by id) from a functional or Sequential symbolic graph."""
    shapes: dict = {}
    graph = getattr(model, "_graph", None)
    if graph is not None:
        for node in graph.nodes:
            outs = [t.shape for t in flatten(node.outputs) if isinstance(t, SymbolicTensor)]
            shapes.setdefault(id(node.layer), outs[0] if len(outs) == 1 else outs)
    for layer, shape in getattr(model, "_symbolic_shapes", lambda: [])():
        shapes.setdefault(id(layer), shape)
    return shapes


def _probe_shapes(model, layers) -> dict:
    """Run a built subclassed model once on zeros, recording its sublayers' outputs."""
    shape = model.__dict__.get("_build_shape")
    if shape is None:
        return {}
    shapes: dict = {}

    def recorder(layer, fn):
        def call(*args, **kwargs):
            out = fn(*args, **kwargs)
            s = [tuple(np.shape(o)) for o in flatten(out) if hasattr(o, "shape")]
            s = [(None,) + t[1:] if t else t for t in s]
            shapes.setdefault(id(layer), s[0] if len(s) == 1 else s)
            return out
        return call

    saved = context.RECORDERS[:]
    context.RECORDERS.clear()
    patched = []
    try:
        for layer in layers:
            layer.__dict__["call"] = recorder(layer, layer.call)
            patched.append(layer)
        model(zeros_like_shape(shape, model._dtype), training=False)
    except Exception:  # a probe that fails only loses the shapes column
        pass
    finally:
        for layer in patched:
            layer.__dict__.pop("call", None)
        context.RECORDERS[:] = saved
    return shapes


def print_summary(model, line_length=None, print_fn=None, expand_nested: bool = False,
                  show_trainable: bool = False) -> None:
    # An unbuilt model is listed as Keras 3 lists it: shapes '?', params '0 (unbuilt)'.
    print_fn = print_fn or print
    layers = model.layers
    shapes = _graph_shapes(model)
    if model.built and any(id(x) not in shapes for x in layers):
        shapes.update({k: v for k, v in _probe_shapes(model, layers).items() if k not in shapes})
    rows = []

    def add(layer, indent: int) -> None:
        params = _count(layer.weights) if layer.built or layer.weights else 0
        name = ("  " * indent) + f"{layer.name} ({type(layer).__name__})"
        unbuilt = " (unbuilt)" if not layer.built and not layer.weights else ""
        row = [name, _fmt_shape(shapes.get(id(layer))), f"{params:,}{unbuilt}"]
        if show_trainable:
            row.append("Y" if layer.trainable else "N")
        rows.append(row)
        if expand_nested:
            for sub in layer.layers:
                add(sub, indent + 1)

    for layer in layers:
        add(layer, 0)
    heads = ["Layer (type)", "Output Shape", "Param #"] + (["Trainable"] if show_trainable
                                                          else [])
    widths = [max(len(h), *(len(r[i]) for r in rows)) + 2 if rows else len(h) + 2
              for i, h in enumerate(heads)]
    total_w = line_length or sum(widths) + 1
    kind = "Sequential" if type(model).__name__ == "Sequential" else "Model"
    lines = [f'{kind}: "{model.name}"', "_" * total_w,
             (" " + "".join(h.ljust(w) for h, w in zip(heads, widths))).rstrip(), "=" * total_w]
    lines += [" " + "".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
    total = _count(model.weights)
    trainable = _count(model.trainable_weights)
    lines += ["=" * total_w,
              f"Total params: {total:,} ({_size(total)})",
              f"Trainable params: {trainable:,} ({_size(trainable)})",
              f"Non-trainable params: {total - trainable:,} ({_size(total - trainable)})",
              "_" * total_w]
    print_fn("\n".join(lines))
