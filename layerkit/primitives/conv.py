"""Convolution and pooling records (NHWC images, HWIO kernels, TensorFlow semantics).

The NumPy work lives in :mod:`layerkit.kernels.conv` and :mod:`layerkit.kernels.pool`
(algorithms chosen per shape, batch-chunked temporaries, speed notes); this module holds
the op records, whose forwards call those kernels and whose gradient rules are lk ops,
and the public functions that check arguments.

Every op here is bilinear or piecewise linear, so its gradients are ops of the same
family, and the records close under differentiation:

- ``conv2d(x, w)``; vjp -> ``conv2d_backprop_input(g, w)`` and ``conv2d_backprop_filter(x, g)``;
  their vjps are ``conv2d`` and each other again (``conv2d_transpose`` *is*
  ``conv2d_backprop_input``). The same three records exist for ``depthwise_conv2d``.
- ``max_pool2d(x)``; vjp -> ``max_pool2d_grad(x, y, g)`` (scatter to the first maximum of
  each window, as TensorFlow); its vjp -> ``max_pool2d_grad_grad(x, y, h)`` (gather from
  the same argmax), whose vjp is ``max_pool2d_grad`` again.
- ``avg_pool2d(x)``; vjp -> ``avg_pool2d_grad(g)``, whose vjp is ``avg_pool2d``.
- Conv2D layers call ``fused_conv2d`` (conv + bias + ReLU in one record, applied to each
  chunk of the GEMM output while it is in cache; the patch matrix, when small, is kept as
  a second output for the filter gradient; with a bias the kept patches carry a ones
  column, so the bias is part of the GEMM; see that section).
- Inside ``lk.function`` graphs, a ReLU followed by a max-pool gets its mask applied to
  the pooled gradient instead (a graph rewrite in autodiff/function/passes.py).

No intra-op threads. OpenBLAS's idle worker busy-waits ~0.1 s after every threaded
GEMM (the process burns a core during a sleep that follows one), and a CNN step runs
a GEMM every few ms, so the second core is never free for a thread of ours: a 2-way
split of a memory-bound NumPy loop ran 1.85x faster with no GEMM in the last 0.1 s
and 0.95x right after one (1.8x with OPENBLAS_THREAD_TIMEOUT=4, which OpenBLAS only
reads when NumPy loads it). Splitting whole records by batch halves, GEMMs included,
took 30-31 ms per CNN step vs 25.8 serial; with BLAS pinned to one thread it took
25-27 ms vs 35-37 serial: never better than the serial step with 2 BLAS threads.

Attributes of the records are plain tuples: ``strides=(sh, sw)``,
``pads=((top, bottom), (left, right))`` (SAME already resolved), ``dilations=(dh, dw)``.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from layerkit._core.convert import to_array
from layerkit._core.op import RECORDERS, Op, apply, wrap
from layerkit._core.tensor import Tensor
from layerkit._core.types import TensorLike
from layerkit.kernels import conv as _k
from layerkit.kernels import pool as _kp
from layerkit.primitives import array as _array
from layerkit.primitives import nn as _nn
from layerkit.primitives.spatial import same_pads, spatial_arg

__all__ = ["conv2d", "conv2d_transpose", "depthwise_conv2d", "max_pool2d", "avg_pool2d"]

IntOrInts = int | Sequence[int]
Padding = str | Sequence[Sequence[int]]

_NO_PAD = _k.NO_PAD
_ONES = _k.ONES
_out_len = _k.out_len


# =====================================================================================
# conv2d and its two backprops: three records that are each other's gradients
# =====================================================================================
def _conv_fwd(x, w, strides, pads, dilations):
    return _k.conv2d(x, w, strides, pads, dilations)


def _bpi_fwd(g, w, input_shape, strides, pads, dilations):
    return _k.conv2d_backprop_input(g, w, input_shape, strides, pads, dilations)


def _bpf_fwd(x, g, filter_shape, strides, pads, dilations):
    return _k.conv2d_backprop_filter(x, g, filter_shape, strides, pads, dilations)


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

    conv = Op(name, conv_fwd, conv_vjp, reads=(0, 1))
    bpi = Op(f"{name}_backprop_input", bpi_fwd, bpi_vjp, reads=(0, 1))
    bpf = Op(f"{name}_backprop_filter", bpf_fwd, bpf_vjp, reads=(0, 1))
    return conv, bpi, bpf


_CONV, _CONV_BPI, _CONV_BPF = _conv_family("conv2d", _conv_fwd, _bpi_fwd, _bpf_fwd)


# =====================================================================================
# fused_conv2d: conv2d + bias + activation in one record (what Conv2D layers call)
# =====================================================================================
# TensorFlow's grappler rewrites Conv2D+BiasAdd+Relu into one _FusedConv2D kernel; here
# the layer asks for the fused record directly. The bias and the ReLU run in place on
# each chunk of the GEMM's output while it is in cache (no extra arrays or passes). When
# the kernel chooses im2col and the whole patch matrix is small (up to
# kernels.conv.KEEP_PATCH_BYTES), it is kept as a hidden second output, so the filter
# gradient is one GEMM with no second im2col (issue-3 CNN sizes: 3 records -> 1 per
# layer, ~2.5 ms less per training step); otherwise that output is an empty (0, 0)
# array and the filter gradient runs its own chunked kernel.
#
# The vjp has two paths. With no recorder active (the usual first-order backward: a
# non-persistent tape stops recording while it runs backward), nothing it computes is
# recorded, so it works on NumPy arrays directly and reads the saved patches. With a
# recorder active (higher order, persistent tapes, lk.function traces) it composes the
# differentiable records above from the inputs, so gradients of gradients stay exact;
# that path never reads the patches, so their (always zero) gradient is dropped.
_ACTIVATIONS = ("linear", "relu")


def _bias_grad_fwd(g):
    return _k.column_sums(g.reshape(-1, g.shape[-1]))


# The bias gradient, g summed over all axes but the last (TensorFlow's BiasAddGrad), as
# a record so the traced path gets column_sums' GEMV too (reduce_sum over the
# (N, OH, OW) axes took 0.97 ms vs 0.34 at 64x28x28x32). Linear: its rule broadcasts back.
_BIAS_GRAD = Op("bias_add_grad", _bias_grad_fwd,
                lambda h, ins, out, needs: (_array.broadcast_to(h, ins[0].shape),), reads=())


def _fused_conv_fwd(x, w, *bias, strides, pads, dilations, activation):
    y, cols = _k.conv2d(x, w, strides, pads, dilations, bias[0] if bias else None,
                        activation, keep=True)
    if cols is None:  # not kept (too large, or not an im2col shape): an empty stand-in
        cols = np.empty((0, 0), y.dtype)
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
            gx = wrap(_k.conv2d_backprop_input(g, w._v, x.shape, **geo))
        want_b = len(ins) > 2 and needs[2]
        if needs[1]:
            cols = outs[1]._v
            if want_b and _has_ones_column(cols, w.shape):
                gwv, gbv = _k.backprop_filter_from_patches(cols, g, w.shape, bias=True)
                gw, gb = wrap(gwv), wrap(gbv)
            else:
                gw = wrap(_bpf_cols_fwd(x._v, cols, g, w.shape, **geo))
        if want_b and gb is None:
            gb = wrap(_k.column_sums(g2))
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


_FUSED_CONV = Op("fused_conv2d", _fused_conv_fwd, _fused_conv_vjp, num_outputs=2,
                 reads=(0, 1, "out"))


def _has_ones_column(cols, filter_shape) -> bool:
    """True if fused_conv2d's patches carry the bias's ones column (see
    ``kernels.conv.correlate``)."""
    return cols.shape[1] > filter_shape[0] * filter_shape[1] * filter_shape[2]


def _bpf_cols_fwd(x, cols, g, filter_shape, strides, pads, dilations):
    if cols.size == 0 and g.size:  # fused_conv2d kept no patches: from x itself
        return _k.conv2d_backprop_filter(x, g, filter_shape, strides, pads, dilations)
    return _k.backprop_filter_from_patches(cols, g, filter_shape)


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
_CONV_BPF_COLS = Op("conv2d_backprop_filter_from_patches", _bpf_cols_fwd, _bpf_cols_vjp,
                    reads=(0, 2))


def _bpf_bias_cols_fwd(x, cols, g, filter_shape, strides, pads, dilations):
    k = filter_shape[0] * filter_shape[1] * filter_shape[2]
    if cols.shape[1] != k + 1:
        raise ValueError(f"conv2d_backprop_filter_and_bias_from_patches: needs patches with a "
                         f"ones column ({k + 1} columns); received shape {cols.shape}")
    return _k.backprop_filter_from_patches(cols, g, filter_shape, bias=True)


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
                         _bpf_bias_cols_vjp, num_outputs=2, reads=(0, 2))


# =====================================================================================
# depthwise_conv2d: filter (KH, KW, C, M), output channel c*M + m
# =====================================================================================
def _dw_fwd(x, w, strides, pads, dilations):
    return _k.depthwise_conv2d(x, w, strides, pads, dilations)


def _dw_bpi_fwd(g, w, input_shape, strides, pads, dilations):
    return _k.depthwise_backprop_input(g, w, input_shape, strides, pads, dilations)


def _dw_bpf_fwd(x, g, filter_shape, strides, pads, dilations):
    return _k.depthwise_backprop_filter(x, g, filter_shape, strides, pads, dilations)


_DW, _DW_BPI, _DW_BPF = _conv_family("depthwise_conv2d", _dw_fwd, _dw_bpi_fwd, _dw_bpf_fwd)


# =====================================================================================
# Pooling
# =====================================================================================
def _max_fwd(x, ksize, strides, pads):
    return _kp.max_pool(x, ksize, strides, pads)


def _max_grad_fwd(x, y, g, ksize, strides, pads):
    return _kp.max_pool_grad(x, y, g, ksize, strides, pads)


def _max_gg_fwd(x, y, h, ksize, strides, pads):
    return _kp.max_pool_grad_grad(x, y, h, ksize, strides, pads)


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


_MAX = Op("max_pool2d", _max_fwd, _max_vjp, reads=(0, "out"))
# It sends g[w] only where y == p[w], and there y > 0 is p[w] > 0: the ReLU mask of its
# result can be applied to g instead (passes.sink_masks).
_MAX_GRAD = Op("max_pool2d_grad", _max_grad_fwd, _max_grad_vjp, absorbs=(_nn._RELU_GRAD,),
               reads=(0, 1))
_MAX_GG = Op("max_pool2d_grad_grad", _max_gg_fwd, _max_gg_vjp, reads=(0, 1))


def _avg_fwd(x, ksize, strides, pads):
    return _kp.avg_pool(x, ksize, strides, pads)


def _avg_grad_fwd(g, input_shape, ksize, strides, pads):
    return _kp.avg_pool_grad(g, input_shape, ksize, strides, pads)


def _avg_vjp(g, ins, y, needs, ksize, strides, pads):
    return (apply(_AVG_GRAD, g, input_shape=ins[0].shape, ksize=ksize, strides=strides,
                  pads=pads),)


def _avg_grad_vjp(h, ins, dx, needs, input_shape, ksize, strides, pads):
    return (apply(_AVG, h, ksize=ksize, strides=strides, pads=pads),)


_AVG = Op("avg_pool2d", _avg_fwd, _avg_vjp, reads=())
_AVG_GRAD = Op("avg_pool2d_grad", _avg_grad_fwd, _avg_grad_vjp, reads=())


# =====================================================================================
# Argument checking (public front doors)
# =====================================================================================
def _value(x):
    # Checked for shapes, then passed on to the recorded op: not a leak.
    return x._rv if isinstance(x, Tensor) else to_array(x)


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
        pads: tuple[tuple[int, int], ...]
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
def conv2d(input: TensorLike, filters: TensorLike, strides: IntOrInts = 1,
           padding: Padding = "VALID",
           data_format: str = "NHWC", dilations: IntOrInts = 1, name: str | None = None) -> Tensor:
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

    Examples:
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
        strides: as for :func:`conv2d`.
        padding: as for :func:`conv2d`.
        data_format: as for :func:`conv2d`.
        dilations: as for :func:`conv2d`.

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


def conv2d_transpose(input: TensorLike, filters: TensorLike, output_shape: Sequence[int],
                     strides: IntOrInts,
                     padding: Padding = "SAME", data_format: str = "NHWC",
                     dilations: IntOrInts | None = None, name: str | None = None) -> Tensor:
    """Transposed 2-D convolution: the gradient of :func:`conv2d` with respect to its input.

    Args:
        input: (N, H, W, C_in) tensor.
        filters: (KH, KW, C_out, C_in) kernel, as in ``tf.nn.conv2d_transpose``.
        output_shape: (N, OH, OW, C_out); a :func:`conv2d` with these strides/padding
            must map it back to ``input``'s spatial shape.
        strides: as for :func:`conv2d`.
        padding: as for :func:`conv2d`.
        data_format: as for :func:`conv2d`.
        dilations: as for :func:`conv2d`.

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


def depthwise_conv2d(input: TensorLike, filter: TensorLike, strides: IntOrInts, padding: Padding,
                     data_format: str | None = None, dilations: IntOrInts | None = None,
                     name: str | None = None) -> Tensor:
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


def max_pool2d(input: TensorLike, ksize: IntOrInts, strides: IntOrInts, padding: Padding,
               data_format: str = "NHWC", name: str | None = None) -> Tensor:
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
        orig_input: as for :func:`max_pool2d_grad`.
        orig_output: as for :func:`max_pool2d_grad`.
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


def avg_pool2d(input: TensorLike, ksize: IntOrInts, strides: IntOrInts, padding: Padding,
               data_format: str = "NHWC", name: str | None = None) -> Tensor:
    """Average pooling over KH x KW windows of an NHWC tensor.

    With SAME (or explicit) padding each window averages only its real elements: the
    padding is not counted, as in TensorFlow.

    Args:
        input: (N, H, W, C) float tensor.
        ksize: as for :func:`max_pool2d`.
        strides: as for :func:`max_pool2d`.
        padding: as for :func:`max_pool2d`.
        data_format: as for :func:`max_pool2d`.

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
