"""Keras 3 weights into layerkit models (tests/fixtures/keras, made once by Keras).

Each fixture holds a Keras model's weights and Keras's predictions on fixed inputs; the
layerkit models are built by the same code (tests/fixtures/keras/architectures.py, with
``lk`` in place of ``keras``), load the weights and must predict the same values. The
fixture generator (make_keras_fixtures.py) says how to rerun it.
"""
import pathlib
import sys
import zipfile

import numpy as np
import pytest

import layerkit as lk
from layerkit.io.keras_weights import keras_weight_groups
from tests.fixtures.keras import architectures

h5py = pytest.importorskip("h5py")

L = lk.layers
FIXTURES = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "keras"


def conv_model():
    return architectures.conv_model(lk)


def seq_model(units=4):
    return architectures.seq_model(lk, units)


def subclassed_model():
    return architectures.subclassed_model(lk)


def _data(name):
    return np.load(FIXTURES / f"{name}_x.npy"), np.load(FIXTURES / f"{name}_y.npy")


def _file_weights(path, member=None):
    """{dataset path: array} of a Keras file, read with h5py directly."""
    out = {}
    if member is not None:
        import io
        with zipfile.ZipFile(path) as zf:
            path = io.BytesIO(zf.read(member))
    with h5py.File(path, "r") as f:
        f.visititems(lambda k, o: out.__setitem__(k, o[()]) if isinstance(o, h5py.Dataset)
                     else None)
    return out


def _extract_member(tmp_path):
    target = tmp_path / "seq.weights.h5"
    with zipfile.ZipFile(FIXTURES / "seq.keras") as zf:
        target.write_bytes(zf.read("model.weights.h5"))
    return target


@pytest.mark.parametrize("name,build,filename", [
    ("conv", conv_model, "conv.weights.h5"),
    ("seq", seq_model, "seq.keras"),
    ("subclassed", subclassed_model, "subclassed.weights.h5"),
])
def test_predictions_match_keras(name, build, filename):
    x, y = _data(name)
    model = build()
    if not model.built:
        model(x)
    before = model.predict(x, verbose=0)
    model.load_weights(FIXTURES / filename)
    got = model.predict(x, verbose=0)
    assert np.abs(before - y).max() > 1e-2  # the fresh model disagrees with Keras ...
    np.testing.assert_allclose(got, y, rtol=1e-5, atol=1e-5)  # ... the loaded one agrees


def test_weights_h5_member_of_the_archive_loads_on_its_own(tmp_path):
    x, y = _data("seq")
    model = seq_model()
    model.load_weights(_extract_member(tmp_path))
    np.testing.assert_allclose(model.predict(x, verbose=0), y, rtol=1e-5, atol=1e-5)


def test_every_value_lands_at_its_keras_path(tmp_path):
    # Independent of the predictions: each variable equals the dataset at its path.
    stored = _file_weights(FIXTURES / "seq.keras", "model.weights.h5")
    model = seq_model()
    model.load_weights(FIXTURES / "seq.keras")
    used = set()
    for path, (_, variables) in keras_weight_groups(model).items():
        for i, v in enumerate(variables):
            key = f"{path}/vars/{i}"
            np.testing.assert_array_equal(v.numpy(), stored[key])
            used.add(key)
    assert used == set(stored)
    # Keras's naming: MHA sublayers, Bidirectional halves, RNN cells, nested Sequential.
    assert {"layers/multi_head_attention/query_dense/vars/0",
            "layers/bidirectional/backward_layer/cell/vars/1",
            "layers/sequential/layers/dense_1/vars/1", "layers/gru/cell/vars/2"} <= used


