"""Strategies: the default (one process) and ``MultiWorkerMirroredStrategy`` (MPI).

TensorFlow's names and semantics, one replica per process: ``strategy.run(fn, args)``
calls ``fn`` on this rank's values; ``strategy.reduce``/``gather`` combine them across
ranks; inside ``strategy.scope()`` trainable variables are broadcast from rank 0 when
they are created, models compiled there train data-parallel in ``fit``, and optimizers
created there all-reduce gradients in ``apply_gradients``.
"""
from __future__ import annotations

import contextlib
import enum
import zlib
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from layerkit._core import distribution
from layerkit._core.nest import flatten
from layerkit._core.nest import pack_sequence_as as pack_like
from layerkit._core.op import wrap
from layerkit._core.tensor import Tensor
from layerkit.distribute import _mpi
from layerkit.distribute import input as _input
from layerkit.distribute._reduce import Reducer

if TYPE_CHECKING:
    from layerkit.data.dataset import Dataset

__all__ = ["ReduceOp", "CommunicationOptions", "Strategy", "MultiWorkerMirroredStrategy",
           "ReplicaContext", "StrategyExtended", "get_strategy", "has_strategy",
           "in_cross_replica_context", "get_replica_context", "allreduce",
           "broadcast_variables"]


class ReduceOp(enum.Enum):
    """How values are combined across replicas (``'SUM'``/``'MEAN'`` strings work too)."""

    SUM = "SUM"
    MEAN = "MEAN"

    @classmethod
    def of(cls, op: ReduceOp | str) -> ReduceOp:
        if isinstance(op, ReduceOp):
            return op
        if isinstance(op, str) and op.upper() in ("SUM", "MEAN"):
            return cls(op.upper())
        raise ValueError(f"reduce_op must be lk.distribute.ReduceOp.SUM or .MEAN (or 'sum'/"
                         f"'mean'), received {op!r}")


class CommunicationOptions:
    """Collective settings (tf.distribute.experimental.CommunicationOptions).

    Args:
        bytes_per_pack: bucket size for fusing small gradients into one all-reduce
            (0: layerkit's default, 16 MiB); gradients of 4 MiB or more go alone.
        timeout_seconds: a collective that has not completed after this long aborts the
            whole job with a message (None: the ``LAYERKIT_DISTRIBUTE_TIMEOUT``
            environment variable, else 300 s). A rank that raises or dies ends the job at
            once; the timeout bounds hangs (a rank looping, or running other code).
        implementation: accepted for compatibility (MPI is the implementation).
    """

    def __init__(self, bytes_per_pack: int = 0, timeout_seconds: float | None = None,
                 implementation: object = None) -> None:
        if not isinstance(bytes_per_pack, int) or bytes_per_pack < 0:
            raise ValueError(f"CommunicationOptions: bytes_per_pack must be an int >= 0, "
                             f"received {bytes_per_pack!r}")
        if timeout_seconds is not None and not (isinstance(timeout_seconds, (int, float))
                                                and timeout_seconds > 0):
            raise ValueError(f"CommunicationOptions: timeout_seconds must be a positive "
                             f"number or None, received {timeout_seconds!r}")
        self.bytes_per_pack = bytes_per_pack
        self.timeout_seconds = timeout_seconds
        self.implementation = implementation


class ReplicaContext:
    """Inside ``strategy.run``: this replica's id and in-step collectives."""

    def __init__(self, strategy: Strategy) -> None:
        self.strategy = strategy

    @property
    def replica_id_in_sync_group(self) -> int:
        return self.strategy.cluster_resolver.task_id if self.strategy.cluster_resolver else 0

    @property
    def num_replicas_in_sync(self) -> int:
        return self.strategy.num_replicas_in_sync

    def all_reduce(self, reduce_op: ReduceOp | str, value: Any) -> Any:
        """``value`` (a Tensor, array or nested structure) combined over the replicas."""
        return self.strategy._allreduce_structure(value, ReduceOp.of(reduce_op))


