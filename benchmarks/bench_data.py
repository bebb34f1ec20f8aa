"""Input pipeline throughput (layerkit.data) against plain Python/NumPy, pyarrow and, when
installed, torch's DataLoader and tf.data.

Run: python benchmarks/bench_data.py [--quick] [--only per_element,batch_first,cpu_heavy,
     shuffle_batch,parquet]
One run prints one table per workload: elements (or rows) per second as the median of
interleaved repeats, ratios, and the issue's target for each. Parquet cases run in a
fresh subprocess each, so that their peak RSS (VmHWM) is their own.
"""
from __future__ import annotations

import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from _common import clean_blas_env, table  # noqa: E402

clean_blas_env()

import numpy as np  # noqa: E402

import layerkit  # noqa: E402,F401
import layerkit.data as lkd  # noqa: E402

QUICK = "--quick" in sys.argv
REPEAT = 3 if QUICK else 5
Dataset = lkd.Dataset


def measure(cases: dict, n_elems: dict | int, repeat: int = REPEAT) -> dict:
    """Median elements/s of each case (a zero-arg function that runs one full pass)."""
    samples = {k: [] for k in cases}
    for _ in range(repeat):
        for name, fn in cases.items():
            t0 = time.perf_counter()
            fn()
            samples[name].append(time.perf_counter() - t0)
    n = n_elems if isinstance(n_elems, dict) else {k: n_elems for k in cases}
    return {k: n[k] / statistics.median(v) for k, v in samples.items()}


def fmt_rate(v: float) -> str:
    return f"{v / 1e6:.2f}M/s" if v >= 1e6 else f"{v / 1e3:.0f}k/s"


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
    r = measure(cases, N)
    ours, gen = r["layerkit map->batch(128)->prefetch(2)"], r["plain Python generator"]
    rows = [[k, fmt_rate(v), f"{v / ours:.2f}x ours"] for k, v in r.items()]
    print(table(rows, ["per element: 200k (32,) float32 + label, x*2+1", "elements/s", "ratio"]))
    out = [["per-element pipeline / plain generator", f"{ours / gen:.2f}",
            ">= 1/1.7 = 0.59", verdict(ours / gen >= 1 / 1.7)]]
    torch_rate = r.get("torch DataLoader(num_workers=0)")
    if torch_rate:
        out.append(["per-element pipeline / torch DataLoader(0)", f"{ours / torch_rate:.2f}",
                    ">= 1.5", verdict(ours / torch_rate >= 1.5)])
    return out


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
    r = measure(cases, N)
    ref = r["NumPy slicing, 128 rows"]
    rows = [[k, fmt_rate(v), f"{v / ref:.2f}x slicing(128)"] for k, v in r.items()]
    print(table(rows, ["batch-first: same data, map on whole batches", "elements/s", "ratio"]))
    best = max(r["layerkit batch(128)->map->prefetch(2)"], r["layerkit batch(128)->map (lk ops)"])
    big = r["layerkit batch(1024)->map (lk ops)"] / r["NumPy slicing, 1024 rows"]
    return [["batch-first(128) / NumPy slicing", f"{best / ref:.2f}", ">= 0.80",
             verdict(best / ref >= 0.8)],
            ["batch-first(1024) / NumPy slicing(1024)", f"{big:.2f}", "(>= 0.80)",
             verdict(big >= 0.8)]]


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
    t0 = time.perf_counter()
    for i in range(200):
        fn(i)
    return (time.perf_counter() - t0) / 200


def run_counting_cpu(ds) -> tuple:
    """Wall seconds and CPU seconds (this process + its reaped worker processes) of a pass."""
    c0, w0 = os.times(), time.perf_counter()
    it = iter(ds)
    for _ in it:
        pass
    it.close()  # joins worker processes, so their CPU time is counted
    c1, wall = os.times(), time.perf_counter() - w0
    cpu = sum(getattr(c1, f) - getattr(c0, f)
              for f in ("user", "system", "children_user", "children_system"))
    return wall, cpu


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


# ---- 4. shuffle + batch -------------------------------------------------------------------------
def shuffle_batch() -> list:
    n = 1_000_000
    ds = Dataset.range(n).shuffle(10_000, seed=0).batch(1024)

    def run():
        return sum(len(b) for b in ds)
    r = measure({"range(1M).shuffle(10k).batch(1024)": run}, n)
    v = r["range(1M).shuffle(10k).batch(1024)"]
    print(table([[k, fmt_rate(x)] for k, x in r.items()], ["shuffle + batch", "elements/s"]))
    return [["shuffle(10k)+batch(1024) elements/s", fmt_rate(v), ">= 5M/s", verdict(v >= 5e6)]]


# ---- 5. Parquet (each case in its own process, for peak RSS) ------------------------------------
PQ_CASES = ("layerkit", "pyarrow", "pyarrow-prebuffer-off", "pyarrow-numpy")


def parquet_case(case: str, path: str) -> None:
    import pyarrow.parquet as pq
    t0 = time.perf_counter()
    n = 0
    if case == "layerkit":
        for b in Dataset.from_parquet(path).batch(1024):
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


def parquet() -> list:
    out = []
    rows_big = 2_000_000
    with tempfile.TemporaryDirectory() as d:
        files = {}
        for label, rows, options in (("plain", rows_big // 2, PLAIN), ("plain", rows_big, PLAIN),
                                     ("default-writer", rows_big, {})):
            p = os.path.join(d, f"{label}{rows}.parquet")
            size = write_parquet(p, rows, options)
            files[(label, rows)] = p
            print(f"wrote {label} file: {rows:,} rows x 16 columns (8 float32, 8 int64), "
                  f"{size / 2**20:.0f} MB, row groups of 131,072 rows")
        runs = [(case, ("plain", rows_big)) for case in PQ_CASES]
        runs += [("layerkit", ("plain", rows_big // 2)), ("layerkit", ("default-writer", rows_big)),
                 ("pyarrow-numpy", ("default-writer", rows_big)), ("baseline", ("plain", rows_big))]
        results: dict = {}
        for _ in range(2 if QUICK else 3):
            for case, key in runs:
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
        out.append(["Parquet peak RSS 1M rows vs 2M rows", f"{rss_half} / {rss_big} MB",
                    "independent of size", verdict(rss_big <= rss_half * 1.15 + 10)])
    return out


def main() -> None:
    import threading
    print(f"layerkit.data benchmark (median of {REPEAT} interleaved runs; "
          f"{os.cpu_count()} CPUs; {'quick' if QUICK else 'full'})\n")
    summary = []
    sections = (per_element, batch_first, cpu_heavy, shuffle_batch, parquet)
    if "--only" in sys.argv:  # e.g. --only parquet
        wanted = sys.argv[sys.argv.index("--only") + 1].split(",")
        sections = [f for f in sections if f.__name__ in wanted]
    for section in sections:
        summary += section()
        print()
    print(table(summary, ["target", "measured", "goal", ""]))
    if threading.active_count() != 1:
        print(f"warning: {threading.active_count() - 1} background threads still running")


if __name__ == "__main__":
    if "--parquet-case" in sys.argv:
        i = sys.argv.index("--parquet-case")
        parquet_case(sys.argv[i + 1], sys.argv[i + 2])
    else:
        main()
