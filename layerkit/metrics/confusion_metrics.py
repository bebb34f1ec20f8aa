"""Confusion-matrix metrics: precision, recall and AUC from weighted counts at thresholds."""
from __future__ import annotations

from typing import Any

import numpy as np

from layerkit._core.op import wrap
from layerkit._core.tensor import Tensor
from layerkit._core.types import DTypeLike, TensorLike
from layerkit._core.variable import Variable
from layerkit.metrics.base_metric import (
    EPSILON,
    Metric,
    _acc,
    _np,
    squeeze_or_expand_to_same_rank,
)

# ---- confusion-matrix metrics -------------------------------------------------------------
NEG_INF = -1e10


def _filter_top_k(y_pred: np.ndarray, k: int) -> np.ndarray:
    # Keep the k largest scores per row (ties: lower index first), the rest become NEG_INF.
    idx = np.argsort(-y_pred, axis=-1, kind="stable")[..., :k]
    out = np.full_like(y_pred, NEG_INF)
    np.put_along_axis(out, idx, np.take_along_axis(y_pred, idx, axis=-1), axis=-1)
    return out


def _confusion_counts(y_true, y_pred, thresholds: np.ndarray, sample_weight=None,
                      top_k=None, class_id=None):
    """Weighted (tp, fp, tn, fn) per threshold, with ``prediction > threshold`` positive."""
    y_true = _np(y_true)
    y_pred = _np(y_pred).astype(np.float64, copy=False)
    y_pred, y_true = squeeze_or_expand_to_same_rank(y_pred, y_true)
    if y_pred.shape != y_true.shape:
        raise ValueError(
            f"labels of shape {y_true.shape} do not match predictions of shape {y_pred.shape}"
        )
    w = None
    if sample_weight is not None:
        # Keras rule: append an axis, then match y_true's rank, then broadcast.
        w = _np(sample_weight).astype(np.float64)[..., None]
        _, w = squeeze_or_expand_to_same_rank(y_true, w, expand_rank_1=False)
        try:
            w = np.broadcast_to(w, y_pred.shape)
        except ValueError:
            raise ValueError(
                f"sample_weight of shape {np.shape(sample_weight)} cannot be broadcast to "
                f"predictions of shape {y_pred.shape}"
            ) from None
    if top_k is not None:
        y_pred = _filter_top_k(y_pred, top_k)
    if class_id is not None:
        y_true = y_true[..., class_id]
        y_pred = y_pred[..., class_id]
        if w is not None:
            w = w[..., class_id]
    pred = y_pred.reshape(-1)
    label = y_true.reshape(-1).astype(bool)
    w = np.ones(pred.shape) if w is None else w.reshape(-1)
    order = np.argsort(thresholds, kind="stable")
    ts = thresholds[order]
    # idx = number of thresholds strictly below the prediction: above thresholds 0..idx-1.
    idx = np.searchsorted(ts, pred, side="left")
    idx[np.isnan(pred)] = 0
    n = len(ts)
    pos = np.bincount(idx[label], weights=w[label], minlength=n + 1)
    neg = np.bincount(idx[~label], weights=w[~label], minlength=n + 1)
    tp_sorted = np.cumsum(pos[::-1])[::-1][1:]
    fp_sorted = np.cumsum(neg[::-1])[::-1][1:]
    tp = np.empty(n)
    fp = np.empty(n)
    tp[order] = tp_sorted
    fp[order] = fp_sorted
    total_pos, total_neg = pos.sum(), neg.sum()
    return tp, fp, total_neg - fp, total_pos - tp


def _div_no_nan(a, b):
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(b != 0, a / np.where(b != 0, b, 1.0), 0.0)


def _parse_thresholds(thresholds, default: float) -> np.ndarray:
    if thresholds is None:
        return np.array([default])
    t = np.atleast_1d(np.asarray(thresholds, dtype=np.float64))
    if np.any((t < 0) | (t > 1)) and default != NEG_INF:
        raise ValueError(f"thresholds must be in [0, 1]. Received: thresholds={thresholds}")
    return t


