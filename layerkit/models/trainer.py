"""``Trainer``: the training half of ``lk.Model`` (``compile``/``fit``/``evaluate``/
``predict``), a mixin as in Keras 3 (``keras/src/trainers/trainer.py``).

Training is ``compile`` then ``fit``. The loop calls the overridable
``train_step(data)``; the default one is Keras 3's::

    x, y, sample_weight = unpack_x_y_sample_weight(data)
    with lk.GradientTape() as tape:
        y_pred = self(x, training=True)
        loss = self.compute_loss(x=x, y=y, y_pred=y_pred, sample_weight=sample_weight)
    grads = tape.gradient(loss, self.trainable_variables)
    self.optimizer.apply_gradients(zip(grads, self.trainable_variables))
    return self.compute_metrics(x, y, y_pred, sample_weight)

It is a pure function of (variables, optimizer state, batch). Unless
``compile(run_eagerly=True)``, ``fit``/``train_on_batch`` run ``train_step`` (the default
or an override) through ``lk.function``, and ``evaluate``/``predict`` do the same with
``test_step``/``predict_step``: the first batch of each shape traces the step into a graph
(so the last, smaller batch of an epoch traces once more), later batches replay it. The
optimizer update and the metric updates are stateful graph nodes that run their NumPy
kernels on every call; Variables are read live. A step that cannot be a graph (library or
user code reading tensor values outside ops) runs eagerly with an ``EagerFallbackWarning``
naming the line; Python control flow on a tensor's value inside a step raises
``TracingError`` with the line, as in TensorFlow (use ``run_eagerly=True`` for such steps).
The traced functions are rebuilt after ``compile`` or when the trainable variables or the
optimizer change between ``fit`` calls. Keras 2 style steps work too:
``self.compiled_loss(y, y_pred, regularization_losses=self.losses)`` and
``self.compiled_metrics.update_state(y, y_pred)``; so does tf.keras 2's
``loss = self.compute_loss(...)`` ... ``return self.compute_metrics(...)``: a step that
calls ``compute_loss`` but never updates the ``loss`` metric gets that loss recorded.
As in Keras, a batch without targets reaches the steps as ``x`` itself, not ``(x,)``.

Array data (NumPy arrays, Tensors, lists/dicts of them) is fed by
:class:`~layerkit.models._data.ArrayFeeder`: one permutation per epoch and one ``take``
per leaf and batch, without building a Dataset (the fast path ``fit`` takes for arrays);
any other iterable goes through :class:`~layerkit.models._data.IterableFeeder`.
"""
from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from layerkit import callbacks as _callbacks
from layerkit import metrics as _metrics
from layerkit import optimizers as _optimizers
from layerkit._core import context, distribution
from layerkit._core.nest import flatten, pack_sequence_as
from layerkit._core.op import wrap
from layerkit._core.tensor import Tensor
from layerkit.autodiff.function import function as _function
from layerkit.autodiff.tape import GradientTape
from layerkit.layers.layer import Layer, gather_losses
from layerkit.models import _compile, _data, _fit_state
from layerkit.utils.batch_utils import unpack_x_y_sample_weight

__all__ = ["Trainer"]

if TYPE_CHECKING:   # for type checkers the mixin is a Layer (it runs only in Model)
    _Base = Layer
else:
    _Base = object


def _batch_size(x) -> int:
    # Shapes only (Tensor.shape): a traced step must not read values here.
    if isinstance(x, Tensor):
        shape = x.shape
        return int(shape[0]) if shape else 1
    for leaf in flatten(x):
        s = leaf.shape if isinstance(leaf, Tensor) else np.shape(leaf)
        if s:
            return int(s[0])
    return 1


_DEFERRED: Any = object()  # returned by the default train_step when fit reads no batch logs


def _floats(logs: dict) -> dict:
    out = {}
    for k, v in logs.items():
        if isinstance(v, dict):
            out.update(_floats(v))
        else:
            out[k] = _compile.to_float(v)
    return out


def _concat(batches: list):
    first = batches[0]
    flat = [flatten(b) for b in batches]
    cols = []
    for i in range(len(flat[0])):
        parts = [np.asarray(f[i]._v if isinstance(f[i], Tensor) else f[i]) for f in flat]
        cols.append(np.concatenate(parts, axis=0) if parts[0].ndim else np.stack(parts))
    return pack_sequence_as(first, cols) if isinstance(first, (list, tuple, dict)) else cols[0]


