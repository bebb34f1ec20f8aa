"""``BackupAndRestore``: resume an interrupted ``fit`` where it stopped."""
from __future__ import annotations

import os
import shutil

from layerkit._core.types import Logs, PathLike
from layerkit.callbacks.callback import Callback, batch_save_due, check_save_freq
from layerkit.checkpoint import Checkpoint, CheckpointError, GlobalRNG


class BackupAndRestore(Callback):
    """Back up the training state during ``fit``; a rerun of the same script resumes it.

    Keras 3's ``keras.callbacks.BackupAndRestore``, with one difference: layerkit resumes
    at the exact batch, where Keras resumes only at the start of the interrupted epoch.
    Every ``save_freq`` batches (or at each epoch end) one checkpoint file in
    ``backup_dir`` is written atomically (a crash or ``SIGKILL`` during a save leaves the
    previous backup intact) with:

    - the model's weights and the optimizer's state (slots, iteration count, rate),
    - the loop position: the epoch, the batches done in it and the data's position (for
      array inputs the shuffling stream and the pass's order; for a ``lk.data.Dataset``
      its iterator's state, shuffle buffers and prefetch included),
    - ``lk.random``'s global generator (dropout without a seed, shuffling) and the
      streams of layers with their own seed,
    - the running metric values of the current epoch.

    When ``fit`` starts and a backup exists, everything is restored and training goes on
    from the batch after the last save: an interrupted run, rerun with the same script,
    ends with the same weights as a run that was never interrupted. At the end of a
    successful ``fit`` the backup directory is deleted (unless ``delete_checkpoint=False``).

    The script must build the same model, optimizer and data the same way (as in Keras);
    the state of other callbacks (EarlyStopping's patience count, ...) is not saved, as
    in Keras. Random ops with a fixed integer ``seed`` inside a traced step restart their
    stream when the step is traced again, so prefer unseeded ops or layers with a
    ``seed`` (whose streams are saved).

    Args:
        backup_dir: the directory for the backup; used by nothing else (it is deleted).
        save_freq: ``'epoch'`` (at each epoch end) or a number of batches.
        double_checkpoint: also keep the previous backup and fall back to it if the
            latest cannot be read (a damaged disk).
        delete_checkpoint: delete ``backup_dir`` when ``fit`` completes.

    Raises:
        ValueError: an empty ``backup_dir`` or a ``save_freq`` that is neither ``'epoch'``
            nor a positive int.

    Examples:
        >>> import layerkit as lk
        >>> backup = lk.callbacks.BackupAndRestore("backup", save_freq=100)

        then ``model.fit(x, y, epochs=10, callbacks=[backup])``; rerun after a crash, it
        resumes.
    """

    FILENAME = "training_state.ckpt"

    def __init__(self, backup_dir: PathLike, save_freq: str = "epoch",
                 double_checkpoint: bool = False, delete_checkpoint: bool = True) -> None:
        super().__init__()
        if not backup_dir:
            raise ValueError("BackupAndRestore: empty `backup_dir` argument passed")
        self.backup_dir = os.fspath(backup_dir)
        self.save_freq = check_save_freq(save_freq, "BackupAndRestore")
        self.double_checkpoint = double_checkpoint
        self.delete_checkpoint = delete_checkpoint
        self._path = os.path.join(self.backup_dir, self.FILENAME)
        self._prev_path = self._path + ".bkp"
        self._batches_seen_since_last_saving = 0
        self._ckpt = None

    def _checkpoint(self) -> Checkpoint:
        state = getattr(self.model, "_fit_state", None)
        if state is None:
            raise RuntimeError("BackupAndRestore works inside Model.fit (the model has no "
                               "running fit to back up)")
        return Checkpoint(model=self.model, optimizer=self.model.optimizer, rng=GlobalRNG(),
                          fit=state)

    def on_train_begin(self, logs: Logs = None) -> None:
        self._batches_seen_since_last_saving = 0
        self._ckpt = self._checkpoint()
        candidates = [p for p in (self._path, self._prev_path)
                      if os.path.exists(p) and (p == self._path or self.double_checkpoint)]
        for i, path in enumerate(candidates):
            try:
                self._ckpt.read(path).expect_partial()
                return
            except CheckpointError:
                if i == len(candidates) - 1:
                    raise

    def on_train_batch_end(self, batch: int, logs: Logs = None) -> None:
        if batch_save_due(self):
            self._save()

    def on_epoch_end(self, epoch: int, logs: Logs = None) -> None:
        if self.save_freq == "epoch":
            self._save()

    def _save(self) -> None:
        os.makedirs(self.backup_dir, exist_ok=True)
        if self.double_checkpoint and os.path.exists(self._path):
            os.replace(self._path, self._prev_path)
        self._ckpt.write(self._path)

    def on_train_end(self, logs: Logs = None) -> None:
        self._ckpt = None
        if self.delete_checkpoint and os.path.isdir(self.backup_dir):
            shutil.rmtree(self.backup_dir)
