"""``Model.compile``/``fit``/``evaluate`` under a ``MultiWorkerMirroredStrategy``.

``Model`` calls the hooks below through ``strategy.extended`` (one attribute read when no
strategy is set); the loops themselves are unchanged.

- **Feeders.** At the start of ``fit`` every model variable is broadcast from rank 0
  (after checking that all ranks hold the same structure), then the inputs are split:
  arrays by global batch (one permutation per epoch, drawn from rank 0's seed; each rank
  takes its contiguous part of every batch), datasets through
  ``experimental_distribute_dataset``.
- **Steps.** Each training batch sets this rank's weight, its share of the global batch;
  the optimizer's all-reduce (``MultiWorkerMirroredStrategy._reduce_gradients``) returns
  ``sum(weight_r * grad_r) / sum(weight_r)``. A rank whose data ran out keeps taking
  part in the others' steps with no data (zero weight) and applies the same update, until
  a step in which no rank had data ends the epoch everywhere.
- **Logs.** At the end of each epoch (and of ``evaluate``) metric states are summed over
  the ranks and the logs recomputed from them; non-trainable float weights (batch
  normalisation statistics) become their mean over the ranks. Per-batch logs on rank 0
  are its own running values.
- **Callbacks.** Rank 0 runs them (the others run none), *alone*: collectives are off on
  rank 0 while they run, so a callback may evaluate or save freely. Afterwards every rank
  takes rank 0's ``stop_training`` and learning rate (after ``on_train_begin``, each
  ``on_epoch_begin``/``on_epoch_end``, and each ``on_train_batch_end`` when rank 0 has
  batch-level callbacks) and, at the end, its weights.
"""
from __future__ import annotations

import json

import numpy as np

from layerkit import callbacks as _callbacks
from layerkit._core.nest import flatten
from layerkit._core.tensor import Tensor
from layerkit.models import _data

__all__ = ["broadcast_values"]


# ---- broadcasting values ------------------------------------------------------------------------
def _check_same_structure(world, variables: list, what: str, root: int = 0) -> None:
    sig = [[getattr(v, "name", "?"), list(np.shape(v._v)), np.asarray(v._v).dtype.str]
           for v in variables]
    theirs = json.loads(world.bcast_bytes(json.dumps(sig).encode(), what, root))
    if theirs == sig:
        return
    for i, (a, b) in enumerate(zip(theirs, sig)):
        if a[1:] != b[1:]:
            raise ValueError(
                f"rank {world.rank} and rank {root} hold different models: variable {i} is "
                f"'{b[0]}' {tuple(b[1])} {np.dtype(b[2])} here but '{a[0]}' {tuple(a[1])} "
                f"{np.dtype(a[2])} on rank {root} ({what}); every rank must build the same "
                f"model")
    if len(theirs) != len(sig):
        raise ValueError(f"rank {world.rank} holds {len(sig)} variables but rank {root} holds "
                         f"{len(theirs)} ({what}); every rank must build the same model")


def broadcast_values(world, variables: list, root: int = 0,
                     what: str = "broadcasting variables") -> None:
    """Give every rank ``root``'s values of ``variables`` (in place, one call per dtype).

    Raises:
        ValueError: the ranks' variables differ in number, shapes or dtypes.
    """
    if world.size == 1:
        return
    _check_same_structure(world, variables, what, root)
    by_dtype: dict = {}
    for v in variables:
        by_dtype.setdefault(np.asarray(v._v).dtype, []).append(v)
    for dtype, vs in by_dtype.items():
        buf = np.concatenate([np.asarray(v._v).reshape(-1) for v in vs]) if world.rank == root \
            else np.empty(sum(int(np.size(v._v)) for v in vs), dtype)
        world.bcast(buf, what, root)
        if world.rank == root:
            continue
        off = 0
        for v in vs:
            n = int(np.size(v._v))
            _set_value(v, buf[off:off + n].reshape(np.shape(v._v)))
            off += n


