"""SpatialDropout1D/2D/3D, GaussianNoise, GaussianDropout, AlphaDropout,
ActivityRegularization: identity at inference, their training-time rules, reproducibility
through lk.random, fresh draws inside lk.function."""
import numpy as np
import pytest

import layerkit as lk
from layerkit.layers import (
    ActivityRegularization,
    AlphaDropout,
    GaussianDropout,
    GaussianNoise,
    SpatialDropout1D,
    SpatialDropout2D,
    SpatialDropout3D,
)

from .layer_test_util import run_layer_test

ALPHA_P = -1.6732632423543772848170429916717 * 1.0507009873554804934193349852946


def _x(*shape, seed=0):
    return np.random.default_rng(seed).normal(size=shape).astype(np.float32)


NOISY = [(SpatialDropout1D, {"rate": 0.5}, (4, 6, 8)), (SpatialDropout2D, {"rate": 0.5},
                                                         (4, 3, 5, 8)),
         (SpatialDropout3D, {"rate": 0.5}, (2, 2, 3, 2, 8)), (GaussianNoise, {"stddev": 0.5},
                                                             (4, 6)),
         (GaussianDropout, {"rate": 0.3}, (4, 6)), (AlphaDropout, {"rate": 0.3}, (4, 6))]


@pytest.mark.parametrize("cls, kwargs, shape", NOISY)
def test_identity_at_inference_and_config(cls, kwargs, shape):
    x = _x(*shape)
    y = run_layer_test(cls, kwargs, x, shape, [], grad=False)
    np.testing.assert_array_equal(y, x)
    layer = cls(**kwargs, seed=3)
    assert cls.from_config(layer.get_config()).seed == 3
    assert not np.array_equal(layer(x, training=True).numpy(), x)


@pytest.mark.parametrize("cls, kwargs, shape", NOISY)
def test_reproducible_through_lk_random_and_fresh_inside_function(cls, kwargs, shape):
    x = _x(*shape)
    layer = cls(**kwargs)
    lk.random.set_seed(11)
    a = layer(x, training=True).numpy()
    b = layer(x, training=True).numpy()
    lk.random.set_seed(11)
    np.testing.assert_array_equal(layer(x, training=True).numpy(), a)
    assert not np.array_equal(a, b)
    f = lk.function(lambda t: layer(t, training=True))
    assert not np.array_equal(f(x).numpy(), f(x).numpy())  # a stateful node: new draws


def test_spatial_dropout_drops_whole_channels():
    x = np.ones((8, 5, 6), np.float32)
    y = SpatialDropout1D(0.5)(x, training=True).numpy()
    assert set(np.unique(y)) <= {0.0, 2.0}
    np.testing.assert_array_equal(y, np.broadcast_to(y[:, :1], y.shape))  # same at every step
    y = SpatialDropout2D(0.5)(np.ones((8, 3, 4, 6), np.float32), training=True).numpy()
    np.testing.assert_array_equal(y, np.broadcast_to(y[:, :1, :1], y.shape))
    y = SpatialDropout2D(0.5, data_format="channels_first")(
        np.ones((8, 6, 3, 4), np.float32), training=True).numpy()
    np.testing.assert_array_equal(y, np.broadcast_to(y[:, :, :1, :1], y.shape))
    assert SpatialDropout2D(0.5).get_config()["data_format"] == "channels_last"
    y = SpatialDropout3D(0.5)(np.ones((4, 2, 2, 3, 6), np.float32), training=True).numpy()
    np.testing.assert_array_equal(y, np.broadcast_to(y[:, :1, :1, :1], y.shape))
    with pytest.raises(ValueError, match="expected ndim=3"):
        SpatialDropout1D(0.5)(np.ones((2, 3)))


def test_gaussian_noise_and_dropout_statistics():
    x = np.full((400, 500), 2.0, np.float32)
    noise = GaussianNoise(0.3)(x, training=True).numpy() - 2.0
    assert abs(noise.mean()) < 0.01 and abs(noise.std() - 0.3) < 0.01
    factor = GaussianDropout(0.2)(x, training=True).numpy() / 2.0
    assert abs(factor.mean() - 1.0) < 0.01 and abs(factor.std() - np.sqrt(0.2 / 0.8)) < 0.01
    with pytest.raises(ValueError, match=r"stddev.*\[0, 1\]"):
        GaussianNoise(1.5)


def test_alpha_dropout_rule_and_moments():
    rate = 0.2
    a = ((1 - rate) * (1 + rate * ALPHA_P ** 2)) ** -0.5
    b = -a * ALPHA_P * rate
    x = _x(300, 400)
    y = AlphaDropout(rate)(x, training=True).numpy()
    dropped = np.isclose(y, a * ALPHA_P + b, atol=1e-6)
    np.testing.assert_allclose(y[~dropped], a * x[~dropped] + b, rtol=1e-5, atol=1e-6)
    assert abs(dropped.mean() - rate) < 0.01
    assert abs(y.mean()) < 0.02 and abs(y.std() - 1.0) < 0.02  # keeps mean 0, variance 1
    # noise_shape: one draw per (sample, feature), shared along axis 1
    y = AlphaDropout(0.5, noise_shape=(None, 1, 5))(np.ones((4, 3, 5), np.float32),
                                                    training=True).numpy()
    np.testing.assert_array_equal(y, np.broadcast_to(y[:, :1], y.shape))


def test_activity_regularization_adds_its_penalty():
    x = _x(4, 3)
    layer = ActivityRegularization(l1=0.1, l2=0.01)
    np.testing.assert_array_equal(layer(x).numpy(), x)
    expected = (0.1 * np.abs(x).sum() + 0.01 * (x ** 2).sum()) / 4
    np.testing.assert_allclose(float(layer.losses[0]), expected, rtol=1e-5)
    assert layer.get_config()["l1"] == 0.1 and "activity_regularizer" not in layer.get_config()
    assert ActivityRegularization.from_config(layer.get_config()).l2 == 0.01


def test_regularization_layers_train_in_fit_and_pass_masks():
    model = lk.Sequential([lk.Input(shape=(5, 3)), SpatialDropout1D(0.2), GaussianNoise(0.1),
                           lk.layers.LSTM(6), GaussianDropout(0.1), AlphaDropout(0.1),
                           ActivityRegularization(l2=1e-3), lk.layers.Dense(1)])
    model.compile(lk.optimizers.Adam(0.01), "mse")
    x, y = _x(32, 5, 3), _x(32, 1, seed=1)
    before = model.evaluate(x, y, verbose=0)  # inference: no noise
    model.fit(x, y, epochs=10, batch_size=8, verbose=0)
    assert model.evaluate(x, y, verbose=0) < before
    ids = np.array([[1, 2, 0]])
    e = lk.layers.Embedding(3, 2, mask_zero=True)(ids)
    for layer in (GaussianNoise(0.1), GaussianDropout(0.1), AlphaDropout(0.1),
                  ActivityRegularization(), SpatialDropout1D(0.1)):
        mask = lk.layers.get_keras_mask(layer(e, training=True))
        np.testing.assert_array_equal(mask.numpy(), ids != 0)
