"""The one worker-pool / bounded-window helper behind parallel map, interleave and prefetch.

- :class:`ThreadPool` / :class:`ProcessPool`: workers owned by one iterator, started on
  first use. ``submit(fn, args)`` returns a :class:`Slot` that completes with the value
  or the exception (kept as raised, with its traceback).
- :class:`Window`: at most ``capacity`` submitted, not yet taken results. ``take()``
  returns them in submission order, or in completion order when not deterministic.
  This bound is what keeps a prefetch or parallel map's memory bounded.

Waits never block forever: they poll with a timeout and fail with an error if the
pool was shut down; the tasks of a worker process that died fail with a
:class:`WorkerLostError` and a new process replaces it on the next submit. Pools do not
reference their iterator, so dropping an iterator (``weakref.finalize``) shuts its
workers down.
"""
from __future__ import annotations

import os
import threading
import time
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


class WorkerLostError(RuntimeError):
    """A task's worker process died (killed, crashed or exited) before it answered."""

    def __init__(self, message: str, pid: int, exitcode) -> None:
        super().__init__(message)
        self.pid = pid
        self.exitcode = exitcode


def describe_exit(code) -> str:
    """``"was killed by SIGKILL"`` / ``"exited with code 3"`` for a process exit code."""
    if code is None:
        return "stopped answering"
    if code < 0:
        import signal
        try:
            return f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with code {code}"


class _Worker:
    """One worker process, its pipe end and its unanswered tasks ({task id: slot})."""

    __slots__ = ("proc", "conn", "pending", "dead")

    def __init__(self, proc, conn) -> None:
        self.proc = proc
        self.conn = conn
        self.pending: dict = {}
        self.dead = False  # set by the collector once the process is gone and its tasks failed


class ProcessPool:
    """``num_processes`` worker processes running ``target(*args)`` for submitted args.

    Arguments and results travel through pipes with the standard library's pickle
    transport. One collector thread (owned by the pool) completes the slots. A worker
    that dies (killed, crashed, exited) fails each of its unanswered tasks with a
    :class:`WorkerLostError`, and the next submit starts a new process in its place, so
    a pass can go on; nothing is retried (the task may be what killed it).
    """

    def __init__(self, num_processes: int, name: str, target) -> None:
        self.num_threads = max(1, int(num_processes))
        self.name = name
        self.target = target
        self.done_queue: SimpleQueue | None = None
        self._workers: list = []  # shared with the collector; replaced under the lock
        self._lock = threading.Lock()
        self._collector = None
        self._wake_r = self._wake_w = None
        self._next_id = 0
        self._closed = False

    def _spawn(self) -> _Worker:
        ctx = _mp_context()
        parent, child = ctx.Pipe()
        p = ctx.Process(target=_process_worker, args=(self.target, child), daemon=True,
                        name=f"layerkit.data.{self.name}")
        p.start()
        child.close()
        return _Worker(p, parent)

    def _start(self) -> None:
        self._workers.extend(self._spawn() for _ in range(self.num_threads))
        self._wake_r, self._wake_w = _mp_context().Pipe(duplex=False)
        self._collector = threading.Thread(
            target=_collect, args=(self._workers, self._lock, self._wake_r, self.done_queue,
                                   self.name),
            name=f"layerkit.data.{self.name}-collector", daemon=True)
        self._collector.start()

    def _replace_dead(self) -> None:
        """Start a new process for each worker the collector found dead."""
        workers = self._workers
        for i, w in enumerate(workers):
            if w.dead:
                w.proc.join(0)  # reap it
                new = self._spawn()
                with self._lock:
                    workers[i] = new
                self._wake("refresh")

    def _wake(self, msg) -> None:
        try:
            self._wake_w.send(msg)
        except (OSError, ValueError):
            pass

    def submit(self, fn, args: tuple, tag=None) -> Slot:
        # ``fn`` is ignored: the workers run ``target``, fixed when they were started.
        if self._closed:
            raise PoolClosedError(f"Dataset.{self.name}: the iterator was closed")
        if not self._workers:
            self._start()
        slot = Slot(tag)
        while True:
            self._replace_dead()
            with self._lock:  # the collector marks a worker dead under this lock
                live = [w for w in self._workers if not w.dead]
                if not live:
                    continue
                w = min(live, key=lambda w: len(w.pending))
                tid = self._next_id
                self._next_id += 1
                w.pending[tid] = slot
            try:
                w.conn.send((tid, args))
                return slot
            except (OSError, ValueError):  # it died: wait until the collector has seen it
                with self._lock:
                    w.pending.pop(tid, None)
                self._await_death(w)

    def _await_death(self, w: _Worker) -> None:
        w.proc.join(5.0)
        deadline = time.monotonic() + 5.0
        while not w.dead:
            self.check_alive()
            if time.monotonic() > deadline:
                raise RuntimeError(f"Dataset.{self.name}: cannot send work to a worker process "
                                   f"(pid {w.proc.pid}), which {describe_exit(w.proc.exitcode)}")
            time.sleep(0.005)

    def check_alive(self) -> None:
        if self._closed:
            raise PoolClosedError(f"Dataset.{self.name}: the iterator was closed while waiting")

    def shutdown(self, wait: bool = False, timeout: float = 5.0, after=None) -> None:
        if self._closed:
            if after is not None:
                after()
            return
        self._closed = True
        with self._lock:
            workers = list(self._workers)
        for w in workers:
            try:
                w.conn.send(None)
            except (OSError, ValueError):
                pass
        if self._wake_w is not None:
            self._wake(None)
        if wait:
            for w in workers:
                w.proc.join(timeout)
            if self._collector is not None and self._collector is not threading.current_thread():
                self._collector.join(timeout)
        for w in workers:
            if w.proc.is_alive() and wait:
                w.proc.terminate()
                w.proc.join(timeout)
        if after is not None:
            after()


