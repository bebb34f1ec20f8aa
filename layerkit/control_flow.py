"""TensorFlow's functional control flow: ``lk.cond``, ``lk.case``, ``lk.switch_case``,
``lk.while_loop`` and ``lk.TensorArray``.

Eagerly they are Python control flow: only the chosen branch runs, a loop runs until its
predicate is false, and a tape records the ops that ran, so gradients flow through them
(to any order). Inside ``lk.function``:

* a predicate or branch index that is a Python value (or a tensor computed from
  constants) picks the branch at trace time, as Python would;
* a *traced* predicate or index runs every branch and selects the results with
  ``lk.where`` (differentiable). Branches must then return the same structure with
  broadcast-compatible shapes, and side effects of every branch (``assign``, prints)
  happen on each call: keep such branches pure, or decide the branch outside;
* ``while_loop`` needs a predicate whose value is known while tracing (a Python bound, a
  loop counter that starts from a constant); a predicate on traced data raises the
  tracer's clear error naming the line. TensorFlow's AutoGraph rewrite of Python
  ``while`` statements is not done.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from layerkit._core.tensor import Tensor
from layerkit._core.types import DTypeLike, TensorLike
from layerkit.autodiff.function.trace import TracingError
from layerkit.keras_ops.core import _select, _traced_bool

__all__ = ["cond", "case", "switch_case", "while_loop", "TensorArray"]


def cond(pred: Any, true_fn: Callable | None = None, false_fn: Callable | None = None,
         name: str | None = None) -> Any:
    """``true_fn()`` if ``pred`` is true, else ``false_fn()`` (``tf.cond``).

    Args:
        pred: a scalar bool (Python value or Tensor).
        true_fn, false_fn: callables without arguments returning tensors or nested
            structures of them.
        name: accepted for TensorFlow compatibility.

    Raises:
        TypeError: a branch is missing or not callable.

    Examples:
        >>> import layerkit as lk
        >>> x = lk.constant(3.0)
        >>> float(lk.cond(x > 2.0, lambda: x * 2.0, lambda: x - 1.0))
        6.0
    """
    for label, fn in (("true_fn", true_fn), ("false_fn", false_fn)):
        if not callable(fn):
            raise TypeError(f"lk.cond: {label} must be callable; received {fn!r}")
    assert true_fn is not None and false_fn is not None  # checked above (for mypy)
    known, p = _traced_bool(pred)
    if known:
        return true_fn() if p else false_fn()
    return _select(p, true_fn(), false_fn())


def case(pred_fn_pairs: Any, default: Callable | None = None, exclusive: bool = False,
         strict: bool = False, name: str | None = None) -> Any:
    """The result of the first callable whose predicate is true, else ``default()``
    (``tf.case``).

    Args:
        pred_fn_pairs: a list of ``(predicate, callable)`` pairs (or a dict).
        default: called when no predicate holds; required unless a predicate is
            certainly true.
        exclusive: check that at most one predicate is true (eagerly).
        strict, name: accepted for TensorFlow compatibility.

    Raises:
        ValueError: no predicate holds and there is no ``default``, or ``exclusive`` and
            more than one holds.

    Examples:
        >>> import layerkit as lk
        >>> x = lk.constant(5)
        >>> int(lk.case([(x < 3, lambda: lk.constant(0)), (x < 10, lambda: lk.constant(1))],
        ...             default=lambda: lk.constant(2)))
        1
    """
    pairs = list(pred_fn_pairs.items() if isinstance(pred_fn_pairs, dict) else pred_fn_pairs)
    for i, pair in enumerate(pairs):
        if not (isinstance(pair, (tuple, list)) and len(pair) == 2 and callable(pair[1])):
            raise TypeError(f"lk.case: entry {i} must be a (predicate, callable) pair; "
                            f"received {pair!r}")
    resolved = [(_traced_bool(p), fn) for p, fn in pairs]
    if all(known for (known, _), _ in resolved):
        hits = [fn for (_, p), fn in resolved if p]
        if exclusive and len(hits) > 1:
            raise ValueError(f"lk.case: exclusive=True but {len(hits)} predicates are true")
        if hits:
            return hits[0]()
        if default is None:
            raise ValueError("lk.case: no predicate is true and no default was given")
        return default()
    # Traced predicates: evaluate every branch, select from the last to the first.
    if default is None:
        (_, _), last_fn = resolved[-1]
        result, rest = last_fn(), resolved[:-1]
    else:
        result, rest = default(), resolved
    for (known, p), fn in reversed(rest):
        if known:
            if p:
                result = fn()
            continue
        result = _select(p, fn(), result)
    return result


def switch_case(branch_index: Any, branch_fns: Any, default: Callable | None = None,
                name: str | None = None) -> Any:
    """``branch_fns[branch_index]()`` (``tf.switch_case``); an index out of range runs
    ``default``, or the last branch when there is no default.

    Args:
        branch_index: a scalar int (Python value or Tensor).
        branch_fns: a list of callables, or a dict ``{int: callable}``, or a list of
            ``(int, callable)`` pairs.
        default: called for an index that names no branch.
        name: accepted for TensorFlow compatibility.

    Examples:
        >>> import layerkit as lk
        >>> fns = [lambda: lk.constant(10), lambda: lk.constant(20)]
        >>> int(lk.switch_case(lk.constant(1), fns)), int(lk.switch_case(7, fns))
        (20, 20)
    """
    if isinstance(branch_fns, dict):
        table = dict(branch_fns)
    else:
        items = list(branch_fns)
        table = dict(items) if items and isinstance(items[0], (tuple, list)) else \
            dict(enumerate(items))
    if not table:
        raise ValueError("lk.switch_case: branch_fns must not be empty")
    for key, fn in table.items():
        if not isinstance(key, (int, np.integer)) or not callable(fn):
            raise TypeError(f"lk.switch_case: branches must be int -> callable; received "
                            f"{key!r}: {fn!r}")
    fallback = default if default is not None else table[max(table)]
    try:
        index = int(branch_index)
    except TracingError:
        import layerkit as lk

        idx = lk.cast(branch_index, "int64")
        result = fallback()
        for key in sorted(table, reverse=True):
            result = _select(lk.equal(idx, int(key)), table[key](), result)
        return result
    return table.get(index, fallback)()


def while_loop(cond: Callable, body: Callable, loop_vars: Any, shape_invariants: Any = None,
               parallel_iterations: int = 10, back_prop: bool = True, swap_memory: bool = False,
               maximum_iterations: Any = None, name: str | None = None) -> Any:
    """Repeat ``loop_vars = body(*loop_vars)`` while ``cond(*loop_vars)`` (``tf.while_loop``).

    A list or tuple of loop variables is passed positionally (nested structures inside
    it are kept) and the result has the same structure; any other value is passed as the
    one argument. Differentiable: the ops of every iteration are recorded by an active
    tape.

    Args:
        cond: returns a scalar bool for the current loop variables.
        body: returns the next loop variables (same structure).
        loop_vars: the initial values.
        maximum_iterations: stop after this many iterations (an int or scalar Tensor).
        shape_invariants, parallel_iterations, back_prop, swap_memory, name: accepted
            for TensorFlow compatibility.

    Raises:
        ValueError: ``body`` returns a different number of loop variables.

    Examples:
        >>> import layerkit as lk
        >>> i, total = lk.while_loop(lambda i, s: i < 4, lambda i, s: (i + 1, s + i),
        ...                          [lk.constant(0), lk.constant(0)])
        >>> int(i), int(total)
        (4, 6)
    """
    packed = isinstance(loop_vars, (tuple, list))
    vars_ = list(loop_vars) if packed else loop_vars
    limit = None if maximum_iterations is None else int(maximum_iterations)
    n = 0
    while limit is None or n < limit:
        if not bool(cond(*vars_) if packed else cond(vars_)):
            break
        new = body(*vars_) if packed else body(vars_)
        if packed:
            new = list(new) if isinstance(new, (tuple, list)) else [new]
            if len(new) != len(vars_):
                raise ValueError(f"lk.while_loop: body returned {len(new)} loop variables, "
                                 f"expected {len(vars_)}")
        vars_ = new
        n += 1
    if packed:
        return type(loop_vars)(vars_) if isinstance(loop_vars, tuple) else vars_
    return vars_


class TensorArray:
    """A list of tensors written by index (``tf.TensorArray``), stacked at the end.

    ``write`` returns the array itself (TensorFlow returns a new handle; code written as
    ``ta = ta.write(i, x)`` works either way). Indices are ints or scalar int Tensors;
    inside ``lk.function`` they must be known while tracing (a Python loop index).

    Args:
        dtype: the elements' dtype (values are cast to it).
        size: the initial size (unwritten elements read as zeros once the element shape
            is known).
        dynamic_size: allow writes past ``size`` (grows the array).
        clear_after_read: accepted for TensorFlow compatibility (reads never clear).
        element_shape: the elements' shape, if known in advance.

    Examples:
        >>> import layerkit as lk
        >>> ta = lk.TensorArray(lk.float32, size=0, dynamic_size=True)
        >>> for i in range(3):
        ...     ta = ta.write(i, lk.constant([float(i), 1.0]))
        >>> ta.stack().numpy().tolist(), int(ta.size())
        ([[0.0, 1.0], [1.0, 1.0], [2.0, 1.0]], 3)
    """

    def __init__(self, dtype: DTypeLike, size: Any = None, dynamic_size: Any = None,
                 clear_after_read: Any = None, tensor_array_name: Any = None, handle: Any = None,
                 flow: Any = None, infer_shape: bool = True, element_shape: Any = None,
                 colocate_with_first_write_call: bool = True, name: str | None = None) -> None:
        import layerkit as lk

        self._lk = lk
        self._dtype = lk.as_dtype(dtype)
        self._dynamic = bool(dynamic_size)
        n = 0 if size is None else int(size)
        if n < 0:
            raise ValueError(f"lk.TensorArray: size must be >= 0; received {n}")
        self._items: list = [None] * n
        self._element_shape = None if element_shape is None else tuple(
            None if d is None else int(d) for d in element_shape)

    @property
    def dtype(self) -> Any:
        return self._dtype

    @property
    def dynamic_size(self) -> bool:
        return self._dynamic

    @property
    def element_shape(self) -> Any:
        return self._lk.TensorShape(self._element_shape)

    def _index(self, index, who: str) -> int:
        try:
            i = int(index)
        except TracingError:
            raise TracingError(f"lk.TensorArray.{who}: the index must be known while "
                               f"tracing (a Python int or a loop counter); received a traced "
                               f"tensor") from None
        if i < 0:
            raise IndexError(f"lk.TensorArray.{who}: index {i} is negative")
        return i

    def _value(self, value, who: str) -> Tensor:
        t = self._lk.cast(self._lk.convert_to_tensor(value), self._dtype.name)
        shape = tuple(t.shape)
        if self._element_shape is None:
            self._element_shape = shape
        elif len(shape) != len(self._element_shape) or any(
                d is not None and d != s for d, s in zip(self._element_shape, shape)):
            raise ValueError(f"lk.TensorArray.{who}: element shape {shape} does not match "
                             f"the array's {self._element_shape}")
        return t

    def write(self, index: int | TensorLike, value: Any, name: str | None = None) -> TensorArray:
        """Store ``value`` at ``index`` and return the array."""
        i = self._index(index, "write")
        if i >= len(self._items):
            if not self._dynamic:
                raise IndexError(f"lk.TensorArray.write: index {i} is out of range for an "
                                 f"array of size {len(self._items)} (pass dynamic_size=True "
                                 f"to grow it)")
            self._items.extend([None] * (i + 1 - len(self._items)))
        self._items[i] = self._value(value, "write")
        return self

    def read(self, index: int | TensorLike, name: str | None = None) -> Tensor:
        """The element at ``index`` (zeros if it was never written and its shape is
        known)."""
        i = self._index(index, "read")
        if i >= len(self._items):
            raise IndexError(f"lk.TensorArray.read: index {i} is out of range for an array "
                             f"of size {len(self._items)}")
        return self._get(i, "read")

    def _get(self, i: int, who: str) -> Tensor:
        item = self._items[i]
        if item is not None:
            return item
        if self._element_shape is None or None in self._element_shape:
            raise ValueError(f"lk.TensorArray.{who}: element {i} was never written and the "
                             f"element shape is unknown")
        return self._lk.zeros(self._element_shape, self._dtype.name)

    def stack(self, name: str | None = None) -> Tensor:
        """All elements stacked along a new first axis."""
        if not self._items:
            shape = (0,) + tuple(d or 0 for d in (self._element_shape or ()))
            return self._lk.zeros(shape, self._dtype.name)
        return self._lk.stack([self._get(i, "stack") for i in range(len(self._items))], 0)

    def gather(self, indices: TensorLike, name: str | None = None) -> Tensor:
        """The elements at ``indices`` stacked along a new first axis."""
        idx = [self._index(i, "gather") for i in np.asarray(indices).ravel().tolist()]
        return self._lk.stack([self.read(i) for i in idx], 0)

    def concat(self, name: str | None = None) -> Tensor:
        """All elements concatenated along their first axis."""
        return self._lk.concat([self._get(i, "concat") for i in range(len(self._items))], 0)

    def unstack(self, value: Any, name: str | None = None) -> TensorArray:
        """Write the slices ``value[0], value[1], ...`` as the elements."""
        t = self._lk.convert_to_tensor(value)
        n = t.shape[0]
        if not self._dynamic and self._items and n > len(self._items):
            raise IndexError(f"lk.TensorArray.unstack: {n} rows do not fit an array of "
                             f"size {len(self._items)}")
        self._items = [self._value(t[i], "unstack") for i in range(n)] + self._items[n:]
        return self

    def scatter(self, indices: TensorLike, value: Any, name: str | None = None) -> TensorArray:
        """Write ``value[k]`` at ``indices[k]``."""
        t = self._lk.convert_to_tensor(value)
        for k, i in enumerate(np.asarray(indices).ravel().tolist()):
            self.write(i, t[k])
        return self

    def split(self, value: Any, lengths: TensorLike, name: str | None = None) -> TensorArray:
        """Write consecutive pieces of ``value`` (along its first axis) of ``lengths``."""
        t = self._lk.convert_to_tensor(value)
        start, items = 0, []
        for n in [int(x) for x in np.asarray(lengths).ravel()]:
            items.append(self._lk.cast(t[start:start + n], self._dtype.name))
            start += n
        self._items = items
        return self

    def size(self, name: str | None = None) -> Tensor:
        """The number of elements (an int32 Tensor)."""
        return self._lk.constant(len(self._items), "int32")

    def identity(self) -> TensorArray:
        return self

    def close(self, name: str | None = None) -> None:
        self._items = []

    def __repr__(self) -> str:
        return (f"<lk.TensorArray size={len(self._items)} dtype={self._dtype.name} "
                f"element_shape={self._element_shape}>")