class _ConditionCount(Metric):
    """The weighted count of one confusion-matrix condition at each threshold."""

    _index = 0  # position in _confusion_counts's (tp, fp, tn, fn)

    def __init__(self, thresholds: Any = None, name: str | None = None,
                 dtype: DTypeLike = None) -> None:
        super().__init__(name=name, dtype=dtype)
        self.init_thresholds = thresholds
        self.thresholds = _parse_thresholds(thresholds, 0.5)
        self.accumulator = self.add_variable((len(self.thresholds),), name="accumulator")

    def update_state(self, y_true: TensorLike, y_pred: TensorLike,
                     sample_weight: TensorLike | None = None) -> None:
        counts = _confusion_counts(y_true, y_pred, self.thresholds, sample_weight)
        _acc(self.accumulator, counts[self._index])

    def result(self) -> Tensor:
        a = self.accumulator._v.astype(self.dtype)
        return wrap(a[0] if len(self.thresholds) == 1 else a)

    def get_config(self) -> dict:
        return {**super().get_config(), "thresholds": self.init_thresholds}


class TruePositives(_ConditionCount):
    """The weighted number of positives predicted positive (``y_pred > threshold``).

    Args:
        thresholds: float or list of floats in [0, 1] (default 0.5); a list gives one
            count per threshold.
        name: the metric name.
        dtype: the result dtype.

    Examples:
        >>> m = TruePositives()
        >>> m.update_state([0, 1, 1, 1], [1, 0, 1, 1])
        >>> float(m.result())
        2.0
    """

    _index = 0


class FalsePositives(_ConditionCount):
    """The weighted number of negatives predicted positive. Arguments as
    :class:`TruePositives`.

    Examples:
        >>> m = FalsePositives()
        >>> m.update_state([0, 1, 0, 0], [0, 0, 1, 1], sample_weight=[0, 0, 1, 0])
        >>> float(m.result())
        1.0
    """

    _index = 1


class TrueNegatives(_ConditionCount):
    """The weighted number of negatives predicted negative. Arguments as
    :class:`TruePositives`.

    Examples:
        >>> m = TrueNegatives()
        >>> m.update_state([0, 1, 0, 0], [1, 1, 0, 0])
        >>> float(m.result())
        2.0
    """

    _index = 2


class FalseNegatives(_ConditionCount):
    """The weighted number of positives predicted negative. Arguments as
    :class:`TruePositives`.

    Examples:
        >>> m = FalseNegatives(thresholds=[0.2, 0.9])
        >>> m.update_state([0, 1, 1, 1], [0, 0.5, 0.3, 1])
        >>> m.result().numpy()
        array([0., 2.], dtype=float32)
    """

    _index = 3


class _PrecisionRecall(Metric):
    _counts: tuple = ()

    def __init__(self, thresholds: Any = None, top_k: Any = None, class_id: Any = None,
                 name: str | None = None, dtype: DTypeLike = None) -> None:
        super().__init__(name=name, dtype=dtype)
        self.init_thresholds = thresholds
        self.top_k = top_k
        self.class_id = class_id
        self.thresholds = _parse_thresholds(thresholds, 0.5 if top_k is None else NEG_INF)
        n = len(self.thresholds)
        self.true_positives = self.add_variable((n,), name="true_positives")
        self.other = self.add_variable((n,), name=self._counts[1])

    def update_state(self, y_true: TensorLike, y_pred: TensorLike,
                     sample_weight: TensorLike | None = None) -> None:
        tp, fp, tn, fn = _confusion_counts(y_true, y_pred, self.thresholds, sample_weight,
                                           self.top_k, self.class_id)
        _acc(self.true_positives, tp)
        _acc(self.other, fp if self._counts[1] == "false_positives" else fn)

    def result(self) -> Tensor:
        tp = self.true_positives._v
        r = _div_no_nan(tp, tp + self.other._v).astype(self.dtype)
        return wrap(r[0] if len(self.thresholds) == 1 else r)

    def get_config(self) -> dict:
        return {**super().get_config(), "thresholds": self.init_thresholds,
                "top_k": self.top_k, "class_id": self.class_id}


