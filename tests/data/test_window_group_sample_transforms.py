"""tf.data's further transformations (#14): each against hand-computed element sequences,
with the generic save/restore check at every position."""
from __future__ import annotations

import logging

import numpy as np
import pytest

import layerkit as lk
import layerkit.data as lkd
from layerkit.data import Dataset
from tests.data.data_test_util import assert_save_restore, values


def every(build):
    """Save/restore at every position of the pass."""
    n = len(values(build()))
    assert_save_restore(build, ks=list(range(n + 1)))


# ---- reduce / get_single_element ------------------------------------------------------------
def test_reduce_sums_and_keeps_structure():
    assert int(Dataset.range(5).reduce(np.int64(0), lambda s, x: s + x)) == 10
    ds = Dataset.from_tensor_slices(([1.0, 2.0, 3.0], [4, 5, 6]))
    s, c = ds.reduce((np.float64(0.0), np.int64(0)), lambda st, e: (st[0] + e[0], st[1] + 1))
    assert float(s) == 6.0 and int(c) == 3
    assert int(Dataset.range(0).reduce(np.int64(7), lambda s, x: s + x)) == 7


def test_reduce_rejects_a_state_of_another_structure():
    with pytest.raises(TypeError, match="structure") as info:
        Dataset.range(3).reduce((np.int64(0), np.int64(0)), lambda s, x: s[0])
    assert any("Dataset.reduce" in n for n in info.value.__notes__)
    with pytest.raises(TypeError, match="dtypes"):
        Dataset.range(3).reduce(np.int64(0), lambda s, x: s * 0.5)


def test_get_single_element():
    assert values([Dataset.from_tensors((1, 2)).get_single_element()]) == [(1, 2)]
    with pytest.raises(ValueError, match="empty"):
        Dataset.range(0).get_single_element()
    with pytest.raises(ValueError, match="more than one"):
        Dataset.range(2).get_single_element()


# ---- window ----------------------------------------------------------------------------------
def _windows(ds):
    return [values(w) for w in ds]


@pytest.mark.parametrize("args, expected", [
    ((3,), [[0, 1, 2], [3, 4, 5], [6]]),
    ((3, 1, 1, True), [[0, 1, 2], [1, 2, 3], [2, 3, 4], [3, 4, 5], [4, 5, 6]]),
    ((3, 1, 2, True), [[0, 2, 4], [1, 3, 5], [2, 4, 6]]),
    ((3, 1, 2, False), [[0, 2, 4], [1, 3, 5], [2, 4, 6], [3, 5], [4, 6], [5], [6]]),
    ((2, 3), [[0, 1], [3, 4], [6]]),
    ((2, 3, 1, True), [[0, 1], [3, 4]]),
    ((2, 5, 2), [[0, 2], [5]]),
    ((8, None, 1, True), []),
])
def test_window_elements_and_cardinality(args, expected):
    ds = Dataset.range(7).window(*args)
    assert _windows(ds) == expected
    assert ds.cardinality() == len(expected)


def test_window_of_nested_elements_is_a_structure_of_datasets():
    ds = Dataset.from_tensor_slices({"a": [1, 2, 3], "b": [[1.0], [2.0], [3.0]]}).window(2)
    spec = ds.element_spec
    assert isinstance(spec["a"], lkd.DatasetSpec)
    assert spec["b"].element_spec == lkd.TensorSpec((1,), "float32")
    first = next(iter(ds))
    assert values(first["a"]) == [1, 2] and values(first["b"]) == [[1.0], [2.0]]
    # the flat_map(batch) idiom with zip over components
    pairs = Dataset.from_tensor_slices(([1, 2, 3, 4], [5, 6, 7, 8])).window(2).flat_map(
        lambda x, y: Dataset.zip((x.batch(2), y.batch(2))))
    assert values(pairs) == [([1, 2], [5, 6]), ([3, 4], [7, 8])]


def test_window_flat_map_batch_idiom_and_state():
    def build():
        return Dataset.range(10).window(4, shift=2, drop_remainder=True).flat_map(
            lambda w: w.batch(4))
    assert values(build()) == [[0, 1, 2, 3], [2, 3, 4, 5], [4, 5, 6, 7], [6, 7, 8, 9]]
    every(build)
    # mid-window: the inner iterator over a window is saved with the window's elements
    every(lambda: Dataset.range(7).window(3, 2).flat_map(lambda w: w))


