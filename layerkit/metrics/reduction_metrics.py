"""Reduction metrics: the (weighted) sum and mean of values, and of a function's values."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from layerkit._core.op import wrap
from layerkit._core.serialization import init_kwargs
from layerkit._core.tensor import Tensor
from layerkit._core.types import DTypeLike, TensorLike
from layerkit.metrics.base_metric import (
    Metric,
    _acc,
    _np,
    _samplewise,
    squeeze_or_expand_to_same_rank,
)


class Sum(Metric):
    """The (weighted) sum of the values seen.

    Examples:
        >>> m = Sum()
        >>> m.update_state([1, 3, 5, 7])
        >>> float(m.result())
        16.0
    """

    def __init__(self, name: str = "sum", dtype: DTypeLike = None) -> None:
        super().__init__(name=name, dtype=dtype)
        self.total = self.add_variable((), name="total")

    def update_state(self, values: Any, sample_weight: TensorLike | None = None) -> None:
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

    def __init__(self, name: str = "mean", dtype: DTypeLike = None) -> None:
        super().__init__(name=name, dtype=dtype)
        self.total = self.add_variable((), name="total")
        self.count = self.add_variable((), name="count")

    def update_state(self, values: Any, sample_weight: TensorLike | None = None) -> None:
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

    def __init__(self, fn: Callable, name: str | None = None, dtype: DTypeLike = None,
                 **kwargs: Any) -> None:
        super().__init__(name=name or getattr(fn, "__name__", "mean_metric"), dtype=dtype)
        self._fn = fn
        self._fn_kwargs = kwargs

    def update_state(self, y_true: TensorLike, y_pred: TensorLike,
                     sample_weight: TensorLike | None = None) -> None:
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
            _acc(self.total, float(np.sum(values, dtype=np.float64)))
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


