"""Whole-model saving: save/load round trips, compile state, JSON configs, clone_model,
custom objects, and hostile archives (clear errors, nothing executed or written)."""
import io
import json
import os
import sys
import warnings
import zipfile

import numpy as np
import pytest

import layerkit as lk
from layerkit.saving import object_registration, saving_lib

L = lk.layers
FORMATS = ["h5", "layerkit"]


@pytest.fixture
def fresh_registry(monkeypatch):
    monkeypatch.setattr(object_registration, "_GLOBAL_CUSTOM_OBJECTS", {})
    monkeypatch.setattr(object_registration, "_GLOBAL_CUSTOM_NAMES", {})


@pytest.fixture(params=FORMATS)
def weights_format(request):
    if request.param == "h5":
        pytest.importorskip("h5py")
    return request.param


def _data(*shapes, seed=0):
    rng = np.random.default_rng(seed)
    out = [rng.normal(size=s).astype(np.float32) for s in shapes]
    return out if len(out) > 1 else out[0]


# ---- models ---------------------------------------------------------------------------------
def sequential():
    return lk.Sequential([lk.Input((5,)), L.Dense(6, activation="relu"),
                          L.BatchNormalization(), L.Dense(3, activation="softmax")])


def multi_io():
    """Two inputs, a layer shared by both branches, a nested functional model used twice,
    two outputs."""
    inner_in = lk.Input((4,))
    inner = lk.Model(inner_in, L.Dense(4, activation="tanh")(inner_in), name="inner")
    a, b = lk.Input((3,), name="a"), lk.Input((4,), name="b")
    shared = L.Dense(4, name="shared")
    h1, h2 = inner(shared(L.Dense(4)(a))), inner(shared(b))
    out1 = L.Dense(2, name="out1")(L.Concatenate()([h1, h2]))
    out2 = L.Dense(1, activation="sigmoid", name="out2")(L.Add()([h1, h2]))
    return lk.Model([a, b], [out1, out2], name="multi")


class Tower(lk.Model):
    """A subclassed model: its plain constructor argument is its config (Keras 3)."""

    def __init__(self, units=3, **kwargs):
        super().__init__(**kwargs)
        self.units = units
        self.body = L.Dense(units, activation="relu")
        self.head = L.Dense(2)

    def call(self, x):
        return self.head(self.body(x))


class Blocks(lk.Model):
    """A subclassed model with an explicit get_config/from_config (a nested layer config)."""

    def __init__(self, block, depth=2, **kwargs):
        super().__init__(**kwargs)
        self.block_config = block.get_config()
        self.depth = depth
        self.blocks = [type(block).from_config({**block.get_config(), "name": f"b{i}"})
                       for i in range(depth)]

    def call(self, x):
        for b in self.blocks:
            x = b(x)
        return x

    def get_config(self):
        return {**super().get_config(), "depth": self.depth,
                "block": lk.saving.serialize_keras_object(L.Dense(**{
                    k: v for k, v in self.block_config.items() if k != "name"}))}

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["block"] = lk.saving.deserialize_keras_object(config["block"])
        return cls(**config)


def _built(model, *shapes):
    x = _data(*shapes)
    model(x)
    return model, x


def _same_predictions(a, b, x):
    np.testing.assert_array_equal(b.predict(x, verbose=0)[0] if isinstance(x, list) else
                                  b.predict(x, verbose=0),
                                  a.predict(x, verbose=0)[0] if isinstance(x, list) else
                                  a.predict(x, verbose=0))


