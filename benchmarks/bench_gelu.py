"""GELU forward and forward + gradient on a large float32 array: layerkit vs NumPy vs torch.

Usage: python benchmarks/bench_gelu.py [--n 4194304] [--repeats 15] [--stat median|min]
                                       [--interleave] [--threads K]

Prints the median (or minimum) time of each variant's repeats and ratios to torch's
built-in gelu of the same form (when ``import torch`` works; torch stays optional).
The "NumPy op by op" rows evaluate the same formulas one whole-array ufunc at a time
(NumPy has no erf, so the exact form uses layerkit's rational approximation).

OpenBLAS: the environment may set OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE for old
OpenBLAS builds; they slow a current NumPy, so this script re-executes itself once
with both removed from its own environment (tests and CI keep them).
"""
from __future__ import annotations

import argparse
import os
import sys
import time

_BLAS_VARS = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
_MARK = "LAYERKIT_BENCH_REEXEC"

if any(v in os.environ for v in _BLAS_VARS) and _MARK not in os.environ:
    env = {k: v for k, v in os.environ.items() if k not in _BLAS_VARS}
    env[_MARK] = ",".join(f"{v}={os.environ[v]}" for v in _BLAS_VARS if v in os.environ)
    os.execve(sys.executable, [sys.executable, *sys.argv], env)

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import layerkit as lk  # noqa: E402
from layerkit import nn as lknn  # noqa: E402
from layerkit._core import tuning as _tuning  # noqa: E402
from layerkit.kernels import activation as _kact  # noqa: E402
from layerkit.kernels import blockwise as _bw  # noqa: E402

try:
    import torch
except ImportError:  # torch is optional
    torch = None


def _time_ms(fns: dict, repeats: int, interleave: bool, stat, clock=time.perf_counter) -> dict:
    """Median (or minimum) time of each variant.

    Interleaved rounds spread machine noise over all variants alike, but torch's
    OpenMP workers keep spinning for a while after each call and slow whatever runs
    next, and the variants' 16 MB allocations change glibc's heap trimming for each
    other; so by default each variant runs its repeats back to back (steady state).
    """
    times = {k: [] for k in fns}
    # Warm everything up first: the first calls after start-up run several times slower
    # (thread pools, the allocator's heap growing, page faults on fresh memory).
    for _ in range(3):
        for f in fns.values():
            f()
    if interleave:
        for _ in range(repeats):
            for k, f in fns.items():
                t0 = clock()
                f()
                times[k].append(clock() - t0)
    else:
        for k, f in fns.items():
            f()
            for _ in range(repeats):
                t0 = clock()
                f()
                times[k].append(clock() - t0)
            time.sleep(0.3)  # let spinning OpenMP workers settle before the next variant
    return {k: 1e3 * float(stat(v)) for k, v in times.items()}


# ---- NumPy op by op (whole arrays, fresh temporaries) --------------------------------
_P = [np.float32(v) for v in _kact._GP]
_Q = [np.float32(v) for v in _kact._GQ]
_K, _C = _kact.TANH_K, _kact.TANH_C


def np_gelu(x):
    a = np.minimum(np.abs(x), np.float32(20))
    p = ((a * _P[3] + _P[2]) * a + _P[1]) * a + _P[0]
    q = (((a + _Q[3]) * a + _Q[2]) * a + _Q[1]) * a + _Q[0]
    return np.maximum(x, np.float32(0)) - a * (p / q) * np.exp(a * a * np.float32(-0.5))


def np_gelu_grad(x, y, g):
    with np.errstate(invalid="ignore", divide="ignore"):
        d = y / x + x * np.exp(x * x * np.float32(-0.5)) * np.float32(_kact.INV_SQRT_2PI)
    return g * np.where(x == 0, np.float32(0.5), d)


def np_gelu_tanh(x):
    h = np.float32(0.5) * x
    return h + h * np.tanh(np.float32(_K) * (x + np.float32(_C) * x * x * x))


def np_gelu_tanh_grad(x, g):
    t = np.tanh(np.float32(_K) * (x + np.float32(_C) * x * x * x))
    du = np.float32(_K) * (np.float32(1) + np.float32(3 * _C) * x * x)
    return g * (np.float32(0.5) * (1 + t) + np.float32(0.5) * x * (1 - t * t) * du)


