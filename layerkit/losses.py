"""Losses with Keras 3 definitions, built from layerkit ops (so they are differentiable).

A loss object maps ``(y_true, y_pred, sample_weight=None)`` to a scalar: ``call``
gives one value per sample (the mean over the last axis for elementwise losses), the
sample weights multiply them, and the ``reduction`` combines them:
``'sum_over_batch_size'`` (default: sum / number of values), ``'sum'``, ``'mean'``
(same as sum_over_batch_size), ``'mean_with_sample_weight'`` (sum / sum of weights) or
``'none'``.

``from_logits=True`` uses the numerically stable fused cross-entropies of ``lk.nn``.
Probabilities are clipped to ``[1e-7, 1 - 1e-7]`` like Keras.

Everything that depends on values (sparse label checks and one-hot encoding, hinge's
{0, 1} label test, the sum of weights of ``'mean_with_sample_weight'``) is an op or a
small record, never NumPy on a tensor's array, so a loss inside ``lk.function`` (a
traced train step) recomputes it on every call.

String names: ``'mse'``/``'mean_squared_error'``, ``'mae'``/``'mean_absolute_error'``,
``'huber'``, ``'binary_crossentropy'``, ``'categorical_crossentropy'``,
``'sparse_categorical_crossentropy'``, ``'mape'``, ``'msle'``, ``'kld'``, ``'hinge'``,
``'squared_hinge'``, ``'poisson'``, ``'log_cosh'``.
"""
from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

import numpy as np

from layerkit._core.convert import FLOATX, to_array
from layerkit._core.op import Op, apply, wrap
from layerkit._core.serialization import init_kwargs
from layerkit._core.tensor import Tensor
from layerkit._core.types import AxisLike, DTypeLike, TensorLike
from layerkit.primitives import array as _array
from layerkit.primitives import elementwise as _ew
from layerkit.primitives import nn as _nn
from layerkit.primitives import reduce as _reduce
from layerkit.primitives import selection as _selection

__all__ = ["Loss", "LossFunctionWrapper", "MeanSquaredError", "MeanAbsoluteError",
           "MeanAbsolutePercentageError", "MeanSquaredLogarithmicError", "Huber", "LogCosh",
           "BinaryCrossentropy", "CategoricalCrossentropy", "SparseCategoricalCrossentropy",
           "KLDivergence", "Hinge", "SquaredHinge", "Poisson", "CategoricalHinge",
           "CosineSimilarity", "BinaryFocalCrossentropy", "CategoricalFocalCrossentropy", "Dice",
           "Tversky", "binary_focal_crossentropy", "categorical_focal_crossentropy", "dice",
           "tversky",
           "mean_squared_error", "mean_absolute_error", "mean_absolute_percentage_error",
           "mean_squared_logarithmic_error", "huber", "log_cosh", "binary_crossentropy",
           "categorical_crossentropy", "sparse_categorical_crossentropy", "kl_divergence",
           "hinge", "squared_hinge", "poisson", "categorical_hinge", "cosine_similarity",
           "kullback_leibler_divergence", "huber_loss", "logcosh", "MSE", "MAE", "MAPE", "MSLE",
           "KLD", "mse", "mae", "mape", "msle", "kld", "get", "serialize", "deserialize"]

EPSILON = 1e-7
_REDUCTIONS = ("sum_over_batch_size", "sum", "mean", "mean_with_sample_weight", "none")


# ---- helpers ---------------------------------------------------------------------------
def _tensor(x) -> Tensor:
    if isinstance(x, Tensor):
        return x
    a = to_array(x)
    if a.dtype == np.float64 and not isinstance(x, np.ndarray):
        a = a.astype(FLOATX)
    return wrap(a)


def _float_pair(y_true: TensorLike, y_pred: TensorLike) -> tuple[Tensor, Tensor]:
    """y_pred as a float Tensor and y_true cast to its dtype."""
    y_pred = _tensor(y_pred)
    if y_pred.dtype.kind != "f":
        y_pred = _ew.cast(y_pred, FLOATX)
    y_true = _tensor(y_true)
    if y_true.dtype != y_pred.dtype:
        y_true = _ew.cast(y_true, y_pred.dtype)
    return y_true, y_pred


def _same_rank(x1: Tensor, x2: Tensor) -> tuple[Tensor, Tensor]:
    """Keras's squeeze_or_expand_to_same_rank on Tensors (a trailing size-1 axis)."""
    r1, r2 = x1.ndim, x2.ndim
    if r1 == r2 + 1 and x1.shape[-1] == 1:
        if r2 == 1:
            x2 = _array.expand_dims(x2, -1)
        else:
            x1 = _array.squeeze(x1, -1)
    elif r2 == r1 + 1 and x2.shape[-1] == 1:
        if r1 == 1:
            x1 = _array.expand_dims(x1, -1)
        else:
            x2 = _array.squeeze(x2, -1)
    return x1, x2


def _matched(name: str, y_true: TensorLike, y_pred: TensorLike) -> tuple[Tensor, Tensor]:
    """Float pair with equal shapes, or a ValueError naming the loss and both shapes."""
    y_true, y_pred = _float_pair(y_true, y_pred)
    if y_true.shape != y_pred.shape:
        y_true, y_pred = _same_rank(y_true, y_pred)
        if y_true.shape != y_pred.shape:
            raise ValueError(
                f"{name}: y_true and y_pred must have the same shape; received "
                f"y_true.shape={tuple(y_true.shape)}, y_pred.shape={tuple(y_pred.shape)}"
            )
    return y_true, y_pred


def _mean_last(x: Tensor) -> Tensor:
    return _reduce.reduce_mean(x, axis=-1) if x.ndim else x


def _clip_probs(p: Tensor) -> Tensor:
    return _ew.clip_by_value(p, EPSILON, 1.0 - EPSILON)


# ---- loss functions: per-sample values -----------------------------------------------------
def mean_squared_error(y_true: TensorLike, y_pred: TensorLike) -> Tensor:
    """``mean(square(y_true - y_pred), axis=-1)``."""
    y_true, y_pred = _matched("mean_squared_error", y_true, y_pred)
    return _mean_last(_ew.square(_ew.subtract(y_pred, y_true)))