class StrategyExtended:
    """TF's ``strategy.extended``: who saves, and (privately) the hooks ``Model`` uses."""

    def __init__(self, strategy: Strategy) -> None:
        self._strategy = strategy

    @property
    def should_checkpoint(self) -> bool:
        """Whether this rank writes checkpoints (rank 0)."""
        return distribution.writes_files() if self._strategy._world else True

    should_save_summary = should_checkpoint

    @property
    def should_init(self) -> bool:
        return True

    def _in_multi_worker_mode(self) -> bool:
        w = self._strategy._world
        return w is not None and w.size > 1

    # ---- hooks of Model (layerkit/models/model.py), see layerkit.distribute.training ----
    def _compile(self, model) -> None:
        from layerkit.distribute import training
        training.on_compile(self._strategy, model)

    def _fit_feeders(self, model, feeder, val_feeder):
        from layerkit.distribute import training
        return training.fit_feeders(self._strategy, model, feeder, val_feeder)

    def _evaluate_feeder(self, feeder):
        from layerkit.distribute import training
        return training.evaluate_feeder(self._strategy, feeder)

    def _callbacks(self, model, cbs: list, verbose: int, mode: str) -> tuple:
        from layerkit.distribute import training
        return training.callbacks(self._strategy, model, cbs, verbose, mode)

    def _reduce_logs(self, model, logs: dict, epoch_end: bool = False) -> dict:
        from layerkit.distribute import training
        return training.reduce_logs(self._strategy, model, logs, epoch_end)


class Strategy:
    """The default strategy: one process, no communication (``lk.distribute.get_strategy()``
    outside any scope). Every method exists so that code written for a strategy runs
    unchanged in one process.
    """

    _world = None

    def __init__(self) -> None:
        self.extended = StrategyExtended(self)
        self._in_run = 0

    @property
    def num_replicas_in_sync(self) -> int:
        return 1

    @property
    def cluster_resolver(self) -> _ClusterResolver | None:
        """None for the default strategy (as in TensorFlow)."""
        return None

    @contextlib.contextmanager
    def scope(self) -> Iterator[Strategy]:
        """A context in which this strategy is current (``get_strategy()``)."""
        yield self

    def run(self, fn: Callable[..., Any], args: Sequence[Any] = (),
            kwargs: dict[str, Any] | None = None, options: object = None) -> Any:
        """``fn(*args, **kwargs)`` on this replica; returns its result (this replica's
        value, which ``reduce``/``gather`` combine)."""
        self._in_run += 1
        try:
            return fn(*args, **(kwargs or {}))
        finally:
            self._in_run -= 1

    def reduce(self, reduce_op: ReduceOp | str, value: Any, axis: int | None = None) -> Any:
        """Combine a per-replica value over the replicas (and over ``axis`` first).

        Args:
            reduce_op: ``ReduceOp.SUM``/``MEAN`` or ``'sum'``/``'mean'``.
            value: a Tensor/array/number, or a nested structure of them.
            axis: None (combine elementwise across replicas) or an axis to reduce too;
                with MEAN and an axis, the mean over all elements along it on all replicas.

        Returns:
            Tensors in the structure of ``value``.
        """
        op = ReduceOp.of(reduce_op)
        if axis is None:
            return self._allreduce_structure(value, op)
        leaves = flatten(value)
        arrays = [np.asarray(leaf._v if isinstance(leaf, Tensor) else leaf) for leaf in leaves]
        sums = [np.asarray(np.sum(a, axis=axis)) for a in arrays]
        counts = np.array([a.shape[axis] for a in arrays], np.float64)
        total = self._allreduce_arrays(sums + [counts], ReduceOp.SUM)
        out = []
        for s, c, a in zip(total[:-1], total[-1], arrays):
            out.append(wrap(s if op is ReduceOp.SUM else _as_float(s / c, a.dtype)))
        return pack_like(value, out) if isinstance(value, (list, tuple, dict)) else out[0]

    def gather(self, value: Any, axis: int = 0) -> Any:
        """Concatenate a per-replica value over the replicas along ``axis`` (sizes along
        ``axis`` may differ; the other dimensions must match)."""
        leaves = flatten(value)
        out = [wrap(self._gather_array(np.asarray(leaf._v if isinstance(leaf, Tensor)
                                                  else leaf), axis)) for leaf in leaves]
        return pack_like(value, out) if isinstance(value, (list, tuple, dict)) else out[0]

    def experimental_local_results(self, value: Any) -> tuple:
        """This process's per-replica values (one replica per process)."""
        return (value,)

    def experimental_distribute_dataset(self, dataset: Dataset, options: object = None
                                        ) -> Dataset | _input.DistributedDataset:
        """``dataset`` split across the replicas (see :mod:`layerkit.distribute.input`);
        the default strategy returns it unchanged."""
        return dataset

    def distribute_datasets_from_function(
            self, dataset_fn: Callable[[_input.InputContext], Dataset], options: object = None
    ) -> Dataset | _input.DistributedDataset:
        """``dataset_fn(InputContext)``: the function builds this replica's pipeline."""
        return dataset_fn(_input.InputContext())

    # ---- collectives (the default strategy has one replica) ----
    def _allreduce_arrays(self, arrays: list, op: ReduceOp) -> list:
        return [_finish(np.array(a), np.asarray(a).dtype, op, 1) for a in arrays]

    def _gather_array(self, a: np.ndarray, axis: int) -> np.ndarray:
        return np.array(a)

    def _allreduce_structure(self, value, op: ReduceOp):
        # a plain list/tuple of leaves (the usual gradient list) skips the nest walk
        flat = type(value) in (list, tuple) and not any(
            isinstance(v, (list, tuple, dict)) for v in value)
        leaves = value if flat else flatten(value)
        arrays = [np.asarray(leaf._v if isinstance(leaf, Tensor) else leaf) for leaf in leaves]
        out = [wrap(r) for r in self._allreduce_arrays(arrays, op)]
        if flat:
            return out if type(value) is list else tuple(out)
        return pack_like(value, out) if isinstance(value, (list, tuple, dict)) else out[0]

    def __repr__(self) -> str:
        return f"<{type(self).__name__} replicas={self.num_replicas_in_sync}>"


