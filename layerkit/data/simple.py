"""Small stream transformations: take, skip, repeat, enumerate, shard, concatenate.

Each passes chunks through when its input speaks the chunk protocol, so e.g.
``range(...).repeat(3).batch(1024)`` stays vectorised.
"""
from __future__ import annotations

import numpy as np

from layerkit._core.op import wrap
from layerkit.data import structure as _st
from layerkit.data.node import INFINITE, UNKNOWN, Node, NodeIterator, ScalarStateIterator


def _count_arg(count, what: str) -> int:
    if isinstance(count, bool) or not isinstance(count, (int, np.integer)):
        raise TypeError(f"Dataset.{what}: count must be an int, received {type(count).__name__}")
    return int(count)


# ---- take and skip -------------------------------------------------------------------------
class _CountNode(Node):
    """A stage that counts ``count`` elements (-1: all) of its input and passes them on
    unchanged (same spec, chunks pass through)."""

    def __init__(self, source: Node, count: int) -> None:
        super().__init__(source)
        self.count = _count_arg(count, self.name)

    def _compute_spec(self):
        return self.inputs[0].element_spec()

    def static_chunk_spec(self):
        return self.inputs[0].static_chunk_spec()


class _CountIterator(ScalarStateIterator):
    __slots__ = ("_up", "_left")
    _saved = (("left", "_left", int),)

    def __init__(self, up: NodeIterator, count: int) -> None:
        self._up = up
        self._left = count  # -1: no limit

    def supports_chunks(self) -> bool:
        return self._up.supports_chunks()

    @property
    def codec(self):
        return self._up.codec


class TakeNode(_CountNode):
    """The first ``count`` elements (all of them if ``count`` is -1)."""

    name = "take"

    def make_iterator(self, ctx):
        return TakeIterator(self.inputs[0].make_iterator(ctx), self.count)

    def cardinality(self) -> int:
        n = self.inputs[0].cardinality()
        if n == UNKNOWN:
            return UNKNOWN
        if self.count < 0:
            return n
        if n == INFINITE:
            return self.count
        return min(n, self.count)


class TakeIterator(_CountIterator):
    __slots__ = ()
    kind = "take"

    def __next__(self):
        if self._left == 0:
            raise StopIteration
        e = next(self._up)
        if self._left > 0:
            self._left -= 1
        return e

    def next_chunk(self, n: int):
        left = self._left
        if left == 0:
            return None
        c = self._up.next_chunk(n if left < 0 else min(n, left))
        if c is not None and left > 0:
            self._left = left - len(c[0])
        return c


class SkipNode(_CountNode):
    """Drops the first ``count`` elements (all of them if ``count`` is -1)."""

    name = "skip"

    def make_iterator(self, ctx):
        return SkipIterator(self.inputs[0].make_iterator(ctx), self.count)

    def cardinality(self) -> int:
        n = self.inputs[0].cardinality()
        if n in (UNKNOWN, INFINITE):
            return n
        if self.count < 0:
            return 0
        return max(0, n - self.count)


class SkipIterator(_CountIterator):
    __slots__ = ()
    kind = "skip"

    def _skip(self) -> None:
        up = self._up
        chunks = up.supports_chunks()
        while self._left != 0:
            if chunks:
                c = up.next_chunk(4096 if self._left < 0 else min(self._left, 4096))
                if c is None:
                    self._left = 0
                    return
                if self._left > 0:
                    self._left -= len(c[0])
            else:
                try:
                    next(up)
                except StopIteration:
                    self._left = 0
                    return
                if self._left > 0:
                    self._left -= 1

    def __next__(self):
        if self._left:
            self._skip()
        return next(self._up)

    def next_chunk(self, n: int):
        if self._left:
            self._skip()
        return self._up.next_chunk(n)


# ---- repeat --------------------------------------------------------------------------------
class RepeatNode(Node):
    """Repeats the input ``count`` times (forever if ``count`` is None or -1)."""

    name = "repeat"

    def __init__(self, source: Node, count) -> None:
        super().__init__(source)
        self.count = -1 if count is None else _count_arg(count, "repeat")

    def make_iterator(self, ctx):
        return RepeatIterator(self, ctx)

    def cardinality(self) -> int:
        n = self.inputs[0].cardinality()
        if self.count < 0:
            return 0 if n == 0 else INFINITE
        if self.count == 0 or n == 0:
            return 0
        if n in (INFINITE, UNKNOWN):
            return n
        return n * self.count

    def _compute_spec(self):
        return self.inputs[0].element_spec()

    def static_chunk_spec(self):
        return self.inputs[0].static_chunk_spec()


