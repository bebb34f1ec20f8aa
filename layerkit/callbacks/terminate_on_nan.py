"""``TerminateOnNaN``: stop training when the loss becomes NaN or infinite."""
from __future__ import annotations

import math

from layerkit._core.types import Logs
from layerkit.callbacks.callback import Callback


class TerminateOnNaN(Callback):
    """Stop training when the loss becomes NaN or infinite, naming the batch and step.

    Args:
        raise_error: raise ``RuntimeError`` instead of stopping quietly.
    """

    def __init__(self, raise_error: bool = False) -> None:
        super().__init__()
        self.raise_error = raise_error
        self._epoch = 0
        self.stopped_step: int | None = None

    def on_epoch_begin(self, epoch: int, logs: Logs = None) -> None:
        self._epoch = epoch

    def on_train_batch_end(self, batch: int, logs: Logs = None) -> None:
        loss = (logs or {}).get("loss")
        if loss is None or math.isfinite(loss):
            return
        step = int(self.model.optimizer.iterations._v) if self.model is not None and \
            getattr(self.model, "optimizer", None) is not None else None
        self.stopped_step = step
        msg = (f"Batch {batch} of epoch {self._epoch + 1} (optimizer step {step}): invalid "
               f"loss {loss}, terminating training")
        if self.raise_error:
            raise RuntimeError(msg)
        print(msg)
        self.model.stop_training = True
