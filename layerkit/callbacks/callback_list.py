"""``CallbackList``: calls a hook on every callback, skipping the ones nobody overrides."""
from __future__ import annotations

from layerkit.callbacks.callback import _HOOKS, _overrides


class CallbackList:
    """Calls each hook on every callback, in order; hooks nobody overrides are skipped."""

    def __init__(self, callbacks=None, model=None, **params) -> None:
        self.callbacks = list(callbacks or [])
        self.model = model
        self.params = params
        for cb in self.callbacks:
            if model is not None:
                cb.set_model(model)
            cb.set_params(params)
        # Precompute which callbacks implement each hook: the per-batch hooks run every
        # step and most callbacks leave them empty.
        self._active = {h: [getattr(cb, h) for cb in self.callbacks if _overrides(cb, h)]
                        for h in _HOOKS}

    def wants(self, hook: str) -> bool:
        return bool(self._active[hook])

    def __getattr__(self, hook: str):
        if not hook.startswith("on_"):
            raise AttributeError(hook)
        fns = self.__dict__["_active"][hook]
        # Like Keras, every hook gets a logs dict ({} when the loop has none).
        arity = 2 if ("batch" in hook or "epoch" in hook) else 1

        def call(*args):
            if len(args) < arity or args[-1] is None:
                args = args[:arity - 1] + ({},)
            for fn in fns:
                fn(*args)

        return call

    def __iter__(self):
        return iter(self.callbacks)
