"""lk.function edge cases of arguments: repeated arguments under a tape, methods of
temporary instances, TensorSpec dimension checks (API.md section 3)."""
import numpy as np
import pytest

import layerkit as lk


def test_gradient_through_a_repeated_argument_on_the_tracing_call():
    @lk.function
    def f(x, y):
        return x * 2.0 + y * 5.0

    @lk.function
    def h(xs):
        return xs[0] * xs[1]

    x = lk.constant(3.0)
    for _ in range(2):  # the first call traces, the second runs the graph
        with lk.GradientTape() as t:
            t.watch(x)
            y = f(x, x)
        assert float(t.gradient(y, x)) == 7.0
        with lk.GradientTape() as t:
            t.watch(x)
            y = h([x, x])
        assert float(t.gradient(y, x)) == 6.0


def test_method_on_a_temporary_instance():
    class M:
        def __init__(self, k):
            self.k = k

        @lk.function
        def scale(self, x):
            return x * self.k

    np.testing.assert_allclose(M(3.0).scale(lk.constant([1.0, 2.0])).numpy(), [3.0, 6.0])
    m = M(2.0)
    np.testing.assert_allclose(m.scale(lk.constant([1.0])).numpy(), [2.0])
    m.scale(lk.constant([4.0]))
    assert m.scale.trace_count == 1


def test_tensor_spec_rejects_negative_and_non_integer_dimensions():
    with pytest.raises(ValueError, match=r"TensorSpec: dimensions must be >= 0.*\(-2,\)"):
        lk.TensorSpec([-2])
    with pytest.raises(TypeError, match="TensorSpec: shape must be a sequence"):
        lk.TensorSpec("ab")
    assert lk.TensorSpec([None, 0]).shape == (None, 0)
