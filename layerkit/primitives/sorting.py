"""Sorting and searching records: sort, argsort, top_k, unique, searchsorted.

``sort`` and ``top_k`` gather along an axis with a ``take_along_axis`` record pair (the
adjoint scatter-adds, as for ``gather``), so their gradients route each upstream value
back to the element it came from and are differentiable again. Index outputs are int32,
as in TensorFlow; ties keep the lower index first (TF's ``top_k`` order).
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from layerkit._core.convert import as_dtype, convert_to_tensor
from layerkit._core.op import Op, apply
from layerkit._core.tensor import Tensor
from layerkit._core.types import DTypeLike, TensorLike
from layerkit.primitives import array as _array
from layerkit.primitives import elementwise as _ew
from layerkit.primitives.creation import axis_arg, int_arg
from layerkit.primitives.registry import export, top_level


def _along_key(shape, idx, axis):
    # Open index grids on every other axis: out[..., i, ...] = x[..., idx[..., i, ...], ...].
    n = len(shape)
    return tuple(idx if j == axis else
                 np.arange(idx.shape[j]).reshape((1,) * j + (-1,) + (1,) * (n - j - 1))
                 for j in range(n))


_TAKE_ALONG, _TAKE_ALONG_GRAD = _array._index_pair("take_along_axis", _along_key)


def _order(v: np.ndarray, axis: int, descending: bool) -> np.ndarray:
    """Stable argsort; descending keeps ties in index order (``~`` reverses ints/bools
    without overflowing, ``-`` floats)."""
    if descending:
        v = -v if v.dtype.kind in "fc" else ~v
    return np.argsort(v, axis=axis, kind="stable")


def _direction(direction: str, op: str) -> bool:
    if direction not in ("ASCENDING", "DESCENDING"):
        raise ValueError(f"{op}: direction must be 'ASCENDING' or 'DESCENDING', "
                         f"received {direction!r}")
    return direction == "DESCENDING"


_ARGSORT = Op("argsort", lambda x, axis, descending:
              _order(x, axis, descending).astype(np.int32))


def _sortable(values, op: str) -> Tensor:
    x = convert_to_tensor(values)
    if x.ndim == 0:
        raise ValueError(f"{op}: expected a tensor of rank >= 1, received a scalar")
    if x.dtype.kind not in "biuf":
        raise TypeError(f"{op}: expected a real numeric tensor, received dtype {x.dtype}")
    return x


@export("lk", "math")
def argsort(values: TensorLike, axis: int = -1, direction: str = "ASCENDING", stable: bool = False,
            name: str | None = None) -> Tensor:
    """Indices (int32) that sort ``values`` along ``axis`` (TF ``tf.argsort``).

    The sort is always stable (ties keep their order), which also satisfies
    ``stable=False``. Not differentiable.

    Raises:
        ValueError: a scalar input, a bad axis or direction.
        TypeError: a non-numeric input.
    """
    x = _sortable(values, "argsort")
    a = axis_arg(axis, x.ndim, "argsort")
    return apply(_ARGSORT, x, axis=a, descending=_direction(direction, "argsort"))


@export("lk", "math")
def sort(values: TensorLike, axis: int = -1, direction: str = "ASCENDING",
         name: str | None = None) -> Tensor:
    """``values`` sorted along ``axis`` (TF ``tf.sort``); differentiable (the gradient of
    each output element goes to the input element it came from).

        >>> import layerkit as lk
        >>> lk.sort([3.0, 1.0, 2.0], direction="DESCENDING").numpy()
        array([3., 2., 1.], dtype=float32)

    Raises:
        ValueError: a scalar input, a bad axis or direction.
    """
    x = _sortable(values, "sort")
    a = axis_arg(axis, x.ndim, "sort")
    idx = apply(_ARGSORT, x, axis=a, descending=_direction(direction, "sort"))
    return apply(_TAKE_ALONG, x, idx, axis=a)


class TopKV2(NamedTuple):
    """``top_k``'s result: ``values`` and their int32 ``indices``."""

    values: Tensor
    indices: Tensor


_TOP_K_IDX = Op("top_k_indices", lambda x, k: _order(x, -1, True)[..., :k].astype(np.int32))


@export("math", "nn")
def top_k(input: TensorLike, k: int = 1, sorted: bool = True, index_type: DTypeLike = "int32",
          name: str | None = None) -> TopKV2:
    """The ``k`` largest entries along the last axis and their indices (TF ``top_k``).

    Ties put the lower index first. Values are differentiable (the gradient goes to the
    chosen entries); indices are not. ``sorted=False`` also returns them in descending
    order (TF allows any order then).

        >>> import layerkit as lk
        >>> r = lk.math.top_k([1.0, 5.0, 3.0], k=2)
        >>> r.values.numpy(), r.indices.numpy()
        (array([5., 3.], dtype=float32), array([1, 2], dtype=int32))

    Raises:
        ValueError: ``k`` negative or larger than the last axis, or a scalar input.
    """
    x = _sortable(input, "top_k")
    k = int_arg(k, "top_k", "k")
    if not 0 <= k <= x.shape[-1]:
        raise ValueError(f"top_k: k must be in [0, {x.shape[-1]}] (the size of the last "
                         f"axis of a tensor of shape {x.shape}), received {k}")
    idx = apply(_TOP_K_IDX, x, k=k)
    values = apply(_TAKE_ALONG, x, idx, axis=x.ndim - 1)
    dt = as_dtype(index_type)
    return TopKV2(values, idx if dt == np.int32 else _ew.cast(idx, dt))


