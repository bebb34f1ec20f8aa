"""BackupAndRestore: an interrupted fit (an exception, or SIGKILL in a subprocess), rerun
the same way, resumes at the exact batch and ends with the same weights (bit for bit) and
the same per-epoch logs as a run that was never interrupted."""
import os
import signal
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import layerkit as lk
from layerkit import callbacks as C
from layerkit import layers as L
from layerkit.checkpoint import CheckpointError

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class Interrupt(C.Callback):
    """Raises before the ``at``-th training batch of the fit (counted from 1)."""

    def __init__(self, at=None, where="batch"):
        super().__init__()
        self.at, self.where, self.n = at, where, 0

    def on_train_batch_begin(self, batch, logs=None):
        self.n += 1
        if self.where == "batch" and self.n == self.at:
            raise RuntimeError("interrupted")

    def on_epoch_begin(self, epoch, logs=None):
        if self.where == "epoch" and epoch == self.at:
            raise RuntimeError("interrupted")


def _xy(n=50):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((n, 6)).astype(np.float32)
    return x, (x[:, 0] + x[:, 1] > 0).astype(np.int64)


def _run(backup=None, at=None, data="arrays", eager=False, where="batch", epochs=3,
         model_kind="sequential"):
    """One 'run of the script': seeds, builds, trains; returns (weights, history)."""
    lk.random.set_seed(0)
    x, y = _xy()
    if model_kind == "sequential":
        m = lk.Sequential([lk.Input((6,)), L.Dense(16, activation="relu"), L.Dropout(0.3),
                           L.Dense(8, activation="relu"), L.Dropout(0.2, seed=3), L.Dense(2)])
    else:   # subclassed, built by the first batch (after the restore)
        class Net(lk.Model):
            def __init__(self):
                super().__init__()
                self.d1, self.drop, self.d2 = L.Dense(16, activation="relu"), L.Dropout(0.3), \
                    L.Dense(2)

            def call(self, x, training=None):
                return self.d2(self.drop(self.d1(x), training=training))
        m = Net()
    m.compile(optimizer=lk.optimizers.Adam(0.01),
              loss=lk.losses.SparseCategoricalCrossentropy(from_logits=True),
              metrics=["accuracy"], run_eagerly=eager)
    cbs = [Interrupt(at, where)]
    if backup is not None:
        cbs.insert(0, backup)
    kw = dict(epochs=epochs, callbacks=cbs, verbose=0)
    if data == "arrays":
        h = m.fit(x, y, batch_size=8, validation_split=0.2, **kw)
    elif data == "batch_shuffle":
        h = m.fit(x, y, batch_size=8, shuffle="batch", steps_per_epoch=4, **kw)
    elif data == "dataset":
        ds = lk.data.Dataset.from_tensor_slices((x, y)).shuffle(20).map(
            lambda a, b: (a * 2.0, b)).batch(8).prefetch(2)
        h = m.fit(ds, validation_data=ds, **kw)
    else:   # an infinite dataset with steps_per_epoch: the iterator spans epochs
        ds = lk.data.Dataset.from_tensor_slices((x, y)).shuffle(50).repeat().batch(8)
        h = m.fit(ds, steps_per_epoch=5, **kw)
    return m.get_weights(), h.history


def _assert_same_weights(a, b):
    assert len(a) == len(b)
    for u, v in zip(a, b):
        np.testing.assert_array_equal(u, v)


@pytest.mark.parametrize("data, eager, at", [
    ("arrays", False, 9),          # epoch 2 (5 batches an epoch), batch 4
    ("arrays", True, 9),
    ("arrays", False, 6),          # the first batch of epoch 2
    ("batch_shuffle", False, 7),   # steps_per_epoch=4 over 7 batches a pass
    ("dataset", False, 10),        # shuffle buffer, map, prefetch mid-pass
    ("repeat", False, 8),
])
def test_resumes_at_the_exact_batch_after_an_exception(tmp_path, data, eager, at):
    ref_w, ref_h = _run(data=data, eager=eager)
    backup_dir = tmp_path / "backup"
    with pytest.raises(RuntimeError, match="interrupted"):
        _run(C.BackupAndRestore(backup_dir, save_freq=1), at=at, data=data, eager=eager)
    assert os.listdir(backup_dir) == ["training_state.ckpt"]
    w, h = _run(C.BackupAndRestore(backup_dir, save_freq=1), data=data, eager=eager)
    _assert_same_weights(w, ref_w)
    # the interrupted epoch's logs include the batches of the first run (metrics restored)
    # (at=6 the last backup was after the last batch of epoch 1: the rerun ends that epoch)
    epochs_done = len(ref_h["loss"]) - len(h["loss"])
    assert epochs_done == (at - 1) // 5 - (at == 6) if data == "arrays" else epochs_done >= 1
    assert set(h) == set(ref_h)
    for k in h:
        assert h[k] == ref_h[k][epochs_done:], k
    assert not backup_dir.exists()   # deleted at the end of a completed fit


def test_resumes_an_unbuilt_subclassed_model(tmp_path):
    ref_w, _ = _run(model_kind="subclass")
    with pytest.raises(RuntimeError):
        _run(C.BackupAndRestore(tmp_path, save_freq=3), at=8, model_kind="subclass")
    w, _ = _run(C.BackupAndRestore(tmp_path, save_freq=3), model_kind="subclass")
    _assert_same_weights(w, ref_w)


