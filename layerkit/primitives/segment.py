"""Segment reductions: ``segment_*`` (sorted ids) and ``unsorted_segment_*`` (TF names).

``unsorted_segment_sum(data, ids, n)`` is the adjoint of ``gather(·, ids)``: it reuses
the ``gather_grad`` record (scatter-add), so its gradient is a gather and both are
differentiable to any order. Mean and sqrt_n divide the sum by per-segment counts;
max/min/prod are records whose rules are written with these ops (max/min split the
gradient among tied extrema, prod is exact at zeros to first order, as TF's rule).

``segment_ids`` may have any shape that is a prefix of ``data``'s shape. Empty segments
give 0 (sum, mean, sqrt_n, and the sorted ``segment_max``/``segment_min``), 1 (prod), and
the dtype's lowest/highest value for ``unsorted_segment_max``/``min``, as in TensorFlow.
Ids out of range raise (TF drops negative ids of the unsorted ops instead). The sorted
``segment_*`` ops read the ids to count the segments, so inside ``lk.function`` (where
that count would be baked into the graph) they raise; use ``unsorted_segment_*`` with an
explicit ``num_segments`` there.
"""
from __future__ import annotations

import numpy as np

from layerkit._core.convert import convert_to_tensor
from layerkit._core.op import Op, apply
from layerkit._core.tensor import Tensor
from layerkit._core.types import TensorLike
from layerkit.primitives import array as _array
from layerkit.primitives import creation as _creation
from layerkit.primitives import elementwise as _ew
from layerkit.primitives import math_ops as _math
from layerkit.primitives.creation import int_arg
from layerkit.primitives.registry import export, top_level


def _args(data, segment_ids, op: str) -> tuple[Tensor, np.ndarray]:
    x = convert_to_tensor(data)
    ids = convert_to_tensor(segment_ids)
    if ids.dtype.kind not in "iu":
        raise TypeError(f"{op}: segment_ids must be integers, received dtype {ids.dtype}")
    if ids.ndim == 0 or x.shape[:ids.ndim] != ids.shape:
        raise ValueError(f"{op}: segment_ids shape {ids.shape} must be a prefix of data "
                         f"shape {x.shape}")
    return x, ids


def _num_sorted(ids: Tensor, op: str) -> int:
    v = np.asarray(ids.numpy())
    if ids.ndim != 1:
        raise ValueError(f"{op}: segment_ids must be 1-D, received shape {ids.shape}")
    if v.size and (np.any(np.diff(v) < 0) or v[0] < 0):
        raise ValueError(f"{op}: segment_ids must be sorted and non-negative, received "
                         f"{v.tolist()[:10]}")
    return int(v[-1]) + 1 if v.size else 0


def _out_shape(x: Tensor, ids: Tensor, n: int) -> tuple:
    return (n,) + tuple(x.shape[ids.ndim:])


def _sum(x: Tensor, ids: Tensor, n: int) -> Tensor:
    return apply(_array._GATHER_GRAD, x, ids, shape=_out_shape(x, ids, n), axis=0,
                 batch_dims=0)


def _counts(ids: Tensor, n: int, x: Tensor) -> Tensor:
    """Elements per segment (ops, so a traced graph recounts), shaped to broadcast
    against the segment result."""
    c = _sum(_creation.ones_like(ids, x.dtype), ids, n)
    return _array.reshape(c, (n,) + (1,) * (x.ndim - ids.ndim))


# ---- max / min / prod records ------------------------------------------------------
def _extreme_fwd(ufunc, fill):
    def forward(x, ids, n, empty):
        # ufunc.at would wrap negative ids around
        _array._index_array(f"unsorted_segment_{ufunc.__name__[:3]}", ids, n, 0)
        out = np.full((n,) + x.shape[ids.ndim:], fill(x.dtype), x.dtype)
        ufunc.at(out, ids, x)
        if empty is not None:
            out[np.bincount(ids.reshape(-1), minlength=n)[:n] == 0] = empty
        return out
    return forward


