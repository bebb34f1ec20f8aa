"""Fused, non-blocking all-reduce of lists of NumPy arrays (gradients).

A *plan* is made once per list layout (shapes and dtypes, in order):

- arrays of at least ``LARGE_BYTES`` (4 MiB) are reduced on their own, without copying them:
  a reduce-scatter reads the gradient and writes this rank's part of the sum into the
  plan's buffer, and an in-place all-gather completes it (the gradient itself is never
  written: it may be a buffer or a constant of a traced step). An ``Allreduce(send,
  recv)`` would first copy the whole gradient (mpich), which cost 30-40% here;
- smaller ones are packed, per dtype, into buckets of up to ``bytes_per_pack`` bytes
  (one ``np.concatenate`` per bucket) and each bucket is reduced in place with one call
  (the per-call latency, not the bytes, dominates small arrays); the results are views
  into the bucket, made once per buffer set.

Every call of a step is started non-blocking as soon as its buffer is ready (a bucket
once it is packed), so packing the next bucket overlaps the transfer of the previous one,
and one ``Waitall`` ends the step. A small float64 *control* vector travels with the
gradients: each rank's weight (for fit's mean over the global batch), whether it had data
(ranks that ran out take part with zeros) and a hash of the layout (ranks that update
different variables fail with a clear error instead of mixing values).

A mean (``average=True``) divides by the summed weights in place, without a separate
pass over a large array: a large array's own part is divided between its reduce-scatter
and its all-gather (1/N of its bytes per rank), a bucket once after its all-reduce.

Gradient buffers are owned by the plan and reused every step. The public
``lk.distribute.allreduce`` returns views into its buffers, so it asks for *fresh* ones:
a set whose earlier results nobody holds any more (reference counts back to what the
set holds itself) is recycled, else a new set is allocated. Recycling saves the page
faults of new large buffers and the views' construction for many small arrays.
"""
from __future__ import annotations

import sys
import zlib

import numpy as np

from layerkit._core.tuning import DISTRIBUTE_LARGE_BYTES, DISTRIBUTE_PACK_BYTES

LARGE_BYTES = DISTRIBUTE_LARGE_BYTES  # 4 MiB: reduced on its own from this size
DEFAULT_PACK_BYTES = DISTRIBUTE_PACK_BYTES  # 16 MiB buckets
POOL = 2                      # recycled fresh buffer sets per plan

# control vector: [weight, has data, layout hash]
_W, _HAS, _HASH = 0, 1, 2


def layout_hash(layout: tuple) -> float:
    """A float64-exact hash (< 2**31) of ``((shape, dtype), ...)``."""
    text = repr([(tuple(shape), np.dtype(dt).str) for shape, dt in layout])
    return float(zlib.crc32(text.encode()) & 0x7FFFFFFF)


class Buffers:
    """One set of buffers for a plan, with the result views into them."""

    __slots__ = ("solo", "buckets", "control", "results", "flat", "_owned", "_refs")

    def __init__(self, plan: Plan) -> None:
        layout = plan.layout
        self.solo = {i: np.empty(layout[i][0], layout[i][1]) for i in plan.solo}
        self.flat = {i: a.reshape(-1) for i, a in self.solo.items()}
        self.buckets = [np.empty(total, dt) for dt, _, total in plan.buckets]
        self.control = np.zeros(3, np.float64)
        self.results = [None] * len(layout)
        for i, a in self.solo.items():
            self.results[i] = a
        for (_, members, _), buf in zip(plan.buckets, self.buckets):
            for i, off, size in members:
                self.results[i] = buf[off:off + size].reshape(layout[i][0])
        self._owned = [*self.buckets, *self.solo.values(), *self.results]
        self._refs = None

    def _counts(self) -> list:
        return [sys.getrefcount(a) for a in self._owned]

    def lend(self) -> None:
        """Remember the reference counts of this set's own arrays and views (taken before
        its results are handed out)."""
        if self._refs is None:
            self._refs = self._counts()

    def free(self) -> bool:
        """Whether no result of an earlier call (nor a view of one) is still held."""
        return self._counts() == self._refs


