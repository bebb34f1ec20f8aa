"""Regression metrics: errors between real-valued targets and predictions."""
from __future__ import annotations

import warnings

import numpy as np

from layerkit import losses as _losses
from layerkit._core.op import wrap
from layerkit._core.tensor import Tensor
from layerkit._core.types import DTypeLike, TensorLike
from layerkit.metrics.base_metric import (
    Metric,
    _acc,
    _np,
    squeeze_or_expand_to_same_rank,
)
from layerkit.metrics.reduction_metrics import Mean, MeanMetricWrapper


def _mse(y_true, y_pred):
    y_true, y_pred = squeeze_or_expand_to_same_rank(y_true, y_pred)
    return np.mean(np.square(y_pred.astype(np.float32) - y_true), axis=-1)


def _mae(y_true, y_pred):
    y_true, y_pred = squeeze_or_expand_to_same_rank(y_true, y_pred)
    return np.mean(np.abs(y_pred.astype(np.float32) - y_true), axis=-1)



class MeanSquaredError(MeanMetricWrapper):
    """Mean over samples of ``mean((y_true - y_pred)**2, axis=-1)``."""

    def __init__(self, name: str = "mean_squared_error", dtype: DTypeLike = None) -> None:
        super().__init__(_mse, name=name, dtype=dtype)

    def get_config(self) -> dict:
        return {"name": self.name, "dtype": self.dtype.name}


class MeanAbsoluteError(MeanMetricWrapper):
    """Mean over samples of ``mean(|y_true - y_pred|, axis=-1)``."""

    def __init__(self, name: str = "mean_absolute_error", dtype: DTypeLike = None) -> None:
        super().__init__(_mae, name=name, dtype=dtype)

    def get_config(self) -> dict:
        return {"name": self.name, "dtype": self.dtype.name}




class MeanAbsolutePercentageError(MeanMetricWrapper):
    """Mean over samples of ``100 * mean(|y_true - y_pred| / max(|y_true|, eps), axis=-1)``.

    Examples:
        >>> m = MeanAbsolutePercentageError()
        >>> m.update_state([[0, 1], [0, 0]], [[1, 1], [0, 0]])
        >>> float(m.result())
        250000000.0
    """

    def __init__(self, name: str = "mean_absolute_percentage_error",
                 dtype: DTypeLike = None) -> None:
        super().__init__(_losses.mean_absolute_percentage_error, name=name, dtype=dtype)


class MeanSquaredLogarithmicError(MeanMetricWrapper):
    """Mean over samples of ``mean((log(1 + y_pred) - log(1 + y_true))**2, axis=-1)``."""

    def __init__(self, name: str = "mean_squared_logarithmic_error",
                 dtype: DTypeLike = None) -> None:
        super().__init__(_losses.mean_squared_logarithmic_error, name=name, dtype=dtype)


class LogCoshError(MeanMetricWrapper):
    """Mean over samples of ``mean(log(cosh(y_pred - y_true)), axis=-1)`` (name ``logcosh``)."""

    def __init__(self, name: str = "logcosh", dtype: DTypeLike = None) -> None:
        super().__init__(_losses.log_cosh, name=name, dtype=dtype)


def _normalize(x: np.ndarray, axis: int) -> np.ndarray:
    # x / sqrt(max(sum(x**2), 1e-12)): Keras's l2 normalisation
    return x / np.sqrt(np.maximum(np.sum(np.square(x), axis=axis, keepdims=True), 1e-12))


def cosine_similarity(y_true, y_pred, axis: int = -1) -> np.ndarray:
    """``sum(l2_normalize(y_true) * l2_normalize(y_pred), axis)`` per sample (1 is best).

    Examples:
        >>> v = cosine_similarity(np.array([[0.0, 1.0], [1.0, 1.0]]),
        ...                       np.array([[1.0, 0.0], [2.0, 2.0]]))
        >>> np.round(v, 4)
        array([0., 1.], dtype=float32)
    """
    y_pred = np.asarray(y_pred, dtype=np.float32)
    y_true = np.asarray(y_true, dtype=np.float32)
    y_true, y_pred = squeeze_or_expand_to_same_rank(y_true, y_pred)
    return np.sum(_normalize(y_true, axis) * _normalize(y_pred, axis), axis=axis)


class CosineSimilarity(MeanMetricWrapper):
    """Mean over samples of the cosine similarity of ``y_true`` and ``y_pred`` along ``axis``.

    Args:
        name: the metric name.
        dtype: the result dtype.
        axis: the axis holding the vectors (default -1).

    Examples:
        >>> m = CosineSimilarity()
        >>> m.update_state([[0.0, 1.0], [1.0, 1.0]], [[1.0, 0.0], [1.0, 1.0]])
        >>> round(float(m.result()), 4)
        0.5
    """

    def __init__(self, name: str = "cosine_similarity", dtype: DTypeLike = None,
                 axis: int = -1) -> None:
        super().__init__(cosine_similarity, name=name, dtype=dtype, axis=axis)


class RootMeanSquaredError(Mean):
    """``sqrt`` of the (weighted) mean of ``(y_pred - y_true)**2`` over all entries.

    Examples:
        >>> m = RootMeanSquaredError()
        >>> m.update_state([[0, 1], [0, 0]], [[1, 1], [0, 0]])
        >>> float(m.result())
        0.5
    """

    def __init__(self, name: str = "root_mean_squared_error", dtype: DTypeLike = None) -> None:
        super().__init__(name=name, dtype=dtype)

    def update_state(self, y_true: TensorLike, y_pred: TensorLike,
                     sample_weight: TensorLike | None = None) -> None:
        y_true = _np(y_true).astype(self.dtype, copy=False)
        y_pred = _np(y_pred).astype(self.dtype, copy=False)
        y_true, y_pred = squeeze_or_expand_to_same_rank(y_true, y_pred)
        Mean.update_state(self, np.square(y_pred - y_true), sample_weight=sample_weight)

    def result(self) -> Tensor:
        return wrap(np.sqrt(Mean.result(self)._v))


