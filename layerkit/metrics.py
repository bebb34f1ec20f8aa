"""Stateful metrics with Keras 3 definitions: ``update_state`` / ``result`` / ``reset_state``.

Metrics are not differentiated, so they run on NumPy values: ``update_state`` accepts
Tensors, arrays or lists and accumulates into non-trainable Variables (the metric's
checkpointable state). ``result()`` returns a float32 Tensor.

Inside ``lk.function`` (a traced train step) ``update_state``, ``result`` and
``reset_state`` of every metric, subclasses included, each become one stateful graph
node whose forward is the method itself on the call's arrays: the graph re-runs the
NumPy update on every call and reads the state live, instead of freezing what the trace
saw. Subclasses need nothing for this (``Metric.__init_subclass__`` wraps the methods).

String names: ``'accuracy'``/``'acc'`` (the model resolves it to binary, categorical or
sparse categorical accuracy from the shapes, like Keras), ``'binary_accuracy'``,
``'categorical_accuracy'``, ``'sparse_categorical_accuracy'``,
``'top_k_categorical_accuracy'``, ``'sparse_top_k_categorical_accuracy'``,
``'mse'``/``'mean_squared_error'``, ``'mae'``/``'mean_absolute_error'``, ``'precision'``,
``'recall'``, ``'auc'``.
"""
from __future__ import annotations

import functools
import re

import numpy as np

from layerkit._core import context
from layerkit._core.convert import to_array
from layerkit._core.effects import python_call
from layerkit._core.op import wrap
from layerkit._core.serialization import init_kwargs
from layerkit._core.tensor import Tensor
from layerkit._core.variable import Variable, replace_value, writable
from layerkit.autodiff.nest import flatten, pack_like

__all__ = ["Metric", "Mean", "Sum", "MeanMetricWrapper", "Accuracy", "BinaryAccuracy",
           "CategoricalAccuracy", "SparseCategoricalAccuracy", "TopKCategoricalAccuracy",
           "SparseTopKCategoricalAccuracy", "MeanSquaredError", "MeanAbsoluteError",
           "Precision", "Recall", "AUC", "get", "serialize", "deserialize",
           "accuracy", "binary_accuracy", "categorical_accuracy",
           "sparse_categorical_accuracy", "top_k_categorical_accuracy",
           "sparse_top_k_categorical_accuracy"]

EPSILON = 1e-7  # Keras's backend.epsilon(), used for the AUC end thresholds


def _np(x) -> np.ndarray:
    if isinstance(x, Tensor):
        x = x._v
    return x if type(x) is np.ndarray else np.asarray(x)


def _shape_of(x) -> tuple:
    return tuple(x.shape) if isinstance(x, Tensor) else np.shape(x)


def _snake(name: str) -> str:
    s = re.sub(r"(.)([A-Z][a-z]+)", r"\1_\2", name)
    return re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", s).lower()


def squeeze_or_expand_to_same_rank(x1: np.ndarray, x2: np.ndarray, expand_rank_1: bool = True):
    """Make ranks equal when they differ by a trailing dimension of size 1 (Keras rule)."""
    r1, r2 = x1.ndim, x2.ndim
    if r1 == r2 + 1 and x1.shape[-1] == 1:
        if r2 == 1 and expand_rank_1:
            x2 = x2[..., None]
        else:
            x1 = x1[..., 0]
    elif r2 == r1 + 1 and x2.shape[-1] == 1:
        if r1 == 1 and expand_rank_1:
            x1 = x1[..., None]
        else:
            x2 = x2[..., 0]
    return x1, x2


def _samplewise(values: np.ndarray, sample_weight, reduce=np.mean):
    """Per-sample values (``reduce``, Keras's reduce_fn: mean for Mean, sum for Sum, over
    the non-batch axes) weighted like Keras's reduce_to_samplewise_values."""
    values = values.astype(np.float32, copy=False)
    if sample_weight is not None:
        sw = _np(sample_weight).astype(np.float32, copy=False)
        values, sw = squeeze_or_expand_to_same_rank(values, sw)
        if values.ndim > sw.ndim:
            values = reduce(values, axis=tuple(range(sw.ndim, values.ndim)))
        try:
            sw = np.broadcast_to(sw, values.shape)
        except ValueError:
            raise ValueError(
                f"sample_weight of shape {sw.shape} cannot be broadcast to the metric values' "
                f"shape {values.shape}"
            ) from None
        values = values * sw
        if sw.ndim > 1:
            sw = reduce(sw, axis=tuple(range(1, sw.ndim)))
    else:
        sw = None
    if values.ndim > 1:
        values = reduce(values, axis=tuple(range(1, values.ndim)))
    return values, sw


