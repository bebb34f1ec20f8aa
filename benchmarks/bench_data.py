"""Input pipeline throughput (layerkit.data) against plain Python/NumPy, pyarrow and, when
installed, torch's DataLoader and tf.data.

Run: python benchmarks/bench_data.py [--quick] [--only per_element,batch_first,cpu_heavy,
     autotune,shuffle_batch,parquet]
One run prints one table per workload: elements (or rows) per second as the median of
interleaved repeats (short passes repeated to fill each sample), ratios, and the issue's
target for each. Single-threaded workloads also show elements per CPU-second, the
steadier figure when other processes share the machine (targets use wall-clock time).
Parquet cases run in a fresh subprocess each, so that their peak RSS (VmHWM) is their own.
"""
from __future__ import annotations

import math
import os
import pathlib
import resource
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
# the layerkit of this checkout, not an installed one (python benchmarks/bench_data.py)
sys.path.insert(1, str(pathlib.Path(__file__).resolve().parents[1]))
from _common import clean_blas_env, table  # noqa: E402

clean_blas_env()

import numpy as np  # noqa: E402

import layerkit  # noqa: E402,F401
import layerkit.data as lkd  # noqa: E402

QUICK = "--quick" in sys.argv
REPEAT = 3 if QUICK else 5
# Passes shorter than this are repeated within one sample: a 5 ms pass measured alone is
# at the mercy of one scheduler tick on a shared machine.
MIN_SAMPLE = 0.1 if QUICK else 0.25
Dataset = lkd.Dataset


def cpu_seconds() -> float:
    """CPU time of this process (all its threads) and of its reaped child processes."""
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def measure(cases: dict, n_elems: dict | int, repeat: int = REPEAT) -> tuple[dict, dict]:
    """Elements/s of each case (a zero-arg function that runs one full pass) by wall clock
    and per CPU-second: medians of interleaved samples. The CPU figure is the steadier
    one when other processes compete for the cores; the wall figure is the target's."""
    passes = {}
    for name, fn in cases.items():  # a warm-up pass, which also sizes the samples
        t0 = time.perf_counter()
        fn()
        passes[name] = max(1, math.ceil(MIN_SAMPLE / max(time.perf_counter() - t0, 1e-6)))
    wall: dict = {k: [] for k in cases}
    cpu: dict = {k: [] for k in cases}
    for _ in range(repeat):
        for name, fn in cases.items():
            c0, t0 = cpu_seconds(), time.perf_counter()
            for _ in range(passes[name]):
                fn()
            wall[name].append((time.perf_counter() - t0) / passes[name])
            cpu[name].append((cpu_seconds() - c0) / passes[name])
    n = n_elems if isinstance(n_elems, dict) else {k: n_elems for k in cases}
    return ({k: n[k] / statistics.median(v) for k, v in wall.items()},
            {k: n[k] / max(statistics.median(v), 1e-9) for k, v in cpu.items()})


def rate_rows(wall: dict, cpu: dict, ref: str, ref_label: str) -> list:
    return [[k, fmt_rate(wall[k]), f"{wall[k] / wall[ref]:.2f}x {ref_label}",
             fmt_rate(cpu[k]), f"{cpu[k] / cpu[ref]:.2f}x"] for k in wall]


RATE_HEADER = ["elements/s", "ratio", "per CPU-s", "ratio (CPU)"]


def fmt_rate(v: float) -> str:
    if v >= 1e6:
        return f"{v / 1e6:.2f}M/s"
    return f"{v / 1e3:.0f}k/s" if v >= 1e5 else f"{v / 1e3:.2f}k/s"


def verdict(ok: bool) -> str:
    return "meets" if ok else "MISSES"


# ---- 1. per-element pipeline -----------------------------------------------------------------
N = 200_000
RNG = np.random.default_rng(0)
X = RNG.random((N, 32), dtype=np.float32)
Y = RNG.integers(0, 10, N)


def consume(iterable) -> int:
    n = 0
    for _xb, yb in iterable:
        n += len(yb)
    return n


