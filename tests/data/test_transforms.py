"""Transformations: element order equal to tf.data's (hand-derived expected lists, several
from the tf.data documentation), shapes, errors."""
from __future__ import annotations

import os

import numpy as np
import pytest

import layerkit as lk
import layerkit.data as lkd
from layerkit.data import Dataset, TensorSpec
from layerkit.primitives import random as lkr

from .data_test_util import values


# ---- batch / padded_batch / unbatch --------------------------------------------------------
def test_batch_remainder_and_drop():
    assert values(Dataset.range(8).batch(3)) == [[0, 1, 2], [3, 4, 5], [6, 7]]
    assert values(Dataset.range(8).batch(3, drop_remainder=True)) == [[0, 1, 2], [3, 4, 5]]
    assert values(Dataset.range(6).batch(3, drop_remainder=True)) == [[0, 1, 2], [3, 4, 5]]
    assert values(Dataset.range(0).batch(3)) == []
    assert Dataset.range(8).batch(3).element_spec == TensorSpec((None,), np.int64)
    assert Dataset.range(8).batch(3, True).element_spec == TensorSpec((3,), np.int64)


def test_batch_chunked_path_equals_row_path():
    x = np.arange(30, dtype=np.float32).reshape(10, 3)
    y = np.arange(10)
    fast = values(Dataset.from_tensor_slices((x, y)).batch(4))
    slow = values(Dataset.from_tensor_slices((x, y)).map(lambda a, b: (a, b)).batch(4))
    assert fast == slow
    assert fast[-1] == (x[8:].tolist(), [8, 9])


def test_batch_of_dicts_and_nested():
    ds = Dataset.from_tensor_slices({"a": np.arange(5), "b": (np.arange(5) * 2, np.ones(5))})
    b = values(ds.map(lambda d: d).batch(2))
    assert b[0] == {"a": [0, 1], "b": ([0, 2], [1.0, 1.0])}
    assert b[-1]["a"] == [4]


def test_batch_shape_mismatch_error():
    ds = Dataset.from_generator(lambda: iter([[1, 2], [1, 2, 3]]))
    with pytest.raises(ValueError, match=r"different shapes in component 0.*\(2,\).*\(3,\)"):
        list(ds.batch(2))


def test_batch_size_must_be_positive():
    with pytest.raises(ValueError, match="batch_size"):
        Dataset.range(3).batch(0)


def _fill(x):
    n = int(x)
    return np.full(n, n, np.int64)


def test_padded_batch_tf_doc_examples():
    a = Dataset.range(1, 5).map(_fill)
    assert values(a.padded_batch(2)) == [[[1, 0], [2, 2]], [[3, 3, 3, 0], [4, 4, 4, 4]]]
    assert values(a.padded_batch(2, padded_shapes=5)) == [
        [[1, 0, 0, 0, 0], [2, 2, 0, 0, 0]], [[3, 3, 3, 0, 0], [4, 4, 4, 4, 0]]]
    assert values(a.padded_batch(2, padded_shapes=5, padding_values=-1)) == [
        [[1, -1, -1, -1, -1], [2, 2, -1, -1, -1]], [[3, 3, 3, -1, -1], [4, 4, 4, 4, -1]]]
    elements = [([1, 2, 3], [10]), ([4, 5], [11, 12])]
    ds = Dataset.from_generator(lambda: iter(elements), output_types=(np.int32, np.int32))
    got = values(ds.padded_batch(2, padded_shapes=([4], [None]), padding_values=(-1, 100)))
    assert got == [([[1, 2, 3, -1], [4, 5, -1, -1]], [[10, 100], [11, 12]])]
    assert a.padded_batch(2, padded_shapes=[5], drop_remainder=True).element_spec == \
        TensorSpec((2, 5), np.int64)


def test_padded_batch_strings_and_errors():
    ds = Dataset.from_tensor_slices(np.array([b"a", b"bcd", b"ef"])).map(lambda s: s)
    assert values(ds.padded_batch(3)) == [[b"a", b"bcd", b"ef"]]
    too_long = Dataset.range(1, 5).map(_fill).padded_batch(4, padded_shapes=[3])
    with pytest.raises(ValueError, match="larger than its padded shape"):
        list(too_long)