def _set_value(var, value: np.ndarray) -> None:
    """Write ``value`` into a variable, keeping its buffer (optimizer groups view it)."""
    v = var._v
    if type(v) is np.ndarray and v.flags.writeable:
        np.copyto(v, value, casting="unsafe")
    else:
        var._v = np.array(value, dtype=np.asarray(v).dtype)


# ---- compile -----------------------------------------------------------------------------------
def on_compile(strategy, model) -> None:
    """The model's optimizer all-reduces with ``strategy`` and averages (Keras's rule)."""
    opt = model.optimizer
    if opt is not None:
        opt._distribute = strategy
        opt._distribute_mean = True


# ---- fit state and feeders -----------------------------------------------------------------------
class FitState:
    """What the gradient all-reduce needs from ``fit``: this step's weight and, for
    steps without data, the last step's variables."""

    def __init__(self, nominal: float) -> None:
        self.nominal = nominal      # a full share of the global batch (rows)
        self.weight = 1.0
        self.layout = None          # (optimizer, [(variable, record), ...])
        # around each step: take rank 0's callback decisions (when rank 0 has such hooks)
        self.begin_sync = self.end_sync = None


def _rows(batch) -> int:
    for leaf in flatten(batch):
        shape = leaf.shape if isinstance(leaf, Tensor) else np.shape(leaf)
        return int(shape[0]) if len(shape) else 1
    return 0


class _RankArrayFeeder(_data.ArrayFeeder):
    """An ArrayFeeder whose batches are this rank's contiguous part of each global batch
    (None when that part is empty)."""

    def _batch(self, idx):
        if isinstance(idx, slice):
            start, stop, _ = idx.indices(self.n)
            off, size = _share(stop - start, self._ranks, self._rank)
            part = slice(start + off, start + off + size)
        else:
            off, size = _share(len(idx), self._ranks, self._rank)
            part = idx[off:off + size]
        if size == 0:
            return None
        return _data.ArrayFeeder._batch(self, part)


def _share(total: int, num: int, index: int) -> tuple:
    base, extra = divmod(total, num)
    return index * base + min(index, extra), base + (1 if index < extra else 0)


class _Feeder:
    """This rank's batches (skipping empty ones); for training, with the step protocol."""

    def __init__(self, inner, strategy=None, model=None) -> None:
        self.inner = inner
        self.strategy = strategy   # set for the training feeder
        self.model = model

    @property
    def num_batches(self):
        return self.inner.num_batches

    @property
    def exhausted(self) -> bool:
        return getattr(self.inner, "exhausted", False)

    def get_state(self) -> dict:   # BackupAndRestore: this rank's position
        return self.inner.get_state()

    def set_state(self, state: dict) -> None:
        self.inner.set_state(state)

    def epoch(self, done: int = 0):
        fit = self.strategy._fit if self.strategy is not None else None
        for batch in self.inner.epoch(done):
            if batch is None:
                continue
            if fit is not None:
                n = _rows(batch)
                if n == 0:
                    continue
                fit.weight = n / fit.nominal
            yield batch
        if fit is not None:
            # out of data: take part in the other ranks' remaining steps
            while _step_without_data(self.strategy, self.model):
                pass


def _step_without_data(strategy, model) -> bool:
    """One gradient all-reduce with no data; applies the others' update. False once no
    rank had data (the epoch is over everywhere)."""
    fit = strategy._fit
    opt = model.optimizer
    if fit.layout is None:
        variables = list(model._step_info()[0])
        if not variables:
            raise RuntimeError(
                f"fit: rank {strategy._world.rank} has no training data for the first step "
                f"and its model is not built yet, so it cannot take part in the other ranks' "
                f"steps; give every rank data (more examples, or files/row groups, than "
                f"ranks) or build the model before fit")
        if not opt.built:
            opt.build(variables)
        fit.layout = (opt, [(v, opt._records[id(v)]) for v in variables])
    opt, pairs = fit.layout
    layout = tuple((np.shape(v._v), np.asarray(v._v).dtype) for v, _ in pairs)
    plan = strategy._reducer.plan_for(layout)
    if fit.begin_sync is not None:   # the ranks with data run on_train_batch_begin now
        fit.begin_sync()
    results, control = strategy._reducer.reduce(None, 0.0, has_data=False, plan=plan,
                                                what="the gradient all-reduce (no data here)",
                                                average=True)
    if control[1] == 0:
        return False
    opt._update_work([(v, r, rec) for (v, rec), r in zip(pairs, results)])
    for v, _ in pairs:   # the weights' constraints, as Optimizer.apply does after updating
        if v.constraint is not None:
            v.assign(v.constraint(v))
    if fit.end_sync is not None:   # ... and on_train_batch_end
        fit.end_sync()
        return not model.stop_training
    return True


