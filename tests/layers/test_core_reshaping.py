"""Identity, Lambda, InputLayer, RepeatVector, Permute, TimeDistributed."""
import json

import numpy as np
import pytest

import layerkit as lk
from layerkit.layers import (
    BatchNormalization,
    Dense,
    Identity,
    InputLayer,
    Lambda,
    Permute,
    RepeatVector,
    TimeDistributed,
)

from .layer_test_util import check_layer_grads, run_layer_test


def _x(*shape, seed=0):
    return np.random.default_rng(seed).normal(size=shape).astype(np.float32)


def double_plus(x, k=1.0):
    return x * 2.0 + k


# ---- Identity -----------------------------------------------------------------------------
def test_identity_returns_its_input_and_mask():
    x = lk.constant(_x(2, 3))
    assert Identity()(x) is x
    ids = np.array([[1, 0]])
    e = lk.layers.Embedding(3, 2, mask_zero=True)(ids)
    y = Identity()(e)
    np.testing.assert_array_equal(lk.layers.get_keras_mask(y).numpy(), ids != 0)
    assert Identity.from_config(Identity(name="idt").get_config()).name == "idt"


# ---- Lambda ----------------------------------------------------------------------------------
def test_lambda_arguments_mask_training_and_shape():
    x = _x(2, 3)
    layer = Lambda(double_plus, arguments={"k": 3.0})
    np.testing.assert_allclose(layer(x).numpy(), x * 2 + 3, rtol=1e-6)
    seen = {}

    def fn(inputs, mask=None, training=None):
        seen.update(mask=mask, training=training)
        return inputs

    Lambda(fn)(x, training=True)
    assert seen["training"] is True
    ids = np.array([[1, 2, 0]])
    Lambda(fn)(lk.layers.Embedding(3, 2, mask_zero=True)(ids))
    np.testing.assert_array_equal(np.asarray(seen["mask"]), ids != 0)
    assert Lambda(double_plus, output_shape=(7,)).compute_output_shape((None, 3)) == (None, 7)
    assert Lambda(double_plus, output_shape=lambda s: (s[0], 1)).compute_output_shape(
        (4, 3)) == (4, 1)
    assert Lambda(lambda t: t[:, :1]).compute_output_shape((None, 3)) == (None, 1)


def test_lambda_drops_masks_unless_given_one():
    ids = np.array([[1, 2, 0]])
    e = lk.layers.Embedding(3, 2, mask_zero=True)(ids)
    assert lk.layers.get_keras_mask(Lambda(lambda t: t * 2)(e)) is None
    y = Lambda(lambda t: t * 2, mask=lambda inputs, mask: mask)(e)
    np.testing.assert_array_equal(lk.layers.get_keras_mask(y).numpy(), ids != 0)


def test_lambda_config_references_functions_and_refuses_lambdas():
    layer = Lambda(double_plus, output_shape=(3,), arguments={"k": 2.0})
    config = layer.get_config()
    json.dumps(config)  # plain JSON: a reference, never code
    assert config["function"] == {"module": __name__, "class_name": "function",
                                  "config": "double_plus", "registered_name": "function"}
    clone = Lambda.from_config(config, custom_objects={"double_plus": double_plus})
    x = _x(2, 3)
    np.testing.assert_array_equal(clone(x).numpy(), layer(x).numpy())
    assert clone._output_shape == (3,)
    with pytest.raises(ValueError, match=r"unknown function 'double_plus'.*custom_objects"):
        Lambda.from_config(config)
    # layerkit's own functions are found by name
    np.testing.assert_array_equal(Lambda.from_config(Lambda(lk.nn.relu).get_config())(x).numpy(),
                                  np.maximum(x, 0))
    lam = Lambda(lambda t: t + 1)
    config = lam.get_config()
    json.dumps(config)
    assert config["function"]["class_name"] == "__lambda__"
    assert "code" not in json.dumps(config["function"])
    with pytest.raises(ValueError, match="Python lambda.*never deserializes code"):
        Lambda.from_config(config)


