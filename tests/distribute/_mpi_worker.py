"""Cases run under ``mpiexec -n N`` by tests/distribute/test_mpi.py (not collected by pytest).

    mpiexec -n 2 python tests/distribute/_mpi_worker.py CASE OUTDIR

Each case checks what it can on rank 0 and writes ``OUTDIR/CASE.json`` (rank 0) with the
figures the test asserts on; any failed check raises, which ends the job (the strategy's
excepthook aborts every rank) and the test sees a non-zero exit status.
"""
from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import time

import numpy as np

import layerkit as lk
from layerkit.distribute._reduce import LARGE_BYTES

CASE, OUT = sys.argv[1], sys.argv[2]
TIMEOUT = float(os.environ.get("LK_TEST_COLLECTIVE_TIMEOUT", "60"))
strategy = lk.distribute.MultiWorkerMirroredStrategy(
    communication_options=lk.distribute.experimental.CommunicationOptions(
        timeout_seconds=TIMEOUT))
RANK = strategy.cluster_resolver.task_id
N = strategy.num_replicas_in_sync
RESULTS: dict = {}
SCCE = lk.losses.SparseCategoricalCrossentropy(from_logits=True)


def flat_weights(model) -> np.ndarray:
    return np.concatenate([w.reshape(-1) for w in model.get_weights()])


def same_on_all_ranks(a: np.ndarray) -> bool:
    """Whether every rank holds exactly ``a``."""
    everyone = strategy.gather(lk.constant(np.asarray(a, np.float64)[None]), axis=0).numpy()
    return bool(np.all(everyone == everyone[0]))


def data(n=103, d=8, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d)).astype("float32")
    y = (x.sum(1) > 0).astype("int64")
    return x, y


def mlp(d=8, width=16):
    return lk.Sequential([lk.Input((d,)), lk.layers.Dense(width, activation="relu"),
                          lk.layers.Dense(2)])


def train(dist: bool, fit_input, optimizer, epochs=2, width=16, **fit_kw):
    """(weights, history) of a model trained from seed 0, with or without the strategy."""
    lk.random.set_seed(0)
    scope = strategy.scope() if dist else contextlib.nullcontext()
    with scope:
        model = mlp(width=width)
        model.compile(optimizer=optimizer(), loss=SCCE, metrics=["accuracy"])
    x, y = fit_input()
    h = model.fit(x, y, epochs=epochs, verbose=0, **fit_kw)
    return model, flat_weights(model), h.history


# ---- fit equals 1-process training on the global batch --------------------------------------
def case_fit_arrays():
    inputs = data
    _, ref, href = train(False, inputs, lambda: lk.optimizers.SGD(0.1, momentum=0.9),
                         batch_size=10)
    _, w, h = train(True, inputs, lambda: lk.optimizers.SGD(0.1, momentum=0.9), batch_size=10)
    assert same_on_all_ranks(w), "weights differ across ranks"
    # a 131,072-unit layer: its 4 MiB kernel gradient goes through the large-array path
    # (reduce-scatter, this rank's part divided, all-gather)
    wide_units = LARGE_BYTES // (4 * 8)
    _, wref, _ = train(False, inputs, lambda: lk.optimizers.SGD(0.05), width=wide_units,
                       batch_size=10, epochs=1)
    _, wide, _ = train(True, inputs, lambda: lk.optimizers.SGD(0.05), width=wide_units,
                       batch_size=10, epochs=1)
    # train_on_batch: each rank its part of one batch; the compiled optimizer averages
    x, y = data(12)
    lk.random.set_seed(0)
    one = mlp()
    one.compile(optimizer=lk.optimizers.SGD(0.1), loss=SCCE)
    one.train_on_batch(x, y)
    lk.random.set_seed(0)
    with strategy.scope():
        many = mlp()
        many.compile(optimizer=lk.optimizers.SGD(0.1), loss=SCCE)
    part = np.array_split(np.arange(12), N)[RANK]
    many.train_on_batch(x[part], y[part])
    RESULTS["fit_arrays"] = {"max_diff": float(np.abs(w - ref).max()),
                             "train_on_batch_diff": float(np.abs(flat_weights(many)
                                                                 - flat_weights(one)).max()),
                             "wide_max_diff": float(np.abs(wide - wref).max()),
                             "scale": float(np.abs(ref).max()),
                             "loss": h["loss"], "loss_ref": href["loss"],
                             "accuracy": h["accuracy"], "accuracy_ref": href["accuracy"]}


