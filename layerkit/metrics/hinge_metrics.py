"""Hinge metrics: the hinge losses averaged over samples."""
from __future__ import annotations

from layerkit import losses as _losses
from layerkit._core.types import DTypeLike
from layerkit.metrics.reduction_metrics import MeanMetricWrapper


class Hinge(MeanMetricWrapper):
    """Mean over samples of ``mean(max(1 - y_true * y_pred, 0), axis=-1)`` (0/1 labels -> ±1).

    Examples:
        >>> m = Hinge()
        >>> m.update_state([[0, 1], [0, 0]], [[0.6, 0.4], [0.4, 0.6]])
        >>> round(float(m.result()), 4)
        1.3
    """

    def __init__(self, name: str = "hinge", dtype: DTypeLike = None) -> None:
        super().__init__(_losses.hinge, name=name, dtype=dtype)


class SquaredHinge(MeanMetricWrapper):
    """Mean over samples of ``mean(max(1 - y_true * y_pred, 0)**2, axis=-1)``."""

    def __init__(self, name: str = "squared_hinge", dtype: DTypeLike = None) -> None:
        super().__init__(_losses.squared_hinge, name=name, dtype=dtype)


class CategoricalHinge(MeanMetricWrapper):
    """Mean over samples of ``max(max((1 - y_true) * y_pred) - sum(y_true * y_pred) + 1, 0)``."""

    def __init__(self, name: str = "categorical_hinge", dtype: DTypeLike = None) -> None:
        super().__init__(_losses.categorical_hinge, name=name, dtype=dtype)
