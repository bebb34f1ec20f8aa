"""The DCGAN of the keras-io guide "Customizing what happens in fit()": one train step
(discriminator update, then generator update) and the generator's forward pass, layerkit
vs PyTorch (when installed), with peak memory per step (issue 15, part 1).

Models (batch 64, latent 128, Adam(0.0003) for both, BinaryCrossentropy(from_logits)):
  discriminator: Conv2D(64, 3, strides 2, same) - LeakyReLU(0.2) - Conv2D(128, 3,
    strides 2, same) - LeakyReLU(0.2) - GlobalMaxPooling2D - Dense(1); input 28x28x1
  generator: Dense(7*7*128) - LeakyReLU - Reshape(7, 7, 128) - Conv2DTranspose(128, 4,
    strides 2, same) - LeakyReLU - Conv2DTranspose(128, 4, strides 2, same) - LeakyReLU -
    Conv2D(1, 7, same, sigmoid)
  train step (as the guide's GAN.train_step): generate 64 images, discriminator step on
  64 fake + 64 real images with noisy labels, then generator step through the frozen
  discriminator on 64 new latent vectors.

Cases:
  step eager      GAN.train_step called as plain Python
  step function   lk.function(GAN.train_step)
  step tob        GAN.train_on_batch (the guide's Model API; an lk.function graph)
  gen eager       generator(z) in inference
  gen function    lk.function of the same
  torch step / torch gen: the same in PyTorch (NCHW, torch.no_grad for the generated
  images of the discriminator step, as the guide computes them outside any tape)

Times are medians over repeats in alternating per-library blocks (wall clock and CPU
time of this process; CPU time counts every thread, OpenBLAS's spinning workers
included). Peak memory: each case in its own subprocess, after two warm-up steps and
``malloc_trim`` (glibc would otherwise keep the freed heap resident), as the rise of
the resident set's high-water mark (VmHWM, reset through /proc/self/clear_refs) over
the resident set before one more step.
Floor: the step's matrix products alone (the GEMMs layerkit's kernels run, NumPy BLAS).

BLAS note: this process runs without OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE (see
_common.clean_blas_env). ``--threads N`` pins BLAS, OpenMP and torch to N threads
(steadier on a shared machine); without it torch runs on as many threads as NumPy's
BLAS (one per core).

Run: python benchmarks/bench_dcgan.py [--quick] [--threads N] [--no-memory]
"""
from __future__ import annotations

import ctypes
import gc
import json
import os
import pathlib
import subprocess
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
from _common import (  # noqa: E402
    blas_threads,
    clean_blas_env,
    pin_threads_from_argv,
    table,
    timed_blocks,
)

_THREADS = pin_threads_from_argv()

clean_blas_env()

import numpy as np  # noqa: E402

import layerkit as lk  # noqa: E402
from layerkit import layers  # noqa: E402
from layerkit.models import Input, Model, Sequential  # noqa: E402

QUICK = "--quick" in sys.argv
BATCH, LATENT = 64, 128


# ---- layerkit -------------------------------------------------------------------------------
def build_models():
    lk.random.set_seed(0)
    disc = Sequential([
        Input(shape=(28, 28, 1)),
        layers.Conv2D(64, (3, 3), strides=(2, 2), padding="same"), layers.LeakyReLU(0.2),
        layers.Conv2D(128, (3, 3), strides=(2, 2), padding="same"), layers.LeakyReLU(0.2),
        layers.GlobalMaxPooling2D(), layers.Dense(1)], name="discriminator")
    gen = Sequential([
        Input(shape=(LATENT,)), layers.Dense(7 * 7 * 128), layers.LeakyReLU(0.2),
        layers.Reshape((7, 7, 128)),
        layers.Conv2DTranspose(128, (4, 4), strides=(2, 2), padding="same"),
        layers.LeakyReLU(0.2),
        layers.Conv2DTranspose(128, (4, 4), strides=(2, 2), padding="same"),
        layers.LeakyReLU(0.2),
        layers.Conv2D(1, (7, 7), padding="same", activation="sigmoid")], name="generator")
    return disc, gen