def plain_generator():
    for i in range(0, N, 128):
        j = min(i + 128, N)
        xs = [X[k] * 2 + 1 for k in range(i, j)]
        yield np.stack(xs), Y[i:j]


def per_element() -> list:
    pipe = Dataset.from_tensor_slices((X, Y)).map(lambda x, y: (x * 2 + 1, y)).batch(128)
    cases = {
        "layerkit map->batch(128)->prefetch(2)": lambda: consume(pipe.prefetch(2)),
        "layerkit without prefetch": lambda: consume(pipe),
        "plain Python generator": lambda: consume(plain_generator()),
    }
    try:
        import torch.utils.data as tud

        class DS(tud.Dataset):
            def __len__(self):
                return N

            def __getitem__(self, i):
                return X[i] * 2 + 1, Y[i]
        loader = tud.DataLoader(DS(), batch_size=128, num_workers=0)
        cases["torch DataLoader(num_workers=0)"] = lambda: consume(loader)
    except ImportError:
        pass
    try:
        import tensorflow as tf

        tds = tf.data.Dataset.from_tensor_slices((X, Y)).map(lambda x, y: (x * 2 + 1, y))
        tds = tds.batch(128).prefetch(2)
        cases["tf.data"] = lambda: consume(tds)
    except ImportError:
        pass
    ours = "layerkit map->batch(128)->prefetch(2)"
    r, c = measure(cases, N)
    print(table(rate_rows(r, c, ours, "ours"),
                ["per element: 200k (32,) float32 + label, x*2+1"] + RATE_HEADER))
    gen = "plain Python generator"
    out = [["per-element pipeline / plain generator", ratio_text(r, c, ours, gen),
            ">= 1/1.7 = 0.59", verdict(r[ours] / r[gen] >= 1 / 1.7)]]
    torch = "torch DataLoader(num_workers=0)"
    if torch in r:
        out.append(["per-element pipeline / torch DataLoader(0)", ratio_text(r, c, ours, torch),
                    ">= 1.5", verdict(r[ours] / r[torch] >= 1.5)])
    return out


def ratio_text(wall: dict, cpu: dict, a: str, b: str) -> str:
    return f"{wall[a] / wall[b]:.2f} (CPU {cpu[a] / cpu[b]:.2f})"


# ---- 2. batch-first ------------------------------------------------------------------------------
def numpy_slicing():
    for i in range(0, N, 128):
        yield X[i:i + 128] * 2 + 1, Y[i:i + 128]


def batch_first() -> list:
    bf = Dataset.from_tensor_slices((X, Y)).batch(128).map(lambda x, y: (x * 2 + 1, y))
    bf_np = Dataset.from_tensor_slices((X, Y)).batch(128).map(
        lambda x, y: (np.asarray(x) * 2 + 1, y))
    bf1024 = Dataset.from_tensor_slices((X, Y)).batch(1024).map(lambda x, y: (x * 2 + 1, y))

    def numpy_slicing_1024():
        for i in range(0, N, 1024):
            yield X[i:i + 1024] * 2 + 1, Y[i:i + 1024]
    cases = {
        "layerkit batch(128)->map->prefetch(2)": lambda: consume(bf.prefetch(2)),
        "layerkit batch(128)->map (lk ops)": lambda: consume(bf),
        "layerkit batch(128)->map (NumPy in the fn)": lambda: consume(bf_np),
        "NumPy slicing, 128 rows": lambda: consume(numpy_slicing()),
        "layerkit batch(1024)->map (lk ops)": lambda: consume(bf1024),
        "NumPy slicing, 1024 rows": lambda: consume(numpy_slicing_1024()),
    }
    r, c = measure(cases, N)
    ref = "NumPy slicing, 128 rows"
    print(table(rate_rows(r, c, ref, "slicing(128)"),
                ["batch-first: same data, map on whole batches"] + RATE_HEADER))
    best = max(("layerkit batch(128)->map->prefetch(2)", "layerkit batch(128)->map (lk ops)"),
               key=r.get)
    big, ref_big = "layerkit batch(1024)->map (lk ops)", "NumPy slicing, 1024 rows"
    return [["batch-first(128) / NumPy slicing", ratio_text(r, c, best, ref), ">= 0.80",
             verdict(r[best] / r[ref] >= 0.8)],
            ["batch-first(1024) / NumPy slicing(1024)", ratio_text(r, c, big, ref_big),
             "(>= 0.80)", verdict(r[big] / r[ref_big] >= 0.8)]]


