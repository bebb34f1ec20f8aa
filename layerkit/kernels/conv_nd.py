"""Convolution kernels over any number of spatial axes (channels last; used for 3-D).

``conv_nd`` is one GEMM per batch chunk over patches copied from a strided window view;
its input gradient is one GEMM per chunk followed by a scatter-add per kernel offset;
its filter gradient sums the chunks' patch-by-gradient GEMMs. Chunks hold about
``kernels.conv.CHUNK_BYTES`` of patches, so memory does not grow with the batch.
Padding attributes are ``((lo, hi), ...)`` per spatial axis.
"""
from __future__ import annotations

import math

import numpy as np
from numpy.lib.stride_tricks import as_strided

from layerkit.kernels.conv import _chunk, out_len
from layerkit.kernels.scratch import scratch


def out_sizes(sizes, ksize, strides, pads, dilations) -> tuple:
    """Output sizes of a window ``ksize`` over spatial ``sizes``."""
    return tuple(out_len(n, k, s, d, lo, hi)
                 for n, k, s, d, (lo, hi) in zip(sizes, ksize, strides, dilations, pads))


def _interior(pads, sizes) -> tuple:
    """The index of the unpadded region of a padded channels-last array."""
    return (slice(None), *(slice(lo, lo + n) for (lo, _), n in zip(pads, sizes)), Ellipsis)


def _padded(x: np.ndarray, pads) -> np.ndarray:
    """``x`` zero-padded in a scratch buffer (only the interior written per call)."""
    if not any(lo or hi for lo, hi in pads):
        return x
    shape = (x.shape[0], *(n + lo + hi for n, (lo, hi) in zip(x.shape[1:-1], pads)),
             x.shape[-1])
    buf = scratch(("nd-pad", x.shape[1:], tuple(pads)), shape, x.dtype)
    buf[_interior(pads, x.shape[1:-1])] = x
    return buf


def _patches(x: np.ndarray, ksize, strides, pads, dilations, out) -> np.ndarray:
    """The (N*O, K*C) patch matrix of ``x`` in scratch."""
    xp = _padded(x, pads)
    sn, *sp, sc = xp.strides
    win = as_strided(xp, (x.shape[0], *out, *ksize, x.shape[-1]),
                     (sn, *(a * s for a, s in zip(sp, strides)),
                      *(a * d for a, d in zip(sp, dilations)), sc), writeable=False)
    m = x.shape[0] * math.prod(out)
    cols = scratch("nd-cols", (m, math.prod(ksize) * x.shape[-1]), x.dtype)
    np.copyto(cols.reshape(win.shape), win)
    return cols


def conv_nd(x, w, strides, pads, dilations) -> np.ndarray:
    """Convolution of channels-last ``x`` with a (*K, C, F) kernel."""
    ksize, f = w.shape[:-2], w.shape[-1]
    out = out_sizes(x.shape[1:-1], ksize, strides, pads, dilations)
    dtype = np.result_type(x.dtype, w.dtype)
    x, wm = x.astype(dtype, copy=False), w.reshape(-1, f).astype(dtype, copy=False)
    n, p = x.shape[0], math.prod(out)
    y = np.empty((n, p, f), dtype)
    nb = _chunk(n, p * wm.shape[0] * dtype.itemsize)
    for a in range(0, n, nb):
        b = min(n, a + nb)
        cols = _patches(x[a:b], ksize, strides, pads, dilations, out)
        np.matmul(cols, wm, out=y[a:b].reshape(-1, f))
    return y.reshape(n, *out, f)


def conv_nd_backprop_input(g, w, input_shape, strides, pads, dilations) -> np.ndarray:
    """The gradient of :func:`conv_nd` with respect to its input."""
    ksize, c, f = w.shape[:-2], w.shape[-2], w.shape[-1]
    n, *out = g.shape[:-1]
    dtype = np.result_type(g.dtype, w.dtype)
    wt = w.reshape(-1, f).T.astype(dtype, copy=False)
    sizes = tuple(input_shape[1:-1])
    padded = tuple(s + lo + hi for s, (lo, hi) in zip(sizes, pads))
    dx = np.empty((n, *sizes, c), dtype)
    p, k = math.prod(out), math.prod(ksize)
    nb = _chunk(n, p * k * c * dtype.itemsize)
    lead = (slice(None),) * (1 + len(out))
    for a in range(0, n, nb):
        b = min(n, a + nb)
        d = scratch("nd-col2im", ((b - a) * p, k * c), dtype)
        np.matmul(g[a:b].reshape(-1, f).astype(dtype, copy=False), wt, out=d)
        d = d.reshape(b - a, *out, *ksize, c)
        acc = scratch(("nd-col2im-out", tuple(pads)), (b - a, *padded, c), dtype)
        acc[...] = 0
        for kk in np.ndindex(*ksize):  # scatter-add each kernel offset's patch gradients
            taps = tuple(slice(i * dl, i * dl + (o - 1) * s + 1, s)
                         for i, dl, o, s in zip(kk, dilations, out, strides))
            acc[(slice(None), *taps)] += d[lead + kk]
        dx[a:b] = acc[_interior(pads, sizes)]
    return dx


def conv_nd_backprop_filter(x, g, filter_shape, strides, pads, dilations) -> np.ndarray:
    """The gradient of :func:`conv_nd` with respect to its (*K, C, F) filter."""
    ksize, f = filter_shape[:-2], filter_shape[-1]
    out = tuple(g.shape[1:-1])
    dtype = np.result_type(x.dtype, g.dtype)
    x = x.astype(dtype, copy=False)
    n, p = x.shape[0], math.prod(out)
    kc = math.prod(ksize) * x.shape[-1]
    acc = np.zeros((kc, f), dtype)
    part = np.empty_like(acc)
    nb = _chunk(n, p * kc * dtype.itemsize)
    for a in range(0, n, nb):
        b = min(n, a + nb)
        cols = _patches(x[a:b], ksize, strides, pads, dilations, out)
        np.matmul(cols.T, g[a:b].reshape(-1, f).astype(dtype, copy=False), out=part)
        acc += part
    return acc.reshape(filter_shape)
