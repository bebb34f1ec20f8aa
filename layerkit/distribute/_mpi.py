"""The MPI world of ``lk.distribute``: one communicator, bounded collectives, fail-fast.

mpi4py is imported here, and only when the first ``MultiWorkerMirroredStrategy`` is
created. Every collective layerkit runs goes through :class:`World`, which

- uses its own duplicate of ``MPI.COMM_WORLD`` (a user's own MPI traffic cannot
  interleave with layerkit's);
- uses buffer-based (upper-case) mpi4py calls only: no pickle;
- marks the collective it is in, and a watchdog thread aborts the whole job
  (``MPI_Abort``) with a message naming the collective when one has not completed after
  ``timeout`` seconds: a rank that hangs, loops, or left the job cannot leave the others
  waiting forever;
- installs a ``sys.excepthook`` that prints the uncaught exception, says which rank
  failed, and calls ``MPI_Abort``, so every rank stops at once. Without it a raising rank
  would wait in ``MPI_Finalize`` for ranks that wait for it (mpich's default: a hang).
  A rank that dies from a signal is handled by ``mpiexec`` itself (it ends the job).

Threads: ranks sharing a machine split its cores. Unless ``OPENBLAS_NUM_THREADS`` or
``OMP_NUM_THREADS`` is set, each rank limits NumPy's OpenBLAS to ``cores // ranks on this
machine`` threads (at least 1) through OpenBLAS's own ``set_num_threads`` entry point, and
numexpr likewise (two ranks on two cores: one thread each; oversubscribed BLAS threads
busy-wait and slow both ranks down).
"""
from __future__ import annotations

import ctypes
import os
import sys
import threading
import time
import traceback

import numpy as np

from layerkit._core import distribution

DEFAULT_TIMEOUT = 300.0
TIMEOUT_ENV = "LAYERKIT_DISTRIBUTE_TIMEOUT"
TRACE_ENV = "LAYERKIT_DISTRIBUTE_TRACE"

_WORLD: World | None = None


def import_mpi():
    """``mpi4py.MPI``, or an ImportError that says how to install it."""
    try:
        from mpi4py import MPI
    except ImportError as e:
        raise ImportError(
            "lk.distribute.MultiWorkerMirroredStrategy runs on MPI through mpi4py, which is "
            "not installed: pip install 'layerkit[mpi]' (mpi4py and the mpich wheel, which "
            "brings mpiexec), or install mpi4py built against your cluster's MPI "
            f"({e})") from None
    return MPI


def world(timeout: float | None = None) -> World:
    """The process's World, created (and MPI initialised) on first use."""
    global _WORLD
    if _WORLD is None:
        _WORLD = World(timeout)
        distribution.world = _WORLD
    elif timeout is not None:
        _WORLD.timeout = float(timeout)
    return _WORLD


def current() -> World | None:
    """The World if a strategy created one, else None (MPI is not initialised)."""
    return _WORLD


def _default_timeout() -> float:
    env = os.environ.get(TIMEOUT_ENV)
    if env:
        try:
            value = float(env)
        except ValueError:
            raise ValueError(f"{TIMEOUT_ENV} must be a number of seconds, received "
                             f"{env!r}") from None
        if value > 0:
            return value
    return DEFAULT_TIMEOUT