# ---- 3. CPU-heavy map ---------------------------------------------------------------------------
BASE = np.random.default_rng(1).random((16, 40_000), dtype=np.float32)
LOOPS = [2000]


def numpy_work(x):
    a = BASE[int(x) % 16]
    r = np.sqrt(np.abs(np.sin(a) * np.cos(a))) + np.exp(-a)  # large ufunc loops release the GIL
    return np.float32(r.sum())


def python_work(x):
    s = 0
    for i in range(LOOPS[0]):  # pure Python: holds the GIL
        s += i * i % 7
    return x + s % 3


def calibrate(fn) -> float:
    """Seconds of CPU time per call of ``fn`` (thread CPU time, the least of 4 batches):
    the work sized by it stays the same when other processes slow the wall clock."""
    best = math.inf
    for _ in range(4):
        t0 = time.thread_time()
        for i in range(50):
            fn(i)
        best = min(best, (time.thread_time() - t0) / 50)
    return best


def run_counting_cpu(ds) -> tuple:
    """Wall seconds and CPU seconds (this process + its reaped worker processes) of a pass."""
    c0, w0 = cpu_seconds(), time.perf_counter()
    it = iter(ds)
    for _ in it:
        pass
    it.close()  # joins worker processes, so their CPU time is counted
    return time.perf_counter() - w0, cpu_seconds() - c0


def cpu_heavy() -> list:
    per = calibrate(python_work)
    LOOPS[0] = max(100, int(LOOPS[0] * 200e-6 / per))
    n = 2000 if QUICK else 5000
    out = []
    for label, fn in (("GIL-releasing NumPy", numpy_work), ("GIL-holding Python", python_work)):
        cost = calibrate(fn)
        src = Dataset.range(n)
        cases = {
            "serial": src.map(fn),
            "2 threads": src.map(fn, num_parallel_calls=2),
            "2 processes": src.map(fn, num_parallel_calls=2, use_processes=True),
        }
        samples: dict = {k: [] for k in cases}
        for _ in range(3):
            for k, ds in cases.items():
                samples[k].append(run_counting_cpu(ds))
        wall = {k: statistics.median(w for w, _ in v) for k, v in samples.items()}
        cpu = {k: statistics.median(c for _, c in v) for k, v in samples.items()}
        rows = [[k, fmt_rate(n / wall[k]), f"{wall['serial'] / wall[k]:.2f}x",
                 f"{cpu[k] / cpu['serial']:.2f}"] for k in cases]
        print(table(rows, [f"{label} map, {cost * 1e6:.0f} us/element, {n} elements",
                           "elements/s", "speed-up", "CPU / serial CPU"]))
        best = max(wall["serial"] / wall["2 threads"], wall["serial"] / wall["2 processes"])
        out.append([f"{label} map (~200 us), best parallel / serial", f"{best:.2f}", ">= 1.6",
                    verdict(best >= 1.6)])
    return out


# ---- 4. AUTOTUNE against every fixed setting ---------------------------------------------------
def run_closed(ds) -> int:
    """One full pass, closing the iterator (worker processes are joined, so their CPU
    time is counted)."""
    it = iter(ds)
    n = 0
    for _ in it:
        n += 1
    it.close()
    return n


