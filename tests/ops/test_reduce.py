"""Reductions, scans and arg-extrema: forward values vs NumPy, errors, gradients."""
import numpy as np
import pytest

import layerkit as lk

RNG = np.random.default_rng(7)
AXES = [None, 0, 1, -1, (0, 2), [-1, 0], (), (0, 1, 2)]
X3 = RNG.standard_normal((2, 3, 4))


def _np_axis(axis):
    return tuple(axis) if isinstance(axis, list) else axis


# ---- forward vs NumPy -----------------------------------------------------------------
@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("axis", AXES)
@pytest.mark.parametrize("name,ref", [
    ("reduce_sum", np.sum), ("reduce_mean", np.mean), ("reduce_max", np.max),
    ("reduce_min", np.min), ("reduce_prod", np.prod), ("reduce_variance", np.var),
    ("reduce_std", np.std),
])
def test_float_reductions_match_numpy(name, ref, axis, keepdims):
    got = getattr(lk, name)(X3, axis=axis, keepdims=keepdims)
    want = ref(X3, axis=_np_axis(axis), keepdims=keepdims)
    assert got.shape == np.shape(want)
    assert got.dtype == np.float64
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("axis", [None, 1, (0, -1)])
def test_logsumexp_matches_naive_and_is_stable(axis, keepdims):
    want = np.log(np.sum(np.exp(X3), axis=axis, keepdims=keepdims))
    got = lk.reduce_logsumexp(X3, axis=axis, keepdims=keepdims)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12)
    big = X3 * 1000.0
    got = lk.reduce_logsumexp(big, axis=axis, keepdims=keepdims).numpy()
    m = np.max(big, axis=axis, keepdims=True)
    want = np.log(np.sum(np.exp(big - m), axis=axis, keepdims=True)) + m
    want = want if keepdims else np.squeeze(want, axis=axis)
    assert np.all(np.isfinite(got))
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_logsumexp_all_minus_inf_and_float32():
    x = np.array([[-np.inf, -np.inf], [0.0, np.log(3.0)]], np.float32)
    got = lk.reduce_logsumexp(x, axis=1)
    assert got.dtype == np.float32
    assert got.numpy()[0] == -np.inf
    np.testing.assert_allclose(got.numpy()[1], np.log(4.0), rtol=1e-6)


def test_float32_stays_float32():
    x = X3.astype(np.float32)
    for f in (lk.reduce_sum, lk.reduce_mean, lk.reduce_max, lk.reduce_prod, lk.reduce_std,
              lk.reduce_logsumexp, lk.cumsum, lk.cumprod):
        assert f(x).dtype == np.float32, f.__name__


def test_python_lists_default_to_float32():
    assert lk.reduce_sum([1.0, 2.0]).dtype == np.float32
    assert lk.reduce_mean([[1.0, 2.0]], axis=1).numpy().tolist() == [1.5]


def test_integer_reductions_keep_dtype():
    x = np.array([[1, -2, 7], [4, 5, -6]], np.int32)
    assert lk.reduce_sum(x).dtype == np.int32
    assert int(lk.reduce_sum(x)) == 9
    assert lk.reduce_sum(x, axis=0).numpy().tolist() == [5, 3, 1]
    assert lk.reduce_prod(x, axis=1).numpy().tolist() == [-14, -120]
    assert lk.reduce_max(x, axis=1).numpy().tolist() == [7, 5]
    # TF: integer mean truncates toward zero in the input dtype.
    m = lk.reduce_mean(x, axis=1)
    assert m.dtype == np.int32 and m.numpy().tolist() == [2, 1]
    assert lk.reduce_mean(np.array([-3, -4]), axis=0).numpy() == -3
    # Variance is float-only math (TF raises a TypeError for integer input).
    for fn in (lk.reduce_variance, lk.reduce_std, lk.reduce_logsumexp):
        with pytest.raises(TypeError, match=rf"^{fn.__name__}: .*dtype int32"):
            fn(x)
    v = lk.reduce_variance(lk.cast(x, "float32"))
    assert v.dtype == np.float32
    np.testing.assert_allclose(v.numpy(), np.var(x), rtol=1e-6)


def test_reduce_mean_of_bool_is_float32():
    m = lk.reduce_mean(np.array([True, False, True, True]))
    assert m.dtype == np.float32 and float(m) == 0.75


@pytest.mark.parametrize("axis", [None, 0, -1, (0, 1)])
def test_reduce_all_any(axis):
    b = RNG.standard_normal((3, 4)) > 0
    b[0] = True
    np.testing.assert_array_equal(lk.reduce_all(b, axis=axis).numpy(), np.all(b, axis=axis))
    np.testing.assert_array_equal(lk.reduce_any(b, axis=axis, keepdims=True).numpy(),
                                  np.any(b, axis=axis, keepdims=True))
    assert lk.reduce_any(np.array([0.0, 2.0])).dtype == np.bool_


def test_argmax_argmin_follow_tf():
    x = RNG.standard_normal((3, 5))
    a = lk.argmax(x)  # TF: axis=None means 0
    assert a.dtype == np.int64
    np.testing.assert_array_equal(a.numpy(), np.argmax(x, axis=0))
    np.testing.assert_array_equal(lk.argmax(x, axis=-1).numpy(), np.argmax(x, axis=1))
    np.testing.assert_array_equal(lk.argmin(x, axis=1).numpy(), np.argmin(x, axis=1))
    assert lk.argmin(x, 0, output_type=np.int32).dtype == np.int32
    assert int(lk.argmax([1, 3, 3, 0])) == 1  # first of tied maxima


