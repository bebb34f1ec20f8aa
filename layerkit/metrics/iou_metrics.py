"""Intersection-over-union metrics from an accumulated ``num_classes`` confusion matrix.

As in Keras the state (and, by default, the metric's ``dtype``) is an integer matrix:
float sample weights are truncated unless the metric is made with ``dtype='float32'``.
"""
from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np

from layerkit._core.op import wrap
from layerkit._core.tensor import Tensor
from layerkit._core.types import DTypeLike, TensorLike
from layerkit.metrics.base_metric import EPSILON, Metric, _acc, _np


class _IoUBase(Metric):
    def __init__(self, num_classes: int, name: str | None = None, dtype: DTypeLike = None,
                 ignore_class: int | None = None, sparse_y_true: bool = True,
                 sparse_y_pred: bool = True, axis: int = -1) -> None:
        super().__init__(name=name, dtype=dtype or "int32")
        self.num_classes = num_classes
        self.ignore_class = ignore_class
        self.sparse_y_true = sparse_y_true
        self.sparse_y_pred = sparse_y_pred
        self.axis = axis
        self.total_cm = self.add_variable((num_classes, num_classes),
                                          name="total_confusion_matrix")

    def _labels(self, y_true: TensorLike, y_pred: TensorLike) -> tuple[np.ndarray, np.ndarray]:
        labels, preds = _np(y_true), _np(y_pred)
        if not self.sparse_y_true:
            labels = np.argmax(labels, axis=self.axis)
        if not self.sparse_y_pred:
            preds = np.argmax(preds, axis=self.axis)
        return labels, preds

    def update_state(self, y_true: TensorLike, y_pred: TensorLike,
                     sample_weight: TensorLike | None = None) -> None:
        y_true, y_pred = self._labels(y_true, y_pred)
        y_true = y_true.astype(self.dtype, copy=False).reshape(-1)
        y_pred = y_pred.astype(self.dtype, copy=False).reshape(-1)
        if sample_weight is None:
            sw = np.ones(y_true.shape, self.dtype)
        else:
            sw = _np(sample_weight)
            if sw.dtype.kind == "f" and self.dtype.kind in "iu":
                warnings.warn(
                    f"{type(self).__name__} '{self.name}': float sample_weight is cast to the "
                    f"metric's dtype {self.dtype.name} (fractions are dropped); pass "
                    "dtype='float32' to the metric to keep them", stacklevel=3)
            sw = sw.astype(self.dtype).reshape(-1)
            try:
                sw = np.broadcast_to(sw, y_true.shape)
            except ValueError:
                raise ValueError(
                    f"{type(self).__name__}: sample_weight of shape {np.shape(sample_weight)} "
                    f"does not match the {y_true.size} labels") from None
        n = self.num_classes
        keep = (y_true >= 0) & (y_true < n) & (y_pred >= 0) & (y_pred < n)
        if self.ignore_class is not None:
            keep &= y_true != self.ignore_class
        idx = y_true[keep].astype(np.int64) * n + y_pred[keep].astype(np.int64)
        cm = np.bincount(idx, weights=sw[keep], minlength=n * n).reshape(n, n)
        _acc(self.total_cm, cm.astype(self.dtype))

    def _iou(self, target_class_ids) -> Tensor:
        cm = self.total_cm._v.astype(np.float32)
        tp = np.diag(cm)
        denominator = cm.sum(axis=0) + cm.sum(axis=1) - tp
        ids = np.asarray(target_class_ids, dtype=np.int64)
        tp, denominator = tp[ids], denominator[ids]
        valid = denominator > 1e-9
        iou = np.where(valid, tp / (denominator + EPSILON), 0.0)
        return wrap(np.array(iou.sum() / (valid.sum() + EPSILON), dtype=np.float32))


class IoU(_IoUBase):
    """Mean intersection-over-union ``tp / (tp + fp + fn)`` over ``target_class_ids``.

    Classes that never occur (in labels or predictions) are left out of the mean.

    Args:
        num_classes: the number of classes (the confusion matrix is
            ``num_classes x num_classes``).
        target_class_ids: the classes whose IoUs are averaged.
        name: the metric name.
        dtype: the state dtype (int32 by default, as Keras).
        ignore_class: a label value whose entries are skipped (e.g. a void class).
        sparse_y_true: whether labels are integers (else the argmax over ``axis``).
        sparse_y_pred: whether predictions are integers (else the argmax over ``axis``).
        axis: the class axis of dense inputs.

    Raises:
        ValueError: a target class id ``>= num_classes``.

    Examples:
        >>> m = IoU(num_classes=2, target_class_ids=[0])
        >>> m.update_state([0, 0, 1, 1], [0, 1, 0, 1])
        >>> round(float(m.result()), 4)
        0.3333
    """

    def __init__(self, num_classes: int, target_class_ids: Sequence[int], name: str | None = None,
                 dtype: DTypeLike = None, ignore_class: int | None = None,
                 sparse_y_true: bool = True, sparse_y_pred: bool = True, axis: int = -1) -> None:
        super().__init__(num_classes, name=name, dtype=dtype, ignore_class=ignore_class,
                         sparse_y_true=sparse_y_true, sparse_y_pred=sparse_y_pred, axis=axis)
        if max(target_class_ids) >= num_classes:
            raise ValueError(
                f"{type(self).__name__}: target_class_ids must be < num_classes={num_classes}. "
                f"Received: target_class_ids={list(target_class_ids)}")
        self.target_class_ids = list(target_class_ids)

    def result(self) -> Tensor:
        return self._iou(self.target_class_ids)

    def get_config(self) -> dict:
        return {**super().get_config(), "num_classes": self.num_classes,
                "target_class_ids": self.target_class_ids, "ignore_class": self.ignore_class,
                "sparse_y_true": self.sparse_y_true, "sparse_y_pred": self.sparse_y_pred,
                "axis": self.axis}