def autotune() -> list:
    """num_parallel_calls=AUTOTUNE against serial and each fixed setting, per workload.

    "AUTOTUNE" reuses one Dataset: after the first pass (the warm-up) each pass starts
    with the choice the earlier ones made, as epochs of a training run do. "AUTOTUNE,
    first pass" builds a new Dataset for every sample, so every sample measures the
    inline probe, the trial and the switches too. Targets: AUTOTUNE at least 0.95x the
    best fixed setting on each workload; at least 1.6x serial for the GIL-holding
    function with processes allowed.
    """
    if QUICK:
        n_heavy, repeat = 1500, 3
    else:
        n_heavy, repeat = 4000, 5
    auto = lkd.AUTOTUNE
    per = calibrate(python_work)
    LOOPS[0] = max(100, int(LOOPS[0] * 200e-6 / per))
    cheap = lambda x, y: (x * 2 + 1, y)  # noqa: E731
    src = Dataset.from_tensor_slices((X, Y))
    workloads = [
        ("per element: map(x*2+1)->batch(128), 200k", N, False,
         lambda **kw: src.map(cheap, **kw).batch(128)),
        ("batch-first: batch(128)->map(x*2+1), 200k", N, False,
         lambda **kw: src.batch(128).map(cheap, **kw)),
        (f"GIL-releasing NumPy map (~200 us), {n_heavy}", n_heavy, False,
         lambda **kw: Dataset.range(n_heavy).map(numpy_work, **kw)),
        (f"GIL-releasing NumPy map, processes allowed, {n_heavy}", n_heavy, True,
         lambda **kw: Dataset.range(n_heavy).map(numpy_work, **kw)),
        (f"GIL-holding Python map (~200 us), processes allowed, {n_heavy}", n_heavy, True,
         lambda **kw: Dataset.range(n_heavy).map(python_work, **kw)),
    ]
    out = []
    for label, n, procs, build in workloads:
        fixed = {"serial": build(), "1 thread": build(num_parallel_calls=1),
                 "2 threads": build(num_parallel_calls=2)}
        if procs:
            fixed["2 processes"] = build(num_parallel_calls=2, use_processes=True)
        tuned = build(num_parallel_calls=auto, use_processes=procs)
        cases = {k: (lambda ds=ds: run_closed(ds)) for k, ds in fixed.items()}
        cases["AUTOTUNE"] = lambda ds=tuned: run_closed(ds)
        cases["AUTOTUNE, first pass"] = lambda b=build, p=procs: run_closed(
            b(num_parallel_calls=auto, use_processes=p))
        load0 = os.getloadavg()[0]
        r, c = measure(cases, n, repeat)
        it = iter(tuned)
        for _ in it:
            pass
        report = it.autotune_report()[0]
        it.close()
        # cores busy = CPU seconds per wall second: below 1 for serial, the machine is
        # shared; workers then gain only as much CPU as the scheduler gives this process
        rows = [[k, fmt_rate(r[k]), f"{r[k] / r['serial']:.2f}x", fmt_rate(c[k]),
                 f"{c[k] / c['serial']:.2f}x", f"{r[k] / c[k]:.2f}"] for k in cases]
        print(table(rows, [label, "rows/s", "vs serial", "per CPU-s", "vs serial (CPU)",
                           "cores busy"]))
        why = f"{report['function_us']:.0f} us/element, CPU fraction {report['cpu_fraction']}"
        print(f"AUTOTUNE chose {report['choice']} ({why}; trials: "
              f"{[t['elements_per_s'] for t in report['trials']] or 'none'}); load average "
              f"{load0:.1f} -> {os.getloadavg()[0]:.1f}")
        best = max(fixed, key=r.get)
        short = label.split(",")[0].split(":")[0]
        if procs and "GIL-holding" in label:
            out.append([f"AUTOTUNE / serial, {short} (processes allowed)",
                        f"{r['AUTOTUNE'] / r['serial']:.2f} (first pass "
                        f"{r['AUTOTUNE, first pass'] / r['serial']:.2f})", ">= 1.6",
                        verdict(r["AUTOTUNE"] / r["serial"] >= 1.6)])
        out.append([f"AUTOTUNE / best fixed ({best}), {short}" + (", processes allowed"
                                                                 if procs else ""),
                    f"{r['AUTOTUNE'] / r[best]:.2f} (first pass "
                    f"{r['AUTOTUNE, first pass'] / r[best]:.2f})", ">= 0.95",
                    verdict(r["AUTOTUNE"] / r[best] >= 0.95)])
    return out