def test_epoch_backups_keras_example(tmp_path):
    # Keras's docstring example: interrupted at (0-based) epoch 4 of 10, the rerun trains
    # the 6 remaining epochs.
    ref_w, _ = _run(epochs=10)
    with pytest.raises(RuntimeError):
        _run(C.BackupAndRestore(tmp_path / "b"), at=4, where="epoch", epochs=10)
    w, h = _run(C.BackupAndRestore(tmp_path / "b"), epochs=10)
    assert len(h["loss"]) == 6
    _assert_same_weights(w, ref_w)


def test_double_checkpoint_falls_back_to_the_previous_backup(tmp_path):
    ref_w, _ = _run()
    d = tmp_path / "b"
    with pytest.raises(RuntimeError):
        _run(C.BackupAndRestore(d, save_freq=2, double_checkpoint=True), at=9)
    assert sorted(os.listdir(d)) == ["training_state.ckpt", "training_state.ckpt.bkp"]
    latest = d / "training_state.ckpt"
    latest.write_bytes(latest.read_bytes()[:100])           # a damaged latest backup
    with pytest.raises(CheckpointError, match="training_state.ckpt"):
        _run(C.BackupAndRestore(d, save_freq=2))               # without the fallback
    w, _ = _run(C.BackupAndRestore(d, save_freq=2, double_checkpoint=True))
    _assert_same_weights(w, ref_w)    # resumed two batches earlier, same end


def test_keep_checkpoint_arguments_and_errors(tmp_path):
    d = tmp_path / "keep"
    _run(C.BackupAndRestore(d, delete_checkpoint=False), epochs=1)
    assert os.listdir(d) == ["training_state.ckpt"]
    # a later fit restores the completed run's position: no epoch is left to run
    _, h = _run(C.BackupAndRestore(d, delete_checkpoint=False), epochs=1)
    assert h == {}
    for bad in (0, "batch", 1.5, True):
        with pytest.raises(ValueError, match="save_freq"):
            C.BackupAndRestore(d, save_freq=bad)
    with pytest.raises(ValueError, match="backup_dir"):
        C.BackupAndRestore("")
    cb = C.BackupAndRestore(d)
    cb.set_model(lk.Sequential([L.Dense(1)]))
    with pytest.raises(RuntimeError, match="inside Model.fit"):
        cb.on_train_begin()


def test_a_generator_input_cannot_be_saved_mid_pass(tmp_path):
    x, y = _xy(16)
    m = lk.Sequential([lk.Input((6,)), L.Dense(2)])
    m.compile(optimizer="sgd", loss="sparse_categorical_crossentropy")
    batches = ((x[i:i + 8], y[i:i + 8]) for i in (0, 8))
    with pytest.raises(TypeError, match="generator.*has no get_state"):
        m.fit(batches, epochs=1, verbose=0,
              callbacks=[C.BackupAndRestore(tmp_path, save_freq=1)])
    class Batches:   # re-iterable, but its iterator cannot save a position
        def __iter__(self):
            return iter([(x[:8], y[:8]), (x[8:], y[8:])])

    # at epoch ends the input is between passes: nothing to save, fine
    m.fit(Batches(), epochs=2, verbose=0, callbacks=[C.BackupAndRestore(tmp_path / "e")])
    with pytest.raises(TypeError, match="list_iterator.*has no get_state"):
        m.fit(Batches(), epochs=1, verbose=0,
              callbacks=[C.BackupAndRestore(tmp_path / "b", save_freq=1)])


_SCRIPT = textwrap.dedent("""
    import os, signal, sys
    import numpy as np
    import layerkit as lk
    from layerkit import layers as L

    backup_dir, out, kill_at = sys.argv[1], sys.argv[2], int(sys.argv[3])
    lk.random.set_seed(0)
    rng = np.random.default_rng(1)
    x = rng.standard_normal((60, 5)).astype(np.float32)
    y = (x[:, 0] > x[:, 1]).astype(np.int64)
    model = lk.Sequential([lk.Input((5,)), L.Dense(12, activation="relu"), L.Dropout(0.25),
                           L.Dense(2)])
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy",
                  metrics=["accuracy"])

    class Kill(lk.callbacks.Callback):
        n = 0
        def on_train_batch_begin(self, batch, logs=None):
            Kill.n += 1
            if Kill.n == kill_at:
                os.kill(os.getpid(), signal.SIGKILL)

    cbs = [Kill()]
    if backup_dir != "-":
        cbs.insert(0, lk.callbacks.BackupAndRestore(backup_dir, save_freq=2))
    h = model.fit(x, y, batch_size=8, epochs=3, callbacks=cbs, verbose=0)
    np.savez(out, *model.get_weights(), loss=np.array(h.history["loss"]))
""")


def test_resumes_after_sigkill_in_a_subprocess(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(_SCRIPT)
    env = dict(os.environ, PYTHONPATH=ROOT)

    def run(*args):
        return subprocess.run([sys.executable, str(script), *map(str, args)], env=env,
                              capture_output=True, text=True, timeout=120)

    ref = run("-", tmp_path / "ref.npz", 0)
    assert ref.returncode == 0, ref.stderr
    backup = tmp_path / "backup"
    killed = run(backup, tmp_path / "never.npz", 13)   # 8 batches an epoch: epoch 2, batch 5
    assert killed.returncode == -signal.SIGKILL
    assert os.listdir(backup) == ["training_state.ckpt"]
    resumed = run(backup, tmp_path / "resumed.npz", 0)
    assert resumed.returncode == 0, resumed.stderr
    a, b = np.load(tmp_path / "ref.npz"), np.load(tmp_path / "resumed.npz")
    assert len(a.files) == 5
    for k in a.files:
        if k == "loss":
            np.testing.assert_array_equal(b[k], a[k][1:])   # epochs 2 and 3
        else:
            np.testing.assert_array_equal(a[k], b[k])
    assert not backup.exists()