class Precision(_PrecisionRecall):
    """``true_positives / (true_positives + false_positives)`` at the given thresholds.

    Args:
        thresholds: float or list of floats in [0, 1] (default 0.5; a prediction is
            positive when ``> threshold``); a list gives one result per threshold.
        top_k: only the ``k`` highest predictions per sample count as positive.
        class_id: compute the binary metric for this class column only.

    Examples:
        >>> m = Precision()
        >>> m.update_state([0, 1, 1, 1], [1, 0, 1, 1])
        >>> round(float(m.result()), 4)
        0.6667
    """

    _counts = ("true_positives", "false_positives")

    @property
    def false_positives(self) -> Variable:
        return self.other


class Recall(_PrecisionRecall):
    """``true_positives / (true_positives + false_negatives)`` at the given thresholds.

    Arguments as for :class:`Precision`.

    Examples:
        >>> m = Recall()
        >>> m.update_state([0, 1, 1, 1], [1, 0, 1, 1])
        >>> round(float(m.result()), 4)
        0.6667
    """

    _counts = ("true_positives", "false_negatives")

    @property
    def false_negatives(self) -> Variable:
        return self.other


class SensitivitySpecificityBase(Metric):
    """Confusion counts at ``num_thresholds`` thresholds evenly spread over [0, 1]; the
    subclasses' ``result`` picks the best value of one rate under a constraint on another.

    Args:
        value: the constraint's target value in [0, 1].
        num_thresholds: number of thresholds (1 means the single threshold 0.5).
        class_id: compute the binary metric for this class column only.
        name: the metric name.
        dtype: the result dtype.
    """

    def __init__(self, value: float, num_thresholds: int = 200, class_id: int | None = None,
                 name: str | None = None, dtype: DTypeLike = None) -> None:
        super().__init__(name=name, dtype=dtype)
        if num_thresholds <= 0:
            raise ValueError(f"{type(self).__name__}: num_thresholds must be an integer > 0. "
                             f"Received: num_thresholds={num_thresholds}")
        self.value = value
        self.class_id = class_id
        if num_thresholds == 1:
            self.thresholds = [0.5]
        else:
            inner = [(i + 1) / (num_thresholds - 1) for i in range(num_thresholds - 2)]
            self.thresholds = [0.0] + inner + [1.0]
        self._thresholds = np.array(self.thresholds)
        n = len(self.thresholds)
        self.true_positives = self.add_variable((n,), name="true_positives")
        self.false_positives = self.add_variable((n,), name="false_positives")
        self.true_negatives = self.add_variable((n,), name="true_negatives")
        self.false_negatives = self.add_variable((n,), name="false_negatives")

    def update_state(self, y_true: TensorLike, y_pred: TensorLike,
                     sample_weight: TensorLike | None = None) -> None:
        counts = _confusion_counts(y_true, y_pred, self._thresholds, sample_weight,
                                   class_id=self.class_id)
        for var, c in zip((self.true_positives, self.false_positives, self.true_negatives,
                           self.false_negatives), counts):
            _acc(var, c)

    def _rates(self) -> dict:
        tp, fp = self.true_positives._v, self.false_positives._v
        tn, fn = self.true_negatives._v, self.false_negatives._v
        return {"sensitivity": _div_no_nan(tp, tp + fn), "recall": _div_no_nan(tp, tp + fn),
                "specificity": _div_no_nan(tn, tn + fp), "precision": _div_no_nan(tp, tp + fp)}

    def _max_under_constraint(self, constrained: str, dependent: str) -> Tensor:
        """The largest ``dependent`` rate over thresholds where ``constrained >= value``
        (0 when none)."""
        rates = self._rates()
        feasible = rates[constrained] >= self.value
        best = np.max(np.where(feasible, rates[dependent], 0.0), initial=0.0)
        return wrap(np.array(best, dtype=self.dtype))

    def get_config(self) -> dict:
        return {**super().get_config(), "class_id": self.class_id}