# ---- 5. shuffle + batch -------------------------------------------------------------------------
def shuffle_batch() -> list:
    n = 1_000_000
    ds = Dataset.range(n).shuffle(10_000, seed=0).batch(1024)

    def run():
        return sum(len(b) for b in ds)
    r, c = measure({"range(1M).shuffle(10k).batch(1024)": run}, n)
    v = r["range(1M).shuffle(10k).batch(1024)"]
    print(table([[k, fmt_rate(x), fmt_rate(c[k])] for k, x in r.items()],
                ["shuffle + batch", "elements/s", "per CPU-s"]))
    return [["shuffle(10k)+batch(1024) elements/s", fmt_rate(v), ">= 5M/s", verdict(v >= 5e6)]]


# ---- 6. Parquet (each case in its own process, for peak RSS) ------------------------------------
PQ_CASES = ("layerkit", "pyarrow", "pyarrow-prebuffer-off", "pyarrow-numpy")
CRC = "plain+page-checksums"


def parquet_case(case: str, path: str) -> None:
    import pyarrow.parquet as pq
    t0 = time.perf_counter()
    n = 0
    if case in ("layerkit", "layerkit-checksums-off"):
        # checksums off: what from_parquet did before it verified them
        verify = case == "layerkit"
        for b in Dataset.from_parquet(path, verify_checksums=verify).batch(1024):
            n += len(b["c0"])
    elif case == "pyarrow":
        for rb in pq.ParquetFile(path).iter_batches(batch_size=1024):
            n += rb.num_rows
    elif case == "pyarrow-prebuffer-off":
        for rb in pq.ParquetFile(path, pre_buffer=False).iter_batches(batch_size=1024):
            n += rb.num_rows
    elif case == "baseline":
        pass
    elif case == "pyarrow-numpy":
        for rb in pq.ParquetFile(path, pre_buffer=False).iter_batches(batch_size=1024):
            cols = [c.to_numpy(zero_copy_only=False) for c in rb.columns]
            n += len(cols[0])
    dt = time.perf_counter() - t0
    hwm = 0
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM"):
                hwm = int(line.split()[1]) // 1024
    print(f"{n} {dt} {hwm}")


# Random floats and 40-bit ints do not compress, and pyarrow's default dictionary encoding
# makes such columns bigger and about 3x slower to decode; plain encoding without
# compression (96 bytes a row, about the 195 MB of shared/FACTS.md for 2M rows) is what
# a writer would choose for this data. "default-writer" rows show pyarrow's defaults.
PLAIN = dict(use_dictionary=False, compression="none")


def write_parquet(path: str, rows: int, options: dict) -> int:
    import pyarrow as pa
    import pyarrow.parquet as pq
    rng = np.random.default_rng(2)
    writer = None
    step = 131072
    for start in range(0, rows, step):
        m = min(step, rows - start)
        cols = {f"c{i}": (rng.random(m, dtype=np.float32) if i < 8 else
                          rng.integers(0, 1 << 40, m)) for i in range(16)}
        t = pa.table(cols)
        if writer is None:
            writer = pq.ParquetWriter(path, t.schema, **options)
        writer.write_table(t, row_group_size=step)
    writer.close()
    return os.path.getsize(path)


def warm_page_cache(path: str) -> None:
    """Read ``path`` once so that the timed run finds it in the page cache.

    This VM runs DAMON with a ``pageout`` scheme (/sys/kernel/mm/damon): file pages left
    idle for a while are evicted, and a 183 MB file then took 0.12 s instead of 0.03 s
    to ``cat``. Without this, the Parquet rows measured the virtual disk as much as the
    readers (15-27M rows/s for the same code). Every case gets the same treatment.
    """
    with open(path, "rb", buffering=0) as f:
        while f.read(8 << 20):
            pass