def case_fit_dataset():
    x, y = data()

    def pipeline():
        return (lk.data.Dataset.from_tensor_slices((x, y)).shuffle(200)
                .map(lambda a, b: (a * 2.0, b)).batch(10))

    def fit(dist):
        lk.random.set_seed(0)
        with strategy.scope() if dist else contextlib.nullcontext():
            model = mlp()
            model.compile(optimizer=lk.optimizers.Adam(0.01), loss=SCCE, metrics=["accuracy"])
        if dist and RANK == 1:
            lk.random.set_seed(7)   # pipeline seeds come from rank 0 anyway
        ds = pipeline()
        h = model.fit(ds, epochs=2, verbose=0, validation_data=ds)
        ev = model.evaluate(ds, verbose=0, return_dict=True)
        return flat_weights(model), h.history, ev

    ref, href, evref = fit(False)
    w, h, ev = fit(True)
    assert same_on_all_ranks(w), "weights differ across ranks"
    RESULTS["fit_dataset"] = {"max_diff": float(np.abs(w - ref).max()),
                              "history": h, "history_ref": href, "eval": ev, "eval_ref": evref}


# ---- variables take rank 0's values ----------------------------------------------------------
def case_broadcast():
    lk.random.set_seed(100 + RANK)   # every rank initialises differently
    outside = mlp()
    with strategy.scope():
        inside = mlp()                # broadcast from rank 0 as each variable is created
    mine = flat_weights(inside)
    rank0 = strategy.gather(lk.constant(mine[None]), axis=0).numpy()[0]
    lk.random.set_seed(100)           # rank 0's seed: what rank 0 built
    mlp()                             # (the model built outside the scope)
    ref = flat_weights(mlp())
    RESULTS["broadcast"] = {"inside_same": same_on_all_ranks(mine),
                            "inside_is_rank0s": bool(np.array_equal(rank0, ref)),
                            "outside_same": same_on_all_ranks(flat_weights(outside))}
    lk.distribute.broadcast_variables(outside.weights, root_rank=N - 1)
    last = strategy.gather(lk.constant(flat_weights(outside)[None]), axis=0).numpy()[-1]
    RESULTS["broadcast"].update(
        outside_after=same_on_all_ranks(flat_weights(outside)),
        outside_is_last_ranks=bool(np.array_equal(flat_weights(outside), last)))


# ---- sharding: every element exactly once ---------------------------------------------------
def gather_ints(values) -> list:
    a = np.asarray(values, np.int64).reshape(-1)
    return strategy.gather(lk.constant(a), axis=0).numpy().tolist()


class StopAt(lk.callbacks.Callback):
    def __init__(self, epoch, batch):
        super().__init__()
        self.at = (epoch, batch)

    def on_epoch_begin(self, epoch, logs=None):
        self.epoch = epoch

    def on_train_batch_end(self, batch, logs=None):
        if (self.epoch, batch) == self.at:
            self.model.stop_training = True


