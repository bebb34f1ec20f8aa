"""layerkit._core.atomic: the one atomic-write helper, and the clean-up of temporary files
left behind by writers killed mid-write (checkpoints, save_weights, the manager index)."""
from __future__ import annotations

import os
import pathlib
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

import layerkit as lk
from layerkit._core.atomic import AtomicFile, atomic_write_bytes, remove_stale_temps, temp_path_for
from layerkit.checkpoint import Checkpoint
from layerkit.checkpoint.format import CheckpointReader

ROOT = pathlib.Path(__file__).resolve().parents[2]
DEAD = 999_999_999   # above any Linux pid_max


def _kill_mid_write(tmp_path, statement: str) -> None:
    """Run ``statement`` in a child process, SIGKILL it once its first bytes are written."""
    started = tmp_path / "started"
    code = f"""
import time, numpy as np, layerkit as lk
from layerkit.checkpoint import format as fmt
real = fmt.write_all
def stall(f, mv):
    real(f, mv)
    open({str(started)!r}, "w").close()
    time.sleep(120)
fmt.write_all = stall
{statement}
"""
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT)
    try:
        deadline = time.monotonic() + 120
        while not started.exists():
            assert proc.poll() is None, "the writer exited before it was killed"
            assert time.monotonic() < deadline, "the writer never started writing"
            time.sleep(0.05)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    started.unlink()


def _temps(directory, target):
    return sorted(f for f in os.listdir(directory) if f.startswith(f".{target}.tmp-"))


@pytest.mark.parametrize("how", ["Checkpoint.write", "save_weights"])
def test_temp_file_of_a_killed_writer_is_removed_by_the_next_write(tmp_path, how):
    target = tmp_path / "weights.ckpt"
    make = ("m = lk.Sequential([lk.Input((3,)), lk.layers.Dense(4)]); "
            if how == "save_weights" else "")
    write = ("m.save_weights(" if how == "save_weights"
             else "lk.Checkpoint(v=lk.Variable(np.ones(100000, np.float32))).write(")
    _kill_mid_write(tmp_path, f"{make}{write}{str(target)!r})")
    assert not target.exists()
    (stale,) = _temps(tmp_path, "weights.ckpt")
    assert (tmp_path / stale).stat().st_size > 0
    # files that must survive: a live writer's, another target's, not our pattern at all
    alive = temp_path_for(target)
    other = temp_path_for(tmp_path / "other.ckpt", pid=DEAD)
    foreign = tmp_path / ".weights.ckpt.tmp-12345"
    for p in (alive, other, foreign):
        open(p, "wb").close()
    if how == "save_weights":
        model = lk.Sequential([lk.Input((3,)), lk.layers.Dense(4)])
        model.save_weights(target)
    else:
        Checkpoint(v=lk.Variable(np.ones(3, np.float32))).write(target)
    assert _temps(tmp_path, "weights.ckpt") == sorted([os.path.basename(alive), foreign.name])
    assert os.path.exists(other)
    with CheckpointReader(target) as r:
        r.verify()


def test_numbered_saves_clean_up_killed_saves_of_the_same_prefix(tmp_path):
    _kill_mid_write(tmp_path, f"lk.Checkpoint(v=lk.Variable(np.ones(10))).save("
                              f"{str(tmp_path / 'ckpt')!r})")
    assert _temps(tmp_path, "ckpt-1")
    keep = temp_path_for(tmp_path / "other-3", pid=DEAD)
    open(keep, "wb").close()
    ckpt = Checkpoint(v=lk.Variable(np.ones(10)))
    ckpt.save_counter.assign(np.int64(5))
    assert ckpt.save(tmp_path / "ckpt").endswith("ckpt-6")   # a different number
    assert _temps(tmp_path, "ckpt-1") == [] and os.path.exists(keep)


def test_atomic_file_commits_or_leaves_the_old_file(tmp_path):
    p = tmp_path / "data.bin"
    atomic_write_bytes(p, b"old")
    with pytest.raises(RuntimeError, match="boom"):
        with AtomicFile(p) as f:
            f.file.write(b"new, partial")
            raise RuntimeError("boom")
    assert p.read_bytes() == b"old" and os.listdir(tmp_path) == ["data.bin"]
    writer = AtomicFile(p)   # a writer that outlives one block (the data cache's use)
    writer.file.write(b"new")
    assert p.read_bytes() == b"old"
    writer.commit()
    writer.commit()   # idempotent
    assert p.read_bytes() == b"new" and os.listdir(tmp_path) == ["data.bin"]


def test_atomic_file_fsyncs_the_file_and_the_directory(tmp_path, monkeypatch):
    synced = []
    real = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(os.fstat(fd)), real(fd)))
    atomic_write_bytes(tmp_path / "x", b"abc")
    kinds = [s.st_mode & 0o170000 for s in synced]
    assert kinds == [0o100000, 0o040000]   # the file, then the directory


def test_stale_temps_only_of_dead_writers_and_never_symlinks(tmp_path):
    outside = tmp_path / "outside.txt"
    outside.write_text("keep")
    run = tmp_path / "run"
    run.mkdir()
    link = temp_path_for(run / "a", pid=DEAD)
    os.symlink(outside, link)
    dead = temp_path_for(run / "a", pid=DEAD)
    open(dead, "wb").close()
    assert remove_stale_temps(run, "a") == [dead]
    assert os.path.islink(link) and outside.read_text() == "keep"
