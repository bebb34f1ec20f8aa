"""NumPy calls on Tensors stay on the tape (or fail loudly): __array_ufunc__/__array_function__."""
from __future__ import annotations

import io

import numpy as np
import pytest

import layerkit as lk
from layerkit.autodiff.check import check_grads

rng = np.random.default_rng(0)


def _t(*shape):
    return lk.constant(rng.standard_normal(shape).astype(np.float32))


# ---- ufuncs run layerkit ops -------------------------------------------------------------
def test_ufunc_returns_tensor_with_same_values():
    t = _t(2, 3)
    x = t.numpy()
    for uf, ref in ((np.exp, np.exp), (np.tanh, np.tanh), (np.abs, np.abs),
                    (np.square, np.square), (np.negative, np.negative), (np.sign, np.sign)):
        out = uf(t)
        assert isinstance(out, lk.Tensor), uf.__name__
        assert out.dtype == np.float32
        np.testing.assert_allclose(out.numpy(), ref(x), rtol=1e-6)
    out = np.add(t, 1)
    assert isinstance(out, lk.Tensor) and out.dtype == np.float32
    np.testing.assert_allclose(out.numpy(), x + 1, rtol=1e-6)
    assert isinstance(np.maximum(t, 0.0), lk.Tensor)
    assert np.positive(t) is t


def test_gradient_flows_through_numpy_exp_inside_a_tape():
    x = lk.constant([0.5, -1.0, 2.0])
    with lk.GradientTape() as tape:
        tape.watch(x)
        y = np.sum(np.exp(x) * 2.0)
    g = tape.gradient(y, x)
    assert g is not None
    np.testing.assert_allclose(g.numpy(), 2 * np.exp(x.numpy()), rtol=1e-6)


def test_gradient_flows_through_numpy_calls_on_variables():
    v = lk.Variable([[1.0, 2.0], [3.0, 4.0]])
    with lk.GradientTape() as tape:
        y = np.mean(np.square(v) + np.log1p(v))
    g = tape.gradient(y, v)
    np.testing.assert_allclose(g.numpy(), (2 * v.numpy() + 1 / (1 + v.numpy())) / 4,
                               rtol=1e-6)


def test_ndarray_on_the_left_returns_tensor():
    t = _t(3)
    a = np.ones(3, np.float32)
    for out, ref in ((a + t, a + t.numpy()), (a - t, a - t.numpy()), (a * t, a * t.numpy()),
                     (a / t, a / t.numpy()), (a ** lk.abs(t), a ** np.abs(t.numpy()))):
        assert isinstance(out, lk.Tensor)
        np.testing.assert_allclose(out.numpy(), ref, rtol=1e-6)
    cmp = a < t
    assert isinstance(cmp, lk.Tensor) and cmp.dtype == np.bool_
    np.testing.assert_array_equal(cmp.numpy(), a < t.numpy())
    s = np.float32(2.0) * t
    assert isinstance(s, lk.Tensor) and s.dtype == np.float32


def test_ndarray_on_the_left_is_differentiable():
    x = lk.constant([1.0, 2.0])
    with lk.GradientTape() as tape:
        tape.watch(x)
        y = np.array([3.0, 4.0], np.float32) * x
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), [3.0, 4.0])


# ---- array functions map onto layerkit ops --------------------------------------------------
def test_reductions_map_to_layerkit():
    t = _t(2, 3)
    x = t.numpy()
    cases = [
        (np.sum(t), np.sum(x)), (np.sum(t, axis=1), np.sum(x, axis=1)),
        (np.sum(t, 0, keepdims=True), np.sum(x, 0, keepdims=True)),
        (np.mean(t, axis=0), np.mean(x, axis=0)), (np.max(t), np.max(x)),
        (np.min(t, axis=1), np.min(x, axis=1)), (np.prod(t), np.prod(x)),
        (np.var(t, axis=1), np.var(x, axis=1)), (np.std(t), np.std(x)),
        (np.cumsum(t), np.cumsum(x)), (np.cumsum(t, axis=1), np.cumsum(x, axis=1)),
    ]
    for out, ref in cases:
        assert isinstance(out, lk.Tensor)
        assert out.shape == np.shape(ref)
        np.testing.assert_allclose(out.numpy(), ref, rtol=2e-6, atol=1e-6)
    b = lk.constant([[True, False], [True, True]])
    np.testing.assert_array_equal(np.all(b, axis=1).numpy(), [False, True])
    assert bool(np.any(b))


def test_shape_functions_map_to_layerkit():
    t = _t(2, 3)
    x = t.numpy()
    cases = [
        (np.reshape(t, (3, 2)), np.reshape(x, (3, 2))), (np.ravel(t), np.ravel(x)),
        (np.transpose(t), x.T), (np.expand_dims(t, 0), x[None]),
        (np.squeeze(np.expand_dims(t, 0)), x),
        (np.concatenate([t, t], axis=1), np.concatenate([x, x], axis=1)),
        (np.stack([t, t]), np.stack([x, x])), (np.tile(t, (2, 1)), np.tile(x, (2, 1))),
        (np.broadcast_to(t, (4, 2, 3)), np.broadcast_to(x, (4, 2, 3))),
        (np.where(x > 0, t, 0.0), np.where(x > 0, x, 0.0)),
        (np.clip(t, -0.5, 0.5), np.clip(x, -0.5, 0.5)), (np.clip(t, 0, None), np.clip(x, 0, None)),
        (np.round(t * 3), np.round(x * 3)),
        (np.einsum("ij,kj->ik", t, t), np.einsum("ij,kj->ik", x, x)),
        (np.dot(t, np.transpose(t)), x @ x.T), (np.matmul(t, x.T), x @ x.T),
        (np.take(t, [2, 0], axis=1), np.take(x, [2, 0], axis=1)),
    ]
    for out, ref in cases:
        assert isinstance(out, lk.Tensor)
        np.testing.assert_allclose(out.numpy(), ref, rtol=1e-5, atol=1e-6)


