"""``Progbar``: a text progress bar (``lk.utils.Progbar``; ``fit`` shows it through
``lk.callbacks.ProgbarLogger``)."""
from __future__ import annotations

import math
import sys
import time
from typing import Any

import numpy as np

__all__ = ["Progbar"]


def _fmt_value(v) -> str:
    # Keras's rule: four decimals, scientific notation from 1e-3 down.
    if isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool):
        v = float(v)
        return f"{v:.4f}" if abs(v) > 1e-3 else f"{v:.4e}"
    return str(v)


def _fmt_eta(seconds: float) -> str:
    if seconds > 3600:
        return f"{int(seconds // 3600)}:{int(seconds % 3600 // 60):02d}:{int(seconds % 60):02d}"
    if seconds > 60:
        return f"{int(seconds // 60)}:{int(seconds % 60):02d}"
    return f"{int(seconds)}s"


def _fmt_per_unit(seconds: float, unit: str) -> str:
    if seconds >= 1 or seconds == 0:
        return f"{seconds:.0f}s/{unit}"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.0f}ms/{unit}"
    return f"{seconds * 1e6:.0f}us/{unit}"


class Progbar:
    """A text progress bar: ``12/50 [====>...............] - ETA: 3s - loss: 0.1234``.

    Keras 3's ``keras.utils.Progbar``: call :meth:`update` with the current step (or
    :meth:`add` with a number of new steps) and ``(name, value)`` pairs. Values of
    names in ``stateful_metrics`` are shown as given; the others are averaged over the
    steps seen (weighted by the steps each update covers), as Keras does.

    ``verbose=1`` redraws the line in place (``\\r``) at most every ``interval`` seconds
    when ``stream`` is a terminal or a notebook; on anything else (a log file, a pipe)
    only the final line is written, so logs stay readable (Keras writes every update
    there). ``verbose=2`` writes only the final line, ``verbose=0`` nothing.

    Args:
        target: total number of steps, or None if unknown.
        width: bar width in characters.
        verbose: 0 (silent), 1 (the bar) or 2 (the final line only).
        interval: minimum seconds between redraws.
        stateful_metrics: names whose values are displayed as is (not averaged).
        stateless_metrics: the opposite selection: only these names are averaged (give
            at most one of the two).
        unit_name: what a step is called in the time per step (``'step'``, ``'sample'``).
        stream: where to write (default ``sys.stdout`` at construction).
        dynamic: force in-place redrawing (True) or final-line-only (False); default
            from ``stream.isatty()``.

    Raises:
        ValueError: both ``stateful_metrics`` and ``stateless_metrics`` are given, or
            ``verbose`` is not 0, 1 or 2.

    Examples:
        >>> import io
        >>> import layerkit as lk
        >>> out = io.StringIO()
        >>> bar = lk.utils.Progbar(8, stream=out, dynamic=True, interval=0)
        >>> bar.update(2, [("loss", 1.0)])
        >>> bar.update(4, [("loss", 3.0)])   # averaged: (2 * 1.0 + 2 * 3.0) / 4
        >>> out.getvalue()[-12:]
        'loss: 2.0000'
        >>> bar.add(4, [("loss", 0.5)])      # the final line shows the values given last
        >>> out.getvalue().rstrip()[-12:]
        'loss: 0.5000'
    """

    def __init__(self, target: int | None, width: int = 20, verbose: int = 1,
                 interval: float = 0.05, stateful_metrics: Any = None,
                 stateless_metrics: Any = None, unit_name: str = "step", *, stream: Any = None,
                 dynamic: bool | None = None) -> None:
        if stateful_metrics is not None and stateless_metrics is not None:
            raise ValueError("Progbar: give only one of stateful_metrics (names shown as is) "
                             "and stateless_metrics (names averaged), not both")
        if verbose not in (0, 1, 2):
            raise ValueError(f"Progbar: verbose must be 0, 1 or 2, received verbose={verbose!r}")
        self.target = target
        self.width = width
        self.verbose = verbose
        self.interval = interval
        self.unit_name = unit_name
        if stateless_metrics is not None:
            self.stateful_metrics: set[str] | None = None
            self.stateless_metrics: set[str] | None = set(stateless_metrics)
        else:
            self.stateful_metrics = set(stateful_metrics or ())
            self.stateless_metrics = None
        self.stream = stream or sys.stdout
        if dynamic is None:
            isatty = getattr(self.stream, "isatty", None)
            dynamic = bool(isatty and isatty()) or "ipykernel" in sys.modules
        self.dynamic = bool(dynamic) and verbose == 1
        self._start = time.perf_counter()
        self._after_first_step: float | None = None
        self._last_draw = float("-inf")  # the first update is drawn at once
        self._last_len = 0
        self._seen_so_far = 0
        self._values: dict = {}   # name -> [sum of value * steps, steps]

    @property
    def seen(self) -> int:
        """The step reached by the last update."""
        return self._seen_so_far

    def _averaged(self, name: str) -> bool:
        if self.stateful_metrics is not None:
            return name not in self.stateful_metrics
        return name in (self.stateless_metrics or ())

    def _record(self, current: int, values, finalize: bool) -> None:
        items = values.items() if isinstance(values, dict) else values
        for name, v in items:
            if hasattr(v, "numpy") and not isinstance(v, np.ndarray):
                v = v.numpy()
            if isinstance(v, np.ndarray):
                v = v.item() if v.size == 1 else float(np.mean(v))
            numeric = isinstance(v, (int, float, np.integer, np.floating)) \
                and not isinstance(v, bool)
            if not numeric or not self._averaged(name) or finalize:
                self._values[name] = [v, 1]
                continue
            # The first update of a bar with no target may repeat the step: count >= 1.
            steps = max(current - self._seen_so_far, 1)
            acc = self._values.get(name)
            if acc is None or not isinstance(acc[0], (int, float, np.number)):
                self._values[name] = [v * steps, steps]
            else:
                acc[0] += v * steps
                acc[1] += steps

    def _time_per_unit(self, current: int, now: float) -> float:
        # Keras's estimate: the first step (tracing, warm-up) is left out once there are more.
        if not current:
            return 0.0
        if self._after_first_step is not None and current > 1:
            per = (now - self._after_first_step) / (current - 1)
        else:
            per = (now - self._start) / current
        if current == 1:
            self._after_first_step = now
        return per

    def _bar(self, current: int) -> str:
        if self.target is None or self.target <= 0:
            return f"{current}/Unknown"
        digits = int(math.log10(self.target)) + 1
        frac = min(current / self.target, 1.0)
        filled = int(self.width * frac)
        if current < self.target:
            bar = "=" * max(filled - 1, 0) + ">" + "." * (self.width - max(filled, 1))
        else:
            bar = "=" * self.width
        return f"{current:{digits}d}/{self.target} [{bar}]"

    def _metrics(self) -> str:
        out = ""
        for name, (total, count) in self._values.items():
            if isinstance(total, (int, float, np.number)) and not isinstance(total, bool):
                out += f" - {name}: {_fmt_value(total / max(count, 1))}"
            else:
                out += f" - {name}: {total}"
        return out

    def update(self, current: int, values: Any = None, finalize: bool | None = None) -> None:
        """Record progress ``current`` with ``values`` and redraw if due.

        Args:
            current: the step reached (1-based: the number of steps done).
            values: ``(name, value_for_last_step)`` pairs (or a dict).
            finalize: whether this is the last update (writes the final line); default
                ``current >= target``.
        """
        if finalize is None:
            finalize = self.target is not None and current >= self.target
        self._record(current, values or (), finalize)
        self._seen_so_far = current
        now = time.perf_counter()
        per = self._time_per_unit(current, now)
        if self.verbose == 0 or (not finalize and (
                not self.dynamic or now - self._last_draw < self.interval)):
            return
        self._last_draw = now
        elapsed = now - self._start
        if finalize:
            info = f" - {elapsed:.0f}s {_fmt_per_unit(per, self.unit_name)}"
        elif self.target and current:
            info = f" - ETA: {_fmt_eta(per * (self.target - current))}"
        else:
            info = f" - {elapsed:.0f}s"
        line = self._bar(current) + info + self._metrics()
        if self.dynamic:
            pad = max(self._last_len - len(line), 0)
            self.stream.write("\r" + line + " " * pad + ("\n" if finalize else ""))
            self._last_len = len(line)
        else:
            self.stream.write(line + "\n")
        self.stream.flush()

    def add(self, n: int, values: Any = None) -> None:
        """Advance by ``n`` steps (``update(seen + n, values)``)."""
        self.update(self._seen_so_far + n, values)

    def finish(self, values: Any = None, prefix: str = "") -> None:
        """Write the final line at the current step (``prefix`` starts it when the bar is
        not redrawn in place, e.g. ``'Epoch 3/10 - '``)."""
        if self.target is None:   # now known: the final line shows a full bar
            self.target = self._seen_so_far
        if prefix and not self.dynamic and self.verbose:
            self.stream.write(prefix)
        self.update(self._seen_so_far, values, finalize=True)