_AGGREGATIONS = (None, "uniform_average", "variance_weighted_average")


class R2Score(Metric):
    """The coefficient of determination, per output column, optionally aggregated.

    ``1 - sum(w * (y_true - y_pred)**2) / sum(w * (y_true - mean(y_true))**2)`` per column
    (weighted means), for 2-D inputs ``(batch, outputs)``. With ``num_regressors > 0``
    the adjusted R² ``1 - (1 - r2) * (n - 1) / (n - p - 1)`` with ``n`` the number of
    entries seen.

    Args:
        class_aggregation: ``'uniform_average'`` (mean of the columns' scores),
            ``'variance_weighted_average'`` (weighted by each column's variance) or None
            (one score per column).
        num_regressors: the number of independent variables of the adjusted R² (0: plain R²).
        name: the metric name.
        dtype: the result dtype.

    Raises:
        ValueError: an unknown ``class_aggregation``, ``num_regressors < 0``, or inputs
            that are not 2-D.

    Examples:
        >>> m = R2Score()
        >>> m.update_state([[1.0], [4.0], [3.0]], [[2.0], [4.0], [4.0]])
        >>> round(float(m.result()), 4)
        0.5714
    """

    def __init__(self, class_aggregation: str | None = "uniform_average",
                 num_regressors: int = 0, name: str = "r2_score", dtype: DTypeLike = None) -> None:
        super().__init__(name=name, dtype=dtype)
        if class_aggregation not in _AGGREGATIONS:
            raise ValueError(f"R2Score: class_aggregation must be one of {_AGGREGATIONS}. "
                             f"Received: class_aggregation={class_aggregation!r}")
        if num_regressors < 0:
            raise ValueError(f"R2Score: num_regressors must be >= 0. Received: "
                             f"num_regressors={num_regressors}")
        self.class_aggregation = class_aggregation
        self.num_regressors = num_regressors
        self.num_samples = self.add_variable((), name="num_samples")
        self._built = False

    def _build(self, true_shape: tuple, pred_shape: tuple) -> None:
        if len(pred_shape) != 2 or len(true_shape) != 2:
            raise ValueError(
                f"R2Score expects 2D inputs with shape (batch_size, output_dim). Received "
                f"input shapes: y_pred.shape={pred_shape} and y_true.shape={true_shape}."
            )
        n = pred_shape[-1]
        self.squared_sum = self.add_variable((n,), name="squared_sum")
        self.sum = self.add_variable((n,), name="sum")
        self.total_mse = self.add_variable((n,), name="residual")
        self.count = self.add_variable((n,), name="count")
        self._built = True

    def update_state(self, y_true: TensorLike, y_pred: TensorLike,
                     sample_weight: TensorLike | None = None) -> None:
        y_true = _np(y_true).astype(self.dtype, copy=False)
        y_pred = _np(y_pred).astype(self.dtype, copy=False)
        y_true, y_pred = squeeze_or_expand_to_same_rank(y_true, y_pred)
        if not self._built:
            self._build(y_true.shape, y_pred.shape)
        sw = np.asarray(1.0 if sample_weight is None else _np(sample_weight), self.dtype)
        if sw.ndim == 1:
            sw = sw[:, None]
        try:
            sw = np.broadcast_to(sw, y_true.shape)
        except ValueError:
            raise ValueError(f"R2Score: sample_weight of shape {_np(sample_weight).shape} "
                             f"cannot be broadcast to y_true's shape {y_true.shape}") from None
        weighted = y_true * sw
        _acc(self.sum, weighted.sum(axis=0))
        _acc(self.squared_sum, (y_true * weighted).sum(axis=0))
        _acc(self.total_mse, (np.square(y_true - y_pred) * sw).sum(axis=0))
        _acc(self.count, sw.sum(axis=0))
        _acc(self.num_samples, y_true.size)

    def result(self) -> Tensor:
        if not self._built:
            return wrap(np.array(np.nan if self.class_aggregation else [], self.dtype))
        with np.errstate(divide="ignore", invalid="ignore"):
            mean = self.sum._v / self.count._v
            total = self.squared_sum._v - self.sum._v * mean
            raw = 1.0 - self.total_mse._v / total
        raw = np.where(np.isinf(raw), 0.0, raw)
        if self.class_aggregation == "uniform_average":
            score = np.mean(raw)
        elif self.class_aggregation == "variance_weighted_average":
            score = np.sum(total * raw) / np.sum(total)
        else:
            score = raw
        if self.num_regressors:
            n, p = float(self.num_samples._v), float(self.num_regressors)
            if p > n - 1:
                warnings.warn("R2Score: more independent predictors than datapoints in "
                              "adjusted R2 score; falling back to standard R2 score.",
                              stacklevel=2)
            elif p == n - 1:
                warnings.warn("R2Score: division by zero in adjusted R2 score; falling back "
                              "to standard R2 score.", stacklevel=2)
            else:
                score = 1.0 - (1.0 - score) * (n - 1.0) / (n - p - 1.0)
        return wrap(np.asarray(score, dtype=self.dtype))

    def get_config(self) -> dict:
        return {**super().get_config(), "class_aggregation": self.class_aggregation,
                "num_regressors": self.num_regressors}