def np_softplus(x):
    return np.maximum(x, np.float32(0)) + np.log1p(np.exp(-np.abs(x)))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=4 * 1024 * 1024)
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--stat", choices=("median", "min"), default="median",
                    help="min is the better estimate on a machine busy with other work")
    ap.add_argument("--interleave", action="store_true",
                    help="interleave the variants' repeats instead of running them in turn")
    ap.add_argument("--threads", type=int, default=None,
                    help="override layerkit's kernel thread count (experiments)")
    ap.add_argument("--cpu-time", action="store_true",
                    help="one thread everywhere (layerkit and torch) and process CPU time "
                         "instead of wall time: robust on a machine busy with other work")
    args = ap.parse_args()
    if os.environ.get(_MARK):
        print(f"re-executed without {os.environ[_MARK]} (benchmark process only)")
    else:
        print("OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE not set: nothing to unset")
    try:
        from threadpoolctl import threadpool_info
        blas = [f"{i.get('internal_api')} {i.get('architecture')} ({i.get('num_threads')} threads)"
                for i in threadpool_info() if i.get("user_api") == "blas"]
        print("BLAS kernels:", ", ".join(blas) or "none loaded")
    except ImportError:
        pass
    if args.threads is not None:
        _bw.THREADS = max(1, args.threads)
    if args.cpu_time:
        _bw.THREADS = 1
        if torch is not None:
            torch.set_num_threads(1)
    print(f"n={args.n} float32, {args.stat} {'CPU' if args.cpu_time else 'wall'} time of "
          f"{args.repeats} "
          f"{'interleaved' if args.interleave else 'back-to-back'} repeats, "
          f"layerkit kernel threads={_bw.THREADS}, blocks={_tuning.NN_BLOCK} "
          f"({_tuning.NN_BLOCK_THREADED} when threaded)")

    rng = np.random.default_rng(0)
    x = rng.standard_normal(args.n).astype(np.float32)
    g = rng.standard_normal(args.n).astype(np.float32)
    xt, gt = lk.constant(x), lk.constant(g)

    def lk_fwd_grad(approximate):
        def run():
            with lk.GradientTape() as tape:
                tape.watch(xt)
                y = lknn.gelu(xt, approximate=approximate)
            return tape.gradient(y, xt, output_gradients=gt)
        return run

    y_exact = np_gelu(x)
    fns = {
        ("exact", "layerkit", "fwd"): lambda: lknn.gelu(xt),
        ("exact", "layerkit", "fwd+grad"): lk_fwd_grad(False),
        ("exact", "NumPy op by op", "fwd"): lambda: np_gelu(x),
        ("exact", "NumPy op by op", "fwd+grad"): lambda: np_gelu_grad(x, np_gelu(x), g),
        ("tanh", "layerkit", "fwd"): lambda: lknn.gelu(xt, approximate=True),
        ("tanh", "layerkit", "fwd+grad"): lk_fwd_grad(True),
        ("tanh", "NumPy op by op", "fwd"): lambda: np_gelu_tanh(x),
        ("tanh", "NumPy op by op", "fwd+grad"): lambda: (np_gelu_tanh(x),
                                                         np_gelu_tanh_grad(x, g)),
        ("softplus", "layerkit", "fwd"): lambda: lknn.softplus(xt),
        ("softplus", "NumPy op by op", "fwd"): lambda: np_softplus(x),
        ("softplus", "np.logaddexp", "fwd"): lambda: np.logaddexp(np.float32(0), x),
    }
    if torch is not None:
        tx = torch.from_numpy(x).requires_grad_(True)
        tg = torch.from_numpy(g)
        F = torch.nn.functional

        def torch_fwd_grad(form):
            def run():
                y = F.gelu(tx, approximate=form)
                return torch.autograd.grad(y, tx, tg)
            return run

        with torch.no_grad():
            fns[("exact", "torch", "fwd")] = lambda: F.gelu(tx.detach())
            fns[("tanh", "torch", "fwd")] = lambda: F.gelu(tx.detach(), approximate="tanh")
            fns[("softplus", "torch", "fwd")] = lambda: F.softplus(tx.detach())
        fns[("exact", "torch", "fwd+grad")] = torch_fwd_grad("none")
        fns[("tanh", "torch", "fwd+grad")] = torch_fwd_grad("tanh")
        print(f"torch {torch.__version__}, {torch.get_num_threads()} threads")
    else:
        print("torch not importable: torch rows skipped")

    # correctness of what is timed
    err = float(np.max(np.abs(lknn.gelu(xt).numpy() - y_exact)))
    assert err < 1e-6, f"layerkit gelu and the NumPy formula differ by {err}"

    clock = time.process_time if args.cpu_time else time.perf_counter
    ms = _time_ms(fns, args.repeats, args.interleave, getattr(np, args.stat), clock)
    print()
    print(f"{'form':9} {'implementation':16} {'fwd ms':>8} {'fwd+grad ms':>12} "
          f"{'fwd/torch':>10} {'f+g/torch':>10}")
    for form in ("exact", "tanh", "softplus"):
        for impl in ("layerkit", "NumPy op by op", "np.logaddexp", "torch"):
            if (form, impl, "fwd") not in ms:
                continue
            f = ms[(form, impl, "fwd")]
            fg = ms.get((form, impl, "fwd+grad"))
            tf, tfg = ms.get((form, "torch", "fwd")), ms.get((form, "torch", "fwd+grad"))
            fg_s = f"{fg:12.2f}" if fg is not None else f"{'-':>12}"
            r1 = f"{f / tf:10.2f}" if tf else f"{'-':>10}"
            r2 = f"{fg / tfg:10.2f}" if fg is not None and tfg else f"{'-':>10}"
            print(f"{form:9} {impl:16} {f:8.2f} {fg_s} {r1} {r2}")
    for form in ("exact", "tanh"):
        a, b = ms[(form, "layerkit", "fwd+grad")], ms[(form, "NumPy op by op", "fwd+grad")]
        print(f"{form}: layerkit fwd+grad is {b / a:.2f}x faster than NumPy op by op")
    floor = _pass_floor_ms(x, args.repeats, getattr(np, args.stat), clock)
    print(f"NumPy floor, one thread: one ufunc pass over n elements in {_tuning.NN_BLOCK}-element "
          f"blocks (L2-resident) takes {floor['mul']:.2f} ms (np.multiply), "
          f"{floor['exp']:.2f} ms (np.exp).")
    print(f"layerkit's exact kernels make {_EXACT_PASSES} such passes for forward + gradient, "
          f"2 of them exp.")
    tfg = ms.get(("exact", "torch", "fwd+grad"))
    if tfg:
        print(f"The 1.2x-of-torch budget for exact fwd+grad, {1.2 * tfg:.2f} ms, is "
              f"{1.2 * tfg / floor['mul']:.1f} multiply passes.")


# ufunc calls per element in _gelu32_block (23, one exp) and _gelu_grad32_block (8, one exp)
_EXACT_PASSES = 31


def _pass_floor_ms(x, repeats, stat, clock) -> dict:
    """Time of one block-wise ufunc pass over ``x`` (scratch in cache), for multiply and
    exp: 11 passes per block minus the 1 pass that reads ``x``, over 10."""
    a, b = np.empty(_tuning.NN_BLOCK, np.float32), np.empty(_tuning.NN_BLOCK, np.float32)

    def blocks(extra, f):
        def run():
            for i in range(0, x.size, _tuning.NN_BLOCK):
                xb = x[i:i + _tuning.NN_BLOCK]
                np.multiply(xb, xb, a[:xb.size])
                for _ in range(extra):
                    f(a[:xb.size], b[:xb.size])
        return run

    out = {}
    for name, f in (("mul", lambda u, v: np.multiply(u, u, v)),
                    ("exp", lambda u, v: np.exp(u, v))):
        runs = {0: blocks(0, f), 10: blocks(10, f)}
        t = _time_ms(runs, repeats, True, stat, clock)
        out[name] = (t[10] - t[0]) / 10
    return out


if __name__ == "__main__":
    main()