def _check_unit(cls_name: str, arg: str, value: float) -> None:
    if value < 0 or value > 1:
        raise ValueError(f"{cls_name}: argument `{arg}` must be in the range [0, 1]. "
                         f"Received: {arg}={value}")


class SensitivityAtSpecificity(SensitivitySpecificityBase):
    """The best sensitivity ``tp / (tp + fn)`` among thresholds whose specificity
    ``tn / (tn + fp)`` is at least ``specificity``.

    Examples:
        >>> m = SensitivityAtSpecificity(0.5)
        >>> m.update_state([0, 0, 0, 1, 1], [0, 0.3, 0.8, 0.3, 0.8])
        >>> float(m.result())
        0.5
    """

    def __init__(self, specificity: float, num_thresholds: int = 200, class_id: int | None = None,
                 name: str | None = None, dtype: DTypeLike = None) -> None:
        _check_unit(type(self).__name__, "specificity", specificity)
        self.specificity = specificity
        self.num_thresholds = num_thresholds
        super().__init__(specificity, num_thresholds=num_thresholds, class_id=class_id,
                         name=name, dtype=dtype)

    def result(self) -> Tensor:
        return self._max_under_constraint("specificity", "sensitivity")

    def get_config(self) -> dict:
        return {**super().get_config(), "num_thresholds": self.num_thresholds,
                "specificity": self.specificity}


class SpecificityAtSensitivity(SensitivitySpecificityBase):
    """The best specificity among thresholds whose sensitivity is at least ``sensitivity``.

    Examples:
        >>> m = SpecificityAtSensitivity(0.5)
        >>> m.update_state([0, 0, 0, 1, 1], [0, 0.3, 0.8, 0.3, 0.8])
        >>> round(float(m.result()), 4)
        0.6667
    """

    def __init__(self, sensitivity: float, num_thresholds: int = 200, class_id: int | None = None,
                 name: str | None = None, dtype: DTypeLike = None) -> None:
        _check_unit(type(self).__name__, "sensitivity", sensitivity)
        self.sensitivity = sensitivity
        self.num_thresholds = num_thresholds
        super().__init__(sensitivity, num_thresholds=num_thresholds, class_id=class_id,
                         name=name, dtype=dtype)

    def result(self) -> Tensor:
        return self._max_under_constraint("sensitivity", "specificity")

    def get_config(self) -> dict:
        return {**super().get_config(), "num_thresholds": self.num_thresholds,
                "sensitivity": self.sensitivity}


class PrecisionAtRecall(SensitivitySpecificityBase):
    """The best precision among thresholds whose recall is at least ``recall``.

    Examples:
        >>> m = PrecisionAtRecall(0.5)
        >>> m.update_state([0, 0, 0, 1, 1], [0, 0.3, 0.8, 0.3, 0.8])
        >>> float(m.result())
        0.5
    """

    def __init__(self, recall: float, num_thresholds: int = 200, class_id: int | None = None,
                 name: str | None = None, dtype: DTypeLike = None) -> None:
        _check_unit(type(self).__name__, "recall", recall)
        self.recall = recall
        self.num_thresholds = num_thresholds
        super().__init__(recall, num_thresholds=num_thresholds, class_id=class_id, name=name,
                         dtype=dtype)

    def result(self) -> Tensor:
        return self._max_under_constraint("recall", "precision")

    def get_config(self) -> dict:
        return {**super().get_config(), "num_thresholds": self.num_thresholds,
                "recall": self.recall}


class RecallAtPrecision(SensitivitySpecificityBase):
    """The best recall among thresholds whose precision is at least ``precision``.

    Examples:
        >>> m = RecallAtPrecision(0.8)
        >>> m.update_state([0, 0, 1, 1], [0, 0.5, 0.3, 0.9])
        >>> float(m.result())
        0.5
    """

    def __init__(self, precision: float, num_thresholds: int = 200, class_id: int | None = None,
                 name: str | None = None, dtype: DTypeLike = None) -> None:
        _check_unit(type(self).__name__, "precision", precision)
        self.precision = precision
        self.num_thresholds = num_thresholds
        super().__init__(precision, num_thresholds=num_thresholds, class_id=class_id,
                         name=name, dtype=dtype)

    def result(self) -> Tensor:
        return self._max_under_constraint("precision", "recall")

    def get_config(self) -> dict:
        return {**super().get_config(), "num_thresholds": self.num_thresholds,
                "precision": self.precision}


