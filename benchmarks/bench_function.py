"""lk.function vs eager vs hand-written NumPy, and the measurements behind the fusion rule.

Run: python benchmarks/bench_function.py [--quick] [--dispatch]

Sections (one run; medians of interleaved repeats; ratios against eager):
  1. MLP 64-64-10, batch 32: forward + backward (GradientTape inside the function) + SGD
     step (``assign_sub``): eager, lk.function, hand-written NumPy.
  2. An elementwise chain (8 ops, float32) at three sizes: eager, lk.function, NumPy.
  --dispatch: the table behind the dispatch rule in
     layerkit/autodiff/function/numexpr_kernel.py: one fused region run inline as NumPy
     ufuncs with reused out= buffers, block-wise, or as one numexpr expression, for
     float32/float64, arithmetic/transcendental chains, 4 and 8 ops, several sizes.

The process unsets OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE for itself (benchmarks/_common.py).
"""
from __future__ import annotations

import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from _common import clean_blas_env, table, timeit_interleaved  # noqa: E402

clean_blas_env()

import numpy as np  # noqa: E402

import layerkit as lk  # noqa: E402
from layerkit.autodiff.function import function  # noqa: E402
from layerkit.autodiff.function import numexpr_kernel as nek  # noqa: E402

QUICK = "--quick" in sys.argv
REPEAT = 5 if QUICK else 11


def us(s: float) -> str:
    return f"{s * 1e6:.1f}"


def _number(fn, budget: float = 0.02) -> int:
    import time

    t0 = time.perf_counter()
    fn()
    dt = max(time.perf_counter() - t0, 1e-7)
    return max(1, min(20000, int(budget / dt)))


# ---- 1. MLP train step ---------------------------------------------------------------------
def mlp() -> None:
    rng = np.random.default_rng(0)
    sizes = (64, 64, 10)
    batch = 32
    x = rng.standard_normal((batch, sizes[0])).astype(np.float32)
    labels = rng.integers(0, sizes[-1], batch)
    y = np.eye(sizes[-1], dtype=np.float32)[labels]
    init = [rng.standard_normal((sizes[0], sizes[1])).astype(np.float32) * 0.1,
            np.zeros(sizes[1], np.float32),
            rng.standard_normal((sizes[1], sizes[2])).astype(np.float32) * 0.1,
            np.zeros(sizes[2], np.float32)]
    params = [lk.Variable(a) for a in init]
    lr = 0.05

    def step(xb, yb):
        w1, b1, w2, b2 = params
        with lk.GradientTape() as tape:
            h = lk.maximum(lk.matmul(xb, w1) + b1, 0.0)
            logits = lk.matmul(h, w2) + b2
            loss = lk.reduce_mean(lk.nn.softmax_cross_entropy_with_logits(yb, logits))
        grads = tape.gradient(loss, params)
        for p, g in zip(params, grads):
            p.assign_sub(lr * g)
        return loss

    compiled = function(step)
    xt, yt = lk.constant(x), lk.constant(y)
    np_params = [a.copy() for a in init]

    def numpy_step():
        w1, b1, w2, b2 = np_params
        z = x @ w1 + b1
        h = np.maximum(z, 0)
        logits = h @ w2 + b2
        s = logits - logits.max(-1, keepdims=True)
        e = np.exp(s)
        p = e / e.sum(-1, keepdims=True)
        loss = -(y * (s - np.log(e.sum(-1, keepdims=True)))).sum(-1).mean()
        d = (p - y) / batch
        gw2 = h.T @ d
        gb2 = d.sum(0)
        dh = d @ w2.T
        dh *= z > 0
        gw1 = x.T @ dh
        gb1 = dh.sum(0)
        for a, g in zip(np_params, (gw1, gb1, gw2, gb2)):
            a -= lr * g
        return loss

    # correctness first: three steps each from the same start
    eager_losses = [float(step(xt, yt)) for _ in range(3)]
    for p, a in zip(params, init):
        p.assign(a)
    fn_losses = [float(compiled(xt, yt)) for _ in range(3)]
    np_losses = [float(numpy_step()) for _ in range(3)]
    assert np.allclose(eager_losses, fn_losses, rtol=1e-5), (eager_losses, fn_losses)
    assert np.allclose(eager_losses, np_losses, rtol=1e-4), (eager_losses, np_losses)
    cf = compiled.get_concrete_function(xt, yt)
    n_nodes = len(cf.graph.nodes)
    fns = {"eager": lambda: step(xt, yt), "lk.function": lambda: compiled(xt, yt),
           "numpy": numpy_step}
    t = timeit_interleaved(fns, number=200 if QUICK else 500, repeat=REPEAT)
    rows = [[k, us(v), f"{t['eager'] / v:.2f}x"] for k, v in t.items()]
    print(f"\n1. MLP 64-64-10 batch 32, forward+backward+SGD step (graph: {n_nodes} nodes, "
          f"{cf.stats.get('fused_regions', 0)} fused regions)")
    print(table(rows, ["variant", "us/step", "speed-up vs eager"]))

    # 1b. the loss as an lk.function called under a tape: one tape node, compiled vjp
    def loss_fn(xb, yb):
        w1, b1, w2, b2 = params
        h = lk.maximum(lk.matmul(xb, w1) + b1, 0.0)
        logits = lk.matmul(h, w2) + b2
        return lk.reduce_mean(lk.nn.softmax_cross_entropy_with_logits(yb, logits))

    loss_compiled = function(loss_fn)

    def taped(fn):
        def run():
            with lk.GradientTape() as tape:
                loss = fn(xt, yt)
            return tape.gradient(loss, params)
        return run

    want = taped(loss_fn)()
    loss_compiled(xt, yt)
    got = taped(loss_compiled)()
    for a, b in zip(got, want):
        assert np.allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-7)
    fns = {"eager": taped(loss_fn), "lk.function": taped(loss_compiled)}
    t = timeit_interleaved(fns, number=200 if QUICK else 500, repeat=REPEAT)
    rows = [[k, us(v), f"{t['eager'] / v:.2f}x"] for k, v in t.items()]
    print("\n1b. the same forward as an lk.function called under a GradientTape, "
          "tape.gradient outside (one tape node, compiled backward graph)")
    print(table(rows, ["variant", "us/step", "speed-up vs eager"]))


