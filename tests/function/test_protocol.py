"""The protocol between graphs and library code: what counts as a leak, declared peepholes.

A traced tensor's value read through ``_v`` is a leak (the function falls back to
eager); library code that reads only to record an op or for the shape reads ``_rv``.
The decision is made by the read itself, so renaming, copying or wrapping a private
helper cannot change whether a function traces (it once depended on a list of names).
"""
import importlib
import warnings

import numpy as np
import pytest

import layerkit as lk
from layerkit._core.op import Op, apply
from layerkit.autodiff.function import EagerFallbackWarning, function

# Private helpers on the traced path that read tensors (shape checks, weak scalars,
# the backward sweep), as module -> names.
_HELPERS = {
    "layerkit.primitives.reduce": ["_ndim", "_shape"],
    "layerkit.primitives.array": ["_shape_of"],
    "layerkit.primitives.linalg": ["_shape_of", "matmul"],
    "layerkit.primitives.elementwise": ["_py", "_broadcast_error"],
    "layerkit.primitives.creation": ["zeros_like", "ones_like"],
    "layerkit.autodiff.backprop": ["_sweep", "_checked"],
    "layerkit.autodiff.tape": ["_is_float", "_ones"],
}


def _step(x, w):
    with lk.GradientTape() as tape:
        tape.watch(x)
        h = lk.matmul(x, w) * 2.0
        y = lk.reduce_sum(lk.reshape(h + lk.zeros_like(h[0]) + lk.ones_like(h[0]), [-1]))
    return y, tape.gradient(y, x)


def _traces_as_graph(x, w) -> bool:
    f = function(_step)
    with warnings.catch_warnings():
        warnings.simplefilter("error", EagerFallbackWarning)
        f(x, w)
    return f.get_concrete_function(x, w).mode == "graph"


@pytest.mark.parametrize("how", ["renamed copy", "wrapped"])
def test_renaming_or_wrapping_private_helpers_does_not_change_tracing(monkeypatch, how):
    rng = np.random.default_rng(0)
    x = lk.constant(rng.standard_normal((3, 4)).astype(np.float32))
    w = lk.constant(rng.standard_normal((4, 2)).astype(np.float32))
    assert _traces_as_graph(x, w)
    for mod_name, names in _HELPERS.items():
        mod = importlib.import_module(mod_name)
        for name in names:
            fn = getattr(mod, name)
            if how == "renamed copy":  # a new code object under a new name
                code = fn.__code__.replace(co_name=f"renamed{name}",
                                           co_qualname=f"renamed{name}")
                new = type(fn)(code, fn.__globals__, f"renamed{name}", fn.__defaults__,
                               fn.__closure__)
                new.__kwdefaults__ = fn.__kwdefaults__
            else:
                def new(*args, _fn=fn, **kwargs):
                    return _fn(*args, **kwargs)
            monkeypatch.setattr(mod, name, new)
    assert _traces_as_graph(x, w)
    f = function(_step)
    for _ in range(2):  # the graph's answers are the eager ones
        y, g = f(x, w)
        y0, g0 = _step(x, w)
        np.testing.assert_allclose(y.numpy(), y0.numpy(), rtol=1e-6)
        np.testing.assert_allclose(g.numpy(), g0.numpy(), rtol=1e-6)
        x = x * 2.0


def test_a_value_read_is_a_leak_whatever_the_reader_is_called():
    def my_private_helper(t):  # takes a value out of the graph
        return np.asarray(t._v) > 0

    @function
    def f(x):
        return x * lk.constant(my_private_helper(x).astype(np.float32))

    with pytest.warns(EagerFallbackWarning, match="my_private_helper"):
        f(lk.constant([1.0, -1.0]))
    # eager on every call, so a new sign pattern is still right
    np.testing.assert_allclose(f(lk.constant([-2.0, 3.0])).numpy(), [0.0, 3.0])


# ---- peepholes declared on the record --------------------------------------------------
# P(y, p, g) sends g where y == p; m(a, y) keeps a where y > 0. Where y == p, y > 0 is
# p > 0, so m(P(y, p, g), y) == P(y, p, m(g, p)): P declares it absorbs m.
_M = Op("test_mask", lambda a, y: np.where(y > 0, a, 0).astype(a.dtype))
_P = Op("test_scatter", lambda y, p, g: np.where(y == p, g, 0).astype(g.dtype), absorbs=(_M,))
_P_PLAIN = Op("test_scatter_plain", _P.forward)


@pytest.mark.parametrize("record, sunk", [(_P, 1), (_P_PLAIN, 0)])
def test_graph_peephole_is_declared_on_the_record(record, sunk):
    @function
    def f(y, p, g):
        return apply(_M, apply(record, y, p, g), y) * 1.0

    rng = np.random.default_rng(1)
    y = rng.integers(-2, 3, (5, 4)).astype(np.float32)
    p = np.where(rng.random((5, 4)) < 0.5, y, -y).astype(np.float32)
    g = rng.standard_normal((5, 4)).astype(np.float32)
    args = [lk.constant(a) for a in (y, p, g)]
    cf = f.get_concrete_function(*args)
    assert cf.stats["relu_pool"] == sunk
    expect = np.where(y > 0, np.where(y == p, g, 0), 0)
    np.testing.assert_array_equal(f(*args).numpy(), expect)
    args2 = [lk.constant(a) for a in (-y, -p, g)]
    np.testing.assert_array_equal(f(*args2).numpy(), np.where(-y > 0, np.where(y == p, g, 0), 0))
