"""Keras 3 ``.keras`` archives load in layerkit with Keras's predictions.

The archives were written once by Keras (tests/fixtures/keras/make_keras_archives.py and
make_keras_fixtures.py, which say how to rerun them); the models are built from
architectures.py, shared with those generators. ``branchy`` also holds Keras's
predictions after three more epochs of training the saved model: a loaded model,
compiled from the archive with its optimizer state, must reproduce them.
"""
import pathlib

import numpy as np
import pytest

import layerkit as lk
from layerkit.saving import object_registration
from tests.fixtures.keras import architectures as A

pytest.importorskip("h5py")

FIXTURES = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "keras"


def _load(name, **kwargs):
    return lk.models.load_model(FIXTURES / f"{name}.keras", **kwargs)


@pytest.fixture
def fresh_registry(monkeypatch):
    monkeypatch.setattr(object_registration, "_GLOBAL_CUSTOM_OBJECTS", {})
    monkeypatch.setattr(object_registration, "_GLOBAL_CUSTOM_NAMES", {})


def test_recurrent_attention_archive():
    model = _load("seq")
    x, y = np.load(FIXTURES / "seq_x.npy"), np.load(FIXTURES / "seq_y.npy")
    assert [type(x).__name__ for x in model.layers] == [
        "Embedding", "Bidirectional", "GRU", "SimpleRNN", "MultiHeadAttention", "Add",
        "Sequential"]
    np.testing.assert_allclose(model.predict(x, verbose=0), y, atol=1e-5)


def test_branchy_functional_archive_continues_training_as_keras():
    d = np.load(FIXTURES / "branchy.npz")
    model = _load("branchy")
    x = [d["xa"], d["xb"]]
    p0, p1 = model.predict(x, verbose=0)
    np.testing.assert_allclose(p0, d["p0"], atol=1e-5)
    np.testing.assert_allclose(p1, d["p1"], atol=1e-5)
    # the compile config: Adam on an ExponentialDecay schedule, two losses and weights
    opt = model.optimizer
    assert type(opt) is lk.optimizers.Adam and int(opt.iterations.numpy()) == 2
    assert isinstance(opt._lr_fn, lk.optimizers.schedules.ExponentialDecay)
    assert opt._lr_fn.get_config()["decay_steps"] == 2
    assert model.get_compile_config()["loss_weights"] == [1.0, 0.5]
    assert model.get_layer("dense").kernel.constraint.get_config() == {"max_value": 1.5,
                                                                       "axis": 0}
    model.fit(x, [d["t0"], d["t1"]], batch_size=8, epochs=3, shuffle=False, verbose=0)
    q0, q1 = model.predict(x, verbose=0)
    np.testing.assert_allclose(q0, d["p0_after"], atol=2e-5)
    np.testing.assert_allclose(q1, d["p1_after"], atol=2e-5)


def test_sequential_archive():
    d = np.load(FIXTURES / "sequential.npz")
    model = _load("sequential")
    assert isinstance(model, lk.Sequential)
    assert [type(x).__name__ for x in model.layers] == ["Dense", "BatchNormalization",
                                                        "Dropout", "Dense"]
    np.testing.assert_allclose(model.predict(d["x"], verbose=0), d["p"], atol=1e-5)
    assert isinstance(model.layers[0].kernel.constraint, lk.constraints.NonNeg)
    opt = model.optimizer
    assert type(opt) is lk.optimizers.SGD and opt.momentum == 0.9
    assert int(opt.iterations.numpy()) == 2   # 10 samples, batches of 5, one epoch
    assert np.abs(opt.get_slot(model.layers[0].kernel, "momentum").numpy()).sum() > 0
    loss = model._compile_loss
    assert loss is not None
    assert type(model.get_compile_config()) is dict
    assert model.get_compile_config()["loss"]["class_name"] == "SparseCategoricalCrossentropy"
    # compile=False: the same weights, no optimizer
    bare = _load("sequential", compile=False)
    assert bare.optimizer is None
    np.testing.assert_allclose(bare.predict(d["x"], verbose=0), d["p"], atol=1e-5)


def test_custom_objects_by_registered_name(fresh_registry):
    d = np.load(FIXTURES / "custom.npz")
    scale, scaled_tanh = A.custom_objects(lk, register=False)
    with pytest.raises(ValueError, match=r"unknown function 'my_pkg>scaled_tanh'"):
        _load("custom")
    with pytest.raises(ValueError, match=r"unknown layer class 'Scale'.*my_pkg>Scale"):
        _load("custom", custom_objects={"my_pkg>scaled_tanh": scaled_tanh})
    model = _load("custom", custom_objects={"my_pkg>Scale": scale,
                                            "my_pkg>scaled_tanh": scaled_tanh})
    assert isinstance(model.layers[1], scale) and model.layers[0].activation is scaled_tanh
    np.testing.assert_allclose(model.predict(d["x"], verbose=0), d["p"], atol=1e-5)


def test_custom_objects_by_registration(fresh_registry):
    d = np.load(FIXTURES / "custom.npz")
    scale, scaled_tanh = A.custom_objects(lk)  # lk.saving.register_keras_serializable
    model = _load("custom")
    assert isinstance(model.layers[1], scale)
    np.testing.assert_allclose(model.predict(d["x"], verbose=0), d["p"], atol=1e-5)


def test_subclassed_archive(fresh_registry):
    d = np.load(FIXTURES / "tower.npz")
    with pytest.raises(ValueError, match="unknown layer class 'TwoTower'"):
        _load("tower")
    tower = A.tower_class(lk, register=False)
    model = _load("tower", custom_objects={"my_pkg>TwoTower": tower})
    assert type(model) is tower and model.units == 3 and model.built
    np.testing.assert_allclose(model.predict(d["x"], verbose=0), d["p"], atol=1e-5)
    assert type(model.optimizer) is lk.optimizers.RMSprop
    assert int(model.optimizer.iterations.numpy()) == 1


def test_convolutional_archive_with_nested_model():
    d = np.load(FIXTURES / "convnet.npz")
    model = _load("convnet")
    assert [type(x).__name__ for x in model.layers][:3] == ["Conv2D", "BatchNormalization",
                                                            "DepthwiseConv2D"]
    np.testing.assert_allclose(model.predict(d["x"], verbose=0), d["p"], atol=1e-5)
    assert int(model.optimizer.iterations.numpy()) == 1