class Plan:
    """Where each array of one layout goes: its own buffer, or a slice of a bucket."""

    def __init__(self, layout: tuple, pack_bytes: int) -> None:
        self.layout = layout                  # ((shape, dtype), ...)
        self.floats = all(np.dtype(dt).kind in "fc" for _, dt in layout)
        self.hash = layout_hash(layout)
        self.solo: list[int] = []             # indices reduced on their own
        self.buckets: list[tuple] = []        # (dtype, [(index, offset, size), ...], total)
        pack_bytes = int(pack_bytes) if pack_bytes and pack_bytes > 0 else DEFAULT_PACK_BYTES
        open_buckets: dict = {}
        for i, (shape, dtype) in enumerate(layout):
            dt = np.dtype(dtype)
            size = int(np.prod(shape, dtype=np.int64))
            if size * dt.itemsize >= LARGE_BYTES:
                self.solo.append(i)
                continue
            b = open_buckets.get(dt)
            if b is None or (b[2] + size) * dt.itemsize > pack_bytes:
                b = [dt, [], 0]
                self.buckets.append(b)
                open_buckets[dt] = b
            b[1].append((i, b[2], size))
            b[2] += size
        self.buckets = [tuple(b) for b in self.buckets]
        self.members = [[i for i, _, _ in members] for _, members, _ in self.buckets]
        # one bucket of every array, in order: pack the caller's list as it is
        self.whole = not self.solo and len(self.members) == 1
        self._buffers = None
        self._pool: list = []
        self._split = None
        self._scratch = None

    def split(self, ranks: int) -> tuple:
        """Per solo array, the element counts and offsets of the ranks' parts."""
        if self._split is None or self._split[0] != ranks:
            counts, displs = {}, {}
            for i in self.solo:
                size = int(np.prod(self.layout[i][0], dtype=np.int64))
                base, extra = divmod(size, ranks)
                counts[i] = [base + (1 if r < extra else 0) for r in range(ranks)]
                displs[i] = [r * base + min(r, extra) for r in range(ranks)]
            self._split = (ranks, counts, displs)
        return self._split[1], self._split[2]

    def scratch(self, i: int) -> np.ndarray:
        """A send buffer for solo array ``i`` (scaled or zero contributions)."""
        if self._scratch is None:
            self._scratch = {}
        buf = self._scratch.get(i)
        if buf is None:
            shape, dtype = self.layout[i]
            buf = self._scratch[i] = np.empty(int(np.prod(shape, dtype=np.int64)), dtype)
        return buf

    def buffers(self, fresh: bool) -> Buffers:
        """The plan's buffers (reused across calls), or if ``fresh`` a set that no earlier
        result still uses (recycled, else new)."""
        if fresh:
            for b in self._pool:
                if b.free():
                    return b
            b = Buffers(self)
            if len(self._pool) < POOL:
                b.lend()
                self._pool.append(b)
            return b
        if self._buffers is None:
            self._buffers = Buffers(self)
        return self._buffers


