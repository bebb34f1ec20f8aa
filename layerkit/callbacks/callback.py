"""``Callback``: the base class of the hooks ``Model.fit``/``evaluate``/``predict`` call."""
from __future__ import annotations

from typing import Any

import numpy as np

from layerkit._core.types import Logs


class Callback:
    """Base class: override any of the ``on_*`` hooks (Keras 3's ``keras.callbacks.Callback``).

    Batch hooks get the batch index within the epoch and ``logs`` with the running
    metric values (floats); epoch hooks get the epoch index (0-based) and, at the end,
    the epoch's metrics including ``val_*`` entries. ``on_batch_begin``/``on_batch_end``
    are the older names of ``on_train_batch_begin``/``on_train_batch_end``: overriding
    them works too.

    Attributes:
        model: the model being trained (set by :meth:`set_model`); a callback may set
            ``self.model.stop_training = True`` to end ``fit`` after the current batch.
        params: ``{'epochs', 'steps', 'verbose'}`` (plus ``'mode'``: ``'train'``,
            ``'evaluate'`` or ``'predict'``), set by :meth:`set_params`.

    Examples:
        >>> import layerkit as lk
        >>> class Stop(lk.callbacks.Callback):
        ...     def on_train_batch_end(self, batch, logs=None):
        ...         if batch == 1:
        ...             self.model.stop_training = True
    """

    #: Whether ``on_train_batch_end`` reads the running metrics in ``logs``; a callback
    #: that only counts batches may set it False so that fit skips computing them.
    needs_batch_logs = True

    def __init__(self) -> None:
        self.params: dict = {}
        self._model = None

    @property
    def model(self) -> Any:
        """The model these callbacks are attached to (None before :meth:`set_model`)."""
        return self.__dict__.get("_model")

    @model.setter
    def model(self, model) -> None:
        self._model = model

    def set_model(self, model: Any) -> None:
        self._model = model

    def set_params(self, params: dict) -> None:
        self.params = params

    def on_batch_begin(self, batch: int, logs: Logs = None) -> None: ...
    def on_batch_end(self, batch: int, logs: Logs = None) -> None: ...
    def on_train_begin(self, logs: Logs = None) -> None: ...
    def on_train_end(self, logs: Logs = None) -> None: ...
    def on_epoch_begin(self, epoch: int, logs: Logs = None) -> None: ...
    def on_epoch_end(self, epoch: int, logs: Logs = None) -> None: ...

    def on_train_batch_begin(self, batch: int, logs: Logs = None) -> None:
        self.on_batch_begin(batch, logs=logs)

    def on_train_batch_end(self, batch: int, logs: Logs = None) -> None:
        self.on_batch_end(batch, logs=logs)

    def on_test_begin(self, logs: Logs = None) -> None: ...
    def on_test_end(self, logs: Logs = None) -> None: ...
    def on_test_batch_begin(self, batch: int, logs: Logs = None) -> None: ...
    def on_test_batch_end(self, batch: int, logs: Logs = None) -> None: ...
    def on_predict_begin(self, logs: Logs = None) -> None: ...
    def on_predict_end(self, logs: Logs = None) -> None: ...
    def on_predict_batch_begin(self, batch: int, logs: Logs = None) -> None: ...
    def on_predict_batch_end(self, batch: int, logs: Logs = None) -> None: ...


_HOOKS = [n for n in vars(Callback) if n.startswith("on_")]
# The Keras 2 names: the train-batch hooks call them by default.
_ALIASES = {"on_train_batch_begin": "on_batch_begin", "on_train_batch_end": "on_batch_end"}


def _defines(cb: Callback, hook: str) -> bool:
    fn = getattr(cb, hook, None)
    return fn is not None and getattr(fn, "__func__", fn) is not getattr(Callback, hook)


def _overrides(cb: Callback, hook: str) -> bool:
    """Whether ``cb`` does something in ``hook`` (itself or through its Keras 2 alias)."""
    return _defines(cb, hook) or (hook in _ALIASES and _defines(cb, _ALIASES[hook]))


def check_save_freq(save_freq, what: str):
    """``'epoch'`` or a positive int (ModelCheckpoint's and BackupAndRestore's argument)."""
    if save_freq != "epoch" and (isinstance(save_freq, bool) or not isinstance(
            save_freq, (int, np.integer)) or save_freq < 1):
        raise ValueError(f"{what}: save_freq must be 'epoch' or a positive integer. "
                         f"Received: save_freq={save_freq!r}")
    return save_freq


def batch_save_due(cb) -> bool:
    """Count a training batch for a callback with an integer ``save_freq``; True (and the
    count restarts) every ``save_freq`` batches, counted across epochs as Keras does."""
    if cb.save_freq == "epoch":
        return False
    cb._batches_seen_since_last_saving += 1
    if cb._batches_seen_since_last_saving < cb.save_freq:
        return False
    cb._batches_seen_since_last_saving = 0
    return True