def _extreme_vjp(g, ins, y, needs, n, empty):
    x, ids = ins
    hit = _ew.cast(_ew.equal(x, _array.gather(y, ids)), x.dtype)  # tied extrema share
    ties = _sum(hit, ids, n)
    share = _math.divide_no_nan(g, ties)
    return (_ew.multiply(_array.gather(share, ids), hit), None)


def _lowest(dt):
    return -np.inf if dt.kind == "f" else np.iinfo(dt).min


def _highest(dt):
    return np.inf if dt.kind == "f" else np.iinfo(dt).max


_SEG_MAX = Op("unsorted_segment_max", _extreme_fwd(np.maximum, _lowest), _extreme_vjp,
              reads=(0, 1, "out"))
_SEG_MIN = Op("unsorted_segment_min", _extreme_fwd(np.minimum, _highest), _extreme_vjp,
              reads=(0, 1, "out"))


def _prod_fwd(x, ids, n):
    _array._index_array("unsorted_segment_prod", ids, n, 0)
    out = np.ones((n,) + x.shape[ids.ndim:], x.dtype)
    np.multiply.at(out, ids, x)
    return out


def _prod_vjp(g, ins, y, needs, n):
    # TF's rule: d prod / d x_i is the product of the other elements of x_i's segment:
    # y / x_i where x_i != 0; the product of the non-zeros where x_i is the only zero; 0
    # where the segment has another zero.
    x, ids = ins
    zero = _ew.equal(x, 0)
    zeros_in = _sum(_ew.cast(zero, x.dtype), ids, n)
    safe = _ew.where(zero, 1, x)
    nonzero_prod = apply(_SEG_PROD, safe, ids, n=n)
    others_nonzero = _ew.where(_ew.greater(zeros_in, 1), 0, nonzero_prod)
    partial = _ew.where(zero, _array.gather(others_nonzero, ids),
                        _ew.divide(_array.gather(y, ids), safe))
    return (_ew.multiply(partial, _array.gather(g, ids)), None)


_SEG_PROD = Op("unsorted_segment_prod", _prod_fwd, _prod_vjp, reads=(0, 1, "out"))


# ---- public functions --------------------------------------------------------------
@export("math")
def unsorted_segment_sum(data: TensorLike, segment_ids: TensorLike, num_segments: TensorLike,
                         name: str | None = None) -> Tensor:
    """Sum of the ``data`` slices of each segment id in ``[0, num_segments)``.

        >>> import layerkit as lk
        >>> lk.math.unsorted_segment_sum([1.0, 2.0, 3.0], [1, 0, 1], 2).numpy()
        array([2., 4.], dtype=float32)

    Raises:
        TypeError: non-integer ids. ValueError: ids not a prefix of data's shape.
        IndexError: an id outside ``[0, num_segments)``.
    """
    x, ids = _args(data, segment_ids, "unsorted_segment_sum")
    return _sum(x, ids, int_arg(num_segments, "unsorted_segment_sum", "num_segments"))


@export("math")
def unsorted_segment_mean(data: TensorLike, segment_ids: TensorLike, num_segments: TensorLike,
                          name: str | None = None) -> Tensor:
    """Mean of each segment (0 for an empty segment); see ``unsorted_segment_sum``."""
    x, ids = _args(data, segment_ids, "unsorted_segment_mean")
    n = int_arg(num_segments, "unsorted_segment_mean", "num_segments")
    return _math.divide_no_nan(_sum(x, ids, n), _counts(ids, n, x))


@export("math")
def unsorted_segment_sqrt_n(data: TensorLike, segment_ids: TensorLike, num_segments: TensorLike,
                            name: str | None = None) -> Tensor:
    """Sum of each segment divided by the square root of its size (0 when empty)."""
    x, ids = _args(data, segment_ids, "unsorted_segment_sqrt_n")
    n = int_arg(num_segments, "unsorted_segment_sqrt_n", "num_segments")
    return _math.divide_no_nan(_sum(x, ids, n), _ew.sqrt(_counts(ids, n, x)))