class RepeatIterator(NodeIterator):
    """A new input iterator per pass; a pass that yields nothing ends an endless repeat
    (as in tf.data) instead of spinning forever."""

    __slots__ = ("_node", "_ctx", "_up", "_epoch", "_produced", "_chunks", "codec")
    kind = "repeat"

    def __init__(self, node: RepeatNode, ctx) -> None:
        self._node = node
        self._ctx = ctx
        self._epoch = 0
        self._produced = False
        self._up = node.inputs[0].make_iterator(ctx) if node.count != 0 else None
        self.codec = None
        self._chunks = self._up is not None and self._up.supports_chunks()

    def _next_pass(self) -> bool:
        node = self._node
        self._up.close()
        self._epoch += 1
        if (0 <= node.count <= self._epoch) or (node.count < 0 and not self._produced):
            self._up = None
            return False
        self._produced = False
        self._up = node.inputs[0].make_iterator(self._ctx)
        return True

    def __next__(self):
        while self._up is not None:
            try:
                e = next(self._up)
            except StopIteration:
                self._next_pass()
                continue
            self._produced = True
            return e
        raise StopIteration

    def supports_chunks(self) -> bool:
        return self._chunks

    def next_chunk(self, n: int):
        while self._up is not None:
            c = self._up.next_chunk(n)
            if c is None:
                self._next_pass()
                continue
            self._produced = True
            self.codec = self._up.codec  # kept: the input may be gone when batch reads it
            return c
        return None

    def get_state(self) -> dict:
        return {"node": self.kind, "epoch": self._epoch, "produced": self._produced,
                "input": None if self._up is None else self._up.get_state()}

    def set_state(self, state: dict) -> None:
        self._check_state(state)
        self._epoch = int(state["epoch"])
        self._produced = bool(state["produced"])
        if state["input"] is None:
            if self._up is not None:
                self._up.close()
            self._up = None
            return
        if self._up is None:
            self._up = self._node.inputs[0].make_iterator(self._ctx)
        self._up.set_state(state["input"])


# ---- enumerate -----------------------------------------------------------------------------
class EnumerateNode(Node):
    """Pairs each element with its int64 position: ``(i, element)``."""

    name = "enumerate"

    def __init__(self, source: Node, start: int) -> None:
        super().__init__(source)
        self.start = _count_arg(start, "enumerate")

    def make_iterator(self, ctx):
        return EnumerateIterator(self.inputs[0].make_iterator(ctx), self.start)

    def cardinality(self) -> int:
        return self.inputs[0].cardinality()

    def _compute_spec(self):
        return (_st.TensorSpec((), np.int64), self.inputs[0].element_spec())

    def static_chunk_spec(self):
        s = self.inputs[0].static_chunk_spec()
        return None if s is None else (_st.TensorSpec((), np.int64), s)


class EnumerateIterator(ScalarStateIterator):
    __slots__ = ("_up", "_i", "_codec")
    kind = "enumerate"
    _saved = (("next", "_i", int),)

    def __init__(self, up: NodeIterator, start: int) -> None:
        self._up = up
        self._i = start
        self._codec = None

    def __next__(self):
        e = next(self._up)
        i = self._i
        self._i = i + 1
        return (wrap(np.array(i, np.int64)), e)

    def supports_chunks(self) -> bool:
        return self._up.supports_chunks()

    @property
    def codec(self):
        if self._codec is None:
            self._codec = _st.Codec((None, self._up.codec.template))
        return self._codec

    def next_chunk(self, n: int):
        c = self._up.next_chunk(n)
        if c is None:
            return None
        i = self._i
        k = len(c[0])
        self._i = i + k
        return [np.arange(i, i + k, dtype=np.int64)] + list(c)


