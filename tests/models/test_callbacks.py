"""Callbacks: the hooks fit calls, the progress bar, early stopping, checkpoints,
learning-rate schedules, CSV logs and the NaN guard."""
import csv
import io
import math
import os
import sys

import numpy as np
import pytest

import layerkit as lk
from layerkit import callbacks as C
from layerkit import layers as L
from layerkit import losses, optimizers
from layerkit.models import Input, Sequential

SCCE = losses.SparseCategoricalCrossentropy(from_logits=True)


def _data(n=64):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((n, 4)).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.int64)
    return x, y


def _model(lr=0.05):
    m = Sequential([Input(shape=(4,)), L.Dense(8, activation="relu"), L.Dense(2)])
    m.compile(optimizer=optimizers.SGD(lr), loss=SCCE, metrics=["accuracy"])
    return m


class Recorder(C.Callback):
    def __init__(self):
        super().__init__()
        self.calls = []

    def __getattribute__(self, name):
        if name.startswith("on_"):
            calls = object.__getattribute__(self, "calls")
            return lambda *a: calls.append((name,) + tuple(
                sorted(x) if isinstance(x, dict) else x for x in a))
        return object.__getattribute__(self, name)


def test_hook_order_params_and_logs():
    x, y = _data(32)
    rec = Recorder()
    m = _model()
    m.fit(x, y, epochs=2, batch_size=16, validation_data=(x, y), callbacks=[rec], verbose=0)
    names = [c[0] for c in rec.calls]
    assert names[0] == "on_train_begin" and names[-1] == "on_train_end"
    epoch0 = names[1:names.index("on_epoch_end") + 1]
    assert epoch0 == ["on_epoch_begin", "on_train_batch_begin", "on_train_batch_end",
                      "on_train_batch_begin", "on_train_batch_end", "on_test_begin",
                      "on_test_batch_begin", "on_test_batch_end", "on_test_batch_begin",
                      "on_test_batch_end", "on_test_end", "on_epoch_end"]
    end = [c for c in rec.calls if c[0] == "on_epoch_end"][0]
    assert end[2] == ["accuracy", "loss", "val_accuracy", "val_loss"]
    assert rec.params == {"epochs": 2, "steps": 2, "verbose": 0, "mode": "train"}
    assert rec.model is m


def test_history_values_are_floats_per_epoch():
    x, y = _data()
    h = _model().fit(x, y, epochs=3, verbose=0)
    assert all(isinstance(v, float) for v in h.history["loss"])
    assert len(h.history["accuracy"]) == 3


def test_progress_bar_log_mode_one_line_per_epoch(capsys):
    x, y = _data()
    _model().fit(x, y, epochs=2, batch_size=16, verbose=1)
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 2
    assert lines[0].startswith("Epoch 1/2 - 4/4 [") and "step - loss: " in lines[0]
    assert "accuracy: " in lines[0] and "\r" not in lines[0]
    _model().fit(x, y, epochs=2, verbose=2, validation_split=0.25)
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 2 and "val_loss: " in lines[1]
    _model().fit(x, y, epochs=2, verbose=0)
    assert capsys.readouterr().out == ""


class FakeTTY(io.StringIO):
    def isatty(self):
        return True


def test_progress_bar_terminal_mode_redraws_in_place():
    x, y = _data(160)
    stream = FakeTTY()
    bar = C.ProgbarLogger(stream=stream, interval=0.0)
    _model().fit(x, y, epochs=2, batch_size=16, callbacks=[bar], verbose=1)
    out = stream.getvalue()
    assert out.count("Epoch 1/2\n") == 1 and out.count("Epoch 2/2\n") == 1
    frames = out.split("\r")
    assert any(" 5/10 [" in f and "ETA: " in f for f in frames)
    assert any("10/10 [====================]" in f and "/step" in f for f in frames)
    assert "loss: " in frames[3] and "accuracy: " in frames[3]
    # the rate limit: with a long interval only the final frame is drawn per epoch
    slow = FakeTTY()
    _model().fit(x, y, epochs=1, batch_size=16,
                 callbacks=[C.ProgbarLogger(stream=slow, interval=3600)], verbose=1)
    assert slow.getvalue().count("\r") == 2  # the first update (due at once) and the last


