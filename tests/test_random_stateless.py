"""lk.random.stateless_*: values that depend on the seed pair alone (TF's contract)."""
import numpy as np
import pytest

import layerkit as lk

R = lk.random


@pytest.mark.parametrize("draw", [
    lambda seed: R.stateless_normal([500], seed=seed, mean=1.0, stddev=2.0),
    lambda seed: R.stateless_uniform([500], seed=seed, minval=-1.0, maxval=3.0),
    lambda seed: R.stateless_truncated_normal([500], seed=seed),
    lambda seed: R.stateless_uniform([500], seed=seed, minval=0, maxval=7, dtype=lk.int32),
    lambda seed: R.stateless_categorical(lk.zeros((2, 4)), 50, seed=seed),
])
def test_same_seed_same_values_everywhere_and_other_seeds_differ(draw):
    a = draw([3, 4]).numpy()
    np.testing.assert_array_equal(draw([3, 4]), a)
    np.testing.assert_array_equal(draw(np.array([3, 4])), a)
    np.testing.assert_array_equal(draw(lk.constant([3, 4])), a)
    f = lk.function(lambda: draw([3, 4]))
    np.testing.assert_array_equal(f(), a)
    np.testing.assert_array_equal(f(), a)  # a graph call repeats the values too
    assert not np.array_equal(draw([3, 5]), a)
    assert not np.array_equal(draw([4, 4]), a)
    R.set_seed(123)  # the global seed plays no part
    np.testing.assert_array_equal(draw([3, 4]), a)


def test_distributions_have_the_requested_moments_and_ranges():
    n = R.stateless_normal([20000], seed=[1, 2], mean=1.0, stddev=2.0).numpy()
    assert abs(n.mean() - 1.0) < 0.05 and abs(n.std() - 2.0) < 0.05
    u = R.stateless_uniform([20000], seed=[1, 2], minval=-1.0, maxval=3.0).numpy()
    assert u.min() >= -1.0 and u.max() < 3.0 and abs(u.mean() - 1.0) < 0.05
    t = R.stateless_truncated_normal([20000], seed=[1, 2]).numpy()
    assert np.abs(t).max() <= 2.0
    i = R.stateless_uniform([20000], seed=[1, 2], minval=2, maxval=5, dtype=lk.int64).numpy()
    assert i.dtype == np.int64 and set(np.unique(i)) == {2, 3, 4}


def test_split_and_fold_in_derive_distinct_reproducible_seeds():
    s = R.split([1, 2], num=3).numpy()
    assert s.shape == (3, 2) and len({tuple(r) for r in s}) == 3
    np.testing.assert_array_equal(R.split([1, 2], num=3), s)
    f1, f2 = R.fold_in([1, 2], 1).numpy(), R.fold_in([1, 2], 2).numpy()
    assert f1.shape == (2,) and not np.array_equal(f1, f2)
    assert R.experimental.stateless_split is R.split
    a, b = R.stateless_normal([4], seed=s[0]), R.stateless_normal([4], seed=s[1])
    assert not np.array_equal(a, b)


def test_bad_seeds_are_refused_with_the_op_name():
    with pytest.raises(ValueError, match="stateless_normal: seed must be a shape"):
        R.stateless_normal([2], seed=3)
    with pytest.raises(ValueError, match="stateless_uniform"):
        R.stateless_uniform([2], seed=[1.5, 2.0])
    f = lk.function(lambda s: R.stateless_normal([2], seed=s))
    with pytest.raises(TypeError, match="must be known when the function is traced"):
        f(lk.constant([1, 2]))


def test_global_generator_get_and_set():
    g = R.Generator.from_seed(5)
    R.set_global_generator(g)
    assert R.get_global_generator() is g
    a = R.normal([3]).numpy()
    R.set_global_generator(R.Generator.from_seed(5))
    np.testing.assert_array_equal(R.normal([3]), a)
    with pytest.raises(TypeError, match="set_global_generator"):
        R.set_global_generator(5)
    R.set_seed(0)


def test_generator_split_make_seeds_full_int_and_entropy():
    g = R.Generator.from_seed(3)
    kids = g.split(3)
    draws = [k.normal([4]).numpy() for k in kids]
    assert not np.array_equal(draws[0], draws[1])
    again = [k.normal([4]).numpy() for k in R.Generator.from_seed(3).split(3)]
    np.testing.assert_array_equal(draws, again)
    seeds = g.make_seeds(2)
    assert seeds.shape == (2, 2) and seeds.dtype == np.int64
    R.stateless_uniform([2], seed=seeds[:, 0])
    full = g.uniform_full_int([1000], lk.int8).numpy()
    assert full.dtype == np.int8 and full.min() < -100 and full.max() > 100
    a = R.Generator.from_non_deterministic_state().normal([4]).numpy()
    b = R.Generator.from_non_deterministic_state().normal([4]).numpy()
    assert not np.array_equal(a, b)


def test_gamma_and_poisson_shapes_moments_and_graph_redraws():
    g = R.gamma([20000], alpha=[1.0, 4.0], beta=2.0, seed=1).numpy()
    assert g.shape == (20000, 2) and g.dtype == np.float32 and g.min() > 0
    np.testing.assert_allclose(g.mean(0), [0.5, 2.0], rtol=0.05)
    np.testing.assert_allclose(g.var(0), [0.25, 1.0], rtol=0.08)
    p = R.poisson([20000], [1.0, 6.0], seed=1).numpy()
    assert p.shape == (20000, 2) and np.all(p == np.round(p))
    np.testing.assert_allclose(p.mean(0), [1.0, 6.0], rtol=0.05)
    assert R.poisson([3], 2.0, dtype=lk.int64).dtype == np.int64
    np.testing.assert_array_equal(R.gamma([3], 2.0, seed=4), R.gamma([3], 2.0, seed=4))
    f = lk.function(lambda: R.poisson([50], 5.0))
    assert not np.array_equal(f(), f())
