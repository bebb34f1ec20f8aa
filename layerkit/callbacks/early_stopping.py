"""``EarlyStopping``: stop training when a metric stops improving."""
from __future__ import annotations

from layerkit.callbacks.callback import Callback
from layerkit.callbacks.monitor_callback import _Monitor


class EarlyStopping(Callback, _Monitor):
    """Stop training when ``monitor`` has stopped improving for ``patience`` epochs.

    Args:
        monitor: the log key to watch (default ``'val_loss'``).
        min_delta: the smallest change that counts as an improvement.
        patience: epochs without improvement before stopping.
        verbose: 1 prints a message when stopping/restoring.
        mode: ``'min'``, ``'max'`` or ``'auto'`` (from the name: losses and errors are
            minimised, accuracy/auc/precision/recall maximised).
        baseline: training stops if the value does not beat this within ``patience``.
        restore_best_weights: at the end, restore the weights of the best epoch.
        start_from_epoch: epochs to wait before monitoring starts.
    """

    def __init__(self, monitor: str = "val_loss", min_delta: float = 0.0, patience: int = 0,
                 verbose: int = 0, mode: str = "auto", baseline: float | None = None,
                 restore_best_weights: bool = False, start_from_epoch: int = 0) -> None:
        super().__init__()
        self._init_monitor(monitor, mode, min_delta)
        self.patience = patience
        self.verbose = verbose
        self.baseline = baseline
        self.restore_best_weights = restore_best_weights
        self.start_from_epoch = start_from_epoch
        self.best_weights = None

    def on_train_begin(self, logs=None) -> None:
        self.wait = 0
        self.stopped_epoch = 0
        self.best = None
        self.best_weights = None
        self.best_epoch = 0

    def on_epoch_end(self, epoch, logs=None) -> None:
        current = self._monitor_value(logs)
        if current is None or epoch < self.start_from_epoch:
            return
        if self.restore_best_weights and self.best_weights is None:
            self.best_weights = self.model.get_weights()
        self.wait += 1
        if self._better(current, self.best):
            self.best = current
            self.best_epoch = epoch
            if self.restore_best_weights:
                self.best_weights = self.model.get_weights()
            if self.baseline is None or self._better(current, self.baseline):
                self.wait = 0
            return
        if self.wait >= self.patience and epoch > 0:
            self.stopped_epoch = epoch
            self.model.stop_training = True

    def on_train_end(self, logs=None) -> None:
        if self.stopped_epoch > 0 and self.verbose > 0:
            print(f"Epoch {self.stopped_epoch + 1}: early stopping")
        if self.restore_best_weights and self.best_weights is not None:
            if self.verbose > 0:
                print(f"Restoring model weights from the end of the best epoch: "
                      f"{self.best_epoch + 1}.")
            self.model.set_weights(self.best_weights)
