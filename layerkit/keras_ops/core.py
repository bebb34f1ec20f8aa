"""keras.ops core functions: conversion, shapes, casts, scatters and control flow.

Control flow runs as Python loops (eager semantics). Inside ``lk.function`` the loop
bounds and predicates must be Python values, except ``cond`` and ``switch``, which
evaluate every branch and select the result with ``where`` when the predicate is a
traced tensor.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

import layerkit as lk
from layerkit._core.nest import flatten
from layerkit._core.nest import pack_sequence_as as pack_like
from layerkit._core.tensor import Tensor
from layerkit._core.types import DTypeLike, ShapeLike, TensorLike
from layerkit.autodiff.function.trace import TracingError
from layerkit.keras_ops._prims import dtype_arg, run, scatter_add, t

__all__ = ["convert_to_tensor", "convert_to_numpy", "is_tensor", "shape", "dtype", "cast",
           "saturate_cast", "stop_gradient", "custom_gradient", "cond", "switch",
           "fori_loop", "while_loop", "scan", "associative_scan", "map",
           "vectorized_map", "scatter", "scatter_update", "slice", "slice_update",
           "unstack"]


def convert_to_tensor(x: TensorLike, dtype: DTypeLike = None, sparse: Any = None,
                      ragged: Any = None) -> Tensor:
    """``x`` as a Tensor (Keras: Python ints become int32, floats float32).

    Args:
        x: a Tensor, Variable, NumPy array, Python scalar or nested list.
        dtype: optional target dtype ("float32", "int32", ...).
        sparse: accepted for compatibility; layerkit tensors are dense, so a
            true value raises ``ValueError``.
        ragged: accepted for compatibility; layerkit tensors are dense, so a
            true value raises ``ValueError``.

    Examples:
        >>> from layerkit import keras_ops as ops
        >>> ops.convert_to_tensor([1, 2]).dtype
        dtype('int32')
    """
    if sparse or ragged:
        raise ValueError("keras_ops.convert_to_tensor: sparse and ragged tensors are not "
                         f"supported (received sparse={sparse}, ragged={ragged})")
    return t(x, dtype_arg(dtype, "convert_to_tensor"))


def convert_to_numpy(x: TensorLike) -> np.ndarray:
    """``x`` as a NumPy array (a copy for Tensors)."""
    return x.numpy() if isinstance(x, Tensor) else np.asarray(x)


def is_tensor(x: TensorLike) -> bool:
    """Whether ``x`` is a layerkit Tensor (Variables included)."""
    return isinstance(x, Tensor)


def shape(x: TensorLike) -> tuple:
    """The static shape of ``x`` as a tuple of Python ints.

    Inside ``lk.function`` shapes are static too (each new shape traces once), so the
    tuple never holds ``None``.
    """
    return tuple(int(d) for d in (x.shape if isinstance(x, Tensor) else np.shape(x)))


def dtype(x: TensorLike) -> str:
    """The dtype name of ``x`` ("float32", "int32", ...), as Keras returns it."""
    return t(x).dtype.name


def cast(x: TensorLike, dtype: DTypeLike) -> Tensor:
    """``x`` converted to ``dtype`` (float to int truncates towards zero)."""
    return lk.cast(t(x), dtype_arg(dtype, "cast"))


def saturate_cast(x: TensorLike, dtype: DTypeLike) -> Tensor:
    """Cast with values clipped to the target dtype's range first (no wrap-around)."""
    target = dtype_arg(dtype, "saturate_cast")
    x = t(x)
    if target.kind in "iub" and x.dtype.kind in "iuf":
        info = np.iinfo(target) if target.kind in "iu" else None
        if info is not None:
            lo, hi = float(info.min), float(info.max)
            if x.dtype.kind == "f":
                # The largest (smallest) float of x's dtype inside the integer range, so
                # that the cast cannot overflow.
                hi_f = np.asarray(hi, x.dtype)
                if float(hi_f) > hi:
                    hi_f = np.nextafter(hi_f, np.asarray(0, x.dtype))
                lo_f = np.asarray(lo, x.dtype)
                if float(lo_f) < lo:
                    lo_f = np.nextafter(lo_f, np.asarray(0, x.dtype))
                x = lk.clip_by_value(x, float(lo_f), float(hi_f))
            else:
                src = np.iinfo(x.dtype)
                x = lk.clip_by_value(x, max(int(info.min), int(src.min)),
                                     min(int(info.max), int(src.max)))
    return lk.cast(x, target)


