"""Convolution and pooling speed at the sizes of the issue-3 CNN (batch 64, 28x28x1).

Layers timed, forward and backward, each on its own: Conv2D 32 3x3 SAME on 28x28x1,
MaxPool 2 on 28x28x32, Conv2D 64 3x3 SAME on 14x14x32, MaxPool 2 on 14x14x64 (pool
inputs are ReLU outputs, so windows have ties). The first conv's backward is the filter
gradient only (its input is data); the second conv's is input + filter gradients.
Then the whole stack (conv, ReLU, pool, conv, ReLU, pool, sum) forward+backward through
each framework's autodiff.

Implementations:
  layerkit  layerkit.primitives.conv records (what lk.nn.* and the tape call)
  naive     textbook NumPy im2col: np.pad + sliding_window_view transposed and copied,
            col2im with np.add.at, max-pool backward by equality mask (no tie-break)
  torch     torch.nn.functional / aten backward kernels, NCHW (optional; skipped if
            torch is not installed)

Every figure is a median over repeats run in alternating per-implementation blocks
(see timed_blocks: load from other processes hits all implementations alike, and no
library runs while another library's worker threads are still spinning).

BLAS note: this script re-executes itself without OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE
(if set), so NumPy's OpenBLAS picks its own kernels for this CPU. Only this benchmark
process is affected.

Run: python benchmarks/bench_conv.py [--repeats 30] [--threads 1]
(--threads=1 gives steadier figures on a machine shared with other work.)
"""
from __future__ import annotations

import os
import sys

_BLAS_VARS = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
_THREADS = next((a.split("=", 1)[1] if "=" in a else sys.argv[i + 2]
                 for i, a in enumerate(sys.argv[1:]) if a.startswith("--threads")
                 and ("=" in a or i + 2 < len(sys.argv))), None)
if any(v in os.environ for v in _BLAS_VARS) or (
        _THREADS and os.environ.get("OPENBLAS_NUM_THREADS") != _THREADS):
    _env = {k: v for k, v in os.environ.items() if k not in _BLAS_VARS}
    _env["_BENCH_CONV_REEXEC"] = ",".join(v for v in _BLAS_VARS if v in os.environ)
    if _THREADS:  # BLAS reads its thread count at load time: set it before NumPy starts
        _env["OPENBLAS_NUM_THREADS"] = _env["OMP_NUM_THREADS"] = _THREADS
    os.execve(sys.executable, [sys.executable, *sys.argv], _env)

import argparse  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
from numpy.lib.stride_tricks import sliding_window_view  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import layerkit as lk  # noqa: E402
from layerkit.primitives import conv as C  # noqa: E402

try:
    import torch
    import torch.nn.functional as F
except ImportError:  # optional comparison
    torch = None

N = 64
SAME = ((1, 1), (1, 1))
ONE = (1, 1)


# ---- naive NumPy (textbook im2col) -----------------------------------------------------
def naive_cols(x, k=3):
    xp = np.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)))
    win = sliding_window_view(xp, (k, k), axis=(1, 2))  # (N, H, W, C, k, k)
    n, h, w, c = x.shape
    return win.transpose(0, 1, 2, 4, 5, 3).reshape(n * h * w, k * k * c)


def naive_conv(x, w):
    n, h, wd, _ = x.shape
    return (naive_cols(x) @ w.reshape(-1, w.shape[3])).reshape(n, h, wd, w.shape[3])


def naive_conv_bwd_filter(x, g, w_shape):
    return (naive_cols(x).T @ g.reshape(-1, w_shape[3])).reshape(w_shape)


def naive_conv_bwd_input(g, w, x_shape):
    n, h, wd, c = x_shape
    d = (g.reshape(-1, w.shape[3]) @ w.reshape(-1, w.shape[3]).T).reshape(n, h, wd, 3, 3, c)
    dx = np.zeros((n, h + 2, wd + 2, c), g.dtype)
    ii, jj = np.meshgrid(np.arange(h), np.arange(wd), indexing="ij")
    for a in range(3):
        for b in range(3):
            np.add.at(dx, (slice(None), ii + a, jj + b), d[:, :, :, a, b])
    return dx[:, 1:-1, 1:-1]