def test_progbar_unknown_target_and_formatting():
    s = io.StringIO()
    bar = C.Progbar(None, stream=s, dynamic=True, interval=0)
    bar.update(3, {"loss": 0.00001234})
    assert "3/Unknown" in s.getvalue() and "1.2340e-05" in s.getvalue()


def test_early_stopping_patience_and_restore_best_weights():
    x, y = _data()
    m = _model()
    losses_seen = [1.0, 0.5, 0.6, 0.7, 0.4, 0.3]

    class FakeVal(C.Callback):  # inject a scripted val_loss, before EarlyStopping sees it
        def on_epoch_end(self, epoch, logs=None):
            logs["val_loss"] = losses_seen[epoch]
            self.model.layers[0].kernel.assign(np.full((4, 8), float(epoch), np.float32))

    es = C.EarlyStopping(monitor="val_loss", patience=2, restore_best_weights=True)
    h = m.fit(x, y, epochs=6, callbacks=[FakeVal(), es], verbose=0)
    assert len(h.history["loss"]) == 4 and es.stopped_epoch == 3 and es.best_epoch == 1
    np.testing.assert_array_equal(m.layers[0].kernel.numpy(), 1.0)  # weights of epoch 1
    # min_delta: improvements smaller than it do not count
    es2 = C.EarlyStopping(monitor="val_loss", patience=1, min_delta=0.2)
    losses_seen[:] = [1.0, 0.9, 0.85, 0.1, 0.1, 0.1]
    h2 = _model().fit(x, y, epochs=6, callbacks=[FakeVal(), es2], verbose=0)
    assert len(h2.history["loss"]) == 2
    # mode auto: accuracy is maximised, losses minimised (decided at the first check)
    for monitor, op in (("val_accuracy", np.greater), ("val_loss", np.less), ("auc", np.greater),
                        ("val_mean_squared_error", np.less), ("output_1_accuracy", np.greater)):
        es = C.EarlyStopping(monitor=monitor)
        es._set_monitor_op()
        assert es.monitor_op is op and es.mode == "auto"
    with pytest.raises(ValueError, match="mode='max'"):   # Keras: an undecidable name
        C.EarlyStopping(monitor="my_score")._set_monitor_op()
    with pytest.warns(UserWarning, match="mode 'up' is unknown, fallback to auto"):
        assert C.EarlyStopping(mode="up").mode == "auto"


def test_early_stopping_missing_metric_warns():
    x, y = _data(16)
    with pytest.warns(UserWarning, match="`val_loss` which is not available.*accuracy"):
        _model().fit(x, y, epochs=1, callbacks=[C.EarlyStopping()], verbose=0)


def test_model_checkpoint(tmp_path):
    x, y = _data()
    m = _model()
    pattern = os.fspath(tmp_path / "ck" / "w-{epoch:02d}-{loss:.3f}")
    m.fit(x, y, epochs=3, callbacks=[C.ModelCheckpoint(pattern, monitor="loss")], verbose=0)
    files = sorted(os.listdir(tmp_path / "ck"))
    assert [f[:4] for f in files] == ["w-01", "w-02", "w-03"]
    restored = _model()
    restored.load_weights(os.fspath(tmp_path / "ck" / files[-1]))
    np.testing.assert_allclose(restored.predict(x, verbose=0), m.predict(x, verbose=0),
                               rtol=1e-6)
    best = os.fspath(tmp_path / "best")
    vals = [0.5, 0.7, 0.2]

    class FakeVal(C.Callback):
        def on_epoch_end(self, epoch, logs=None):
            logs["val_loss"] = vals[epoch]

    saves = []
    cb = C.ModelCheckpoint(best, save_best_only=True)
    mb = _model()
    real_save = mb.save_weights
    mb.save_weights = lambda path, overwrite=True: saves.append(path) or real_save(path)
    mb.fit(x, y, epochs=3, callbacks=[FakeVal(), cb], verbose=0)
    assert cb.best == 0.2 and len(saves) == 2 and os.path.exists(best)  # epochs 1 and 3
    every = C.ModelCheckpoint(os.fspath(tmp_path / "b{batch}"), save_freq=2)
    _model().fit(x, y, epochs=1, batch_size=16, callbacks=[every], verbose=0)
    assert sorted(f for f in os.listdir(tmp_path) if f[:1] == "b" and f[1:].isdigit()) == \
        ["b2", "b4"]   # 1-based batch numbers, as Keras
    with pytest.raises(KeyError, match="val_acc"):
        _model().fit(x, y, epochs=1, verbose=0,
                     callbacks=[C.ModelCheckpoint(os.fspath(tmp_path / "{val_acc}"))])