def test_lambda_in_sequential_fit_and_function():
    model = lk.Sequential([lk.Input(shape=(3,)), Dense(4), Lambda(lambda t: t * 0.5),
                           Dense(1)])
    model.compile("sgd", "mse")
    x, y = _x(16, 3), _x(16, 1, seed=1)
    model.fit(x, y, epochs=2, batch_size=8, verbose=0)
    f = lk.function(lambda t: model(t))
    np.testing.assert_allclose(f(x).numpy(), model(x).numpy(), rtol=1e-6)
    check_layer_grads(Lambda(lambda t: lk.tanh(t) * t, dtype="float64"),
                      [_x(2, 3).astype(np.float64)])


# ---- InputLayer ------------------------------------------------------------------------------
def test_input_layer_in_sequential_like_keras():
    model = lk.Sequential([InputLayer(shape=(3,)), Dense(2)])
    assert model.built and [type(x).__name__ for x in model.layers] == ["Dense"]
    assert model(_x(4, 3)).shape == (4, 2)
    layer = InputLayer(batch_shape=(None, 5, 2), dtype="int32", name="tokens")
    assert layer.get_config() == {"batch_shape": [None, 5, 2], "dtype": "int32",
                                  "sparse": False, "ragged": False, "name": "tokens",
                                  "optional": False}
    assert layer.output.shape == (None, 5, 2) and layer.output.dtype == np.int32
    # a Keras-style Sequential config, with the InputLayer as its first layer
    config = {"name": "seq", "layers": [
        {"class_name": "InputLayer", "config": InputLayer(shape=(3,)).get_config()},
        {"class_name": "Dense", "config": Dense(2).get_config()}]}
    clone = lk.Sequential.from_config(config)
    assert clone.built and clone.count_params() == 8
    functional = lk.Model(layer.output, lk.layers.Embedding(6, 3)(layer.output))
    assert functional.predict(np.zeros((2, 5, 2), np.int32), verbose=0).shape == (2, 5, 2, 3)


def test_input_layer_errors():
    with pytest.raises(ValueError, match="only one of `shape` and `batch_shape`"):
        InputLayer(shape=(3,), batch_shape=(None, 3))
    with pytest.raises(ValueError, match="pass shape"):
        InputLayer()
    with pytest.raises(ValueError, match="only one of `batch_size` and `batch_shape`"):
        InputLayer(batch_size=2, batch_shape=(2, 3))
    with pytest.raises(ValueError, match="must come first"):
        lk.Sequential([Dense(2), InputLayer(shape=(3,))])


# ---- RepeatVector, Permute -------------------------------------------------------------------
def test_repeat_vector():
    x = _x(2, 4)
    y = run_layer_test(RepeatVector, {"n": 3}, x, (2, 3, 4), [])
    np.testing.assert_array_equal(y, np.repeat(x[:, None], 3, axis=1))
    with pytest.raises(TypeError, match="int"):
        RepeatVector(2.0)
    with pytest.raises(ValueError, match="positive"):
        RepeatVector(0)
    with pytest.raises(ValueError, match="expected ndim=2"):
        RepeatVector(2)(_x(2, 3, 4))


def test_permute():
    x = _x(2, 3, 4, 5)
    y = run_layer_test(Permute, {"dims": (3, 1, 2)}, x, (2, 5, 3, 4), [])
    np.testing.assert_array_equal(y, np.transpose(x, (0, 3, 1, 2)))
    assert Permute((2, 1)).compute_output_shape((None, 3, 7)) == (None, 7, 3)
    with pytest.raises(ValueError, match="permutation of 1..2"):
        Permute((0, 1))
    with pytest.raises(ValueError, match="expected ndim=3"):
        Permute((2, 1))(x)


