"""Parallel map / interleave / prefetch: order, reproducible randomness, errors, and that
no background thread or process outlives its iterator. Every test has a timeout."""
from __future__ import annotations

import threading
import time

import numpy as np
import pytest

import layerkit.data as lkd
from layerkit.data import Dataset
from layerkit.data import tuning as tn

from . import procfns
from .data_test_util import settle_threads, values, wait_for_threads

pytestmark = pytest.mark.timeout(60)


@pytest.fixture(autouse=True)
def _settled_threads():
    # The tests themselves never call gc: they check that iterators are freed by
    # reference counting alone.
    settle_threads()
    yield


def _jitter(x):
    # uneven work so that results complete out of order
    time.sleep(0.002 * (int(x) % 3))
    return x * 10


def _slow(x):
    time.sleep(0.001)
    return x


# ---- order and results ---------------------------------------------------------------------
@pytest.mark.parametrize("k", [1, 2, 4, lkd.AUTOTUNE])
def test_parallel_map_keeps_order(k):
    ds = Dataset.range(40).map(_jitter, num_parallel_calls=k)
    assert values(ds) == [10 * i for i in range(40)]


def test_parallel_map_nondeterministic_gives_same_elements():
    ds = Dataset.range(40).map(_jitter, num_parallel_calls=3, deterministic=False)
    assert sorted(values(ds)) == [10 * i for i in range(40)]


def test_process_map_order_lambdas_and_structures():
    ds = Dataset.range(30).map(lambda x: x * 3, num_parallel_calls=2, use_processes=True)
    assert values(ds) == [3 * i for i in range(30)]
    pairs = Dataset.from_tensor_slices((np.arange(5), np.arange(5) * 2))
    out = values(pairs.map(procfns.pair_sum, num_parallel_calls=2, use_processes=True))
    assert out == [{"s": 3 * i, "a": i} for i in range(5)]


def test_element_rng_reproducible_for_any_parallelism():
    def noise(x):
        return x + int(lkd.element_rng().integers(0, 1000))
    base = Dataset.range(30)
    serial = values(base.map(noise, seed=7))
    threads = values(base.map(noise, num_parallel_calls=3, seed=7))
    unordered = sorted(values(base.map(noise, num_parallel_calls=3, deterministic=False, seed=7)))
    procs = values(base.map(procfns.noisy, num_parallel_calls=2, use_processes=True, seed=7))
    assert serial == threads == procs
    assert sorted(serial) == unordered
    assert serial != values(base.map(noise, seed=8))
    with pytest.raises(RuntimeError, match="inside a function passed to Dataset.map"):
        lkd.element_rng()


def test_element_rng_changes_per_pass_and_follows_global_seed():
    from layerkit.primitives import random as lkr

    def noise(x):
        return int(lkd.element_seed() % 1000)
    ds = Dataset.range(5).map(noise, seed=1)
    assert values(ds) != values(ds)  # a new pass draws new augmentations
    lkr.set_seed(3)
    a = values(Dataset.range(5).map(noise))
    lkr.set_seed(3)
    assert a == values(Dataset.range(5).map(noise))


@pytest.mark.parametrize("parallel", [None, 2])
def test_parallel_interleave_equals_sequential(parallel):
    def sub(x):
        n = int(x)
        return Dataset.range(n * 100, n * 100 + n + 1).map(_slow)
    ds = Dataset.range(7).interleave(sub, cycle_length=3, block_length=2,
                                     num_parallel_calls=parallel)
    seq = Dataset.range(7).interleave(sub, cycle_length=3, block_length=2)
    assert values(ds) == values(seq)


def test_parallel_interleave_nondeterministic_same_elements():
    def sub(x):
        return Dataset.range(int(x) * 10, int(x) * 10 + 5).map(_jitter)
    ds = Dataset.range(4).interleave(sub, cycle_length=4, num_parallel_calls=4,
                                     deterministic=False)
    assert sorted(values(ds)) == sorted(10 * (x * 10 + i) for x in range(4) for i in range(5))


