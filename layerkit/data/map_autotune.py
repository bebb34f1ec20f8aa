"""``map(fn, num_parallel_calls=AUTOTUNE)``: measure, then run inline, in threads or in
processes.

An AUTOTUNE map starts as the serial map (same fast paths: ``next_list`` for ``batch``,
the fused batch-first loop) and times a sparse sample of its calls with a
:class:`~layerkit.data.tuning.Sampler`: the function's seconds per element (wall clock
and thread CPU time), the input's, and the consumer's between calls. A function far
cheaper than handing it to a worker (below ``tuning.TRY_ABOVE``, or a consumer so slow
that no worker count could gain ``tuning.GAIN_TO_TRY``) stays inline, where the
sampling costs nothing measurable: one timed call in up to 1024, and once that sparse,
its samples are checked against the decision at most every ``QUIET`` seconds.

Otherwise the map runs a trial on the real pipeline: windows of about ``WINDOW``
seconds, interleaved in rounds, each with one configuration (``tuning.candidates``:
processes if ``use_processes=True``, threads, inline), measuring delivered elements per
second; ``tuning.pick`` keeps one after one to three rounds. A parallel window's rate is
taken between chunk arrivals, after the first, so pool start-up and the hand-over
between configurations do not count. The map then watches its rate (parallel) or its
sampled times (inline) and runs a new trial when they move by ``tuning.CHANGED`` or
more, at most once per ``RETRY_AFTER`` seconds (doubling while trials keep the same
choice). The choice is remembered on the Dataset's node: the next pass (epoch) starts
with it.

Order, content and state are the same whatever runs: a configuration change lets the
running pool deliver everything it holds before the next configuration takes over at
the same input position (nothing is lost, repeated or reordered; ``element_rng`` keys on
the element's position, not on who runs it). The state has the parallel map's layout
(outcomes in flight as a buffer) and the configuration running, which a restored
iterator starts with. ``Iterator.autotune_report()`` shows the decisions.
"""
from __future__ import annotations

import itertools
import math
import statistics
from collections import deque
from time import perf_counter, thread_time

from layerkit.data import parallel as _par
from layerkit.data import structure as _st
from layerkit.data.map import MapIterator
from layerkit.data.map_parallel import ParallelMapIterator, decode_outcomes
from layerkit.data.node import NodeIterator, fn_name
from layerkit.data.tuning import (
    CHANGED,
    EVERY_MAX,
    INLINE,
    INLINE_CONFIG,
    MAX_THREADS,
    PROCESSES,
    THREADS,
    TRY_ABOVE,
    WARMUP,
    Config,
    Measure,
    Sampler,
    candidates,
    changed,
    gil_fraction,
    median,
    pick,
)

WINDOW = 0.04  # seconds of inline work per trial window
MIN_WINDOW, MAX_WINDOW = 16, 4096  # elements per trial window
MIN_ARRIVALS = 4  # chunk arrivals a parallel window's rate is measured over
RETRY_AFTER = 1.0  # seconds between trials at least
# Settled inline (one call in EVERY_MAX + 1 timed, nothing to act on): the timed calls
# are checked against the decision at most this often. A cheap function's check would
# otherwise run every ~1 ms (1024 calls of ~1 us); one whose calls grow costly reaches
# a check within 1024 calls or this long, whichever is later.
QUIET = 0.05
SPACING = 10  # ... and this many times the last trial's length
_MONITOR = 16  # chunk arrivals a running parallel configuration's rate is watched over
_LOG_MAX = 32  # switches and trials kept for the report


class _Trial:
    __slots__ = ("configs", "window", "measure", "started", "index", "rates", "element", "why")

    def __init__(self, configs: list, window: int, measure: Measure, element: int,
                 why: str) -> None:
        self.configs = configs
        self.window = window
        self.measure = measure
        self.started = perf_counter()
        self.index = 0
        self.rates: dict = {}
        self.element = element
        self.why = why  # what started it


