"""prefetch: a background thread keeps up to ``buffer_size`` elements ready.

Handing an element from the worker thread to the consumer costs 5-15 µs here (a thread
wake-up and a GIL hand-over; measured with ``range(n).prefetch(2)``), and a thread can
only save time when the consumer has work of its own to overlap with (a training step
between two ``next`` calls). So prefetch measures both the input's time per element and
the consumer's time between calls (a :class:`~layerkit.data.tuning.Sampler`). It starts
pulling in the consumer's thread (same elements, same order); once both times exceed
``THREAD_ABOVE`` it hands the input to its thread, and it comes back when either falls
below ``INLINE_BELOW``. Inline, only every 16th call is timed (the other calls cost one
method call: ~0.05 µs instead of ~0.45 µs with timing), and while the timed calls find
the input or the consumer far below ``THREAD_ABOVE`` the stride doubles, up to one call
in 1024 (one timed call in 16 cost ~0.3 µs per element on a 4 µs batch-first pipeline).
A fast pipeline never starts a thread at all.

``buffer_size=AUTOTUNE`` sizes the buffer the same way: it starts at 2 and doubles
whenever the consumer finds it empty although the input is faster than the consumer on
average (the input is bursty: a slow file read, an expensive element), up to
``MAX_AUTOTUNE_BUFFER`` elements and ``Options.autotune.ram_budget`` bytes (default
``DEFAULT_RAM_BUDGET``). When the input is the slower side, no buffer helps, and it stays.
"""
from __future__ import annotations

import itertools
import weakref
from time import perf_counter

from layerkit._core import tuning as _tuning
from layerkit.data import parallel as _par
from layerkit.data import structure as _st
from layerkit.data.node import AUTOTUNE, Node, NodeIterator, fast_sources
from layerkit.data.tuning import WARMUP, Sampler


class PrefetchNode(Node):
    """Produces input elements ahead of the consumer in one background thread."""

    name = "prefetch"

    def __init__(self, source: Node, buffer_size: int) -> None:
        super().__init__(source)
        self.autotune = buffer_size == AUTOTUNE
        if self.autotune:
            buffer_size = 2
        if isinstance(buffer_size, bool) or not isinstance(buffer_size, int) or buffer_size < 1:
            raise ValueError(f"Dataset.prefetch: buffer_size must be a positive int or AUTOTUNE, "
                             f"received {buffer_size!r}")
        self.buffer_size = buffer_size

    def make_iterator(self, ctx):
        size, grow = self.buffer_size, None
        if self.autotune:
            opts = ctx.autotune_options()
            if opts.enabled is False:  # tf.data's switch: fixed sizes, as before autotuning
                size = max(2, _par.default_parallelism())
            else:
                grow = opts.ram_budget or DEFAULT_RAM_BUDGET
        return PrefetchIterator(self.inputs[0].make_iterator(ctx), size, grow)

    def cardinality(self) -> int:
        return self.inputs[0].cardinality()

    def _compute_spec(self):
        return self.inputs[0].element_spec()


INLINE_BELOW = _tuning.PREFETCH_INLINE_BELOW
THREAD_ABOVE = _tuning.PREFETCH_THREAD_ABOVE
_FAR = THREAD_ABOVE / 4  # a timed call this far below THREAD_ABOVE widens the sampling stride
MAX_AUTOTUNE_BUFFER = _tuning.PREFETCH_MAX_AUTOTUNE_BUFFER
DEFAULT_RAM_BUDGET = _tuning.PREFETCH_RAM_BUDGET  # bytes an AUTOTUNE buffer may hold


def _pull(up):
    t0 = perf_counter()
    value = next(up)
    return value, perf_counter() - t0


def _stop(pool, up) -> None:
    # The worker may be inside up.__next__: close the input once it has exited.
    pool.shutdown(wait=False, after=up.close)


