"""Shared benchmark helpers: a clean BLAS environment and interleaved median timing.

Benchmarks unset OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE for their own process only
(the machine sets them for older OpenBLAS builds; they slow current NumPy). Tests and CI
keep them.
"""
from __future__ import annotations

import os
import statistics
import sys
import time
from collections.abc import Callable

_VARS = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")


def clean_blas_env() -> None:
    """Re-exec this script without the OpenBLAS overrides (once), and say so."""
    if any(v in os.environ for v in _VARS):
        env = {k: v for k, v in os.environ.items() if k not in _VARS}
        env["LAYERKIT_BENCH_REEXEC"] = "1"
        os.execvpe(sys.executable, [sys.executable, *sys.argv], env)
    if os.environ.get("LAYERKIT_BENCH_REEXEC"):
        print("note: OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE were unset for this benchmark process")
    # layerkit's malloc tuning is opt-in (lk.config.tune_malloc); the benchmarks opt in.
    if os.environ.get("LAYERKIT_MALLOC_TUNING") != "0":
        os.environ["LAYERKIT_MALLOC_TUNING"] = "1"
        if "layerkit" in sys.modules:
            sys.modules["layerkit"].config.tune_malloc()
        print("note: malloc tuning on (lk.config.tune_malloc); LAYERKIT_MALLOC_TUNING=0 skips it")


def pin_threads_from_argv() -> str | None:
    """The ``--threads N`` (or ``--threads=N``) value of this script's command line.

    BLAS reads its thread count when NumPy loads, so with the option set this re-executes
    the script once with OPENBLAS_NUM_THREADS and OMP_NUM_THREADS set to N (and without
    the OpenBLAS overrides, as :func:`clean_blas_env` would). Call it before importing NumPy.
    """
    argv = sys.argv
    threads = next((a.split("=", 1)[1] if "=" in a else argv[i + 2]
                    for i, a in enumerate(argv[1:]) if a.startswith("--threads")
                    and ("=" in a or i + 2 < len(argv))), None)
    if threads and os.environ.get("OPENBLAS_NUM_THREADS") != threads:
        env = {k: v for k, v in os.environ.items() if k not in _VARS}
        env["OPENBLAS_NUM_THREADS"] = env["OMP_NUM_THREADS"] = threads
        env["LAYERKIT_BENCH_REEXEC"] = "1"
        os.execve(sys.executable, [sys.executable, *argv], env)
    return threads


def timeit_interleaved(fns: dict[str, Callable], number: int, repeat: int = 15) -> dict:
    """Median seconds per call of each function, timed in interleaved rounds."""
    samples: dict[str, list] = {k: [] for k in fns}
    for fn in fns.values():  # warm up
        fn()
    for _ in range(repeat):
        for name, fn in fns.items():
            t0 = time.perf_counter()
            for _ in range(number):
                fn()
            samples[name].append((time.perf_counter() - t0) / number)
    return {k: statistics.median(v) for k, v in samples.items()}


def blas_threads(requested: str | None = None) -> int:
    """Threads NumPy's BLAS runs GEMMs on: ``requested`` (a ``--threads`` value) or what
    the environment set, else OpenBLAS's default (one per core)."""
    for value in (requested, os.environ.get("OPENBLAS_NUM_THREADS"),
                  os.environ.get("OMP_NUM_THREADS")):
        if value and value.isdigit() and int(value) > 0:
            return int(value)
    return os.cpu_count() or 1


def timed_blocks(fns: dict, number: int, repeat: int = 15, blocks: int = 5,
                 pause: float = 0.05, cpu: bool = False) -> dict:
    """Median seconds per call of each function, the libraries taking turns in blocks.

    Each block runs one library's function ``number`` times per round for a share of the
    rounds, after a ``pause`` (seconds). Blocks (rather than alternating single calls) keep
    one library's worker threads, which spin for a while after each call, from stealing
    the core that the next library's threads need; turns spread load from other
    processes over all libraries. The first block is a warm-up. OpenBLAS's idle worker
    busy-waits ~0.1 s after each threaded GEMM (measured), so a multi-threaded library
    timed after NumPy needs a pause longer than that. With ``cpu`` each value is a pair
    (wall seconds, CPU seconds of the process, all threads).
    """
    samples: dict = {k: [] for k in fns}
    per_block = max(1, -(-repeat // blocks))
    for b in range(blocks + 1):
        for name, fn in fns.items():
            time.sleep(pause)
            for _ in range(per_block if b else 1):
                t0, c0 = time.perf_counter(), time.process_time()
                for _ in range(number):
                    fn()
                if b:
                    samples[name].append(((time.perf_counter() - t0) / number,
                                          (time.process_time() - c0) / number))
    if cpu:
        return {k: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v))
                for k, v in samples.items()}
    return {k: statistics.median(w for w, _ in v) for k, v in samples.items()}


def try_import_torch():
    """torch if installed (never a dependency), with a fixed thread count.

    Default 1 thread (``--torch-threads=N`` to change): on this shared 2-core machine
    torch's spinning worker threads slow whatever runs next and swing its own medians
    5-10x under load, while NumPy's elementwise loops are single-threaded anyway.
    """
    try:
        import torch  # noqa: PLC0415
    except ImportError:
        return None
    n = next((int(a.split("=", 1)[1]) for a in sys.argv if a.startswith("--torch-threads=")), 1)
    torch.set_num_threads(n)
    print(f"note: torch uses {n} thread(s) (--torch-threads=N to change)")
    return torch


def table(rows: list[list], header: list[str]) -> str:
    cols = [header] + [[str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cols) for i in range(len(header))]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    lines = [fmt.format(*header), fmt.format(*("-" * w for w in widths))]
    lines += [fmt.format(*r) for r in cols[1:]]
    return "\n".join(lines)
