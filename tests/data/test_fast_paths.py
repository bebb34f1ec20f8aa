"""The list protocol (``next_list``) that batch uses over per-element stages: same
elements, same errors, same random streams and states as one ``__next__`` at a time."""
from __future__ import annotations

import threading
import time
import weakref

import numpy as np
import pytest

import layerkit as lk
import layerkit.data as lkd
from layerkit.data import Dataset

from .data_test_util import assert_save_restore, plain, roundtrip, values, wait_for_threads

pytestmark = pytest.mark.timeout(60)

X = np.arange(60, dtype=np.float32).reshape(20, 3)
Y = np.arange(20)


def _one_at_a_time(ds, n: int) -> list:
    """Rows of ``ds`` (unbatched) pulled with __next__ only, batched by hand."""
    rows = [plain(e) for e in ds]
    return [rows[i:i + n] for i in range(0, len(rows), n)]


def _rows_of(batches) -> list:
    out = []
    for b in batches:
        cols = [np.asarray(c).tolist() for c in (b if isinstance(b, tuple) else (b,))]
        out.append([tuple(r) if len(cols) > 1 else r[0] for r in zip(*cols)])
    return out


@pytest.mark.parametrize("source", ["pair", "leaf", "dict", "nested", "strings", "range"])
def test_next_list_gives_the_elements_of_next(source):
    build = {
        "pair": lambda: Dataset.from_tensor_slices((X, Y)),
        "leaf": lambda: Dataset.from_tensor_slices(X),
        "dict": lambda: Dataset.from_tensor_slices({"x": X, "y": Y}),
        "nested": lambda: Dataset.from_tensor_slices((X, {"y": Y, "z": (Y, X)})),
        "strings": lambda: Dataset.from_tensor_slices(np.array([b"a", b"bb", b"c"] * 4)),
        "range": lambda: Dataset.range(3, 40, 3),
    }[source]
    expected = values(build())
    it = iter(build())._it
    got = []
    for n in (1, 4, 7, 100, 5):
        part = it.next_list(n)
        assert all(isinstance(leaf, lk.Tensor) for e in part for leaf in _leaves(e))
        got += [plain(e) for e in part]
    assert got == expected
    assert it.next_list(3) == []


def _leaves(e):
    if isinstance(e, dict):
        return [x for v in e.values() for x in _leaves(v)]
    if isinstance(e, tuple):
        return [x for v in e for x in _leaves(v)]
    return [e]


def test_map_then_batch_equals_mapping_one_element_at_a_time():
    ds = Dataset.from_tensor_slices((X, Y)).map(lambda x, y: (x * 2 + 1, y))
    assert _rows_of(ds.batch(6)) == _one_at_a_time(ds, 6)
    # outputs that need converting (NumPy values, Python numbers, lists) still are
    conv = Dataset.from_tensor_slices(Y).map(lambda y: [np.float32(y) * 2, int(y)])
    batches = list(conv.batch(8))
    assert [b[0].dtype for b in batches] == [np.float32] * 3
    assert np.asarray(batches[0][1]).tolist() == list(range(8))


def _fails_on(bad):
    def f(x, y):
        if int(y) in bad:
            raise KeyError(f"element {int(y)} is bad")
        return x * 2, y
    return f


def test_map_error_inside_a_batch_then_the_rest_follows():
    # Element 5 fails: the batch being gathered (4..7) raises and its elements before 5
    # are lost, and the next batch starts at element 6, as with __next__ calls.
    it = iter(Dataset.from_tensor_slices((X, Y)).map(_fails_on({5})).batch(4))
    assert np.asarray(next(it)[1]).tolist() == [0, 1, 2, 3]
    with pytest.raises(KeyError, match="element 5 is bad") as info:
        next(it)
    assert any("element 5" in n and "Dataset.map" in n for n in info.value.__notes__)
    rest = [np.asarray(b[1]).tolist() for b in it]
    assert rest == [[6, 7, 8, 9], [10, 11, 12, 13], [14, 15, 16, 17], [18, 19]]


def test_state_saved_right_after_a_map_error_resumes_with_the_next_element():
    build = lambda: Dataset.from_tensor_slices((X, Y)).map(_fails_on({5, 9})).batch(4)  # noqa: E731
    it = iter(build())
    next(it)
    with pytest.raises(KeyError):
        next(it)  # 6, 7 were pulled from the source but not mapped: they are carried
    state = roundtrip(it.get_state())
    tail_ids = []
    for _ in range(5):
        try:
            tail_ids.append(np.asarray(next(it)[1]).tolist())
        except KeyError:
            tail_ids.append("error")
        except StopIteration:
            break
    it2 = iter(build())
    it2.set_state(state)
    again = []
    for _ in range(5):
        try:
            again.append(np.asarray(next(it2)[1]).tolist())
        except KeyError:
            again.append("error")
        except StopIteration:
            break
    # 6, 7 (carried), 8 are mapped, then 9 fails: what one-at-a-time mapping gives
    assert tail_ids == ["error", [10, 11, 12, 13], [14, 15, 16, 17], [18, 19]]
    assert again == tail_ids