# ---- metric methods as graph nodes (inside lk.function) -----------------------------------


class _MethodCall:
    """A metric method run by a Python-call node: the method and its non-tensor arguments
    (``slots``: where the node's input tensors go in the flattened arguments)."""

    __slots__ = ("metric", "fn", "structure", "leaves", "slots", "flat", "out_structure",
                 "masked")

    def __init__(self, metric, fn, structure=None, leaves=(), slots=(), masked=()) -> None:
        self.metric, self.fn = metric, fn
        self.structure, self.leaves, self.slots = structure, list(leaves), tuple(slots)
        self.masked = tuple(masked)  # slots whose tensors carry a Keras mask (after them)
        for i in self.slots:
            self.leaves[i] = None  # filled per call; do not keep the trace's tensors
        self.out_structure = None
        # The common call, update_state(a, b, sample_weight=...) with tensors as direct
        # arguments, is rebuilt without the generic pack_like (it runs on every step).
        self.flat = None
        if structure is not None:
            args, kwargs = structure
            if len(leaves) == len(args) + len(kwargs) and not any(
                    isinstance(v, (list, tuple, dict)) for v in (*args, *kwargs.values())):
                self.flat = (len(args), sorted(kwargs, key=repr))  # flatten's order

    def args(self, arrays: tuple):
        leaves = list(self.leaves)
        for i, a in zip(self.slots, arrays):
            leaves[i] = wrap(a)
        for i, m in zip(self.masked, arrays[len(self.slots):]):
            leaves[i]._keras_mask = wrap(m)
        if self.flat is not None:
            n, names = self.flat
            return leaves[:n], dict(zip(names, leaves[n:]))
        return pack_like(self.structure, leaves)

    def update(self, *arrays) -> None:
        args, kwargs = self.args(arrays)
        self.fn(self.metric, *args, **kwargs)

    def result(self) -> tuple:
        r = self.fn(self.metric)
        self.out_structure = r
        return tuple(to_array(x) for x in flatten(r))


def _tracing() -> bool:
    return bool(context.RECORDERS) and context.tracing()


def _graph_aware(fn, kind: str):
    """Wrap a metric method so that, while an lk.function traces, it is one graph node
    (a Python call: see ``layerkit._core.effects``)."""
    if kind == "result":
        @functools.wraps(fn)
        def method(self, *args, **kwargs):
            if args or kwargs or not _tracing():
                return fn(self, *args, **kwargs)
            # Reads the state live, on every call (never merged with another read).
            call = _MethodCall(self, fn)
            outs = python_call(call.result, name=f"{self.name}.{fn.__name__}")
            return pack_like(call.out_structure, list(outs))
    else:
        @functools.wraps(fn)
        def method(self, *args, **kwargs):
            if not _tracing():
                return fn(self, *args, **kwargs)
            structure = (args, kwargs)
            leaves = flatten(structure)
            slots = [i for i, x in enumerate(leaves) if isinstance(x, Tensor)]
            tensors = [leaves[i] for i in slots]
            # Keras masks travel with their tensors into the node (y_pred's mask).
            masks = [(i, getattr(leaves[i], "_keras_mask", None)) for i in slots]
            masks = [(i, m) for i, m in masks if m is not None]
            call = _MethodCall(self, fn, structure, leaves, slots, [i for i, _ in masks])
            python_call(call.update, [*tensors, *[m for _, m in masks]],
                        name=f"{self.name}.{fn.__name__}", updates=self.variables)
            return None
    method._lk_graph_aware = True
    return method