def test_gradient_through_mapped_array_functions():
    x = lk.constant([[1.0, -2.0], [3.0, 0.5]])
    with lk.GradientTape() as tape:
        tape.watch(x)
        y = np.sum(np.clip(np.transpose(x), -1.0, 1.0) * np.reshape(x, (2, 2)))
    g = tape.gradient(y, x)
    xv = x.numpy()
    # y = sum_ij clip(x_ji) x_ij, so dy/dx = clip(x)^T + [|x| <= 1] * x^T
    expected = np.clip(xv, -1, 1).T + (np.abs(xv) <= 1) * xv.T
    np.testing.assert_allclose(g.numpy(), expected, rtol=1e-6)
    check_grads(lambda a: np.sum(np.exp(a) * np.mean(np.tanh(a), axis=0)),
                [rng.standard_normal((3, 2))], order=2)


# ---- gradient-free queries compute on values -----------------------------------------------
def test_value_queries_return_numpy_results():
    t = lk.constant([[1.0, 5.0], [3.0, 2.0]])
    assert np.shape(t) == (2, 2) and np.ndim(t) == 2 and np.size(t) == 4
    assert np.allclose(t, [[1, 5], [3, 2]])
    assert np.array_equal(t, t)
    np.testing.assert_array_equal(np.isclose(t, 1.0), [[True, False], [False, False]])
    assert np.argmax(t) == 1
    np.testing.assert_array_equal(np.argmin(t, axis=1), [0, 1])
    np.testing.assert_array_equal(np.nonzero(t > 2.5)[0], [0, 1])
    assert np.count_nonzero(t > 2) == 2
    np.testing.assert_array_equal(np.where(t > 2.5)[1], [1, 0])
    buf = io.BytesIO()
    np.save(buf, t)
    buf.seek(0)
    np.testing.assert_array_equal(np.load(buf), t.numpy())
    np.testing.assert_allclose(t, [[1, 5], [3, 2]])


def test_asarray_and_array_still_give_ndarrays():
    t = lk.constant([1.0, 2.0])
    for a in (np.asarray(t), np.array(t), np.asarray(t, dtype=np.float64), t.numpy()):
        assert type(a) is np.ndarray
        np.testing.assert_array_equal(a, [1.0, 2.0])
    assert np.asarray(t, dtype=np.float64).dtype == np.float64
    stacked = np.array([t, t])
    assert type(stacked) is np.ndarray and stacked.shape == (2, 2)


# ---- everything else fails loudly ------------------------------------------------------------
def test_ufunc_methods_and_arguments_raise_type_error():
    t = _t(3)
    with pytest.raises(TypeError, match=r"np\.add\.reduce.*gradient tape"):
        np.add.reduce(t)
    with pytest.raises(TypeError, match=r"np\.multiply\.outer"):
        np.multiply.outer(t, t)
    with pytest.raises(TypeError, match=r"np\.exp.*out"):
        np.exp(t, out=np.empty(3, np.float32))
    with pytest.raises(TypeError, match=r"np\.add.*dtype"):
        np.add(t, 1, dtype=np.float64)
    a = np.zeros(3, np.float32)
    with pytest.raises(TypeError, match=r"np\.add.*out"):
        a += t
    with pytest.raises(TypeError, match=r"np\.fmod.*no op"):
        np.fmod(t, 2.0)


def test_unmapped_functions_and_arguments_raise_type_error():
    t = _t(2, 3)
    with pytest.raises(TypeError, match=r"np\.sort is not supported.*np\.asarray"):
        np.sort(t)
    with pytest.raises(TypeError, match=r"np\.sum.*dtype"):
        np.sum(t, dtype=np.float64)
    with pytest.raises(TypeError, match=r"np\.mean.*out"):
        np.mean(t, out=np.empty(()))
    with pytest.raises(TypeError, match=r"np\.var.*ddof"):
        np.var(t, ddof=1)
    with pytest.raises(TypeError, match=r"np\.round.*decimals"):
        np.round(t, 2)
    with pytest.raises(TypeError, match=r"np\.dot.*2-D"):
        np.dot(lk.constant([1.0, 2.0]), lk.constant([1.0, 2.0]))


def test_operator_fast_path_never_uses_the_numpy_hooks(monkeypatch):
    def boom(*args, **kwargs):
        raise AssertionError("NumPy protocol hook called on the operator path")

    monkeypatch.setattr(lk.Tensor, "__array_ufunc__", boom)
    monkeypatch.setattr(lk.Tensor, "__array_function__", boom)
    a, b = _t(4), _t(4)
    y = a * b + a - b / (abs(a) + 1.0)
    z = lk.exp(y) > 0.5
    with lk.GradientTape() as tape:
        tape.watch(a)
        w = lk.reduce_sum(a * a + a)
    g = tape.gradient(w, a)
    assert isinstance(y, lk.Tensor) and isinstance(z, lk.Tensor)
    np.testing.assert_allclose(g.numpy(), 2 * a.numpy() + 1, rtol=1e-6)


def test_tensor_docstring_documents_interop():
    assert "NumPy interop" in lk.Tensor.__doc__
