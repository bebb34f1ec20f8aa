"""Elementwise records: forward (NumPy), vjp (lk ops) and numexpr template, side by side.

Dispatch rule for the eager path: every elementwise forward is a NumPy ufunc. Measured
on this machine (shared/FACTS.md: numexpr 2.14 without VML, NumPy 2.4, 2-core Zen5), a
single float32 op is 2-30x faster in NumPy at every size (x*y+x on 1M: numexpr 0.71 ms,
NumPy 0.18 ms; tanh 10.5 vs 0.16 ms) and numexpr's ~7 us call cost loses below ~30k
elements; numexpr only wins on long float64 chains, which eager mode never sees one op
at a time. The ``expr`` templates are for graph fusion of whole chains.
"""
from __future__ import annotations

import numpy as np

from layerkit._core.convert import as_dtype
from layerkit._core.op import RECORDERS, Op, apply
from layerkit._core.tensor import Tensor
from layerkit.ops import broadcast as _bc

__all__ = ["cast", "add", "subtract", "multiply", "divide", "negative", "exp", "log", "tanh",
           "square", "sqrt"]

_new = object.__new__


def _unbroadcasting(rule):
    """Wrap a binary/ternary rule so each gradient is summed to its input's shape."""

    def vjp(g, ins, y, needs, **attrs):
        grads = rule(g, ins, y, needs, **attrs)
        return tuple(
            None if gi is None or not n else _bc.sum_to_shape(gi, x.shape)
            for gi, x, n in zip(grads, ins, needs)
        )

    return vjp


def binary(name: str, forward, rule, expr: str | None = None) -> Op:
    """Record constructor for broadcasting binary ops (rule results are unbroadcast)."""
    return Op(name, forward, _unbroadcasting(rule), expr)


def unary(name: str, forward, rule, expr: str | None = None) -> Op:
    return Op(name, forward, rule, expr)


def _fast2(op: Op, x, y) -> Tensor:
    # Hot path for binary operators on two Tensors with no recorder active.
    if not RECORDERS and type(x) is Tensor and type(y) is Tensor:
        t = _new(Tensor)
        t._v = op.forward(x._v, y._v)
        return t
    return apply(op, x, y)


# ---- arithmetic --------------------------------------------------------------------
_ADD = binary("add", np.add, lambda g, ins, y, needs: (g, g), "({0} + {1})")
_SUB = binary("subtract", np.subtract, lambda g, ins, y, needs: (g, negative(g)), "({0} - {1})")
_MUL = binary("multiply", np.multiply,
              lambda g, ins, y, needs: (multiply(g, ins[1]) if needs[0] else None,
                                        multiply(g, ins[0]) if needs[1] else None),
              "({0} * {1})")
_DIV = binary("divide", np.true_divide,
              lambda g, ins, y, needs: (divide(g, ins[1]) if needs[0] else None,
                                        negative(divide(multiply(g, y), ins[1]))
                                        if needs[1] else None),
              "({0} / {1})")
_NEG = unary("negative", np.negative, lambda g, ins, y, needs: (negative(g),), "(-{0})")


def add(x, y) -> Tensor:
    """Elementwise ``x + y`` with NumPy broadcasting."""
    return _fast2(_ADD, x, y)


def subtract(x, y) -> Tensor:
    """Elementwise ``x - y``."""
    return _fast2(_SUB, x, y)


def multiply(x, y) -> Tensor:
    """Elementwise ``x * y``."""
    return _fast2(_MUL, x, y)


def divide(x, y) -> Tensor:
    """Elementwise true division ``x / y``."""
    return _fast2(_DIV, x, y)


def negative(x) -> Tensor:
    """Elementwise ``-x``."""
    return apply(_NEG, x)


# ---- transcendental ----------------------------------------------------------------
# Rules reuse the forward answer ``y`` where it is cheaper (exp, tanh, sqrt).
_EXP = unary("exp", np.exp, lambda g, ins, y, needs: (multiply(g, y),), "exp({0})")
_LOG = unary("log", np.log, lambda g, ins, y, needs: (divide(g, ins[0]),), "log({0})")
_TANH = unary("tanh", np.tanh,
              lambda g, ins, y, needs: (multiply(g, subtract(1.0, multiply(y, y))),),
              "tanh({0})")
_SQUARE = unary("square", np.square,
                lambda g, ins, y, needs: (multiply(g, multiply(2.0, ins[0])),), "({0} * {0})")
_SQRT = unary("sqrt", np.sqrt, lambda g, ins, y, needs: (divide(g, multiply(2.0, y)),),
              "sqrt({0})")


def exp(x) -> Tensor:
    """Elementwise e**x."""
    return apply(_EXP, x)


def log(x) -> Tensor:
    """Elementwise natural logarithm."""
    return apply(_LOG, x)


def tanh(x) -> Tensor:
    """Elementwise hyperbolic tangent."""
    return apply(_TANH, x)


def square(x) -> Tensor:
    """Elementwise x**2."""
    return apply(_SQUARE, x)


def sqrt(x) -> Tensor:
    """Elementwise square root."""
    return apply(_SQRT, x)


# ---- dtype -------------------------------------------------------------------------
def _cast_vjp(g, ins, y, needs, dtype):
    x = ins[0]
    if x.dtype.kind not in "fc":
        return (None,)
    return (cast(g, x.dtype),)


_CAST = Op("cast", lambda x, dtype: np.asarray(x).astype(dtype, copy=False), _cast_vjp)


def cast(x, dtype) -> Tensor:
    """Cast ``x`` to ``dtype`` (differentiable between float dtypes)."""
    return apply(_CAST, x, dtype=as_dtype(dtype))
