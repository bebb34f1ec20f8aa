"""lk.Checkpoint: matching by path, deferred restores, status, state, failures."""
from __future__ import annotations

import gc
import os
import pathlib
import warnings

import numpy as np
import pytest

import layerkit as lk
from layerkit.checkpoint import (
    Checkpoint,
    CheckpointError,
    CheckpointNotFoundError,
    CheckpointReader,
    GlobalRNG,
    latest_checkpoint,
)
from layerkit.checkpoint.format import write_file
from layerkit.primitives import random as lk_random
from tests.checkpoint.helpers import Module, Stateful, values


def _model(seed: int, order=("kernel", "bias")) -> Module:
    rng = np.random.default_rng(seed)
    dense = Module()
    shapes = {"kernel": (3, 4), "bias": (4,)}
    for name in order:   # creation order must not matter
        dense.create(name, rng.standard_normal(shapes[name]).astype(np.float32))
    head = Module(w=lk.Variable(rng.standard_normal((4, 2)).astype(np.float32)))
    return Module(dense=dense, head=head, step=lk.Variable(np.int64(seed)))


def test_round_trip_matches_by_path_not_creation_order(tmp_path):
    a = _model(1)
    path = Checkpoint(model=a).write(tmp_path / "a.ckpt")
    b = _model(2, order=("bias", "kernel"))
    status = Checkpoint(model=b).restore(path)
    status.assert_consumed().assert_existing_objects_matched().assert_nontrivial_match()
    va, vb = values(a), values(b)
    assert va.keys() == vb.keys()
    for k in va:
        assert va[k].tobytes() == vb[k].tobytes() and va[k].dtype == vb[k].dtype
    assert sorted(status.matched) == sorted(
        ["model/dense/kernel", "model/dense/bias", "model/head/w", "model/step", "save_counter"])
    with CheckpointReader(path) as r:
        assert "model/dense/kernel" in r.keys()


def test_restored_variables_are_independent_of_each_other(tmp_path):
    a = _model(1)
    path = Checkpoint(model=a).write(tmp_path / "a.ckpt")
    b = _model(2)
    Checkpoint(model=b).restore(path).assert_consumed()
    before = b.head.w.numpy().copy()
    b.dense.kernel.assign_add(np.ones((3, 4), np.float32))
    np.testing.assert_array_equal(b.head.w.numpy(), before)
    assert b.dense.kernel.numpy().flags.writeable


def test_deferred_restore_applies_when_variable_is_created(tmp_path):
    a = _model(1)
    path = Checkpoint(model=a).write(tmp_path / "a.ckpt")
    fresh = Module(dense=Module(), head=Module(w=lk.Variable(np.zeros((4, 2), np.float32))),
                   step=lk.Variable(np.int64(0)))
    status = Checkpoint(model=fresh).restore(path)
    assert sorted(status.pending) == ["model/dense/bias", "model/dense/kernel"]
    status.assert_existing_objects_matched()
    with pytest.raises(AssertionError, match="deferred.*model/dense/"):
        status.assert_consumed()
    np.testing.assert_array_equal(fresh.head.w.numpy(), a.head.w.numpy())
    fresh.dense.create("kernel", np.zeros((3, 4), np.float32))
    assert status.pending == ["model/dense/bias"]
    fresh.dense.create("bias", np.zeros(4, np.float32))
    status.assert_consumed()
    np.testing.assert_array_equal(fresh.dense.kernel.numpy(), a.dense.kernel.numpy())
    np.testing.assert_array_equal(fresh.dense.bias.numpy(), a.dense.bias.numpy())


def test_missing_and_unexpected_are_reported_by_name(tmp_path):
    a = _model(1)
    a.extra = Module(v=lk.Variable([1.0, 2.0]))
    path = Checkpoint(model=a, other=Module(u=lk.Variable(1.0))).write(tmp_path / "a.ckpt")
    b = _model(2)
    b.head.new = lk.Variable(np.zeros(2))
    status = Checkpoint(model=b).restore(path)
    assert status.missing == ["model/head/new"]
    assert sorted(status.unexpected) == ["model/extra/v", "other/u"]
    with pytest.raises(AssertionError) as info:
        status.assert_consumed()
    for name in ("model/head/new", "model/extra/v", "other/u"):
        assert name in str(info.value)
    with pytest.raises(AssertionError, match="model/head/new"):
        status.assert_existing_objects_matched()
    assert "missing from the checkpoint (1): model/head/new" in status.report()
    status.expect_partial()


