"""Training callbacks: hooks called by ``Model.fit``/``evaluate``/``predict``.

``fit`` always adds a :class:`History` (returned by ``fit``) and, when ``verbose`` is
not 0, a :class:`ProgbarLogger`. Callbacks see ``self.model`` and ``self.params``
(``{'epochs', 'steps', 'verbose'}``) and may set ``self.model.stop_training = True``.
"""
from __future__ import annotations

import csv
import math
import os
import sys
import time

import numpy as np

__all__ = ["Callback", "CallbackList", "History", "ProgbarLogger", "Progbar", "EarlyStopping",
           "ModelCheckpoint", "LearningRateScheduler", "CSVLogger", "TerminateOnNaN",
           "LambdaCallback", "TensorBoard"]


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


# ---- History ---------------------------------------------------------------------------
class History(Callback):
    """Records the epoch logs: ``history.history['loss']`` is a list with one float per epoch.

    ``fit`` returns it; ``history.epoch`` lists the epoch indices.
    """

    def __init__(self) -> None:
        super().__init__()
        self.history: dict[str, list] = {}
        self.epoch: list[int] = []

    def on_train_begin(self, logs=None) -> None:
        self.epoch = []

    def on_epoch_end(self, epoch, logs=None) -> None:
        self.epoch.append(epoch)
        for k, v in (logs or {}).items():
            self.history.setdefault(k, []).append(v)
        if self.model is not None:
            self.model.history = self

    def plot(self, path: str = "training_curves.png", title: str | None = None) -> str:
        """Write the training curves (one panel per metric, ``val_*`` overlaid) as a PNG.

        Args:
            path: the output file.
            title: optional figure title.

        Returns:
            The path written.

        Raises:
            ImportError: matplotlib is not installed (it is the optional ``examples`` extra).
            ValueError: there is no history yet.
        """
        try:
            import matplotlib

            matplotlib.use("Agg", force=False)
            import matplotlib.pyplot as plt
        except ImportError as e:
            raise ImportError(
                "History.plot needs matplotlib, which is not installed. Install it with "
                "`pip install matplotlib` (or `pip install layerkit[examples]`)."
            ) from e
        names = [k for k in self.history if not k.startswith("val_")]
        names += [k[4:] for k in self.history if k.startswith("val_") and k[4:] not in names]
        if not names:
            raise ValueError("History.plot: nothing to plot (fit has not recorded any epoch)")
        fig, axes = plt.subplots(1, len(names), figsize=(4.5 * len(names), 3.6), squeeze=False)
        epochs = [e + 1 for e in self.epoch] or None
        for ax, name in zip(axes[0], names):
            for key, style in ((name, "-o"), ("val_" + name, "--s")):
                if key in self.history:
                    ys = self.history[key]
                    xs = epochs if epochs and len(epochs) == len(ys) else range(1, len(ys) + 1)
                    ax.plot(list(xs), ys, style, markersize=3, label=key)
            ax.set_title(name)
            ax.set_xlabel("epoch")
            ax.grid(alpha=0.3)
            ax.legend()
        if title:
            fig.suptitle(title)
        fig.tight_layout()
        fig.savefig(path, dpi=100)
        plt.close(fig)
        return path


# ---- progress bar ------------------------------------------------------------------------
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


