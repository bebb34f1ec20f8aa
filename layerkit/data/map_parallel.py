"""Parallel map: the user function run in worker threads or processes.

Parallel map pulls input elements in the consumer thread, hands chunks of them to the
workers of one :mod:`~layerkit.data.parallel` pool and delivers results in input order
(or as they complete when ``deterministic=False``). Chunk sizes adapt to the measured
cost of the function (about 2 ms of work per task for threads, 5 ms for processes), so
cheap functions do not drown in hand-off overhead, and at most ``IN_FLIGHT`` (256)
elements are submitted but not yet delivered; while the consumer waits for the next
result in order, it hands new chunks to any worker that finished, so no worker idles
behind a slower one. Worker processes receive and return a chunk as one stacked array
per leaf when the elements' shapes agree. Errors are caught per element: an exception in
element ``i`` reaches the consumer at position ``i`` and the elements after it still come.
A worker process that dies fails each element of the chunks it held with its own
``WorkerLostError`` (a RuntimeError naming the element and how the process ended), at
those elements' positions; the pool starts a new process for the rest. So every element
reaches the consumer, or an error for it does. ``num_parallel_calls=AUTOTUNE`` runs these
pools through :mod:`~layerkit.data.map_autotune`, which decides when to use them.
"""
from __future__ import annotations

import functools
import time
import traceback
import weakref
from collections import deque
from typing import Any

from layerkit._core.tuning import PARALLEL_MAP_IN_FLIGHT
from layerkit.data import parallel as _par
from layerkit.data import rng as _rng
from layerkit.data import structure as _st
from layerkit.data.node import NodeIterator, annotate, call_fn, fn_note

_normalize = _st.normalize
_PLAIN = _rng.PLAIN  # the frame walk is off: call through KeyedCall (see rng)


@_rng.keyed
def _call_one(fn, elem, src, index: int) -> tuple:
    try:
        return True, _normalize(call_fn(_rng.KeyedCall(fn, src, index) if _PLAIN else fn, elem))
    except Exception as e:
        return False, annotate(e, fn_note(fn, index))


def _run_chunk(fn, elems: list, src, start: int) -> tuple:
    """Worker task (threads): outcomes ``(ok, value_or_error)`` per element, and the time."""
    t0 = time.perf_counter()
    out = [_call_one(fn, elem, src, start + j) for j, elem in enumerate(elems)]
    box = [(out, time.perf_counter() - t0)]
    del out
    return _par.release(box)


def _run_chunk_process(fn, chunk, src, start: int) -> tuple:
    """Worker task (processes; ``fn`` is bound when the workers start). Elements travel
    as one stacked array per leaf when they can (see ``structure.encode_chunk``): a few
    pickles per chunk instead of one per element and leaf."""
    out, dt = _run_chunk(fn, _st.decode_chunk(chunk), src, start)
    if all(ok for ok, _ in out):
        payload: tuple[str, Any] = ("ok", _st.encode_chunk([v for _, v in out]))
    else:
        for ok, v in out:
            if not ok:  # the frames stay here: the consumer gets them as text
                v.add_note("the user function's traceback in the Dataset worker process:\n"
                           + "".join(traceback.format_tb(v.__traceback__)).rstrip())
        payload = ("mixed", [(ok, _st.to_arrays(v) if ok else v) for ok, v in out])
    box = [(payload, dt)]
    del out
    return _par.release(box)


def _process_outcomes(payload) -> list:
    kind, data = payload
    if kind == "ok":
        return [(True, e) for e in _st.decode_chunk(data)]
    return [(ok, _st.from_arrays(v) if ok else v) for ok, v in data]


IN_FLIGHT = PARALLEL_MAP_IN_FLIGHT