def test_window_as_numpy_iterator_refuses_and_bad_args():
    with pytest.raises(TypeError, match="window"):
        next(Dataset.range(3).window(2).as_numpy_iterator())
    with pytest.raises(ValueError, match="shift"):
        Dataset.range(3).window(2, shift=0)
    with pytest.raises(ValueError, match="size"):
        Dataset.range(3).window(0)


# ---- scan / take_while / unique / ignore_errors ---------------------------------------------
def test_scan_running_sum_and_state():
    def build():
        return Dataset.range(6).scan(np.int64(0), lambda s, x: (s + x, s * 10 + x))
    # states 0,0,1,3,6,10 before each element; outputs state*10 + x
    assert values(build()) == [0, 1, 12, 33, 64, 105]
    every(build)


def test_scan_with_tuple_state_and_errors():
    ds = Dataset.range(4).scan((np.int64(0), np.int64(1)),
                               lambda s, x: ((s[1], s[0] + s[1]), s[0]))
    assert values(ds) == [0, 1, 1, 2]
    with pytest.raises(TypeError, match="pair"):
        list(Dataset.range(2).scan(np.int64(0), lambda s, x: s))


def test_take_while():
    def build():
        return Dataset.range(10).take_while(lambda x: x < 4)
    assert values(build()) == [0, 1, 2, 3]
    every(build)
    # stops at the first False even when later elements would pass
    assert values(Dataset.from_tensor_slices([1, 2, 0, 3]).take_while(lambda x: x > 0)) == [1, 2]
    with pytest.raises(TypeError, match="take_while predicate"):
        list(Dataset.range(3).take_while(lambda x: x))


def test_unique_keeps_first_occurrences():
    def build():
        return Dataset.from_tensor_slices([1, 3, 1, 2, 3, 5, 2, 1]).unique()
    assert values(build()) == [1, 3, 2, 5]
    every(build)
    words = Dataset.from_tensor_slices(np.array([b"a", b"b", b"a", b"c"])).unique()
    assert values(words) == [b"a", b"b", b"c"]
    every(lambda: Dataset.from_tensor_slices(np.array([b"x", b"x", b"y"])).unique())
    with pytest.raises(TypeError, match="scalars of int32"):
        Dataset.from_tensor_slices([[1.0], [2.0]]).unique()


def _fail_on_odd(x):
    if int(x) % 2:
        raise ValueError(f"odd {int(x)}")
    return x


def test_ignore_errors_drops_failed_elements(caplog):
    def build():
        return Dataset.range(7).map(_fail_on_odd).ignore_errors()
    assert values(build()) == [0, 2, 4, 6]
    every(build)
    with caplog.at_level(logging.WARNING, logger="layerkit.data"):
        assert values(Dataset.range(3).map(_fail_on_odd).ignore_errors(log_warning=True)) \
            == [0, 2]
    assert "odd 1" in caplog.text


# ---- group_by_window / bucket_by_sequence_length --------------------------------------------
def test_group_by_window_order_and_tail_flush_in_key_order():
    def build():
        return Dataset.from_tensor_slices(np.array([0, 0, 0, 0, 1, 1, 1, 1, 1, 0, 0, 0])) \
            .group_by_window(lambda x: x % 2, lambda k, w: w.batch(4), window_size=4)
    assert values(build()) == [[0, 0, 0, 0], [1, 1, 1, 1], [0, 0, 0], [1]]
    every(build)


def test_group_by_window_interleaved_keys_and_window_size_func():
    # keys: x % 3; window sizes 1 + key
    ds = Dataset.range(12).group_by_window(
        lambda x: x % 3, lambda k, w: w.batch(10).map(lambda b: (k, b)),
        window_size_func=lambda k: k + 1)
    got = [(k, b) for k, b in values(ds)]
    # key 0 windows of 1: 0, 3, 6, 9; key 1 windows of 2: [1,4], [7,10]; key 2 of 3: [2,5,8]
    # produced when full, in input order; at the end key 2's [11] is flushed
    assert got == [(0, [0]), (0, [3]), (1, [1, 4]), (0, [6]), (2, [2, 5, 8]), (0, [9]),
                   (1, [7, 10]), (2, [11])]
    every(lambda: Dataset.range(12).group_by_window(
        lambda x: x % 3, lambda k, w: w.batch(10), window_size_func=lambda k: k + 1))