def mean_absolute_error(y_true: TensorLike, y_pred: TensorLike) -> Tensor:
    """``mean(abs(y_true - y_pred), axis=-1)``."""
    y_true, y_pred = _matched("mean_absolute_error", y_true, y_pred)
    return _mean_last(_ew.abs(_ew.subtract(y_pred, y_true)))


def mean_absolute_percentage_error(y_true: TensorLike, y_pred: TensorLike) -> Tensor:
    """``100 * mean(abs((y_true - y_pred) / max(abs(y_true), epsilon)), axis=-1)``."""
    y_true, y_pred = _matched("mean_absolute_percentage_error", y_true, y_pred)
    denom = _ew.maximum(_ew.abs(y_true), EPSILON)
    return _ew.multiply(100.0, _mean_last(_ew.abs(_ew.divide(_ew.subtract(y_true, y_pred),
                                                             denom))))


def mean_squared_logarithmic_error(y_true: TensorLike, y_pred: TensorLike) -> Tensor:
    """``mean(square(log(max(y_pred, eps) + 1) - log(max(y_true, eps) + 1)), axis=-1)``."""
    y_true, y_pred = _matched("mean_squared_logarithmic_error", y_true, y_pred)
    a = _ew.log(_ew.add(_ew.maximum(y_pred, EPSILON), 1.0))
    b = _ew.log(_ew.add(_ew.maximum(y_true, EPSILON), 1.0))
    return _mean_last(_ew.square(_ew.subtract(a, b)))


def huber(y_true: TensorLike, y_pred: TensorLike, delta: float = 1.0) -> Tensor:
    """Quadratic for ``|error| <= delta``, linear beyond; averaged over the last axis."""
    y_true, y_pred = _matched("huber", y_true, y_pred)
    abs_err = _ew.abs(_ew.subtract(y_pred, y_true))
    # 0.5*q**2 + delta*(|e| - q) with q = min(|e|, delta) equals Keras's where() form.
    q = _ew.minimum(abs_err, float(delta))
    per = _ew.add(_ew.multiply(0.5, _ew.square(q)),
                  _ew.multiply(float(delta), _ew.subtract(abs_err, q)))
    return _mean_last(per)


def log_cosh(y_true: TensorLike, y_pred: TensorLike) -> Tensor:
    """``mean(log(cosh(y_pred - y_true)), axis=-1)`` in the overflow-free form."""
    y_true, y_pred = _matched("log_cosh", y_true, y_pred)
    x = _ew.subtract(y_pred, y_true)
    # log(cosh(x)) = x + softplus(-2x) - log(2)
    val = _ew.subtract(_ew.add(x, _nn.softplus(_ew.multiply(-2.0, x))), math.log(2.0))
    return _mean_last(val)


def binary_crossentropy(y_true: TensorLike, y_pred: TensorLike, from_logits: bool = False,
                        label_smoothing: float = 0.0, axis: int = -1) -> Tensor:
    """Elementwise binary cross-entropy averaged over ``axis``.

    Args:
        y_true: labels in [0, 1].
        y_pred: probabilities, or logits with ``from_logits=True``.
        from_logits: use the stable ``sigmoid_cross_entropy_with_logits``.
        label_smoothing: squeeze labels towards 0.5: ``y * (1 - s) + 0.5 * s``.
    """
    y_true, y_pred = _matched("binary_crossentropy", y_true, y_pred)
    if label_smoothing:
        y_true = _ew.add(_ew.multiply(y_true, 1.0 - label_smoothing), 0.5 * label_smoothing)
    if from_logits:
        per = _nn.sigmoid_cross_entropy_with_logits(labels=y_true, logits=y_pred)
    else:
        p = _clip_probs(y_pred)
        per = _ew.negative(_ew.add(_ew.multiply(y_true, _ew.log(p)),
                                   _ew.multiply(_ew.subtract(1.0, y_true),
                                                _ew.log(_ew.subtract(1.0, p)))))
    return _reduce.reduce_mean(per, axis=axis) if per.ndim else per


def categorical_crossentropy(y_true: TensorLike, y_pred: TensorLike, from_logits: bool = False,
                             label_smoothing: float = 0.0, axis: int = -1) -> Tensor:
    """Cross-entropy between one-hot (or soft) labels and predictions along ``axis``.

    Probabilities are renormalised to sum to 1 and clipped; logits use the stable fused
    ``softmax_cross_entropy_with_logits``.
    """
    y_true, y_pred = _float_pair(y_true, y_pred)
    if y_true.shape != y_pred.shape:
        raise ValueError(
            f"categorical_crossentropy: y_true and y_pred must have the same shape (one-hot "
            f"labels); received y_true.shape={tuple(y_true.shape)}, "
            f"y_pred.shape={tuple(y_pred.shape)}. For integer labels use "
            f"sparse_categorical_crossentropy"
        )
    if y_pred.ndim == 0:
        raise ValueError("categorical_crossentropy: y_pred must have at least one axis, "
                         "received a scalar")
    if label_smoothing:
        k = y_pred.shape[axis]
        y_true = _ew.add(_ew.multiply(y_true, 1.0 - label_smoothing), label_smoothing / k)
    if from_logits:
        return _nn.softmax_cross_entropy_with_logits(labels=y_true, logits=y_pred, axis=axis)
    p = _ew.divide(y_pred, _reduce.reduce_sum(y_pred, axis=axis, keepdims=True))
    p = _clip_probs(p)
    return _ew.negative(_reduce.reduce_sum(_ew.multiply(y_true, _ew.log(p)), axis=axis))


def _check_sparse(name: str, labels: np.ndarray, num_classes: int, ignore_class) -> np.ndarray:
    if labels.size == 0:
        return labels
    if labels.dtype.kind == "f" and not np.all(labels == np.trunc(labels)):
        # TensorFlow and Keras cast the labels to integers (truncating towards zero); do
        # the same so their programs run, but say so: fractional class labels are
        # usually a mistake in the data.
        import warnings

        bad = labels[labels != np.trunc(labels)][0]
        warnings.warn(f"{name}: labels must be integer class indices; received non-integer "
                      f"values such as {bad}, truncated towards zero (as TensorFlow casts "
                      f"them)", stacklevel=4)
        labels = np.trunc(labels)
    check = labels if ignore_class is None else labels[labels != ignore_class]
    if check.size and (check.min() < 0 or check.max() >= num_classes):
        bad = check[(check < 0) | (check >= num_classes)][0]
        raise ValueError(
            f"{name}: label {bad.item()} is out of range; expected class indices in "
            f"[0, {num_classes}) for predictions with {num_classes} classes"
        )
    return labels


