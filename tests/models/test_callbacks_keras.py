"""Keras 3 parity of the callbacks: ReduceLROnPlateau, the Keras 2 batch-hook aliases,
CallbackList, EarlyStopping's baseline and warm-up, ModelCheckpoint's file names and
best-only rules, CSVLogger's columns, LambdaCallback, LearningRateScheduler's checks.

The expected sequences were derived by hand from Keras 3's rules (and checked once by
hand against Keras 3.15 on the same scripted metric values)."""
import io
import os

import numpy as np
import pytest

from layerkit import callbacks as C
from layerkit import layers as L
from layerkit import losses, optimizers
from layerkit.models import Input, Sequential
from layerkit.optimizers import schedules


def _data(n=32):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((n, 4)).astype(np.float32)
    return x, (x[:, 0] > 0).astype(np.int64)


def _model(lr=0.1):
    m = Sequential([Input(shape=(4,)), L.Dense(2)])
    m.compile(optimizer=optimizers.SGD(lr),
              loss=losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
    return m


class Scripted(C.Callback):
    """Puts a scripted ``val_loss`` into the epoch logs (before the callbacks after it)."""

    def __init__(self, values, key="val_loss"):
        super().__init__()
        self.values, self.key = values, key

    def on_epoch_end(self, epoch, logs=None):
        logs[self.key] = self.values[epoch]


def _lrs_seen():
    seen = []
    return seen, C.LambdaCallback(on_epoch_end=lambda e, logs: seen.append(logs["learning_rate"]))


# ---- ReduceLROnPlateau ------------------------------------------------------------------
def test_reduce_lr_on_plateau_patience_cooldown_min_delta_min_lr():
    x, y = _data()
    vals = [1.0, 0.9, 0.95, 0.96, 0.97, 0.8999, 0.85, 0.86, 0.87, 0.88, 0.89, 0.9]
    seen, rec = _lrs_seen()
    cb = C.ReduceLROnPlateau(factor=0.5, patience=2, cooldown=1, min_lr=0.02, min_delta=0.01)
    m = _model(0.1)
    m.fit(x, y, epochs=12, verbose=0, callbacks=[Scripted(vals), cb, rec])
    # The rate is logged before the epoch's reduction. Epochs 2, 3 do not beat 0.9 by 0.01:
    # reduce at 3 (0.05); 4 is a cooldown epoch that still counts as a miss (wait 1), 5's
    # 0.8999 is not 0.01 below 0.9: reduce at 5 (0.025); 6 improves (0.85); 7, 8 miss:
    # reduce at 8 to max(0.0125, min_lr) = 0.02; then the rate is at min_lr and stays.
    f32 = [float(np.float32(v)) for v in (0.1, 0.05, 0.025, 0.02)]
    expected = [f32[0]] * 4 + [f32[1]] * 2 + [f32[2]] * 3 + [f32[3]] * 3
    assert seen == pytest.approx(expected, rel=1e-7)
    assert float(m.optimizer.learning_rate.numpy()) == pytest.approx(0.02)
    assert cb.cooldown_counter == 0 and cb.best == 0.85


def test_reduce_lr_on_plateau_max_mode_and_stops_at_min_lr(capsys):
    x, y = _data()
    cb = C.ReduceLROnPlateau(monitor="val_accuracy", factor=0.1, patience=1, min_lr=0.001,
                             verbose=1)
    m = _model(0.1)
    m.fit(x, y, epochs=5, verbose=0, callbacks=[Scripted([0.5] * 5, "val_accuracy"), cb])
    # no improvement after epoch 0: 0.1 -> 0.01 (epoch 1) -> 0.001 (epoch 2) -> stays
    assert float(m.optimizer.learning_rate.numpy()) == pytest.approx(0.001)
    out = capsys.readouterr().out
    assert out.count("ReduceLROnPlateau reducing learning rate to") == 2
    assert "Epoch 2: ReduceLROnPlateau reducing learning rate to 0.01" in out


def test_reduce_lr_on_plateau_refuses_schedules_and_bad_factor():
    x, y = _data()
    m = Sequential([Input(shape=(4,)), L.Dense(2)])
    m.compile(optimizer=optimizers.SGD(schedules.ExponentialDecay(0.1, 10, 0.5)),
              loss=losses.SparseCategoricalCrossentropy(from_logits=True))
    seen, rec = _lrs_seen()
    with pytest.raises(TypeError, match="LearningRateSchedule"):
        m.fit(x, y, epochs=3, verbose=0,
              callbacks=[Scripted([1.0, 1.0, 1.0]), C.ReduceLROnPlateau(patience=1), rec])
    # the schedule's value was logged before the reduction was refused (one step per epoch)
    assert seen == pytest.approx([0.1 * 0.5 ** 0.1])
    with pytest.raises(ValueError, match="factor >= 1.0"):
        C.ReduceLROnPlateau(factor=1.0)
    with pytest.raises(TypeError, match="epsilon"):
        C.ReduceLROnPlateau(epsilon=0.1)


# ---- the base class and the list ----------------------------------------------------------
def test_keras2_batch_hook_aliases_are_called_by_fit():
    x, y = _data(32)
    calls = []

    class Old(C.Callback):
        def on_batch_begin(self, batch, logs=None):
            calls.append(("begin", batch))

        def on_batch_end(self, batch, logs=None):
            calls.append(("end", batch, sorted(logs)))

    _model().fit(x, y, epochs=1, batch_size=16, verbose=0, callbacks=[Old()])
    assert calls == [("begin", 0), ("end", 0, ["accuracy", "loss"]), ("begin", 1),
                     ("end", 1, ["accuracy", "loss"])]


def test_callback_list_keras_signature():
    m = _model()
    seen = []
    lam = C.LambdaCallback(on_train_begin=lambda logs: seen.append(("tb", logs)))
    cbl = C.CallbackList([lam, [C.TerminateOnNaN()]], add_history=True, add_progbar=True,
                         model=m, epochs=3, steps=2, verbose=0)
    kinds = [type(c).__name__ for c in cbl.callbacks]
    assert kinds == ["LambdaCallback", "TerminateOnNaN", "History", "ProgbarLogger"]
    assert m.history is cbl.callbacks[2]                   # Keras sets model.history
    assert all(c.model is m for c in cbl) and lam.params == {"epochs": 3, "steps": 2,
                                                             "verbose": 0}
    cbl.on_train_begin()
    assert seen == [("tb", {})]
    late = C.LambdaCallback(on_epoch_end=lambda e, logs: seen.append((e, logs)))
    cbl.append(late)
    assert late.model is m and late.params["epochs"] == 3
    cbl.on_epoch_end(4, logs={"loss": 1.0})
    assert seen[-1] == (4, {"loss": 1.0})
    with pytest.raises(TypeError, match="lk.callbacks.Callback"):
        C.CallbackList([print])
    assert C.Callback().model is None and C.Callback().params == {}


# ---- EarlyStopping ------------------------------------------------------------------------
@pytest.mark.parametrize("kwargs, values, epochs_run, stopped, best_epoch", [
    # an improvement never stops training, even when it does not beat the baseline
    (dict(patience=2, baseline=0.5), [0.9, 0.8, 0.7, 0.4, 0.3, 0.2], 6, 0, 5),
    # the first value is "best" but misses the baseline, so patience keeps counting from it:
    # epoch 1 does not improve and is the second epoch without beating the baseline
    (dict(patience=2, baseline=0.5), [0.9, 0.95, 0.96, 0.97, 0.4, 0.3], 2, 1, 0),
    # monitoring starts at epoch 2; patience 1 then stops at epoch 3
    (dict(patience=1, start_from_epoch=2), [0.5, 0.6, 0.7, 0.8, 0.9, 1.0], 4, 3, 2),
])
def test_early_stopping_baseline_and_start_from_epoch(kwargs, values, epochs_run, stopped,
                                                      best_epoch):
    x, y = _data()
    es = C.EarlyStopping(**kwargs)
    h = _model().fit(x, y, epochs=6, verbose=0, callbacks=[Scripted(values), es])
    assert (len(h.history["loss"]), es.stopped_epoch, es.best_epoch) == (epochs_run, stopped,
                                                                         best_epoch)


def test_early_stopping_restores_best_weights_without_stopping():
    x, y = _data()
    m = _model()

    class Mark(C.Callback):
        def on_epoch_end(self, epoch, logs=None):
            self.model.layers[0].kernel.assign(np.full((4, 2), float(epoch), np.float32))

    es = C.EarlyStopping(patience=5, restore_best_weights=True)
    m.fit(x, y, epochs=4, verbose=0, callbacks=[Mark(), Scripted([0.5, 0.2, 0.3, 0.4]), es])
    assert es.stopped_epoch == 0 and es.best_epoch == 1
    np.testing.assert_array_equal(m.layers[0].kernel.numpy(), 1.0)


# ---- ModelCheckpoint ---------------------------------------------------------------------
def test_model_checkpoint_names_best_only_and_messages(tmp_path, capsys):
    x, y = _data()
    pattern = os.fspath(tmp_path / "w-{epoch:02d}-{batch}.weights.h5")
    _model().fit(x, y, epochs=2, batch_size=8, verbose=0,
                 callbacks=[C.ModelCheckpoint(pattern, save_weights_only=True, save_freq=3)])
    # 4 batches per epoch, every 3rd batch counted across epochs: epoch 1 batch 3, epoch 2
    # batch 2 (1-based), as Keras names them
    assert sorted(os.listdir(tmp_path)) == ["w-01-3.weights.h5", "w-02-2.weights.h5"]

    best = tmp_path / "best.lkw"
    cb = C.ModelCheckpoint(os.fspath(best), save_best_only=True, verbose=1,
                           initial_value_threshold=0.6)
    _model().fit(x, y, epochs=3, verbose=0, callbacks=[Scripted([0.7, 0.5, 0.55]), cb])
    out = capsys.readouterr().out
    assert "Epoch 1: val_loss did not improve from 0.60000" in out
    assert "Epoch 2: val_loss improved from 0.60000 to 0.50000, saving model to" in out
    assert "Epoch 3: val_loss did not improve from 0.50000" in out
    assert cb.best == 0.5 and best.exists()

    # the monitored value is missing: Keras warns and saves anyway
    missing = tmp_path / "missing.lkw"
    with pytest.warns(UserWarning, match="only with val_loss available"):
        _model().fit(x, y, epochs=1, verbose=0,
                     callbacks=[C.ModelCheckpoint(os.fspath(missing), save_best_only=True)])
    assert missing.exists()


def test_model_checkpoint_argument_errors(tmp_path):
    with pytest.raises(ValueError, match="not a '.keras' model archive"):
        C.ModelCheckpoint("m.keras", save_weights_only=True)
    for bad in ("batch", 0, 2.5, True):
        with pytest.raises(ValueError, match="save_freq"):
            C.ModelCheckpoint("w.lkw", save_freq=bad)
    x, y = _data()
    (tmp_path / "adir").mkdir()
    with pytest.raises(IsADirectoryError, match="non-directory"):
        _model().fit(x, y, epochs=1, verbose=0,
                     callbacks=[C.ModelCheckpoint(os.fspath(tmp_path / "adir"))])


def test_model_checkpoint_whole_model_uses_model_save(tmp_path):
    x, y = _data()
    m = _model()
    saved = []
    m.save = lambda path, overwrite=True: saved.append((path, overwrite))
    m.fit(x, y, epochs=2, verbose=0,
          callbacks=[C.ModelCheckpoint(os.fspath(tmp_path / "m-{epoch}.keras"))])
    assert saved == [(os.fspath(tmp_path / "m-1.keras"), True),
                     (os.fspath(tmp_path / "m-2.keras"), True)]


# ---- CSVLogger, LambdaCallback, LearningRateScheduler, TerminateOnNaN --------------------
def test_csv_logger_separator_val_columns_and_sequences(tmp_path):
    path = tmp_path / "log.csv"
    logger = C.CSVLogger(path, separator=";")
    logger.on_train_begin()
    logger.on_epoch_end(0, {"loss": 0.5, "w": np.array([1, 2])})
    logger.on_epoch_end(1, {"loss": 0.25, "val_loss": 0.75})
    logger.on_train_end()
    assert path.read_bytes().decode() == (
        'epoch;loss;w;val_loss;val_w\r\n'
        '0;0.5;"""[1, 2]""";NA;NA\r\n'
        '1;0.25;NA;0.75;NA\r\n')


def test_lambda_callback_keras_signature():
    calls = []
    cb = C.LambdaCallback(lambda e, logs: calls.append(("eb", e)), None,
                          on_batch_end=lambda b, logs: calls.append(("be", b)))
    cbl = C.CallbackList([cb])
    cbl.on_epoch_begin(3)
    cbl.on_train_batch_end(5, {})
    assert calls == [("eb", 3), ("be", 5)]
    with pytest.raises(ValueError, match="unknown hook 'on_epoch_finish'"):
        C.LambdaCallback(on_epoch_finish=print)
    with pytest.raises(TypeError, match="on_epoch_end must be callable"):
        C.LambdaCallback(on_epoch_end=3)


def test_learning_rate_scheduler_needs_a_float():
    x, y = _data()
    with pytest.raises(ValueError, match="should be a float. Got: 1 "):
        _model().fit(x, y, epochs=1, verbose=0,
                     callbacks=[C.LearningRateScheduler(lambda epoch: 1)])
    with pytest.raises(ValueError, match="returned nan"):
        _model().fit(x, y, epochs=1, verbose=0,
                     callbacks=[C.LearningRateScheduler(lambda epoch, lr: float("nan"))])
    m = _model(0.1)
    m.fit(x, y, epochs=2, verbose=0,
          callbacks=[C.LearningRateScheduler(lambda epoch, lr: np.float32(lr / 2))])
    assert float(m.optimizer.learning_rate.numpy()) == pytest.approx(0.025)


# ---- Progbar (lk.utils.Progbar, Keras's API) ---------------------------------------------
def test_progbar_averages_stateless_values_and_shows_stateful_ones():
    out = io.StringIO()
    bar = C.Progbar(10, stateful_metrics=["acc"], stream=out, dynamic=True, interval=0)
    bar.update(2, [("loss", 1.0), ("acc", 0.5)])
    bar.update(5, [("loss", 2.0), ("acc", 0.7)])
    # loss weighted by the steps each update covers: (2 * 1 + 3 * 2) / 5
    assert out.getvalue().split("\r")[-1].endswith("loss: 1.6000 - acc: 0.7000")
    assert " 5/10 [=========>..........] - ETA: " in out.getvalue()
    bar.add(5, {"loss": 4.0})           # reaches the target: the final line, values as given
    final = out.getvalue().split("\r")[-1]
    assert final.startswith("10/10 [====================] - ") and final.endswith(
        "/step - loss: 4.0000 - acc: 0.7000\n")
    assert bar.seen == 10


def test_progbar_verbose_modes_unit_name_and_unknown_target():
    out = io.StringIO()
    bar = C.Progbar(None, verbose=2, unit_name="sample", stream=out)
    bar.update(3, [("loss", 1e-5)])
    assert out.getvalue() == ""          # verbose=2: only the final line
    bar.finish()
    line = out.getvalue()
    assert line.startswith("3/3 [====================] - ") and "/sample - loss: 1.0000e-05" in line
    silent = io.StringIO()
    C.Progbar(4, verbose=0, stream=silent).update(4, [("loss", 1.0)])
    assert silent.getvalue() == ""
    with pytest.raises(ValueError, match="only one of"):
        C.Progbar(3, stateful_metrics=["a"], stateless_metrics=["b"])
    with pytest.raises(ValueError, match="verbose"):
        C.Progbar(3, verbose=3)
    only = io.StringIO()
    bar = C.Progbar(4, stateless_metrics=["loss"], stream=only, dynamic=True, interval=0)
    bar.update(1, [("loss", 1.0), ("lr", 0.5)])
    bar.update(2, [("loss", 3.0), ("lr", 0.25)])
    assert only.getvalue().split("\r")[-1].endswith("loss: 2.0000 - lr: 0.2500")
