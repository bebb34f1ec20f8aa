"""Sources, element structure, element_spec, cardinality and len."""
from __future__ import annotations

import collections
import os
import subprocess
import sys

import numpy as np
import pytest

import layerkit as lk
import layerkit.data as lkd
from layerkit.data import Dataset, TensorSpec

from .data_test_util import values


def test_from_tensor_slices_tuple_and_types():
    x = np.arange(6, dtype=np.float32).reshape(3, 2)
    ds = Dataset.from_tensor_slices((x, [7, 8, 9]))
    elems = list(ds)
    assert len(elems) == 3
    a, b = elems[1]
    assert isinstance(a, lk.Tensor) and isinstance(b, lk.Tensor)
    assert a.numpy().tolist() == [2.0, 3.0] and a.dtype == np.float32
    assert int(b) == 8 and b.dtype == np.int32 and b.shape == ()  # Python ints: int32 (TF)
    assert ds.element_spec == (TensorSpec((2,), np.float32), TensorSpec((), np.int32))
    assert ds.cardinality() == 3 and len(ds) == 3


def test_from_tensor_slices_list_is_one_tensor_and_floats_are_float32():
    ds = Dataset.from_tensor_slices([[1.0, 2.0], [3.0, 4.0]])
    assert values(ds) == [[1.0, 2.0], [3.0, 4.0]]
    assert ds.element_spec.dtype == np.float32


def test_from_tensor_slices_dict_and_nested():
    ds = Dataset.from_tensor_slices({"a": np.arange(3), "b": (np.ones((3, 2)), np.zeros(3))})
    assert values(ds)[2] == {"a": 2, "b": ([1.0, 1.0], 0.0)}
    spec = ds.element_spec
    assert spec["b"][0] == TensorSpec((2,), np.float64)


def test_from_tensor_slices_accepts_tensors_and_namedtuples():
    Point = collections.namedtuple("Point", "x y")
    ds = Dataset.from_tensor_slices(Point(lk.constant([1.0, 2.0]), np.array([3, 4])))
    e = next(iter(ds))
    assert type(e).__name__ == "Point" and float(e.x) == 1.0 and int(e.y) == 3


@pytest.mark.parametrize("bad, msg", [
    ((np.zeros(3), np.zeros(4)), "same size in the first dimension"),
    (np.float32(3.0), "at least one dimension"),
])
def test_from_tensor_slices_errors(bad, msg):
    with pytest.raises(ValueError, match=msg):
        Dataset.from_tensor_slices(bad)


def test_from_tensors_single_element():
    ds = Dataset.from_tensors(([1, 2, 3], "abc"))
    assert values(ds) == [([1, 2, 3], b"abc")]
    assert ds.cardinality() == 1
    assert ds.element_spec == (TensorSpec((3,), np.int32), TensorSpec((), np.dtype("S")))


@pytest.mark.parametrize("args, expected", [
    ((5,), [0, 1, 2, 3, 4]),
    ((2, 5), [2, 3, 4]),
    ((1, 10, 3), [1, 4, 7]),
    ((5, 1, -2), [5, 3]),
    ((5, 2), []),
])
def test_range(args, expected):
    ds = Dataset.range(*args)
    assert values(ds) == expected
    assert ds.cardinality() == len(expected)
    assert values(ds.batch(2)) == [expected[i:i + 2] for i in range(0, len(expected), 2)]


def test_range_dtype_and_errors():
    ds = Dataset.range(3, dtype=np.int32)
    assert ds.element_spec == TensorSpec((), np.int32)
    assert next(iter(ds)).dtype == np.int32
    with pytest.raises(ValueError, match="step"):
        Dataset.range(0, 5, 0)


def test_from_generator_with_signature_converts_and_checks():
    def gen():
        yield [1, 2], 0
        yield [3, 4], 1
    sig = (TensorSpec((2,), np.float32), TensorSpec((), np.int32))
    ds = Dataset.from_generator(gen, output_signature=sig)
    e = values(ds)
    assert e == [([1.0, 2.0], 0), ([3.0, 4.0], 1)]
    x, y = next(iter(ds))
    assert x.dtype == np.float32 and y.dtype == np.int32
    assert ds.element_spec == sig and ds.cardinality() == lkd.UNKNOWN


def test_from_generator_signature_mismatch_names_element():
    ds = Dataset.from_generator(lambda: iter([[1, 2], [1, 2, 3]]),
                                output_signature=TensorSpec((2,), np.int64))
    it = iter(ds)
    next(it)
    with pytest.raises(ValueError, match=r"element 1 .*expected shape \(2,\), received \(3,\)"):
        next(it)


def test_from_generator_legacy_types_and_args():
    def gen(n):
        for i in range(n):
            yield i, float(i)
    ds = Dataset.from_generator(gen, output_types=(np.int64, np.float32), args=(3,))
    assert values(ds) == [(0, 0.0), (1, 1.0), (2, 2.0)]
    assert next(iter(ds))[1].dtype == np.float32


def test_from_generator_needs_callable():
    with pytest.raises(TypeError, match="callable"):
        Dataset.from_generator(iter([1, 2]))