def test_unused_values_warn_unless_expect_partial(tmp_path):
    path = Checkpoint(a=lk.Variable(1.0), m=Module(b=lk.Variable(2.0))).write(tmp_path / "x.ckpt")
    with pytest.warns(UserWarning, match="left 1 value\\(s\\) unused: m/b"):
        Checkpoint(a=lk.Variable(0.0)).restore(path)
        gc.collect()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Checkpoint(a=lk.Variable(0.0)).restore(path).expect_partial()
        gc.collect()


def test_variable_attached_after_restore_gets_its_value(tmp_path):
    path = Checkpoint(a=lk.Variable(1.0), b=lk.Variable([2.0, 3.0])).write(tmp_path / "x.ckpt")
    ckpt = Checkpoint(a=lk.Variable(0.0))
    status = ckpt.restore(path)
    assert status.pending == ["b"]
    ckpt.b = lk.Variable([0.0, 0.0])
    status.assert_consumed()
    assert ckpt.b.numpy().tolist() == [2.0, 3.0]


def test_shape_or_dtype_mismatch_raises_before_assigning_anything(tmp_path):
    a = _model(1)
    path = Checkpoint(model=a).write(tmp_path / "a.ckpt")
    b = _model(2)
    b.dense.bias = lk.Variable(np.zeros(5, np.float32))
    b.step = lk.Variable(np.float32(0))
    before = values(b)
    with pytest.raises(CheckpointError) as info:
        Checkpoint(model=b).restore(path)
    msg = str(info.value)
    assert "model/dense/bias" in msg and "(4,)" in msg and "(5,)" in msg
    assert "model/step" in msg and "int64" in msg and "float32" in msg
    assert str(path) in msg
    after = values(b)
    for k in before:
        assert before[k].tobytes() == after[k].tobytes()


def test_corrupted_file_leaves_objects_untouched(tmp_path):
    a = _model(1)
    path = pathlib.Path(Checkpoint(model=a).write(tmp_path / "a.ckpt"))
    with CheckpointReader(path) as r:   # corrupt the last tensor in the file
        last = r.keys()[-1]
        pos = r._data_offset + r._entries[last][2]
    raw = bytearray(path.read_bytes())
    raw[pos] ^= 0xFF
    path.write_bytes(bytes(raw))
    b = _model(2)
    before = values(b)
    with pytest.raises(CheckpointError, match=f"tensor '{last}' is corrupted"):
        Checkpoint(model=b).restore(path)
    after = values(b)
    for k in before:
        assert before[k].tobytes() == after[k].tobytes()


def test_truncated_checkpoint_names_file(tmp_path):
    path = pathlib.Path(Checkpoint(model=_model(1)).write(tmp_path / "a.ckpt"))
    path.write_bytes(path.read_bytes()[:-10])
    with pytest.raises(CheckpointError, match="truncated") as info:
        Checkpoint(model=_model(2)).restore(path)
    assert str(path) in str(info.value)


def test_file_without_object_graph(tmp_path):
    p = tmp_path / "raw.ckpt"
    write_file(p, {"x": np.ones(2)})
    with pytest.raises(CheckpointError, match="not written by lk.Checkpoint"):
        Checkpoint(x=lk.Variable(np.ones(2))).restore(p)


