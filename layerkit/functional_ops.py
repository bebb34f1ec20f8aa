"""TensorFlow's higher-order functions over the first axis: ``lk.map_fn``, ``lk.scan``,
``lk.foldl``, ``lk.foldr`` and ``lk.vectorized_map``.

They call ``fn`` once per element along axis 0 and stack the results, so eagerly they
are Python loops and a tape records every step (gradients flow, to any order). Inside
``lk.function`` the loop is unrolled while tracing: the length of axis 0 must be known
then (it is, for tensors whose shape the trace fixes). ``elems`` may be a tensor or a
nested structure (tuples, lists, dicts) of tensors with the same first dimension.

Examples:
    >>> import layerkit as lk
    >>> lk.map_fn(lambda x: x * x, lk.constant([1.0, 2.0, 3.0])).numpy().tolist()
    [1.0, 4.0, 9.0]
    >>> lk.scan(lambda acc, x: acc + x, lk.constant([1, 2, 3])).numpy().tolist()
    [1, 3, 6]
    >>> int(lk.foldl(lambda acc, x: acc * x, lk.constant([1, 2, 3, 4])))
    24
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from layerkit._core.convert import convert_to_tensor
from layerkit._core.nest import flatten
from layerkit._core.nest import pack_sequence_as as pack_like
from layerkit._core.tensor import Tensor
from layerkit.primitives import array as _array
from layerkit.primitives import elementwise as _ew

__all__ = ["map_fn", "scan", "foldl", "foldr", "vectorized_map"]


def _tensors_of(elems: Any, op: str) -> tuple[list, int]:
    leaves = [convert_to_tensor(e) if not isinstance(e, Tensor) else e for e in flatten(elems)]
    if not leaves:
        raise ValueError(f"lk.{op}: elems must hold at least one tensor; received {elems!r}")
    sizes = set()
    for t in leaves:
        if t.ndim == 0:
            raise ValueError(f"lk.{op}: elems must have a first axis to iterate over; "
                             f"received a scalar")
        sizes.add(t.shape[0])
    if len(sizes) != 1:
        raise ValueError(f"lk.{op}: every tensor of elems must have the same first "
                         f"dimension; received {sorted(sizes)}")
    return leaves, sizes.pop()


def _element(elems: Any, leaves: list, i: int) -> Any:
    return pack_like(elems, [t[i] for t in leaves])


def _stack(results: list, op: str) -> Any:
    first = results[0]
    flat = [flatten(r) for r in results]
    if any(len(f) != len(flat[0]) for f in flat):
        raise ValueError(f"lk.{op}: fn must return the same structure for every element")
    stacked = [_array.stack([convert_to_tensor(f[j]) for f in flat], axis=0)
               for j in range(len(flat[0]))]
    return pack_like(first, stacked)


def _cast_to(result: Any, signature: Any) -> Any:
    """Cast ``result``'s leaves to the dtypes of ``fn_output_signature`` (dtypes or
    TensorSpecs, in the same structure), as TensorFlow does."""
    if signature is None:
        return result
    sigs = flatten(signature)
    vals = flatten(result)
    if len(sigs) != len(vals):
        raise ValueError(f"lk.map_fn: fn returned {len(vals)} value(s) but "
                         f"fn_output_signature describes {len(sigs)}")
    cast = [_ew.cast(v, getattr(s, "dtype", s)) for v, s in zip(vals, sigs)]
    return pack_like(result, cast)


def map_fn(fn: Callable, elems: Any, dtype: Any = None, parallel_iterations: int | None = None,
           back_prop: bool = True, swap_memory: bool = False, infer_shape: bool = True,
           name: str | None = None, fn_output_signature: Any = None) -> Any:
    """``fn`` applied to each element of ``elems`` along axis 0, results stacked
    (``tf.map_fn``).

    Args:
        fn: called with one element (a tensor, or the structure of ``elems`` with one
            slice of each tensor); returns a tensor or a nested structure of tensors.
        elems: a tensor or a nested structure of tensors sharing their first dimension.
        dtype: TensorFlow's older name for ``fn_output_signature``.
        fn_output_signature: dtypes (or TensorSpecs) of ``fn``'s outputs when they differ
            from ``elems``'s; required when ``elems`` is empty.
        parallel_iterations, back_prop, swap_memory, infer_shape, name: accepted for
            TensorFlow compatibility.

    Raises:
        ValueError: ``elems`` is empty without ``fn_output_signature``, or its tensors'
            first dimensions differ.
    """
    signature = fn_output_signature if fn_output_signature is not None else dtype
    leaves, n = _tensors_of(elems, "map_fn")
    if n == 0:
        if signature is None:
            raise ValueError("lk.map_fn: elems is empty, so fn never runs; pass "
                             "fn_output_signature to give the result's dtype")
        raise ValueError("lk.map_fn: elems is empty; layerkit needs at least one element "
                         "to learn the shape of fn's results")
    results = [_cast_to(fn(_element(elems, leaves, i)), signature) for i in range(n)]
    return _stack(results, "map_fn")


def vectorized_map(fn: Callable, elems: Any, fallback_to_while_loop: bool = True,
                   warn: bool = True) -> Any:
    """``tf.vectorized_map``: the same result as :func:`map_fn` (layerkit runs ``fn``
    per element; NumPy kernels already vectorise within each call)."""
    return map_fn(fn, elems)


def scan(fn: Callable, elems: Any, initializer: Any = None, parallel_iterations: int = 10,
         back_prop: bool = True, swap_memory: bool = False, infer_shape: bool = True,
         reverse: bool = False, name: str | None = None) -> Any:
    """The running accumulation ``acc = fn(acc, x)`` over axis 0, every ``acc`` stacked
    (``tf.scan``).

    Args:
        fn: ``fn(acc, element) -> new acc`` (same structure as ``acc``).
        elems: a tensor or a nested structure of tensors sharing their first dimension.
        initializer: the first ``acc``; None starts from the first element (which is
            then also the first output).
        reverse: scan from the last element to the first (outputs stay in input order).
    """
    leaves, n = _tensors_of(elems, "scan")
    order = list(range(n - 1, -1, -1)) if reverse else list(range(n))
    if initializer is None:
        if n == 0:
            raise ValueError("lk.scan: elems is empty and no initializer was given")
        acc = _element(elems, leaves, order[0])
        outputs, order = [acc], order[1:]
    else:
        acc, outputs = initializer, []
    for i in order:
        acc = fn(acc, _element(elems, leaves, i))
        outputs.append(acc)
    if not outputs:
        raise ValueError("lk.scan: elems is empty, so there is nothing to stack")
    if reverse:
        outputs.reverse()
    return _stack(outputs, "scan")


def foldl(fn: Callable, elems: Any, initializer: Any = None, parallel_iterations: int = 10,
          back_prop: bool = True, swap_memory: bool = False, name: str | None = None) -> Any:
    """``fn(...fn(fn(initializer, x0), x1)..., xn)`` over axis 0 (``tf.foldl``); with no
    initializer the first element starts the accumulation."""
    leaves, n = _tensors_of(elems, "foldl")
    return _fold(fn, elems, leaves, list(range(n)), initializer, "foldl")


def foldr(fn: Callable, elems: Any, initializer: Any = None, parallel_iterations: int = 10,
          back_prop: bool = True, swap_memory: bool = False, name: str | None = None) -> Any:
    """:func:`foldl` from the last element to the first (``tf.foldr``)."""
    leaves, n = _tensors_of(elems, "foldr")
    return _fold(fn, elems, leaves, list(range(n - 1, -1, -1)), initializer, "foldr")


def _fold(fn: Callable, elems: Any, leaves: list, order: list, initializer: Any,
          op: str) -> Any:
    if initializer is None:
        if not order:
            raise ValueError(f"lk.{op}: elems is empty and no initializer was given")
        acc, order = _element(elems, leaves, order[0]), order[1:]
    else:
        acc = initializer
    for i in order:
        acc = fn(acc, _element(elems, leaves, i))
    return acc