def case_shard():
    # DATA: elements of range(47) through map + batch(5), two epochs
    ds = lk.data.Dataset.range(47).map(lambda v: v * 3).batch(5)
    dist = strategy.experimental_distribute_dataset(ds)
    epochs = []
    for _ in range(2):
        mine = [int(v) for b in dist for v in b.numpy()]
        epochs.append(sorted(gather_ints(mine)))
    # FILE: a Parquet file with 7 row groups of different sizes, written by rank 0
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = os.path.join(OUT, "rows.parquet")
    if RANK == 0:
        ids = np.arange(200)
        with pq.ParquetWriter(path, pa.schema([("id", pa.int64())])) as w:
            for lo, hi in [(0, 10), (10, 50), (50, 55), (55, 120), (120, 121), (121, 180),
                           (180, 200)]:
                w.write_table(pa.table({"id": ids[lo:hi]}))
    strategy.reduce("sum", 1.0, axis=None)   # a barrier: the file exists now
    pds = lk.data.Dataset.from_parquet(path).map(lambda r: r["id"]).batch(8)
    pdist = strategy.experimental_distribute_dataset(pds)
    rows = [int(v) for b in pdist for v in b.numpy()]
    node = pdist._dataset._node
    while node.inputs:
        node = node.inputs[0]
    groups = node.row_groups[0]
    # distribute_datasets_from_function: the function shards and batches itself
    fn_ds = strategy.distribute_datasets_from_function(
        lambda ctx: lk.data.Dataset.range(30).shard(ctx.num_input_pipelines,
                                                    ctx.input_pipeline_id).batch(
            ctx.get_per_replica_batch_size(3 * N)))
    from_fn = sorted(gather_ints([int(v) for b in fn_ds for v in b.numpy()]))
    RESULTS["shard"] = {"data_epochs": epochs, "data_how": dist._how, "from_function": from_fn,
                        "file_rows": sorted(gather_ints(rows)), "file_how": pdist._how,
                        "groups": gather_ints(groups)}
    # fit over the uneven Parquet shards: ranks run different numbers of steps
    lk.random.set_seed(0)
    xs = np.random.default_rng(1).normal(size=(200, 3)).astype("float32")
    table = lambda r: (lk.gather(lk.constant(xs), r["id"]), lk.cast(r["id"] % 2, "int64"))  # noqa: E731
    fds = lk.data.Dataset.from_parquet(path).map(table).batch(8)
    with strategy.scope():
        # a constraint: ranks without data in a step apply it too
        model = lk.Sequential([lk.Input((3,)), lk.layers.Dense(
            2, kernel_constraint=lk.constraints.MaxNorm(0.05))])
        model.compile(optimizer="sgd", loss=SCCE)
    # the weights before every update, on every rank (fit's last broadcast would hide
    # ranks that drifted apart during training)
    before = []
    update = model.optimizer._update_work
    model.optimizer._update_work = lambda work: (before.append(flat_weights(model)),
                                                 update(work))
    # a batch-level callback on rank 0 stops training at its 4th batch of the 2nd epoch;
    # ranks without data at that step take part in the decision too
    model.fit(fds, epochs=2, verbose=0, callbacks=[StopAt(1, 3)])
    steps = int(model.optimizer.iterations.numpy())
    RESULTS["shard"].update(same_weights=same_on_all_ranks(flat_weights(model)),
                            same_every_step=same_on_all_ranks(np.stack(before)),
                            iterations=gather_ints([steps]),
                            my_batches=gather_ints([strategy.experimental_distribute_dataset(
                                fds)._dataset.cardinality()]),
                            # a distributed iterator runs every rank for the longest shard
                            steps=gather_ints([len(list(strategy
                                                        .experimental_distribute_dataset(fds)))]))


# ---- rank-0-only files, every rank restores --------------------------------------------------
def case_checkpoint():
    x, y = data()
    with strategy.scope():
        model = mlp()
        model.compile(optimizer="adam", loss=SCCE)
    cb = lk.callbacks.ModelCheckpoint(os.path.join(OUT, f"w-rank{RANK}-{{epoch}}.lkw"),
                                      save_best_only=False)
    model.fit(x, y, batch_size=16, epochs=2, verbose=0, callbacks=[cb])
    model.save_weights(os.path.join(OUT, f"final-rank{RANK}.lkw"))
    for fmt in ("layerkit", "h5"):   # whole-model archives, both weights formats
        model.save(os.path.join(OUT, f"model-{fmt}-rank{RANK}.keras"), weights_format=fmt)
    ckpt = lk.Checkpoint(model=model, optimizer=model.optimizer)
    own = lk.CheckpointManager(ckpt, os.path.join(OUT, f"mgr-rank{RANK}"))
    own.save()
    shared = lk.CheckpointManager(ckpt, os.path.join(OUT, "shared"))
    path = shared.save()
    saved = flat_weights(model)
    strategy.reduce("sum", 1.0, axis=None)   # rank 0 has written
    for v in model.trainable_variables:       # scramble, then every rank restores
        v.assign(np.full(v.shape, RANK + 5.0, np.float32))
    ckpt.restore(path).assert_consumed()
    loaded = [lk.models.load_model(os.path.join(OUT, f"model-{fmt}-rank0.keras"))
              for fmt in ("layerkit", "h5")]
    loaded_same = [same_on_all_ranks(flat_weights(m)) for m in loaded]   # collectives
    RESULTS["checkpoint"] = {"loaded_equal": all(loaded_same) and all(
                                 np.array_equal(flat_weights(m), saved) for m in loaded),
                             "files": sorted(os.listdir(OUT)),
                             "mgr_rank0": sorted(os.listdir(os.path.join(OUT, "mgr-rank0"))),
                             "restored_equal": same_on_all_ranks(flat_weights(model))
                             and bool(np.array_equal(flat_weights(model), saved)),
                             "path": os.path.basename(path)}