def stop_gradient(variable: TensorLike) -> Tensor:
    """``variable`` with no gradient flowing back through it."""
    return lk.stop_gradient(t(variable))


def custom_gradient(f: Callable) -> Callable:
    """Decorator: ``f`` returns ``(y, grad_fn)``; ``grad_fn(upstream)`` gives the input
    gradients (Keras's positional ``upstream`` convention; see ``lk.custom_gradient``)."""
    return lk.custom_gradient(f)


def _select(pred, a, b):
    fa, fb = flatten(a), flatten(b)
    if len(fa) != len(fb):
        raise ValueError("keras_ops.cond: both branches must return the same structure; "
                         f"received {len(fa)} and {len(fb)} leaves")
    out = [lk.where(pred, t(x), t(y)) for x, y in zip(fa, fb)]
    return pack_like(a, out)


def _traced_bool(pred):
    """``(True, bool)`` for a concrete predicate, ``(False, tensor)`` while tracing."""
    try:
        return True, bool(pred)
    except TracingError:
        return False, lk.cast(t(pred), "bool")


def cond(pred: Any, true_fn: Callable, false_fn: Callable) -> Any:
    """``true_fn()`` if ``pred`` else ``false_fn()``.

    Eagerly only the chosen branch runs. Inside ``lk.function`` a traced ``pred`` runs
    both branches (same structure and shapes required) and selects with ``where``.
    """
    known, p = _traced_bool(pred)
    if known:
        return true_fn() if p else false_fn()
    return _select(p, true_fn(), false_fn())


def switch(index: Any, branches: Any, *operands: Any) -> Any:
    """``branches[index](*operands)``, with ``index`` clipped to the valid range."""
    if not branches:
        raise ValueError("keras_ops.switch: branches must not be empty")
    try:
        i = int(index)
    except TracingError:
        idx = lk.clip_by_value(lk.cast(t(index), "int32"), 0, len(branches) - 1)
        outs = [b(*operands) for b in branches]
        res = outs[-1]
        for k in range(len(outs) - 2, -1, -1):
            res = _select(lk.equal(idx, k), outs[k], res)
        return res
    return branches[min(max(i, 0), len(branches) - 1)](*operands)


def fori_loop(lower: int, upper: int, body_fun: Callable, init_val: Any) -> Any:
    """``val = body_fun(i, val)`` for ``i`` in ``range(lower, upper)``; returns ``val``."""
    val = init_val
    for i in range(int(lower), int(upper)):
        val = body_fun(i, val)
    return val


def while_loop(cond: Callable, body: Callable, loop_vars: Any,
               maximum_iterations: Any = None) -> Any:
    """Run ``loop_vars = body(*loop_vars)`` while ``cond(*loop_vars)``.

    A tuple or list of loop variables is passed positionally; a single value is passed
    as is. Stops after ``maximum_iterations`` iterations if given. The predicate must be
    concrete (eager; inside ``lk.function`` only Python-valued predicates work).
    """
    packed = isinstance(loop_vars, (tuple, list))
    vars_ = loop_vars
    n = 0
    while maximum_iterations is None or n < maximum_iterations:
        if not bool(cond(*vars_) if packed else cond(vars_)):
            break
        vars_ = body(*vars_) if packed else body(vars_)
        if packed and not isinstance(vars_, (tuple, list)):
            vars_ = (vars_,)
        n += 1
    if packed:
        return type(loop_vars)(vars_)
    return vars_