class ProgbarLogger(Callback):
    """Shows a progress bar per epoch with steps/total, elapsed time, ETA and metrics.

    Redrawn in place on a terminal (at most 20 times a second); when the output is not a
    terminal, one line per epoch (``Epoch 3/10 - 32/32 - 1s 4ms/step - loss: ...``).
    ``fit(verbose=2)`` also prints one line per epoch. Added automatically by ``fit``
    when ``verbose`` is not 0.

    Args:
        stream: where to write (default ``sys.stdout`` at the time of training).
        interval: minimum seconds between redraws on a terminal.
    """

    def __init__(self, stream=None, interval: float = 0.05) -> None:
        super().__init__()
        self.stream = stream
        self.interval = interval
        self._bar: Progbar | None = None
        self._mode = "train"

    def _stream(self):
        return self.stream or sys.stdout

    def set_params(self, params: dict) -> None:
        super().set_params(params)
        # Only a bar redrawn on a terminal shows running values during the epoch.
        isatty = getattr(self._stream(), "isatty", None)
        self.needs_batch_logs = params.get("verbose", 1) == 1 and (
            bool(isatty and isatty()) or "ipykernel" in sys.modules)

    def _new_bar(self, target) -> Progbar:
        dynamic = None if self.params.get("verbose", 1) == 1 else False
        return Progbar(target, stream=self._stream(), interval=self.interval, dynamic=dynamic)

    def on_epoch_begin(self, epoch, logs=None) -> None:
        self._epoch = epoch
        self._bar = self._new_bar(self.params.get("steps"))
        epochs = self.params.get("epochs", 1)
        if self._bar.dynamic:
            self._stream().write(f"Epoch {epoch + 1}/{epochs}\n")

    def on_train_batch_end(self, batch, logs=None) -> None:
        if self._bar is not None:
            self._bar.update(batch + 1, logs)

    def on_epoch_end(self, epoch, logs=None) -> None:
        if self._bar is None:
            return
        prefix = f"Epoch {epoch + 1}/{self.params.get('epochs', 1)} - "
        self._bar.finish(logs, prefix=prefix)
        self._bar = None

    def on_test_begin(self, logs=None) -> None:
        # A standalone evaluate() gets its own bar; validation inside fit stays silent.
        if self._bar is None and self.params.get("mode") == "evaluate":
            self._bar = self._new_bar(self.params.get("steps"))

    def on_test_batch_end(self, batch, logs=None) -> None:
        if self._bar is not None and self.params.get("mode") == "evaluate":
            self._bar.update(batch + 1, logs)

    def on_test_end(self, logs=None) -> None:
        if self._bar is not None and self.params.get("mode") == "evaluate":
            self._bar.finish(logs)
            self._bar = None

    def on_predict_begin(self, logs=None) -> None:
        if self.params.get("mode") == "predict":
            self._bar = self._new_bar(self.params.get("steps"))

    def on_predict_batch_end(self, batch, logs=None) -> None:
        if self._bar is not None:
            self._bar.update(batch + 1)

    def on_predict_end(self, logs=None) -> None:
        if self._bar is not None:
            self._bar.finish()
            self._bar = None


# ---- early stopping and checkpoints -------------------------------------------------------
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


class EarlyStopping(Callback, _Monitor):
    """Stop training when ``monitor`` has stopped improving for ``patience`` epochs.

    Args:
        monitor: the log key to watch (default ``'val_loss'``).
        min_delta: the smallest change that counts as an improvement.
        patience: epochs without improvement before stopping.
        verbose: 1 prints a message when stopping/restoring.
        mode: ``'min'``, ``'max'`` or ``'auto'`` (from the name: losses and errors are
            minimised, accuracy/auc/precision/recall maximised).
        baseline: training stops if the value does not beat this within ``patience``.
        restore_best_weights: at the end, restore the weights of the best epoch.
        start_from_epoch: epochs to wait before monitoring starts.
    """

    def __init__(self, monitor: str = "val_loss", min_delta: float = 0.0, patience: int = 0,
                 verbose: int = 0, mode: str = "auto", baseline: float | None = None,
                 restore_best_weights: bool = False, start_from_epoch: int = 0) -> None:
        super().__init__()
        self._init_monitor(monitor, mode, min_delta)
        self.patience = patience
        self.verbose = verbose
        self.baseline = baseline
        self.restore_best_weights = restore_best_weights
        self.start_from_epoch = start_from_epoch
        self.best_weights = None

    def on_train_begin(self, logs=None) -> None:
        self.wait = 0
        self.stopped_epoch = 0
        self.best = None
        self.best_weights = None
        self.best_epoch = 0

    def on_epoch_end(self, epoch, logs=None) -> None:
        current = self._monitor_value(logs)
        if current is None or epoch < self.start_from_epoch:
            return
        if self.restore_best_weights and self.best_weights is None:
            self.best_weights = self.model.get_weights()
        self.wait += 1
        if self._better(current, self.best):
            self.best = current
            self.best_epoch = epoch
            if self.restore_best_weights:
                self.best_weights = self.model.get_weights()
            if self.baseline is None or self._better(current, self.baseline):
                self.wait = 0
            return
        if self.wait >= self.patience and epoch > 0:
            self.stopped_epoch = epoch
            self.model.stop_training = True

    def on_train_end(self, logs=None) -> None:
        if self.stopped_epoch > 0 and self.verbose > 0:
            print(f"Epoch {self.stopped_epoch + 1}: early stopping")
        if self.restore_best_weights and self.best_weights is not None:
            if self.verbose > 0:
                print(f"Restoring model weights from the end of the best epoch: "
                      f"{self.best_epoch + 1}.")
            self.model.set_weights(self.best_weights)


