"""Input pipelines across ranks: sharding a ``lk.data.Dataset`` and iterating it.

``strategy.experimental_distribute_dataset(ds)`` rebuilds ``ds`` for this rank (the
original is untouched), following ``ds.options().experimental_distribute.auto_shard_policy``:

- **FILE** (and AUTO when possible): the pipeline's file source reads only this rank's
  units, dealt round-robin: Parquet row groups (``from_parquet``), CSV files
  (``from_csv``), text files (``TextLineDataset``), or file names interleaved by
  ``interleave``/``flat_map`` (the ``list_files`` pattern). No rank reads another rank's
  rows. AUTO needs at least one unit per rank, else it falls back to DATA.
- **DATA**: every rank runs the pipeline's source and keeps its own part of each *global
  batch*: of every ``global_batch_size`` consecutive elements before the first ``batch``,
  rank ``r`` keeps a contiguous run of ``global_batch_size // N`` (+1 for the first
  ``global_batch_size % N`` ranks). The split is placed below the ``map``/``prefetch``
  stages that directly feed the batch, so each rank maps only its own elements. Together
  the ranks' k-th batches are exactly the 1-process pipeline's k-th batch. A dataset
  with no ``batch`` is sharded by element (``shard``).
- **OFF**: no sharding (every rank reads everything).

In every case the ``batch`` size becomes this rank's share of the global batch size, as
TensorFlow does. Seeds of ``shuffle``/``map`` stages are taken from rank 0, so ranks
shuffle identically even without ``lk.random.set_seed`` (DATA needs that).

Uneven shards (FILE, or a last partial batch) are fine: ``fit`` keeps every rank in
step, a rank that ran out taking part in the others' remaining steps with no data.
"""
from __future__ import annotations

import copy
import json
import struct
from typing import TYPE_CHECKING, Any

import numpy as np

from layerkit.data.arrow import CsvNode, ParquetNode
from layerkit.data.batch import BatchNode, PaddedBatchNode
from layerkit.data.cache import CacheNode
from layerkit.data.dataset import Dataset
from layerkit.data.interleave import InterleaveNode
from layerkit.data.map import MapNode
from layerkit.data.node import _NODE_IDS, INFINITE, UNKNOWN, Node, ScalarStateIterator
from layerkit.data.options import AutoShardPolicy
from layerkit.data.prefetch import PrefetchNode
from layerkit.data.simple import ShardNode
from layerkit.data.sources import TensorSlicesNode
from layerkit.data.text import TextLineNode

if TYPE_CHECKING:
    from layerkit.distribute.strategy import Strategy

__all__ = ["InputContext", "DistributedDataset", "DistributedIterator", "shard_dataset"]


class InputContext:
    """What ``distribute_datasets_from_function``'s function learns about its pipeline
    (tf.distribute's ``InputContext``).

    Attributes:
        num_input_pipelines: how many pipelines there are (one per rank).
        input_pipeline_id: this one's index (the rank).
        num_replicas_in_sync: replicas taking part in each step.
    """

    def __init__(self, num_input_pipelines: int = 1, input_pipeline_id: int = 0,
                 num_replicas_in_sync: int = 1) -> None:
        self.num_input_pipelines = int(num_input_pipelines)
        self.input_pipeline_id = int(input_pipeline_id)
        self.num_replicas_in_sync = int(num_replicas_in_sync)

    def get_per_replica_batch_size(self, global_batch_size: int) -> int:
        """``global_batch_size // num_replicas_in_sync``.

        Raises:
            ValueError: the global batch size is not divisible by the replica count.
        """
        if global_batch_size % self.num_replicas_in_sync:
            raise ValueError(f"The `global_batch_size` {global_batch_size} is not divisible "
                             f"by `num_replicas_in_sync` {self.num_replicas_in_sync}")
        return global_batch_size // self.num_replicas_in_sync

    def __repr__(self) -> str:
        return (f"InputContext(num_input_pipelines={self.num_input_pipelines}, "
                f"input_pipeline_id={self.input_pipeline_id}, "
                f"num_replicas_in_sync={self.num_replicas_in_sync})")


