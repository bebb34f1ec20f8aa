"""group_by_window: elements grouped by a key, each full group reduced to a dataset.

``key_func(element)`` gives an int64 key; the element joins its key's group. When a
group holds ``window_size`` elements (``window_size_func(key)``, asked when the group
starts), ``reduce_func(key, window)`` is called with the group as a Dataset and the
elements of the dataset it returns are produced, all of them before the next input
element is read. At the end of the input the groups left are reduced in increasing key
order, as in tf.data. The state holds the groups' elements and the position within the
reduced dataset being produced.
"""
from __future__ import annotations

import numpy as np

from layerkit.data import structure as _st
from layerkit.data.elements import ElementsNode
from layerkit.data.node import (
    Node,
    NodeIterator,
    annotate,
    as_node,
    fn_name,
    fn_note,
    positive_int,
)

_WHERE = "Dataset.group_by_window"


class GroupByWindowNode(Node):
    """Groups elements by ``key_func`` and reduces windows of each group."""

    name = "group_by_window"

    def __init__(self, source: Node, key_func, reduce_func, window_size,
                 window_size_func) -> None:
        super().__init__(source)
        for arg, f in (("key_func", key_func), ("reduce_func", reduce_func)):
            if not callable(f):
                raise TypeError(f"{_WHERE}: {arg} must be callable, received "
                                f"{type(f).__name__}")
        if (window_size is None) == (window_size_func is None):
            raise ValueError(f"{_WHERE}: pass exactly one of window_size and "
                             f"window_size_func")
        self.key_func = key_func
        self.reduce_func = reduce_func
        self.window_size = None if window_size is None else positive_int(
            window_size, _WHERE, "window_size")
        self.window_size_func = window_size_func

    def make_iterator(self, ctx):
        return GroupByWindowIterator(self, self.inputs[0].make_iterator(ctx), ctx)

    def key_of(self, elem, index: int) -> int:
        fn = self.key_func
        try:
            k = fn(*elem) if type(elem) is tuple else fn(elem)
            return _int64_scalar(k, "key_func")
        except Exception as e:
            raise annotate(e, fn_note(fn, index, "group_by_window"))  # noqa: B904

    def size_of(self, key: int) -> int:
        if self.window_size is not None:
            return self.window_size
        fn = self.window_size_func
        try:
            n = _int64_scalar(fn(_st.to_tensor(np.int64(key))), "window_size_func")
        except Exception as e:
            raise annotate(e, f"raised by {fn_name(fn)} in {_WHERE} for key {key}")  # noqa: B904
        return positive_int(n, _WHERE, "the window size window_size_func returned")

    def reduce(self, key: int, elements: list) -> Node:
        window = _st.DATASET_TYPE[0](ElementsNode(elements, self.inputs[0].element_spec()))
        fn = self.reduce_func
        try:
            out = fn(_st.to_tensor(np.int64(key)), window)
        except Exception as e:
            raise annotate(e, f"raised by {fn_name(fn)} in {_WHERE} for key {key}")  # noqa: B904
        return as_node(out, f"{_WHERE}: reduce_func {fn_name(fn)} must return a Dataset")


def _int64_scalar(value, what: str) -> int:
    a = np.asarray(getattr(value, "_v", value))
    if a.shape != () or a.dtype.kind not in "iu":
        raise TypeError(f"{_WHERE}: {what} must return a scalar integer (int64), received "
                        f"{a.dtype.name} with shape {a.shape}")
    return int(a)


class GroupByWindowIterator(NodeIterator):
    __slots__ = ("_node", "_up", "_ctx", "_groups", "_count", "_eoi", "_cur", "_cur_window")
    kind = "group_by_window"

    def __init__(self, node: GroupByWindowNode, up: NodeIterator, ctx) -> None:
        self._node = node
        self._up = up
        self._ctx = ctx
        self._groups: dict = {}  # key -> [window size, elements]
        self._count = 0
        self._eoi = False
        self._cur: NodeIterator | None = None  # the reduced dataset's iterator being produced
        self._cur_window: tuple[int, list] | None = None  # (key, elements) it was made from

    def _start(self, key: int, elements: list) -> NodeIterator:
        it = self._cur = self._node.reduce(key, elements).make_iterator(self._ctx)
        self._cur_window = (key, elements)
        return it

    def __next__(self):
        while True:
            if self._cur is not None:
                try:
                    return next(self._cur)
                except StopIteration:
                    self._cur.close()
                    self._cur = self._cur_window = None
            if self._eoi:
                if not self._groups:
                    raise StopIteration
                key = min(self._groups)
                self._start(key, self._groups.pop(key)[1])
                continue
            try:
                elem = next(self._up)
            except StopIteration:
                self._eoi = True
                continue
            i = self._count
            self._count = i + 1
            key = self._node.key_of(elem, i)
            group = self._groups.get(key)
            if group is None:
                group = self._groups[key] = [self._node.size_of(key), []]
            group[1].append(elem)
            if len(group[1]) >= group[0]:
                del self._groups[key]
                self._start(key, group[1])

    def get_state(self) -> dict:
        groups = [{"key": k, "size": n, "elements": _st.encode_elements(els)}
                  for k, (n, els) in self._groups.items()]
        state = {"node": self.kind, "count": self._count, "eoi": self._eoi, "groups": groups,
                 "input": self._up.get_state()}
        if self._cur is not None and self._cur_window is not None:
            key, els = self._cur_window
            state["current"] = {"key": key, "elements": _st.encode_elements(els),
                                "state": self._cur.get_state()}
        return state

    def set_state(self, state: dict) -> None:
        self._check_state(state)
        if self._cur is not None:
            self._cur.close()
            self._cur = self._cur_window = None
        self._count = int(state["count"])
        self._eoi = bool(state["eoi"])
        self._groups = {int(g["key"]): [int(g["size"]), _st.decode_elements(g["elements"])]
                        for g in state["groups"]}
        self._up.set_state(state["input"])
        cur = state.get("current")
        if cur is not None:
            it = self._start(int(cur["key"]), _st.decode_elements(cur["elements"]))
            it.set_state(cur["state"])

    def close(self) -> None:
        if self._cur is not None:
            self._cur.close()
            self._cur = None
        self._up.close()