class _InputClock:
    """Times the input pulls made during one timed call (wraps ``_upnext``/``_uplist``)."""

    __slots__ = ("next", "list", "spent")

    def __init__(self) -> None:
        self.next = self.list = None
        self.spent = 0.0

    def pull(self):
        t0 = perf_counter()
        try:
            return self.next()
        finally:
            self.spent += perf_counter() - t0

    def pull_list(self, n: int) -> list:
        t0 = perf_counter()
        try:
            return self.list(n)
        finally:
            self.spent += perf_counter() - t0


class AutoMapIterator(MapIterator):
    """Serial map that measures itself and switches to worker threads or processes
    when that is faster (see the module docstring)."""

    __slots__ = ("_s", "_mode", "_epoch", "_done", "_engine", "_engines", "_cfg",
                 "_target", "_trial", "_win", "_samples", "_clock", "_cores", "_budget",
                 "_signature", "_rate", "_cands", "_next_trial", "_repeats", "_last_choice",
                 "_switches", "_trials", "_restored", "_restored_end", "_gil", "_why",
                 "_mon_at", "_remembered", "_stretch", "_quiet_until")
    kind = "map"

    def __init__(self, node, up: NodeIterator, src, ctx, budget: int | None = None) -> None:
        super().__init__(node, up, src, ctx)
        self._s = Sampler()
        self._mode = 0  # 0: inline with sampled timing; 1: managed (trial, workers)
        self._epoch = 0  # bumped by set_state: stale fast-path generators stop
        self._done = [True]
        self._engine = None  # the running ParallelMapIterator (None: inline)
        self._engines: dict = {}  # Config -> engine kept during a trial
        self._cfg = INLINE_CONFIG
        self._target = None  # the configuration to run once the engine has drained
        self._trial = None
        self._win = [0, 0.0]  # inline trial window: elements, time of the first
        self._samples: deque = deque(maxlen=9)  # (cost, up, gap, cpu) per element
        self._clock = _InputClock()
        self._cores = _par.default_parallelism()
        self._budget = budget
        self._signature = None  # the measure at the last decision
        self._rate = None  # elements/s of the kept configuration in its trial
        self._cands: list = []
        self._next_trial = 0.0
        self._repeats = 0
        self._last_choice = None
        self._switches: list = []
        self._trials: list = []
        self._restored: deque = deque()  # outcomes from a restored state's buffer
        self._restored_end = False
        self._gil = None
        self._why = ""
        self._mon_at = 0
        self._remembered = False
        self._stretch: list = []  # the references behind the untimed stretch under way
        self._quiet_until = 0.0  # settled inline: no check of the timed calls before this
        memory = getattr(node, "tuned", None)
        if memory is not None:
            self._recall(memory)

    def _recall(self, memory: dict) -> None:
        """Start with what an earlier pass decided (an unfinished trial of an earlier
        pass is taken up by ``_start_trial``)."""
        if memory["config"] is None:
            return
        self._signature = memory["measure"]
        self._cands = list(memory["candidates"])
        self._gil = memory["gil"]
        self._remembered = True
        self._trials.append(dict(memory["trial"], element=None))  # (in an earlier pass)
        cfg = self._allowed(memory["config"])
        self._rate = memory["rate"]
        self._next_trial = perf_counter() + RETRY_AFTER
        if cfg is not None and cfg.kind != INLINE:
            self._mode = 1
            self._why = "remembered from an earlier pass"
            self._target = cfg

    def _allowed(self, cfg) -> Config | None:
        """``cfg`` (a Config or [kind, workers]) if this map may run it, else None."""
        try:
            cfg = Config(str(cfg[0]), int(cfg[1]))
        except (TypeError, ValueError, IndexError):
            return None
        if cfg.kind == INLINE:
            return INLINE_CONFIG
        if cfg.kind not in (THREADS, PROCESSES) or not 1 <= cfg.workers <= MAX_THREADS:
            return None
        if cfg.kind == PROCESSES and not self._node.use_processes:
            return None
        return cfg

    # ---- inline: the serial map's paths, a sparse sample of calls timed ---------------
    def __next__(self):
        if self._mode:
            return self._managed_next()
        s = self._s
        n = s.calls + 1
        s.calls = n
        if n > WARMUP and n & s.every:
            return self._serial_next()
        return self._timed(n, self._serial_next)

    def next_list(self, n: int) -> list:
        if self._mode:
            return NodeIterator.next_list(self, n)
        s = self._s
        k = s.calls + 1
        s.calls = k
        if k > WARMUP and k & s.every:
            return MapIterator.next_list(self, n)
        return self._timed(k, MapIterator.next_list, n)

    def fast_iter(self):
        if self._mode:
            self._done = [False]
            return self._managed_run(self._epoch, self._done)
        self._done = [False]
        epoch = self._epoch

        def active():
            return not self._mode and self._epoch == epoch
        gen = MapIterator.fast_iter(self)
        if gen is self:
            # Untimed stretches call the serial __next__ from C (map over a list of k
            # references to self); set_state empties the list, so a stretch under way
            # stops there rather than going past a restored buffer.
            def stretch(k):
                self._stretch = [self] * k
                return map(MapIterator.__next__, self._stretch)
            pull = self._serial_next
        else:  # the fused batch-first loop (set_state closes it)
            base = itertools.chain.from_iterable(self._fused_runs(gen, active))

            def stretch(k):
                return itertools.islice(base, k)
            pull = base.__next__
        return itertools.chain.from_iterable(self._s.runs(stretch, pull, self._timed, active,
                                                          self._done))

    def fast_resumable(self) -> bool:
        return not self._done[0]

    def _fused_runs(self, gen, active):
        """The fused batch-first generator, and a new one while the last stopped early
        (after an error, not a switch or a state change); the serial calls when none
        can be made any more."""
        while True:
            yield gen
            if not active() or not MapIterator.fast_resumable(self):
                return
            gen = MapIterator.fast_iter(self)
            if gen is self:
                yield iter(self._serial_next, _END)
                return

    def _timed(self, k: int, pull, n=None):
        """Call ``pull`` (``pull(self, n)`` for a list) timing it, the input pulls it
        makes and, when the function is not cheap, its thread CPU time."""
        clock = self._clock
        clock.next, clock.list, clock.spent = self._upnext, self._uplist, 0.0
        self._upnext, self._uplist = clock.pull, clock.pull_list
        samples = self._samples
        want_cpu = len(samples) < 2 or samples[-1][0] >= TRY_ABOVE / 2
        c0 = thread_time() if want_cpu else 0.0
        t0 = perf_counter()
        try:
            value = pull() if n is None else pull(self, n)
        finally:
            t1 = perf_counter()
            cpu = thread_time() - c0 if want_cpu else None
            if self._upnext == clock.pull:  # (else an error's carry-over replaced it)
                self._upnext = clock.next
            if self._uplist == clock.pull_list:
                self._uplist = clock.list
            clock.next = clock.list = None
        units = 1 if n is None else len(value)
        if units:
            self._s.record(k, t0, t1)
            gap = self._s.last_gap
            up = clock.spent
            samples.append(((t1 - t0 - up) / units, up / units,
                            None if gap is None else gap / units,
                            None if cpu is None else cpu / units))
            if k >= WARMUP and t1 >= self._quiet_until:
                self._consider()
        return value

    def _measure(self) -> Measure:
        samples = self._samples
        if not samples:
            return self._signature or Measure(0.0)
        costs, ups, gaps, cpus = zip(*samples)
        cpus = [c for c in cpus if c is not None]
        return Measure(median(costs), median(ups), median([g for g in gaps if g is not None]),
                       median(cpus) if cpus else None)

    def _settle(self) -> None:
        """Nothing to act on: time fewer calls, and once at the sparsest, check them
        against the decision at most every ``QUIET`` seconds."""
        s = self._s
        s.widen()
        if s.every >= EVERY_MAX:
            self._quiet_until = perf_counter() + QUIET

    def _consider(self) -> None:
        s = self._s
        m = self._measure()
        sig = self._signature
        if sig is not None and not changed(m, sig):
            self._settle()  # as decided before: nothing to do
            return
        cands = candidates(m, self._cores, self._node.use_processes, self._budget)
        if not cands:
            if m.cost < TRY_ABOVE / 4 and self._samples[-1][0] < TRY_ABOVE / 4:
                self._settle()
            else:
                s.narrow()
            return
        s.narrow()
        if perf_counter() >= self._next_trial:
            self._why = "measured inline" if sig is None else "inline times changed"
            self._start_trial(cands, m)

    # ---- managed: trials, worker pools, switching ---------------------------------------
    def _start_trial(self, cands: list, m: Measure) -> None:
        unit = max(m.up + m.cost + m.gap, 1e-7)
        window = min(MAX_WINDOW, max(MIN_WINDOW, math.ceil(WINDOW / unit)))
        configs = list(cands) + [INLINE_CONFIG]
        self._trial = _Trial(configs, window, m, self._position(), self._why)
        memory = self._node.tuned
        if (memory is not None and memory["config"] is None and memory["rates"]
                and list(memory["rates"]) == configs and not changed(m, memory["measure"])):
            # an earlier pass ended during this trial: its complete rounds count
            rounds = min(len(v) for v in memory["rates"].values())
            self._trial.rates = {c: list(v[:rounds]) for c, v in memory["rates"].items()}
            self._remembered = True
        if not self._mode:
            if self._gen is not None:
                self._stop_gen()  # the fused loop's positions go back to the iterators
            self._mode = 1
        self._switch(configs[0])

    def _managed_run(self, epoch: int, done: list):
        while self._mode and self._epoch == epoch:
            try:
                value = self._managed_next()
            except StopIteration:
                done[0] = True
                return
            yield value

    def _managed_next(self):
        if self._restored:
            ok, value = self._restored.popleft()
            if not ok:
                try:
                    raise value
                finally:
                    value = None  # no cycle through the traceback
            return value
        if self._restored_end:
            raise StopIteration
        while True:
            if self._target is not None:
                eng = self._engine
                if eng is not None and not eng.drained():
                    return eng.__next__()  # deliver what it holds first
                if eng is not None:
                    self._retire()
                self._activate(self._target)
                if not self._mode:  # decided inline
                    return self.__next__()
                continue
            eng = self._engine
            if eng is None:
                return self._inline_window()
            if self._check(eng):
                continue
            return eng.__next__()

    def _inline_window(self):
        win = self._win
        win[0] += 1
        try:
            return self._serial_next()
        finally:
            t = perf_counter()
            if win[0] == 1:
                win[1] = t
            elif self._trial is not None and win[0] >= self._trial.window:
                self._window_done((win[0] - 1) / max(t - win[1], 1e-9))

    def _check(self, eng) -> bool:
        """Close a trial window, or watch the running configuration's rate; True when
        a switch started."""
        log = eng.log
        trial = self._trial
        if len(log) < MIN_ARRIVALS:
            if trial is not None and eng.budget is not None and eng.budget <= 0:
                eng.budget += trial.window  # (a few big chunks: more arrivals needed)
            return False
        t0, n0 = log[0]
        t1, n1 = log[-1]
        if t1 <= t0:
            return False
        rate = (n1 - n0) / (t1 - t0)
        if trial is not None:
            if eng.taken - n0 < trial.window:
                return False
            self._window_done(rate)
            return self._target is not None
        # steady: every _MONITOR arrivals, compare with the rate it was chosen for
        if len(log) < _MONITOR or eng.taken - self._mon_at < _MONITOR * eng._chunk:
            return False
        self._mon_at = eng.taken
        ref = self._rate
        if ref is None:  # started from a restored state: this is the reference
            self._rate = rate
        elif (rate * CHANGED <= ref or rate >= CHANGED * ref) \
                and perf_counter() >= self._next_trial:
            self._why = f"rate moved from {ref:.0f} to {rate:.0f} elements/s"
            self._start_trial(self._cands or [self._cfg],
                              self._signature or Measure(eng._cost or 0.0))
            return self._target is not None
        return False

    def _window_done(self, rate: float) -> None:
        t = self._trial
        t.rates.setdefault(self._cfg, []).append(rate)
        t.index += 1
        if t.index == len(t.configs):
            t.index = 0
            choice = pick(t.rates)
            if choice is not None:
                self._finish_trial(choice)
                return
            # remembered, so that the next pass goes on with it if this one ends first
            self._node.tuned = {"config": None, "measure": t.measure, "rate": None,
                                "candidates": tuple(t.configs[:-1]), "gil": self._gil,
                                "rates": {c: list(v) for c, v in t.rates.items()}}
        self._why = "trial window"
        self._switch(t.configs[t.index])

    def _finish_trial(self, choice: Config) -> None:
        t = self._trial
        self._trial = None
        now = perf_counter()
        inline = t.rates.get(INLINE_CONFIG)
        for cfg, rates in t.rates.items():
            if cfg.kind == THREADS and inline:
                speedup = statistics.median(rates) / statistics.median(inline)
                self._gil = gil_fraction(speedup, cfg.workers)
        self._signature = t.measure
        self._rate = statistics.median(t.rates[choice])
        self._cands = [c for c in t.configs if c.kind != INLINE]
        self._repeats = self._repeats + 1 if choice == self._last_choice else 0
        self._last_choice = choice
        self._next_trial = now + max(RETRY_AFTER, SPACING * (now - t.started)) * 2 ** min(
            self._repeats, 6)
        record = {"element": t.element, "seconds": now - t.started, "why": t.why,
                  "choice": str(choice), "elements_per_s": {
                      str(c): [round(r, 1) for r in v] for c, v in t.rates.items()}}
        self._trials.append(record)
        del self._trials[:-_LOG_MAX]
        self._node.tuned = {"config": choice, "measure": t.measure, "rate": self._rate,
                            "candidates": tuple(self._cands), "gil": self._gil, "rates": None,
                            "trial": record}
        self._why = "chosen by the trial"
        self._switch(choice)

    def _switch(self, cfg: Config) -> None:
        if self._restored:  # a restored buffer is delivered first, then cfg runs
            self._target = cfg
            return
        if cfg == self._cfg:
            self._activate(cfg)  # (a window of the running configuration starts anew)
            return
        self._target = cfg
        if self._engine is not None:
            self._engine.draining = True  # it delivers what it holds, then cfg runs

    def _activate(self, cfg: Config) -> None:
        self._target = None
        running = self._engine if cfg == self._cfg else None
        if cfg != self._cfg or not self._switches:
            self._switches.append({"element": self._position(), "to": str(cfg),
                                   "why": self._why})
            del self._switches[:-_LOG_MAX]
        self._cfg = cfg
        if self._trial is None:  # decided: stop the pools of the other configurations
            for other in [c for c in self._engines if c != cfg]:
                self._engines.pop(other).stop(wait=True)
        if cfg.kind == INLINE:
            self._engine = None
            if self._trial is None:
                self._mode = 0  # back to the serial map's paths, sampled
                self._s.restart()
                self._quiet_until = 0.0
            else:
                self._win[0] = 0
            return
        eng = running
        if eng is None:
            eng = self._engines.get(cfg)
            if eng is None:
                cost = self._measure().cost or None
                eng = ParallelMapIterator(self._node, self._up, self._src, self._ctx,
                                          workers=cfg.workers, processes=cfg.kind == PROCESSES,
                                          owns_input=False, cost=cost)
                self._engines[cfg] = eng
            carry = self._carry
            eng.resume(self._count, self._src,
                       carry if carry is not None and carry.items else self._up)
            self._engine = eng
        trial = self._trial
        eng.log = [] if trial is not None else deque(maxlen=_MONITOR)
        # A trial window submits what it measures and enough to keep the workers busy
        # meanwhile; more would have to drain through this configuration afterwards.
        eng.budget = None if trial is None else trial.window + max(
            trial.window // 2, cfg.workers * eng._chunk)
        self._mon_at = eng.taken

    def _retire(self) -> None:
        """The running engine delivered everything: the position comes back here."""
        eng = self._engine
        self._count = eng._count
        self._engine = None
        if self._carry is not None and not self._carry.items:
            self._drop_carry()

    def _position(self) -> int:
        eng = self._engine
        return eng._count if eng is not None else self._count

    def run_with(self, kind: str, workers: int = 0) -> None:
        """Switch to a configuration now, as a trial's decision would: a running pool
        first delivers what it holds. Measuring goes on from there. For tests and
        experiments (``it._it.run_with("threads", 2)`` on a top-level map).

        Args:
            kind: "inline", "threads" or "processes".
            workers: the worker count (ignored for inline).

        Raises:
            ValueError: an unknown kind, a worker count outside 1..MAX_THREADS, or
                processes for a map without ``use_processes=True``.
        """
        cfg = self._allowed((kind, workers))
        if cfg is None:
            raise ValueError(f"Dataset.map: cannot run {kind!r} with {workers!r} workers "
                             f"(kinds: inline, threads, processes (with use_processes=True); "
                             f"workers 1..{MAX_THREADS})")
        if not self._mode:
            if self._gen is not None:
                self._stop_gen()
            self._mode = 1
        self._trial = None
        self._why = "run_with"
        self._switch(cfg)

    # ---- report, state, close -----------------------------------------------------------
    def tuning_report(self) -> dict:
        """What this map chose and why (see ``Iterator.autotune_report``)."""
        m = self._measure()
        f = m.cpu_fraction
        report = {"stage": "map", "function": fn_name(self._fn),
                "choice": str(self._target or self._cfg),
                "kind": (self._target or self._cfg).kind,
                "workers": (self._target or self._cfg).workers,
                "deciding": self._trial is not None,
                "function_us": m.cost * 1e6, "input_us": m.up * 1e6,
                "consumer_us": m.gap * 1e6,
                "cpu_fraction": None if f is None else round(f, 3),
                "gil_fraction": None if self._gil is None else round(self._gil, 3),
                "processes_allowed": self._node.use_processes,
                "remembered": self._remembered,
                "trials": list(self._trials), "switches": list(self._switches)}
        if self._trial is not None:
            report["trial_so_far"] = {str(c): [round(r, 1) for r in v]
                                      for c, v in self._trial.rates.items()}
        return report

    def get_state(self) -> dict:
        state = MapIterator.get_state(self)  # (a fused loop under way is synced first)
        buf = [{"ok": _st.encode(v)} if ok else _st.encode_error(v)
               for ok, v in self._restored]
        eng = self._engine
        exhausted = self._restored_end
        if eng is not None:
            buf += eng.buffered()
            exhausted = eng._exhausted
        cfg = self._target or self._cfg
        state.update(count=self._position(), exhausted=exhausted, buffer=buf,
                     autotune=[cfg.kind, cfg.workers])
        return state

    def set_state(self, state: dict) -> None:
        self._check_state(state)
        self._stretch.clear()
        self._stop_engines()
        self._trial = None
        self._target = None
        MapIterator.set_state(self, state)
        self._restored = deque(decode_outcomes(state.get("buffer", [])))
        self._restored_end = bool(state.get("exhausted", False))
        self._epoch += 1
        self._s.restart()
        self._quiet_until = 0.0
        self._cfg = INLINE_CONFIG
        start = self._allowed(state.get("autotune", INLINE_CONFIG))
        if start is not None and start.kind != INLINE:
            self._why = "restored from the iterator state"
            self._target = start
        elif self._restored:
            self._target = INLINE_CONFIG  # once the restored outcomes are delivered
        self._mode = 1 if self._target is not None or self._restored or self._restored_end \
            else 0

    def _stop_engines(self) -> None:
        for eng in self._engines.values():
            eng.stop(wait=True)
        self._engines.clear()
        self._engine = None

    def close(self) -> None:
        self._stop_engines()
        self._mode = 1
        self._restored_end = True  # closed: no more elements
        MapIterator.close(self)


_END = object()  # a sentinel no map function returns