# ---- the rank's part of each global batch ----------------------------------------------------
class RankSplitNode(Node):
    """Of every ``group`` consecutive elements keeps positions ``[lo, hi)``; with ``end``
    >= 0 nothing from position ``end`` on (a dropped last partial batch)."""

    name = "distribute_split"

    def __init__(self, source: Node, group: int, lo: int, hi: int, end: int = -1) -> None:
        super().__init__(source)
        self.group, self.lo, self.hi, self.end = int(group), int(lo), int(hi), int(end)

    def make_iterator(self, ctx):
        return RankSplitIterator(self, self.inputs[0].make_iterator(ctx))

    def cardinality(self) -> int:
        n = self.inputs[0].cardinality()
        if n in (UNKNOWN, INFINITE):
            return n
        if self.end >= 0:
            n = min(n, self.end)
        full, rest = divmod(n, self.group)
        return full * (self.hi - self.lo) + max(0, min(self.hi, rest) - self.lo)

    def _compute_spec(self):
        return self.inputs[0].element_spec()

    def static_chunk_spec(self):
        return self.inputs[0].static_chunk_spec()


class RankSplitIterator(ScalarStateIterator):
    __slots__ = ("_up", "_group", "_lo", "_hi", "_end", "_i")
    kind = "distribute_split"
    _saved = (("position", "_i", int),)

    def __init__(self, node: RankSplitNode, up) -> None:
        self._up = up
        self._group, self._lo, self._hi, self._end = node.group, node.lo, node.hi, node.end
        self._i = 0   # input elements consumed

    def _discard(self, k: int) -> bool:
        """Consume ``k`` input elements; False if the input ended first."""
        up = self._up
        chunks = up.supports_chunks()
        while k > 0:
            if chunks:
                c = up.next_chunk(min(k, 65536))
                if c is None:
                    return False
                n = len(c[0])
            else:
                try:
                    next(up)
                except StopIteration:
                    return False
                n = 1
            self._i += n
            k -= n
        return True

    def _kept(self) -> int:
        """Move to the next kept element; how many kept ones follow in a run (0: the end)."""
        pos = self._i % self._group
        if pos < self._lo:
            skip = self._lo - pos
        elif pos >= self._hi:
            skip = self._group - pos + self._lo
        else:
            skip = 0
        if skip and not self._discard(skip):
            return 0
        run = self._hi - self._i % self._group
        if self._end >= 0:
            run = min(run, self._end - self._i)
        return max(run, 0)

    def __next__(self):
        if not self._kept():
            raise StopIteration
        e = next(self._up)
        self._i += 1
        return e

    def supports_chunks(self) -> bool:
        return self._up.supports_chunks()

    @property
    def codec(self):
        return self._up.codec

    def next_chunk(self, n: int):
        run = self._kept()
        if not run:
            return None
        c = self._up.next_chunk(min(n, run))
        if c is not None:
            self._i += len(c[0])
        return c


# ---- rebuilding a pipeline ---------------------------------------------------------------------
def _clone(node: Node, inputs=None, **changes) -> Node:
    """A copy of ``node`` as a new stage (own id, no cached spec or recorded cache)."""
    n = copy.copy(node)
    if inputs is not None:
        n.inputs = tuple(inputs)
    n.node_id = next(_NODE_IDS)
    n._spec = None
    # Passes are counted on the original stage, as if it ran itself: a shuffle reshuffles
    # per pass exactly as in one process, and all ranks agree (they use it alike).
    n._next_top_epoch = node._next_top_epoch
    n._seen_top_epoch = node._seen_top_epoch
    if isinstance(n, CacheNode):
        n.memory, n.encoded, n.writers = None, None, 0
    if hasattr(n, "_rows"):
        n._rows = None
    for k, v in changes.items():
        setattr(n, k, v)
    return n


def _chain(top: Node) -> list:
    """``top`` and the single-input stages below it, down to a source or a stage with
    several inputs."""
    out = [top]
    while len(out[-1].inputs) == 1:
        out.append(out[-1].inputs[0])
    return out


def _restack(chain: list, new_bottom: Node, changes: dict | None = None) -> Node:
    """Rebuild ``chain[:-1]`` (top first) on ``new_bottom``; ``changes`` maps a chain index
    to attribute changes for that stage's clone."""
    node = new_bottom
    for i in range(len(chain) - 2, -1, -1):
        node = _clone(chain[i], (node,), **(changes or {}).get(i, {}))
    return node


