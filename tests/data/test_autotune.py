"""AUTOTUNE: the decision functions on given measurements, and the autotuned map and
prefetch end to end (order, content, state and clean-up across configuration switches).

No test asserts a speed: end-to-end decisions run on injected figures (the inline
measure and the elements/s of each trial window), so they hold on a loaded machine; the
one test on real clocks checks only what load cannot change (a sleep's wall and CPU
time).
"""
from __future__ import annotations

import multiprocessing
import threading
import time

import numpy as np
import pytest

import layerkit.data as lkd
from layerkit.data import Dataset
from layerkit.data import tuning as tn
from layerkit.data.map_autotune import AutoMapIterator
from layerkit.data.map_parallel import ParallelMapIterator
from layerkit.data.parallel import default_parallelism
from layerkit.data.tuning import INLINE_CONFIG, Config, Measure

from .data_test_util import assert_save_restore, settle_threads, values, wait_for_threads

pytestmark = pytest.mark.timeout(120)
A = lkd.AUTOTUNE
T2, P2 = Config("threads", 2), Config("processes", 2)


@pytest.fixture(autouse=True)
def _settled_threads():
    settle_threads()
    yield


def _root(it) -> AutoMapIterator:
    root = it._it
    assert isinstance(root, AutoMapIterator)
    return root


# ---- the decision, on given measurements ---------------------------------------------------
def test_cheap_functions_are_never_tried_in_parallel():
    # 5 us per element: below TRY_ABOVE whatever the consumer does
    for gap in (0.0, 1e-6, 1e-3):
        assert tn.candidates(Measure(5e-6, 1e-6, gap, 5e-6), 2, True) == []


def test_a_slow_consumer_leaves_an_expensive_function_inline():
    # 200 us of function, 5 ms of consumer per element: at best (5.2/5.0) = 4% faster
    m = Measure(200e-6, 1e-6, 5e-3, 200e-6)
    assert tn.modelled_speedup(m, T2, 2) == pytest.approx((201e-6 + 5e-3) / (5e-3 + 3e-6))
    assert tn.candidates(m, 2, True) == []


def test_a_computing_function_tries_one_worker_per_core_and_processes_when_allowed():
    m = Measure(200e-6, 1e-6, 1e-6, 195e-6)  # CPU fraction ~0.97
    assert tn.candidates(m, 2, False) == [T2]
    assert tn.candidates(m, 2, True) == [P2, T2]
    assert tn.candidates(m, 4, True) == [Config("processes", 4), Config("threads", 4)]
    # cpu_budget caps the workers; one worker cannot gain 1.25x with a fast consumer? it
    # can overlap nothing here (gap ~0), so nothing is tried
    assert tn.candidates(m, 2, True, budget=1) == []


def test_a_waiting_function_tries_more_threads_than_cores():
    m = Measure(2e-3, 1e-6, 10e-6, 40e-6)  # sleeps: CPU fraction 0.02
    (threads,) = tn.candidates(m, 2, False)
    # as many as keep the consumer fed (2 ms / 13 us), at most budget / CPU fraction
    # and MAX_THREADS
    assert threads == Config("threads", tn.MAX_THREADS)
    slower_consumer = Measure(2e-3, 1e-6, 400e-6, 40e-6)
    assert tn.candidates(slower_consumer, 2, False) == [Config("threads", 5)]  # ceil(2000/403)
    assert tn.candidates(Measure(2e-3, 0.0, 10e-6, 0.4e-3), 2, False) == [
        Config("threads", 10)]  # CPU fraction 0.2: 2 cores / 0.2
    # without CPU times the function counts as computing
    assert tn.candidates(Measure(2e-3, 0.0, 10e-6, None), 2, False) == [T2]


