"""Metrics: Keras's documented values, NumPy references, weighting, state and names."""
import warnings

import numpy as np
import pytest

import layerkit as lk
from layerkit import metrics
from layerkit.autodiff.function import EagerFallbackWarning


def _r(m):
    return float(m.result())


def test_mean_and_sum_weighting():
    m = metrics.Mean()
    m.update_state([1, 3, 5, 7])
    assert _r(m) == 4.0
    m.update_state([[1.0, 3.0], [2.0, 2.0]], sample_weight=[1.0, 3.0])  # row means 2, 2
    assert _r(m) == pytest.approx((16 + 2 + 6) / 8)
    m.reset_state()
    assert _r(m) == 0.0
    m.update_state(lk.constant(2.0), sample_weight=32)  # fit's loss tracker form
    m.update_state(lk.constant(4.0), sample_weight=8)
    assert _r(m) == pytest.approx((64 + 32) / 40)
    s = metrics.Sum()
    s.update_state([1, 3, 5, 7], sample_weight=[1, 0, 1, 1])
    assert _r(s) == 13.0
    assert float(m(6.0)) == pytest.approx((64 + 32 + 6) / 41)  # __call__ updates and returns


def test_accuracies_keras_examples():
    a = metrics.Accuracy()
    a.update_state([[1], [2], [3], [4]], [[0], [2], [3], [4]])
    assert _r(a) == 0.75
    a.reset_state()
    a.update_state([[1], [2], [3], [4]], [[0], [2], [3], [4]], sample_weight=[1, 1, 0, 0])
    assert _r(a) == 0.5
    b = metrics.BinaryAccuracy()
    b.update_state([[1], [1], [0], [0]], [[0.98], [1], [0], [0.6]])
    assert _r(b) == 0.75
    c = metrics.CategoricalAccuracy()
    c.update_state([[0, 0, 1], [0, 1, 0]], [[0.1, 0.9, 0.8], [0.05, 0.95, 0]])
    assert _r(c) == 0.5
    s = metrics.SparseCategoricalAccuracy()
    s.update_state([[2], [1]], [[0.1, 0.6, 0.3], [0.05, 0.95, 0]])
    assert _r(s) == 0.5
    s.update_state(np.array([2, 1]), np.array([[0.1, 0.6, 0.3], [0.05, 0.95, 0]]),
                   sample_weight=[0.7, 0.3])
    assert _r(s) == pytest.approx((1 + 0.3) / (2 + 1.0))
    t = metrics.TopKCategoricalAccuracy(k=1)
    t.update_state([[0, 0, 1], [0, 1, 0]], [[0.1, 0.9, 0.8], [0.05, 0.95, 0]])
    assert _r(t) == 0.5
    t2 = metrics.SparseTopKCategoricalAccuracy(k=2)
    t2.update_state([2, 1, 0], [[0.1, 0.9, 0.8], [0.05, 0.95, 0], [0.1, 0.5, 0.4]])
    assert _r(t2) == pytest.approx(2 / 3)
    # ties at the top-k boundary count as in (TF in_top_k semantics)
    t3 = metrics.SparseTopKCategoricalAccuracy(k=1)
    t3.update_state([1], [[0.5, 0.5, 0.1]])
    assert _r(t3) == 1.0


def test_regression_metrics(rng):
    t, p = rng.random((5, 3)), rng.random((5, 3))
    m = metrics.MeanSquaredError()
    m.update_state(t, p)
    assert _r(m) == pytest.approx(np.mean((t - p) ** 2), rel=1e-6)
    a = metrics.MeanAbsoluteError()
    a.update_state(t, p)
    assert _r(a) == pytest.approx(np.mean(np.abs(t - p)), rel=1e-6)