def test_unbatch_roundtrip_and_cardinality():
    x = np.arange(14).reshape(7, 2)
    ds = Dataset.from_tensor_slices(x).batch(3).unbatch()
    assert values(ds) == x.tolist()
    assert Dataset.range(9).batch(3, True).unbatch().cardinality() == 9
    assert Dataset.range(9).batch(3).unbatch().cardinality() == lkd.UNKNOWN
    assert values(ds.batch(4)) == [x[:4].tolist(), x[4:].tolist()]  # chunk path
    with pytest.raises(ValueError, match="same size in the first dimension"):
        list(Dataset.from_tensors((np.zeros(2), np.zeros(3))).unbatch())


# ---- simple stream ops ---------------------------------------------------------------------
def test_take_skip_repeat_shard_enumerate_concatenate():
    r = Dataset.range(10)
    assert values(r.take(3)) == [0, 1, 2]
    assert values(r.take(-1)) == list(range(10))
    assert values(r.skip(7)) == [7, 8, 9]
    assert values(r.skip(-1)) == []
    assert values(Dataset.range(3).repeat(2)) == [0, 1, 2, 0, 1, 2]
    assert values(Dataset.range(3).repeat(0)) == []
    assert values(Dataset.range(3).repeat().take(7)) == [0, 1, 2, 0, 1, 2, 0]
    assert values(Dataset.range(0).repeat()) == []  # an empty pass ends an endless repeat
    assert values(r.shard(3, 1)) == [1, 4, 7]
    assert values(r.shard(3, 0)) == [0, 3, 6, 9]
    enum = Dataset.from_tensor_slices([1, 2, 3]).enumerate(start=5)
    assert values(enum) == [(5, 1), (6, 2), (7, 3)]
    assert values(Dataset.range(1, 4).concatenate(Dataset.range(4, 8))) == [1, 2, 3, 4, 5, 6, 7]


@pytest.mark.parametrize("build, card", [
    (lambda: Dataset.range(10).take(3), 3),
    (lambda: Dataset.range(10).take(30), 10),
    (lambda: Dataset.range(10).repeat().take(4), 4),
    (lambda: Dataset.range(10).skip(4), 6),
    (lambda: Dataset.range(10).skip(40), 0),
    (lambda: Dataset.range(10).repeat(3), 30),
    (lambda: Dataset.range(10).repeat(), lkd.INFINITE),
    (lambda: Dataset.range(0).repeat(), 0),
    (lambda: Dataset.range(10).shard(3, 1), 3),
    (lambda: Dataset.range(10).shard(3, 0), 4),
    (lambda: Dataset.range(10).concatenate(Dataset.range(5)), 15),
    (lambda: Dataset.range(10).concatenate(Dataset.range(5).repeat()), lkd.INFINITE),
    (lambda: Dataset.range(10).filter(lambda x: True), lkd.UNKNOWN),
    (lambda: Dataset.range(10).enumerate(), 10),
    (lambda: Dataset.range(10).shuffle(3).map(lambda x: x).prefetch(2).cache(), 10),
])
def test_cardinalities(build, card):
    ds = build()
    assert ds.cardinality() == card
    if card >= 0:
        assert len(values(ds)) == card


def test_chunk_paths_through_take_skip_repeat_enumerate():
    ds = Dataset.range(7).skip(1).take(5).repeat(2).enumerate(10).batch(4)
    expected = [(list(range(10 + i, min(20, 14 + i))), ([1, 2, 3, 4, 5] * 2)[i:i + 4])
                for i in range(0, 10, 4)]
    assert values(ds) == expected
    slow = Dataset.range(7).map(lambda x: x).skip(1).take(5).repeat(2).enumerate(10).batch(4)
    assert values(slow) == expected


def test_shard_and_concatenate_errors():
    with pytest.raises(ValueError, match="index"):
        Dataset.range(3).shard(2, 2)
    with pytest.raises(TypeError, match="incompatible"):
        Dataset.range(3).concatenate(Dataset.from_tensor_slices(np.zeros(3, np.float32)))


