"""Metric configs, names, aliases, and use in compile/fit (History names as Keras)."""
import json
import warnings

import numpy as np
import pytest

import layerkit as lk
from layerkit import losses, metrics
from layerkit.autodiff.function import EagerFallbackWarning

NEW = [
    metrics.MeanAbsolutePercentageError(), metrics.MeanSquaredLogarithmicError(),
    metrics.RootMeanSquaredError(), metrics.CosineSimilarity(axis=1), metrics.LogCoshError(),
    metrics.R2Score(class_aggregation=None, num_regressors=1), metrics.KLDivergence(),
    metrics.Poisson(), metrics.BinaryCrossentropy(from_logits=True, label_smoothing=0.1),
    metrics.CategoricalCrossentropy(axis=1), metrics.SparseCategoricalCrossentropy(
        ignore_class=0), metrics.Hinge(), metrics.SquaredHinge(), metrics.CategoricalHinge(),
    metrics.PrecisionAtRecall(0.4, num_thresholds=20, class_id=1),
    metrics.RecallAtPrecision(0.6), metrics.SensitivityAtSpecificity(0.5, name="sas"),
    metrics.SpecificityAtSensitivity(0.2), metrics.F1Score(average="macro", threshold=0.3),
    metrics.FBetaScore(average="weighted", beta=0.5), metrics.IoU(3, [0, 2], ignore_class=1),
    metrics.BinaryIoU([1], threshold=0.2), metrics.MeanIoU(3, sparse_y_pred=False),
    metrics.OneHotIoU(4, [3]), metrics.OneHotMeanIoU(5, axis=1),
    metrics.Precision(thresholds=[0.2, 0.6], top_k=2), metrics.Recall(class_id=2),
    metrics.TopKCategoricalAccuracy(k=2), metrics.SparseTopKCategoricalAccuracy(k=3),
    metrics.TruePositives(), metrics.FalsePositives(thresholds=[0.1, 0.7]),
    metrics.TrueNegatives(0.2), metrics.FalseNegatives(name="fn"),
    metrics.PearsonCorrelation(axis=0), metrics.ConcordanceCorrelation(name="ccc"),
]


@pytest.mark.parametrize("metric", NEW, ids=lambda m: type(m).__name__)
def test_config_round_trip(metric):
    config = metric.get_config()
    assert json.loads(json.dumps(config)) == config  # plain JSON
    again = type(metric).from_config(config)
    assert type(again) is type(metric) and again.get_config() == config
    restored = metrics.deserialize(json.loads(json.dumps(metrics.serialize(metric))))
    assert type(restored) is type(metric) and restored.get_config() == config


def test_state_variables_named_as_keras():
    f1 = metrics.F1Score()
    f1.update_state(np.eye(3), np.eye(3))
    assert [v.name for v in f1.variables] == [
        "f1_score/true_positives", "f1_score/false_positives", "f1_score/false_negatives",
        "f1_score/intermediate_weights"]
    assert [v.name.split("/")[1] for v in metrics.MeanIoU(2).variables] == [
        "total_confusion_matrix"]
    assert metrics.MeanIoU(2).name == "mean_io_u"
    assert metrics.MeanIoU(2).total_cm.dtype == np.int32  # Keras's int state
    assert [v.name.split("/")[1] for v in metrics.PrecisionAtRecall(0.5).variables] == [
        "true_positives", "false_positives", "true_negatives", "false_negatives"]


def test_string_names():
    for name, cls in [("mape", metrics.MeanAbsolutePercentageError),
                      ("msle", metrics.MeanSquaredLogarithmicError),
                      ("kld", metrics.KLDivergence), ("cosine_similarity",
                                                       metrics.CosineSimilarity),
                      ("top_k_categorical_accuracy", metrics.TopKCategoricalAccuracy),
                      ("r2_score", metrics.R2Score), ("F1Score", metrics.F1Score),
                      ("root_mean_squared_error", metrics.RootMeanSquaredError),
                      ("categorical_hinge", metrics.CategoricalHinge)]:
        m = metrics.get(name)
        assert type(m) is cls and m.name == name
    with pytest.raises(ValueError, match="unknown metric 'nope'"):
        metrics.get("nope")


def test_function_aliases():
    t = np.array([[1.0, 2.0], [0.5, 0.0]], np.float32)
    p = np.array([[1.5, 1.0], [0.0, 0.5]], np.float32)
    mse = np.mean((t - p) ** 2, -1)
    for fn in (losses.MSE, losses.mse, metrics.MSE, metrics.mse, metrics.mean_squared_error):
        np.testing.assert_allclose(fn(t, p).numpy(), mse, rtol=1e-6)
    for fn in (losses.MAE, metrics.mae):
        np.testing.assert_allclose(fn(t, p).numpy(), np.mean(np.abs(t - p), -1), rtol=1e-6)
    assert losses.MAPE is losses.mean_absolute_percentage_error is metrics.mape
    assert losses.MSLE is losses.msle is losses.mean_squared_logarithmic_error
    assert losses.KLD is losses.kld is losses.kullback_leibler_divergence is \
        losses.kl_divergence
    assert losses.logcosh is losses.log_cosh and losses.huber_loss is losses.huber
    assert metrics.binary_crossentropy is losses.binary_crossentropy
    onehot = np.eye(3, dtype=np.float32)[[0, 2]]
    scores = np.array([[0.3, 0.6, 0.1], [0.2, 0.1, 0.5]], np.float32)
    expected = np.maximum(np.max((1 - onehot) * scores, -1) - np.sum(onehot * scores, -1) + 1,
                          0)
    np.testing.assert_allclose(losses.categorical_hinge(onehot, scores).numpy(), expected,
                               rtol=1e-6)
    unit = scores / np.linalg.norm(scores, axis=-1, keepdims=True)
    target = onehot / np.linalg.norm(onehot, axis=-1, keepdims=True)
    np.testing.assert_allclose(losses.cosine_similarity(onehot, scores).numpy(),
                               -np.sum(unit * target, -1), rtol=1e-6)


