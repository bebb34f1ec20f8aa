"""``ModelCheckpoint``: save the model's weights during training."""
from __future__ import annotations

import os

from layerkit.callbacks.callback import Callback
from layerkit.callbacks.monitor_callback import _Monitor


class ModelCheckpoint(Callback, _Monitor):
    """Save the model's weights (``model.save_weights``) every epoch or every N batches.

    layerkit has no whole-model file format yet, so every save writes weights (a
    ``lk.Checkpoint`` file); ``save_weights_only`` is accepted for compatibility.

    Args:
        filepath: the path, may contain ``{epoch}`` (1-based) and log keys, e.g.
            ``'ckpt/weights-{epoch:02d}-{val_loss:.2f}.lkw'``.
        monitor: the log key for ``save_best_only``.
        verbose: 1 prints a line per save.
        save_best_only: only save when ``monitor`` improves.
        save_weights_only: accepted; weights are always what is saved.
        mode: ``'auto'``, ``'min'`` or ``'max'`` (as in :class:`EarlyStopping`).
        save_freq: ``'epoch'`` or an integer number of batches.
        initial_value_threshold: the value to beat for the first best save.
    """

    def __init__(self, filepath: str, monitor: str = "val_loss", verbose: int = 0,
                 save_best_only: bool = False, save_weights_only: bool = True,
                 mode: str = "auto", save_freq="epoch",
                 initial_value_threshold: float | None = None) -> None:
        super().__init__()
        self._init_monitor(monitor, mode, 0.0)
        self.filepath = os.fspath(filepath)
        self.verbose = verbose
        self.save_best_only = save_best_only
        self.save_weights_only = save_weights_only
        if save_freq != "epoch" and not (isinstance(save_freq, int) and save_freq > 0):
            raise ValueError(f"ModelCheckpoint: save_freq must be 'epoch' or a positive int. "
                             f"Received: save_freq={save_freq!r}")
        self.save_freq = save_freq
        self.best = initial_value_threshold
        self._batches = 0
        self._epoch = 0

    def on_train_begin(self, logs=None) -> None:
        self._batches = 0

    def on_epoch_begin(self, epoch, logs=None) -> None:
        self._epoch = epoch

    def on_train_batch_end(self, batch, logs=None) -> None:
        if self.save_freq == "epoch":
            return
        self._batches += 1
        if self._batches % self.save_freq == 0:
            self._save(self._epoch, logs, batch)

    def on_epoch_end(self, epoch, logs=None) -> None:
        if self.save_freq == "epoch":
            self._save(epoch, logs)

    def _save(self, epoch: int, logs, batch: int | None = None) -> None:
        logs = dict(logs or {})
        try:
            path = self.filepath.format(epoch=epoch + 1, batch=batch, **logs)
        except KeyError as e:
            raise KeyError(
                f"ModelCheckpoint: filepath {self.filepath!r} refers to {e}, which is not in "
                f"the logs (available: {sorted(logs)})"
            ) from None
        if self.save_best_only:
            current = self._monitor_value(logs)
            if current is None or not self._better(current, self.best):
                return
            if self.verbose > 0:
                print(f"Epoch {epoch + 1}: {self.monitor} improved from {self.best} to "
                      f"{current:.5f}, saving model to {path}")
            self.best = current
        elif self.verbose > 0:
            print(f"Epoch {epoch + 1}: saving model to {path}")
        d = os.path.dirname(path)
        if d:
            os.makedirs(d, exist_ok=True)
        self.model.save_weights(path)