def test_prefetch_preserves_elements_threaded_and_inline():
    slow = Dataset.range(50).map(_slow).prefetch(3)  # slow input: a worker thread prefetches
    assert values(slow) == list(range(50))
    fast = Dataset.range(5000).prefetch(2)  # fast input: runs inline after a warm-up
    assert values(fast) == list(range(5000))
    assert Dataset.range(3).prefetch(0) is not None


# ---- errors --------------------------------------------------------------------------------
def _fail_on_three(x):
    if int(x) == 3:
        raise ValueError("three is not allowed")
    return x


@pytest.mark.parametrize("kw", [dict(), dict(num_parallel_calls=3),
                                dict(num_parallel_calls=3, deterministic=False),
                                dict(num_parallel_calls=2, use_processes=True)])
def test_map_error_reaches_consumer_in_position(kw):
    it = iter(Dataset.range(8).map(_fail_on_three, **kw))
    got = []
    for _ in range(8):
        try:
            got.append(int(next(it)))
        except ValueError as e:
            assert "three is not allowed" in str(e)
            assert any("Dataset.map" in n and "element 3" in n for n in e.__notes__)
            got.append("error")
    if kw.get("deterministic", True):
        assert got == [0, 1, 2, "error", 4, 5, 6, 7]
    else:
        assert sorted(g for g in got if g != "error") == [0, 1, 2, 4, 5, 6, 7]
    with pytest.raises(StopIteration):
        next(it)


def test_error_through_prefetch_and_parallel_interleave():
    ds = Dataset.range(6).map(_fail_on_three).map(_slow).prefetch(2)
    with pytest.raises(ValueError, match="three") as info:
        list(ds)
    assert any("element 3" in n for n in info.value.__notes__)

    def sub(x):
        return Dataset.range(int(x) * 10, int(x) * 10 + 3).map(
            lambda v: _fail_on_three(v - 10 * int(x) + int(x)))
    ds = Dataset.range(4).interleave(sub, cycle_length=2, num_parallel_calls=2)
    with pytest.raises(ValueError, match="three"):
        list(ds)


def test_generator_error_through_prefetch_is_reported():
    def gen():
        yield 1
        time.sleep(0.001)
        raise OSError("disk gone")
    ds = Dataset.from_generator(gen).map(_slow).prefetch(2)
    with pytest.raises(OSError, match="disk gone") as info:
        list(ds)
    assert any("from_generator" in n for n in info.value.__notes__)


def test_worker_process_crash_does_not_hang():
    def die(x):
        import os
        if int(x) == 2:
            os._exit(3)
        return x
    with pytest.raises(RuntimeError, match=r"element 2 .* worker process .* exited with code 3"):
        list(Dataset.range(6).map(die, num_parallel_calls=2, use_processes=True))


# ---- every element delivered or accounted for by an error ---------------------------------
def _account(it, total: int) -> tuple:
    """Run ``it`` past errors: (delivered values, error messages); fails if it never ends."""
    got, errors = [], []
    for _ in range(2 * total + 10):
        try:
            got.append(int(next(it)))
        except StopIteration:
            return got, errors
        except Exception as e:  # noqa: BLE001 (counted)
            errors.append(str(e))
    raise AssertionError("the iterator did not end")


def _lost_elements(errors: list) -> list:
    import re
    return sorted(int(re.search(r"input element (\d+)", m).group(1)) for m in errors)


def _new_children(before: set) -> list:
    import multiprocessing
    return [p.pid for p in multiprocessing.active_children() if p.pid not in before]


@pytest.mark.parametrize("deterministic", [True, False])
def test_a_killed_worker_process_loses_no_element_quietly(deterministic):
    # The worker running element 57 is SIGKILLed: each element it held is reported by
    # its own error naming it; the loop that goes on receives every other element.
    import multiprocessing
    baseline = threading.active_count()
    before = {p.pid for p in multiprocessing.active_children()}
    ds = Dataset.range(200).map(procfns.killed_at, num_parallel_calls=2, use_processes=True,
                                deterministic=deterministic)
    it = iter(ds)
    got, errors = _account(it, 200)
    lost = _lost_elements(errors)
    assert 57 in lost
    assert len(got) + len(errors) == 200
    assert sorted(got + [2 * i for i in lost]) == [2 * i for i in range(200)]
    if deterministic:
        assert got == [2 * i for i in range(200) if i not in lost]
    assert all("SIGKILL" in m and "worker process" in m for m in errors), errors[0]
    it.close()
    assert wait_for_threads(baseline) == baseline
    assert _new_children(before) == []