class Trainer(_Base):
    """The training loops of :class:`~layerkit.models.Model` (a mixin: ``Model`` is
    ``class Model(Trainer, Layer)``, as in Keras 3).

    It holds ``compile``, ``fit``, ``evaluate``, ``predict``, ``train_on_batch``,
    ``test_on_batch``, ``predict_on_batch``, the overridable steps (``train_step``,
    ``test_step``, ``predict_step``), the metrics and loss plumbing, and the compile
    config used by whole-model saving. It relies on the Layer half for ``__call__``,
    variables, ``losses`` and sublayers.

    Examples:
        >>> import numpy as np
        >>> import layerkit as lk
        >>> model = lk.Sequential([lk.Input(shape=(3,)), lk.layers.Dense(1)])
        >>> isinstance(model, lk.models.trainer.Trainer)
        True
        >>> model.compile(optimizer="sgd", loss="mse")
        >>> x, y = np.ones((8, 3), "float32"), np.zeros((8, 1), "float32")
        >>> len(model.fit(x, y, epochs=2, verbose=0).history["loss"])
        2
    """

    # Instance attributes written through ``__dict__`` (declared for type checkers).
    _step_cache: Any
    _defer_logs: bool
    _step_functions: dict
    _step_functions_key: Any
    _distribute_strategy: Any

    def _init_training_state(self) -> None:
        d = self.__dict__
        d.update(optimizer=None, compiled=False, stop_training=False, history=None,
                 run_eagerly=False, _fit_state=None, _compile_loss=None, _compile_metrics=None,
                 _loss_tracker=None, _implicit_build=False, _step_cache=None,
                 _defer_logs=False, _step_functions={}, _step_functions_key=None,
                 _distribute_strategy=distribution.scope)

    # ---- compile -----------------------------------------------------------------------------
    def compile(self, optimizer: str | dict[str, Any] | _optimizers.Optimizer = "adam",
                loss: Any = None, metrics: Any = None, loss_weights: Any = None,
                weighted_metrics: Any = None, run_eagerly: bool = False,
                steps_per_execution: int = 1,
                jit_compile: bool | str = "auto", auto_scale_loss: bool = True) -> None:
        """Configure training.

        Args:
            optimizer: an optimizer or its name (``'adam'``, ``'sgd'``, ``'rmsprop'``, ...).
            loss: a loss, its name, a function ``fn(y_true, y_pred)``, or a list/dict with
                one per output. None: only losses added with ``add_loss`` are minimised.
            metrics: a list of metrics/names (``'accuracy'`` picks binary, categorical or
                sparse categorical accuracy from the shapes), or a list/dict per output.
            loss_weights: scalar weights per output (list or dict).
            weighted_metrics: metrics that use ``sample_weight``.
            run_eagerly: run ``train_step``/``test_step``/``predict_step`` as plain Python
                (for debugging, or steps with data-dependent Python control flow);
                by default they run as ``lk.function`` graphs.
            steps_per_execution: accepted for compatibility.
            jit_compile: accepted for compatibility.
            auto_scale_loss: accepted for compatibility.

        Raises:
            ValueError: unknown optimizer, loss or metric names.
        """
        self.optimizer = _optimizers.get(optimizer)
        names = self.output_names
        if self._graph is not None and len(self._graph.flat_outputs) == 1:
            names = ["output"]
        if isinstance(loss, str) or (loss is not None and not isinstance(loss, (list, tuple,
                                                                                dict))):
            from layerkit import losses as _losses

            _losses.get(loss)  # unknown names fail at compile time, not mid-fit
        self._compile_loss = _compile.CompileLoss(loss, loss_weights, names) \
            if loss is not None else None
        for spec in (metrics, weighted_metrics):
            for ident in flatten(spec) if spec is not None else []:
                if isinstance(ident, str) and ident not in ("accuracy", "acc"):
                    _metrics.get(ident)
        self._compile_metrics = _compile.CompileMetrics(metrics, weighted_metrics, names, loss) \
            if (metrics or weighted_metrics) else None
        self._loss_tracker = _LossTracker(name="loss")
        self.run_eagerly = bool(run_eagerly)
        self.compiled = True
        self.__dict__["_compile_config"] = _compile_snapshot(dict(
            loss=loss, loss_weights=loss_weights, metrics=metrics,
            weighted_metrics=weighted_metrics, run_eagerly=self.run_eagerly,
            steps_per_execution=steps_per_execution, jit_compile=jit_compile))
        self.__dict__["_step_cache"] = None
        self.__dict__["_step_functions"] = {}
        # lk.distribute: a model compiled (or created) in a strategy's scope trains with it
        strategy = distribution.scope or self._distribute_strategy
        self.__dict__["_distribute_strategy"] = strategy
        if strategy is not None:
            strategy.extended._compile(self)

    @property
    def compiled_loss(self) -> Callable[..., Any]:
        """Keras 2 style: ``compiled_loss(y, y_pred, sample_weight=None,
        regularization_losses=None)`` returns the total loss and records it in the
        ``loss`` metric (so custom steps written this way log it)."""
        return self._call_compiled_loss

    def _call_compiled_loss(self, y, y_pred, sample_weight=None, regularization_losses=None):
        if self._compile_loss is None:
            raise ValueError(f"model '{self.name}' was compiled without a loss")
        total = self._compile_loss(y, y_pred, sample_weight, regularization_losses)
        self._loss_tracker.update_state(total, sample_weight=_batch_size(y_pred))
        return total

    @property
    def compiled_metrics(self) -> _compile.CompileMetrics:
        """The compiled metrics (``update_state(y, y_pred, sample_weight)``)."""
        metrics = self._compile_metrics
        if metrics is None:
            metrics = self.__dict__["_compile_metrics"] = _compile.CompileMetrics(None)
        return metrics

    @property
    def metrics(self) -> list:
        """The loss tracker, the compiled metrics and Metric objects set as attributes."""
        out: list = []
        if self._loss_tracker is not None:
            out.append(self._loss_tracker)
        if self._compile_loss is not None:
            out.extend(self._compile_loss.metrics)
        if self._compile_metrics is not None:
            out.append(self._compile_metrics)
        for v in self.__dict__.values():
            if isinstance(v, _metrics.Metric) and v not in out:
                out.append(v)
        return out

    @property
    def metrics_names(self) -> list:
        names: list = []
        for m in self.metrics:
            if isinstance(m, _compile.CompileMetrics):
                names.extend(x.name for x in m.metrics)
            else:
                names.append(m.name)
        return names

    def reset_metrics(self) -> None:
        """Reset every metric in :attr:`metrics`."""
        for m in self.metrics:
            m.reset_state()

    def get_metrics_result(self) -> dict:
        """``{name: float}`` for every metric (compiled metrics flattened).

        Inside a traced step the values stay Tensors (graph outputs, read live on every
        call); ``fit`` turns them into floats.
        """
        conv = _same if context.RECORDERS and context.tracing() else _compile.to_float
        out = {}
        for m in self.metrics:
            r = m.result()
            if isinstance(r, dict):
                out.update({k: conv(v) for k, v in r.items()})
            else:
                out[m.name] = conv(r)
        return out

    # ---- the steps ----------------------------------------------------------------------------
    def compute_loss(self, x: Any = None, y: Any = None, y_pred: Any = None,
                     sample_weight: Any = None,
                     training: bool = True) -> Tensor:
        """The compiled loss of ``(y, y_pred)`` plus the model's ``losses`` (regularizers).

        Raises:
            ValueError: there is nothing to minimise (no compiled loss and no add_loss).
        """
        total = None
        if self._compile_loss is not None:
            total = self._compile_loss(y, y_pred, sample_weight)
        if type(self).losses is Layer.losses and self.built:
            extra = gather_losses(self._step_info()[1])  # no tree walk per step
        else:
            extra = self.losses
        if extra:
            for r in extra:
                total = r if total is None else total + r
        if total is None:
            raise ValueError(
                f"model '{self.name}': no loss to compute. Pass loss=... to compile() or add "
                f"losses with add_loss() in call()"
            )
        # For a custom step that never updates the `loss` metric (see _run_step).
        self.__dict__["_step_loss"] = (total, y_pred)
        return total

    def compute_metrics(self, x: Any, y: Any, y_pred: Any, sample_weight: Any = None) -> dict:
        """Update the compiled metrics and return :meth:`get_metrics_result`."""
        if self._compile_metrics is not None:
            self._compile_metrics.update_state(y, y_pred, sample_weight)
        return self.get_metrics_result()

    def _step_info(self) -> tuple:
        """(trainable variables, [self] + submodules), built once per fit/compile:
        walking the layer tree costs tens of microseconds per step."""
        cache = self._step_cache
        if cache is None:
            cache = (self.trainable_variables, [self] + self.submodules)
            self.__dict__["_step_cache"] = cache
        return cache

    def train_step(self, data: Any) -> dict:
        """One optimisation step on a batch; returns the logs (override to customise)."""
        x, y, sample_weight = unpack_x_y_sample_weight(data)
        with GradientTape() as tape:
            y_pred = self(x, training=True)
            loss = self.compute_loss(x=x, y=y, y_pred=y_pred, sample_weight=sample_weight,
                                     training=True)
        variables = self._step_info()[0]
        grads = tape.gradient(loss, variables)
        self.optimizer.apply(grads, variables)  # (then the weights' constraints)
        self._loss_tracker.update_state(loss, sample_weight=_batch_size(x))
        if self._defer_logs:
            # fit needs no per-batch logs (no batch callbacks): skip building them.
            if self._compile_metrics is not None:
                self._compile_metrics.update_state(y, y_pred, sample_weight)
            return _DEFERRED
        return self.compute_metrics(x, y, y_pred, sample_weight)

    def test_step(self, data: Any) -> dict:
        """One evaluation step on a batch; returns the logs (override to customise)."""
        x, y, sample_weight = unpack_x_y_sample_weight(data)
        y_pred = self(x, training=False)
        loss = self.compute_loss(x=x, y=y, y_pred=y_pred, sample_weight=sample_weight,
                                 training=False)
        self._loss_tracker.update_state(loss, sample_weight=_batch_size(x))
        return self.compute_metrics(x, y, y_pred, sample_weight)

    def predict_step(self, data: Any) -> Any:
        """The model's output on a batch (override to customise)."""
        x, _, _ = unpack_x_y_sample_weight(data)
        return self(x, training=False)

    # ---- the steps as graphs -------------------------------------------------------------------
    def _step_function(self, kind: str):
        """The callable that runs one ``kind`` step (``'train'``, ``'test'``, ``'predict'``)
        on a batch: the step method itself with ``run_eagerly``, else its lk.function."""
        if self.run_eagerly:
            step = getattr(self, f"{kind}_step")
            if kind == "predict" or getattr(type(self), f"{kind}_step") is getattr(Trainer,
                                                                                  f"{kind}_step"):
                return step  # the default steps update the loss metric themselves
            return lambda batch: _run_step(self, kind, batch)
        fns = self._step_functions
        fn = fns.get(kind)
        if fn is None:
            fn = fns[kind] = _traced_step(self, kind)
        if kind == "train":
            return lambda batch: fn(batch, self._defer_logs)
        return fn

    def make_train_function(self) -> Callable[..., Any]:
        """The callable ``fit`` runs on each batch: ``fn(batch) -> logs``.

        Without ``run_eagerly`` it is ``train_step`` traced by ``lk.function`` (one trace
        per batch shape), else ``train_step`` itself. Unlike Keras's, it takes one
        batch (a tuple ``(x, y[, sample_weight])`` of Tensors), not an iterator.
        """
        return self._step_function("train")

    def make_test_function(self) -> Callable[..., Any]:
        """The callable ``evaluate`` runs on each batch (see :meth:`make_train_function`)."""
        return self._step_function("test")

    def make_predict_function(self) -> Callable[..., Any]:
        """The callable ``predict`` runs on each batch (see :meth:`make_train_function`)."""
        return self._step_function("predict")

    def _step_functions_key_now(self) -> tuple:
        return id(self.optimizer), tuple(id(v) for v in self.trainable_variables)

    def _check_step_functions(self) -> None:
        """At the start of fit/evaluate/predict: drop the traced steps if the trainable
        variables or the optimizer changed since the last of those calls ended (a trace
        holds both). Within one call nothing changes them (Keras's rule too)."""
        if self._step_functions and self._step_functions_key != self._step_functions_key_now():
            self.__dict__["_step_functions"] = {}

    def _remember_step_functions(self) -> None:
        self.__dict__["_step_functions_key"] = self._step_functions_key_now()

    # ---- loops ---------------------------------------------------------------------------------
    def _assert_compiled(self, what: str) -> None:
        if not self.compiled:
            raise RuntimeError(f"model '{self.name}' must be compiled before {what}(); call "
                               f"model.compile(optimizer=..., loss=...) first")

    def _callback_list(self, callbacks, verbose, epochs, steps, mode, add_history=False):
        cbs = list(callbacks or [])
        if self._distribute_strategy is not None:   # lk.distribute: rank 0's callbacks
            cbs, verbose = self._distribute_strategy.extended._callbacks(self, cbs, verbose,
                                                                         mode)
        history = None
        if add_history:
            history = _callbacks.History()
            cbs.append(history)
        if verbose and not any(isinstance(c, _callbacks.ProgbarLogger) for c in cbs):
            cbs.append(_callbacks.ProgbarLogger())
        cl = _callbacks.CallbackList(cbs, model=self, epochs=epochs, steps=steps,
                                     verbose=verbose, mode=mode)
        return cl, history

    def fit(self, x: Any = None, y: Any = None, batch_size: int | None = None, epochs: int = 1,
            verbose: str | int = "auto", callbacks: Sequence[_callbacks.Callback] | None = None,
            validation_split: float = 0.0,
            validation_data: Any = None, shuffle: bool | str = True,
            class_weight: dict | None = None,
            sample_weight: Any = None, initial_epoch: int = 0, steps_per_epoch: int | None = None,
            validation_steps: int | None = None, validation_batch_size: int | None = None,
            validation_freq: int = 1) -> _callbacks.History:
        """Train for ``epochs`` epochs; returns a :class:`~layerkit.callbacks.History`.

        Args:
            x: arrays, Tensors, a list/dict of them, or a ``lk.data.Dataset`` (or any
                iterable) yielding ``(x, y)`` or ``(x, y, sample_weight)`` batches.
            y: targets (arrays) when ``x`` is arrays.
            batch_size: samples per step for arrays (default 32).
            epochs: the index of the last epoch (training runs from ``initial_epoch``).
            verbose: ``'auto'``/1 progress bar, 2 one line per epoch, 0 silent.
            callbacks: a list of :class:`~layerkit.callbacks.Callback`.
            validation_split: fraction of the array data (the last samples) held out.
            validation_data: ``(x_val, y_val[, sample_weight])`` or a dataset.
            shuffle: shuffle array data each epoch (``'batch'``: batch order only); seeded
                from ``lk.random``'s global generator.
            class_weight: ``{class_index: weight}`` turned into sample weights (classes
                left out get 1.0; keys must be non-negative class indices of the model's
                output; single-output models with class-index or one-hot targets only).
            sample_weight: per-sample weights for array data.
            initial_epoch: the epoch to start from (for resuming).
            steps_per_epoch: batches per epoch (needed for an infinite dataset).
            validation_steps: as in Keras.
            validation_batch_size: as in Keras.
            validation_freq: as in Keras.

        Raises:
            RuntimeError: the model is not compiled.
            TypeError: an argument of the wrong type (``epochs=2.5``, a string ``x``, a
                class_weight that is not a dict of integer keys).
            ValueError: an argument out of range (``steps_per_epoch=0``,
                ``validation_split=1.5``, ``verbose='loud'``, a negative class_weight
                key), empty data, mismatched sample counts, labels/loss shape mismatch.
        """
        self._assert_compiled("fit")
        verbose = _data.check_verbose(verbose, "fit")
        epochs = _data.check_count(epochs, "epochs", "fit", minimum=0)
        initial_epoch = _data.check_count(initial_epoch, "initial_epoch", "fit", minimum=0)
        validation_freq = _data.check_count(validation_freq, "validation_freq", "fit")
        for name, value in (("batch_size", batch_size), ("steps_per_epoch", steps_per_epoch),
                            ("validation_steps", validation_steps),
                            ("validation_batch_size", validation_batch_size)):
            _data.check_count(value, name, "fit", optional=True)
        _data.check_fit_options(validation_split, shuffle)
        cw = None
        if class_weight is not None:
            cw = _class_weight_table(class_weight, _output_classes(self), "fit")
        if validation_split and validation_data is None:
            if not _data.is_array_like(x):
                raise ValueError("fit: validation_split is only supported for array inputs; "
                                 "pass validation_data=... with a dataset")
            whole = _data.ArrayFeeder(x, y, sample_weight, batch_size, False, None, "fit")
            train_part, val_part = whole.split(validation_split)
            x, y, sample_weight = unpack_x_y_sample_weight(train_part)
            validation_data = val_part
        feeder = _data.make_feeder(x, y, sample_weight, batch_size, shuffle, steps_per_epoch,
                                   "fit")
        val_feeder = None
        if validation_data is not None:
            if _data.is_array_like(validation_data) and isinstance(validation_data,
                                                                   (tuple, list)):
                vx, vy, vsw = unpack_x_y_sample_weight(validation_data)
                val_feeder = _data.make_feeder(vx, vy, vsw,
                                               validation_batch_size or batch_size, False,
                                               validation_steps, "fit (validation)")
            else:
                val_feeder = _data.make_feeder(validation_data, None, None,
                                               validation_batch_size or batch_size, False,
                                               validation_steps, "fit (validation)")
        dist = self._distribute_strategy
        if dist is not None:   # lk.distribute: this rank's part of the data
            feeder, val_feeder = dist.extended._fit_feeders(self, feeder, val_feeder)
        steps = feeder.num_batches
        # The loop position, read and restored by callbacks (BackupAndRestore) through
        # model._fit_state while fit runs.
        state = _fit_state.FitState(self, feeder, initial_epoch)
        self.__dict__["_fit_state"] = state
        cbl, history = self._callback_list(callbacks, verbose, epochs, steps, "train",
                                           add_history=True)
        self.stop_training = False
        self.__dict__["_step_cache"] = None
        begin = cbl._active["on_train_batch_begin"]
        end = cbl._active["on_train_batch_end"]
        try:
            cbl.on_train_begin()
        except BaseException:
            self.__dict__["_fit_state"] = None
            raise
        logs: dict = {}
        # The default train_step builds its logs only when a batch callback reads them.
        self.__dict__["_defer_logs"] = not any(
            getattr(getattr(fn, "__self__", None), "needs_batch_logs", True) for fn in end)
        self._check_step_functions()
        try:
            with dist.scope() if dist is not None else contextlib.nullcontext():
                logs = self._fit_epochs(state, val_feeder, cbl, cw, epochs, validation_freq,
                                        begin, end)
        finally:
            self.__dict__["_defer_logs"] = False
            self.__dict__["_fit_state"] = None
            self._remember_step_functions()
        cbl.on_train_end(logs)
        self.history = history
        return history

    def _fit_epochs(self, state, val_feeder, cbl, cw, epochs, validation_freq, begin,
                    end) -> dict:
        train_step = self._step_function("train")
        feeder, first_epoch = state.feeder, state.epoch
        logs: dict = {}
        for epoch in range(first_epoch, epochs):
            state.epoch, done = epoch, state.step   # done > 0: a resumed epoch
            if not done:
                self.reset_metrics()
            cbl.on_epoch_begin(epoch)
            step = done - 1
            for step, batch in enumerate(feeder.epoch(done), start=done):
                if cw is not None:
                    batch = _with_class_weight(batch, cw)
                for fn in begin:
                    fn(step, {})
                logs = train_step(batch)
                state.step = step + 1
                if end:
                    batch_logs = {} if logs is _DEFERRED else _floats(logs)
                    for fn in end:
                        fn(step, batch_logs)
                if self.stop_training:
                    break
            if step < 0:
                if epoch == first_epoch:
                    raise ValueError(
                        "fit: the training data produced no batches (an empty dataset?); "
                        "expected at least one batch per epoch"
                    )
                break
            if step < done:   # resumed after the epoch's last batch: its logs were saved
                logs = state.resumed_epoch_logs()
            elif logs is _DEFERRED:
                logs = self.get_metrics_result()
            epoch_logs = dict(_floats(logs))
            if self._distribute_strategy is not None:   # lk.distribute: over all ranks
                epoch_logs = self._distribute_strategy.extended._reduce_logs(self, epoch_logs,
                                                                             True)
            state.epoch, state.step = epoch + 1, 0
            if val_feeder is not None and (epoch + 1) % validation_freq == 0:
                val_logs = self._evaluate_loop(val_feeder, cbl, internal=True)
                epoch_logs.update({"val_" + k: v for k, v in val_logs.items()})
            cbl.on_epoch_end(epoch, epoch_logs)
            logs = epoch_logs
            if self.stop_training or getattr(feeder, "exhausted", False):
                break
        return logs

    def _evaluate_loop(self, feeder, cbl, internal: bool = False) -> dict:
        self.reset_metrics()
        cbl.on_test_begin()
        begin = cbl._active["on_test_batch_begin"]
        end = cbl._active["on_test_batch_end"]
        test_step = self._step_function("test")
        logs: dict = {}
        step = -1
        for step, batch in enumerate(feeder.epoch()):
            for fn in begin:
                fn(step, {})
            logs = test_step(batch)
            if end:
                logs = _floats(logs)
                for fn in end:
                    fn(step, logs)
        if step < 0 and not internal:
            raise ValueError("evaluate: the data produced no batches (an empty dataset?)")
        logs = _floats(logs)
        if self._distribute_strategy is not None:   # lk.distribute: over all ranks
            logs = self._distribute_strategy.extended._reduce_logs(self, logs)
        cbl.on_test_end(logs)
        return logs

    def evaluate(self, x: Any = None, y: Any = None, batch_size: int | None = None,
                 verbose: str | int = "auto",
                 sample_weight: Any = None, steps: int | None = None,
                 callbacks: Sequence[_callbacks.Callback] | None = None,
                 return_dict: bool = False) -> Any:
        """The loss and metrics on ``x``/``y``.

        Returns:
            With ``return_dict``: ``{name: value}``. Otherwise the loss alone if there
            are no metrics, else a list in :attr:`metrics_names` order.
        """
        self._assert_compiled("evaluate")
        verbose = _data.check_verbose(verbose, "evaluate")
        _data.check_count(steps, "steps", "evaluate", optional=True)
        feeder = _data.make_feeder(x, y, sample_weight, batch_size, False, steps, "evaluate")
        if self._distribute_strategy is not None:   # lk.distribute: this rank's part
            feeder = self._distribute_strategy.extended._evaluate_feeder(feeder)
        cbl, _ = self._callback_list(callbacks, verbose, 1, feeder.num_batches, "evaluate")
        self._check_step_functions()
        try:
            logs = self._evaluate_loop(feeder, cbl)
        finally:
            self._remember_step_functions()
        if return_dict:
            return logs
        return self._ordered(logs)

    def _ordered(self, logs: dict):
        names = [n for n in self.metrics_names if n in logs]
        names += [k for k in logs if k not in names]
        values = [logs[n] for n in names]
        return values[0] if len(values) == 1 else values

    def predict(self, x: Any, batch_size: int | None = None, verbose: str | int = "auto",
                steps: int | None = None,
                callbacks: Sequence[_callbacks.Callback] | None = None) -> Any:
        """The model's outputs for ``x``, batch by batch, concatenated into NumPy arrays.

        Args:
            x: arrays, Tensors, a list/dict of them, or a dataset (targets are ignored).
            batch_size: samples per batch for arrays (default 32).
            verbose: ``'auto'``/1 progress bar, 0 silent.
            steps: optional number of batches.

        Returns:
            An ndarray (or the output structure of ndarrays).
        """
        verbose = _data.check_verbose(verbose, "predict")
        _data.check_count(steps, "steps", "predict", optional=True)
        feeder = _data.make_feeder(x, None, None, batch_size, False, steps, "predict")
        cbl, _ = self._callback_list(callbacks, verbose, 1, feeder.num_batches, "predict")
        cbl.on_predict_begin()
        outs = []
        begin = cbl._active["on_predict_batch_begin"]
        end = cbl._active["on_predict_batch_end"]
        self._check_step_functions()
        predict_step = self._step_function("predict")
        try:
            for step, batch in enumerate(feeder.epoch()):
                for fn in begin:
                    fn(step, {})
                out = predict_step(batch)
                outs.append(out)
                for fn in end:
                    fn(step, {"outputs": out})
        finally:
            self._remember_step_functions()
        cbl.on_predict_end()
        if not outs:
            raise ValueError("predict: the input produced no batches (empty data?)")
        return _concat(outs)

    def train_on_batch(self, x: Any, y: Any = None, sample_weight: Any = None,
                       class_weight: dict | None = None,
                       return_dict: bool = False) -> Any:
        """One training step on one batch; the metrics are reset first, so the logs are
        this batch's (as in Keras).

        Returns:
            The logs as for :meth:`evaluate` (a dict with ``return_dict=True``).
        """
        self._assert_compiled("train_on_batch")
        self.reset_metrics()
        batch = _data.ArrayFeeder(x, y, sample_weight, _batch_size(x) or 1, False, None,
                                  "train_on_batch")._batch(slice(None))
        if class_weight is not None:
            cw = _class_weight_table(class_weight, _output_classes(self), "train_on_batch")
            batch = _with_class_weight(batch, cw, "train_on_batch")
        logs = _floats(self._step_function("train")(batch))
        return logs if return_dict else self._ordered(logs)

    def test_on_batch(self, x: Any, y: Any = None, sample_weight: Any = None,
                      return_dict: bool = False) -> Any:
        """One evaluation step on one batch (metrics are reset first)."""
        self._assert_compiled("test_on_batch")
        self.reset_metrics()
        batch = _data.ArrayFeeder(x, y, sample_weight, _batch_size(x) or 1, False, None,
                                  "test_on_batch")._batch(slice(None))
        logs = _floats(self._step_function("test")(batch))
        return logs if return_dict else self._ordered(logs)

    def predict_on_batch(self, x: Any) -> Any:
        """The model's output on one batch, as NumPy."""
        out = self.predict_step((wrap(np.asarray(x)) if not isinstance(x, (Tensor, dict, list,
                                                                             tuple)) else x,))
        return _concat([out])

    def get_compile_config(self) -> dict | None:
        """The arguments of :meth:`compile` (serialized), or None if not compiled."""
        snapshot = self.__dict__.get("_compile_config")
        if not self.compiled or snapshot is None:
            return None
        from layerkit.saving.serialization_lib import serialize_keras_object

        raw, config = snapshot
        if config is None:  # not serializable: raise the error now, with its message
            config = serialize_keras_object(raw)
        elif '"__lambda__"' in json.dumps(config):
            import warnings

            warnings.warn(f"model '{self.name}': the loss or a metric is a Python lambda, "
                          f"saved only as a marker; the saved compile config cannot be "
                          f"loaded again", stacklevel=2)
        # the optimizer as it is now (its learning rate may have changed since compile)
        return {"optimizer": serialize_keras_object(self.optimizer), **config}

    def compile_from_config(self, config: dict) -> None:
        """Compile with :meth:`get_compile_config` output (Keras 3's too), then create
        the optimizer's variables so that a saved optimizer state can be loaded."""
        from layerkit.saving.serialization_lib import deserialize_keras_object

        kinds = {"optimizer": "optimizers", "loss": "losses", "metrics": "metrics",
                 "weighted_metrics": "metrics"}
        try:
            args = {k: deserialize_keras_object(v, kind=kinds.get(k))
                    for k, v in config.items()
                    if k in kinds or k in ("loss_weights", "run_eagerly", "steps_per_execution",
                                           "jit_compile")}
        except (ValueError, TypeError, NotImplementedError) as e:
            raise type(e)(f"model '{self.name}': cannot compile it as it was saved: {e}. "
                          f"Load it with compile=False and call compile() yourself") from e
        if args.get("optimizer") is None:
            args.pop("optimizer", None)
        if type(self).compile is not Trainer.compile:
            import warnings

            warnings.warn(f"model '{self.name}': compile() was not called while loading "
                          f"because {type(self).__name__} overrides it; call compile() "
                          f"yourself (or override compile_from_config)", stacklevel=2)
            return
        self.compile(**args)
        if self.built and self.trainable_variables:
            self.optimizer.build(self.trainable_variables)