def test_group_by_window_argument_errors():
    with pytest.raises(ValueError, match="exactly one"):
        Dataset.range(3).group_by_window(lambda x: x, lambda k, w: w)
    with pytest.raises(TypeError, match="key_func must return a scalar integer"):
        list(Dataset.range(3).group_by_window(lambda x: x * 0.5, lambda k, w: w, 2))
    with pytest.raises(TypeError, match="must return a Dataset"):
        list(Dataset.range(3).group_by_window(lambda x: x, lambda k, w: 1, 1))


def test_bucket_by_sequence_length():
    seqs = [[1], [1, 2, 3], [1, 2], [1, 2, 3, 4, 5], [1, 2, 3, 4], [7]]

    def build(**kw):
        ds = Dataset.from_generator(lambda: iter(seqs),
                                    output_signature=lkd.TensorSpec((None,), "int64"))
        return ds.bucket_by_sequence_length(lambda x: x.shape[0], [3, 5], [2, 2, 2], **kw)
    # buckets: len < 3 -> 0, 3 <= len < 5 -> 1, len >= 5 -> 2
    # [1] (0), [1,2,3] (1), [1,2] (0): bucket 0 full -> [[1,0],[1,2]]
    # [1..5] (2), [1..4] (1): bucket 1 full -> [[1,2,3,0],[1,2,3,4]]; [7] (0)
    # end: bucket 0 [[7]], bucket 2 [[1,2,3,4,5]]
    assert values(build()) == [[[1, 0], [1, 2]], [[1, 2, 3, 0], [1, 2, 3, 4]], [[7]],
                               [[1, 2, 3, 4, 5]]]
    every(build)
    assert values(build(drop_remainder=True)) == [[[1, 0], [1, 2]],
                                                 [[1, 2, 3, 0], [1, 2, 3, 4]]]
    short = [s for s in seqs if len(s) < 5]

    def build_pad():
        ds = Dataset.from_generator(lambda: iter(short),
                                    output_signature=lkd.TensorSpec((None,), "int64"))
        return ds.bucket_by_sequence_length(lambda x: x.shape[0], [3, 5], [2, 2, 2],
                                            pad_to_bucket_boundary=True, padding_values=-1)
    assert values(build_pad()) == [[[1, -1], [1, 2]], [[1, 2, 3, -1], [1, 2, 3, 4]], [[7, -1]]]
    with pytest.raises(ValueError, match=r"len\(bucket_batch_sizes\)"):
        Dataset.range(3).bucket_by_sequence_length(lambda x: 1, [3], [2])


# ---- choose_from_datasets / sample_from_datasets ---------------------------------------------
def test_choose_from_datasets_order_and_empty_inputs():
    a, b = Dataset.range(0, 3), Dataset.range(10, 12)

    def build(stop=True):
        choice = Dataset.from_tensor_slices(np.array([0, 1, 1, 1, 0, 0, 0], np.int64))
        return Dataset.choose_from_datasets([a, b], choice, stop_on_empty_dataset=stop)
    # b runs out at the third 1: stop -> end there; else skip it and go on
    assert values(build()) == [0, 10, 11]
    assert values(build(False)) == [0, 10, 11, 1, 2]
    every(lambda: build(False))
    with pytest.raises(TypeError, match="int64"):
        Dataset.choose_from_datasets([a, b], Dataset.from_tensor_slices([0.0]))
    with pytest.raises(ValueError, match="index 2"):
        list(Dataset.choose_from_datasets([a, b], Dataset.from_tensor_slices(np.array([2]))))


def test_sample_from_datasets_follows_weights_and_reproduces():
    a, b = Dataset.counter(0).map(lambda x: x * 0), Dataset.counter(0).map(lambda x: x * 0 + 1)
    ds = Dataset.sample_from_datasets([a, b], weights=[0.25, 0.75], seed=3).take(4000)
    picks = np.array(values(ds))
    assert abs(picks.mean() - 0.75) < 0.03
    assert values(Dataset.sample_from_datasets([a, b], [0.25, 0.75], seed=3).take(50)) \
        == picks[:50].tolist()
    lk.random.set_seed(5)
    x = values(Dataset.sample_from_datasets([a, b]).take(30))
    lk.random.set_seed(5)
    assert values(Dataset.sample_from_datasets([a, b]).take(30)) == x