class ParallelMapIterator(NodeIterator):
    """The map's function run by ``workers`` threads (or processes) of one pool.

    ``workers``/``processes`` default to the node's settings. An AUTOTUNE map runs one of
    these per configuration it tries (``owns_input=False``: closing or dropping it stops
    its workers, not the shared input) and switches between them: ``draining`` stops
    new submissions so that what is in flight is delivered first (:meth:`drained`), and
    ``log`` (a list or deque, or None) receives ``(time, elements taken before)`` at each
    chunk taken, the arrivals its rate is measured from; ``budget`` (None: unlimited)
    bounds the input elements it submits, so that a trial window does not leave hundreds
    of elements to drain through a slow configuration.
    """

    __slots__ = ("_up", "_node", "_count", "_src", "_pool", "_window", "_pending", "_exhausted",
                 "_chunk", "_cost", "_max_chunk", "_target", "_finalizer", "_ctx", "_procs",
                 "workers", "draining", "log", "taken", "budget", "__weakref__")
    kind = "map"

    def __init__(self, node, up: NodeIterator, src, ctx, workers: int | None = None,
                 processes: bool | None = None, owns_input: bool = True,
                 cost: float | None = None) -> None:
        self._ctx = ctx
        self._up = up
        self._node = node
        self._count = 0
        self._src = src
        k = self.workers = node.workers if workers is None else workers
        self._procs = node.use_processes if processes is None else processes
        if self._procs:
            self._pool: _par.ProcessPool | _par.ThreadPool = _par.ProcessPool(
                k, "map", functools.partial(_run_chunk_process, node.fn))
            self._target, queued = 5e-3, 2
        else:
            self._pool = _par.ThreadPool(k, "map")
            # 2 ms tasks: with 0.5 ms ones, waking threads for each result cost 57% more
            # CPU than a serial map on ~200 us NumPy work (12% with 2 ms). 4 tasks queued
            # per worker: the consumer thread, woken to submit more, can wait up to the
            # interpreter's 5 ms switch interval for the GIL while the workers run.
            self._target, queued = 2e-3, 4
        # Up to ``queued`` tasks per worker submitted and unfinished, twice that not yet
        # delivered, and at most IN_FLIGHT elements not delivered (the memory bound).
        self._window = _par.Window(self._pool, 2 * queued * k, node.deterministic,
                                   running=queued * k)
        self._max_chunk = max(1, IN_FLIGHT // (2 * queued * k))
        self._pending: deque = deque()  # outcomes of the chunk being delivered
        self._exhausted = False
        self._chunk = 1
        self._cost: float | None = None  # seconds per element, running estimate
        if cost is not None:
            self._tune(1, cost)
        self.draining = False
        self.log = None
        self.taken = 0  # elements taken from the window
        self.budget = None
        self._finalizer = weakref.finalize(self, _shutdown_and_close, self._pool,
                                           up if owns_input else None)

    def _fill(self) -> None:
        if self.draining:
            return
        w = self._window
        up = self._up
        node = self._node
        procs = self._procs
        while not self._exhausted and not w.full():
            n = self._chunk
            if self.budget is not None:
                if self.budget <= 0:
                    return
                n = min(n, self.budget)
                self.budget -= n
            elems = []
            err = None
            for _ in range(n):
                try:
                    elems.append(next(up))
                except StopIteration:
                    self._exhausted = True
                    break
                except Exception as e:
                    err = e
                    break
            if elems:
                start = self._count
                self._count += len(elems)
                if procs:
                    w.submit(None, (_st.encode_chunk(elems), self._src, start),
                             (start, len(elems)))
                else:
                    w.submit(_run_chunk, (node.fn, elems, self._src, start))
            if err is not None:
                outcomes = [(False, err)]
                w.put_ready((("mixed", outcomes) if procs else outcomes, 0.0))

    def __next__(self):
        pending = self._pending
        if not pending:
            self._take_chunk()
        ok, value = pending.popleft()
        if not ok:
            try:
                raise value
            finally:
                value = None  # no cycle through the traceback (see parallel.release)
        return value

    def _take_chunk(self) -> None:
        # A separate frame: the chunk's outcomes may hold an exception that __next__ raises
        # afterwards, and __next__'s frame must not reference them (a reference cycle).
        self._fill()
        w = self._window
        if not len(w):
            raise StopIteration
        while not w.ready():  # keep every worker busy while the next result is pending
            w.wait()
            self._fill()
        outcomes = self._outcomes(w.take(), tune=True)
        if self.log is not None:
            self.log.append((time.perf_counter(), self.taken))
        self.taken += len(outcomes)
        self._pending.extend(outcomes)
        self._fill()

    def drained(self) -> bool:
        """Draining, and everything submitted has been delivered."""
        return self.draining and not self._pending and not self._window._slots

    def resume(self, count: int, src, up) -> None:
        """Continue a drained (or new) engine at input position ``count`` of ``up``."""
        self._count = count
        self._src = src
        self._up = up
        self._exhausted = False
        self.draining = False
        self.budget = None

    def _outcomes(self, slot, tune: bool = False) -> list:
        """A chunk's outcomes ``(ok, value or error)``, one per input element."""
        if slot.error is not None:  # the worker machinery failed, not the user function
            err, tag, slot = slot.error, slot.tag, None
            if isinstance(err, _par.WorkerLostError):
                return _lost(err, *tag)
            try:
                raise err
            finally:
                err = None  # no cycle through the traceback (see parallel.release)
        outcomes, dt = slot.value
        if self._procs:
            outcomes = _process_outcomes(outcomes)
        if tune:
            self._tune(len(outcomes), dt)
        return outcomes

    def _tune(self, n: int, dt: float) -> None:
        if n == 0 or dt <= 0:
            return
        per = dt / n
        cost = self._cost = per if self._cost is None else 0.7 * self._cost + 0.3 * per
        self._chunk = int(min(self._max_chunk, max(1, self._target / max(cost, 1e-9))))

    def buffered(self) -> list:
        """The outcomes submitted and not yet delivered, encoded for a state (waits for
        the ones in flight; they stay queued)."""
        outcomes = list(self._pending)
        for slot in self._window.settle():
            outcomes.extend(self._outcomes(slot))
        return [{"ok": _st.encode(v)} if ok else _st.encode_error(v) for ok, v in outcomes]

    def get_state(self) -> dict:
        return {"node": self.kind, "count": self._count, "rng": list(self._src.as_tuple()),
                "exhausted": self._exhausted, "buffer": self.buffered(),
                "input": self._up.get_state()}

    def set_state(self, state: dict) -> None:
        self._check_state(state)
        self._window.clear()
        self._pending.clear()
        self._count = int(state["count"])
        self._src = _rng.SeedSource(*state["rng"])
        self._ctx.restore(self._node, *state["rng"])
        self._exhausted = bool(state["exhausted"])
        self._up.set_state(state["input"])
        self._pending.extend(decode_outcomes(state["buffer"]))

    def stop(self, wait: bool = True) -> None:
        """Stop the workers (not the input)."""
        self._finalizer.detach()
        self._pool.shutdown(wait=wait)
        self._window._slots.clear()
        self._exhausted = True
        self._pending.clear()

    def close(self) -> None:
        self.stop()
        self._up.close()


def decode_outcomes(entries: list) -> list:
    """Outcomes ``(ok, value or error)`` from a state's encoded buffer."""
    return [(True, _st.decode(e["ok"])) if "ok" in e else (False, _st.decode_error(e))
            for e in entries]


def _lost(err, start: int, n: int) -> list:
    """One error per input element of a chunk whose worker process died."""
    return [(False, _par.WorkerLostError(
        f"Dataset.map: input element {i} of this pass is lost: the worker process (pid "
        f"{err.pid}) running it {_par.describe_exit(err.exitcode)}. The other elements "
        f"still come (a new worker process takes its place), so a loop that goes on past "
        f"this error receives or is told about every element", err.pid, err.exitcode))
        for i in range(start, start + n)]


def _shutdown_and_close(pool, up) -> None:
    # Workers never touch ``up`` (the consumer pulls inputs), so closing it now is safe.
    pool.shutdown(wait=False)
    if up is not None:
        up.close()
