"""Losses: values against NumPy transcriptions of Keras's definitions, reductions,
sample weights, errors, gradients (float64 finite differences) and names."""
import warnings

import numpy as np
import pytest

import layerkit as lk
from layerkit import losses
from layerkit.autodiff.check import check_grads
from layerkit.autodiff.function import EagerFallbackWarning

EPS = 1e-7


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def _log_softmax(x):
    s = x - x.max(-1, keepdims=True)
    return s - np.log(np.exp(s).sum(-1, keepdims=True))


@pytest.fixture
def data(rng):
    y_true = rng.random((6, 4))
    y_pred = rng.random((6, 4)) * 2 - 0.5
    return y_true, y_pred


def _np_per_sample(name, t, p, **kw):
    if name == "mse":
        return np.mean((t - p) ** 2, -1)
    if name == "mae":
        return np.mean(np.abs(t - p), -1)
    if name == "huber":
        d = kw.get("delta", 1.0)
        e = np.abs(p - t)
        return np.mean(np.where(e <= d, 0.5 * e ** 2, d * e - 0.5 * d ** 2), -1)
    if name == "log_cosh":
        return np.mean(np.log(np.cosh(p - t)), -1)
    if name == "mape":
        return 100 * np.mean(np.abs((t - p) / np.maximum(np.abs(t), EPS)), -1)
    if name == "msle":
        return np.mean((np.log(np.maximum(p, EPS) + 1) - np.log(np.maximum(t, EPS) + 1)) ** 2, -1)
    if name == "poisson":
        return np.mean(p - t * np.log(p + EPS), -1)
    raise KeyError(name)


@pytest.mark.parametrize("name,fn", [
    ("mse", losses.mean_squared_error), ("mae", losses.mean_absolute_error),
    ("huber", losses.huber), ("log_cosh", losses.log_cosh),
    ("mape", losses.mean_absolute_percentage_error),
    ("msle", losses.mean_squared_logarithmic_error),
])
def test_regression_losses_match_numpy(name, fn, data):
    t, p = data
    np.testing.assert_allclose(fn(t, p).numpy(), _np_per_sample(name, t, p), rtol=1e-10)
    obj = losses.get(name)
    np.testing.assert_allclose(float(obj(t, p)), _np_per_sample(name, t, p).mean(), rtol=1e-10)


def test_poisson_and_huber_delta(data):
    t, p = data
    p = np.abs(p) + 0.1
    np.testing.assert_allclose(losses.poisson(t, p).numpy(), _np_per_sample("poisson", t, p),
                               rtol=1e-10)
    np.testing.assert_allclose(float(losses.Huber(delta=0.3)(t, p)),
                               _np_per_sample("huber", t, p, delta=0.3).mean(), rtol=1e-10)


def test_keras_documented_values():
    yt, yp = [[0.0, 1.0], [0.0, 0.0]], [[1.0, 1.0], [1.0, 0.0]]
    assert float(losses.MeanSquaredError()(yt, yp)) == pytest.approx(0.5)
    assert float(losses.MeanAbsoluteError()(yt, yp)) == pytest.approx(0.5)
    assert float(losses.Huber()([[0, 1], [0, 0]], [[0.6, 0.4], [0.4, 0.6]])) == \
        pytest.approx(0.155, abs=1e-6)
    bce = losses.BinaryCrossentropy(from_logits=True)
    assert float(bce([[0, 1], [0, 0]], [[-18.6, 0.51], [2.94, -12.8]])) == \
        pytest.approx(0.865, abs=1e-3)
    cce = losses.CategoricalCrossentropy()
    assert float(cce([[0, 1, 0], [0, 0, 1]], [[0.05, 0.95, 0], [0.1, 0.8, 0.1]])) == \
        pytest.approx(1.177, abs=1e-3)
    scce = losses.SparseCategoricalCrossentropy()
    assert float(scce([1, 2], [[0.05, 0.95, 0], [0.1, 0.8, 0.1]])) == pytest.approx(1.177,
                                                                                 abs=1e-3)


