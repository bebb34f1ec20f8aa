"""``ProgbarLogger``: the progress bar ``fit``/``evaluate``/``predict`` show."""
from __future__ import annotations

import sys
from typing import TextIO

from layerkit._core.types import Logs
from layerkit.callbacks.callback import Callback
from layerkit.utils.progbar import Progbar


class ProgbarLogger(Callback):
    """Shows a progress bar per epoch with steps/total, elapsed time, ETA and metrics.

    Redrawn in place on a terminal (at most 20 times a second); when the output is not a
    terminal, one line per epoch (``Epoch 3/10 - 32/32 - 1s 4ms/step - loss: ...``).
    ``fit(verbose=2)`` also prints one line per epoch. Added automatically by ``fit``
    when ``verbose`` is not 0.

    Args:
        stream: where to write (default ``sys.stdout`` at the time of training).
        interval: minimum seconds between redraws on a terminal.
    """

    def __init__(self, stream: TextIO | None = None, interval: float = 0.05) -> None:
        super().__init__()
        self.stream = stream
        self.interval = interval
        self._bar: Progbar | None = None
        self._mode = "train"

    def _stream(self):
        return self.stream or sys.stdout

    def set_params(self, params: dict) -> None:
        super().set_params(params)
        # Only a bar redrawn on a terminal shows running values during the epoch.
        isatty = getattr(self._stream(), "isatty", None)
        self.needs_batch_logs = params.get("verbose", 1) == 1 and (
            bool(isatty and isatty()) or "ipykernel" in sys.modules)

    def _new_bar(self, target) -> Progbar:
        # The logs hold running values already: show them as they are (Keras does too).
        return Progbar(target, verbose=1 if self.params.get("verbose", 1) == 1 else 2,
                       interval=self.interval, stateless_metrics=set(), stream=self._stream())

    def on_epoch_begin(self, epoch: int, logs: Logs = None) -> None:
        self._epoch = epoch
        self._bar = self._new_bar(self.params.get("steps"))
        epochs = self.params.get("epochs", 1)
        if self._bar.dynamic and epochs > 1:
            self._stream().write(f"Epoch {epoch + 1}/{epochs}\n")

    def on_train_batch_end(self, batch: int, logs: Logs = None) -> None:
        if self._bar is not None:
            self._bar.update(batch + 1, logs, finalize=False)

    def on_epoch_end(self, epoch: int, logs: Logs = None) -> None:
        if self._bar is None:
            return
        prefix = f"Epoch {epoch + 1}/{self.params.get('epochs', 1)} - "
        self._bar.finish(logs, prefix=prefix)
        self._bar = None

    def on_test_begin(self, logs: Logs = None) -> None:
        # A standalone evaluate() gets its own bar; validation inside fit stays silent.
        if self._bar is None and self.params.get("mode") == "evaluate":
            self._bar = self._new_bar(self.params.get("steps"))

    def on_test_batch_end(self, batch: int, logs: Logs = None) -> None:
        if self._bar is not None and self.params.get("mode") == "evaluate":
            self._bar.update(batch + 1, logs, finalize=False)

    def on_test_end(self, logs: Logs = None) -> None:
        if self._bar is not None and self.params.get("mode") == "evaluate":
            self._bar.finish(logs)
            self._bar = None

    def on_predict_begin(self, logs: Logs = None) -> None:
        if self.params.get("mode") == "predict":
            self._bar = self._new_bar(self.params.get("steps"))

    def on_predict_batch_end(self, batch: int, logs: Logs = None) -> None:
        if self._bar is not None:
            self._bar.update(batch + 1, finalize=False)

    def on_predict_end(self, logs: Logs = None) -> None:
        if self._bar is not None:
            self._bar.finish()
            self._bar = None