# ---- custom loop: strategy.run + all-reducing apply_gradients --------------------------------
def case_custom_loop():
    x, y = data(100)   # the last global batch (4 examples) is rank 0's: the others get
    gb = 12            # empty batches for that step

    def run(dist):
        lk.random.set_seed(3)
        with strategy.scope() if dist else contextlib.nullcontext():
            model = mlp()
            opt = lk.optimizers.SGD(0.05)
        ds = lk.data.Dataset.from_tensor_slices((x, y)).batch(gb)
        if dist:
            ds = strategy.experimental_distribute_dataset(ds)

        def step(batch):
            xb, yb = batch
            with lk.GradientTape() as tape:
                per = lk.losses.sparse_categorical_crossentropy(yb, model(xb), from_logits=True)
                loss = lk.nn.compute_average_loss(per, global_batch_size=gb)
            grads = tape.gradient(loss, model.trainable_variables)
            opt.apply_gradients(zip(grads, model.trainable_variables))
            return loss
        losses = []
        for batch in ds:
            loss = strategy.run(step, args=(batch,)) if dist else step(batch)
            losses.append(float(strategy.reduce("sum", loss, axis=None)) if dist
                          else float(loss))
        return flat_weights(model), losses

    ref, lref = run(False)
    w, losses = run(True)
    v = np.arange(6, dtype=np.float32).reshape(2, 3) * (RANK + 1)
    big = np.arange(1_048_579, dtype=np.float32) * (RANK + 1)   # the large-array path
    mean = lk.distribute.allreduce([lk.constant(v), lk.constant(np.float32(RANK))])
    big_sum = lk.distribute.allreduce(big, op="sum").numpy()
    total = lk.distribute.allreduce({"v": v}, op="sum")["v"]
    big_mean = lk.distribute.allreduce([big])[0].numpy()    # divided in this rank's part
    ints = lk.distribute.allreduce(np.arange(5) * (RANK + 1))   # int64 -> float32 mean
    # results handed out are never overwritten by later calls; dropped ones are recycled
    held = lk.distribute.allreduce([v, big], op="sum")
    held_view = np.asarray(held[1])[10:20]   # a zero-copy view of the result
    later = [lk.distribute.allreduce([v * 2, big * 2], op="sum") for _ in range(3)]
    red_mean_axis = strategy.reduce(lk.distribute.ReduceOp.MEAN, lk.constant(v), axis=0)
    ranks = np.arange(1, N + 1, dtype=np.float32)
    base = np.arange(6, dtype=np.float32).reshape(2, 3)
    RESULTS["custom_loop"] = {
        "max_diff": float(np.abs(w - ref).max()), "losses": losses, "losses_ref": lref,
        "allreduce_mean_ok": bool(np.allclose(mean[0].numpy(), base * ranks.mean())
                                  and np.isclose(float(mean[1]), (N - 1) / 2)),
        "allreduce_sum_ok": bool(np.allclose(total.numpy(), base * ranks.sum())
                                 and np.array_equal(big_sum, np.arange(1_048_579, dtype=np.float32)
                                                    * ranks.sum())),
        "allreduce_big_mean_ok": bool(np.array_equal(
            big_mean, np.arange(1_048_579, dtype=np.float32) * ranks.sum() / np.float32(N))),
        "allreduce_int_mean_ok": bool(ints.dtype == np.float32 and np.allclose(
            ints.numpy(), np.arange(5) * ranks.mean())),
        "allreduce_held_ok": bool(
            np.array_equal(held[0].numpy(), base * ranks.sum())
            and np.array_equal(held[1].numpy(), np.arange(1_048_579, dtype=np.float32)
                               * ranks.sum())
            and np.array_equal(held_view, np.arange(10, 20, dtype=np.float32) * ranks.sum())
            and all(np.array_equal(t[0].numpy(), 2 * base * ranks.sum()) for t in later)),
        "reduce_mean_axis_ok": bool(np.allclose(red_mean_axis.numpy(),
                                                (base * ranks[:, None, None]).mean(axis=(0, 1)))),
        "same_weights": same_on_all_ranks(w)}