@export("math")
def in_top_k(targets: TensorLike, predictions: TensorLike, k: int,
             name: str | None = None) -> Tensor:
    """Whether each ``targets[i]`` is among the ``k`` largest of ``predictions[i]``.

    Ties count as in TensorFlow: an entry is in the top k when fewer than ``k`` entries
    of its row are strictly larger.

    Raises:
        ValueError: ``predictions`` is not rank 2 or ``targets`` not rank 1 of its length.
    """
    p = convert_to_tensor(predictions)
    t = convert_to_tensor(targets)
    if p.ndim != 2 or t.shape != p.shape[:1]:
        raise ValueError(f"in_top_k: expected predictions of rank 2 and targets of shape "
                         f"(batch,), received {p.shape} and {t.shape}")
    return apply(_IN_TOP_K, t, p, k=int_arg(k, "in_top_k", "k"))


def _in_top_k_fwd(t, p, k):
    chosen = np.take_along_axis(p, t.astype(np.intp)[:, None], axis=1)
    return (p > chosen).sum(axis=1) < k


_IN_TOP_K = Op("in_top_k", _in_top_k_fwd)


class Unique(NamedTuple):
    """``unique``'s result: the distinct values ``y`` and ``idx`` with ``x == y[idx]``."""

    y: Tensor
    idx: Tensor


def _unique_fwd(x, dtype):
    values, first, inverse = np.unique(x, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")  # TF: in order of first occurrence
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    return values[order], rank[inverse.reshape(-1)].astype(dtype)


_UNIQUE = Op("unique", _unique_fwd, num_outputs=2)


@export("lk")
def unique(x: TensorLike, out_idx: DTypeLike = "int32", name: str | None = None) -> Unique:
    """Distinct values of a 1-D ``x`` in order of first occurrence, and for each element
    of ``x`` the index of its value (TF ``tf.unique``). Not differentiable.

        >>> import layerkit as lk
        >>> y, idx = lk.unique([1, 1, 2, 4, 4, 4, 7, 8, 8])
        >>> y.numpy().tolist(), idx.numpy().tolist()
        ([1, 2, 4, 7, 8], [0, 0, 1, 2, 2, 2, 3, 4, 4])

    Raises:
        ValueError: ``x`` is not 1-D.
    """
    t = convert_to_tensor(x)
    if t.ndim != 1:
        raise ValueError(f"unique: expected a 1-D tensor, received shape {t.shape}")
    dt = as_dtype(out_idx)
    if dt is None or dt.kind not in "iu":
        raise TypeError(f"unique: out_idx must be an integer dtype, received {out_idx!r}")
    y, idx = apply(_UNIQUE, t, dtype=dt)
    return Unique(y, idx)


def _searchsorted_fwd(seq, values, side, dtype):
    if seq.ndim == 1:
        return np.searchsorted(seq, values, side=side).astype(dtype)
    rows_s = seq.reshape(-1, seq.shape[-1])
    rows_v = values.reshape(-1, values.shape[-1])
    out = np.stack([np.searchsorted(s, v, side=side) for s, v in zip(rows_s, rows_v)])
    return out.reshape(values.shape).astype(dtype)


_SEARCHSORTED = Op("searchsorted", _searchsorted_fwd)


@export("lk")
def searchsorted(sorted_sequence: TensorLike, values: TensorLike, side: str = "left",
                 out_type: DTypeLike = "int32",
                 name: str | None = None) -> Tensor:
    """Insertion indices of ``values`` into ``sorted_sequence`` along the last axis
    (TF ``tf.searchsorted``: leading axes of both are batch axes and must match).

        >>> import layerkit as lk
        >>> lk.searchsorted([0.0, 1.0, 2.0], [1.0, 1.5], side="right").numpy().tolist()
        [2, 2]

    Raises:
        ValueError: ``side`` is not ``'left'``/``'right'``, or the batch axes differ.
    """
    s, v = convert_to_tensor(sorted_sequence), convert_to_tensor(values)
    if side not in ("left", "right"):
        raise ValueError(f"searchsorted: side must be 'left' or 'right', received {side!r}")
    if s.ndim == 0 or v.ndim == 0 or (s.ndim > 1 and s.shape[:-1] != v.shape[:-1]) or (
            s.ndim == 1 and v.ndim != 1):
        raise ValueError(f"searchsorted: sorted_sequence {s.shape} and values {v.shape} "
                         f"must have rank >= 1 and the same leading (batch) axes")
    return apply(_SEARCHSORTED, s, v, side=side, dtype=as_dtype(out_type))


__all__ = top_level(__name__)
