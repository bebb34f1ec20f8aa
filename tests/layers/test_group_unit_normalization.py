"""GroupNormalization and UnitNormalization vs NumPy."""
import numpy as np
import pytest

import layerkit as lk
from layerkit.layers import GroupNormalization, UnitNormalization

from .layer_test_util import run_layer_test


def _x(*shape, seed=0):
    return (np.random.default_rng(seed).normal(size=shape) * 3 + 1).astype(np.float32)


def np_group_norm(x, groups, axis=-1, eps=1e-3, gamma=None, beta=None):
    x = np.moveaxis(x, axis, -1)
    shape = x.shape
    g = x.reshape(shape[0], -1, groups, shape[-1] // groups)
    mean = g.mean(axis=(1, 3), keepdims=True)
    var = g.var(axis=(1, 3), keepdims=True)
    y = ((g - mean) / np.sqrt(var + eps)).reshape(shape)
    if gamma is not None:
        y = y * gamma + beta
    return np.moveaxis(y, -1, axis)


@pytest.mark.parametrize("groups, shape", [(2, (2, 5, 4)), (1, (2, 3, 3, 6)), (-1, (2, 3, 4)),
                                           (3, (2, 6))])
def test_group_norm_matches_numpy(groups, shape):
    x = _x(*shape)
    y = run_layer_test(GroupNormalization, {"groups": groups}, x, shape,
                       [(shape[-1],), (shape[-1],)])
    np.testing.assert_allclose(y, np_group_norm(x, shape[-1] if groups == -1 else groups),
                               rtol=1e-4, atol=1e-5)


def test_group_norm_weights_axis_and_errors():
    x = _x(2, 4, 3, 5)
    layer = GroupNormalization(groups=2, axis=1, epsilon=1e-5)
    layer(x)
    assert [w.name for w in layer.weights] == ["gamma", "beta"]
    gamma = np.linspace(0.5, 2, 4).astype(np.float32)
    beta = np.linspace(-1, 1, 4).astype(np.float32)
    layer.set_weights([gamma, beta])
    ref = np_group_norm(x, 2, axis=1, eps=1e-5, gamma=gamma, beta=beta)
    np.testing.assert_allclose(layer(x).numpy(), ref, rtol=1e-4, atol=1e-5)
    assert GroupNormalization().groups == 32  # Keras 3 default
    inst = GroupNormalization(groups=-1)
    inst(_x(2, 3, 4))
    assert inst.groups == 4 and inst.get_config()["groups"] == 4
    with pytest.raises(ValueError, match="cannot be split into groups=3"):
        GroupNormalization(groups=3)(_x(2, 4))
    with pytest.raises(ValueError, match="positive integer"):
        GroupNormalization(groups=0)
    with pytest.raises(ValueError, match=r"axis 1 .* value 4"):
        layer(_x(2, 3, 4, 5))  # 3 channels on axis 1 where it was built for 4


def test_unit_normalization():
    x = _x(3, 4, 5)
    y = run_layer_test(UnitNormalization, {}, x, (3, 4, 5), [])
    np.testing.assert_allclose(y, x / np.linalg.norm(x, axis=-1, keepdims=True), rtol=1e-5)
    y = UnitNormalization(axis=[1, 2])(x).numpy()
    np.testing.assert_allclose(y, x / np.sqrt((x ** 2).sum((1, 2), keepdims=True)), rtol=1e-5)
    assert np.all(UnitNormalization()(np.zeros((2, 3), np.float32)).numpy() == 0)
    assert UnitNormalization.from_config(UnitNormalization(axis=[1, 2]).get_config()).axis == \
        [1, 2]
    with pytest.raises(ValueError, match="axis 3 is out of range"):
        UnitNormalization(axis=3)(x)
    with pytest.raises(TypeError, match="int or a list"):
        UnitNormalization(axis="x")


def test_normalization_layers_in_fit_and_masks():
    model = lk.Sequential([lk.Input(shape=(8,)), lk.layers.Dense(8), GroupNormalization(groups=4),
                           lk.layers.Dense(4), UnitNormalization(), lk.layers.Dense(1)])
    model.compile(lk.optimizers.Adam(0.01), "mse")
    x, y = _x(32, 8), _x(32, 1, seed=1)
    before = model.evaluate(x, y, verbose=0)
    model.fit(x, y, epochs=10, batch_size=8, verbose=0)
    assert model.evaluate(x, y, verbose=0) < before
    ids = np.array([[1, 2, 0]])
    e = lk.layers.Embedding(3, 4, mask_zero=True)(ids)
    for layer in (GroupNormalization(groups=2), UnitNormalization(),
                  lk.layers.LayerNormalization(), lk.layers.BatchNormalization()):
        np.testing.assert_array_equal(lk.layers.get_keras_mask(layer(e)).numpy(), ids != 0)
