"""What ``AUTOTUNE`` measures and how it decides (``map``, ``prefetch``).

- :class:`Sampler`: sparse timing of the calls a stage serves in the consumer's thread,
  the approach inline ``prefetch`` introduced. The first ``WARMUP`` calls are timed one
  by one, later only one call in 16, and one in up to 1024 while the stage keeps finding
  nothing to act on. Each timed call gives the call's duration and, from the time since
  the last timed call, the consumer's time per call between them (its "gap").
  :meth:`Sampler.runs` hands out the untimed stretches as C-level slices of the input.
- The decision of a parallel ``map``: :func:`candidates` turns one :class:`Measure`
  (the function's seconds per element, its thread CPU seconds, the input's and the
  consumer's seconds per element) into the configurations worth trying, and
  :func:`pick` chooses among them from trial windows run on the real pipeline (elements
  per second, interleaved rounds). Both are pure functions of their arguments.

Why trial windows rather than a model alone: the thread CPU time of a call (``time.
thread_time``) tells a function that waits (sleep, I/O: little CPU) from one that
computes, but not whether the computing holds the GIL (NumPy on small arrays releases it
for short stretches and gains nothing from threads here; see shared/FACTS.md), and on a
shared machine both clocks move with the load. What a trial measures (whole-pipeline
elements per second with inline, threads, processes) is what the choice is about; the
model only decides whether a trial can pay off at all and which worker counts to try.
"""
from __future__ import annotations

import math
import statistics
from collections import deque
from typing import NamedTuple

WARMUP = 8  # calls timed one by one before deciding; later one call in 16 or more
EVERY = 15  # first mask: calls whose count has these bits zero are timed
EVERY_MAX = 1023  # the widest mask: one call in 1024 is timed
_RING = 9  # recent samples behind the robust (median) estimates


