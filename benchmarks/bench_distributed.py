"""lk.distribute benchmarks (issue 17): all-reduce bandwidth, and 2-rank training against
the machine's own limit.

1. All-reduce, 2 ranks on this machine: ``lk.distribute.allreduce`` of a list of arrays
   (sum and mean) and the gradient path ``fit`` uses (mean over the global batch), against
   raw mpi4py on the same bytes: ``raw`` = the faster of ``Allreduce`` and
   ``Iallreduce``+``Wait`` in place on ONE preallocated flat buffer (the strict
   baseline); ``raw each`` = an in-place ``Allreduce`` of each array of the layout;
   ``floor`` = packing the arrays into one preallocated buffer, then ``raw``'s call (the
   least a fused reduction of arrays that must not be written costs). Layouts: one 16 MB
   array; the CNN's gradients (1.7 MB in 8 arrays); 16 MB as 64 arrays of 256 KB; 4 MB
   as 1,000 arrays of 4 KB. Medians of interleaved rounds, each call after a barrier.
   Also a raw size sweep (latency and bandwidth of MPI on this machine).
2. Overlap: does an ``Iallreduce`` progress while the rank computes (GEMMs), with mpich's
   default progress and with its progress thread (``MPIR_CVAR_ASYNC_PROGRESS=1``)?
3. Training the CNN of bench_training.py (batch 64 per process, SGD momentum, ``fit``):
   two independent 1-thread trainings running at once (the machine's own limit for two
   processes) against 2 ranks x 1 thread with ``MultiWorkerMirroredStrategy`` (global batch
   128), alternating, in the same run; also one 1-thread training alone, for the
   machine's 2-process scaling. Throughput is samples/s from the median epoch time
   (each epoch 30 steps, the first epoch, with the traces, left out).
4. The scaling model of docs/distributed.md evaluated with this run's constants: checked
   against the 2-rank measurement, and predicted for 8-64 nodes on 10 and 25 Gb/s.

Processes: this script starts the others (``mpiexec -n 2`` for the ranks, plain
subprocesses for the independent trainings) and unsets OPENBLAS_CORETYPE and
OPENBLAS_L2_SIZE for itself and them (see _common.py). BLAS runs on 1 thread in every
training process: the ranks limit themselves (``MultiWorkerMirroredStrategy`` gives each of
the 2 ranks its share of the 2 cores), the independent ones call the same limiter.
The load average is printed at the start and the end: figures taken under load are noisy.

Run: python benchmarks/bench_distributed.py [--quick] [--allreduce-only | --progress-only]
"""
from __future__ import annotations

import json
import os
import pathlib
import statistics
import subprocess
import sys
import time

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:0] = [str(HERE), str(ROOT)]   # this checkout's layerkit
from _common import clean_blas_env, table  # noqa: E402

QUICK = "--quick" in sys.argv
ALLREDUCE_ONLY = "--allreduce-only" in sys.argv   # section 1 only
PROGRESS_ONLY = "--progress-only" in sys.argv     # section 2 only
STEPS = 30          # per epoch
EPOCHS = 4 if QUICK else 7
ROUNDS = 1 if QUICK else 3
BATCH = 64          # per process
NET_LATENCY = 30e-6  # per message on a 10-25 Gb/s Ethernet with TCP MPI (assumed, not measured)


# ---- workers (run in the child processes) -------------------------------------------------
def _cnn(lk):
    from layerkit import layers

    return lk.Sequential([
        lk.Input(shape=(28, 28, 1)),
        layers.Conv2D(32, 3, padding="same", activation="relu"), layers.MaxPooling2D(2),
        layers.Conv2D(64, 3, padding="same", activation="relu"), layers.MaxPooling2D(2),
        layers.Flatten(), layers.Dense(128, activation="relu"), layers.Dense(10)])


