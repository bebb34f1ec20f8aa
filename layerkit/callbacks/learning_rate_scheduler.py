"""``LearningRateScheduler``: set the learning rate at the start of each epoch."""
from __future__ import annotations

import math

from layerkit.callbacks.callback import Callback


class LearningRateScheduler(Callback):
    """Set the optimizer's learning rate at the start of each epoch from ``schedule``.

    Args:
        schedule: ``fn(epoch, lr) -> new_lr`` (or ``fn(epoch)``), epoch 0-based.
        verbose: 1 prints the new rate.
    """

    def __init__(self, schedule, verbose: int = 0) -> None:
        super().__init__()
        self.schedule = schedule
        self.verbose = verbose

    def on_epoch_begin(self, epoch, logs=None) -> None:
        opt = self.model.optimizer
        lr = float(opt._current_lr())
        try:
            new = self.schedule(epoch, lr)
        except TypeError:
            new = self.schedule(epoch)
        new = float(new)
        if not math.isfinite(new):
            raise ValueError(f"LearningRateScheduler: schedule returned {new} at epoch {epoch}")
        opt.learning_rate = new
        if self.verbose > 0:
            print(f"Epoch {epoch + 1}: LearningRateScheduler setting learning rate to {new}.")

    def on_epoch_end(self, epoch, logs=None) -> None:
        if logs is not None:
            logs["learning_rate"] = float(self.model.optimizer._current_lr())
