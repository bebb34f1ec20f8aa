"""Metric results against NumPy references written here, over several weighted updates."""
import numpy as np
import pytest

from layerkit import metrics

EPS = 1e-7
RNG = np.random.default_rng(7)


def _batches(make, n=3):
    """n batches (y_true, y_pred, sample_weight); the first unweighted."""
    out = []
    for i in range(n):
        t, p = make(RNG)
        w = None if i == 0 else RNG.uniform(0.0, 2.0, len(t)).astype(np.float32)
        out.append((t, p, w))
    return out


def _run(metric, batches):
    for t, p, w in batches:
        metric.update_state(t, p, sample_weight=w)
    return metric.result().numpy()


def _weighted_mean(per_sample, batches):
    values = np.concatenate([per_sample(t, p) for t, p, _ in batches])
    weights = np.concatenate([np.ones(len(t)) if w is None else w for t, _, w in batches])
    return np.sum(values * weights) / np.sum(weights)


def _reg(rng):
    return rng.normal(size=(6, 4)).astype(np.float32), rng.normal(size=(6, 4)).astype(np.float32)


def _pos(rng):
    return (rng.poisson(2.0, (6, 4)).astype(np.float32),
            rng.uniform(0.1, 3.0, (6, 4)).astype(np.float32))


def _prob(rng):
    t, p = rng.uniform(size=(6, 4)), rng.uniform(size=(6, 4))
    return ((t / t.sum(1, keepdims=True)).astype(np.float32),
            (p / p.sum(1, keepdims=True)).astype(np.float32))


def _binary(rng):
    return rng.integers(0, 2, (6, 4)).astype(np.float32), rng.normal(size=(6, 4)).astype(
        np.float32)


def _onehot(rng):
    return np.eye(4, dtype=np.float32)[rng.integers(0, 4, 6)], rng.normal(size=(6, 4)).astype(
        np.float32)


def _unit(x):
    return x / np.sqrt(np.maximum(np.sum(x * x, -1, keepdims=True), 1e-12))


def _signed(t):
    return 2 * t - 1 if np.all((t == 0) | (t == 1)) else t


# metric class, data, per-sample NumPy reference
MEAN_CASES = {
    "mape": (metrics.MeanAbsolutePercentageError, _reg,
             lambda t, p: 100 * np.mean(np.abs(t - p) / np.maximum(np.abs(t), EPS), -1)),
    "msle": (metrics.MeanSquaredLogarithmicError, _pos,
             lambda t, p: np.mean((np.log1p(p) - np.log1p(t)) ** 2, -1)),
    "logcosh": (metrics.LogCoshError, _reg, lambda t, p: np.mean(np.log(np.cosh(p - t)), -1)),
    "cosine": (metrics.CosineSimilarity, _reg, lambda t, p: np.sum(_unit(t) * _unit(p), -1)),
    "poisson": (metrics.Poisson, _pos, lambda t, p: np.mean(p - t * np.log(p + EPS), -1)),
    "kld": (metrics.KLDivergence, _prob,
            lambda t, p: np.sum(t * np.log(np.clip(t, EPS, 1) / np.clip(p, EPS, 1)), -1)),
    "hinge": (metrics.Hinge, _binary,
              lambda t, p: np.mean(np.maximum(1 - _signed(t) * p, 0), -1)),
    "squared_hinge": (metrics.SquaredHinge, _binary,
                      lambda t, p: np.mean(np.maximum(1 - _signed(t) * p, 0) ** 2, -1)),
    "categorical_hinge": (metrics.CategoricalHinge, _onehot,
                          lambda t, p: np.maximum(np.max((1 - t) * p, -1) - np.sum(t * p, -1)
                                                  + 1, 0)),
    "mse": (metrics.MeanSquaredError, _reg, lambda t, p: np.mean((t - p) ** 2, -1)),
    "pearson": (metrics.PearsonCorrelation, _reg,
                lambda t, p: np.array([np.corrcoef(a, b)[0, 1] for a, b in zip(t, p)])),
    "concordance": (metrics.ConcordanceCorrelation, _reg, lambda t, p: np.mean(
        2 * (t - p.mean(-1, keepdims=True)) * (p - p.mean(-1, keepdims=True))
        / (t.var(-1, keepdims=True) + p.var(-1, keepdims=True)
           + (t.mean(-1, keepdims=True) - p.mean(-1, keepdims=True)) ** 2 + EPS), -1)),
}


