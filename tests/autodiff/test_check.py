"""The gradient checker itself: it passes on right rules and fails on slightly wrong ones."""
import numpy as np
import pytest

import layerkit as lk
from layerkit._core.op import Op, apply
from layerkit.autodiff.check import GradientCheckError, check_grads


def _cube_op(scale_first: float, scale_second: float) -> Op:
    """x**3 whose first-order rule is scaled by ``scale_first`` and whose gradient's own
    rule (second order) by ``scale_second``."""
    def grad_rule(up, ins, y, needs):  # d/dx and d/dg of 3 x^2 g, times upstream
        x, g = ins
        return (up * g * x * 6.0 * scale_second, up * x * x * 3.0)

    grad_op = Op("cube_grad", lambda x, g: 3.0 * x * x * g, grad_rule)

    def rule(g, ins, y, needs):
        return (apply(grad_op, ins[0], g) * scale_first,)

    return Op("cube", lambda x: x ** 3, rule)


def test_checker_accepts_correct_rules():
    op = _cube_op(1.0, 1.0)
    check_grads(lambda x: apply(op, x), [np.array([0.3, -1.2, 2.0])], order=2)


def test_checker_rejects_first_order_error_of_0_1_percent():
    op = _cube_op(1.001, 1.0)
    with pytest.raises(GradientCheckError, match="order 1"):
        check_grads(lambda x: apply(op, x), [np.array([0.3, -1.2, 2.0])], order=1)


def test_checker_rejects_second_order_error_of_0_1_percent():
    op = _cube_op(1.0, 1.001)
    check_grads(lambda x: apply(op, x), [np.array([0.3, -1.2, 2.0])], order=1)
    with pytest.raises(GradientCheckError, match="order 2"):
        check_grads(lambda x: apply(op, x), [np.array([0.3, -1.2, 2.0])], order=2)


def test_checker_handles_multiple_arguments_and_outputs():
    rng = np.random.default_rng(0)
    check_grads(lambda a, b: [a * b, lk.exp(a)], [rng.standard_normal(3),
                                                   rng.standard_normal(3)])
