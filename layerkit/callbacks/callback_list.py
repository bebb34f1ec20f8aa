"""``CallbackList``: calls a hook on every callback, skipping the ones nobody overrides."""
from __future__ import annotations

from typing import Any

from layerkit._core.nest import flatten
from layerkit._core.types import Logs
from layerkit.callbacks.callback import _HOOKS, Callback, _overrides
from layerkit.callbacks.history import History
from layerkit.callbacks.progbar_logger import ProgbarLogger


class CallbackList(Callback):
    """Calls each hook on every callback, in order (Keras 3's ``keras.callbacks.CallbackList``).

    Hooks that no callback overrides are skipped: the per-batch hooks run every step and
    most callbacks leave them empty. Every hook gets a ``logs`` dict (``{}`` when the
    loop has none), as in Keras.

    Args:
        callbacks: a list of :class:`Callback` (nested lists are flattened).
        add_history: add a :class:`~layerkit.callbacks.History` if there is none.
        add_progbar: add a :class:`~layerkit.callbacks.ProgbarLogger` if there is none.
        model: the model, given to every callback with ``set_model``.
        **params: given to every callback with ``set_params`` (when not empty).

    Examples:
        >>> import layerkit as lk
        >>> seen = []
        >>> cbs = lk.callbacks.CallbackList(
        ...     [lk.callbacks.LambdaCallback(on_epoch_end=lambda e, logs: seen.append(e))])
        >>> cbs.on_epoch_end(0, {"loss": 1.0})
        >>> seen
        [0]
    """

    def __init__(self, callbacks: Any = None, add_history: bool = False, add_progbar: bool = False,
                 model: Any = None, **params: Any) -> None:
        super().__init__()
        self.callbacks = flatten(list(callbacks or []))
        for cb in self.callbacks:
            if not isinstance(cb, Callback):
                raise TypeError(f"CallbackList: every callback must be a "
                                f"lk.callbacks.Callback, received {type(cb).__name__}: "
                                f"{cb!r:.60}")
        self._history = next((c for c in self.callbacks if isinstance(c, History)), None)
        self._progbar = next((c for c in self.callbacks if isinstance(c, ProgbarLogger)), None)
        if self._history is None and add_history:
            self._history = History()
            self.callbacks.append(self._history)
        if self._progbar is None and add_progbar:
            self._progbar = ProgbarLogger()
            self.callbacks.append(self._progbar)
        self.set_model(model)
        self.set_params(params)
        self._refresh()

    def _refresh(self) -> None:
        self._active = {h: [getattr(cb, h) for cb in self.callbacks if _overrides(cb, h)]
                        for h in _HOOKS}

    def append(self, callback: Callback) -> None:
        """Add a callback (it gets the model and params already set)."""
        self.callbacks.append(callback)
        if self.model is not None:
            callback.set_model(self.model)
        if self.params:
            callback.set_params(self.params)
        self._refresh()

    def set_model(self, model: Any) -> None:
        if model is None:
            return
        super().set_model(model)
        if self._history is not None:
            model.history = self._history
        for cb in self.callbacks:
            cb.set_model(model)

    def set_params(self, params: dict) -> None:
        self.params = params
        if params:
            for cb in self.callbacks:
                cb.set_params(params)

    def wants(self, hook: str) -> bool:
        """Whether some callback overrides ``hook``."""
        return bool(self._active[hook])

    def __iter__(self):
        return iter(self.callbacks)

    def __len__(self) -> int:
        return len(self.callbacks)


def _dispatcher(hook: str):
    arity = 2 if ("batch" in hook or "epoch" in hook) else 1

    def call(self: CallbackList, *args: Any, logs: Logs = None) -> None:
        if len(args) == arity:
            args, logs = args[:-1], args[-1]
        for fn in self._active[hook]:
            fn(*args, {} if logs is None else logs)

    call.__name__ = call.__qualname__ = hook
    call.__doc__ = f"Call ``{hook}`` on every callback that overrides it."
    return call


for _hook in _HOOKS:
    setattr(CallbackList, _hook, _dispatcher(_hook))
del _hook
