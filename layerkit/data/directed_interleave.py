"""choose_from_datasets / sample_from_datasets: each element taken from the input that
a selector dataset names.

The selector gives int64 indices (``choose_from_datasets``' ``choice_dataset``, or the
random :class:`~layerkit.data.random_source.ChoiceNode` of ``sample_from_datasets``).
When the named input is exhausted, ``stop_on_empty_dataset`` ends the stream; otherwise
the next index is read, and the stream ends once every input is exhausted (or the
selector is), as tf.data's directed interleave does.
"""
from __future__ import annotations

import functools

import numpy as np

from layerkit.data import structure as _st
from layerkit.data.node import INFINITE, UNKNOWN, Node, NodeIterator


class DirectedInterleaveNode(Node):
    """Elements of ``datasets[i]`` for each index ``i`` of ``selector``."""

    name = "choose_from_datasets"

    def __init__(self, selector: Node, datasets: list, stop_on_empty: bool,
                 where: str) -> None:
        super().__init__(selector, *datasets)
        self.stop_on_empty = bool(stop_on_empty)
        self.where = where
        spec = selector.element_spec()
        if not isinstance(spec, _st.TensorSpec) or spec.dtype != np.int64 or \
                spec.shape not in (None, ()):
            raise TypeError(f"{where}: choice_dataset must be a dataset of scalar int64 "
                            f"tensors, received elements {_st.describe(spec)}")
        first = datasets[0].element_spec()
        for i, d in enumerate(datasets[1:], 1):
            other = d.element_spec()
            if not _st.same_structure(first, other) or [s.dtype for s in _st.flatten(first)] \
                    != [s.dtype for s in _st.flatten(other)]:
                raise TypeError(f"{where}: all datasets must have the same element structure "
                                f"and dtypes: dataset 0 has {_st.describe(first)}, dataset "
                                f"{i} has {_st.describe(other)}")

    def make_iterator(self, ctx):
        return DirectedInterleaveIterator(self, [n.make_iterator(ctx) for n in self.inputs])

    def cardinality(self) -> int:
        sel = self.inputs[0].cardinality()
        if sel != INFINITE and sel != UNKNOWN and sel == 0:
            return 0
        cards = [d.cardinality() for d in self.inputs[1:]]
        if sel == INFINITE and all(c == INFINITE for c in cards):
            return INFINITE
        return UNKNOWN

    def _compute_spec(self):
        specs = [d.element_spec() for d in self.inputs[1:]]
        columns = zip(*(_st.flatten(s) for s in specs))
        return _st.Codec(specs[0]).pack([functools.reduce(_relax, c) for c in columns])


def _relax(a, b):
    return _st.TensorSpec(_st.relax_shape(a.shape, b.shape), a.dtype)


class DirectedInterleaveIterator(NodeIterator):
    __slots__ = ("_node", "_sel", "_ins", "_done", "_eoi")
    kind = "choose_from_datasets"

    def __init__(self, node: DirectedInterleaveNode, its: list) -> None:
        self._node = node
        self._sel = its[0]
        self._ins = its[1:]
        self._done = [False] * len(self._ins)
        self._eoi = False

    def _inputs(self) -> tuple:
        return (self._sel, *self._ins)

    def __next__(self):
        if self._eoi:
            raise StopIteration
        node = self._node
        while not all(self._done):
            try:
                idx = next(self._sel)
            except StopIteration:
                break
            i = np.asarray(idx._v)
            if i.shape != () or i.dtype.kind not in "iu":
                raise TypeError(f"{node.where}: the selector gave {i.dtype.name} with shape "
                                f"{i.shape}, expected an int64 scalar")
            i = int(i)
            if not 0 <= i < len(self._ins):
                raise ValueError(f"{node.where}: the choice dataset gave index {i}, "
                                 f"expected one in [0, {len(self._ins)})")
            if self._done[i]:
                if node.stop_on_empty:
                    break
                continue
            try:
                return next(self._ins[i])
            except StopIteration:
                self._done[i] = True
                if node.stop_on_empty:
                    break
        self._eoi = True
        raise StopIteration

    def get_state(self) -> dict:
        return {"node": self.kind, "done": list(self._done), "eoi": self._eoi,
                "selector": self._sel.get_state(),
                "inputs": [it.get_state() for it in self._ins]}

    def set_state(self, state: dict) -> None:
        self._check_state(state)
        if len(state["inputs"]) != len(self._ins):
            raise ValueError(f"{len(state['inputs'])} inputs in the state, "
                             f"{len(self._ins)} in this pipeline")
        self._done = [bool(d) for d in state["done"]]
        self._eoi = bool(state["eoi"])
        self._sel.set_state(state["selector"])
        for it, s in zip(self._ins, state["inputs"]):
            it.set_state(s)
