"""prefetch: a background thread keeps up to ``buffer_size`` elements ready.

Handing an element from the worker thread to the consumer costs 5-15 µs here (a thread
wake-up and a GIL hand-over; measured with ``range(n).prefetch(2)``), and a thread can
only save time when the consumer has work of its own to overlap with (a training step
between two ``next`` calls). So prefetch measures both the input's time per element and
the consumer's time between calls: while either is below ``INLINE_BELOW`` seconds it
pulls in the consumer's thread (same elements, same order), and it hands the input to
its thread again once both exceed ``THREAD_ABOVE``.
"""
from __future__ import annotations

import weakref
from time import perf_counter

from layerkit.data import parallel as _par
from layerkit.data import structure as _st
from layerkit.data.node import AUTOTUNE, Node, NodeIterator


class PrefetchNode(Node):
    """Produces input elements ahead of the consumer in one background thread."""

    name = "prefetch"

    def __init__(self, source: Node, buffer_size: int) -> None:
        super().__init__(source)
        if buffer_size == AUTOTUNE:
            buffer_size = max(2, _par.default_parallelism())
        if isinstance(buffer_size, bool) or not isinstance(buffer_size, int) or buffer_size < 1:
            raise ValueError(f"Dataset.prefetch: buffer_size must be a positive int or AUTOTUNE, "
                             f"received {buffer_size!r}")
        self.buffer_size = buffer_size

    def make_iterator(self, ctx):
        return PrefetchIterator(self.inputs[0].make_iterator(ctx), self.buffer_size)

    def cardinality(self) -> int:
        return self.inputs[0].cardinality()

    def _compute_spec(self):
        return self.inputs[0].element_spec()


INLINE_BELOW = 30e-6
THREAD_ABOVE = 60e-6
_WARMUP = 8


def _pull(up):
    t0 = perf_counter()
    value = next(up)
    return value, perf_counter() - t0


def _stop(pool, up) -> None:
    # The worker may be inside up.__next__: close the input once it has exited.
    pool.shutdown(wait=False, after=up.close)


class PrefetchIterator(NodeIterator):
    __slots__ = ("_up", "_pool", "_window", "_ended", "_finalizer", "_cost", "_gap", "_seen",
                 "_inline", "_returned", "__weakref__")
    kind = "prefetch"

    def __init__(self, up: NodeIterator, buffer_size: int) -> None:
        self._up = up
        self._pool = _par.ThreadPool(1, "prefetch")
        self._window = _par.Window(self._pool, buffer_size)
        self._ended = False  # the end of the input was delivered
        self._finalizer = weakref.finalize(self, _stop, self._pool, up)
        self._cost = 0.0  # running estimate of the input's seconds per element
        self._gap = 0.0  # running estimate of the consumer's seconds between calls
        self._seen = 0
        self._inline = False
        self._returned = None  # when the last element was handed out

    def _measure(self, dt: float) -> None:
        self._seen += 1
        if self._seen == 1:
            self._cost = self._gap = dt
        self._cost = 0.8 * self._cost + 0.2 * dt
        if self._seen >= _WARMUP:
            slow = min(self._cost, self._gap)
            if self._inline and slow > THREAD_ABOVE:
                self._inline = False
            elif not self._inline and slow < INLINE_BELOW:
                self._inline = True  # stop submitting; what is in flight is delivered first

    def _fill(self) -> None:
        if self._inline:
            return
        w = self._window
        up = self._up
        while not w.full():
            w.submit(_pull, (up,))

    def __next__(self):
        if self._ended:
            raise StopIteration
        t0 = perf_counter()
        if self._returned is not None:
            self._gap = 0.8 * self._gap + 0.2 * (t0 - self._returned)
        if self._inline and not self._window._slots:
            try:
                value = next(self._up)
            except StopIteration:
                self._ended = True
                raise
            t1 = self._returned = perf_counter()
            self._cost = 0.8 * self._cost + 0.2 * (t1 - t0)
            self._seen += 1
            if not self._seen & 15 and min(self._cost, self._gap) > THREAD_ABOVE:
                self._inline = False  # both sides got slow: the thread pays off again
            return value
        value = self._next()
        self._returned = perf_counter()
        return value

    def _next(self):
        w = self._window
        self._fill()
        slot = w.take()
        if slot.error is None:
            value, dt = slot.value
            self._measure(dt)
            self._fill()
            return value
        err, slot = slot.error, None
        if isinstance(err, StopIteration):
            self._ended = True
            w.clear()
            raise StopIteration
        self._fill()
        try:
            raise err
        finally:
            err = None  # no cycle through the traceback (see parallel.release)

    def get_state(self) -> dict:
        buf = []
        if not self._ended:
            for slot in self._window.settle():
                if slot.error is None:
                    buf.append({"ok": _st.encode(slot.value[0])})
                elif isinstance(slot.error, StopIteration):
                    buf.append({"end": True})
                    break
                else:
                    buf.append(_st.encode_error(slot.error))
        return {"node": self.kind, "ended": self._ended, "buffer": buf,
                "input": self._up.get_state()}

    def set_state(self, state: dict) -> None:
        self._check_state(state)
        w = self._window
        w.clear()
        self._up.set_state(state["input"])
        self._ended = bool(state["ended"])
        for entry in state["buffer"]:
            if "ok" in entry:
                w.put_ready((_st.decode(entry["ok"]), self._cost))
            elif "end" in entry:
                w.put_ready(error=StopIteration())
            else:
                w.put_ready(error=_st.decode_error(entry))

    def close(self) -> None:
        if self._finalizer.detach() is None:
            return
        self._pool.shutdown(wait=True)
        self._window._slots.clear()
        self._ended = True
        self._up.close()
