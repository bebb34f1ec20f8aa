"""Tensor operators and NumPy interop, installed on Tensor as calls to the op records.

Operators: ``+ - * / // % ** @`` and their reflected forms, unary ``-``, ``+``,
``abs()``, comparisons ``< <= > >= == !=`` (elementwise, bool Tensors; hashing stays
by identity), ``& | ^ ~`` on bool tensors (logical, as in TensorFlow), ``t[key]``
(``layerkit.primitives.array.getitem``) and iteration over axis 0.

NumPy interop under a tape. A NumPy call on a Tensor never silently returns a plain
array that has dropped off the gradient tape:

* ufuncs with a layerkit record (``np.exp(t)``, ``np.add(t, 1)``, ``ndarray + t``,
  ``np.maximum``, comparisons, ``np.matmul``, ...) run the layerkit op and return a
  Tensor, so gradients flow through them;
* a few array functions map onto layerkit ops the same way (``np.sum``, ``np.mean``,
  ``np.max``, ``np.reshape``, ``np.transpose``, ``np.concatenate``, ``np.stack``,
  ``np.where``, ``np.clip``, ``np.einsum``, ...);
* queries whose answer carries no gradient (``np.shape``, ``np.allclose``,
  ``np.array_equal``, ``np.argmax``, ``np.nonzero``, ``np.save``, ...) are computed on
  the values and return NumPy results;
* everything else raises ``TypeError`` naming the function: other ufuncs, ufunc
  methods (``reduce``, ``accumulate``, ``outer``, ``at``), ``out=``/``dtype=``/
  ``where=`` arguments, in-place ``ndarray += t``, and unmapped functions. Use the
  layerkit op, or take the values explicitly with ``t.numpy()`` / ``np.asarray(t)``
  (``np.asarray`` and ``np.array`` always work: they use ``__array__``).

Limit of the protocol: NumPy dispatches only on the arguments a function declares as
arrays, so a reduction over a Python list of Tensors (``np.sum([t1, t2])``) converts
them with ``__array__`` and returns an ndarray; write that with lk ops
(``lk.reduce_sum(lk.stack([t1, t2]))``).

The operator fast path never goes through these hooks: ``Tensor * Tensor`` calls the
multiply record on the underlying arrays directly.
"""
from __future__ import annotations

import numpy as np

from layerkit._core.convert import to_array
from layerkit._core.tensor import Tensor
from layerkit.primitives import array as A
from layerkit.primitives import elementwise as E
from layerkit.primitives import linalg as L
from layerkit.primitives import reduce as R
from layerkit.primitives.registry import NUMPY


# ---- arithmetic and comparison operators ---------------------------------------------
def _swap(fn):
    def reflected(self, other):
        return fn(other, self)

    reflected.__name__ = f"r{fn.__name__}"
    return reflected


_BINARY = {
    "add": E.add, "sub": E.subtract, "mul": E.multiply, "truediv": E.divide,
    "floordiv": E.floordiv, "mod": E.mod, "pow": E.pow, "matmul": L.matmul,
}
for _name, _fn in _BINARY.items():
    setattr(Tensor, f"__{_name}__", _fn)
    setattr(Tensor, f"__r{_name}__", _swap(_fn))
# + - * / reuse the buffer of a large temporary operand, as NumPy does.
Tensor.__add__ = E._operator(E._ADD)
Tensor.__sub__ = E._operator(E._SUB)
Tensor.__mul__ = E._operator(E._MUL)
Tensor.__truediv__ = E._operator(E._DIV)
Tensor.__radd__ = E._reflected_operator(E._ADD)
Tensor.__rsub__ = E._reflected_operator(E._SUB)
Tensor.__rmul__ = E._reflected_operator(E._MUL)
Tensor.__rtruediv__ = E._reflected_operator(E._DIV)

Tensor.__neg__ = E.negative
Tensor.__pos__ = lambda self: self
Tensor.__abs__ = E.abs
Tensor.__lt__ = E.less
Tensor.__le__ = E.less_equal
Tensor.__gt__ = E.greater
Tensor.__ge__ = E.greater_equal


def _eq(self, other):
    # ``t == None`` is False (Python falls back to identity), as in TensorFlow.
    return NotImplemented if other is None else E.equal(self, other)


