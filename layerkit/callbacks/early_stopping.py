"""``EarlyStopping``: stop training when a metric stops improving."""
from __future__ import annotations

from layerkit._core.types import Logs
from layerkit.callbacks.monitor_callback import MonitorCallback


class EarlyStopping(MonitorCallback):
    """Stop training when ``monitor`` has stopped improving for ``patience`` epochs.

    Keras 3's ``keras.callbacks.EarlyStopping``, with the same arguments and rules.

    Args:
        monitor: the log key to watch (default ``'val_loss'``).
        min_delta: the smallest change that counts as an improvement.
        patience: epochs without improvement before stopping.
        verbose: 1 prints a message when stopping/restoring.
        mode: ``'min'``, ``'max'`` or ``'auto'`` (see
            :class:`~layerkit.callbacks.monitor_callback.MonitorCallback`).
        baseline: training stops unless the value beats this within ``patience`` epochs.
        restore_best_weights: at the end, restore the weights of the best epoch (if the
            training stopped early or not, as Keras 3 does).
        start_from_epoch: epochs to wait before monitoring starts (a warm-up).

    Attributes:
        stopped_epoch: the epoch (0-based) at which training stopped, 0 if it did not.
        best_epoch: the epoch of the best value.

    Examples:
        >>> import layerkit as lk
        >>> stop = lk.callbacks.EarlyStopping(monitor="loss", patience=3)
    """

    def __init__(self, monitor: str = "val_loss", min_delta: float = 0, patience: int = 0,
                 verbose: int = 0, mode: str = "auto", baseline: float | None = None,
                 restore_best_weights: bool = False, start_from_epoch: int = 0) -> None:
        super().__init__(monitor, mode, min_delta=min_delta)
        self.patience = patience
        self.verbose = verbose
        self.baseline = baseline
        self.wait = 0
        self.stopped_epoch = 0
        self.restore_best_weights = restore_best_weights
        self.best_weights = None
        self.best_epoch = 0
        self.start_from_epoch = start_from_epoch

    def on_train_begin(self, logs: Logs = None) -> None:
        # The same instance may serve several fit calls.
        self.wait = 0
        self.stopped_epoch = 0
        self.best = None
        self.best_weights = None
        self.best_epoch = 0

    def on_epoch_end(self, epoch: int, logs: Logs = None) -> None:
        if self.monitor_op is None:
            self._set_monitor_op()
        current = self.get_monitor_value(logs)
        if current is None or epoch < self.start_from_epoch:
            return
        if self.restore_best_weights and self.best_weights is None:
            # Until something improves, the weights of now are the best ones.
            self.best_weights = self.model.get_weights()
            self.best_epoch = epoch
        self.wait += 1
        if self._is_improvement(current, self.best):
            self.best = current
            self.best_epoch = epoch
            if self.restore_best_weights:
                self.best_weights = self.model.get_weights()
            # Patience restarts only when both the previous best and the baseline are beaten.
            if self.baseline is None or self._is_improvement(current, self.baseline):
                self.wait = 0
            return
        if self.wait >= self.patience and epoch > 0:
            self.stopped_epoch = epoch
            self.model.stop_training = True

    def on_train_end(self, logs: Logs = None) -> None:
        if self.stopped_epoch > 0 and self.verbose > 0:
            print(f"Epoch {self.stopped_epoch + 1}: early stopping")
        if self.restore_best_weights and self.best_weights is not None:
            if self.verbose > 0:
                print(f"Restoring model weights from the end of the best epoch: "
                      f"{self.best_epoch + 1}.")
            self.model.set_weights(self.best_weights)
