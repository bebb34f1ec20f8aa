"""``LambdaCallback``: a callback made of plain functions."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from layerkit.callbacks.callback import _HOOKS, Callback


class LambdaCallback(Callback):
    """A callback from plain functions (Keras 3's ``keras.callbacks.LambdaCallback``).

    Epoch hooks are called as ``fn(epoch, logs)``, batch hooks as ``fn(batch, logs)``,
    the begin/end hooks of train/test/predict as ``fn(logs)``.

    Args:
        on_epoch_begin: the function called at ``epoch_begin`` (these six are
            positional in this order, as in Keras).
        on_epoch_end: the function called at ``epoch_end``.
        on_train_begin: the function called at ``train_begin``.
        on_train_end: the function called at ``train_end``.
        on_train_batch_begin: the function called at ``train_batch_begin``.
        on_train_batch_end: the function called at ``train_batch_end``.
        **kwargs: any other hook by name (``on_batch_end``, ``on_test_end``,
            ``on_predict_batch_end``, ...).

    Raises:
        ValueError: a keyword that is not a hook name (Keras would set it as an attribute
            and never call it; a misspelt hook is an error here).

    Examples:
        >>> import layerkit as lk
        >>> ends = []
        >>> cb = lk.callbacks.LambdaCallback(on_epoch_end=lambda epoch, logs: ends.append(epoch))
    """

    def __init__(self, on_epoch_begin: Callable | None = None, on_epoch_end: Callable | None = None,
                 on_train_begin: Callable | None = None, on_train_end: Callable | None = None,
                 on_train_batch_begin: Callable | None = None,
                 on_train_batch_end: Callable | None = None, **kwargs: Any) -> None:
        super().__init__()
        hooks = dict(on_epoch_begin=on_epoch_begin, on_epoch_end=on_epoch_end,
                     on_train_begin=on_train_begin, on_train_end=on_train_end,
                     on_train_batch_begin=on_train_batch_begin,
                     on_train_batch_end=on_train_batch_end, **kwargs)
        for name, fn in hooks.items():
            if name not in _HOOKS:
                raise ValueError(f"LambdaCallback: unknown hook {name!r}; expected one of "
                                 f"{_HOOKS}")
            if fn is not None:
                if not callable(fn):
                    raise TypeError(f"LambdaCallback: {name} must be callable, received "
                                    f"{type(fn).__name__}: {fn!r:.60}")
                setattr(self, name, fn)