def test_filter():
    ds = Dataset.range(10).filter(lambda x: int(x) % 3 == 0)
    assert values(ds) == [0, 3, 6, 9]
    ds = Dataset.range(4).filter(lambda x: np.asarray(x._v) > 1)
    assert values(ds) == [2, 3]
    with pytest.raises(TypeError, match="scalar bool") as info:
        list(Dataset.range(3).filter(lambda x: x))
    assert any("filter" in n for n in info.value.__notes__)


# ---- map -----------------------------------------------------------------------------------
def test_map_unpacks_tuples_passes_dicts_and_lists_become_tuples():
    ds = Dataset.from_tensor_slices((np.arange(3), np.arange(3) * 10))
    assert values(ds.map(lambda a, b: a + b)) == [0, 11, 22]
    assert values(ds.map(lambda a, b: [b, a])) == [(0, 0), (10, 1), (20, 2)]
    d = Dataset.from_tensor_slices({"x": np.arange(2)})
    assert values(d.map(lambda e: {"y": e["x"] * 3})) == [{"y": 0}, {"y": 3}]
    out = next(iter(Dataset.range(2).map(lambda x: np.float64(1.5))))
    assert isinstance(out, lk.Tensor) and out.dtype == np.float64


def test_map_errors_keep_type_and_name_the_element():
    def f(x):
        if int(x) == 2:
            raise ZeroDivisionError("bad element")
        return x
    it = iter(Dataset.range(5).map(f))
    assert [int(next(it)), int(next(it))] == [0, 1]
    with pytest.raises(ZeroDivisionError, match="bad element") as info:
        next(it)
    assert any("Dataset.map" in n and "element 2" in n and "f" in n for n in info.value.__notes__)
    assert [int(v) for v in it] == [3, 4]  # the pipeline goes on after an error


def test_map_stop_iteration_is_not_a_silent_end():
    def f(x):
        raise StopIteration
    with pytest.raises(RuntimeError, match="StopIteration"):
        list(Dataset.range(3).map(f))


def test_apply():
    def twice(ds):
        return ds.concatenate(ds)
    assert values(Dataset.range(2).apply(twice)) == [0, 1, 0, 1]
    with pytest.raises(TypeError, match="must return a Dataset"):
        Dataset.range(2).apply(lambda ds: 3)


# ---- interleave / flat_map -----------------------------------------------------------------
TF_DOC_INTERLEAVE = [1, 1, 1, 1, 2, 2, 2, 2, 1, 1, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 3, 3, 4, 4,
                     5, 5, 5, 5, 5, 5]


@pytest.mark.parametrize("parallel", [None, 2])
def test_interleave_tf_doc_order(parallel):
    ds = Dataset.range(1, 6).interleave(lambda x: Dataset.from_tensors(x).repeat(6),
                                        cycle_length=2, block_length=4,
                                        num_parallel_calls=parallel)
    assert values(ds) == TF_DOC_INTERLEAVE


@pytest.mark.parametrize("parallel", [None, 3])
def test_interleave_refills_a_place_when_the_cycle_returns(parallel):
    # Input 1 -> [10], 2 -> [20, 21], 3 -> [30, 31, 32] with cycle_length=2, block_length=1:
    # after [10] ends, place 0 is refilled (with 3) only on the cycle's next visit, so 21
    # comes before 30.
    ds = Dataset.range(1, 4).interleave(
        lambda x: Dataset.range(int(x) * 10, int(x) * 10 + int(x)), cycle_length=2,
        num_parallel_calls=parallel)
    assert values(ds) == [10, 20, 21, 30, 31, 32]


def test_interleave_block_and_cycle_three():
    ds = Dataset.range(3).interleave(lambda x: Dataset.range(4).map(lambda y: y + 10 * x),
                                     cycle_length=3, block_length=2)
    assert values(ds) == [0, 1, 10, 11, 20, 21, 2, 3, 12, 13, 22, 23]