def test_argmax_has_no_gradient():
    x = lk.constant([1.0, 3.0])
    with lk.GradientTape() as t:
        t.watch(x)
        y = lk.cast(lk.argmax(x), "float32") + lk.reduce_sum(x)
    np.testing.assert_allclose(t.gradient(y, x).numpy(), [1.0, 1.0])


@pytest.mark.parametrize("exclusive", [False, True])
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_cumsum_cumprod_match_numpy(axis, exclusive, reverse):
    x = RNG.standard_normal((3, 4))

    def ref(fn, identity):
        a = np.flip(x, axis) if reverse else x
        y = fn(a, axis=axis)
        if exclusive:
            y = np.moveaxis(y, axis, 0)
            y = np.concatenate([np.full((1,) + y.shape[1:], identity), y[:-1]])
            y = np.moveaxis(y, 0, axis)
        return np.flip(y, axis) if reverse else y

    np.testing.assert_allclose(lk.cumsum(x, axis, exclusive, reverse).numpy(),
                               ref(np.cumsum, 0.0), rtol=1e-12)
    np.testing.assert_allclose(lk.cumprod(x, axis, exclusive, reverse).numpy(),
                               ref(np.cumprod, 1.0), rtol=1e-12)


def test_cumsum_int_keeps_dtype():
    y = lk.cumsum(np.array([1, 2, 3], np.int32), exclusive=True)
    assert y.dtype == np.int32 and y.numpy().tolist() == [0, 1, 3]


# ---- errors -----------------------------------------------------------------------------
@pytest.mark.parametrize("fn", [lk.reduce_sum, lk.reduce_mean, lk.reduce_max, lk.reduce_min,
                                lk.reduce_prod, lk.reduce_logsumexp, lk.reduce_variance,
                                lk.reduce_all, lk.reduce_any])
def test_axis_out_of_range_names_op_axis_and_rank(fn):
    with pytest.raises(ValueError, match=rf"{fn.__name__}: axis 2 .* rank 2"):
        fn(np.ones((2, 3)), axis=2)
    with pytest.raises(ValueError, match=r"axis -3 .* rank 2"):
        fn(np.ones((2, 3)), axis=(0, -3))
    # A repeated axis is reduced once, as in TensorFlow (NumPy refuses it).
    np.testing.assert_array_equal(fn(np.ones((2, 3)), axis=(1, -1)).numpy(),
                                  fn(np.ones((2, 3)), axis=1).numpy())


def test_scalar_has_no_axes():
    with pytest.raises(ValueError, match="rank 0"):
        lk.reduce_sum(3.0, axis=0)
    assert float(lk.reduce_sum(3.0)) == 3.0


@pytest.mark.parametrize("fn", [lk.reduce_max, lk.reduce_min, lk.reduce_logsumexp,
                                lk.argmax, lk.argmin])
def test_empty_reduction_without_identity_raises(fn):
    with pytest.raises(ValueError, match=rf"{fn.__name__}: .*empty axis.*\(0, 3\)"):
        fn(np.ones((0, 3)), axis=0)
    assert fn(np.ones((0, 3)), axis=1).shape == (0,)


def test_empty_sum_is_zero():
    assert lk.reduce_sum(np.ones((0, 3)), axis=0).numpy().tolist() == [0, 0, 0]


def test_scan_axis_must_be_single():
    with pytest.raises(ValueError, match="cumsum: axis 3"):
        lk.cumsum(np.ones((2, 2)), axis=3)
    with pytest.raises(ValueError, match="single int"):
        lk.cumprod(np.ones((2, 2)), axis=(0, 1))


# ---- gradients ------------------------------------------------------------------------
def _grad(f, x):
    x = lk.constant(np.asarray(x, np.float64))
    with lk.GradientTape() as t:
        t.watch(x)
        y = f(x)
    return t.gradient(y, x).numpy()


def test_max_gradient_splits_ties_equally():
    g = _grad(lambda x: lk.reduce_max(x, axis=1), [[1.0, 3.0, 3.0], [2.0, 0.0, 1.0]])
    np.testing.assert_allclose(g, [[0, 0.5, 0.5], [1, 0, 0]])
    g = _grad(lambda x: lk.reduce_min(x), [2.0, 1.0, 1.0, 1.0])
    np.testing.assert_allclose(g, [0, 1 / 3, 1 / 3, 1 / 3])


def test_prod_gradient_exact_with_zeros():
    g = _grad(lambda x: lk.reduce_prod(x, axis=1),
              [[2.0, 0.0, 3.0], [0.0, 0.0, 5.0], [1.0, 2.0, 4.0]])
    np.testing.assert_allclose(g, [[0, 6, 0], [0, 0, 0], [8, 4, 2]])
    g = _grad(lambda x: lk.reduce_prod(x, axis=(0, 2)), np.array([[[0.0, 2.0]], [[3.0, 4.0]]]))
    np.testing.assert_allclose(g, [[[24, 0]], [[0, 0]]])


def test_logsumexp_gradient_is_softmax_even_for_large_inputs():
    x = np.array([1000.0, 1001.0, 999.0])
    g = _grad(lambda x: lk.reduce_logsumexp(x), x)
    e = np.exp(x - x.max())
    np.testing.assert_allclose(g, e / e.sum(), rtol=1e-12)


def test_reduce_gradient_float32():
    x = lk.constant(np.ones((2, 3), np.float32))
    with lk.GradientTape() as t:
        t.watch(x)
        y = lk.reduce_mean(x, axis=0)
    g = t.gradient(y, x)
    assert g.dtype == np.float32
    np.testing.assert_allclose(g.numpy(), np.full((2, 3), 0.5))