# ---- 2. elementwise chain --------------------------------------------------------------------
def chain_fn(x, y):
    t = x * y + x
    t = lk.tanh(t) * 0.5 + y
    t = t * t - x
    return t * 0.25 + 1.0


def chain_np(x, y):
    t = x * y + x
    t = np.tanh(t) * np.float32(0.5) + y
    t = t * t - x
    return t * np.float32(0.25) + np.float32(1.0)


def chain() -> None:
    rows = []
    compiled = function(chain_fn)
    for n in (64, 16384, 1 << 20):
        rng = np.random.default_rng(1)
        xn = rng.standard_normal(n).astype(np.float32)
        yn = rng.standard_normal(n).astype(np.float32)
        xt, yt = lk.constant(xn), lk.constant(yn)
        want = chain_np(xn, yn)
        got = compiled(xt, yt).numpy()
        assert np.allclose(got, want, rtol=1e-5, atol=1e-6)
        fns = {"eager": lambda xt=xt, yt=yt: chain_fn(xt, yt),
               "lk.function": lambda xt=xt, yt=yt: compiled(xt, yt),
               "numpy": lambda xn=xn, yn=yn: chain_np(xn, yn)}
        t = timeit_interleaved(fns, number=_number(fns["eager"]), repeat=REPEAT)
        mode = compiled.get_concrete_function(xt, yt).graph
        fused = [nd.region.mode for nd in mode.nodes if nd.kind == "fused"]
        rows.append([n, us(t["eager"]), us(t["lk.function"]), us(t["numpy"]),
                     f"{t['eager'] / t['lk.function']:.2f}x",
                     f"{t['numpy'] / t['lk.function']:.2f}x", ",".join(fused)])
    print("\n2. elementwise chain of 9 ops (float32), us per call")
    print(table(rows, ["elements", "eager", "lk.function", "numpy", "fn vs eager",
                       "fn vs numpy", "region mode"]))


