"""Dense, Activation, Flatten, Reshape, Dropout, Embedding vs NumPy references."""
import numpy as np
import pytest

import layerkit as lk
import layerkit.random  # noqa: F401
from layerkit.layers import Activation, Dense, Dropout, Embedding, Flatten, Reshape

from .layer_test_util import check_layer_grads, run_layer_test


def _x(*shape, seed=0):
    return np.random.default_rng(seed).normal(size=shape).astype(np.float32)


def test_dense_matches_numpy_and_keras_layout():
    x = _x(4, 3)
    out = run_layer_test(Dense, {"units": 5, "activation": "tanh"}, x, (4, 5),
                         [(3, 5), (5,)], grad_order=2)
    layer = Dense(5, activation="tanh")
    layer(x)
    k, b = _x(3, 5, seed=1), _x(5, seed=2)
    layer.set_weights([k, b])  # Keras weights load by position
    np.testing.assert_allclose(layer(x).numpy(), np.tanh(x @ k + b), rtol=1e-5, atol=1e-6)
    assert out.shape == (4, 5)


def test_dense_on_rank3_input_and_no_bias():
    x = _x(2, 3, 4)
    layer = Dense(2, use_bias=False)
    y = layer(x)
    assert [w.name for w in layer.weights] == ["kernel"]
    np.testing.assert_allclose(y.numpy(), x @ layer.kernel.numpy(), rtol=1e-5)
    check_layer_grads(Dense(2, dtype="float64"), [x.astype(np.float64)])


def test_dense_glorot_uniform_default_limits():
    layer = Dense(300)
    layer.build((None, 200))
    limit = np.sqrt(6.0 / 500)
    k = layer.kernel.numpy()
    assert k.dtype == np.float32 and np.abs(k).max() <= limit
    assert np.abs(k).max() > 0.9 * limit
    np.testing.assert_array_equal(layer.bias.numpy(), 0)


@pytest.mark.parametrize("units", [0, -1, 2.5, "3"])
def test_dense_rejects_bad_units(units):
    with pytest.raises(ValueError, match="expected a positive integer. Received: units="):
        Dense(units)


@pytest.mark.parametrize("name,ref", [
    ("relu", lambda x: np.maximum(x, 0)),
    ("sigmoid", lambda x: 1 / (1 + np.exp(-x))),
    ("tanh", np.tanh),
    ("linear", lambda x: x),
    ("softmax", lambda x: np.exp(x) / np.exp(x).sum(-1, keepdims=True)),
    ("softplus", lambda x: np.log1p(np.exp(x))),
    ("elu", lambda x: np.where(x > 0, x, np.expm1(x))),
    ("exponential", np.exp),
])
def test_activation_names(name, ref):
    x = _x(3, 4)
    np.testing.assert_allclose(Activation(name)(x).numpy(), ref(x), rtol=1e-5, atol=1e-6)


def test_activation_unknown_name():
    with pytest.raises(ValueError, match=r"unknown activation 'relu7'.*known:.*'relu'"):
        Activation("relu7")


def test_flatten_and_reshape():
    x = _x(2, 3, 4)
    np.testing.assert_array_equal(Flatten()(x).numpy(), x.reshape(2, 12))
    np.testing.assert_array_equal(Reshape((4, 3))(x).numpy(), x.reshape(2, 4, 3))
    np.testing.assert_array_equal(Reshape((-1, 2))(x).numpy(), x.reshape(2, 6, 2))
    run_layer_test(Flatten, {}, x, (2, 12))
    run_layer_test(Reshape, {"target_shape": (6, 2)}, x, (2, 6, 2))
    with pytest.raises(ValueError, match=r"Reshape 'reshape_bad'.*\(3, 4\).*12 values.*\(5,"):
        Reshape((5, 2), name="reshape_bad")(x)


def test_dropout_seeded_sequence_and_inference_identity():
    x = np.ones((50, 20), np.float32)
    a, b = Dropout(0.3, seed=5), Dropout(0.3, seed=5)
    ya1, ya2 = a(x, training=True).numpy(), a(x, training=True).numpy()
    yb1 = b(x, training=True).numpy()
    np.testing.assert_array_equal(ya1, yb1)  # same seed, same sequence of masks
    assert not np.array_equal(ya1, ya2)  # but a new mask each call
    np.testing.assert_allclose(np.unique(ya1), [0.0, 1 / 0.7], rtol=1e-6)
    np.testing.assert_array_equal(a(x, training=False).numpy(), x)
    lk.random.set_seed(3)
    c1 = Dropout(0.3)(x, training=True).numpy()
    lk.random.set_seed(3)
    c2 = Dropout(0.3)(x, training=True).numpy()
    np.testing.assert_array_equal(c1, c2)
    with pytest.raises(ValueError, match=r"rate.*\[0, 1\).*1.5"):
        Dropout(1.5)
    run_layer_test(Dropout, {"rate": 0.2}, _x(3, 4), (3, 4))


def test_embedding_gathers_rows_and_accumulates_gradients():
    idx = np.array([[1, 2, 1], [0, 4, 4]])
    run_layer_test(Embedding, {"input_dim": 5, "output_dim": 3}, idx, (2, 3, 3), [(5, 3)])
    layer = Embedding(5, 3)
    y = layer(idx)
    table = layer.embeddings.numpy()
    np.testing.assert_array_equal(y.numpy(), table[idx])
    assert np.abs(table).max() <= 0.05  # Keras's 'uniform' default
    with lk.GradientTape() as tape:
        loss = lk.reduce_sum(layer(idx))
    g = np.asarray(tape.gradient(loss, layer.embeddings))
    np.testing.assert_array_equal(g[:, 0], [1, 2, 1, 0, 2])
    np.testing.assert_array_equal(layer(idx.astype(np.float32)).numpy(), table[idx])
    with pytest.raises(ValueError, match=r"Embedding.*index 5.*\[0, 5\)"):
        layer(np.array([[5]]))