class AUC(Metric):
    """Area under the ROC or PR curve from a confusion matrix at fixed thresholds (Keras).

    ``num_thresholds - 2`` thresholds are spread evenly in (0, 1), plus ``-epsilon`` and
    ``1 + epsilon`` at the ends. The area is a Riemann sum: trapezoids for
    ``summation_method='interpolation'`` on ROC, the Davis & Goadrich interpolation on
    PR, or ``'minoring'``/``'majoring'`` rectangles.

    Args:
        num_thresholds: number of thresholds (> 1, default 200).
        curve: ``'ROC'`` or ``'PR'``.
        summation_method: ``'interpolation'``, ``'minoring'`` or ``'majoring'``.
        name: the metric name.
        thresholds: explicit thresholds in [0, 1] (overrides ``num_thresholds``).
        multi_label: treat each column as a separate label and average the AUCs.
        num_labels: number of labels (multi_label only; otherwise inferred).
        label_weights: weights for averaging label AUCs (multi_label only).
        from_logits: apply a sigmoid to the predictions first.

    Examples:
        >>> m = AUC(num_thresholds=3)
        >>> m.update_state([0, 0, 1, 1], [0, 0.5, 0.3, 0.9])
        >>> round(float(m.result()), 4)
        0.75
    """

    def __init__(self, num_thresholds: int = 200, curve: str = "ROC",
                 summation_method: str = "interpolation", name: str | None = None,
                 dtype: DTypeLike = None, thresholds: Any = None, multi_label: bool = False,
                 num_labels: int | None = None, label_weights: Any = None,
                 from_logits: bool = False) -> None:
        super().__init__(name=name, dtype=dtype)
        curve = str(curve).upper()
        if curve not in ("ROC", "PR"):
            raise ValueError(f"AUC: curve must be 'ROC' or 'PR'. Received: curve={curve!r}")
        summation_method = str(summation_method).lower()
        if summation_method not in ("interpolation", "minoring", "majoring"):
            raise ValueError(
                "AUC: summation_method must be 'interpolation', 'minoring' or 'majoring'. "
                f"Received: summation_method={summation_method!r}"
            )
        if thresholds is not None:
            inner = sorted(float(t) for t in np.atleast_1d(thresholds))
            self.num_thresholds = len(inner) + 2
            self._init_from_thresholds = True
        else:
            if num_thresholds <= 1:
                raise ValueError(
                    f"AUC: num_thresholds must be an integer > 1. Received: "
                    f"num_thresholds={num_thresholds}"
                )
            self.num_thresholds = int(num_thresholds)
            inner = [(i + 1) / (num_thresholds - 1) for i in range(num_thresholds - 2)]
            self._init_from_thresholds = False
        self._thresholds = np.array([0.0 - EPSILON] + inner + [1.0 + EPSILON])
        self.curve = curve
        self.summation_method = summation_method
        self.multi_label = bool(multi_label)
        if num_labels and not multi_label:
            raise ValueError("AUC: num_labels is only used with multi_label=True")
        self.num_labels = num_labels
        self.label_weights = None if label_weights is None else np.asarray(label_weights,
                                                                           np.float64)
        self._from_logits = bool(from_logits)
        self._built = False
        if not self.multi_label:
            self._build(None)
        elif num_labels:
            self._build(num_labels)

    @property
    def thresholds(self) -> list:
        return list(self._thresholds)

    def _build(self, num_labels) -> None:
        shape = (self.num_thresholds,) if num_labels is None else (self.num_thresholds,
                                                                   num_labels)
        self.true_positives = self.add_variable(shape, name="true_positives")
        self.false_positives = self.add_variable(shape, name="false_positives")
        self.true_negatives = self.add_variable(shape, name="true_negatives")
        self.false_negatives = self.add_variable(shape, name="false_negatives")
        self._built = True

    def update_state(self, y_true: TensorLike, y_pred: TensorLike,
                     sample_weight: TensorLike | None = None) -> None:
        y_true = _np(y_true)
        y_pred = _np(y_pred).astype(np.float64)
        if self._from_logits:
            y_pred = 1.0 / (1.0 + np.exp(-y_pred))
        if not self.multi_label:
            counts = _confusion_counts(y_true, y_pred, self._thresholds, sample_weight)
        else:
            if y_pred.ndim != 2:
                raise ValueError(
                    f"AUC(multi_label=True): predictions must have rank 2, received shape "
                    f"{y_pred.shape}"
                )
            if not self._built:
                self._build(y_pred.shape[1])
            sw = None if sample_weight is None else np.broadcast_to(
                _np(sample_weight).reshape(-1, 1) if np.ndim(sample_weight) == 1
                else _np(sample_weight), y_pred.shape)
            per = [_confusion_counts(y_true[:, j], y_pred[:, j], self._thresholds,
                                     None if sw is None else sw[:, j])
                   for j in range(y_pred.shape[1])]
            counts = [np.stack([p[i] for p in per], axis=1) for i in range(4)]
        for var, c in zip((self.true_positives, self.false_positives, self.true_negatives,
                           self.false_negatives), counts):
            _acc(var, c)

    def _interpolate_pr_auc(self, tp, fp, fn):
        n = self.num_thresholds
        dtp = tp[:n - 1] - tp[1:]
        p = tp + fp
        dp = p[:n - 1] - p[1:]
        slope = _div_no_nan(dtp, np.maximum(dp, 0))
        intercept = tp[1:] - slope * p[1:]
        both = (p[:n - 1] > 0) & (p[1:] > 0)
        ratio = np.where(both, _div_no_nan(p[:n - 1], np.maximum(p[1:], 0)), 1.0)
        with np.errstate(divide="ignore"):
            log_ratio = np.log(np.where(ratio > 0, ratio, 1.0))
        return _div_no_nan(slope * (dtp + intercept * log_ratio),
                           np.maximum(tp[1:] + fn[1:], 0))

    def result(self) -> Tensor:
        if not self._built:
            return wrap(np.array(0.0, dtype=self.dtype))
        tp = self.true_positives._v.astype(np.float64)
        fp = self.false_positives._v.astype(np.float64)
        tn = self.true_negatives._v.astype(np.float64)
        fn = self.false_negatives._v.astype(np.float64)
        n = self.num_thresholds
        if self.curve == "PR" and self.summation_method == "interpolation":
            terms = self._interpolate_pr_auc(tp, fp, fn)
        else:
            recall = _div_no_nan(tp, tp + fn)
            if self.curve == "ROC":
                x, y = _div_no_nan(fp, fp + tn), recall
            else:
                x, y = recall, _div_no_nan(tp, tp + fp)
            if self.summation_method == "interpolation":
                heights = (y[:n - 1] + y[1:]) / 2.0
            elif self.summation_method == "minoring":
                heights = np.minimum(y[:n - 1], y[1:])
            else:
                heights = np.maximum(y[:n - 1], y[1:])
            terms = (x[:n - 1] - x[1:]) * heights
        if self.multi_label:
            by_label = terms.sum(axis=0)
            if self.label_weights is None:
                value = by_label.mean()
            else:
                value = _div_no_nan(np.sum(by_label * self.label_weights),
                                    np.sum(self.label_weights))
        else:
            value = terms.sum()
        return wrap(np.array(value, dtype=self.dtype))

    def get_config(self) -> dict:
        config = {**super().get_config(), "num_thresholds": self.num_thresholds,
                  "curve": self.curve, "summation_method": self.summation_method,
                  "multi_label": self.multi_label, "num_labels": self.num_labels,
                  "label_weights": None if self.label_weights is None
                  else self.label_weights.tolist(), "from_logits": self._from_logits}
        if self._init_from_thresholds:
            config["thresholds"] = self.thresholds[1:-1]
        return config