def _sparse_labels_fwd(labels, name, num_classes, ignore_class, dtype):
    # Checks and conversion in a record (no gradient): a traced graph runs them per call.
    labels = _check_sparse(name, labels, num_classes, ignore_class)
    if ignore_class is None:
        keep = np.ones(labels.shape, dtype)
    else:
        mask = labels != ignore_class
        labels = np.where(mask, labels, 0)
        keep = mask.astype(dtype)
    return labels.astype(np.int64, copy=False), keep


def _one_hot_fwd(labels, depth, dtype):
    out = np.zeros(labels.shape + (depth,), dtype)
    np.put_along_axis(out, labels[..., None].astype(np.intp), 1, axis=-1)
    return out


# (class indices as int64, 1/0 weights for ignore_class) and the one-hot encoding.
_SPARSE_LABELS = Op("sparse_labels", _sparse_labels_fwd, num_outputs=2)
_ONE_HOT = Op("one_hot_labels", _one_hot_fwd)


def sparse_categorical_crossentropy(y_true: TensorLike, y_pred: TensorLike,
                                    from_logits: bool = False, ignore_class: int | None = None,
                                    axis: int = -1) -> Tensor:
    """Cross-entropy between integer labels and predictions over classes (last axis).

    Args:
        y_true: integer class indices of shape ``y_pred.shape[:-1]`` (a trailing axis
            of size 1 is accepted; float labels are truncated to integers as TensorFlow
            casts them, with a warning when any has a fractional part).
        y_pred: probabilities, or logits with ``from_logits=True``.
        ignore_class: a label value whose samples get loss 0.

    Raises:
        ValueError: label shape mismatch, or a label outside ``[0, num_classes)``.
    """
    name = "sparse_categorical_crossentropy"
    y_pred = _tensor(y_pred)
    if axis != -1 and axis != y_pred.ndim - 1:
        raise ValueError(f"{name}: only axis=-1 is supported, received axis={axis}")
    if y_pred.dtype.kind != "f":
        y_pred = _ew.cast(y_pred, FLOATX)
    labels = y_true if isinstance(y_true, Tensor) else wrap(np.asarray(y_true))
    if y_pred.ndim == 0:
        raise ValueError(f"{name}: y_pred must have a class axis, received a scalar")
    if labels.ndim == y_pred.ndim and labels.shape[-1] == 1:
        labels = _array.squeeze(labels, -1)
    if labels.shape != y_pred.shape[:-1]:
        raise ValueError(
            f"{name}: labels of shape {tuple(labels.shape)} do not match predictions of "
            f"shape {tuple(y_pred.shape)}; expected labels of shape "
            f"{tuple(y_pred.shape[:-1])} (one integer class index per sample). For one-hot "
            f"labels use categorical_crossentropy"
        )
    k = y_pred.shape[-1]
    keep: Any = None  # the kept-entries mask once ignore_class is set
    if labels.dtype.kind not in "iu" or ignore_class is not None or not from_logits:
        # (the fused logits op checks integer labels' range itself)
        labels, keep = apply(_SPARSE_LABELS, labels, name=name, num_classes=k,
                             ignore_class=ignore_class, dtype=y_pred.dtype)
    if from_logits:
        try:
            per = _nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=y_pred)
        except ValueError as e:
            raise ValueError(f"{name}: {e}") from None
    else:
        p = _ew.divide(y_pred, _reduce.reduce_sum(y_pred, axis=-1, keepdims=True))
        p = _clip_probs(p)
        onehot = apply(_ONE_HOT, labels, depth=k, dtype=y_pred.dtype)
        per = _ew.negative(_reduce.reduce_sum(_ew.multiply(onehot, _ew.log(p)), axis=-1))
    if ignore_class is not None:
        per = _ew.multiply(per, keep)
    return per


def kl_divergence(y_true: TensorLike, y_pred: TensorLike) -> Tensor:
    """``sum(y_true * log(y_true / y_pred), axis=-1)`` with both clipped to ``[eps, 1]``."""
    y_true, y_pred = _matched("kl_divergence", y_true, y_pred)
    t = _ew.clip_by_value(y_true, EPSILON, 1.0)
    p = _ew.clip_by_value(y_pred, EPSILON, 1.0)
    return _reduce.reduce_sum(_ew.multiply(t, _ew.log(_ew.divide(t, p))), axis=-1)


def _signed(y_true: Tensor) -> Tensor:
    # Keras converts {0, 1} labels to {-1, 1} for hinge losses (a select on the values,
    # so a traced graph decides per call).
    binary = _reduce.reduce_all(_ew.logical_or(_ew.equal(y_true, 0.0), _ew.equal(y_true, 1.0)))
    return _ew.where(binary, _ew.subtract(_ew.multiply(2.0, y_true), 1.0), y_true)


def hinge(y_true: TensorLike, y_pred: TensorLike) -> Tensor:
    """``mean(max(1 - y_true * y_pred, 0), axis=-1)`` (labels -1/1; 0/1 are converted)."""
    y_true, y_pred = _matched("hinge", y_true, y_pred)
    return _mean_last(_ew.maximum(_ew.subtract(1.0, _ew.multiply(_signed(y_true), y_pred)), 0.0))


def squared_hinge(y_true: TensorLike, y_pred: TensorLike) -> Tensor:
    """``mean(square(max(1 - y_true * y_pred, 0)), axis=-1)``."""
    y_true, y_pred = _matched("squared_hinge", y_true, y_pred)
    h = _ew.maximum(_ew.subtract(1.0, _ew.multiply(_signed(y_true), y_pred)), 0.0)
    return _mean_last(_ew.square(h))


def poisson(y_true: TensorLike, y_pred: TensorLike) -> Tensor:
    """``mean(y_pred - y_true * log(y_pred + eps), axis=-1)``."""
    y_true, y_pred = _matched("poisson", y_true, y_pred)
    return _mean_last(_ew.subtract(y_pred, _ew.multiply(y_true, _ew.log(_ew.add(y_pred,
                                                                                  EPSILON)))))