class GAN(Model):
    """The guide's GAN: train_step updates the discriminator, then the generator."""

    def __init__(self, discriminator, generator, latent_dim):
        super().__init__()
        self.discriminator = discriminator
        self.generator = generator
        self.latent_dim = latent_dim

    def compile(self, d_optimizer, g_optimizer, loss_fn):
        super().compile()
        self.d_optimizer = d_optimizer
        self.g_optimizer = g_optimizer
        self.loss_fn = loss_fn

    def train_step(self, real_images):
        if isinstance(real_images, tuple):
            real_images = real_images[0]
        batch_size = real_images.shape[0]
        z = lk.random.normal(shape=(batch_size, self.latent_dim))
        generated = self.generator(z)
        combined = lk.concat([generated, real_images], axis=0)
        labels = lk.concat([lk.ones((batch_size, 1)), lk.zeros((batch_size, 1))], axis=0)
        labels += 0.05 * lk.random.uniform(labels.shape)
        with lk.GradientTape() as tape:
            d_loss = self.loss_fn(labels, self.discriminator(combined))
        grads = tape.gradient(d_loss, self.discriminator.trainable_weights)
        self.d_optimizer.apply_gradients(zip(grads, self.discriminator.trainable_weights))
        z = lk.random.normal(shape=(batch_size, self.latent_dim))
        misleading = lk.zeros((batch_size, 1))
        with lk.GradientTape() as tape:
            g_loss = self.loss_fn(misleading, self.discriminator(self.generator(z)))
        grads = tape.gradient(g_loss, self.generator.trainable_weights)
        self.g_optimizer.apply_gradients(zip(grads, self.generator.trainable_weights))
        return {"d_loss": d_loss, "g_loss": g_loss}


def real_batch() -> np.ndarray:
    return np.random.default_rng(0).random((BATCH, 28, 28, 1), dtype=np.float32)


def layerkit_case(name: str):
    """A zero-argument callable running one ``name`` case (built and warmed up)."""
    disc, gen = build_models()
    gan = GAN(disc, gen, LATENT)
    gan.compile(lk.optimizers.Adam(0.0003), lk.optimizers.Adam(0.0003),
                lk.losses.BinaryCrossentropy(from_logits=True))
    x = lk.constant(real_batch())
    z = lk.random.normal((BATCH, LATENT))
    if name == "step eager":
        fn = lambda: gan.train_step(x)  # noqa: E731
    elif name == "step function":
        step = lk.function(gan.train_step)
        fn = lambda: step(x)  # noqa: E731
    elif name == "step tob":
        xn = x.numpy()
        fn = lambda: gan.train_on_batch(xn)  # noqa: E731
    elif name == "gen eager":
        fn = lambda: gen(z, training=False)  # noqa: E731
    elif name == "gen function":
        g = lk.function(lambda t: gen(t, training=False))
        fn = lambda: g(z)  # noqa: E731
    else:
        raise ValueError(name)
    fn()
    fn()
    return fn


# ---- torch ----------------------------------------------------------------------------------
def torch_case(name: str):
    import torch  # noqa: PLC0415
    from torch import nn  # noqa: PLC0415

    torch.manual_seed(0)
    disc = nn.Sequential(nn.Conv2d(1, 64, 3, 2, 1), nn.LeakyReLU(0.2),
                         nn.Conv2d(64, 128, 3, 2, 1), nn.LeakyReLU(0.2),
                         nn.AdaptiveMaxPool2d(1), nn.Flatten(), nn.Linear(128, 1))
    gen = nn.Sequential(nn.Linear(LATENT, 7 * 7 * 128), nn.LeakyReLU(0.2),
                        nn.Unflatten(1, (128, 7, 7)),
                        nn.ConvTranspose2d(128, 128, 4, 2, 1), nn.LeakyReLU(0.2),
                        nn.ConvTranspose2d(128, 128, 4, 2, 1), nn.LeakyReLU(0.2),
                        nn.Conv2d(128, 1, 7, 1, 3), nn.Sigmoid())
    d_opt = torch.optim.Adam(disc.parameters(), 0.0003)
    g_opt = torch.optim.Adam(gen.parameters(), 0.0003)
    loss_fn = nn.BCEWithLogitsLoss()
    x = torch.from_numpy(np.ascontiguousarray(real_batch().transpose(0, 3, 1, 2)))

    def step():
        with torch.no_grad():
            fake = gen(torch.randn(BATCH, LATENT))
        combined = torch.cat([fake, x])
        labels = torch.cat([torch.ones(BATCH, 1), torch.zeros(BATCH, 1)])
        labels += 0.05 * torch.rand(labels.shape)
        d_opt.zero_grad()
        loss_fn(disc(combined), labels).backward()
        d_opt.step()
        g_opt.zero_grad()
        loss_fn(disc(gen(torch.randn(BATCH, LATENT))), torch.zeros(BATCH, 1)).backward()
        g_opt.step()

    def infer():
        with torch.no_grad():
            gen(torch.randn(BATCH, LATENT))

    fn = step if name == "torch step" else infer
    fn()
    fn()
    return fn