def _ne(self, other):
    return NotImplemented if other is None else E.not_equal(self, other)


# Assigning __eq__ after the class body leaves Tensor.__hash__ (by identity, like TF's
# ``ref()``) in place, so tensors stay usable as dict keys.
Tensor.__eq__ = _eq
Tensor.__ne__ = _ne


def _logical(fn, symbol: str, reflected: bool = False):
    def op(self, other):
        for v in (self, other):
            dt = to_array(v).dtype
            if dt != np.bool_:
                raise TypeError(
                    f"operator {symbol} is defined for bool tensors only (logical, as in "
                    f"TensorFlow); received dtype {dt}"
                )
        return fn(other, self) if reflected else fn(self, other)

    return op


def _invert(self):
    if self.dtype != np.bool_:
        raise TypeError(
            f"operator ~ is defined for bool tensors only (logical_not); received dtype "
            f"{self.dtype}"
        )
    return E.logical_not(self)


Tensor.__and__ = _logical(E.logical_and, "&")
Tensor.__rand__ = _logical(E.logical_and, "&", reflected=True)
Tensor.__or__ = _logical(E.logical_or, "|")
Tensor.__ror__ = _logical(E.logical_or, "|", reflected=True)
Tensor.__xor__ = _logical(E.not_equal, "^")  # xor of bools is !=
Tensor.__rxor__ = _logical(E.not_equal, "^", reflected=True)
Tensor.__invert__ = _invert


# ---- indexing and iteration ---------------------------------------------------------------
_getitem = getattr(A, "getitem", None)
if _getitem is not None:
    Tensor.__getitem__ = _getitem


def _iter(self):
    if not self.shape:
        raise TypeError("iteration over a 0-d tensor")
    return iter(A.unstack(self, axis=0))


Tensor.__iter__ = _iter


# ---- NumPy ufuncs ---------------------------------------------------------------------
_UFUNCS = NUMPY  # ops published with @export(numpy=...) add themselves here
_UFUNCS.update({
    np.add: E.add, np.subtract: E.subtract, np.multiply: E.multiply,
    np.true_divide: E.divide, np.floor_divide: E.floordiv, np.remainder: E.mod,
    np.power: E.pow, np.negative: E.negative, np.positive: lambda x: x,
    np.square: E.square, np.sqrt: E.sqrt, np.exp: E.exp, np.expm1: E.expm1,
    np.log: E.log, np.log1p: E.log1p, np.absolute: E.abs, np.fabs: E.abs,
    np.sign: E.sign, np.maximum: E.maximum, np.minimum: E.minimum,
    np.sin: E.sin, np.cos: E.cos, np.tan: E.tan, np.tanh: E.tanh,
    np.floor: E.floor, np.ceil: E.ceil, np.rint: E.round,
    np.equal: E.equal, np.not_equal: E.not_equal, np.less: E.less,
    np.less_equal: E.less_equal, np.greater: E.greater, np.greater_equal: E.greater_equal,
    np.logical_and: E.logical_and, np.logical_or: E.logical_or,
    np.logical_not: E.logical_not, np.isfinite: E.isfinite, np.isnan: E.isnan,
    np.matmul: L.matmul,
})

_USE_LK = ("Use the layerkit op instead, or take the values explicitly with t.numpy() "
           "or np.asarray(t)")


def _array_ufunc(self, ufunc, method, *inputs, **kwargs):
    if method == "__call__" and not kwargs:
        fn = _UFUNCS.get(ufunc)
        if fn is not None:
            return fn(*inputs)
    name = f"np.{ufunc.__name__}" + ("" if method == "__call__" else f".{method}")
    if method != "__call__":
        why = f"the ufunc method '{method}' is not supported"
    elif kwargs:
        why = f"the argument(s) {', '.join(sorted(kwargs))} are not supported"
    else:
        why = "layerkit has no op for this ufunc"
    raise TypeError(
        f"{name} on a layerkit Tensor: {why}; the result would drop off the gradient "
        f"tape. {_USE_LK}."
    )


Tensor.__array_ufunc__ = _array_ufunc