# ---- non-variable state --------------------------------------------------------------------
def test_state_round_trip_keeps_types(tmp_path):
    state = {
        "pos": 7, "big": 2**70, "ratio": 0.1, "nan": float("nan"), "name": "x", "none": None,
        "flag": True, "tuple": (1, (2, "3")), "ids": {1: "a", (2, 3): "b"},
        "markers": {"__ndarray__": 5}, "bytes": b"\x00\xff", "np_scalar": np.float32(1.5),
        "np_int": np.int64(-3), "np_f64": np.float64(0.25), "np_bool": np.bool_(True),
        "buffer": np.arange(6, dtype=np.int32).reshape(2, 3),
        "elements": [np.array([b"ab", b"c"]), lk.constant([1.0, 2.0])],
        "empty": np.zeros((0,), np.float64),
    }
    src = Stateful(state)
    path = Checkpoint(it=src).write(tmp_path / "s.ckpt")
    dst = Stateful()
    Checkpoint(it=dst).restore(path).assert_consumed()
    got = dst.state
    assert got["pos"] == 7 and got["big"] == 2**70 and got["ratio"] == 0.1
    assert np.isnan(got["nan"]) and got["name"] == "x" and got["none"] is None
    assert got["flag"] is True and got["tuple"] == (1, (2, "3"))
    assert got["ids"] == {1: "a", (2, 3): "b"} and got["markers"] == {"__ndarray__": 5}
    assert got["bytes"] == b"\x00\xff"
    assert type(got["np_scalar"]) is np.float32 and got["np_scalar"] == 1.5
    assert type(got["np_int"]) is np.int64 and got["np_int"] == -3
    assert type(got["np_f64"]) is np.float64 and type(got["np_bool"]) is np.bool_
    np.testing.assert_array_equal(got["buffer"], state["buffer"])
    assert got["buffer"].dtype == np.int32
    np.testing.assert_array_equal(got["elements"][0], [b"ab", b"c"])
    assert isinstance(got["elements"][1], lk.Tensor)
    np.testing.assert_array_equal(got["elements"][1].numpy(), [1.0, 2.0])
    assert got["empty"].shape == (0,)


def test_unsupported_state_value_names_the_object(tmp_path):
    with pytest.raises(TypeError, match="state of 'it' contains a set"):
        Checkpoint(it=Stateful({"s": {1, 2}})).write(tmp_path / "x.ckpt")
    assert not (tmp_path / "x.ckpt").exists()


def test_failing_set_state_rolls_everything_back(tmp_path):
    a = _model(1)
    path = Checkpoint(model=a, it1=Stateful({"p": 1}), it2=Stateful({"p": 2})).write(
        tmp_path / "a.ckpt")
    b = _model(2)
    first, second = Stateful({"p": 10}), Stateful({"p": 20}, fail=True)
    before = values(b)
    with pytest.raises(RuntimeError, match="set_state refused"):
        Checkpoint(model=b, it1=first, it2=second).restore(path)
    assert first.state == {"p": 10} and second.state == {"p": 20}
    after = values(b)
    for k in before:
        assert before[k].tobytes() == after[k].tobytes()


# ---- structure -----------------------------------------------------------------------------
def test_nested_checkpoints_lists_dicts_and_shared_variables(tmp_path):
    shared = lk.Variable(np.arange(10000, dtype=np.float64))
    inner = Checkpoint(v=lk.Variable([1.0, 2.0]), s=shared)
    outer = Checkpoint(inner=inner, layers=[Module(w=lk.Variable(3.0)), shared],
                       table={"a": lk.Variable(np.int32(4)), "s": shared})
    path = outer.write(tmp_path / "n.ckpt")
    with CheckpointReader(path) as r:
        keys = r.keys()
        assert {"inner/v", "inner/s", "inner/save_counter", "layers/0/w", "layers/1",
                "table/a", "table/s"} <= set(keys)
    assert os.path.getsize(path) < 2 * shared.numpy().nbytes   # stored once
    shared2 = lk.Variable(np.zeros(10000))
    fresh = Checkpoint(inner=Checkpoint(v=lk.Variable([0.0, 0.0]), s=shared2),
                       layers=[Module(w=lk.Variable(0.0)), shared2],
                       table={"a": lk.Variable(np.int32(0)), "s": shared2})
    fresh.restore(path).assert_consumed()
    np.testing.assert_array_equal(shared2.numpy(), shared.numpy())
    assert float(fresh.layers[0].w) == 3.0 and int(fresh.table["a"]) == 4
    assert fresh.inner.v.numpy().tolist() == [1.0, 2.0]


def test_cycles_are_walked_once(tmp_path):
    a, b = Module(x=lk.Variable(1.0)), Module(y=lk.Variable(2.0))
    a.other, b.other = b, a
    path = Checkpoint(root=a).write(tmp_path / "c.ckpt")
    with CheckpointReader(path) as r:
        assert sorted(r.keys()) == ["root/other/y", "root/x", "save_counter"]