def test_sample_from_datasets_exhaustion_and_state():
    def build(stop=False, rerand=None):
        return Dataset.sample_from_datasets([Dataset.range(0, 5), Dataset.range(100, 103)],
                                            seed=1, stop_on_empty_dataset=stop,
                                            rerandomize_each_iteration=rerand)
    got = values(build())
    # every element of both inputs, each input in its own order
    assert sorted(got) == [0, 1, 2, 3, 4, 100, 101, 102]
    assert [v for v in got if v < 100] == [0, 1, 2, 3, 4]
    every(build)
    stopped = values(build(stop=True))
    assert len(stopped) < 8 and stopped == got[:len(stopped)]
    # the same choices on each pass unless rerandomized
    ds = build()
    assert values(ds) == values(ds)
    ds = build(rerand=True).repeat(6)
    passes = np.array(values(ds)).reshape(6, 8)
    assert len({tuple(p) for p in passes}) > 1
    every(lambda: build(rerand=True).repeat(2))


def test_sample_from_datasets_weights_dataset_and_zero_weight():
    a, b = Dataset.range(0, 100), Dataset.range(100, 200)
    # weights flip from all-a to all-b after 3 draws
    w = Dataset.from_tensor_slices(np.array([[1.0, 0.0]] * 3 + [[0.0, 1.0]] * 3))
    assert values(Dataset.sample_from_datasets([a, b], w, seed=0)) == [0, 1, 2, 100, 101, 102]
    assert values(Dataset.sample_from_datasets([a, b], [0.0, 1.0]).take(3)) == [100, 101, 102]
    with pytest.raises(ValueError, match="one entry per dataset"):
        Dataset.sample_from_datasets([a, b], [1.0])


# ---- counter / random --------------------------------------------------------------------------
def test_counter():
    ds = Dataset.counter(3, 2)
    assert ds.cardinality() == lkd.INFINITE
    assert values(ds.take(4)) == [3, 5, 7, 9]
    assert values(lkd.experimental.Counter().take(3)) == [0, 1, 2]
    every(lambda: Dataset.counter(-1, -3).take(5))


def test_random_is_seeded_and_restorable():
    a = values(Dataset.random(seed=4).take(20))
    assert a == values(Dataset.random(seed=4).take(20))
    assert a != values(Dataset.random(seed=5).take(20))
    assert all(0 <= v < 2**32 for v in a) and len(set(a)) == 20
    assert Dataset.random(seed=1).element_spec == lkd.TensorSpec((), "int64")
    every(lambda: Dataset.random(seed=4).take(8))
    ds = Dataset.random(seed=4, rerandomize_each_iteration=True).take(5)
    assert values(ds) != values(ds)
    same = Dataset.random(seed=4).take(5)
    assert values(same) == values(same)
    every(lambda: Dataset.random(seed=2, rerandomize_each_iteration=True).take(3).repeat(3))


# ---- rejection_resample --------------------------------------------------------------------
def _resampled_fraction(ds, n):
    classes = np.array([c for c, _ in values(ds.take(n))])
    return classes.mean()


def test_rejection_resample_reaches_the_target_distribution():
    # input: class 1 one time in 10
    data = Dataset.counter().map(lambda x: x % 10 == 0).map(lambda b: lk.cast(b, "int64"))
    ds = data.rejection_resample(lambda c: c, [0.5, 0.5], initial_dist=[0.9, 0.1], seed=2)
    assert abs(_resampled_fraction(ds, 3000) - 0.5) < 0.05
    c, e = next(iter(ds))
    assert int(c) == int(e)
    est = data.rejection_resample(lambda c: c, [0.5, 0.5], seed=2)
    assert abs(_resampled_fraction(est.skip(500), 3000) - 0.5) < 0.06
    assert values(ds.take(30)) == values(data.rejection_resample(
        lambda c: c, [0.5, 0.5], initial_dist=[0.9, 0.1], seed=2).take(30))