def categorical_hinge(y_true: TensorLike, y_pred: TensorLike) -> Tensor:
    """``max(max((1 - y_true) * y_pred) - sum(y_true * y_pred) + 1, 0)`` over the last axis.

    Examples:
        >>> import layerkit as lk
        >>> lk.losses.categorical_hinge([[0.0, 1.0]], [[0.3, 0.6]]).numpy()
        array([0.7], dtype=float32)
    """
    y_true, y_pred = _float_pair(y_true, y_pred)
    pos = _reduce.reduce_sum(_ew.multiply(y_true, y_pred), axis=-1)
    neg = _reduce.reduce_max(_ew.multiply(_ew.subtract(1.0, y_true), y_pred), axis=-1)
    return _ew.maximum(_ew.add(_ew.subtract(neg, pos), 1.0), 0.0)


def binary_focal_crossentropy(y_true: TensorLike, y_pred: TensorLike,
                              apply_class_balancing: bool = False,
                              alpha: float = 0.25, gamma: float = 2.0,
                              from_logits: bool = False, label_smoothing: float = 0.0,
                              axis: int = -1) -> Tensor:
    """Binary cross-entropy scaled by the focal factor ``(1 - p_t) ** gamma`` (``p_t`` the
    probability given to the true label) and, with ``apply_class_balancing``, by
    ``alpha`` for positives and ``1 - alpha`` for negatives; averaged over ``axis``
    (Keras's ``binary_focal_crossentropy``)."""
    y_true, y_pred = _matched("binary_focal_crossentropy", y_true, y_pred)
    if label_smoothing:
        y_true = _ew.add(_ew.multiply(y_true, 1.0 - label_smoothing), 0.5 * label_smoothing)
    p = _clip_probs(_ew.sigmoid(y_pred) if from_logits else y_pred)
    bce = _ew.negative(_ew.add(_ew.multiply(y_true, _ew.log(p)),
                               _ew.multiply(_ew.subtract(1.0, y_true),
                                            _ew.log(_ew.subtract(1.0, p)))))
    p_t = _ew.add(_ew.multiply(y_true, p),
                  _ew.multiply(_ew.subtract(1.0, y_true), _ew.subtract(1.0, p)))
    out = _ew.multiply(_ew.pow(_ew.subtract(1.0, p_t), gamma), bce)
    if apply_class_balancing:
        weight = _ew.add(_ew.multiply(y_true, alpha),
                         _ew.multiply(_ew.subtract(1.0, y_true), 1.0 - alpha))
        out = _ew.multiply(weight, out)
    return _reduce.reduce_mean(out, axis=axis) if out.ndim else out


def categorical_focal_crossentropy(y_true: TensorLike, y_pred: TensorLike, alpha: float = 0.25,
                                   gamma: float = 2.0,
                                   from_logits: bool = False, label_smoothing: float = 0.0,
                                   axis: int = -1) -> Tensor:
    """Categorical cross-entropy with each class term scaled by
    ``alpha * (1 - p) ** gamma``, summed over ``axis`` (Keras's
    ``categorical_focal_crossentropy``; probabilities are renormalised and clipped)."""
    y_true, y_pred = _float_pair(y_true, y_pred)
    if y_true.shape != y_pred.shape or y_pred.ndim == 0:
        raise ValueError(
            f"categorical_focal_crossentropy: y_true and y_pred must have the same shape "
            f"with a class axis (one-hot labels); received y_true.shape="
            f"{tuple(y_true.shape)}, y_pred.shape={tuple(y_pred.shape)}")
    if label_smoothing:
        k = y_pred.shape[axis]
        y_true = _ew.add(_ew.multiply(y_true, 1.0 - label_smoothing), label_smoothing / k)
    if from_logits:
        y_pred = _nn.softmax(y_pred, axis=axis)
    p = _clip_probs(_ew.divide(y_pred, _reduce.reduce_sum(y_pred, axis=axis, keepdims=True)))
    ce = _ew.negative(_ew.multiply(y_true, _ew.log(p)))
    factor = _ew.multiply(_ew.pow(_ew.subtract(1.0, p), gamma), alpha)
    return _reduce.reduce_sum(_ew.multiply(factor, ce), axis=axis)


def dice(y_true: TensorLike, y_pred: TensorLike, axis: AxisLike = None) -> Tensor:
    """``1 - 2 * sum(y_true * y_pred) / (sum(y_true) + sum(y_pred) + eps)`` over ``axis``
    (every axis when None), as Keras's ``dice``."""
    y_true, y_pred = _float_pair(y_true, y_pred)
    inter = _reduce.reduce_sum(_ew.multiply(y_true, y_pred), axis=axis)
    total = _ew.add(_ew.add(_reduce.reduce_sum(y_true, axis=axis),
                            _reduce.reduce_sum(y_pred, axis=axis)), EPSILON)
    return _ew.subtract(1.0, _ew.divide(_ew.multiply(2.0, inter), total))


def tversky(y_true: TensorLike, y_pred: TensorLike, alpha: float = 0.5, beta: float = 0.5,
            axis: AxisLike = None) -> Tensor:
    """``1 - TP / (TP + alpha * FP + beta * FN + eps)`` with soft counts over ``axis``
    (Keras's ``tversky``: ``FP = sum((1 - y_pred) * y_true)``,
    ``FN = sum(y_pred * (1 - y_true))``, its own naming)."""
    y_true, y_pred = _float_pair(y_true, y_pred)
    tp = _reduce.reduce_sum(_ew.multiply(y_true, y_pred), axis=axis)
    fp = _reduce.reduce_sum(_ew.multiply(_ew.subtract(1.0, y_pred), y_true), axis=axis)
    fn = _reduce.reduce_sum(_ew.multiply(y_pred, _ew.subtract(1.0, y_true)), axis=axis)
    den = _ew.add(_ew.add(_ew.add(tp, _ew.multiply(fp, alpha)), _ew.multiply(fn, beta)),
                  EPSILON)
    return _ew.subtract(1.0, _ew.divide(tp, den))


def _l2_normalize(x: Tensor, axis: int) -> Tensor:
    # x / sqrt(max(sum(x**2), 1e-12)), as Keras's l2_normalize
    sq = _reduce.reduce_sum(_ew.square(x), axis=axis, keepdims=True)
    return _ew.multiply(x, _ew.rsqrt(_ew.maximum(sq, 1e-12)))