def _leading(xs, who: str) -> int:
    leaves = flatten(xs)
    sizes = {shape(v)[0] for v in leaves}
    if len(sizes) != 1:
        raise ValueError(f"keras_ops.{who}: all inputs need the same leading dimension, "
                         f"received {sorted(sizes)}")
    return sizes.pop()


def _stack_structs(items: list):
    if not items:
        return None
    first = items[0]
    leaves = [flatten(x) for x in items]
    if not leaves[0]:
        return first
    stacked = [lk.stack([t(v[k]) for v in leaves], 0) for k in range(len(leaves[0]))]
    return pack_like(first, stacked)


def scan(f: Callable, init: Any, xs: TensorLike | None = None, length: int | None = None,
         reverse: bool = False, unroll: int = 1) -> Any:
    """Loop ``carry, y = f(carry, x)`` over the leading axis of ``xs``.

    Returns ``(final_carry, stacked_ys)`` (``ys`` stacked on a new axis 0, in input
    order even when ``reverse``). ``xs=None`` needs ``length`` and calls ``f(carry,
    None)``.
    """
    if xs is None:
        if length is None:
            raise ValueError("keras_ops.scan: pass xs or length")
        n = int(length)
    else:
        n = _leading(xs, "scan")
        if length is not None and int(length) != n:
            raise ValueError(f"keras_ops.scan: length={length} does not match the leading "
                             f"dimension {n} of xs")
    order = range(n - 1, -1, -1) if reverse else range(n)
    flat = None if xs is None else [t(v) for v in flatten(xs)]
    carry = init
    ys = [None] * n
    for i in order:
        x = None if flat is None else pack_like(xs, [v[i] for v in flat])
        carry, ys[i] = f(carry, x)
    if n == 0 or ys[0] is None:
        return carry, None
    return carry, _stack_structs(ys)


def associative_scan(f: Callable, elems: TensorLike, reverse: bool = False, axis: int = 0) -> Any:
    """Inclusive scan with the associative ``f`` along ``axis`` (a sequential loop)."""
    flat = [t(v) for v in flatten(elems)]
    n = shape(flat[0])[axis]
    parts = [lk.unstack(v, axis=axis) for v in flat]
    order = list(range(n - 1, -1, -1)) if reverse else list(range(n))
    out: list[Any] = [None] * n
    acc = None
    for i in order:
        cur = pack_like(elems, [p[i] for p in parts])
        acc = cur if acc is None else f(acc, cur)
        out[i] = flatten(acc)
    stacked = [lk.stack([o[k] for o in out], axis=axis) for k in range(len(flat))]
    return pack_like(elems, stacked)


def map(f: Callable, xs: TensorLike) -> Any:  # noqa: A001 - Keras's name
    """``f`` applied to each slice of ``xs`` along axis 0, results stacked."""
    n = _leading(xs, "map")
    flat = [t(v) for v in flatten(xs)]
    return _stack_structs([f(pack_like(xs, [v[i] for v in flat])) for i in range(n)])


def vectorized_map(function: Callable, elements: Any) -> Any:
    """``function`` on each slice of ``elements`` along axis 0, stacked (a loop)."""
    return map(function, elements)


def _index_array(indices, who: str) -> Tensor:
    idx = t(indices)
    if idx.dtype.kind not in "iu":
        raise TypeError(f"keras_ops.{who}: indices must be integers, received {idx.dtype}")
    return idx


def scatter(indices: TensorLike, values: Any, shape: ShapeLike) -> Tensor:
    """Zeros of ``shape`` with ``values`` added at ``indices`` (duplicates add up).

    ``indices`` has shape ``(..., k)`` indexing the first ``k`` axes of the output.
    Differentiable with respect to ``values``.
    """
    idx = _index_array(indices, "scatter")
    return scatter_add(idx, t(values), tuple(shape))