# ---- shard ---------------------------------------------------------------------------------
class ShardNode(Node):
    """Every ``num_shards``-th element, starting at ``index``."""

    name = "shard"

    def __init__(self, source: Node, num_shards: int, index: int) -> None:
        super().__init__(source)
        num_shards = _count_arg(num_shards, "shard")
        index = _count_arg(index, "shard")
        if num_shards < 1:
            raise ValueError(f"Dataset.shard: num_shards must be >= 1, received {num_shards}")
        if not 0 <= index < num_shards:
            raise ValueError(f"Dataset.shard: index must be in [0, num_shards={num_shards}), "
                             f"received {index}")
        self.num_shards, self.index = num_shards, index

    def make_iterator(self, ctx):
        return ShardIterator(self.inputs[0].make_iterator(ctx), self.num_shards, self.index)

    def cardinality(self) -> int:
        n = self.inputs[0].cardinality()
        if n in (UNKNOWN, INFINITE):
            return n
        return n // self.num_shards + (1 if n % self.num_shards > self.index else 0)

    def _compute_spec(self):
        return self.inputs[0].element_spec()


class ShardIterator(ScalarStateIterator):
    __slots__ = ("_up", "_n", "_index", "_pos")
    kind = "shard"
    _saved = (("pos", "_pos", int),)

    def __init__(self, up: NodeIterator, n: int, index: int) -> None:
        self._up = up
        self._n = n
        self._index = index
        self._pos = 0

    def __next__(self):
        up = self._up
        while True:
            e = next(up)
            p = self._pos
            self._pos = p + 1
            if p % self._n == self._index:
                return e


# ---- concatenate ---------------------------------------------------------------------------
class ConcatenateNode(Node):
    """All elements of the first input, then all of the second."""

    name = "concatenate"

    def __init__(self, first: Node, second: Node) -> None:
        super().__init__(first, second)
        a, b = first.static_chunk_spec(), second.static_chunk_spec()
        if a is not None and b is not None:
            _check_compatible(a, b)

    def make_iterator(self, ctx):
        return ConcatenateIterator(self, ctx)

    def cardinality(self) -> int:
        n1 = self.inputs[0].cardinality()
        if n1 in (UNKNOWN, INFINITE):
            return n1
        n2 = self.inputs[1].cardinality()
        if n2 in (UNKNOWN, INFINITE):
            return n2
        return n1 + n2

    def _compute_spec(self):
        a, b = self.inputs[0].element_spec(), self.inputs[1].element_spec()
        _check_compatible(a, b)
        fa, fb = _st.flatten(a), _st.flatten(b)
        codec = _st.Codec(a)
        return codec.pack([_st.TensorSpec(_st.relax_shape(x.shape, y.shape), x.dtype)
                           for x, y in zip(fa, fb)])

    def static_chunk_spec(self):
        a, b = self.inputs[0].static_chunk_spec(), self.inputs[1].static_chunk_spec()
        return None if a is None or b is None else a


def _check_compatible(a, b) -> None:
    ok = _st.same_structure(a, b) and all(
        x.dtype == y.dtype for x, y in zip(_st.flatten(a), _st.flatten(b)))
    if not ok:
        raise TypeError(f"Dataset.concatenate: the datasets have incompatible element types: "
                        f"{_st.describe(a)} and {_st.describe(b)}")


class ConcatenateIterator(NodeIterator):
    __slots__ = ("_node", "_ctx", "_up", "_which", "_first_spec")
    kind = "concatenate"

    def __init__(self, node: ConcatenateNode, ctx) -> None:
        self._node = node
        self._ctx = ctx
        self._which = 0
        self._up = node.inputs[0].make_iterator(ctx)
        self._first_spec = None

    def _switch(self) -> bool:
        if self._which == 1:
            return False
        self._up.close()
        self._which = 1
        self._up = self._node.inputs[1].make_iterator(self._ctx)
        return True

    def __next__(self):
        while True:
            try:
                e = next(self._up)
            except StopIteration:
                if self._switch():
                    continue
                raise
            if self._which == 0:
                if self._first_spec is None:
                    self._first_spec = _st.spec_of(e)
            elif self._first_spec is not None:
                _check_compatible(self._first_spec, _st.spec_of(e))
                self._first_spec = None
            return e

    def supports_chunks(self) -> bool:
        return self._node.static_chunk_spec() is not None and self._up.supports_chunks()

    @property
    def codec(self):
        return self._up.codec

    def next_chunk(self, n: int):
        while True:
            c = self._up.next_chunk(n)
            if c is None and self._switch():
                continue
            return c

    def get_state(self) -> dict:
        return {"node": self.kind, "which": self._which, "input": self._up.get_state()}

    def set_state(self, state: dict) -> None:
        self._check_state(state)
        if int(state["which"]) == 1 and self._which == 0:
            self._switch()
        self._up.set_state(state["input"])
