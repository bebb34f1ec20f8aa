"""lk.utils.timeseries_dataset_from_array (Keras's windows) and split_dataset (Keras's
sizes and shuffling rule), returning lk.data Datasets."""
import random

import numpy as np
import pytest

import layerkit as lk

ts = lk.utils.timeseries_dataset_from_array


def _items(ds):
    return [tuple(np.asarray(v).tolist() for v in e) if isinstance(e, tuple)
            else np.asarray(e).tolist() for e in ds.as_numpy_iterator()]


# ---- timeseries_dataset_from_array -------------------------------------------------------
def test_keras_example_1_windows_of_indices():
    # Keras's docstring: indices 0..98, sequence_length=10, sampling_rate=2,
    # sequence_stride=3: [0 2 ... 18], [3 5 ... 21], ..., last [78 80 ... 96]
    ds = ts(np.arange(99), None, sequence_length=10, sequence_stride=3, sampling_rate=2,
            batch_size=None)
    windows = _items(ds)
    assert windows[0] == list(range(0, 20, 2)) and windows[1] == list(range(3, 23, 2))
    assert windows[-1] == list(range(78, 98, 2)) and len(windows) == 27
    assert isinstance(ds, lk.data.Dataset)


def test_keras_example_2_temporal_regression_targets():
    data = np.arange(100, dtype=np.float32) * 0.5
    ds = ts(data[:-10], data[10:], sequence_length=10, batch_size=16)
    batches = list(ds)
    x, y = batches[0]
    np.testing.assert_array_equal(x.numpy()[0], data[:10])   # steps 0-9
    assert float(y.numpy()[0]) == data[10]                   # target: step 10
    assert x.dtype == np.float32 and x.shape == (16, 10)
    assert sum(b[0].shape[0] for b in batches) == 81         # 90 - 9 windows
    assert [b[0].shape[0] for b in batches][-1] == 1


def test_keras_example_3_non_overlapping_many_to_many():
    x_ = np.arange(100)
    y_ = x_ * 2
    inputs = ts(x_, None, sequence_length=20, sequence_stride=20, batch_size=128)
    targets = ts(y_, None, sequence_length=20, sequence_stride=20, batch_size=128)
    (xb,), (yb,) = list(inputs), list(targets)
    assert xb.shape == (5, 20)
    np.testing.assert_array_equal(xb.numpy()[0], x_[:20])
    np.testing.assert_array_equal(yb.numpy()[1], y_[20:40])


def test_start_end_index_rows_and_targets():
    data = np.arange(20).reshape(10, 2)
    ds = ts(data, np.arange(100, 110), 3, sequence_stride=2, batch_size=2, start_index=1,
            end_index=9)
    # rows 1..8 only: windows start at rows 1, 3, 5 (rows 5, 6, 7 is the last to fit);
    # targets[start_index + i] for the window starting at start_index + i
    assert _items(ds) == [([[[2, 3], [4, 5], [6, 7]], [[6, 7], [8, 9], [10, 11]]], [101, 103]),
                          ([[[10, 11], [12, 13], [14, 15]]], [105])]
    # targets shorter than the data: windows without a target are left out
    short = ts(np.arange(10), np.arange(4), 3, batch_size=None)
    assert [w for w, _ in _items(short)] == [[0, 1, 2], [1, 2, 3], [2, 3, 4], [3, 4, 5]]


def test_shuffle_uses_keras_randomstate_order_then_a_buffer():
    data = np.arange(20)
    order = np.arange(17, dtype=np.int32)
    np.random.RandomState(7).shuffle(order)   # Keras's first stage
    ds = ts(data, None, 4, batch_size=None, shuffle=True, seed=7)
    first_epoch = _items(ds)
    starts = [w[0] for w in first_epoch]
    assert sorted(starts) == list(range(17)) and starts != list(range(17))
    ds_big = ts(data, None, 4, batch_size=100, shuffle=True, seed=7)   # buffer >= 17
    assert sorted(np.asarray(next(iter(ds_big)))[:, 0].tolist()) == sorted(order.tolist())
    # the same seed gives the same order; each epoch reshuffles within the buffer
    assert _items(ts(data, None, 4, batch_size=None, shuffle=True, seed=7)) == first_epoch
    second_epoch = _items(ds)
    assert second_epoch != first_epoch and sorted(second_epoch) == sorted(first_epoch)
    for w in first_epoch:                                    # every window stays exact
        assert w == list(range(w[0], w[0] + 4))