def _last_writers(idx: np.ndarray, shape: tuple) -> np.ndarray:
    """1 for each index row that is the last one to name its position, else 0."""
    k = idx.shape[-1]
    rows = idx.reshape(-1, k)
    keys = np.ravel_multi_index(tuple(rows.T), shape[:k], mode="wrap")
    last = np.zeros(len(keys), np.int8)
    _, first_in_reversed = np.unique(keys[::-1], return_index=True)
    last[len(keys) - 1 - first_in_reversed] = 1
    return last.reshape(idx.shape[:-1])


def _scatter_reduce(x, idx, upd, ufunc):
    out = x.copy()
    ufunc.at(out, tuple(np.moveaxis(idx, -1, 0)), upd)
    return out


_REDUCTIONS = {"max": np.maximum, "min": np.minimum, "mul": np.multiply}


def scatter_update(inputs: Any, indices: TensorLike, updates: TensorLike,
                   reduction: str | None = None) -> Tensor:
    """``inputs`` with the entries at ``indices`` replaced by ``updates``.

    Args:
        inputs: the tensor to update.
        indices: ``(..., k)`` integer positions in the first ``k`` axes of ``inputs``.
        updates: the new values, shape ``indices.shape[:-1] + inputs.shape[k:]``.
        reduction: ``None`` (replace; the last of duplicated indices wins), ``"add"``,
            ``"max"``, ``"min"`` or ``"mul"`` (combined with the existing values).
            ``None`` and ``"add"`` are differentiable; the others have no gradient.
    """
    x = t(inputs)
    idx = _index_array(indices, "scatter_update")
    upd = lk.cast(t(updates), x.dtype)
    if reduction == "add":
        return x + scatter_add(idx, upd, x.shape)
    if reduction in _REDUCTIONS:
        return run("scatter_" + reduction, lambda a, i, u, how: _scatter_reduce(
            a, i, u, _REDUCTIONS[how]), x, idx, upd, how=reduction)
    if reduction is not None:
        raise ValueError(f"keras_ops.scatter_update: reduction must be None, 'add', 'max', "
                         f"'min' or 'mul', received {reduction!r}")
    last = run("scatter_last_writers", lambda i, shape: _last_writers(i, shape), idx,
               shape=tuple(x.shape))
    keep = lk.reshape(lk.cast(last, x.dtype), list(last.shape) + [1] * (upd.ndim - last.ndim))
    written = scatter_add(idx, upd * keep, x.shape)
    hit = scatter_add(idx, lk.ones(upd.shape, "float32"), x.shape)
    return lk.where(hit > 0, written, x)


def slice(inputs: Any, start_indices: Sequence[int],
          shape: Sequence[int]) -> Tensor:  # noqa: A001 - Keras's name
    """The block of ``inputs`` at ``start_indices`` with the given ``shape``."""
    return lk.slice(t(inputs), [int(s) for s in start_indices], [int(s) for s in shape])


def slice_update(inputs: Any, start_indices: Any, updates: TensorLike) -> Tensor:
    """``inputs`` with the block at ``start_indices`` replaced by ``updates``."""
    x = t(inputs)
    u = lk.cast(t(updates), x.dtype)
    starts = [int(s) for s in start_indices]
    if len(starts) != x.ndim or u.ndim != x.ndim:
        raise ValueError(f"keras_ops.slice_update: start_indices {starts} and updates "
                         f"shape {u.shape} must match the rank of inputs {x.shape}")
    pads = []
    for s, n, m in zip(starts, x.shape, u.shape):
        if s < 0 or s + m > n:
            raise ValueError(f"keras_ops.slice_update: a block of shape {u.shape} at "
                             f"{starts} does not fit in inputs of shape {x.shape}")
        pads.append([s, n - s - m])
    mask = np.pad(np.ones(u.shape, bool), pads)
    return lk.where(mask, lk.pad(u, pads), x)


def unstack(x: TensorLike, num: int | None = None, axis: int = 0) -> list:
    """The slices of ``x`` along ``axis`` as a list."""
    return lk.unstack(t(x), num=num, axis=axis)
