"""Initializers (Keras formulas, names, seeding) and regularizers."""
import numpy as np
import pytest

import layerkit as lk
import layerkit.random  # noqa: F401
from layerkit import initializers as I
from layerkit import regularizers as R


@pytest.mark.parametrize("name,std", [
    ("glorot_uniform", np.sqrt(2 / (200 + 100))),
    ("glorot_normal", np.sqrt(2 / (200 + 100))),
    ("he_normal", np.sqrt(2 / 200)),
    ("he_uniform", np.sqrt(2 / 200)),
    ("lecun_normal", np.sqrt(1 / 200)),
])
def test_variance_scaling_family_statistics(name, std):
    w = I.get(name)((200, 100))
    assert w.dtype == np.float32 and w.shape == (200, 100)
    assert abs(w.std() - std) / std < 0.03 and abs(w.mean()) < 0.01
    if "uniform" in name:
        assert np.abs(w).max() <= np.sqrt(3) * std + 1e-7
    else:  # truncated at two (pre-correction) standard deviations
        assert np.abs(w).max() <= 2 * std / 0.87962566103423978 + 1e-7


def test_conv_kernel_fans_include_receptive_field():
    assert I.compute_fans((3, 3, 4, 8)) == (36.0, 72.0)
    assert I.compute_fans((5,)) == (5.0, 5.0)
    w = I.HeUniform(seed=0)((3, 3, 16, 32))
    assert np.abs(w).max() <= np.sqrt(6 / (9 * 16))


def test_simple_initializers():
    np.testing.assert_array_equal(I.zeros()((2, 2)), np.zeros((2, 2)))
    np.testing.assert_array_equal(I.ones()((3,), dtype="float64"), np.ones(3))
    assert I.ones()((3,), dtype="float64").dtype == np.float64
    np.testing.assert_array_equal(I.constant(2.5)((2,)), [2.5, 2.5])
    u = I.random_uniform(-1.0, 1.0, seed=3)((1000,))
    assert -1 <= u.min() and u.max() < 1 and abs(u.mean()) < 0.1
    n = I.random_normal(1.0, 0.1, seed=3)((2000,))
    assert abs(n.mean() - 1.0) < 0.01 and abs(n.std() - 0.1) < 0.01


def test_orthogonal():
    w = I.orthogonal(gain=2.0, seed=0)((4, 6))
    np.testing.assert_allclose(w @ w.T, 4 * np.eye(4), atol=1e-5)
    w = I.Orthogonal(seed=1)((6, 3))
    np.testing.assert_allclose(w.T @ w, np.eye(3), atol=1e-5)
    with pytest.raises(ValueError, match="rank >= 2"):
        I.Orthogonal()((3,))


def test_seeding_semantics():
    a = I.GlorotUniform(seed=4)
    np.testing.assert_array_equal(a((3, 3)), a((3, 3)))  # int seed: same values each call
    b = I.GlorotUniform()
    assert not np.array_equal(b((3, 3)), b((3, 3)))  # seedless: fresh draws
    lk.random.set_seed(11)
    first = I.GlorotUniform()((3, 3))
    lk.random.set_seed(11)
    np.testing.assert_array_equal(I.GlorotUniform()((3, 3)), first)


def test_names_config_and_errors():
    assert isinstance(I.get("uniform"), I.RandomUniform)
    assert I.glorot_uniform is I.GlorotUniform
    init = I.VarianceScaling(2.0, "fan_out", "uniform", seed=7)
    clone = I.get(I.serialize(init))
    np.testing.assert_array_equal(clone((4, 5)), init((4, 5)))
    with pytest.raises(ValueError, match=r"unknown initializer 'glorot'.*glorot_uniform"):
        I.get("glorot")
    with pytest.raises(ValueError, match="mode"):
        I.VarianceScaling(mode="fan_sum")


def test_regularizers():
    x = lk.constant([1.0, -2.0])
    np.testing.assert_allclose(float(R.L1(0.5)(x)), 1.5)
    np.testing.assert_allclose(float(R.L2()(x)), 0.05)
    np.testing.assert_allclose(float(R.L1L2(1.0, 1.0)(x)), 8.0)
    assert isinstance(R.get("l2"), R.L2) and R.get(None) is None
    assert R.get(R.serialize(R.L1L2(0.1, 0.2))).get_config() == {"l1": 0.1, "l2": 0.2}
    with pytest.raises(ValueError, match="unknown regularizer 'l3'"):
        R.get("l3")