def worker_train(dist: bool) -> None:
    """Train the CNN for EPOCHS epochs of STEPS steps; print epoch times as JSON."""
    import numpy as np

    import layerkit as lk
    from layerkit.distribute import _mpi

    strategy = lk.distribute.MultiWorkerMirroredStrategy() if dist else None
    if not dist:
        _mpi.limit_threads(2)          # one thread, as each of 2 ranks on 2 cores
    n = strategy.num_replicas_in_sync if dist else 1
    rng = np.random.default_rng(0)
    x = rng.random((BATCH * n * STEPS, 28, 28, 1), dtype=np.float32)
    y = rng.integers(0, 10, len(x))
    times, reduce_time = [], [0.0]
    scope = strategy.scope() if dist else __import__("contextlib").nullcontext()
    with scope:
        model = _cnn(lk)
        model.compile(optimizer=lk.optimizers.SGD(0.01, momentum=0.9),
                      loss=lk.losses.SparseCategoricalCrossentropy(from_logits=True))
    if dist:   # time spent in the gradient all-reduce
        reducer = strategy._reducer
        inner = reducer.reduce

        def timed(*a, **k):
            t0 = time.perf_counter()
            try:
                return inner(*a, **k)
            finally:
                reduce_time[0] += time.perf_counter() - t0
        reducer.reduce = timed

    class Clock(lk.callbacks.Callback):
        def on_epoch_begin(self, epoch, logs=None):
            self.t0 = time.perf_counter()

        def on_epoch_end(self, epoch, logs=None):
            times.append(time.perf_counter() - self.t0)

    model.fit(x, y, batch_size=BATCH * n, epochs=EPOCHS, shuffle=False, verbose=0,
              callbacks=[Clock()])
    if not dist or strategy.cluster_resolver.task_id == 0:
        print(json.dumps({"epoch_times": times[1:], "samples_per_epoch": len(x),
                          "reduce_s_per_step": reduce_time[0] / (EPOCHS * STEPS),
                          "blas_threads": _mpi.current().blas_threads if dist else 1}),
              flush=True)