def test_map_error_one_element_at_a_time_after_a_batched_error():
    # next() on the map itself after next_list failed: the carried inputs come first.
    it = iter(Dataset.range(10).map(lambda v: 10 // (int(v) - 3)))._it
    assert [int(t) for t in it.next_list(3)] == [-4, -5, -10]
    with pytest.raises(ZeroDivisionError):
        it.next_list(4)  # 3 fails; 4, 5, 6 were pulled and are carried
    assert [int(next(it)) for _ in range(2)] == [10, 5]
    assert [int(t) for t in it.next_list(10)] == [3, 2, 2, 1]
    assert it.next_list(10) == []


def _noise(x):
    return x * 1000 + int(lkd.element_rng().integers(0, 1000))


def test_element_rng_is_the_same_batched_or_not():
    # (a new Dataset each time: each pass over one Dataset has its own streams)
    one = [int(v) for v in Dataset.range(30).map(_noise, seed=7)]
    batched = [int(v) for b in Dataset.range(30).map(_noise, seed=7).batch(8)
               for v in np.asarray(b)]
    assert one == batched
    threads = [int(v) for v in Dataset.range(30).map(_noise, seed=7, num_parallel_calls=2)]
    assert threads == one


def test_element_rng_still_works_after_a_map_runs_inside_a_map():
    def outer(x):
        inner = Dataset.range(3).map(_noise, seed=1)
        before = int(lkd.element_rng().integers(0, 1000))
        total = sum(int(v) for v in inner.batch(2).unbatch())
        after = int(lkd.element_rng().integers(0, 1000))  # the outer element's stream again
        return x + before + after + total

    a = [int(v) for v in Dataset.range(4).map(outer, seed=3)]
    b = [int(v) for v in Dataset.range(4).map(outer, seed=3).batch(3).unbatch()]
    assert a == b
    with pytest.raises(RuntimeError, match="inside a function"):
        lkd.element_rng()


@pytest.mark.parametrize("batched", [False, True])
def test_element_rng_in_a_stage_before_a_map_is_not_the_maps(batched):
    # The map's frame is on the stack while it pulls its input; a filter predicate that
    # runs then is not inside the map's function.
    ds = Dataset.range(6).filter(lambda x: lkd.element_rng() is not None).map(_noise, seed=1)
    with pytest.raises(RuntimeError, match="inside a function"):
        list(ds.batch(2) if batched else ds)


# ---- prefetch: inline first, threaded when both sides are slow -------------------------------
def _slow_id(x):
    time.sleep(0.0003)
    return x


def _busy_consumer(it, n: int) -> list:
    out = []
    for _ in range(n):
        out.append(int(next(it)))
        time.sleep(0.0003)  # a "training step"
    return out


def test_prefetch_goes_threaded_and_its_state_holds_the_buffer():
    build = lambda: Dataset.range(60).map(_slow_id).prefetch(3)  # noqa: E731
    it = iter(build())
    head = _busy_consumer(it, 20)
    assert not it._it._inline  # input and consumer both slow: the thread pays off
    state = roundtrip(it.get_state())
    assert len(state["state"]["buffer"]) >= 1  # elements prefetched but not yet delivered
    tail = [int(v) for v in it]
    assert head + tail == list(range(60))
    it2 = iter(build())
    it2.set_state(state)
    assert [int(v) for v in it2] == tail
    it.close()
    it2.close()


def test_fast_prefetch_starts_no_thread_and_a_threaded_one_stops_when_dropped():
    baseline = threading.active_count()
    it = iter(Dataset.range(5000).prefetch(2))
    assert [int(v) for v in it] == list(range(5000))
    assert threading.active_count() == baseline
    it = iter(Dataset.range(1000).map(_slow_id).prefetch(2))
    _busy_consumer(it, 20)
    assert threading.active_count() > baseline
    del it  # no close(): reference counting alone frees the iterator and stops its thread
    assert wait_for_threads(baseline) == baseline


# ---- process map: chunks travel as one stacked array per leaf when they can ------------------
def _ragged():
    for i in range(9):
        yield np.arange(i % 4, dtype=np.int32), f"s{i}" * (i % 3)


def _tag(v, s):
    return {"n": lk.reduce_sum(v), "v": v, "s": s}


@pytest.mark.parametrize("build", [
    lambda: Dataset.from_generator(_ragged),  # ragged shapes and strings: element by element
    lambda: Dataset.from_tensor_slices((X, np.array([b"a", b"bbb"] * 10))),  # stackable
])
def test_process_map_equals_serial_for_stackable_and_ragged_chunks(build):
    fn = (lambda x, s: _tag(x, s))  # noqa: E731 (a lambda: fork hands it over)
    serial = values(build().map(fn))
    assert values(build().map(fn, num_parallel_calls=2, use_processes=True)) == serial


def test_encode_chunk_roundtrip():
    from layerkit.data import structure as st
    same = [(lk.constant([1.0, 2.0]), {"k": lk.constant(3)}) for _ in range(4)]
    ragged = [lk.constant(np.arange(i)) for i in range(3)]
    for elems, kind in ((same, "stacked"), (ragged, "list")):
        chunk = st.encode_chunk(elems)
        assert chunk[0] == kind
        assert [plain(e) for e in st.decode_chunk(chunk)] == [plain(e) for e in elems]


def test_process_map_error_in_a_chunk_arrives_in_position():
    def f(x):
        if int(x) == 7:
            raise ValueError("seven")
        return x * 2
    it = iter(Dataset.range(40).map(f, num_parallel_calls=2, use_processes=True))
    got = [int(next(it)) for _ in range(7)]
    with pytest.raises(ValueError, match="seven"):
        next(it)
    assert got + [int(v) for v in it] == [2 * i for i in range(40) if i != 7]


def test_parallel_map_bounds_the_elements_in_flight():
    from layerkit.data.map_parallel import IN_FLIGHT
    produced = []

    def cheap(x):
        produced.append(int(x))  # list.append is atomic under the GIL
        return x
    it = iter(Dataset.range(100_000).map(cheap, num_parallel_calls=2))
    for _ in range(300):  # chunks grow to their largest size for a cheap function
        next(it)
    time.sleep(0.3)  # the workers would run ahead if the window did not bound them
    assert len(produced) - 300 <= IN_FLIGHT + IN_FLIGHT // 8
    it.close()


# ---- fused batch-first loop: from_tensor_slices((x, y)).batch(k).map(fn) ---------------------
def _stepwise(build) -> list:
    """The elements through the stages' own __next__ (the general path, never fused)."""
    it = iter(build())._it
    out = []
    while True:
        try:
            out.append(plain(it.__next__()))
        except StopIteration:
            return out


def _pair_noise(x, y):
    return x * 2 + int(lkd.element_rng().integers(0, 1000)), y


@pytest.mark.parametrize("fn", [
    lambda x, y: (x * 2 + 1, y),
    lambda x, y: (np.asarray(x) * 2, int(np.asarray(y).sum())),  # outputs to convert
    lambda x, y: x - 1,  # one Tensor
    lambda x, y: (x, y, x),  # three leaves
    lambda x, y: (x, y),  # the inputs themselves: nothing to recycle
])
@pytest.mark.parametrize("drop", [False, True])
def test_fused_batch_map_equals_the_general_path(fn, drop):
    build = lambda: Dataset.from_tensor_slices((X, Y)).batch(3, drop).map(fn)  # noqa: E731
    got = values(build())
    assert got == _stepwise(build)
    assert len(got) == (6 if drop else 7)


def test_fused_batch_map_element_rng_and_state():
    build = lambda: Dataset.from_tensor_slices((X, Y)).batch(3).map(_pair_noise, seed=4)  # noqa: E731
    assert values(build()) == _stepwise(build)
    assert_save_restore(build)


def test_fused_batch_map_recycles_only_tensors_no_one_references():
    kept, weak = [], []

    def f(x, y):
        for r, first in weak:  # a weak reference forbids reusing x's Tensor
            assert r() is None or float(np.asarray(r())[0, 0]) == first
        weak.append((weakref.ref(x), float(np.asarray(x)[0, 0])))
        return x * 1, y
    batches = list(Dataset.from_tensor_slices((X, Y)).batch(3).map(f))  # keeps every y
    assert len(weak) == 7
    for i, (_xb, yb) in enumerate(batches):
        assert np.asarray(yb).tolist() == Y[3 * i:3 * i + 3].tolist()

    def g(x, y):
        kept.append(x)  # a strong reference: the same
        return x + 0, y
    for _ in Dataset.from_tensor_slices((X, Y)).batch(4).map(g):
        pass
    assert [np.asarray(t).tolist() for t in kept] == [X[i:i + 4].tolist() for i in range(0, 20, 4)]


def _fails_at_6(x, y):
    if int(np.asarray(y)[0]) == 6:
        raise KeyError("batch at 6")
    return x, y


@pytest.mark.parametrize("build", [
    lambda: Dataset.from_tensor_slices((X, Y)).batch(3).map(_fails_at_6),
    lambda: Dataset.from_tensor_slices((X, Y)).batch(3).map(_fails_at_6).prefetch(2),
])
def test_fused_batch_map_error_then_the_next_batch_and_a_resumable_state(build):
    it = iter(build())
    assert [np.asarray(next(it)[1]).tolist() for _ in range(2)] == [[0, 1, 2], [3, 4, 5]]
    with pytest.raises(KeyError, match="batch at 6") as info:
        next(it)
    assert any("input element 2" in n and "Dataset.map" in n for n in info.value.__notes__)
    state = roundtrip(it.get_state())
    rest = [np.asarray(b[1]).tolist() for b in it]
    assert rest == [[9, 10, 11], [12, 13, 14], [15, 16, 17], [18, 19]]
    it2 = iter(build())
    it2.set_state(state)
    assert [np.asarray(b[1]).tolist() for b in it2] == rest


@pytest.mark.parametrize("build", [
    lambda: Dataset.from_tensor_slices((X, Y)).batch(3).map(lambda x, y: (x + 1, y)),  # fused
    lambda: Dataset.range(10).map(lambda v: v * 2),  # the stage's own __next__
])
def test_an_iterator_at_its_end_can_be_given_an_earlier_state(build):
    it = iter(build())
    next(it)
    state = it.get_state()
    tail = [plain(e) for e in it]
    assert next(it, None) is None
    it.set_state(state)
    assert [plain(e) for e in it] == tail
    assert next(it, None) is None


def test_state_taken_mid_pass_then_the_fused_loop_goes_on():
    ds = Dataset.from_tensor_slices((X, Y)).batch(2).map(lambda x, y: (x, y))
    it = iter(ds)
    ys = [np.asarray(next(it)[1]).tolist() for _ in range(3)]
    it.get_state()  # reads positions from the running loop; changes nothing
    ys += [np.asarray(b[1]).tolist() for b in it]
    assert ys == [[i, i + 1] for i in range(0, 20, 2)]


def test_fused_batch_map_under_an_inline_prefetch():
    build = lambda: (Dataset.from_tensor_slices((X, Y)).batch(3)  # noqa: E731
                     .map(_pair_noise, seed=5).prefetch(2))
    assert values(build()) == _stepwise(build)
    assert_save_restore(build)
    it = iter(build())
    assert it._it.fast_iter() is not it._it  # inline: the prefetch runs as C-level slices
    it.close()


def _fail_at_21(x):
    if int(x) == 21:
        raise ValueError("bad element 21")
    return x


def test_inline_prefetch_samples_less_while_fast_and_still_goes_threaded_later():
    # A fast phase widens the sampling stride (one timed call in up to 1024); when both
    # sides turn slow, a timed call still comes within one stride and hands the input
    # to the thread.
    from layerkit.data import tuning as tn

    fast = 3000

    def fn(x):
        if x >= fast:
            time.sleep(0.0003)
        return x

    it = iter(Dataset.range(fast + 3000).map(fn).prefetch(2))
    got = [int(next(it)) for _ in range(fast)]
    assert it._it._inline and it._it._s.every == tn.EVERY_MAX
    for _ in range(tn.EVERY_MAX + 2 * (tn.EVERY + 1)):
        got.append(int(next(it)))
        time.sleep(0.0003)
        if not it._it._inline:
            break
    assert not it._it._inline, "the slow phase was never sampled"
    assert it._it._s.every == tn.EVERY
    got += [int(v) for v in it]
    assert got == list(range(fast + 3000))
    it.close()


def test_inline_prefetch_stretches_keep_order_errors_and_state():
    # Past the warm-up, inline prefetch hands out untimed stretches as C-level slices of
    # its input: an error inside a stretch, and a state taken inside one, must behave as
    # element-by-element iteration does.
    build = lambda: Dataset.range(40).map(_fail_at_21).prefetch(2)  # noqa: E731
    it = iter(build())
    got = []
    with pytest.raises(ValueError, match="bad element 21"):
        for v in it:
            got.append(int(v))
    got += [int(v) for v in it]
    assert got == [i for i in range(40) if i != 21]

    it = iter(Dataset.range(40).prefetch(2))
    head = [int(next(it)) for _ in range(13)]          # inside the first untimed stretch
    state = it.get_state()
    rest = [int(v) for v in it]
    again = iter(Dataset.range(40).prefetch(2))
    again.set_state(state)
    assert head + rest == list(range(40))
    assert [int(v) for v in again] == rest
