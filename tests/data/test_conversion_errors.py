"""Audit regressions for layerkit.data: silent lossy conversions and errors that lost
their context (file, map, element)."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import layerkit as lk
from layerkit.data import Dataset, TensorSpec

pytestmark = pytest.mark.timeout(60)


# ---- Parquet: a later file whose column type differs from the first file's -------------------
@pytest.mark.parametrize("later", [
    pa.array([0.5, 1.7], pa.float64()),       # 0.5 -> 0 as int32
    pa.array([-1, 2 ** 40], pa.int64()),      # 2**40 -> 0 as int32
    pa.array(["a", "b"]),                     # was a bare "invalid literal for int()"
])
@pytest.mark.parametrize("batched", [False, True])
def test_parquet_later_file_with_lossy_type_raises_naming_it(tmp_path, later, batched):
    first, second = tmp_path / "a.parquet", tmp_path / "b.parquet"
    pq.write_table(pa.table({"x": pa.array([0, 1, 2], pa.int32())}), first)
    pq.write_table(pa.table({"x": later}), second)
    ds = Dataset.from_parquet([first, second])
    if batched:
        ds = ds.batch(4)
    with pytest.raises(TypeError, match=r"b\.parquet.*column 'x' is .* here.*int32"):
        list(ds)


def test_parquet_later_file_with_wider_compatible_type_still_reads(tmp_path):
    pq.write_table(pa.table({"x": pa.array([0.5, 1.5]), "s": pa.array(["a", "b"])}),
                   tmp_path / "a.parquet")
    pq.write_table(pa.table({"x": pa.array([3, 4], pa.int32()),
                             "s": pa.array(["ccc", "d"]).dictionary_encode()}),
                   tmp_path / "b.parquet")
    got = [(float(e["x"]), bytes(e["s"])) for e in
           Dataset.from_parquet(tmp_path).as_numpy_iterator()]
    assert got == [(0.5, b"a"), (1.5, b"b"), (3.0, b"ccc"), (4.0, b"d")]


def test_parquet_later_file_with_other_list_length_raises(tmp_path):
    def table(k):
        return pa.table({"v": pa.FixedSizeListArray.from_arrays(pa.array(np.arange(2.0 * k)), k)})
    pq.write_table(table(2), tmp_path / "a.parquet")
    pq.write_table(table(1), tmp_path / "b.parquet")
    with pytest.raises(TypeError, match=r"b\.parquet.*'v'"):
        list(Dataset.from_parquet(tmp_path).batch(3))


# ---- map: errors keep their context ------------------------------------------------------------
def _boom(x):
    if int(x) == 2:
        raise ZeroDivisionError("boom")
    return x


def test_process_map_error_carries_the_worker_traceback():
    ds = Dataset.range(4).map(_boom, num_parallel_calls=2, use_processes=True)
    with pytest.raises(ZeroDivisionError, match="boom") as info:
        list(ds)
    notes = "\n".join(info.value.__notes__)
    assert "input element 2" in notes
    assert "worker process" in notes and "_boom" in notes and 'raise ZeroDivisionError("boom")' \
        in notes


@pytest.mark.parametrize("build", [
    lambda: Dataset.range(3).map(lambda x: None),
    # the fused from_tensor_slices -> batch -> map loop
    lambda: Dataset.from_tensor_slices((np.zeros((4, 2)), np.zeros(4))).batch(2)
    .map(lambda x, y: None),
])
def test_map_returning_none_names_the_map_and_element(build):
    with pytest.raises(TypeError, match="None") as info:
        list(build())
    assert any("Dataset.map" in n and "element 0" in n for n in info.value.__notes__)


# ---- from_generator: output_signature conversion --------------------------------------------
@pytest.mark.parametrize("value, dtype", [
    (1.5, "int32"), (300, "uint8"), (np.float64(2.5), "int64"), ([1.5, 2.0], "int32"),
    (np.array([2 ** 40]), "int32"), (float("nan"), "int32"),
])
def test_from_generator_signature_refuses_lossy_integer_conversion(value, dtype):
    shape = np.shape(value)
    ds = Dataset.from_generator(lambda: iter([value]), output_signature=TensorSpec(shape, dtype))
    with pytest.raises(TypeError, match=f"from_generator: element 0 .*{dtype}"):
        list(ds)


def test_from_generator_signature_keeps_exact_conversions():
    values = [1.0, 7, np.array([3, -4], np.int64), True]
    specs = [TensorSpec((), "int32"), TensorSpec((), "float32"), TensorSpec((2,), "int32"),
             TensorSpec((), "int8")]
    for v, spec in zip(values, specs):
        (got,) = list(Dataset.from_generator(lambda v=v: iter([v]), output_signature=spec)
                      .as_numpy_iterator())
        assert got.dtype == spec.dtype
        np.testing.assert_array_equal(got, np.asarray(v).astype(spec.dtype))


def test_from_generator_structure_mismatch_names_the_source():
    def gen():
        yield np.zeros(2), 1
    ds = Dataset.from_generator(gen, output_signature=TensorSpec((None,), "float32"))
    with pytest.raises(TypeError, match="from_generator: element 0 does not match"):
        list(ds)


# ---- range --------------------------------------------------------------------------------------
@pytest.mark.parametrize("args", [(2.5,), (0, 1, 0.25), (True,), (lk.constant(2.0),)])
def test_range_refuses_non_integers(args):
    with pytest.raises(TypeError, match="Dataset.range: arguments must be integers"):
        Dataset.range(*args)


def test_range_accepts_numpy_and_tensor_integers():
    assert [int(x) for x in Dataset.range(np.int32(1), lk.constant(4))] == [1, 2, 3]