def cosine_similarity(y_true: TensorLike, y_pred: TensorLike, axis: int = -1) -> Tensor:
    """The negated cosine similarity ``-sum(l2_normalize(y_true) * l2_normalize(y_pred))``.

    A loss (so -1 is best); ``lk.metrics.CosineSimilarity`` reports the positive value.
    """
    y_true, y_pred = _matched("cosine_similarity", y_true, y_pred)
    prod = _ew.multiply(_l2_normalize(y_true, axis), _l2_normalize(y_pred, axis))
    return _ew.negative(_reduce.reduce_sum(prod, axis=axis))


# Keras / tf.keras spellings of the functions above.
MSE = mse = mean_squared_error
MAE = mae = mean_absolute_error
MAPE = mape = mean_absolute_percentage_error
MSLE = msle = mean_squared_logarithmic_error
KLD = kld = kullback_leibler_divergence = kl_divergence
huber_loss = huber
logcosh = log_cosh


# ---- reduction ---------------------------------------------------------------------------------
def _standardize_reduction(reduction) -> str:
    if reduction is None:
        return "none"
    if reduction == "auto":
        return "sum_over_batch_size"
    if reduction not in _REDUCTIONS:
        raise ValueError(f"invalid loss reduction {reduction!r}; expected one of "
                         f"{list(_REDUCTIONS)} or None")
    return reduction


def apply_mask(sample_weight, mask, dtype, reduction: str):
    """Fold the Keras mask of ``y_pred`` into the sample weights (Keras's rule).

    Masked entries weigh 0. For the mean reductions the kept ones weigh
    ``mask.size / kept``, so that the mean runs over the kept entries only.
    """
    m = _ew.cast(_tensor(mask), dtype)
    if reduction in ("mean", "sum_over_batch_size"):
        total = float(np.prod(m.shape))
        # no kept entry: m is all zeros, so any finite scale gives 0
        m = _ew.multiply(m, _ew.divide(total, _ew.maximum(_reduce.reduce_sum(m), 1.0)))
    if sample_weight is None:
        return m
    sw = _tensor(sample_weight)
    if sw.dtype != dtype:
        sw = _ew.cast(sw, dtype)
    m, sw = _same_rank(m, sw)
    while 0 < sw.ndim < m.ndim:  # per-sample weights against per-step masks
        sw = _array.expand_dims(sw, -1)
    return _ew.multiply(sw, m)


def _mask_of(y_pred):
    return getattr(y_pred, "_keras_mask", None) if isinstance(y_pred, Tensor) else None


def reduce_weighted_values(values: Tensor, sample_weight=None,
                           reduction: str = "sum_over_batch_size") -> Tensor:
    """Weight per-sample ``values`` and reduce them (Keras's rule).

    ``sample_weight`` is brought to the rank of ``values`` (a trailing size-1 axis is
    squeezed or added) and broadcast; ``'sum_over_batch_size'`` divides the weighted
    sum by the number of values (not by the sum of weights).
    """
    if sample_weight is not None:
        sw = _tensor(sample_weight)
        if sw.dtype != values.dtype:
            sw = _ew.cast(sw, values.dtype)
        values, sw = _same_rank(values, sw)
        try:
            np.broadcast_shapes(tuple(values.shape), tuple(sw.shape))
        except ValueError:
            raise ValueError(
                f"sample_weight of shape {tuple(sw.shape)} cannot be broadcast to the "
                f"per-sample losses of shape {tuple(values.shape)}"
            ) from None
        values = _ew.multiply(values, sw)
    else:
        sw = None
    if reduction == "none" or values.ndim == 0 or values.shape == (0,):
        return values
    total = _reduce.reduce_sum(values)
    if reduction == "sum":
        return total
    if reduction == "mean_with_sample_weight" and sw is not None:
        # sum / sum of weights, 0 when the weights sum to 0 (in ops: per call in a graph)
        denom = _reduce.reduce_sum(_array.broadcast_to(sw, values.shape))
        zero = _ew.equal(denom, 0.0)
        return _ew.where(zero, _ew.multiply(total, 0.0),
                         _ew.divide(total, _ew.where(zero, 1.0, denom)))
    denom = _selection.element_count(values, dtype=values.dtype)
    if isinstance(denom, Tensor):  # a None batch while tracing: the size at run time
        return _ew.divide(total, _ew.maximum(denom, 1.0))
    count = float(denom)
    if count == 0:
        return _ew.multiply(total, 0.0)
    return _ew.divide(total, count)


# ---- loss classes ---------------------------------------------------------------------------
def _snake(name: str) -> str:
    s = re.sub(r"(.)([A-Z][a-z]+)", r"\1_\2", name)
    return re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", s).lower()


class Loss:
    """Base class: override ``call(y_true, y_pred)`` returning per-sample losses.

    Args:
        name: a name (default: the class name in snake case).
        reduction: ``'sum_over_batch_size'`` (default), ``'sum'``, ``'mean'``,
            ``'mean_with_sample_weight'``, ``'none'`` or None.
        dtype: unused (the loss is computed in the predictions' float dtype).
    """

    def __init__(self, name: str | None = None, reduction: str = "sum_over_batch_size",
                 dtype: DTypeLike = None) -> None:
        self.name = name or _snake(type(self).__name__)
        self.reduction = _standardize_reduction(reduction)
        self.dtype = dtype

    def __call__(self, y_true: TensorLike, y_pred: TensorLike,
                 sample_weight: TensorLike | None = None) -> Tensor:
        """The reduced loss of a batch (a scalar Tensor unless ``reduction='none'``)."""
        mask = _mask_of(y_pred)  # a Keras mask on y_pred leaves masked entries out
        # A subclass's call() gets Tensors, as in Keras (lists and arrays converted).
        values = self.call(_tensor(y_true), _tensor(y_pred))
        if mask is not None:
            sample_weight = apply_mask(sample_weight, mask, values.dtype, self.reduction)
        if sample_weight is None and self.reduction in ("sum_over_batch_size", "mean") \
                and values.ndim and 0 not in values.shape:  # (reduce_mean of nothing: nan)
            return _reduce.reduce_mean(values)  # sum / size, in one op
        return reduce_weighted_values(values, sample_weight, self.reduction)

    def call(self, y_true: TensorLike, y_pred: TensorLike) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__} must implement call(y_true, y_pred)")

    def get_config(self) -> dict:
        return {"name": self.name, "reduction": self.reduction}

    @classmethod
    def from_config(cls, config: dict) -> Loss:
        """A loss from :meth:`get_config` output (Keras 3's configs too)."""
        return cls(**init_kwargs(cls, config))

    def __repr__(self) -> str:
        return f"<{type(self).__name__} name={self.name!r}>"