@export("math")
def unsorted_segment_max(data: TensorLike, segment_ids: TensorLike, num_segments: TensorLike,
                         name: str | None = None) -> Tensor:
    """Maximum of each segment (the dtype's lowest value when empty, as in TF)."""
    x, ids = _args(data, segment_ids, "unsorted_segment_max")
    n = int_arg(num_segments, "unsorted_segment_max", "num_segments")
    return apply(_SEG_MAX, x, ids, n=n, empty=None)


@export("math")
def unsorted_segment_min(data: TensorLike, segment_ids: TensorLike, num_segments: TensorLike,
                         name: str | None = None) -> Tensor:
    """Minimum of each segment (the dtype's highest value when empty, as in TF)."""
    x, ids = _args(data, segment_ids, "unsorted_segment_min")
    n = int_arg(num_segments, "unsorted_segment_min", "num_segments")
    return apply(_SEG_MIN, x, ids, n=n, empty=None)


@export("math")
def unsorted_segment_prod(data: TensorLike, segment_ids: TensorLike, num_segments: TensorLike,
                          name: str | None = None) -> Tensor:
    """Product of each segment (1 when empty)."""
    x, ids = _args(data, segment_ids, "unsorted_segment_prod")
    n = int_arg(num_segments, "unsorted_segment_prod", "num_segments")
    return apply(_SEG_PROD, x, ids, n=n)


@export("math")
def segment_sum(data: TensorLike, segment_ids: TensorLike, name: str | None = None) -> Tensor:
    """Sum of each segment of sorted 1-D ``segment_ids`` (``max(ids) + 1`` segments).

        >>> import layerkit as lk
        >>> lk.math.segment_sum([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], [0, 0, 1]).numpy()
        array([[4., 6.],
               [5., 6.]], dtype=float32)

    Raises:
        ValueError: ids that are not 1-D, sorted and non-negative.
    """
    x, ids = _args(data, segment_ids, "segment_sum")
    return _sum(x, ids, _num_sorted(ids, "segment_sum"))


@export("math")
def segment_mean(data: TensorLike, segment_ids: TensorLike, name: str | None = None) -> Tensor:
    """Mean of each segment of sorted ``segment_ids`` (0 for an empty one)."""
    x, ids = _args(data, segment_ids, "segment_mean")
    n = _num_sorted(ids, "segment_mean")
    return _math.divide_no_nan(_sum(x, ids, n), _counts(ids, n, x))


@export("math")
def segment_sqrt_n(data: TensorLike, segment_ids: TensorLike, name: str | None = None) -> Tensor:
    """Sum of each segment of sorted ``segment_ids`` over the square root of its size."""
    x, ids = _args(data, segment_ids, "segment_sqrt_n")
    n = _num_sorted(ids, "segment_sqrt_n")
    return _math.divide_no_nan(_sum(x, ids, n), _ew.sqrt(_counts(ids, n, x)))


@export("math")
def segment_max(data: TensorLike, segment_ids: TensorLike, name: str | None = None) -> Tensor:
    """Maximum of each segment of sorted ``segment_ids`` (0 for an empty one, as in TF)."""
    x, ids = _args(data, segment_ids, "segment_max")
    return apply(_SEG_MAX, x, ids, n=_num_sorted(ids, "segment_max"), empty=0)


@export("math")
def segment_min(data: TensorLike, segment_ids: TensorLike, name: str | None = None) -> Tensor:
    """Minimum of each segment of sorted ``segment_ids`` (0 for an empty one, as in TF)."""
    x, ids = _args(data, segment_ids, "segment_min")
    return apply(_SEG_MIN, x, ids, n=_num_sorted(ids, "segment_min"), empty=0)


@export("math")
def segment_prod(data: TensorLike, segment_ids: TensorLike, name: str | None = None) -> Tensor:
    """Product of each segment of sorted ``segment_ids`` (1 for an empty one)."""
    x, ids = _args(data, segment_ids, "segment_prod")
    return apply(_SEG_PROD, x, ids, n=_num_sorted(ids, "segment_prod"))


__all__ = top_level(__name__)
