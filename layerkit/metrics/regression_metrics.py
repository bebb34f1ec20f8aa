"""Regression metrics: errors between real-valued targets and predictions."""
from __future__ import annotations

import numpy as np

from layerkit.metrics.base_metric import (
    squeeze_or_expand_to_same_rank,
)
from layerkit.metrics.reduction_metrics import MeanMetricWrapper


def _mse(y_true, y_pred):
    y_true, y_pred = squeeze_or_expand_to_same_rank(y_true, y_pred)
    return np.mean(np.square(y_pred.astype(np.float32) - y_true), axis=-1)


def _mae(y_true, y_pred):
    y_true, y_pred = squeeze_or_expand_to_same_rank(y_true, y_pred)
    return np.mean(np.abs(y_pred.astype(np.float32) - y_true), axis=-1)



class MeanSquaredError(MeanMetricWrapper):
    """Mean over samples of ``mean((y_true - y_pred)**2, axis=-1)``."""

    def __init__(self, name: str = "mean_squared_error", dtype=None) -> None:
        super().__init__(_mse, name=name, dtype=dtype)

    def get_config(self) -> dict:
        return {"name": self.name, "dtype": self.dtype.name}


class MeanAbsoluteError(MeanMetricWrapper):
    """Mean over samples of ``mean(|y_true - y_pred|, axis=-1)``."""

    def __init__(self, name: str = "mean_absolute_error", dtype=None) -> None:
        super().__init__(_mae, name=name, dtype=dtype)

    def get_config(self) -> dict:
        return {"name": self.name, "dtype": self.dtype.name}