def test_binary_crossentropy(rng):
    t = (rng.random((5, 3)) > 0.5).astype(np.float64)
    x = rng.standard_normal((5, 3)) * 3
    want = -np.mean(t * np.log(_sigmoid(x)) + (1 - t) * np.log(1 - _sigmoid(x)), -1)
    np.testing.assert_allclose(losses.binary_crossentropy(t, x, from_logits=True).numpy(),
                               want, rtol=1e-9)
    p = np.clip(_sigmoid(x), EPS, 1 - EPS)
    want_p = -np.mean(t * np.log(p) + (1 - t) * np.log(1 - p), -1)
    np.testing.assert_allclose(losses.binary_crossentropy(t, _sigmoid(x)).numpy(), want_p,
                               rtol=1e-9)
    # huge logits stay finite with from_logits (the stable form)
    big = losses.binary_crossentropy([[1.0, 0.0]], [[-1000.0, 1000.0]], from_logits=True)
    np.testing.assert_allclose(big.numpy(), [1000.0])
    # label smoothing
    s = 0.2
    ts = t * (1 - s) + 0.5 * s
    want_s = -np.mean(ts * np.log(_sigmoid(x)) + (1 - ts) * np.log(1 - _sigmoid(x)), -1)
    np.testing.assert_allclose(
        losses.BinaryCrossentropy(from_logits=True, label_smoothing=s,
                                  reduction=None)(t, x).numpy(), want_s, rtol=1e-9)


def test_categorical_and_sparse_crossentropy_agree(rng):
    x = rng.standard_normal((7, 5)) * 2
    labels = rng.integers(0, 5, 7)
    onehot = np.eye(5)[labels]
    want = -_log_softmax(x)[np.arange(7), labels]
    got_c = losses.categorical_crossentropy(onehot, x, from_logits=True).numpy()
    got_s = losses.sparse_categorical_crossentropy(labels, x, from_logits=True).numpy()
    np.testing.assert_allclose(got_c, want, rtol=1e-10)
    np.testing.assert_allclose(got_s, want, rtol=1e-10)
    probs = np.exp(_log_softmax(x))
    np.testing.assert_allclose(losses.sparse_categorical_crossentropy(labels, probs).numpy(),
                               want, rtol=1e-6)
    np.testing.assert_allclose(losses.categorical_crossentropy(onehot, probs * 3).numpy(),
                               want, rtol=1e-6)  # probabilities are renormalised
    # labels with a trailing axis of 1 and float labels holding integers are accepted
    np.testing.assert_allclose(
        losses.sparse_categorical_crossentropy(labels[:, None].astype(np.float32), x,
                                               from_logits=True).numpy(), want, rtol=1e-10)
    # label smoothing for the categorical form
    s = 0.1
    soft = onehot * (1 - s) + s / 5
    np.testing.assert_allclose(
        losses.categorical_crossentropy(onehot, x, from_logits=True, label_smoothing=s).numpy(),
        -(soft * _log_softmax(x)).sum(-1), rtol=1e-10)


def test_sparse_ignore_class(rng):
    x = rng.standard_normal((4, 3))
    labels = np.array([0, 2, -1, 1])
    per = losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=-1,
                                               reduction="none")(labels, x).numpy()
    want = -_log_softmax(x)[np.arange(4), np.where(labels < 0, 0, labels)]
    want[2] = 0.0
    np.testing.assert_allclose(per, want, rtol=1e-10)


def test_reductions_and_sample_weight(rng):
    t, p = rng.random((6, 3)), rng.random((6, 3))
    per = _np_per_sample("mse", t, p)
    sw = rng.random(6)
    assert float(losses.MeanSquaredError(reduction="sum")(t, p)) == pytest.approx(per.sum())
    np.testing.assert_allclose(losses.MeanSquaredError(reduction="none")(t, p).numpy(), per)
    np.testing.assert_allclose(losses.MeanSquaredError(reduction=None)(t, p).numpy(), per)
    mse = losses.MeanSquaredError()
    # sum_over_batch_size divides by the number of values, not by the sum of weights
    assert float(mse(t, p, sample_weight=sw)) == pytest.approx((per * sw).sum() / 6)
    assert float(mse(t, p, sample_weight=sw[:, None])) == pytest.approx((per * sw).sum() / 6)
    assert float(mse(t, p, sample_weight=2.0)) == pytest.approx(per.mean() * 2)
    mw = losses.MeanSquaredError(reduction="mean_with_sample_weight")
    assert float(mw(t, p, sample_weight=sw)) == pytest.approx((per * sw).sum() / sw.sum())
    with pytest.raises(ValueError, match="reduction"):
        losses.MeanSquaredError(reduction="average")
    with pytest.raises(ValueError, match="sample_weight of shape"):
        mse(t, p, sample_weight=np.ones(4))