def test_worker_processes_killed_from_outside_while_busy():
    import multiprocessing
    import os
    import signal
    baseline = threading.active_count()
    before = {p.pid for p in multiprocessing.active_children()}
    it = iter(Dataset.range(300).map(_slow, num_parallel_calls=2, use_processes=True))
    got = [int(next(it)) for _ in range(20)]
    pids = _new_children(before)
    assert len(pids) == 2
    for pid in pids:
        os.kill(pid, signal.SIGKILL)
    state = it.get_state()  # the lost elements' errors are part of it
    more, errors = _account(it, 300)
    lost = _lost_elements(errors)
    assert len(got + more) + len(errors) == 300 and sorted(got + more + lost) == list(range(300))
    it.close()
    it = iter(Dataset.range(300).map(_slow, num_parallel_calls=2, use_processes=True))
    it.set_state(state)
    more, errors = _account(it, 300)
    assert sorted(got + more + _lost_elements(errors)) == list(range(300))
    assert len(got + more) + len(errors) == 300 and lost == _lost_elements(errors)
    it.close()
    assert wait_for_threads(baseline) == baseline
    assert _new_children(before) == []


def _fail_some(x):
    if int(x) % 7 == 3:
        raise ValueError(f"bad {int(x)}")
    return x


@pytest.mark.parametrize("build", [
    lambda: Dataset.range(100).map(_fail_some, num_parallel_calls=3),
    lambda: Dataset.range(100).map(_fail_some, num_parallel_calls=3, deterministic=False),
    lambda: Dataset.range(100).map(_fail_some, num_parallel_calls=2, use_processes=True),
    lambda: Dataset.range(4).interleave(
        lambda i: Dataset.range(25).map(lambda x: _fail_some(x + 25 * i)), cycle_length=2),
    lambda: Dataset.range(4).interleave(
        lambda i: Dataset.range(25).map(lambda x: _fail_some(x + 25 * i)), cycle_length=2,
        num_parallel_calls=2),
    lambda: Dataset.range(4).interleave(
        lambda i: Dataset.range(25).map(lambda x: _fail_some(x + 25 * i)), cycle_length=3,
        num_parallel_calls=2, deterministic=False),
])
def test_errors_in_threads_and_interleave_are_one_per_element(build):
    baseline = threading.active_count()
    got, errors = _account(iter(build()), 100)
    failing = [i for i in range(100) if i % 7 == 3]
    assert sorted(got) == [i for i in range(100) if i % 7 != 3]
    assert sorted(int(m.split()[-1]) for m in errors) == failing
    assert wait_for_threads(baseline) == baseline


def test_interleave_over_a_process_map_whose_worker_is_killed():
    ds = Dataset.range(2).interleave(
        lambda i: Dataset.range(100).map(lambda x: x + 100 * i).map(
            procfns.killed_at, num_parallel_calls=1, use_processes=True), cycle_length=2)
    got, errors = _account(iter(ds), 200)
    lost = _lost_elements(errors)
    assert 57 in lost and len(got) + len(errors) == 200
    assert sorted(got) == [2 * v for v in range(100) if v not in lost] + [
        2 * v for v in range(100, 200)]


# ---- no leaked threads ---------------------------------------------------------------------
def _pipelines():
    return {
        "prefetch": lambda: Dataset.range(10_000).map(_slow).prefetch(4),
        "map": lambda: Dataset.range(10_000).map(_slow, num_parallel_calls=3),
        "interleave": lambda: Dataset.range(100).interleave(
            lambda x: Dataset.range(100).map(_slow), cycle_length=3, num_parallel_calls=3),
        "processes": lambda: Dataset.range(10_000).map(_slow, num_parallel_calls=2,
                                                      use_processes=True),
        "nested": lambda: Dataset.range(10_000).map(_slow, num_parallel_calls=2).prefetch(2)
        .map(_slow, num_parallel_calls=2).prefetch(2),
    }


