"""``Progbar``: a text progress bar (``lk.utils.Progbar``; ``fit`` shows it through
``lk.callbacks.ProgbarLogger``)."""
from __future__ import annotations

import sys
import time

import numpy as np

__all__ = ["Progbar"]


def _fmt_value(v) -> str:
    if isinstance(v, (float, np.floating)):
        a = abs(float(v))
        return f"{v:.4e}" if a != 0 and (a < 1e-3 or a >= 1e4) else f"{v:.4f}"
    return str(v)


def _fmt_time(seconds: float) -> str:
    if seconds >= 3600:
        return f"{int(seconds // 3600)}:{int(seconds % 3600 // 60):02d}:{int(seconds % 60):02d}"
    if seconds >= 60:
        return f"{int(seconds // 60)}:{int(seconds % 60):02d}"
    return f"{int(round(seconds))}s"


def _fmt_per_step(seconds: float) -> str:
    if seconds >= 1:
        return f"{seconds:.0f}s/step"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.0f}ms/step"
    return f"{seconds * 1e6:.0f}us/step"


class Progbar:
    """A text progress bar: ``12/50 [=====>.........] - ETA: 3s - loss: 0.1234``.

    On a terminal the line is redrawn in place (``\\r``) at most every ``interval``
    seconds; elsewhere (a log file, a pipe) nothing is printed until :meth:`finish`,
    which writes one summary line, so logs stay readable.

    Args:
        target: total number of steps (None if unknown).
        width: bar width in characters.
        stream: where to write (default ``sys.stdout``).
        interval: minimum seconds between redraws on a terminal.
        dynamic: force terminal (True) or log (False) mode; default: ``stream.isatty()``.
    """

    def __init__(self, target: int | None, width: int = 30, stream=None, interval: float = 0.05,
                 dynamic: bool | None = None) -> None:
        self.target = target
        self.width = width
        self.stream = stream or sys.stdout
        self.interval = interval
        if dynamic is None:
            isatty = getattr(self.stream, "isatty", None)
            dynamic = bool(isatty and isatty()) or "ipykernel" in sys.modules
        self.dynamic = dynamic
        self.start = time.perf_counter()
        self._last_draw = float("-inf")  # the first update is drawn at once
        self._last_len = 0
        self.seen = 0
        self.values: dict = {}

    def _bar(self, current: int) -> str:
        if self.target:
            digits = len(str(self.target))
            frac = min(current / self.target, 1.0)
            filled = int(self.width * frac)
            if current < self.target:
                bar = "=" * max(filled - 1, 0) + ">" + "." * (self.width - max(filled, 1))
            else:
                bar = "=" * self.width
            return f"{current:{digits}d}/{self.target} [{bar}]"
        return f"{current}/Unknown"

    def _metrics(self) -> str:
        return "".join(f" - {k}: {_fmt_value(v)}" for k, v in self.values.items())

    def update(self, current: int, values: dict | None = None, finalize: bool = False) -> None:
        """Record progress ``current`` with the running ``values`` and redraw if due."""
        self.seen = current
        if values:
            self.values.update(values)
        if not self.dynamic and not finalize:
            return
        now = time.perf_counter()
        if not finalize and now - self._last_draw < self.interval:
            return
        self._last_draw = now
        elapsed = now - self.start
        if finalize:
            per = elapsed / max(current, 1)
            info = f" - {_fmt_time(elapsed)} {_fmt_per_step(per)}"
        elif self.target and current:
            eta = elapsed / current * (self.target - current)
            info = f" - ETA: {_fmt_time(eta)}"
        else:
            info = f" - {_fmt_time(elapsed)}"
        line = self._bar(current) + info + self._metrics()
        if self.dynamic:
            pad = max(self._last_len - len(line), 0)
            self.stream.write("\r" + line + " " * pad + ("\n" if finalize else ""))
            self._last_len = len(line)
        else:
            self.stream.write(line + "\n")
        self.stream.flush()

    def finish(self, values: dict | None = None, prefix: str = "") -> None:
        """Write the final line (with elapsed time and time per step)."""
        if prefix and not self.dynamic:
            self.stream.write(prefix)
        self.update(self.seen, values, finalize=True)
