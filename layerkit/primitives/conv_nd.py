"""Convolution and pooling over 1, 2 or 3 spatial axes (channels last), grouped convolution.

One new family of records lives here: ``conv_nd`` with ``conv_nd_backprop_input`` and
``conv_nd_backprop_filter`` (attributes ``strides``, ``pads``, ``dilations``), a
convolution over any number of spatial axes (used for 3-D). Like the 2-D family in
``ops/conv.py`` (whose ``_conv_family`` builds them) the three are bilinear and each
other's gradients, so every order of differentiation stays inside the family.
The NumPy work is in :mod:`layerkit.kernels.conv_nd` (batch-chunked im2col GEMMs, a
GEMM and a scatter-add pass per kernel offset for the input gradient).

Everything else composes records that already exist, where that is as fast:

- rank 1 (``conv1d``, ``max_pool1d``, ``avg_pool1d``, 1-D depthwise and transposed
  convolutions): the 2-D records on an inserted axis of size 1. A height-1 kernel makes
  the same im2col and GEMM as a 1-D one, and ``fused_conv2d`` keeps its bias/ReLU fusion.
- 3-D pooling: a box reduction is separable. Height and width are pooled by the 2-D
  record on (N*D, H, W, C), then depth by a (kd, 1) 2-D pool on (N, D, OH*OW, C).
  TensorFlow's SAME divisor (the number of real elements in the window) is a product of
  per-axis counts, so the average factorises exactly, and the max gradient still reaches
  the first maximum in (depth, row, column) order.
- grouped convolutions with one input channel per group are depthwise convolutions: the
  kernel (KH, KW, 1, G*M) *is* the depthwise kernel (KH, KW, G, M). Other groupings run
  the ungrouped records on a block-diagonal kernel (see :func:`conv_resolved`).
- ``separable_conv2d``: ``depthwise_conv2d`` then a 1x1 ``conv2d`` (one plain GEMM).

Padding attributes are resolved tuples ``((lo, hi), ...)`` per spatial axis (SAME uses
TensorFlow's split: the odd element goes after). Channels-first layouts are not computed
here; layers transpose around these ops.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from layerkit._core.op import apply
from layerkit._core.tensor import Tensor
from layerkit._core.types import TensorLike
from layerkit.kernels import conv_nd as _knd
from layerkit.primitives import array as _array
from layerkit.primitives import conv as _conv
from layerkit.primitives import elementwise as _ew
from layerkit.primitives import nn as _nn
from layerkit.primitives.conv import _arg, _value
from layerkit.primitives.spatial import same_pads, spatial_arg

__all__ = ["conv1d", "conv3d", "convolution", "conv1d_transpose", "conv3d_transpose",
           "conv_transpose", "separable_conv2d", "max_pool1d", "max_pool3d", "avg_pool1d",
           "avg_pool3d", "max_pool", "avg_pool", "pool"]

IntOrInts = int | Sequence[int]
Padding = str | Sequence[Sequence[int]]

_CHANNELS_LAST = {1: "NWC", 2: "NHWC", 3: "NDHWC"}
_CHANNELS_FIRST = {1: "NCW", 2: "NCHW", 3: "NCDHW"}


# =====================================================================================
# The conv_nd records (forwards in kernels/conv_nd.py)
# =====================================================================================
def _nd_fwd(x, w, strides, pads, dilations):
    return _knd.conv_nd(x, w, strides, pads, dilations)


def _nd_bpi_fwd(g, w, input_shape, strides, pads, dilations):
    return _knd.conv_nd_backprop_input(g, w, input_shape, strides, pads, dilations)


def _nd_bpf_fwd(x, g, filter_shape, strides, pads, dilations):
    return _knd.conv_nd_backprop_filter(x, g, filter_shape, strides, pads, dilations)


_ND, _ND_BPI, _ND_BPF = _conv._conv_family("conv_nd", _nd_fwd, _nd_bpi_fwd, _nd_bpf_fwd)


# =====================================================================================
# Argument checking
# =====================================================================================
def resolve_padding(op: str, padding, sizes, ksize, strides, dilations) -> tuple:
    """'VALID', 'SAME' or explicit pairs (one per axis, batch and channel pairs [0, 0])
    -> (((lo, hi), ...) per spatial axis, output sizes)."""
    rank = len(sizes)
    if isinstance(padding, str) and padding.upper() in ("VALID", "SAME"):
        if padding.upper() == "VALID":
            pads = ((0, 0),) * rank
        else:
            pads = tuple(same_pads(*a) for a in zip(sizes, ksize, strides, dilations))
    else:
        try:
            p = [[int(v) for v in pair] for pair in np.asarray(padding).tolist()]
            ok = len(p) == rank + 2 and all(len(q) == 2 for q in p)
        except (TypeError, ValueError):
            ok = False
        if not ok or p[0] != [0, 0] or p[-1] != [0, 0] or min(min(q) for q in p) < 0:
            raise ValueError(
                f"{op}: padding must be 'SAME', 'VALID' or {rank + 2} [before, after] pairs "
                f"of non-negative ints with [0, 0] for the batch and channel axes; received "
                f"{padding!r}")
        pads = tuple((q[0], q[1]) for q in p[1:-1])
    out = _knd.out_sizes(sizes, ksize, strides, pads, dilations)
    if min(out) < 1:
        eff = tuple((k - 1) * d + 1 for k, d in zip(ksize, dilations))
        raise ValueError(
            f"{op}: the window (effective size {eff}) does not fit in the padded input "
            f"(input {tuple(sizes)}, padding {padding!r}); the output size would be {out}")
    return pads, out


def _check_format(op: str, data_format, rank: int) -> None:
    if data_format not in (None, _CHANNELS_LAST[rank]):
        raise ValueError(
            f"{op}: only data_format='{_CHANNELS_LAST[rank]}' (channels last) is supported; "
            f"received {data_format!r} (transpose {_CHANNELS_FIRST[rank]} input to "
            f"{_CHANNELS_LAST[rank]} first)")


def _check_rank(op: str, what: str, shape: tuple, rank: int | None, layout: str) -> int:
    r = len(shape) - 2
    if (rank is not None and r != rank) or r not in (1, 2, 3):
        want = f"rank {rank + 2}" if rank is not None else "rank 3, 4 or 5"
        raise ValueError(f"{op}: {what} must be {want} ({layout}); received shape {shape}")
    return r


def _groups(op: str, xshape: tuple, wshape: tuple) -> int:
    """Input channels / kernel input channels (TF's implicit groups), checked."""
    cin, cg, f = xshape[-1], wshape[-2], wshape[-1]
    if cg < 1 or cin % cg or f % (cin // cg):
        raise ValueError(
            f"{op}: input has {cin} channels (shape {xshape}) but filters (shape {wshape}) "
            f"take {cg} per group; the input channels must be a multiple of {cg} and the "
            f"{f} filters a multiple of the number of groups")
    return cin // cg


# =====================================================================================
# Dispatch on resolved geometry (shared with the layers)
# =====================================================================================
def _lift(t, axis: int = 1):
    """A rank-1 (N, W, C) input or (K, ...) kernel with a size-1 axis inserted."""
    return _array.expand_dims(t, axis)


def block_diagonal(w, groups: int):
    """The ungrouped (*K, C, F) kernel equivalent to grouped ``w`` (*K, C/G, F): group
    ``g``'s block on the diagonal, zeros elsewhere (differentiable: a broadcast product
    with the identity)."""
    *ks, cg, f = w.shape
    fg = f // groups
    w5 = _array.reshape(w, (*ks, 1, cg, groups, fg))
    eye = np.eye(groups, dtype=w.dtype).reshape(groups, 1, groups, 1)
    return _array.reshape(_ew.multiply(w5, eye), (*ks, groups * cg, f))


def _depthwise_like(w, groups: int, rank: int) -> bool:
    return groups > 1 and w.shape[-2] == 1 and rank <= 2


def conv_resolved(x, w, strides: tuple, pads: tuple, dilations: tuple,
                  groups: int = 1) -> Tensor:
    """Convolution of channels-last ``x`` with ``w`` (*K, C/groups, F) on resolved
    geometry, through the cheapest record: conv2d (rank 1 on an inserted axis, rank 2),
    depthwise_conv2d (one input channel per group) or conv_nd (rank 3). Other grouped
    kernels become block-diagonal ungrouped ones: one efficient GEMM with G times the
    multiply-adds beat per-group GEMMs of F/G columns 1.5-3x at ResNeXt-like sizes
    (G = 2-32) here, and the dense kernel is small."""
    rank = len(strides)
    if rank == 1:
        y = conv_resolved(_lift(x), _lift(w, 0), (1,) + strides, ((0, 0),) + pads,
                          (1,) + dilations, groups)
        return _array.squeeze(y, 1)
    if _depthwise_like(w, groups, rank):
        kh, kw, _, f = w.shape
        wd = _array.reshape(w, (kh, kw, groups, f // groups))
        return apply(_conv._DW, x, wd, strides=strides, pads=pads, dilations=dilations)
    if groups > 1:
        w = block_diagonal(w, groups)
    rec = _conv._CONV if rank == 2 else _ND
    return apply(rec, x, w, strides=strides, pads=pads, dilations=dilations)


def conv_bias_resolved(x, w, bias, strides: tuple, pads: tuple, dilations: tuple,
                       groups: int = 1, relu: bool = False) -> Tensor:
    """``conv_resolved(...) + bias``, then ReLU if ``relu``: one ``fused_conv2d`` record
    for ranks 1 and 2 (the Conv1D/Conv2D layers' path) unless depthwise-like."""
    rank = len(strides)
    if rank <= 2 and not _depthwise_like(w, groups, rank):
        if groups > 1:
            w = block_diagonal(w, groups)
        lift = rank == 1
        args = [_lift(x) if lift else x, _lift(w, 0) if lift else w]
        if bias is not None:
            args.append(bias)
        y = apply(_conv._FUSED_CONV, *args, strides=(1,) * lift + strides,
                  pads=((0, 0),) * lift + pads, dilations=(1,) * lift + dilations,
                  activation="relu" if relu else "linear")[0]
        return _array.squeeze(y, 1) if lift else y
    y = conv_resolved(x, w, strides, pads, dilations, groups)
    if bias is not None:
        y = _ew.add(y, bias)
    return _nn.relu(y) if relu else y


def conv_transpose_resolved(x, w, output_shape: tuple, strides: tuple, pads: tuple,
                            dilations: tuple) -> Tensor:
    """The input gradient of a convolution whose input has ``output_shape``: ``w`` is
    (*K, F_out, C_in) as in ``tf.nn.conv*_transpose``."""
    rank = len(strides)
    if rank == 1:
        n, wd, f = output_shape
        y = apply(_conv._CONV_BPI, _lift(x), _lift(w, 0), input_shape=(n, 1, wd, f),
                  strides=(1,) + strides, pads=((0, 0),) + pads, dilations=(1,) + dilations)
        return _array.squeeze(y, 1)
    if rank == 2:
        return apply(_conv._CONV_BPI, x, w, input_shape=tuple(output_shape), strides=strides,
                     pads=pads, dilations=dilations)
    return apply(_ND_BPI, x, w, input_shape=tuple(output_shape), strides=strides, pads=pads,
                 dilations=dilations)


def depthwise_resolved(x, w, strides: tuple, pads: tuple, dilations: tuple) -> Tensor:
    """Depthwise convolution of rank 1 or 2 (kernel (*K, C, M)) on resolved geometry."""
    if len(strides) == 1:
        y = apply(_conv._DW, _lift(x), _lift(w, 0), strides=(1,) + strides,
                  pads=((0, 0),) + pads, dilations=(1,) + dilations)
        return _array.squeeze(y, 1)
    return apply(_conv._DW, x, w, strides=strides, pads=pads, dilations=dilations)


def pool_resolved(kind: str, x, ksize: tuple, strides: tuple, pads: tuple) -> Tensor:
    """``kind`` ('max' or 'avg') pooling of rank 1-3 channels-last ``x`` on resolved
    geometry (TF semantics: padding never wins a max and is not counted in a mean)."""
    rec = _conv._MAX if kind == "max" else _conv._AVG
    rank = len(ksize)
    if rank == 1:
        y = apply(rec, _lift(x), ksize=(1,) + ksize, strides=(1,) + strides,
                  pads=((0, 0),) + pads)
        return _array.squeeze(y, 1)
    if rank == 2:
        return apply(rec, x, ksize=ksize, strides=strides, pads=pads)
    n, d, h, w, c = x.shape
    hw = apply(rec, _array.reshape(x, (n * d, h, w, c)), ksize=ksize[1:], strides=strides[1:],
               pads=pads[1:])
    _, oh, ow, _ = hw.shape
    y = apply(rec, _array.reshape(hw, (n, d, oh * ow, c)), ksize=(ksize[0], 1),
              strides=(strides[0], 1), pads=(pads[0], (0, 0)))
    return _array.reshape(y, (n, y.shape[1], oh, ow, c))


# =====================================================================================
# Public functions (lk.nn)
# =====================================================================================
def _convolve(op, input, filters, strides, padding, data_format, dilations, rank) -> Tensor:
    xv, wv = _value(input), _value(filters)
    rank = _check_rank(op, "input", xv.shape, rank, "batch, *spatial, channels")
    _check_rank(op, "filters", wv.shape, rank, "*kernel, in_channels, out_channels")
    _check_format(op, data_format, rank)
    groups = _groups(op, xv.shape, wv.shape)
    strides = spatial_arg(op, "strides", strides, rank, 1)
    dilations = spatial_arg(op, "dilations", dilations, rank, 1)
    pads, _ = resolve_padding(op, padding, xv.shape[1:-1], wv.shape[:-2], strides, dilations)
    return conv_resolved(_arg(input, xv), _arg(filters, wv), strides, pads, dilations, groups)


def conv1d(input: TensorLike, filters: TensorLike, stride: IntOrInts, padding: Padding,
           data_format: str = "NWC",
           dilations: IntOrInts | None = None, name: str | None = None) -> Tensor:
    """1-D convolution (cross-correlation) of (N, W, C) ``input`` with (K, C, F) ``filters``.

    ``filters`` of shape (K, C/G, F) convolve G channel groups separately (TensorFlow's
    grouped convolution: F must be a multiple of G).

    Args:
        input: (N, W, C_in) tensor.
        filters: (K, C_in / groups, C_out) tensor.
        stride: int or a list of 1 or 3 ints.
        padding: 'VALID', 'SAME' or explicit [[0, 0], [left, right], [0, 0]].
        data_format: only 'NWC'.
        dilations: int or list like ``stride``.
        name: ignored (TensorFlow compatibility).

    Returns:
        (N, OW, C_out) tensor.

    Raises:
        ValueError: naming the op for a wrong rank, channels that do not divide into
            groups, an unknown padding or a window larger than the padded input.

    Examples:
        >>> import numpy as np, layerkit as lk
        >>> x = np.arange(5, dtype=np.float32).reshape(1, 5, 1)
        >>> lk.nn.conv1d(x, np.ones((2, 1, 1), np.float32), 1, "VALID").numpy()[0, :, 0]
        array([1., 3., 5., 7.], dtype=float32)
    """
    return _convolve("conv1d", input, filters, stride, padding, data_format, dilations, 1)


def conv3d(input: TensorLike, filters: TensorLike, strides: IntOrInts, padding: Padding,
           data_format: str = "NDHWC",
           dilations: IntOrInts | None = None, name: str | None = None) -> Tensor:
    """3-D convolution of (N, D, H, W, C) ``input`` with (KD, KH, KW, C/G, F) ``filters``.

    Args:
        input: (N, D, H, W, C_in) tensor.
        filters: (KD, KH, KW, C_in / groups, C_out) tensor.
        strides: int or a list of 1, 3 or 5 ints ([1, sd, sh, sw, 1]).
        padding: 'VALID', 'SAME' or five explicit [before, after] pairs.
        data_format: only 'NDHWC'.
        dilations: like ``strides``.

    Returns:
        (N, OD, OH, OW, C_out) tensor.

    Raises:
        ValueError: as :func:`conv1d`.
    """
    return _convolve("conv3d", input, filters, strides, padding, data_format, dilations, 3)


def convolution(input: TensorLike, filters: TensorLike, strides: IntOrInts | None = None,
                padding: Padding = "VALID",
                data_format: str | None = None, dilations: IntOrInts | None = None,
                name: str | None = None) -> Tensor:
    """N-D convolution (1, 2 or 3 spatial axes, channels last), chosen by ``input``'s rank.

    Args:
        input: (N, *spatial, C_in) tensor.
        filters: (*kernel, C_in / groups, C_out) tensor.
        strides: int or one per spatial axis (default 1).
        dilations: int or one per spatial axis (default 1).
        padding: 'VALID' (default), 'SAME' or explicit pairs.
        data_format: None or the channels-last name for the rank ('NWC', 'NHWC', 'NDHWC').

    Returns:
        (N, *out_spatial, C_out) tensor.
    """
    return _convolve("convolution", input, filters, strides, padding, data_format, dilations, None)


def _conv_transpose(op, input, filters, output_shape, strides, padding, data_format,
                    dilations, rank) -> Tensor:
    xv, wv = _value(input), _value(filters)
    rank = _check_rank(op, "input", xv.shape, rank, "batch, *spatial, channels")
    _check_rank(op, "filters", wv.shape, rank, "*kernel, out_channels, in_channels")
    _check_format(op, data_format, rank)
    if isinstance(output_shape, Tensor):
        output_shape = output_shape._v
    shape = tuple(int(v) for v in np.asarray(output_shape).reshape(-1).tolist())
    if len(shape) != rank + 2 or min(shape) < 0:
        raise ValueError(f"{op}: output_shape must be {rank + 2} non-negative ints; received "
                         f"{output_shape!r}")
    if xv.shape[-1] != wv.shape[-1] or shape[0] != xv.shape[0] or shape[-1] != wv.shape[-2]:
        raise ValueError(
            f"{op}: input shape {xv.shape}, filters shape {wv.shape} (*kernel, out_channels, "
            f"in_channels) and output_shape {shape} do not agree on batch and channels")
    strides = spatial_arg(op, "strides", strides, rank)
    dilations = spatial_arg(op, "dilations", dilations, rank, 1)
    pads, out = resolve_padding(op, padding, shape[1:-1], wv.shape[:-2], strides, dilations)
    if tuple(out) != tuple(xv.shape[1:-1]):
        raise ValueError(
            f"{op}: output_shape {shape} is inconsistent with input shape {xv.shape}: a "
            f"convolution with strides {strides} and padding {padding!r} maps "
            f"{shape[1:-1]} to {tuple(out)}, not {xv.shape[1:-1]}")
    return conv_transpose_resolved(_arg(input, xv), _arg(filters, wv), shape, strides, pads,
                                   dilations)


def conv1d_transpose(input: TensorLike, filters: TensorLike, output_shape: Sequence[int],
                     strides: IntOrInts,
                     padding: Padding = "SAME", data_format: str = "NWC",
                     dilations: IntOrInts | None = None, name: str | None = None) -> Tensor:
    """Transposed 1-D convolution: the gradient of :func:`conv1d` with respect to its input.

    Args:
        input: (N, W, C_in) tensor.
        filters: (K, C_out, C_in) kernel.
        output_shape: (N, OW, C_out); a :func:`conv1d` with these strides and padding must
            map it back to ``input``'s width.
        strides: as for :func:`conv1d`.
        padding: as for :func:`conv1d`.
        data_format: as for :func:`conv1d`.
        dilations: as for :func:`conv1d`.

    Returns:
        Tensor of shape ``output_shape``.
    """
    return _conv_transpose("conv1d_transpose", input, filters, output_shape, strides, padding,
                           data_format, dilations, 1)


def conv3d_transpose(input: TensorLike, filters: TensorLike, output_shape: Sequence[int],
                     strides: IntOrInts,
                     padding: Padding = "SAME", data_format: str = "NDHWC",
                     dilations: IntOrInts | None = None, name: str | None = None) -> Tensor:
    """Transposed 3-D convolution: the gradient of :func:`conv3d` with respect to its input.

    ``filters`` is (KD, KH, KW, C_out, C_in); other arguments as for
    :func:`conv1d_transpose`.
    """
    return _conv_transpose("conv3d_transpose", input, filters, output_shape, strides, padding,
                           data_format, dilations, 3)


def conv_transpose(input: TensorLike, filters: TensorLike, output_shape: Sequence[int],
                   strides: IntOrInts,
                   padding: Padding = "SAME", data_format: str | None = None,
                   dilations: IntOrInts | None = None, name: str | None = None) -> Tensor:
    """Transposed convolution of rank 1, 2 or 3 (chosen by ``input``'s rank)."""
    return _conv_transpose("conv_transpose", input, filters, output_shape, strides, padding,
                           data_format, dilations, None)


def separable_conv2d(input: TensorLike, depthwise_filter: TensorLike,
                     pointwise_filter: TensorLike, strides: IntOrInts,
                     padding: Padding, data_format: str | None = None,
                     dilations: IntOrInts | None = None, name: str | None = None) -> Tensor:
    """Depthwise 2-D convolution followed by a 1x1 convolution mixing the channels.

    Args:
        input: (N, H, W, C) tensor.
        depthwise_filter: (KH, KW, C, M) kernel (see ``depthwise_conv2d``).
        pointwise_filter: (1, 1, C * M, C_out) kernel.
        strides: of the depthwise step (int, [s], [sh, sw] or [1, sh, sw, 1]).
        padding: of the depthwise step.
        dilations: of the depthwise step.

    Returns:
        (N, OH, OW, C_out) tensor.

    Raises:
        ValueError: for a pointwise kernel that is not (1, 1, C * M, C_out), or as
            ``depthwise_conv2d``.
    """
    op = "separable_conv2d"
    dv, pv = _value(depthwise_filter), _value(pointwise_filter)
    if pv.ndim != 4 or pv.shape[:3] != (1, 1, dv.shape[2] * dv.shape[3]):
        raise ValueError(f"{op}: pointwise_filter must be (1, 1, {dv.shape[2] * dv.shape[3]}, "
                         f"C_out) for a depthwise_filter of shape {dv.shape}; received shape "
                         f"{pv.shape}")
    y = _conv.depthwise_conv2d(input, depthwise_filter, strides, padding, data_format,
                               dilations)
    return apply(_conv._CONV, y, _arg(pointwise_filter, pv), strides=(1, 1),
                 pads=((0, 0), (0, 0)), dilations=(1, 1))


def _pool(op, kind, input, ksize, strides, padding, data_format, rank) -> Tensor:
    xv = _value(input)
    rank = _check_rank(op, "input", xv.shape, rank, "batch, *spatial, channels")
    _check_format(op, data_format, rank)
    if kind == "avg":
        _conv._float_input(op, xv)
    ksize = spatial_arg(op, "ksize", ksize, rank)
    strides = spatial_arg(op, "strides", strides, rank, ksize)
    pads, _ = resolve_padding(op, padding, xv.shape[1:-1], ksize, strides, (1,) * rank)
    if any(lo >= k or hi >= k for (lo, hi), k in zip(pads, ksize)):
        raise ValueError(f"{op}: explicit padding must be smaller than the window {ksize} (a "
                         f"window of only padding has no value); received padding {padding!r}")
    return pool_resolved(kind, _arg(input, xv), ksize, strides, pads)


def max_pool1d(input: TensorLike, ksize: IntOrInts, strides: IntOrInts, padding: Padding,
               data_format: str = "NWC", name: str | None = None) -> Tensor:
    """Max pooling over windows of an (N, W, C) tensor (padding never wins; the gradient
    goes to each window's first maximum).

    Examples:
        >>> import layerkit as lk
        >>> lk.nn.max_pool1d([[[1.0], [3.0], [2.0], [0.0]]], 2, 2, "VALID").numpy()[0, :, 0]
        array([3., 2.], dtype=float32)
    """
    return _pool("max_pool1d", "max", input, ksize, strides, padding, data_format, 1)


def avg_pool1d(input: TensorLike, ksize: IntOrInts, strides: IntOrInts, padding: Padding,
               data_format: str = "NWC", name: str | None = None) -> Tensor:
    """Average pooling over windows of an (N, W, C) float tensor; padded positions are
    not counted (TensorFlow)."""
    return _pool("avg_pool1d", "avg", input, ksize, strides, padding, data_format, 1)


def max_pool3d(input: TensorLike, ksize: IntOrInts, strides: IntOrInts, padding: Padding,
               data_format: str = "NDHWC", name: str | None = None) -> Tensor:
    """Max pooling over (KD, KH, KW) windows of an (N, D, H, W, C) tensor.

    Args:
        input: (N, D, H, W, C) tensor.
        ksize: int or a list of 1, 3 or 5 ints.
        strides: int or a list of 1, 3 or 5 ints.
        padding: 'VALID', 'SAME' or five explicit pairs.
        data_format: only 'NDHWC'.

    Returns:
        (N, OD, OH, OW, C) tensor.
    """
    return _pool("max_pool3d", "max", input, ksize, strides, padding, data_format, 3)


def avg_pool3d(input: TensorLike, ksize: IntOrInts, strides: IntOrInts, padding: Padding,
               data_format: str = "NDHWC", name: str | None = None) -> Tensor:
    """Average pooling over (KD, KH, KW) windows of an (N, D, H, W, C) float tensor
    (padding not counted); arguments as :func:`max_pool3d`."""
    return _pool("avg_pool3d", "avg", input, ksize, strides, padding, data_format, 3)


def max_pool(input: TensorLike, ksize: IntOrInts, strides: IntOrInts, padding: Padding,
             data_format: str | None = None, name: str | None = None) -> Tensor:
    """Max pooling of rank 1, 2 or 3 (chosen by ``input``'s rank; channels last)."""
    return _pool("max_pool", "max", input, ksize, strides, padding, data_format, None)


def avg_pool(input: TensorLike, ksize: IntOrInts, strides: IntOrInts, padding: Padding,
             data_format: str | None = None, name: str | None = None) -> Tensor:
    """Average pooling of rank 1, 2 or 3 (chosen by ``input``'s rank; channels last)."""
    return _pool("avg_pool", "avg", input, ksize, strides, padding, data_format, None)


def pool(input: TensorLike, window_shape: IntOrInts, pooling_type: str,
         strides: IntOrInts | None = None,
         padding: Padding = "VALID", data_format: str | None = None,
         dilations: IntOrInts | None = None, name: str | None = None) -> Tensor:
    """``tf.nn.pool``: 'MAX' or 'AVG' pooling of rank 1, 2 or 3 (channels last).

    Args:
        input: (N, *spatial, C) tensor.
        window_shape: int or one per spatial axis.
        pooling_type: 'MAX' or 'AVG'.
        strides: default 1 (TensorFlow's default for ``pool``, unlike ``max_pool``).
        padding: 'VALID' (default), 'SAME' or explicit pairs.
        dilations: only 1 (dilated pooling is not supported).

    Raises:
        ValueError: for an unknown ``pooling_type`` or a dilation other than 1.
    """
    op = "pool"
    kind = {"MAX": "max", "AVG": "avg"}.get(str(pooling_type).upper())
    if kind is None:
        raise ValueError(f"{op}: pooling_type must be 'MAX' or 'AVG'; received "
                         f"{pooling_type!r}")
    rank = len(_value(input).shape) - 2
    if rank in (1, 2, 3) and spatial_arg(op, "dilations", dilations, rank, 1) != (1,) * rank:
        raise ValueError(f"{op}: only dilations of 1 are supported; received "
                         f"dilations={dilations!r}")
    return _pool(op, kind, input, window_shape, 1 if strides is None else strides, padding,
                 data_format, None)
