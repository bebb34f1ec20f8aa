"""Convolution and pooling records (NHWC images, HWIO kernels, TensorFlow semantics).

Every op here is bilinear or piecewise linear, so its gradients are ops of the same
family, and the records close under differentiation:

- ``conv2d(x, w)``; vjp -> ``conv2d_backprop_input(g, w)`` and ``conv2d_backprop_filter(x, g)``;
  their vjps are ``conv2d`` and each other again (``conv2d_transpose`` *is*
  ``conv2d_backprop_input``). The same three records exist for ``depthwise_conv2d``.
- ``max_pool2d(x)``; vjp -> ``max_pool2d_grad(x, y, g)`` (scatter to the first maximum of
  each window, as TensorFlow); its vjp -> ``max_pool2d_grad_grad(x, y, h)`` (gather from
  the same argmax), whose vjp is ``max_pool2d_grad`` again.
- ``avg_pool2d(x)``; vjp -> ``avg_pool2d_grad(g)``, whose vjp is ``avg_pool2d``.

Speed notes (measured on the 2-core box; see benchmarks/bench_conv.py):

- A convolution is one GEMM over an im2col matrix built from a strided *view* of the
  padded input, ``(N, OH, OW, KH, KW, C)``; the one contiguous copy is the reshape to
  ``(N*OH*OW, KH*KW*C)``, whose inner runs are ``KW*C`` elements long.
  With 1-3 input channels those runs are tiny, so the patches are built transposed,
  ``(KH*KW*C, N*OH*OW)``, by one plane copy per kernel offset; BLAS reads the
  transpose without a copy (5x faster patches for 28x28x1).
- ``conv2d_backprop_filter`` is one GEMM ``patches^T @ g``. ``conv2d_backprop_input``
  with stride 1 and >= 32 input channels is a forward convolution of the re-padded
  ``g`` with the flipped kernel: one GEMM of column-only patches by all kernel rows at
  once, then KH-1 shifted adds, with the height padding left implicit (``_conv_s1``:
  10% faster than padding first at the issue-3 CNN sizes); otherwise one GEMM
  ``g @ w^T`` followed by a col2im scatter-add that loops over the KH*KW kernel
  offsets only (never pixels or images).
- Conv2D layers call ``fused_conv2d`` (conv + bias + ReLU in one record that keeps its
  patch matrix for the filter gradient; with a bias the patches carry a ones column, so
  the bias is part of the GEMM; see that section).
- Padded copies that only feed an im2col live in a reused per-thread scratch buffer
  (``_pad_scratch``: its zero border is written once).
- Pools loop over kernel offsets with whole-array ufuncs (no window reductions on
  strided views, which NumPy runs 2-3x slower), so their cost is the number of C-long
  inner loops. For the 2x2/2 pool of 64x28x28x32 the rows-first forward took
  0.78 ms vs 0.88 for np.maximum of the 4 strided views; a backward from a uint8
  argmax code saved by the forward took 1.7 ms vs 2.4 for the equality masks, but
  computing the code made the forward 0.9 ms slower (3.5 ms for both vs 3.3); float
  masks with tie-breaking by bitwise ops on integer views took 3.0 ms vs 2.4.
- No intra-op threads. OpenBLAS's idle worker busy-waits ~0.1 s after every threaded
  GEMM (the process burns a core during a sleep that follows one), and a CNN step runs
  a GEMM every few ms, so the second core is never free for a thread of ours: a 2-way
  split of a memory-bound NumPy loop ran 1.85x faster with no GEMM in the last 0.1 s
  and 0.95x right after one (1.8x with OPENBLAS_THREAD_TIMEOUT=4, which OpenBLAS only
  reads when NumPy loads it). Splitting whole records by batch halves, GEMMs included,
  took 30-31 ms per CNN step vs 25.8 serial; with BLAS pinned to one thread it took
  25-27 ms vs 35-37 serial: never better than the serial step with 2 BLAS threads.
  (With OPENBLAS_THREAD_TIMEOUT=4 set before NumPy loads, splitting only the pools by
  batch halves took the step from ~25 to ~23.5 ms.)
  The GEMMs themselves scale (1.9x on 2 threads) and run at ~200 GFLOP/s, 75% of this
  box's 1024^3 SGEMM peak.
- Inside ``lk.function`` graphs, a ReLU followed by a max-pool gets its mask applied to
  the pooled gradient instead (a graph rewrite in autodiff/function/passes.py).

Attributes of the records are plain tuples: ``strides=(sh, sw)``,
``pads=((top, bottom), (left, right))`` (SAME already resolved), ``dilations=(dh, dw)``.
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence

import numpy as np
from numpy.lib.stride_tricks import as_strided

from layerkit._core.convert import to_array
from layerkit._core.op import RECORDERS, Op, apply, wrap
from layerkit._core.tensor import Tensor
from layerkit.primitives import array as _array
from layerkit.primitives import nn as _nn
from layerkit.primitives.spatial import same_pads, spatial_arg

__all__ = ["conv2d", "conv2d_transpose", "depthwise_conv2d", "max_pool2d", "avg_pool2d"]

IntOrInts = int | Sequence[int]
Padding = str | Sequence[Sequence[int]]

_NO_PAD = ((0, 0), (0, 0))
_TCONV_MIN_CHANNELS = 32  # below this the narrow GEMM loses to col2im (measured)
_ONES = (1, 1)
_FEW_CHANNELS = 3  # up to here transposed patches beat window copies (measured at 28x28)


# =====================================================================================
# Geometry helpers (NumPy only)
# =====================================================================================
def _out_len(n: int, k: int, s: int, d: int, lo: int, hi: int) -> int:
    return (n + lo + hi - (k - 1) * d - 1) // s + 1


def _pad(x: np.ndarray, pads, value=0) -> np.ndarray:
    """Pad the two spatial axes of an NHWC array (a copy only when there is padding)."""
    (pt, pb), (pl, pr) = pads
    if not (pt or pb or pl or pr):
        return x
    n, h, w, c = x.shape
    shape = (n, h + pt + pb, w + pl + pr, c)
    out = np.zeros(shape, x.dtype) if value == 0 else np.full(shape, value, x.dtype)
    out[:, pt:pt + h, pl:pl + w] = x
    return out


_SCRATCH = threading.local()
_SCRATCH_ENTRIES = 8  # per thread; one CNN step uses 2-3


def _pad_scratch(x: np.ndarray, pads) -> np.ndarray:
    """Zero-padded ``x`` in a per-thread buffer that is reused by later calls.

    Only the interior is written: the zero border stays from the buffer's first use,
    which saves the zero fill of a fresh padded copy (a 4 MB memset for the 64x16x16x64
    float32 gradient of the issue-3 CNN). The result is overwritten by the next call
    with the same shape, so it must only feed a copy (an im2col) and never escape.
    """
    (pt, pb), (pl, pr) = pads
    if not (pt or pb or pl or pr):
        return x
    n, h, w, c = x.shape
    key = (x.shape, x.dtype.str, pads)
    cache = getattr(_SCRATCH, "bufs", None)
    if cache is None:
        cache = _SCRATCH.bufs = OrderedDict()
    buf = cache.pop(key, None)
    if buf is None:
        buf = np.zeros((n, h + pt + pb, w + pl + pr, c), x.dtype)
        if len(cache) >= _SCRATCH_ENTRIES:
            cache.popitem(last=False)
    cache[key] = buf
    buf[:, pt:pt + h, pl:pl + w] = x
    return buf


def _crop(xp: np.ndarray, pads, h: int, w: int) -> np.ndarray:
    (pt, _), (pl, _) = pads
    if xp.shape[1] == h and xp.shape[2] == w:
        return xp
    return np.ascontiguousarray(xp[:, pt:pt + h, pl:pl + w])


def _tap(a: np.ndarray, i: int, j: int, strides, dilations, oh: int, ow: int) -> np.ndarray:
    """The (N, OH, OW, C) view of padded ``a`` seen by kernel offset (i, j)."""
    (sh, sw), (dh, dw) = strides, dilations
    return a[:, i * dh:i * dh + (oh - 1) * sh + 1:sh, j * dw:j * dw + (ow - 1) * sw + 1:sw]


def _windows(xp: np.ndarray, kh: int, kw: int, oh: int, ow: int, strides, dilations):
    """Read-only (N, OH, OW, KH, KW, C) window view of padded ``xp`` (no copy)."""
    sn, sy, sx, sc = xp.strides
    (sh, sw), (dh, dw) = strides, dilations
    return as_strided(xp, (xp.shape[0], oh, ow, kh, kw, xp.shape[3]),
                      (sn, sy * sh, sx * sw, sy * dh, sx * dw, sc), writeable=False)


def _im2col(x: np.ndarray, kh: int, kw: int, strides, pads, dilations,
            ones: bool = False) -> np.ndarray:
    """The (N*OH*OW, KH*KW*C) patch matrix of ``x`` (possibly a transposed view).

    With ``ones`` (and a kernel larger than 1x1 or any padding or stride) the matrix
    gets a last column of ones, (M, KH*KW*C + 1), so that a bias rides along as the
    GEMM's last kernel row; callers check the width.
    """
    n, h, w, c = x.shape
    (pt, pb), (pl, pr) = pads
    oh = _out_len(h, kh, strides[0], dilations[0], pt, pb)
    ow = _out_len(w, kw, strides[1], dilations[1], pl, pr)
    if kh == kw == 1 and strides == _ONES and pads == _NO_PAD:
        return x.reshape(n * h * w, c)
    xp = _pad_scratch(x, pads)
    if c <= _FEW_CHANNELS:
        # Few channels (images, grayscale): the window copy would move KW*C elements
        # at a time; instead copy each kernel offset's whole plane into the transposed
        # patch matrix (KH*KW*C, M) and hand BLAS its transpose. For 28x28x1 inputs:
        # 0.15 ms instead of 0.76 ms.
        k, m = kh * kw * c, n * oh * ow
        cols_t = np.empty((k + ones, m), dtype=x.dtype)
        planes = cols_t[:k].reshape(kh * kw, c, n, oh, ow)
        for i in range(kh):
            for j in range(kw):
                planes[i * kw + j] = _tap(xp, i, j, strides, dilations, oh, ow).transpose(
                    3, 0, 1, 2)
        if ones:
            cols_t[k] = 1
        return cols_t.T
    win = _windows(xp, kh, kw, oh, ow, strides, dilations)
    # Always a fresh copy: the patches are kept (fused_conv2d's second output), so they
    # must never be a view of the padding scratch.
    k = kh * kw * c
    cols = np.empty((n * oh * ow, k + ones), dtype=x.dtype)
    np.copyto(cols[:, :k].reshape(win.shape), win)
    if ones:
        cols[:, k] = 1
    return cols


def _conv_s1(xh: np.ndarray, w: np.ndarray, dilations, vpads=(0, 0)) -> np.ndarray:
    """Stride-1 convolution of an NHWC input already padded along its width, with
    ``vpads = (top, bottom)`` zero rows of height padding left implicit: one GEMM, KH
    row adds.

    Patches over the KW kernel columns only, (N, H, OW, KW*C), are copied once (a third
    of a full im2col for 3x3 kernels) and multiplied by all KH kernel rows at once, (KW*C,
    KH*C_out): output row ``y`` then sums kernel row ``i``'s block of input row
    ``y + i*dh - top`` (shifted adds on 4-D views). The height padding is never
    materialised: its rows would only add zeros, so each kernel row's add just covers
    the output rows whose input row exists (12% fewer GEMM rows and patch copies for
    the 14x14 3x3 SAME input gradient of the issue-3 CNN than padding first).
    Used for stride-1 input gradients: it beat a full im2col of the re-padded gradient by
    ~5 ms per CNN step (less memory traffic), and the single GEMM with KH*C_out columns
    beat KH narrow ones (C_out columns each, 3x ~1.8 ms vs ~3.6 ms for 14336x192 patches).
    """
    n, h, wp, c = xh.shape
    kh, kw, _, cout = w.shape
    dh, dw = dilations
    top, bottom = vpads
    oh, ow = h + top + bottom - (kh - 1) * dh, wp - (kw - 1) * dw
    sn, sy, sx, sc = xh.strides
    win = as_strided(xh, (n, h, ow, kw, c), (sn, sy, sx, sx * dw, sc), writeable=False)
    cols = win.reshape(n * h * ow, kw * c)
    wk = w.transpose(1, 2, 0, 3).reshape(kw * c, kh * cout)
    y = (cols @ wk).reshape(n, h, ow, kh, cout)

    def rows(i):  # output rows [lo, hi) that kernel row i reaches, from input row src
        shift = i * dh - top
        lo, hi = max(0, -shift), min(oh, h - shift)
        return lo, max(lo, hi), lo + shift

    full = [i for i in range(kh) if rows(i)[:2] == (0, oh)]
    rest = [i for i in range(kh) if not full or i != full[0]]
    if not full:
        out = np.zeros((n, oh, ow, cout), y.dtype)
    else:
        # Start from a kernel row that covers every output row, fused with the next add.
        _, _, s0 = rows(full[0])
        first = y[:, s0:s0 + oh, :, full[0]]
        if not rest:
            return np.ascontiguousarray(first)
        out = np.empty((n, oh, ow, cout), y.dtype)
        lo, hi, s = rows(rest[0])
        np.add(first[:, lo:hi], y[:, s:s + hi - lo, :, rest.pop(0)], out=out[:, lo:hi])
        out[:, :lo] = first[:, :lo]
        out[:, hi:] = first[:, hi:]
    for i in rest:
        lo, hi, s = rows(i)
        out[:, lo:hi] += y[:, s:s + hi - lo, :, i]
    return out


def _col2im(d: np.ndarray, input_shape, strides, pads, dilations) -> np.ndarray:
    """Scatter-add patch gradients ``d`` (N, OH, OW, KH, KW, C) back to an NHWC input."""
    n, h, w, c = input_shape
    _, oh, ow, kh, kw, _ = d.shape
    if kh == kw == 1 and strides == _ONES and pads == _NO_PAD:
        return d.reshape(input_shape)
    (pt, pb), (pl, pr) = pads
    dx = np.zeros((n, h + pt + pb, w + pl + pr, c), dtype=d.dtype)
    for i in range(kh):
        for j in range(kw):
            _tap(dx, i, j, strides, dilations, oh, ow)[...] += d[:, :, :, i, j]
    return _crop(dx, pads, h, w)


# =====================================================================================
# conv2d and its two backprops: three records that are each other's gradients
# =====================================================================================
def _conv_fwd(x, w, strides, pads, dilations):
    kh, kw, _, cout = w.shape
    oh, ow = _conv_out_hw(x.shape, w.shape, strides, pads, dilations)
    y = _im2col(x, kh, kw, strides, pads, dilations) @ w.reshape(-1, cout)
    return y.reshape(x.shape[0], oh, ow, cout)


def _conv_out_hw(xshape, wshape, strides, pads, dilations):
    return (_out_len(xshape[1], wshape[0], strides[0], dilations[0], *pads[0]),
            _out_len(xshape[2], wshape[1], strides[1], dilations[1], *pads[1]))


def _bpi_fwd(g, w, input_shape, strides, pads, dilations):
    kh, kw, cin, cout = w.shape
    n, oh, ow, _ = g.shape
    if strides == _ONES and cin >= _TCONV_MIN_CHANNELS:
        # Stride 1: the input gradient is a plain convolution of g (re-padded) with the
        # flipped, IO-swapped kernel, so the KH*KW sum happens inside KH GEMMs instead
        # of KH*KW scatter-add passes over dx (_conv_s1; see its docstring).
        eh, ew = (kh - 1) * dilations[0], (kw - 1) * dilations[1]
        (pt, pb), (pl, pr) = pads
        tpads = ((eh - pt, eh - pb), (ew - pl, ew - pr))
        if min(tpads[0] + tpads[1]) >= 0:
            return _conv_s1(_pad_scratch(g, (_NO_PAD[0], tpads[1])),
                            w[::-1, ::-1].transpose(0, 1, 3, 2), dilations, tpads[0])
    d = g.reshape(-1, cout) @ w.reshape(-1, cout).T
    return _col2im(d.reshape(n, oh, ow, kh, kw, cin), input_shape, strides, pads, dilations)


def _bpf_fwd(x, g, filter_shape, strides, pads, dilations):
    kh, kw, cin, cout = filter_shape
    cols = _im2col(x, kh, kw, strides, pads, dilations)
    return (cols.T @ g.reshape(-1, cout)).reshape(filter_shape)


def _conv_family(name: str, conv_fwd, bpi_fwd, bpf_fwd) -> tuple[Op, Op, Op]:
    """The records ``name``, ``name_backprop_input`` and ``name_backprop_filter`` of a
    convolution ``y = C(x, w)`` with ``dx = B(g, w)`` and ``dw = F(x, g)``.

    All three are bilinear with ``<h, B(g, w)> = <C(h, w), g>`` and
    ``<h, F(x, g)> = <C(x, h), g>``, so each one's partials are the other two records.
    The geometry attributes (``strides``, ``pads``, ``dilations``, and any others such as
    ``groups``) pass through unchanged.
    """
    def conv_vjp(g, ins, y, needs, **geo):
        x, w = ins
        gx = apply(bpi, g, w, input_shape=x.shape, **geo) if needs[0] else None
        gw = apply(bpf, x, g, filter_shape=w.shape, **geo) if needs[1] else None
        return gx, gw

    def bpi_vjp(h, ins, dx, needs, input_shape, **geo):
        g, w = ins
        gg = apply(conv, h, w, **geo) if needs[0] else None
        gw = apply(bpf, h, g, filter_shape=w.shape, **geo) if needs[1] else None
        return gg, gw

    def bpf_vjp(h, ins, dw, needs, filter_shape, **geo):
        x, g = ins
        gx = apply(bpi, g, h, input_shape=x.shape, **geo) if needs[0] else None
        gg = apply(conv, x, h, **geo) if needs[1] else None
        return gx, gg

    conv = Op(name, conv_fwd, conv_vjp)
    bpi = Op(f"{name}_backprop_input", bpi_fwd, bpi_vjp)
    bpf = Op(f"{name}_backprop_filter", bpf_fwd, bpf_vjp)
    return conv, bpi, bpf


_CONV, _CONV_BPI, _CONV_BPF = _conv_family("conv2d", _conv_fwd, _bpi_fwd, _bpf_fwd)


# =====================================================================================
# fused_conv2d: conv2d + bias + activation in one record (what Conv2D layers call)
# =====================================================================================
# TensorFlow's grappler rewrites Conv2D+BiasAdd+Relu into one _FusedConv2D kernel; here
# the layer asks for the fused record directly. The bias and the ReLU run in place on
# the GEMM's fresh output (no extra arrays), and the patch matrix is a hidden second
# output, so the filter gradient is one GEMM with no second im2col. Measured at the
# issue-3 CNN sizes: 3 records -> 1 per layer, ~2.5 ms less per training step (1 BLAS
# thread, bench of 53-56 ms steps).
#
# The vjp has two paths. With no recorder active (the usual first-order backward: a
# non-persistent tape stops recording while it runs backward), nothing it computes is
# recorded, so it works on NumPy arrays directly and reads the saved patches. With a
# recorder active (higher order, persistent tapes, lk.function traces) it composes the
# differentiable records above from the inputs, so gradients of gradients stay exact;
# that path never reads the patches, so their (always zero) gradient is dropped.
_ACTIVATIONS = ("linear", "relu")


def _column_sums(a: np.ndarray) -> np.ndarray:
    """``a.sum(axis=0)`` of a tall 2-D array as a GEMV (4x faster than np.add.reduce on
    (50176, 32) float32 here)."""
    return np.ones(a.shape[0], a.dtype) @ a


def _bias_grad_fwd(g):
    return _column_sums(g.reshape(-1, g.shape[-1]))


# The bias gradient, g summed over all axes but the last (TensorFlow's BiasAddGrad), as
# a record so the traced path gets _column_sums' GEMV too (reduce_sum over the
# (N, OH, OW) axes took 0.97 ms vs 0.34 at 64x28x28x32). Linear: its rule broadcasts back.
_BIAS_GRAD = Op("bias_add_grad", _bias_grad_fwd,
                lambda h, ins, out, needs: (_array.broadcast_to(h, ins[0].shape),))


def _fused_conv_fwd(x, w, *bias, strides, pads, dilations, activation):
    kh, kw, _, cout = w.shape
    oh, ow = _conv_out_hw(x.shape, w.shape, strides, pads, dilations)
    cols = _im2col(x, kh, kw, strides, pads, dilations, ones=bool(bias))
    wm = w.reshape(-1, cout)
    if cols.shape[1] > wm.shape[0]:
        # The patches carry a ones column: the bias is the GEMM's last kernel row, which
        # saves a pass over the output (0.4-0.5 ms per CNN conv layer at batch 64), and
        # the eager filter-gradient GEMM then yields the bias gradient as its last row.
        y = cols @ np.concatenate([wm, bias[0].reshape(1, cout).astype(wm.dtype, copy=False)])
    else:
        y = cols @ wm
        if bias:
            y += bias[0]
    y = y.reshape(x.shape[0], oh, ow, cout)
    if activation == "relu":
        np.maximum(y, 0, out=y)
    return y, cols


def _fused_conv_vjp(gs, ins, outs, needs, strides, pads, dilations, activation):
    x, w = ins[0], ins[1]
    y = outs[0]
    geo = {"strides": strides, "pads": pads, "dilations": dilations}
    if not RECORDERS:
        g = gs[0]._v
        if activation == "relu":
            g = g * (y._v > 0)
        cout = w.shape[3]
        g2 = g.reshape(-1, cout)
        gx = gw = gb = None
        if needs[0]:
            gx = wrap(_bpi_fwd(g, w._v, input_shape=x.shape, **geo))
        want_b = len(ins) > 2 and needs[2]
        if needs[1]:
            cols = outs[1]._v
            if want_b and _has_ones_column(cols, w.shape):
                gwv, gbv = _bpf_bias_cols_fwd(None, cols, g, w.shape, **geo)
                gw, gb = wrap(gwv), wrap(gbv)
            else:
                gw = wrap(_bpf_cols_fwd(None, cols, g, w.shape, **geo))
        if want_b and gb is None:
            gb = wrap(_column_sums(g2))
        return (gx, gw, gb)[:len(ins)]
    g = gs[0]
    if activation == "relu":
        # One record, g * (y > 0), that a traced graph recomputes per call (relu'' = 0).
        g = apply(_nn._RELU_GRAD, g, y)
    gx = apply(_CONV_BPI, g, w, input_shape=x.shape, **geo) if needs[0] else None
    cols = outs[1]
    if len(ins) > 2 and needs[1] and needs[2] and _has_ones_column(cols, w.shape):
        # Patches with a ones column: filter and bias gradients from one GEMM.
        gw, gb = apply(_CONV_BPF_BIAS_COLS, x, cols, g, filter_shape=w.shape, **geo)
        return gx, gw, gb
    gw = apply(_CONV_BPF_COLS, x, cols, g, filter_shape=w.shape, **geo) \
        if needs[1] else None
    if len(ins) == 2:
        return gx, gw
    gb = apply(_BIAS_GRAD, g) if needs[2] else None
    return gx, gw, gb


_FUSED_CONV = Op("fused_conv2d", _fused_conv_fwd, _fused_conv_vjp, num_outputs=2)


def _has_ones_column(cols, filter_shape) -> bool:
    """True if fused_conv2d's patches carry the bias's ones column (see ``_im2col``)."""
    return cols.shape[1] > filter_shape[0] * filter_shape[1] * filter_shape[2]


def _bpf_cols_fwd(x, cols, g, filter_shape, strides, pads, dilations):
    k = filter_shape[0] * filter_shape[1] * filter_shape[2]
    return (cols[:, :k].T @ g.reshape(-1, filter_shape[3])).reshape(filter_shape)


def _bpf_cols_vjp(h, ins, dw, needs, filter_shape, strides, pads, dilations):
    # The value is conv2d_backprop_filter(x, g) with cols = im2col(x) as a cache, so the
    # rule is that record's (bilinear in x and g); cols gets None: its dependence on x is
    # counted once, through x, and no gradient reaches fused_conv2d's patch output.
    x, _, g = ins
    gx, gg = _CONV_BPF.vjp(h, (x, g), dw, (needs[0], needs[2]), filter_shape,
                           strides=strides, pads=pads, dilations=dilations)
    return gx, None, gg


# conv2d_backprop_filter(x, g) computed as one GEMM from fused_conv2d's patch output
# ``cols`` (which must be the im2col of ``x`` with the same geometry): the traced
# (recording) path of fused_conv2d's vjp uses it instead of a second im2col of x.
_CONV_BPF_COLS = Op("conv2d_backprop_filter_from_patches", _bpf_cols_fwd, _bpf_cols_vjp)


def _bpf_bias_cols_fwd(x, cols, g, filter_shape, strides, pads, dilations):
    k = filter_shape[0] * filter_shape[1] * filter_shape[2]
    g2 = g.reshape(-1, filter_shape[3])
    if cols.shape[1] != k + 1:
        raise ValueError(f"conv2d_backprop_filter_and_bias_from_patches: needs patches with a "
                         f"ones column ({k + 1} columns); received shape {cols.shape}")
    d = cols.T @ g2
    return d[:k].reshape(filter_shape), d[k]


def _bpf_bias_cols_vjp(hs, ins, outs, needs, filter_shape, strides, pads, dilations):
    # (conv2d_backprop_filter(x, g), bias_add_grad(g)): the first part's rule is
    # conv2d_backprop_filter's, the second's broadcasts back onto g; cols gets None as in
    # conv2d_backprop_filter_from_patches.
    hw, hb = hs
    x, _, g = ins
    gx, gg = _CONV_BPF.vjp(hw, (x, g), outs[0], (needs[0], needs[2]), filter_shape,
                           strides=strides, pads=pads, dilations=dilations)
    if needs[2]:
        gb = _array.broadcast_to(hb, g.shape)
        gg = gb if gg is None else gg + gb
    return gx, None, gg


# conv2d_backprop_filter_from_patches and bias_add_grad of the same g in one GEMM: the
# patches' ones column (fused_conv2d with a bias) makes the bias gradient the GEMM's
# last row, which saves bias_add_grad's own pass over g (0.3 ms at 64x28x28x32).
_CONV_BPF_BIAS_COLS = Op("conv2d_backprop_filter_and_bias_from_patches", _bpf_bias_cols_fwd,
                         _bpf_bias_cols_vjp, num_outputs=2)


# =====================================================================================
# depthwise_conv2d: filter (KH, KW, C, M), output channel c*M + m
# =====================================================================================
def _planes(a: np.ndarray, mult: int) -> np.ndarray:
    """(N, OH, OW, C*M) -> contiguous (M, N, OH, OW, C): one long-run plane per multiplier."""
    n, oh, ow, cm = a.shape
    a5 = a.reshape(n, oh, ow, cm // mult, mult)
    return a5[None, ..., 0] if mult == 1 else np.ascontiguousarray(np.moveaxis(a5, 4, 0))


# Depthwise products work on (N, OH, OW, C) planes, one per multiplier, with einsum over
# the window view (no temporaries). Broadcasting a (C, M) kernel over (..., C, 1) instead
# gives NumPy inner loops of length M (usually 1): 3-4x slower at 32x56x56x64.
def _dw_planes_fwd(xp, w, strides, dilations, oh, ow):
    """sum over kernel taps, per multiplier m: (M, N, OH, OW, C)."""
    kh, kw, c, mult = w.shape
    win = _windows(xp, kh, kw, oh, ow, strides, dilations)
    return [np.einsum("nhwijc,ijc->nhwc", win, w[..., m]) for m in range(mult)]


def _dw_fwd(x, w, strides, pads, dilations):
    kh, kw, c, mult = w.shape
    n = x.shape[0]
    oh, ow = _conv_out_hw(x.shape, w.shape, strides, pads, dilations)
    planes = _dw_planes_fwd(_pad(x, pads), w, strides, dilations, oh, ow)
    if mult == 1:
        return planes[0]
    return np.stack(planes, axis=-1).reshape(n, oh, ow, c * mult)


def _dw_bpi_fwd(g, w, input_shape, strides, pads, dilations):
    kh, kw, c, mult = w.shape
    n, oh, ow, _ = g.shape
    h, wd = input_shape[1:3]
    gm = _planes(g, mult)
    eh, ew = (kh - 1) * dilations[0], (kw - 1) * dilations[1]
    (pt, pb), (pl, pr) = pads
    tpads = ((eh - pt, eh - pb), (ew - pl, ew - pr))
    if strides == _ONES and min(tpads[0] + tpads[1]) >= 0:
        # Stride 1: a depthwise convolution of the re-padded g with the flipped kernel.
        wf = w[::-1, ::-1]
        dx = None
        for m in range(mult):
            win = _windows(_pad(gm[m], tpads), kh, kw, h, wd, _ONES, dilations)
            term = np.einsum("nhwijc,ijc->nhwc", win, wf[..., m])
            dx = term if dx is None else np.add(dx, term, out=dx)
        return dx
    dx = np.zeros((n, h + pt + pb, wd + pl + pr, c), dtype=np.result_type(g, w))
    for i in range(kh):
        for j in range(kw):
            view = _tap(dx, i, j, strides, dilations, oh, ow)
            for m in range(mult):
                view += np.einsum("nhwc,c->nhwc", gm[m], w[i, j, :, m])
    return _crop(dx, pads, h, wd)


def _dw_bpf_fwd(x, g, filter_shape, strides, pads, dilations):
    kh, kw, c, mult = filter_shape
    oh, ow = g.shape[1:3]
    gm = _planes(g, mult)
    xp = _pad(x, pads)
    dw = np.empty(filter_shape, dtype=np.result_type(x, g))
    for i in range(kh):
        for j in range(kw):
            t = _tap(xp, i, j, strides, dilations, oh, ow)
            for m in range(mult):
                dw[i, j, :, m] = np.einsum("nhwc,nhwc->c", t, gm[m])
    return dw


_DW, _DW_BPI, _DW_BPF = _conv_family("depthwise_conv2d", _dw_fwd, _dw_bpi_fwd, _dw_bpf_fwd)


# =====================================================================================
# Pooling
# =====================================================================================
def _lowest(dtype: np.dtype):
    return -np.inf if dtype.kind in "fc" else np.iinfo(dtype).min


def _pool_out_hw(shape, ksize, strides, pads):
    return (_out_len(shape[1], ksize[0], strides[0], 1, *pads[0]),
            _out_len(shape[2], ksize[1], strides[1], 1, *pads[1]))


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


def _max_fwd(x, ksize, strides, pads):
    oh, ow = _pool_out_hw(x.shape, ksize, strides, pads)
    return _reduce_taps(_pad(x, pads, _lowest(x.dtype)), ksize, strides, oh, ow, np.maximum)


def _first_max_masks(xp, y, ksize, strides):
    """Yield ((i, j), mask) with mask[n, oh, ow, c] true where offset (i, j) is the first
    (row-major) maximum of its window: TensorFlow routes the gradient of ties there."""
    kh, kw = ksize
    oh, ow = y.shape[1:3]
    taken = None
    eq = np.empty(y.shape, dtype=bool)
    for i in range(kh):
        for j in range(kw):
            np.equal(_tap(xp, i, j, strides, _ONES, oh, ow), y, out=eq)
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


def _max_grad_fwd(x, y, g, ksize, strides, pads):
    oh, ow = y.shape[1:3]
    if ksize == strides and pads == _NO_PAD and x.shape[1] == oh * ksize[0] and \
            x.shape[2] == ow * ksize[1]:
        # The usual 2x2/2 pool: ~1.2x faster than the per-tap loop below (pool of 64x28x28x32).
        first = _tiled_first_max(x, y, ksize)
        dx = np.empty(x.shape, dtype=g.dtype)
        np.multiply(first, g[:, :, None, :, None, :], out=dx.reshape(first.shape))
        return dx
    xp = _pad(x, pads, _lowest(x.dtype))
    overlap = ksize[0] > strides[0] or ksize[1] > strides[1]
    tiled = ksize == strides and xp.shape[1] == oh * ksize[0] and xp.shape[2] == ow * ksize[1]
    # Windows that tile the input exactly write every element once: no zero fill needed.
    dx = (np.empty if tiled else np.zeros)(xp.shape, dtype=g.dtype)
    for (i, j), m in _first_max_masks(xp, y, ksize, strides):
        view = _tap(dx, i, j, strides, _ONES, oh, ow)
        if overlap:
            view += g * m
        else:
            np.multiply(g, m, out=view)
    return _crop(dx, pads, x.shape[1], x.shape[2])


def _max_gg_fwd(x, y, h, ksize, strides, pads):
    xp = _pad(x, pads, _lowest(x.dtype))
    hp = _pad(h, pads)
    oh, ow = y.shape[1:3]
    out = np.zeros(y.shape, dtype=h.dtype)
    for (i, j), m in _first_max_masks(xp, y, ksize, strides):
        out += _tap(hp, i, j, strides, _ONES, oh, ow) * m
    return out


def _max_vjp(g, ins, y, needs, ksize, strides, pads):
    return (apply(_MAX_GRAD, ins[0], y, g, ksize=ksize, strides=strides, pads=pads),)


def _max_grad_vjp(h, ins, dx, needs, ksize, strides, pads):
    # Linear in g; piecewise constant in x and y (zero derivative almost everywhere).
    x, y, g = ins
    gg = apply(_MAX_GG, x, y, h, ksize=ksize, strides=strides, pads=pads) if needs[2] else None
    return None, None, gg


def _max_gg_vjp(u, ins, out, needs, ksize, strides, pads):
    x, y, h = ins
    gh = apply(_MAX_GRAD, x, y, u, ksize=ksize, strides=strides, pads=pads) if needs[2] else None
    return None, None, gh


_MAX = Op("max_pool2d", _max_fwd, _max_vjp)
_MAX_GRAD = Op("max_pool2d_grad", _max_grad_fwd, _max_grad_vjp)
_MAX_GG = Op("max_pool2d_grad_grad", _max_gg_fwd, _max_gg_vjp)


def _window_counts(in_hw, ksize, strides, pads, out_hw) -> np.ndarray:
    """(OH, OW, 1) number of real (unpadded) elements in each window (TF's SAME divisor)."""
    per_axis = []
    for n, k, s, (lo, _), o in zip(in_hw, ksize, strides, pads, out_hw):
        pos = np.arange(o)[:, None] * s + np.arange(k)[None, :] - lo
        per_axis.append(((pos >= 0) & (pos < n)).sum(axis=1))
    return np.multiply.outer(per_axis[0], per_axis[1])[..., None]


def _avg_scale(in_hw, ksize, strides, pads, out_hw, dtype):
    if pads == _NO_PAD:
        return dtype.type(1.0 / (ksize[0] * ksize[1]))
    return (1.0 / _window_counts(in_hw, ksize, strides, pads, out_hw)).astype(dtype)


def _avg_fwd(x, ksize, strides, pads):
    oh, ow = _pool_out_hw(x.shape, ksize, strides, pads)
    s = _reduce_taps(_pad(x, pads), ksize, strides, oh, ow, np.add)
    s *= _avg_scale(x.shape[1:3], ksize, strides, pads, (oh, ow), s.dtype)
    return s


def _avg_grad_fwd(g, input_shape, ksize, strides, pads):
    n, h, w, c = input_shape
    oh, ow = g.shape[1:3]
    gs = g * _avg_scale((h, w), ksize, strides, pads, (oh, ow), g.dtype)
    (pt, pb), (pl, pr) = pads
    dx = np.zeros((n, h + pt + pb, w + pl + pr, c), dtype=g.dtype)
    overlap = ksize[0] > strides[0] or ksize[1] > strides[1]
    for i in range(ksize[0]):
        for j in range(ksize[1]):
            view = _tap(dx, i, j, strides, _ONES, oh, ow)
            if overlap:
                view += gs
            else:
                view[...] = gs
    return _crop(dx, pads, h, w)


def _avg_vjp(g, ins, y, needs, ksize, strides, pads):
    return (apply(_AVG_GRAD, g, input_shape=ins[0].shape, ksize=ksize, strides=strides,
                  pads=pads),)


def _avg_grad_vjp(h, ins, dx, needs, input_shape, ksize, strides, pads):
    return (apply(_AVG, h, ksize=ksize, strides=strides, pads=pads),)


_AVG = Op("avg_pool2d", _avg_fwd, _avg_vjp)
_AVG_GRAD = Op("avg_pool2d_grad", _avg_grad_fwd, _avg_grad_vjp)


# =====================================================================================
# Argument checking (public front doors)
# =====================================================================================
def _value(x):
    return x._v if isinstance(x, Tensor) else to_array(x)


def _arg(x, v):
    # Hand apply the caller's Tensor (tapes know it by identity), else the converted array.
    return x if isinstance(x, Tensor) else v


def _rank4(op: str, what: str, shape: tuple, layout: str) -> None:
    if len(shape) != 4:
        raise ValueError(f"{op}: {what} must be rank 4 ({layout}); received shape {shape}")


def _kernel4(op: str, what: str, shape: tuple, layout: str) -> None:
    # TF: "filter must not have zero elements (i.e. all dimensions must be non-zero)".
    _rank4(op, what, shape, layout)
    if 0 in shape:
        raise ValueError(f"{op}: {what} must not have zero elements ({layout}); received "
                         f"shape {shape}")


def _data_format(op: str, data_format) -> None:
    if data_format not in (None, "NHWC"):
        raise ValueError(
            f"{op}: only data_format='NHWC' is supported; received {data_format!r} "
            f"(transpose NCHW input with lk.transpose(x, [0, 2, 3, 1]))")


def _hw(op: str, what: str, value, default=None) -> tuple:
    """Normalise TF's int / [v] / [h, w] / [1, h, w, 1] to (h, w), each >= 1."""
    return spatial_arg(op, what, value, 2, default)


def _padding(op: str, padding, in_hw, k_hw, strides, dilations) -> tuple:
    """Resolve SAME / VALID / explicit NHWC padding to ((top, bottom), (left, right))."""
    if isinstance(padding, str):
        mode = padding.upper()
        if mode == "VALID":
            pads = _NO_PAD
        elif mode == "SAME":
            pads = tuple(same_pads(*a) for a in zip(in_hw, k_hw, strides, dilations))
        else:
            raise ValueError(
                f"{op}: padding must be 'SAME', 'VALID' or explicit "
                f"[[0, 0], [top, bottom], [left, right], [0, 0]]; received {padding!r}")
    else:
        try:
            p = [[int(v) for v in pair] for pair in np.asarray(padding).tolist()]
            ok = len(p) == 4 and all(len(pair) == 2 for pair in p)
        except (TypeError, ValueError):
            ok = False
        if not ok or p[0] != [0, 0] or p[3] != [0, 0] or min(min(q) for q in p) < 0:
            raise ValueError(
                f"{op}: explicit padding must be [[0, 0], [top, bottom], [left, right], [0, 0]]"
                f" with non-negative ints; received {padding!r}")
        pads = ((p[1][0], p[1][1]), (p[2][0], p[2][1]))
    out = tuple(_out_len(n, k, s, d, lo, hi)
                for n, k, s, d, (lo, hi) in zip(in_hw, k_hw, strides, dilations, pads))
    if out[0] < 1 or out[1] < 1:
        eff = tuple((k - 1) * d + 1 for k, d in zip(k_hw, dilations))
        padded = tuple(n + lo + hi for n, (lo, hi) in zip(in_hw, pads))
        raise ValueError(
            f"{op}: the window (effective size {eff}) does not fit in the padded input "
            f"{padded} (input {tuple(in_hw)}, padding {padding!r}); output size would be {out}")
    return pads, out


def _geometry(op, x_shape, k_hw, strides, padding, dilations, data_format):
    _data_format(op, data_format)
    if min(k_hw) < 1:
        raise ValueError(f"{op}: the kernel's height and width must be >= 1; received "
                         f"{tuple(k_hw)}")
    strides = _hw(op, "strides", strides)
    dilations = _hw(op, "dilations", dilations, 1)
    pads, out_hw = _padding(op, padding, x_shape[1:3], k_hw, strides, dilations)
    return strides, pads, dilations, out_hw


def _shape4(op: str, what: str, value) -> tuple:
    if isinstance(value, Tensor):
        value = value._v
    try:
        shape = tuple(int(v) for v in np.asarray(value).reshape(-1).tolist())
    except (TypeError, ValueError):
        shape = ()
    if len(shape) != 4 or min(shape) < 0:
        raise ValueError(f"{op}: {what} must be 4 non-negative ints (NHWC); received {value!r}")
    return shape


def _conv_operands(op: str, xv: np.ndarray, wv: np.ndarray) -> None:
    """Check an NHWC input and an HWIO kernel of matching input channels."""
    _rank4(op, "input", xv.shape, "NHWC")
    _kernel4(op, "filters", wv.shape, "KH, KW, C_in, C_out")
    if xv.shape[3] != wv.shape[2]:
        raise ValueError(
            f"{op}: input has {xv.shape[3]} channels (shape {xv.shape}) but filters expect "
            f"{wv.shape[2]} input channels (filters shape {wv.shape})")


def _check_out(op: str, what: str, got: tuple, want: tuple) -> None:
    if tuple(got) != tuple(want):
        raise ValueError(f"{op}: {what} has shape {tuple(got)}, expected {tuple(want)}")


# =====================================================================================
# Public functions
# =====================================================================================
def conv2d(input, filters, strides: IntOrInts = 1, padding: Padding = "VALID",
           data_format: str = "NHWC", dilations: IntOrInts = 1, name=None) -> Tensor:
    """2-D convolution (cross-correlation) of NHWC ``input`` with HWIO ``filters``.

    Args:
        input: (N, H, W, C_in) tensor.
        filters: (KH, KW, C_in, C_out) tensor.
        strides: int, [s], [sh, sw] or [1, sh, sw, 1].
        padding: 'VALID', 'SAME' (TensorFlow's split: the extra row/column goes to the
            bottom/right) or explicit [[0, 0], [top, bottom], [left, right], [0, 0]].
        data_format: only 'NHWC'.
        dilations: int or list like ``strides``; the kernel taps are spaced this far apart.
        name: ignored (TensorFlow compatibility).

    Returns:
        (N, OH, OW, C_out) tensor.

    Raises:
        ValueError: naming the op and the expected and received shapes or values for a
            wrong rank, a channel mismatch, an unknown padding, a stride or dilation < 1,
            or a window larger than the padded input.

    Example:
        >>> import numpy as np, layerkit as lk
        >>> x = np.ones((1, 3, 3, 1), np.float32); w = np.ones((2, 2, 1, 1), np.float32)
        >>> lk.nn.conv2d(x, w, padding="VALID").numpy()[0, :, :, 0]
        array([[4., 4.],
               [4., 4.]], dtype=float32)
    """
    op = "conv2d"
    xv, wv = _value(input), _value(filters)
    _conv_operands(op, xv, wv)
    strides, pads, dilations, _ = _geometry(op, xv.shape, wv.shape[:2], strides, padding,
                                            dilations, data_format)
    return apply(_CONV, _arg(input, xv), _arg(filters, wv), strides=strides, pads=pads,
                 dilations=dilations)


def fused_conv2d(input, filters, bias=None, strides: IntOrInts = 1, padding: Padding = "VALID",
                 dilations: IntOrInts = 1, activation: str = "linear") -> Tensor:
    """``activation(conv2d(input, filters) + bias)`` as one record (the Conv2D layer's path).

    Same arguments and checks as :func:`conv2d`; ``bias`` is None or a (C_out,) tensor
    of the input's dtype, ``activation`` is ``'linear'`` or ``'relu'``.

    Raises:
        ValueError: as :func:`conv2d`, or for a bias of the wrong shape or an unknown
            activation.
    """
    op = "fused_conv2d"
    xv, wv = _value(input), _value(filters)
    _conv_operands(op, xv, wv)
    if activation not in _ACTIVATIONS:
        raise ValueError(f"{op}: activation must be one of {_ACTIVATIONS}; received "
                         f"{activation!r}")
    strides, pads, dilations, _ = _geometry(op, xv.shape, wv.shape[:2], strides, padding,
                                            dilations, None)
    args = [_arg(input, xv), _arg(filters, wv)]
    if bias is not None:
        bv = _value(bias)
        if bv.shape != (wv.shape[3],):
            raise ValueError(f"{op}: bias must have shape ({wv.shape[3]},) for filters of "
                             f"shape {wv.shape}; received shape {bv.shape}")
        args.append(_arg(bias, bv))
    return apply(_FUSED_CONV, *args, strides=strides, pads=pads, dilations=dilations,
                 activation=activation)[0]


def conv2d_backprop_input(input_sizes: Sequence[int], filters, out_backprop,
                          strides: IntOrInts = 1, padding: Padding = "VALID",
                          data_format: str = "NHWC", dilations: IntOrInts = 1,
                          name=None) -> Tensor:
    """Gradient of :func:`conv2d` with respect to its input (TF's Conv2DBackpropInput).

    Args:
        input_sizes: the NHWC shape of the convolution's input.
        filters: (KH, KW, C_in, C_out) kernel.
        out_backprop: (N, OH, OW, C_out) gradient of the convolution's output.
        strides, padding, data_format, dilations: as for :func:`conv2d`.

    Returns:
        Tensor of shape ``input_sizes``.
    """
    op = "conv2d_backprop_input"
    shape = _shape4(op, "input_sizes", input_sizes)
    wv, gv = _value(filters), _value(out_backprop)
    _kernel4(op, "filters", wv.shape, "KH, KW, C_in, C_out")
    _rank4(op, "out_backprop", gv.shape, "NHWC")
    if shape[3] != wv.shape[2]:
        raise ValueError(f"{op}: input_sizes {shape} has {shape[3]} channels but filters "
                         f"(shape {wv.shape}) expect {wv.shape[2]}")
    strides, pads, dilations, out_hw = _geometry(op, shape, wv.shape[:2], strides, padding,
                                                 dilations, data_format)
    _check_out(op, "out_backprop", gv.shape, (shape[0], *out_hw, wv.shape[3]))
    return apply(_CONV_BPI, _arg(out_backprop, gv), _arg(filters, wv), input_shape=shape,
                 strides=strides, pads=pads, dilations=dilations)


def conv2d_backprop_filter(input, filter_sizes: Sequence[int], out_backprop,
                           strides: IntOrInts = 1, padding: Padding = "VALID",
                           data_format: str = "NHWC", dilations: IntOrInts = 1,
                           name=None) -> Tensor:
    """Gradient of :func:`conv2d` with respect to its filters (TF's Conv2DBackpropFilter).

    Returns:
        Tensor of shape ``filter_sizes`` (KH, KW, C_in, C_out).
    """
    op = "conv2d_backprop_filter"
    fshape = _shape4(op, "filter_sizes", filter_sizes)
    xv, gv = _value(input), _value(out_backprop)
    _rank4(op, "input", xv.shape, "NHWC")
    _rank4(op, "out_backprop", gv.shape, "NHWC")
    if xv.shape[3] != fshape[2]:
        raise ValueError(f"{op}: input has {xv.shape[3]} channels (shape {xv.shape}) but "
                         f"filter_sizes {fshape} expect {fshape[2]}")
    strides, pads, dilations, out_hw = _geometry(op, xv.shape, fshape[:2], strides, padding,
                                                 dilations, data_format)
    _check_out(op, "out_backprop", gv.shape, (xv.shape[0], *out_hw, fshape[3]))
    return apply(_CONV_BPF, _arg(input, xv), _arg(out_backprop, gv), filter_shape=fshape,
                 strides=strides, pads=pads, dilations=dilations)


def conv2d_transpose(input, filters, output_shape: Sequence[int], strides: IntOrInts,
                     padding: Padding = "SAME", data_format: str = "NHWC",
                     dilations: IntOrInts | None = None, name=None) -> Tensor:
    """Transposed 2-D convolution: the gradient of :func:`conv2d` with respect to its input.

    Args:
        input: (N, H, W, C_in) tensor.
        filters: (KH, KW, C_out, C_in) kernel, as in ``tf.nn.conv2d_transpose``.
        output_shape: (N, OH, OW, C_out); a :func:`conv2d` with these strides/padding
            must map it back to ``input``'s spatial shape.
        strides, padding, data_format, dilations: as for :func:`conv2d`.

    Returns:
        Tensor of shape ``output_shape``.

    Raises:
        ValueError: for mismatched channels or batch, or an ``output_shape`` that the
            forward convolution would not map to ``input``'s shape.
    """
    op = "conv2d_transpose"
    shape = _shape4(op, "output_shape", output_shape)
    xv, wv = _value(input), _value(filters)
    _rank4(op, "input", xv.shape, "NHWC")
    _kernel4(op, "filters", wv.shape, "KH, KW, C_out, C_in")
    if xv.shape[3] != wv.shape[3]:
        raise ValueError(
            f"{op}: input has {xv.shape[3]} channels (shape {xv.shape}) but filters expect "
            f"{wv.shape[3]} input channels in their last axis (filters shape {wv.shape})")
    if shape[0] != xv.shape[0] or shape[3] != wv.shape[2]:
        raise ValueError(
            f"{op}: output_shape {shape} needs batch {xv.shape[0]} (from input shape "
            f"{xv.shape}) and {wv.shape[2]} channels (filters shape {wv.shape})")
    strides, pads, dilations, out_hw = _geometry(op, shape, wv.shape[:2], strides, padding,
                                                 dilations, data_format)
    if tuple(out_hw) != tuple(xv.shape[1:3]):
        raise ValueError(
            f"{op}: output_shape {shape} is inconsistent with input shape {xv.shape}: a conv2d "
            f"with strides {strides} and padding {padding!r} maps {shape[1:3]} to "
            f"{tuple(out_hw)}, not {xv.shape[1:3]}")
    return apply(_CONV_BPI, _arg(input, xv), _arg(filters, wv), input_shape=shape,
                 strides=strides, pads=pads, dilations=dilations)


def depthwise_conv2d(input, filter, strides: IntOrInts, padding: Padding,
                     data_format: str | None = None, dilations: IntOrInts | None = None,
                     name=None) -> Tensor:
    """Depthwise 2-D convolution: each input channel convolved with its own filters.

    Args:
        input: (N, H, W, C) tensor.
        filter: (KH, KW, C, M) kernel; output channel ``c * M + m`` is channel ``c``
            convolved with ``filter[:, :, c, m]``.
        strides: int or [1, sh, sw, 1] (TensorFlow's 4-list) or [sh, sw].
        padding: 'SAME', 'VALID' or explicit NHWC pairs.
        data_format: None or 'NHWC'.
        dilations: int or [dh, dw] (TensorFlow's ``rate``).

    Returns:
        (N, OH, OW, C * M) tensor.
    """
    op = "depthwise_conv2d"
    xv, wv = _value(input), _value(filter)
    _rank4(op, "input", xv.shape, "NHWC")
    _kernel4(op, "filter", wv.shape, "KH, KW, C, channel_multiplier")
    if xv.shape[3] != wv.shape[2]:
        raise ValueError(
            f"{op}: input has {xv.shape[3]} channels (shape {xv.shape}) but filter expects "
            f"{wv.shape[2]} (filter shape {wv.shape})")
    strides, pads, dilations, _ = _geometry(op, xv.shape, wv.shape[:2], strides, padding,
                                            dilations, data_format)
    return apply(_DW, _arg(input, xv), _arg(filter, wv), strides=strides, pads=pads,
                 dilations=dilations)


def depthwise_conv2d_backprop_input(input_sizes: Sequence[int], filter, out_backprop,
                                    strides: IntOrInts, padding: Padding,
                                    data_format: str | None = None,
                                    dilations: IntOrInts | None = None, name=None) -> Tensor:
    """Gradient of :func:`depthwise_conv2d` with respect to its input."""
    op = "depthwise_conv2d_backprop_input"
    shape = _shape4(op, "input_sizes", input_sizes)
    wv, gv = _value(filter), _value(out_backprop)
    _kernel4(op, "filter", wv.shape, "KH, KW, C, channel_multiplier")
    if shape[3] != wv.shape[2]:
        raise ValueError(f"{op}: input_sizes {shape} has {shape[3]} channels but filter "
                         f"(shape {wv.shape}) expects {wv.shape[2]}")
    strides, pads, dilations, out_hw = _geometry(op, shape, wv.shape[:2], strides, padding,
                                                 dilations, data_format)
    _check_out(op, "out_backprop", gv.shape, (shape[0], *out_hw, wv.shape[2] * wv.shape[3]))
    return apply(_DW_BPI, _arg(out_backprop, gv), _arg(filter, wv), input_shape=shape,
                 strides=strides, pads=pads, dilations=dilations)


def depthwise_conv2d_backprop_filter(input, filter_sizes: Sequence[int], out_backprop,
                                     strides: IntOrInts, padding: Padding,
                                     data_format: str | None = None,
                                     dilations: IntOrInts | None = None, name=None) -> Tensor:
    """Gradient of :func:`depthwise_conv2d` with respect to its filter."""
    op = "depthwise_conv2d_backprop_filter"
    fshape = _shape4(op, "filter_sizes", filter_sizes)
    xv, gv = _value(input), _value(out_backprop)
    _rank4(op, "input", xv.shape, "NHWC")
    if xv.shape[3] != fshape[2]:
        raise ValueError(f"{op}: input has {xv.shape[3]} channels (shape {xv.shape}) but "
                         f"filter_sizes {fshape} expect {fshape[2]}")
    strides, pads, dilations, out_hw = _geometry(op, xv.shape, fshape[:2], strides, padding,
                                                 dilations, data_format)
    _check_out(op, "out_backprop", gv.shape, (xv.shape[0], *out_hw, fshape[2] * fshape[3]))
    return apply(_DW_BPF, _arg(input, xv), _arg(out_backprop, gv), filter_shape=fshape,
                 strides=strides, pads=pads, dilations=dilations)


def _pool_args(op, shape, ksize, strides, padding, data_format):
    _rank4(op, "input", shape, "NHWC")
    _data_format(op, data_format)
    ksize = _hw(op, "ksize", ksize)
    strides = _hw(op, "strides", strides)
    pads, out_hw = _padding(op, padding, shape[1:3], ksize, strides, _ONES)
    if pads[0][0] >= ksize[0] or pads[0][1] >= ksize[0] or pads[1][0] >= ksize[1] or \
            pads[1][1] >= ksize[1]:
        raise ValueError(
            f"{op}: explicit padding must be smaller than the window {ksize} (a window of "
            f"only padding has no value); received padding {padding!r}")
    return ksize, strides, pads, out_hw


def max_pool2d(input, ksize: IntOrInts, strides: IntOrInts, padding: Padding,
               data_format: str = "NHWC", name=None) -> Tensor:
    """Max pooling over KH x KW windows of an NHWC tensor.

    Padded positions (SAME or explicit padding) never win. The gradient goes to the
    first maximum of each window in row-major order, as in TensorFlow.

    Args:
        input: (N, H, W, C) tensor.
        ksize: int, [k], [kh, kw] or [1, kh, kw, 1].
        strides: like ``ksize``.
        padding: 'VALID', 'SAME' or explicit NHWC pairs.
        data_format: only 'NHWC'.

    Returns:
        (N, OH, OW, C) tensor.
    """
    op = "max_pool2d"
    xv = _value(input)
    ksize, strides, pads, _ = _pool_args(op, xv.shape, ksize, strides, padding, data_format)
    return apply(_MAX, _arg(input, xv), ksize=ksize, strides=strides, pads=pads)


def _max_grad_args(op, xv, yv, gv, gshape, ksize, strides, padding, data_format):
    ksize, strides, pads, out_hw = _pool_args(op, xv.shape, ksize, strides, padding,
                                              data_format)
    yshape = (xv.shape[0], *out_hw, xv.shape[3])
    _check_out(op, "orig_output", yv.shape, yshape)
    _check_out(op, "grad", gv.shape, yshape if gshape is None else gshape)
    return ksize, strides, pads


def max_pool2d_grad(orig_input, orig_output, grad, ksize: IntOrInts, strides: IntOrInts,
                    padding: Padding, data_format: str = "NHWC", name=None) -> Tensor:
    """Gradient of :func:`max_pool2d`: ``grad`` routed to each window's first maximum.

    Args:
        orig_input: the pooled (N, H, W, C) input.
        orig_output: ``max_pool2d(orig_input, ...)``.
        grad: (N, OH, OW, C) gradient of the output.

    Returns:
        Tensor shaped like ``orig_input``.
    """
    op = "max_pool2d_grad"
    xv, yv, gv = _value(orig_input), _value(orig_output), _value(grad)
    ksize, strides, pads = _max_grad_args(op, xv, yv, gv, None, ksize, strides, padding,
                                          data_format)
    return apply(_MAX_GRAD, _arg(orig_input, xv), _arg(orig_output, yv), _arg(grad, gv),
                 ksize=ksize, strides=strides, pads=pads)


def max_pool2d_grad_grad(orig_input, orig_output, grad, ksize: IntOrInts,
                         strides: IntOrInts, padding: Padding, data_format: str = "NHWC",
                         name=None) -> Tensor:
    """Gradient of :func:`max_pool2d_grad` w.r.t. its ``grad``: gather at each argmax.

    Args:
        orig_input, orig_output: as for :func:`max_pool2d_grad`.
        grad: a tensor shaped like ``orig_input``.

    Returns:
        Tensor shaped like ``orig_output``.
    """
    op = "max_pool2d_grad_grad"
    xv, yv, gv = _value(orig_input), _value(orig_output), _value(grad)
    ksize, strides, pads = _max_grad_args(op, xv, yv, gv, xv.shape, ksize, strides, padding,
                                          data_format)
    return apply(_MAX_GG, _arg(orig_input, xv), _arg(orig_output, yv), _arg(grad, gv),
                 ksize=ksize, strides=strides, pads=pads)


def _float_input(op: str, v: np.ndarray) -> None:
    if v.dtype.kind != "f":
        raise ValueError(f"{op}: needs a float tensor; received dtype {v.dtype.name}")


def avg_pool2d(input, ksize: IntOrInts, strides: IntOrInts, padding: Padding,
               data_format: str = "NHWC", name=None) -> Tensor:
    """Average pooling over KH x KW windows of an NHWC tensor.

    With SAME (or explicit) padding each window averages only its real elements: the
    padding is not counted, as in TensorFlow.

    Args:
        input: (N, H, W, C) float tensor.
        ksize, strides, padding, data_format: as for :func:`max_pool2d`.

    Returns:
        (N, OH, OW, C) tensor.
    """
    op = "avg_pool2d"
    xv = _value(input)
    _float_input(op, xv)
    ksize, strides, pads, _ = _pool_args(op, xv.shape, ksize, strides, padding, data_format)
    return apply(_AVG, _arg(input, xv), ksize=ksize, strides=strides, pads=pads)


def avg_pool2d_grad(orig_input_shape: Sequence[int], grad, ksize: IntOrInts,
                    strides: IntOrInts, padding: Padding, data_format: str = "NHWC",
                    name=None) -> Tensor:
    """Gradient of :func:`avg_pool2d`: each output gradient spread evenly over its window."""
    op = "avg_pool2d_grad"
    shape = _shape4(op, "orig_input_shape", orig_input_shape)
    gv = _value(grad)
    _float_input(op, gv)
    ksize, strides, pads, out_hw = _pool_args(op, shape, ksize, strides, padding, data_format)
    _check_out(op, "grad", gv.shape, (shape[0], *out_hw, shape[3]))
    return apply(_AVG_GRAD, _arg(grad, gv), input_shape=shape, ksize=ksize, strides=strides,
                 pads=pads)