def test_pick_decides_early_only_on_clear_margins():
    assert tn.pick({T2: [], INLINE_CONFIG: []}) is None
    # one round: 1.5x over every other configuration decides
    assert tn.pick({P2: [1700.0], T2: [900.0], INLINE_CONFIG: [1000.0]}) == P2
    assert tn.pick({P2: [1400.0], T2: [900.0], INLINE_CONFIG: [1000.0]}) is None
    assert tn.pick({T2: [400.0], INLINE_CONFIG: [1000.0]}) == INLINE_CONFIG
    # two rounds: 1.15x in every window
    assert tn.pick({P2: [1400.0, 1300.0], INLINE_CONFIG: [1000.0, 1100.0]}) == P2
    assert tn.pick({P2: [1400.0, 1100.0], INLINE_CONFIG: [1000.0, 1000.0]}) is None
    # three rounds: medians; within 5% of the fastest the cheapest wins
    assert tn.pick({P2: [1040.0, 1030.0, 900.0], T2: [1000.0, 1010.0, 1020.0],
                    INLINE_CONFIG: [995.0, 1000.0, 1005.0]}) == INLINE_CONFIG
    assert tn.pick({P2: [1050.0, 1200.0, 900.0], T2: [1000.0, 1010.0, 1020.0],
                    INLINE_CONFIG: [800.0, 1000.0, 700.0]}) == T2
    assert tn.pick({P2: [1300.0, 1200.0, 1250.0], T2: [1000.0, 1010.0, 1020.0],
                    INLINE_CONFIG: [800.0, 1000.0, 700.0]}) == P2


def test_gil_fraction_is_amdahls_serial_part():
    assert tn.gil_fraction(1.0, 2) == 1.0  # no gain: all of it one thread at a time
    assert tn.gil_fraction(2.0, 2) == 0.0
    assert tn.gil_fraction(1.5, 2) == pytest.approx(1 / 3)  # 1 / (h + (1 - h) / 2) = 1.5
    assert tn.gil_fraction(0.7, 2) == 1.0  # slower than inline: clamped
    assert tn.gil_fraction(1.5, 1) is None


def test_changed_ignores_noise_and_tiny_times():
    ref = Measure(200e-6, 1e-6, 10e-6)
    assert not tn.changed(Measure(300e-6, 1e-6, 12e-6), ref)
    assert tn.changed(Measure(450e-6, 1e-6, 10e-6), ref)
    assert tn.changed(Measure(200e-6, 1e-6, 5e-3), ref)  # the consumer slowed down
    assert not tn.changed(Measure(1e-6, 0.0, 1e-6), Measure(4e-6, 0.0, 3e-6))  # all cheap


def test_sampler_times_a_sparse_sample_and_estimates_the_gap():
    s = tn.Sampler()
    timed = [n for n in range(1, 200) if not s.untimed(n)]
    assert timed[:tn.WARMUP] == list(range(1, tn.WARMUP + 1))
    assert all(n % (tn.EVERY + 1) == 0 for n in timed[tn.WARMUP:])
    # calls of 1 s, 16 calls apart, 3 s of consumer time between calls
    t = 0.0
    for n in (16, 32, 48, 64):
        s.record(n, t, t + 1.0)
        t += 1.0 + 3.0 + 15 * (1.0 + 3.0)
    assert s.last_gap == pytest.approx(3.0)
    s.widen()
    assert s.every == 2 * tn.EVERY + 1


# ---- decisions end to end, on injected figures ------------------------------------------------
# The machinery runs for real (sampling, trial windows on the running pipeline, switches,
# worker pools, the memory across passes); only the figures it decides on are given: the
# inline measure and the elements/s each trial window found. So no decision here depends
# on the machine's speed or load.
CHEAP = Measure(3e-6, 1e-6, 1e-6, 3e-6)
WAITS = Measure(2e-3, 1e-6, 400e-6, 40e-6)  # sleeps: threads, ceil(2000 / 403) = 5 of them
COMPUTES = Measure(300e-6, 1e-6, 2e-6, 295e-6)  # computes: one worker per core