# ---- round trips ----------------------------------------------------------------------------
def test_sequential_round_trip(tmp_path, weights_format):
    model = sequential()
    x, y = _data((8, 5)), np.arange(8) % 3
    model.compile("adam", "sparse_categorical_crossentropy", metrics=["accuracy"])
    model.fit(x, y, batch_size=4, epochs=1, verbose=0)
    path = model.save(tmp_path / "s.keras", weights_format=weights_format)
    member = "model.weights.h5" if weights_format == "h5" else "model.weights.lkckpt"
    assert sorted(zipfile.ZipFile(path).namelist()) == sorted(["metadata.json", "config.json",
                                                               member])
    again = lk.models.load_model(path)
    assert type(again) is lk.Sequential and [x.name for x in again.layers] == [
        x.name for x in model.layers]
    np.testing.assert_array_equal(again.predict(x, verbose=0), model.predict(x, verbose=0))
    assert again.get_config() == model.get_config()
    meta = json.loads(zipfile.ZipFile(path).read("metadata.json"))
    assert meta["layerkit_version"] == lk.__version__ and "date_saved" in meta


def test_functional_multi_io_shared_and_nested_round_trip(tmp_path, weights_format):
    model = multi_io()
    x = _data((5, 3), (5, 4))
    path = model.save(tmp_path / "f.keras", weights_format=weights_format)
    again = lk.models.load_model(path)
    for got, want in zip(again.predict(x, verbose=0), model.predict(x, verbose=0)):
        np.testing.assert_array_equal(got, want)
    # the shared layer and the nested model are still one object each
    assert again.get_layer("shared") is not None
    nested = [layer for layer in again.layers if isinstance(layer, lk.Model)]
    assert len(nested) == 1 and again.get_layer("inner") is nested[0]
    assert again.input_names == ["a", "b"] and again.output_names == ["out1", "out2"]
    assert len(again.weights) == len(model.weights)


def test_subclassed_round_trip_auto_config(tmp_path, weights_format):
    model, x = _built(Tower(units=4, name="tower"), (3, 5))
    assert model.get_config() == {"name": "tower", "trainable": True, "dtype": "float32",
                                  "units": 4}
    path = model.save(tmp_path / "t.keras", weights_format=weights_format)
    with pytest.raises(ValueError, match="unknown layer class 'Tower'"):
        lk.models.load_model(path)
    again = lk.models.load_model(path, custom_objects={"Tower": Tower})
    assert type(again) is Tower and again.units == 4 and again.name == "tower"
    _same_predictions(model, again, x)


def test_subclassed_with_explicit_get_config(tmp_path):
    model, x = _built(Blocks(L.Dense(3, activation="tanh"), depth=3), (2, 3))
    path = model.save(tmp_path / "b.keras")
    again = lk.models.load_model(path, custom_objects={"Blocks": Blocks})
    assert again.depth == 3 and [b.name for b in again.blocks] == ["b0", "b1", "b2"]
    _same_predictions(model, again, x)


def test_subclassed_without_config_fails_clearly(tmp_path):
    class Opaque(lk.Model):
        def __init__(self, layer):
            super().__init__()
            self.inner = layer

        def call(self, x):
            return self.inner(x)

    model, _ = _built(Opaque(L.Dense(2)), (2, 3))
    with pytest.raises(NotImplementedError, match="Opaque.*get_config"):
        model.save(tmp_path / "o.keras")
    assert not os.path.exists(tmp_path / "o.keras")


