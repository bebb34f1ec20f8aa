"""Stateful metrics with Keras 3 definitions: ``update_state`` / ``result`` / ``reset_state``.

How metrics run on NumPy values and become graph nodes inside ``lk.function`` is
described in :mod:`layerkit.metrics.base_metric`; each family lives in its own module.

String names: ``'accuracy'``/``'acc'`` (the model resolves it to binary, categorical or
sparse categorical accuracy from the shapes, like Keras), ``'binary_accuracy'``,
``'categorical_accuracy'``, ``'sparse_categorical_accuracy'``,
``'top_k_categorical_accuracy'``, ``'sparse_top_k_categorical_accuracy'``,
``'mse'``/``'mean_squared_error'``, ``'mae'``/``'mean_absolute_error'``, ``'precision'``,
``'recall'``, ``'auc'``.
"""
from __future__ import annotations

from typing import Any

from layerkit.losses import (
    KLD,
    MAE,
    MAPE,
    MSE,
    MSLE,
    binary_crossentropy,
    categorical_crossentropy,
    categorical_hinge,
    hinge,
    huber,
    kl_divergence,
    kld,
    kullback_leibler_divergence,
    log_cosh,
    logcosh,
    mae,
    mape,
    mean_absolute_error,
    mean_absolute_percentage_error,
    mean_squared_error,
    mean_squared_logarithmic_error,
    mse,
    msle,
    poisson,
    sparse_categorical_crossentropy,
    squared_hinge,
)
from layerkit.metrics.accuracy_metrics import (
    Accuracy,
    BinaryAccuracy,
    CategoricalAccuracy,
    SparseCategoricalAccuracy,
    SparseTopKCategoricalAccuracy,
    TopKCategoricalAccuracy,
    accuracy,
    binary_accuracy,
    categorical_accuracy,
    sparse_categorical_accuracy,
    sparse_top_k_categorical_accuracy,
    top_k_categorical_accuracy,
)
from layerkit.metrics.base_metric import Metric, _np, _shape_of, _snake
from layerkit.metrics.confusion_metrics import (
    AUC,
    FalseNegatives,
    FalsePositives,
    Precision,
    PrecisionAtRecall,
    Recall,
    RecallAtPrecision,
    SensitivityAtSpecificity,
    SensitivitySpecificityBase,
    SpecificityAtSensitivity,
    TrueNegatives,
    TruePositives,
)
from layerkit.metrics.correlation_metrics import (
    ConcordanceCorrelation,
    PearsonCorrelation,
    concordance_correlation,
    pearson_correlation,
)
from layerkit.metrics.f_score_metrics import F1Score, FBetaScore
from layerkit.metrics.hinge_metrics import CategoricalHinge, Hinge, SquaredHinge
from layerkit.metrics.iou_metrics import BinaryIoU, IoU, MeanIoU, OneHotIoU, OneHotMeanIoU
from layerkit.metrics.probabilistic_metrics import (
    BinaryCrossentropy,
    CategoricalCrossentropy,
    KLDivergence,
    Poisson,
    SparseCategoricalCrossentropy,
)
from layerkit.metrics.reduction_metrics import Mean, MeanMetricWrapper, Sum
from layerkit.metrics.regression_metrics import (
    CosineSimilarity,
    LogCoshError,
    MeanAbsoluteError,
    MeanAbsolutePercentageError,
    MeanSquaredError,
    MeanSquaredLogarithmicError,
    R2Score,
    RootMeanSquaredError,
)

_CLASSES = [Mean, Sum, Accuracy, BinaryAccuracy, CategoricalAccuracy, SparseCategoricalAccuracy,
            TopKCategoricalAccuracy, SparseTopKCategoricalAccuracy, MeanSquaredError,
            MeanAbsoluteError, MeanAbsolutePercentageError, MeanSquaredLogarithmicError,
            RootMeanSquaredError, CosineSimilarity, LogCoshError, R2Score, KLDivergence,
            Poisson, BinaryCrossentropy, CategoricalCrossentropy, SparseCategoricalCrossentropy,
            Hinge, SquaredHinge, CategoricalHinge, Precision, Recall, AUC, PrecisionAtRecall,
            RecallAtPrecision, SensitivityAtSpecificity, SpecificityAtSensitivity,
            TruePositives, FalsePositives, TrueNegatives, FalseNegatives, FBetaScore,
            F1Score, IoU, BinaryIoU, MeanIoU, OneHotIoU, OneHotMeanIoU, PearsonCorrelation,
            ConcordanceCorrelation]