@pytest.fixture()
def figures(monkeypatch):
    """``figures["measure"]`` (a Measure, or a function of the map iterator) replaces the
    inline measure; ``figures["rates"][kind]`` the elements/s a window of that kind of
    configuration measured. ``figures["windows"]`` lists the windows run."""
    from layerkit.data import map_autotune
    from layerkit.data import parallel as par
    fig = {"measure": None, "rates": {}, "windows": []}

    def measure(self):
        m = fig["measure"]
        return m(self) if callable(m) else m

    window_done = AutoMapIterator._window_done

    def injected_window_done(self, rate):
        fig["windows"].append(str(self._cfg))
        window_done(self, fig["rates"][self._cfg.kind])

    monkeypatch.setattr(AutoMapIterator, "_measure", measure)
    monkeypatch.setattr(AutoMapIterator, "_window_done", injected_window_done)
    monkeypatch.setattr(map_autotune, "CHANGED", float("inf"))  # no re-trial on the live rate
    monkeypatch.setattr(par, "default_parallelism", lambda: 2)
    return fig


def _two_passes(n, seed=5):
    """The serial map's first and second pass (element_rng draws differ per pass)."""
    ds = Dataset.range(n).map(_noisy, seed=seed)
    return values(ds), values(ds)


def test_a_cheap_function_stays_inline_without_any_worker(figures):
    figures["measure"] = CHEAP  # (no rates: a trial window would fail the test)
    before = threading.active_count()
    it = iter(Dataset.range(3000).map(_noisy, num_parallel_calls=A, seed=5))
    assert [int(v) for v in it] == _expected(3000)
    (report,) = it.autotune_report()
    assert report["choice"] == "inline" and report["trials"] == [] and report["switches"] == []
    assert figures["windows"] == []
    assert threading.active_count() == before
    assert _root(it)._engines == {}


def test_a_waiting_function_goes_to_threads_and_the_next_pass_starts_there(figures):
    figures["measure"] = WAITS
    figures["rates"] = {"threads": 3000.0, "inline": 480.0}  # 6.25x: one round decides
    n = 600
    ds = Dataset.range(n).map(_noisy, num_parallel_calls=A, seed=5)
    first, second = _two_passes(n)
    it = iter(ds)
    assert [int(v) for v in it] == first
    (report,) = it.autotune_report()
    assert report["choice"] == "5 threads", report
    assert figures["windows"] == ["5 threads", "inline"]
    (trial,) = report["trials"]
    assert trial["element"] == tn.WARMUP and trial["why"] == "measured inline"
    assert trial["elements_per_s"] == {"5 threads": [3000.0], "inline": [480.0]}
    assert report["gil_fraction"] == tn.gil_fraction(3000.0 / 480.0, 5) == 0.0
    assert [s["to"] for s in report["switches"]] == ["5 threads", "inline", "5 threads"]
    it.close()
    it2 = iter(ds)  # a new pass starts with the decision, without a trial
    assert [int(v) for v in it2] == second
    report2 = it2.autotune_report()[0]
    assert report2["remembered"] and report2["choice"] == "5 threads"
    assert report2["switches"][0] == {"element": 0, "to": "5 threads",
                                      "why": "remembered from an earlier pass"}
    assert report2["trials"] == [dict(trial, element=None)]  # the earlier pass's trial
    assert figures["windows"] == ["5 threads", "inline"]
    it2.close()