class LossFunctionWrapper(Loss):
    """A Loss from a function ``fn(y_true, y_pred, **kwargs)`` returning per-sample values.

    Args:
        fn: the per-sample loss function.
        reduction: as for :class:`Loss` (``name`` defaults to ``fn``'s).
        name: as for :class:`Loss` (``name`` defaults to ``fn``'s).
        dtype: as for :class:`Loss` (``name`` defaults to ``fn``'s).
        **kwargs: passed to ``fn`` on every call.
    """

    def __init__(self, fn: Callable, reduction: str = "sum_over_batch_size",
                 name: str | None = None, dtype: DTypeLike = None, **kwargs: Any) -> None:
        super().__init__(name=name or getattr(fn, "__name__", None), reduction=reduction,
                         dtype=dtype)
        self.fn = fn
        self._fn_kwargs = kwargs

    def call(self, y_true: TensorLike, y_pred: TensorLike) -> Tensor:
        return self.fn(y_true, y_pred, **self._fn_kwargs)

    def get_config(self) -> dict:
        from layerkit.saving.serialization_lib import serialize_keras_object

        return {**super().get_config(), "fn": serialize_keras_object(self.fn),
                **self._fn_kwargs}

    @classmethod
    def from_config(cls, config: dict) -> Loss:
        """A wrapper from :meth:`get_config` output (``fn`` is found by name)."""
        from layerkit.saving.serialization_lib import deserialize_keras_object

        config = dict(config)
        if "fn" in config:
            config["fn"] = deserialize_keras_object(config["fn"], kind="losses")
        return cls(**init_kwargs(cls, config))


class _BuiltinLoss(LossFunctionWrapper):
    """A built-in loss: the config holds its own arguments (no ``fn``), as in Keras."""

    def get_config(self) -> dict:
        return {**Loss.get_config(self), **self._fn_kwargs}

    @classmethod
    def from_config(cls, config: dict) -> Loss:
        return cls(**init_kwargs(cls, config))


class MeanSquaredError(_BuiltinLoss):
    """Mean of squared errors over the last axis, reduced over the batch.

    Examples:
        >>> round(float(MeanSquaredError()([[0., 1.], [0., 0.]], [[1., 1.], [1., 0.]])), 4)
        0.5
    """

    def __init__(self, reduction: str = "sum_over_batch_size", name: str = "mean_squared_error",
                 dtype: DTypeLike = None) -> None:
        super().__init__(mean_squared_error, reduction=reduction, name=name, dtype=dtype)


class MeanAbsoluteError(_BuiltinLoss):
    """Mean of absolute errors over the last axis, reduced over the batch."""

    def __init__(self, reduction: str = "sum_over_batch_size", name: str = "mean_absolute_error",
                 dtype: DTypeLike = None) -> None:
        super().__init__(mean_absolute_error, reduction=reduction, name=name, dtype=dtype)


class MeanAbsolutePercentageError(_BuiltinLoss):
    """Mean absolute percentage error."""

    def __init__(self, reduction: str = "sum_over_batch_size",
                 name: str = "mean_absolute_percentage_error", dtype: DTypeLike = None) -> None:
        super().__init__(mean_absolute_percentage_error, reduction=reduction, name=name,
                         dtype=dtype)


class MeanSquaredLogarithmicError(_BuiltinLoss):
    """Mean squared logarithmic error."""

    def __init__(self, reduction: str = "sum_over_batch_size",
                 name: str = "mean_squared_logarithmic_error", dtype: DTypeLike = None) -> None:
        super().__init__(mean_squared_logarithmic_error, reduction=reduction, name=name,
                         dtype=dtype)


class Huber(_BuiltinLoss):
    """Huber loss: ``0.5 * e**2`` for ``|e| <= delta``, ``delta * (|e| - 0.5 * delta)`` beyond.

    Args:
        delta: the switch point (default 1.0).
    """

    def __init__(self, delta: float = 1.0, reduction: str = "sum_over_batch_size",
                 name: str = "huber_loss", dtype: DTypeLike = None) -> None:
        super().__init__(huber, reduction=reduction, name=name, dtype=dtype, delta=delta)
        self.delta = delta


class LogCosh(_BuiltinLoss):
    """Mean of log(cosh(error))."""

    def __init__(self, reduction: str = "sum_over_batch_size", name: str = "log_cosh",
                 dtype: DTypeLike = None) -> None:
        super().__init__(log_cosh, reduction=reduction, name=name, dtype=dtype)


class BinaryCrossentropy(_BuiltinLoss):
    """Binary cross-entropy for labels in {0, 1} (or soft labels).

    Args:
        from_logits: predictions are logits (stable sigmoid cross-entropy).
        label_smoothing: labels become ``y * (1 - s) + 0.5 * s``.
        axis: the axis averaged over (default -1).

    Examples:
        >>> bce = BinaryCrossentropy(from_logits=True)
        >>> round(float(bce([[0, 1], [0, 0]], [[-18.6, 0.51], [2.94, -12.8]])), 4)
        0.8655
    """

    def __init__(self, from_logits: bool = False, label_smoothing: float = 0.0, axis: int = -1,
                 reduction: str = "sum_over_batch_size", name: str = "binary_crossentropy",
                 dtype: DTypeLike = None) -> None:
        super().__init__(binary_crossentropy, reduction=reduction, name=name, dtype=dtype,
                         from_logits=from_logits, label_smoothing=label_smoothing, axis=axis)
        self.from_logits, self.label_smoothing, self.axis = from_logits, label_smoothing, axis