def test_timeseries_argument_errors():
    data = np.arange(10)
    for kwargs, match in [(dict(start_index=-1), "`start_index` must be 0 or greater"),
                          (dict(start_index=10), "`start_index` must be lower"),
                          (dict(start_index=5, end_index=4), "`end_index` must be higher than"),
                          (dict(end_index=10), "`end_index` must be lower"),
                          (dict(sampling_rate=0), "`sampling_rate` must be higher than 0"),
                          (dict(sampling_rate=10), "`sampling_rate` must be lower"),
                          (dict(sequence_stride=0), "`sequence_stride` must be higher"),
                          (dict(batch_size=0), "batch_size")]:
        with pytest.raises(ValueError, match=match):
            ts(data, None, 3, **kwargs)
    with pytest.raises(ValueError, match="scalar"):
        ts(5, None, 3)
    assert _items(ts(data, None, 20, batch_size=None)) == []   # no window fits


# ---- split_dataset --------------------------------------------------------------------------
def test_split_arrays_sizes_and_keras_rounding():
    left, right = lk.utils.split_dataset(np.arange(10), left_size=0.8)
    assert _items(left) == list(range(8)) and _items(right) == [8, 9]
    left, right = lk.utils.split_dataset(np.arange(10), right_size=3)
    assert _items(left) == list(range(7)) and _items(right) == [7, 8, 9]
    # sizes that do not add up: the samples in between are in neither split
    left, right = lk.utils.split_dataset(np.arange(10), left_size=2, right_size=0.25)
    assert _items(left) == [0, 1] and _items(right) == [8, 9]   # round(2.5) == 2


def test_split_tuples_and_dicts_keep_their_structure():
    x, y = np.arange(12).reshape(6, 2), np.arange(6) * 10
    left, right = lk.utils.split_dataset((x, y), left_size=4)
    assert _items(right) == [([8, 9], 40), ([10, 11], 50)]
    left, right = lk.utils.split_dataset([x, y], left_size=4)   # a list is a tuple, as Keras
    assert _items(right)[0] == ([8, 9], 40)
    d_left, _ = lk.utils.split_dataset({"a": x, "b": y}, left_size=1)
    (only,) = list(d_left.as_numpy_iterator())
    assert only["a"].tolist() == [0, 1] and int(only["b"]) == 0


def test_split_shuffle_is_pythons_random_shuffle_with_the_seed():
    left, right = lk.utils.split_dataset(np.arange(10), left_size=5, right_size=3,
                                         shuffle=True, seed=3)
    order = list(range(10))
    random.Random(3).shuffle(order)   # what Keras does: random.seed(seed); random.shuffle
    assert _items(left) == order[:5] and _items(right) == order[-3:]


def test_split_an_lk_dataset_rebatches_with_its_batch_size():
    ds = lk.data.Dataset.from_tensor_slices((np.arange(7.0), np.arange(7))).batch(2).prefetch(1)
    left, right = lk.utils.split_dataset(ds, right_size=0.3)     # round(2.1) == 2
    assert [b[0].tolist() for b in left.as_numpy_iterator()] == [[0, 1], [2, 3], [4]]
    assert [b[1].tolist() for b in right.as_numpy_iterator()] == [[5, 6]]
    plain = lk.data.Dataset.range(5)
    assert _items(lk.utils.split_dataset(plain, left_size=2)[1]) == [2, 3, 4]


def test_split_errors():
    with pytest.raises(ValueError, match="at least one of"):
        lk.utils.split_dataset(np.arange(4))
    with pytest.raises(ValueError, match="positive integer smaller than 4"):
        lk.utils.split_dataset(np.arange(4), left_size=4)
    with pytest.raises(ValueError, match="float within the range"):
        lk.utils.split_dataset(np.arange(4), right_size=1.0)
    with pytest.raises(ValueError, match="greater than 1"):
        lk.utils.split_dataset(np.arange(4), left_size=0.6, right_size=0.6)
    with pytest.raises(ValueError, match="at most the number of samples 4"):
        lk.utils.split_dataset(np.arange(4), left_size=3, right_size=2)
    with pytest.raises(ValueError, match="left split would be empty"):
        lk.utils.split_dataset(np.arange(4), left_size=0.1)
    with pytest.raises(TypeError, match="left_size"):
        lk.utils.split_dataset(np.arange(4), left_size="2")
    with pytest.raises(ValueError, match="same length"):
        lk.utils.split_dataset((np.arange(4), np.arange(3)), left_size=1)
    with pytest.raises(TypeError, match="lk.data.Dataset"):
        lk.utils.split_dataset(5, left_size=1)
    with pytest.raises(ValueError, match="empty dataset"):
        lk.utils.split_dataset(lk.data.Dataset.range(0), left_size=1)