def test_a_gil_holding_function_goes_to_processes_only_where_allowed(figures):
    figures["measure"] = COMPUTES
    # threads gain nothing (the GIL), two processes nearly 2x
    figures["rates"] = {"processes": 1800.0, "threads": 950.0, "inline": 1000.0}
    n = 3000
    it = iter(Dataset.range(n).map(_noisy, num_parallel_calls=A, use_processes=True, seed=5))
    assert [int(v) for v in it] == _expected(n)
    (report,) = it.autotune_report()
    assert report["choice"] == "2 processes", report
    assert figures["windows"] == ["2 processes", "2 threads", "inline"]  # one round: 1.8x
    assert report["gil_fraction"] == 1.0  # 2 threads at 0.95x inline: Amdahl's serial part
    it.close()
    assert multiprocessing.active_children() == []
    # not allowed: threads and inline are tried; within 5% after three rounds, the
    # cheaper inline is kept and the threads stop
    figures["windows"].clear()
    baseline = threading.active_count()
    it = iter(Dataset.range(n).map(_noisy, num_parallel_calls=A, seed=5))
    assert [int(v) for v in it] == _expected(n)
    report = it.autotune_report()[0]
    assert report["choice"] == "inline", report
    assert figures["windows"] == ["2 threads", "inline"] * tn.ROUNDS
    assert _root(it)._engines == {}
    assert wait_for_threads(baseline) == baseline
    assert multiprocessing.active_children() == []


def test_a_function_that_turns_slow_mid_pass_is_moved_to_threads(figures):
    figures["measure"] = lambda self: CHEAP if self._position() < 100 else WAITS
    figures["rates"] = {"threads": 3000.0, "inline": 480.0}
    it = iter(Dataset.range(700).map(_noisy, num_parallel_calls=A, seed=5))
    assert [int(v) for v in it] == _expected(700)
    report = it.autotune_report()[0]
    assert report["choice"] == "5 threads", report
    assert report["switches"][0]["element"] >= 100  # nothing tried in the cheap phase
    it.close()


def test_a_rate_that_moves_is_decided_again(figures, monkeypatch):
    from layerkit.data import map_autotune
    monkeypatch.setattr(map_autotune, "CHANGED", 2.0)
    monkeypatch.setattr(map_autotune, "RETRY_AFTER", 0.0)
    monkeypatch.setattr(map_autotune, "SPACING", 0.0)  # trials as often as the rate moves
    figures["measure"] = WAITS
    # the trial "saw" 1e9 elements/s with threads: any real rate is far below
    figures["rates"] = {"threads": 1e9, "inline": 480.0}
    it = iter(Dataset.range(3000).map(_noisy, num_parallel_calls=A, seed=5))
    assert [int(v) for v in it] == _expected(3000)
    trials = it.autotune_report()[0]["trials"]
    assert len(trials) >= 2 and trials[1]["why"].startswith("rate moved from 1000000000 to")
    assert all(t["choice"] == "5 threads" for t in trials)
    it.close()


def test_a_settled_inline_map_checks_its_samples_rarely_and_still_redecides(figures,
                                                                           monkeypatch):
    # A fake clock: 1 us per reading, and 5 us per call of the function (no real time is
    # measured). Once a cheap map is settled inline (one call in EVERY_MAX + 1 timed),
    # its timed calls are checked against the decision at most every QUIET seconds; a
    # cost that grows is still caught and moved to threads.
    from layerkit.data import map_autotune
    now = [0.0]

    def clock():
        now[0] += 1e-6
        return now[0]

    def fn(x):
        now[0] += 5e-6
        return _noisy(x)
    monkeypatch.setattr(map_autotune, "perf_counter", clock)
    turn = 30_000
    figures["measure"] = lambda self: CHEAP if self._position() < turn else WAITS
    figures["rates"] = {"threads": 3000.0, "inline": 480.0}
    timed, checked = [], []
    real_timed, real_consider = AutoMapIterator._timed, AutoMapIterator._consider

    def counting_timed(self, k, pull, n=None):
        timed.append(self._position())
        return real_timed(self, k, pull, n)

    def counting_consider(self):
        checked.append(self._position())
        return real_consider(self)
    monkeypatch.setattr(AutoMapIterator, "_timed", counting_timed)
    monkeypatch.setattr(AutoMapIterator, "_consider", counting_consider)
    n = 60_000
    it = iter(Dataset.range(n).map(fn, num_parallel_calls=A, seed=5))
    assert [int(v) for v in it] == _expected(n)
    settled = [p for p in timed if 10_000 <= p < turn]
    assert len(settled) >= (turn - 10_000) // (tn.EVERY_MAX + 1) - 1  # still sampled
    checks = [p for p in checked if 10_000 <= p < turn]
    # ~5 ms of the fake clock between timed calls: a check in about every tenth
    assert len(checks) >= 1 and len(checks) <= len(settled) // 4, (len(checks), len(settled))
    report = it.autotune_report()[0]
    assert report["choice"] == "5 threads", report
    switch = report["switches"][0]["element"]
    assert turn <= switch <= turn + 16 * (tn.EVERY_MAX + 1), switch
    it.close()


