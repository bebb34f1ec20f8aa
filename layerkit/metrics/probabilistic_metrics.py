"""Probabilistic metrics: divergences and cross-entropies averaged over samples."""
from __future__ import annotations

from layerkit import losses as _losses
from layerkit._core.types import DTypeLike
from layerkit.metrics.reduction_metrics import MeanMetricWrapper


class KLDivergence(MeanMetricWrapper):
    """Mean over samples of ``sum(y_true * log(y_true / y_pred), axis=-1)`` (both clipped).

    Examples:
        >>> m = KLDivergence()
        >>> m.update_state([[0, 1], [0, 0]], [[0.6, 0.4], [0.4, 0.6]])
        >>> round(float(m.result()), 4)
        0.4581
    """

    def __init__(self, name: str = "kl_divergence", dtype: DTypeLike = None) -> None:
        super().__init__(_losses.kl_divergence, name=name, dtype=dtype)


class Poisson(MeanMetricWrapper):
    """Mean over samples of ``mean(y_pred - y_true * log(y_pred + eps), axis=-1)``.

    Examples:
        >>> m = Poisson()
        >>> m.update_state([[0, 1], [0, 0]], [[1, 1], [0, 0]])
        >>> round(float(m.result()), 4)
        0.5
    """

    def __init__(self, name: str = "poisson", dtype: DTypeLike = None) -> None:
        super().__init__(_losses.poisson, name=name, dtype=dtype)


class BinaryCrossentropy(MeanMetricWrapper):
    """Mean over samples of the binary cross-entropy (``lk.losses.binary_crossentropy``).

    Args:
        name: the metric name.
        dtype: the result dtype.
        from_logits: whether ``y_pred`` holds logits.
        label_smoothing: squeeze the labels towards 0.5 by this amount.
    """

    def __init__(self, name: str = "binary_crossentropy", dtype: DTypeLike = None,
                 from_logits: bool = False, label_smoothing: float = 0) -> None:
        super().__init__(_losses.binary_crossentropy, name=name, dtype=dtype,
                         from_logits=from_logits, label_smoothing=label_smoothing)


class CategoricalCrossentropy(MeanMetricWrapper):
    """Mean over samples of the categorical cross-entropy of one-hot labels.

    Args:
        name: the metric name.
        dtype: the result dtype.
        from_logits: whether ``y_pred`` holds logits.
        label_smoothing: squeeze the labels towards uniform by this amount.
        axis: the class axis.
    """

    def __init__(self, name: str = "categorical_crossentropy", dtype: DTypeLike = None,
                 from_logits: bool = False, label_smoothing: float = 0, axis: int = -1) -> None:
        super().__init__(_losses.categorical_crossentropy, name=name, dtype=dtype,
                         from_logits=from_logits, label_smoothing=label_smoothing, axis=axis)


class SparseCategoricalCrossentropy(MeanMetricWrapper):
    """Mean over samples of the categorical cross-entropy of integer labels.

    Args:
        name: the metric name.
        dtype: the result dtype.
        from_logits: whether ``y_pred`` holds logits.
        ignore_class: a label value whose entries count as 0.
        axis: the class axis.
    """

    def __init__(self, name: str = "sparse_categorical_crossentropy", dtype: DTypeLike = None,
                 from_logits: bool = False, ignore_class: int | None = None,
                 axis: int = -1) -> None:
        super().__init__(_losses.sparse_categorical_crossentropy, name=name, dtype=dtype,
                         from_logits=from_logits, ignore_class=ignore_class, axis=axis)
