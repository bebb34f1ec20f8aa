"""Training-step benchmarks: layerkit (the graph step ``fit`` runs, and eager) vs a
hand-written NumPy step (the floor) vs PyTorch (when installed), all in one run.

Cases (issue 3):
- MLP: batch 128, 784-512-256-10, Adam; one train step (forward, loss, backward, update).
- CNN: batch 64, 28x28x1: Conv2D 32 3x3 same, ReLU, MaxPool 2, Conv2D 64 3x3 same, ReLU,
  MaxPool 2, Flatten, Dense 128, ReLU, Dense 10; SGD with momentum.
- LSTM: seq 50, batch 32, input 64, hidden 128; forward + backward (gradients of all
  weights, no update).
- digits MLP: 64-64-10, Adam, batch 32, 30 epochs over 1,440 scikit-learn digits through
  ``fit(verbose=0)``, against a NumPy loop and a PyTorch loop doing the same epochs.

The layerkit column of the MLP and CNN cases times ``model.make_train_function()``, the
per-batch callable ``fit`` runs: ``train_step`` traced by ``lk.function``. The "eager"
column times the same step of a model compiled with ``run_eagerly=True`` (plain Python
``train_step``); "graph/eager" is their ratio. The LSTM case times a taped
forward/backward of one layer (eager), and the digits case runs ``fit`` itself.

Step times are medians over repeats run in alternating per-library blocks (layerkit,
eager, numpy, torch, layerkit, ...; see ``timed_blocks``); the fit case is the median of 3 runs,
also one library at a time. OPENBLAS_CORETYPE/OPENBLAS_L2_SIZE are unset for this
process (see _common.py).

The CNN verdict compares with torch at the thread count layerkit's BLAS uses (``--threads``,
else OPENBLAS_NUM_THREADS / OMP_NUM_THREADS, else NumPy's default of one per core), since
its GEMMs run on that many threads; a second CNN row gives torch pinned to one thread as a
reference. The other cases keep ``--torch-threads``.

Run: python benchmarks/bench_training.py [--quick] [--threads N] [--torch-threads=N]
[--case=mlp|cnn|lstm|digits ...]
(``--threads 1`` pins BLAS, OpenMP and torch to one thread each: steadier figures on a
machine shared with other work; without it torch uses ``--torch-threads``, default 1,
except for the CNN verdict above.)
"""
from __future__ import annotations

import os
import pathlib
import statistics
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from _common import pin_threads_from_argv  # noqa: E402

_THREADS = pin_threads_from_argv()

from _common import blas_threads as _blas_threads  # noqa: E402
from _common import clean_blas_env, table, try_import_torch  # noqa: E402
from _common import timed_blocks as _timed_blocks  # noqa: E402

clean_blas_env()

import numpy as np  # noqa: E402

import layerkit as lk  # noqa: E402
import layerkit.random  # noqa: E402, F401
from layerkit import layers, losses, optimizers  # noqa: E402
from layerkit.models import Input, Sequential  # noqa: E402

QUICK = "--quick" in sys.argv
REPEAT = 5 if QUICK else 15
torch = try_import_torch()
if torch is not None and _THREADS:
    torch.set_num_threads(int(_THREADS))
RNG = np.random.default_rng(0)
SCCE = losses.SparseCategoricalCrossentropy(from_logits=True)
NOTES: list = []  # lines printed under the table


def ms(s: float) -> str:
    return f"{s * 1e3:.2f}"


def glorot(fan_in: int, fan_out: int, shape=None) -> np.ndarray:
    lim = np.sqrt(6.0 / (fan_in + fan_out))
    return RNG.uniform(-lim, lim, shape or (fan_in, fan_out)).astype(np.float32)


def timed_blocks(fns: dict, number: int, repeat: int = REPEAT, blocks: int = 5,
                 pause: float = 0.05, cpu: bool = False) -> dict:
    """_common.timed_blocks with this run's repeat count."""
    return _timed_blocks(fns, number, repeat, blocks, pause, cpu)