# ---- TimeDistributed ------------------------------------------------------------------------
def test_time_distributed_dense_equals_each_step():
    x = _x(2, 5, 3)
    td = TimeDistributed(Dense(4))
    # (gradients: test_time_distributed_trains_in_a_model, with a float64 inner layer)
    y = run_layer_test(TimeDistributed, {"layer": Dense(4)}, x, (2, 5, 4), [(3, 4), (4,)],
                       grad=False)
    assert y.shape == (2, 5, 4)
    out = td(x).numpy()
    k, b = td.layer.kernel.numpy(), td.layer.bias.numpy()
    np.testing.assert_allclose(out, x @ k + b, rtol=1e-5, atol=1e-6)
    assert [w.name for w in td.weights] == ["kernel", "bias"]
    config = td.get_config()
    assert config["layer"]["class_name"] == "Dense"
    assert TimeDistributed.from_config(config).layer.units == 4
    with pytest.raises(ValueError, match="at least 3 dimensions"):
        TimeDistributed(Dense(2))(_x(2, 3))
    with pytest.raises(ValueError, match="Layer instance"):
        TimeDistributed("dense")


def test_time_distributed_runs_batch_dependent_layers_per_step():
    # Keras 3 runs the layer on each step: BatchNormalization uses each step's batch stats
    x = _x(4, 3, 2) * 3 + 1
    td = TimeDistributed(BatchNormalization(momentum=0.5))
    y = td(x, training=True).numpy()
    ref = (x - x.mean(0, keepdims=True)) / np.sqrt(x.var(0, keepdims=True) + 1e-3)
    np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-5)
    # the moving mean was updated once per step
    m = np.zeros(2)
    for t in range(3):
        m = 0.5 * m + 0.5 * x[:, t].mean(0)
    np.testing.assert_allclose(td.layer.moving_mean.numpy(), m, rtol=1e-5)


def test_time_distributed_masks():
    ids = np.array([[1, 2, 0], [3, 0, 0]])
    e = lk.layers.Embedding(4, 2, mask_zero=True)(ids)
    y = TimeDistributed(Dense(3))(e)
    np.testing.assert_array_equal(lk.layers.get_keras_mask(y).numpy(), ids != 0)
    seen = []

    class Probe(lk.layers.Layer):
        def call(self, inputs, mask=None):
            seen.append(None if mask is None else np.asarray(mask))
            return inputs

    TimeDistributed(Probe())(lk.ones((2, 3, 2)), mask=ids != 0)
    for t in range(3):
        np.testing.assert_array_equal(seen[t], ids[:, t] != 0)
    with pytest.raises(ValueError, match=r"\(batch, time\) = \(2, 3\)"):
        TimeDistributed(Probe())(lk.ones((2, 3, 2)), mask=np.ones((3, 3), bool))


def test_time_distributed_trains_in_a_model():
    model = lk.Sequential([lk.Input(shape=(5, 3)), TimeDistributed(Dense(4, activation="relu")),
                           lk.layers.LSTM(4), Dense(1)])
    model.compile("adam", "mse")
    x, y = _x(16, 5, 3), _x(16, 1, seed=1)
    hist = model.fit(x, y, epochs=5, batch_size=8, verbose=0)
    assert hist.history["loss"][-1] < hist.history["loss"][0]
    check_layer_grads(TimeDistributed(Dense(2, dtype="float64"), dtype="float64"),
                      [_x(2, 3, 4).astype(np.float64)])


def test_sequential_config_with_a_named_lambda():
    model = lk.Sequential([lk.Input(shape=(3,)), Lambda(double_plus), Dense(2)])
    clone = lk.Sequential.from_config(model.get_config(),
                                      custom_objects={"double_plus": double_plus})
    clone.set_weights(model.get_weights())
    x = _x(4, 3)
    np.testing.assert_allclose(clone(x).numpy(), model(x).numpy(), rtol=1e-6)
