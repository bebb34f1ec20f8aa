"""interleave and flat_map: datasets made from input elements, read in cycles.

Order is tf.data's: ``cycle_length`` input elements are open at once; the cycle takes up
to ``block_length`` elements from each in turn; a finished one frees its place, which is
refilled from the input the next time the cycle comes to it. ``flat_map`` is the
special case ``cycle_length=1, block_length=1`` (plain concatenation).

With ``num_parallel_calls`` each open dataset is read ahead, one block at a time, by the
workers of a :mod:`~layerkit.data.parallel` pool; the consumer still follows the cycle,
so the order is unchanged (unless ``deterministic=False``, where a ready block may be
taken ahead of a slow one).
"""
from __future__ import annotations

import weakref
from collections import deque

from layerkit.data import parallel as _par
from layerkit.data import structure as _st
from layerkit.data.node import (
    AUTOTUNE,
    UNKNOWN,
    IterationContext,
    Node,
    NodeIterator,
    annotate,
    as_node,
    call_fn,
    fn_name,
)


class InterleaveNode(Node):
    """Maps each input element to a dataset and interleaves their elements."""

    def __init__(self, source: Node, fn, cycle_length, block_length, num_parallel_calls,
                 deterministic, name: str = "interleave") -> None:
        super().__init__(source)
        self.name = name
        if not callable(fn):
            raise TypeError(f"Dataset.{name}: expected a callable, received {type(fn).__name__}")
        self.fn = fn
        if cycle_length is None or cycle_length == AUTOTUNE:
            cycle_length = _par.default_parallelism()
        if not isinstance(cycle_length, int) or cycle_length < 1:
            raise ValueError(f"Dataset.{name}: cycle_length must be a positive int or AUTOTUNE, "
                             f"received {cycle_length!r}")
        if not isinstance(block_length, int) or block_length < 1:
            raise ValueError(f"Dataset.{name}: block_length must be a positive int, "
                             f"received {block_length!r}")
        self.cycle_length = cycle_length
        self.block_length = block_length
        if num_parallel_calls == AUTOTUNE:
            num_parallel_calls = min(cycle_length, _par.default_parallelism())
        if num_parallel_calls is not None and (not isinstance(num_parallel_calls, int)
                                               or num_parallel_calls < 1):
            raise ValueError(f"Dataset.{name}: num_parallel_calls must be a positive int, "
                             f"AUTOTUNE or None, received {num_parallel_calls!r}")
        self.workers = num_parallel_calls
        self.deterministic = True if deterministic is None else bool(deterministic)

    def make_iterator(self, ctx):
        return InterleaveIterator(self, self.inputs[0].make_iterator(ctx), ctx)

    def cardinality(self) -> int:
        return 0 if self.inputs[0].cardinality() == 0 else UNKNOWN

    def _compute_spec(self):
        it = self.inputs[0].make_iterator(IterationContext(probe=True))
        try:
            x = next(it)
        except StopIteration:
            raise ValueError(f"Dataset.{self.name}: cannot infer element_spec over an empty "
                             f"input") from None
        finally:
            it.close()
        return self.open(x, 0).element_spec()

    def open(self, x, index: int) -> Node:
        try:
            ds = call_fn(self.fn, x)
        except Exception as e:
            # re-raises the caught error itself (with a note), so no `from`
            raise annotate(e, f"raised by {fn_name(self.fn)} in Dataset.{self.name} on input "  # noqa: B904
                              f"element {index} of this pass")
        return as_node(ds, f"Dataset.{self.name}: the function {fn_name(self.fn)} must return a "
                           f"Dataset")


class _Open:
    """One place of the cycle: the open dataset's iterator and, when parallel, its
    read-ahead (``carry``: outcomes ``(ok, value)``; ``pending``: the in-flight fetch)."""

    __slots__ = ("it", "args", "index", "carry", "pending", "ended")

    def __init__(self, it, args, index: int) -> None:
        self.it = it
        self.args = args
        self.index = index
        self.carry: deque = deque()
        self.pending = None
        self.ended = False


def _pull_one(it) -> tuple:
    try:
        return True, next(it)
    except StopIteration:
        return None, None
    except Exception as e:
        return False, e


def _fetch(it, n: int) -> tuple:
    """Worker task: up to ``n`` outcomes of ``it`` and whether it ended."""
    out = []
    ended = False
    for _ in range(n):
        ok, v = _pull_one(it)
        if ok is None:
            ended = True
            break
        out.append((ok, v))
        if not ok:
            break
    box = [(out, ended)]
    out = v = None
    return _par.release(box)  # see parallel.release: keep no error in this frame


def _stop(pool, places: list, up) -> None:
    def close_all():
        for p in places:
            if p is not None:
                p.it.close()
        up.close()
    pool.shutdown(wait=False, after=close_all)