def _distribute_feeder(strategy, feeder, what: str):
    w = strategy._world
    if isinstance(feeder, _data.ArrayFeeder):
        # one permutation per epoch on every rank: rank 0's generator state
        if feeder._rng is not None:
            state = json.dumps(feeder._rng.get_state()).encode()
            feeder._rng.set_state(json.loads(
                w.bcast_bytes(state, f"{what}: agreeing on the shuffle seed")))
        feeder.__class__ = _RankArrayFeeder
        feeder._rank, feeder._ranks = w.rank, w.size
        return feeder, feeder.batch_size / w.size
    from layerkit.data import Dataset
    from layerkit.distribute.input import DistributedDataset

    data = feeder.data
    if isinstance(data, Dataset):
        data = strategy.experimental_distribute_dataset(data)
    if isinstance(data, DistributedDataset):
        # this rank's plain pipeline: fit keeps the ranks in step itself (_Feeder)
        feeder.data = data._dataset
        if data.global_batch_size:
            return feeder, data.global_batch_size / w.size
    return feeder, 1.0   # unknown global batch: weights are the rows themselves


def fit_feeders(strategy, model, feeder, val_feeder):
    """At the start of ``fit``: broadcast the model from rank 0, split the inputs, and
    start the fit state. Returns the feeders to use."""
    w = strategy._world
    if w.size == 1 or w.solo:
        return feeder, val_feeder
    broadcast_values(w, list(model.weights), 0, "fit: broadcasting the model from rank 0")
    feeder, nominal = _distribute_feeder(strategy, feeder, "fit")
    strategy._fit = FitState(nominal)
    if val_feeder is not None:
        val_feeder = _Feeder(_distribute_feeder(strategy, val_feeder, "fit (validation)")[0])
    return _Feeder(feeder, strategy, model), val_feeder


def evaluate_feeder(strategy, feeder):
    """``evaluate``'s input split across the ranks."""
    w = strategy._world
    if w.size == 1 or w.solo:
        return feeder
    return _Feeder(_distribute_feeder(strategy, feeder, "evaluate")[0])


# ---- logs ------------------------------------------------------------------------------------
def reduce_logs(strategy, model, logs: dict, epoch_end: bool = False) -> dict:
    """``logs`` with the metrics recomputed from states summed over the ranks; at the end
    of a training epoch also the non-trainable float weights averaged over the ranks."""
    w = strategy._world
    if w.size == 1 or w.solo:
        return logs
    metric_vars = list({id(v): v for m in model.metrics for v in m.variables}.values())
    stats = [v for v in model.non_trainable_weights if np.asarray(v._v).dtype.kind == "f"] \
        if epoch_end else []
    ref = None
    if stats:
        ref = np.concatenate([np.asarray(v._v, np.float64).reshape(-1) for v in stats])
        w.bcast(ref, "averaging non-trainable weights over the ranks")
    parts = [np.asarray(v._v, np.float64).reshape(-1) for v in metric_vars]
    if stats:
        parts.append(np.concatenate([np.asarray(v._v, np.float64).reshape(-1) for v in stats])
                     - ref)
    buf = np.concatenate(parts) if parts else np.zeros(0)
    w.allreduce(buf, "reducing metrics over the ranks")
    off = 0
    saved = []
    for v in metric_vars:
        n = int(np.size(v._v))
        saved.append(v._v)
        v._v = buf[off:off + n].reshape(np.shape(v._v)).astype(np.asarray(v._v).dtype)
        off += n
    try:
        reduced = model.get_metrics_result()
    finally:
        for v, old in zip(metric_vars, saved):
            v._v = old
    if stats:
        mean = ref + buf[off:] / w.size
        pos = 0
        for v in stats:
            n = int(np.size(v._v))
            _set_value(v, mean[pos:pos + n].reshape(np.shape(v._v)))
            pos += n
    return {**logs, **reduced}