def test_shape_mismatch_and_label_errors(rng):
    with pytest.raises(ValueError, match=r"mean_squared_error.*\(4, 3\).*\(4, 2\)"):
        losses.MeanSquaredError()(np.zeros((4, 3)), np.zeros((4, 2)))
    with pytest.raises(ValueError, match=r"categorical_crossentropy.*\(4,\).*\(4, 3\)"):
        losses.CategoricalCrossentropy()(np.zeros(4), np.zeros((4, 3)))
    scce = losses.SparseCategoricalCrossentropy(from_logits=True)
    with pytest.raises(ValueError, match=r"sparse_categorical_crossentropy.*label 3 .*\[0, 3\)"):
        scce(np.array([0, 3]), np.zeros((2, 3)))
    with pytest.raises(ValueError, match=r"sparse_categorical_crossentropy.*label -1"):
        losses.SparseCategoricalCrossentropy()(np.array([0, -1]), np.ones((2, 3)) / 3)
    with pytest.raises(ValueError, match=r"shape \(2, 3\).*expected labels of shape \(2,\)"):
        scce(np.zeros((2, 3), np.int64), np.zeros((2, 3)))
    # fractional labels: truncated as TensorFlow casts them, with a warning
    with pytest.warns(UserWarning, match="integer class indices.*such as 0.5, truncated"):
        got = scce(np.array([0.5, 1.7]), np.zeros((2, 3)))
    np.testing.assert_allclose(got, scce(np.array([0, 1]), np.zeros((2, 3))))
    # a (N, 1) target against (N,) predictions is the same shape after squeezing
    np.testing.assert_allclose(
        float(losses.MeanSquaredError()(np.ones((3, 1)), np.zeros(3))), 1.0)


@pytest.mark.parametrize("fn,kw", [
    (losses.mean_squared_error, {}), (losses.mean_absolute_error, {}),
    (losses.huber, {"delta": 0.5}), (losses.log_cosh, {}),
    (losses.binary_crossentropy, {"from_logits": True}),
    (losses.binary_crossentropy, {}),
    (losses.categorical_crossentropy, {"from_logits": True}),
    (losses.categorical_crossentropy, {}),
])
def test_gradients_match_finite_differences(fn, kw, rng):
    t = rng.random((3, 4))
    if fn in (losses.binary_crossentropy, losses.categorical_crossentropy) and not kw:
        p = rng.random((3, 4)) * 0.8 + 0.1
    else:
        p = rng.standard_normal((3, 4))
    check_grads(lambda yp: losses.reduce_weighted_values(fn(lk.constant(t), yp, **kw)), [p],
                order=1)


def test_sparse_gradient_matches_finite_differences(rng):
    labels = np.array([0, 2, 1])
    x = rng.standard_normal((3, 4))
    check_grads(lambda z: losses.SparseCategoricalCrossentropy(from_logits=True)(labels, z),
                [x], order=1)
    check_grads(lambda z: losses.SparseCategoricalCrossentropy()(labels, z),
                [rng.random((3, 4)) + 0.2], order=1)


def test_names_and_configs():
    for name, cls in [("mse", losses.MeanSquaredError), ("mae", losses.MeanAbsoluteError),
                      ("huber", losses.Huber), ("binary_crossentropy", losses.BinaryCrossentropy),
                      ("categorical_crossentropy", losses.CategoricalCrossentropy),
                      ("sparse_categorical_crossentropy", losses.SparseCategoricalCrossentropy),
                      ("kld", losses.KLDivergence), ("hinge", losses.Hinge)]:
        obj = losses.get(name)
        assert type(obj) is cls and obj.name == name
    assert losses.get(None) is None
    assert isinstance(losses.get(losses.mean_squared_error), losses.MeanSquaredError)
    custom = losses.get(lambda yt, yp: lk.reduce_sum(yp, axis=-1))
    assert isinstance(custom, losses.LossFunctionWrapper)
    assert float(custom([[0.0, 0.0]], [[1.0, 2.0]])) == 3.0
    b = losses.BinaryCrossentropy(from_logits=True, label_smoothing=0.1)
    again = losses.deserialize(losses.serialize(b))
    assert again.from_logits and again.label_smoothing == 0.1 and again.name == b.name
    with pytest.raises(ValueError, match="unknown loss 'msee'.*mse"):
        losses.get("msee")
    with pytest.raises(TypeError, match="unexpected keyword"):
        losses.MeanSquaredError(from_logits=True)


def test_float32_stays_float32():
    out = losses.MeanSquaredError()(np.ones((2, 2)), np.zeros((2, 2), np.float32))
    assert out.dtype == np.float32


_GRAPH_LOSSES = [
    (lambda: losses.MeanSquaredError(), "dense", None),
    (lambda: losses.Huber(delta=0.5), "dense", None),
    (lambda: losses.Hinge(), "binary01", None),
    (lambda: losses.SquaredHinge(), "signed", None),
    (lambda: losses.BinaryCrossentropy(from_logits=True, label_smoothing=0.1), "binary01", None),
    (lambda: losses.CategoricalCrossentropy(), "onehot_probs", None),
    (lambda: losses.SparseCategoricalCrossentropy(from_logits=True), "sparse", None),
    (lambda: losses.SparseCategoricalCrossentropy(), "sparse_probs", None),
    (lambda: losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=3),
     "sparse_float", None),
    (lambda: losses.MeanSquaredError(reduction="mean_with_sample_weight"), "dense", "weights"),
    (lambda: losses.KLDivergence(), "probs", "weights"),
]


