"""Keras 3's symbolic attributes: model.inputs/outputs (flat lists), model.input/output
(the structure), input_shape/output_shape, and layer.input/output for feature
extraction, on Sequential and functional models."""
import numpy as np
import pytest

import layerkit as lk

L = lk.layers


def test_sequential_with_an_input_has_symbolic_inputs_outputs_and_shapes():
    model = lk.Sequential([lk.Input((4,)), L.Dense(3, activation="relu"), L.Dense(2)])
    assert [t.shape for t in model.inputs] == [(None, 4)]
    assert [t.shape for t in model.outputs] == [(None, 2)]
    assert model.input is model.inputs[0] and model.output is model.outputs[0]
    assert (model.input_shape, model.output_shape) == ((None, 4), (None, 2))
    assert model.layers[0].input is model.input
    assert model.layers[1].output is model.output


def test_feature_extractor_from_a_sequential_models_layer_outputs():
    model = lk.Sequential([lk.Input((4,)), L.Dense(3, activation="relu", name="hidden"),
                           L.Dense(2)])
    features = lk.Model(inputs=model.inputs,
                        outputs=[layer.output for layer in model.layers])
    x = np.random.default_rng(0).standard_normal((5, 4)).astype(np.float32)
    hidden, out = features(x)
    k, b = model.layers[0].kernel.numpy(), model.layers[0].bias.numpy()
    np.testing.assert_allclose(hidden.numpy(), np.maximum(x @ k + b, 0), rtol=1e-5)
    np.testing.assert_allclose(out.numpy(), model(x).numpy(), rtol=1e-6)


def test_layers_added_after_the_input_extend_the_same_graph():
    model = lk.Sequential([lk.Input((4,))])
    model.add(L.Dense(3))
    model.add(L.Dense(2))
    assert model.layers[1].input is model.layers[0].output
    model.pop()
    assert model.output is model.layers[0].output and model.output_shape == (None, 3)


def test_functional_inputs_are_flat_and_input_keeps_the_structure():
    a, b = lk.Input((2,), name="a"), lk.Input((3,), name="b")
    out = L.Dense(1)(L.Concatenate()([a, b]))
    model = lk.Model({"a": a, "b": b}, out)
    assert model.inputs == [a, b] and model.input == {"a": a, "b": b}
    assert model.input_shape == [(None, 2), (None, 3)]
    assert model.output_shape == (None, 1) and model.outputs == [out]


def test_unbuilt_models_and_uncalled_layers_say_so():
    model = lk.Sequential([L.Dense(2)])
    assert model.inputs is None and model.outputs is None
    with pytest.raises(AttributeError, match="no symbolic input"):
        _ = model.input_shape
    with pytest.raises(AttributeError, match="never been called"):
        _ = L.Dense(2).output
    model.build((None, 5))
    assert model.output_shape == (None, 2) and model.input_shape == (None, 5)