class CategoricalCrossentropy(_BuiltinLoss):
    """Cross-entropy for one-hot (or soft) labels.

    Args:
        from_logits: predictions are logits (stable softmax cross-entropy).
        label_smoothing: labels become ``y * (1 - s) + s / num_classes``.
        axis: the class axis (default -1).

    Examples:
        >>> round(float(CategoricalCrossentropy()([[0, 1, 0], [0, 0, 1]],
        ...                                       [[0.05, 0.95, 0], [0.1, 0.8, 0.1]])), 4)
        1.1769
    """

    def __init__(self, from_logits: bool = False, label_smoothing: float = 0.0, axis: int = -1,
                 reduction: str = "sum_over_batch_size", name: str = "categorical_crossentropy",
                 dtype: DTypeLike = None) -> None:
        super().__init__(categorical_crossentropy, reduction=reduction, name=name, dtype=dtype,
                         from_logits=from_logits, label_smoothing=label_smoothing, axis=axis)
        self.from_logits, self.label_smoothing, self.axis = from_logits, label_smoothing, axis


class SparseCategoricalCrossentropy(_BuiltinLoss):
    """Cross-entropy for integer labels.

    Args:
        from_logits: predictions are logits (stable fused sparse softmax cross-entropy).
        ignore_class: a label value whose samples are masked out (loss 0; the mean
            reductions average over the other samples, as in Keras).
        axis: the class axis (only -1).

    Raises:
        ValueError: label shape mismatch or a label out of range.

    Examples:
        >>> round(float(SparseCategoricalCrossentropy()([1, 2],
        ...                                             [[0.05, 0.95, 0], [0.1, 0.8, 0.1]])), 4)
        1.1769
    """

    def __init__(self, from_logits: bool = False, ignore_class: int | None = None,
                 reduction: str = "sum_over_batch_size", axis: int = -1,
                 name: str = "sparse_categorical_crossentropy", dtype: DTypeLike = None) -> None:
        super().__init__(sparse_categorical_crossentropy, reduction=reduction, name=name,
                         dtype=dtype, from_logits=from_logits, ignore_class=ignore_class,
                         axis=axis)
        self.from_logits, self.ignore_class, self.axis = from_logits, ignore_class, axis

    def get_config(self) -> dict:  # Keras's (axis is always -1)
        return {**Loss.get_config(self), "from_logits": self.from_logits,
                "ignore_class": self.ignore_class}

    def __call__(self, y_true: TensorLike, y_pred: TensorLike,
                 sample_weight: TensorLike | None = None) -> Tensor:
        """The reduced loss; with ``ignore_class`` the ignored samples are masked out as in
        Keras: the mean reductions divide by the number of kept samples, not of all."""
        ignore = self.ignore_class
        if ignore is None or self.reduction in ("sum", "none"):
            return Loss.__call__(self, y_true, y_pred, sample_weight)
        values = self.call(y_true, y_pred)
        labels = _tensor(y_true)
        if labels.ndim == values.ndim + 1 and labels.shape[-1] == 1:
            labels = _array.squeeze(labels, -1)
        keep = _ew.not_equal(labels, ignore)
        mask = _mask_of(y_pred)
        if mask is not None:  # Keras: the y_pred mask and the ignored labels, combined
            return reduce_weighted_values(values, apply_mask(
                sample_weight, _ew.logical_and(keep, mask), values.dtype, self.reduction),
                self.reduction)
        keep = _ew.cast(keep, values.dtype)
        if self.reduction == "mean_with_sample_weight":
            if sample_weight is not None:
                sw, keep = _same_rank(_ew.cast(_tensor(sample_weight), values.dtype), keep)
                keep = _ew.multiply(keep, sw)
            return reduce_weighted_values(values, keep, self.reduction)
        total = reduce_weighted_values(values, sample_weight, "sum")
        return _ew.divide(total, _ew.add(_reduce.reduce_sum(keep), 1e-7))  # Keras's epsilon


class KLDivergence(_BuiltinLoss):
    """Kullback-Leibler divergence ``sum(y_true * log(y_true/y_pred))``."""

    def __init__(self, reduction: str = "sum_over_batch_size", name: str = "kl_divergence",
                 dtype: DTypeLike = None) -> None:
        super().__init__(kl_divergence, reduction=reduction, name=name, dtype=dtype)


class Hinge(_BuiltinLoss):
    """Hinge loss for labels -1/1 (0/1 converted)."""

    def __init__(self, reduction: str = "sum_over_batch_size", name: str = "hinge",
                 dtype: DTypeLike = None) -> None:
        super().__init__(hinge, reduction=reduction, name=name, dtype=dtype)


class SquaredHinge(_BuiltinLoss):
    """Squared hinge loss for labels -1/1 (0/1 converted)."""

    def __init__(self, reduction: str = "sum_over_batch_size", name: str = "squared_hinge",
                 dtype: DTypeLike = None) -> None:
        super().__init__(squared_hinge, reduction=reduction, name=name, dtype=dtype)


class Poisson(_BuiltinLoss):
    """Poisson loss ``y_pred - y_true * log(y_pred)``."""

    def __init__(self, reduction: str = "sum_over_batch_size", name: str = "poisson",
                 dtype: DTypeLike = None) -> None:
        super().__init__(poisson, reduction=reduction, name=name, dtype=dtype)


class CategoricalHinge(_BuiltinLoss):
    """Categorical hinge loss ``max(max((1 - y_true) * y_pred) - sum(y_true * y_pred) + 1, 0)``
    for one-hot labels.

    Examples:
        >>> round(float(CategoricalHinge()([[0.0, 1.0]], [[0.3, 0.6]])), 4)
        0.7
    """

    def __init__(self, reduction: str = "sum_over_batch_size", name: str = "categorical_hinge",
                 dtype: DTypeLike = None) -> None:
        super().__init__(categorical_hinge, reduction=reduction, name=name, dtype=dtype)


class CosineSimilarity(_BuiltinLoss):
    """The negated cosine similarity of ``y_true`` and ``y_pred`` along ``axis`` (-1 is a
    perfect match), as Keras's ``losses.CosineSimilarity``.

    Examples:
        >>> round(float(CosineSimilarity()([[0.0, 1.0]], [[0.0, 2.0]])), 4)
        -1.0
    """

    def __init__(self, axis: int = -1, reduction: str = "sum_over_batch_size",
                 name: str = "cosine_similarity", dtype: DTypeLike = None) -> None:
        super().__init__(cosine_similarity, reduction=reduction, name=name, dtype=dtype,
                         axis=axis)