def test_rejection_resample_state_and_trivial_cases():
    data = Dataset.range(40).map(lambda x: lk.cast(x % 4 == 0, "int64"))
    every(lambda: data.rejection_resample(lambda c: c, [0.5, 0.5], [0.75, 0.25], seed=1))
    every(lambda: data.rejection_resample(lambda c: c, [0.5, 0.5], seed=1).take(12))
    same = data.rejection_resample(lambda c: c, [0.75, 0.25], [0.75, 0.25])
    assert values(same) == [(int(v), int(v)) for v in values(data)]
    with pytest.raises(ValueError, match="class 1"):
        list(data.rejection_resample(lambda c: c, [1.0], [1.0]))


# ---- cardinality, assert_cardinality, options, repr, experimental ---------------------------
def test_cardinality_of_new_transforms():
    assert Dataset.range(10).scan(np.int64(0), lambda s, x: (s, x)).cardinality() == 10
    assert Dataset.range(10).take_while(lambda x: x < 3).cardinality() == lkd.UNKNOWN
    assert Dataset.counter().window(3).cardinality() == lkd.INFINITE
    assert lkd.experimental.cardinality(Dataset.range(5)) == 5
    assert lkd.UNKNOWN_CARDINALITY == -2 and lkd.experimental.INFINITE_CARDINALITY == -1


def test_assert_cardinality():
    ds = Dataset.range(10).filter(lambda x: x < 5)
    assert ds.assert_cardinality(5).cardinality() == 5
    assert len(ds.apply(lkd.experimental.assert_cardinality(5))) == 5
    assert values(ds.assert_cardinality(5)) == [0, 1, 2, 3, 4]
    with pytest.raises(ValueError, match="expected to contain 4 elements but contained at"):
        list(ds.assert_cardinality(4))
    with pytest.raises(ValueError, match="contained only 5"):
        list(ds.assert_cardinality(6))
    every(lambda: ds.assert_cardinality(5))


def test_options_merge_and_unknown_fields():
    o = lkd.Options()
    o.experimental_deterministic = False
    o.threading.private_threadpool_size = 4
    ds = Dataset.range(3).with_options(o).map(lambda x: x + 1)
    assert ds.options().deterministic is False
    assert ds.options().threading.private_threadpool_size == 4
    o2 = lkd.Options()
    o2.autotune.enabled = False
    both = ds.with_options(o2).options()
    assert both.deterministic is False and both.autotune.enabled is False
    assert values(ds) == [1, 2, 3]
    o3 = lkd.Options()
    o3.experimental_distribute.auto_shard_policy = lkd.experimental.AutoShardPolicy.DATA
    assert Dataset.range(1).with_options(o3).options().experimental_distribute \
        .auto_shard_policy == lkd.experimental.AutoShardPolicy.DATA
    with pytest.raises(AttributeError, match="no option"):
        o.not_an_option = 1
    with pytest.raises(TypeError, match="Options"):
        Dataset.range(1).with_options({"deterministic": False})
    assert Dataset.range(2).options() == lkd.Options()


def test_batch_accepts_tf_arguments_and_repr():
    ds = Dataset.range(5).batch(2, num_parallel_calls=lkd.AUTOTUNE, deterministic=False)
    assert values(ds) == [[0, 1], [2, 3], [4]]
    assert repr(ds) == "<_BatchDataset element_spec=TensorSpec(shape=(None,), dtype=int64)>"
    assert repr(Dataset.range(3).window(2)).startswith("<_WindowDataset element_spec=DatasetSpec(")


def test_experimental_apply_functions():
    ds = Dataset.from_tensor_slices([3, 1, 3, 2])
    assert values(ds.apply(lkd.experimental.unique())) == [3, 1, 2]
    assert values(ds.apply(lkd.experimental.take_while(lambda x: x > 0))) == [3, 1, 3, 2]
    assert values(ds.apply(lkd.experimental.scan(np.int64(0), lambda s, x: (s + x, s)))) \
        == [0, 3, 4, 7]
    assert lkd.experimental.get_single_element(Dataset.from_tensors(7)).numpy() == 7
    assert lkd.experimental.AUTOTUNE == lkd.AUTOTUNE
