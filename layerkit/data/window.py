"""window: the input split into (possibly overlapping) windows, each a Dataset.

Window ``k`` holds the input elements ``k * shift + j * stride`` for ``j < size`` that
exist; without ``drop_remainder`` the windows at the end may be shorter (a window
starting past the end is not made). A nested element gives a nested structure of
datasets, one per component, as in tf.data. The stage buffers the input elements a
window spans (``(size - 1) * stride + 1``); its state holds them.
"""
from __future__ import annotations

from collections import deque

from layerkit.data import structure as _st
from layerkit.data.elements import ElementsNode
from layerkit.data.node import INFINITE, UNKNOWN, Node, NodeIterator, positive_int


class WindowNode(Node):
    """Groups the input into windows of ``size`` elements (datasets)."""

    name = "window"

    def __init__(self, source: Node, size: int, shift, stride, drop_remainder: bool) -> None:
        super().__init__(source)
        self.size = positive_int(size, "Dataset.window", "size")
        self.shift = self.size if shift is None else positive_int(shift, "Dataset.window",
                                                                  "shift")
        self.stride = positive_int(stride, "Dataset.window", "stride")
        self.drop = bool(drop_remainder)
        self.span = (self.size - 1) * self.stride + 1

    def make_iterator(self, ctx):
        return WindowIterator(self, self.inputs[0].make_iterator(ctx))

    def cardinality(self) -> int:
        n = self.inputs[0].cardinality()
        if n in (INFINITE, UNKNOWN):
            return n
        if self.drop:
            return 0 if n < self.span else (n - self.span) // self.shift + 1
        return -(-n // self.shift)

    def _compute_spec(self):
        return _st.map_structure(_st.DatasetSpec, self.inputs[0].element_spec())

    def make_window(self, elements: list):
        """The window element for ``elements``: one dataset per component."""
        spec = self.inputs[0].element_spec()
        wrap = _st.DATASET_TYPE[0]
        if not _st.is_structure(spec):
            return wrap(ElementsNode(elements, spec))
        codec = _st.Codec(spec)
        columns = list(zip(*(codec.flatten(e) for e in elements)))
        return codec.pack([wrap(ElementsNode(list(col), s))
                           for col, s in zip(columns, _st.flatten(spec))])


class WindowIterator(NodeIterator):
    __slots__ = ("_node", "_up", "_buf", "_pos", "_next_start", "_eoi")
    kind = "window"

    def __init__(self, node: WindowNode, up: NodeIterator) -> None:
        self._node = node
        self._up = up
        self._buf: deque = deque()  # input elements _pos - len(_buf) .. _pos - 1
        self._pos = 0  # index of the next input element
        self._next_start = 0  # index of the next window's first element
        self._eoi = False

    def __next__(self):
        node = self._node
        buf = self._buf
        start = self._next_start
        # Drop what lies before the window, skipping input elements between windows.
        while buf and self._pos - len(buf) < start:
            buf.popleft()
        while not self._eoi and self._pos < start:
            self._pull()  # an element between windows: never part of one
            if buf:
                buf.popleft()
        while not self._eoi and len(buf) < node.span:
            self._pull()
        if not buf or (node.drop and len(buf) < node.span):
            self._eoi = True
            buf.clear()
            raise StopIteration
        self._next_start = start + node.shift
        items = list(buf)[::node.stride][:node.size]
        return node.make_window(items)

    def _pull(self) -> None:
        try:
            e = next(self._up)
        except StopIteration:
            self._eoi = True
            return
        self._buf.append(e)
        self._pos += 1

    def get_state(self) -> dict:
        return {"node": self.kind, "pos": self._pos, "next_start": self._next_start,
                "eoi": self._eoi, "buffer": _st.encode_elements(list(self._buf)),
                "input": self._up.get_state()}

    def set_state(self, state: dict) -> None:
        self._check_state(state)
        self._pos = int(state["pos"])
        self._next_start = int(state["next_start"])
        self._eoi = bool(state["eoi"])
        self._buf = deque(_st.decode_elements(state["buffer"]))
        self._up.set_state(state["input"])
