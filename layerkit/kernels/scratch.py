"""Per-thread reusable buffers and zero-framed copies for the convolution kernels.

A kernel that needs a temporary of the same shape on every call (a padded batch chunk,
a chunk of patches) takes it from :func:`scratch` instead of allocating: a fresh large
array costs its page faults on first touch (~0.25 ms per MB here), a reused one none.
Buffers are per thread (``lk.data`` map workers run kernels concurrently); the most
recently used ones are kept, up to ``MAX_BYTES`` per thread. A scratch buffer is only
ever read by the call that filled it: it must never escape into a result.
"""
from __future__ import annotations

import threading
from collections import OrderedDict

import numpy as np

from layerkit._core.tuning import SCRATCH_MAX_BYTES

_TLS = threading.local()
MAX_BYTES = SCRATCH_MAX_BYTES  # per thread: least recently used buffers go beyond this


def scratch(key, shape: tuple, dtype) -> np.ndarray:
    """A per-thread buffer of ``shape`` and ``dtype`` for ``key``, zero-filled when made.

    Buffers are kept per ``(key, shape[1:], dtype)`` with room for the largest
    ``shape[0]`` asked for so far: a later call with the same key returns (a leading
    slice of) the same memory, with whatever contents the last user left, until the
    buffer is evicted (LRU) or outgrown (then a larger zeroed one replaces it).
    """
    cache = getattr(_TLS, "bufs", None)
    if cache is None:
        cache = _TLS.bufs = OrderedDict()
    k = (key, tuple(shape[1:]), np.dtype(dtype).str)
    buf = cache.pop(k, None)
    if buf is None or buf.shape[0] < shape[0]:
        buf = np.zeros(shape, dtype)
        total = buf.nbytes + sum(b.nbytes for b in cache.values())
        while cache and total > MAX_BYTES:
            total -= cache.popitem(last=False)[1].nbytes
    cache[k] = buf
    return buf[:shape[0]]


def _placed(n: int, f: int, off: int, step: int) -> tuple[int, int, int]:
    """Source indices [lo, hi) of a length-``n`` axis placed at ``off + k*step`` that land
    inside a frame of length ``f``, and the frame position of ``lo``."""
    lo = 0 if off >= 0 else (step - 1 - off) // step
    hi = max(lo, min(n, (f - 1 - off) // step + 1))
    return lo, hi, off + lo * step


def frame(a: np.ndarray, hw: tuple, offsets: tuple, steps: tuple = (1, 1),
          tag: str = "frame", fill=0) -> np.ndarray:
    """NHWC ``a`` placed in a zero frame of spatial size ``hw``: element ``(y, x)`` goes to
    ``(offsets[0] + y*steps[0], offsets[1] + x*steps[1])``; elements falling outside the
    frame are dropped (negative offsets crop). Padding is steps (1, 1); the zero-stuffed
    input of a strided transposed convolution has steps = strides.

    The frame is a scratch buffer (see :func:`scratch`) keyed by the placement, so only
    the placed elements are written: the zeros around and between them stay from the
    buffer's first use (no memset of a fresh padded copy per call). With ``fill`` other
    than 0 (max-pool padding) a fresh array is returned instead.
    """
    n, h, w, c = a.shape
    fh, fw = hw
    (oy, ox), (sy, sx) = offsets, steps
    if (fh, fw) == (h, w) and (oy, ox) == (0, 0) and (sy, sx) == (1, 1):
        return a
    y0, y1, fy = _placed(h, fh, oy, sy)
    x0, x1, fx = _placed(w, fw, ox, sx)
    shape = (n, fh, fw, c)
    if fill != 0:
        buf = np.full(shape, fill, a.dtype)
    else:
        # Keyed by the placement: every image slot gets the same positions written, so
        # the zeros stay valid whatever the batch size of the call.
        buf = scratch((tag, a.shape[1:], offsets, steps), shape, a.dtype)
    if y1 > y0 and x1 > x0:
        buf[:, fy:fy + (y1 - y0 - 1) * sy + 1:sy, fx:fx + (x1 - x0 - 1) * sx + 1:sx] = \
            a[:, y0:y1, x0:x1]
    return buf


def pad(a: np.ndarray, pads, tag: str = "pad", fill=0) -> np.ndarray:
    """``a`` with its two spatial axes padded by ``pads = ((top, bottom), (left, right))``
    (a scratch frame, see :func:`frame`; ``a`` itself when there is no padding)."""
    (pt, pb), (pl, pr) = pads
    return frame(a, (a.shape[1] + pt + pb, a.shape[2] + pl + pr), (pt, pl), (1, 1), tag, fill)