class Metric:
    """Base class of stateful metrics.

    Subclasses create state with :meth:`add_variable` in ``__init__`` and implement
    ``update_state(...)`` and ``result()``. Calling a metric updates it and returns the
    result.

    Args:
        name: the metric's name (default: the class name in snake case).
        dtype: the result dtype (float32).
    """

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        for kind in ("update_state", "result", "reset_state"):
            fn = cls.__dict__.get(kind)
            if callable(fn) and not getattr(fn, "_lk_graph_aware", False):
                setattr(cls, kind, _graph_aware(fn, kind))

    def __init__(self, name: str | None = None, dtype=None) -> None:
        self.name = name or _snake(type(self).__name__)
        self.dtype = np.dtype(dtype or "float32")
        self._vars: dict[str, Variable] = {}

    def add_variable(self, shape, initializer: str = "zeros", dtype=None,
                     name: str | None = None) -> Variable:
        """Create a non-trainable state Variable (zeros) tracked by this metric."""
        name = name or f"variable_{len(self._vars)}"
        v = Variable(np.zeros(shape, dtype or self.dtype), trainable=False,
                     name=f"{self.name}/{name}")
        self._vars[name] = v
        return v

    @property
    def variables(self) -> list:
        return list(self._vars.values())

    def reset_state(self) -> None:
        """Zero every state variable."""
        for v in self._vars.values():
            replace_value(v, np.zeros_like(v._v))

    def update_state(self, *args, **kwargs) -> None:
        raise NotImplementedError(f"{type(self).__name__} must implement update_state")

    def result(self) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__} must implement result")

    def __call__(self, *args, **kwargs) -> Tensor:
        self.update_state(*args, **kwargs)
        return self.result()

    def _checkpoint_variables(self) -> dict:
        return dict(self._vars)

    def get_config(self) -> dict:
        return {"name": self.name, "dtype": self.dtype.name}

    @classmethod
    def from_config(cls, config: dict) -> Metric:
        """A metric (with fresh state) from :meth:`get_config` output (Keras's too)."""
        return cls(**init_kwargs(cls, config))

    def __repr__(self) -> str:
        return f"<{type(self).__name__} name={self.name!r}>"


Metric.reset_state = _graph_aware(Metric.reset_state, "reset_state")


def _acc(var: Variable, value) -> None:
    a = writable(var)[0]  # a tape holding ops that read var keeps the value they read
    np.add(a, value, out=a, casting="unsafe")


class Sum(Metric):
    """The (weighted) sum of the values seen.

    Examples:
        >>> m = Sum()
        >>> m.update_state([1, 3, 5, 7])
        >>> float(m.result())
        16.0
    """

    def __init__(self, name: str = "sum", dtype=None) -> None:
        super().__init__(name=name, dtype=dtype)
        self.total = self.add_variable((), name="total")

    def update_state(self, values, sample_weight=None) -> None:
        values, _ = _samplewise(_np(values), sample_weight, np.sum)
        _acc(self.total, values.sum(dtype=np.float64))

    def result(self) -> Tensor:
        return wrap(np.array(self.total._v, dtype=self.dtype))


class Mean(Metric):
    """The (weighted) mean of the values seen: per-sample means, averaged over samples.

    Examples:
        >>> m = Mean()
        >>> m.update_state([1, 3, 5, 7])
        >>> float(m.result())
        4.0
        >>> m.update_state([2.0], sample_weight=[4.0])
        >>> float(m.result())
        3.0
    """

    def __init__(self, name: str = "mean", dtype=None) -> None:
        super().__init__(name=name, dtype=dtype)
        self.total = self.add_variable((), name="total")
        self.count = self.add_variable((), name="count")

    def update_state(self, values, sample_weight=None) -> None:
        v = values._v if isinstance(values, Tensor) else values
        if np.ndim(v) == 0 and (sample_weight is None or type(sample_weight) in (int, float)):
            # The common case in fit: one scalar loss per step, weighted by the batch size.
            w = 1.0 if sample_weight is None else float(sample_weight)
            _acc(self.total, float(v) * w)
            _acc(self.count, w)
            return
        values, sw = _samplewise(_np(values), sample_weight)
        _acc(self.total, values.sum(dtype=np.float64))
        if sw is not None:
            n = float(np.sum(sw, dtype=np.float64))
        else:
            n = values.shape[0] if values.ndim >= 1 else 1
        _acc(self.count, n)

    def result(self) -> Tensor:
        c = float(self.count._v)
        return wrap(np.array(float(self.total._v) / c if c else 0.0, dtype=self.dtype))