def _sleep_2ms(x):
    time.sleep(0.002)
    return x * 2


def test_a_sleeping_function_is_measured_as_waiting():
    # real clocks; only what load cannot undo: a 2 ms sleep takes at least 2 ms of wall
    # time and next to no CPU time
    it = iter(Dataset.range(40).map(_sleep_2ms, num_parallel_calls=A))
    assert [int(v) for v in it] == [2 * i for i in range(40)]
    report = it.autotune_report()[0]
    assert report["function_us"] >= 2000 and report["cpu_fraction"] < tn.WAITING_BELOW
    assert report["switches"][0]["why"] == "measured inline"
    assert report["switches"][0]["to"].endswith("threads")
    it.close()


def test_disabled_autotune_runs_one_thread_per_core():
    opts = lkd.Options()
    opts.autotune.enabled = False
    ds = Dataset.range(50).map(_sleep_2ms, num_parallel_calls=A).with_options(opts)
    it = iter(ds)
    assert [int(v) for v in it] == [2 * i for i in range(50)]
    assert it.autotune_report() == []  # the fixed thread-per-core map ran
    assert isinstance(it._it, ParallelMapIterator) and it._it.workers == default_parallelism()


# ---- switching: order, content, state, clean-up ---------------------------------------------
@pytest.fixture()
def no_trials(monkeypatch):
    """Only the test switches configurations (on a loaded machine even a cheap function
    can look slow enough for a trial)."""
    from layerkit.data import map_autotune
    monkeypatch.setattr(tn, "TRY_ABOVE", float("inf"))
    monkeypatch.setattr(map_autotune, "CHANGED", float("inf"))


def _noisy(x):
    return x * 1000 + int(lkd.element_rng().integers(0, 1000))


def _expected(n, seed=5):
    return values(Dataset.range(n).map(_noisy, seed=seed))


def _switching_pass(it, plan):
    """Iterate, switching configurations at the given element counts."""
    got = []
    root = _root(it)
    for i, e in enumerate(it):
        got.append(int(e))
        if i in plan:
            root.run_with(*plan[i])
    return got


@pytest.mark.parametrize("deterministic", [True, False])
def test_forced_switches_keep_order_content_and_element_rng(deterministic, no_trials):
    # A pool delivers what it holds (up to 256 elements) before the next configuration
    # runs: the later requests of 800-802 replace the earlier ones.
    n = 2000
    ds = Dataset.range(n).map(_noisy, num_parallel_calls=A, use_processes=True, seed=5,
                              deterministic=deterministic)
    plan = {10: ("threads", 2), 400: ("processes", 2), 800: ("threads", 3), 801: ("inline",),
            802: ("processes", 1), 1200: ("inline",), 1600: ("threads", 2)}
    it = iter(ds)
    got = _switching_pass(it, plan)
    expected = _expected(n)
    assert (got if deterministic else sorted(got)) == expected
    kinds = iter(s["to"] for s in it.autotune_report()[0]["switches"])
    assert all(k in kinds for k in ["2 threads", "2 processes", "1 process", "inline",
                                    "2 threads"])  # in this order
    it.close()
    assert multiprocessing.active_children() == []


