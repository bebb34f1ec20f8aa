"""Pooling kernels over KH x KW windows of NHWC arrays (TensorFlow semantics).

Pools loop over kernel offsets with whole-array ufuncs (no window reductions on strided
views, which NumPy runs 2-3x slower), so their cost is the number of C-long inner loops.
For the 2x2/2 pool of 64x28x28x32 the rows-first forward took 0.78 ms vs 0.88 for
np.maximum of the 4 strided views; a backward from a uint8 argmax code saved by the
forward took 1.7 ms vs 2.4 for the equality masks, but computing the code made the
forward 0.9 ms slower (3.5 ms for both vs 3.3); float masks with tie-breaking by
bitwise ops on integer views took 3.0 ms vs 2.4.

Max pooling: padded positions never win, and the gradient goes to the first maximum of
each window in row-major order (TensorFlow's tie rule). Average pooling divides by the
number of real (unpadded) elements in each window (TensorFlow's SAME divisor).
"""
from __future__ import annotations

import numpy as np

from layerkit.kernels.conv import NO_PAD, ONES, out_len, tap
from layerkit.kernels.scratch import pad


def lowest(dtype: np.dtype):
    """The value that never wins a max: -inf for floats, the minimum for integers."""
    return -np.inf if dtype.kind in "fc" else np.iinfo(dtype).min


def pool_out_hw(shape, ksize, strides, pads) -> tuple[int, int]:
    """(OH, OW) of a pool over NHWC ``shape``."""
    return (out_len(shape[1], ksize[0], strides[0], 1, *pads[0]),
            out_len(shape[2], ksize[1], strides[1], 1, *pads[1]))


def _crop(xp: np.ndarray, pads, h: int, w: int) -> np.ndarray:
    (pt, _), (pl, _) = pads
    if xp.shape[1] == h and xp.shape[2] == w:
        return xp
    return np.ascontiguousarray(xp[:, pt:pt + h, pl:pl + w])


def _reduce_taps(xp, ksize, strides, oh, ow, ufunc):
    """``ufunc``-reduce the pooling windows of padded ``xp`` to (N, OH, OW, C).

    Rows first: the KH row taps are whole (N, OH, Wp, C) slabs with long contiguous
    runs; the KW column taps then run on the KH-times smaller result.
    """
    (kh, kw), (sh, sw) = ksize, strides

    def reduce(taps):
        out = ufunc(taps[0], taps[1]) if len(taps) > 1 else taps[0].copy()
        for t in taps[2:]:
            ufunc(out, t, out=out)
        return out

    rows = [xp[:, i:i + (oh - 1) * sh + 1:sh] for i in range(kh)]
    rows = reduce(rows) if kh > 1 else rows[0]
    return reduce([rows[:, :, j:j + (ow - 1) * sw + 1:sw] for j in range(kw)])


def max_pool(x, ksize, strides, pads) -> np.ndarray:
    """Max over each window (padding never wins)."""
    oh, ow = pool_out_hw(x.shape, ksize, strides, pads)
    return _reduce_taps(pad(x, pads, fill=lowest(x.dtype)), ksize, strides, oh, ow,
                        np.maximum)


def _first_max_masks(xp, y, ksize, strides):
    """Yield ((i, j), mask) with mask[n, oh, ow, c] true where offset (i, j) is the first
    (row-major) maximum of its window: TensorFlow routes the gradient of ties there."""
    kh, kw = ksize
    oh, ow = y.shape[1:3]
    taken = None
    eq = np.empty(y.shape, dtype=bool)
    for i in range(kh):
        for j in range(kw):
            np.equal(tap(xp, i, j, strides, ONES, oh, ow), y, out=eq)
            if taken is None:
                taken = eq.copy()
                yield (i, j), taken
                continue
            first = np.greater(eq, taken)  # eq and not taken
            yield (i, j), first
            taken |= eq


def _tiled_first_max(x, y, ksize) -> np.ndarray:
    """(N, OH, KH, OW, KW, C) bool mask of each window's first (row-major) maximum, for
    windows that tile unpadded ``x`` exactly: one broadcast comparison on the window
    layout of ``x`` (a free reshape), then ties resolved in place tap by tap."""
    (kh, kw), (n, oh, ow, c) = ksize, y.shape
    eq = x.reshape(n, oh, kh, ow, kw, c) == y[:, :, None, :, None, :]
    taken = None
    for i in range(kh):
        for j in range(kw):
            e = eq[:, :, i, :, j]
            if taken is None:
                taken = e.copy()
                continue
            np.greater(e, taken, out=e)  # a maximum here, and none earlier
            if (i, j) != (kh - 1, kw - 1):
                taken |= e
    return eq


