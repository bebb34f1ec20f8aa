"""Gradient-check rows for every differentiable elementwise record.

Each row: ``{"name": <Op.name>, "fn": f(*Tensors), "args": [float64 arrays], "order": n}``,
run by ``layerkit.autodiff.check.check_grads(fn, args, order=order)``. Input domains stay
away from kinks, poles and discontinuities (positive for log/sqrt/rsqrt, off the
integers for floor/mod, off 0 for abs/sign, off the bounds for clip, distinct values
for maximum/minimum). Piecewise-constant ops are multiplied by a smooth factor so a
wrong (non-zero) rule would show.
"""
from __future__ import annotations

import numpy as np

import layerkit as lk
from layerkit._core.op import apply
from layerkit.primitives import elementwise as E

_rng = np.random.default_rng(1234)


def _u(lo: float, hi: float, *shape: int) -> np.ndarray:
    return _rng.uniform(lo, hi, shape)


def _signed(lo: float, hi: float, *shape: int) -> np.ndarray:
    """Magnitudes in [lo, hi] with random signs (away from 0)."""
    return _u(lo, hi, *shape) * _rng.choice([-1.0, 1.0], shape)


def _off_integers(*shape: int) -> np.ndarray:
    """Values whose fractional part is in [0.15, 0.35] (away from integers and halves)."""
    return _rng.integers(-3, 3, shape) + _u(0.15, 0.35, *shape)


def _ratio_pair(*shape: int, y_shape: tuple | None = None) -> list:
    """x, y with y in [1.2, 1.8] and x / y at least 0.2 away from an integer."""
    y = _u(1.2, 1.8, *(shape if y_shape is None else y_shape))
    q = _rng.integers(-3, 3, shape) + _u(0.2, 0.8, *shape)
    return [q * y, y]


def _distinct_pair(*shape: int) -> list:
    """x, y differing by at least 0.3 everywhere (no ties)."""
    x = _u(-1.0, 1.0, *shape)
    return [x, x + _signed(0.3, 1.0, *shape)]


def _clip_x(*shape: int) -> np.ndarray:
    """Values in [-1.5, 1.5] at least 0.1 away from the bounds +-0.5."""
    x = _u(-1.5, 1.5, *shape)
    near = np.abs(np.abs(x) - 0.5) < 0.1
    return np.where(near, x * 1.5, x)


_COND = np.array([[True, False, True], [False, True, True]])