class World:
    """This process's place in the MPI job and the collectives layerkit uses."""

    def __init__(self, timeout: float | None = None) -> None:
        MPI = import_mpi()
        self.MPI = MPI
        self.comm = MPI.COMM_WORLD.Dup()
        self.rank = self.comm.Get_rank()
        self.size = self.comm.Get_size()
        self.timeout = float(timeout) if timeout is not None else _default_timeout()
        self.solo = False      # rank 0 running callbacks on its own (see training.py)
        self.count = 0         # collectives started, for messages
        self._busy = None      # (start time, what, count) while inside a collective
        # LAYERKIT_DISTRIBUTE_TRACE=prefix: each rank lists its collectives in prefix.rank<r>
        # (ranks that disagree show up in a diff of those files)
        trace = os.environ.get(TRACE_ENV)
        self._trace = open(f"{trace}.rank{self.rank}", "w") if trace else None
        self.local_size = 1
        if self.size > 1:
            local = self.comm.Split_type(MPI.COMM_TYPE_SHARED)
            self.local_size = local.Get_size()
            local.Free()
            self._install_excepthook()
            threading.Thread(target=self._watch, name="layerkit-distribute-watchdog",
                             daemon=True).start()
        self.blas_threads = limit_threads(self.local_size)

    # ---- failure handling ---------------------------------------------------------------------
    def _install_excepthook(self) -> None:
        previous = sys.excepthook

        def hook(kind, value, tb) -> None:
            try:
                previous(kind, value, tb)
            except Exception:   # never let a broken hook stop the abort
                traceback.print_exception(kind, value, tb)
            self.abort(f"rank {self.rank} of {self.size} stopped with an uncaught "
                       f"{kind.__name__}: {value}", 1)
        sys.excepthook = hook

    def abort(self, message: str, code: int = 1) -> None:
        """Print ``message`` and end every rank of the job (``MPI_Abort``)."""
        try:
            sys.stdout.flush()
            sys.stderr.write(f"layerkit.distribute: {message}; aborting all {self.size} "
                             f"ranks\n")
            sys.stderr.flush()
        finally:
            self.comm.Abort(code)

    def _watch(self) -> None:
        while True:
            time.sleep(min(1.0, self.timeout / 4))
            busy = self._busy
            if busy is not None and time.monotonic() - busy[0] > self.timeout:
                self.abort(
                    f"rank {self.rank} of {self.size} waited {self.timeout:g} s in {busy[1]} "
                    f"(collective #{busy[2]} of this rank) for the other ranks: one of them "
                    f"stopped, hangs, or runs different code (set the limit with "
                    f"CommunicationOptions(timeout_seconds=...) or {TIMEOUT_ENV})", 3)

    def _enter(self, what: str) -> None:
        self.count += 1
        if self._trace is not None:
            self._trace.write(f"#{self.count} {what}\n")
            self._trace.flush()
        self._busy = (time.monotonic(), what, self.count)

    def _leave(self) -> None:
        self._busy = None

    # ---- collectives (buffers: C-contiguous NumPy arrays) --------------------------------------
    def wait(self, requests: list, what: str) -> None:
        """Wait for non-blocking operations (bounded by the watchdog)."""
        self._enter(what)
        try:
            self.MPI.Request.Waitall(requests)
        finally:
            self._leave()

    def allreduce(self, buf: np.ndarray, what: str, op=None) -> np.ndarray:
        """Sum (or ``op``) ``buf`` over the ranks, in place."""
        if self.size > 1:
            self._enter(what)
            try:
                self.comm.Allreduce(self.MPI.IN_PLACE, buf, op=op or self.MPI.SUM)
            finally:
                self._leave()
        return buf

    def bcast(self, buf: np.ndarray, what: str, root: int = 0) -> np.ndarray:
        """Rank ``root``'s ``buf`` on every rank, in place."""
        if self.size > 1:
            self._enter(what)
            try:
                self.comm.Bcast(buf, root=root)
            finally:
                self._leave()
        return buf

    def barrier(self, what: str) -> None:
        if self.size > 1:
            self._enter(what)
            try:
                self.comm.Barrier()
            finally:
                self._leave()

    def bcast_bytes(self, data: bytes | None, what: str, root: int = 0) -> bytes:
        """Rank ``root``'s ``data`` on every rank (others pass anything, e.g. None)."""
        if self.size == 1:
            return bytes(data)
        n = np.array([len(data) if self.rank == root else 0], np.int64)
        self.bcast(n, what, root)
        buf = np.frombuffer(bytearray(data), np.uint8).copy() if self.rank == root \
            else np.empty(int(n[0]), np.uint8)
        self.bcast(buf, what, root)
        return buf.tobytes()

    def allgather_bytes(self, data: bytes, what: str) -> list[bytes]:
        """Every rank's ``data``, in rank order, on every rank."""
        if self.size == 1:
            return [bytes(data)]
        counts = np.zeros(self.size, np.int64)
        counts[self.rank] = len(data)
        self.allreduce(counts, what)
        displs = np.concatenate([[0], np.cumsum(counts)[:-1]])
        out = np.empty(int(counts.sum()), np.uint8)
        send = np.frombuffer(bytearray(data), np.uint8)
        self._enter(what)
        try:
            self.comm.Allgatherv(send, [out, counts.tolist(), displs.tolist(), self.MPI.BYTE])
        finally:
            self._leave()
        return [out[a:a + c].tobytes() for a, c in zip(displs.tolist(), counts.tolist())]


# ---- threads -----------------------------------------------------------------------------------
_OPENBLAS_SETTERS = ("scipy_openblas_set_num_threads64_", "scipy_openblas_set_num_threads",
                     "openblas_set_num_threads64_", "openblas_set_num_threads")


def _openblas_libraries() -> list[str]:
    try:
        with open("/proc/self/maps") as f:
            paths = {line.split()[-1] for line in f if "openblas" in line.lower()}
    except OSError:
        return []
    return sorted(p for p in paths if p.startswith("/"))


def set_blas_threads(n: int) -> bool:
    """Set NumPy's OpenBLAS thread count (no-op and False when not found)."""
    done = False
    for path in _openblas_libraries():
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for name in _OPENBLAS_SETTERS:
            fn = getattr(lib, name, None)
            if fn is not None:
                fn(ctypes.c_int(int(n)))
                done = True
                break
    return done


def limit_threads(ranks_here: int) -> int | None:
    """Give each of the ``ranks_here`` ranks on this machine its share of the cores
    (see the module docstring). Returns the thread count set, or None if left alone."""
    if os.environ.get("OPENBLAS_NUM_THREADS") or os.environ.get("OMP_NUM_THREADS"):
        return None
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    n = max(1, cores // max(1, ranks_here))
    if n >= cores:
        return None   # one rank per machine: nothing to share
    set_blas_threads(n)
    try:
        import numexpr
        numexpr.set_num_threads(n)
    except ImportError:
        pass
    return n
