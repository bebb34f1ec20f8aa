"""Dataset.save / Dataset.load: round trips, shards, specs, atomicity, corruption, state."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest

import layerkit.data as lkd
from layerkit.data import Dataset
from tests.data.data_test_util import assert_save_restore, values


def _mixed():
    x = np.arange(12, dtype=np.float32).reshape(6, 2)
    return Dataset.from_tensor_slices({"x": x, "y": np.arange(6), "s": np.array(
        [b"a", b"bb", b"", b"ccc", b"d", b"e"])})


def test_round_trip_keeps_elements_order_and_spec(tmp_path):
    ds = _mixed()
    ds.save(tmp_path / "d")
    back = Dataset.load(tmp_path / "d")
    assert values(back) == values(ds)
    assert back.element_spec == ds.element_spec
    assert back.cardinality() == 6
    meta = json.loads((tmp_path / "d" / "dataset_spec.json").read_text())
    assert meta["format"] == "layerkit.data.Dataset.save/1" and meta["cardinality"] == 6
    assert [s["file"] for s in meta["shards"]] == ["shard_00000.lkrecords"]
    assert_save_restore(lambda: Dataset.load(tmp_path / "d"), ks=list(range(7)))


def test_ragged_elements_and_batched_spec(tmp_path):
    gen = Dataset.from_generator(lambda: iter([[1], [1, 2], [1, 2, 3]]),
                                 output_signature=lkd.TensorSpec((None,), "int64"))
    gen.save(str(tmp_path / "g"))
    back = Dataset.load(str(tmp_path / "g"))
    assert values(back) == [[1], [1, 2], [1, 2, 3]]
    assert back.element_spec == lkd.TensorSpec((None,), "int64")
    Dataset.range(5).batch(2).save(tmp_path / "b")
    assert Dataset.load(tmp_path / "b").element_spec == lkd.TensorSpec((None,), "int64")


def test_shard_func_writes_one_file_per_shard_and_load_interleaves(tmp_path):
    ds = Dataset.range(10)
    ds.save(tmp_path / "s", shard_func=lambda x: x % 3)
    names = sorted(os.listdir(tmp_path / "s"))
    assert names == ["dataset_spec.json", "shard_00000.lkrecords", "shard_00001.lkrecords",
                     "shard_00002.lkrecords"]
    # shards 0: 0 3 6 9, 1: 1 4 7, 2: 2 5 8; read round-robin
    back = Dataset.load(tmp_path / "s")
    assert values(back) == [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]
    assert back.cardinality() == 10
    assert_save_restore(lambda: Dataset.load(tmp_path / "s"), ks=list(range(11)))
    # reader_func receives the shard datasets in shard order
    concat = Dataset.load(tmp_path / "s", reader_func=lambda d: d.flat_map(lambda s: s))
    assert values(concat) == [0, 3, 6, 9, 1, 4, 7, 2, 5, 8]
    assert_save_restore(lambda: Dataset.load(tmp_path / "s",
                                             reader_func=lambda d: d.flat_map(lambda s: s)))
    with pytest.raises(ValueError, match="non-negative int64"):
        ds.save(tmp_path / "bad", shard_func=lambda x: -1)
    assert not (tmp_path / "bad").exists()
    assert not [n for n in os.listdir(tmp_path) if ".tmp-" in n]


def test_empty_dataset_and_overwrite(tmp_path):
    Dataset.range(0).save(tmp_path / "e")
    empty = Dataset.load(tmp_path / "e")
    assert values(empty) == [] and empty.element_spec == lkd.TensorSpec((), "int64")
    Dataset.range(3).save(tmp_path / "e")
    assert values(Dataset.load(tmp_path / "e")) == [0, 1, 2]
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "keep.txt").write_text("x")
    with pytest.raises(FileExistsError, match="not a saved dataset"):
        Dataset.range(3).save(tmp_path / "other")
    assert (tmp_path / "other" / "keep.txt").read_text() == "x"


def test_failed_save_leaves_the_old_one(tmp_path):
    Dataset.range(3).save(tmp_path / "d")

    def boom(x):
        if int(x) == 2:
            raise RuntimeError("boom")
        return x
    with pytest.raises(RuntimeError, match="boom"):
        Dataset.range(5).map(boom).save(tmp_path / "d")
    assert values(Dataset.load(tmp_path / "d")) == [0, 1, 2]
    assert sorted(os.listdir(tmp_path)) == ["d"]


def test_load_errors_name_the_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="no saved dataset"):
        Dataset.load(tmp_path / "missing")
    Dataset.range(300).save(tmp_path / "d")
    shard = tmp_path / "d" / "shard_00000.lkrecords"
    raw = bytearray(shard.read_bytes())
    raw[40] ^= 0xFF  # inside the first block's payload
    shard.write_bytes(bytes(raw))
    with pytest.raises(ValueError, match="checksum mismatch") as info:
        list(Dataset.load(tmp_path / "d"))
    assert "Dataset.load" in str(info.value) and "shard_00000" in str(info.value)
    shard.write_bytes(bytes(raw[:-5]))
    with pytest.raises(ValueError, match="truncated or replaced"):
        Dataset.load(tmp_path / "d")
    with pytest.raises(ValueError, match="does not match"):
        Dataset.range(2).save(tmp_path / "f") or Dataset.load(
            tmp_path / "f", element_spec=lkd.TensorSpec((), "float32"))
    (tmp_path / "f" / "dataset_spec.json").write_text('{"format": "other"}')
    with pytest.raises(ValueError, match="not a layerkit saved dataset"):
        Dataset.load(tmp_path / "f")
    with pytest.raises(ValueError, match="compression"):
        Dataset.range(2).save(tmp_path / "g", compression="GZIP")


def test_no_pickle_in_the_files(tmp_path):
    _mixed().save(tmp_path / "d")
    data = (tmp_path / "d" / "shard_00000.lkrecords").read_bytes()
    assert data.startswith(b"LKCACHE2\n")
    assert b"'descr': '|O'" not in data and b"\x80\x04" not in data[:64]
