"""safetensors: dicts of tensors and model weights, both directions with the library."""
import os
import sys

import numpy as np
import pytest

import layerkit as lk

st = pytest.importorskip("safetensors.numpy")
L = lk.layers


def _mlp(built=True):
    layers = [L.Dense(4), L.BatchNormalization(), L.Dense(2)]
    return lk.Sequential(([lk.Input((3,))] if built else []) + layers)


def test_layerkit_file_opens_in_safetensors(tmp_path, rng):
    w = rng.normal(size=(3, 4)).astype(np.float32)
    ids = np.arange(5, dtype=np.int64)
    half = rng.normal(size=(2,)).astype(np.float16)
    path = lk.io.save_safetensors({"w": lk.constant(w), "ids": ids, "half": half,
                                   "v": lk.Variable([True, False])},
                                  tmp_path / "t.safetensors", metadata={"note": "hi"})
    got = st.load_file(path)
    np.testing.assert_array_equal(got["w"], w)
    np.testing.assert_array_equal(got["ids"], ids)
    np.testing.assert_array_equal(got["half"], half)
    np.testing.assert_array_equal(got["v"], [True, False])
    assert {k: v.dtype for k, v in got.items()} == {
        "w": np.float32, "ids": np.int64, "half": np.float16, "v": np.bool_}
    from safetensors import safe_open
    with safe_open(path, framework="np") as f:
        assert f.metadata() == {"note": "hi"}


def test_safetensors_file_loads_in_layerkit(tmp_path, rng):
    a = rng.normal(size=(2, 3)).astype(np.float64)
    b = rng.integers(0, 9, size=(4,)).astype(np.int32)
    st.save_file({"a": a, "b": b}, str(tmp_path / "x.safetensors"), metadata={"k": "v"})
    tensors, meta = lk.io.load_safetensors(tmp_path / "x.safetensors", with_metadata=True)
    assert meta == {"k": "v"}
    assert all(isinstance(t, lk.Tensor) for t in tensors.values())
    np.testing.assert_array_equal(tensors["a"].numpy(), a)
    assert tensors["a"].dtype == np.float64 and tensors["b"].dtype == np.int32
    np.testing.assert_array_equal(tensors["b"].numpy(), b)
    assert lk.io.load_safetensors(tmp_path / "x.safetensors").keys() == {"a", "b"}


def test_bad_inputs_are_named(tmp_path):
    with pytest.raises(TypeError, match="'s'.*dtype <U1"):
        lk.io.save_safetensors({"s": np.array(["a"])}, tmp_path / "x.safetensors")
    with pytest.raises(TypeError, match="names must be strings"):
        lk.io.save_safetensors({1: np.zeros(2)}, tmp_path / "x.safetensors")
    with pytest.raises(TypeError, match="metadata must map str to str"):
        lk.io.save_safetensors({"a": np.zeros(2)}, tmp_path / "x.safetensors", {"n": 1})
    with pytest.raises(FileNotFoundError):
        lk.io.load_safetensors(tmp_path / "missing.safetensors")
    (tmp_path / "junk.safetensors").write_bytes(b"\x05\x00\x00\x00\x00\x00\x00\x00{")
    with pytest.raises(ValueError, match="junk.safetensors.*not a valid safetensors"):
        lk.io.load_safetensors(tmp_path / "junk.safetensors")


def test_write_is_atomic(tmp_path, monkeypatch):
    path = tmp_path / "t.safetensors"
    lk.io.save_safetensors({"a": np.ones(3, np.float32)}, path)
    old = path.read_bytes()

    def crash(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError, match="disk full"):
        lk.io.save_safetensors({"a": np.zeros(1000, np.float32)}, path)
    assert path.read_bytes() == old
    assert os.listdir(tmp_path) == ["t.safetensors"]  # the temporary file is gone


def test_model_weights_round_trip_by_layer_path(tmp_path, rng):
    model = _mlp()
    model.layers[1].moving_mean.assign(rng.normal(size=4).astype(np.float32))
    path = model.save_weights(tmp_path / "m.safetensors")
    stored = st.load_file(path)
    assert sorted(stored) == ["layer-0/bias", "layer-0/kernel", "layer-1/beta", "layer-1/gamma",
                              "layer-1/moving_mean", "layer-1/moving_variance", "layer-2/bias",
                              "layer-2/kernel"]
    np.testing.assert_array_equal(stored["layer-0/kernel"], model.layers[0].kernel.numpy())
    x = rng.normal(size=(5, 3)).astype(np.float32)
    for built in (True, False):  # an unbuilt model gets the values when it is built
        other = _mlp(built)
        status = other.load_weights(path)
        assert bool(status.pending) is not built
        np.testing.assert_array_equal(other(x).numpy(), model(x).numpy())


def test_same_names_as_checkpoints(tmp_path):
    model = _mlp()
    ckpt = lk.checkpoint.CheckpointReader(lk.Checkpoint(model=model).write(tmp_path / "c"))
    model.save_weights(tmp_path / "m.safetensors")
    names = {k for k in ckpt.keys() if k.startswith("model/")}
    assert names == {"model/" + k for k in st.load_file(str(tmp_path / "m.safetensors"))}


def test_weights_written_by_the_library_load_into_a_model(tmp_path, rng):
    model = _mlp()
    values = {k: rng.normal(size=v.shape).astype(np.float32)
              for k, v in st.load_file(model.save_weights(tmp_path / "a.safetensors")).items()}
    st.save_file(values, str(tmp_path / "b.safetensors"))
    model.load_weights(tmp_path / "b.safetensors")
    np.testing.assert_array_equal(model.layers[2].kernel.numpy(), values["layer-2/kernel"])
    np.testing.assert_array_equal(model.layers[1].moving_variance.numpy(),
                                  values["layer-1/moving_variance"])


def test_model_mismatch_errors_load_nothing(tmp_path):
    path = _mlp().save_weights(tmp_path / "m.safetensors")
    wider = lk.Sequential([lk.Input((3,)), L.Dense(5), L.BatchNormalization(), L.Dense(2)])
    before = wider.layers[0].kernel.numpy().copy()
    with pytest.raises(ValueError, match=r"'model/layer-0/kernel': the checkpoint has float32 "
                                         r"\(3, 4\), the variable is float32 \(3, 5\)"):
        wider.load_weights(path)
    np.testing.assert_array_equal(wider.layers[0].kernel.numpy(), before)
    other = lk.Sequential([lk.Input((3,)), L.Dense(4), L.Dense(2)])
    with pytest.raises(ValueError, match=r"missing from the file: \['layer-1/bias', "
                                         r"'layer-1/kernel'\].*not weights of the model: "
                                         r"\['layer-1/beta'"):
        other.load_weights(path)


def test_missing_package_names_the_extra(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "safetensors.numpy", None)
    with pytest.raises(ImportError, match=r"pip install layerkit\[safetensors\]"):
        lk.io.save_safetensors({"a": np.zeros(1)}, tmp_path / "a.safetensors")
    with pytest.raises(ImportError, match=r"pip install layerkit\[safetensors\]"):
        _mlp().save_weights(tmp_path / "m.safetensors")
