"""The focal cross-entropies, Dice and Tversky against Keras 3 fixtures, with gradient
checks, configs and use in fit."""
import json
from pathlib import Path

import numpy as np
import pytest

import layerkit as lk
from layerkit.autodiff.check import check_grads

CASES = json.loads((Path(__file__).parent / "fixtures/keras/focal_dice_losses.json").read_text())


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_keras(name):
    case = CASES[name]
    cls = getattr(lk.losses, case["class"])
    loss = cls.from_config(case["config"])
    yt, yp = np.float32(case["y_true"]), np.float32(case["y_pred"])
    np.testing.assert_allclose(float(loss(yt, yp)), case["value"], rtol=1e-5, atol=1e-6)
    per = cls.from_config({**case["config"], "reduction": "none"})(yt, yp)
    np.testing.assert_allclose(per, case["none"], rtol=1e-5, atol=1e-6)
    again = cls.from_config(loss.get_config())
    assert again.get_config() == loss.get_config()


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradients_match_finite_differences(name):
    case = CASES[name]
    fn = getattr(lk.losses, case["config"]["name"])  # the per-sample function
    kwargs = {k: v for k, v in case["config"].items()
              if k not in ("name", "reduction", "dtype")}
    yt = np.float64(case["y_true"])
    check_grads(lambda p: lk.reduce_sum(fn(yt, p, **kwargs)), [np.float64(case["y_pred"])])


def test_string_names_and_functions():
    assert lk.losses.get("binary_focal_crossentropy").__class__ is lk.losses.BinaryFocalCrossentropy
    assert lk.losses.get("dice").__class__ is lk.losses.Dice
    y = np.float32([[1.0, 0.0]])
    np.testing.assert_allclose(lk.losses.dice(y, y), 0.0, atol=1e-6)
    np.testing.assert_allclose(lk.losses.tversky(y, y), 0.0, atol=1e-6)
    # gamma = 0 and no balancing is plain binary cross-entropy
    p = np.float32([[0.3, 0.6]])
    np.testing.assert_allclose(lk.losses.binary_focal_crossentropy(y, p, gamma=0.0),
                               lk.losses.binary_crossentropy(y, p), rtol=1e-6)
    with pytest.raises(ValueError, match="categorical_focal_crossentropy"):
        lk.losses.categorical_focal_crossentropy(np.float32([1.0]), np.float32([[0.5, 0.5]]))


def test_trains_with_fit():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 4)).astype(np.float32)
    y = (x[:, :1] > 0).astype(np.float32)
    m = lk.Sequential([lk.Input((4,)), lk.layers.Dense(1, activation="sigmoid")])
    m.compile(lk.optimizers.Adam(0.05), lk.losses.BinaryFocalCrossentropy(gamma=2.0))
    h = m.fit(x, y, epochs=20, verbose=0).history["loss"]
    assert h[-1] < 0.5 * h[0]
