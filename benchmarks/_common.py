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


def try_import_torch():
    try:
        import torch  # noqa: PLC0415

        torch.set_num_threads(os.cpu_count() or 1)
        return torch
    except ImportError:
        return None


def table(rows: list[list], header: list[str]) -> str:
    cols = [header] + [[str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cols) for i in range(len(header))]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    lines = [fmt.format(*header), fmt.format(*("-" * w for w in widths))]
    lines += [fmt.format(*r) for r in cols[1:]]
    return "\n".join(lines)
