"""What the callbacks that watch a metric share: the mode and the improvement test."""
from __future__ import annotations

_MAX_NAMES = ("acc", "accuracy", "auc", "precision", "recall", "f1", "top_k")


def _auto_mode(monitor: str) -> str:
    base = monitor[4:] if monitor.startswith("val_") else monitor
    if base.endswith("loss") or base in ("mse", "mae") or "error" in base:
        return "min"
    if any(base == n or base.endswith("_" + n) or base.startswith(n) for n in _MAX_NAMES):
        return "max"
    return "min"


class _Monitor:
    def _init_monitor(self, monitor: str, mode: str, min_delta: float) -> None:
        if mode not in ("auto", "min", "max"):
            raise ValueError(f"{type(self).__name__}: mode must be 'auto', 'min' or 'max'. "
                             f"Received: mode={mode!r}")
        self.monitor = monitor
        self.mode = _auto_mode(monitor) if mode == "auto" else mode
        self.min_delta = abs(min_delta)

    def _better(self, current: float, reference) -> bool:
        if reference is None:
            return True
        if self.mode == "min":
            return current + self.min_delta < reference
        return current - self.min_delta > reference

    def _monitor_value(self, logs: dict):
        value = (logs or {}).get(self.monitor)
        if value is None:
            import warnings

            warnings.warn(
                f"{type(self).__name__}: metric '{self.monitor}' is not available; available "
                f"metrics are {sorted(logs or {})}", stacklevel=3)
        return value