class ModelCheckpoint(Callback, _Monitor):
    """Save the model's weights (``model.save_weights``) every epoch or every N batches.

    layerkit has no whole-model file format yet, so every save writes weights (a
    ``lk.Checkpoint`` file); ``save_weights_only`` is accepted for compatibility.

    Args:
        filepath: the path, may contain ``{epoch}`` (1-based) and log keys, e.g.
            ``'ckpt/weights-{epoch:02d}-{val_loss:.2f}.lkw'``.
        monitor: the log key for ``save_best_only``.
        verbose: 1 prints a line per save.
        save_best_only: only save when ``monitor`` improves.
        save_weights_only: accepted; weights are always what is saved.
        mode: ``'auto'``, ``'min'`` or ``'max'`` (as in :class:`EarlyStopping`).
        save_freq: ``'epoch'`` or an integer number of batches.
        initial_value_threshold: the value to beat for the first best save.
    """

    def __init__(self, filepath: str, monitor: str = "val_loss", verbose: int = 0,
                 save_best_only: bool = False, save_weights_only: bool = True,
                 mode: str = "auto", save_freq="epoch",
                 initial_value_threshold: float | None = None) -> None:
        super().__init__()
        self._init_monitor(monitor, mode, 0.0)
        self.filepath = os.fspath(filepath)
        self.verbose = verbose
        self.save_best_only = save_best_only
        self.save_weights_only = save_weights_only
        if save_freq != "epoch" and not (isinstance(save_freq, int) and save_freq > 0):
            raise ValueError(f"ModelCheckpoint: save_freq must be 'epoch' or a positive int. "
                             f"Received: save_freq={save_freq!r}")
        self.save_freq = save_freq
        self.best = initial_value_threshold
        self._batches = 0
        self._epoch = 0

    def on_train_begin(self, logs=None) -> None:
        self._batches = 0

    def on_epoch_begin(self, epoch, logs=None) -> None:
        self._epoch = epoch

    def on_train_batch_end(self, batch, logs=None) -> None:
        if self.save_freq == "epoch":
            return
        self._batches += 1
        if self._batches % self.save_freq == 0:
            self._save(self._epoch, logs, batch)

    def on_epoch_end(self, epoch, logs=None) -> None:
        if self.save_freq == "epoch":
            self._save(epoch, logs)

    def _save(self, epoch: int, logs, batch: int | None = None) -> None:
        logs = dict(logs or {})
        try:
            path = self.filepath.format(epoch=epoch + 1, batch=batch, **logs)
        except KeyError as e:
            raise KeyError(
                f"ModelCheckpoint: filepath {self.filepath!r} refers to {e}, which is not in "
                f"the logs (available: {sorted(logs)})"
            ) from None
        if self.save_best_only:
            current = self._monitor_value(logs)
            if current is None or not self._better(current, self.best):
                return
            if self.verbose > 0:
                print(f"Epoch {epoch + 1}: {self.monitor} improved from {self.best} to "
                      f"{current:.5f}, saving model to {path}")
            self.best = current
        elif self.verbose > 0:
            print(f"Epoch {epoch + 1}: saving model to {path}")
        d = os.path.dirname(path)
        if d:
            os.makedirs(d, exist_ok=True)
        self.model.save_weights(path)