def median(values) -> float:
    """The middle value (the upper one of an even count; 0.0 for none): cheaper than
    ``statistics.median`` on the few samples kept here."""
    if not values:
        return 0.0
    return sorted(values)[len(values) // 2]


class Sampler:
    """Sparse timing of a stage's calls in the consumer's thread.

    ``calls`` counts the calls; call ``n`` is timed when :meth:`untimed` says so, and the
    owner then reports it with :meth:`record`. ``cost`` is a running (EWMA) estimate of
    a call's duration, ``gap`` of the consumer's time between calls; ``walls`` and
    ``gaps`` keep the last samples for medians (a call preempted on a loaded machine
    shifts an average a long way, a median hardly).
    """

    __slots__ = ("calls", "every", "mark", "mark_call", "cost", "gap", "walls", "gaps",
                 "last_gap")

    def __init__(self) -> None:
        self.restart()

    def restart(self) -> None:
        """Forget every sample (a new stretch of inline calls starts)."""
        self.calls = 0
        self.every = EVERY
        self.mark = None  # when the last timed call returned, and its number
        self.mark_call = 0
        self.cost = 0.0
        self.gap = 0.0
        self.last_gap = None
        self.walls: deque = deque(maxlen=_RING)
        self.gaps: deque = deque(maxlen=_RING)

    def untimed(self, n: int) -> bool:
        """Whether call ``n`` goes untimed."""
        return n > WARMUP and bool(n & self.every)

    def record(self, n: int, t0: float, t1: float) -> float:
        """Account for timed call ``n``, which ran from ``t0`` to ``t1``; its duration."""
        wall = t1 - t0
        self.walls.append(wall)
        if self.mark is None:
            self.cost = wall
            self.last_gap = None
        else:
            self.cost = 0.8 * self.cost + 0.2 * wall
            # Since the last timed call ended: (n - mark) consumer gaps and
            # (n - mark - 1) untimed calls, taken at the typical (median) duration.
            k = n - self.mark_call
            typical = median(self.walls) if len(self.walls) >= 3 else self.cost
            gap = max(0.0, (t0 - self.mark - (k - 1) * typical) / k)
            self.gap = gap if self.mark_call == 1 else 0.8 * self.gap + 0.2 * gap
            self.gaps.append(gap)
            self.last_gap = gap
        self.mark, self.mark_call = t1, n
        return wall

    def widen(self) -> None:
        """Time fewer calls (nothing to act on nearby)."""
        self.every = min(2 * self.every + 1, EVERY_MAX)

    def narrow(self) -> None:
        """Time one call in 16 again."""
        self.every = EVERY

    def runs(self, stretch, pull, timed, active, done: list):
        """A stage's elements as a series of iterables (for ``chain.from_iterable``):
        each stretch of ``k`` untimed calls is ``stretch(k)``, a C-level iterable (no
        Python code of the stage per element), then one element comes from
        ``timed(n, pull)``. Stops when ``active()`` turns False; at the end of the input
        (a timed call's StopIteration while still active) it sets ``done[0]``."""
        while active():
            n = self.calls + 1
            every = self.every
            if n > WARMUP and n & every:
                k = every + 1 - (n & every)  # untimed calls before the next timed one
                self.calls = n + k - 1
                yield stretch(k)
                continue
            self.calls = n
            try:
                value = timed(n, pull)
            except StopIteration:
                done[0] = active()  # else a state change or a switch closed the input
                return
            yield (value,)


# ---- the parallel map's decision ------------------------------------------------------------
INLINE, THREADS, PROCESSES = "inline", "threads", "processes"
TRY_ABOVE = 40e-6  # function seconds per element below which nothing but inline is tried
GAIN_TO_TRY = 1.25  # modelled speed-up a configuration needs before it is tried
WAITING_BELOW = 0.5  # thread CPU / wall time below this: the function mostly waits
MAX_THREADS = 32
# Consumer-thread seconds per element of handing work to workers and taking results back
# (chunked: ~2 ms tasks for threads, ~5 ms for processes, which also copy arrays).
OVERHEAD = {THREADS: 2e-6, PROCESSES: 6e-6}
CLEAR = 1.5  # a trial ends after one round if the best is this much faster than each other
CONSISTENT = 1.15  # ... after two rounds, if it was this much faster in both
ROUNDS = 3  # then the medians of three rounds decide
TIE = 1.05  # within this of the fastest, the cheapest configuration is kept
CHANGED = 2.0  # a measure that moved by this factor since the last decision is re-decided


class Config(NamedTuple):
    """How a map runs its function: ``inline`` (the consumer's thread), ``threads`` or
    ``processes`` with ``workers`` workers."""

    kind: str
    workers: int = 0

    def __str__(self) -> str:
        if self.kind == INLINE:
            return INLINE
        if self.workers == 1:
            return f"1 {'process' if self.kind == PROCESSES else 'thread'}"
        return f"{self.workers} {self.kind}"


INLINE_CONFIG = Config(INLINE)


class Measure(NamedTuple):
    """Seconds per element measured inline: the function (wall clock), the input's pull,
    the consumer between calls, and the thread CPU time of input pull + function (None
    when not measured)."""

    cost: float
    up: float = 0.0
    gap: float = 0.0
    cpu: float | None = None

    @property
    def cpu_fraction(self) -> float | None:
        """Thread CPU time over wall time of the pull and the call (low: it waits)."""
        if self.cpu is None or self.cost + self.up <= 0:
            return None
        return min(1.0, self.cpu / (self.cost + self.up))


def _waiting(m: Measure) -> bool:
    f = m.cpu_fraction
    return f is not None and f < WAITING_BELOW


def modelled_speedup(m: Measure, cfg: Config, cores: int) -> float:
    """The speed-up ``cfg`` could give at best over inline, from ``m`` alone.

    Inline, an element costs ``up + cost + gap`` of the consumer's time. With workers the
    consumer still pulls inputs, hands work out and consumes (``up + gap + overhead``)
    while the function runs on ``workers`` lanes: on at most ``cores`` for a function
    that computes, on all of them for one that mostly waits (threads).
    """
    if cfg.kind == INLINE:
        return 1.0
    lanes = cfg.workers if cfg.kind == THREADS and _waiting(m) else min(cfg.workers, cores)
    parallel = max(m.up + m.gap + OVERHEAD[cfg.kind], m.cost / max(1, lanes))
    return (m.up + m.cost + m.gap) / parallel


def candidates(m: Measure, cores: int, processes: bool, budget: int | None = None) -> list:
    """The parallel configurations worth a trial for measure ``m`` (empty: stay inline).

    Args:
        m: the inline measure.
        cores: usable CPU cores.
        processes: whether worker processes are allowed (``use_processes=True``).
        budget: ``Options.autotune.cpu_budget`` (cores the workers may keep busy).

    Returns:
        Configurations, processes first, each modelled to gain at least ``GAIN_TO_TRY``.
        Thread counts: as many workers as keep the consumer fed, at most ``cores`` (the
        budget) for a function that computes; for one that waits, up to the budget
        divided by its CPU fraction (``MAX_THREADS`` at most).
    """
    if m.cost < TRY_ABOVE:
        return []
    cap = max(1, cores if budget is None else int(budget))
    keep_up = max(1, math.ceil(m.cost / max(m.up + m.gap + OVERHEAD[THREADS], 1e-9)))
    if _waiting(m):
        f = max(m.cpu_fraction, 1.0 / MAX_THREADS)
        threads = min(MAX_THREADS, keep_up, max(cap, math.ceil(cap / f)))
    else:
        threads = min(cap, keep_up)
    out = []
    if processes:
        out.append(Config(PROCESSES, min(cap, keep_up)))
    out.append(Config(THREADS, threads))
    return [c for c in out if modelled_speedup(m, c, cores) >= GAIN_TO_TRY]


def _cheapness(cfg: Config) -> tuple:
    return ((INLINE, THREADS, PROCESSES).index(cfg.kind), cfg.workers)


def pick(rates: dict) -> Config | None:
    """The configuration to keep after the trial rounds run so far, or None for another.

    Args:
        rates: per :class:`Config`, the elements per second of each round's window
            (rounds interleave the configurations, so slow drifts of the machine's load
            hit them alike).

    Returns:
        After one round, a configuration at least ``CLEAR`` times as fast as every other
        one; after two, one at least ``CONSISTENT`` times as fast in every window; after
        ``ROUNDS``, the cheapest (inline, then threads, then processes; fewer workers
        first) whose median is within ``TIE`` of the fastest median.
    """
    rounds = min(len(v) for v in rates.values())
    if rounds == 0:
        return None
    med = {c: statistics.median(v) for c, v in rates.items()}  # (the mean of two, exactly)
    best = max(med, key=med.get)
    if rounds < ROUNDS:
        margin = CLEAR if rounds == 1 else CONSISTENT
        if all(min(rates[best]) >= margin * max(v) for c, v in rates.items() if c != best):
            return best
        return None
    top = med[best]
    return min((c for c in med if med[c] * TIE >= top), key=_cheapness)


def gil_fraction(speedup: float, workers: int) -> float | None:
    """The fraction of a function's time that runs one thread at a time (the GIL held,
    or another shared bottleneck), from the speed-up ``workers`` threads gave over
    inline: Amdahl's law solved for the serial part. None for fewer than 2 workers."""
    if workers < 2 or speedup <= 0:
        return None
    return min(1.0, max(0.0, (workers / speedup - 1.0) / (workers - 1)))


def changed(m: Measure, ref: Measure) -> bool:
    """Whether the function's or the consumer's time per element moved by ``CHANGED``
    or more since ``ref`` (times far below ``TRY_ABOVE`` count as equal)."""
    floor = TRY_ABOVE / 4
    for a, b in ((m.cost, ref.cost), (m.gap + m.up, ref.gap + ref.up)):
        a, b = max(a, floor), max(b, floor)
        if a >= CHANGED * b or b >= CHANGED * a:
            return True
    return False


# ---- reports --------------------------------------------------------------------------------
def reports(it) -> list:
    """``tuning_report()`` of every stage in an iterator tree that has one, outermost
    first."""
    out = []
    stack = [it]
    seen = set()
    while stack:
        cur = stack.pop()
        if cur is None or id(cur) in seen:
            continue
        seen.add(id(cur))
        report = getattr(cur, "tuning_report", None)
        if report is not None:
            out.append(report())
        inputs = getattr(cur, "_inputs", None)
        if inputs is not None:
            stack.extend(reversed([x for x in inputs() if hasattr(x, "get_state")]))
    return out
