"""The spatial and preprocessing layers against Keras 3 on identical weights and inputs.

The expected outputs come from tests/fixtures/keras_layers/keras_layers.npz, written once
by make_fixtures.py with Keras 3.15 (torch backend); the cases are in specs.py there.
Each case checks the weight shapes Keras created, then loads Keras's weights and compares
the output (float32 tolerance) and its dtype.
"""
import os

import numpy as np
import pytest

import layerkit as lk
from tests.fixtures.keras_layers.specs import SPECS, adapt_data, mask_for

HERE = os.path.join(os.path.dirname(__file__), "..", "fixtures", "keras_layers")
FIXTURE = np.load(os.path.join(HERE, "keras_layers.npz"))


@pytest.mark.parametrize("case", SPECS, ids=[c[0] for c in SPECS])
def test_layer_matches_keras(case):
    name, cls, kwargs, shape, call = case
    x = FIXTURE[f"{name}/x"]
    call = {k: v for k, v in call.items() if k != "INT"}
    if call.get("mask") == "MASK":
        call["mask"] = mask_for(shape)
    layer = getattr(lk.layers, cls)(**kwargs)
    layer(x, **call)
    assert repr([tuple(w.shape) for w in layer.weights]) == str(FIXTURE[f"{name}/wshapes"][0])
    layer.set_weights([FIXTURE[f"{name}/w{j}"] for j in range(len(layer.weights))])
    y = layer(x, **call).numpy()
    want = FIXTURE[f"{name}/y"]
    assert y.dtype == want.dtype
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=2e-5)


@pytest.mark.parametrize("axis", [-1, None, (0, 1)])
def test_normalization_adapt_matches_keras(axis):
    layer = lk.layers.Normalization(axis=axis)
    layer.adapt(adapt_data())
    got = layer.get_weights()
    want = [FIXTURE[f"normalization_adapt/{axis}/w{j}"] for j in range(3)]
    assert [(w.shape, w.dtype) for w in got] == [(w.shape, w.dtype) for w in want]
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("num_bins,epsilon", [(4, 0.01), (7, 0.01), (5, 0.05), (3, 0.01)])
def test_discretization_adapt_matches_keras(num_bins, epsilon):
    layer = lk.layers.Discretization(num_bins=num_bins, epsilon=epsilon)
    layer.adapt(adapt_data()[..., 0])
    np.testing.assert_array_equal(layer.bin_boundaries,
                                  FIXTURE[f"discretization_adapt/{num_bins}/{epsilon}"])
