"""lk.CheckpointManager: numbering, rotation, the index, failures during save."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest

import layerkit as lk
from layerkit._core.atomic import temp_path_for
from layerkit.checkpoint import (
    Checkpoint,
    CheckpointError,
    CheckpointManager,
    latest_checkpoint,
)
from layerkit.checkpoint import index as ckpt_index


def _setup(tmp_path, **kw):
    v = lk.Variable(np.zeros(3, np.float32))
    ckpt = Checkpoint(v=v)
    return v, ckpt, CheckpointManager(ckpt, tmp_path / "run", **kw)


def _files(directory):
    return sorted(f for f in os.listdir(directory) if not f.startswith("checkpoint_index"))


def test_rotation_keeps_the_newest(tmp_path):
    v, ckpt, mgr = _setup(tmp_path, max_to_keep=2)
    assert mgr.latest_checkpoint is None and mgr.checkpoints == []
    paths = []
    for i in range(1, 5):
        v.assign(np.full(3, i, np.float32))
        paths.append(mgr.save())
    run = str(tmp_path / "run")
    assert paths == [os.path.join(run, f"ckpt-{i}") for i in range(1, 5)]
    assert mgr.checkpoints == paths[2:] and mgr.latest_checkpoint == paths[3]
    assert _files(run) == ["ckpt-3", "ckpt-4"]
    assert latest_checkpoint(run) == paths[3]
    doc = json.loads((tmp_path / "run" / "checkpoint_index.json").read_text())
    assert doc["latest"] == "ckpt-4" and [e["path"] for e in doc["checkpoints"]] == \
        ["ckpt-3", "ckpt-4"]
    fresh = Checkpoint(v=lk.Variable(np.zeros(3, np.float32)))
    fresh.restore(latest_checkpoint(run)).assert_consumed()
    assert fresh.v.numpy().tolist() == [4.0, 4.0, 4.0]


def test_keep_all_and_checkpoint_number(tmp_path):
    step = lk.Variable(np.int64(0))
    v, ckpt, mgr = _setup(tmp_path, max_to_keep=None, checkpoint_name="model")
    for s in (100, 200, 300):
        step.assign(np.int64(s))
        mgr.save(checkpoint_number=step)
    assert [os.path.basename(p) for p in mgr.checkpoints] == ["model-100", "model-200",
                                                               "model-300"]
    assert int(ckpt.save_counter) == 3
    assert mgr.save() == os.path.join(str(tmp_path / "run"), "model-4")


def test_keep_checkpoint_every_n_hours(tmp_path, monkeypatch):
    clock = [1000.0]
    monkeypatch.setattr(ckpt_index, "_clock", lambda: clock[0])
    v, ckpt, mgr = _setup(tmp_path, max_to_keep=1, keep_checkpoint_every_n_hours=2)
    for _ in range(6):   # saves at +1h, +2h, ..., +6h after the manager started
        clock[0] += 3600.0
        mgr.save()
    run = str(tmp_path / "run")
    # kept: ckpt-2 (2h after start), ckpt-4 (2h after ckpt-2); managed: only the newest
    assert _files(run) == ["ckpt-2", "ckpt-4", "ckpt-6"]
    assert mgr.checkpoints == [os.path.join(run, "ckpt-6")]


def test_new_manager_takes_over_existing_directory(tmp_path):
    v, ckpt, mgr = _setup(tmp_path, max_to_keep=3)
    for _ in range(3):
        mgr.save()
    mgr2 = CheckpointManager(ckpt, tmp_path / "run", max_to_keep=2)
    assert [os.path.basename(p) for p in mgr2.checkpoints] == ["ckpt-1", "ckpt-2", "ckpt-3"]
    assert mgr2.latest_checkpoint == mgr.latest_checkpoint
    mgr2.save()
    assert _files(tmp_path / "run") == ["ckpt-3", "ckpt-4"]


def test_restore_or_initialize(tmp_path):
    v, ckpt, mgr = _setup(tmp_path)
    assert mgr.restore_or_initialize() is None
    v.assign([1.0, 2.0, 3.0])
    path = mgr.save()
    v2 = lk.Variable(np.zeros(3, np.float32))
    ckpt2 = Checkpoint(v=v2)
    assert CheckpointManager(ckpt2, tmp_path / "run").restore_or_initialize() == path
    assert v2.numpy().tolist() == [1.0, 2.0, 3.0] and int(ckpt2.save_counter) == 1


@pytest.mark.parametrize("failing_call", [1, 2])
def test_failure_during_save_keeps_previous_checkpoint_and_index(tmp_path, monkeypatch,
                                                                 failing_call):
    """Call 1 of os.replace installs the checkpoint file, call 2 the index."""
    v, ckpt, mgr = _setup(tmp_path, max_to_keep=1)
    v.assign([1.0, 1.0, 1.0])
    first = mgr.save()
    v.assign([2.0, 2.0, 2.0])
    calls = []
    real = os.replace

    def flaky(src, dst):
        calls.append(dst)
        if len(calls) == failing_call:
            raise OSError("power cut")
        return real(src, dst)

    monkeypatch.setattr(os, "replace", flaky)
    with pytest.raises(OSError, match="power cut"):
        mgr.save()
    monkeypatch.undo()
    run = str(tmp_path / "run")
    assert latest_checkpoint(run) == first == mgr.latest_checkpoint
    assert mgr.checkpoints == [first]
    assert os.path.exists(first)
    assert not [f for f in os.listdir(run) if ".tmp-" in f]
    restored = lk.Variable(np.zeros(3, np.float32))
    Checkpoint(v=restored).restore(run).assert_consumed()
    assert restored.numpy().tolist() == [1.0, 1.0, 1.0]


def test_stale_temp_files_of_dead_writers_are_removed(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    dead = temp_path_for(run / "ckpt-3", pid=999_999_999)
    alive = temp_path_for(run / "ckpt-4")                       # this process: still writing
    other = temp_path_for(run / "notes", pid=999_999_999)       # not a checkpoint of ours
    foreign = run / ".ckpt-5.tmp-999999999-abcd"                # not our naming pattern
    for f in (dead, alive, other, foreign):
        open(f, "wb").write(b"partial")
    CheckpointManager(Checkpoint(v=lk.Variable(1.0)), run)
    assert not os.path.exists(dead)
    assert os.path.exists(alive) and os.path.exists(other) and foreign.exists()


def test_latest_checkpoint_skips_deleted_files_and_rejects_bad_index(tmp_path):
    v, ckpt, mgr = _setup(tmp_path, max_to_keep=None)
    p1, p2 = mgr.save(), mgr.save()
    os.remove(p2)
    assert latest_checkpoint(tmp_path / "run") == p1
    (tmp_path / "run" / "checkpoint_index.json").write_text("{not json")
    with pytest.raises(CheckpointError, match="checkpoint_index.json.*unreadable"):
        latest_checkpoint(tmp_path / "run")


def test_invalid_arguments(tmp_path):
    ckpt = Checkpoint(v=lk.Variable(1.0))
    with pytest.raises(TypeError, match="expected an lk.Checkpoint"):
        CheckpointManager(object(), tmp_path)
    with pytest.raises(ValueError, match="max_to_keep"):
        CheckpointManager(ckpt, tmp_path, max_to_keep=0)
    with pytest.raises(ValueError, match="keep_checkpoint_every_n_hours"):
        CheckpointManager(ckpt, tmp_path, keep_checkpoint_every_n_hours=-1)
    with pytest.raises(ValueError, match="checkpoint_name"):
        CheckpointManager(ckpt, tmp_path, checkpoint_name="a/b")
