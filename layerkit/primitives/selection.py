"""Shape queries and TF's selection/placement ops: shape, size, rank, identity,
boolean_mask, scatter_nd, tensor_scatter_nd_update/add, roll, repeat, meshgrid,
sequence_mask.

Most are compositions of indexing records (``getitem``, ``gather``, the ``gather_nd``
pair), so they are differentiable to any order with no rule of their own:
``scatter_nd`` *is* the adjoint record of ``gather_nd``; ``repeat`` is a ``gather`` of
repeated positions. ``roll``, ``identity`` and ``tensor_scatter_nd_update`` are records.
Shape queries return int32 tensors, as in TensorFlow.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from layerkit._core import context
from layerkit._core.convert import as_dtype, convert_to_tensor
from layerkit._core.op import Op, apply, wrap
from layerkit._core.tensor import Tensor
from layerkit._core.types import DTypeLike, ShapeLike, TensorLike
from layerkit._core.variable import Variable
from layerkit.primitives import array as _array
from layerkit.primitives import creation as _creation
from layerkit.primitives import elementwise as _ew
from layerkit.primitives.creation import axis_arg, int_arg, shape_arg
from layerkit.primitives.registry import export, top_level

# ---- shape queries -------------------------------------------------------------------
# Records used only while tracing with None dimensions (else the answer is a constant).
_SHAPE = Op("shape", lambda x, dtype: np.array(np.shape(x), dtype))
_SIZE = Op("size", lambda x, dtype: np.array(np.size(x), dtype))

def _int_type(out_type, op: str) -> np.dtype:
    dt = as_dtype(out_type)
    if dt not in (np.dtype(np.int32), np.dtype(np.int64)):
        raise TypeError(f"{op}: out_type must be int32 or int64, received {out_type!r}")
    return dt


@export("lk")
def shape(input: TensorLike, out_type: DTypeLike = "int32", name: str | None = None) -> Tensor:
    """The shape of ``input`` as a 1-D int32 tensor (TF ``tf.shape``).

        >>> import layerkit as lk
        >>> lk.shape(lk.zeros((2, 3))).numpy()
        array([2, 3], dtype=int32)
    """
    dt = _int_type(out_type, "shape")
    if context.RECORDERS and context.dynamic_dims(input) is not None:
        return apply(_SHAPE, input, dtype=dt)  # sizes of None dimensions: at run time
    return wrap(np.array(convert_to_tensor(input).shape, dt))


def element_count(x, axis: int | None = None, dtype="float32"):
    """How many elements ``x`` has (or its size along ``axis``): a Python int, or, while
    tracing with ``None`` dimensions that it depends on, a scalar tensor of ``dtype``
    computed when the graph runs (library code dividing by a batch size uses this, so the
    graph holds no trace-time size)."""
    dims = context.dynamic_dims(x) if context.RECORDERS else None
    if dims and (any(dims) if axis is None else dims[axis]):
        n = size(x) if axis is None else _array.getitem(shape(x), axis)
        return _ew.cast(n, dtype)
    s = x.shape
    return math.prod(s) if axis is None else s[axis]


@export("lk")
def size(input: TensorLike, out_type: DTypeLike = "int32", name: str | None = None) -> Tensor:
    """The number of elements of ``input`` as an int32 scalar tensor (TF ``tf.size``)."""
    dt = _int_type(out_type, "size")
    if context.RECORDERS and context.dynamic_dims(input) is not None:
        return apply(_SIZE, input, dtype=dt)
    return wrap(np.array(convert_to_tensor(input).size, dt))


@export("lk")
def rank(input: TensorLike, name: str | None = None) -> Tensor:
    """The number of axes of ``input`` as an int32 scalar tensor (TF ``tf.rank``)."""
    return wrap(np.array(convert_to_tensor(input).ndim, np.int32))


_IDENTITY = Op("identity", lambda x: x, lambda g, ins, y, needs: (g,), "{0}", reads=())


@export("lk")
def identity(input: TensorLike, name: str | None = None) -> Tensor:
    """A tensor with the value of ``input`` (a Variable's current value is copied);
    its gradient passes through unchanged."""
    return apply(_IDENTITY, input)


# ---- masks and scatters --------------------------------------------------------------
@export("lk")
def boolean_mask(tensor: TensorLike, mask: TensorLike, axis: int = 0,
                 name: str | None = None) -> Tensor:
    """The entries of ``tensor`` where the k-D bool ``mask`` is True (TF semantics: the
    mask covers axes ``axis .. axis+k-1``, which collapse into one). Differentiable.

        >>> import layerkit as lk
        >>> lk.boolean_mask([[1, 2], [3, 4], [5, 6]], [True, False, True]).numpy().tolist()
        [[1, 2], [5, 6]]

    Raises:
        ValueError: the mask's shape does not match those axes of ``tensor``.
    """
    t, m = convert_to_tensor(tensor), convert_to_tensor(mask)
    if m.dtype != np.bool_:
        raise TypeError(f"boolean_mask: mask must be bool, received dtype {m.dtype}")
    a = axis_arg(axis, t.ndim, "boolean_mask")
    if m.ndim == 0 or t.shape[a:a + m.ndim] != m.shape:
        raise ValueError(f"boolean_mask: mask of shape {m.shape} does not match axes "
                         f"{a}..{a + m.ndim - 1} of a tensor of shape {t.shape}")
    return _array.getitem(t, (slice(None),) * a + (m,))


def _nd_args(indices, updates, shape: tuple, op: str) -> tuple[Tensor, Tensor]:
    idx, upd = convert_to_tensor(indices), convert_to_tensor(updates)
    if idx.dtype.kind not in "iu":
        raise TypeError(f"{op}: indices must be integers, received dtype {idx.dtype}")
    k = idx.shape[-1] if idx.ndim else 0
    want = tuple(idx.shape[:-1]) + tuple(shape[k:])
    if idx.ndim == 0 or not 1 <= k <= len(shape) or upd.shape != want:
        raise ValueError(f"{op}: indices of shape {idx.shape} and updates of shape "
                         f"{upd.shape} do not fit a tensor of shape {shape} (updates must "
                         f"have shape indices.shape[:-1] + shape[indices.shape[-1]:] = {want})")
    return idx, upd


@export("lk")
def scatter_nd(indices: TensorLike, updates: TensorLike, shape: ShapeLike | TensorLike,
               name: str | None = None) -> Tensor:
    """Zeros of ``shape`` with ``updates`` added at ``indices`` (repeated indices sum),
    TF ``tf.scatter_nd``; the adjoint of ``gather_nd``, differentiable in ``updates``.

        >>> import layerkit as lk
        >>> lk.scatter_nd([[1], [3]], [9.0, 7.0], [5]).numpy()
        array([0., 9., 0., 7., 0.], dtype=float32)
    """
    shp = shape_arg(shape, "scatter_nd")
    idx, upd = _nd_args(indices, updates, shp, "scatter_nd")
    return apply(_array._GATHER_ND_GRAD, upd, idx, shape=shp, batch_dims=0)


@export("lk")
def tensor_scatter_nd_add(tensor: TensorLike, indices: TensorLike, updates: TensorLike,
                          name: str | None = None) -> Tensor:
    """``tensor`` with ``updates`` added at ``indices`` (TF); differentiable in both."""
    t = convert_to_tensor(tensor)
    idx, upd = _nd_args(indices, updates, t.shape, "tensor_scatter_nd_add")
    return _ew.add(t, apply(_array._GATHER_ND_GRAD, upd, idx, shape=t.shape, batch_dims=0))


def _update_fwd(t, idx, u):
    out = t.copy()
    out[_array._gather_nd_key(t.shape, idx, 0)] = u
    return out


def _update_vjp(g, ins, y, needs, ):
    t, idx, u = ins
    hit = apply(_array._GATHER_ND_GRAD, _creation.ones_like(u, g.dtype), idx,
                shape=t.shape, batch_dims=0)
    return (_ew.where(_ew.greater(hit, 0), 0, g) if needs[0] else None, None,
            _array.gather_nd(g, idx) if needs[2] else None)


_SCATTER_UPDATE = Op("tensor_scatter_nd_update", _update_fwd, _update_vjp, reads=(1,))


@export("lk")
def tensor_scatter_nd_update(tensor: TensorLike, indices: TensorLike, updates: TensorLike,
                             name: str | None = None) -> Tensor:
    """``tensor`` with the entries at ``indices`` replaced by ``updates`` (TF).

        >>> import layerkit as lk
        >>> lk.tensor_scatter_nd_update([1, 2, 3, 4], [[0], [2]], [10, 30]).numpy().tolist()
        [10, 2, 30, 4]

    With repeated indices the last update wins. Gradients: ``tensor`` gets the upstream
    gradient except at the replaced entries, ``updates`` the gathered upstream gradient.
    """
    t = convert_to_tensor(tensor)
    idx, upd = _nd_args(indices, updates, t.shape, "tensor_scatter_nd_update")
    return apply(_SCATTER_UPDATE, t, idx, _ew.cast(upd, t.dtype))


# ---- roll / repeat / meshgrid / sequence_mask -------------------------------------------
def _roll_vjp(g, ins, y, needs, shift, axis):
    return (apply(_ROLL, g, shift=tuple(-s for s in shift), axis=axis),)


_ROLL = Op("roll", lambda x, shift, axis: np.roll(x, shift, axis), _roll_vjp, reads=())


@export("lk")
def roll(input: TensorLike, shift: TensorLike, axis: int | Sequence[int],
         name: str | None = None) -> Tensor:
    """Elements shifted cyclically by ``shift`` along ``axis`` (ints or matching lists).

        >>> import layerkit as lk
        >>> lk.roll([0, 1, 2, 3, 4], shift=2, axis=0).numpy().tolist()
        [3, 4, 0, 1, 2]
    """
    x = convert_to_tensor(input)
    shifts = [shift] if np.ndim(shift) == 0 else list(np.asarray(shift).reshape(-1))
    axes = [axis] if np.ndim(axis) == 0 else list(np.asarray(axis).reshape(-1))
    if len(shifts) != len(axes):
        raise ValueError(f"roll: shift {shift!r} and axis {axis!r} must have equal lengths")
    return apply(_ROLL, x, shift=tuple(int_arg(s, "roll", "shift") for s in shifts),
                 axis=tuple(axis_arg(a, x.ndim, "roll") for a in axes))


@export("lk", numpy=np.repeat)
def repeat(input: TensorLike, repeats: TensorLike, axis: int | None = None,
           name: str | None = None) -> Tensor:
    """Each element (or slice along ``axis``) repeated ``repeats`` times (TF/NumPy
    ``repeat``; ``axis=None`` flattens first). Differentiable (a gather).

        >>> import layerkit as lk
        >>> lk.repeat([1, 2], [2, 3], axis=0).numpy().tolist()
        [1, 1, 2, 2, 2]
    """
    x = convert_to_tensor(input)
    if axis is None:
        x, a = _array.reshape(x, (-1,)), 0
    else:
        a = axis_arg(axis, x.ndim, "repeat")
    r = np.asarray(repeats.numpy() if isinstance(repeats, Tensor) else repeats)
    if r.dtype.kind not in "iu" or r.ndim > 1 or np.any(r < 0):
        raise ValueError(f"repeat: repeats must be non-negative integers, received {repeats!r}")
    try:
        positions = np.repeat(np.arange(x.shape[a]), r)
    except ValueError:
        raise ValueError(f"repeat: {r.size} repeats for an axis of size {x.shape[a]}") from None
    return _array.gather(x, positions, axis=a)


@export("lk")
def meshgrid(*args: TensorLike, indexing: str = "xy", name: str | None = None) -> list:
    """Coordinate grids from 1-D tensors (TF/NumPy ``meshgrid``; ``'xy'`` swaps the
    first two output axes, ``'ij'`` does not). Differentiable.

        >>> import layerkit as lk
        >>> [g.numpy().tolist() for g in lk.meshgrid([1, 2, 3], [4, 5])]
        [[[1, 2, 3], [1, 2, 3]], [[4, 4, 4], [5, 5, 5]]]
    """
    if indexing not in ("xy", "ij"):
        raise ValueError(f"meshgrid: indexing must be 'xy' or 'ij', received {indexing!r}")
    xs = [_array.reshape(convert_to_tensor(a), (-1,)) for a in args]
    sizes = [x.shape[0] for x in xs]
    n = len(xs)
    if indexing == "xy" and n >= 2:
        sizes[0], sizes[1] = sizes[1], sizes[0]
    out = []
    for i, x in enumerate(xs):
        pos = (1 - i if i < 2 else i) if indexing == "xy" and n >= 2 else i
        shaped = _array.reshape(x, tuple(-1 if j == pos else 1 for j in range(n)))
        out.append(_array.broadcast_to(shaped, tuple(sizes)))
    return out


@export("lk")
def sequence_mask(lengths: TensorLike, maxlen: TensorLike | None = None,
                  dtype: DTypeLike = "bool", name: str | None = None) -> Tensor:
    """``mask[..., j] = j < lengths[...]`` with a new last axis of size ``maxlen``
    (default: the largest length), as TF ``tf.sequence_mask``.

        >>> import layerkit as lk
        >>> lk.sequence_mask([1, 3], 4).numpy().astype(int).tolist()
        [[1, 0, 0, 0], [1, 1, 1, 0]]
    """
    n = convert_to_tensor(lengths)
    if maxlen is None:
        maxlen = int(np.max(n.numpy(), initial=0))
    m = int_arg(maxlen, "sequence_mask", "maxlen")
    mask = _ew.less(wrap(np.arange(m, dtype=n.dtype)), _array.expand_dims(n, -1))
    return mask if as_dtype(dtype) == np.bool_ else _ew.cast(mask, dtype)


# ---- small TF helpers --------------------------------------------------------------------
@export("lk")
def is_tensor(x: object) -> bool:
    """Whether ``x`` is a layerkit Tensor (or Variable), as TF ``tf.is_tensor``."""
    return isinstance(x, Tensor)


@export("lk")
def ensure_shape(x: TensorLike, shape: ShapeLike | None, name: str | None = None) -> Tensor:
    """``x`` unchanged if its shape matches ``shape`` (None entries match any size).

    Raises:
        ValueError: the shapes differ (names both), as TF's check fails.
    """
    t = convert_to_tensor(x)
    want = None if shape is None else [None if d is None or d == -1 else int(d) for d in shape]
    if want is not None and (len(want) != t.ndim or any(
            w is not None and w != d for w, d in zip(want, t.shape))):
        raise ValueError(f"ensure_shape: expected shape {tuple(want)}, received {t.shape}")
    return t


@export("lk")
def get_static_value(tensor: object, partial: bool = False) -> np.ndarray:
    """The NumPy value of ``tensor`` (eager tensors always have one), or the value itself
    for non-tensors, as TF ``tf.get_static_value``."""
    return tensor.numpy() if isinstance(tensor, Tensor) else np.asarray(tensor)


@export("lk")
def broadcast_static_shape(shape_x: ShapeLike, shape_y: ShapeLike) -> tuple:
    """The broadcast of two shapes (NumPy rules), as a tuple.

    Raises:
        ValueError: the shapes do not broadcast (names both).
    """
    sx: tuple[Any, ...] = tuple(shape_x)
    sy: tuple[Any, ...] = tuple(shape_y)
    try:
        return np.broadcast_shapes(sx, sy)
    except ValueError:
        raise ValueError(f"broadcast_static_shape: shapes {sx} and "
                         f"{sy} do not broadcast") from None


@export("lk")
def broadcast_dynamic_shape(shape_x: TensorLike, shape_y: TensorLike) -> Tensor:
    """The broadcast of two 1-D shape tensors, as an int32 tensor (TF)."""
    sx = [int(d) for d in np.asarray(convert_to_tensor(shape_x).numpy()).reshape(-1)]
    sy = [int(d) for d in np.asarray(convert_to_tensor(shape_y).numpy()).reshape(-1)]
    return wrap(np.array(broadcast_static_shape(sx, sy), np.int32))


@export("lk")
def unravel_index(indices: TensorLike, dims: TensorLike, name: str | None = None) -> Tensor:
    """Flat indices into coordinates of an array of shape ``dims``: shape
    ``(len(dims),) + indices.shape`` (TF ``tf.unravel_index``)."""
    idx = convert_to_tensor(indices)
    shp = tuple(int(d) for d in np.asarray(convert_to_tensor(dims).numpy()).reshape(-1))
    return apply(_UNRAVEL, idx, dims=shp)


_UNRAVEL = Op("unravel_index", lambda i, dims: np.stack(np.unravel_index(i, dims)).astype(i.dtype))


__all__ = top_level(__name__)


# ---- Variable.scatter_nd_* (tf.Variable's sparse updates) --------------------------------
def _variable_scatter(method: str, combine):
    def update(self: Variable, indices: TensorLike, updates: TensorLike,
               name: str | None = None) -> Variable:
        self.assign(combine(self.value(), indices, updates))
        return self
    update.__name__ = update.__qualname__ = method
    update.__doc__ = (f"``tf.Variable.{method}``: assign the result of "
                      f"``lk.tensor_{method}(variable, indices, updates)``; returns the "
                      f"variable.")
    return update


def _scatter_nd_sub(tensor, indices, updates):
    return tensor_scatter_nd_add(tensor, indices, _ew.negative(convert_to_tensor(updates)))


for _name, _combine in (("scatter_nd_update", tensor_scatter_nd_update),
                        ("scatter_nd_add", tensor_scatter_nd_add),
                        ("scatter_nd_sub", _scatter_nd_sub)):
    setattr(Variable, _name, _variable_scatter(_name, _combine))