def _share(total: int, num: int, index: int) -> tuple:
    """``(offset, size)`` of part ``index`` when ``total`` is cut into ``num`` near-equal
    contiguous parts (the first ``total % num`` one longer)."""
    base, extra = divmod(total, num)
    return index * base + min(index, extra), base + (1 if index < extra else 0)


def _is_filenames(node: Node) -> bool:
    if not isinstance(node, TensorSlicesNode):
        return False
    spec = node.element_spec()
    return getattr(spec, "dtype", None) is not None and spec.dtype.kind in "SU"


def _file_units(chain: list):
    """``(count, shard function)`` for the pipeline's file source, or None."""
    bottom = chain[-1]
    if isinstance(bottom, ParquetNode):
        groups = bottom.row_groups if bottom.row_groups is not None else \
            [list(range(len(sizes))) for sizes in bottom.row_group_sizes()]
        units = [(i, g) for i, gs in enumerate(groups) for g in gs]

        def shard(num, index):
            mine = units[index::num]
            groups = [[g for f, g in mine if f == i] for i in range(len(bottom.paths))]
            return _clone(bottom, row_groups=groups)
        return len(units), shard
    if isinstance(bottom, CsvNode):
        return len(bottom.paths), lambda num, index: _clone(bottom,
                                                            paths=bottom.paths[index::num])
    if isinstance(bottom, TextLineNode):
        return len(bottom.filenames), lambda num, index: _clone(
            bottom, filenames=bottom.filenames[index::num])
    if _is_filenames(bottom) and any(isinstance(n, InterleaveNode) for n in chain):
        return bottom.cardinality(), lambda num, index: ShardNode(bottom, num, index)
    return None


def shard_dataset(dataset: Dataset, num: int, index: int, policy=None) -> tuple:
    """This rank's pipeline: ``(dataset, global batch size or None, how)``.

    ``how`` is ``'file'``, ``'data'``, ``'element'`` or ``'off'``. Pure (no communication):
    the ranks agree because they build the same pipeline (see :func:`align_seeds`).

    Raises:
        ValueError: FILE sharding of a pipeline that reads no files (or fewer files/row
            groups than ranks), HINT, or a global batch smaller than the rank count.
    """
    node = dataset._node
    if policy is None:
        policy = dataset.options().experimental_distribute.auto_shard_policy
    policy = AutoShardPolicy(policy)
    if policy == AutoShardPolicy.HINT:
        raise ValueError("auto_shard_policy HINT (tf.data's shard hints) is not supported by "
                         "lk.distribute; use AUTO, FILE, DATA or OFF")
    chain = _chain(node)
    bi = next((i for i, n in enumerate(chain) if isinstance(n, (BatchNode, PaddedBatchNode))),
              None)
    global_batch = chain[bi].size if bi is not None else None
    rebatch = {}
    if bi is not None:
        if global_batch < num:
            raise ValueError(f"the global batch size {global_batch} is smaller than the "
                             f"number of replicas {num}: every replica needs at least one "
                             f"example per step")
        rebatch = {bi: {"size": _share(global_batch, num, index)[1]}}
    if num == 1:
        return dataset, global_batch, "off"
    if policy == AutoShardPolicy.OFF:
        return Dataset(_restack(chain, chain[-1], rebatch) if rebatch else node), \
            global_batch, "off"
    if policy in (AutoShardPolicy.FILE, AutoShardPolicy.AUTO):
        found = _file_units(chain)
        if found is not None and found[0] >= num:
            return Dataset(_restack(chain, found[1](num, index), rebatch)), global_batch, "file"
        if policy == AutoShardPolicy.FILE:
            what = "reads no files it can split (from_parquet, from_csv, TextLineDataset, " \
                   "or file names through interleave)" if found is None else \
                f"has {found[0]} files/row groups, fewer than the {num} ranks"
            raise ValueError(f"auto_shard_policy FILE: the pipeline {dataset!r} {what}; use "
                             f"AutoShardPolicy.DATA to shard by element")
    if bi is None:
        return Dataset(ShardNode(node, num, index)), None, "element"
    # DATA: split below the map/prefetch stages that feed the batch directly.
    low = bi + 1
    while low < len(chain) - 1 and isinstance(chain[low], (MapNode, PrefetchNode)):
        low += 1
    below = chain[low]
    batch = chain[bi]
    end = -1
    if batch.drop:
        n = below.cardinality()
        if n >= 0:
            end = n // global_batch * global_batch
    lo, size = _share(global_batch, num, index)
    split = RankSplitNode(below, global_batch, lo, lo + size, end)
    return Dataset(_restack(chain[:low + 1], split, rebatch)), global_batch, "data"