@pytest.mark.parametrize("make", [
    lambda: (lk.optimizers.Adam(0.01), "mse"),
    lambda: (lk.optimizers.SGD(lk.optimizers.schedules.ExponentialDecay(0.1, 2, 0.5),
                               momentum=0.9), lk.losses.Huber(0.5)),
    lambda: (lk.optimizers.RMSprop(0.01, centered=True, momentum=0.5), "mae"),
], ids=["adam", "sgd-schedule", "rmsprop"])
def test_optimizer_state_continues_training(tmp_path, make, weights_format):
    x, y = _data((12, 5), (12, 3), seed=1)

    def build():
        lk.random.set_seed(7)
        m = lk.Sequential([lk.Input((5,)), L.Dense(4, activation="tanh",
                                                   kernel_constraint=lk.constraints.MaxNorm(1.0)),
                           L.Dense(3)])
        optimizer, loss = make()
        m.compile(optimizer, loss)
        return m

    fit = dict(batch_size=4, shuffle=False, verbose=0)
    straight = build()
    straight.fit(x, y, epochs=3, **fit)          # N + M = 9 steps
    first = build()
    first.fit(x, y, epochs=1, **fit)             # N = 3 steps, then save and load
    resumed = lk.models.load_model(first.save(tmp_path / "r.keras",
                                              weights_format=weights_format))
    assert int(resumed.optimizer.iterations.numpy()) == 3
    assert type(resumed.optimizer) is type(first.optimizer)
    assert resumed.optimizer.get_config() == first.optimizer.get_config()
    resumed.fit(x, y, epochs=2, **fit)           # M = 6 more
    for a, b in zip(resumed.get_weights(), straight.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
    kernel = resumed.layers[0].kernel.numpy()
    assert np.linalg.norm(kernel, axis=0).max() <= 1.0 + 1e-6   # the constraint came back


def test_compile_config_restored(tmp_path):
    model = multi_io()
    model.compile(lk.optimizers.Adam(0.003), loss=["mse", lk.losses.BinaryCrossentropy()],
                  loss_weights=[2.0, 0.5], metrics=[["mae"], [lk.metrics.AUC(name="auc")]])
    x = _data((6, 3), (6, 4))
    y = [_data((6, 2)), (np.arange(6) % 2).astype(np.float32)[:, None]]
    before = model.evaluate(x, y, verbose=0, return_dict=True)
    again = lk.models.load_model(model.save(tmp_path / "c.keras"))
    config = again.get_compile_config()
    assert config["loss_weights"] == [2.0, 0.5] and config["loss"][0] == "mse"
    assert config["optimizer"]["config"]["learning_rate"] == pytest.approx(0.003)
    after = again.evaluate(x, y, verbose=0, return_dict=True)
    assert sorted(after) == sorted(before)
    for k in before:
        assert after[k] == pytest.approx(before[k], rel=1e-6)
    bare = lk.models.load_model(tmp_path / "c.keras", compile=False)
    assert bare.optimizer is None and bare.get_compile_config() is None


def test_to_json_and_model_from_json():
    model = multi_io()
    text = model.to_json()
    config = json.loads(text)
    assert config["class_name"] == "Functional" and config["module"] == \
        "keras.src.models.functional"
    layers = config["config"]["layers"]
    assert sorted(e["name"] for e in layers if e["class_name"] == "InputLayer") == ["a", "b"]
    again = lk.models.model_from_json(text)
    assert json.loads(again.to_json()) == config
    kernels = [(a, b) for a, b in zip(again.weights, model.weights) if "kernel" in a.name]
    assert kernels and all(not np.array_equal(a.numpy(), b.numpy()) for a, b in kernels)
    seq = lk.models.model_from_json(sequential().to_json(indent=1))
    assert [type(x).__name__ for x in seq.layers] == ["Dense", "BatchNormalization", "Dense"]
    with pytest.raises(ValueError, match="not valid JSON"):
        lk.models.model_from_json("{nope")


# ---- clone_model ----------------------------------------------------------------------------
def test_clone_sequential_and_functional():
    for model, x in ((sequential(), _data((4, 5))), (multi_io(), _data((4, 3), (4, 4)))):
        twin = lk.models.clone_model(model)
        assert twin.get_config() == model.get_config()
        assert not {id(v) for v in twin.weights} & {id(v) for v in model.weights}
        twin.set_weights(model.get_weights())
        _same_predictions(model, twin, x)
    twin = lk.models.clone_model(multi_io())
    shared = twin.get_layer("shared")
    assert sum(node.layer is shared for node in twin._graph.nodes) == 2  # still shared


def test_clone_options():
    model = multi_io()
    relu = lk.models.clone_model(model, clone_function=lambda layer: layer.__class__.from_config(
        {**layer.get_config(), "activation": "relu"})
        if isinstance(layer, L.Dense) else layer.__class__.from_config(layer.get_config()))
    assert relu.get_layer("out2").get_config()["activation"] == "relu"
    assert relu.get_layer("inner").layers[0].get_config()["activation"] == "tanh"  # not nested
    deep = lk.models.clone_model(model, recursive=True, clone_function=lambda layer: (
        layer.__class__.from_config({**layer.get_config(), "activation": "relu"})
        if isinstance(layer, L.Dense) else layer.__class__.from_config(layer.get_config())))
    assert deep.get_layer("inner").layers[0].get_config()["activation"] == "relu"
    a, b = lk.Input((3,), name="a2"), lk.Input((4,), name="b2")
    rebuilt = lk.models.clone_model(model, input_tensors=[a, b])
    assert rebuilt.input_names == ["a2", "b2"]
    calls = []
    lk.models.clone_model(model, call_function=lambda layer, *args, **kw: (
        calls.append(layer.name), layer(*args, **kw))[1])
    assert calls.count("shared") == 2 and calls.count("inner") == 2
    tower, _ = _built(Tower(units=2), (2, 5))
    twin = lk.models.clone_model(tower)
    assert type(twin) is Tower and twin.units == 2
    with pytest.raises(ValueError, match="subclassed"):
        lk.models.clone_model(tower, clone_function=lambda layer: layer)
    with pytest.raises(ValueError, match="input_tensors"):
        lk.models.clone_model(model, input_tensors=[a])


# ---- custom objects -------------------------------------------------------------------------
class Twice(L.Layer):
    def call(self, x):
        return 2.0 * x


def swish2(x):
    return x * lk.sigmoid(2.0 * x)


def test_custom_objects_registration_and_scope(tmp_path, fresh_registry):
    model = lk.Sequential([lk.Input((3,)), L.Dense(2, activation=swish2), Twice()])
    x = _data((2, 3))
    path = model.save(tmp_path / "c.keras")
    config = json.loads(zipfile.ZipFile(path).read("config.json"))
    entry = config["config"]["layers"][2]
    assert entry["class_name"] == "Twice" and entry["registered_name"] == "Twice"
    with pytest.raises(ValueError, match="unknown function 'swish2'.*custom_objects"):
        lk.models.load_model(path)
    again = lk.models.load_model(path, custom_objects={"Twice": Twice, "swish2": swish2})
    _same_predictions(model, again, x)
    with lk.saving.custom_object_scope({"Twice": Twice, "swish2": swish2}):
        _same_predictions(model, lk.models.load_model(path), x)
    # registered under "package>name" (Keras's spelling of the decorator works too)
    lk.saving.register_keras_serializable("pkg")(Twice)
    lk.saving.register_serializable("pkg", name="swish_two")(swish2)
    assert lk.saving.get_registered_name(Twice) == "pkg>Twice"
    assert lk.saving.get_registered_object("pkg>swish_two") is swish2
    assert lk.saving.get_custom_objects() == {"pkg>Twice": Twice, "pkg>swish_two": swish2}
    path = model.save(tmp_path / "r.keras")
    layers = json.loads(zipfile.ZipFile(path).read("config.json"))["config"]["layers"]
    assert layers[2]["registered_name"] == "pkg>Twice"
    assert layers[1]["config"]["activation"]["registered_name"] == "pkg>swish_two"
    again = lk.models.load_model(path)
    assert type(again.layers[1]) is Twice and again.layers[0].activation is swish2
    with pytest.raises(ValueError, match="without '>'"):
        lk.saving.register_serializable("a>b")


def test_serialize_and_deserialize_keras_object():
    cases = [None, 3, "relu", [1, 2.5], {"a": (1, 2)}, np.arange(3.0), Ellipsis,
             slice(1, None, 2), b"bytes"]
    for value in cases:
        text = json.dumps(lk.saving.serialize_keras_object(value))
        back = lk.saving.deserialize_keras_object(json.loads(text))
        if isinstance(value, np.ndarray):
            np.testing.assert_array_equal(back, value)
        elif isinstance(value, dict):
            assert back == {"a": [1, 2]}
        else:
            assert back == (list(value) if isinstance(value, list) else value)
    fn = lk.saving.serialize_keras_object(lk.losses.mean_squared_error)
    assert fn == {"module": "keras.losses", "class_name": "function",
                  "config": "mean_squared_error", "registered_name": "mean_squared_error"}
    assert lk.saving.deserialize_keras_object(fn) is lk.losses.mean_squared_error
    with pytest.raises(TypeError, match="no get_config"):
        lk.saving.serialize_keras_object(object())
    with pytest.raises(ValueError, match="numeric or bool dtype"):
        lk.saving.deserialize_keras_object({"class_name": "__numpy__",
                                            "config": {"value": [1], "dtype": "object"}})


# ---- nothing runs, nothing escapes ----------------------------------------------------------
def _archive(path, members: dict, compression=zipfile.ZIP_STORED):
    with zipfile.ZipFile(path, "w", compression=compression) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return path


def _dense_archive(tmp_path, **changes):
    """The members of a saved Dense model, with ``changes`` applied (None removes)."""
    model = lk.Sequential([lk.Input((3,)), L.Dense(2)])
    with zipfile.ZipFile(model.save(tmp_path / "ok.keras", weights_format="layerkit")) as zf:
        members = {n: zf.read(n) for n in zf.namelist()}
    for name, data in changes.items():
        if data is None:
            members.pop(name, None)
        else:
            members[name] = data
    return members


def test_hostile_member_names_and_sizes(tmp_path, monkeypatch):
    outside = tmp_path / "outside"
    outside.mkdir()
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    good = _dense_archive(tmp_path)
    for bad_name in ("../outside/evil.txt", "/tmp/evil.txt", "a/../../evil.txt", "C:\\evil",
                     "dir\\..\\evil"):
        path = _archive(tmp_path / "bad.keras", {**good, bad_name: b"boom"})
        with pytest.raises(ValueError, match="unsafe member name"):
            lk.models.load_model(path)
    assert list(outside.iterdir()) == [] and list(work.iterdir()) == []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zipfile warns about the duplicate name
        path = _archive(tmp_path / "dup.keras", good)
        with zipfile.ZipFile(path, "a") as zf:
            zf.writestr("config.json", b"{}")
    with pytest.raises(ValueError, match="two members named 'config.json'"):
        lk.models.load_model(path)
    monkeypatch.setattr(saving_lib, "_BOMB_FLOOR", 1000)
    path = _archive(tmp_path / "bomb.keras", {**good, "junk": bytes(200_000)},
                    zipfile.ZIP_DEFLATED)
    with pytest.raises(ValueError, match="'junk'.*decompression bomb"):
        lk.models.load_model(path)
    monkeypatch.setattr(saving_lib, "_JSON_LIMIT", 10)
    with pytest.raises(ValueError, match="config.json declares .* more than"):
        lk.models.load_model(_archive(tmp_path / "big.keras", good))


def test_malformed_archives(tmp_path):
    for changes, match in [
        ({"config.json": None}, "has no config.json"),
        ({"model.weights.lkckpt": None}, "no weights member"),
        ({"config.json": b"{not json"}, "config.json is not valid JSON"),
        ({"config.json": b"[1, 2]"}, "does not describe a model"),
        ({"metadata.json": b"\xff\xfe"}, "metadata.json is not valid JSON"),
        ({"model.weights.lkckpt": b"garbage"}, "model.weights.lkckpt.*not a layerkit"),
    ]:
        path = _archive(tmp_path / "m.keras", _dense_archive(tmp_path, **changes))
        with pytest.raises(ValueError, match=match):
            lk.models.load_model(path)
    (tmp_path / "plain.keras").write_bytes(b"not a zip at all")
    with pytest.raises(ValueError, match="not a .keras archive"):
        lk.models.load_model(tmp_path / "plain.keras")
    truncated = (tmp_path / "ok.keras").read_bytes()
    (tmp_path / "cut.keras").write_bytes(truncated[: len(truncated) // 2])
    with pytest.raises(ValueError, match="not a .keras archive|corrupted"):
        lk.models.load_model(tmp_path / "cut.keras")
    with pytest.raises(FileNotFoundError):
        lk.models.load_model(tmp_path / "missing.keras")
    # weights that do not fit the architecture: named, nothing loaded
    other = lk.Sequential([lk.Input((3,)), L.Dense(5)])
    with zipfile.ZipFile(other.save(tmp_path / "o.keras", weights_format="layerkit")) as zf:
        weights = zf.read("model.weights.lkckpt")
    path = _archive(tmp_path / "w.keras", _dense_archive(tmp_path, **{
        "model.weights.lkckpt": weights}))
    with pytest.raises(ValueError, match=r"layers/dense/vars.*expected shape \(3, 2\)"):
        lk.models.load_model(path)


def _with_config(tmp_path, config):
    return _archive(tmp_path / "x.keras", _dense_archive(tmp_path, **{
        "config.json": json.dumps(config).encode()}))


def test_configs_naming_code_are_refused(tmp_path):
    marker = tmp_path / "executed"
    for config, match in [
        ({"module": "os", "class_name": "system", "config": {"command": "touch x"},
          "registered_name": "system"}, "unknown layer class 'system' \\(module 'os'"),
        ({"module": "builtins", "class_name": "eval", "config": {}}, "unknown .*'eval'"),
        ({"module": "keras", "class_name": "Sequential", "config": {"name": "s", "layers": [
            {"module": "keras.layers", "class_name": "Dense", "config": {
                "units": 2, "activation": {"module": "os", "class_name": "function",
                                           "config": "system", "registered_name": "system"}}}]}},
         "unknown function 'system' \\(module 'os'\\)"),
    ]:
        with pytest.raises(ValueError, match=match):
            lk.models.load_model(_with_config(tmp_path, config))
    # a Keras-marshalled lambda: refused in every mode, never unmarshalled
    import base64
    import marshal

    code = compile(f"open({str(marker)!r}, 'w').write('ran')", "<x>", "exec")
    blob = base64.b64encode(marshal.dumps(code)).decode()
    lam = {"module": "keras.layers", "class_name": "Dense", "config": {
        "units": 2, "activation": {"class_name": "__lambda__", "config": {
            "value": [blob, None, None]}}}}
    config = {"module": "keras", "class_name": "Sequential", "config": {"name": "s",
                                                                        "layers": [lam]}}
    for safe_mode in (True, False):
        with pytest.raises(ValueError, match="Python lambda.*never deserializes code"):
            lk.models.load_model(_with_config(tmp_path, config), safe_mode=safe_mode)
    assert not marker.exists()


def test_lambdas_are_saved_as_markers(tmp_path):
    model = lk.Sequential([lk.Input((3,)), L.Dense(2, activation=lambda x: x * 2.0)])
    with pytest.warns(UserWarning, match="lambda is saved only as a marker"):
        path = model.save(tmp_path / "l.keras")
    with pytest.raises(ValueError, match="lambda"):
        lk.models.load_model(path)


# ---- optional h5py, atomic writes, arguments ------------------------------------------------
def test_without_h5py(tmp_path, monkeypatch):
    model = sequential()
    x = _data((3, 5))
    h5_path = None
    if "h5py" not in sys.modules:
        pytest.importorskip("h5py")
    h5_path = model.save(tmp_path / "h5.keras", weights_format="h5")
    monkeypatch.setitem(sys.modules, "h5py", None)   # import h5py now fails
    path = model.save(tmp_path / "no_h5.keras")      # "auto": layerkit's format
    assert "model.weights.lkckpt" in zipfile.ZipFile(path).namelist()
    _same_predictions(model, lk.models.load_model(path), x)
    with pytest.raises(ImportError, match=r"layerkit\[h5\]"):
        lk.models.load_model(h5_path)
    with pytest.raises(ImportError, match=r"layerkit\[h5\]"):
        model.save(tmp_path / "x.keras", weights_format="h5")


def test_save_is_atomic(tmp_path, monkeypatch):
    model = sequential()
    path = model.save(tmp_path / "a.keras")
    before = open(path, "rb").read()
    from layerkit.io import keras_weights

    def fail(*args):
        raise OSError("disk full")

    for name in ("keras_weights_h5_bytes", "keras_weight_arrays"):
        monkeypatch.setattr(keras_weights, name, fail)
    with pytest.raises(OSError, match="disk full"):
        multi_io().save(path)
    assert open(path, "rb").read() == before
    assert sorted(os.listdir(tmp_path)) == ["a.keras"]   # no temporary files left


def test_save_arguments(tmp_path):
    model = sequential()
    with pytest.raises(ValueError, match="must end in '.keras'"):
        model.save(tmp_path / "m.zip")  # (.h5 is Keras's legacy format: test_legacy_h5.py)
    model.save(tmp_path / "m.keras")
    with pytest.raises(FileExistsError):
        model.save(tmp_path / "m.keras", overwrite=False)
    with pytest.raises(ValueError, match="weights_format"):
        model.save(tmp_path / "n.keras", weights_format="npz")
    lk.saving.save_model(model, tmp_path / "n.keras")
    assert isinstance(lk.saving.load_model(io.BytesIO((tmp_path / "n.keras").read_bytes())),
                      lk.Sequential)
    frozen = sequential()
    frozen.layers[0].trainable = False
    again = lk.models.load_model(frozen.save(tmp_path / "f.keras"))
    assert not again.layers[0].trainable and again.layers[1].trainable
    unbuilt = lk.Sequential([L.Dense(2)])
    again = lk.models.load_model(unbuilt.save(tmp_path / "u.keras"))
    assert not again.built and len(again.layers) == 1


def test_load_weights_of_an_archive_and_unknown_compile_objects(tmp_path):
    model = lk.Sequential([lk.Input((3,)), L.Dense(2, activity_regularizer="l2")])
    path = model.save(tmp_path / "w.keras", weights_format="layerkit")
    other = lk.Sequential([lk.Input((3,)), L.Dense(2)])
    other.load_weights(path)  # only the weights member is read
    for a, b in zip(other.get_weights(), model.get_weights()):
        np.testing.assert_array_equal(a, b)
    again = lk.models.load_model(path)
    assert isinstance(again.layers[0].activity_regularizer, lk.regularizers.L2)
    # an optimizer layerkit does not have: a clear error, and compile=False still loads
    config = json.loads(zipfile.ZipFile(path).read("config.json"))
    config["compile_config"] = {"optimizer": {"module": "keras.optimizers",
                                              "class_name": "Adafactor", "config": {},
                                              "registered_name": None}, "loss": "mse"}
    bad = _with_config(tmp_path, config)
    with pytest.raises(ValueError, match="unknown optimizer class 'Adafactor'.*compile=False"):
        lk.models.load_model(bad)
    assert lk.models.load_model(bad, compile=False).optimizer is None


def test_layer_shared_by_two_nested_models(tmp_path, weights_format):
    """The config holds the shared layer twice, with one shared_object_id (Keras's
    scheme): it loads as one layer, whose weights are stored once."""
    shared = L.Dense(3, name="shared")
    s1 = lk.Sequential([lk.Input((3,)), shared, L.Dense(3)], name="s1")
    s2 = lk.Sequential([lk.Input((3,)), L.Dense(3), shared], name="s2")
    inp = lk.Input((3,))
    model = lk.Model(inp, L.Add()([s1(inp), s2(inp)]))
    path = model.save(tmp_path / "s.keras", weights_format=weights_format)
    layers = json.loads(zipfile.ZipFile(path).read("config.json"))["config"]["layers"]
    ids = [e.get("shared_object_id") for seq in layers if seq["class_name"] == "Sequential"
           for e in seq["config"]["layers"] if e["config"]["name"] == "shared"]
    assert len(ids) == 2 and ids[0] == ids[1] is not None
    again = lk.models.load_model(path)
    assert again.get_layer("s1").layers[0] is again.get_layer("s2").layers[1]
    assert len(again.weights) == len(model.weights) == 6
    x = _data((2, 3))
    np.testing.assert_array_equal(again.predict(x, verbose=0), model.predict(x, verbose=0))