@pytest.mark.parametrize("case", sorted(MEAN_CASES))
def test_mean_metrics_match_numpy(case):
    cls, make, ref = MEAN_CASES[case]
    batches = _batches(make)
    m = cls()
    np.testing.assert_allclose(_run(m, batches), _weighted_mean(ref, batches), rtol=1e-5)
    m.reset_state()
    assert m.result().numpy() == 0.0
    np.testing.assert_allclose(_run(m, batches[1:]), _weighted_mean(ref, batches[1:]),
                               rtol=1e-5)


def test_root_mean_squared_error():
    batches = _batches(_reg)
    m = metrics.RootMeanSquaredError()
    expected = np.sqrt(_weighted_mean(lambda t, p: np.mean((t - p) ** 2, -1), batches))
    np.testing.assert_allclose(_run(m, batches), expected, rtol=1e-5)


@pytest.mark.parametrize("aggregation", [None, "uniform_average", "variance_weighted_average"])
def test_r2_score(aggregation):
    batches = _batches(_reg)
    t = np.concatenate([b[0] for b in batches])
    p = np.concatenate([b[1] for b in batches])
    w = np.concatenate([np.ones(6) if b[2] is None else b[2] for b in batches])[:, None]
    mean = np.sum(w * t, 0) / np.sum(w * np.ones_like(t), 0)
    total = np.sum(w * (t - mean) ** 2, 0)
    per = 1 - np.sum(w * (t - p) ** 2, 0) / total
    expected = {None: per, "uniform_average": per.mean(),
                "variance_weighted_average": np.sum(per * total) / np.sum(total)}[aggregation]
    np.testing.assert_allclose(_run(metrics.R2Score(class_aggregation=aggregation), batches),
                               expected, rtol=1e-4)
    n, k = t.size, 3
    adjusted = 1 - (1 - per.mean()) * (n - 1) / (n - k - 1)
    np.testing.assert_allclose(_run(metrics.R2Score(num_regressors=k), batches), adjusted,
                               rtol=1e-4)


def test_r2_score_rejects_bad_input():
    with pytest.raises(ValueError, match="class_aggregation"):
        metrics.R2Score(class_aggregation="median")
    with pytest.raises(ValueError, match="2D"):
        metrics.R2Score().update_state(np.zeros(3), np.zeros(3))


def _f_beta(t, p, w, beta, threshold, average):
    pred = (p > threshold) if threshold is not None else \
        ((p >= p.max(-1, keepdims=True)) & (np.abs(p) > 1e-9))
    pred = pred.astype(np.float64)
    axis = None if average == "micro" else 0
    tp = np.sum(w * pred * t, axis)
    fp = np.sum(w * pred * (1 - t), axis)
    fn = np.sum(w * (1 - pred) * t, axis)
    prec, rec = tp / (tp + fp + EPS), tp / (tp + fn + EPS)
    f = (1 + beta ** 2) * prec * rec / (beta ** 2 * prec + rec + EPS)
    if average == "weighted":
        support = np.sum(w * t, 0)
        return np.sum(f * support / (support.sum() + EPS))
    return f if average is None else np.mean(f)


@pytest.mark.parametrize("average", [None, "micro", "macro", "weighted"])
@pytest.mark.parametrize("threshold", [None, 0.5])
def test_f_scores(average, threshold):
    batches = _batches(lambda r: (r.integers(0, 2, (8, 4)).astype(np.float32),
                                  r.uniform(size=(8, 4)).astype(np.float32)))
    t = np.concatenate([b[0] for b in batches])
    p = np.concatenate([b[1] for b in batches])
    w = np.concatenate([np.ones(8) if b[2] is None else b[2] for b in batches])[:, None]
    f1 = metrics.F1Score(average=average, threshold=threshold)
    np.testing.assert_allclose(_run(f1, batches), _f_beta(t, p, w, 1.0, threshold, average),
                               rtol=1e-5)
    f2 = metrics.FBetaScore(average=average, beta=2.0, threshold=threshold)
    np.testing.assert_allclose(_run(f2, batches), _f_beta(t, p, w, 2.0, threshold, average),
                               rtol=1e-5)
    f2.reset_state()
    assert np.all(f2.result().numpy() == 0)


def test_f_score_rejects_bad_arguments():
    with pytest.raises(ValueError, match="average"):
        metrics.F1Score(average="samples")
    with pytest.raises(ValueError, match="beta"):
        metrics.FBetaScore(beta=2)
    with pytest.raises(ValueError, match="threshold"):
        metrics.F1Score(threshold=1.5)


def _rates(t, p, w, thresholds):
    out = []
    for th in thresholds:
        pos = p > th
        tp, fp = np.sum(w * (pos & (t == 1))), np.sum(w * (pos & (t == 0)))
        fn, tn = np.sum(w * (~pos & (t == 1))), np.sum(w * (~pos & (t == 0)))
        out.append((tp / (tp + fn) if tp + fn else 0.0, tn / (tn + fp) if tn + fp else 0.0,
                    tp / (tp + fp) if tp + fp else 0.0))
    return np.array(out)  # columns: recall (sensitivity), specificity, precision