def _compile_snapshot(args: dict) -> tuple:
    """(compile arguments, their serialized form or None): taken at compile time, since
    compiling renames metric objects (``out_auc``) that the user passed."""
    import warnings

    from layerkit.saving.serialization_lib import serialize_keras_object

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # (get_compile_config warns about lambdas)
            return args, serialize_keras_object(args)
    except (TypeError, ValueError, NotImplementedError):
        return args, None


def _class_weight_table(class_weight, n_classes: int | None, what: str) -> np.ndarray:
    """``class_weight`` as an array indexed by class (1.0 for classes it leaves out, as
    in Keras 3).

    Raises:
        TypeError: not a dict, or a key that is not an integer class index.
        ValueError: an empty dict, a negative key, a key beyond the model's ``n_classes``
            (when known), or a weight that is not a finite number.
    """
    if not isinstance(class_weight, dict):
        raise TypeError(f"{what}: class_weight must be a dict {{class index: weight}}, "
                        f"received {type(class_weight).__name__}: {class_weight!r:.80}")
    if not class_weight:
        raise ValueError(f"{what}: class_weight is empty; expected {{class index: weight}}")
    for k, w in class_weight.items():
        if isinstance(k, (bool, np.bool_)) or not isinstance(k, (int, np.integer)):
            raise TypeError(f"{what}: class_weight keys must be integer class indices, "
                            f"received the key {k!r} ({type(k).__name__})")
        if k < 0:
            raise ValueError(f"{what}: class_weight has the negative key {k}; keys are class "
                             f"indices 0, 1, ... (negative indices are not allowed)")
        if n_classes is not None and k >= n_classes:
            raise ValueError(f"{what}: class_weight has the key {k}, but there are "
                             f"{n_classes} classes (indices 0..{n_classes - 1})")
        if isinstance(w, (bool, np.bool_)) or not isinstance(w, (int, float, np.number)) \
                or not np.isfinite(w):
            raise ValueError(f"{what}: class_weight[{k}] must be a finite number, received "
                             f"{w!r:.60}")
    table = np.ones(int(max(class_weight)) + 1, np.float32)
    for k, w in class_weight.items():
        table[int(k)] = w
    return table