def test_from_generator_error_keeps_type_and_adds_note():
    def gen():
        yield 1
        raise KeyError("boom")
    it = iter(Dataset.from_generator(gen))
    assert int(next(it)) == 1
    with pytest.raises(KeyError, match="boom") as info:
        next(it)
    assert any("from_generator" in n and "element 1" in n for n in info.value.__notes__)
    with pytest.raises(StopIteration):
        next(it)


def test_zip_stops_at_shortest_and_structures():
    a, b = Dataset.range(1, 4), Dataset.range(4, 9)
    assert values(Dataset.zip(a, b)) == [(1, 4), (2, 5), (3, 6)]
    assert values(Dataset.zip((a, b))) == [(1, 4), (2, 5), (3, 6)]
    assert Dataset.zip(a, b).cardinality() == 3
    d = Dataset.zip({"x": a, "y": (b, a)})
    assert values(d)[0] == {"x": 1, "y": (4, 1)}
    assert Dataset.zip(a, b.repeat()).cardinality() == 3
    assert Dataset.zip(a.repeat(), b.repeat()).cardinality() == lkd.INFINITE
    assert Dataset.zip(a, b.filter(lambda x: True)).cardinality() == lkd.UNKNOWN


def test_zip_batch_uses_chunks_and_matches_per_element():
    a, b = Dataset.range(10), Dataset.range(100, 107)
    chunked = values(Dataset.zip(a, b).batch(3))
    per_elem = values(Dataset.zip(a, b.map(lambda x: x)).batch(3))
    assert chunked == per_elem == [([0, 1, 2], [100, 101, 102]), ([3, 4, 5], [103, 104, 105]),
                                   ([6], [106])]


def test_list_files_sorted_and_shuffled(tmp_path):
    names = ["b.txt", "a.txt", "c.txt", "d.dat"]
    for n in names:
        (tmp_path / n).write_text(n)
    pattern = str(tmp_path / "*.txt")
    got = [os.path.basename(v.decode()) for v in values(Dataset.list_files(pattern, shuffle=False))]
    assert got == ["a.txt", "b.txt", "c.txt"]
    s1 = values(Dataset.list_files(pattern, seed=3))
    s2 = values(Dataset.list_files(pattern, seed=3))
    assert s1 == s2 and sorted(s1) == sorted(v for v in values(
        Dataset.list_files(pattern, shuffle=False)))
    with pytest.raises(ValueError, match="no files match"):
        Dataset.list_files(str(tmp_path / "*.none"))


def test_len_cardinality_and_errors():
    assert len(Dataset.range(7).batch(3)) == 3
    assert Dataset.range(7).batch(3, drop_remainder=True).cardinality() == 2
    with pytest.raises(TypeError, match="infinite"):
        len(Dataset.range(3).repeat())
    with pytest.raises(TypeError, match="unknown"):
        len(Dataset.range(3).filter(lambda x: True))
    assert bool(Dataset.range(0)) is True
    assert (lkd.INFINITE, lkd.UNKNOWN) == (-1, -2)


def test_as_numpy_iterator_types():
    ds = Dataset.from_tensor_slices((np.arange(2), np.ones((2, 2), np.float32)))
    x, y = next(ds.as_numpy_iterator())
    assert isinstance(x, np.int64) and isinstance(y, np.ndarray) and y.dtype == np.float32
    s = next(Dataset.from_tensors("héllo").as_numpy_iterator())
    assert isinstance(s, bytes) and s.decode() == "héllo"


def test_dataset_is_reiterable_and_immutable():
    ds = Dataset.range(4)
    d2 = ds.map(lambda x: x + 1)
    assert values(ds) == [0, 1, 2, 3] and values(ds) == [0, 1, 2, 3]
    assert values(d2) == [1, 2, 3, 4]
    with pytest.raises(TypeError):
        Dataset(42)
    # tf.data's form: the top stage and the element spec
    assert repr(d2) == "<_MapDataset element_spec=TensorSpec(shape=(), dtype=int64)>"


def test_element_spec_of_map_relaxes_batch_dimension():
    ds = Dataset.from_tensor_slices(np.zeros((10, 3), np.float32)).batch(4).map(lambda x: x * 2)
    assert ds.element_spec == TensorSpec((None, 3), np.float32)
    ds = Dataset.from_tensor_slices(np.zeros((10, 3), np.float32)).batch(4, True).map(lambda x: x)
    assert ds.element_spec == TensorSpec((4, 3), np.float32)


def test_import_layerkit_data_does_not_import_pyarrow():
    code = ("import sys, layerkit, layerkit.data as d; d.Dataset.range(3).batch(2); "
            "print('pyarrow' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "False", out.stderr


def test_tensor_spec_compatibility():
    s = TensorSpec((None, 3), np.float32)
    assert s.is_compatible_with(np.zeros((5, 3), np.float32))
    assert not s.is_compatible_with(np.zeros((5, 4), np.float32))
    assert not s.is_compatible_with(np.zeros((5, 3), np.float64))
    assert "None, 3" in repr(s)