_DEFAULT = Strategy()
_LAST: list = []   # the MultiWorkerMirroredStrategy of this process (for lk.distribute.allreduce)


class _ClusterResolver:
    """The MPI job seen as tf.distribute's cluster: ``task_type`` 'worker', ``task_id`` =
    rank."""

    def __init__(self, world) -> None:
        self.task_type = "worker"
        self.task_id = world.rank
        self._size = world.size

    def cluster_spec(self) -> dict:
        return {"worker": [f"rank:{i}" for i in range(self._size)]}

    def num_accelerators(self, *args, **kwargs) -> dict:
        return {}

    def __repr__(self) -> str:
        return f"<MPI cluster worker {self.task_id} of {self._size}>"


class MultiWorkerMirroredStrategy(Strategy):
    """Synchronous data-parallel training over MPI ranks (one replica per process).

    Launch the same script on N ranks: ``mpiexec -n 4 python train.py`` or
    ``python -m layerkit.distribute.launch -n 4 train.py``. Then, as in TensorFlow::

        strategy = lk.distribute.MultiWorkerMirroredStrategy()
        with strategy.scope():
            model = make_model()                  # weights broadcast from rank 0
            model.compile("adam", "sparse_categorical_crossentropy", metrics=["accuracy"])
        model.fit(dataset, epochs=3)              # sharded, gradients all-reduced

    ``fit``: the dataset is sharded (see :mod:`layerkit.distribute.input`; arrays: each
    global batch of ``batch_size`` is split across the ranks); each step's gradients are
    the mean over the global batch (weighted by each rank's share, so exactly the
    1-process gradient of a mean loss, also for an uneven last batch); epoch metrics and
    ``History`` are reduced across ranks (metric states are summed, as TensorFlow's);
    callbacks and the progress bar run on rank 0 only, which then broadcasts
    ``stop_training`` and the learning rate after each callback phase and its weights
    after training (``EarlyStopping(restore_best_weights=True)``); files
    (``ModelCheckpoint``, ``CheckpointManager``, ``save_weights``, ``save``) are written by rank 0
    only; every rank can restore them. ``evaluate`` is collective (call it on every rank);
    ``predict`` is not (each rank predicts all of its input).

    Custom loops: ``strategy.run(step, args=(batch,))`` and an optimizer created in the
    scope, whose ``apply_gradients`` sums the gradients over the ranks (TensorFlow's
    rule: scale the loss by the global batch, e.g. with ``lk.nn.compute_average_loss``).
    An optimizer that a model was compiled with averages instead (Keras's rule).

    Args:
        cluster_resolver: must be None: MPI (``mpiexec``) defines the cluster.
        communication_options: :class:`CommunicationOptions` (bucket size, timeout).

    Raises:
        ImportError: mpi4py is not installed (``pip install 'layerkit[mpi]'``).
        ValueError: a cluster_resolver was given.
    """

    def __init__(self, cluster_resolver: None = None,
                 communication_options: CommunicationOptions | None = None) -> None:
        if cluster_resolver is not None:
            raise ValueError("MultiWorkerMirroredStrategy: cluster_resolver must be None; the "
                             "MPI launcher (mpiexec) defines the cluster")
        opts = CommunicationOptions() if communication_options is None \
            else communication_options
        if not isinstance(opts, CommunicationOptions):
            raise TypeError(f"communication_options must be lk.distribute.experimental."
                            f"CommunicationOptions, received {type(opts).__name__}")
        super().__init__()
        self._world = _mpi.world(opts.timeout_seconds)
        self._reducer = Reducer(self._world, opts.bytes_per_pack)
        self._resolver = _ClusterResolver(self._world)
        self._fit = None   # the running fit's state (layerkit.distribute.training)
        _LAST[:] = [self]

    @property
    def num_replicas_in_sync(self) -> int:
        return self._world.size

    @property
    def cluster_resolver(self) -> _ClusterResolver:
        return self._resolver

    @contextlib.contextmanager
    def scope(self) -> Iterator[Strategy]:
        """Variables created here are broadcast from rank 0; models compiled and
        optimizers created here train with this strategy."""
        previous = distribution.scope
        distribution.scope = self
        try:
            yield self
        finally:
            distribution.scope = previous

    def experimental_distribute_dataset(self, dataset: Dataset, options: object = None
                                        ) -> Dataset | _input.DistributedDataset:
        """This rank's part of ``dataset`` (see :mod:`layerkit.distribute.input`): a
        :class:`~layerkit.distribute.input.DistributedDataset` yielding this rank's
        batches (``dataset`` batched with the *global* batch size).

        Raises:
            TypeError: not an ``lk.data.Dataset``.
            ValueError: the sharding policy cannot apply (see ``shard_dataset``).
        """
        from layerkit.data import Dataset

        if isinstance(dataset, _input.DistributedDataset):
            return dataset
        if not isinstance(dataset, Dataset):
            raise TypeError(f"experimental_distribute_dataset expects an lk.data.Dataset, "
                            f"received {type(dataset).__name__}")
        w = self._world
        dataset = self._rank0_seeds(dataset)
        ds, global_batch, how = _input.shard_dataset(dataset, w.size, w.rank)
        return _input.DistributedDataset(ds, self, global_batch, how)

    def distribute_datasets_from_function(
            self, dataset_fn: Callable[[_input.InputContext], Dataset], options: object = None
    ) -> _input.DistributedDataset:
        """``dataset_fn(InputContext)`` built on every rank (it shards and batches with the
        per-replica batch size itself), wrapped so ``fit`` and checkpoints handle it."""
        w = self._world
        ctx = _input.InputContext(w.size, w.rank, w.size)
        ds = dataset_fn(ctx)
        return _input.DistributedDataset(ds, self, None, "function")

    def _rank0_seeds(self, dataset):
        w = self._world
        if w.size == 1:
            return dataset
        nodes = _input.seeded_nodes(dataset._node)
        seeds = np.array([len(nodes)] + [n.seed for n in nodes], np.int64)
        count = np.array([len(nodes)], np.int64)
        w.bcast(count, "agreeing on the input pipeline's seeds")
        if int(count[0]) != len(nodes):
            raise ValueError(f"rank {w.rank} built an input pipeline with {len(nodes)} "
                             f"seeded stages (shuffle/map) but rank 0's has {int(count[0])}: "
                             f"the ranks must build the same pipeline")
        w.bcast(seeds, "agreeing on the input pipeline's seeds")
        return _input.align_seeds(dataset, seeds[1:].tolist())

    # ---- collectives ----
    def _allreduce_arrays(self, arrays: list, op: ReduceOp) -> list:
        w = self._world
        if w.size == 1 or w.solo:
            return Strategy._allreduce_arrays(self, arrays, op)
        mean = op is ReduceOp.MEAN
        plan = self._reducer.plan(arrays)
        if plan.floats:   # the results are final as they are
            return self._reducer.reduce(arrays, fresh=True, what="strategy.reduce",
                                        average=mean, plan=plan)[0]
        # integers and bools travel as float64 (exact below 2**53) and come back as they were
        send = [a if a.dtype.kind in "fc" else a.astype(np.float64) for a in arrays]
        results, _ = self._reducer.reduce(send, fresh=True, what="strategy.reduce",
                                          average=mean)
        return [_finish(r, a.dtype, op, 1) for r, a in zip(results, arrays)]

    def _gather_array(self, a: np.ndarray, axis: int) -> np.ndarray:
        w = self._world
        if w.size == 1 or w.solo:
            return np.array(a)
        if a.ndim == 0:
            a = a.reshape(1)
        moved = np.ascontiguousarray(np.moveaxis(a, axis, 0))
        head = np.array([zlib.crc32(repr((moved.shape[1:], moved.dtype.str)).encode())],
                        np.int64)
        mine = head.copy()
        w.bcast(head, "strategy.gather")
        if head[0] != mine[0]:
            raise ValueError(f"strategy.gather: rank {w.rank}'s value has shape {a.shape} "
                             f"and dtype {a.dtype}, which do not match rank 0's in the "
                             f"dimensions other than axis {axis}")
        parts = w.allgather_bytes(moved.tobytes(), "strategy.gather")
        arrays = [np.frombuffer(p, moved.dtype).reshape((-1,) + moved.shape[1:]) for p in parts]
        return np.moveaxis(np.concatenate(arrays, axis=0), 0, axis)

    # ---- hooks called by layerkit (variables, optimizers) ----
    def _variable_created(self, var) -> None:
        """Broadcast a new trainable float variable's value from rank 0 (in ``scope()``),
        checking first that every rank is creating a variable of the same shape."""
        w = self._world
        v = var._v
        if w.size == 1 or w.solo or not var._trainable or v.dtype.kind != "f":
            return
        header = _signature(var)
        mine = header.copy()
        w.bcast(header, f"broadcasting the new variable '{var.name}' from rank 0")
        if not np.array_equal(header, mine):
            raise ValueError(
                f"rank {w.rank} created the variable '{var.name}' of shape {tuple(v.shape)} "
                f"({v.dtype}) where rank 0 created {_describe_signature(header)}: the ranks "
                f"built different models (every rank must run the same model-building code "
                f"inside strategy.scope())")
        if not (v.flags.c_contiguous and v.flags.writeable):
            v = var._v = np.array(v)
        w.bcast(v, f"broadcasting the new variable '{var.name}' from rank 0")

    def _reduce_gradients(self, optimizer, work: list) -> list:
        """The optimizer's ``[(variable, gradient, record), ...]`` with the gradients
        combined over the ranks: averaged (weighted by each rank's share of the global
        batch) in ``fit``, averaged for a compiled model's optimizer, else summed."""
        w = self._world
        if w.size == 1 or w.solo:
            return work
        fit = self._fit
        weight = fit.weight if fit is not None else 1.0
        average = fit is not None or getattr(optimizer, "_distribute_mean", False)
        results, _ = self._reducer.reduce([g for _, g, _ in work], weight,
                                          what="the gradient all-reduce", average=average)
        if fit is not None:
            fit.layout = (optimizer, [(var, rec) for var, _, rec in work])
        return [(var, r, rec) for (var, _, rec), r in zip(work, results)]


