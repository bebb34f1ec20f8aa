"""``LearningRateScheduler``: set the learning rate at the start of each epoch."""
from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from layerkit._core.types import Logs
from layerkit.callbacks.callback import Callback


def current_lr(optimizer) -> float:
    """The optimizer's learning rate now, as a float (a schedule's value at this step)."""
    if not hasattr(optimizer, "learning_rate"):
        raise ValueError('Optimizer must have a "learning_rate" attribute.')
    return float(np.asarray(getattr(optimizer.learning_rate, "_v", optimizer.learning_rate)))


class LearningRateScheduler(Callback):
    """Set the optimizer's learning rate at the start of each epoch from ``schedule``.

    Keras 3's ``keras.callbacks.LearningRateScheduler``. The rate in effect is also
    logged as ``learning_rate`` at the end of each epoch.

    Args:
        schedule: ``fn(epoch, lr) -> new_lr`` (or ``fn(epoch)``), epoch 0-based; it must
            return a float.
        verbose: 1 prints the new rate.

    Raises:
        ValueError: (during fit) the schedule returned something other than a finite float.
        TypeError: (during fit) the optimizer was created with a ``LearningRateSchedule``,
            whose rate cannot be set (as in Keras).

    Examples:
        >>> import layerkit as lk
        >>> cb = lk.callbacks.LearningRateScheduler(lambda epoch, lr: lr * 0.9)
    """

    def __init__(self, schedule: Callable, verbose: int = 0) -> None:
        super().__init__()
        self.schedule = schedule
        self.verbose = verbose

    def on_epoch_begin(self, epoch: int, logs: Logs = None) -> None:
        opt = self.model.optimizer
        try:
            new = self.schedule(epoch, current_lr(opt))
        except TypeError:  # the older one-argument form
            new = self.schedule(epoch)
        if isinstance(new, bool) or not isinstance(new, (float, np.floating)):
            raise ValueError(f"LearningRateScheduler: the output of the `schedule` function "
                             f"should be a float. Got: {new!r} ({type(new).__name__}) at "
                             f"epoch {epoch}")
        if not math.isfinite(new):
            raise ValueError(f"LearningRateScheduler: schedule returned {new} at epoch {epoch}")
        opt.learning_rate = float(new)
        if self.verbose > 0:
            print(f"\nEpoch {epoch + 1}: LearningRateScheduler setting learning rate to "
                  f"{new}.")

    def on_epoch_end(self, epoch: int, logs: Logs = None) -> None:
        if logs is not None:
            logs["learning_rate"] = current_lr(self.model.optimizer)
