"""Data-dependent Python control flow inside lk.function: a clear error at the user's line."""
import inspect

import numpy as np
import pytest

import layerkit as lk
from layerkit.autodiff.function import TracingError, function


def _line_of(fn, text):
    src, start = inspect.getsourcelines(fn)
    for i, line in enumerate(src):
        if text in line:
            return start + i
    raise AssertionError(text)


def test_if_on_tensor_names_the_line():
    def f(x):
        s = lk.reduce_sum(x)
        if s > 0:  # the offending line
            return x
        return -x

    g = function(f, autograph=False)   # AutoGraph (the default) converts the `if`
    with pytest.raises(TracingError) as e:
        g(lk.constant([1.0, 2.0]))
    msg = str(e.value)
    assert "data-dependent Python control flow" in msg
    assert "Python bool" in msg and "'f'" in msg
    assert f"{__file__}:{_line_of(f, 'the offending line')}" in msg
    assert "if s > 0" in msg
    assert isinstance(e.value, TypeError)


@pytest.mark.parametrize("conv, what", [
    (lambda t: float(lk.reduce_sum(t)), "Python float"),
    (lambda t: int(lk.reduce_sum(t)), "Python int"),
    (lambda t: t.numpy(), ".numpy()"),
    (lambda t: np.asarray(t), "np.asarray"),
    (lambda t: range(lk.cast(lk.reduce_sum(t), "int64")), "Python index"),
])
def test_value_conversions_refused(conv, what):
    g = function(lambda x: conv(x * 2.0))
    with pytest.raises(TracingError, match=f"as .*{what}"):
        g(lk.constant([1.0, 2.0]))


def test_while_loop_on_tensor_refused_without_autograph():
    @function(autograph=False)
    def f(x):
        while lk.reduce_max(x) < 10.0:
            x = x * 2.0
        return x
    with pytest.raises(TracingError, match="while tracing 'f'"):
        f(lk.constant([1.0]))


def test_static_python_control_flow_is_fine():
    @function
    def f(x, n):
        for _ in range(n):          # Python int: unrolled while tracing
            x = x * 2.0
        if x.shape[0] > 1:          # static shape: fine
            x = x + 1.0
        return x, len(x)
    out, n = f(lk.constant([1.0, 2.0]), 3)
    np.testing.assert_allclose(out.numpy(), [9.0, 17.0])
    assert n == 2


def test_error_then_same_function_works_outside_trace():
    x = lk.constant([1.0])
    g = function(lambda t: bool(t > 0))
    with pytest.raises(TracingError):
        g(x)
    assert bool(x > 0)   # the tensor itself is unaffected
    assert repr(x * 2.0).startswith("Tensor(")
