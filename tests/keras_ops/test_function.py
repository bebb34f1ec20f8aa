"""``lk.keras_ops`` inside ``lk.function``: traced once, replayed on new values with the
same results as eager, gradients through the graph, and ``cond`` on a traced value."""
import re
import warnings

import numpy as np
import pytest

import layerkit as lk
from layerkit import keras_ops as ops
from tests.keras_ops import parity_cases as pc

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


def _leaves(v):
    if isinstance(v, (tuple, list)):
        return [leaf for e in v for leaf in _leaves(e)]
    return [v]


_NAMES = [k for k, v in vars(pc).items() if isinstance(v, np.ndarray)]
_TRACEABLE = [c for c in pc.CASES if not any(s in c for s in (".astype(", ".repeat(",
                                                                ".ravel()", ".T"))]


@pytest.mark.parametrize("case", _TRACEABLE)
def test_parity_cases_trace_once_and_replay_on_new_values(case):
    """Every Keras-parity case, with its array inputs as traced arguments: one trace, no
    eager fallback, and the graph's results on new inputs equal eager ones."""
    used = [n for n in _NAMES if re.search(rf"\b{n}\b", case)]
    fn = eval(f"lambda {', '.join(used)}: {case}", {"ops": ops, "np": np})  # noqa: S307
    args = [lk.constant(getattr(pc, n)) for n in used]
    f = lk.function(fn)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("error")
        f(*args)
        args2 = [a * 0.9 + 0.05 if a.dtype.kind == "f" else a for a in args]
        got, want = f(*args2), fn(*args2)
    assert f.trace_count == 1
    for g, w in zip(_leaves(got), _leaves(want)):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-5, atol=1e-6,
                                   equal_nan=True, err_msg=case)


def test_keras_style_layer_and_loss_train_in_fit():
    """A layer and a loss written against keras.ops train through Model.fit (its traced
    train step), with no eager fallback."""

    class Block(lk.layers.Layer):
        def build(self, input_shape):
            self.w = self.add_weight(name="w", shape=(input_shape[-1], 8))

        def call(self, x):
            return ops.gelu(ops.layer_normalization(ops.matmul(x, self.w)))

    def loss(y, p):
        return ops.mean(ops.sparse_categorical_crossentropy(y, p, from_logits=True))

    lk.random.set_seed(0)
    x = R.standard_normal((128, 5)).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.int32) + (x[:, 1] > 0)
    model = lk.Sequential([Block(), lk.layers.Dense(3)])
    model.compile(optimizer="adam", loss=loss)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        hist = model.fit(x, y, epochs=3, batch_size=32, verbose=0).history["loss"]
    assert hist[-1] < hist[0]
