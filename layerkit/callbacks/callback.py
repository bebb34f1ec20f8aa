"""``Callback``: the base class of the hooks ``Model.fit``/``evaluate``/``predict`` call."""
from __future__ import annotations


class Callback:
    """Base class: override any of the ``on_*`` hooks.

    Batch hooks get the batch index within the epoch and ``logs`` with the running
    metric values (floats); epoch hooks get the epoch index (0-based) and, at the end,
    the epoch's metrics including ``val_*`` entries.
    """

    #: Whether ``on_train_batch_end`` reads the running metrics in ``logs``; a callback
    #: that only counts batches may set it False so that fit skips computing them.
    needs_batch_logs = True

    def __init__(self) -> None:
        self.model = None
        self.params: dict = {}

    def set_model(self, model) -> None:
        self.model = model

    def set_params(self, params: dict) -> None:
        self.params = params

    def on_train_begin(self, logs=None): ...
    def on_train_end(self, logs=None): ...
    def on_epoch_begin(self, epoch, logs=None): ...
    def on_epoch_end(self, epoch, logs=None): ...
    def on_train_batch_begin(self, batch, logs=None): ...
    def on_train_batch_end(self, batch, logs=None): ...
    def on_test_begin(self, logs=None): ...
    def on_test_end(self, logs=None): ...
    def on_test_batch_begin(self, batch, logs=None): ...
    def on_test_batch_end(self, batch, logs=None): ...
    def on_predict_begin(self, logs=None): ...
    def on_predict_end(self, logs=None): ...
    def on_predict_batch_begin(self, batch, logs=None): ...
    def on_predict_batch_end(self, batch, logs=None): ...


_HOOKS = [n for n in vars(Callback) if n.startswith("on_")]


def _overrides(cb: Callback, hook: str) -> bool:
    fn = getattr(cb, hook, None)
    return fn is not None and getattr(fn, "__func__", fn) is not getattr(Callback, hook)
