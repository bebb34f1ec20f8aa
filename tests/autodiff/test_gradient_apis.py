"""Audit regressions for GradientTape, jacobians and gradients_function (API.md section 2)."""
import numpy as np
import pytest

import layerkit as lk


def test_variable_value_snapshot_carries_the_gradient():
    v = lk.Variable([1.0, 2.0])
    with lk.GradientTape() as t:
        y = v.value() * v.read_value()
    np.testing.assert_allclose(t.gradient(y, v).numpy(), [2.0, 4.0])
    w = lk.Variable([1.0], trainable=False)
    with lk.GradientTape() as t:
        y = w.value() * 2.0
    assert t.gradient(y, w) is None  # not watched: unconnected, as before


def test_jacobian_of_an_unwatched_source_is_unconnected():
    x, z = lk.constant([1.0, 2.0]), lk.constant([3.0, 4.0])
    with lk.GradientTape(persistent=True) as t:
        t.watch(x)
        y = x * z
    assert t.gradient(y, z) is None
    assert t.jacobian(y, z) is None
    np.testing.assert_array_equal(t.jacobian(y, z, unconnected_gradients="zero").numpy(),
                                  np.zeros((2, 2)))
    np.testing.assert_array_equal(t.jacobian(y, x).numpy(), np.diag([3.0, 4.0]))


def test_jacobian_of_an_empty_target_is_an_empty_array():
    x = lk.constant([1.0, 2.0])
    with lk.GradientTape() as t:
        t.watch(x)
        y = x[:0] * 2.0
    j = t.jacobian(y, x)
    assert j is not None and j.shape == (0, 2)


def test_jacobian_nested_sources_tf_keywords_and_argument_checks():
    x = lk.constant([1.0, 2.0])
    with lk.GradientTape(persistent=True) as t:
        t.watch(x)
        y = x * x
    j = t.jacobian(y, {"a": x, "b": [x]}, experimental_use_pfor=False,
                   parallel_iterations=4)
    np.testing.assert_array_equal(j["a"].numpy(), np.diag([2.0, 4.0]))
    np.testing.assert_array_equal(j["b"][0].numpy(), np.diag([2.0, 4.0]))
    with pytest.raises(ValueError, match="jacobian: unconnected_gradients"):
        t.jacobian(y, x, unconnected_gradients="zeros")
    xb = lk.constant([[1.0, 2.0], [3.0, 4.0]])
    with lk.GradientTape() as t:
        t.watch(xb)
        yb = xb * xb
    bj = t.batch_jacobian(yb, [xb], experimental_use_pfor=False)
    np.testing.assert_array_equal(bj[0].numpy(), [np.diag([2.0, 4.0]), np.diag([6.0, 8.0])])


def test_output_gradients_may_hold_none_entries():
    x = lk.constant([1.0, 2.0])
    with lk.GradientTape() as t:
        t.watch(x)
        y, z = x * 2.0, x * 3.0
    g = t.gradient([y, z], x, output_gradients=[lk.constant([10.0, 1.0]), None])
    np.testing.assert_array_equal(g.numpy(), [23.0, 5.0])


def test_a_none_target_gets_a_tape_error():
    with pytest.raises(TypeError, match="GradientTape.gradient: target .* received None"):
        lk.gradients_function(lambda x: None)(2.0)


def test_gradients_function_passes_keywords_through_and_takes_an_int_param():
    f = lambda x, y, scale=1.0: x * y * scale  # noqa: E731
    g = lk.gradients_function(f)(2.0, 3.0, scale=10.0)
    np.testing.assert_allclose([t.numpy() for t in g], [30.0, 20.0])
    np.testing.assert_allclose(lk.gradients_function(f, params=1)(2.0, 3.0)[0].numpy(), 2.0)
    with pytest.raises(TypeError, match="gradients_function: params"):
        lk.gradients_function(f, params="x")


def test_custom_gradient_list_argument_is_a_structure_of_inputs():
    @lk.custom_gradient
    def prod(xs):
        def grad_fn(dy):
            return [dy * xs[1] * 10.0, dy * xs[0] * 10.0]
        return xs[0] * xs[1], grad_fn

    a, b = lk.constant(2.0), lk.constant(3.0)
    with lk.GradientTape() as t:
        t.watch([a, b])
        y = prod([a, b])
    assert float(y) == 6.0
    np.testing.assert_allclose([g.numpy() for g in t.gradient(y, [a, b])], [30.0, 20.0])
    # Python numbers inside the structure become constant inputs.
    assert lk.gradients_function(lambda x: prod([x, 4.0]))(1.0)[0].numpy() == 40.0