def _output_classes(model: Trainer) -> int | None:
    """The number of classes the model's single output scores, when its shape is known
    without running it and it has more than one unit (one unit may be a binary
    classifier or a regression whose rounded targets serve as classes)."""
    outputs = model.outputs
    if outputs is not None:
        outs = flatten(outputs)
        shape = outs[0].shape if len(outs) == 1 else None
    else:
        symbolic = model.__dict__.get("_symbolic") or []   # a built Sequential
        shape = symbolic[-1][1] if symbolic else None
    if not shape or not isinstance(shape[-1], int) or shape[-1] < 2:
        return None
    return shape[-1]


def _with_class_weight(batch: tuple, cw: np.ndarray, what: str = "fit") -> tuple:
    """``batch`` with sample weights from the class weights ``cw`` (times any given
    sample weights). Labels are one-hot rows (argmax) or class indices (rounded, as
    Keras does for float targets); a class beyond ``cw`` gets weight 1."""
    x, y, sw = unpack_x_y_sample_weight(batch)
    if y is None:
        raise ValueError(f"{what}: class_weight needs targets y")
    if isinstance(y, (list, tuple, dict)):
        raise ValueError(
            f"{what}: class_weight is only supported for models with a single output; "
            f"received targets for {len(y)} outputs. Pass sample_weight with one array per "
            f"output instead")
    yv = np.asarray(y._v if isinstance(y, Tensor) else y)
    if yv.ndim > 2:
        raise ValueError(f"{what}: class_weight is not supported for targets with 3 or more "
                         f"dimensions; received y of shape {yv.shape}. Pass sample_weight "
                         f"instead")
    if yv.ndim == 2 and yv.shape[-1] > 1:
        if len(cw) > yv.shape[-1]:
            raise ValueError(f"{what}: class_weight has the key {len(cw) - 1}, but the "
                             f"one-hot targets have {yv.shape[-1]} classes (indices "
                             f"0..{yv.shape[-1] - 1})")
        labels = np.argmax(yv, axis=-1)
    else:
        labels = np.round(yv.reshape(yv.shape[0])).astype(np.int64)
    known = (labels >= 0) & (labels < len(cw))
    w = np.where(known, cw[np.where(known, labels, 0)], np.float32(1.0)).astype(np.float32)
    if sw is not None:
        w = w * np.asarray(sw._v if isinstance(sw, Tensor) else sw).reshape(w.shape)
    return (x, y, wrap(w))