__all__ = ["Metric", "MeanMetricWrapper", "SensitivitySpecificityBase", "Mean", "Sum",
           "Accuracy", "BinaryAccuracy", "CategoricalAccuracy", "SparseCategoricalAccuracy",
           "TopKCategoricalAccuracy", "SparseTopKCategoricalAccuracy", "MeanSquaredError",
           "MeanAbsoluteError", "MeanAbsolutePercentageError", "MeanSquaredLogarithmicError",
           "RootMeanSquaredError", "CosineSimilarity", "LogCoshError", "R2Score", "KLDivergence",
           "Poisson", "BinaryCrossentropy", "CategoricalCrossentropy",
           "SparseCategoricalCrossentropy", "Hinge", "SquaredHinge", "CategoricalHinge",
           "Precision", "Recall", "AUC", "PrecisionAtRecall", "RecallAtPrecision",
           "SensitivityAtSpecificity", "SpecificityAtSensitivity", "TruePositives",
           "FalsePositives", "TrueNegatives", "FalseNegatives", "FBetaScore", "F1Score",
           "IoU", "BinaryIoU", "MeanIoU", "OneHotIoU", "OneHotMeanIoU", "PearsonCorrelation",
           "ConcordanceCorrelation", "pearson_correlation", "concordance_correlation", "accuracy",
           "binary_accuracy", "categorical_accuracy", "sparse_categorical_accuracy",
           "top_k_categorical_accuracy", "sparse_top_k_categorical_accuracy",
           "mean_squared_error", "mean_absolute_error", "mean_absolute_percentage_error",
           "mean_squared_logarithmic_error", "huber", "log_cosh", "logcosh", "kl_divergence",
           "kullback_leibler_divergence", "poisson", "hinge", "squared_hinge",
           "categorical_hinge", "binary_crossentropy", "categorical_crossentropy",
           "sparse_categorical_crossentropy", "MSE", "MAE", "MAPE", "MSLE", "KLD", "mse", "mae",
           "mape", "msle", "kld", "get", "serialize", "deserialize"]


# ---- names ---------------------------------------------------------------------------------
# Keras's strings: every class by its name and in snake case, and the short aliases. A
# metric made from a string is named by that string (History shows 'mse', 'mape', ...).
_BY_NAME = {k: c for c in _CLASSES for k in (c.__name__, _snake(c.__name__))}
_BY_NAME.update({
    "acc": Accuracy, "mse": MeanSquaredError, "mae": MeanAbsoluteError,
    "mape": MeanAbsolutePercentageError, "msle": MeanSquaredLogarithmicError,
    "kld": KLDivergence, "kl_divergence": KLDivergence,
    "kullback_leibler_divergence": KLDivergence, "logcosh": LogCoshError,
    "log_cosh": LogCoshError, "rmse": RootMeanSquaredError, "mean_io_u": MeanIoU,
    "f1_score": F1Score, "fbeta_score": FBetaScore,
})


def get(identifier: Any) -> Metric:
    """A metric from a string name, a class, a config dict, a function or an instance.

    A plain function ``fn(y_true, y_pred)`` becomes a :class:`MeanMetricWrapper` named
    after it. ``'accuracy'`` here means exact-match :class:`Accuracy`; ``Model.compile``
    resolves it by the shapes instead (see :func:`resolve`).

    Raises:
        ValueError: an unknown name, naming the known ones.
    """
    if isinstance(identifier, Metric):
        return identifier
    if isinstance(identifier, str):
        cls = _BY_NAME.get(identifier) or _BY_NAME.get(identifier.lower())
        if cls is None:
            raise ValueError(
                f"unknown metric {identifier!r}; expected one of {sorted(_BY_NAME)}, a Metric "
                f"instance or a function fn(y_true, y_pred)"
            )
        m = cls()
        m.name = identifier
        return m
    if isinstance(identifier, dict):
        obj = deserialize(identifier)
        return obj if isinstance(obj, Metric) else get(obj)
    if isinstance(identifier, type) and issubclass(identifier, Metric):
        return identifier()
    if callable(identifier):
        return MeanMetricWrapper(lambda t, p, _f=identifier: _np(_f(t, p)),
                                 name=getattr(identifier, "__name__", "metric"))
    raise ValueError(f"could not interpret metric identifier {identifier!r}")


def resolve(identifier, y_true, y_pred, loss=None) -> Metric:
    """Like :func:`get`, but ``'accuracy'``/``'acc'`` picks the variant Keras would.

    Binary when predictions have a last dimension of 1 (or the loss is binary
    crossentropy), sparse categorical when labels have lower rank or a last dimension
    of 1 against wider predictions, else categorical. ``'crossentropy'``/``'ce'`` and
    ``'top_k'`` names follow the same rule.
    """
    if identifier not in ("accuracy", "acc"):
        return get(identifier)
    yt, yp = _shape_of(y_true), _shape_of(y_pred)
    loss_name = getattr(loss, "name", loss) if loss is not None else ""
    loss_name = loss_name if isinstance(loss_name, str) else ""
    cls: type[Metric]
    if (yp and yp[-1] == 1) or "binary" in loss_name:
        cls = BinaryAccuracy
    elif len(yt) < len(yp) or (yt and yt[-1] == 1 and yp and yp[-1] > 1) or \
            "sparse" in loss_name:
        cls = SparseCategoricalAccuracy
    else:
        cls = CategoricalAccuracy
    return cls(name=identifier)


def serialize(metric: Any) -> dict | str:
    """Keras's config of a metric (see ``lk.saving``)."""
    from layerkit.saving.serialization_lib import serialize_keras_object

    return serialize_keras_object(metric)


def deserialize(config: dict[str, Any], custom_objects: dict | None = None) -> Any:
    """Rebuild a metric (without state) from :func:`serialize` output or Keras's."""
    from layerkit.saving.serialization_lib import deserialize_keras_object

    return deserialize_keras_object(config, custom_objects, kind="metrics")
