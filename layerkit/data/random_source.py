"""Dataset.random and the random selector of sample_from_datasets.

Both draw from an :class:`~layerkit.data.rng.Stream` seeded with the node's seed (drawn
from layerkit's global generator when the dataset is built, so ``lk.random.set_seed``
before building reproduces it) and, with ``rerandomize_each_iteration``, the pass
counters. Their state is the number of words drawn, so a restore is exact.
"""
from __future__ import annotations

import numpy as np

from layerkit._core.op import wrap
from layerkit.data import rng as _rng
from layerkit.data import structure as _st
from layerkit.data.node import INFINITE, Node, NodeIterator
from layerkit.primitives.random import next_seed

_INT64 = _st.TensorSpec((), np.int64)


class _RandomNode(Node):
    def __init__(self, *inputs: Node, seed, rerandomize) -> None:
        super().__init__(*inputs)
        self.seed = next_seed() if seed is None else int(seed)
        self.rerandomize = bool(rerandomize)

    def static_chunk_spec(self):
        return _INT64

    def _compute_spec(self):
        return _INT64


class _RandomIterator(NodeIterator):
    __slots__ = ("_node", "_ctx", "_stream")

    def __init__(self, node: _RandomNode, ctx) -> None:
        self._node = node
        self._ctx = ctx
        self._stream = _rng.Stream(_rng.pass_entropy(node, ctx, node.rerandomize))

    def _state(self) -> dict:
        return {"node": self.kind, "rng": self._stream.state()}

    def _restore(self, state: dict) -> None:
        self._check_state(state)
        stream = _rng.Stream.from_state(state["rng"])
        if len(stream.entropy) != 3:
            raise ValueError(f"expected [seed, pass, inner pass] as the entropy, received "
                             f"{stream.entropy}")
        self._stream = stream
        self._ctx.restore(self._node, *stream.entropy)


class RandomNode(_RandomNode):
    """An infinite stream of int64 scalars uniform in [0, 2**32)."""

    name = "random"

    def make_iterator(self, ctx):
        return RandomIterator(self, ctx)

    def cardinality(self) -> int:
        return INFINITE


class RandomIterator(_RandomIterator):
    __slots__ = ()
    kind = "random"

    def __next__(self):
        return wrap(np.int64(int(self._stream.words(1)[0]) >> 32))

    def get_state(self) -> dict:
        return self._state()

    def set_state(self, state: dict) -> None:
        self._restore(state)


class ChoiceNode(_RandomNode):
    """Random indices in ``range(len(weights))`` drawn with probabilities proportional
    to ``weights`` (fixed, or one weight vector per element of the ``weights`` dataset)."""

    name = "sample_selector"

    def __init__(self, weights, weights_node: Node | None, seed, rerandomize) -> None:
        super().__init__(*(() if weights_node is None else (weights_node,)), seed=seed,
                         rerandomize=rerandomize)
        self.cum = None if weights is None else _cumulative(weights)

    def make_iterator(self, ctx):
        up = self.inputs[0].make_iterator(ctx) if self.inputs else None
        return ChoiceIterator(self, ctx, up)

    def cardinality(self) -> int:
        return self.inputs[0].cardinality() if self.inputs else INFINITE


def _cumulative(weights) -> np.ndarray:
    w = np.asarray(getattr(weights, "_v", weights), dtype=np.float64)
    if w.ndim != 1 or not np.all(np.isfinite(w)) or np.any(w < 0) or not w.sum() > 0:
        raise ValueError(f"Dataset.sample_from_datasets: weights must be a vector of "
                         f"non-negative finite numbers with a positive sum, received {w}")
    c = np.cumsum(w)
    return c / c[-1]


class ChoiceIterator(_RandomIterator):
    __slots__ = ("_up",)
    kind = "sample_selector"

    def __init__(self, node: ChoiceNode, ctx, up) -> None:
        super().__init__(node, ctx)
        self._up = up

    def __next__(self):
        cum = self._node.cum
        if self._up is not None:
            elem = next(self._up)
            w = elem if not isinstance(elem, tuple) else _st.to_tensor(
                np.stack([np.asarray(t._v) for t in elem]))
            cum = _cumulative(w)
        i = int(np.searchsorted(cum, self._stream.uniform(), side="right"))
        return wrap(np.int64(min(i, len(cum) - 1)))

    def get_state(self) -> dict:
        state = self._state()
        if self._up is not None:
            state["input"] = self._up.get_state()
        return state

    def set_state(self, state: dict) -> None:
        self._restore(state)
        if self._up is not None:
            self._up.set_state(state["input"])

