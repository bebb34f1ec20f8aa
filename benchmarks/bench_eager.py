"""Eager-mode overhead and throughput: layerkit vs NumPy (vs PyTorch when installed).

Run: python benchmarks/bench_eager.py [--quick]
Prints one table per section; times are medians of interleaved repeats in one run.
"""
from __future__ import annotations

import pathlib
import subprocess
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from _common import clean_blas_env, table, timeit_interleaved, try_import_torch  # noqa: E402

clean_blas_env()

import numpy as np  # noqa: E402

import layerkit as lk  # noqa: E402

QUICK = "--quick" in sys.argv
torch = try_import_torch()
REPEAT = 5 if QUICK else 15


def us(s: float) -> str:
    return f"{s * 1e6:.2f}"


def ms(s: float) -> str:
    return f"{s * 1e3:.2f}"


def per_op_overhead() -> None:
    rows = []
    for shape, number in (((4,), 20000), ((256, 256), 300)):
        xn = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
        xl = lk.constant(xn)
        fns = {"numpy": lambda a=xn: a * a + a, "layerkit": lambda a=xl: a * a + a}
        if torch is not None:
            xt = torch.from_numpy(xn)
            fns["torch"] = lambda a=xt: a * a + a
        t = timeit_interleaved(fns, number // (10 if QUICK else 1), REPEAT)
        # Recording: one tape open for the whole timing, x watched (like torch's
        # requires_grad); reset between rounds so the node list stays small.
        xw = lk.constant(xn)
        tape = lk.GradientTape(persistent=True)
        with tape:
            tape.watch(xw)

            def lk_taped(a=xw, tp=tape):
                if len(tp._nodes) > 64:
                    tp.reset()
                    tp.watch(a)
                return a * a + a

            def lk_steady(a=xw):  # no reset: the tape releases what no gradient needs
                return a * a + a

            rec = {"layerkit+tape": lk_taped, "layerkit+tape (no reset)": lk_steady}
            if torch is not None:
                xg = torch.from_numpy(xn.copy()).requires_grad_(True)
                rec["torch+requires_grad"] = lambda a=xg: a * a + a
            t.update(timeit_interleaved(rec, number // (10 if QUICK else 1), REPEAT))
        base = t["numpy"]
        for name, v in t.items():
            # Two ops per call: report per op.
            rows.append([str(shape), name, us(v / 2), f"{v / base:.2f}x"])
    print("\n## Per-op overhead, y = x*x + x (us per op; ratio to NumPy)")
    print("targets: layerkit <= 3x NumPy on (4,); layerkit+tape <= torch+requires_grad on "
          "(4,), <= 1.2x on (256, 256)")
    print(table(rows, ["shape", "impl", "us/op", "vs numpy"]))


# The loop of issue 15: run in a fresh interpreter so that its peak RSS is its own.
_TAPE_LOOP = """
import sys, time
import numpy as np


def hwm():  # peak RSS of this process image in MB (ru_maxrss would include the parent's)
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmHWM")) / 1024


n = int(sys.argv[2])
xn = np.random.default_rng(0).standard_normal((256, 256)).astype(np.float32)
if sys.argv[1] == "torch":
    import torch
    torch.set_num_threads(1)
    x = torch.from_numpy(xn).requires_grad_(True)
    base = hwm()
    t0 = time.perf_counter()
    for _ in range(n):
        y = x * x + x
    g = torch.autograd.grad(y.sum(), x)[0].numpy()
else:
    import layerkit as lk
    x = lk.constant(xn)
    base = hwm()
    t0 = time.perf_counter()
    with lk.GradientTape() as tape:
        tape.watch(x)
        for _ in range(n):
            y = x * x + x
    g = tape.gradient(y, x).numpy()
dt = time.perf_counter() - t0
assert np.allclose(g, 2 * xn + 1, atol=1e-5)
print(dt, hwm(), hwm() - base)
"""


def tape_memory() -> None:
    n = 1000 if QUICK else 10000
    rows = []
    for impl in ("layerkit", "torch") if torch is not None else ("layerkit",):
        out = subprocess.run([sys.executable, "-c", _TAPE_LOOP, impl, str(n)],
                             capture_output=True, text=True, check=True).stdout.split()
        dt, peak, grown = map(float, out[-3:])
        rows.append([impl, f"{dt:.2f}", f"{dt / (2 * n) * 1e6:.1f}", f"{peak:.0f}",
                     f"{grown:.0f}"])
    print(f"\n## Tape memory: {n} x (y = x*x + x) on a watched (256, 256) float32, then "
          f"the gradient (fresh process each)")
    print("target: layerkit peak RSS <= 300 MB")
    print(table(rows, ["impl", "s", "us/op", "peak RSS MB", "peak - RSS after imports MB"]))


def tape_gradient() -> None:
    rng = np.random.default_rng(0)
    xn = rng.standard_normal((8, 16)).astype(np.float32)
    wn = rng.standard_normal((16, 16)).astype(np.float32)
    x = lk.constant(xn)
    W = lk.Variable(wn)

    def lk_grad():
        with lk.GradientTape() as tape:
            y = lk.reduce_sum(lk.tanh(lk.matmul(x, W)))
        return tape.gradient(y, W)

    def np_grad():
        h = np.tanh(xn @ wn)
        return xn.T @ (1.0 - h * h)

    fns = {"numpy (hand-written)": np_grad, "layerkit GradientTape": lk_grad}
    if torch is not None:
        xt = torch.from_numpy(xn)
        wt = torch.from_numpy(wn.copy()).requires_grad_(True)
        fns["torch autograd.grad"] = lambda: torch.autograd.grad(torch.tanh(xt @ wt).sum(), wt)
    np.testing.assert_allclose(lk_grad().numpy(), np_grad(), rtol=1e-4, atol=1e-5)
    t = timeit_interleaved(fns, 200 if QUICK else 2000, REPEAT)
    ref = t.get("torch autograd.grad")
    rows = [[k, us(v), f"{v / ref:.2f}x" if ref else "-"] for k, v in t.items()]
    print("\n## Tape gradient of sum(tanh(x @ W)), x (8,16), W (16,16) (us per call)")
    print("target: layerkit <= 0.5x torch autograd.grad")
    print(table(rows, ["impl", "us/call", "vs torch"]))


def large_elementwise() -> None:
    n = 4_000_000
    rng = np.random.default_rng(0)
    xn = rng.standard_normal(n).astype(np.float32)
    yn = rng.standard_normal(n).astype(np.float32)
    x, y = lk.constant(xn), lk.constant(yn)
    c = np.float32(np.sqrt(2 / np.pi))

    def np_gelu_chain(a):
        return 0.5 * a * (1.0 + np.tanh(c * (a + 0.044715 * a * a * a)))

    def lk_gelu_chain(a):
        return 0.5 * a * (1.0 + lk.tanh(float(c) * (a + 0.044715 * a * a * a)))

    cases = {
        "exp": (lambda: np.exp(xn), lambda: lk.exp(x)),
        "tanh": (lambda: np.tanh(xn), lambda: lk.tanh(x)),
        "x*y+x": (lambda: xn * yn + xn, lambda: x * y + x),
        "gelu chain (tanh form, op by op)": (lambda: np_gelu_chain(xn), lambda: lk_gelu_chain(x)),
    }
    rows = []
    for name, (fn_np, fn_lk) in cases.items():
        t = timeit_interleaved({"numpy": fn_np, "layerkit": fn_lk}, 2 if QUICK else 5, REPEAT)
        ratio = t["layerkit"] / t["numpy"]
        rows.append([name, ms(t["numpy"]), ms(t["layerkit"]), f"{ratio:.2f}x", "-"])
    print("\n## Large elementwise work, 4M float32 (ms per call)")
    print("target: layerkit never slower than NumPy (ratio ~1.0)")
    if hasattr(lk, "nn") and hasattr(lk.nn, "gelu"):
        xv = lk.constant(xn)

        def lk_gelu_fb():
            with lk.GradientTape() as tape:
                tape.watch(xv)
                out = lk.nn.gelu(xv)
            return tape.gradient(out, xv)

        def np_gelu_fb():  # exact gelu forward + backward with NumPy and math.erf-free tanh form
            h = np.tanh(c * (xn + 0.044715 * xn ** 3))
            out = 0.5 * xn * (1 + h)
            grad = 0.5 * (1 + h) + 0.5 * xn * (1 - h * h) * c * (1 + 3 * 0.044715 * xn * xn)
            return out, grad

        fns = {"numpy": np_gelu_fb, "layerkit": lk_gelu_fb}
        if torch is not None:
            xt = torch.from_numpy(xn.copy()).requires_grad_(True)

            def torch_fb():
                out = torch.nn.functional.gelu(xt)
                return torch.autograd.grad(out, xt, torch.ones_like(out))

            fns["torch"] = torch_fb
        t = timeit_interleaved(fns, 2 if QUICK else 5, REPEAT)
        ref = t.get("torch")
        rows.append(["nn.gelu forward+gradient", ms(t["numpy"]), ms(t["layerkit"]),
                     f"{t['layerkit'] / t['numpy']:.2f}x",
                     f"{t['layerkit'] / ref:.2f}x" if ref else "-"])
    print(table(rows, ["op", "numpy ms", "layerkit ms", "lk/numpy", "lk/torch"]))
    if torch is not None:
        print("(gelu target: layerkit within 1.2x of torch's built-in gelu forward+backward)")


if __name__ == "__main__":
    tv = "not installed" if torch is None else torch.__version__
    print(f"numpy {np.__version__}, torch {tv}")
    per_op_overhead()
    tape_memory()
    tape_gradient()
    large_elementwise()
