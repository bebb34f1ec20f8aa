"""BatchNormalization, LayerNormalization, Add, Concatenate vs NumPy."""
import numpy as np
import pytest

from layerkit.layers import Add, BatchNormalization, Concatenate, LayerNormalization

from .layer_test_util import check_layer_grads, run_layer_test


def _x(*shape, seed=0, loc=0.0, scale=1.0):
    return np.random.default_rng(seed).normal(loc, scale, size=shape).astype(np.float32)


def test_batch_norm_training_uses_batch_stats_and_updates_moving_averages():
    x = _x(16, 3, loc=2.0, scale=3.0)
    run_layer_test(BatchNormalization, {}, x, (16, 3), [(3,)] * 4,
                   call_kwargs={"training": True})
    bn = BatchNormalization(momentum=0.9, epsilon=1e-3)
    bn(x)
    gamma, beta = np.array([1.5, 0.5, 2.0], np.float32), np.array([0.1, -0.2, 0.3], np.float32)
    bn.set_weights([gamma, beta, np.zeros(3, np.float32), np.ones(3, np.float32)])
    y = bn(x, training=True).numpy()
    mean, var = x.mean(0), x.var(0)
    np.testing.assert_allclose(y, (x - mean) / np.sqrt(var + 1e-3) * gamma + beta,
                               rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(bn.moving_mean.numpy(), 0.1 * mean, rtol=1e-5)
    np.testing.assert_allclose(bn.moving_variance.numpy(), 0.9 + 0.1 * var, rtol=1e-5)
    # inference uses the moving statistics and changes nothing
    y_inf = bn(x).numpy()
    mm, mv = bn.moving_mean.numpy(), bn.moving_variance.numpy()
    np.testing.assert_allclose(y_inf, (x - mm) / np.sqrt(mv + 1e-3) * gamma + beta,
                               rtol=1e-4, atol=1e-5)
    np.testing.assert_array_equal(bn.moving_mean.numpy(), mm)


def test_batch_norm_keras_defaults_and_order():
    bn = BatchNormalization()
    assert bn.momentum == 0.99 and bn.epsilon == 1e-3
    bn(_x(4, 2, 2, 5))
    assert [w.name for w in bn.weights] == ["gamma", "beta", "moving_mean", "moving_variance"]
    assert [w.name for w in bn.trainable_weights] == ["gamma", "beta"]


def test_batch_norm_conv_features_and_other_axis():
    x = _x(4, 3, 3, 2, loc=1.0)
    y = BatchNormalization()(x, training=True).numpy()
    ref = (x - x.mean((0, 1, 2))) / np.sqrt(x.var((0, 1, 2)) + 1e-3)
    np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-5)
    x = _x(5, 3, 4)
    bn = BatchNormalization(axis=1)
    y = bn(x, training=True).numpy()
    assert bn.gamma.shape == (3,)
    ref = (x - x.mean((0, 2), keepdims=True)) / np.sqrt(x.var((0, 2), keepdims=True) + 1e-3)
    np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-5)
    check_layer_grads(BatchNormalization(axis=1, dtype="float64"), [x.astype(np.float64)],
                      {"training": True})


def test_layer_norm_matches_numpy():
    x = _x(2, 3, 4, loc=1.0)
    run_layer_test(LayerNormalization, {}, x, (2, 3, 4), [(4,), (4,)], grad_order=2)
    ln = LayerNormalization(axis=(1, 2), epsilon=1e-5)
    y = ln(x).numpy()
    assert ln.gamma.shape == (3, 4)
    ref = (x - x.mean((1, 2), keepdims=True)) / np.sqrt(x.var((1, 2), keepdims=True) + 1e-5)
    np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError, match=r"axis 3 is out of range.*\(2, 3, 4\)"):
        LayerNormalization(axis=3)(x)


def test_add_and_concatenate():
    a, b, c = _x(2, 3), _x(2, 3, seed=1), _x(2, 5, seed=2)
    np.testing.assert_allclose(Add()([a, b, a]).numpy(), a + b + a, rtol=1e-6)
    np.testing.assert_array_equal(Concatenate()([a, c]).numpy(), np.concatenate([a, c], -1))
    np.testing.assert_array_equal(Concatenate(axis=0)([a, b]).numpy(), np.concatenate([a, b]))
    with pytest.raises(ValueError, match=r"Add 'add_x'.*same shape.*\(2, 3\), \(2, 5\)"):
        Add(name="add_x")([a, c])
    with pytest.raises(ValueError, match=r"Concatenate.*axis 0.*\(2, 3\), \(2, 5\)"):
        Concatenate(axis=0)([a, c])
    # Keras 3: a one-tensor list is allowed (the tensor itself); a bare tensor is not
    np.testing.assert_array_equal(Add()([a]).numpy(), a)
    with pytest.raises(ValueError, match="must be called on a list"):
        Add()(a)
    assert Concatenate(axis=1).get_config()["axis"] == 1
