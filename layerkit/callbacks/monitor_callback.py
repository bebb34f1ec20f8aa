"""``MonitorCallback``: what the callbacks that watch a metric share (Keras 3's
``keras.callbacks.MonitorCallback``): the mode and the improvement test."""
from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from layerkit.callbacks.callback import Callback

__all__ = ["MonitorCallback"]

# ``mode='auto'``: the direction of a metric from its name (val_ and output prefixes
# ignored), where Keras reads the metric object's direction.
_MIN_MARKS = ("loss", "error", "crossentropy", "hinge", "divergence", "poisson", "cosh",
              "huber")
_MIN_NAMES = ("mse", "mae", "mape", "msle", "rmse")
_MAX_MARKS = ("acc", "accuracy", "auc", "precision", "recall", "f1", "fbeta", "iou", "r2",
              "cosine_similarity", "specificity", "sensitivity", "true_positives",
              "true_negatives")


def _direction_from_name(name: str) -> str | None:
    """``'min'``, ``'max'`` or None (unknown) for a metric name."""
    base = name.removeprefix("val_")
    parts = base.split("_")
    # "output_1_accuracy" -> also try the name without its output prefix(es)
    candidates = ["_".join(parts[i:]) for i in range(len(parts))]
    for c in candidates:
        if c in _MIN_NAMES or any(c.endswith(m) or c.startswith(m) for m in _MIN_MARKS):
            return "min"
        if any(c.startswith(m) or c.endswith(m) for m in _MAX_MARKS):
            return "max"
    return None


def _metric_direction(model, name: str) -> str | None:
    """A metric object's own direction (``_direction`` 'up'/'down', as Keras metrics carry)."""
    base = name.removeprefix("val_")
    for m in getattr(model, "metrics", None) or ():
        for sub in getattr(m, "metrics", None) or [m]:
            if getattr(sub, "name", None) == base and getattr(sub, "_direction", None):
                return "max" if sub._direction == "up" else "min"
    return None


class MonitorCallback(Callback):
    """Base of callbacks that watch a metric (EarlyStopping, ModelCheckpoint,
    ReduceLROnPlateau).

    Args:
        monitor: the log key to watch (``'val_loss'`` by default).
        mode: ``'min'``, ``'max'`` or ``'auto'``. In auto mode ``loss`` is minimised, and
            other metrics by their name: errors and crossentropies are minimised,
            accuracies, AUC, precision, recall, F-scores, IoU and R2 maximised; an unknown
            name raises ``ValueError`` at the first check (as in Keras). An unknown mode
            warns and falls back to ``'auto'`` (as in Keras).
        baseline: the initial value of :attr:`best` (None: the first value improves).
        min_delta: the smallest change that counts as an improvement.

    Attributes:
        best: the best value seen so far.
        monitor_op: ``numpy.less`` or ``numpy.greater`` once the direction is known.
    """

    def __init__(self, monitor: str = "val_loss", mode: str = "auto", baseline: float | None = None,
                 min_delta: float = 0) -> None:
        super().__init__()
        if mode not in ("auto", "min", "max"):
            warnings.warn(f"{type(self).__name__} mode {mode!r} is unknown, fallback to auto "
                          f"mode.", stacklevel=3)
            mode = "auto"
        self.monitor = monitor
        self.mode = mode
        self.best = baseline
        self.min_delta = abs(min_delta)
        self.monitor_op: Callable[..., Any] | None = None

    def _set_monitor_op(self) -> Callable[..., Any]:
        direction: str | None = self.mode
        if direction == "auto":
            direction = "min" if self.monitor.removeprefix("val_") == "loss" else (
                _metric_direction(self.model, self.monitor)
                or _direction_from_name(self.monitor))
            if direction is None:
                raise ValueError(
                    f"{type(self).__name__} callback received monitor={self.monitor}, but "
                    f"layerkit cannot tell from the name whether that metric should be "
                    f"maximized or minimized. Pass mode='max' to keep the highest value, or "
                    f"mode='min' to keep the lowest.")
        op = self.monitor_op = np.less if direction == "min" else np.greater
        if op is np.less:
            self.min_delta *= -1
        return op

    def _is_improvement(self, monitor_value, reference_value) -> bool:
        if reference_value is None:
            return True
        op = self.monitor_op if self.monitor_op is not None else self._set_monitor_op()
        return bool(op(monitor_value - self.min_delta, reference_value))

    def get_monitor_value(self, logs: dict | None) -> Any:
        """``logs[monitor]``, or None with a warning naming the available keys."""
        logs = logs or {}
        value = logs.get(self.monitor)
        if value is None:
            warnings.warn(
                f"{type(self).__name__} is conditioned on metric `{self.monitor}` which is "
                f"not available. Available metrics are: {','.join(logs)}", stacklevel=3)
        return value
