"""lk.map_fn / scan / foldl / foldr / vectorized_map against Python loops in NumPy, with
gradients (finite differences), nested structures and lk.function."""
import numpy as np
import pytest

import layerkit as lk
from layerkit.autodiff.check import check_grads

rng = np.random.default_rng(0)
A = rng.normal(size=(4, 3))


def test_map_fn_matches_a_loop_and_keeps_structure():
    np.testing.assert_allclose(lk.map_fn(lambda r: lk.reduce_sum(r * r), lk.constant(A)),
                               (A * A).sum(1), rtol=1e-6)
    out = lk.map_fn(lambda e: {"s": e[0] + e[1], "d": e[0] - e[1]},
                    (lk.constant(A), lk.constant(2 * A)))
    np.testing.assert_allclose(out["s"], 3 * A, rtol=1e-6)
    np.testing.assert_allclose(out["d"], -A, rtol=1e-6)
    ints = lk.map_fn(lambda r: r * 2.0, lk.constant(A), fn_output_signature=lk.int32)
    assert ints.dtype == np.int32
    np.testing.assert_array_equal(ints, (A * 2.0).astype(np.int32))
    assert lk.vectorized_map(lambda r: r + 1.0, lk.constant(A)).shape == (4, 3)


def test_scan_and_folds_match_loops():
    x = np.array([1.0, 2.0, 3.0, 4.0])
    np.testing.assert_allclose(lk.scan(lambda a, e: a * e, lk.constant(x)), np.cumprod(x))
    np.testing.assert_allclose(lk.scan(lambda a, e: a + e, lk.constant(x), initializer=10.0),
                               10 + np.cumsum(x))
    rev = lk.scan(lambda a, e: a + e, lk.constant(x), reverse=True)
    np.testing.assert_allclose(rev, np.cumsum(x[::-1])[::-1])
    assert float(lk.foldl(lambda a, e: a - e, lk.constant(x))) == 1 - 2 - 3 - 4
    assert float(lk.foldr(lambda a, e: a - e, lk.constant(x))) == 4 - 3 - 2 - 1
    assert float(lk.foldl(lambda a, e: a + e, lk.constant(x), initializer=5.0)) == 15.0
    pair = lk.scan(lambda acc, e: (acc[0] + e, acc[1] * e), lk.constant(x),
                   initializer=(lk.constant(0.0, lk.float64), lk.constant(1.0, lk.float64)))
    np.testing.assert_allclose(pair[0], np.cumsum(x))
    np.testing.assert_allclose(pair[1], np.cumprod(x))


def test_gradients_flow_through_every_step():
    check_grads(lambda a: lk.reduce_sum(lk.map_fn(lambda r: lk.tanh(r) * r, a)), [A])
    check_grads(lambda a: lk.reduce_sum(lk.scan(lambda acc, r: acc * 0.5 + lk.sin(r), a)), [A])
    check_grads(lambda a: lk.reduce_sum(lk.foldl(lambda acc, r: acc * r, a)), [A])


def test_inside_lk_function_one_trace():
    f = lk.function(lambda t: lk.scan(lambda a, e: a + e * e, t))
    for _ in range(3):
        x = rng.normal(size=(5,)).astype(np.float32)
        want = np.cumsum(np.concatenate([x[:1], x[1:] * x[1:]]))  # elems[0] starts it
        np.testing.assert_allclose(f(lk.constant(x)), want, rtol=1e-5)
    assert f.trace_count == 1


def test_errors():
    with pytest.raises(ValueError, match="same first dimension"):
        lk.map_fn(lambda e: e[0], (lk.ones(3), lk.ones(4)))
    with pytest.raises(ValueError, match="first axis"):
        lk.map_fn(lambda e: e, lk.constant(1.0))
    with pytest.raises(ValueError, match="empty"):
        lk.map_fn(lambda e: e, lk.zeros((0, 2)))
    with pytest.raises(ValueError, match="no initializer"):
        lk.foldl(lambda a, e: a, lk.zeros((0,)))
    with pytest.raises(ValueError, match="same structure"):
        lk.map_fn(lambda e: (e,) if float(lk.reduce_sum(e)) > 0 else (e, e),
                  lk.constant([[1.0], [-1.0]]))