def _as_float(a, dtype) -> np.ndarray:
    """A mean's value: in ``dtype`` if that is a float type, else float32."""
    return np.asarray(a, dtype if np.dtype(dtype).kind in "fc" else np.float32)


def _finish(r: np.ndarray, dtype, op: ReduceOp, n: int) -> np.ndarray:
    """A summed array as the reduction's result: the mean divides by ``n`` (integers give
    float32; ``n`` = 1: ``r`` is already the mean); a sum keeps the input's dtype."""
    if op is ReduceOp.MEAN:
        return _as_float(r if n == 1 and r.dtype.kind in "fc" else r / n, dtype)
    return r.astype(dtype) if r.dtype != dtype else r


def _signature(var) -> np.ndarray:
    v = var._v
    dims = list(v.shape)[:8]
    head = np.full(11, -1, np.int64)
    head[0] = v.ndim
    head[1:1 + len(dims)] = dims
    head[9] = ord(v.dtype.char)
    head[10] = zlib.crc32(var.name.encode())
    return head


def _describe_signature(head: np.ndarray) -> str:
    ndim = int(head[0])
    shape = tuple(int(d) for d in head[1:1 + min(ndim, 8)])
    return f"a variable of shape {shape} ({np.dtype(chr(int(head[9])))})"


