"""Bad input to layers, weights and Variables: a clear error naming the layer / weight,
never a silently stored NaN or an all-zero weight."""
from __future__ import annotations

import numpy as np
import pytest

import layerkit as lk
from layerkit import initializers
from layerkit import layers as L

X = np.ones((2, 3), np.float32)


@pytest.mark.parametrize("make", [lambda: L.Dense(2), lambda: L.Dropout(0.5),
                                  lambda: L.Conv2D(2, 3), lambda: L.Flatten()])
def test_none_as_input_names_the_layer(make):
    layer = make()
    with pytest.raises(ValueError, match=f"layer '{layer.name}' \\({type(layer).__name__}\\) "
                                         f"received None as its input; expected a tensor"):
        layer(None)


def test_dict_for_a_single_tensor_layer_names_the_layer_and_the_keys():
    layer = L.Dense(2)
    with pytest.raises(ValueError, match=f"Input 0 of layer '{layer.name}' is incompatible "
                                         f"with the layer: expected a tensor, received a dict "
                                         f"with keys \\['a', 'b'\\]"):
        layer({"b": X, "a": X})
    assert not layer.built
    conv = L.Conv2D(2, 3)
    with pytest.raises(ValueError, match="expected a tensor, received a str"):
        conv("image")


@pytest.mark.parametrize("make, weight, init", [
    (lambda: L.Dense(2, dtype="int32"), "kernel", "GlorotUniform"),
    (lambda: L.Conv2D(2, 3, dtype="int64"), "kernel", "GlorotUniform"),
    (lambda: L.Embedding(5, 2, dtype="int32"), "embeddings", "RandomUniform"),
    (lambda: L.LSTM(2, dtype="int32"), "kernel", "GlorotUniform"),   # names its cell
    (lambda: L.Dense(2, dtype="bool"), "kernel", "GlorotUniform"),
])
def test_random_initializers_refuse_non_float_layer_dtypes(make, weight, init):
    layer = make()
    shape = {"Conv2D": (1, 5, 5, 3), "Embedding": None, "LSTM": (1, 4, 3)}.get(
        type(layer).__name__, (1, 3))
    x = np.array([[1, 2]]) if shape is None else np.ones(shape, np.float32)
    owner = layer.cell if isinstance(layer, L.RNN) else layer
    with pytest.raises(ValueError, match=f"{type(owner).__name__} '{owner.name}'.*cannot "
                                         f"create weight '{weight}'.*{init} draws random "
                                         f"floats and needs a floating-point dtype"):
        layer(x)


def test_integer_layers_with_deterministic_initializers_still_work():
    layer = L.Dense(2, dtype="int32", kernel_initializer="ones")
    out = layer(np.array([[1, 2, 3]], np.int32))
    assert out.dtype == np.int32 and out.numpy().tolist() == [[6, 6]]


@pytest.mark.parametrize("init", ["glorot_uniform", "he_normal", "random_normal",
                                  "random_uniform", "truncated_normal", "orthogonal",
                                  "lecun_uniform"])
def test_random_initializers_named_dtype_error(init):
    fn = initializers.get(init)
    with pytest.raises(ValueError, match="needs a floating-point dtype, received dtype=int32"):
        fn((3, 3), dtype="int32")
    assert fn((3, 3), dtype="float64").dtype == np.float64


def test_set_weights_with_none_inside_names_the_weight():
    layer = L.Dense(2)
    layer.build((None, 3))
    before = layer.get_weights()
    bad = np.array([[1, 2], [3, None], [5, 6]], dtype=object)
    with pytest.raises(TypeError, match=f"set_weights on layer '{layer.name}': weight "
                                        f"'kernel' received an array of Python objects"):
        layer.set_weights([bad, np.zeros(2)])
    for a, b in zip(before, layer.get_weights()):
        np.testing.assert_array_equal(a, b)
    with pytest.raises(TypeError, match="weight 'kernel' received a list that is not a "
                                        "numeric array"):
        layer.set_weights([[[1.0, 2.0], [3.0, None], [5.0, 6.0]], [0.0, 0.0]])


def test_variable_refuses_object_arrays():
    with pytest.raises(TypeError, match="Variable 'w': cannot hold an array of Python "
                                        "objects"):
        lk.Variable(np.array([1.0, None], dtype=object), name="w")
    with pytest.raises(TypeError, match="cannot hold an array of Python objects"):
        lk.Variable(np.array([{}, 2], dtype=object))
    v = lk.Variable([1.0, 2.0], name="v")
    with pytest.raises(TypeError, match="Variable 'v': cannot assign an array of Python"):
        v.assign(np.array([1.0, None], dtype=object))
    with pytest.raises(TypeError, match="Variable 'v': cannot assign_add an array"):
        v.assign_add(np.array([1.0, None], dtype=object))
    assert v.numpy().tolist() == [1.0, 2.0]