def test_switches_inside_the_fused_batch_first_loop_and_next_list():
    x = np.arange(2000, dtype=np.float32).reshape(1000, 2)
    y = np.arange(1000)
    f = lambda a, b: (a * 2 + 1, b)  # noqa: E731
    serial = values(Dataset.from_tensor_slices((x, y)).batch(8).map(f))
    ds = Dataset.from_tensor_slices((x, y)).batch(8).map(f, num_parallel_calls=A)
    it = iter(ds)
    root = _root(it)
    got = []
    for i, e in enumerate(it):
        got.append(values([e])[0])
        if i == 20:
            assert root._gen is not None  # the fused loop was running
            root.run_with("threads", 2)
        if i == 60:
            root.run_with("inline")
    assert got == serial
    # per element under batch (next_list), switching in between
    serial = values(Dataset.range(300).map(_noisy, seed=5).batch(7))
    it = iter(Dataset.range(300).map(_noisy, num_parallel_calls=A, seed=5).batch(7))
    maps = [s for s in _walk(it._it) if isinstance(s, AutoMapIterator)]
    got = []
    for i, e in enumerate(it):
        got.append(values([e])[0])
        if i == 5:
            maps[0].run_with("threads", 2)
        if i == 20:
            maps[0].run_with("inline")
    assert got == serial


def _walk(it):
    out = [it]
    for sub in it._inputs():
        out += _walk(sub)
    return out


def test_run_with_refuses_what_the_map_may_not_run():
    it = iter(Dataset.range(5).map(lambda x: x, num_parallel_calls=A))
    with pytest.raises(ValueError, match="processes"):
        _root(it).run_with("processes", 2)
    with pytest.raises(ValueError, match="workers"):
        _root(it).run_with("threads", 0)
    it.close()


@pytest.mark.parametrize("config", [("inline",), ("threads", 2), ("processes", 2)])
def test_state_save_restore_in_each_configuration(config, no_trials):
    n = 60

    def build():
        return Dataset.range(n).map(_noisy, num_parallel_calls=A, use_processes=True, seed=5)

    expected = _expected(n)
    for k in (0, 7, 31, 59, 60):
        it = iter(build())  # (a new Dataset: the first pass, as in _expected)
        _root(it).run_with(*config)
        head = [int(next(it)) for _ in range(k)]
        state = it.get_state()
        assert state["state"]["autotune"][0] == config[0]
        tail = [int(v) for v in it]
        assert head + tail == expected
        it2 = iter(build())  # a fresh pipeline (a new process would build one)
        it2.set_state(state)
        assert [int(v) for v in it2] == tail
        it.close()
        it2.close()
    assert_save_restore(build)  # (element_rng differs per pass: no expected list)
    assert multiprocessing.active_children() == []


def test_state_saved_while_a_pool_drains_into_the_next_configuration(no_trials):
    n = 120
    expected = _expected(n)
    ds = Dataset.range(n).map(_noisy, num_parallel_calls=A, use_processes=True, seed=5)
    it = iter(ds)
    root = _root(it)
    root.run_with("threads", 2)
    head = [int(next(it)) for _ in range(5)]
    root.run_with("processes", 2)  # threads hold results in flight: they drain first
    assert root._target == P2 and root._engine is not None and root._engine.draining
    state = it.get_state()
    assert state["state"]["buffer"], "the in-flight results are part of the state"
    tail = [int(v) for v in it]
    assert head + tail == expected
    it2 = iter(ds)
    it2.set_state(state)
    assert [int(v) for v in it2] == tail
    it2.close()
    # a restored buffer, then a switch before it is delivered
    it3 = iter(ds)
    it3.set_state(state)
    _root(it3).run_with("inline")
    assert [int(v) for v in it3] == tail


def test_a_state_of_the_serial_or_fixed_parallel_layout_restores(no_trials):
    # "buffer"/"exhausted"/"autotune" are optional: a state without them is a serial one
    ds = Dataset.range(30).map(_noisy, num_parallel_calls=A, seed=5)
    it = iter(ds)
    head = [int(next(it)) for _ in range(10)]
    state = it.get_state()
    for key in ("buffer", "exhausted", "autotune"):
        del state["state"][key]
    it2 = iter(ds)
    it2.set_state(state)
    assert head + [int(v) for v in it2] == _expected(30)