class MeanMetricWrapper(Mean):
    """Mean of ``fn(y_true, y_pred, **kwargs)`` over samples (how accuracies are built).

    Args:
        fn: a function of NumPy ``(y_true, y_pred)`` returning per-sample values.
        name: the metric name.
        **kwargs: passed to ``fn``.
    """

    def __init__(self, fn, name: str | None = None, dtype=None, **kwargs) -> None:
        super().__init__(name=name or getattr(fn, "__name__", "mean_metric"), dtype=dtype)
        self._fn = fn
        self._fn_kwargs = kwargs

    def update_state(self, y_true, y_pred, sample_weight=None) -> None:
        mask = getattr(y_pred, "_keras_mask", None) if isinstance(y_pred, Tensor) else None
        yt, yp = _np(y_true), _np(y_pred)
        try:
            values = _np(self._fn(yt, yp, **self._fn_kwargs))
        except ValueError as e:  # NumPy's broadcast message names neither metric nor input
            raise ValueError(f"metric '{self.name}': cannot compare y_true of shape "
                             f"{yt.shape} with y_pred of shape {yp.shape} ({e})") from e
        if mask is not None:  # Keras: masked entries (of y_pred) weigh 0
            m = _np(mask).astype(np.float32)
            if sample_weight is not None:
                sw = _np(sample_weight).astype(np.float32, copy=False)
                m, sw = squeeze_or_expand_to_same_rank(m, sw)
                while 0 < sw.ndim < m.ndim:
                    sw = sw[..., None]
                m = m * sw
            sample_weight = m
        if sample_weight is None and values.ndim == 1:  # per-sample values: the fit path
            _acc(self.total, float(np.add.reduce(values, dtype=np.float64)))
            _acc(self.count, float(values.shape[0]))
            return
        Mean.update_state(self, values, sample_weight)

    def get_config(self) -> dict:
        config = {**super().get_config(), **self._fn_kwargs}
        if type(self) is MeanMetricWrapper:  # subclasses know their function
            from layerkit.saving.serialization_lib import serialize_keras_object

            config["fn"] = serialize_keras_object(self._fn)
        return config

    @classmethod
    def from_config(cls, config: dict) -> Metric:
        """A metric from :meth:`get_config` output (``fn`` is found by name)."""
        config = dict(config)
        if "fn" in config:
            from layerkit.saving.serialization_lib import deserialize_keras_object

            config["fn"] = deserialize_keras_object(config["fn"], kind="metrics")
        return cls(**init_kwargs(cls, config))


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


def _mse(y_true, y_pred):
    y_true, y_pred = squeeze_or_expand_to_same_rank(y_true, y_pred)
    return np.mean(np.square(y_pred.astype(np.float32) - y_true), axis=-1)


def _mae(y_true, y_pred):
    y_true, y_pred = squeeze_or_expand_to_same_rank(y_true, y_pred)
    return np.mean(np.abs(y_pred.astype(np.float32) - y_true), axis=-1)


def _check_last_dim(name, y_true, y_pred):
    if y_true.shape != y_pred.shape:
        raise ValueError(
            f"{name}: one-hot labels of shape {y_true.shape} do not match predictions of "
            f"shape {y_pred.shape}"
        )


def _public(fn, name, doc):
    def metric_fn(y_true, y_pred, **kwargs) -> Tensor:
        return wrap(np.asarray(fn(_np(y_true), _np(y_pred), **kwargs)))

    metric_fn.__name__ = metric_fn.__qualname__ = name
    metric_fn.__doc__ = doc
    return metric_fn


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

    def __init__(self, name: str = "accuracy", dtype=None) -> None:
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

    def __init__(self, name: str = "binary_accuracy", dtype=None, threshold: float = 0.5) -> None:
        super().__init__(_binary_accuracy, name=name, dtype=dtype, threshold=threshold)


class CategoricalAccuracy(MeanMetricWrapper):
    """How often the argmax of the predictions matches the argmax of one-hot labels."""

    def __init__(self, name: str = "categorical_accuracy", dtype=None) -> None:
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

    def __init__(self, name: str = "sparse_categorical_accuracy", dtype=None) -> None:
        super().__init__(_sparse_categorical_accuracy, name=name, dtype=dtype)

    def get_config(self) -> dict:
        return {"name": self.name, "dtype": self.dtype.name}


class TopKCategoricalAccuracy(MeanMetricWrapper):
    """How often the one-hot target class is among the ``k`` highest predictions."""

    def __init__(self, k: int = 5, name: str = "top_k_categorical_accuracy", dtype=None) -> None:
        super().__init__(_top_k_categorical_accuracy, name=name, dtype=dtype, k=k)


class SparseTopKCategoricalAccuracy(MeanMetricWrapper):
    """How often the integer target class is among the ``k`` highest predictions."""

    def __init__(self, k: int = 5, name: str = "sparse_top_k_categorical_accuracy",
                 dtype=None) -> None:
        super().__init__(_sparse_top_k_categorical_accuracy, name=name, dtype=dtype, k=k)


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


