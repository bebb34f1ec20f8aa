"""TensorFlow's functional control flow: ``lk.cond``, ``lk.case``, ``lk.switch_case``,
``lk.while_loop`` and ``lk.TensorArray``.

Eagerly they are Python control flow: only the chosen branch runs, a loop runs until its
predicate is false, and a tape records the ops that ran, so gradients flow through them
(to any order). Inside ``lk.function``:

* a predicate, branch index or loop predicate that is a Python value (or a tensor
  computed from constants) is decided at trace time, as Python would (a loop unrolls);
* ``cond``, ``case``, ``switch_case`` and ``while_loop`` with a *traced* predicate
  (or branch index) become graph nodes holding sub-graphs
  (``layerkit.autodiff.function.subgraph``): ``cond`` runs only the branch the
  predicate picks on each call, ``while_loop`` runs as many iterations as each
  call's data asks for (a loop whose predicate becomes traced after some unrolled
  iterations continues as a graph loop). Both are differentiable. Branch results and
  loop variables must keep their dtype and shape (``case`` and ``switch_case`` are
  chains of ``cond`` nodes).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from layerkit._core.context import RECORDERS
from layerkit._core.nest import flatten
from layerkit._core.nest import pack_sequence_as as pack_like
from layerkit._core.op import Op
from layerkit._core.op import apply as _apply
from layerkit._core.tensor import Tensor
from layerkit._core.types import DTypeLike, TensorLike
from layerkit.autodiff.function.subgraph import current_line
from layerkit.autodiff.function.trace import TracingError
from layerkit.keras_ops.core import _traced_bool

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
    return _graph_cond(p, true_fn, false_fn, current_line())


def _graph_cond(p, true_fn: Callable, false_fn: Callable, where: str):
    """``cond`` on a traced predicate: one graph node running the taken branch."""
    from layerkit.autodiff.function.subgraph import graph_cond

    box: dict = {}

    def branch(key: str, fn: Callable):
        def run():
            box[key] = fn()
            return _tensors(box[key])
        return run

    outs = graph_cond(p, branch("t", true_fn), branch("f", false_fn), where=where)
    return _pack(box["t"], outs)


def _tensors(structure) -> list:
    """The leaves of a branch's (or loop's) result that become graph values."""
    import layerkit as lk

    return [x if isinstance(x, Tensor) else lk.convert_to_tensor(x)
            for x in flatten(structure) if x is not None]


def _pack(structure, outs: list):
    it = iter(outs)
    return pack_like(structure, [None if x is None else next(it) for x in flatten(structure)])


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
    # Traced predicates: a chain of graph conds, so that only the branch taken runs.
    if default is None:
        (_, _), last_fn = resolved[-1]
        final, rest = last_fn, resolved[:-1]
    else:
        final, rest = default, resolved
    return _chain([(p if known else _Traced(p), fn) for (known, p), fn in rest], final)


class _Traced:
    __slots__ = ("pred",)

    def __init__(self, pred) -> None:
        self.pred = pred


def _chain(pairs: list, final: Callable):
    """The first callable whose predicate holds, else ``final()``; predicates are
    Python bools or traced ones (wrapped in ``_Traced``), decided by graph conds."""
    for j, (p, fn) in enumerate(pairs):
        if type(p) is _Traced:
            rest = pairs[j + 1:]
            return cond(p.pred, fn, lambda rest=rest: _chain(rest, final))
        if p:
            return fn()
    return final()


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
        return _chain([(_Traced(lk.equal(idx, int(k))), table[k]) for k in sorted(table)],
                      fallback)
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
    limit = maximum_iterations
    if limit is not None and not _is_traced(limit):
        limit = int(limit)
    n = 0
    while not isinstance(limit, int) or n < limit:
        known, p = (False, None) if limit is not None and not isinstance(limit, int) \
            else _traced_bool(cond(*vars_) if packed else cond(vars_))
        if not known:
            # The predicate depends on traced data: the rest of the loop is a graph loop.
            vars_ = _graph_while(cond, body, vars_, packed, limit, n, current_line())
            break
        if not p:
            break
        vars_ = _step(body, vars_, packed, "")
        n += 1
    if packed:
        return type(loop_vars)(vars_) if isinstance(loop_vars, tuple) else vars_
    return vars_


def _step(body: Callable, vars_, packed: bool, where: str):
    """``body`` applied to the loop variables (their number checked)."""
    new = body(*vars_) if packed else body(vars_)
    if packed:
        new = list(new) if isinstance(new, (tuple, list)) else [new]
        if len(new) != len(vars_):
            raise ValueError(f"lk.while_loop: body returned {len(new)} loop variables, "
                             f"expected {len(vars_)}{where}")
    return new


def _is_traced(x) -> bool:
    from layerkit.autodiff.function.trace import TracedTensor

    return isinstance(x, TracedTensor)


def _graph_while(cond: Callable, body: Callable, vars_, packed: bool, limit, done: int,
                 where: str):
    """The rest of a ``while_loop`` as one graph node (see the module docstring)."""
    import layerkit as lk
    from layerkit.autodiff.function.subgraph import graph_while

    structure = vars_
    flat = _tensors(structure)
    counted = limit is not None
    if counted:
        flat = [lk.constant(0, "int32")] + flat
        remaining = lk.cast(lk.convert_to_tensor(limit), "int32") - done

    def unpack(xs):
        v = _pack(structure, list(xs[1:] if counted else xs))
        return v

    def c(*xs):
        v = unpack(xs)
        pred = cond(*v) if packed else cond(v)
        pred = lk.convert_to_tensor(pred)
        if pred.dtype != np.bool_:
            pred = lk.cast(pred, "bool")
        if counted:
            pred = lk.logical_and(xs[0] < remaining, pred)
        return pred

    def b(*xs):
        out = _tensors(_step(body, unpack(xs), packed, where))
        return ([xs[0] + 1] if counted else []) + out

    names = (["iteration counter"] if counted else []) + [
        f"loop variable {k}" for k in range(len(flat) - counted)]
    outs = graph_while(c, b, flat, names=names, where=where)
    return _pack(structure, outs[1:] if counted else outs)


def _ta_write(buf, i, v, dynamic: bool):
    i, n = int(i), buf.shape[0]
    if i < 0:
        raise IndexError(f"lk.TensorArray.write: index {i} is negative")
    if i >= n:
        if not dynamic:
            raise IndexError(f"lk.TensorArray.write: index {i} is out of range for an "
                             f"array of size {n} (pass dynamic_size=True to grow it)")
        grown = np.zeros((i + 1,) + buf.shape[1:], buf.dtype)
        grown[:n] = buf
        buf = grown
    else:
        buf = buf.copy()
    buf[i] = v
    return buf


def _ta_write_grad(g, buf, i):
    i, n = int(i), buf.shape[0]
    gb = np.array(g[:n], copy=True)
    if i < n:
        gb[i] = 0
    return gb, np.array(g[i], copy=True)


def _ta_write_vjp(g, ins, out, needs, dynamic: bool):
    from layerkit.autodiff.function.subgraph import active_tracer

    if RECORDERS and active_tracer() is None:
        # A tape records this gradient (a gradient of a gradient): lk ops, on real values.
        import layerkit as lk

        n = int(ins[0].shape[0])
        rows = g[:n]
        keep = lk.reshape(lk.not_equal(lk.range(n), ins[1]), (n,) + (1,) * (rows.ndim - 1))
        return lk.where(keep, rows, lk.zeros_like(rows)), None, lk.gather(g, ins[1])
    gb, gv = _apply(_TA_WRITE_GRAD, g, ins[0], ins[1])
    return gb, None, gv


_TA_WRITE = Op("tensor_array_write", _ta_write, _ta_write_vjp)
_TA_WRITE_GRAD = Op("tensor_array_write_grad", _ta_write_grad, num_outputs=2)


class TensorArray:
    """A list of tensors written by index (``tf.TensorArray``), stacked at the end.

    ``write`` returns the array itself (TensorFlow returns a new handle; code written as
    ``ta = ta.write(i, x)`` works either way). Indices are ints or scalar int Tensors.
    Inside ``lk.function`` an index that depends on traced data (the counter of a loop on
    a tensor, converted by AutoGraph) switches the array to one stacked tensor whose
    writes return a new array, as in TensorFlow (it grows with ``dynamic_size=True``);
    the element shape must be known (given, or from the first write).

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
        self._buf: Tensor | None = None   # graph mode: the elements stacked (see below)
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

    # ---- graph mode ------------------------------------------------------------------------
    # Written at a traced index (in a loop on traced data, see layerkit.autograph), the
    # elements live in one stacked tensor and writes return a new array (TensorFlow's
    # functional semantics), so the array can be a loop variable or a branch result.
    def _is_traced(self, index) -> bool:
        return _is_traced(index) or self._buf is not None

    def _buffer(self, element=None) -> Tensor:
        """All elements stacked (zeros where unwritten): the graph-mode storage."""
        if self._buf is not None:
            return self._buf
        if self._element_shape is None and element is not None:
            self._element_shape = tuple(element.shape)
        if self._element_shape is None or None in self._element_shape:
            raise TracingError("lk.TensorArray: the element shape must be known to write at "
                               "a traced index (pass element_shape=...)")
        lk = self._lk
        rows = [self._get(i, "write") for i in range(len(self._items))]
        if not rows:
            return lk.zeros((0,) + self._element_shape, self._dtype.name)
        return lk.stack(rows, 0)

    def _with_buffer(self, buf: Tensor) -> TensorArray:
        ta = TensorArray.__new__(TensorArray)
        ta._lk, ta._dtype, ta._dynamic = self._lk, self._dtype, self._dynamic
        ta._element_shape = tuple(buf.shape[1:])
        ta._items = [None] * int(buf.shape[0])
        ta._buf = buf
        return ta

    def _materialize(self) -> None:
        if self._buf is not None:
            buf, self._buf = self._buf, None
            self._items = [buf[k] for k in range(len(self._items))]

    def write(self, index: int | TensorLike, value: Any, name: str | None = None) -> TensorArray:
        """Store ``value`` at ``index`` and return the array."""
        if self._is_traced(index):
            lk = self._lk
            v = self._value(value, "write")
            buf = self._buffer(v)
            return self._with_buffer(_apply(_TA_WRITE, buf, lk.cast(index, "int32"), v,
                                            dynamic=self._dynamic))
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
        if self._is_traced(index):
            return self._lk.gather(self._buffer(), self._lk.cast(index, "int32"))
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
        if self._buf is not None:
            return self._buf
        if not self._items:
            shape = (0,) + tuple(d or 0 for d in (self._element_shape or ()))
            return self._lk.zeros(shape, self._dtype.name)
        return self._lk.stack([self._get(i, "stack") for i in range(len(self._items))], 0)

    def gather(self, indices: TensorLike, name: str | None = None) -> Tensor:
        """The elements at ``indices`` stacked along a new first axis."""
        self._materialize()
        idx = [self._index(i, "gather") for i in np.asarray(indices).ravel().tolist()]
        return self._lk.stack([self.read(i) for i in idx], 0)

    def concat(self, name: str | None = None) -> Tensor:
        """All elements concatenated along their first axis."""
        self._materialize()
        return self._lk.concat([self._get(i, "concat") for i in range(len(self._items))], 0)

    def unstack(self, value: Any, name: str | None = None) -> TensorArray:
        """Write the slices ``value[0], value[1], ...`` as the elements."""
        self._materialize()
        t = self._lk.convert_to_tensor(value)
        n = t.shape[0]
        if not self._dynamic and self._items and n > len(self._items):
            raise IndexError(f"lk.TensorArray.unstack: {n} rows do not fit an array of "
                             f"size {len(self._items)}")
        self._items = [self._value(t[i], "unstack") for i in range(n)] + self._items[n:]
        return self

    def scatter(self, indices: TensorLike, value: Any, name: str | None = None) -> TensorArray:
        """Write ``value[k]`` at ``indices[k]``."""
        self._materialize()
        t = self._lk.convert_to_tensor(value)
        for k, i in enumerate(np.asarray(indices).ravel().tolist()):
            self.write(i, t[k])
        return self

    def split(self, value: Any, lengths: TensorLike, name: str | None = None) -> TensorArray:
        """Write consecutive pieces of ``value`` (along its first axis) of ``lengths``."""
        self._materialize()
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

