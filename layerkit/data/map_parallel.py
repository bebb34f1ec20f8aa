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
"""
from __future__ import annotations

import functools
import time
import traceback
import weakref
from collections import deque

from layerkit.data import parallel as _par
from layerkit.data import rng as _rng
from layerkit.data import structure as _st
from layerkit.data.node import NodeIterator, annotate, call_fn, fn_note

_normalize = _st.normalize


@_rng.keyed
def _call_one(fn, elem, src, index: int) -> tuple:
    try:
        return True, _normalize(call_fn(fn, elem))
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
        payload = ("ok", _st.encode_chunk([v for _, v in out]))
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


IN_FLIGHT = 256


class ParallelMapIterator(NodeIterator):
    __slots__ = ("_up", "_node", "_count", "_src", "_pool", "_window", "_pending", "_exhausted",
                 "_chunk", "_cost", "_max_chunk", "_target", "_finalizer", "_ctx", "__weakref__")
    kind = "map"

    def __init__(self, node, up: NodeIterator, src, ctx) -> None:
        self._ctx = ctx
        self._up = up
        self._node = node
        self._count = 0
        self._src = src
        k = node.workers
        if node.use_processes:
            self._pool = _par.ProcessPool(k, "map", functools.partial(_run_chunk_process, node.fn))
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
        self._cost = None  # seconds per element, running estimate
        self._finalizer = weakref.finalize(self, _shutdown_and_close, self._pool, up)

    def _fill(self) -> None:
        w = self._window
        up = self._up
        node = self._node
        while not self._exhausted and not w.full():
            elems = []
            err = None
            for _ in range(self._chunk):
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
                if node.use_processes:
                    w.submit(None, (_st.encode_chunk(elems), self._src, start),
                             (start, len(elems)))
                else:
                    w.submit(_run_chunk, (node.fn, elems, self._src, start))
            if err is not None:
                outcomes = [(False, err)]
                w.put_ready((("mixed", outcomes) if node.use_processes else outcomes, 0.0))

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
        self._pending.extend(outcomes)
        self._fill()

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
        if self._node.use_processes:
            outcomes = _process_outcomes(outcomes)
        if tune:
            self._tune(len(outcomes), dt)
        return outcomes

    def _tune(self, n: int, dt: float) -> None:
        if n == 0 or dt <= 0:
            return
        per = dt / n
        self._cost = per if self._cost is None else 0.7 * self._cost + 0.3 * per
        self._chunk = int(min(self._max_chunk, max(1, self._target / max(self._cost, 1e-9))))

    def get_state(self) -> dict:
        outcomes = list(self._pending)
        for slot in self._window.settle():
            outcomes.extend(self._outcomes(slot))
        buf = []
        for ok, v in outcomes:
            buf.append({"ok": _st.encode(v)} if ok else _st.encode_error(v))
        return {"node": self.kind, "count": self._count, "rng": list(self._src.as_tuple()),
                "exhausted": self._exhausted, "buffer": buf, "input": self._up.get_state()}

    def set_state(self, state: dict) -> None:
        self._check_state(state)
        self._window.clear()
        self._pending.clear()
        self._count = int(state["count"])
        self._src = _rng.SeedSource(*state["rng"])
        self._ctx.restore(self._node, *state["rng"])
        self._exhausted = bool(state["exhausted"])
        self._up.set_state(state["input"])
        for entry in state["buffer"]:
            if "ok" in entry:
                self._pending.append((True, _st.decode(entry["ok"])))
            else:
                self._pending.append((False, _st.decode_error(entry)))

    def close(self) -> None:
        self._finalizer.detach()
        self._pool.shutdown(wait=True)
        self._window._slots.clear()
        self._exhausted = True
        self._pending.clear()
        self._up.close()


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
    up.close()