class BinaryIoU(IoU):
    """IoU of classes 0 and/or 1 after ``y_pred >= threshold`` makes predictions binary.

    Args:
        target_class_ids: ``[0]``, ``[1]`` or ``[0, 1]`` (the mean of both).
        threshold: predictions at or above it are class 1.
        name: the metric name.
        dtype: the state dtype (int32 by default, as Keras).

    Examples:
        >>> m = BinaryIoU(target_class_ids=[0, 1], threshold=0.3)
        >>> m.update_state([0, 1, 0, 1], [0.1, 0.2, 0.4, 0.7])
        >>> round(float(m.result()), 4)
        0.3333
    """

    def __init__(self, target_class_ids: Sequence[int] = (0, 1), threshold: float = 0.5,
                 name: str | None = None, dtype: DTypeLike = None) -> None:
        super().__init__(num_classes=2, target_class_ids=target_class_ids, name=name,
                         dtype=dtype)
        self.threshold = threshold

    def update_state(self, y_true: TensorLike, y_pred: TensorLike,
                     sample_weight: TensorLike | None = None) -> None:
        pred = (_np(y_pred).astype(np.float32, copy=False) >= self.threshold)
        IoU.update_state(self, y_true, pred.astype(self.dtype), sample_weight)

    def get_config(self) -> dict:
        return {"target_class_ids": self.target_class_ids, "threshold": self.threshold,
                "name": self.name, "dtype": self.dtype.name}


class MeanIoU(IoU):
    """The mean of the per-class IoUs over all ``num_classes`` classes.

    Arguments as for :class:`IoU` without ``target_class_ids``.

    Examples:
        >>> m = MeanIoU(num_classes=2)
        >>> m.update_state([0, 0, 1, 1], [0, 1, 0, 1])
        >>> round(float(m.result()), 4)
        0.3333
    """

    def __init__(self, num_classes: int, name: str | None = None, dtype: DTypeLike = None,
                 ignore_class: int | None = None, sparse_y_true: bool = True,
                 sparse_y_pred: bool = True, axis: int = -1) -> None:
        super().__init__(num_classes, list(range(num_classes)), name=name, dtype=dtype,
                         ignore_class=ignore_class, sparse_y_true=sparse_y_true,
                         sparse_y_pred=sparse_y_pred, axis=axis)

    def get_config(self) -> dict:
        return {"num_classes": self.num_classes, "name": self.name, "dtype": self.dtype.name,
                "ignore_class": self.ignore_class, "sparse_y_true": self.sparse_y_true,
                "sparse_y_pred": self.sparse_y_pred, "axis": self.axis}


class OneHotIoU(IoU):
    """:class:`IoU` for one-hot labels (and, by default, score predictions): argmax first.

    Examples:
        >>> m = OneHotIoU(num_classes=3, target_class_ids=[0, 2])
        >>> m.update_state(np.eye(3)[[0, 0, 1, 2]], np.eye(3)[[0, 1, 1, 2]])
        >>> round(float(m.result()), 4)
        0.75
    """

    def __init__(self, num_classes: int, target_class_ids: Sequence[int], name: str | None = None,
                 dtype: DTypeLike = None, ignore_class: int | None = None,
                 sparse_y_pred: bool = False, axis: int = -1) -> None:
        super().__init__(num_classes, target_class_ids, name=name, dtype=dtype,
                         ignore_class=ignore_class, sparse_y_true=False,
                         sparse_y_pred=sparse_y_pred, axis=axis)

    def get_config(self) -> dict:
        return {"num_classes": self.num_classes, "target_class_ids": self.target_class_ids,
                "name": self.name, "dtype": self.dtype.name, "ignore_class": self.ignore_class,
                "sparse_y_pred": self.sparse_y_pred, "axis": self.axis}


class OneHotMeanIoU(MeanIoU):
    """:class:`MeanIoU` for one-hot labels (and, by default, score predictions).

    Examples:
        >>> m = OneHotMeanIoU(num_classes=3)
        >>> m.update_state(np.eye(3)[[0, 0, 1, 2]], np.eye(3)[[0, 1, 1, 2]])
        >>> round(float(m.result()), 4)
        0.6667
    """

    def __init__(self, num_classes: int, name: str | None = None, dtype: DTypeLike = None,
                 ignore_class: int | None = None, sparse_y_pred: bool = False,
                 axis: int = -1) -> None:
        super().__init__(num_classes, name=name, dtype=dtype, ignore_class=ignore_class,
                         sparse_y_true=False, sparse_y_pred=sparse_y_pred, axis=axis)

    def get_config(self) -> dict:
        return {"num_classes": self.num_classes, "name": self.name, "dtype": self.dtype.name,
                "ignore_class": self.ignore_class, "sparse_y_pred": self.sparse_y_pred,
                "axis": self.axis}