def worker_allreduce() -> None:
    """Time lk.distribute's all-reduce against raw mpi4py on several layouts; print JSON.

    Per layout, interleaved in each round (a barrier before each call):
    - ``raw``: the faster (by median) of a blocking ``Allreduce`` and an ``Iallreduce`` +
      ``Wait``, in place on ONE preallocated flat buffer of the layout's bytes: the best
      raw mpi4py does with the bytes already in one buffer (the strict baseline);
    - ``raw_each``: a blocking in-place ``Allreduce`` of each preallocated array of the
      layout in turn (raw mpi4py on the same layout);
    - ``floor``: ``np.concatenate`` of the layout's arrays into a preallocated flat buffer
      then ``raw``'s call: what any fused reduction of separate arrays that must not be
      written costs at least (the pack copy);
    - ``allreduce`` / ``allreduce_mean``: ``lk.distribute.allreduce(arrays, op=...)``
      (returns new Tensors: the arrays are not written);
    - ``gradients``: fit's path, ``strategy._reduce_gradients`` during a fit step (the
      mean over the global batch, results in persistent buffers).
    """
    import numpy as np

    import layerkit as lk
    from layerkit.distribute.training import FitState

    strategy = lk.distribute.MultiWorkerMirroredStrategy()
    world = strategy._world
    comm, MPI = world.comm, world.MPI
    cnn = [(3, 3, 1, 32), (32,), (3, 3, 32, 64), (64,), (3136, 128), (128,), (128, 10), (10,)]
    layouts = {
        "one 16 MB array": [(4 << 20,)],
        "CNN gradients (1.7 MB, 8 arrays)": cnn,
        "16 MB as 64 x 256 KB": [(1 << 16,)] * 64,
        "4 MB as 1000 x 4 KB": [(1024,)] * 1000,
    }
    reps = 15 if QUICK else 60
    out = {}
    for name, shapes in layouts.items():
        arrays = [np.ones(s, np.float32) for s in shapes]
        each = [np.ones(s, np.float32) for s in shapes]
        total = sum(a.size for a in arrays)
        flat = np.ones(total, np.float32)
        packed = np.empty(total, np.float32)
        work = [(None, g, None) for g in arrays]

        def gradients(work=work):
            strategy._fit = FitState(1.0)
            try:
                strategy._reduce_gradients(None, work)
            finally:
                strategy._fit = None

        def raw_each(each=each):
            for a in each:
                comm.Allreduce(MPI.IN_PLACE, a, op=MPI.SUM)

        def floor(arrays=arrays, packed=packed):
            np.concatenate(arrays, axis=None, out=packed)
            comm.Allreduce(MPI.IN_PLACE, packed, op=MPI.SUM)

        fns = {
            "raw_blocking": lambda flat=flat: comm.Allreduce(MPI.IN_PLACE, flat, op=MPI.SUM),
            "raw_nonblocking": lambda flat=flat: comm.Iallreduce(MPI.IN_PLACE, flat,
                                                                 op=MPI.SUM).Wait(),
            "raw_each": raw_each,
            "floor": floor,
            "allreduce": lambda arrays=arrays: lk.distribute.allreduce(arrays, op="sum"),
            "allreduce_mean": lambda arrays=arrays: lk.distribute.allreduce(arrays),
            "gradients": gradients,
        }
        samples = {k: [] for k in fns}
        for fn in fns.values():
            fn()
        for _ in range(reps):
            for k, fn in fns.items():
                comm.Barrier()
                t0 = time.perf_counter()
                fn()
                samples[k].append(time.perf_counter() - t0)
        r = {"bytes": total * 4, **{k: statistics.median(v) for k, v in samples.items()}}
        r["raw"] = min(r["raw_blocking"], r["raw_nonblocking"])
        out[name] = r
    # latency and bandwidth of raw MPI over a size sweep
    sweep = []
    for nbytes in (4 << 10, 64 << 10, 1 << 20, 4 << 20, 16 << 20):
        buf = np.ones(nbytes // 4, np.float32)
        ts = []
        for _ in range(reps):
            comm.Barrier()
            t0 = time.perf_counter()
            comm.Allreduce(MPI.IN_PLACE, buf, op=MPI.SUM)
            ts.append(time.perf_counter() - t0)
        sweep.append((nbytes, statistics.median(ts)))
    if world.rank == 0:
        print(json.dumps({"layouts": out, "sweep": sweep}), flush=True)


def worker_progress() -> None:
    """Does a non-blocking all-reduce progress while this rank computes? Print JSON.

    Per size, interleaved rounds (a barrier before each case; 1 BLAS thread per rank):
    ``compute`` (K small GEMMs, about as long as the all-reduce), ``allreduce`` (a blocking
    in-place Allreduce alone), ``sequential`` (compute, then Allreduce), ``overlap``
    (Iallreduce, compute, Wait) and ``polled`` (Iallreduce, then after each GEMM a
    ``Test``: what a hook between the backward pass's ops could do). The hidden fraction
    ``(sequential - case) / allreduce`` is 1 when the transfer is fully hidden, 0 when it
    is not overlapped at all.
    """
    import numpy as np

    import layerkit as lk

    strategy = lk.distribute.MultiWorkerMirroredStrategy()
    world = strategy._world
    comm, MPI = world.comm, world.MPI
    reps = 8 if QUICK else 25
    a = np.random.default_rng(world.rank).random((192, 192), dtype=np.float32)
    chunk = a @ a
    out = {}
    for nbytes in (1_686_568, 16 << 20):
        buf = np.ones(nbytes // 4, np.float32)

        def allreduce(buf=buf):
            comm.Allreduce(MPI.IN_PLACE, buf, op=MPI.SUM)

        def gemms(k):
            for _ in range(k):
                np.matmul(a, a, out=chunk)

        # K GEMMs taking about as long as the all-reduce (agreed on by both ranks)
        t_ar, t_g = [], []
        for _ in range(9):
            t_ar.append(_timed(comm, allreduce))
            t_g.append(_timed(comm, lambda: gemms(10)) / 10)
        k = np.array([max(1, round(statistics.median(t_ar) / statistics.median(t_g)))],
                     np.int64)
        comm.Allreduce(MPI.IN_PLACE, k, op=MPI.MAX)
        k = int(k[0])

        def overlap(buf=buf, k=k):
            req = comm.Iallreduce(MPI.IN_PLACE, buf, op=MPI.SUM)
            gemms(k)
            req.Wait()

        def polled(buf=buf, k=k):
            req = comm.Iallreduce(MPI.IN_PLACE, buf, op=MPI.SUM)
            for _ in range(k):
                np.matmul(a, a, out=chunk)
                req.Test()
            req.Wait()

        fns = {"compute": lambda k=k: gemms(k), "allreduce": allreduce,
               "sequential": lambda k=k: (gemms(k), allreduce()), "overlap": overlap,
               "polled": polled}
        samples = {name: [] for name in fns}
        for _ in range(reps):
            for name, fn in fns.items():
                samples[name].append(_timed(comm, fn))
        out[str(nbytes)] = {"gemms": k, **{n: statistics.median(v) for n, v in samples.items()}}
    if world.rank == 0:
        print(json.dumps(out), flush=True)


def _timed(comm, fn) -> float:
    comm.Barrier()
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


# ---- the driver -----------------------------------------------------------------------------
def _run(cmd: list, extra_env: dict | None = None) -> subprocess.Popen:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env.update(extra_env or {})
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env, cwd=str(ROOT))


def _result(p: subprocess.Popen) -> dict:
    out, err = p.communicate(timeout=1800)
    if p.returncode != 0:
        raise RuntimeError(f"benchmark worker failed ({p.returncode}):\n{err[-3000:]}")
    return json.loads(out.strip().splitlines()[-1])


def _throughput(r: dict) -> float:
    return r["samples_per_epoch"] / statistics.median(r["epoch_times"])


def progress(mpiexec: str, me: list) -> None:
    """Section 2: does a non-blocking all-reduce progress during computation?"""
    rows = []
    for label, env in (("mpich default (no progress thread)", {}),
                       ("MPIR_CVAR_ASYNC_PROGRESS=1 (a progress thread per rank)",
                        {"MPIR_CVAR_ASYNC_PROGRESS": "1"})):
        res = _result(_run([mpiexec, "-n", "2", *me, "--worker=progress"], env))
        for nbytes, r in res.items():
            hidden = {c: (r["sequential"] - r[c]) / r["allreduce"] for c in ("overlap", "polled")}
            rows.append([label, f"{int(nbytes) / 1e6:.1f} MB", r["gemms"],
                         f"{r['compute'] * 1e3:.1f}", f"{r['allreduce'] * 1e3:.1f}",
                         f"{r['sequential'] * 1e3:.1f}", f"{r['overlap'] * 1e3:.1f}",
                         f"{r['polled'] * 1e3:.1f}", f"{hidden['overlap']:.2f}",
                         f"{hidden['polled']:.2f}"])
    print("\nOverlap of a non-blocking all-reduce with computation, 2 ranks x 1 thread; "
          "medians in ms; hidden = (sequential - case) / allreduce (1: fully hidden)")
    print(table(rows, ["MPI progress", "bytes", "GEMMs", "compute", "allreduce",
                       "sequential", "Iallreduce+compute", "... + Test per GEMM",
                       "hidden", "hidden (polled)"]))


def main() -> None:
    clean_blas_env()
    from layerkit.distribute.launch import find_mpiexec

    mpiexec = find_mpiexec()
    me = [sys.executable, str(pathlib.Path(__file__).resolve())] + (["--quick"] if QUICK else [])
    print(f"load average at start: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} "
          f"{os.getloadavg()[2]:.2f} ({os.cpu_count()} cores)")

    if PROGRESS_ONLY:
        progress(mpiexec, me)
        return

    # 1. all-reduce
    ar = _result(_run([mpiexec, "-n", "2", *me, "--worker=allreduce"]))
    rows = []
    for name, r in ar["layouts"].items():
        raw = r["raw"]
        rows.append([name, f"{r['raw_blocking'] * 1e3:.3f}", f"{r['raw_nonblocking'] * 1e3:.3f}",
                     f"{r['raw_each'] * 1e3:.3f}", f"{r['floor'] * 1e3:.3f}",
                     f"{r['allreduce'] * 1e3:.3f}", f"{r['allreduce_mean'] * 1e3:.3f}",
                     f"{r['gradients'] * 1e3:.3f}", f"{raw / r['floor']:.2f}x",
                     f"{raw / r['allreduce']:.2f}x", f"{raw / r['allreduce_mean']:.2f}x",
                     f"{raw / r['gradients']:.2f}x", f"{r['raw_each'] / r['allreduce']:.2f}x"])
    print("\nAll-reduce, 2 ranks on this machine; medians in ms. raw = the faster of "
          "Allreduce / Iallreduce+Wait in place on one flat buffer of the same bytes; "
          "raw each = in-place Allreduce of each array; floor = pack copy + raw; "
          "ratios are bandwidth vs raw (raw time / time)")
    print(table(rows, ["layout", "raw Allreduce", "raw Iallreduce", "raw each", "floor",
                       "lk sum", "lk mean", "fit path", "floor/raw", "lk sum/raw",
                       "lk mean/raw", "fit/raw", "lk sum vs raw each"]))
    sweep = dict(ar["sweep"])
    print("raw sweep (bytes: ms): " + ", ".join(f"{s >> 10} KB: {t * 1e3:.3f}"
                                                 for s, t in ar["sweep"]))
    print(f"raw MPI constants on this machine: latency ~{sweep[4 << 10] * 1e6:.1f} us (4 KB), "
          f"bandwidth {(4 << 20) / sweep[4 << 20] / 1e9:.2f} GB/s at 4 MB, "
          f"{(16 << 20) / sweep[16 << 20] / 1e9:.2f} GB/s at 16 MB (2 ranks: the ring moves "
          f"2(N-1)/N = 1 x the bytes)")

    if ALLREDUCE_ONLY:
        return
    progress(mpiexec, me)
    if PROGRESS_ONLY:
        return

    # 3. training: 2 independent 1-thread processes vs 2 ranks x 1 thread, alternating
    pair, dist, alone = [], [], []
    for _ in range(ROUNDS):
        ps = [_run([*me, "--worker=single"]) for _ in range(2)]
        pair.append(sum(_throughput(_result(p)) for p in ps))
        d = _result(_run([mpiexec, "-n", "2", *me, "--worker=dist"]))
        dist.append(_throughput(d))
        alone.append(_throughput(_result(_run([*me, "--worker=single"]))))
    p_m, d_m, a_m = statistics.median(pair), statistics.median(dist), statistics.median(alone)
    step = 1 / (d_m / (2 * BATCH))
    print(f"\nCNN training (batch {BATCH} per process, fit, {STEPS} steps/epoch, medians of "
          f"{ROUNDS} rounds), samples/s:")
    print(table([["one 1-thread training alone", f"{a_m:.0f}", "1.00x"],
                 ["two independent 1-thread trainings at once", f"{p_m:.0f}",
                  f"{p_m / a_m:.2f}x"],
                 ["2 ranks x 1 thread (MultiWorkerMirroredStrategy)", f"{d_m:.0f}",
                  f"{d_m / a_m:.2f}x"]],
                ["case", "samples/s", "vs alone"]))
    ratio = d_m / p_m
    print(f"2 ranks vs two independent trainings: {ratio:.3f}x (target >= 0.93): "
          f"{'OK' if ratio >= 0.93 else 'BELOW'}")
    print(f"gradient all-reduce (waiting for the other rank included): "
          f"{d['reduce_s_per_step'] * 1e3:.2f} ms of a {step * 1e3:.1f} ms step "
          f"({d['reduce_s_per_step'] / step:.1%}); BLAS threads per rank: {d['blas_threads']}")
    print(f"rounds (pair / dist / alone): {[round(v) for v in pair]} / "
          f"{[round(v) for v in dist]} / {[round(v) for v in alone]}")

    # 4. the scaling model of docs/distributed.md, with this run's constants
    cnn = ar["layouts"]["CNN gradients (1.7 MB, 8 arrays)"]
    grad_bytes = cnn["bytes"]
    own = max(0.0, cnn["gradients"] - cnn["raw"])     # layerkit's cost beyond raw MPI
    t_pair = 2 * BATCH / p_m          # one step of each of the two independent trainings
    predicted = t_pair / (t_pair + cnn["gradients"])
    print(f"\nscaling model, checked on 2 ranks: a {t_pair * 1e3:.1f} ms step (two trainings "
          f"at once) + {cnn['gradients'] * 1e3:.2f} ms all-reduce of {grad_bytes / 1e6:.2f} MB "
          f"(raw MPI {cnn['raw'] * 1e3:.2f} ms + layerkit's own {own * 1e3:.2f} ms) -> "
          f"predicted {predicted:.3f}x of two independent trainings, measured {ratio:.3f}x; "
          f"in training the all-reduce took {d['reduce_s_per_step'] * 1e3:.2f} ms per step, "
          f"the rest is waiting for the slower rank")
    t_alone = BATCH / a_m
    rows = []
    for gbit in (10, 25):
        bw = gbit / 8 * 1e9
        for n in (8, 16, 32, 64):
            t_net = 2 * (n - 1) * NET_LATENCY + 2 * (n - 1) / n * grad_bytes / bw
            rows.append([f"{gbit} Gb/s", n, f"{t_net * 1e3:.2f}",
                         f"{t_alone / (t_alone + t_net + own):.3f}"])
    print(f"predicted efficiency, one 1-thread rank per node ({t_alone * 1e3:.1f} ms step, "
          f"latency {NET_LATENCY * 1e6:.0f} us per message, ring all-reduce, no overlap, "
          f"equal nodes):")
    print(table(rows, ["network", "nodes", "all-reduce ms", "efficiency"]))
    print(f"load average at end: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} "
          f"{os.getloadavg()[2]:.2f}")


if __name__ == "__main__":
    kind = next((a.split("=", 1)[1] for a in sys.argv if a.startswith("--worker=")), None)
    if kind == "allreduce":
        worker_allreduce()
    elif kind == "progress":
        worker_progress()
    elif kind in ("single", "dist"):
        worker_train(kind == "dist")
    else:
        main()