class PrefetchIterator(NodeIterator):
    __slots__ = ("_up", "_upnext", "_pool", "_window", "_ended", "_finalizer", "_s", "_inline",
                 "_draining", "_returned", "_done", "_ram", "_grown_at", "_handed",
                 "__weakref__")
    kind = "prefetch"

    def __init__(self, up: NodeIterator, buffer_size: int, ram_budget: int | None = None) -> None:
        self._up = up
        self._upnext = up.__next__  # the input's bound method: no cycle through self
        self._pool = _par.ThreadPool(1, "prefetch")  # its thread starts on first submit
        self._window = _par.Window(self._pool, buffer_size)
        self._ended = False  # the end of the input was delivered (threaded mode)
        self._finalizer = weakref.finalize(self, _stop, self._pool, up)
        self._s = Sampler()  # the input's time per element and the consumer's between calls
        self._inline = True
        self._draining = False  # going inline: deliver what is in flight, submit no more
        self._returned: float | None = None  # threaded mode: when the last element left
        self._done = [True]  # the last fast_iter() chain has seen the end
        self._ram = ram_budget  # AUTOTUNE: bytes the buffer may grow to (None: fixed size)
        self._handed = 0  # elements handed out in threaded mode
        self._grown_at = 0  # ... when the buffer last grew

    def __next__(self):
        if self._inline:
            s = self._s
            n = s.calls + 1
            s.calls = n
            if n & s.every and n > WARMUP:
                return self._upnext()
            return self._timed_inline(n, self._upnext)
        return self._threaded()

    # ---- inline -------------------------------------------------------------------------
    def fast_iter(self):
        """Inline: a generator doing what __next__ does, pulling from the input's own
        fast_iter() (the fused batch-first loop, say) through a C-level chain."""
        if not self._inline or self._draining:
            self._done = [True]  # the chain iterates self, to the end
            return self
        self._done = [False]
        up = itertools.chain.from_iterable(fast_sources(self._up, [False]))
        return itertools.chain.from_iterable(self._s.runs(
            lambda k: itertools.islice(up, k), up.__next__, self._timed_inline, self._is_inline,
            self._done))

    def fast_resumable(self) -> bool:
        return not self._done[0]

    def _is_inline(self) -> bool:
        return self._inline  # once threaded, the chain comes back to __next__

    def _timed_inline(self, n: int, pull):
        s = self._s
        t0 = perf_counter()
        value = pull()  # StopIteration passes through: the input stays exhausted
        t1 = perf_counter()
        cost = s.record(n, t0, t1)
        if n >= WARMUP:
            slower = min(s.cost, s.gap)
            if slower > THREAD_ABOVE:
                self._inline = False  # both sides are slow: overlapping them pays off
                self._returned = t1
                s.narrow()
            elif slower < _FAR and cost < _FAR:
                # (the fresh pull too: the gap estimate leans on the cost estimate, and
                # a slow pull after a fast stretch can make it read zero)
                s.widen()
            else:
                s.narrow()
        return value

    # ---- threaded -----------------------------------------------------------------------
    def _threaded(self):
        if self._ended:
            raise StopIteration
        w = self._window
        s = self._s
        if self._draining and not w._slots:
            self._draining = False
            self._inline = True
            s.restart()
            return self.__next__()
        t0 = perf_counter()
        if self._returned is not None:
            s.gap = 0.8 * s.gap + 0.2 * (t0 - self._returned)
        value = self._next()
        self._returned = perf_counter()
        return value

    def _measure(self, dt: float) -> None:
        s = self._s
        s.cost = 0.8 * s.cost + 0.2 * dt
        if min(s.cost, s.gap) < INLINE_BELOW:
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
        if self._ram is not None and w._slots and not w._slots[0]._done:
            self._starved()
        slot = w.take()
        if slot.error is None:
            value, dt = slot.value
            self._handed += 1
            self._measure(dt)
            self._fill()
            if self._ram is not None and self._grown_at < 0:
                self._fit_budget(value)
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

    def _starved(self) -> None:
        """AUTOTUNE: the consumer waits on an empty buffer. Double it if the input keeps
        up on average (then waiting means bursts a bigger buffer absorbs), at most once
        per buffer's worth of elements."""
        w = self._window
        s = self._s
        if (w.capacity < MAX_AUTOTUNE_BUFFER and s.cost < 0.8 * s.gap
                and self._handed - self._grown_at >= w.capacity):
            w.capacity = min(MAX_AUTOTUNE_BUFFER, 2 * w.capacity)
            self._grown_at = -1  # checked against the RAM budget on the next element

    def _fit_budget(self, value) -> None:
        size = sum(getattr(getattr(t, "_v", t), "nbytes", 0) for t in _st.flatten(value))
        w, ram = self._window, self._ram
        if ram is not None and size * w.capacity > ram:
            w.capacity = max(2, min(w.capacity, ram // max(size, 1)))
        self._grown_at = self._handed

    def tuning_report(self) -> dict:
        """What this prefetch chose: ``mode`` ("inline": the consumer's thread pulls;
        "thread": its thread does), the buffer size, and the measured microseconds per
        element of the input and of the consumer between calls."""
        s = self._s
        return {"stage": "prefetch", "mode": "inline" if self._inline else "thread",
                "buffer_size": self._window.capacity, "autotuned": self._ram is not None,
                "input_us": s.cost * 1e6, "consumer_us": s.gap * 1e6}

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
                w.put_ready((_st.decode(entry["ok"]), self._s.cost))
            elif "end" in entry:
                w.put_ready(error=StopIteration())
            else:
                w.put_ready(error=_st.decode_error(entry))
        # Restored elements come first: deliver them from the window, then go inline.
        self._inline = not w._slots and not self._ended
        self._draining = not self._inline
        self._s.restart()

    def close(self) -> None:
        if self._finalizer.detach() is None:
            return
        self._pool.shutdown(wait=True)
        self._window._slots.clear()
        self._ended = True
        self._inline = False
        self._up.close()