# ---- NumPy building blocks ------------------------------------------------------------------
class NumpyAdam:
    """Keras's Adam rule with in-place NumPy updates."""

    def __init__(self, params, lr=1e-3, b1=0.9, b2=0.999, eps=1e-7):
        self.params, self.lr, self.b1, self.b2, self.eps = params, lr, b1, b2, eps
        self.m = [np.zeros_like(p) for p in params]
        self.v = [np.zeros_like(p) for p in params]
        self.t = 0

    def step(self, grads):
        self.t += 1
        alpha = self.lr * np.sqrt(1 - self.b2 ** self.t) / (1 - self.b1 ** self.t)
        for p, g, m, v in zip(self.params, grads, self.m, self.v):
            m += (g - m) * (1 - self.b1)
            v += (g * g - v) * (1 - self.b2)
            p -= alpha * m / (np.sqrt(v) + self.eps)


class NumpySGD:
    def __init__(self, params, lr=0.01, momentum=0.9):
        self.params, self.lr, self.mom = params, lr, momentum
        self.m = [np.zeros_like(p) for p in params]

    def step(self, grads):
        for p, g, m in zip(self.params, grads, self.m):
            m *= self.mom
            m -= self.lr * g
            p += m


def softmax_ce_grad(logits: np.ndarray, y: np.ndarray):
    s = logits - logits.max(axis=1, keepdims=True)
    e = np.exp(s)
    p = e / e.sum(axis=1, keepdims=True)
    n = len(y)
    loss = -np.log(p[np.arange(n), y]).mean()
    p[np.arange(n), y] -= 1.0
    p /= n
    return loss, p


