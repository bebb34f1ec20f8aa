"""prefetch: a background thread keeps up to ``buffer_size`` elements ready.

Handing an element from the worker thread to the consumer costs 5-15 µs here (a thread
wake-up and a GIL hand-over; measured with ``range(n).prefetch(2)``), and a thread can
only save time when the consumer has work of its own to overlap with (a training step
between two ``next`` calls). So prefetch measures both the input's time per element and
the consumer's time between calls. It starts pulling in the consumer's thread (same
elements, same order); once both times exceed ``THREAD_ABOVE`` it hands the input to its
thread, and it comes back when either falls below ``INLINE_BELOW``. Inline, only every
16th call is timed (the other calls cost one method call: ~0.05 µs instead of ~0.45 µs
with timing), and while the timed calls find the input or the consumer far below
``THREAD_ABOVE`` the stride doubles, up to one call in 1024 (one timed call in 16 cost
~0.3 µs per element on a 4 µs batch-first pipeline). A fast pipeline never starts a
thread at all.
"""
from __future__ import annotations

import itertools
import weakref
from time import perf_counter

from layerkit.data import parallel as _par
from layerkit.data import structure as _st
from layerkit.data.node import AUTOTUNE, Node, NodeIterator, fast_sources


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
_WARMUP = 8  # inline calls timed one by one before deciding; later, one call in 16 or more
_EVERY = 15  # first mask: inline calls whose count has these bits zero are timed
_EVERY_MAX = 1023  # the widest mask: one inline call in 1024 is timed
_FAR = THREAD_ABOVE / 4  # a timed call this far below THREAD_ABOVE widens the mask


def _pull(up):
    t0 = perf_counter()
    value = next(up)
    return value, perf_counter() - t0


def _stop(pool, up) -> None:
    # The worker may be inside up.__next__: close the input once it has exited.
    pool.shutdown(wait=False, after=up.close)


class PrefetchIterator(NodeIterator):
    __slots__ = ("_up", "_upnext", "_pool", "_window", "_ended", "_finalizer", "_cost", "_gap",
                 "_calls", "_mark", "_mark_call", "_inline", "_draining", "_returned",
                 "_fast_stop", "_every", "__weakref__")
    kind = "prefetch"

    def __init__(self, up: NodeIterator, buffer_size: int) -> None:
        self._up = up
        self._upnext = up.__next__  # the input's bound method: no cycle through self
        self._pool = _par.ThreadPool(1, "prefetch")  # its thread starts on first submit
        self._window = _par.Window(self._pool, buffer_size)
        self._ended = False  # the end of the input was delivered (threaded mode)
        self._finalizer = weakref.finalize(self, _stop, self._pool, up)
        self._cost = 0.0  # running estimate of the input's seconds per element
        self._gap = 0.0  # running estimate of the consumer's seconds between calls
        self._inline = True
        self._draining = False  # going inline: deliver what is in flight, submit no more
        self._calls = 0  # inline calls since going inline
        self._every = _EVERY  # mask of the inline calls that are not timed
        self._mark = None  # when the last timed inline call returned, and its count
        self._mark_call = 0
        self._returned = None  # threaded mode: when the last element was handed out
        self._fast_stop = True

    def __next__(self):
        if self._inline:
            n = self._calls + 1
            self._calls = n
            if n & self._every and n > _WARMUP:
                return self._upnext()
            return self._timed_inline(n)
        return self._threaded()

    # ---- inline -------------------------------------------------------------------------
    def fast_iter(self):
        """Inline: a generator doing what __next__ does, pulling from the input's own
        fast_iter() (the fused batch-first loop, say) through a C-level chain."""
        if not self._inline or self._draining:
            self._fast_stop = True
            return self
        self._fast_stop = False
        up = itertools.chain.from_iterable(fast_sources(self._up, [False]))
        return itertools.chain.from_iterable(self._inline_runs(up))

    def fast_resumable(self) -> bool:
        return not self._fast_stop

    def _inline_runs(self, up):
        """The inline elements as a series of iterables: each stretch of untimed calls is
        a C-level slice of the input (no Python code per element), then one timed call."""
        pull = up.__next__
        while self._inline:  # once threaded, the chain comes back to __next__
            n = self._calls + 1
            every = self._every
            if n > _WARMUP and n & every:
                k = every + 1 - (n & every)  # untimed calls before the next timed one
                self._calls = n + k - 1
                yield itertools.islice(up, k)
                continue
            self._calls = n
            try:
                value = self._timed_inline(n, pull)
            except StopIteration:
                self._fast_stop = True
                return
            yield (value,)

    def _timed_inline(self, n: int, pull=None):
        t0 = perf_counter()
        value = (pull or self._upnext)()  # StopIteration passes through: the input stays exhausted
        t1 = perf_counter()
        cost = t1 - t0
        if self._mark is None:
            self._cost = cost
        else:
            self._cost = 0.8 * self._cost + 0.2 * cost
            # Since the last timed call ended: (n - mark) consumer gaps and (n - mark - 1)
            # untimed input pulls.
            k = n - self._mark_call
            gap = max(0.0, (t0 - self._mark - (k - 1) * self._cost) / k)
            self._gap = gap if self._mark_call == 1 else 0.8 * self._gap + 0.2 * gap
        self._mark, self._mark_call = t1, n
        if n >= _WARMUP:
            slower = min(self._cost, self._gap)
            if slower > THREAD_ABOVE:
                self._inline = False  # both sides are slow: overlapping them pays off
                self._returned = t1
                self._every = _EVERY
            elif slower < _FAR and cost < _FAR:
                # (the fresh pull too: the gap estimate leans on the cost estimate, and
                # a slow pull after a fast stretch can make it read zero)
                self._every = min(2 * self._every + 1, _EVERY_MAX)
            else:
                self._every = _EVERY
        return value

    # ---- threaded -----------------------------------------------------------------------
    def _threaded(self):
        if self._ended:
            raise StopIteration
        w = self._window
        if self._draining and not w._slots:
            self._draining = False
            self._inline = True
            self._calls = 0
            self._every = _EVERY
            self._mark = None
            return self.__next__()
        t0 = perf_counter()
        if self._returned is not None:
            self._gap = 0.8 * self._gap + 0.2 * (t0 - self._returned)
        value = self._next()
        self._returned = perf_counter()
        return value

    def _measure(self, dt: float) -> None:
        self._cost = 0.8 * self._cost + 0.2 * dt
        if min(self._cost, self._gap) < INLINE_BELOW:
            self._draining = True  # what is in flight is delivered first

    def _fill(self) -> None:
        if self._draining:
            return
        w = self._window
        up = self._up
        while not w.full():
            w.submit(_pull, (up,))

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

    # ---- state --------------------------------------------------------------------------
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
        # Restored elements come first: deliver them from the window, then go inline.
        self._inline = not w._slots and not self._ended
        self._draining = not self._inline
        self._calls = 0
        self._every = _EVERY
        self._mark = None

    def close(self) -> None:
        if self._finalizer.detach() is None:
            return
        self._pool.shutdown(wait=True)
        self._window._slots.clear()
        self._ended = True
        self._inline = False
        self._up.close()
