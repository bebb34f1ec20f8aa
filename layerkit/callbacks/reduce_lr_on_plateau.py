"""``ReduceLROnPlateau``: lower the learning rate when a metric stops improving."""
from __future__ import annotations

from typing import Any

import numpy as np

from layerkit._core.types import Logs
from layerkit.callbacks.learning_rate_scheduler import current_lr
from layerkit.callbacks.monitor_callback import MonitorCallback


class ReduceLROnPlateau(MonitorCallback):
    """Multiply the learning rate by ``factor`` when ``monitor`` has not improved for
    ``patience`` epochs (Keras 3's ``keras.callbacks.ReduceLROnPlateau``).

    At each epoch end the rate in effect is logged as ``learning_rate``. A value counts
    as an improvement when it beats the best one by more than ``min_delta``; after a
    reduction, ``cooldown`` epochs pass before the count of epochs without improvement
    starts again. The rate never goes below ``min_lr`` (and nothing happens once it is
    there).

    Args:
        monitor: the log key to watch.
        factor: the multiplier of the rate, below 1.
        patience: epochs without improvement before a reduction.
        verbose: 1 prints a message at each reduction.
        mode: ``'auto'``, ``'min'`` or ``'max'`` (as in :class:`EarlyStopping`).
        min_delta: the threshold of a significant improvement.
        cooldown: epochs to wait after a reduction before counting again.
        min_lr: the lower bound of the rate.

    Raises:
        ValueError: ``factor >= 1``.
        TypeError: (during fit, at a reduction) the optimizer was created with a
            ``LearningRateSchedule``, whose rate cannot be set (as in Keras).

    Examples:
        >>> import layerkit as lk
        >>> reduce_lr = lk.callbacks.ReduceLROnPlateau(monitor="val_loss", factor=0.2,
        ...                                            patience=5, min_lr=0.001)
    """

    def __init__(self, monitor: str = "val_loss", factor: float = 0.1, patience: int = 10,
                 verbose: int = 0, mode: str = "auto", min_delta: float = 1e-4,
                 cooldown: int = 0, min_lr: float = 0.0, **kwargs: Any) -> None:
        super().__init__(monitor, mode, min_delta=min_delta)
        if kwargs:
            raise TypeError(f"ReduceLROnPlateau: unexpected keyword arguments {sorted(kwargs)}")
        if factor >= 1.0:
            raise ValueError(f"ReduceLROnPlateau does not support a factor >= 1.0. Received "
                             f"factor={factor}")
        self.factor = factor
        self.min_lr = min_lr
        self.patience = patience
        self.verbose = verbose
        self.cooldown = cooldown
        self.cooldown_counter = 0
        self.wait = 0

    def _reset(self) -> None:
        self.best = None
        self.cooldown_counter = 0
        self.wait = 0

    def on_train_begin(self, logs: Logs = None) -> None:
        self._reset()

    def in_cooldown(self) -> bool:
        """Whether a reduction happened less than ``cooldown`` epochs ago."""
        return self.cooldown_counter > 0

    def _reduce_lr(self, epoch: int) -> bool:
        optimizer = self.model.optimizer
        old = current_lr(optimizer)
        if old <= np.float32(self.min_lr):
            return False
        new = max(old * self.factor, self.min_lr)
        optimizer.learning_rate = new
        if self.verbose > 0:
            print(f"\nEpoch {epoch + 1}: ReduceLROnPlateau reducing learning rate to {new}.")
        return True

    def on_epoch_end(self, epoch: int, logs: Logs = None) -> None:
        if self.monitor_op is None:
            self._set_monitor_op()
        logs = logs if logs is not None else {}
        logs["learning_rate"] = current_lr(self.model.optimizer)
        current = self.get_monitor_value(logs)
        if current is None:
            return
        if self.in_cooldown():
            self.cooldown_counter -= 1
            self.wait = 0
        if self._is_improvement(current, self.best):
            self.best = current
            self.wait = 0
        elif not self.in_cooldown():
            self.wait += 1
            if self.wait >= self.patience and self._reduce_lr(epoch):
                self.cooldown_counter = self.cooldown
                self.wait = 0