def mlp_numpy(sizes, x, y, opt_cls, **opt_kw):
    params = []
    for a, b in zip(sizes[:-1], sizes[1:]):
        params += [glorot(a, b), np.zeros(b, np.float32)]
    opt = opt_cls(params, **opt_kw)

    def step(xb=x, yb=y):
        acts, pre = [xb], []
        h = xb
        for i in range(0, len(params), 2):
            z = h @ params[i] + params[i + 1]
            if i + 2 < len(params):
                pre.append(z)
                h = np.maximum(z, 0)
                acts.append(h)
            else:
                h = z
        loss, d = softmax_ce_grad(h, yb)
        grads = [None] * len(params)
        for i in range(len(params) - 2, -1, -2):
            grads[i] = acts[i // 2].T @ d
            grads[i + 1] = d.sum(axis=0)
            if i:
                d = d @ params[i].T
                d *= pre[i // 2 - 1] > 0
        opt.step(grads)
        return loss

    return step


def blas_threads() -> int:
    """Threads NumPy's BLAS runs GEMMs on (``--threads``, the environment, or one per core)."""
    return _blas_threads(_THREADS)


def with_torch_threads(n: int, fn):
    """``fn`` run with torch on ``n`` threads (switched only when another block changed it)."""
    def run():
        if torch.get_num_threads() != n:
            torch.set_num_threads(n)
        fn()
    return run


def layerkit_steps(build, compile_kw: dict, batch) -> dict:
    """The per-batch step ``fit`` runs (``make_train_function``: the ``lk.function`` graph)
    and the same step with ``run_eagerly=True``, each on its own freshly built model.

    The graph is traced (and its first replay run) here, so tracing never lands in a
    timed block.
    """
    graph_model, eager_model = build(), build()
    graph_model.compile(**compile_kw())
    eager_model.compile(run_eagerly=True, **compile_kw())
    graph_step = graph_model.make_train_function()
    eager_step = eager_model.make_train_function()
    for _ in range(2):
        graph_step(batch)
        eager_step(batch)
    return {"layerkit": lambda: graph_step(batch), "eager": lambda: eager_step(batch)}


# ---- case 1: MLP ----------------------------------------------------------------------------
def case_mlp(rows):
    x = RNG.standard_normal((128, 784)).astype(np.float32)
    y = RNG.integers(0, 10, 128)
    batch = (lk.constant(x), lk.constant(y))
    fns = layerkit_steps(
        lambda: Sequential([Input(shape=(784,)), layers.Dense(512, activation="relu"),
                            layers.Dense(256, activation="relu"), layers.Dense(10)]),
        lambda: {"optimizer": optimizers.Adam(1e-3), "loss": SCCE}, batch)
    fns["numpy"] = mlp_numpy([784, 512, 256, 10], x, y, NumpyAdam)
    if torch is not None:
        net = torch.nn.Sequential(torch.nn.Linear(784, 512), torch.nn.ReLU(),
                                  torch.nn.Linear(512, 256), torch.nn.ReLU(),
                                  torch.nn.Linear(256, 10))
        topt = torch.optim.Adam(net.parameters(), lr=1e-3)
        tx, ty = torch.from_numpy(x), torch.from_numpy(y)

        def torch_step():
            topt.zero_grad()
            torch.nn.functional.cross_entropy(net(tx), ty).backward()
            topt.step()
        fns["torch"] = torch_step
    t = timed_blocks(fns, number=10)
    rows.append(_row("MLP step (128, 784-512-256-10, Adam)", t, "<= 1.5x numpy (1.6 ms)",
                     t["layerkit"] <= 1.5 * t["numpy"]))


# ---- case 2: CNN ----------------------------------------------------------------------------
def _im2col(xp: np.ndarray, kh: int, kw: int, oh: int, ow: int) -> np.ndarray:
    n, _, _, c = xp.shape
    cols = np.empty((n, oh, ow, kh, kw, c), xp.dtype)
    for i in range(kh):
        for j in range(kw):
            cols[:, :, :, i, j, :] = xp[:, i:i + oh, j:j + ow, :]
    return cols.reshape(n * oh * ow, kh * kw * c)


def _col2im(dcols: np.ndarray, shape, kh: int, kw: int) -> np.ndarray:
    n, h, w, c = shape
    d = dcols.reshape(n, h, w, kh, kw, c)
    dxp = np.zeros((n, h + kh - 1, w + kw - 1, c), dcols.dtype)
    for i in range(kh):
        for j in range(kw):
            dxp[:, i:i + h, j:j + w, :] += d[:, :, :, i, j, :]
    return dxp[:, 1:1 + h, 1:1 + w, :]


def cnn_numpy(x, y):
    params = [glorot(9, 9 * 32, (3, 3, 1, 32)), np.zeros(32, np.float32),
              glorot(9 * 32, 9 * 64, (3, 3, 32, 64)), np.zeros(64, np.float32),
              glorot(3136, 128), np.zeros(128, np.float32),
              glorot(128, 10), np.zeros(10, np.float32)]
    opt = NumpySGD(params, lr=0.01, momentum=0.9)

    def conv_fwd(h, w, b):
        n, hh, ww, c = h.shape
        hp = np.pad(h, ((0, 0), (1, 1), (1, 1), (0, 0)))
        cols = _im2col(hp, 3, 3, hh, ww)
        out = cols @ w.reshape(-1, w.shape[-1]) + b
        return out.reshape(n, hh, ww, -1), cols

    def pool_fwd(h):
        n, hh, ww, c = h.shape
        r = h.reshape(n, hh // 2, 2, ww // 2, 2, c)
        out = r.max(axis=(2, 4))
        mask = r == out[:, :, None, :, None, :]
        return out, mask

    def pool_bwd(d, mask):
        return (mask * d[:, :, None, :, None, :]).reshape(
            mask.shape[0], mask.shape[1] * 2, mask.shape[3] * 2, mask.shape[5])

    def step():
        w1, b1, w2, b2, w3, b3, w4, b4 = params
        z1, cols1 = conv_fwd(x, w1, b1)
        a1 = np.maximum(z1, 0)
        p1, m1 = pool_fwd(a1)
        z2, cols2 = conv_fwd(p1, w2, b2)
        a2 = np.maximum(z2, 0)
        p2, m2 = pool_fwd(a2)
        f = p2.reshape(len(x), -1)
        z3 = f @ w3 + b3
        a3 = np.maximum(z3, 0)
        logits = a3 @ w4 + b4
        loss, d = softmax_ce_grad(logits, y)
        g4, gb4 = a3.T @ d, d.sum(0)
        d = (d @ w4.T) * (z3 > 0)
        g3, gb3 = f.T @ d, d.sum(0)
        d = (d @ w3.T).reshape(p2.shape)
        d = pool_bwd(d, m2) * (z2 > 0)
        dflat = d.reshape(-1, 64)
        g2, gb2 = (cols2.T @ dflat).reshape(w2.shape), dflat.sum(0)
        d = _col2im(dflat @ w2.reshape(-1, 64).T, p1.shape, 3, 3)
        d = pool_bwd(d, m1) * (z1 > 0)
        dflat = d.reshape(-1, 32)
        g1, gb1 = (cols1.T @ dflat).reshape(w1.shape), dflat.sum(0)
        opt.step([g1, gb1, g2, gb2, g3, gb3, g4, gb4])
        return loss

    return step


def cnn_gemms():
    """The CNN step's matrix products alone, with the shapes an im2col/GEMM step needs
    (bias as a column of ones in the conv patches): a floor for any step built on NumPy's
    BLAS. conv1/conv2 forward, filter gradients, conv2 input gradient, Dense forward and
    gradients (Dense(10) omitted: 64x128x10)."""
    rng = np.random.default_rng(1)
    f = lambda *s: rng.standard_normal(s).astype(np.float32)  # noqa: E731
    c1, w1, d1 = f(50176, 10), f(10, 32), f(50176, 32)
    c2, w2, d2, w2t = f(12544, 289), f(289, 64), f(12544, 64), f(64, 288)
    x3, w3, g3 = f(64, 3136), f(3136, 128), f(64, 128)

    def step():
        c1 @ w1, c2 @ w2, x3 @ w3, x3.T @ g3, g3 @ w3.T, c2.T @ d2, d2 @ w2t, c1.T @ d1
    return step


def case_cnn(rows):
    threads = blas_threads()
    x = RNG.random((64, 28, 28, 1)).astype(np.float32)
    y = RNG.integers(0, 10, 64)
    batch = (lk.constant(x), lk.constant(y))
    fns = layerkit_steps(
        lambda: Sequential([
            Input(shape=(28, 28, 1)),
            layers.Conv2D(32, 3, padding="same", activation="relu"), layers.MaxPooling2D(2),
            layers.Conv2D(64, 3, padding="same", activation="relu"), layers.MaxPooling2D(2),
            layers.Flatten(), layers.Dense(128, activation="relu"), layers.Dense(10)]),
        lambda: {"optimizer": optimizers.SGD(0.01, momentum=0.9), "loss": SCCE}, batch)
    fns["numpy"] = cnn_numpy(x, y)
    fns["gemms"] = cnn_gemms()
    if torch is not None:
        nn = torch.nn
        net = nn.Sequential(nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                            nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                            nn.Flatten(), nn.Linear(3136, 128), nn.ReLU(), nn.Linear(128, 10))
        topt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
        tx = torch.from_numpy(np.ascontiguousarray(x.transpose(0, 3, 1, 2)))
        ty = torch.from_numpy(y)

        def torch_step():
            topt.zero_grad()
            torch.nn.functional.cross_entropy(net(tx), ty).backward()
            topt.step()
        # The verdict compares at layerkit's BLAS thread count; 1 thread is a reference.
        before = torch.get_num_threads()
        fns["torch"] = with_torch_threads(threads, torch_step)
        if threads != 1:
            fns["torch 1 thread"] = with_torch_threads(1, torch_step)
    # A long pause: torch on 2 threads must not start while OpenBLAS's worker still spins.
    tc = timed_blocks(fns, number=3, pause=0.2, cpu=True)
    t = {k: v[0] for k, v in tc.items()}
    if torch is not None:
        torch.set_num_threads(before)
    ref = t.get("torch", 14.7e-3)
    label = f"torch {threads} thread{'s' if threads > 1 else ''}"
    # Issue 15: the graph step <= torch eager and the eager step <= 1.1x torch eager.
    rows.append(_row(f"CNN step (64, 28x28x1, SGD momentum), {label}", t,
                     f"<= {label}" + ("" if "torch" in t else " (14.7 ms)")
                     + ", eager <= 1.1x", t["layerkit"] <= ref and t["eager"] <= 1.1 * ref))
    if "torch 1 thread" in t:
        one = dict(t, torch=t["torch 1 thread"])
        rows.append(_row("  reference: the same, torch 1 thread", one, "-", None))
    # CPU time of the process (all threads): on a machine shared with other work, wall
    # time also counts waiting for a core; at one thread per library this is the work.
    c = {k: v[1] for k, v in tc.items()}
    cref = c.get("torch", ref)
    rows.append(_row("  the same, CPU time", c, "same", c["layerkit"] <= cref
                     and c["eager"] <= 1.1 * cref))
    NOTES.append(f"CNN floor: the step's GEMMs alone (NumPy's BLAS, {threads} thread(s)) take "
                 f"{ms(t['gemms'])} ms, {t['gemms'] / t['layerkit']:.0%} of layerkit's step"
                 + (f" and {t['gemms'] / t['torch']:.0%} of torch's" if "torch" in t else "")
                 + f"; CPU time {ms(c['gemms'])} ms, {c['gemms'] / c['layerkit']:.0%} of "
                 f"layerkit's" + (f" and {c['gemms'] / c['torch']:.0%} of torch's"
                                  if "torch" in c else ""))


# ---- case 3: LSTM ---------------------------------------------------------------------------
def _sig(z):
    return 1.0 / (1.0 + np.exp(-z))


def lstm_numpy(x, w_out):
    t_len, (b, d), hdim = x.shape[1], (x.shape[0], x.shape[2]), 128
    wx = glorot(d, 4 * hdim)
    wh = glorot(hdim, 4 * hdim)
    bias = np.zeros(4 * hdim, np.float32)
    xs = np.ascontiguousarray(x.transpose(1, 0, 2))  # (T, B, D)

    def step():
        xproj = (xs.reshape(-1, d) @ wx + bias).reshape(t_len, b, 4 * hdim)
        h = np.zeros((b, hdim), np.float32)
        c = np.zeros((b, hdim), np.float32)
        cache = []
        for t in range(t_len):
            z = xproj[t] + h @ wh
            i, f = _sig(z[:, :hdim]), _sig(z[:, hdim:2 * hdim])
            g, o = np.tanh(z[:, 2 * hdim:3 * hdim]), _sig(z[:, 3 * hdim:])
            c_prev, h_prev = c, h
            c = f * c + i * g
            tc = np.tanh(c)
            h = o * tc
            cache.append((i, f, g, o, c_prev, tc, h_prev))
        dzs = np.empty((t_len, b, 4 * hdim), np.float32)
        dwh = np.zeros_like(wh)
        dh_next = np.zeros((b, hdim), np.float32)
        dc_next = np.zeros((b, hdim), np.float32)
        for t in range(t_len - 1, -1, -1):
            i, f, g, o, c_prev, tc, h_prev = cache[t]
            dh = w_out[t] + dh_next  # d(sum(h * w_out)) / dh
            dc = dh * o * (1 - tc * tc) + dc_next
            dz = dzs[t]
            dz[:, :hdim] = dc * g * i * (1 - i)
            dz[:, hdim:2 * hdim] = dc * c_prev * f * (1 - f)
            dz[:, 2 * hdim:3 * hdim] = dc * i * (1 - g * g)
            dz[:, 3 * hdim:] = dh * tc * o * (1 - o)
            dc_next = dc * f
            dwh += h_prev.T @ dz
            dh_next = dz @ wh.T
        flat = dzs.reshape(-1, 4 * hdim)
        return xs.reshape(-1, d).T @ flat, dwh, flat.sum(0)

    return step


def case_lstm(rows):
    x = RNG.standard_normal((32, 50, 64)).astype(np.float32)
    w_out = RNG.standard_normal((32, 50, 128)).astype(np.float32)
    layer = layers.LSTM(128, return_sequences=True)
    xt, wt = lk.constant(x), lk.constant(w_out)
    layer(xt)

    def lk_step():
        with lk.GradientTape() as tape:
            loss = lk.reduce_sum(layer(xt) * wt)
        return tape.gradient(loss, layer.trainable_variables)

    fns = {"layerkit": lk_step,
           "numpy": lstm_numpy(x, np.ascontiguousarray(w_out.transpose(1, 0, 2)))}
    if torch is not None:
        net = torch.nn.LSTM(64, 128, batch_first=True)
        tx, tw = torch.from_numpy(x), torch.from_numpy(w_out)

        def torch_step():
            net.zero_grad()
            (net(tx)[0] * tw).sum().backward()
        fns["torch"] = torch_step
    t = timed_blocks(fns, number=3)
    rows.append(_row("LSTM fwd+bwd (seq 50, batch 32, 64->128)", t,
                     "<= 1.5x numpy (7.2 ms)", t["layerkit"] <= 1.5 * t["numpy"]))


# ---- case 4: digits through fit -----------------------------------------------------------
def case_digits(rows):
    try:
        from sklearn.datasets import load_digits
    except ImportError:
        print("digits case skipped: scikit-learn is not installed")
        return
    d = load_digits()
    x = (d.data / 16.0).astype(np.float32)[:1440]
    y = d.target.astype(np.int64)[:1440]
    epochs, bs = (5 if QUICK else 30), 32

    def run_layerkit():
        lk.random.set_seed(0)
        model = Sequential([Input(shape=(64,)), layers.Dense(64, activation="relu"),
                            layers.Dense(10)])
        model.compile(optimizer=optimizers.Adam(1e-3), loss=SCCE)  # no metrics: as the loops
        t0 = time.perf_counter()
        model.fit(x, y, batch_size=bs, epochs=epochs, verbose=0)
        elapsed = time.perf_counter() - t0
        accuracy = float(np.mean(model.predict(x, verbose=0).argmax(-1) == y))
        return elapsed, accuracy

    def run_numpy():
        rng = np.random.default_rng(0)
        step = mlp_numpy([64, 64, 10], x, y, NumpyAdam)
        t0 = time.perf_counter()
        for _ in range(epochs):
            order = rng.permutation(len(x))
            for i in range(0, len(x), bs):
                idx = order[i:i + bs]
                step(x[idx], y[idx])
        return time.perf_counter() - t0, None

    runs = {"layerkit": run_layerkit, "numpy": run_numpy}
    if torch is not None:
        def run_torch():
            torch.manual_seed(0)
            net = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU(),
                                      torch.nn.Linear(64, 10))
            topt = torch.optim.Adam(net.parameters(), lr=1e-3)
            tx, ty = torch.from_numpy(x), torch.from_numpy(y)
            t0 = time.perf_counter()
            for _ in range(epochs):
                order = torch.randperm(len(x))
                for i in range(0, len(x), bs):
                    idx = order[i:i + bs]
                    topt.zero_grad()
                    torch.nn.functional.cross_entropy(net(tx[idx]), ty[idx]).backward()
                    topt.step()
            return time.perf_counter() - t0, None
        runs["torch"] = run_torch
    samples = {k: [] for k in runs}
    acc = None
    for _ in range(3):
        for name, fn in runs.items():
            time.sleep(0.05)  # let the previous library's worker threads go idle
            dt, a = fn()
            samples[name].append(dt)
            acc = a if a is not None else acc
    t = {k: statistics.median(v) for k, v in samples.items()}
    rows.append(_row(f"digits fit, {epochs} epochs (64-64-10, Adam, batch 32) [s-> ms]", t,
                     "<= 2.5x numpy (0.077 s)", t["layerkit"] <= 2.5 * t["numpy"]))
    print(f"digits: final training accuracy {acc:.3f}")


def _row(name, t, target, ok):
    return [name, ms(t["layerkit"]), ms(t["eager"]) if "eager" in t else "-", ms(t["numpy"]),
            ms(t["torch"]) if "torch" in t else "-",
            f"{t['layerkit'] / t['eager']:.2f}x" if "eager" in t else "-",
            f"{t['layerkit'] / t['numpy']:.2f}x",
            f"{t['layerkit'] / t['torch']:.2f}x" if "torch" in t else "-",
            target, "-" if ok is None else "yes" if ok else "NO"]


def main():
    print(f"numpy {np.__version__}; torch {torch.__version__ if torch else 'not installed'}; "
          f"{'quick' if QUICK else 'full'} run, times in ms (medians); threads: "
          f"{_THREADS or 'library defaults'}; load average {os.getloadavg()[0]:.2f}")
    rows: list = []
    cases = {"mlp": case_mlp, "cnn": case_cnn, "lstm": case_lstm, "digits": case_digits}
    only = [a.split("=", 1)[1] for a in sys.argv if a.startswith("--case=")]
    for name, case in cases.items():
        if not only or name in only:
            case(rows)
    print(table(rows, ["case", "layerkit", "eager", "numpy", "torch", "graph/eager",
                       "vs numpy", "vs torch", "target", "met"]))
    print("layerkit: the step fit runs (make_train_function, an lk.function graph) for the "
          "MLP and CNN;\neager: the same step with run_eagerly=True; LSTM is a taped eager "
          "step; digits runs fit.\nThe CNN row's torch runs on as many threads as NumPy's "
          f"BLAS ({blas_threads()}); other rows' torch on --torch-threads.")
    for line in NOTES:
        print(line)


if __name__ == "__main__":
    main()
