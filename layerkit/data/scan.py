"""scan: a running state threaded through the elements (``scan_func(state, element)``
returns the new state and the output element)."""
from __future__ import annotations

from layerkit.data import structure as _st
from layerkit.data.node import Node, NodeIterator, annotate, fn_note


def check_state_structure(new, old, where: str) -> None:
    """The structure, dtypes and shapes a reduce/scan function returns must stay those of
    the initial state (tf.data requires the same)."""
    if not _st.same_structure(old, new):
        raise TypeError(f"{where}: the function must return a state of the initial state's "
                        f"structure {_st.describe(old)}, received {_st.describe(new)}")
    for a, b in zip(_st.flatten(old), _st.flatten(new)):
        if a._v.dtype != b._v.dtype:
            raise TypeError(f"{where}: the state's dtypes must not change: the initial state "
                            f"has {_st.describe(old)}, the function returned "
                            f"{_st.describe(new)}")


class ScanNode(Node):
    """Applies ``scan_func`` with a running state."""

    name = "scan"

    def __init__(self, source: Node, initial_state, scan_func) -> None:
        super().__init__(source)
        if not callable(scan_func):
            raise TypeError(f"Dataset.scan: scan_func must be callable, received "
                            f"{type(scan_func).__name__}")
        self.initial = _st.normalize(initial_state)
        self.fn = scan_func

    def make_iterator(self, ctx):
        return ScanIterator(self, self.inputs[0].make_iterator(ctx))

    def cardinality(self) -> int:
        return self.inputs[0].cardinality()


class ScanIterator(NodeIterator):
    __slots__ = ("_node", "_up", "_state", "_count")
    kind = "scan"

    def __init__(self, node: ScanNode, up: NodeIterator) -> None:
        self._node = node
        self._up = up
        self._state = node.initial
        self._count = 0

    def __next__(self):
        elem = next(self._up)
        i = self._count
        self._count = i + 1
        fn = self._node.fn
        try:
            out = fn(self._state, elem)
            if not isinstance(out, (tuple, list)) or len(out) != 2:
                raise TypeError(f"Dataset.scan: scan_func must return a pair (new_state, "
                                f"output_element), received {type(out).__name__}")
            state, value = _st.normalize(out[0]), _st.normalize(out[1])
            check_state_structure(state, self._node.initial, "Dataset.scan")
        except Exception as e:
            raise annotate(e, fn_note(fn, i, "scan"))  # noqa: B904 (the caught error itself)
        self._state = state
        return value

    def get_state(self) -> dict:
        return {"node": self.kind, "count": self._count, "state": _st.encode(self._state),
                "input": self._up.get_state()}

    def set_state(self, state: dict) -> None:
        self._check_state(state)
        self._count = int(state["count"])
        self._state = _st.decode(state["state"])
        self._up.set_state(state["input"])