def test_rejects_untrackable_objects():
    with pytest.raises(TypeError, match="'n' is a int"):
        Checkpoint(n=3)
    with pytest.raises(TypeError, match="'t' is a Tensor"):
        Checkpoint(t=lk.constant(1.0))
    with pytest.raises(ValueError, match="reserved"):
        Checkpoint(save_counter=lk.Variable(1))
    ckpt = Checkpoint(v=lk.Variable(1.0))
    assert float(ckpt.v) == 1.0
    with pytest.raises(AttributeError, match="no tracked object 'w'"):
        ckpt.w  # noqa: B018
    with pytest.raises(TypeError, match="'bad/1' is a str"):
        Checkpoint(bad=[lk.Variable(1.0), "oops"]).write("/nonexistent/never-written")


# ---- save / restore API ------------------------------------------------------------------------
def test_save_counter_numbering_and_latest(tmp_path):
    v = lk.Variable([1.0])
    ckpt = Checkpoint(v=v)
    prefix = str(tmp_path / "run" / "ckpt")
    p1 = ckpt.save(prefix)
    v.assign([2.0])
    p2 = ckpt.save(prefix)
    assert (p1, p2) == (prefix + "-1", prefix + "-2") and int(ckpt.save_counter) == 2
    assert latest_checkpoint(tmp_path / "run") == p2
    other = Checkpoint(v=lk.Variable([0.0]))
    other.restore(p1).assert_consumed()
    assert int(other.save_counter) == 1 and other.v.numpy().tolist() == [1.0]
    other.restore(tmp_path / "run").assert_consumed()   # a directory: its latest
    assert int(other.save_counter) == 2 and other.v.numpy().tolist() == [2.0]
    assert other.save(prefix) == prefix + "-3"


def test_restore_none_and_empty_directory(tmp_path):
    ckpt = Checkpoint(v=lk.Variable(1.0))
    status = ckpt.restore(None)
    with pytest.raises(AssertionError, match="no checkpoint"):
        status.assert_consumed()
    assert latest_checkpoint(tmp_path) is None
    with pytest.raises(CheckpointNotFoundError, match="holds no checkpoint") as info:
        ckpt.restore(tmp_path)
    assert str(tmp_path) in str(info.value)
    with pytest.raises(CheckpointNotFoundError):
        ckpt.restore(tmp_path / "nope")


def test_failed_save_keeps_counter_and_previous_file(tmp_path, monkeypatch):
    v = lk.Variable([1.0])
    ckpt = Checkpoint(v=v)
    prefix = str(tmp_path / "ckpt")
    p1 = ckpt.save(prefix)
    v.assign([5.0])

    def boom(src, dst):
        raise OSError("disk on fire")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError, match="disk on fire"):
        ckpt.save(prefix)
    monkeypatch.undo()
    assert int(ckpt.save_counter) == 1
    assert latest_checkpoint(tmp_path) == p1
    assert sorted(os.listdir(tmp_path)) == ["checkpoint_index.json", "ckpt-1"]
    Checkpoint(v=v).restore(p1).assert_consumed()
    assert v.numpy().tolist() == [1.0]


def test_global_rng_state_survives_set_seed(tmp_path):
    lk_random.set_seed(123)
    lk_random.next_seed()
    ckpt = Checkpoint(rng=GlobalRNG())
    path = ckpt.write(tmp_path / "r.ckpt")
    expected = [lk_random.next_seed() for _ in range(3)]
    lk_random.set_seed(999)   # replaces the global generator object
    ckpt.restore(path).assert_consumed()
    assert [lk_random.next_seed() for _ in range(3)] == expected


def test_generator_object_is_trackable(tmp_path):
    g = lk_random.Generator(5)
    g.next_seed()
    path = Checkpoint(g=g).write(tmp_path / "g.ckpt")
    expected = g.next_seed()
    h = lk_random.Generator(77)
    Checkpoint(g=h).restore(path).assert_consumed()
    assert h.next_seed() == expected


def test_seeded_dropout_mask_stream_resumes(tmp_path):
    import layerkit as lk

    x = np.ones((2, 8), np.float32)
    d = lk.layers.Dropout(0.5, seed=3)
    d(x, training=True)
    path = lk.Checkpoint(layer=d).write(str(tmp_path / "c"))
    expected = d(x, training=True).numpy()
    fresh = lk.layers.Dropout(0.5, seed=3)
    lk.Checkpoint(layer=fresh).read(path)
    np.testing.assert_array_equal(fresh(x, training=True).numpy(), expected)
    # Without the restore the fresh layer would draw the first mask again.
    assert not np.array_equal(lk.layers.Dropout(0.5, seed=3)(x, training=True).numpy(), expected)