# ---- learning rate, logging, NaN guard -----------------------------------------------------
class LearningRateScheduler(Callback):
    """Set the optimizer's learning rate at the start of each epoch from ``schedule``.

    Args:
        schedule: ``fn(epoch, lr) -> new_lr`` (or ``fn(epoch)``), epoch 0-based.
        verbose: 1 prints the new rate.
    """

    def __init__(self, schedule, verbose: int = 0) -> None:
        super().__init__()
        self.schedule = schedule
        self.verbose = verbose

    def on_epoch_begin(self, epoch, logs=None) -> None:
        opt = self.model.optimizer
        lr = float(opt._current_lr())
        try:
            new = self.schedule(epoch, lr)
        except TypeError:
            new = self.schedule(epoch)
        new = float(new)
        if not math.isfinite(new):
            raise ValueError(f"LearningRateScheduler: schedule returned {new} at epoch {epoch}")
        opt.learning_rate = new
        if self.verbose > 0:
            print(f"Epoch {epoch + 1}: LearningRateScheduler setting learning rate to {new}.")

    def on_epoch_end(self, epoch, logs=None) -> None:
        if logs is not None:
            logs["learning_rate"] = float(self.model.optimizer._current_lr())


class CSVLogger(Callback):
    """Write one CSV row per epoch (``epoch`` then the log keys, sorted).

    Args:
        filename: the CSV file.
        separator: the field separator.
        append: append to an existing file instead of overwriting it.
    """

    def __init__(self, filename: str, separator: str = ",", append: bool = False) -> None:
        super().__init__()
        self.filename = os.fspath(filename)
        self.sep = separator
        self.append = append
        self._file = None
        self._writer = None
        self.keys = None

    def on_train_begin(self, logs=None) -> None:
        header_needed = True
        if self.append and os.path.exists(self.filename):
            with open(self.filename) as f:
                header_needed = not f.read(1)
        self._file = open(self.filename, "a" if self.append else "w", newline="")
        self._header_needed = header_needed
        self.keys = None

    def on_epoch_end(self, epoch, logs=None) -> None:
        logs = logs or {}
        if self.keys is None:
            self.keys = sorted(logs)
            self._writer = csv.DictWriter(self._file, fieldnames=["epoch"] + self.keys,
                                          delimiter=self.sep, extrasaction="ignore")
            if self._header_needed:
                self._writer.writeheader()
        row = {"epoch": epoch}
        row.update({k: logs.get(k, "NA") for k in self.keys})
        self._writer.writerow(row)
        self._file.flush()

    def on_train_end(self, logs=None) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


class TerminateOnNaN(Callback):
    """Stop training when the loss becomes NaN or infinite, naming the batch and step.

    Args:
        raise_error: raise ``RuntimeError`` instead of stopping quietly.
    """

    def __init__(self, raise_error: bool = False) -> None:
        super().__init__()
        self.raise_error = raise_error
        self._epoch = 0
        self.stopped_step = None

    def on_epoch_begin(self, epoch, logs=None) -> None:
        self._epoch = epoch

    def on_train_batch_end(self, batch, logs=None) -> None:
        loss = (logs or {}).get("loss")
        if loss is None or math.isfinite(loss):
            return
        step = int(self.model.optimizer.iterations._v) if self.model is not None and \
            getattr(self.model, "optimizer", None) is not None else None
        self.stopped_step = step
        msg = (f"Batch {batch} of epoch {self._epoch + 1} (optimizer step {step}): invalid "
               f"loss {loss}, terminating training")
        if self.raise_error:
            raise RuntimeError(msg)
        print(msg)
        self.model.stop_training = True


class LambdaCallback(Callback):
    """A callback from plain functions: ``LambdaCallback(on_epoch_end=lambda e, logs: ...)``."""

    def __init__(self, **hooks) -> None:
        super().__init__()
        for name, fn in hooks.items():
            if name not in _HOOKS:
                raise ValueError(f"LambdaCallback: unknown hook {name!r}; expected one of "
                                 f"{_HOOKS}")
            setattr(self, name, fn)


# Kept in its own module (below the base class it subclasses); exported from here as in Keras.
from layerkit.callbacks_tensorboard import TensorBoard  # noqa: E402