# ---- 2b. per-op overhead ------------------------------------------------------------------------
def per_op() -> None:
    n_ops = 64

    def many(x, y):
        t = x
        for i in range(n_ops // 2):
            t = t * y + x if i % 2 else t + y * 0.5
        return t

    def many_np(x, y):
        t = x
        for i in range(n_ops // 2):
            t = t * y + x if i % 2 else t + y * np.float32(0.5)
        return t

    xn = np.linspace(-1, 1, 4).astype(np.float32)
    yn = np.linspace(0.5, 1, 4).astype(np.float32)
    xt, yt = lk.constant(xn), lk.constant(yn)
    fused, unfused = function(many), function(many, jit=False)
    assert np.allclose(fused(xt, yt).numpy(), many_np(xn, yn), rtol=1e-5)
    assert np.allclose(unfused(xt, yt).numpy(), many_np(xn, yn), rtol=1e-5)
    fns = {"eager": lambda: many(xt, yt), "lk.function": lambda: fused(xt, yt),
           "lk.function jit=False": lambda: unfused(xt, yt), "numpy": lambda: many_np(xn, yn)}
    t = timeit_interleaved(fns, number=500 if QUICK else 2000, repeat=REPEAT)
    rows = [[k, f"{v * 1e6 / n_ops:.3f}", f"{t['eager'] / v:.2f}x"] for k, v in t.items()]
    print(f"\n2b. per-op cost: {n_ops} elementwise ops on shape (4,) float32")
    print(table(rows, ["variant", "us/op", "speed-up vs eager"]))


# ---- 3. dispatch table -------------------------------------------------------------------------
def _arith(x, y):
    t = x * y
    t = t + x
    t = t * 0.5
    t = t - y
    t = t * x
    t = t + 1.0
    t = t * y
    return t - x


def _trans(x, y):
    t = lk.tanh(x) * y
    t = lk.exp(t * 0.1) + x
    t = t * y
    t = t - 0.5
    t = t * x
    t = t + y
    return t * 0.5


def _cut(fn, x, y, k):
    if fn is _arith:
        steps = [lambda t: t * y, lambda t: t + x, lambda t: t * 0.5, lambda t: t - y,
                 lambda t: t * x, lambda t: t + 1.0, lambda t: t * y, lambda t: t - x]
        t = x
    else:
        steps = [lambda t: lk.tanh(t), lambda t: t * y, lambda t: lk.exp(t * 0.1),
                 lambda t: t + x, lambda t: t * y, lambda t: t - 0.5, lambda t: t * x,
                 lambda t: t + y]
        t = x
    for s in steps[:k]:
        t = s(t)
    return t


def _trace_with(fn, mode, xt, yt):
    saved = (nek.NE_MIN_SIZE, nek.NE_MIN_OPS, nek.BLOCK_MIN_SIZE, nek.numexpr_wins)
    try:
        if mode == "numexpr":
            nek.numexpr_wins = lambda dtypes, n, size, expr: True
        else:
            nek.numexpr_wins = lambda dtypes, n, size, expr: False
            nek.BLOCK_MIN_SIZE = 0 if mode == "blocks" else 1 << 62
        f = function(fn)
        f(xt, yt)
        modes = [nd.region.mode for nd in f.get_concrete_function(xt, yt).graph.nodes
                 if nd.kind == "fused"]
        return f, modes
    finally:
        nek.NE_MIN_SIZE, nek.NE_MIN_OPS, nek.BLOCK_MIN_SIZE, nek.numexpr_wins = saved


def dispatch() -> None:
    rows = []
    sizes = (16384, 1 << 17, 1 << 20) if QUICK else (16384, 1 << 17, 1 << 18, 1 << 20, 1 << 22)
    for dtype in (np.float32, np.float64):
        for name, fn in (("arith", _arith), ("tanh/exp", _trans)):
            for k in (4, 8):
                def f(x, y, fn=fn, k=k):
                    return _cut(fn, x, y, k)

                for n in sizes:
                    rng = np.random.default_rng(2)
                    xt = lk.constant(rng.uniform(-1, 1, n).astype(dtype))
                    yt = lk.constant(rng.uniform(-1, 1, n).astype(dtype))
                    fns, ok = {}, True
                    for mode in ("numpy", "blocks", "numexpr"):
                        g, modes = _trace_with(f, mode, xt, yt)
                        if modes != [mode]:
                            ok = False
                        fns[mode] = (lambda g=g, xt=xt, yt=yt: g(xt, yt))
                    t = timeit_interleaved(fns, number=_number(fns["numpy"], 0.01),
                                           repeat=5 if QUICK else 7)
                    best = min(t, key=t.get)
                    rows.append([np.dtype(dtype).name, name, k, n, us(t["numpy"]),
                                 us(t["blocks"]), us(t["numexpr"]), best + ("" if ok else "*")])
    print("\n3. one fused region: us per call by execution mode (* = a mode was refused)")
    print(table(rows, ["dtype", "chain", "ops", "elements", "numpy out=", "blocks",
                       "numexpr", "fastest"]))


if __name__ == "__main__":
    print(f"numexpr threads: {nek._ne.get_num_threads() if nek._ne else 'n/a'}")
    if "--dispatch" in sys.argv:
        dispatch()
    else:
        mlp()
        chain()
        per_op()