# ---- module functions ------------------------------------------------------------------------
def get_strategy() -> Strategy:
    """The strategy whose ``scope()`` is active, else the default (one-process) strategy."""
    s = distribution.scope
    return s if s is not None else _DEFAULT


def has_strategy() -> bool:
    """Whether a non-default strategy's scope is active."""
    return distribution.scope is not None


def in_cross_replica_context() -> bool:
    """True inside a strategy's scope but outside ``strategy.run``."""
    s = distribution.scope
    return s is not None and not s._in_run


def get_replica_context() -> ReplicaContext | None:
    """The replica context inside ``strategy.run`` (or outside any scope: the default
    strategy's); None in a cross-replica context (in a scope, outside ``run``)."""
    s = get_strategy()
    if s is not _DEFAULT and not s._in_run:
        return None
    return ReplicaContext(s)


def _collective_strategy() -> Strategy:
    s = distribution.scope
    if s is not None:
        return s
    return _LAST[0] if _LAST else _DEFAULT


def allreduce(tensors: Any, op: ReduceOp | str = "mean") -> Any:
    """Horovod-style: ``tensors`` (a Tensor/array, or a list/dict of them) combined over
    all ranks, fused into a few MPI calls. Uses the strategy in scope, else this process's
    ``MultiWorkerMirroredStrategy``; in one process it returns copies.

    Args:
        tensors: the values (every rank passes the same structure and shapes).
        op: ``'mean'`` (default, as Horovod) or ``'sum'``.

    Returns:
        Tensors in the structure of ``tensors``.
    """
    return _collective_strategy()._allreduce_structure(tensors, ReduceOp.of(op))


def broadcast_variables(variables: Any, root_rank: int = 0) -> None:
    """Horovod-style: give every rank ``root_rank``'s values of ``variables`` (in place).

    Raises:
        ValueError: the ranks' variables differ in number, shapes or dtypes.
    """
    s = _collective_strategy()
    if s._world is None or s._world.size == 1:
        return
    from layerkit.distribute.training import broadcast_values

    broadcast_values(s._world, list(flatten(variables)), root_rank)
