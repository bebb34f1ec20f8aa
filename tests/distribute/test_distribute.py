"""lk.distribute in one process: sharding (every rank's view computed here), the default
strategy, loss scaling, options, launch, and rank-0-only writes. Multi-rank behaviour
(MPI itself) is in test_mpi.py."""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import layerkit as lk
from layerkit._core import distribution
from layerkit.data.dataset import _pipeline_names
from layerkit.data.options import AutoShardPolicy
from layerkit.distribute import _mpi, launch
from layerkit.distribute._reduce import LARGE_BYTES, Plan
from layerkit.distribute.input import (
    DistributedIterator,
    align_seeds,
    pack_state,
    shard_dataset,
    unpack_state,
)

Policy = lk.data.experimental.AutoShardPolicy


def values(ds) -> list:
    return [b.numpy().tolist() for b in ds]


def flat(batches: list) -> list:
    return [v for b in batches for v in (b if isinstance(b, list) else [b])]


def with_policy(ds, policy):
    o = lk.data.Options()
    o.experimental_distribute.auto_shard_policy = policy
    return ds.with_options(o)


# ---- DATA: each rank keeps its part of every global batch -------------------------------------
@pytest.mark.parametrize("n", [2, 3])
@pytest.mark.parametrize("batch", [10, 4])
def test_data_split_rebuilds_each_global_batch(n, batch):
    ds = lk.data.Dataset.range(47).map(lambda v: v * 2).batch(batch)
    ref = values(ds)
    parts = [values(shard_dataset(ds, n, r)[0]) for r in range(n)]
    for k, expected in enumerate(ref):
        got = [v for r in range(n) if k < len(parts[r]) for v in parts[r][k]]
        assert got == expected
    sizes = [len(parts[r][0]) for r in range(n)]
    assert sum(sizes) == batch and max(sizes) - min(sizes) <= 1
    assert sorted(flat(flat(parts))) == list(range(0, 94, 2))


def test_data_split_maps_only_this_ranks_elements():
    calls = []

    def f(v):
        calls.append(int(v))
        return v + 100
    ds = lk.data.Dataset.range(30).map(f).batch(6)
    got = []
    for r in range(3):
        sharded, global_batch, how = shard_dataset(ds, 3, r)
        assert (global_batch, how) == (6, "data")
        assert "distribute_split" in _pipeline_names(sharded._node)
        got += flat(values(sharded))
    assert sorted(calls) == list(range(30))          # each element mapped by one rank only
    assert sorted(got) == list(range(100, 130))


def test_data_split_drop_remainder_drops_the_last_partial_global_batch():
    ds = lk.data.Dataset.range(23).batch(10, drop_remainder=True)
    parts = [values(shard_dataset(ds, 3, r)[0]) for r in range(3)]
    assert parts == [[[0, 1, 2, 3], [10, 11, 12, 13]], [[4, 5, 6], [14, 15, 16]],
                     [[7, 8, 9], [17, 18, 19]]]
    for r in range(3):
        assert shard_dataset(ds, 3, r)[0].cardinality() == 2


def test_data_split_cardinality_matches_iteration():
    ds = lk.data.Dataset.range(47).batch(10)
    for r in range(3):
        sharded = shard_dataset(ds, 3, r)[0]
        assert sharded.cardinality() == len(values(sharded))


def test_data_split_on_a_repeated_dataset_keeps_global_batches():
    ds = lk.data.Dataset.range(7).repeat().batch(4).take(5)
    ref = values(ds)
    parts = [values(shard_dataset(ds, 2, r)[0]) for r in range(2)]
    assert [a + b for a, b in zip(*parts)] == ref


def test_unbatched_dataset_is_sharded_by_element():
    ds = lk.data.Dataset.range(10)
    assert [values(shard_dataset(ds, 3, r)[0]) for r in range(3)] == [
        [0, 3, 6, 9], [1, 4, 7], [2, 5, 8]]
    assert shard_dataset(ds, 3, 0)[2] == "element"


def test_off_policy_keeps_all_data_with_this_ranks_batch_size():
    ds = with_policy(lk.data.Dataset.range(9).batch(4), Policy.OFF)
    sharded, global_batch, how = shard_dataset(ds, 2, 1)
    assert (global_batch, how) == (4, "off")
    assert values(sharded) == [[0, 1], [2, 3], [4, 5], [6, 7], [8]]


