"""F-scores: the weighted harmonic mean of precision and recall, per class or averaged."""
from __future__ import annotations

import numpy as np

from layerkit._core.op import wrap
from layerkit._core.tensor import Tensor
from layerkit._core.types import DTypeLike, TensorLike
from layerkit._core.variable import Variable
from layerkit.metrics.base_metric import EPSILON, Metric, _acc, _np

_AVERAGES = (None, "micro", "macro", "weighted")


class FBetaScore(Metric):
    """``(1 + beta**2) * precision * recall / (beta**2 * precision + recall)`` per class.

    Inputs are 2-D ``(batch, classes)``: one-hot (or multi-hot) labels and scores. With
    ``threshold=None`` the highest score of each row is the predicted class; otherwise
    every score ``> threshold`` is a positive.

    Args:
        average: None (one score per class), ``'micro'`` (from counts summed over the
            classes), ``'macro'`` (mean of the class scores) or ``'weighted'`` (class
            scores weighted by each class's (weighted) number of true instances).
        beta: a float > 0, the weight of recall.
        threshold: a float in (0, 1], or None for the row maximum.
        name: the metric name.
        dtype: the result dtype.

    Raises:
        ValueError: a bad ``average``, ``beta`` or ``threshold``, or inputs that are not 2-D.

    Examples:
        >>> m = FBetaScore(beta=2.0, threshold=0.5)
        >>> m.update_state(np.array([[1, 1, 1], [1, 0, 0], [1, 1, 0]]),
        ...                np.array([[0.2, 0.6, 0.7], [0.2, 0.6, 0.6], [0.6, 0.8, 0.0]]))
        >>> np.round(m.result().numpy(), 4)
        array([0.3846, 0.9091, 0.8333], dtype=float32)
    """

    # state made by add_variable on the first update (per class, or scalars for "micro")
    true_positives: Variable
    false_positives: Variable
    false_negatives: Variable
    intermediate_weights: Variable

    def __init__(self, average: str | None = None, beta: float = 1.0,
                 threshold: float | None = None, name: str = "fbeta_score",
                 dtype: DTypeLike = None) -> None:
        super().__init__(name=name, dtype=dtype)
        if average not in _AVERAGES:
            raise ValueError(f"{type(self).__name__}: average must be one of {_AVERAGES}. "
                             f"Received: average={average!r}")
        if not isinstance(beta, float):
            raise ValueError(f"{type(self).__name__}: beta must be a Python float. "
                             f"Received: beta={beta!r} of type {type(beta).__name__}")
        if beta <= 0.0:
            raise ValueError(f"{type(self).__name__}: beta must be > 0. Received: beta={beta}")
        if threshold is not None:
            if not isinstance(threshold, float):
                raise ValueError(f"{type(self).__name__}: threshold must be a Python float. "
                                 f"Received: threshold={threshold!r} of type "
                                 f"{type(threshold).__name__}")
            if not 0.0 < threshold <= 1.0:
                raise ValueError(f"{type(self).__name__}: threshold must verify "
                                 f"0 < threshold <= 1. Received: threshold={threshold}")
        self.average = average
        self.beta = beta
        self.threshold = threshold
        self.axis = None if average == "micro" else 0
        self._built = False

    def _build(self, true_shape: tuple, pred_shape: tuple) -> None:
        if len(pred_shape) != 2 or len(true_shape) != 2:
            raise ValueError(
                f"{type(self).__name__} expects 2D inputs with shape (batch_size, output_dim). "
                f"Received input shapes: y_pred.shape={pred_shape} and "
                f"y_true.shape={true_shape}."
            )
        shape = () if self.average == "micro" else (pred_shape[-1],)
        for name in ("true_positives", "false_positives", "false_negatives",
                     "intermediate_weights"):
            setattr(self, name, self.add_variable(shape, name=name))
        self._built = True

    def update_state(self, y_true: TensorLike, y_pred: TensorLike,
                     sample_weight: TensorLike | None = None) -> None:
        y_true = _np(y_true).astype(self.dtype, copy=False)
        y_pred = _np(y_pred).astype(self.dtype, copy=False)
        if not self._built:
            self._build(y_true.shape, y_pred.shape)
        if self.threshold is None:
            top = y_pred.max(axis=-1, keepdims=True)
            pred = (y_pred >= top) & (np.abs(y_pred) > 1e-9)
        else:
            pred = y_pred > self.threshold
        pred = pred.astype(self.dtype)
        sw = None if sample_weight is None else _np(sample_weight).astype(self.dtype)[:, None]

        def total(values):
            return (values if sw is None else values * sw).sum(axis=self.axis)

        _acc(self.true_positives, total(pred * y_true))
        _acc(self.false_positives, total(pred * (1 - y_true)))
        _acc(self.false_negatives, total((1 - pred) * y_true))
        _acc(self.intermediate_weights, total(y_true))

    def result(self) -> Tensor:
        if not self._built:
            return wrap(np.array(0.0, dtype=self.dtype))
        tp, fp, fn = self.true_positives._v, self.false_positives._v, self.false_negatives._v
        precision = tp / (tp + fp + EPSILON)
        recall = tp / (tp + fn + EPSILON)
        b2 = self.beta ** 2
        score = precision * recall / (b2 * precision + recall + EPSILON) * (1 + b2)
        if self.average == "weighted":
            w = self.intermediate_weights._v
            score = np.sum(score * w / (np.sum(w) + EPSILON))
        elif self.average is not None:
            score = np.mean(score)
        return wrap(np.asarray(score, dtype=self.dtype))

    def get_config(self) -> dict:
        return {**super().get_config(), "average": self.average, "beta": self.beta,
                "threshold": self.threshold}


class F1Score(FBetaScore):
    """:class:`FBetaScore` with ``beta=1``: the harmonic mean of precision and recall.

    Examples:
        >>> m = F1Score(threshold=0.5)
        >>> m.update_state(np.array([[1, 1, 1], [1, 0, 0], [1, 1, 0]]),
        ...                np.array([[0.2, 0.6, 0.7], [0.2, 0.6, 0.6], [0.6, 0.8, 0.0]]))
        >>> np.round(m.result().numpy(), 4)
        array([0.5   , 0.8   , 0.6667], dtype=float32)
    """

    def __init__(self, average: str | None = None, threshold: float | None = None,
                 name: str = "f1_score", dtype: DTypeLike = None) -> None:
        super().__init__(average=average, beta=1.0, threshold=threshold, name=name, dtype=dtype)

    def get_config(self) -> dict:
        config = super().get_config()
        del config["beta"]
        return config