def seeded_nodes(node: Node) -> list:
    """Stages with a ``seed`` (shuffle, map), in a fixed depth-first order."""
    out, seen, stack = [], set(), [node]
    while stack:
        n = stack.pop()
        if id(n) in seen:
            continue
        seen.add(id(n))
        if isinstance(getattr(n, "seed", None), int):
            out.append(n)
        stack.extend(reversed(n.inputs))
    return out


def align_seeds(dataset: Dataset, seeds: list) -> Dataset:
    """``dataset`` rebuilt with ``seeds`` (one per :func:`seeded_nodes` entry, in order)."""
    nodes = seeded_nodes(dataset._node)
    if len(nodes) != len(seeds):
        raise ValueError(f"the ranks built different input pipelines: {len(seeds)} seeded "
                         f"stages on rank 0, {len(nodes)} in {dataset!r}")
    if all(n.seed == s for n, s in zip(nodes, seeds)):
        return dataset
    new_seed = {id(n): int(s) for n, s in zip(nodes, seeds)}
    memo: dict = {}

    def rebuild(n: Node) -> Node:
        if id(n) in memo:
            return memo[id(n)]
        inputs = [rebuild(i) for i in n.inputs]
        changed = any(a is not b for a, b in zip(inputs, n.inputs))
        if id(n) in new_seed and new_seed[id(n)] != n.seed:
            out = _clone(n, inputs, seed=new_seed[id(n)])
        elif changed:
            out = _clone(n, inputs)
        else:
            out = n
        memo[id(n)] = out
        return out
    return Dataset(rebuild(dataset._node))


# ---- the distributed dataset and iterator --------------------------------------------------------
class DistributedDataset:
    """A dataset as each rank sees it (what ``experimental_distribute_dataset`` and
    ``distribute_datasets_from_function`` return): iterating it gives this rank's
    batches; ``fit`` accepts it directly.

    Attributes:
        global_batch_size: the batch size of the original pipeline (None if unknown).
        element_spec: the spec of this rank's batches.
    """

    def __init__(self, dataset: Dataset, strategy: Strategy, global_batch_size: int | None,
                 how: str) -> None:
        self._dataset = dataset
        self._strategy = strategy
        self.global_batch_size = global_batch_size
        self._how = how

    def __iter__(self) -> DistributedIterator:
        return DistributedIterator(iter(self._dataset), self._strategy)

    @property
    def element_spec(self) -> Any:
        return self._dataset.element_spec

    def cardinality(self) -> int:
        """This rank's number of batches (``lk.data.INFINITE``/``UNKNOWN`` as for a Dataset)."""
        return self._dataset.cardinality()

    def __repr__(self) -> str:
        return f"<DistributedDataset ({self._how}) {self._dataset!r}>"


STATE_FORMAT = "layerkit.distribute.Iterator/1"