class _LossTracker(_metrics.Mean):
    """The ``loss`` metric; notes whether a step updated it (see :func:`_run_step`)."""

    touched = False


def _tracker_update(self, values, sample_weight=None) -> None:
    self.touched = True  # plain Python: runs while a step is traced, too
    _metrics.Mean.update_state(self, values, sample_weight)


_tracker_update._lk_graph_aware = True
_LossTracker.update_state = _tracker_update


def _run_step(model: Trainer, kind: str, data):
    """``model.<kind>_step(data)``, then, if the step called ``compute_loss`` but never
    updated the ``loss`` metric (a custom step ending with ``compute_metrics``, as in
    tf.keras 2 where ``compute_loss`` updated it), that loss goes into the metric and a
    stale ``loss`` entry in the logs is replaced by the updated mean."""
    tracker = model._loss_tracker
    d = model.__dict__
    d["_step_loss"] = None
    if tracker is not None:
        tracker.touched = False
    logs = getattr(model, f"{kind}_step")(data)
    pending = d["_step_loss"]
    d["_step_loss"] = None
    if pending is None or tracker is None or tracker.touched:
        return logs
    loss, y_pred = pending
    tracker.update_state(loss, sample_weight=_batch_size(y_pred))
    if isinstance(logs, dict) and "loss" in logs and logs["loss"] is not loss:
        logs = {**logs, "loss": tracker.result()}
    return logs


def _same(v):
    return v


def _traced_step(model: Trainer, kind: str):
    """``model.<kind>_step`` as an lk.function (looked up on every trace, so an
    overriding method is traced the same way). The train step takes fit's
    ``defer_logs`` flag as a Python argument: each value has its own trace."""
    if kind == "train":
        def train_step(data, defer_logs):
            model.__dict__["_defer_logs"] = defer_logs
            return _run_step(model, "train", data)
        return _function(train_step)
    if kind == "test":
        def test_step(data):
            return _run_step(model, "test", data)
        return _function(test_step)

    def predict_step(data):
        return model.predict_step(data)
    return _function(predict_step)
