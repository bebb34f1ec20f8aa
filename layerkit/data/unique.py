"""unique: each distinct element once, in order of first appearance."""
from __future__ import annotations

import numpy as np

from layerkit.data import structure as _st
from layerkit.data.node import Node, NodeIterator


class UniqueNode(Node):
    """Drops the elements seen before in this pass (scalar ints or strings only)."""

    name = "unique"

    def __init__(self, source: Node) -> None:
        super().__init__(source)
        spec = source.element_spec()
        if not isinstance(spec, _st.TensorSpec) or spec.dtype.kind not in "iuS" or \
                spec.dtype.itemsize < 4 and spec.dtype.kind in "iu" or \
                (spec.shape is not None and spec.shape != ()):
            raise TypeError(f"Dataset.unique: the elements must be scalars of int32, int64 "
                            f"or string, as in tf.data; received {_st.describe(spec)}")

    def make_iterator(self, ctx):
        return UniqueIterator(self.inputs[0].make_iterator(ctx))

    def _compute_spec(self):
        return self.inputs[0].element_spec()


class UniqueIterator(NodeIterator):
    __slots__ = ("_up", "_seen")
    kind = "unique"

    def __init__(self, up: NodeIterator) -> None:
        self._up = up
        self._seen: set = set()

    def __next__(self):
        seen = self._seen
        while True:
            elem = next(self._up)
            key = np.asarray(elem._v)
            if key.ndim:
                raise TypeError(f"Dataset.unique: elements must be scalars, received one "
                                f"of shape {key.shape}")
            key = key[()]
            if key not in seen:
                seen.add(key)
                return elem

    def get_state(self) -> dict:
        seen = sorted(self._seen)
        return {"node": self.kind, "seen": np.array(seen) if seen else np.zeros(0, np.int64),
                "input": self._up.get_state()}

    def set_state(self, state: dict) -> None:
        self._check_state(state)
        self._seen = set(np.asarray(state["seen"]).tolist())
        self._up.set_state(state["input"])