def test_flat_map_concatenates():
    ds = Dataset.from_tensor_slices([[1, 2, 3], [4, 5, 6]]).flat_map(Dataset.from_tensor_slices)
    assert values(ds) == [1, 2, 3, 4, 5, 6]
    assert ds.element_spec == TensorSpec((), np.int32)


def test_interleave_function_errors():
    with pytest.raises(TypeError, match="must return a Dataset"):
        list(Dataset.range(2).interleave(lambda x: x, cycle_length=1))

    def bad(x):
        raise ValueError("no dataset")
    with pytest.raises(ValueError, match="no dataset") as info:
        list(Dataset.range(2).flat_map(bad))
    assert any("flat_map" in n and "element 0" in n for n in info.value.__notes__)


# ---- shuffle -------------------------------------------------------------------------------
def test_shuffle_is_a_permutation_reproducible_with_seed():
    a = values(Dataset.range(100).shuffle(10, seed=4))
    assert sorted(a) == list(range(100)) and a != list(range(100))
    assert a == values(Dataset.range(100).shuffle(10, seed=4))
    assert a != values(Dataset.range(100).shuffle(10, seed=5))
    assert values(Dataset.range(20).shuffle(1, seed=0)) == list(range(20))


def test_shuffle_buffer_bounds_displacement():
    # An element can only come out after the elements it was buffered with were read.
    out = values(Dataset.range(200).shuffle(8, seed=1))
    for pos, v in enumerate(out):
        assert v <= pos + 7


def test_shuffle_reshuffle_each_iteration():
    ds = Dataset.range(50).shuffle(50, seed=2)
    p1, p2 = values(ds), values(ds)
    assert p1 != p2 and sorted(p1) == sorted(p2)
    ds = Dataset.range(50).shuffle(50, seed=2, reshuffle_each_iteration=False)
    assert values(ds) == values(ds)
    rep = values(Dataset.range(20).shuffle(20, seed=3).repeat(2))
    assert sorted(rep[:20]) == list(range(20)) and rep[:20] != rep[20:]
    rep = values(Dataset.range(20).shuffle(20, seed=3, reshuffle_each_iteration=False).repeat(2))
    assert rep[:20] == rep[20:]


def test_shuffle_seed_none_follows_global_seed():
    lkr.set_seed(11)
    a = values(Dataset.range(30).shuffle(30))
    lkr.set_seed(11)
    b = values(Dataset.range(30).shuffle(30))
    assert a == b


@pytest.mark.parametrize("n, buf, bs", [(1000, 37, 64), (100, 500, 7), (5, 3, 1), (64, 64, 64)])
def test_shuffle_vectorised_chunks_equal_single_steps(n, buf, bs):
    chunked = values(Dataset.range(n).shuffle(buf, seed=9).batch(bs))
    single = values(Dataset.range(n).shuffle(buf, seed=9).map(lambda x: x).batch(bs))
    # the per-element path of the same (columnar) buffer
    assert chunked == single
    assert sorted(v for b in chunked for v in b) == list(range(n))


def test_shuffle_of_strings_and_dicts():
    words = np.array([b"a", b"bb", b"ccc", b"dddd"] * 5)
    out = values(Dataset.from_tensor_slices(words).shuffle(6, seed=0).batch(7))
    assert sorted(w for b in out for w in b) == sorted(words.tolist())
    d = values(Dataset.from_tensor_slices({"k": np.arange(9)}).shuffle(4, seed=0))
    assert sorted(e["k"] for e in d) == list(range(9))


# ---- cache ---------------------------------------------------------------------------------
def test_cache_in_memory_replays_the_first_complete_pass():
    calls = []

    def f(x):
        calls.append(int(x))
        return x
    ds = Dataset.range(5).map(f).cache()
    it = iter(ds)
    next(it)
    del it  # an abandoned pass records nothing
    assert values(ds) == [0, 1, 2, 3, 4]
    n = len(calls)
    assert values(ds) == [0, 1, 2, 3, 4] and len(calls) == n
    shuffled = Dataset.range(20).shuffle(20, seed=1).cache()
    assert values(shuffled) == values(shuffled)  # the first order is frozen, as in tf.data