def naive_pool(x):
    n, h, w, c = x.shape
    return x.reshape(n, h // 2, 2, w // 2, 2, c).max(axis=(2, 4))


def naive_pool_bwd(x, y, g):
    up = y.repeat(2, axis=1).repeat(2, axis=2)
    return (x == up) * g.repeat(2, axis=1).repeat(2, axis=2)


# ---- data --------------------------------------------------------------------------------
def make_data():
    rng = np.random.default_rng(0)
    f32 = np.float32
    d = {"x1": rng.standard_normal((N, 28, 28, 1)).astype(f32),
         "w1": (rng.standard_normal((3, 3, 1, 32)) * 0.3).astype(f32),
         "w2": (rng.standard_normal((3, 3, 32, 64)) * 0.1).astype(f32)}
    d["a1"] = np.maximum(C._conv_fwd(d["x1"], d["w1"], ONE, SAME, ONE), 0)  # relu(conv1)
    d["p1"] = C._max_fwd(d["a1"], (2, 2), (2, 2), C._NO_PAD)
    d["a2"] = np.maximum(C._conv_fwd(d["p1"], d["w2"], ONE, SAME, ONE), 0)
    d["p2"] = C._max_fwd(d["a2"], (2, 2), (2, 2), C._NO_PAD)
    d["g_p2"] = rng.standard_normal(d["p2"].shape).astype(f32)
    d["g_a2"] = rng.standard_normal(d["a2"].shape).astype(f32)
    d["g_p1"] = rng.standard_normal(d["p1"].shape).astype(f32)
    d["g_a1"] = rng.standard_normal(d["a1"].shape).astype(f32)
    return d


def layer_cases(d):
    """{layer: {impl: zero-arg callable}}."""
    t = {k: lk.constant(v) for k, v in d.items()}
    cases = {
        "conv1 fwd": {
            "layerkit": lambda: C.conv2d(t["x1"], t["w1"], 1, "SAME"),
            "naive": lambda: naive_conv(d["x1"], d["w1"])},
        "conv1 bwd (filter)": {
            "layerkit": lambda: C.conv2d_backprop_filter(t["x1"], (3, 3, 1, 32), t["g_a1"], 1,
                                                         "SAME"),
            "naive": lambda: naive_conv_bwd_filter(d["x1"], d["g_a1"], (3, 3, 1, 32))},
        "pool1 fwd": {
            "layerkit": lambda: C.max_pool2d(t["a1"], 2, 2, "VALID"),
            "naive": lambda: naive_pool(d["a1"])},
        "pool1 bwd": {
            "layerkit": lambda: C.max_pool2d_grad(t["a1"], t["p1"], t["g_p1"], 2, 2, "VALID"),
            "naive": lambda: naive_pool_bwd(d["a1"], d["p1"], d["g_p1"])},
        "conv2 fwd": {
            "layerkit": lambda: C.conv2d(t["p1"], t["w2"], 1, "SAME"),
            "naive": lambda: naive_conv(d["p1"], d["w2"])},
        "conv2 bwd (input+filter)": {
            "layerkit": lambda: (
                C.conv2d_backprop_input(d["p1"].shape, t["w2"], t["g_a2"], 1, "SAME"),
                C.conv2d_backprop_filter(t["p1"], (3, 3, 32, 64), t["g_a2"], 1, "SAME")),
            "naive": lambda: (naive_conv_bwd_input(d["g_a2"], d["w2"], d["p1"].shape),
                              naive_conv_bwd_filter(d["p1"], d["g_a2"], (3, 3, 32, 64)))},
        "pool2 fwd": {
            "layerkit": lambda: C.max_pool2d(t["a2"], 2, 2, "VALID"),
            "naive": lambda: naive_pool(d["a2"])},
        "pool2 bwd": {
            "layerkit": lambda: C.max_pool2d_grad(t["a2"], t["p2"], t["g_p2"], 2, 2, "VALID"),
            "naive": lambda: naive_pool_bwd(d["a2"], d["p2"], d["g_p2"])},
    }
    if torch is not None:
        add_torch_cases(cases, d)
    return cases


def add_torch_cases(cases, d):
    nchw = {k: torch.from_numpy(np.ascontiguousarray(v.transpose(0, 3, 1, 2)))
            for k, v in d.items() if not k.startswith("w")}
    w1 = torch.from_numpy(np.ascontiguousarray(d["w1"].transpose(3, 2, 0, 1)))
    w2 = torch.from_numpy(np.ascontiguousarray(d["w2"].transpose(3, 2, 0, 1)))
    _, i1 = F.max_pool2d(nchw["a1"], 2, 2, return_indices=True)
    _, i2 = F.max_pool2d(nchw["a2"], 2, 2, return_indices=True)
    cbwd = torch.ops.aten.convolution_backward
    mpb = torch.ops.aten.max_pool2d_with_indices_backward

    def conv_bwd(g, x, w, mask):
        return cbwd(g, x, w, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1, mask)

    nog = torch.no_grad
    spec = {
        "conv1 fwd": lambda: F.conv2d(nchw["x1"], w1, padding=1),
        "conv1 bwd (filter)": lambda: conv_bwd(nchw["g_a1"], nchw["x1"], w1,
                                               [False, True, False]),
        "pool1 fwd": lambda: F.max_pool2d(nchw["a1"], 2, 2, return_indices=True),
        "pool1 bwd": lambda: mpb(nchw["g_p1"], nchw["a1"], [2, 2], [2, 2], [0, 0], [1, 1],
                                 False, i1),
        "conv2 fwd": lambda: F.conv2d(nchw["p1"], w2, padding=1),
        "conv2 bwd (input+filter)": lambda: conv_bwd(nchw["g_a2"], nchw["p1"], w2,
                                                     [True, True, False]),
        "pool2 fwd": lambda: F.max_pool2d(nchw["a2"], 2, 2, return_indices=True),
        "pool2 bwd": lambda: mpb(nchw["g_p2"], nchw["a2"], [2, 2], [2, 2], [0, 0], [1, 1],
                                 False, i2),
    }
    for layer, fn in spec.items():
        def run(fn=fn):
            with nog():
                return fn()
        cases[layer]["torch"] = run


def stack_cases(d):
    """Whole conv/ReLU/pool stack, forward + backward w.r.t. both kernels, via autodiff."""
    relu = _lk_relu()
    x1, w1, w2 = lk.constant(d["x1"]), lk.Variable(d["w1"]), lk.Variable(d["w2"])

    def lk_step():
        with lk.GradientTape() as tape:
            a = C.max_pool2d(relu(C.conv2d(x1, w1, 1, "SAME")), 2, 2, "VALID")
            b = C.max_pool2d(relu(C.conv2d(a, w2, 1, "SAME")), 2, 2, "VALID")
            loss = lk.reduce_sum(b)
        return tape.gradient(loss, [w1, w2])

    cases = {"layerkit": lk_step}
    if torch is not None:
        tx = torch.from_numpy(np.ascontiguousarray(d["x1"].transpose(0, 3, 1, 2)))
        tw1 = torch.from_numpy(np.ascontiguousarray(d["w1"].transpose(3, 2, 0, 1)))
        tw2 = torch.from_numpy(np.ascontiguousarray(d["w2"].transpose(3, 2, 0, 1)))
        tw1.requires_grad_(True)
        tw2.requires_grad_(True)

        def torch_step():
            a = F.max_pool2d(F.relu(F.conv2d(tx, tw1, padding=1)), 2)
            b = F.max_pool2d(F.relu(F.conv2d(a, tw2, padding=1)), 2)
            return torch.autograd.grad(b.sum(), [tw1, tw2])

        cases["torch"] = torch_step
    return cases


def _lk_relu():
    try:
        from layerkit.nn import relu
        return relu
    except ImportError:  # lk.nn not wired yet: ReLU through a record-free clamp
        return lambda t: t * lk.constant((np.asarray(t) > 0).astype(np.float32))


# ---- timing ------------------------------------------------------------------------------
def timed_blocks(cases: dict, repeats: int, blocks: int = 5, warmup: int = 2) -> dict:
    """{(name, impl): median seconds} for cases {(name, impl): fn}.

    Implementations take turns in blocks (lk, naive, torch, lk, naive, torch, ...) with
    a pause between blocks; inside a block each round runs that implementation's cases
    once. Turns spread machine load over all implementations; blocks (rather than
    alternating single calls) keep one library's worker threads, which spin for a
    while after each call (torch's OpenMP pool), from stealing the core that the next
    library's BLAS threads need, a bias of several ms per call when interleaved.
    """
    impls = list(dict.fromkeys(impl for _, impl in cases))
    times = {k: [] for k in cases}
    per_block = max(1, -(-repeats // blocks))
    for b in range(blocks + 1):
        for impl in impls:
            mine = [(k, fn) for k, fn in cases.items() if k[1] == impl]
            time.sleep(0.05)
            for _ in range(warmup if b == 0 else per_block):
                for k, fn in mine:
                    t0 = time.perf_counter()
                    fn()
                    if b:  # block 0 is warm-up
                        times[k].append(time.perf_counter() - t0)
    return {k: statistics.median(v) for k, v in times.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=30)
    ap.add_argument("--threads", type=int, default=None,
                    help="BLAS and torch threads; default: the libraries' defaults")
    args = ap.parse_args()
    if args.threads and torch is not None:
        torch.set_num_threads(args.threads)

    reexec = os.environ.get("_BENCH_CONV_REEXEC")
    print("bench_conv: batch 64, 28x28x1 CNN conv/pool layers, float32, NHWC")
    print(f"  numpy {np.__version__}, torch {torch.__version__ if torch else 'not installed'}, "
          f"{os.cpu_count()} cpus, load average {os.getloadavg()[0]:.2f}")
    print("  BLAS env: " + (f"re-executed without {reexec} (benchmark process only)" if reexec
                            else "OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE not set"))
    threads = args.threads or "default"
    print(f"  threads: {threads} (BLAS and torch); medians of {args.repeats} repeats in "
          f"alternating blocks, milliseconds\n")

    d = make_data()
    cases = layer_cases(d)
    flat = {(layer, impl): fn for layer, impls in cases.items() for impl, fn in impls.items()}
    med = timed_blocks(flat, args.repeats)
    impls = ["layerkit", "naive"] + (["torch"] if torch is not None else [])

    head = f"{'layer':26s}" + "".join(f"{i:>10s}" for i in impls)
    head += f"{'naive/lk':>10s}" + (f"{'torch/lk':>10s}" if torch is not None else "")
    print(head)
    print("-" * len(head))
    totals = dict.fromkeys(impls, 0.0)
    for layer in cases:
        row = f"{layer:26s}"
        for i in impls:
            ms = med[(layer, i)] * 1e3
            totals[i] += ms
            row += f"{ms:10.2f}"
        row += f"{med[(layer, 'naive')] / med[(layer, 'layerkit')]:10.2f}"
        if torch is not None:
            row += f"{med[(layer, 'torch')] / med[(layer, 'layerkit')]:10.2f}"
        print(row)
    print("-" * len(head))
    row = f"{'sum of layers':26s}" + "".join(f"{totals[i]:10.2f}" for i in impls)
    row += f"{totals['naive'] / totals['layerkit']:10.2f}"
    if torch is not None:
        row += f"{totals['torch'] / totals['layerkit']:10.2f}"
    print(row)

    stack = timed_blocks({("stack", k): fn for k, fn in stack_cases(d).items()}, args.repeats)
    stack = {impl: v for (_, impl), v in stack.items()}
    line = f"{'stack fwd+bwd (autodiff)':26s}{stack['layerkit'] * 1e3:10.2f}{'':>10s}"
    if torch is not None:
        line += f"{stack['torch'] * 1e3:10.2f}{'':>10s}{stack['torch'] / stack['layerkit']:10.2f}"
    print(line)
    print("\nratios > 1 mean layerkit is faster. naive max-pool backward does not break ties.")


if __name__ == "__main__":
    main()