class InterleaveIterator(NodeIterator):
    __slots__ = ("_node", "_up", "_ctx", "_places", "_cycle", "_block", "_eoi", "_num_open",
                 "_count", "_pool", "_finalizer", "__weakref__")

    def __init__(self, node: InterleaveNode, up: NodeIterator, ctx) -> None:
        self._node = node
        self._up = up
        self._ctx = ctx
        self._places: list = [None] * node.cycle_length
        self._cycle = 0
        self._block = 0
        self._eoi = False  # end of input
        self._num_open = 0
        self._count = 0  # input elements consumed
        self._pool = None
        self._finalizer = None
        if node.workers is not None:
            self._pool = _par.ThreadPool(node.workers, node.name)
            self._finalizer = weakref.finalize(self, _stop, self._pool, self._places, up)

    @property
    def kind(self) -> str:
        return self._node.name

    # ---- the cycle --------------------------------------------------------------------------
    def _advance(self) -> None:
        self._block = 0
        self._cycle = (self._cycle + 1) % len(self._places)

    def _open(self, c: int) -> bool:
        try:
            x = next(self._up)
        except StopIteration:
            self._eoi = True
            return False
        i = self._count
        self._count = i + 1
        sub = self._node.open(x, i).make_iterator(self._ctx)
        self._places[c] = _Open(sub, x, i)
        self._num_open += 1
        return True

    def _close_place(self, c: int) -> None:
        p = self._places[c]
        self._places[c] = None
        self._num_open -= 1
        p.it.close()

    def __next__(self):
        places = self._places
        while not self._eoi or self._num_open > 0:
            c = self._cycle
            p = places[c]
            if p is not None:
                if self._pool is None:
                    try:
                        e = next(p.it)
                    except StopIteration:
                        self._close_place(c)
                        self._advance()
                        continue
                else:
                    ok, e = self._next_parallel(c)
                    if ok is None:
                        self._close_place(c)
                        self._advance()
                        continue
                    if not ok:
                        try:
                            raise e
                        finally:
                            e = None  # no cycle through the traceback (see parallel.release)
                    c = self._cycle  # an unordered pull may have switched places
                self._block += 1
                if self._block >= self._node.block_length:
                    self._advance()
                return e
            if not self._eoi:
                self._open(c)
            else:
                self._advance()
        raise StopIteration

    # ---- parallel read-ahead ----------------------------------------------------------------
    def _submit(self, p: _Open) -> None:
        if p.pending is None and not p.ended:
            p.pending = self._pool.submit(_fetch, (p.it, self._node.block_length))

    def _collect(self, p: _Open) -> None:
        slot = p.pending
        slot.wait(self._pool)
        p.pending = None
        if slot.error is not None:
            err, slot = slot.error, None
            try:
                raise err
            finally:
                err = None
        outcomes, ended = slot.value
        p.carry.extend(outcomes)
        p.ended = ended

    def _next_parallel(self, c: int):
        p = self._places[c]
        if not p.carry and not p.ended:
            self._prime(c)
            if not self._node.deterministic and not p.pending.done:
                alt = self._ready_place(c)
                if alt is not None:
                    self._cycle, self._block = alt, 0
                    p = self._places[alt]
            if not p.carry and not p.ended:
                self._collect(p)
        if p.carry:
            out = p.carry.popleft()
            if not p.carry:
                self._submit(p)
            return out
        return None, None

    def _prime(self, c: int) -> None:
        # Open every free place in cycle order (the order they would be opened anyway)
        # and start reading ahead everywhere, before waiting on place c.
        n = len(self._places)
        for k in range(n):
            j = (c + k) % n
            if self._places[j] is None and not self._eoi:
                self._open(j)
            if self._places[j] is not None:
                self._submit(self._places[j])

    def _ready_place(self, c: int):
        n = len(self._places)
        for k in range(1, n):
            j = (c + k) % n
            p = self._places[j]
            if p is not None and (p.carry or (p.pending is not None and p.pending.done)):
                if not p.carry:
                    self._collect(p)
                if p.carry:
                    return j
        return None

    # ---- state ------------------------------------------------------------------------------
    def get_state(self) -> dict:
        places = []
        for p in self._places:
            if p is None:
                places.append(None)
                continue
            if p.pending is not None:
                self._collect(p)
            carry = [{"ok": _st.encode(v)} if ok else _st.encode_error(v) for ok, v in p.carry]
            places.append({"args": _st.encode(p.args), "index": p.index, "ended": p.ended,
                           "carry": carry, "state": p.it.get_state()})
        return {"node": self.kind, "cycle": self._cycle, "block": self._block, "eoi": self._eoi,
                "count": self._count, "places": places, "input": self._up.get_state()}

    def set_state(self, state: dict) -> None:
        self._check_state(state)
        if len(state["places"]) != len(self._places):
            raise ValueError(f"Dataset.{self.kind}: the state has cycle_length "
                             f"{len(state['places'])}, this pipeline {len(self._places)}")
        for c, p in enumerate(self._places):
            if p is not None:
                if p.pending is not None:
                    p.pending.wait(self._pool)
                p.it.close()
                self._places[c] = None
        self._up.set_state(state["input"])
        self._cycle, self._block = int(state["cycle"]), int(state["block"])
        if not (0 <= self._cycle < len(self._places) and 0 <= self._block
                < self._node.block_length) or self._cycle != state["cycle"]:
            raise ValueError(f"cycle position {state['cycle']!r}, block position "
                             f"{state['block']!r} out of range")
        self._eoi, self._count = bool(state["eoi"]), int(state["count"])
        self._num_open = 0
        for c, s in enumerate(state["places"]):
            if s is None:
                continue
            args = _st.decode(s["args"])
            sub = self._node.open(args, int(s["index"])).make_iterator(self._ctx)
            sub.set_state(s["state"])
            p = _Open(sub, args, int(s["index"]))
            p.ended = bool(s["ended"])
            for entry in s["carry"]:
                p.carry.append((True, _st.decode(entry["ok"])) if "ok" in entry
                               else (False, _st.decode_error(entry)))
            self._places[c] = p
            self._num_open += 1

    def close(self) -> None:
        if self._pool is not None:
            if self._finalizer.detach() is None:
                return
            self._pool.shutdown(wait=True)
        for c, p in enumerate(self._places):
            if p is not None:
                p.it.close()
                self._places[c] = None
        self._num_open = 0
        self._eoi = True
        self._up.close()
