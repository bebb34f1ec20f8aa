"""Audit regressions for the eager core, ops, lk.nn and lk.random (API.md section 1).

Each test failed before its fix: TF's gradient conventions at kinks, Python-scalar
dtypes, error messages that name the op, Tensor/Variable/constant edge cases, seeds.
"""
import numpy as np
import pytest

import layerkit as lk
from layerkit.autodiff.check import check_grads

from .test_reduce import _grad  # float64 tape gradient of f at x


def test_relu6_gradient_is_zero_at_both_kinks_like_tf():
    np.testing.assert_array_equal(_grad(lk.nn.relu6, [-1.0, 0.0, 3.0, 6.0, 7.0]),
                                  [0.0, 0.0, 1.0, 0.0, 0.0])
    check_grads(lk.nn.relu6, [np.array([-1.5, 0.5, 3.0, 5.5, 7.5])])


def test_selu_gradient_at_zero_is_scale_like_tf():
    scale = 1.0507009873554804934193349852946
    np.testing.assert_allclose(_grad(lk.nn.selu, [0.0]), [scale])
    np.testing.assert_allclose(lk.nn.selu([0.0, 1.0]).numpy(), [0.0, scale], rtol=1e-6)
    check_grads(lk.nn.selu, [np.array([-1.5, -0.2, 0.3, 2.0])])


def test_ops_on_python_scalars_only_give_float32_when_a_float_is_involved():
    assert lk.add(1, 2.0).dtype == np.float32
    np.testing.assert_allclose(lk.pow(2, 0.5).numpy(), np.sqrt(2.0), rtol=1e-6)
    assert lk.pow(2, 0.5).dtype == np.float32
    assert lk.add(1, 2).dtype == np.int32  # Python ints are int32, as in TensorFlow
    assert lk.add(2 ** 31, 1).dtype == np.int64  # ... unless they do not fit
    assert (lk.constant([1.0]) + 1.5).dtype == np.float32


def test_bare_numpy_errors_name_the_op():
    with pytest.raises(ValueError, match=r"^pow: .*negative integer powers"):
        lk.pow(lk.constant([2]), -1)
    with pytest.raises(TypeError, match=r"^add: .*float32, str"):
        lk.add(lk.constant([1.0]), "a")


def test_tensor_constructor_converts_lists_with_the_constant_rules():
    t = lk.Tensor([1.0, 2.0])
    assert t.shape == (2,) and t.dtype == np.float32
    np.testing.assert_array_equal((t + 1).numpy(), [2.0, 3.0])


def test_format_spec_on_one_element_tensors():
    assert f"{lk.constant([[2.5]]):.2f}" == "2.50"
    assert f"{lk.Variable(1.25):.1f}" == "1.2"
    assert f"{lk.constant(1.0)}" == str(lk.constant(1.0))


def test_variable_refuses_a_truncating_float_to_int_assign():
    v = lk.Variable([1, 2], name="counts")
    for method in (v.assign, v.assign_add, v.assign_sub):
        with pytest.raises(TypeError, match=r"'counts'.*float32.*int32"):
            method([1.5, 2.5])
    np.testing.assert_array_equal(v.numpy(), [1, 2])
    v.assign([3, 4])  # ints still fine; floats into float variables too
    np.testing.assert_array_equal(v.numpy(), [3, 4])
    assert lk.Variable([1.0]).assign(np.array([2.0])).dtype == np.float32


def test_constant_shape_argument_like_tf():
    np.testing.assert_array_equal(lk.constant(7.0, shape=[2, 2]).numpy(), np.full((2, 2), 7.0))
    np.testing.assert_array_equal(lk.constant([1, 2, 3, 4], shape=(2, 2)).numpy(),
                                  [[1, 2], [3, 4]])
    with pytest.raises(ValueError, match=r"constant: .*\(3,\).*\(2, 2\)"):
        lk.constant([1, 2, 3], shape=[2, 2])


def test_negative_seeds_are_valid_and_reproducible():
    a = lk.random.normal([3], seed=-1).numpy()
    np.testing.assert_array_equal(a, lk.random.normal([3], seed=-1).numpy())
    assert not np.array_equal(a, lk.random.normal([3], seed=1).numpy())
    np.testing.assert_array_equal(lk.random.Generator(-7).uniform([2]).numpy(),
                                  lk.random.Generator(-7).uniform([2]).numpy())
    lk.random.set_seed(-3)
    b = lk.random.normal([2]).numpy()
    lk.random.set_seed(-3)
    np.testing.assert_array_equal(b, lk.random.normal([2]).numpy())


def test_set_seed_none_reseeds_and_bad_seeds_name_the_function():
    lk.random.set_seed(None)
    assert lk.random.normal([2]).shape == (2,)
    with pytest.raises(TypeError, match=r"lk\.random\.set_seed: seed must be an int"):
        lk.random.set_seed("a")
    with pytest.raises(TypeError, match=r"lk\.random\.Generator: seed must be an int"):
        lk.random.Generator(1.5)


def test_where_with_an_int_and_a_float_scalar_is_float32():
    np.testing.assert_array_equal(lk.where([True, False], 1, 2.5).numpy(), [1.0, 2.5])
    assert lk.where([True, False], 1, 2.5).dtype == np.float32
    assert lk.where([True, False], 1, 2).dtype == np.int32
