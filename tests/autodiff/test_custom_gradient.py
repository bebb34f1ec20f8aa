import numpy as np
import pytest

import layerkit as lk


def log1pexp_plain(x):
    return lk.log(1 + lk.exp(x))


@lk.custom_gradient
def log1pexp(x):
    e = lk.exp(x)

    def grad(dy):
        return dy * (1 - 1 / (1 + e))

    return lk.log(1 + e), grad


def test_log1pexp_seed_example():
    with np.errstate(over="ignore", invalid="ignore"):
        plain = lk.gradients_function(log1pexp_plain)(100.0)[0]
    assert np.isnan(float(plain))
    assert float(lk.gradients_function(log1pexp)(100.0)[0]) == 1.0


def test_custom_gradient_higher_order():
    d2 = lk.gradients_function(lambda x: lk.gradients_function(log1pexp)(x)[0])
    assert float(d2(0.0)[0]) == pytest.approx(0.25)  # sigmoid'(0)
    d3 = lk.gradients_function(lambda x: d2(x)[0])
    s = 1 / (1 + np.exp(-1.0))
    assert float(d3(1.0)[0]) == pytest.approx(s * (1 - s) * (1 - 2 * s), rel=1e-5)


def test_custom_gradient_is_used_instead_of_the_forward_ops():
    @lk.custom_gradient
    def clip_grad(x):
        return x * 1.0, lambda dy: dy * 0.0 + 7.0

    g = lk.gradients_function(clip_grad)(lk.constant([1.0, 2.0]))[0]
    np.testing.assert_allclose(g.numpy(), [7.0, 7.0])


def test_custom_gradient_multiple_inputs_and_outputs():
    @lk.custom_gradient
    def f(a, b):
        def grad(da, db):
            return da * 2.0 + db, da * 3.0
        return (a * 2.0, b * 3.0 + a), grad

    a, b = lk.constant(1.0), lk.constant(1.0)
    with lk.GradientTape() as tape:
        tape.watch([a, b])
        y1, y2 = f(a, b)
        loss = y1 + y2 * 10.0
    ga, gb = tape.gradient(loss, [a, b])
    assert float(ga) == 12.0  # da=1, db=10 -> 2 + 10
    assert float(gb) == 3.0


def test_custom_gradient_with_variables():
    w = lk.Variable(3.0, name="w")

    @lk.custom_gradient
    def scale(x):
        def grad(dy, variables=None):
            assert variables == [w]
            return dy * w, [dy * x * 100.0]
        return x * w, grad

    x = lk.constant(2.0)
    with lk.GradientTape() as tape:
        tape.watch(x)
        y = scale(x)
    gx, gw = tape.gradient(y, [x, w])
    assert float(gx) == 3.0 and float(gw) == 200.0


def test_grad_fn_without_variables_argument_raises():
    w = lk.Variable(3.0, name="w_needed")

    @lk.custom_gradient
    def bad(x):
        return x * w, lambda dy: dy

    with lk.GradientTape():
        with pytest.raises(TypeError, match="w_needed"):
            bad(lk.constant(1.0))


def test_wrong_number_of_gradients_names_function():
    @lk.custom_gradient
    def two_in(a, b):
        return a * b, lambda dy: dy  # should return two gradients

    with pytest.raises(ValueError, match="two_in.*returned 1.*expected 2"):
        lk.gradients_function(two_in)(1.0, 2.0)


def test_wrong_gradient_shape_names_function_and_shapes():
    @lk.custom_gradient
    def badshape(x):
        return x * 2.0, lambda dy: lk.constant([1.0, 2.0, 3.0])

    with pytest.raises(ValueError, match=r"badshape.*\(3,\).*\(2,\)"):
        lk.gradients_function(badshape)(lk.constant([1.0, 2.0]))


def test_must_return_pair():
    @lk.custom_gradient
    def nopair(x):
        return x

    with pytest.raises(TypeError, match="nopair"):
        nopair(1.0)