# ---- NumPy array functions --------------------------------------------------------------
def _refuse(fname: str, given: dict) -> None:
    bad = sorted(k for k, v in given.items() if v is not None and v is not np._NoValue)
    if bad:
        raise TypeError(
            f"np.{fname} on a layerkit Tensor: the argument(s) {', '.join(bad)} are not "
            f"supported. {_USE_LK}."
        )


def _reduction(fname: str, lk_fn, has_dtype: bool = True, has_ddof: bool = False):
    def adapter(a, axis=None, *args, keepdims=False, **kw):
        # NumPy's positional order after axis: [dtype,] out, [ddof,] keepdims.
        names = (["dtype"] if has_dtype else []) + ["out"] + (["ddof"] if has_ddof else [])
        names.append("keepdims")
        extra = dict(zip(names, args))
        keepdims = extra.pop("keepdims", keepdims)
        kw.update(extra)
        if kw.get("ddof", 0) in (0, None):
            kw.pop("ddof", None)
        _refuse(fname, kw)
        if keepdims is np._NoValue:
            keepdims = False
        return lk_fn(a, axis=axis, keepdims=bool(keepdims))

    return adapter


def _np_cumsum(a, axis=None, dtype=None, out=None):
    _refuse("cumsum", {"dtype": dtype, "out": out})
    if axis is None:  # NumPy flattens first
        a, axis = A.reshape(a, (-1,)), 0
    return R.cumsum(a, axis=axis)


def _np_reshape(a, shape=None, order="C", *, newshape=None, copy=None):
    _refuse("reshape", {"order": None if order == "C" else order, "copy": copy})
    return A.reshape(a, newshape if shape is None else shape)


def _np_ravel(a, order="C"):
    _refuse("ravel", {"order": None if order == "C" else order})
    return A.reshape(a, (-1,))


def _np_transpose(a, axes=None):
    return A.transpose(a, perm=axes)


def _np_join(fname: str, lk_fn):
    def adapter(arrays, axis=0, out=None, **kw):
        _refuse(fname, {"out": out, **kw})
        if axis is None:
            raise TypeError(f"np.{fname} with axis=None on Tensors: reshape them first")
        return lk_fn(list(arrays), axis=axis)

    return adapter


def _np_where(condition, *xy):
    if not xy:  # index form: a query, computed on values
        return np.where(np.asarray(condition))
    return E.where(condition, *xy)


def _np_clip(a, a_min=np._NoValue, a_max=np._NoValue, out=None, *, min=np._NoValue,
             max=np._NoValue, **kw):
    _refuse("clip", {"out": out, **kw})
    lo = min if a_min is np._NoValue else a_min
    hi = max if a_max is np._NoValue else a_max
    lo, hi = (None if v is np._NoValue else v for v in (lo, hi))
    if lo is None and hi is None:
        raise TypeError("np.clip on a layerkit Tensor: give a lower or an upper bound")
    if lo is None:
        return E.minimum(a, hi)
    if hi is None:
        return E.maximum(a, lo)
    return E.clip_by_value(a, lo, hi)


def _np_round(a, decimals=0, out=None):
    _refuse("round", {"out": out, "decimals": decimals or None})
    return E.round(a)


def _np_einsum(subscripts, *operands, **kw):
    _refuse("einsum", {k: v for k, v in kw.items() if k != "optimize"})
    return L.einsum(subscripts, *operands)


def _np_dot(a, b, out=None):
    _refuse("dot", {"out": out})
    if np.ndim(to_array(a)) == 2 and np.ndim(to_array(b)) == 2:
        return L.matmul(a, b)
    raise TypeError(f"np.dot on layerkit Tensors is supported for 2-D operands only. "
                    f"{_USE_LK} (lk.matmul, lk.tensordot).")


def _np_take(a, indices, axis=None, out=None, mode=None):
    _refuse("take", {"out": out, "mode": mode})
    if axis is None:
        a, axis = A.reshape(a, (-1,)), 0
    return A.gather(a, indices, axis=axis)


def _lazy(module, name: str, adapter_factory=None):
    """Resolve ``module.name`` at call time (helpers add ops to their modules)."""

    def call(*args, **kwargs):
        fn = getattr(module, name, None)
        if fn is None:
            raise TypeError(f"layerkit has no {name} op to run this NumPy function on "
                            f"a Tensor. {_USE_LK}.")
        target = adapter_factory(fn) if adapter_factory else fn
        return target(*args, **kwargs)

    return call