def test_global_batch_smaller_than_the_ranks_is_an_error():
    with pytest.raises(ValueError, match="global batch size 2 is smaller than the number of "
                                         "replicas 3"):
        shard_dataset(lk.data.Dataset.range(9).batch(2), 3, 0)


def test_hint_policy_is_an_error():
    with pytest.raises(ValueError, match="HINT"):
        shard_dataset(with_policy(lk.data.Dataset.range(9).batch(3), Policy.HINT), 2, 0)


def test_state_of_a_split_iterator_resumes_exactly():
    ds = lk.data.Dataset.range(50).shuffle(50, seed=3).map(lambda v: v * 1).batch(6)
    sharded = shard_dataset(ds, 3, 1)[0]
    it = iter(sharded)
    head = [next(it).numpy().tolist() for _ in range(3)]
    state = it.get_state()
    rest = values(it)
    it2 = iter(sharded)
    it2.set_state(state)
    assert values(it2) == rest
    assert len(flat(head + rest)) == 16   # 8 global batches of 6, positions 2-3 of each


# ---- FILE: Parquet row groups, CSV and text files ------------------------------------------------
@pytest.fixture
def parquet_file(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    path = tmp_path / "rows.parquet"
    ids = np.arange(100)
    with pq.ParquetWriter(path, pa.schema([("id", pa.int64())])) as w:
        for lo, hi in [(0, 7), (7, 30), (30, 31), (31, 64), (64, 100)]:
            w.write_table(pa.table({"id": ids[lo:hi]}))
    return str(path)


@pytest.mark.parametrize("n", [2, 3])
def test_file_sharding_reads_disjoint_row_groups(parquet_file, n):
    ds = lk.data.Dataset.from_parquet(parquet_file).map(lambda r: r["id"]).batch(8)
    seen = []
    for r in range(n):
        sharded, global_batch, how = shard_dataset(ds, n, r)
        assert how == "file" and global_batch == 8
        node = sharded._node
        while node.inputs:
            node = node.inputs[0]
        assert node.row_groups == [list(range(r, 5, n))]
        rows = flat(values(sharded))
        assert sharded.cardinality() == len(values(sharded))
        assert all(len(b) <= 8 // n + 1 for b in values(sharded))
        seen += rows
    assert sorted(seen) == list(range(100))


def test_file_sharding_state_resumes_inside_a_row_group(parquet_file):
    ds = lk.data.Dataset.from_parquet(parquet_file, read_batch_size=4).map(
        lambda r: r["id"]).batch(3)
    sharded = shard_dataset(ds, 2, 1)[0]
    full = values(sharded)
    it = iter(sharded)
    head = [next(it).numpy().tolist() for _ in range(5)]
    it2 = iter(sharded)
    it2.set_state(it.get_state())
    assert head + values(it2) == full


def test_auto_falls_back_to_data_with_fewer_row_groups_than_ranks(parquet_file):
    ds = lk.data.Dataset.from_parquet(parquet_file).batch(12)
    assert shard_dataset(ds, 6, 0)[2] == "data"
    with pytest.raises(ValueError, match="5 files/row groups, fewer than the 6 ranks"):
        shard_dataset(with_policy(ds, Policy.FILE), 6, 0)


def test_file_policy_without_files_is_an_error():
    ds = with_policy(lk.data.Dataset.range(10).batch(2), Policy.FILE)
    with pytest.raises(ValueError, match="reads no files it can split"):
        shard_dataset(ds, 2, 0)


def test_file_sharding_of_csv_and_text_files(tmp_path):
    pytest.importorskip("pyarrow")
    names = []
    for i in range(3):
        p = tmp_path / f"part{i}.csv"
        p.write_text("v\n" + "".join(f"{i * 10 + k}\n" for k in range(4)))
        names.append(str(p))
    csv = lk.data.Dataset.from_csv(names).map(lambda r: r["v"])
    lines = lk.data.TextLineDataset(names)
    files = lk.data.Dataset.list_files(str(tmp_path / "*.csv"), shuffle=False).interleave(
        lambda f: lk.data.TextLineDataset(f).skip(1), cycle_length=1)
    for ds, parse in ((csv, int), (lines, lambda b: b), (files, int)):
        got = []
        for r in range(2):
            sharded, _, how = shard_dataset(ds, 2, r)
            assert how == "file"
            got += [parse(v) for v in flat(values(sharded))]
        assert sorted(got) == sorted(parse(v) for v in flat(values(ds)))


# ---- seeds ---------------------------------------------------------------------------------
def test_align_seeds_makes_differently_seeded_pipelines_identical():
    def build(seed):
        lk.random.set_seed(seed)
        return lk.data.Dataset.range(40).shuffle(40).map(
            lambda v: v + lk.data.element_rng().integers(0, 1000)).batch(5)
    a, b = build(1), build(2)
    assert values(a) != values(b)
    seeds = [n.seed for n in __import__("layerkit.distribute.input", fromlist=["x"])
             .seeded_nodes(a._node)]
    b2 = align_seeds(build(2), seeds)
    assert values(b2) == values(build(1))
    with pytest.raises(ValueError, match="different input pipelines"):
        align_seeds(lk.data.Dataset.range(3), seeds)


# ---- iterator states ----------------------------------------------------------------------------
def test_pack_state_round_trip():
    state = {"a": [1, 2.5, None, "x"], "b": np.arange(6, dtype=np.float32).reshape(2, 3),
             "c": (b"raw", np.int64(7)), "d": {"e": np.zeros((0, 2))}}
    out = unpack_state(pack_state(state))
    np.testing.assert_array_equal(out["b"], state["b"])
    assert out["b"].dtype == np.float32
    assert out["a"] == state["a"] and out["c"] == state["c"]
    assert out["d"]["e"].shape == (0, 2)


def test_distributed_iterator_state_in_one_process():
    ds = lk.distribute.get_strategy()
    del ds
    it = DistributedIterator(iter(lk.data.Dataset.range(6).batch(2)),
                             lk.distribute.get_strategy())
    next(it)
    state = it.get_state()
    assert state["num_replicas"] == 1
    it2 = DistributedIterator(iter(lk.data.Dataset.range(6).batch(2)),
                              lk.distribute.get_strategy())
    it2.set_state(state)
    assert [b.numpy().tolist() for b in it2] == [[2, 3], [4, 5]]
    with pytest.raises(ValueError, match="saved by 2 ranks but this job has 1"):
        it2.set_state({**state, "num_replicas": 2})
    with pytest.raises(ValueError, match="not a distributed iterator state"):
        it2.set_state({"format": "x"})


# ---- options --------------------------------------------------------------------------------
def test_options_attach_merge_and_reject_unknown_names():
    ds = lk.data.Dataset.range(4)
    assert ds.options().experimental_distribute.auto_shard_policy == Policy.AUTO
    inner = with_policy(ds, Policy.DATA).map(lambda v: v).batch(2)
    assert inner.options().experimental_distribute.auto_shard_policy == Policy.DATA
    assert values(inner) == [[0, 1], [2, 3]]
    outer = with_policy(inner, Policy.OFF)
    assert outer.options().experimental_distribute.auto_shard_policy == Policy.OFF
    assert AutoShardPolicy.FILE == 1 and AutoShardPolicy.OFF == -1   # tf.data's values
    o = lk.data.Options()
    with pytest.raises(AttributeError, match="no option 'auto_shard'"):
        o.experimental_distribute.auto_shard = 1
    with pytest.raises(ValueError, match="AutoShardPolicy"):
        o.experimental_distribute.auto_shard_policy = 7
    with pytest.raises(TypeError, match="lk.data.Options"):
        ds.with_options({"x": 1})


# ---- the default strategy -----------------------------------------------------------------------
def test_default_strategy_is_one_process():
    s = lk.distribute.get_strategy()
    assert s.num_replicas_in_sync == 1 and s.cluster_resolver is None
    assert not lk.distribute.has_strategy()
    with s.scope():
        assert lk.distribute.get_strategy() is s
    assert s.run(lambda a, b: a + b, args=(1,), kwargs={"b": 2}) == 3
    v = lk.constant([[1.0, 2.0], [3.0, 5.0]])
    np.testing.assert_array_equal(s.reduce("sum", v, axis=None).numpy(), v.numpy())
    np.testing.assert_allclose(s.reduce(lk.distribute.ReduceOp.MEAN, v, axis=0).numpy(),
                               [2.0, 3.5])
    np.testing.assert_allclose(s.reduce("SUM", v, axis=1).numpy(), [3.0, 8.0])
    np.testing.assert_array_equal(s.gather(v, axis=1).numpy(), v.numpy())
    assert s.experimental_local_results(v) == (v,)
    ds = lk.data.Dataset.range(3)
    assert s.experimental_distribute_dataset(ds) is ds
    ctx = s.distribute_datasets_from_function(lambda c: c)
    assert (ctx.num_input_pipelines, ctx.input_pipeline_id, ctx.num_replicas_in_sync) == (1, 0, 1)
    assert ctx.get_per_replica_batch_size(8) == 8
    assert lk.distribute.get_replica_context().num_replicas_in_sync == 1
    out = lk.distribute.allreduce({"a": np.ones(2, np.int64)}, op="sum")
    np.testing.assert_array_equal(out["a"].numpy(), [1, 1])
    assert out["a"].dtype == np.int64
    with pytest.raises(ValueError, match="reduce_op must be"):
        s.reduce("max", v)


def test_input_context_per_replica_batch_size():
    ctx = lk.distribute.InputContext(4, 1, 4)
    assert ctx.get_per_replica_batch_size(64) == 16
    with pytest.raises(ValueError, match="not divisible"):
        ctx.get_per_replica_batch_size(10)


# ---- loss scaling -----------------------------------------------------------------------------
def test_compute_average_loss_matches_numpy_and_differentiates():
    per = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], np.float32)
    w = np.array([1.0, 0.0, 2.0], np.float32)
    out = lk.nn.compute_average_loss(per, global_batch_size=6)
    np.testing.assert_allclose(out.numpy(), per.sum() / 6)
    out = lk.nn.compute_average_loss(per, sample_weight=w[:, None])
    np.testing.assert_allclose(out.numpy(), (per * w[:, None]).sum() / 3)
    assert out.dtype == np.float32   # gradients: tests/ops/rows_nn.py
    np.testing.assert_allclose(lk.nn.scale_regularization_loss([1.0, 3.0]).numpy(), 4.0)


