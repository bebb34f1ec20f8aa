"""Tensor operators: arithmetic (and reflected), unary, comparisons, logic, [], iteration."""
from __future__ import annotations

import operator

import numpy as np
import pytest

import layerkit as lk
from layerkit.autodiff.check import check_grads

rng = np.random.default_rng(0)

ARITH = [
    (operator.add, lk.add), (operator.sub, lk.subtract), (operator.mul, lk.multiply),
    (operator.truediv, lk.divide), (operator.floordiv, lk.floordiv),
    (operator.mod, lk.mod), (operator.pow, lk.pow),
]


@pytest.mark.parametrize("pyop,lkop", ARITH, ids=[a[0].__name__ for a in ARITH])
def test_arithmetic_operators_and_reflected_forms(pyop, lkop):
    a = rng.uniform(0.5, 2.0, (2, 3)).astype(np.float32)
    b = rng.uniform(0.5, 2.0, (3,)).astype(np.float32)
    ta, tb = lk.constant(a), lk.constant(b)
    expected = pyop(a, b)
    for out in (pyop(ta, tb), pyop(ta, b), pyop(a, tb), lkop(ta, tb)):
        assert isinstance(out, lk.Tensor), type(out)
        assert out.dtype == np.float32
        np.testing.assert_allclose(out.numpy(), expected, rtol=1e-6)
    # Python scalars on either side stay weak.
    for out, exp in ((pyop(ta, 2.0), pyop(a, np.float32(2.0))),
                     (pyop(1.5, ta), pyop(np.float32(1.5), a))):
        assert out.dtype == np.float32
        np.testing.assert_allclose(out.numpy(), exp, rtol=1e-6)


def test_lists_on_either_side():
    t = lk.constant([1.0, 2.0])
    np.testing.assert_array_equal((t + [1.0, 1.0]).numpy(), [2.0, 3.0])
    np.testing.assert_array_equal(([3.0, 3.0] - t).numpy(), [2.0, 1.0])


def test_matmul_operator():
    a = rng.standard_normal((2, 3)).astype(np.float32)
    b = rng.standard_normal((3, 4)).astype(np.float32)
    np.testing.assert_allclose((lk.constant(a) @ lk.constant(b)).numpy(), a @ b, rtol=1e-6)
    out = a @ lk.constant(b)  # ndarray @ Tensor goes through np.matmul -> lk.matmul
    assert isinstance(out, lk.Tensor)
    np.testing.assert_allclose(out.numpy(), a @ b, rtol=1e-6)
    np.testing.assert_allclose((lk.constant(a) @ b).numpy(), a @ b, rtol=1e-6)


def test_unary_operators():
    x = np.array([-1.5, 0.0, 2.0], np.float32)
    t = lk.constant(x)
    np.testing.assert_array_equal((-t).numpy(), -x)
    assert (+t) is t
    a = abs(t)
    assert isinstance(a, lk.Tensor)
    np.testing.assert_array_equal(a.numpy(), np.abs(x))


CMP = [operator.lt, operator.le, operator.gt, operator.ge, operator.eq, operator.ne]


@pytest.mark.parametrize("pyop", CMP, ids=[c.__name__ for c in CMP])
def test_comparisons_are_elementwise_bool(pyop):
    a = np.array([1.0, 2.0, 3.0], np.float32)
    b = np.array([2.0, 2.0, 2.0], np.float32)
    ta = lk.constant(a)
    for out in (pyop(ta, lk.constant(b)), pyop(ta, b), pyop(ta, 2.0), pyop(b, ta)):
        assert isinstance(out, lk.Tensor) and out.dtype == np.bool_
    np.testing.assert_array_equal(pyop(ta, 2.0).numpy(), pyop(a, 2.0))
    np.testing.assert_array_equal(pyop(b, ta).numpy(), pyop(b, a))


def test_equality_with_none_and_hash_by_identity():
    t = lk.constant([1.0, 2.0])
    assert (t == None) is False  # noqa: E711 - the operator is what is tested
    assert (t != None) is True  # noqa: E711
    u = lk.constant([1.0, 2.0])
    d = {t: "t", u: "u"}
    assert d[t] == "t" and d[u] == "u"
    assert hash(t) == id(t)
    v = lk.Variable([1.0, 2.0])
    assert hash(v) == id(v)
    assert isinstance(v == t, lk.Tensor)


def test_variable_operators():
    v = lk.Variable([1.0, 2.0])
    np.testing.assert_array_equal((v * 2.0 + v).numpy(), [3.0, 6.0])
    np.testing.assert_array_equal((1.0 - v).numpy(), [0.0, -1.0])
    assert (v > 1.5).numpy().tolist() == [False, True]


def test_bool_logical_operators():
    a = lk.constant([True, True, False, False])
    b = np.array([True, False, True, False])
    np.testing.assert_array_equal((a & b).numpy(), [True, False, False, False])
    np.testing.assert_array_equal((a | b).numpy(), [True, True, True, False])
    np.testing.assert_array_equal((a ^ b).numpy(), [False, True, True, False])
    np.testing.assert_array_equal((~a).numpy(), [False, False, True, True])
    np.testing.assert_array_equal((True & a).numpy(), [True, True, False, False])
    with pytest.raises(TypeError, match="operator & is defined for bool tensors only"):
        lk.constant([1.0]) & lk.constant([1.0])
    with pytest.raises(TypeError, match="operator ~"):
        ~lk.constant([1, 2])


def test_operator_shape_mismatch_message():
    with pytest.raises(ValueError, match=r"multiply.*\(2,\).*\(3,\)"):
        lk.constant([1.0, 2.0]) * lk.constant([1.0, 2.0, 3.0])


def test_gradients_through_operators():
    def f(x, y):
        return (x * y + x / y - y ** 2.0) % 3.0 + abs(x) - (-y) // 1.0

    x = rng.uniform(0.3, 1.0, (2, 3))
    y = rng.uniform(1.2, 1.8, (3,))
    check_grads(f, [x, y], order=2)
    check_grads(lambda a, b: a @ b, [rng.standard_normal((2, 3)), rng.standard_normal((3, 2))])


@pytest.mark.skipif(not hasattr(lk.Tensor, "__getitem__"), reason="getitem not installed")
def test_getitem_is_installed_and_differentiable():
    x = np.arange(12, dtype=np.float64).reshape(3, 4)
    t = lk.constant(x)
    np.testing.assert_array_equal(t[1].numpy(), x[1])
    np.testing.assert_array_equal(t[:, 1:3].numpy(), x[:, 1:3])
    check_grads(lambda a: a[1:, ::2] * a[0, 0], [x])


def test_iteration_over_axis_0():
    x = np.arange(6, dtype=np.float32).reshape(3, 2)
    rows = list(lk.constant(x))
    assert len(rows) == 3
    for r, ref in zip(rows, x):
        assert isinstance(r, lk.Tensor)
        np.testing.assert_array_equal(r.numpy(), ref)
    a, b = lk.constant([1.0, 2.0])  # unpacking
    assert float(a) == 1.0 and float(b) == 2.0
    with pytest.raises(TypeError, match="0-d"):
        iter(lk.constant(1.0))


def test_iteration_is_differentiable():
    x = lk.constant([[1.0, 2.0], [3.0, 4.0]])
    with lk.GradientTape() as tape:
        tape.watch(x)
        r0, r1 = x
        y = lk.reduce_sum(r0 * r1)
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), [[3.0, 4.0], [1.0, 2.0]])