class Reducer:
    """Runs plans on a :class:`~layerkit.distribute._mpi.World`."""

    def __init__(self, world, pack_bytes: int = 0) -> None:
        self.world = world
        self.pack_bytes = pack_bytes
        self._plans: dict = {}
        self._last: Plan | None = None

    def plan(self, arrays: list) -> Plan:
        layout = tuple([(a.shape, a.dtype) for a in arrays])
        last = self._last
        # the usual case, the same layout as last time: a comparison, not a hash
        return last if last is not None and last.layout == layout else self.plan_for(layout)

    def plan_for(self, layout: tuple) -> Plan:
        p = self._plans.get(layout)
        if p is None:
            if len(self._plans) > 64:
                self._plans.clear()
            p = self._plans[layout] = Plan(layout, self.pack_bytes)
        self._last = p
        return p

    def reduce(self, arrays: list | None, weight: float = 1.0, has_data: bool = True,
               fresh: bool = False, what: str = "allreduce", plan: Plan | None = None,
               average: bool = False):
        """Sum ``weight * arrays[i]`` over the ranks (divided by the sum of the weights if
        ``average``).

        Returns ``(results, control)``: arrays shaped like the inputs (views into the
        plan's buffers) and the summed control vector ``[sum of weights, ranks with data,
        sum of hashes]``. ``arrays`` may be None (a rank without data: it contributes
        zeros and ``weight`` 0 to ``plan``'s layout). With ``average`` and a zero sum of
        weights the results are zeros.

        Raises:
            RuntimeError: the ranks reduced different layouts.
        """
        world = self.world
        MPI = world.MPI
        comm = world.comm
        SUM = MPI.SUM
        if plan is None:
            plan = self.plan(arrays)
        bufs = plan.buffers(fresh)
        control = bufs.control
        idle = arrays is None
        zero = idle or weight == 0    # no contribution (NaN * 0 would still be NaN)
        scale = None if weight == 1.0 or zero else float(weight)
        control[_W] = 0.0 if idle else weight
        control[_HAS] = 1.0 if (has_data and not idle) else 0.0
        control[_HASH] = plan.hash
        requests = [comm.Iallreduce(MPI.IN_PLACE, control, op=SUM)]
        # large arrays: reduce-scatter straight from the gradient, then all-gather in place
        # (no copy of the gradient, which must not be written to)
        gathers = []
        if plan.solo:
            counts, displs = plan.split(world.size)
            rank = world.rank
            for i in plan.solo:
                out = bufs.flat[i]
                if zero or scale is not None:
                    send = plan.scratch(i)
                    if zero:
                        send.fill(0)
                    else:
                        np.multiply(arrays[i].reshape(-1), scale, out=send)
                else:
                    send = arrays[i].reshape(-1)
                    if not send.flags.c_contiguous:
                        send = np.ascontiguousarray(send)
                c, d = counts[i], displs[i]
                mine = out[d[rank]:d[rank] + c[rank]]
                requests.append(comm.Ireduce_scatter(send, mine, c, op=SUM))
                gathers.append(([out, (c, d)], mine))
        for members, buf in zip(plan.members, bufs.buckets):
            if zero:
                buf.fill(0)
            else:
                np.concatenate(arrays if plan.whole else [arrays[i] for i in members],
                               axis=None, out=buf, casting="unsafe")
                if scale is not None:
                    np.multiply(buf, scale, out=buf)
            requests.append(comm.Iallreduce(MPI.IN_PLACE, buf, op=SUM))
        world.wait(requests, what)
        if control[_HASH] != plan.hash * world.size:
            raise RuntimeError(
                f"lk.distribute: rank {world.rank} all-reduced {len(plan.layout)} arrays "
                f"({_describe(plan.layout)}) but other ranks reduced a different list "
                f"(each rank must update the same variables, in the same order, with "
                f"gradients of the same shapes)")
        total = float(control[_W])   # a Python float: a weak scalar keeps float32 float32
        if gathers:
            if average:    # this rank's part only: the all-gather spreads it
                for _, mine in gathers:
                    _divide(mine, total)
            world.wait([comm.Iallgatherv(MPI.IN_PLACE, g) for g, _ in gathers], what)
        if average:
            for buf in bufs.buckets:
                _divide(buf, total)
        return (list(bufs.results) if fresh else bufs.results), control


def _divide(a: np.ndarray, total: float) -> None:
    """``a /= total`` in place (zeros for a zero total: no rank contributed)."""
    if total > 0:
        if total != 1.0:
            np.divide(a, total, out=a, casting="unsafe")
    else:
        np.multiply(a, 0.0, out=a, casting="unsafe")


def _describe(layout: tuple) -> str:
    shapes = [tuple(s) for s, _ in layout[:4]]
    more = f", ... {len(layout) - 4} more" if len(layout) > 4 else ""
    return f"shapes {shapes}{more}"