class BinaryFocalCrossentropy(_BuiltinLoss):
    """Focal binary cross-entropy (see :func:`binary_focal_crossentropy`), as Keras's.

    Examples:
        >>> round(float(BinaryFocalCrossentropy(gamma=2.0)([[0.0, 1.0]], [[0.4, 0.6]])), 4)
        0.0817
    """

    def __init__(self, apply_class_balancing: bool = False, alpha: float = 0.25,
                 gamma: float = 2.0, from_logits: bool = False, label_smoothing: float = 0.0,
                 axis: int = -1, reduction: str = "sum_over_batch_size",
                 name: str = "binary_focal_crossentropy", dtype: DTypeLike = None) -> None:
        super().__init__(binary_focal_crossentropy, reduction=reduction, name=name,
                         dtype=dtype, apply_class_balancing=apply_class_balancing,
                         alpha=alpha, gamma=gamma, from_logits=from_logits,
                         label_smoothing=label_smoothing, axis=axis)


class CategoricalFocalCrossentropy(_BuiltinLoss):
    """Focal categorical cross-entropy (see :func:`categorical_focal_crossentropy`)."""

    def __init__(self, alpha: float = 0.25, gamma: float = 2.0, from_logits: bool = False,
                 label_smoothing: float = 0.0, axis: int = -1,
                 reduction: str = "sum_over_batch_size",
                 name: str = "categorical_focal_crossentropy", dtype: DTypeLike = None) -> None:
        super().__init__(categorical_focal_crossentropy, reduction=reduction, name=name,
                         dtype=dtype, alpha=alpha, gamma=gamma, from_logits=from_logits,
                         label_smoothing=label_smoothing, axis=axis)


class Dice(_BuiltinLoss):
    """The Dice loss (see :func:`dice`), as Keras's."""

    def __init__(self, reduction: str = "sum_over_batch_size", name: str = "dice",
                 axis: AxisLike = None, dtype: DTypeLike = None) -> None:
        super().__init__(dice, reduction=reduction, name=name, dtype=dtype, axis=axis)


class Tversky(_BuiltinLoss):
    """The Tversky loss (see :func:`tversky`), as Keras's."""

    def __init__(self, alpha: float = 0.5, beta: float = 0.5,
                 reduction: str = "sum_over_batch_size", name: str = "tversky",
                 axis: AxisLike = None, dtype: DTypeLike = None) -> None:
        super().__init__(tversky, reduction=reduction, name=name, dtype=dtype, alpha=alpha,
                         beta=beta, axis=axis)


# ---- names -------------------------------------------------------------------------------------
_FUNCTIONS = {
    "mean_squared_error": mean_squared_error, "mse": mean_squared_error,
    "mean_absolute_error": mean_absolute_error, "mae": mean_absolute_error,
    "mean_absolute_percentage_error": mean_absolute_percentage_error,
    "mape": mean_absolute_percentage_error,
    "mean_squared_logarithmic_error": mean_squared_logarithmic_error,
    "msle": mean_squared_logarithmic_error,
    "huber": huber, "huber_loss": huber, "log_cosh": log_cosh, "logcosh": log_cosh,
    "binary_crossentropy": binary_crossentropy, "categorical_crossentropy":
    categorical_crossentropy, "sparse_categorical_crossentropy": sparse_categorical_crossentropy,
    "kl_divergence": kl_divergence, "kld": kl_divergence, "kullback_leibler_divergence":
    kl_divergence, "hinge": hinge, "squared_hinge": squared_hinge, "poisson": poisson,
    "categorical_hinge": categorical_hinge, "cosine_similarity": cosine_similarity,
    "binary_focal_crossentropy": binary_focal_crossentropy,
    "categorical_focal_crossentropy": categorical_focal_crossentropy, "dice": dice,
    "tversky": tversky,
}
_CLASS_OF = {
    mean_squared_error: MeanSquaredError, mean_absolute_error: MeanAbsoluteError,
    mean_absolute_percentage_error: MeanAbsolutePercentageError,
    mean_squared_logarithmic_error: MeanSquaredLogarithmicError, huber: Huber,
    log_cosh: LogCosh, binary_crossentropy: BinaryCrossentropy,
    categorical_crossentropy: CategoricalCrossentropy,
    sparse_categorical_crossentropy: SparseCategoricalCrossentropy,
    kl_divergence: KLDivergence, hinge: Hinge, squared_hinge: SquaredHinge, poisson: Poisson,
    categorical_hinge: CategoricalHinge, cosine_similarity: CosineSimilarity,
    binary_focal_crossentropy: BinaryFocalCrossentropy,
    categorical_focal_crossentropy: CategoricalFocalCrossentropy, dice: Dice, tversky: Tversky,
}


def get(identifier: Any) -> Loss | None:
    """A Loss from a string name, a class, a config dict, a function or an instance.

    A string gives the Loss object (``'mse'`` -> ``MeanSquaredError(name='mse')``); a
    plain function becomes a :class:`LossFunctionWrapper`. None stays None.

    Raises:
        ValueError: an unknown name, naming the known ones.
    """
    if identifier is None or isinstance(identifier, Loss):
        return identifier
    if isinstance(identifier, str):
        fn = _FUNCTIONS.get(identifier) or _FUNCTIONS.get(identifier.lower())
        if fn is None:
            raise ValueError(
                f"unknown loss {identifier!r}; expected one of {sorted(_FUNCTIONS)}, a Loss "
                f"instance or a function fn(y_true, y_pred)"
            )
        return _CLASS_OF[fn](name=identifier)
    if isinstance(identifier, dict):
        obj = deserialize(identifier)
        return obj if isinstance(obj, Loss) else get(obj)
    if isinstance(identifier, type) and issubclass(identifier, Loss):
        return identifier()
    if callable(identifier):
        cls = _CLASS_OF.get(identifier)
        return cls() if cls is not None else LossFunctionWrapper(identifier)
    raise ValueError(f"could not interpret loss identifier {identifier!r}")


def serialize(loss: Any) -> dict | str:
    """Keras's config of a loss object or function (see ``lk.saving``)."""
    from layerkit.saving.serialization_lib import serialize_keras_object

    return serialize_keras_object(loss)


def deserialize(config: dict[str, Any], custom_objects: dict | None = None) -> Any:
    """Rebuild a loss (object or function) from :func:`serialize` output or Keras's."""
    from layerkit.saving.serialization_lib import deserialize_keras_object

    return deserialize_keras_object(config, custom_objects, kind="losses")