def test_errors_keep_their_position_across_switches():
    def fn(x):
        if int(x) % 25 == 3:
            raise ValueError(f"bad {int(x)}")
        return x
    it = iter(Dataset.range(100).map(fn, num_parallel_calls=A))
    root = _root(it)
    got, errors = [], []
    plan = {10: ("threads", 2), 40: ("inline",), 70: ("threads", 3)}
    i = 0
    while True:
        try:
            got.append(int(next(it)))
        except StopIteration:
            break
        except ValueError as e:
            errors.append(str(e))
        if i in plan:
            root.run_with(*plan[i])
        i += 1
    assert errors == [f"bad {k}" for k in (3, 28, 53, 78)]
    assert got == [k for k in range(100) if k % 25 != 3]


def test_no_thread_or_process_outlives_its_iterator():
    baseline = threading.active_count()
    ds = Dataset.range(10_000).map(_sleep_2ms, num_parallel_calls=A, use_processes=True)
    it = iter(ds)
    root = _root(it)
    next(it)
    root.run_with("processes", 2)
    [next(it) for _ in range(20)]
    root.run_with("threads", 4)
    [next(it) for _ in range(20)]
    assert threading.active_count() > baseline
    it.close()
    assert wait_for_threads(baseline) == baseline
    assert multiprocessing.active_children() == []
    # dropped without close, mid-trial
    it = iter(ds)
    _root(it).run_with("threads", 3)
    [next(it) for _ in range(10)]
    _root(it).run_with("processes", 2)
    [next(it) for _ in range(10)]
    del it, root
    assert wait_for_threads(baseline) == baseline
    deadline = time.monotonic() + 5
    while multiprocessing.active_children() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert multiprocessing.active_children() == []
    # breaking out of a loop during a trial
    for i, _ in enumerate(Dataset.range(2000).map(_sleep_2ms, num_parallel_calls=A)):
        if i == 40:
            break
    assert wait_for_threads(baseline) == baseline


# ---- prefetch(AUTOTUNE) ------------------------------------------------------------------------
def _bursty(x):
    time.sleep(0.03 if int(x) % 10 == 9 else 0.0002)  # 3.2 ms per element on average
    return x


def _sleep_10ms(x):
    time.sleep(0.01)
    return x


def test_prefetch_autotune_grows_its_buffer_for_a_bursty_input_only():
    it = iter(Dataset.range(120).map(_bursty).prefetch(A))
    got = []
    for e in it:
        got.append(int(e))
        time.sleep(0.008)  # a consumer slower than the input on average
    assert got == list(range(120))
    (report,) = it.autotune_report()
    assert report["stage"] == "prefetch" and report["autotuned"]
    assert report["buffer_size"] > 2, report
    # an input slower than the consumer (50x: load does not turn that around): no
    # buffer helps, none is grown
    it = iter(Dataset.range(30).map(_sleep_10ms).prefetch(A))
    for _ in it:
        time.sleep(0.0002)
    assert it.autotune_report()[0]["buffer_size"] == 2
    # a fixed buffer size stays
    it = iter(Dataset.range(120).map(_bursty).prefetch(3))
    for _ in it:
        time.sleep(0.008)
    report = it.autotune_report()[0]
    assert report["buffer_size"] == 3 and not report["autotuned"]


def test_report_lists_every_autotuned_stage_outermost_first():
    ds = (Dataset.range(50).map(lambda x: x, num_parallel_calls=A).batch(5)
          .map(lambda b: b * 2, num_parallel_calls=A).prefetch(A))
    it = iter(ds)
    assert len(list(it)) == 10
    stages = [(r["stage"], r.get("function")) for r in it.autotune_report()]
    assert [s for s, _ in stages] == ["prefetch", "map", "map"]