@pytest.mark.parametrize("cls,kw,constrained,dependent", [
    (metrics.SensitivityAtSpecificity, "specificity", 1, 0),
    (metrics.SpecificityAtSensitivity, "sensitivity", 0, 1),
    (metrics.PrecisionAtRecall, "recall", 0, 2),
    (metrics.RecallAtPrecision, "precision", 2, 0),
])
@pytest.mark.parametrize("value", [0.3, 0.7])
def test_rate_at_rate(cls, kw, constrained, dependent, value):
    batches = _batches(lambda r: (r.integers(0, 2, 20).astype(np.float32),
                                  r.uniform(size=20).astype(np.float32)))
    t = np.concatenate([b[0] for b in batches])
    p = np.concatenate([b[1] for b in batches])
    w = np.concatenate([np.ones(20) if b[2] is None else b[2] for b in batches])
    thresholds = np.concatenate([[0.0], np.arange(1, 29) / 29, [1.0]])
    rates = _rates(t, p, w, thresholds)
    feasible = rates[:, constrained] >= value
    expected = np.max(np.where(feasible, rates[:, dependent], 0.0), initial=0.0)
    m = cls(**{kw: value}, num_thresholds=30)
    np.testing.assert_allclose(_run(m, batches), expected, rtol=1e-5)
    with pytest.raises(ValueError, match=kw):
        cls(**{kw: 1.5})


def _confusion(t, p, w, n):
    cm = np.zeros((n, n))
    for a, b, c in zip(t.ravel(), p.ravel(), w.ravel()):
        if 0 <= a < n and 0 <= b < n:
            cm[a, b] += c
    return cm


def _mean_iou(cm, ids):
    tp = np.diag(cm)
    denom = cm.sum(0) + cm.sum(1) - tp
    ious = [tp[i] / denom[i] for i in ids if denom[i] > 0]
    return np.mean(ious) if ious else 0.0


def test_iou_family():
    ts = [RNG.integers(0, 4, (5, 3)) for _ in range(3)]
    ps = [RNG.integers(0, 4, (5, 3)) for _ in range(3)]
    ws = [np.ones((5, 3), np.int32)] + [RNG.integers(0, 3, (5, 3)) for _ in range(2)]
    cm = sum(_confusion(t, p, w, 4) for t, p, w in zip(ts, ps, ws))
    mean_iou, iou = metrics.MeanIoU(num_classes=4), metrics.IoU(4, target_class_ids=[1, 3])
    for i, (t, p, w) in enumerate(zip(ts, ps, ws)):
        for m in (mean_iou, iou):
            m.update_state(t, p, sample_weight=None if i == 0 else w)
    np.testing.assert_allclose(float(mean_iou.result()), _mean_iou(cm, range(4)), rtol=1e-5)
    np.testing.assert_allclose(float(iou.result()), _mean_iou(cm, [1, 3]), rtol=1e-5)
    np.testing.assert_array_equal(mean_iou.total_cm.numpy(), cm)
    # one-hot inputs go through argmax
    oh = metrics.OneHotMeanIoU(num_classes=4)
    oh.update_state(np.eye(4)[ts[0].ravel()], np.eye(4)[ps[0].ravel()] * 0.9)
    np.testing.assert_allclose(float(oh.result()),
                               _mean_iou(_confusion(ts[0], ps[0], ws[0], 4), range(4)),
                               rtol=1e-5)
    # BinaryIoU: predictions >= threshold are class 1; float weights kept with a float dtype
    b = metrics.BinaryIoU(threshold=0.3, dtype="float32")
    yt, yp, w = np.array([0, 1, 0, 1]), np.array([0.1, 0.2, 0.4, 0.7]), np.array(
        [0.2, 0.3, 0.4, 0.1])
    b.update_state(yt, yp, sample_weight=w)
    cm = _confusion(yt, (yp >= 0.3).astype(int), w, 2)
    np.testing.assert_allclose(float(b.result()), _mean_iou(cm, [0, 1]), rtol=1e-5)
    with pytest.warns(UserWarning, match="float sample_weight"):
        metrics.BinaryIoU().update_state(yt, yp, sample_weight=w)
    with pytest.raises(ValueError, match="target_class_ids"):
        metrics.IoU(num_classes=2, target_class_ids=[2])
    mean_iou.reset_state()
    assert float(mean_iou.result()) == 0.0