def test_learning_rate_scheduler_and_logged_rate():
    x, y = _data(32)
    m = _model(lr=0.1)
    seen = []

    def schedule(epoch, lr):
        seen.append(lr)
        return 0.1 * 0.5 ** epoch

    h = m.fit(x, y, epochs=3, callbacks=[C.LearningRateScheduler(schedule)], verbose=0)
    assert seen == pytest.approx([0.1, 0.1, 0.05])
    assert h.history["learning_rate"] == pytest.approx([0.1, 0.05, 0.025])
    m.fit(x, y, epochs=1, callbacks=[C.LearningRateScheduler(lambda e: 0.01)], verbose=0)
    assert float(m.optimizer.learning_rate.numpy()) == pytest.approx(0.01)


def test_csv_logger(tmp_path):
    x, y = _data(32)
    path = os.fspath(tmp_path / "log.csv")
    _model().fit(x, y, epochs=2, callbacks=[C.CSVLogger(path)], verbose=0)
    _model().fit(x, y, epochs=1, callbacks=[C.CSVLogger(path, append=True)], verbose=0)
    rows = list(csv.DictReader(open(path)))
    assert [r["epoch"] for r in rows] == ["0", "1", "0"]
    # Keras: without val_ keys in the first epoch, val_ columns are added (filled with NA)
    assert list(rows[0]) == ["epoch", "accuracy", "loss", "val_accuracy", "val_loss"]
    assert all(math.isfinite(float(r["loss"])) for r in rows)
    assert {r["val_loss"] for r in rows} == {"NA"}


def test_terminate_on_nan_names_the_step(capsys):
    x, y = _data(64)
    m = _model()

    class Poison(C.Callback):
        def on_train_batch_begin(self, batch, logs=None):
            if batch == 2:
                self.model.layers[1].kernel.assign(np.full((8, 2), np.nan, np.float32))

    guard = C.TerminateOnNaN()
    h = m.fit(x, y, epochs=3, batch_size=8, callbacks=[Poison(), guard], verbose=0)
    out = capsys.readouterr().out
    assert "Batch 2 of epoch 1 (optimizer step 3): invalid loss nan" in out
    assert guard.stopped_step == 3 and len(h.history["loss"]) == 1
    with pytest.raises(RuntimeError, match="Batch 2 of epoch 1"):
        _model().fit(x, y, epochs=1, batch_size=8, verbose=0,
                     callbacks=[Poison(), C.TerminateOnNaN(raise_error=True)])


def test_lambda_callback():
    x, y = _data(16)
    ends = []
    _model().fit(x, y, epochs=2, verbose=0,
                 callbacks=[C.LambdaCallback(on_epoch_end=lambda e, logs: ends.append(e))])
    assert ends == [0, 1]
    with pytest.raises(ValueError, match="unknown hook"):
        C.LambdaCallback(on_epoch_finish=print)


def test_history_plot(tmp_path, monkeypatch):
    x, y = _data(16)
    h = _model().fit(x, y, epochs=2, validation_split=0.25, verbose=0)
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(ImportError, match="pip install matplotlib"):
        h.plot(os.fspath(tmp_path / "c.png"))
    monkeypatch.undo()
    pytest.importorskip("matplotlib")
    path = h.plot(os.fspath(tmp_path / "curves.png"))
    with open(path, "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"
    with pytest.raises(ValueError, match="nothing to plot"):
        C.History().plot(os.fspath(tmp_path / "empty.png"))


def test_stop_training_from_a_callback():
    x, y = _data(64)

    class StopAt(C.Callback):
        def on_train_batch_end(self, batch, logs=None):
            if batch == 1:
                self.model.stop_training = True

    m = _model()
    h = m.fit(x, y, epochs=5, batch_size=8, callbacks=[StopAt()], verbose=0)
    assert len(h.history["loss"]) == 1 and int(m.optimizer.iterations.numpy()) == 2
    assert lk is not None