def test_subclassed_paths_follow_attribute_names_and_layers():
    model = subclassed_model()
    model(np.zeros((1, 4), np.float32))
    groups = {p: [tuple(v.shape) for v in vs]
              for p, (_, vs) in keras_weight_groups(model).items() if vs}
    # zeta is first reached through Model.layers (sorted after 'blocks'), alpha by name.
    assert groups == {"alpha": [(3, 3), (3,)], "blocks/block": [(2,)],
                      "blocks/block/inner": [(3, 2), (2,)], "blocks/block_1": [(2,)],
                      "blocks/block_1/inner": [(2, 2), (2,)], "layers/dense": [(4, 3), (3,)]}


def test_batch_norm_moving_statistics_are_loaded():
    stored = _file_weights(FIXTURES / "conv.weights.h5")
    model = conv_model()
    model.load_weights(FIXTURES / "conv.weights.h5")
    bn = next(layer for layer in model.layers if isinstance(layer, L.BatchNormalization))
    np.testing.assert_array_equal(bn.moving_mean.numpy(),
                                  stored["layers/batch_normalization/vars/2"])
    np.testing.assert_array_equal(bn.moving_variance.numpy(),
                                  stored["layers/batch_normalization/vars/3"])
    assert not np.allclose(bn.moving_variance.numpy(), 1.0)


def test_optimizer_variables_load_when_the_optimizer_is_built():
    stored = _file_weights(FIXTURES / "conv.weights.h5")
    model = conv_model()
    model.compile(lk.optimizers.Adam(0.5), "mse")
    model.optimizer.build(model.trainable_variables)
    model.load_weights(FIXTURES / "conv.weights.h5")
    opt = model.optimizer.variables
    n = len([k for k in stored if k.startswith("optimizer/vars/")])
    assert len(opt) == n
    for i, v in enumerate(opt):
        np.testing.assert_array_equal(v.numpy(), stored[f"optimizer/vars/{i}"].astype(v.dtype))
    assert int(model.optimizer.iterations.numpy()) == 1  # one Keras step
    # The first moment of the first kernel is not zero after Keras's step.
    assert np.abs(model.optimizer.get_slot(model.trainable_variables[0], "m").numpy()).max() > 0


def test_unbuilt_optimizer_is_skipped_with_a_warning():
    model = conv_model()
    model.compile(lk.optimizers.Adam(), "mse")
    with pytest.warns(UserWarning, match="skipped the optimizer variables.*not built"):
        model.load_weights(FIXTURES / "conv.weights.h5")
    x, y = _data("conv")
    np.testing.assert_allclose(model.predict(x, verbose=0), y, rtol=1e-5, atol=1e-5)


def test_shape_mismatch_names_path_and_shapes_and_loads_nothing():
    model = seq_model(units=5)  # SimpleRNN(5) where Keras had SimpleRNN(4)
    before = [v.numpy().copy() for v in model.weights]
    with pytest.raises(ValueError) as e:
        model.load_weights(FIXTURES / "seq.keras")
    msg = str(e.value)
    assert "'layers/simple_rnn/cell/vars'" in msg
    assert "weight 0 ('kernel') expected shape (3, 5), received (3, 4)" in msg
    assert "seq.keras" in msg and "Nothing was loaded" in msg
    for b, v in zip(before, model.weights):
        np.testing.assert_array_equal(b, v.numpy())


def test_missing_and_extra_layers_are_reported():
    inp = lk.Input((6, 6, 2))
    x = L.Conv2D(3, 3, padding="same")(inp)
    model = lk.Model(inp, L.Dense(4)(L.GlobalAveragePooling2D()(x)))
    with pytest.raises(ValueError) as e:
        model.load_weights(FIXTURES / "conv.weights.h5")
    msg = str(e.value)
    assert "'layers/dense/vars'" in msg and "expected shape (3, 4), received (2, 4)" in msg
    assert "paths that model" in msg and "layers/batch_normalization/vars/0" in msg


