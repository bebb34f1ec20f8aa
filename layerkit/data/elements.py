"""An in-memory list of elements as a source: the datasets that ``window`` and
``group_by_window`` hand out as elements.

Such a dataset can be saved in an iterator state (``encode``), so a pipeline holding a
window (e.g. ``flat_map(lambda w: w.batch(n))`` mid-window) saves and restores exactly.
"""
from __future__ import annotations

from layerkit.data import structure as _st
from layerkit.data.node import Node, ScalarStateIterator


class ElementsNode(Node):
    """The given elements, in order, with the given element spec."""

    name = "window_elements"

    def __init__(self, elements: list, spec) -> None:
        super().__init__()
        self.elements = elements
        self._spec = spec

    def make_iterator(self, ctx):
        return ElementsIterator(self.elements)

    def cardinality(self) -> int:
        return len(self.elements)

    def _compute_spec(self):
        return self._spec

    def encode(self) -> dict:
        return {"kind": "elements", "spec": _st.spec_to_json(self._spec),
                "elements": _st.encode_elements(self.elements)}

    @classmethod
    def decode(cls, obj: dict) -> ElementsNode:
        return cls(_st.decode_elements(obj["elements"]), _st.spec_from_json(obj["spec"]))


_st.DATASET_DECODERS["elements"] = ElementsNode.decode


class ElementsIterator(ScalarStateIterator):
    __slots__ = ("_items", "_i")
    kind = "window_elements"
    _saved = (("pos", "_i", int),)

    def __init__(self, items: list) -> None:
        self._items = items
        self._i = 0

    def __next__(self):
        i = self._i
        if i >= len(self._items):
            raise StopIteration
        self._i = i + 1
        return self._items[i]