def parquet() -> list:
    out = []
    rows_big = 2_000_000
    with tempfile.TemporaryDirectory() as d:
        files = {}
        for label, rows, options in (("plain", rows_big // 2, PLAIN), ("plain", rows_big, PLAIN),
                                     (CRC, rows_big, dict(PLAIN, write_page_checksum=True)),
                                     ("default-writer", rows_big, {})):
            p = os.path.join(d, f"{label}{rows}.parquet")
            size = write_parquet(p, rows, options)
            files[(label, rows)] = p
            print(f"wrote {label} file: {rows:,} rows x 16 columns (8 float32, 8 int64), "
                  f"{size / 2**20:.0f} MB, row groups of 131,072 rows")
        os.sync()  # write the files back now, not while the cases read them
        runs = [(case, ("plain", rows_big)) for case in PQ_CASES]
        runs += [("layerkit", (CRC, rows_big)), ("layerkit-checksums-off", (CRC, rows_big))]
        runs += [("layerkit", ("plain", rows_big // 2)), ("layerkit", ("default-writer", rows_big)),
                 ("pyarrow-numpy", ("default-writer", rows_big)), ("baseline", ("plain", rows_big))]
        results: dict = {}
        for _ in range(2 if QUICK else 3):
            for case, key in runs:
                warm_page_cache(files[key])
                res = subprocess.run([sys.executable, __file__, "--parquet-case", case, files[key]],
                                     capture_output=True, text=True, check=True)
                n, dt, hwm = res.stdout.split()[-3:]
                results.setdefault((case, key), []).append((int(n) / float(dt), int(hwm)))
        base_rss = max(x[1] for x in results[("baseline", ("plain", rows_big))])
        rows_out = []
        for (case, (label, rows)), v in results.items():
            if case == "baseline":
                continue
            rss = max(x[1] for x in v)
            rows_out.append([f"{case} ({label}, {rows / 1e6:.0f}M rows)",
                             fmt_rate(statistics.median(x[0] for x in v)),
                             f"{rss} MB", f"{rss - base_rss:+d} MB"])
        print(table(rows_out, ["Parquet, 1024-row batches (one process per run)", "rows/s",
                               "peak RSS", "vs imports only"]))
        print(f"(a process that only imports numpy, pyarrow and layerkit peaks at {base_rss} MB)")
        big, half = ("layerkit", ("plain", rows_big)), ("layerkit", ("plain", rows_big // 2))
        ours = statistics.median(x[0] for x in results[big])
        rss_big = max(x[1] for x in results[big])
        rss_half = max(x[1] for x in results[half])
        out.append(["Parquet 1024-row batches rows/s", fmt_rate(ours), ">= 15M/s",
                    verdict(ours >= 15e6)])
        crc_on, crc_off = (statistics.median(x[0] for x in results[(c, (CRC, rows_big))])
                           for c in ("layerkit", "layerkit-checksums-off"))
        out.append(["Parquet with page checksums: verified / not verified",
                     f"{fmt_rate(crc_on)} / {fmt_rate(crc_off)}", ">= 15M/s verified",
                     verdict(crc_on >= 15e6)])
        out.append(["Parquet peak RSS 1M rows vs 2M rows", f"{rss_half} / {rss_big} MB",
                    "independent of size", verdict(rss_big <= rss_half * 1.15 + 10)])
    return out


def main() -> None:
    import threading
    print(f"layerkit.data benchmark (median of {REPEAT} interleaved runs; "
          f"{os.cpu_count()} CPUs; {'quick' if QUICK else 'full'}; load average "
          f"{os.getloadavg()[0]:.1f} at the start)\n")
    summary = []
    sections = (per_element, batch_first, cpu_heavy, autotune, shuffle_batch, parquet)
    if "--only" in sys.argv:  # e.g. --only parquet
        wanted = sys.argv[sys.argv.index("--only") + 1].split(",")
        sections = [f for f in sections if f.__name__ in wanted]
    for section in sections:
        summary += section()
        print()
    print(table(summary, ["target", "measured", "goal", ""]))
    print(f"load average {os.getloadavg()[0]:.1f} at the end: other processes' load lowers "
          f"wall-clock rates and parallel speed-ups; the CPU figures are steadier")
    if threading.active_count() != 1:
        print(f"warning: {threading.active_count() - 1} background threads still running")


if __name__ == "__main__":
    if "--parquet-case" in sys.argv:
        i = sys.argv.index("--parquet-case")
        parquet_case(sys.argv[i + 1], sys.argv[i + 2])
    else:
        main()