def max_pool_grad(x, y, g, ksize, strides, pads) -> np.ndarray:
    """``g`` routed to the first maximum of each window of ``x`` (``y`` is the pool)."""
    oh, ow = y.shape[1:3]
    if ksize == strides and pads == NO_PAD and x.shape[1] == oh * ksize[0] and \
            x.shape[2] == ow * ksize[1]:
        # The usual 2x2/2 pool: ~1.2x faster than the per-tap loop below (pool of 64x28x28x32).
        first = _tiled_first_max(x, y, ksize)
        dx = np.empty(x.shape, dtype=g.dtype)
        np.multiply(first, g[:, :, None, :, None, :], out=dx.reshape(first.shape))
        return dx
    xp = pad(x, pads, fill=lowest(x.dtype))
    overlap = ksize[0] > strides[0] or ksize[1] > strides[1]
    tiled = ksize == strides and xp.shape[1] == oh * ksize[0] and xp.shape[2] == ow * ksize[1]
    # Windows that tile the input exactly write every element once: no zero fill needed.
    dx = (np.empty if tiled else np.zeros)(xp.shape, dtype=g.dtype)
    for (i, j), m in _first_max_masks(xp, y, ksize, strides):
        view = tap(dx, i, j, strides, ONES, oh, ow)
        if overlap:
            view += g * m
        else:
            np.multiply(g, m, out=view)
    return _crop(dx, pads, x.shape[1], x.shape[2])


def max_pool_grad_grad(x, y, h, ksize, strides, pads) -> np.ndarray:
    """The adjoint of :func:`max_pool_grad` in ``g``: ``h`` gathered at each argmax."""
    xp = pad(x, pads, fill=lowest(x.dtype))
    hp = pad(h, pads, "pool-gg")
    oh, ow = y.shape[1:3]
    out = np.zeros(y.shape, dtype=h.dtype)
    for (i, j), m in _first_max_masks(xp, y, ksize, strides):
        out += tap(hp, i, j, strides, ONES, oh, ow) * m
    return out


def _window_counts(in_hw, ksize, strides, pads, out_hw) -> np.ndarray:
    """(OH, OW, 1) number of real (unpadded) elements in each window (TF's SAME divisor)."""
    per_axis = []
    for n, k, s, (lo, _), o in zip(in_hw, ksize, strides, pads, out_hw):
        pos = np.arange(o)[:, None] * s + np.arange(k)[None, :] - lo
        per_axis.append(((pos >= 0) & (pos < n)).sum(axis=1))
    return np.multiply.outer(per_axis[0], per_axis[1])[..., None]


def _avg_scale(in_hw, ksize, strides, pads, out_hw, dtype):
    if pads == NO_PAD:
        return dtype.type(1.0 / (ksize[0] * ksize[1]))
    return (1.0 / _window_counts(in_hw, ksize, strides, pads, out_hw)).astype(dtype)


def avg_pool(x, ksize, strides, pads) -> np.ndarray:
    """Mean over the real elements of each window."""
    oh, ow = pool_out_hw(x.shape, ksize, strides, pads)
    s = _reduce_taps(pad(x, pads, "pool-avg"), ksize, strides, oh, ow, np.add)
    s *= _avg_scale(x.shape[1:3], ksize, strides, pads, (oh, ow), s.dtype)
    return s


def avg_pool_grad(g, input_shape, ksize, strides, pads) -> np.ndarray:
    """Each output gradient spread evenly over the real elements of its window."""
    n, h, w, c = input_shape
    oh, ow = g.shape[1:3]
    gs = g * _avg_scale((h, w), ksize, strides, pads, (oh, ow), g.dtype)
    (pt, pb), (pl, pr) = pads
    dx = np.zeros((n, h + pt + pb, w + pl + pr, c), dtype=g.dtype)
    overlap = ksize[0] > strides[0] or ksize[1] > strides[1]
    for i in range(ksize[0]):
        for j in range(ksize[1]):
            view = tap(dx, i, j, strides, ONES, oh, ow)
            if overlap:
                view += gs
            else:
                view[...] = gs
    return _crop(dx, pads, h, w)
