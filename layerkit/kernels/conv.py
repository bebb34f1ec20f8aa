"""2-D convolution kernels: NHWC inputs, HWIO kernels, TensorFlow semantics.

Every kernel here is a *correlation of a framed source*: the source (the input, or an
output gradient) sits in a zero frame (padding; for transposed convolutions also
stride-stuffing, see :func:`layerkit.kernels.scratch.frame`) and

    y[n, oy, ox, o] = sum_{i, j, c} F[n, oy*sy + i*dh, ox*sx + j*dw, c] * w[i, j, c, o].

``conv2d`` is that with the padded input; ``conv2d_backprop_input`` (the transposed
convolution) is that with the output gradient stuffed by the strides, padded, and the
kernel flipped and IO-swapped -- or, where cheaper, one GEMM followed by a scatter-add
of the kernel offsets (col2im), or for strided undilated ones s_h*s_w stride-1
correlations of g with sub-kernels, one per output phase (``phases``: the transposed
convolutions of a DCGAN generator, 4x4 stride 2: 102 ms vs 126 for col2im at 64x14x14x128
-> 28x28x128, one thread); ``conv2d_backprop_filter`` is a GEMM of patches of the
input by the output gradient -- or of the padded input by patches of the (framed,
flipped) output gradient, when those are the smaller patches.

Algorithms for a correlation, chosen per shape by :func:`plan` from a cost model of
memory traffic (floats written and read outside the GEMM) plus GEMM flops weighted
by ``_FLOPS_PER_FLOAT`` (per output pixel; K = KH*KW taps, C in, O out channels):

- ``gemm``: 1x1 kernel, stride 1, no frame: one GEMM of the input itself.
- ``im2col``: patches (M, K*C) copied from a strided window view, one GEMM with the
  (K*C, O) kernel. Traffic 2*K*C. With 1-3 channels the patches are built transposed,
  one plane copy per tap (the (K*C, M) layout's long rows; 5x faster for 28x28x1).
- ``taps`` (stride 1): one GEMM of the whole frame by all taps' kernels at once,
  (pixels, C) @ (C, K*O), then K shifted adds of (N, OH, OW, O) views. Traffic
  ~3*K*O: the choice for large kernels into few output channels (the 7x7 conv to one
  channel on 28x28x128: 16 ms instead of 250 ms and +1.2 GB for a full im2col).
- ``rows`` (stride 1): patches over the KW kernel columns only, one GEMM with all KH
  kernel rows, KH shifted row adds; the frame's height padding is never materialised.
  Traffic 2*KW*C + 3*KH*O: the choice for stride-1 input gradients of 3x3 convs.

Memory: every algorithm runs over chunks of the batch sized so that its largest
temporary stays near ``CHUNK_BYTES`` (whole images; single images too large for that
are split by output rows for ``im2col``), with the temporaries in per-thread scratch
buffers, and bias and activation applied to each chunk of the output while it is in
cache (the GEMM epilogue). So a convolution's working memory does not grow with the
batch or with kernel size x channels the way a full im2col does.

Threads: none of our own. OpenBLAS runs the GEMMs on both cores, and its idle worker
busy-waits ~0.1 s after each threaded GEMM (FACTS.md), so a second thread of ours
doing the copies between GEMMs found no free core (see ``ops/conv.py``).
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numpy.lib.stride_tricks import as_strided

from layerkit._core import tuning as _tuning
from layerkit.kernels.scratch import frame, pad, scratch

NO_PAD = ((0, 0), (0, 0))
ONES = (1, 1)
# Tuned sizes (measurements in layerkit._core.tuning):
FEW_CHANNELS = _tuning.CONV_FEW_CHANNELS  # up to here transposed patches beat window copies
CHUNK_BYTES = _tuning.CONV_CHUNK_BYTES  # target size of a chunk's largest temporary (_chunks)
KEEP_PATCH_BYTES = _tuning.CONV_KEEP_PATCH_BYTES  # fused_conv2d keeps patch matrices up to this
_FLOPS_PER_FLOAT = _tuning.CONV_FLOPS_PER_FLOAT  # GEMM flops that cost one float moved (plan)
METHODS = ("gemm", "im2col", "taps", "rows")


# =====================================================================================
# Geometry
# =====================================================================================
def out_len(n: int, k: int, s: int, d: int, lo: int, hi: int) -> int:
    """Output length of a window ``k`` (dilation ``d``, stride ``s``) over ``n`` padded
    by ``lo``/``hi``."""
    return (n + lo + hi - (k - 1) * d - 1) // s + 1


def conv_out_hw(xshape, kshape, strides, pads, dilations) -> tuple[int, int]:
    """(OH, OW) of a convolution of NHWC ``xshape`` with a (KH, KW, ...) kernel."""
    return (out_len(xshape[1], kshape[0], strides[0], dilations[0], *pads[0]),
            out_len(xshape[2], kshape[1], strides[1], dilations[1], *pads[1]))


def tap(a: np.ndarray, i: int, j: int, strides, dilations, oh: int, ow: int) -> np.ndarray:
    """The (N, OH, OW, C) view of framed ``a`` read by kernel offset (i, j)."""
    (sh, sw), (dh, dw) = strides, dilations
    return a[:, i * dh:i * dh + (oh - 1) * sh + 1:sh, j * dw:j * dw + (ow - 1) * sw + 1:sw]


def windows(xp: np.ndarray, kh: int, kw: int, oh: int, ow: int, strides,
            dilations) -> np.ndarray:
    """Read-only (N, OH, OW, KH, KW, C) window view of framed ``xp`` (no copy)."""
    sn, sy, sx, sc = xp.strides
    (sh, sw), (dh, dw) = strides, dilations
    return as_strided(xp, (xp.shape[0], oh, ow, kh, kw, xp.shape[3]),
                      (sn, sy * sh, sx * sw, sy * dh, sx * dw, sc), writeable=False)


class Frame(NamedTuple):
    """Where a source sits in the zero frame a correlation reads: frame size ``hw``,
    source element (y, x) at ``offsets + (y, x) * steps``."""

    hw: tuple
    offsets: tuple
    steps: tuple = ONES

    def place(self, a: np.ndarray, tag: str) -> np.ndarray:
        return frame(a, self.hw, self.offsets, self.steps, tag)

    def is_identity(self, shape) -> bool:
        return tuple(self.hw) == tuple(shape[1:3]) and self.offsets == (0, 0) and \
            self.steps == ONES


def padding_frame(shape, pads) -> Frame:
    """The frame of an NHWC input of ``shape`` padded by ``pads``."""
    (pt, pb), (pl, pr) = pads
    return Frame((shape[1] + pt + pb, shape[2] + pl + pr), (pt, pl))


def transposed_frame(in_hw, kshape, strides, pads, dilations) -> Frame:
    """The frame of an output gradient whose correlation with the flipped kernel (stride
    1) is the input gradient of a convolution over an input of spatial size ``in_hw``."""
    eh, ew = (kshape[0] - 1) * dilations[0], (kshape[1] - 1) * dilations[1]
    (pt, _), (pl, _) = pads
    return Frame((in_hw[0] + eh, in_hw[1] + ew), (eh - pt, ew - pl), tuple(strides))


def flipped(w: np.ndarray) -> np.ndarray:
    """The kernel of the transposed correlation: taps reversed, in/out channels swapped."""
    return w[::-1, ::-1].transpose(0, 1, 3, 2)


# =====================================================================================
# Choosing an algorithm
# =====================================================================================
def costs(src_shape, fr: Frame, kshape, strides, out_hw) -> dict:
    """Estimated cost per batch image of each applicable algorithm (see module doc)."""
    _, hs, _, c = src_shape
    kh, kw, _, co = kshape
    k, f = kh * kw, _FLOPS_PER_FLOAT
    p = out_hw[0] * out_hw[1]
    out = {"im2col": 2 * k * c * p + p * k * c * co / f}
    if tuple(strides) == ONES:
        if k == 1 and fr.is_identity(src_shape):
            out["gemm"] = p * c * co / f
        pf = fr.hw[0] * fr.hw[1]
        out["taps"] = pf * (c + k * co) + 2 * k * co * p + pf * k * c * co / f
        if fr.steps[0] == 1:
            pr = min(hs, fr.hw[0]) * out_hw[1]  # rows of the GEMM: existing source rows
            out["rows"] = 2 * kw * c * pr + 3 * kh * co * p + pr * kw * c * kh * co / f
    return out


def plan(src_shape, fr: Frame, kshape, strides, out_hw) -> str:
    """The cheapest algorithm for a correlation (one of ``METHODS``)."""
    c = costs(src_shape, fr, kshape, strides, out_hw)
    return min(c, key=c.get)


def _chunk(n: int, per_image_bytes: int) -> int:
    """Images per chunk: the chunk's temporary near CHUNK_BYTES, at least one image."""
    return max(1, min(n, CHUNK_BYTES // max(1, per_image_bytes)))


def _epilogue(y2: np.ndarray, bias, activation) -> None:
    if bias is not None:
        y2 += bias
    if activation == "relu":
        np.maximum(y2, 0, out=y2)


# =====================================================================================
# The correlation of a framed source
# =====================================================================================
def correlate(src: np.ndarray, fr: Frame, w: np.ndarray, strides, dilations, out_hw,
              method: str | None = None, bias=None, activation: str = "linear",
              keep: bool = False):
    """``y[n, oy, ox] = sum_ij F[n, oy*s + i*d, ox*s + j*d] @ w[i, j]`` with ``F`` the
    framed ``src``; then ``+ bias`` and ``activation`` ('linear' or 'relu').

    Args:
        src: (N, H, W, C) array; fr: its frame; w: (KH, KW, C, O) kernel.
        method: one of ``METHODS`` (``None``: :func:`plan` chooses).
        keep: also return the whole patch matrix (``im2col`` only, else ``None``), with
            a ones column when there is a bias (the bias rides as the GEMM's last kernel
            row), for a filter gradient that reuses it.

    Returns:
        (N, OH, OW, O) array, or ``(y, patches or None)`` with ``keep``.
    """
    dtype = np.result_type(src.dtype, w.dtype)
    if src.dtype != dtype:
        src = src.astype(dtype)
    if w.dtype != dtype:
        w = w.astype(dtype)
    strides, dilations = tuple(strides), tuple(dilations)
    options = costs(src.shape, fr, w.shape, strides, out_hw)
    kc = w.shape[0] * w.shape[1] * w.shape[2]
    if keep and _keep_patches(src.shape[0] * out_hw[0] * out_hw[1], kc, dtype.itemsize, True):
        # Kept patches also save the filter gradient its own patch copy.
        options["im2col"] -= 2 * kc * out_hw[0] * out_hw[1]
    if method is None:
        method = min(options, key=options.get)
    elif method not in options:
        raise ValueError(f"correlate: method must be one of {sorted(options)} for kernel "
                         f"{w.shape}, strides {strides} and {fr}; received {method!r}")
    n = src.shape[0]
    oh, ow = out_hw
    co = w.shape[3]
    y = np.empty((n, oh, ow, co), dtype)
    cols = None
    if bias is not None:
        bias = np.asarray(bias).astype(dtype, copy=False)
    if n == 0:
        return (y, cols) if keep else y
    if method == "gemm":
        y2 = y.reshape(-1, co)
        np.matmul(src.reshape(-1, src.shape[3]), w.reshape(-1, co), out=y2)
        _epilogue(y2, bias, activation)
    elif method == "im2col":
        cols = _im2col_gemm(src, fr, w, strides, dilations, y, bias, activation, keep)
    elif method == "taps":
        _taps_gemm(src, fr, w, dilations, y, bias, activation)
    else:
        _rows_gemm(src, fr, w, dilations, y, bias, activation)
    return (y, cols) if keep else y


def _keep_patches(m: int, kc: int, itemsize: int, keep: bool) -> bool:
    return keep and m * (kc + 1) * itemsize <= KEEP_PATCH_BYTES


def _im2col_gemm(src, fr, w, strides, dilations, y, bias, activation, keep):
    n, _, _, c = src.shape
    kh, kw, _, co = w.shape
    _, oh, ow, _ = y.shape
    kc = kh * kw * c
    item = y.dtype.itemsize
    m_all = n * oh * ow
    keep = _keep_patches(m_all, kc, item, keep)
    ones = keep and bias is not None
    wm = w.reshape(kc, co)
    if ones:  # the bias as the GEMM's last kernel row, read against the ones column
        wm = np.concatenate([wm, bias.reshape(1, co)])
        bias = None
    few = c <= FEW_CHANNELS
    if keep:
        full = np.empty((kc + ones, m_all) if few else (m_all, kc + ones), y.dtype)
        if ones:
            (full[kc] if few else full[:, kc])[...] = 1
    y2 = y.reshape(m_all, co)
    for a, b, r0, r1 in _blocks(n, oh, ow * kc * item, _frame_bytes(fr, c, item)):
        xp = fr.place(src[a:b], "im2col-in")
        win = windows(xp, kh, kw, oh, ow, strides, dilations)[:, r0:r1]
        m0, m1 = (a * oh + r0) * ow, ((b - 1) * oh + r1) * ow
        m = m1 - m0
        if few:
            # Few channels: the window copy would move KW*C elements at a time; instead
            # copy each tap's whole plane into the transposed patches (K*C, M).
            cols_t = full[:, m0:m1] if keep else _flat_scratch("im2col-t", kc, m, y.dtype)
            planes = cols_t[:kc].reshape((kh * kw, c, b - a, r1 - r0, ow), copy=False)
            for i in range(kh):
                for j in range(kw):
                    planes[i * kw + j] = win[:, :, :, i, j].transpose(3, 0, 1, 2)
            cols = cols_t.T
        else:
            cols = full[m0:m1] if keep else scratch("im2col", (m, kc), y.dtype)
            np.copyto(cols[:, :kc].reshape(win.shape, copy=False), win)
        np.matmul(cols, wm, out=y2[m0:m1])
        _epilogue(y2[m0:m1], bias, activation)
    if not keep:
        return None
    return full.T if few else full


def _flat_scratch(key: str, rows: int, cols: int, dtype) -> np.ndarray:
    """A (rows, cols) scratch matrix whose ``cols`` changes between calls (the transposed
    patches of a batch chunk): one flat buffer with room for the largest."""
    return scratch(key, (rows * cols,), dtype).reshape(rows, cols)


def _frame_bytes(fr: Frame, c: int, itemsize: int) -> int:
    """Bytes per image of a framed copy of a C-channel source."""
    return fr.hw[0] * fr.hw[1] * c * itemsize


def _blocks(n: int, oh: int, row_bytes: int, image_bytes: int = 0):
    """(a, b, r0, r1): images [a, b) and their output rows [r0, r1), each block holding
    about CHUNK_BYTES of temporaries (``row_bytes`` per output row, plus ``image_bytes``
    per image for its framed copy)."""
    nb = _chunk(n, oh * row_bytes + image_bytes)
    if nb > 1 or oh * row_bytes <= 2 * CHUNK_BYTES:
        for a in range(0, n, nb):
            yield a, min(n, a + nb), 0, oh
        return
    rows = max(1, CHUNK_BYTES // max(1, row_bytes))
    for a in range(n):
        for r0 in range(0, oh, rows):
            yield a, a + 1, r0, min(oh, r0 + rows)


def _shifted_sum(out: np.ndarray, terms) -> None:
    """``out[...] = sum(terms)`` for a list of equally shaped views (at least one)."""
    if len(terms) == 1:
        out[...] = terms[0]
        return
    np.add(terms[0], terms[1], out=out)
    for t in terms[2:]:
        out += t


def _taps_gemm(src, fr, w, dilations, y, bias, activation):
    n, _, _, c = src.shape
    kh, kw, _, co = w.shape
    _, oh, ow, _ = y.shape
    (fh, fw), (dh, dw) = fr.hw, dilations
    k = kh * kw
    wt = w.transpose(2, 0, 1, 3).reshape(c, k * co)
    nb = _chunk(n, fh * fw * (c + k * co) * y.dtype.itemsize)
    for a in range(0, n, nb):
        b = min(n, a + nb)
        xp = fr.place(src[a:b], "taps-in")
        z = scratch("taps", ((b - a) * fh * fw, k * co), y.dtype)
        np.matmul(xp.reshape(-1, c), wt, out=z)
        z6 = z.reshape(b - a, fh, fw, kh, kw, co)
        _shifted_sum(y[a:b], [z6[:, i * dh:i * dh + oh, j * dw:j * dw + ow, i, j]
                              for i in range(kh) for j in range(kw)])
        _epilogue(y[a:b].reshape(-1, co), bias, activation)


def _rows_gemm(src, fr, w, dilations, y, bias, activation):
    """Stride 1, frame height step 1: column patches, one GEMM with all kernel rows, row
    adds; the frame's top/bottom rows are left implicit (see ``_row_sums``)."""
    (fh, fw), (oy, ox), (_, sx) = fr
    hs = src.shape[1]
    if oy < 0:                      # frame starts inside the source: crop its top rows
        src, hs, oy = src[:, -oy:], hs + oy, 0
    if oy + hs > fh:                # and its bottom rows
        src, hs = src[:, :fh - oy], fh - oy
    vpads = (oy, fh - oy - hs)
    wfr = Frame((hs, fw), (0, ox), (1, sx))
    n, _, _, c = src.shape
    kh, kw, _, co = w.shape
    _, oh, ow, _ = y.shape
    dh, dw = dilations
    wk = w.transpose(1, 2, 0, 3).reshape(kw * c, kh * co)
    nb = _chunk(n, (hs * fw * c + hs * ow * (kw * c + kh * co)) * y.dtype.itemsize)
    for a in range(0, n, nb):
        b = min(n, a + nb)
        xh = wfr.place(src[a:b], "rows-in")
        sn, sy, sxx, sc = xh.strides
        win = as_strided(xh, (b - a, hs, ow, kw, c), (sn, sy, sxx, sxx * dw, sc),
                         writeable=False)
        m = (b - a) * hs * ow
        cols = scratch("rows", (m, kw * c), y.dtype)
        np.copyto(cols.reshape(win.shape), win)
        z = scratch("rows-out", (m, kh * co), y.dtype)
        np.matmul(cols, wk, out=z)
        _row_sums(z.reshape(b - a, hs, ow, kh, co), y[a:b], dh, vpads)
        _epilogue(y[a:b].reshape(-1, co), bias, activation)


def _row_sums(z: np.ndarray, out: np.ndarray, dh: int, vpads) -> None:
    """``out[:, y] = sum_i z[:, y + i*dh - top, :, i]`` over the rows that exist: a frame
    row outside the source would only add zeros, so each kernel row's add covers just
    the output rows whose source row exists (12% fewer GEMM rows and copies for the
    14x14 3x3 SAME input gradient of the issue-3 CNN than padding first)."""
    h, kh, oh = z.shape[1], z.shape[3], out.shape[1]
    top = vpads[0]

    def rows(i):  # output rows [lo, hi) that kernel row i reaches, from source row s
        shift = i * dh - top
        lo, hi = max(0, -shift), min(oh, h - shift)
        return lo, max(lo, hi), lo + shift

    full = [i for i in range(kh) if rows(i)[:2] == (0, oh)]
    rest = [i for i in range(kh) if not full or i != full[0]]
    if not full:
        out[...] = 0
    else:
        # Start from a kernel row that covers every output row, fused with the next add.
        _, _, s0 = rows(full[0])
        first = z[:, s0:s0 + oh, :, full[0]]
        if not rest:
            out[...] = first
            return
        lo, hi, s = rows(rest[0])
        np.add(first[:, lo:hi], z[:, s:s + hi - lo, :, rest.pop(0)], out=out[:, lo:hi])
        out[:, :lo] = first[:, :lo]
        out[:, hi:] = first[:, hi:]
    for i in rest:
        lo, hi, s = rows(i)
        out[:, lo:hi] += z[:, s:s + hi - lo, :, i]


# =====================================================================================
# conv2d and its two gradients
# =====================================================================================
def conv2d(x, w, strides, pads, dilations, bias=None, activation: str = "linear",
           method: str | None = None, keep: bool = False):
    """Convolution (cross-correlation) of NHWC ``x`` with HWIO ``w``, ``+ bias`` and
    ``activation`` fused into the GEMM epilogue (see :func:`correlate` for ``keep``)."""
    return correlate(x, padding_frame(x.shape, pads), w, strides, dilations,
                     conv_out_hw(x.shape, w.shape, strides, pads, dilations), method, bias,
                     activation, keep)


def backprop_input_costs(gshape, wshape, input_shape, strides, pads, dilations) -> dict:
    """Costs of the input-gradient algorithms: ``col2im`` and the transposed correlation's
    (named ``t-<method>``)."""
    kh, kw, cin, cout = wshape
    fr = transposed_frame(input_shape[1:3], wshape, strides, pads, dilations)
    out = {f"t-{m}": v for m, v in costs(
        gshape, fr, (kh, kw, cout, cin), ONES, input_shape[1:3]).items()}
    pg, k = gshape[1] * gshape[2], kh * kw
    out["col2im"] = 3 * k * cin * pg + pg * k * cin * cout / _FLOPS_PER_FLOAT
    if tuple(strides) != ONES and tuple(dilations) == ONES:
        total = input_shape[1] * input_shape[2] * cin  # the copy of each phase into dx
        for ph in _phases(input_shape[1:3], wshape, strides, pads):
            total += min(costs((1, *gshape[1:3], cout), ph.frame, ph.w_shape, ONES,
                               ph.out_hw).values())
        out["phases"] = total
    return out


class _Phase(NamedTuple):
    """One output phase of a strided transposed correlation (see :func:`_phases`)."""

    y0: tuple       # first input-gradient row/column of the phase
    taps: tuple     # (first tap, count) per axis: taps first, first + s, ...
    frame: Frame    # where g sits for the phase's stride-1 correlation
    out_hw: tuple   # rows/columns of the phase
    w_shape: tuple  # the phase's sub-kernel (A_h, A_w, C_out, C_in)


def _phases(in_hw, wshape, strides, pads):
    """The s_h * s_w phases of the input gradient of a stride-s convolution (dilation 1).

    Input-gradient row ``y`` gets taps ``i`` with ``i = (y + top) mod s`` (mod s) only,
    so rows of one residue form a stride-1 correlation of g with the sub-kernel
    ``w[r::s]`` reversed: ``dx[y0 + s t] = sum_a g[B - a + t] w[r + s a]^T`` with
    ``B = (y0 + top - r) / s``. Each phase is that correlation on a frame of g, so a
    transposed convolution costs its GEMM flops once, with no zero-stuffing and no
    scatter-add (``col2im``). Phases with no taps or no rows are skipped (zero).
    """
    kh, kw, cin, cout = wshape
    per_axis = []
    for n, k, s, (lo, _) in zip(in_hw, (kh, kw), strides, pads):
        axis = []
        for r in range(s):
            y0 = (r - lo) % s
            rows, a = len(range(y0, n, s)), len(range(r, k, s))
            if rows and a:
                axis.append((y0, r, a, (y0 + lo - r) // s, rows))
        per_axis.append(axis)
    for y0, ry, ay, by, ny in per_axis[0]:
        for x0, rx, ax, bx, nx in per_axis[1]:
            fr = Frame((ny + ay - 1, nx + ax - 1), (ay - 1 - by, ax - 1 - bx))
            yield _Phase((y0, x0), ((ry, ay), (rx, ax)), fr, (ny, nx), (ay, ax, cout, cin))


def _phases_gemm(g, w, input_shape, strides, pads) -> np.ndarray:
    dtype = np.result_type(g.dtype, w.dtype)
    n, h, wd, cin = input_shape
    sy, sx = strides
    phases = list(_phases((h, wd), w.shape, strides, pads))
    covered = sum(p.out_hw[0] * p.out_hw[1] for p in phases)
    dx = (np.empty if covered == h * wd else np.zeros)((n, h, wd, cin), dtype)
    for ph in phases:
        (ry, ay), (rx, ax) = ph.taps
        sub = flipped(w[ry::sy, rx::sx][:ay, :ax])
        y = correlate(g, ph.frame, sub, ONES, ONES, ph.out_hw)
        dx[:, ph.y0[0]::sy, ph.y0[1]::sx] = y
    return dx


def conv2d_backprop_input(g, w, input_shape, strides, pads, dilations,
                          method: str | None = None) -> np.ndarray:
    """The gradient of :func:`conv2d` with respect to its input (the transposed
    convolution of ``g``): ``method`` is ``'col2im'`` or ``'t-<correlation method>'``,
    chosen by cost when None."""
    strides, dilations = tuple(strides), tuple(dilations)
    if method is None:
        c = backprop_input_costs(g.shape, w.shape, input_shape, strides, pads, dilations)
        method = min(c, key=c.get)
    if method == "col2im":
        return _col2im_gemm(g, w, input_shape, strides, pads, dilations)
    if method == "phases" and strides != ONES and dilations == ONES:
        return _phases_gemm(g, w, input_shape, strides, pads)
    if not method.startswith("t-"):
        raise ValueError(f"conv2d_backprop_input: method must be 'col2im', 'phases' (strided, "
                         f"undilated) or 't-<method>'; received {method!r}")
    fr = transposed_frame(input_shape[1:3], w.shape, strides, pads, dilations)
    return correlate(g, fr, flipped(w), ONES, dilations, tuple(input_shape[1:3]), method[2:])


def _col2im_gemm(g, w, input_shape, strides, pads, dilations) -> np.ndarray:
    """One GEMM ``g @ w^T`` per batch chunk, then a scatter-add per kernel offset."""
    n, h, wd, cin = input_shape
    kh, kw, _, cout = w.shape
    _, oh, ow, _ = g.shape
    dtype = np.result_type(g.dtype, w.dtype)
    (pt, pb), (pl, pr) = pads
    k = kh * kw
    dx = np.empty((n, h, wd, cin), dtype)
    if n == 0:
        return dx
    wt = w.reshape(k * cin, cout).T.astype(dtype, copy=False)
    padded = pads != NO_PAD
    nb = _chunk(n, (oh * ow * k * cin + (h + pt + pb) * (wd + pl + pr) * cin) * dtype.itemsize)
    for a in range(0, n, nb):
        b = min(n, a + nb)
        d = scratch("col2im", ((b - a) * oh * ow, k * cin), dtype)
        np.matmul(g[a:b].reshape(-1, cout).astype(dtype, copy=False), wt, out=d)
        d6 = d.reshape(b - a, oh, ow, kh, kw, cin)
        acc = scratch("col2im-out", (b - a, h + pt + pb, wd + pl + pr, cin), dtype) \
            if padded else dx[a:b]
        acc[...] = 0
        for i in range(kh):
            for j in range(kw):
                tap(acc, i, j, strides, dilations, oh, ow)[...] += d6[:, :, :, i, j]
        if padded:
            dx[a:b] = acc[:, pt:pt + h, pl:pl + wd]
    return dx


def backprop_filter_costs(xshape, gshape, filter_shape, strides, pads) -> dict:
    """Costs of the filter-gradient algorithms: ``x-patches`` (patches of the input times
    the gradient) and ``g-patches`` (the padded input times patches of the framed
    gradient)."""
    kh, kw, cin, cout = filter_shape
    k, f = kh * kw, _FLOPS_PER_FLOAT
    p = gshape[1] * gshape[2]
    pp = (xshape[1] + sum(pads[0])) * (xshape[2] + sum(pads[1]))
    return {"x-patches": 2 * k * cin * p + p * k * cin * cout / f,
            "g-patches": pp * (cin + 2 * k * cout) + pp * k * cin * cout / f}


def conv2d_backprop_filter(x, g, filter_shape, strides, pads, dilations,
                           method: str | None = None) -> np.ndarray:
    """The gradient of :func:`conv2d` with respect to its (KH, KW, C_in, C_out) filter:
    ``method`` is ``'x-patches'`` or ``'g-patches'`` (chosen by cost when None)."""
    strides, dilations = tuple(strides), tuple(dilations)
    if method is None:
        c = backprop_filter_costs(x.shape, g.shape, filter_shape, strides, pads)
        method = min(c, key=c.get)
    kh, kw, cin, cout = filter_shape
    dtype = np.result_type(x.dtype, g.dtype)
    x, g = x.astype(dtype, copy=False), g.astype(dtype, copy=False)
    n, oh, ow, _ = g.shape
    kc = kh * kw * cin
    item = dtype.itemsize
    fr = padding_frame(x.shape, pads)
    if method == "x-patches":
        acc = np.zeros((kc, cout), dtype)
        part = np.empty_like(acc)
        few = cin <= FEW_CHANNELS
        for a, b, r0, r1 in _blocks(n, oh, ow * kc * item, _frame_bytes(fr, cin, item)):
            xp = fr.place(x[a:b], "bpf-in")
            win = windows(xp, kh, kw, oh, ow, strides, dilations)[:, r0:r1]
            m = (b - a) * (r1 - r0) * ow
            if few:
                cols_t = _flat_scratch("im2col-t", kc, m, dtype)
                planes = cols_t.reshape(kh * kw, cin, b - a, r1 - r0, ow)
                for i in range(kh):
                    for j in range(kw):
                        planes[i * kw + j] = win[:, :, :, i, j].transpose(3, 0, 1, 2)
            else:
                cols = scratch("im2col", (m, kc), dtype)
                np.copyto(cols.reshape(win.shape), win)
                cols_t = cols.T
            np.matmul(cols_t, g[a:b, r0:r1].reshape(m, cout), out=part)
            acc += part
        return acc.reshape(filter_shape)
    if method != "g-patches":
        raise ValueError(f"conv2d_backprop_filter: method must be 'x-patches' or "
                         f"'g-patches'; received {method!r}")
    hp, wp = fr.hw
    eh, ew = (kh - 1) * dilations[0], (kw - 1) * dilations[1]
    gfr = Frame((hp + eh, wp + ew), (eh, ew), strides)
    acc = np.zeros((cin, kh * kw * cout), dtype)
    part = np.empty_like(acc)
    nb = _chunk(n, (hp * wp * (cin + kh * kw * cout) + gfr.hw[0] * gfr.hw[1] * cout) * item)
    for a in range(0, n, nb):
        b = min(n, a + nb)
        gf = gfr.place(g[a:b], "bpf-g")
        win = windows(gf, kh, kw, hp, wp, ONES, dilations)
        m = (b - a) * hp * wp
        cols = scratch("bpf-gcols", (m, kh * kw * cout), dtype)
        np.copyto(cols.reshape(win.shape), win)
        xp = fr.place(x[a:b], "bpf-in")
        np.matmul(xp.reshape(m, cin).T, cols, out=part)
        acc += part
    # Column (i', j', o) of the framed gradient's patches is tap (KH-1-i', KW-1-j').
    return np.ascontiguousarray(
        acc.reshape(cin, kh, kw, cout)[:, ::-1, ::-1].transpose(1, 2, 0, 3))


def backprop_filter_from_patches(cols, g, filter_shape, bias: bool = False):
    """The filter gradient (and with ``bias`` the bias gradient, from the ones column)
    of a convolution whose patch matrix ``cols`` :func:`conv2d` kept."""
    k = filter_shape[0] * filter_shape[1] * filter_shape[2]
    g2 = g.reshape(-1, filter_shape[3])
    if bias:
        d = cols.T @ g2
        return d[:k].reshape(filter_shape), d[k]
    return (cols[:, :k].T @ g2).reshape(filter_shape)


def column_sums(a: np.ndarray) -> np.ndarray:
    """``a.sum(axis=0)`` of a tall 2-D array as a GEMV (4x faster than np.add.reduce on
    (50176, 32) float32 here)."""
    return np.ones(a.shape[0], a.dtype) @ a


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
def depthwise_conv2d(x, w, strides, pads, dilations) -> np.ndarray:
    """Depthwise convolution: output channel ``c*M + m`` is channel ``c`` correlated with
    ``w[:, :, c, m]``."""
    kh, kw, c, mult = w.shape
    n = x.shape[0]
    oh, ow = conv_out_hw(x.shape, w.shape, strides, pads, dilations)
    win = windows(pad(x, pads, "dw-in"), kh, kw, oh, ow, strides, dilations)
    planes = [np.einsum("nhwijc,ijc->nhwc", win, w[..., m]) for m in range(mult)]
    if mult == 1:
        return planes[0]
    return np.stack(planes, axis=-1).reshape(n, oh, ow, c * mult)


def depthwise_backprop_input(g, w, input_shape, strides, pads, dilations) -> np.ndarray:
    """The gradient of :func:`depthwise_conv2d` with respect to its input."""
    kh, kw, c, mult = w.shape
    n, oh, ow, _ = g.shape
    h, wd = input_shape[1:3]
    gm = _planes(g, mult)
    fr = transposed_frame((h, wd), w.shape, strides, pads, dilations)
    if tuple(strides) == ONES:
        # Stride 1: a depthwise correlation of the re-padded g with the flipped kernel.
        wf = w[::-1, ::-1]
        dx = None
        for m in range(mult):
            win = windows(fr.place(gm[m], "dw-g"), kh, kw, h, wd, ONES, dilations)
            term = np.einsum("nhwijc,ijc->nhwc", win, wf[..., m])
            dx = term if dx is None else np.add(dx, term, out=dx)
        return dx
    (pt, pb), (pl, pr) = pads
    dx = np.zeros((n, h + pt + pb, wd + pl + pr, c), dtype=np.result_type(g, w))
    for i in range(kh):
        for j in range(kw):
            view = tap(dx, i, j, strides, dilations, oh, ow)
            for m in range(mult):
                view += np.einsum("nhwc,c->nhwc", gm[m], w[i, j, :, m])
    return np.ascontiguousarray(dx[:, pt:pt + h, pl:pl + wd])


def depthwise_backprop_filter(x, g, filter_shape, strides, pads, dilations) -> np.ndarray:
    """The gradient of :func:`depthwise_conv2d` with respect to its (KH, KW, C, M) filter."""
    kh, kw, c, mult = filter_shape
    oh, ow = g.shape[1:3]
    gm = _planes(g, mult)
    xp = pad(x, pads, "dw-in")
    dw = np.empty(filter_shape, dtype=np.result_type(x, g))
    for i in range(kh):
        for j in range(kw):
            t = tap(xp, i, j, strides, dilations, oh, ow)
            for m in range(mult):
                dw[i, j, :, m] = np.einsum("nhwc,nhwc->c", t, gm[m])
    return dw
