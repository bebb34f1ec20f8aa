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