class _PrecisionRecall(Metric):
    _counts: tuple = ()

    def __init__(self, thresholds=None, top_k=None, class_id=None, name=None, dtype=None) -> None:
        super().__init__(name=name, dtype=dtype)
        self.init_thresholds = thresholds
        self.top_k = top_k
        self.class_id = class_id
        self.thresholds = _parse_thresholds(thresholds, 0.5 if top_k is None else NEG_INF)
        n = len(self.thresholds)
        self.true_positives = self.add_variable((n,), name="true_positives")
        self.other = self.add_variable((n,), name=self._counts[1])

    def update_state(self, y_true, y_pred, sample_weight=None) -> None:
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
                 summation_method: str = "interpolation", name: str | None = None, dtype=None,
                 thresholds=None, multi_label: bool = False, num_labels: int | None = None,
                 label_weights=None, from_logits: bool = False) -> None:
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

    def update_state(self, y_true, y_pred, sample_weight=None) -> None:
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


# ---- names ---------------------------------------------------------------------------------
_BY_NAME = {
    "accuracy": Accuracy, "acc": Accuracy,
    "binary_accuracy": BinaryAccuracy, "categorical_accuracy": CategoricalAccuracy,
    "sparse_categorical_accuracy": SparseCategoricalAccuracy,
    "top_k_categorical_accuracy": TopKCategoricalAccuracy,
    "sparse_top_k_categorical_accuracy": SparseTopKCategoricalAccuracy,
    "mse": MeanSquaredError, "mean_squared_error": MeanSquaredError,
    "mae": MeanAbsoluteError, "mean_absolute_error": MeanAbsoluteError,
    "precision": Precision, "recall": Recall, "auc": AUC, "mean": Mean, "sum": Sum,
}


def get(identifier) -> Metric:
    """A metric from a string name, a class, a config dict, a function or an instance.

    A plain function ``fn(y_true, y_pred)`` becomes a :class:`MeanMetricWrapper` named
    after it. ``'accuracy'`` here means exact-match :class:`Accuracy`; ``Model.compile``
    resolves it by the shapes instead (see :func:`resolve`).

    Raises:
        ValueError: an unknown name, naming the known ones.
    """
    if isinstance(identifier, Metric):
        return identifier
    if isinstance(identifier, str):
        cls = _BY_NAME.get(identifier) or _BY_NAME.get(identifier.lower())
        if cls is None:
            raise ValueError(
                f"unknown metric {identifier!r}; expected one of {sorted(_BY_NAME)}, a Metric "
                f"instance or a function fn(y_true, y_pred)"
            )
        m = cls()
        if identifier in ("mse", "mae", "acc"):
            m.name = identifier
        return m
    if isinstance(identifier, dict):
        obj = deserialize(identifier)
        return obj if isinstance(obj, Metric) else get(obj)
    if isinstance(identifier, type) and issubclass(identifier, Metric):
        return identifier()
    if callable(identifier):
        return MeanMetricWrapper(lambda t, p, _f=identifier: _np(_f(t, p)),
                                 name=getattr(identifier, "__name__", "metric"))
    raise ValueError(f"could not interpret metric identifier {identifier!r}")


def resolve(identifier, y_true, y_pred, loss=None) -> Metric:
    """Like :func:`get`, but ``'accuracy'``/``'acc'`` picks the variant Keras would.

    Binary when predictions have a last dimension of 1 (or the loss is binary
    crossentropy), sparse categorical when labels have lower rank or a last dimension
    of 1 against wider predictions, else categorical. ``'crossentropy'``/``'ce'`` and
    ``'top_k'`` names follow the same rule.
    """
    if identifier not in ("accuracy", "acc"):
        return get(identifier)
    yt, yp = _shape_of(y_true), _shape_of(y_pred)
    loss_name = getattr(loss, "name", loss) if loss is not None else ""
    loss_name = loss_name if isinstance(loss_name, str) else ""
    if (yp and yp[-1] == 1) or "binary" in loss_name:
        cls = BinaryAccuracy
    elif len(yt) < len(yp) or (yt and yt[-1] == 1 and yp and yp[-1] > 1) or \
            "sparse" in loss_name:
        cls = SparseCategoricalAccuracy
    else:
        cls = CategoricalAccuracy
    return cls(name=identifier)


def serialize(metric) -> dict | str:
    """Keras's config of a metric (see ``lk.saving``)."""
    from layerkit.saving.serialization_lib import serialize_keras_object

    return serialize_keras_object(metric)


def deserialize(config, custom_objects: dict | None = None):
    """Rebuild a metric (without state) from :func:`serialize` output or Keras's."""
    from layerkit.saving.serialization_lib import deserialize_keras_object

    return deserialize_keras_object(config, custom_objects, kind="metrics")