def _graph_inputs(kind, rng):
    x = rng.standard_normal((6, 4))
    if kind == "dense":
        return rng.random((6, 4)), x
    if kind == "binary01":
        return rng.integers(0, 2, (6, 4)).astype(np.float64), x
    if kind == "signed":
        return rng.choice([-1.0, 1.0], (6, 4)), x
    if kind == "probs":
        return np.exp(_log_softmax(rng.standard_normal((6, 4)))), np.exp(_log_softmax(x))
    if kind == "onehot_probs":
        return np.eye(4)[rng.integers(0, 4, 6)], np.exp(_log_softmax(x))
    if kind == "sparse":
        return rng.integers(0, 4, 6), x
    if kind == "sparse_probs":
        return rng.integers(0, 4, 6), np.exp(_log_softmax(x))
    return rng.integers(0, 4, (6, 1)).astype(np.float64), x   # sparse_float


@pytest.mark.parametrize("make,kind,sw", _GRAPH_LOSSES,
                         ids=[f"{type(m()).__name__}-{k}" for m, k, _ in _GRAPH_LOSSES])
def test_losses_and_their_gradients_inside_lk_function_match_eager(make, kind, sw):
    """Value-dependent parts (label checks, one-hot, hinge's {0,1} test, weight sums)
    are graph nodes: later calls with new values give the eager answers."""
    loss = make()

    def value_and_grad(t, p, w):
        with lk.GradientTape() as tape:
            tape.watch(p)
            v = loss(t, p, sample_weight=w)
        return v, tape.gradient(v, p)

    f = lk.function(value_and_grad)
    rng = np.random.default_rng(1)
    with warnings.catch_warnings():
        warnings.simplefilter("error", EagerFallbackWarning)
        for _ in range(3):
            t, p = _graph_inputs(kind, rng)
            w = lk.constant(rng.random(6)) if sw else None
            got = f(lk.constant(t), lk.constant(p), w)
            want = value_and_grad(lk.constant(t), lk.constant(p), w)
            for a, b in zip(got, want):
                np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-7, atol=1e-12)
    assert f.trace_count == 1


def test_sparse_label_checks_run_on_every_graph_call():
    loss = losses.SparseCategoricalCrossentropy()
    f = lk.function(lambda t, p: loss(t, p))
    p = lk.constant(np.full((2, 3), 1 / 3))
    f(lk.constant([0.0, 2.0]), p)
    with pytest.raises(ValueError, match=r"sparse_categorical_crossentropy: label 3\.0 is out "
                                         r"of range"):
        f(lk.constant([0.0, 3.0]), p)
    with pytest.warns(UserWarning, match="truncated"):
        np.testing.assert_allclose(f(lk.constant([0.5, 1.0]), p), f(lk.constant([0.0, 1.0]), p))
    assert f.trace_count == 1


def test_categorical_hinge_and_cosine_similarity_classes_and_names():
    rng = np.random.default_rng(3)
    y_true = np.eye(4, dtype=np.float32)[rng.integers(0, 4, 6)]
    y_pred = rng.standard_normal((6, 4)).astype(np.float32)
    w = rng.uniform(0.5, 2.0, 6).astype(np.float32)
    pos = (y_true * y_pred).sum(-1)
    neg = ((1 - y_true) * y_pred).max(-1)
    hinge_ref = np.maximum(neg - pos + 1, 0)
    got = lk.losses.CategoricalHinge()(y_true, y_pred, sample_weight=w)
    np.testing.assert_allclose(float(got), (hinge_ref * w).sum() / 6, rtol=1e-5)
    n = lambda a: a / np.sqrt(np.maximum((a * a).sum(-1, keepdims=True), 1e-12))  # noqa: E731
    cos_ref = -(n(y_true) * n(y_pred)).sum(-1)
    np.testing.assert_allclose(float(lk.losses.CosineSimilarity()(y_true, y_pred)),
                               cos_ref.mean(), rtol=1e-5)
    cos0 = lk.losses.CosineSimilarity(axis=0)
    np.testing.assert_allclose(float(cos0(y_true, y_pred)), (-(n(y_true.T) * n(y_pred.T))
                                                             .sum(-1)).mean(), rtol=1e-5)
    assert lk.losses.CosineSimilarity.from_config(cos0.get_config()).get_config() == \
        cos0.get_config()
    for name, cls in (("categorical_hinge", lk.losses.CategoricalHinge),
                      ("cosine_similarity", lk.losses.CosineSimilarity)):
        loss = lk.losses.get(name)
        assert type(loss) is cls and loss.name == name