def test_weight_count_mismatch():
    inp = lk.Input((6, 6, 2))
    x = L.Conv2D(3, 3, padding="same", use_bias=False)(inp)
    model = lk.Model(inp, x)
    with pytest.raises(ValueError, match=r"'layers/conv2d/vars' \(layer 'conv2d.*, Conv2D\): "
                                         r"the model's layer has 1 weight\(s\) \[\(3, 3, 2, 3\)\],"
                                         r" the file has 2"):
        model.load_weights(FIXTURES / "conv.weights.h5")


def test_skip_mismatch_loads_the_rest_with_a_warning():
    x, y = _data("seq")
    model = seq_model(units=5)
    with pytest.warns(UserWarning, match="simple_rnn"):
        model.load_weights(FIXTURES / "seq.keras", skip_mismatch=True)
    emb = model.layers[0]
    stored = _file_weights(FIXTURES / "seq.keras", "model.weights.h5")
    np.testing.assert_array_equal(emb.embeddings.numpy(), stored["layers/embedding/vars/0"])


def test_unbuilt_model_is_refused():
    model = subclassed_model()
    with pytest.raises(ValueError, match="not built"):
        model.load_weights(FIXTURES / "subclassed.weights.h5")


def test_legacy_and_foreign_files_are_refused(tmp_path):
    legacy = tmp_path / "old.h5"
    with h5py.File(legacy, "w") as f:
        f.attrs["layer_names"] = [b"dense"]
    with pytest.raises(ValueError, match="layer 'dense' is listed in layer_names but has no"):
        conv_model().load_weights(legacy)  # (legacy files load: tests/saving/test_legacy_h5)
    other = tmp_path / "other.h5"
    with h5py.File(other, "w") as f:
        f["x"] = np.zeros(3)
    with pytest.raises(ValueError, match="not a Keras 3 weights file"):
        conv_model().load_weights(other)
    notzip = tmp_path / "bad.keras"
    notzip.write_bytes(b"not a zip")
    with pytest.raises(ValueError, match="not a .keras archive"):
        conv_model().load_weights(notzip)
    with pytest.raises(FileNotFoundError):
        conv_model().load_weights(tmp_path / "missing.weights.h5")


def test_written_file_has_keras_layout_and_round_trips(tmp_path):
    # Keras 3's own load_weights reads these files (checked by hand with Keras 3.15:
    # same predictions, optimizer included); here: the same paths and shapes as the
    # file Keras wrote, and a round trip into a fresh model.
    x, y = _data("conv")
    model = conv_model()
    model.compile(lk.optimizers.Adam(), "mse")
    model.optimizer.build(model.trainable_variables)
    model.load_weights(FIXTURES / "conv.weights.h5")
    path = model.save_weights(tmp_path / "lk.weights.h5")
    ours, keras = _file_weights(path), _file_weights(FIXTURES / "conv.weights.h5")
    assert {k: v.shape for k, v in ours.items()} == {k: v.shape for k, v in keras.items()}
    for k in keras:
        np.testing.assert_array_equal(ours[k], keras[k].astype(ours[k].dtype))
    fresh = conv_model()
    fresh.load_weights(path)
    np.testing.assert_allclose(fresh.predict(x, verbose=0), y, rtol=1e-5, atol=1e-5)
    with h5py.File(path, "r") as f:  # as in Keras, each group is labelled with the name
        conv = next(layer for layer in model.layers if isinstance(layer, L.Conv2D))
        assert f["layers/conv2d/vars"].attrs["name"] == conv.name


def test_keras_archive_and_unbuilt_models_are_not_written(tmp_path):
    with pytest.raises(ValueError, match="whole-model archive"):
        conv_model().save_weights(tmp_path / "x.keras")
    with pytest.raises(ValueError, match="not built"):
        subclassed_model().save_weights(tmp_path / "x.weights.h5")


def test_missing_h5py_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "h5py", None)
    with pytest.raises(ImportError, match=r"'h5py'.*pip install layerkit\[h5\]"):
        conv_model().load_weights(FIXTURES / "conv.weights.h5")
