"""Masked models against numbers recorded once with Keras 3 on the same weights
(tests/fixtures/keras_layers_a.npz; the models are in keras_cases.py)."""
import pathlib

import numpy as np
import pytest

import layerkit as lk
from layerkit._core import nest

from . import keras_cases as kc

FIXTURE = np.load(pathlib.Path(__file__).resolve().parents[1] / "fixtures" /
                  "keras_layers_a.npz")


def _model(name: str, build):
    model = build(lk.layers, lk.Input, lk.Model)
    n = int(FIXTURE[f"{name}/n_weights"])
    model.set_weights([FIXTURE[f"{name}/w{i}"] for i in range(n)])
    return model


@pytest.mark.parametrize("name", sorted(kc.OUTPUT_CASES))
def test_outputs_and_masks_match_keras(name):
    build, inputs = kc.OUTPUT_CASES[name]
    inputs = kc.masking_inputs() if inputs is None else inputs
    ys = nest.flatten(_model(name, build)(inputs))
    assert len(ys) == int(FIXTURE[f"{name}/n_outputs"])
    for i, y in enumerate(ys):
        np.testing.assert_allclose(y.numpy(), FIXTURE[f"{name}/y{i}"], rtol=1e-5, atol=1e-6)
        mask = lk.layers.get_keras_mask(y)
        key = f"{name}/mask{i}"
        if key in FIXTURE:
            assert mask is not None, f"output {i} lost its mask"
            np.testing.assert_array_equal(mask.numpy(), FIXTURE[key])
        else:
            assert mask is None, f"output {i} has a mask Keras does not give"


@pytest.mark.parametrize("run_eagerly", [False, True])
@pytest.mark.parametrize("name", sorted(kc.LOSS_CASES))
def test_masked_loss_and_metrics_in_evaluate_and_fit_match_keras(name, run_eagerly):
    model = _model(name, kc.LOSS_CASES[name])
    model.compile(lk.optimizers.SGD(0.5), "sparse_categorical_crossentropy",
                  metrics=["accuracy"], weighted_metrics=["accuracy"],
                  run_eagerly=run_eagerly)
    y, sw = kc.fit_targets()
    for tag, kwargs in (("plain", {}), ("weighted", {"sample_weight": sw})):
        logs = model.evaluate(kc.IDS, y, verbose=0, return_dict=True, **kwargs)
        for k in ("loss", "accuracy", "weighted_accuracy"):
            np.testing.assert_allclose(logs[k], FIXTURE[f"{name}/{tag}/{k}"], rtol=1e-5,
                                       err_msg=f"{tag} {k}")
    hist = model.fit(kc.IDS, y, batch_size=3, epochs=1, shuffle=False, verbose=0)
    np.testing.assert_allclose(hist.history["loss"][0], FIXTURE[f"{name}/fit_loss"], rtol=1e-5)
    if name not in kc.FIT_WEIGHTS_MATCH:
        return
    for i, w in enumerate(model.get_weights()):
        np.testing.assert_allclose(w, FIXTURE[f"{name}/after_fit{i}"], rtol=1e-4, atol=1e-6)
