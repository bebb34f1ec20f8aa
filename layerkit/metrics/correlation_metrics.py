"""Correlation metrics: Pearson's and the concordance correlation, per sample along an axis."""
from __future__ import annotations

import numpy as np

from layerkit._core.types import DTypeLike, TensorLike
from layerkit.metrics.base_metric import EPSILON, squeeze_or_expand_to_same_rank
from layerkit.metrics.reduction_metrics import MeanMetricWrapper


def _pair(y_true: TensorLike, y_pred: TensorLike) -> tuple[np.ndarray, np.ndarray]:
    y_pred = np.asarray(y_pred)
    if y_pred.dtype.kind != "f":
        y_pred = y_pred.astype(np.float32)
    y_true = np.asarray(y_true).astype(y_pred.dtype, copy=False)
    return squeeze_or_expand_to_same_rank(y_true, y_pred)


def pearson_correlation(y_true: TensorLike, y_pred: TensorLike, axis: int = -1) -> np.ndarray:
    """Pearson's correlation of ``y_true`` and ``y_pred`` along ``axis``.

    Examples:
        >>> float(pearson_correlation([1.0, 2.0, 3.0], [2.0, 4.0, 7.0]))
        0.9933992...
    """
    y_true, y_pred = _pair(y_true, y_pred)
    t = y_true - y_true.mean(axis=axis, keepdims=True)
    p = y_pred - y_pred.mean(axis=axis, keepdims=True)
    t = t / t.std(axis=axis, keepdims=True)
    p = p / p.std(axis=axis, keepdims=True)
    return np.mean(t * p, axis=axis)


def concordance_correlation(y_true: TensorLike, y_pred: TensorLike, axis: int = -1) -> np.ndarray:
    """Lin's concordance correlation along ``axis``, as Keras 3 computes it.

    ``mean(2 * (y_true - mean(y_pred)) * (y_pred - mean(y_pred)) / (var(y_true) +
    var(y_pred) + (mean(y_true) - mean(y_pred))**2 + eps))``; note that Keras centres
    ``y_true`` on the mean of ``y_pred`` in the covariance term, and so does this.

    Examples:
        >>> round(float(concordance_correlation([1.0, 2.0, 3.0], [1.0, 2.0, 3.0])), 4)
        1.0
    """
    y_true, y_pred = _pair(y_true, y_pred)
    t_mean = y_true.mean(axis=axis, keepdims=True)
    p_mean = y_pred.mean(axis=axis, keepdims=True)
    norm = y_true.var(axis=axis, keepdims=True) + y_pred.var(axis=axis, keepdims=True) + \
        np.square(t_mean - p_mean)
    covar = (y_true - p_mean) * (y_pred - p_mean)
    return np.mean(2 * covar / (norm + EPSILON), axis=axis)


class PearsonCorrelation(MeanMetricWrapper):
    """Mean over samples of Pearson's correlation along ``axis``.

    Args:
        name: the metric name.
        dtype: the result dtype.
        axis: the axis along which the correlation is taken (default -1).

    Examples:
        >>> m = PearsonCorrelation()
        >>> m.update_state([[1.0, 2.0, 3.0], [1.0, 0.0, 1.0]], [[2.0, 4.0, 7.0], [0.0, 1.0, 0.0]])
        >>> round(float(m.result()), 4)
        -0.0033
    """

    def __init__(self, name: str = "pearson_correlation", dtype: DTypeLike = None,
                 axis: int = -1) -> None:
        super().__init__(pearson_correlation, name=name, dtype=dtype, axis=axis)


class ConcordanceCorrelation(MeanMetricWrapper):
    """Mean over samples of :func:`concordance_correlation` along ``axis``.

    Args:
        name: the metric name.
        dtype: the result dtype.
        axis: the axis along which the correlation is taken (default -1).
    """

    def __init__(self, name: str = "concordance_correlation", dtype: DTypeLike = None,
                 axis: int = -1) -> None:
        super().__init__(concordance_correlation, name=name, dtype=dtype, axis=axis)