def test_compute_average_loss_errors():
    with pytest.raises(ValueError, match="rank >= 1"):
        lk.nn.compute_average_loss(1.0)
    with pytest.raises(TypeError, match="global_batch_size must be an int"):
        lk.nn.compute_average_loss([1.0], global_batch_size=10.0)
    with pytest.raises(ValueError, match="global_batch_size must be positive"):
        lk.nn.compute_average_loss([1.0], global_batch_size=0)


# ---- fused all-reduce plans -------------------------------------------------------------------
def test_plan_fuses_small_arrays_and_sends_large_ones_alone():
    big = (LARGE_BYTES // 4,)
    f4, f8 = np.dtype(np.float32), np.dtype(np.float64)
    layout = (((3, 4), f4), (big, f4), ((5,), f4), ((2,), f8), ((300,), f4))
    plan = Plan(layout, 64 * 4)
    assert plan.solo == [1]
    # float32 buckets of at most 64 elements: [12 + 5], [300 alone in its own bucket]
    f32 = [b for b in plan.buckets if b[0] == np.float32]
    assert [[i for i, _, _ in members] for _, members, _ in f32] == [[0, 2], [4]]
    assert [total for _, _, total in f32] == [17, 300]
    assert [[i for i, _, _ in b[1]] for b in plan.buckets if b[0] == np.float64] == [[3]]


def test_fresh_buffers_are_recycled_only_when_no_result_is_held():
    f4 = np.dtype(np.float32)
    plan = Plan((((3, 4), f4), ((LARGE_BYTES // 4,), f4), ((5,), f4)), 0)
    first = plan.buffers(True)
    results = list(first.results)
    assert plan.buffers(True) is not first      # results held: a new set
    del results
    assert plan.buffers(True) is first          # all dropped: recycled
    small = first.results[0][1:]                 # a view of a bucket member
    big = first.results[1]
    del big
    assert plan.buffers(True) is not first
    del small
    assert plan.buffers(True) is first
    held = first.results[1].reshape(-1)[:3]      # a view of a large array's own buffer
    assert plan.buffers(True) is not first
    del held
    assert plan.buffers(True) is first
    assert plan.buffers(False) is not first     # the persistent set is separate


# ---- rank-0-only writes -----------------------------------------------------------------------
class _Rank1:
    rank = 1


def test_ranks_other_than_0_write_no_checkpoint_files(tmp_path, monkeypatch):
    v = lk.Variable([1.0, 2.0])
    ckpt = lk.Checkpoint(v=v)
    monkeypatch.setattr(distribution, "world", _Rank1())
    assert not distribution.writes_files()
    manager = lk.CheckpointManager(ckpt, tmp_path / "m", max_to_keep=1)
    paths = [manager.save(), manager.save()]
    assert [os.path.basename(p) for p in paths] == ["ckpt-1", "ckpt-2"]
    assert manager.latest_checkpoint == paths[1]     # the same bookkeeping as rank 0's
    assert ckpt.write(tmp_path / "w.lkw") == str(tmp_path / "w.lkw")
    assert os.listdir(tmp_path) == []
    monkeypatch.setattr(distribution, "world", None)
    assert distribution.writes_files()
    assert os.path.exists(ckpt.write(tmp_path / "w.lkw"))


# ---- MPI availability, launch, threads ----------------------------------------------------------
def test_import_layerkit_does_not_import_mpi4py():
    code = ("import sys, layerkit; layerkit.distribute.get_strategy(); "
            "print('mpi4py' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=os.path.dirname(os.path.dirname(os.path.dirname(
                             os.path.abspath(__file__)))))
    assert out.stdout.strip() == "False"


def test_missing_mpi4py_names_the_mpi_extra(monkeypatch):
    assert _mpi.current() is None   # this process never started MPI
    monkeypatch.setitem(sys.modules, "mpi4py", None)
    with pytest.raises(ImportError, match=r"pip install 'layerkit\[mpi\]'"):
        lk.distribute.MultiWorkerMirroredStrategy()
    assert _mpi.current() is None and distribution.world is None


def test_launch_builds_the_mpiexec_command(tmp_path):
    fake = tmp_path / "mpiexec"
    fake.write_text("#!/bin/sh\n")
    fake.chmod(0o755)
    cmd = launch.command(["-n", "4", "--mpiexec", str(fake), "--mpiexec-args=-hosts a,b",
                          "train.py", "--epochs", "3"])
    assert cmd == [str(fake), "-n", "4", "-hosts", "a,b", sys.executable, "train.py",
                   "--epochs", "3"]
    with pytest.raises(SystemExit):
        launch.command(["-n", "0", "--mpiexec", str(fake), "train.py"])


def test_launch_without_mpiexec_says_how_to_get_one(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("MPIEXEC", raising=False)
    monkeypatch.setattr(sys, "executable", str(tmp_path / "python"))
    with pytest.raises(FileNotFoundError, match=r"layerkit\[mpi\]"):
        launch.find_mpiexec()


def test_thread_limit_respects_the_environment(monkeypatch):
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "2")
    assert _mpi.limit_threads(2) is None
    monkeypatch.delenv("OPENBLAS_NUM_THREADS")
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    assert _mpi.limit_threads(1) is None   # one rank on this machine: nothing to share


def test_strategy_arguments_are_checked_before_mpi_starts():
    with pytest.raises(ValueError, match="cluster_resolver must be None"):
        lk.distribute.MultiWorkerMirroredStrategy(cluster_resolver=object())
    with pytest.raises(TypeError, match="CommunicationOptions"):
        lk.distribute.MultiWorkerMirroredStrategy(communication_options={"timeout": 3})
    CommunicationOptions = lk.distribute.experimental.CommunicationOptions
    with pytest.raises(ValueError, match="timeout_seconds must be a positive number"):
        CommunicationOptions(timeout_seconds=0)
    with pytest.raises(ValueError, match="bytes_per_pack must be an int >= 0"):
        CommunicationOptions(bytes_per_pack=-1)
    assert _mpi.current() is None