def test_cache_to_file(tmp_path):
    calls = []

    def f(x):
        calls.append(1)
        return (x, np.full(int(x) % 3 + 1, b"s"))  # varying shapes and strings
    path = str(tmp_path / "c")
    ds = Dataset.range(600).map(f).cache(path)
    first = values(ds)
    assert (tmp_path / "c.lkcache").exists()
    n = len(calls)
    again = values(Dataset.range(600).map(f).cache(path))  # a new pipeline reads the file
    assert again == first and len(calls) == n
    (tmp_path / "c.lkcache").write_bytes(b"junk")
    with pytest.raises(ValueError, match="not a layerkit cache file"):
        list(Dataset.range(3).cache(path))


def test_cache_truncated_file_is_reported(tmp_path):
    path = str(tmp_path / "t")
    list(Dataset.range(1000).cache(path))
    data = (tmp_path / "t.lkcache").read_bytes()
    (tmp_path / "t.lkcache").write_bytes(data[:len(data) // 2])
    with pytest.raises(ValueError, match="t.lkcache is (corrupted or )?truncated"):
        list(Dataset.range(1000).cache(path))


def test_cache_file_bit_flips_are_reported_never_returned(tmp_path):
    path = str(tmp_path / "b")
    build = lambda: Dataset.range(600).map(lambda x: (x, x * 0.5)).cache(path)  # noqa: E731
    expected = values(build())
    good = (tmp_path / "b.lkcache").read_bytes()
    rng = np.random.default_rng(0)
    for pos in rng.integers(0, len(good), 40):
        bad = bytearray(good)
        bad[pos] ^= 1 << int(rng.integers(0, 8))
        (tmp_path / "b.lkcache").write_bytes(bytes(bad))
        try:
            got = values(build())
        except ValueError as e:
            assert "b.lkcache" in str(e)
            continue
        assert got == expected, f"a flip at byte {pos} changed the data silently"


def test_cache_file_is_fsynced_before_the_rename(tmp_path, monkeypatch):
    import layerkit.data.cache as cache_mod
    events = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd):
        kind = "dir" if os.path.isdir(f"/proc/self/fd/{fd}") else "file"
        events.append(f"fsync {kind}")
        real_fsync(fd)

    def replace(a, b):
        events.append("rename")
        real_replace(a, b)
    monkeypatch.setattr(cache_mod.os, "fsync", fsync)
    monkeypatch.setattr(cache_mod.os, "replace", replace)
    list(Dataset.range(5).cache(str(tmp_path / "s")))
    assert events == ["fsync file", "rename", "fsync dir"]


def test_cache_temporary_files_are_kept_only_for_saved_recordings(tmp_path):
    path = str(tmp_path / "k")
    it = iter(Dataset.range(10).cache(path))
    next(it)
    it.close()  # abandoned, no state taken: nothing is left behind
    assert os.listdir(tmp_path) == []
    it = iter(Dataset.range(10).cache(path))
    next(it)
    state = it.get_state()
    it.close()  # a state names the partial file: it stays for a later run
    (left,) = os.listdir(tmp_path)
    it2 = iter(Dataset.range(10).cache(path))
    it2.set_state(state)
    assert values(it2) == list(range(1, 10))
    assert os.listdir(tmp_path) == ["k.lkcache"]  # completed: the partial file is gone


def test_shuffle_memory_is_bounded_by_its_buffer():
    pulled = []

    def count(x):
        pulled.append(int(x))
        return x
    it = iter(Dataset.range(1000).map(count).shuffle(10, seed=0))
    for k in range(1, 30):
        next(it)
        assert len(pulled) <= 10 + k  # the buffer plus the elements already handed out
    chunked = iter(Dataset.range(1000).map(count).shuffle(10, seed=0).batch(4))
    pulled.clear()
    next(chunked)
    assert len(pulled) <= 10 + 4


def test_element_spec_does_not_change_the_shuffle_sequence():
    a = Dataset.range(20).shuffle(20, seed=1).map(lambda x: x)
    b = Dataset.range(20).shuffle(20, seed=1).map(lambda x: x)
    assert a.element_spec is not None
    assert values(a) == values(b)