def try_torch():
    try:
        import torch  # noqa: PLC0415
    except ImportError:
        return None
    torch.set_num_threads(blas_threads(_THREADS))
    return torch


# ---- the floor: the step's GEMMs alone ------------------------------------------------------
# (M, K, N) of every matrix product layerkit's kernels run in one train step (see
# kernels/conv.py for the algorithms): generator forward twice; its backward; the
# discriminator's forward and backward on 128 images and forward + input gradient on 64.
_STEP_GEMMS = (
    [(64, 128, 6272), (3136, 128, 2048), (12544, 128, 2048), (73984, 128, 49)] * 2
    + [(50176, 49, 128), (128, 73984, 49),                    # 7x7 conv: dx, dw
       (12544, 2048, 128), (2048, 12544, 128),                # ConvT2: dx, dw
       (3136, 2048, 128), (2048, 3136, 128),                  # ConvT1: dx, dw
       (128, 64, 6272)]                                       # Dense dw
    + [(25088, 9, 64), (9, 25088, 64), (6272, 576, 128), (576, 6272, 128),
       (6272, 128, 576)]                                      # discriminator, 128 images
    + [(12544, 9, 64), (3136, 576, 128), (3136, 128, 576), (12544, 64, 9)])


def gemm_floor():
    rng = np.random.default_rng(1)
    pairs = [(rng.standard_normal((m, k), dtype=np.float32),
              rng.standard_normal((k, n), dtype=np.float32)) for m, k, n in _STEP_GEMMS]

    def run():
        for a, b in pairs:
            a @ b
    run()
    return run


def step_gflop() -> float:
    return sum(2 * m * k * n for m, k, n in _STEP_GEMMS) / 1e9


# ---- memory (one subprocess per case) -------------------------------------------------------
def _status_mb(field: str) -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    raise RuntimeError(field)


def _trim() -> None:
    """Hand freed heap memory back to the OS (glibc keeps it otherwise, so the resident
    set before a step would already include the previous step's peak)."""
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except OSError:  # not glibc: the figures then include retained heap memory
        pass


def measure_memory(name: str) -> float:
    """MB the resident set rises to during one ``name`` step (run in a subprocess)."""
    if name.startswith("torch"):
        try_torch()
    fn = torch_case(name) if name.startswith("torch") else layerkit_case(name)
    gc.collect()
    _trim()
    base = _status_mb("VmRSS")
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # reset VmHWM to the current resident set
    fn()
    return _status_mb("VmHWM") - base


def memory_in_subprocess(name: str) -> float | None:
    env = dict(os.environ)
    out = subprocess.run([sys.executable, __file__, f"--mem-case={name}"],
                         capture_output=True, text=True, env=env, timeout=3600)
    for line in out.stdout.splitlines():
        if line.startswith("MEM "):
            return json.loads(line[4:])
    print(f"memory of {name!r} failed:\n{out.stderr[-2000:]}")
    return None


