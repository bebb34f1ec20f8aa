"""Symbolic tensors: the graph a functional model is built from.

Calling a layer on a :class:`SymbolicTensor` (for instance the result of ``lk.Input``)
does not compute anything visible: the layer builds from the symbolic shape, finds its
output shape by running on small concrete zero batches, and returns SymbolicTensor(s)
that remember the call in a :class:`Node`.

How a functional model replays the graph::

    node = t.node                      # None for a graph input (lk.Input)
    args = map_structure(lookup, node.call_args)      # SymbolicTensor -> its value
    kwargs = map_structure(lookup, node.call_kwargs)
    out = node.layer(*args, **kwargs)  # one call per node
    value_of_t = flatten(out)[t.index]

``node.inputs`` lists the SymbolicTensors the call consumed (in ``flatten`` order) and
``node.outputs`` is the output structure of SymbolicTensors.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from layerkit._core import context
from layerkit._core.convert import as_dtype
from layerkit._core.nest import flatten, map_structure
from layerkit._core.nest import pack_sequence_as as pack_like
from layerkit._core.op import wrap
from layerkit._core.types import DTypeLike, ShapeLike

__all__ = ["SymbolicTensor", "Node", "flatten", "map_structure", "any_symbolic", "call", "probe",
           "probing", "output_shape"]

# Sizes substituted for unknown dimensions in the two probing runs. Dims that differ
# between the runs' outputs are unknown (None). Non-batch sizes differ by more than 32
# so that up to 32x downsampling (pooling, strides) still tells them apart.
_PROBES = ((1, 64), (2, 97))

# How many probing runs are active (nested models probe their layers): layers that keep
# state between calls (stateful RNNs) leave it alone while it is above zero.
_PROBING = [0]


def probing() -> bool:
    """True while layers run on the zero batches of :func:`probe` (shape inference)."""
    return _PROBING[0] > 0


class SymbolicTensor:
    """A placeholder tensor in a functional graph.

    Attributes:
        shape: tuple with ``None`` for unknown dimensions (usually the batch).
        dtype: a ``numpy.dtype``.
        node: the :class:`Node` that produced it, or None for a graph input.
        index: its position in ``flatten(node.outputs)``.
        name: optional name (inputs created by ``lk.Input(name=...)``).
    """

    __slots__ = ("shape", "dtype", "node", "index", "name", "_keras_mask")

    def __init__(self, shape: ShapeLike, dtype: DTypeLike = "float32", node: Node | None = None,
                 index: int = 0, name: str | None = None) -> None:
        self.shape = tuple(None if d is None else int(d) for d in shape)
        self.dtype = as_dtype(dtype)
        self.node = node
        self.index = index
        self.name = name
        # The symbolic Keras mask of this tensor (a bool SymbolicTensor) when the layer
        # that produced it computes one, as Keras's KerasTensor._keras_mask.
        self._keras_mask: SymbolicTensor | None = None

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def layer(self) -> Any:
        """The layer that produced this tensor (None for a graph input)."""
        return self.node.layer if self.node is not None else None

    @property
    def inputs(self) -> list:
        """The SymbolicTensors consumed by the producing call."""
        return self.node.inputs if self.node is not None else []

    @property
    def call_kwargs(self) -> dict:
        return self.node.call_kwargs if self.node is not None else {}

    def __repr__(self) -> str:
        src = f", produced by '{self.layer.name}'" if self.node is not None else ""
        return f"<SymbolicTensor shape={self.shape} dtype={self.dtype.name}{src}>"

    def __bool__(self):
        raise TypeError("a SymbolicTensor has no value: it only describes a graph edge")


class Node:
    """One layer call in a functional graph."""

    __slots__ = ("layer", "call_args", "call_kwargs", "inputs", "outputs")

    def __init__(self, layer: Any, call_args: tuple, call_kwargs: dict) -> None:
        self.layer = layer
        self.call_args = call_args
        self.call_kwargs = call_kwargs
        self.inputs = [t for t in flatten((call_args, call_kwargs))
                       if isinstance(t, SymbolicTensor)]
        self.outputs = None

    def __repr__(self) -> str:
        return f"<Node {self.layer.name}: {len(self.inputs)} input(s)>"


def any_symbolic(args: tuple, kwargs: dict) -> bool:
    """Whether any argument (or element of a list/tuple argument) is a SymbolicTensor."""
    for a in (*args, *kwargs.values()):
        if type(a) is SymbolicTensor:
            return True
        if isinstance(a, (list, tuple)) and any(type(x) is SymbolicTensor for x in flatten(a)):
            return True
    return False


def _concrete(struct, batch: int, other: int):
    def sized(shape: tuple) -> tuple:
        return tuple((batch if i == 0 else other) if d is None else d
                     for i, d in enumerate(shape))

    def fill(x):
        if type(x) is not SymbolicTensor:
            return x
        t = wrap(np.zeros(sized(x.shape), x.dtype))
        if x._keras_mask is not None:  # a probe sees a mask where the real call will
            t._keras_mask = wrap(np.ones(sized(x._keras_mask.shape), bool))
        return t
    return map_structure(fill, struct)


def _varying(a: tuple, b: tuple) -> tuple:
    return tuple(m if m == n else None for m, n in zip(a, b))


def probe(layer, args: tuple, kwargs: dict):
    """Output structure of ``layer(*args, **kwargs)`` as ``(shape, dtype)`` leaves.

    Runs the (built) layer twice on zero batches with ``training=False`` and no active
    tape; output dimensions that change between the runs are reported as None.
    """
    saved = context.RECORDERS[:]
    context.RECORDERS.clear()
    _PROBING[0] += 1
    try:
        runs = []
        for batch, other in _PROBES:
            cargs = _concrete(args, batch, other)
            ckwargs = dict(_concrete(kwargs, batch, other), training=False)
            runs.append(layer(*cargs, **ckwargs))
    finally:
        _PROBING[0] -= 1
        context.RECORDERS[:] = saved
    a, b = flatten(runs[0]), flatten(runs[1])
    specs = []
    for x, y in zip(a, b):
        mx, my = getattr(x, "_keras_mask", None), getattr(y, "_keras_mask", None)
        mask = None if mx is None or my is None else _varying(np.shape(mx), np.shape(my))
        specs.append((_varying(np.shape(x), np.shape(y)), np.asarray(x).dtype, mask))
    return runs[0], specs


def call(layer, args: tuple, kwargs: dict):
    """``layer(*args, **kwargs)`` with symbolic inputs: build, probe, record a Node."""
    node = Node(layer, args, kwargs)
    structure, specs = probe(layer, args, kwargs)
    outs = []
    for i, (shape, dtype, mask) in enumerate(specs):
        out = SymbolicTensor(shape, dtype, node, i)
        if mask is not None:
            out._keras_mask = SymbolicTensor(mask, "bool", node, i, name="keras_mask")
        outs.append(out)
    node.outputs = pack_like(structure, outs)
    layer.__dict__.setdefault("_inbound_nodes", []).append(node)
    return node.outputs


def output_shape(layer, input_shape):
    """``layer``'s output shape(s) for ``input_shape`` (a tuple, or a list of tuples)."""
    if isinstance(input_shape, list) and input_shape and isinstance(input_shape[0],
                                                                    (list, tuple)):
        x = [SymbolicTensor(s, layer._dtype) for s in input_shape]
    else:
        x = SymbolicTensor(input_shape, layer._dtype)
    if not layer.built:
        layer._build_from((x,), {})
    structure, specs = probe(layer, (x,), {})
    shapes = [s for s, _, _ in specs]
    if len(shapes) == 1 and not isinstance(structure, (list, tuple)):
        return shapes[0]
    return pack_like(structure, shapes)
