"""TensorFlow's rearranging ops built from reshapes, transposes and indexing (so their
gradients are those of the pieces): ``lk.nn.space_to_depth`` / ``depth_to_space``,
``lk.strided_slice``, ``lk.shape_n``, ``lk.nn.zero_fraction``, the element-wise max /
min scatters ``lk.tensor_scatter_nd_max`` / ``tensor_scatter_nd_min``, and the counting
op ``lk.histogram_fixed_width``.

    >>> import layerkit as lk
    >>> x = lk.reshape(lk.range(16.0), (1, 4, 4, 1))
    >>> lk.nn.space_to_depth(x, 2).shape
    (1, 2, 2, 4)
    >>> bool(lk.reduce_all(lk.nn.depth_to_space(lk.nn.space_to_depth(x, 2), 2) == x))
    True
    >>> lk.strided_slice(lk.range(10), [1], [8], [3]).numpy().tolist()
    [1, 4, 7]
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from layerkit._core.convert import convert_to_tensor
from layerkit._core.op import Op, apply
from layerkit._core.tensor import Tensor
from layerkit._core.types import DTypeLike, TensorLike
from layerkit.primitives import array as _array
from layerkit.primitives import elementwise as _ew
from layerkit.primitives import reduce as _reduce
from layerkit.primitives.registry import export
from layerkit.primitives.selection import _nd_args, shape


def _blocks(x: Tensor, block_size: int, data_format: str, op: str) -> tuple:
    if data_format not in ("NHWC", "NCHW"):
        raise ValueError(f"lk.nn.{op}: data_format must be 'NHWC' or 'NCHW', received "
                         f"{data_format!r}")
    bs = int(block_size)
    if bs < 2:
        raise ValueError(f"lk.nn.{op}: block_size must be >= 2, received {block_size}")
    if x.ndim != 4:
        raise ValueError(f"lk.nn.{op}: expected a 4-D tensor, received shape "
                         f"{tuple(x.shape)}")
    return bs, (x if data_format == "NHWC" else _array.transpose(x, [0, 2, 3, 1]))


@export("nn")
def space_to_depth(input: TensorLike, block_size: int, data_format: str = "NHWC",  # noqa: A002
                   name: str | None = None) -> Tensor:
    """Move ``block_size x block_size`` spatial blocks into the channel axis (TF's
    order: output channel ``(row_in_block * block_size + col_in_block) * C + c``).

    Raises:
        ValueError: not 4-D, a height/width not divisible by ``block_size``, or a bad
            ``data_format``.
    """
    x = convert_to_tensor(input)
    bs, x = _blocks(x, block_size, data_format, "space_to_depth")
    b, h, w, c = x.shape
    if h % bs or w % bs:
        raise ValueError(f"lk.nn.space_to_depth: height {h} and width {w} must be "
                         f"divisible by block_size {bs}")
    y = _array.reshape(x, (b, h // bs, bs, w // bs, bs, c))
    y = _array.reshape(_array.transpose(y, [0, 1, 3, 2, 4, 5]), (b, h // bs, w // bs,
                                                                 bs * bs * c))
    return y if data_format == "NHWC" else _array.transpose(y, [0, 3, 1, 2])


@export("nn")
def depth_to_space(input: TensorLike, block_size: int, data_format: str = "NHWC",  # noqa: A002
                   name: str | None = None) -> Tensor:
    """The inverse of :func:`space_to_depth`.

    Raises:
        ValueError: not 4-D, channels not divisible by ``block_size ** 2``, or a bad
            ``data_format``.
    """
    x = convert_to_tensor(input)
    bs, x = _blocks(x, block_size, data_format, "depth_to_space")
    b, h, w, c = x.shape
    if c % (bs * bs):
        raise ValueError(f"lk.nn.depth_to_space: channels {c} must be divisible by "
                         f"block_size**2 = {bs * bs}")
    y = _array.reshape(x, (b, h, w, bs, bs, c // (bs * bs)))
    y = _array.reshape(_array.transpose(y, [0, 1, 3, 2, 4, 5]), (b, h * bs, w * bs,
                                                                 c // (bs * bs)))
    return y if data_format == "NHWC" else _array.transpose(y, [0, 3, 1, 2])


def _ints(v, what: str) -> list[int]:
    arr = np.asarray(v.numpy() if isinstance(v, Tensor) else v)
    if arr.ndim != 1 or arr.dtype.kind not in "iu":
        raise ValueError(f"lk.strided_slice: {what} must be a 1-D list of ints, received {v!r}")
    return [int(i) for i in arr]


@export("lk")
def strided_slice(input_: TensorLike, begin: TensorLike, end: TensorLike,
                  strides: TensorLike | None = None, begin_mask: int = 0, end_mask: int = 0,
                  ellipsis_mask: int = 0, new_axis_mask: int = 0, shrink_axis_mask: int = 0,
                  var: Any = None, name: str | None = None) -> Tensor:
    """``input_[begin:end:strides]`` per axis, with TensorFlow's bit masks (bit ``i``
    of ``begin_mask``/``end_mask`` ignores that bound, ``shrink_axis_mask`` takes the
    single index ``begin[i]``, ``new_axis_mask`` inserts an axis, ``ellipsis_mask``
    marks an ``...``). Differentiable, as indexing is.
    """
    b, e = _ints(begin, "begin"), _ints(end, "end")
    s = [1] * len(b) if strides is None else _ints(strides, "strides")
    if not len(b) == len(e) == len(s):
        raise ValueError(f"lk.strided_slice: begin, end and strides must have the same "
                         f"length, received {len(b)}, {len(e)}, {len(s)}")
    key: list = []
    for i, (lo, hi, st) in enumerate(zip(b, e, s)):
        bit = 1 << i
        if ellipsis_mask & bit:
            key.append(Ellipsis)
        elif new_axis_mask & bit:
            key.append(None)
        elif shrink_axis_mask & bit:
            key.append(lo)
        else:
            key.append(slice(None if begin_mask & bit else lo,
                             None if end_mask & bit else hi, st))
    return _array.getitem(convert_to_tensor(input_), tuple(key))


@export("lk")
def shape_n(input: Sequence[TensorLike], out_type: DTypeLike = np.int32,
            name: str | None = None) -> list:  # noqa: A002
    """The shapes of several tensors, as a list of 1-D integer tensors (``tf.shape_n``)."""
    return [shape(t, out_type=out_type) for t in input]


@export("nn")
def zero_fraction(value: TensorLike, name: str | None = None) -> Tensor:
    """The fraction of elements of ``value`` that are zero, as a float32 scalar."""
    v = convert_to_tensor(value)
    return _reduce.reduce_mean(_ew.cast(_ew.equal(v, 0), np.float32))


def _scatter_extreme_fwd(t, idx, u, ufunc):
    from layerkit.primitives.array import _gather_nd_key

    out = t.copy()
    getattr(np, ufunc).at(out, _gather_nd_key(t.shape, idx, 0), u)
    return out


def _scatter_extreme_vjp(g, ins, out, needs, ufunc):
    # The upstream gradient goes wherever the result came from: the original entry where
    # it survived, the update that won otherwise (both on a tie).
    t, idx, u = ins
    gt = _ew.where(_ew.equal(out, t), g, 0) if needs[0] else None
    gu = None
    if needs[2]:
        gu = _ew.where(_ew.equal(_array.gather_nd(out, idx), u), _array.gather_nd(g, idx), 0)
    return gt, None, gu


_SCATTER_EXTREME = Op("tensor_scatter_nd_extreme", _scatter_extreme_fwd, _scatter_extreme_vjp)


@export("lk")
def tensor_scatter_nd_max(tensor: TensorLike, indices: TensorLike, updates: TensorLike,
                          name: str | None = None) -> Tensor:
    """``tensor`` with each indexed entry replaced by the max of itself and its updates
    (repeated indices take the max of all); differentiable in ``tensor`` and ``updates``.
    """
    t = convert_to_tensor(tensor)
    idx, upd = _nd_args(indices, updates, t.shape, "tensor_scatter_nd_max")
    return apply(_SCATTER_EXTREME, t, idx, _ew.cast(upd, t.dtype), ufunc="maximum")


@export("lk")
def tensor_scatter_nd_min(tensor: TensorLike, indices: TensorLike, updates: TensorLike,
                          name: str | None = None) -> Tensor:
    """As :func:`tensor_scatter_nd_max` with the min."""
    t = convert_to_tensor(tensor)
    idx, upd = _nd_args(indices, updates, t.shape, "tensor_scatter_nd_min")
    return apply(_SCATTER_EXTREME, t, idx, _ew.cast(upd, t.dtype), ufunc="minimum")


def _histogram_fwd(values, value_range, nbins, dtype):
    lo, hi = float(value_range[0]), float(value_range[1])
    if not hi > lo:
        raise ValueError(f"lk.histogram_fixed_width: value_range must satisfy "
                         f"value_range[0] < value_range[1], received {[lo, hi]}")
    v = np.asarray(values, np.float64).ravel()
    # TF: bins of width (hi - lo) / nbins; values below lo count in the first bin, at or
    # above hi in the last.
    idx = np.clip(np.floor((v - lo) / (hi - lo) * nbins), 0, nbins - 1).astype(np.int64)
    return np.bincount(idx, minlength=nbins).astype(dtype)


_HISTOGRAM = Op("histogram_fixed_width", _histogram_fwd)


@export("lk")
def histogram_fixed_width(values: TensorLike, value_range: TensorLike, nbins: int = 100,
                          dtype: DTypeLike = np.int32, name: str | None = None) -> Tensor:
    """Counts of ``values`` in ``nbins`` equal bins spanning ``value_range`` (TF's
    ``histogram_fixed_width``: values outside the range count in the end bins). No
    gradient (a count).

    >>> import layerkit as lk
    >>> lk.histogram_fixed_width([-1.0, 0.0, 1.5, 2.0, 5.0], [0.0, 5.0], nbins=5).numpy()
    array([2, 1, 1, 0, 1], dtype=int32)
    """
    if int(nbins) < 1:
        raise ValueError(f"lk.histogram_fixed_width: nbins must be >= 1, received {nbins}")
    from layerkit._core.convert import as_dtype

    return apply(_HISTOGRAM, convert_to_tensor(values), convert_to_tensor(value_range),
                 nbins=int(nbins), dtype=np.dtype(as_dtype(dtype)))