# ---- callbacks ---------------------------------------------------------------------------------


def _overrides(cb, hook: str) -> bool:
    fn = getattr(cb, hook, None)
    return fn is not None and getattr(fn, "__func__", fn) is not getattr(_callbacks.Callback,
                                                                          hook)


class _Alone(_callbacks.Callback):
    """First in rank 0's list: collectives are off while rank 0's callbacks run."""

    needs_batch_logs = False

    def __init__(self, world, begin: bool, end: bool) -> None:
        super().__init__()
        self.world = world
        if begin:
            self.on_train_batch_begin = self._enter
        if end:
            self.on_train_batch_end = self._enter

    def _enter(self, *args) -> None:
        self.world.solo = True

    on_train_begin = on_train_end = on_epoch_begin = on_epoch_end = _enter
    on_test_begin = on_test_end = _enter


class _Sync(_callbacks.Callback):
    """Last in every rank's list: collectives back on, then rank 0's decisions shared."""

    needs_batch_logs = False

    def __init__(self, strategy, model, begin: bool, end: bool) -> None:
        super().__init__()
        self.strategy = strategy
        self.world = strategy._world
        self.model_ = model
        if begin:
            self.on_train_batch_begin = self._share
        if end:
            self.on_train_batch_end = self._share

    def _leave(self, *args) -> None:
        self.world.solo = False

    on_test_begin = on_test_end = _leave

    def _share(self, *args) -> None:
        """Every rank takes rank 0's ``stop_training`` and learning rate."""
        self.world.solo = False
        model = self.model_
        opt = model.optimizer
        lr_var = opt._lr_var if opt is not None and opt._lr_fn is None else None
        control = np.array([float(bool(model.stop_training)),
                            float(lr_var._v) if lr_var is not None else np.nan])
        self.world.bcast(control, "sharing rank 0's callback decisions")
        model.stop_training = bool(control[0])
        if lr_var is not None and float(lr_var._v) != control[1]:
            opt.learning_rate = float(control[1])

    on_train_begin = on_epoch_begin = on_epoch_end = _share

    def on_train_end(self, logs=None) -> None:
        self._leave()
        broadcast_values(self.world, list(self.model_.weights), 0,
                         "fit: sharing rank 0's final weights")
        self.strategy._fit = None


def callbacks(strategy, model, cbs: list, verbose: int, mode: str) -> tuple:
    """``(callbacks, verbose)`` for this rank: rank 0's between the two internal ones,
    none (and no progress bar) elsewhere."""
    w = strategy._world
    if w.size == 1 or w.solo:
        return cbs, verbose
    if mode == "predict":
        return (cbs, verbose) if w.rank == 0 else ([], 0)
    mine = cbs if w.rank == 0 else []
    begin = end = False
    if mode == "train":
        # which per-batch hooks rank 0's callbacks have: around those, every rank takes
        # rank 0's decisions (one broadcast per step each)
        flags = np.array([float(any(_overrides(cb, h) for cb in mine))
                          for h in ("on_train_batch_begin", "on_train_batch_end")])
        w.bcast(flags, "fit: agreeing on callback synchronisation")
        begin, end = bool(flags[0]), bool(flags[1])
    first = [_Alone(w, begin, end)] if w.rank == 0 else []
    sync = _Sync(strategy, model, begin, end)
    fit = strategy._fit
    if mode == "train" and fit is not None:
        fit.begin_sync = sync._share if begin else None
        fit.end_sync = sync._share if end else None
    return first + mine + [sync], (verbose if w.rank == 0 else 0)