ROWS = [
    # arithmetic
    {"name": "add", "fn": lk.add, "args": [_u(-1, 1, 3, 1), _u(-1, 1, 1, 4)], "order": 2},
    {"name": "add", "fn": lk.add, "args": [_u(-1, 1), _u(-1, 1, 2, 3)], "order": 2},
    {"name": "add", "fn": lambda x: lk.add(x, 2.0), "args": [_u(-1, 1, 2, 3)], "order": 2},
    {"name": "subtract", "fn": lk.subtract, "args": [_u(-1, 1, 2, 3), _u(-1, 1, 3)],
     "order": 2},
    {"name": "subtract", "fn": lambda x: lk.subtract(1.5, x), "args": [_u(-1, 1, 4)],
     "order": 2},
    {"name": "multiply", "fn": lk.multiply, "args": [_u(-1, 1, 3, 1), _u(-1, 1, 1, 4)],
     "order": 3},
    {"name": "multiply", "fn": lk.multiply, "args": [_u(-1, 1, 2, 3), _u(-1, 1)],
     "order": 3},
    {"name": "divide", "fn": lk.divide, "args": [_u(-1, 1, 2, 3), _signed(0.5, 2, 3)],
     "order": 2},
    {"name": "divide", "fn": lambda y: lk.divide(2.0, y), "args": [_signed(0.5, 2, 5)],
     "order": 2},
    {"name": "floordiv", "fn": lambda x, y: lk.floordiv(x, y) * x * y,
     "args": _ratio_pair(2, 3), "order": 2},
    {"name": "mod", "fn": lk.mod, "args": _ratio_pair(2, 3), "order": 2},
    {"name": "mod", "fn": lk.mod, "args": _ratio_pair(3, 4, y_shape=(4,)), "order": 2},
    {"name": "negative", "fn": lk.negative, "args": [_u(-1, 1, 2, 3)], "order": 2},
    # powers and roots
    {"name": "pow", "fn": lk.pow, "args": [_u(0.5, 2, 3, 1), _u(-1.5, 1.5, 1, 4)],
     "order": 2},
    {"name": "pow", "fn": lambda x: lk.pow(x, 3.0), "args": [_u(-2, 2, 5)], "order": 2},
    {"name": "pow", "fn": lambda y: lk.pow(2.0, y), "args": [_u(-2, 2, 5)], "order": 2},
    {"name": "square", "fn": lk.square, "args": [_u(-2, 2, 2, 3)], "order": 2},
    {"name": "sqrt", "fn": lk.sqrt, "args": [_u(0.5, 3, 2, 3)], "order": 2},
    {"name": "rsqrt", "fn": lk.rsqrt, "args": [_u(0.5, 3, 2, 3)], "order": 2},
    # exponentials and logarithms
    {"name": "exp", "fn": lk.exp, "args": [_u(-2, 2, 2, 3)], "order": 3},
    {"name": "expm1", "fn": lk.expm1, "args": [_u(-2, 2, 2, 3)], "order": 2},
    {"name": "log", "fn": lk.log, "args": [_u(0.5, 3, 2, 3)], "order": 2},
    {"name": "log1p", "fn": lk.log1p, "args": [_u(-0.5, 2, 2, 3)], "order": 2},
    # trigonometric, hyperbolic, erf
    {"name": "sin", "fn": lk.sin, "args": [_u(-3, 3, 2, 3)], "order": 2},
    {"name": "cos", "fn": lk.cos, "args": [_u(-3, 3, 2, 3)], "order": 2},
    {"name": "tan", "fn": lk.tan, "args": [_u(-1, 1, 2, 3)], "order": 2},
    {"name": "tanh", "fn": lk.tanh, "args": [_u(-2, 2, 2, 3)], "order": 3},
    {"name": "sigmoid", "fn": lk.sigmoid, "args": [_u(-4, 4, 2, 3)], "order": 3},
    {"name": "tanh_grad", "fn": lambda y, g: apply(E._TANH_GRAD, y, g),
     "args": [_u(-0.9, 0.9, 2, 3), _u(-2, 2, 2, 3)], "order": 2},
    {"name": "sigmoid_grad", "fn": lambda y, g: apply(E._SIGMOID_GRAD, y, g),
     "args": [_u(0.1, 0.9, 2, 3), _u(-2, 2, 2, 3)], "order": 2},
    {"name": "erf", "fn": lk.erf, "args": [_u(-3, 3, 3, 4)], "order": 2},
    # sign and rounding
    {"name": "abs", "fn": lk.abs, "args": [_signed(0.2, 2, 2, 3)], "order": 2},
    {"name": "sign", "fn": lambda x: lk.sign(x) * x, "args": [_signed(0.2, 2, 2, 3)],
     "order": 2},
    {"name": "floor", "fn": lambda x: lk.floor(x) * x, "args": [_off_integers(2, 3)],
     "order": 2},
    {"name": "ceil", "fn": lambda x: lk.ceil(x) * x, "args": [_off_integers(2, 3)],
     "order": 2},
    {"name": "round", "fn": lambda x: lk.round(x) * x, "args": [_off_integers(2, 3)],
     "order": 2},
    # selection
    {"name": "maximum", "fn": lk.maximum, "args": _distinct_pair(2, 3), "order": 2},
    {"name": "maximum", "fn": lk.maximum, "args": [_u(-1, 1, 3, 1), np.full((1, 4), 0.05)],
     "order": 2},
    {"name": "minimum", "fn": lk.minimum, "args": _distinct_pair(2, 3), "order": 2},
    {"name": "minimum", "fn": lambda x: lk.minimum(x, 0.5), "args": [_clip_x(6)],
     "order": 2},
    {"name": "clip_by_value", "fn": lambda x: lk.clip_by_value(x, -0.5, 0.5),
     "args": [_clip_x(3, 4)], "order": 2},
    {"name": "clip_by_value", "fn": lk.clip_by_value,
     "args": [_clip_x(3, 4), np.full((1, 4), -0.5), np.full((3, 1), 0.5)], "order": 2},
    {"name": "where", "fn": lambda x, y: lk.where(_COND, x, y),
     "args": [_u(-1, 1, 2, 3), _u(-1, 1, 3)], "order": 2},
    {"name": "where", "fn": lambda x: lk.where(_COND, x, 0.0), "args": [_u(-1, 1, 1, 3)],
     "order": 2},
    # dtype
    {"name": "cast",
     "fn": lambda x: lk.cast(lk.square(lk.cast(x, np.longdouble)), np.float64),
     "args": [_u(-2, 2, 2, 3)], "order": 2},
]