# ---- main -----------------------------------------------------------------------------------
def _fmt(x, unit=1e3, digits=1):
    return "-" if x is None else f"{x * unit:.{digits}f}"


def _verdict(ok):
    return "-" if ok is None else "yes" if ok else "NO"


def main() -> None:
    mem_case = next((a.split("=", 1)[1] for a in sys.argv if a.startswith("--mem-case=")),
                    None)
    if mem_case:
        print("MEM", json.dumps(measure_memory(mem_case)))
        return
    torch = try_torch()
    threads = blas_threads(_THREADS)
    print(f"numpy {np.__version__}; torch {torch.__version__ if torch else 'not installed'}; "
          f"BLAS threads {threads}; torch threads {threads if torch else '-'}; "
          f"{'quick' if QUICK else 'full'} run; load average {os.getloadavg()[0]:.2f}")
    names = ["step eager", "step function", "step tob", "gen eager", "gen function"]
    fns = {n: layerkit_case(n) for n in names}
    if torch is not None:
        fns["torch step"] = torch_case("torch step")
        fns["torch gen"] = torch_case("torch gen")
    fns["gemm floor"] = gemm_floor()
    repeat = 3 if QUICK else 7
    t = timed_blocks(fns, number=1, repeat=repeat, blocks=min(repeat, 3), pause=0.2, cpu=True)
    mem = {}
    if "--no-memory" not in sys.argv:
        for n in ["step eager", "step function", "step tob"] + (
                ["torch step"] if torch is not None else []):
            mem[n] = memory_in_subprocess(n)
    wall = {k: v[0] for k, v in t.items()}
    cpu = {k: v[1] for k, v in t.items()}
    ts = wall.get("torch step")
    rows = []
    for n in names:
        key = "torch gen" if n.startswith("gen") else "torch step"
        ref, cref = wall.get(key), cpu.get(key)
        ratio = None if ref is None else wall[n] / ref
        cratio = None if cref is None else cpu[n] / cref
        target = "<= torch" + (" (inference)" if n.startswith("gen") else "")
        rows.append([n, _fmt(wall[n]), _fmt(cpu[n]), _fmt(ref), _fmt(ratio, 1, 2),
                     _fmt(cratio, 1, 2), target,
                     _verdict(None if ratio is None else ratio <= 1.0),
                     _verdict(None if cratio is None else cratio <= 1.0),
                     _fmt(mem.get(n), 1, 0)])
    if torch is not None:
        for n in ("torch step", "torch gen"):
            rows.append([n, _fmt(wall[n]), _fmt(cpu[n]), "-", "-", "-", "-", "-", "-",
                         _fmt(mem.get(n), 1, 0)])
    # CPU time counts every thread of the process: with one thread per library it is the
    # work done, free of waiting for a core on a shared machine (wall time is not).
    print(table(rows, ["case", "wall ms", "cpu ms", "torch wall ms", "wall vs torch",
                       "cpu vs torch", "target", "met (wall)", "met (cpu)", "step peak MB"]))
    floor = wall["gemm floor"]
    print(f"floor: the step's {len(_STEP_GEMMS)} GEMMs alone ({step_gflop():.1f} GFLOP, NumPy "
          f"BLAS, {threads} thread(s)) take {_fmt(floor)} ms wall, {_fmt(cpu['gemm floor'])} "
          f"ms cpu: {floor / wall['step function']:.0%} of the lk.function step"
          + (f", {floor / ts:.0%} of torch's step" if ts else ""))
    if mem:
        mt = mem.get("torch step")
        for n in ("step eager", "step function", "step tob"):
            if mem.get(n) is None:
                continue
            line = f"memory {n}: +{mem[n]:.0f} MB"
            if mt:
                line += (f", {mem[n] / mt:.2f}x torch's +{mt:.0f} MB (target <= 1.5x: "
                         f"{_verdict(mem[n] <= 1.5 * mt)})")
            print(line)
        if mem.get("step function") is not None and mem.get("step eager") is not None:
            print(f"memory lk.function <= eager: "
                  f"{_verdict(mem['step function'] <= mem['step eager'])}")


if __name__ == "__main__":
    main()
