"""``LambdaCallback``: a callback made of plain functions."""
from __future__ import annotations

from layerkit.callbacks.callback import _HOOKS, Callback


class LambdaCallback(Callback):
    """A callback from plain functions: ``LambdaCallback(on_epoch_end=lambda e, logs: ...)``."""

    def __init__(self, **hooks) -> None:
        super().__init__()
        for name, fn in hooks.items():
            if name not in _HOOKS:
                raise ValueError(f"LambdaCallback: unknown hook {name!r}; expected one of "
                                 f"{_HOOKS}")
            setattr(self, name, fn)
