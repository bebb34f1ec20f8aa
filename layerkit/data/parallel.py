"""The one worker-pool / bounded-window helper behind parallel map, interleave and prefetch.

- :class:`ThreadPool` / :class:`ProcessPool`: workers owned by one iterator, started on
  first use. ``submit(fn, args)`` returns a :class:`Slot` that completes with the value
  or the exception (kept as raised, with its traceback).
- :class:`Window`: at most ``capacity`` submitted, not yet taken results. ``take()``
  returns them in submission order, or in completion order when not deterministic.
  This bound is what keeps a prefetch or parallel map's memory bounded.

Waits never block forever: they poll with a timeout and fail with an error if the
pool was shut down or a worker process died. Pools do not reference their iterator,
so dropping an iterator (``weakref.finalize``) shuts its workers down.
"""
from __future__ import annotations

import os
import threading
from collections import deque
from queue import Empty, SimpleQueue

_POLL = 0.25  # seconds between liveness checks while waiting for a result


def default_parallelism() -> int:
    """What AUTOTUNE means for worker counts: the usable CPU cores."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover (not Linux)
        return max(1, os.cpu_count() or 1)


class PoolClosedError(RuntimeError):
    """A result was awaited from a pool that was shut down (its iterator was closed)."""


class Slot:
    """A one-shot result: ``value`` or ``error``, signalled through a held lock."""

    __slots__ = ("_lock", "value", "error", "tag", "_done")

    def __init__(self, tag=None) -> None:
        self._lock = threading.Lock()
        self._lock.acquire()
        self.value = None
        self.error = None
        self.tag = tag
        self._done = False

    def finish(self, value=None, error=None) -> None:
        self.value = value
        self.error = error
        self._done = True
        self._lock.release()

    @property
    def done(self) -> bool:
        return self._done

    def wait(self, pool) -> None:
        if self._done:
            return
        lock = self._lock
        while not lock.acquire(timeout=_POLL):
            pool.check_alive()
        lock.release()


def _finished(value=None, error=None, tag=None) -> Slot:
    s = Slot(tag)
    s.finish(value, error)
    return s


# ---- threads -------------------------------------------------------------------------------
class ThreadPool:
    """``num_threads`` daemon threads executing submitted calls in FIFO order."""

    def __init__(self, num_threads: int, name: str) -> None:
        self.num_threads = max(1, int(num_threads))
        self.name = name
        self._tasks: SimpleQueue = SimpleQueue()
        self.done_queue: SimpleQueue | None = None  # set by an unordered Window
        self._threads: list = []
        # Shared with the workers (never the pool itself): [stopped, live count, lock, after]
        self._shared = [False, 0, threading.Lock(), None]

    def _start(self) -> None:
        shared = self._shared
        for i in range(self.num_threads):
            t = threading.Thread(target=_thread_worker, args=(self._tasks, self.done_queue, shared),
                                 name=f"layerkit.data.{self.name}-{i}", daemon=True)
            with shared[2]:
                shared[1] += 1
            t.start()
            self._threads.append(t)

    def submit(self, fn, args: tuple, tag=None) -> Slot:
        if self._shared[0]:
            raise PoolClosedError(f"Dataset.{self.name}: the iterator was closed")
        if not self._threads:
            self._start()
        slot = Slot(tag)
        self._tasks.put((slot, fn, args))
        return slot

    def check_alive(self) -> None:
        if self._shared[0]:
            raise PoolClosedError(f"Dataset.{self.name}: the iterator was closed while waiting")
        if self._threads and not any(t.is_alive() for t in self._threads):
            raise RuntimeError(f"Dataset.{self.name}: all worker threads have exited")

    def shutdown(self, wait: bool = False, timeout: float = 5.0, after=None) -> None:
        """Stop the workers; queued tasks are dropped. ``after()`` runs once all have exited
        (in the last worker, or here if none is running)."""
        shared = self._shared
        with shared[2]:
            already = shared[0]
            shared[0] = True
            run_now = shared[1] == 0
            if not run_now and after is not None:
                shared[3] = after
        if not already:
            for _ in self._threads:
                self._tasks.put(None)
        if run_now and after is not None:
            after()
        if wait:
            me = threading.current_thread()
            for t in self._threads:
                if t is not me:
                    t.join(timeout)


def _thread_worker(tasks: SimpleQueue, done: SimpleQueue | None, shared: list) -> None:
    try:
        while True:
            task = tasks.get()
            if task is None:
                return
            _run_task(task, shared[0])
            # Nothing of the task may stay referenced from this frame while it waits for
            # the next one: a result can hold an exception whose traceback holds the
            # consumer's iterator, which would then never be freed (nor these threads).
            task = None
            if done is not None:
                done.put(True)
    finally:
        with shared[2]:
            shared[1] -= 1
            after = shared[3] if shared[1] == 0 else None
            if after is not None:
                shared[3] = None
        if after is not None:
            after()


def _run_task(task: tuple, stopped: bool) -> None:
    slot, fn, args = task
    del task
    if stopped:
        slot.finish(error=PoolClosedError("the iterator was closed"))
        return
    try:
        value = fn(*args)
    except BaseException as e:  # delivered to the consumer, which re-raises it
        slot.finish(error=e)
    else:
        slot.finish(value)
        del value
    # This frame stays reachable from the error's traceback (through f_back of the frames
    # below it): it must not keep the slot, which holds the error (a reference cycle).
    del slot, fn, args


def release(obj):
    """Return ``obj`` without the calling frame keeping it: ``return release(box)``
    where ``box`` is a one-item list. Worker frames stay reachable from the tracebacks of
    errors they caught, so they must not keep results that hold those errors."""
    return obj.pop()


# ---- processes -----------------------------------------------------------------------------
def _mp_context():
    import multiprocessing
    # fork (Linux) starts workers in milliseconds, needs no `if __name__ == "__main__"`
    # guard and hands the function over by inheritance, so lambdas work (as in torch's
    # DataLoader). Elsewhere spawn: the function must then be picklable.
    methods = multiprocessing.get_all_start_methods()
    return multiprocessing.get_context("fork" if "fork" in methods else "spawn")


def uses_fork() -> bool:
    return _mp_context().get_start_method() == "fork"


def _process_worker(target, conn) -> None:
    import signal
    import traceback
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError):
            return
        if msg is None:
            return
        tid, args = msg
        try:
            out = (tid, True, target(*args))
        except BaseException as e:
            e.add_note("in a Dataset worker process:\n" + "".join(traceback.format_exception(e)))
            out = (tid, False, e)
        try:
            conn.send(out)
        except Exception as e:  # an unpicklable result or exception
            conn.send((tid, False, RuntimeError(
                f"a Dataset worker process could not send its result back: {e!r}")))


class ProcessPool:
    """``num_processes`` worker processes running ``target(*args)`` for submitted args.

    Arguments and results travel through pipes with the standard library's pickle
    transport. One collector thread (owned by the pool) completes the slots; a worker
    that dies fails its pending slots instead of leaving the consumer waiting.
    """

    def __init__(self, num_processes: int, name: str, target) -> None:
        self.num_threads = max(1, int(num_processes))
        self.name = name
        self.target = target
        self.done_queue: SimpleQueue | None = None
        self._procs: list = []
        self._conns: list = []
        self._pending: list = []  # per worker: {task id: slot}
        self._lock = threading.Lock()
        self._collector = None
        self._wake_r = self._wake_w = None
        self._next_id = 0
        self._closed = False
        self._broken = None

    def _start(self) -> None:
        ctx = _mp_context()
        for _ in range(self.num_threads):
            parent, child = ctx.Pipe()
            p = ctx.Process(target=_process_worker, args=(self.target, child), daemon=True,
                            name=f"layerkit.data.{self.name}")
            p.start()
            child.close()
            self._procs.append(p)
            self._conns.append(parent)
            self._pending.append({})
        self._wake_r, self._wake_w = ctx.Pipe(duplex=False)
        self._collector = threading.Thread(
            target=_collect, args=(self._procs, self._conns, self._pending, self._lock,
                                   self._wake_r, self.done_queue, self.name),
            name=f"layerkit.data.{self.name}-collector", daemon=True)
        self._collector.start()

    def submit(self, fn, args: tuple, tag=None) -> Slot:
        # ``fn`` is ignored: the workers run ``target``, fixed when they were started.
        if self._closed:
            raise PoolClosedError(f"Dataset.{self.name}: the iterator was closed")
        if not self._procs:
            self._start()
        self.check_alive()
        slot = Slot(tag)
        with self._lock:
            w = min(range(len(self._procs)), key=lambda i: len(self._pending[i]))
            tid = self._next_id
            self._next_id += 1
            self._pending[w][tid] = slot
        try:
            self._conns[w].send((tid, args))
        except (OSError, ValueError) as e:
            with self._lock:
                self._pending[w].pop(tid, None)
            p = self._procs[w]
            p.join(1.0)
            raise RuntimeError(f"Dataset.{self.name}: a worker process exited (code "
                               f"{p.exitcode}); cannot send it work ({e})") from None
        return slot

    def check_alive(self) -> None:
        if self._closed:
            raise PoolClosedError(f"Dataset.{self.name}: the iterator was closed while waiting")

    def shutdown(self, wait: bool = False, timeout: float = 5.0, after=None) -> None:
        if self._closed:
            if after is not None:
                after()
            return
        self._closed = True
        for c in self._conns:
            try:
                c.send(None)
            except (OSError, ValueError):
                pass
        if self._wake_w is not None:
            try:
                self._wake_w.send(None)
            except (OSError, ValueError):
                pass
        if wait:
            for p in self._procs:
                p.join(timeout)
            if self._collector is not None and self._collector is not threading.current_thread():
                self._collector.join(timeout)
        for p in self._procs:
            if p.is_alive() and wait:
                p.terminate()
        if after is not None:
            after()


def _collect(procs, conns, pending, lock, wake, done, name) -> None:
    """Collector thread: completes slots with results, fails them if a worker dies."""
    from multiprocessing.connection import wait as mp_wait
    live = {c: i for i, c in enumerate(conns)}
    sentinels = {p.sentinel: i for i, p in enumerate(procs)}
    try:
        while live:
            ready = mp_wait(list(live) + list(sentinels) + [wake])
            if wake in ready:
                break
            for r in ready:
                _collect_one(r, live, sentinels, procs, pending, lock, done, name)
            # This frame lives as long as the pool: it must keep no result (nor error) alive.
            ready = r = None
    finally:
        _fail_all(pending, lock, PoolClosedError("the iterator was closed"), done)
        for c in conns:
            c.close()
        wake.close()


def _collect_one(r, live, sentinels, procs, pending, lock, done, name) -> None:
    if r in live:
        i = live[r]
        try:
            tid, ok, value = r.recv()
        except (EOFError, OSError):
            del live[r]
            return
        with lock:
            slot = pending[i].pop(tid, None)
        if slot is not None:
            slot.finish(value) if ok else slot.finish(error=value)
            if done is not None:
                done.put(True)
    elif r in sentinels:
        i = sentinels.pop(r)
        code = procs[i].exitcode
        with lock:
            lost = list(pending[i].values())
            pending[i].clear()
        for slot in lost:
            slot.finish(error=RuntimeError(
                f"Dataset.{name}: a worker process exited (code {code}) while working on an "
                f"element"))
            if done is not None:
                done.put(True)


def _fail_all(pending, lock, err: BaseException, done) -> None:
    with lock:
        lost = [s for d in pending for s in d.values()]
        for d in pending:
            d.clear()
    for slot in lost:
        slot.finish(error=err)
        if done is not None:
            done.put(True)


# ---- the bounded window --------------------------------------------------------------------
class Window:
    """Bounded in-flight results on a pool, delivered in order (or as they complete).

    ``capacity`` bounds the submitted, not yet taken results (the memory bound).
    ``running``, when given, bounds only the unfinished ones and makes completions
    observable (:meth:`ready`, :meth:`wait`), so that a consumer waiting for the result
    at the head can submit more work as soon as any worker is free: with ordered
    delivery, a worker that finishes ahead of the head would otherwise sit idle.
    """

    def __init__(self, pool, capacity: int, deterministic: bool = True,
                 running: int | None = None) -> None:
        self.pool = pool
        self.capacity = max(1, int(capacity))
        self.running = None if running is None else max(1, int(running))
        self.deterministic = deterministic
        self._slots: deque = deque()
        if not deterministic or running is not None:
            pool.done_queue = SimpleQueue()

    def __len__(self) -> int:
        return len(self._slots)

    def full(self) -> bool:
        slots = self._slots
        if len(slots) >= self.capacity:
            return True
        if self.running is None:
            return False
        busy = 0
        for s in slots:
            if not s._done:
                busy += 1
        return busy >= self.running

    def ready(self) -> bool:
        """Whether :meth:`take` would return without waiting."""
        if self.deterministic:
            return self._slots[0]._done
        return any(s._done for s in self._slots)

    def wait(self) -> None:
        """Wait until some result completes (or a poll interval passes); needs
        ``running`` or an unordered window."""
        done = self.pool.done_queue
        try:
            done.get(timeout=_POLL)
        except Empty:
            self.pool.check_alive()

    def submit(self, fn, args: tuple, tag=None) -> None:
        self._slots.append(self.pool.submit(fn, args, tag))

    def put_ready(self, value=None, error=None, tag=None) -> None:
        """Queue an already known outcome (an upstream error, a restored buffer entry)."""
        self._slots.append(_finished(value, error, tag))
        if self.pool.done_queue is not None:
            self.pool.done_queue.put(True)

    def take(self) -> Slot:
        """The next outcome; waits for it. The window must not be empty."""
        slots = self._slots
        if self.deterministic:
            slot = slots[0]
            slot.wait(self.pool)  # an interrupt here (Ctrl-C) leaves the slot queued
            return slots.popleft()
        done = self.pool.done_queue
        while True:
            for i, s in enumerate(slots):
                if s.done:
                    del slots[i]
                    return s
            try:
                done.get(timeout=_POLL)
            except Empty:
                self.pool.check_alive()

    def settle(self) -> list:
        """Wait for every in-flight result and return all outcomes in delivery order
        (they stay queued). Used to snapshot iterator state."""
        for s in self._slots:
            s.wait(self.pool)
        return list(self._slots)

    def clear(self) -> None:
        for s in self._slots:
            try:
                s.wait(self.pool)
            except PoolClosedError:
                break
        self._slots.clear()
