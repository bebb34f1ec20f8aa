"""``ModelCheckpoint``: save the model (or its weights) during training."""
from __future__ import annotations

import os
import warnings

import numpy as np

from layerkit._core.types import Logs, PathLike
from layerkit.callbacks.callback import batch_save_due, check_save_freq
from layerkit.callbacks.monitor_callback import MonitorCallback


class ModelCheckpoint(MonitorCallback):
    """Save the model or its weights every epoch or every ``save_freq`` batches.

    Keras 3's ``keras.callbacks.ModelCheckpoint``. What is written depends on
    ``save_weights_only`` and the file name:

    - ``save_weights_only=True``: ``model.save_weights(path)``, whose suffix picks the
      format (``.weights.h5`` as Keras, ``.safetensors``, anything else a layerkit
      checkpoint file); a ``.keras`` path is refused.
    - ``save_weights_only=False`` (the default): a ``.keras`` path gets the whole model
      (``model.save(path)``), and so does an ``.h5``/``.hdf5`` path that is not
      ``.weights.h5`` (Keras's legacy HDF5 format, as Keras 3 writes it); any other path
      gets the weights as above, where Keras would refuse it (layerkit accepts its
      weights formats here).

    Args:
        filepath: the path. It is formatted with ``epoch`` (1-based), ``batch`` (1-based,
            with an integer ``save_freq``) and the log keys, e.g.
            ``'ckpt/weights-{epoch:02d}-{val_loss:.2f}.weights.h5'``.
        monitor: the log key for ``save_best_only``.
        verbose: 1 prints a line per save (and per skipped save).
        save_best_only: only save when ``monitor`` improves on the best value so far (if
            the value is missing, save anyway with a warning, as Keras does).
        save_weights_only: see above.
        mode: ``'auto'``, ``'min'`` or ``'max'`` (as in :class:`EarlyStopping`).
        save_freq: ``'epoch'`` or a positive number of batches.
        initial_value_threshold: the value to beat for the first save with
            ``save_best_only``.

    Raises:
        ValueError: a ``save_freq`` that is neither ``'epoch'`` nor a positive int, or
            ``save_weights_only=True`` with a ``.keras`` path.

    Examples:
        >>> import layerkit as lk
        >>> ckpt = lk.callbacks.ModelCheckpoint("ckpt/best.weights.h5", monitor="val_loss",
        ...                                     save_best_only=True, save_weights_only=True)
    """

    def __init__(self, filepath: PathLike, monitor: str = "val_loss", verbose: int = 0,
                 save_best_only: bool = False, save_weights_only: bool = False,
                 mode: str = "auto", save_freq: str = "epoch",
                 initial_value_threshold: float | None = None) -> None:
        super().__init__(monitor, mode, initial_value_threshold)
        self.filepath = os.fspath(filepath)
        self.verbose = verbose
        self.save_best_only = save_best_only
        self.save_weights_only = save_weights_only
        if save_weights_only and self.filepath.lower().endswith(".keras"):
            raise ValueError(
                f"ModelCheckpoint: with save_weights_only=True the filepath must be a weights "
                f"file (e.g. '.weights.h5'), not a '.keras' model archive. Received: "
                f"filepath={self.filepath}")
        self.save_freq = check_save_freq(save_freq, "ModelCheckpoint")
        self._batches_seen_since_last_saving = 0
        self._current_epoch = 0

    def on_epoch_begin(self, epoch: int, logs: Logs = None) -> None:
        self._current_epoch = epoch

    def on_train_batch_end(self, batch: int, logs: Logs = None) -> None:
        if batch_save_due(self):
            self._save_model(self._current_epoch, batch, logs)

    def on_epoch_end(self, epoch: int, logs: Logs = None) -> None:
        if self.monitor_op is None:
            self._set_monitor_op()
        if self.save_freq == "epoch":
            self._save_model(epoch, None, logs)

    def _get_file_path(self, epoch: int, batch: int | None, logs: dict) -> str:
        fields = dict(logs)
        fields["epoch"] = epoch + 1
        if batch is not None and "batch" not in logs:
            fields["batch"] = batch + 1
        try:
            return self.filepath.format(**fields)
        except KeyError as e:
            raise KeyError(
                f"ModelCheckpoint: failed to format the filepath {self.filepath!r}: it refers "
                f"to {e}, which is not in the logs (available: {sorted(fields)})") from None

    def _should_save_model(self, epoch: int, logs: dict, filepath: str) -> bool:
        if not self.save_best_only:
            if self.verbose > 0:
                print(f"\nEpoch {epoch + 1}: saving model to {filepath}")
            return True
        current = logs.get(self.monitor)
        if current is None:
            warnings.warn(f"ModelCheckpoint: can save best model only with {self.monitor} "
                          f"available (the logs have {sorted(logs)}); saving anyway.",
                          stacklevel=4)
            return True
        if np.ndim(current) > 0:
            warnings.warn(f"ModelCheckpoint: can save best model only when `monitor` is a "
                          f"scalar value. Received: {current}. Falling back to "
                          f"save_best_only=False.", stacklevel=4)
            return True
        best = "None" if self.best is None else f"{self.best:.5f}"
        if self._is_improvement(current, self.best):
            if self.verbose > 0:
                print(f"\nEpoch {epoch + 1}: {self.monitor} improved from {best} to "
                      f"{current:.5f}, saving model to {filepath}")
            self.best = current
            return True
        if self.verbose > 0:
            print(f"\nEpoch {epoch + 1}: {self.monitor} did not improve from {best}")
        return False

    def _save_model(self, epoch: int, batch: int | None, logs) -> None:
        logs = dict(logs or {})
        filepath = self._get_file_path(epoch, batch, logs)
        if not self._should_save_model(epoch, logs, filepath):
            return
        if os.path.isdir(filepath):
            raise IsADirectoryError(f"ModelCheckpoint: please specify a non-directory "
                                    f"filepath; {filepath!r} is an existing directory")
        dirname = os.path.dirname(filepath)
        if dirname:
            os.makedirs(dirname, exist_ok=True)
        lower = filepath.lower()
        whole = lower.endswith(".keras") or (lower.endswith((".h5", ".hdf5"))
                                             and not lower.endswith(".weights.h5"))
        if not self.save_weights_only and whole:
            save = getattr(self.model, "save", None)
            if save is None:
                raise NotImplementedError(
                    f"ModelCheckpoint: saving the whole model to {filepath!r} needs "
                    f"Model.save, which this model does not have; use "
                    f"save_weights_only=True with a weights file name")
            save(filepath, overwrite=True)
        else:
            self.model.save_weights(filepath, overwrite=True)