# ---- callbacks run on rank 0 only; their decisions reach every rank ------------------------------
class Recorder(lk.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.calls = []

    def on_epoch_end(self, epoch, logs=None):
        self.calls.append(epoch)

    def on_train_batch_end(self, batch, logs=None):
        if batch == 0 and len(self.calls) == 2:
            self.model.stop_training = True   # decided on rank 0 only


class Warmup(lk.callbacks.Callback):
    """Sets the learning rate before every batch (on rank 0 only)."""

    def on_train_batch_begin(self, batch, logs=None):
        self.model.optimizer.learning_rate = 0.01 * (batch + 1)


def case_callbacks():
    x, y = data()
    with strategy.scope():
        model = mlp()
        model.compile(optimizer=lk.optimizers.SGD(0.1), loss=SCCE)
    rec = Recorder()
    sched = lk.callbacks.LearningRateScheduler(lambda epoch, lr: 0.1 / (epoch + 1))
    h = model.fit(x, y, batch_size=10, epochs=6, verbose=0, callbacks=[rec, sched])
    # 103 examples in batches of 10 over N ranks: the last batch leaves some ranks
    # without data, which must still take rank 0's per-batch learning rates
    lk.random.set_seed(0)
    with strategy.scope():
        warm = mlp()
        warm.compile(optimizer=lk.optimizers.SGD(0.1), loss=SCCE)
    warm.fit(x, y, batch_size=10 if N == 2 else 12, epochs=1, verbose=0, callbacks=[Warmup()])
    RESULTS["callbacks"] = {"calls": gather_ints([len(rec.calls)]),
                            "epochs": gather_ints([len(h.history["loss"])]),
                            "lr": strategy.gather(lk.constant(
                                [float(model.optimizer.learning_rate.numpy())]), 0).numpy()
                            .tolist(),
                            "iterations": gather_ints([int(model.optimizer.iterations.numpy())]),
                            "warmup_same_weights": same_on_all_ranks(flat_weights(warm)),
                            "warmup_lr": float(warm.optimizer.learning_rate.numpy())}


# ---- exact resume after a killed run -----------------------------------------------------------
def case_resume(mode: str):
    gb = 12
    lk.random.set_seed(1)
    x = np.random.default_rng(0).normal(size=(60, 5)).astype("float32")
    y = (x @ np.arange(5, dtype=np.float32)).reshape(-1, 1)
    with strategy.scope():
        model = lk.Sequential([lk.Input((5,)), lk.layers.Dense(8, activation="tanh"),
                               lk.layers.Dense(1)])
        opt = lk.optimizers.Adam(0.01)
    ds = lk.data.Dataset.from_tensor_slices((x, y)).shuffle(60).batch(gb).repeat()
    it = iter(strategy.experimental_distribute_dataset(ds))
    ckpt = lk.Checkpoint(model=model, optimizer=opt, data=it)
    manager = lk.CheckpointManager(ckpt, os.path.join(OUT, f"ckpt-{mode}"), max_to_keep=2)
    if mode == "resume":
        ckpt.restore(os.path.join(OUT, "ckpt-kill")).assert_existing_objects_matched()
        manager = lk.CheckpointManager(ckpt, os.path.join(OUT, "ckpt-kill"), max_to_keep=2)

    def step(batch):
        xb, yb = batch
        with lk.GradientTape() as tape:
            per = lk.reduce_mean(lk.square(model(xb, training=True) - yb), axis=-1)
            loss = lk.nn.compute_average_loss(per, global_batch_size=gb)
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))

    for s in range(int(opt.iterations.numpy()), 20):
        if mode == "kill" and s == 13 and RANK == 1:
            os.kill(os.getpid(), signal.SIGKILL)
        strategy.run(step, args=(next(it),))
        if (s + 1) % 4 == 0:
            manager.save()
    if RANK == 0:
        np.save(os.path.join(OUT, f"final-{mode}.npy"), flat_weights(model))


# ---- failures ----------------------------------------------------------------------------------
def _train_until(stall):
    """A custom loop whose last rank calls ``stall(step)`` before each step."""
    x, y = data()
    with strategy.scope():
        model = mlp()
        opt = lk.optimizers.SGD(0.1)
    for s in range(10):
        if RANK == N - 1:
            stall(s)
        with lk.GradientTape() as tape:
            loss = lk.reduce_mean(SCCE(y, model(x)))
        opt.apply_gradients(zip(tape.gradient(loss, model.trainable_variables),
                                model.trainable_variables))


def case_raise():
    def boom(s):
        if s == 3:
            raise ValueError(f"boom on rank {RANK} at step {s}")
    _train_until(boom)


def case_hang():
    def stuck(s):
        if s == 2:
            time.sleep(120)   # a rank stuck outside the collectives
    _train_until(stuck)


def case_mismatch():
    with strategy.scope():
        lk.Sequential([lk.Input((8,)), lk.layers.Dense(4 + RANK)])


SUITE = {"broadcast": case_broadcast, "fit_arrays": case_fit_arrays,
         "fit_dataset": case_fit_dataset, "shard": case_shard, "checkpoint": case_checkpoint,
         "custom_loop": case_custom_loop, "callbacks": case_callbacks}

if __name__ == "__main__":
    if CASE == "suite":
        for fn in SUITE.values():
            fn()
    elif CASE.startswith("resume-"):
        case_resume(CASE.split("-", 1)[1])
    else:
        {"raise": case_raise, "hang": case_hang, "mismatch": case_mismatch}[CASE]()
    if RANK == 0 and RESULTS:
        with open(os.path.join(OUT, f"{CASE}.json"), "w") as f:
            json.dump(RESULTS, f)
    print(f"rank {RANK}: {CASE} done", flush=True)