class DistributedIterator:
    """An iterator over this rank's batches that keeps the ranks in step and checkpoints
    every rank's position.

    Ranks can run out at different steps (uneven file shards, a last partial global
    batch). As in TensorFlow, each ``next()`` asks every rank whether it still has data
    (one small all-reduce): the iteration ends on every rank once none has, and until
    then a rank that ran out gets an *empty* batch (0 rows, the right structure and
    dtypes), so a custom loop runs the same number of steps everywhere and that rank's
    part of each step is empty (its loss, scaled by the global batch, is 0).

    ``get_state()`` is collective: every rank calls it (through ``Checkpoint.save`` or
    ``CheckpointManager.save`` on every rank) and each receives all ranks' positions, so
    the checkpoint rank 0 writes holds them all; ``set_state`` takes this rank's, so a
    job restarted with the same number of ranks resumes exactly.
    """

    def __init__(self, iterator: Any, strategy: Strategy) -> None:
        self._it = iterator
        self._strategy = strategy
        self._flag = np.zeros(1, np.float64)
        self._empty = None

    def __iter__(self) -> DistributedIterator:
        return self

    def __next__(self):
        world = self._strategy._world
        if world is None or world.size == 1 or world.solo:
            return next(self._it)
        try:
            batch = next(self._it)
        except StopIteration:
            batch = None
        flag = self._flag
        flag[0] = 0.0 if batch is None else 1.0
        world.allreduce(flag, "a distributed iterator: do the ranks still have data?")
        if flag[0] == 0:
            raise StopIteration
        return self._empty_batch() if batch is None else batch

    def get_next(self) -> Any:
        """The next batch (``StopIteration`` at the end)."""
        return next(self)

    def _empty_batch(self):
        if self._empty is None:
            from layerkit._core.op import wrap
            from layerkit.data import structure as _st

            def empty(spec):
                shape = tuple(0 if d is None else d for d in (spec.shape or (None,)))
                return wrap(np.zeros((0,) + shape[1:], spec.dtype))
            self._empty = _st.map_structure(empty, self._it.element_spec)
        return self._empty

    @property
    def element_spec(self) -> Any:
        return self._it.element_spec

    def get_state(self) -> dict:
        """Every rank's position (collective: all ranks must call it together).

        Raises:
            RuntimeError: called by rank 0 alone (inside a rank-0-only callback).
        """
        world = self._strategy._world
        if world is None or world.size == 1:
            return {"format": STATE_FORMAT, "num_replicas": 1, "states": [self._it.get_state()]}
        if world.solo:
            raise RuntimeError("a distributed iterator's state holds every rank's position: "
                               "save it from all ranks together (e.g. CheckpointManager.save() "
                               "on every rank), not from a rank-0-only callback")
        parts = world.allgather_bytes(pack_state(self._it.get_state()),
                                      "gathering the ranks' iterator states")
        return {"format": STATE_FORMAT, "num_replicas": world.size,
                "states": [unpack_state(p) for p in parts]}

    def set_state(self, state: dict) -> None:
        """Continue from this rank's position in ``state`` (from :meth:`get_state`).

        Raises:
            ValueError: not such a state, or saved with another number of ranks.
        """
        if not isinstance(state, dict) or state.get("format") != STATE_FORMAT:
            raise ValueError(f"DistributedIterator.set_state: not a distributed iterator "
                             f"state (expected format {STATE_FORMAT!r})")
        world = self._strategy._world
        size, rank = (1, 0) if world is None else (world.size, world.rank)
        states = state.get("states")
        if state.get("num_replicas") != size or not isinstance(states, list) \
                or len(states) != size:
            raise ValueError(f"DistributedIterator.set_state: the state was saved by "
                             f"{state.get('num_replicas')} ranks but this job has {size}; "
                             f"an exact resume needs the same number of ranks")
        self._it.set_state(states[rank])

    def close(self) -> None:
        self._it.close()


def pack_state(state) -> bytes:
    """An iterator state (JSON values and NumPy arrays) as bytes: no pickle."""
    from layerkit.checkpoint.checkpoint import _encode

    arrays: list = []
    doc = _encode(state, arrays, "iterator state")
    heads = [{"dtype": a.dtype.str, "shape": list(a.shape)} for a in arrays]
    head = json.dumps({"state": doc, "arrays": heads}).encode("utf-8")
    out = [struct.pack("<Q", len(head)), head]
    out += [np.ascontiguousarray(a).tobytes() for a in arrays]
    return b"".join(out)


def unpack_state(data: bytes):
    """The inverse of :func:`pack_state`."""
    from layerkit.checkpoint.checkpoint import _decode

    (n,) = struct.unpack_from("<Q", data, 0)
    head = json.loads(data[8:8 + n].decode("utf-8"))
    pos = 8 + n
    arrays = []
    for h in head["arrays"]:
        dt = np.dtype(h["dtype"])
        count = int(np.prod(h["shape"], dtype=np.int64))
        a = np.frombuffer(data, dt, count, pos).reshape(h["shape"]).copy()
        pos += count * dt.itemsize
        arrays.append(a)
    return _decode(head["state"], arrays)