def _red(fname: str, lk_name: str, **flags):
    return _lazy(R, lk_name, lambda fn: _reduction(fname, fn, **flags))


_FUNCTIONS = NUMPY
_FUNCTIONS.update({
    np.sum: _red("sum", "reduce_sum"),
    np.prod: _red("prod", "reduce_prod"),
    np.mean: _red("mean", "reduce_mean"),
    np.max: _red("max", "reduce_max", has_dtype=False),
    np.min: _red("min", "reduce_min", has_dtype=False),
    np.amax: _red("amax", "reduce_max", has_dtype=False),
    np.amin: _red("amin", "reduce_min", has_dtype=False),
    np.all: _red("all", "reduce_all", has_dtype=False),
    np.any: _red("any", "reduce_any", has_dtype=False),
    np.var: _red("var", "reduce_variance", has_ddof=True),
    np.std: _red("std", "reduce_std", has_ddof=True),
    np.cumsum: _np_cumsum,
    np.reshape: _np_reshape,
    np.ravel: _np_ravel,
    np.transpose: _np_transpose,
    np.expand_dims: lambda a, axis: A.expand_dims(a, axis),
    np.squeeze: lambda a, axis=None: A.squeeze(a, axis),
    np.concatenate: _lazy(A, "concat", lambda fn: _np_join("concatenate", fn)),
    np.stack: _lazy(A, "stack", lambda fn: _np_join("stack", fn)),
    np.tile: lambda a, reps: A.tile(a, reps),
    np.broadcast_to: lambda array, shape, subok=False: A.broadcast_to(array, shape),
    np.where: _np_where,
    np.clip: _np_clip,
    np.round: _np_round,
    np.around: _np_round,
    np.einsum: _lazy(L, "einsum", lambda fn: _np_einsum),
    np.dot: _np_dot,
    np.take: _lazy(A, "gather", lambda fn: _np_take),
})

# Functions whose results carry no gradient (shapes, bools, indices, text, files):
# computing them on the values cannot lose a gradient.
_VALUE_FUNCTIONS = frozenset([
    np.shape, np.ndim, np.size, np.result_type, np.can_cast, np.min_scalar_type,
    np.allclose, np.isclose, np.array_equal, np.array_equiv,
    np.array2string, np.array_repr, np.array_str, np.iscomplexobj, np.isrealobj,
    np.iscomplex, np.isreal, np.isneginf, np.isposinf, np.copy,
    np.save, np.savez, np.savez_compressed, np.savetxt,
    np.count_nonzero, np.nonzero, np.argwhere, np.flatnonzero, np.argmax, np.argmin,
    np.argsort, np.searchsorted, np.isin, np.may_share_memory, np.shares_memory,
    np.bincount, np.digitize,
])


def _values(obj):
    if isinstance(obj, Tensor):
        return np.asarray(obj._v)
    if isinstance(obj, (list, tuple)):
        return type(obj)(_values(v) for v in obj)
    if isinstance(obj, dict):
        return {k: _values(v) for k, v in obj.items()}
    return obj


def _array_function(self, func, types, args, kwargs):
    adapter = _FUNCTIONS.get(func)
    if adapter is not None:
        return adapter(*args, **kwargs)
    if func in _VALUE_FUNCTIONS:
        return func(*_values(args), **_values(kwargs))
    raise TypeError(
        f"np.{func.__name__} is not supported on layerkit Tensors: its result would drop "
        f"off the gradient tape. {_USE_LK}."
    )


Tensor.__array_function__ = _array_function

if Tensor.__doc__ is not None and "NumPy interop" not in Tensor.__doc__:
    Tensor.__doc__ += """
    NumPy interop:
        ``np.exp(t)``, ``np.add(t, 1)``, ``ndarray + t``, ``np.sum(t)`` and other NumPy
        calls with a layerkit op run that op and return a Tensor (gradients flow);
        gradient-free queries (``np.shape``, ``np.allclose``, ``np.argmax``, ...) return
        NumPy results; anything else raises ``TypeError`` rather than silently leaving
        the tape. ``np.asarray(t)`` and ``t.numpy()`` give the values.
    """
