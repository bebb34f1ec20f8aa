"""Elementwise dispatch cost: operators, lk ops and NumPy-interop calls vs raw NumPy.

Run: python benchmarks/bench_elementwise_dispatch.py [--quick]
Times are medians of interleaved repeats in one run (microseconds per call, shape (4,)
float32 unless stated), plus erf on 1M float32/float64 elements against np.tanh.
"""
from __future__ import annotations

import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from _common import clean_blas_env, timeit_interleaved  # noqa: E402

clean_blas_env()

import numpy as np  # noqa: E402

import layerkit as lk  # noqa: E402

QUICK = "--quick" in sys.argv
REPEAT = 5 if QUICK else 15


def small_ops() -> None:
    a = np.random.default_rng(0).standard_normal(4).astype(np.float32)
    t = lk.constant(a)
    pairs = {
        "x*x + x": (lambda: a * a + a, lambda: t * t + t),
        "x * 2.0 (weak scalar)": (lambda: a * 2.0, lambda: t * 2.0),
        "exp(x)": (lambda: np.exp(a), lambda: lk.exp(t)),
        "maximum(x, 0.0)": (lambda: np.maximum(a, 0.0), lambda: lk.maximum(t, 0.0)),
        "x < 0.5": (lambda: a < 0.5, lambda: t < 0.5),
        "ndarray + Tensor": (lambda: a + a, lambda: a + t),
        "np.exp(Tensor)": (lambda: np.exp(a), lambda: np.exp(t)),
    }
    print(f"{'case':28s} {'numpy us':>9s} {'layerkit us':>12s} {'ratio':>6s}")
    for name, (fn_np, fn_lk) in pairs.items():
        r = timeit_interleaved({"np": fn_np, "lk": fn_lk}, number=20000, repeat=REPEAT)
        print(f"{name:28s} {r['np'] * 1e6:9.3f} {r['lk'] * 1e6:12.3f} {r['lk'] / r['np']:6.2f}")


def erf_throughput() -> None:
    x = np.random.default_rng(0).standard_normal(1 << 20)
    for dt in (np.float32, np.float64):
        xd = x.astype(dt)
        r = timeit_interleaved({"erf": lambda xd=xd: lk.erf(xd),
                                "tanh": lambda xd=xd: np.tanh(xd)}, number=3, repeat=REPEAT)
        print(f"1M {np.dtype(dt).name}: lk.erf {r['erf'] * 1e3:.2f} ms, "
              f"np.tanh {r['tanh'] * 1e3:.2f} ms")


if __name__ == "__main__":
    small_ops()
    erf_throughput()
