"""``lk.keras_ops`` inside ``lk.function``: traced once, replayed on new values with the
same results as eager, gradients through the graph, and ``cond`` on a traced value."""
import warnings

import numpy as np
import pytest

import layerkit as lk
from layerkit import keras_ops as ops

R = np.random.default_rng(5)


def _model(x, w, labels):
    h = ops.relu(ops.matmul(x, w))
    h = ops.layer_normalization(h)
    vals, idx = ops.top_k(h, 2)
    s = ops.sort(h, axis=0)
    med = ops.median(h, axis=1)
    am = ops.argmax(h)
    cs = ops.cumsum(h)
    seg = ops.segment_sum(h, ops.convert_to_tensor([0, 1, 0, 1], "int32"), 2)
    loss = ops.mean(ops.sparse_categorical_crossentropy(labels, h, from_logits=True))
    sq = ops.scatter(ops.convert_to_tensor([[0], [2]]), ops.take(h, [1, 3]), (4,))
    lin = ops.linalg.solve(ops.matmul(w, ops.transpose(w)) + ops.eye(3), x[:3, :3])
    return (loss, vals, idx, s, med, am, cs, seg, sq, ops.arctan2(h, h + 1.0),
            ops.quantile(h, 0.3), lin, ops.image.gaussian_blur(ops.reshape(h, (1, 4, 3, 1))))


def _args():
    x = R.standard_normal((4, 3)).astype(np.float32)
    w = R.standard_normal((3, 3)).astype(np.float32)
    return lk.constant(x), lk.constant(w), lk.constant(R.integers(0, 3, 4).astype(np.int32))


def test_traced_once_and_replayed_on_new_values():
    f = lk.function(_model)
    with warnings.catch_warnings():
        warnings.simplefilter("error")     # no fallback to eager execution
        for _ in range(3):
            args = _args()
            got = f(*args)
            want = _model(*args)
            for g, w in zip(got, want):
                assert g.dtype == w.dtype
                np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-5, atol=1e-5)
    assert f.trace_count == 1


def test_shape_inside_a_trace_is_static_ints():
    seen = []

    @lk.function
    def f(x):
        seen.append(ops.shape(x))
        return ops.reshape(x, (ops.shape(x)[0], -1))

    assert f(lk.zeros((2, 3, 4))).shape == (2, 12)
    assert seen == [(2, 3, 4)]


def test_gradients_flow_through_a_traced_function():
    @lk.function
    def loss(w, x):
        return ops.sum(ops.top_k(ops.sort(ops.matmul(x, w), axis=0), 2)[0] ** 2)

    w = lk.Variable(R.standard_normal((3, 3)))
    x = lk.constant(R.standard_normal((4, 3)))
    with lk.GradientTape() as tape:
        y = loss(w, x)
    g = tape.gradient(y, w)
    with lk.GradientTape() as tape:
        y2 = ops.sum(ops.top_k(ops.sort(ops.matmul(x, w), axis=0), 2)[0] ** 2)
    np.testing.assert_allclose(float(y), float(y2))
    np.testing.assert_allclose(g.numpy(), tape.gradient(y2, w).numpy(), rtol=1e-10)


def test_cond_on_a_traced_value_selects_with_where():
    @lk.function
    def f(x):
        return ops.cond(ops.sum(x) > 0, lambda: x * 2.0, lambda: -x)

    np.testing.assert_allclose(f(lk.constant([1.0, 2.0])).numpy(), [2.0, 4.0])
    np.testing.assert_allclose(f(lk.constant([-1.0, -2.0])).numpy(), [1.0, 2.0])
    assert f.trace_count == 1

    @lk.function
    def g(i, x):
        return ops.switch(i, [lambda v: v + 1.0, lambda v: v * 10.0], x)

    np.testing.assert_allclose(g(lk.constant(1), lk.constant([1.0])).numpy(), [10.0])
    np.testing.assert_allclose(g(lk.constant(0), lk.constant([1.0])).numpy(), [2.0])


def test_value_dependent_shapes_refuse_inside_a_trace():
    @lk.function
    def f(x):
        return ops.bincount(x)

    with pytest.raises(ValueError, match="bincount"):
        f(lk.constant([1, 2, 2]))