def test_precision_recall(rng):
    p = metrics.Precision()
    p.update_state([0, 1, 1, 1], [1, 0, 1, 1])
    assert _r(p) == pytest.approx(2 / 3)
    p.reset_state()
    p.update_state([0, 1, 1, 1], [1, 0, 1, 1], sample_weight=[0, 0, 1, 0])
    assert _r(p) == 1.0
    p = metrics.Precision(top_k=2)
    p.update_state([0, 0, 1, 1], [1, 1, 1, 1])
    assert _r(p) == 0.0
    p = metrics.Precision(top_k=4)
    p.update_state([0, 0, 1, 1], [1, 1, 1, 1])
    assert _r(p) == 0.5
    r = metrics.Recall()
    r.update_state([0, 1, 1, 1], [1, 0, 1, 1])
    assert _r(r) == pytest.approx(2 / 3)
    r = metrics.Recall(class_id=1)
    r.update_state([[0, 1], [0, 1], [1, 0]], [[0.2, 0.8], [0.7, 0.3], [0.4, 0.6]])
    assert _r(r) == 0.5
    # several thresholds against a direct count
    y = rng.random(50) > 0.5
    s = rng.random(50)
    thr = [0.2, 0.5, 0.7]
    m = metrics.Precision(thresholds=thr)
    m.update_state(y, s)
    want = [np.sum(y & (s > t)) / np.sum(s > t) for t in thr]
    np.testing.assert_allclose(m.result().numpy(), want, rtol=1e-6)


def _keras_auc_reference(y, s, num_thresholds=200, curve="ROC", w=None):
    w = np.ones_like(s) if w is None else w
    inner = [(i + 1) / (num_thresholds - 1) for i in range(num_thresholds - 2)]
    thr = np.array([-1e-7] + inner + [1 + 1e-7])
    tp = np.array([np.sum(w * (y & (s > t))) for t in thr])
    fp = np.array([np.sum(w * (~y & (s > t))) for t in thr])
    fn = np.array([np.sum(w * (y & ~(s > t))) for t in thr])
    tn = np.array([np.sum(w * (~y & ~(s > t))) for t in thr])
    rec = tp / np.maximum(tp + fn, 1e-300)
    if curve == "ROC":
        x, yy = fp / (fp + tn), rec
    else:
        x, yy = rec, np.where(tp + fp > 0, tp / np.maximum(tp + fp, 1e-300), 0)
    return np.sum((x[:-1] - x[1:]) * (yy[:-1] + yy[1:]) / 2)


def test_auc_matches_keras_thresholding_and_sklearn(rng):
    from sklearn.metrics import roc_auc_score

    y = rng.random(400) > 0.4
    s = np.clip(0.3 * y + rng.random(400) * 0.7, 0, 1)
    m = metrics.AUC()
    m.update_state(y[:250], s[:250])  # streaming over two batches
    m.update_state(y[250:], s[250:])
    assert _r(m) == pytest.approx(_keras_auc_reference(y, s), abs=1e-6)
    assert _r(m) == pytest.approx(roc_auc_score(y, s), abs=5e-3)
    w = rng.random(400)
    mw = metrics.AUC(num_thresholds=50)
    mw.update_state(y, s, sample_weight=w)
    assert _r(mw) == pytest.approx(_keras_auc_reference(y, s, 50, w=w), abs=1e-6)
    doc = metrics.AUC(num_thresholds=3)
    doc.update_state([0, 0, 1, 1], [0, 0.5, 0.3, 0.9])
    assert _r(doc) == 0.75
    pr = metrics.AUC(curve="PR", summation_method="majoring")
    pr.update_state(y, s)
    assert 0.5 < _r(pr) <= 1.0
    interp = metrics.AUC(curve="PR")
    interp.update_state(y, s)
    from sklearn.metrics import average_precision_score
    assert _r(interp) == pytest.approx(average_precision_score(y, s), abs=0.02)
    logits = metrics.AUC(from_logits=True)
    logits.update_state(y, np.log(np.clip(s, 1e-6, 1 - 1e-6) / (1 - np.clip(s, 1e-6, 1 - 1e-6))))
    assert _r(logits) == pytest.approx(_r(m), abs=2e-3)
    ml = metrics.AUC(multi_label=True)
    ml.update_state(np.stack([y, ~y], 1), np.stack([s, 1 - s], 1))
    assert _r(ml) == pytest.approx(_r(m), abs=1e-3)


def test_state_variables_names_and_configs():
    m = metrics.AUC(num_thresholds=10)
    assert set(m._checkpoint_variables()) == {"true_positives", "false_positives",
                                              "true_negatives", "false_negatives"}
    assert all(not v.trainable for v in m.variables)
    assert isinstance(metrics.get("accuracy"), metrics.Accuracy)
    assert metrics.get("acc").name == "acc"
    assert isinstance(metrics.get("mse"), metrics.MeanSquaredError)
    assert isinstance(metrics.get("auc"), metrics.AUC)
    assert isinstance(metrics.get("sparse_top_k_categorical_accuracy"),
                      metrics.SparseTopKCategoricalAccuracy)
    fn_metric = metrics.get(lambda yt, yp: np.abs(yt - yp))
    fn_metric.update_state([1.0, 2.0], [1.5, 2.0])
    assert _r(fn_metric) == 0.25
    again = metrics.deserialize(metrics.serialize(metrics.BinaryAccuracy(threshold=0.7)))
    assert isinstance(again, metrics.BinaryAccuracy) and again._fn_kwargs["threshold"] == 0.7
    with pytest.raises(ValueError, match="unknown metric 'acuracy'"):
        metrics.get("acuracy")


