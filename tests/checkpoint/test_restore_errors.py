"""Audit regressions for lk.Checkpoint: errors raised late (a deferred value that does
not fit the variable created for it, an object refusing its state) name the file and
the path."""
from __future__ import annotations

import numpy as np
import pytest

import layerkit as lk
from layerkit.checkpoint import CheckpointError, trackable

from .helpers import Module


def _saved(tmp_path):
    ckpt = lk.Checkpoint(v=lk.Variable(np.arange(6, dtype=np.float32)))
    return ckpt.write(tmp_path / "ck")


@pytest.mark.parametrize("wrong", [np.zeros(3, np.float32), np.zeros(6, np.int32)])
def test_late_attached_variable_that_does_not_fit_names_file_and_path(tmp_path, wrong):
    path = _saved(tmp_path)
    ckpt = lk.Checkpoint()
    status = ckpt.restore(path)
    with pytest.raises(CheckpointError, match=r"ck'.*'v': the checkpoint has float32 \(6,\)"):
        ckpt.v = lk.Variable(wrong)
    assert "v" not in ckpt._checkpoint_children()   # not attached half-way
    assert status.pending == ["v"]                  # the value is still parked
    ckpt.v = lk.Variable(np.zeros(6, np.float32))
    np.testing.assert_array_equal(ckpt.v.numpy(), np.arange(6))
    status.assert_consumed()


def test_apply_deferred_checks_the_created_variable(tmp_path):
    saved = Module(inner=Module())
    saved.inner.create("w", np.ones((2, 3), np.float32))
    path = lk.Checkpoint(m=saved).write(tmp_path / "ck")
    fresh = Module(inner=Module())
    status = lk.Checkpoint(m=fresh).restore(path)
    assert status.pending == ["m/inner/w"]
    with pytest.raises(CheckpointError, match=r"'m/inner/w'.*\(2, 3\).*\(3, 2\)"):
        trackable.apply_deferred(fresh.inner, "w", lk.Variable(np.zeros((3, 2), np.float32)))
    var = lk.Variable(np.zeros((2, 3), np.float32))
    assert trackable.apply_deferred(fresh.inner, "w", var)
    np.testing.assert_array_equal(var.numpy(), np.ones((2, 3)))
    assert not trackable.apply_deferred(fresh.inner, "w", var)   # taken once
    status.assert_consumed()


def test_iterator_state_from_another_pipeline_names_checkpoint_and_path(tmp_path):
    it = iter(lk.data.Dataset.range(5).map(lambda x: x + 1).batch(2))
    next(it)
    path = lk.Checkpoint(train=it).write(tmp_path / "ck")
    other = iter(lk.data.Dataset.range(5).batch(2))
    with pytest.raises(ValueError, match="pipeline") as info:
        lk.Checkpoint(train=other).restore(path)
    assert any("'train'" in n and str(path) in n for n in info.value.__notes__)
    assert [b.numpy().tolist() for b in other] == [[0, 1], [2, 3], [4]]   # untouched


def test_deferred_weight_of_another_shape_names_file_and_path_and_leaves_no_weight(tmp_path):
    x = np.ones((1, 3), np.float32)
    m = lk.Sequential([lk.layers.Dense(4), lk.layers.Dense(2)])
    m(x)
    path = lk.Checkpoint(model=m).save(str(tmp_path / "c"))
    other = lk.Sequential([lk.layers.Dense(5), lk.layers.Dense(2)])
    lk.Checkpoint(model=other).restore(path)
    with pytest.raises(CheckpointError, match=r"model/layer-0/kernel.*\(3, 4\).*\(3, 5\)"):
        other(x)
    assert other.layers[0].weights == []


def test_deferred_optimizer_slot_of_another_shape_names_file_and_path(tmp_path):
    v = lk.Variable(np.ones(3, np.float32))
    opt = lk.optimizers.Adam(0.1)
    opt.apply_gradients([(lk.ones(3), v)])
    path = lk.Checkpoint(opt=opt).save(str(tmp_path / "c"))
    w = lk.Variable(np.ones(4, np.float32))
    fresh = lk.optimizers.Adam(0.1)
    lk.Checkpoint(opt=fresh).restore(path)
    with pytest.raises(CheckpointError, match=r"\(3,\).*\(4,\)"):
        fresh.apply_gradients([(lk.ones(4), w)])
