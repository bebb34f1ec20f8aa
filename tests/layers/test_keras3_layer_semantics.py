"""Audit regressions for layers (API.md section 4): Keras 3 semantics found to differ."""
import numpy as np
import pytest

from layerkit import initializers
from layerkit import layers as L
from layerkit.autodiff.check import check_grads
from layerkit.layers import activations


def test_concatenate_rejects_an_out_of_range_axis():
    a = np.ones((2, 3), np.float32)
    # axis 3 used to wrap to axis 1 and join along the wrong axis
    with pytest.raises(ValueError, match=r"concatenate.*axis 3 is out of range.*rank 2"):
        L.Concatenate(axis=3)([a, a])
    with pytest.raises(ValueError, match="axis -3 is out of range"):
        L.Concatenate(axis=-3)([a, a])
    np.testing.assert_array_equal(L.Concatenate(axis=-2)([a, 2 * a]).numpy(),
                                  np.concatenate([a, 2 * a], axis=0))


@pytest.mark.parametrize("make, shape", [
    (lambda: L.Dense(2), (3, 4)),
    (lambda: L.Dense(2, activation="relu"), (3, 4)),
    (lambda: L.Conv2D(2, 3), (1, 5, 5, 3)),
    (lambda: L.Conv2DTranspose(2, 3), (1, 4, 4, 3)),
    (lambda: L.DepthwiseConv2D(3), (1, 5, 5, 3)),
    (lambda: L.AveragePooling2D(), (1, 4, 4, 3)),
    (lambda: L.GlobalAveragePooling2D(), (1, 4, 4, 3)),
    (lambda: L.BatchNormalization(), (3, 4)),
    (lambda: L.LayerNormalization(), (3, 4)),
    (lambda: L.SimpleRNN(2), (2, 3, 4)),
    (lambda: L.LSTM(2), (2, 3, 4)),
    (lambda: L.GRU(2), (2, 3, 4)),
])
def test_float_layers_cast_integer_inputs_to_their_dtype(make, shape):
    # Keras casts (or promotes) integer inputs of float-math layers to float32; NumPy
    # promotion gave float64 outputs (Dense, Conv2D, ...), errors (LSTM, AveragePooling2D)
    # or a truncated integer mean (GlobalAveragePooling2D).
    xi = np.arange(np.prod(shape)).reshape(shape) % 3
    layer = make()
    y = layer(xi)
    assert y.dtype == np.float32
    ref = make()
    ref(xi.astype(np.float32))
    ref.set_weights(layer.get_weights())
    np.testing.assert_allclose(y.numpy(), ref(xi.astype(np.float32)).numpy(), rtol=1e-6)


def test_global_average_pooling_of_integers_is_not_truncated():
    x = np.array([1, 2, 2, 2]).reshape(1, 2, 2, 1)
    np.testing.assert_allclose(L.GlobalAveragePooling2D()(x).numpy(), [[1.75]])


def test_embedding_still_takes_integer_indices():
    e = L.Embedding(5, 2)
    out = e(np.array([[1, 4]]))
    np.testing.assert_array_equal(out.numpy()[0], e.embeddings.numpy()[[1, 4]])


_ACT_REFS = {
    "softsign": lambda x: x / (1 + np.abs(x)),
    "hard_sigmoid": lambda x: np.clip(x / 6 + 0.5, 0, 1),
    "hard_silu": lambda x: x * np.clip(x / 6 + 0.5, 0, 1),
    "hard_swish": lambda x: x * np.clip(x / 6 + 0.5, 0, 1),
    "mish": lambda x: x * np.tanh(np.log1p(np.exp(x))),
}


@pytest.mark.parametrize("name", sorted(_ACT_REFS))
def test_keras_activation_names(name):
    x = np.array([-5.0, -3.5, -1.0, -0.2, 0.3, 1.0, 2.9, 4.0])
    np.testing.assert_allclose(L.Activation(name)(x).numpy(), _ACT_REFS[name](x),
                               rtol=1e-6, atol=1e-7)
    assert activations.serialize(activations.get(name)) in (name, "hard_silu")
    # away from the kinks of the piecewise-linear ones
    check_grads(activations.get(name), [np.array([-2.0, -0.7, 0.4, 1.3])], order=2)


def test_lstm_accepts_hard_sigmoid_recurrent_activation():
    layer = L.LSTM(3, recurrent_activation="hard_sigmoid")
    assert layer(np.ones((2, 4, 5), np.float32)).shape == (2, 3)
    assert layer.get_config()["recurrent_activation"] == "hard_sigmoid"


def test_add_weight_keras3_positional_order():
    layer = L.Layer()
    # the initializer used to become the weight's name, and glorot values were drawn
    w = layer.add_weight((2, 3), "zeros")
    np.testing.assert_array_equal(w.numpy(), np.zeros((2, 3), np.float32))
    w = layer.add_weight((2,), initializers.Constant(2.0))
    np.testing.assert_array_equal(w.numpy(), [2.0, 2.0])
    w = layer.add_weight((3,), "ones", "float64")
    assert w.dtype == np.float64 and w.numpy().tolist() == [1.0, 1.0, 1.0]
    # the layerkit order and (shape, name) keep working
    w = layer.add_weight("k", (2,), "ones")
    assert w.shape == (2,) and w.numpy().tolist() == [1.0, 1.0]
    w = layer.add_weight((4,), "my_weight", initializer="zeros")
    assert w.shape == (4,) and "my_weight" in w.name and not w.numpy().any()


def test_the_call_error_shows_the_shapes_of_list_inputs():
    with pytest.raises(ValueError, match=r"input shape\(s\) \[\[\(2, 3\), \(3, 4\)\]\]"):
        L.Concatenate()([np.ones((2, 3), np.float32), np.ones((3, 4), np.float32)])
