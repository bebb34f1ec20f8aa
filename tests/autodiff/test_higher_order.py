import numpy as np

import layerkit as lk
from layerkit.autodiff.check import check_grads


def test_seed_examples():
    assert lk.matmul([[2.0]], [[2.0]]).numpy().tolist() == [[4.0]]

    def square(x):
        return lk.multiply(x, x)

    grad = lk.gradients_function(square)
    assert float(square(3.0)) == 9.0
    assert [float(g) for g in grad(3.0)] == [6.0]
    assert [float(g) for g in lk.gradients_function(lambda x: grad(x)[0])(3.0)] == [2.0]


def test_third_order_with_nested_gradients_function():
    f = lambda x: x * x * x * x  # noqa: E731  f''' = 24x
    d1 = lk.gradients_function(f)
    d2 = lk.gradients_function(lambda x: d1(x)[0])
    d3 = lk.gradients_function(lambda x: d2(x)[0])
    assert float(d1(2.0)[0]) == 32.0
    assert float(d2(2.0)[0]) == 48.0
    assert float(d3(2.0)[0]) == 48.0


def test_third_order_with_nested_tapes():
    x = lk.constant(0.5, dtype="float64")
    with lk.GradientTape() as t3:
        t3.watch(x)
        with lk.GradientTape() as t2:
            t2.watch(x)
            with lk.GradientTape() as t1:
                t1.watch(x)
                y = lk.exp(x * 2.0)
            g1 = t1.gradient(y, x)
        g2 = t2.gradient(g1, x)
    g3 = t3.gradient(g2, x)
    e = np.exp(1.0)
    np.testing.assert_allclose([float(g1), float(g2), float(g3)], [2 * e, 4 * e, 8 * e])


def test_persistent_tape_records_its_own_gradient():
    x = lk.constant(3.0)
    with lk.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * x * x
        dy = tape.gradient(y, x)
    d2y = tape.gradient(dy, x)
    assert float(dy) == 27.0 and float(d2y) == 18.0


def test_second_order_through_matmul_and_tanh_against_finite_differences():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((3, 4))
    W = rng.standard_normal((4, 2))
    check_grads(lambda a, b: lk.tanh(lk.matmul(a, b)), [x, W], order=3)
