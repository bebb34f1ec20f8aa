"""Whole models in Keras's legacy HDF5 format: layerkit round trips (architecture,
weights, compile arguments, optimizer state), a file written by Keras 3, weights-only
legacy files, and the errors."""
import warnings
from pathlib import Path

import numpy as np
import pytest

import layerkit as lk

pytest.importorskip("h5py")
FIXTURES = Path(__file__).parent.parent / "fixtures" / "keras"
rng = np.random.default_rng(0)
X = rng.random((32, 3)).astype(np.float32)
Y = (np.arange(32) % 2).astype(np.int64)


def _model():
    inp = lk.Input((3,))
    h = lk.layers.Dense(4, activation="relu")(inp)
    h = lk.layers.BatchNormalization()(h)
    return lk.Model(inp, lk.layers.Dense(2)(h))


def _save(model, path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return model.save(path)


@pytest.mark.parametrize("make", [
    _model,
    lambda: lk.Sequential([lk.Input((3,)), lk.layers.Dense(4),
                           lk.Sequential([lk.layers.Dense(3), lk.layers.Dense(2)])]),
])
def test_round_trip_keeps_predictions_compile_and_optimizer_state(tmp_path, make):
    model = make()
    model.compile(lk.optimizers.Adam(0.01),
                  lk.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    model.fit(X, Y, epochs=2, batch_size=8, verbose=0)
    path = _save(model, tmp_path / "m.h5")
    again = lk.models.load_model(path)
    np.testing.assert_array_equal(again.predict(X, verbose=0), model.predict(X, verbose=0))
    assert again.optimizer.iterations.numpy() == model.optimizer.iterations.numpy() == 8
    # the next epoch is the same as the original's: the optimizer state came back
    h1 = model.fit(X, Y, epochs=1, batch_size=8, shuffle=False, verbose=0).history
    h2 = again.fit(X, Y, epochs=1, batch_size=8, shuffle=False, verbose=0).history
    assert h1 == h2
    np.testing.assert_allclose(again.predict(X, verbose=0), model.predict(X, verbose=0),
                               rtol=1e-6, atol=1e-6)


def test_uncompiled_and_compile_false(tmp_path):
    model = _model()
    path = _save(model, tmp_path / "plain.hdf5")
    again = lk.models.load_model(path)
    assert not again.compiled
    np.testing.assert_array_equal(again.predict(X, verbose=0), model.predict(X, verbose=0))
    model.compile("sgd", "mse")
    path = _save(model, tmp_path / "c.h5")
    assert not lk.models.load_model(path, compile=False).compiled


def test_duplicate_weight_names_inside_a_layer(tmp_path):
    model = lk.Sequential([lk.Input((5, 3)), lk.layers.Bidirectional(lk.layers.LSTM(2)),
                           lk.layers.Dense(1)])
    x = rng.random((4, 5, 3)).astype(np.float32)
    again = lk.models.load_model(_save(model, tmp_path / "bi.h5"))
    np.testing.assert_allclose(again.predict(x, verbose=0), model.predict(x, verbose=0),
                               rtol=1e-6)


def test_model_checkpoint_best_h5_then_load(tmp_path):
    model = _model()
    model.compile("adam", lk.losses.SparseCategoricalCrossentropy(from_logits=True))
    path = str(tmp_path / "best_model.h5")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(X, Y, epochs=3, verbose=0, validation_split=0.25, callbacks=[
            lk.callbacks.ModelCheckpoint(path, save_best_only=True, monitor="val_loss")])
    best = lk.models.load_model(path)
    assert best.evaluate(X, Y, verbose=0) > 0


def test_reads_a_file_written_by_keras_3():
    x = np.random.default_rng(0).random((16, 3)).astype("float32")
    model = lk.models.load_model(FIXTURES / "legacy_mlp.h5")
    np.testing.assert_allclose(model.predict(x, verbose=0),
                               np.load(FIXTURES / "legacy_mlp_pred.npy"), rtol=1e-5, atol=1e-6)
    assert model.compiled and model.optimizer.iterations.numpy() == 2
    assert isinstance(model.optimizer, lk.optimizers.Adam)


def test_load_weights_of_a_legacy_whole_model_file_by_name_or_position(tmp_path):
    model = _model()
    path = _save(model, tmp_path / "m.h5")
    fresh = _model()  # other layer names (dense_2, ...): matched by position
    fresh.load_weights(path)
    np.testing.assert_array_equal(fresh.predict(X, verbose=0), model.predict(X, verbose=0))
    wrong = lk.Sequential([lk.Input((3,)), lk.layers.Dense(5), lk.layers.Dense(2)])
    before = [w.copy() for w in wrong.get_weights()]
    with pytest.raises(ValueError, match="do not match|has weights for"):
        wrong.load_weights(path)
    for a, b in zip(before, wrong.get_weights()):
        np.testing.assert_array_equal(a, b)  # nothing was assigned


def test_errors_name_the_file(tmp_path):
    import h5py

    weights_only = tmp_path / "w.h5"
    with h5py.File(weights_only, "w") as f:
        f.attrs["layer_names"] = np.array([b"dense"])
        f.create_group("dense").attrs["weight_names"] = np.array([], dtype="S1")
    with pytest.raises(ValueError, match="weights only"):
        lk.models.load_model(weights_only)
    bad = tmp_path / "bad.h5"
    with h5py.File(bad, "w") as f:
        f.attrs["model_config"] = "{not json"
    with pytest.raises(ValueError, match="bad.h5.*not valid JSON"):
        lk.models.load_model(bad)
    with pytest.raises(ValueError, match=r"'\.keras' \(or '\.h5'"):
        _model().save(tmp_path / "m.txt")
    with pytest.raises(FileExistsError):
        lk.saving.save_model(_model(), _save(_model(), tmp_path / "x.h5"), overwrite=False)