def test_loss_function_gradients():
    from layerkit.autodiff.check import check_grads

    rng = np.random.default_rng(3)
    t = np.eye(4)[rng.integers(0, 4, 5)]
    p = rng.normal(size=(5, 4))
    check_grads(lambda y: losses.categorical_hinge(t, y), [p])
    check_grads(lambda y: losses.cosine_similarity(t + 0.1, y), [p])


STRINGS = {"mse": "mse", "mae": "mae", "mape": "mape", "msle": "msle",
           "cosine_similarity": "cosine_similarity", "kl_divergence": "kl_divergence",
           "top_k_categorical_accuracy": "top_k_categorical_accuracy", "hinge": "hinge",
           "squared_hinge": "squared_hinge", "categorical_hinge": "categorical_hinge",
           "root_mean_squared_error": "root_mean_squared_error", "r2_score": "r2_score",
           "logcosh": "logcosh", "poisson": "poisson"}


def test_fit_history_names_and_values():
    rng = np.random.default_rng(0)
    x = rng.random((24, 3)).astype("float32")
    y = rng.random((24, 4)).astype("float32")
    model = lk.Sequential([lk.Input((3,)), lk.layers.Dense(4, activation="softplus")])
    objects = [metrics.F1Score(average="micro", threshold=0.5),
               metrics.MeanIoU(4, sparse_y_true=False, sparse_y_pred=False),
               metrics.PrecisionAtRecall(0.5), metrics.R2Score(name="r2")]
    model.compile("sgd", loss="msle", metrics=list(STRINGS) + objects)
    with warnings.catch_warnings():
        warnings.simplefilter("error", EagerFallbackWarning)  # the traced step, no fallback
        history = model.fit(x, y, epochs=2, batch_size=8, verbose=0)
    assert list(history.history) == ["loss", *STRINGS.values(), "f1_score", "mean_io_u",
                                     "precision_at_recall", "r2"]
    # evaluate's values equal the metrics computed eagerly on the whole data
    logs = model.evaluate(x, y, batch_size=24, verbose=0, return_dict=True)
    pred = model.predict(x, verbose=0)
    for name in ("mape", "cosine_similarity", "r2_score", "root_mean_squared_error"):
        m = metrics.get(name)
        m.update_state(y, pred)
        assert logs[name] == pytest.approx(float(m.result()), rel=1e-5)
    assert logs["loss"] == pytest.approx(float(np.mean(
        (np.log1p(pred) - np.log1p(y)) ** 2)), rel=1e-5)


@pytest.mark.parametrize("loss", ["mape", "msle", "kld", "kl_divergence", "logcosh",
                                  "huber_loss", "kullback_leibler_divergence",
                                  losses.MSE, losses.kld, losses.categorical_hinge,
                                  losses.cosine_similarity])
def test_compile_loss_aliases(loss):
    rng = np.random.default_rng(1)
    x, y = rng.random((8, 3)).astype("float32"), rng.random((8, 2)).astype("float32")
    model = lk.Sequential([lk.Input((3,)), lk.layers.Dense(2, activation="sigmoid")])
    model.compile("sgd", loss=loss)
    history = model.fit(x, y, epochs=1, verbose=0)
    assert list(history.history) == ["loss"] and np.isfinite(history.history["loss"][0])


def test_compiled_metrics_survive_save_and_load(tmp_path):
    rng = np.random.default_rng(2)
    x, y = rng.random((16, 3)).astype("float32"), rng.random((16, 4)).astype("float32")
    model = lk.Sequential([lk.Input((3,)), lk.layers.Dense(4, activation="sigmoid")])
    model.compile("adam", loss="msle", metrics=[
        "mape", metrics.F1Score(average="macro", threshold=0.5),
        metrics.MeanIoU(4, sparse_y_true=False, sparse_y_pred=False),
        metrics.R2Score(name="r2"), metrics.PrecisionAtRecall(0.3), metrics.FalseNegatives()])
    model.fit(x, y, epochs=1, verbose=0)
    model.save(tmp_path / "m.keras")
    loaded = lk.models.load_model(tmp_path / "m.keras")
    before = model.evaluate(x, y, verbose=0, return_dict=True)
    after = loaded.evaluate(x, y, verbose=0, return_dict=True)
    assert list(after) == ["loss", "mape", "f1_score", "mean_io_u", "r2",
                           "precision_at_recall", "false_negatives"]
    assert after == pytest.approx(before, rel=1e-6)


def test_reset_states_is_the_tf_keras_2_name_of_reset_state():
    m = lk.metrics.Mean()
    m.update_state([1.0, 3.0])
    assert float(m.result()) == 2.0
    m.reset_states()
    assert float(m.result()) == 0.0 and float(m.count.numpy()) == 0.0