@pytest.mark.parametrize("name", list(_pipelines()))
def test_breaking_out_of_a_loop_stops_all_threads(name):
    baseline = threading.active_count()
    ds = _pipelines()[name]()
    for i, _ in enumerate(ds):
        time.sleep(0.0005)  # a consumer with work of its own: prefetch uses its thread
        if i == 20:
            break
    assert threading.active_count() > baseline or name == "processes"
    # no gc.collect(): the iterators must not sit in reference cycles
    assert wait_for_threads(baseline) == baseline


@pytest.mark.parametrize("name", list(_pipelines()))
def test_close_and_del_stop_threads(name):
    baseline = threading.active_count()
    it = iter(_pipelines()[name]())
    next(it)
    it.close()
    assert wait_for_threads(baseline) == baseline
    with pytest.raises(StopIteration):
        next(it)
    it = iter(_pipelines()[name]())
    next(it)
    del it
    assert wait_for_threads(baseline) == baseline


def test_threads_stop_after_an_error_and_with_block():
    baseline = threading.active_count()
    try:
        for _ in Dataset.range(100).map(_fail_on_three, num_parallel_calls=2).prefetch(2):
            pass
    except ValueError:
        pass
    assert wait_for_threads(baseline) == baseline
    with iter(Dataset.range(100).map(_slow, num_parallel_calls=2)) as it:
        next(it)
    assert wait_for_threads(baseline) == baseline


def test_abandoned_slow_consumer_does_not_block_shutdown():
    # A worker stuck in a long call must not make close() hang beyond its join timeout.
    baseline = threading.active_count()

    def sleepy(x):
        time.sleep(0.3)
        return x
    it = iter(Dataset.range(10).map(sleepy, num_parallel_calls=2))
    next(it)
    t0 = time.monotonic()
    it.close()
    assert time.monotonic() - t0 < 6
    assert wait_for_threads(baseline) == baseline


def test_prefetch_memory_is_bounded_by_its_buffer():
    produced = []

    def count(x):
        produced.append(int(x))
        time.sleep(0.001)
        return x
    it = iter(Dataset.range(1000).map(count).prefetch(3))
    for _ in range(12):  # a busy consumer: prefetch hands the input to its thread
        next(it)
        time.sleep(0.002)
    assert not it._it._inline
    time.sleep(0.2)  # the worker would run ahead if it were not bounded
    assert len(produced) - 12 <= 3 + 1
    it.close()


def test_prefetch_overlaps_input_with_a_busy_consumer():
    # Behaviour, not speed: once both sides take milliseconds, prefetch's thread produces
    # elements while the consumer is busy with its own step.
    produced = []  # (thread, start, end) per element
    busy = []  # the consumer's steps

    def produce(x):
        t0 = time.monotonic()
        time.sleep(0.005)
        produced.append((threading.get_ident(), t0, time.monotonic()))
        return x
    it = iter(Dataset.range(40).map(produce).prefetch(2))
    for _ in it:
        t0 = time.monotonic()
        time.sleep(0.005)  # the "training step"
        busy.append((t0, time.monotonic()))
    main = threading.get_ident()
    background = [(a, b) for t, a, b in produced if t != main]
    assert len(background) >= 40 - 2 * tn.WARMUP, produced  # handed over after the warm-up
    assert any(a < d and c < b for a, b in background for c, d in busy), "no overlap"


def test_prefetch_runs_inline_when_the_consumer_does_not_wait(monkeypatch):
    # A clock that only the input advances (1 ms per element): the consumer between calls
    # takes no time at all, whatever else runs on the machine.
    from layerkit.data import prefetch
    from layerkit.data.prefetch import PrefetchIterator
    clock = [0.0]
    monkeypatch.setattr(prefetch, "perf_counter", lambda: clock[0])

    def tick(x):
        clock[0] += 1e-3
        return x
    ds = Dataset.range(200).map(tick).prefetch(2)
    it = iter(ds)
    got = [int(next(it)) for _ in range(100)]
    root = it._it
    assert isinstance(root, PrefetchIterator) and root._inline
    assert root.tuning_report()["input_us"] == pytest.approx(1000.0)
    assert root.tuning_report()["consumer_us"] == pytest.approx(0.0, abs=1e-6)
    assert got + [int(v) for v in it] == list(range(200))