def test_accuracy_resolution_like_keras():
    y_sparse, y_onehot = np.zeros(4), np.zeros((4, 3))
    probs, binary = np.zeros((4, 3)), np.zeros((4, 1))
    assert isinstance(metrics.resolve("accuracy", y_sparse, probs),
                      metrics.SparseCategoricalAccuracy)
    assert isinstance(metrics.resolve("acc", y_sparse[:, None], probs),
                      metrics.SparseCategoricalAccuracy)
    assert isinstance(metrics.resolve("accuracy", y_onehot, probs), metrics.CategoricalAccuracy)
    assert isinstance(metrics.resolve("accuracy", binary, binary), metrics.BinaryAccuracy)
    assert metrics.resolve("acc", binary, binary).name == "acc"


def test_bad_inputs():
    with pytest.raises(ValueError, match=r"sparse_categorical_accuracy.*\(3,\).*\(2, 4\)"):
        metrics.SparseCategoricalAccuracy().update_state([0, 1, 2], np.zeros((2, 4)))
    with pytest.raises(ValueError, match="thresholds"):
        metrics.Precision(thresholds=1.5)
    with pytest.raises(ValueError, match="num_thresholds"):
        metrics.AUC(num_thresholds=1)


_GRAPH_CASES = [
    (lambda: metrics.Mean(), "values"),
    (lambda: metrics.Sum(), "values"),
    (lambda: metrics.Accuracy(), "exact"),
    (lambda: metrics.BinaryAccuracy(), "binary"),
    (lambda: metrics.CategoricalAccuracy(), "onehot"),
    (lambda: metrics.SparseCategoricalAccuracy(), "labels"),
    (lambda: metrics.TopKCategoricalAccuracy(k=2), "onehot"),
    (lambda: metrics.SparseTopKCategoricalAccuracy(k=2), "labels"),
    (lambda: metrics.MeanSquaredError(), "onehot"),
    (lambda: metrics.MeanAbsoluteError(), "onehot"),
    (lambda: metrics.Precision(thresholds=[0.3, 0.6]), "binary"),
    (lambda: metrics.Recall(), "binary"),
    (lambda: metrics.AUC(num_thresholds=15, curve="PR"), "binary"),
]


def _graph_batch(kind, rng):
    p = rng.random((8, 4)).astype(np.float32)
    if kind == "values":
        return (lk.constant(p),), {"sample_weight": lk.constant(rng.random(8).astype(np.float32))}
    if kind == "exact":
        return (lk.constant(rng.integers(0, 3, 8)), lk.constant(rng.integers(0, 3, 8))), {}
    if kind == "labels":
        y = rng.integers(0, 4, 8)
        return (lk.constant(y if rng.random() < 0.5 else p.argmax(1)), lk.constant(p)), {}
    if kind == "onehot":
        return (lk.constant(np.eye(4, dtype=np.float32)[rng.integers(0, 4, 8)]),
                lk.constant(p)), {}
    return (lk.constant(rng.integers(0, 2, (8, 1)).astype(np.float32)),
            lk.constant(p[:, :1])), {"sample_weight": lk.constant(rng.random(8).astype(np.float32))}


@pytest.mark.parametrize("make,kind", _GRAPH_CASES,
                         ids=[type(m()).__name__ for m, _ in _GRAPH_CASES])
def test_metrics_inside_lk_function_match_eager(make, kind):
    graph_m, eager_m = make(), make()

    @lk.function
    def step(args, kwargs):
        graph_m.update_state(*args, **kwargs)
        return graph_m.result()

    rng = np.random.default_rng(0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", EagerFallbackWarning)
        for _ in range(3):
            args, kwargs = _graph_batch(kind, rng)
            got = step(args, kwargs)
            eager_m.update_state(*args, **kwargs)
            np.testing.assert_allclose(got.numpy(), eager_m.result().numpy(), rtol=1e-6)
    assert step.trace_count == 1
    for a, b in zip(graph_m.variables, eager_m.variables):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