def _collect(workers: list, lock, wake, done, name) -> None:
    """Collector thread: completes slots with results, fails them if a worker dies."""
    from multiprocessing.connection import wait as mp_wait
    try:
        while True:
            with lock:
                live = [w for w in workers if not w.dead]
            conns = {w.conn: w for w in live}
            sentinels = {w.proc.sentinel: w for w in live}
            ready = mp_wait(list(conns) + list(sentinels) + [wake])
            if wake in ready and _woken(wake):
                break
            for r in ready:
                if r in conns:
                    _receive(conns[r], lock, done)
                elif r in sentinels:
                    _bury(sentinels[r], lock, done, name)
            # This frame lives as long as the pool: it must keep no result (nor error) alive.
            ready = r = None
    finally:
        with lock:
            left = list(workers)
        for w in left:
            _fail(w, lock, done, lambda: PoolClosedError("the iterator was closed"))
            w.conn.close()
        wake.close()


def _woken(wake) -> bool:
    """Read the wake-up messages: True if one says stop (None), False for 'refresh'."""
    stop = False
    while wake.poll():
        try:
            msg = wake.recv()
        except (EOFError, OSError):
            return True
        stop = stop or msg is None
    return stop


def _receive(w: _Worker, lock, done) -> bool:
    """Complete the slot of the next result from ``w``; False if its pipe is closed."""
    try:
        tid, ok, value = w.conn.recv()
    except (EOFError, OSError):
        w.proc.join(1.0)  # the process is gone or going: its sentinel says when
        return False
    with lock:
        slot = w.pending.pop(tid, None)
    if slot is not None:
        slot.finish(value) if ok else slot.finish(error=value)
        if done is not None:
            done.put(True)
    return True


def _bury(w: _Worker, lock, done, name) -> None:
    """A worker process ended: deliver what it sent before, fail the rest of its tasks."""
    while True:
        try:
            if not w.conn.poll() or not _receive(w, lock, done):
                break
        except (EOFError, OSError):
            break
    w.proc.join(1.0)
    pid, code = w.proc.pid, w.proc.exitcode
    _fail(w, lock, done, lambda: WorkerLostError(
        f"Dataset.{name}: the worker process (pid {pid}) {describe_exit(code)} while working "
        f"on this task", pid, code), dead=True)
    w.conn.close()


def _fail(w: _Worker, lock, done, make_error, dead: bool = False) -> None:
    with lock:  # marked dead together: submit adds no task to it afterwards
        w.dead = w.dead or dead
        lost = list(w.pending.values())
        w.pending.clear()
    for slot in lost:
        slot.finish(error=make_error())
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
