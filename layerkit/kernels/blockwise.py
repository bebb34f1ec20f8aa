"""Block-wise evaluation of ufunc chains, on one thread or two.

NumPy runs one ufunc over a whole array at a time, so a chain of 20 ufuncs over 16 MB
streams 20 times through memory and allocates 20 temporaries. :func:`blockwise` runs a
kernel (the whole chain, written with ``out=``) on one block of the inputs at a time,
into scratch buffers that stay in the L2 cache, and can split the blocks over threads
(NumPy releases the GIL inside ufunc loops). The activation kernels (gelu, softplus)
and the special functions (erf) use it; the block sizes live in
:mod:`layerkit._core.tuning`.
"""
from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np


def default_threads() -> int:
    """Threads for one kernel call (the calling thread is one of them).

    Two threads gave 1.36x on gelu alone (4M float32, 15.7 -> 11.6 ms), but OpenBLAS's
    idle workers busy-wait on the other core for ~0.1 s after every multi-threaded GEMM,
    and a gelu nearly always follows one: a Dense(2048x512 @ 512x2048) + gelu forward and
    backward step took 60.6-62.4 ms with one thread and 64.1-66.2 ms with two (three
    alternating runs). So the kernels split only when the environment pins NumPy's BLAS
    to one thread, and then over at most two (more were not measured).
    """
    blas = os.environ.get("OPENBLAS_NUM_THREADS") or os.environ.get("OMP_NUM_THREADS")
    return max(1, min(os.cpu_count() or 1, 2)) if blas == "1" else 1


#: Threads the kernels may use (``lk.config.threading.set_intra_op_parallelism_threads``
#: sets it, and clears :data:`POOL` under :data:`POOL_LOCK`).
THREADS = default_threads()
POOL: list = []
POOL_LOCK = threading.Lock()


def executor() -> ThreadPoolExecutor:
    """The shared pool of ``THREADS - 1`` kernel threads (made on first use)."""
    with POOL_LOCK:
        if not POOL:
            POOL.append(ThreadPoolExecutor(THREADS - 1, thread_name_prefix="layerkit-nn"))
        return POOL[0]


# A forked child must not reuse the parent's pool (its threads do not exist there).
os.register_at_fork(after_in_child=POOL.clear)


def _flat(a: np.ndarray, n: int) -> np.ndarray:
    if a.flags.c_contiguous:
        return a.reshape(-1)
    if not any(a.strides):
        # A broadcast scalar (the gradient of a sum or mean): stays a zero-stride view.
        return np.lib.stride_tricks.as_strided(a, shape=(n,), strides=(0,))
    return np.ascontiguousarray(a).reshape(-1)


def blockwise(kernel, inputs: tuple, scratch: tuple, block: int, *, out_dtype=None,
              threads: int = 1, quiet: bool = False) -> np.ndarray:
    """``kernel(*input_blocks, out_block, *scratch_blocks)`` over blocks of the inputs.

    Args:
        kernel: writes the result of one block into ``out_block``; it may use the
            scratch blocks freely.
        inputs: arrays of the first one's shape (a broadcast scalar with all strides 0
            is read without being copied).
        scratch: the dtype of each scratch buffer; each thread allocates one block of
            each and reuses them (the last, shorter block gets views).
        block: elements per block.
        out_dtype: the result's dtype (default: the first input's).
        threads: threads to split the blocks over, the calling one included (the
            shared :func:`executor` runs the others); 1 runs everything here.
        quiet: run under ``np.errstate(all="ignore")`` (kernels whose clamped or
            masked lanes overflow on purpose).

    Returns:
        The result, of the first input's shape.
    """
    first = inputs[0]
    shape, n = first.shape, first.size
    flats = [_flat(a, n) for a in inputs]
    out = np.empty(n, first.dtype if out_dtype is None else out_dtype)

    def work(lo: int, hi: int) -> None:
        m = min(block, hi - lo)
        bufs = [np.empty(m, dt) for dt in scratch]
        for s in range(lo, hi, block):
            t = min(s + block, hi)
            if t - s != m:  # the last, shorter block
                m = t - s
                bufs = [b[:m] for b in bufs]
            kernel(*[f[s:t] for f in flats], out[s:t], *bufs)

    def run(lo: int, hi: int) -> None:
        if quiet:
            with np.errstate(all="ignore"):
                work(lo, hi)
        else:
            work(lo, hi)

    if threads <= 1:
        run(0, n)
    else:
        pool = executor()
        step = -(-n // threads)
        step = -(-step // block) * block
        futures = [pool.submit(run, lo, min(lo + step, n)) for lo in range(step, n, step)]
        run(0, min(step, n))
        for f in futures:
            f.result()
    return out.reshape(shape)
