"""Accuracy metrics: exact match, binary, categorical, sparse and top-k."""
from __future__ import annotations

import numpy as np

from layerkit._core.types import DTypeLike
from layerkit.metrics.base_metric import (
    _public,
    squeeze_or_expand_to_same_rank,
)
from layerkit.metrics.reduction_metrics import MeanMetricWrapper


# ---- per-sample metric functions (NumPy in, NumPy out) --------------------------------
def _accuracy(y_true, y_pred):
    y_true = y_true.astype(y_pred.dtype, copy=False)
    y_true, y_pred = squeeze_or_expand_to_same_rank(y_true, y_pred)
    return (y_true == y_pred).astype(np.float32)


def _binary_accuracy(y_true, y_pred, threshold=0.5):
    y_true, y_pred = squeeze_or_expand_to_same_rank(y_true, y_pred)
    return np.mean(y_true == (y_pred > threshold).astype(y_true.dtype), axis=-1,
                   dtype=np.float32)


def _categorical_accuracy(y_true, y_pred):
    _check_last_dim("categorical_accuracy", y_true, y_pred)
    return (np.argmax(y_true, axis=-1) == np.argmax(y_pred, axis=-1)).astype(np.float32)


def _sparse_labels(y_true, y_pred):
    if y_true.ndim == y_pred.ndim and y_true.ndim and y_true.shape[-1] == 1:
        y_true = y_true[..., 0]
    return y_true


def _sparse_categorical_accuracy(y_true, y_pred):
    y_true = _sparse_labels(y_true, y_pred)
    pred = y_pred.argmax(axis=-1)
    if y_true.shape != pred.shape:
        raise ValueError(
            f"sparse_categorical_accuracy: labels of shape {y_true.shape} do not match "
            f"predictions of shape {y_pred.shape} (expected labels of shape "
            f"{y_pred.shape[:-1]})"
        )
    return (y_true.astype(np.int64, copy=False) == pred).astype(np.float32)


def _in_top_k(targets, preds, k):
    # TF semantics: classes tied with the target's score at the boundary count as in.
    targets = targets.astype(np.int64, copy=False)
    target_scores = np.take_along_axis(preds, targets[..., None], axis=-1)
    higher = np.sum(preds > target_scores, axis=-1)
    return ((higher < k) & np.isfinite(target_scores[..., 0])).astype(np.float32)


def _top_k_categorical_accuracy(y_true, y_pred, k=5):
    _check_last_dim("top_k_categorical_accuracy", y_true, y_pred)
    return _in_top_k(np.argmax(y_true, axis=-1), y_pred, k)


def _sparse_top_k_categorical_accuracy(y_true, y_pred, k=5):
    return _in_top_k(_sparse_labels(y_true, y_pred), y_pred, k)



def _check_last_dim(name, y_true, y_pred):
    if y_true.shape != y_pred.shape:
        raise ValueError(
            f"{name}: one-hot labels of shape {y_true.shape} do not match predictions of "
            f"shape {y_pred.shape}"
        )


accuracy = _public(_accuracy, "accuracy", "Per-element ``y_true == y_pred`` as float32.")
binary_accuracy = _public(_binary_accuracy, "binary_accuracy",
                          "Mean over the last axis of ``y_true == (y_pred > threshold)``.")
categorical_accuracy = _public(_categorical_accuracy, "categorical_accuracy",
                               "``argmax(y_true) == argmax(y_pred)`` per sample.")
sparse_categorical_accuracy = _public(_sparse_categorical_accuracy,
                                      "sparse_categorical_accuracy",
                                      "``y_true == argmax(y_pred)`` per sample.")
top_k_categorical_accuracy = _public(_top_k_categorical_accuracy, "top_k_categorical_accuracy",
                                     "Whether ``argmax(y_true)`` is in the top ``k`` scores.")
sparse_top_k_categorical_accuracy = _public(_sparse_top_k_categorical_accuracy,
                                            "sparse_top_k_categorical_accuracy",
                                            "Whether the integer label is in the top ``k``.")


class Accuracy(MeanMetricWrapper):
    """How often predictions equal labels exactly.

    Examples:
        >>> m = Accuracy()
        >>> m.update_state([[1], [2], [3], [4]], [[0], [2], [3], [4]])
        >>> float(m.result())
        0.75
    """

    def __init__(self, name: str = "accuracy", dtype: DTypeLike = None) -> None:
        super().__init__(_accuracy, name=name, dtype=dtype)

    def get_config(self) -> dict:
        return {"name": self.name, "dtype": self.dtype.name}


class BinaryAccuracy(MeanMetricWrapper):
    """How often ``y_pred > threshold`` matches the binary labels.

    Examples:
        >>> m = BinaryAccuracy()
        >>> m.update_state([[1], [1], [0], [0]], [[0.98], [1], [0], [0.6]])
        >>> float(m.result())
        0.75
    """

    def __init__(self, name: str = "binary_accuracy", dtype: DTypeLike = None,
                 threshold: float = 0.5) -> None:
        super().__init__(_binary_accuracy, name=name, dtype=dtype, threshold=threshold)


class CategoricalAccuracy(MeanMetricWrapper):
    """How often the argmax of the predictions matches the argmax of one-hot labels."""

    def __init__(self, name: str = "categorical_accuracy", dtype: DTypeLike = None) -> None:
        super().__init__(_categorical_accuracy, name=name, dtype=dtype)

    def get_config(self) -> dict:
        return {"name": self.name, "dtype": self.dtype.name}


class SparseCategoricalAccuracy(MeanMetricWrapper):
    """How often the argmax of the predictions equals the integer labels.

    Examples:
        >>> m = SparseCategoricalAccuracy()
        >>> m.update_state([[2], [1]], [[0.1, 0.6, 0.3], [0.05, 0.95, 0]])
        >>> float(m.result())
        0.5
    """

    def __init__(self, name: str = "sparse_categorical_accuracy", dtype: DTypeLike = None) -> None:
        super().__init__(_sparse_categorical_accuracy, name=name, dtype=dtype)

    def get_config(self) -> dict:
        return {"name": self.name, "dtype": self.dtype.name}


class TopKCategoricalAccuracy(MeanMetricWrapper):
    """How often the one-hot target class is among the ``k`` highest predictions."""

    def __init__(self, k: int = 5, name: str = "top_k_categorical_accuracy",
                 dtype: DTypeLike = None) -> None:
        super().__init__(_top_k_categorical_accuracy, name=name, dtype=dtype, k=k)


class SparseTopKCategoricalAccuracy(MeanMetricWrapper):
    """How often the integer target class is among the ``k`` highest predictions."""

    def __init__(self, k: int = 5, name: str = "sparse_top_k_categorical_accuracy",
                 dtype: DTypeLike = None) -> None:
        super().__init__(_sparse_top_k_categorical_accuracy, name=name, dtype=dtype, k=k)


