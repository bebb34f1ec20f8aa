"""keras.ops numpy-style functions, with Keras 3's semantics, on layerkit ops.

Differences from layerkit's TensorFlow-style names are Keras's: ``axis=None`` flattens
(``argmax``, ``cumsum``, ``take``, ``argsort``, ``concatenate``), ``transpose(x, axes)``,
``linspace(..., endpoint=)``, index results are int32, Python ints become int32 and
float-only math on integers returns float32.
"""
from __future__ import annotations

import builtins
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import numpy as np

import layerkit as lk
from layerkit._core.tensor import Tensor
from layerkit._core.types import AxisLike, DTypeLike, ShapeLike, TensorLike
from layerkit.keras_ops import _prims as P
from layerkit.keras_ops._prims import FLOATX, axes_arg, axis_one, dtype_arg, floating, t

__all__ = ["abs", "absolute", "add", "all", "allclose", "amax", "amin", "angle", "any",
           "append", "arange", "arccos", "arccosh", "arcsin", "arcsinh", "arctan",
           "arctan2", "arctanh", "argmax", "argmin", "argpartition", "argsort", "array",
           "array_split", "average", "bartlett", "bincount", "bitwise_and",
           "bitwise_invert", "bitwise_left_shift", "bitwise_not", "bitwise_or",
           "bitwise_right_shift", "bitwise_xor", "blackman", "broadcast_to", "cbrt",
           "ceil", "clip", "concatenate", "conj", "conjugate", "copy", "corrcoef",
           "correlate", "cos", "cosh", "count_nonzero", "cross", "cumprod", "cumsum",
           "deg2rad", "diag", "diagflat", "diagonal", "diff", "digitize", "divide",
           "divide_no_nan", "dot", "dsplit", "dstack", "einsum", "empty", "empty_like",
           "equal", "exp", "exp2", "expand_dims", "expm1", "eye", "fabs", "flip", "fliplr",
           "flipud", "floor", "floor_divide", "fmax", "fmin", "fmod", "full", "full_like",
           "gcd", "geomspace", "get_item", "greater", "greater_equal", "hamming",
           "hanning", "heaviside", "histogram", "hsplit", "hstack", "hypot", "i0",
           "identity", "imag", "inner", "isclose", "isfinite", "isin", "isinf", "isnan",
           "isneginf", "isposinf", "isreal", "kaiser", "kron", "lcm", "ldexp",
           "left_shift", "less", "less_equal", "linspace", "log", "log10", "log1p", "log2",
           "logaddexp", "logaddexp2", "logical_and", "logical_not", "logical_or",
           "logical_xor", "logspace", "matmul", "max", "maximum", "mean", "median",
           "meshgrid", "min", "minimum", "mod", "moveaxis", "multiply", "nan_to_num",
           "nanargmax", "nanargmin", "nancumprod", "nancumsum", "nanmax", "nanmean",
           "nanmedian", "nanmin", "nanpercentile", "nanprod", "nanquantile", "nanstd",
           "nansum", "nanvar", "ndim", "negative", "nextafter", "nonzero", "not_equal",
           "ones", "ones_like", "outer", "pad", "percentile", "power", "prod", "ptp",
           "quantile", "rad2deg", "ravel", "real", "reciprocal", "repeat", "reshape",
           "right_shift", "roll", "rot90", "round", "searchsorted", "select", "sign",
           "signbit", "sin", "sinc", "sinh", "size", "sort", "split", "sqrt", "square",
           "squeeze", "stack", "std", "subtract", "sum", "swapaxes", "take",
           "take_along_axis", "tan", "tanh", "tensordot", "tile", "trace", "transpose",
           "trapezoid", "tri", "tril", "triu", "true_divide", "trunc", "unique",
           "unravel_index", "vander", "var", "vdot", "vectorize", "view", "vsplit",
           "vstack", "where", "zeros", "zeros_like"]

_INT = np.dtype("int32")


def _kw_axis(axis):
    return None if axis is None else (tuple(axis) if isinstance(axis, list) else axis)


# ---- elementwise: unary ----------------------------------------------------------------
_F = TypeVar("_F", bound=Callable[..., Any])
#: the signatures the factories below give their ops.
Unary = Callable[[TensorLike], Tensor]
Binary = Callable[[TensorLike, TensorLike], Tensor]


def _named(name: str, fn: _F, doc: str, args: str = "x") -> _F:
    """``fn`` named ``name`` with a docstring (the factories below make many ops)."""
    fn.__name__ = fn.__qualname__ = name
    names = args.split(", ")
    what = ["the input"] if len(names) == 1 else ["the first input", "the second input"]
    lines = "".join(f"    {a}: {w}.\n" for a, w in zip(names, what))
    fn.__doc__ = f"{doc}.\n\nArgs:\n{lines}"
    return fn


def _float_unary(name: str, fn: Callable, doc: str) -> Unary:
    def op(x: TensorLike) -> Tensor:
        return fn(floating(x, name))

    return _named(name, op, f"{doc} (integer and bool inputs give float32)")


def _keep_unary(name: str, fn: Callable, doc: str) -> Unary:
    def op(x: TensorLike) -> Tensor:
        return fn(t(x))

    return _named(name, op, f"{doc} (keeps the input dtype)")


_LN2 = float(np.log(2.0))
_LN10 = float(np.log(10.0))


def _sinh(x):
    return (lk.exp(x) - lk.exp(-x)) * 0.5


def _cosh(x):
    return (lk.exp(x) + lk.exp(-x)) * 0.5


def _arcsinh(x):
    a = lk.abs(x)
    return lk.sign(x) * lk.log(a + lk.sqrt(a * a + 1.0))


def _cbrt(x):
    return lk.sign(x) * lk.pow(lk.abs(x), 1.0 / 3.0)


def _sinc(x):
    zero = lk.equal(x, 0.0)
    px = float(np.pi) * lk.where(zero, 1.0, x)
    return lk.where(zero, 1.0, lk.sin(px) / px)


sqrt = _float_unary("sqrt", lk.sqrt, "Square root")
exp = _float_unary("exp", lk.exp, "e to the power x")
exp2 = _float_unary("exp2", lambda x: lk.exp(x * _LN2), "2 to the power x")
expm1 = _float_unary("expm1", lk.expm1, "exp(x) - 1, accurate near 0")
log = _float_unary("log", lk.log, "Natural logarithm")
log2 = _float_unary("log2", lambda x: lk.log(x) * (1.0 / _LN2), "Base-2 logarithm")
log10 = _float_unary("log10", lambda x: lk.log(x) * (1.0 / _LN10), "Base-10 logarithm")
log1p = _float_unary("log1p", lk.log1p, "log(1 + x), accurate near 0")
sin = _float_unary("sin", lk.sin, "Sine")
cos = _float_unary("cos", lk.cos, "Cosine")
tan = _float_unary("tan", lk.tan, "Tangent")
tanh = _float_unary("tanh", lk.tanh, "Hyperbolic tangent")
sinh = _float_unary("sinh", _sinh, "Hyperbolic sine")
cosh = _float_unary("cosh", _cosh, "Hyperbolic cosine")
arcsin = _float_unary("arcsin", P.arcsin, "Inverse sine")
arccos = _float_unary("arccos", P.arccos, "Inverse cosine")
arctan = _float_unary("arctan", P.arctan, "Inverse tangent")
arcsinh = _float_unary("arcsinh", _arcsinh, "Inverse hyperbolic sine")
arccosh = _float_unary("arccosh", lambda x: lk.log(x + lk.sqrt(x * x - 1.0)),
                       "Inverse hyperbolic cosine")
arctanh = _float_unary("arctanh", lambda x: 0.5 * (lk.log1p(x) - lk.log1p(-x)),
                       "Inverse hyperbolic tangent")
cbrt = _float_unary("cbrt", _cbrt, "Cube root")
reciprocal = _float_unary("reciprocal", lambda x: 1.0 / x, "1 / x")
sinc = _float_unary("sinc", _sinc, "Normalised sinc: sin(pi x) / (pi x), 1 at 0")
deg2rad = _float_unary("deg2rad", lambda x: x * float(np.pi / 180.0), "Degrees to radians")
rad2deg = _float_unary("rad2deg", lambda x: x * float(180.0 / np.pi), "Radians to degrees")
fabs = _float_unary("fabs", lk.abs, "Absolute value as a float")
ceil = _float_unary("ceil", lk.ceil, "Smallest integer >= x, as a float")
floor = _float_unary("floor", lk.floor, "Largest integer <= x, as a float")
abs = _keep_unary("abs", lk.abs, "Absolute value")  # noqa: A001
absolute = _keep_unary("absolute", lk.abs, "Absolute value")
negative = _keep_unary("negative", lk.negative, "-x")
sign = _keep_unary("sign", lambda x: x if x.dtype == bool else lk.sign(x),
                   "-1, 0 or 1 by the sign of x")
square = _keep_unary("square", lambda x: lk.square(lk.cast(x, _INT) if x.dtype == bool
                                                   else x), "x * x")
isfinite = _keep_unary("isfinite", lk.isfinite, "Whether x is finite; bool")
isnan = _keep_unary("isnan", lk.isnan, "Whether x is NaN; bool")


def _isinf(x):
    return lk.logical_and(lk.logical_not(lk.isfinite(x)), lk.logical_not(lk.isnan(x)))


isinf = _keep_unary("isinf", _isinf, "Whether x is +inf or -inf; bool")
isposinf = _keep_unary("isposinf", lambda x: lk.logical_and(_isinf(x), x > 0),
                       "Whether x is +inf; bool")
isneginf = _keep_unary("isneginf", lambda x: lk.logical_and(_isinf(x), x < 0),
                       "Whether x is -inf; bool")


def trunc(x: TensorLike) -> Tensor:
    """Round towards zero (keeps the dtype; integers are returned as they are)."""
    x = t(x)
    if x.dtype.kind != "f":
        return x
    return lk.where(x < 0, lk.ceil(x), lk.floor(x))


def round(x: TensorLike, decimals: int = 0) -> Tensor:  # noqa: A001 - Keras's name
    """Round half to even to ``decimals`` places (integers unchanged when decimals >= 0)."""
    x = t(x)
    if x.dtype.kind in "iu":
        if decimals >= 0:
            return x
        f = 10 ** (-decimals)
        return lk.cast(lk.round(lk.cast(x, FLOATX) / f) * f, x.dtype)
    if decimals == 0:
        return lk.round(x)
    f = float(10.0 ** decimals)
    return lk.round(x * f) / f


def signbit(x: TensorLike) -> Tensor:
    """Whether the sign bit is set (true for -0.0 and negative values); bool."""
    return P.run("signbit", np.signbit, t(x))


def isreal(x: TensorLike) -> Tensor:
    """Whether each element has a zero imaginary part (all true for real tensors)."""
    x = t(x)
    if x.dtype.kind == "c":
        return P.run("isreal", np.isreal, x)
    return lk.ones(x.shape, "bool")


def real(x: TensorLike) -> Tensor:
    """The real part (the tensor itself for real input)."""
    x = t(x)
    return P.run("real", np.real, x) if x.dtype.kind == "c" else x


def imag(x: TensorLike) -> Tensor:
    """The imaginary part (zeros for real input)."""
    x = t(x)
    return P.run("imag", np.imag, x) if x.dtype.kind == "c" else lk.zeros_like(x)


def conjugate(x: TensorLike) -> Tensor:
    """Complex conjugate (the tensor itself for real input)."""
    x = t(x)
    return P.run("conj", np.conj, x) if x.dtype.kind == "c" else x


conj = conjugate


def angle(x: TensorLike) -> Tensor:
    """The complex argument; for real input pi where x < 0, else 0 (float)."""
    x = t(x)
    if x.dtype.kind == "c":
        return P.run("angle", np.angle, x)
    x = floating(x)
    return lk.where(x < 0, float(np.pi), lk.zeros_like(x))


def nan_to_num(x: TensorLike, nan: float = 0.0, posinf: float | None = None,
               neginf: float | None = None) -> Tensor:
    """NaN replaced by ``nan`` and infinities by ``posinf``/``neginf`` (default: the
    dtype's largest/smallest finite value)."""
    x = t(x)
    if x.dtype.kind != "f":
        return x
    fi = np.finfo(x.dtype)
    hi = float(fi.max) if posinf is None else float(posinf)
    lo = float(fi.min) if neginf is None else float(neginf)
    y = lk.where(lk.isnan(x), float(nan), x)
    y = lk.where(lk.logical_and(_isinf(y), y > 0), hi, y)
    return lk.where(lk.logical_and(_isinf(y), y < 0), lo, y)


# ---- elementwise: binary ------------------------------------------------------------------
def _operands(x1, x2):
    """Tensors in Keras's common dtype, except that Python scalars stay weak."""
    a = x1 if _py_scalar(x1) else t(x1)
    b = x2 if _py_scalar(x2) else t(x2)
    if not isinstance(a, Tensor) and not isinstance(b, Tensor):
        a = t(a)
    return P.promote([a, b])


def _binary(name: str, fn: Callable, doc: str) -> Binary:
    def op(x1: TensorLike, x2: TensorLike) -> Tensor:
        return fn(*_operands(x1, x2))

    return _named(name, op, f"{doc} (broadcasting; Keras type promotion)", "x1, x2")


def _float_binary(name: str, fn: Callable, doc: str) -> Binary:
    def op(x1: TensorLike, x2: TensorLike) -> Tensor:
        return fn(*P.float_pair(x1, x2))

    return _named(name, op, f"{doc} (broadcasting; integers give float32)", "x1, x2")


def _py_scalar(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, Tensor)


def _fmod(a, b):
    kinds = {v.dtype.kind if isinstance(v, Tensor) else type(v).__name__ for v in (a, b)}
    if not kinds & {"f", "c", "float"}:
        return lk.sign(a) * lk.mod(lk.abs(a), builtins.abs(b) if _py_scalar(b) else lk.abs(b))
    q = a / b
    return a - lk.where(q < 0, lk.ceil(q), lk.floor(q)) * b


def _logaddexp(a, b):
    m = lk.maximum(a, b)
    return m + lk.log1p(lk.exp(-lk.abs(a - b)))


def _arctan2(y, x):
    y, x = t(y), t(x)
    shape_ = np.broadcast_shapes(y.shape, x.shape)
    return _ARCTAN2(lk.broadcast_to(y, shape_), lk.broadcast_to(lk.cast(x, y.dtype), shape_))


def _arctan2_prim():
    from layerkit._core.op import Op, apply

    def vjp(g, ins, out, needs):
        y, x = ins
        r = x * x + y * y
        return (g * x / r, -g * y / r)

    op = Op("keras_arctan2", np.arctan2, vjp)
    return lambda y, x: apply(op, y, x)


_ARCTAN2 = _arctan2_prim()


def _fmax(a, b, pick):
    a, b = t(a), t(b)
    m = pick(a, b)
    return lk.where(lk.isnan(a), b, lk.where(lk.isnan(b), a, m)) if m.dtype.kind == "f" else m


add = _binary("add", lk.add, "x1 + x2")
subtract = _binary("subtract", lk.subtract, "x1 - x2")
multiply = _binary("multiply", lk.multiply, "x1 * x2")
divide = _float_binary("divide", lk.divide, "True division x1 / x2")
true_divide = _float_binary("true_divide", lk.divide, "True division x1 / x2")
floor_divide = _binary("floor_divide", lk.floordiv, "Floor division x1 // x2")
mod = _binary("mod", lk.mod, "Remainder with the sign of x2 (Python's %)")
fmod = _binary("fmod", _fmod, "Remainder with the sign of x1 (C's fmod)")
power = _binary("power", lk.pow, "x1 ** x2")
maximum = _binary("maximum", lk.maximum, "Elementwise maximum (NaN propagates)")
minimum = _binary("minimum", lk.minimum, "Elementwise minimum (NaN propagates)")
fmax = _binary("fmax", lambda a, b: _fmax(a, b, lk.maximum),
               "Elementwise maximum ignoring NaN")
fmin = _binary("fmin", lambda a, b: _fmax(a, b, lk.minimum),
               "Elementwise minimum ignoring NaN")
equal = _binary("equal", lk.equal, "x1 == x2; bool")
not_equal = _binary("not_equal", lk.not_equal, "x1 != x2; bool")
greater = _binary("greater", lk.greater, "x1 > x2; bool")
greater_equal = _binary("greater_equal", lk.greater_equal, "x1 >= x2; bool")
less = _binary("less", lk.less, "x1 < x2; bool")
less_equal = _binary("less_equal", lk.less_equal, "x1 <= x2; bool")
arctan2 = _float_binary("arctan2", _arctan2, "Angle of the point (x2, x1) in radians")
hypot = _float_binary("hypot", lambda a, b: lk.sqrt(a * a + b * b), "sqrt(x1**2 + x2**2)")
logaddexp = _float_binary("logaddexp", _logaddexp, "log(exp(x1) + exp(x2)), stable")
logaddexp2 = _float_binary("logaddexp2", lambda a, b: _logaddexp(a * _LN2, b * _LN2)
                           * (1.0 / _LN2), "log2(2**x1 + 2**x2), stable")
heaviside = _float_binary("heaviside", lambda a, b: lk.where(
    a < 0, 0.0, lk.where(a > 0, 1.0, b + lk.zeros_like(a))), "Heaviside step; x2 at 0")
ldexp = _binary("ldexp", lambda a, b: lk.cast(a, FLOATX) * lk.pow(2.0, lk.cast(b, FLOATX))
                if t(a).dtype.kind != "f" else a * lk.pow(2.0, lk.cast(b, t(a).dtype)),
                "x1 * 2 ** x2")


def _bool_binary(name: str, fn: Callable, doc: str) -> Binary:
    def op(x1: TensorLike, x2: TensorLike) -> Tensor:
        return fn(lk.cast(t(x1), "bool"), lk.cast(t(x2), "bool"))

    return _named(name, op, f"{doc}; inputs are read as bools", "x1, x2")


logical_and = _bool_binary("logical_and", lk.logical_and, "Elementwise and")
logical_or = _bool_binary("logical_or", lk.logical_or, "Elementwise or")
logical_xor = _bool_binary("logical_xor", lk.not_equal, "Elementwise exclusive or")


def logical_not(x: TensorLike) -> Tensor:
    """Elementwise not; input read as bools."""
    return lk.logical_not(lk.cast(t(x), "bool"))


def _np_binary(name: str, fn: Callable, doc: str) -> Binary:
    def op(x1: TensorLike, x2: TensorLike) -> Tensor:
        return P.run(name, fn, t(x1), t(x2))

    return _named(name, op, f"{doc} (no gradient)", "x1, x2")


bitwise_and = _np_binary("bitwise_and", np.bitwise_and, "Bitwise and of integers")
bitwise_or = _np_binary("bitwise_or", np.bitwise_or, "Bitwise or of integers")
bitwise_xor = _np_binary("bitwise_xor", np.bitwise_xor, "Bitwise xor of integers")
bitwise_left_shift = _np_binary("bitwise_left_shift", np.left_shift, "x << y")
bitwise_right_shift = _np_binary("bitwise_right_shift", np.right_shift, "x >> y")
left_shift = _np_binary("left_shift", np.left_shift, "x << y")
right_shift = _np_binary("right_shift", np.right_shift, "x >> y")
gcd = _np_binary("gcd", np.gcd, "Greatest common divisor")
lcm = _np_binary("lcm", np.lcm, "Least common multiple")
nextafter = _np_binary("nextafter", np.nextafter, "Next float after x1 towards x2")


def bitwise_invert(x: TensorLike) -> Tensor:
    """Bitwise not of integers (logical not of bools); no gradient."""
    return P.run("bitwise_invert", np.invert, t(x))


bitwise_not = bitwise_invert


def divide_no_nan(x1: TensorLike, x2: TensorLike) -> Tensor:
    """x1 / x2, with 0 where x2 == 0 (integers give float32)."""
    a, b = P.float_pair(x1, x2)
    zero = lk.equal(b, 0.0)
    return lk.where(zero, 0.0, a / lk.where(zero, 1.0, b))


def isclose(x1: TensorLike, x2: TensorLike, rtol: float = 1e-5, atol: float = 1e-8,
            equal_nan: bool = False) -> Tensor:
    """``|x1 - x2| <= atol + rtol * |x2|`` elementwise; bool."""
    a, b = P.float_pair(x1, x2)
    close = lk.less_equal(lk.abs(a - b), atol + rtol * lk.abs(b))
    close = lk.logical_or(close, lk.equal(a, b))
    if equal_nan:
        close = lk.logical_or(close, lk.logical_and(lk.isnan(a), lk.isnan(b)))
    return close


def allclose(x1: TensorLike, x2: TensorLike, rtol: float = 1e-5, atol: float = 1e-8,
             equal_nan: bool = False) -> Tensor:
    """Whether ``isclose`` holds everywhere; a bool scalar tensor."""
    return lk.reduce_all(isclose(x1, x2, rtol, atol, equal_nan))


def clip(x: TensorLike, x_min: TensorLike, x_max: TensorLike) -> Tensor:
    """``x`` limited to ``[x_min, x_max]`` (bool input becomes int32)."""
    x = t(x)
    if x.dtype == bool:
        x = lk.cast(x, _INT)
    return lk.minimum(lk.maximum(x, x_min), x_max)


def where(condition: TensorLike, x1: TensorLike | None = None, x2: TensorLike | None = None) -> Any:
    """``x1`` where ``condition`` else ``x2``; with one argument, ``nonzero(condition)``."""
    if x1 is None and x2 is None:
        return nonzero(condition)
    if x1 is None or x2 is None:
        raise ValueError("keras_ops.where: pass both x1 and x2, or neither")
    return lk.where(lk.cast(t(condition), "bool"), *_operands(x1, x2))


def select(condlist: Any, choicelist: Any, default: int = 0) -> Tensor:
    """The first ``choicelist[i]`` whose ``condlist[i]`` holds, else ``default``."""
    if len(condlist) != len(choicelist):
        raise ValueError(f"keras_ops.select: condlist has {len(condlist)} entries and "
                         f"choicelist {len(choicelist)}; they must match")
    choices = [t(c) for c in choicelist]
    out = default if _py_scalar(default) else t(default)
    shape_ = np.broadcast_shapes(*[c.shape for c in choices],
                                 *[np.shape(t(c)) for c in condlist])
    out = lk.broadcast_to(lk.cast(t(out), choices[0].dtype) if choices else t(out), shape_)
    for c, v in zip(reversed(condlist), reversed(choices)):
        out = lk.where(lk.cast(t(c), "bool"), v, out)
    return out


# ---- creation -----------------------------------------------------------------------------
def _creation_dtype(dtype, default, who):
    d = dtype_arg(dtype, who)
    return np.dtype(default) if d is None else d


def zeros(shape: int | ShapeLike, dtype: DTypeLike = None) -> Tensor:
    """Zeros of ``shape`` (float32 by default)."""
    return lk.zeros(_shape_tuple(shape), _creation_dtype(dtype, FLOATX, "zeros"))


def ones(shape: int | ShapeLike, dtype: DTypeLike = None) -> Tensor:
    """Ones of ``shape`` (float32 by default)."""
    return lk.ones(_shape_tuple(shape), _creation_dtype(dtype, FLOATX, "ones"))


def empty(shape: int | ShapeLike, dtype: DTypeLike = None) -> Tensor:
    """A tensor of ``shape`` (zeros: layerkit never exposes uninitialised memory)."""
    return zeros(shape, dtype)


def full(shape: int | ShapeLike, fill_value: Any, dtype: DTypeLike = None) -> Tensor:
    """``shape`` filled with ``fill_value`` (float32 unless ``dtype`` says otherwise)."""
    d = _creation_dtype(dtype, FLOATX, "full")
    return lk.broadcast_to(lk.cast(t(fill_value), d), _shape_tuple(shape))


def zeros_like(x: TensorLike, dtype: DTypeLike = None) -> Tensor:
    """Zeros with the shape (and, unless ``dtype``, the dtype) of ``x``."""
    x = t(x)
    return lk.zeros(x.shape, dtype_arg(dtype, "zeros_like") or x.dtype)


def ones_like(x: TensorLike, dtype: DTypeLike = None) -> Tensor:
    """Ones with the shape (and, unless ``dtype``, the dtype) of ``x``."""
    x = t(x)
    return lk.ones(x.shape, dtype_arg(dtype, "ones_like") or x.dtype)


def empty_like(x: TensorLike, dtype: DTypeLike = None) -> Tensor:
    """Like ``zeros_like`` (layerkit never exposes uninitialised memory)."""
    return zeros_like(x, dtype)


def full_like(x: TensorLike, fill_value: Any, dtype: DTypeLike = None) -> Tensor:
    """``x``'s shape filled with ``fill_value`` (``x``'s dtype unless ``dtype``)."""
    x = t(x)
    d = dtype_arg(dtype, "full_like") or x.dtype
    return lk.broadcast_to(lk.cast(t(fill_value), d), x.shape)


def _shape_tuple(shape) -> tuple:
    if isinstance(shape, (int, np.integer)):
        return (int(shape),)
    return tuple(int(s) for s in shape)


def arange(start: Any, stop: Any = None, step: int | None = None,
           dtype: DTypeLike = None) -> Tensor:
    """``[start, stop)`` in steps of ``step``; int32 for ints, float32 otherwise."""
    if stop is None:
        start, stop = 0, start
    if step is None:
        step = 1
    vals = [float(v) if isinstance(v, Tensor) else v for v in (start, stop, step)]
    if step == 0:
        raise ValueError("keras_ops.arange: step must not be 0")
    ints = builtins.all(isinstance(v, (int, np.integer)) for v in vals)
    d = dtype_arg(dtype, "arange") or (_INT if ints else FLOATX)
    return lk.constant(np.arange(*vals).astype(d))


def linspace(start: Any, stop: Any, num: int = 50, endpoint: bool = True, retstep: bool = False,
             dtype: DTypeLike = None, axis: int = 0) -> Any:
    """``num`` evenly spaced values from ``start`` to ``stop`` (``endpoint`` included
    by default); float32 unless ``dtype``. Array ``start``/``stop`` add an axis at
    ``axis``. Differentiable in ``start`` and ``stop``."""
    num = int(num)
    if num < 0:
        raise ValueError(f"keras_ops.linspace: num must be >= 0, received {num}")
    a, b = P.float_pair(start, stop)
    a = t(a)
    b = lk.cast(t(b), a.dtype)
    div = (num - 1) if endpoint else num
    steps = np.arange(num, dtype=a.dtype).reshape((num,) + (1,) * builtins.max(
        a.ndim, b.ndim))
    delta = b - a
    step = delta / float(div) if div > 0 else delta * float("nan")
    out = a + steps * step if div > 0 else a + steps * delta
    if endpoint and num > 1:
        last = np.zeros(out.shape, bool)
        last[-1] = True
        out = lk.where(last, lk.broadcast_to(b, out.shape), out)
    if out.ndim > 1 and axis != 0:
        out = moveaxis(out, 0, axis)
    d = dtype_arg(dtype, "linspace")
    if d is not None:
        out = lk.cast(out, d)
    return (out, step) if retstep else out


def logspace(start: Any, stop: Any, num: int = 50, endpoint: bool = True, base: int = 10,
             dtype: DTypeLike = None, axis: int = 0) -> Tensor:
    """``base ** linspace(start, stop, ...)``."""
    y = linspace(start, stop, num, endpoint, axis=axis)
    out = lk.exp(y * float(np.log(base)))
    d = dtype_arg(dtype, "logspace")
    return lk.cast(out, d) if d is not None else out


def geomspace(start: Any, stop: Any, num: int = 50, endpoint: bool = True, dtype: DTypeLike = None,
              axis: int = 0) -> Tensor:
    """Geometric progression from ``start`` to ``stop`` (same sign, non-zero)."""
    a, b = P.float_pair(start, stop)
    a = t(a)
    b = lk.cast(t(b), a.dtype)
    s = lk.sign(a)
    y = linspace(lk.log(lk.abs(a)), lk.log(lk.abs(b)), num, endpoint, axis=axis)
    out = lk.exp(y) * s
    d = dtype_arg(dtype, "geomspace")
    return lk.cast(out, d) if d is not None else out


def eye(N: int, M: int | None = None, k: int = 0, dtype: DTypeLike = None) -> Tensor:
    """An ``N x M`` matrix with ones on diagonal ``k``."""
    return lk.constant(np.eye(int(N), None if M is None else int(M), int(k),
                              dtype=_creation_dtype(dtype, FLOATX, "eye")))


def identity(n: int, dtype: DTypeLike = None) -> Tensor:
    """The ``n x n`` identity matrix."""
    return eye(n, dtype=dtype)


def tri(N: int, M: int | None = None, k: int = 0, dtype: DTypeLike = None) -> Tensor:
    """Ones at and below diagonal ``k`` of an ``N x M`` matrix."""
    return lk.constant(np.tri(int(N), None if M is None else int(M), int(k),
                              dtype=_creation_dtype(dtype, FLOATX, "tri")))


def _tri_mask(x: Tensor, k: int, lower: bool) -> np.ndarray:
    if x.ndim < 2:
        raise ValueError(f"keras_ops.{'tril' if lower else 'triu'}: x must have rank >= 2, "
                         f"received shape {x.shape}")
    n, m = x.shape[-2:]
    mask = np.tri(n, m, k, dtype=bool)
    return mask if lower else ~np.tri(n, m, k - 1, dtype=bool)


def tril(x: TensorLike, k: int = 0) -> Tensor:
    """``x`` with entries above diagonal ``k`` (of the last two axes) zeroed."""
    x = t(x)
    return lk.where(_tri_mask(x, int(k), True), x, lk.zeros_like(x))


def triu(x: TensorLike, k: int = 0) -> Tensor:
    """``x`` with entries below diagonal ``k`` (of the last two axes) zeroed."""
    x = t(x)
    return lk.where(_tri_mask(x, int(k), False), x, lk.zeros_like(x))


def diagonal(x: TensorLike, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Tensor:
    """The diagonal ``offset`` of the 2-D slices on ``axis1``/``axis2``, as the last axis."""
    x = t(x)
    a1, a2 = axis_one(axis1, x.ndim, "diagonal"), axis_one(axis2, x.ndim, "diagonal")
    if a1 == a2:
        raise ValueError("keras_ops.diagonal: axis1 and axis2 must differ")
    rest = [i for i in range(x.ndim) if i not in (a1, a2)]
    y = lk.transpose(x, rest + [a1, a2])
    n, m = y.shape[-2:]
    offset = int(offset)
    rows = np.arange(builtins.max(0, -offset), n)
    cols = rows + offset
    keep = (cols >= 0) & (cols < m)
    rows, cols = rows[keep], cols[keep]
    if rows.size == 0:
        return lk.zeros(y.shape[:-2] + (0,), y.dtype)
    flat = lk.reshape(y, y.shape[:-2] + (n * m,))
    return lk.gather(flat, lk.constant((rows * m + cols).astype(np.int64)), axis=flat.ndim - 1)


def diag(x: TensorLike, k: int = 0) -> Tensor:
    """1-D ``x``: a square matrix with ``x`` on diagonal ``k``; 2-D: that diagonal."""
    x = t(x)
    k = int(k)
    if x.ndim == 2:
        return diagonal(x, k)
    if x.ndim != 1:
        raise ValueError(f"keras_ops.diag: x must be 1-D or 2-D, received shape {x.shape}")
    n = x.shape[0] + builtins.abs(k)
    i = np.arange(x.shape[0])
    idx = np.stack([i + builtins.max(0, -k), i + builtins.max(0, k)], -1)
    return P.scatter_add(lk.constant(idx), x, (n, n))


def diagflat(x: TensorLike, k: int = 0) -> Tensor:
    """``diag`` of the flattened ``x``."""
    return diag(ravel(x), k)


def trace(x: TensorLike, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Tensor:
    """Sum along the diagonal ``offset`` (bool/int8/int16 sums as int32)."""
    d = diagonal(x, offset, axis1, axis2)
    if d.dtype.kind == "b" or (d.dtype.kind in "iu" and d.dtype.itemsize < 4):
        d = lk.cast(d, _INT)
    return lk.reduce_sum(d, axis=-1)


def vander(x: TensorLike, N: int | None = None, increasing: bool = False) -> Tensor:
    """Vandermonde matrix of 1-D ``x``: columns are powers of ``x``."""
    x = t(x)
    if x.ndim != 1:
        raise ValueError(f"keras_ops.vander: x must be 1-D, received shape {x.shape}")
    n = x.shape[0] if N is None else int(N)
    powers = np.arange(n) if increasing else np.arange(n)[::-1]
    cols = [lk.ones_like(x) if p == 0 else lk.pow(x, int(p)) for p in powers]
    return lk.stack(cols, axis=1) if cols else lk.zeros((x.shape[0], 0), x.dtype)


def meshgrid(*x: TensorLike, indexing: str = "xy") -> list:
    """Coordinate grids from 1-D vectors (``indexing`` "xy" or "ij")."""
    if indexing not in ("xy", "ij"):
        raise ValueError(f"keras_ops.meshgrid: indexing must be 'xy' or 'ij', "
                         f"received {indexing!r}")
    xs = [ravel(v) for v in x]
    shape_ = [v.shape[0] for v in xs]
    if indexing == "xy" and len(xs) >= 2:
        shape_[0], shape_[1] = shape_[1], shape_[0]
    out = []
    for i, v in enumerate(xs):
        pos = i
        if indexing == "xy" and len(xs) >= 2 and i < 2:
            pos = 1 - i
        view = [1] * len(xs)
        view[pos] = v.shape[0]
        out.append(lk.broadcast_to(lk.reshape(v, view), shape_))
    return out


def _window(name: str, fn: Callable) -> Callable[[int], Tensor]:
    def op(x: int) -> Tensor:
        return lk.constant(fn(int(x)).astype(FLOATX))

    return _named(name, op, f"The {name} window of length ``x`` (float32)")


bartlett = _window("bartlett", np.bartlett)
blackman = _window("blackman", np.blackman)
hamming = _window("hamming", np.hamming)
hanning = _window("hanning", np.hanning)


def kaiser(x: int, beta: float) -> Tensor:
    """The Kaiser window of length ``x`` with shape parameter ``beta`` (float32)."""
    return lk.constant(np.kaiser(int(x), float(beta)).astype(FLOATX))


def i0(x: TensorLike) -> Tensor:
    """Modified Bessel function of the first kind, order 0 (no gradient)."""
    return P.run("i0", np.i0, floating(x))


# ---- reductions ----------------------------------------------------------------------------
def _red_axis(x: Tensor, axis, who: str):
    ax = axes_arg(axis, x.ndim, who)
    return None if ax is None else list(ax)


def _sum_dtype(x: Tensor) -> Tensor:
    if x.dtype.kind == "b" or (x.dtype.kind in "iu" and x.dtype.itemsize < 4):
        return lk.cast(x, _INT)
    return x


def sum(x: TensorLike, axis: AxisLike = None, keepdims: bool = False) -> Tensor:  # noqa: A001
    """Sum over ``axis`` (None: all); bool and small ints sum as int32."""
    x = _sum_dtype(t(x))
    return lk.reduce_sum(x, axis=_red_axis(x, axis, "sum"), keepdims=keepdims)


def prod(x: TensorLike, axis: AxisLike = None, keepdims: bool = False,
         dtype: DTypeLike = None) -> Tensor:
    """Product over ``axis``; bool and small ints multiply as int32."""
    x = _sum_dtype(t(x))
    d = dtype_arg(dtype, "prod")
    if d is not None:
        x = lk.cast(x, d)
    return lk.reduce_prod(x, axis=_red_axis(x, axis, "prod"), keepdims=keepdims)


def mean(x: TensorLike, axis: AxisLike = None, keepdims: bool = False) -> Tensor:
    """Arithmetic mean over ``axis``; integers give float32."""
    x = floating(x)
    return lk.reduce_mean(x, axis=_red_axis(x, axis, "mean"), keepdims=keepdims)


def var(x: TensorLike, axis: AxisLike = None, keepdims: bool = False) -> Tensor:
    """Population variance over ``axis``; integers give float32."""
    x = floating(x)
    return lk.reduce_variance(x, axis=_red_axis(x, axis, "var"), keepdims=keepdims)


def std(x: TensorLike, axis: AxisLike = None, keepdims: bool = False) -> Tensor:
    """Population standard deviation over ``axis``; integers give float32."""
    x = floating(x)
    return lk.reduce_std(x, axis=_red_axis(x, axis, "std"), keepdims=keepdims)


def max(x: TensorLike, axis: AxisLike = None, keepdims: bool = False,
        initial: Any = None) -> Tensor:  # noqa: A001
    """Maximum over ``axis``; ``initial`` is included in the comparison."""
    x = t(x)
    out = lk.reduce_max(x, axis=_red_axis(x, axis, "max"), keepdims=keepdims)
    return out if initial is None else lk.maximum(out, lk.cast(t(initial), out.dtype))


def min(x: TensorLike, axis: AxisLike = None, keepdims: bool = False,
        initial: Any = None) -> Tensor:  # noqa: A001
    """Minimum over ``axis``; ``initial`` is included in the comparison."""
    x = t(x)
    out = lk.reduce_min(x, axis=_red_axis(x, axis, "min"), keepdims=keepdims)
    return out if initial is None else lk.minimum(out, lk.cast(t(initial), out.dtype))


amax = max
amin = min


def all(x: TensorLike, axis: AxisLike = None, keepdims: bool = False) -> Tensor:  # noqa: A001
    """Whether all entries over ``axis`` are true (non-zero)."""
    x = lk.cast(t(x), "bool")
    return lk.reduce_all(x, axis=_red_axis(x, axis, "all"), keepdims=keepdims)


def any(x: TensorLike, axis: AxisLike = None, keepdims: bool = False) -> Tensor:  # noqa: A001
    """Whether any entry over ``axis`` is true (non-zero)."""
    x = lk.cast(t(x), "bool")
    return lk.reduce_any(x, axis=_red_axis(x, axis, "any"), keepdims=keepdims)


def count_nonzero(x: TensorLike, axis: AxisLike = None) -> Tensor:
    """Number of non-zero entries over ``axis``; int32."""
    x = lk.cast(lk.not_equal(t(x), 0), _INT)
    return lk.reduce_sum(x, axis=_red_axis(x, axis, "count_nonzero"))


def ptp(x: TensorLike, axis: AxisLike = None, keepdims: bool = False) -> Tensor:
    """max - min over ``axis``."""
    return max(x, axis, keepdims) - min(x, axis, keepdims)


def average(x: TensorLike, axis: AxisLike = None, weights: TensorLike | None = None) -> Tensor:
    """Weighted mean over ``axis``; 1-D ``weights`` apply along ``axis``."""
    x = floating(x)
    if weights is None:
        return mean(x, axis)
    w = lk.cast(t(weights), x.dtype)
    if w.ndim == 1 and x.ndim > 1:
        if axis is None or isinstance(axis, (list, tuple)):
            raise ValueError("keras_ops.average: 1-D weights need a single int axis")
        ax = axis_one(axis, x.ndim, "average")
        view = [1] * x.ndim
        view[ax] = w.shape[0]
        w = lk.reshape(w, view)
    w = lk.broadcast_to(w, x.shape)
    ax = _red_axis(x, axis, "average")
    return lk.reduce_sum(x * w, axis=ax) / lk.reduce_sum(w, axis=ax)


def _flat_or_axis(x: Tensor, axis, who: str):
    if axis is None:
        return lk.reshape(x, [-1]), 0
    return x, axis_one(axis, x.ndim, who)


def _argext(x, axis, keepdims, fn, who):
    x = t(x)
    if x.dtype == bool:
        x = lk.cast(x, _INT)
    if x.ndim == 0:
        return lk.zeros((), _INT)
    y, ax = _flat_or_axis(x, axis, who)
    out = lk.cast(fn(y, axis=ax), _INT)
    if keepdims:
        if axis is None:
            return lk.reshape(out, [1] * x.ndim)
        out = lk.expand_dims(out, ax)
    return out


def argmax(x: TensorLike, axis: AxisLike = None, keepdims: bool = False) -> Tensor:
    """Index of the largest value (first on ties); ``axis=None`` searches the flattened
    tensor; int32."""
    return _argext(x, axis, keepdims, lk.argmax, "argmax")


def argmin(x: TensorLike, axis: AxisLike = None, keepdims: bool = False) -> Tensor:
    """Index of the smallest value (first on ties); ``axis=None`` flattens; int32."""
    return _argext(x, axis, keepdims, lk.argmin, "argmin")


def _nan_fill(x, value):
    x = t(x)
    return lk.where(lk.isnan(x), value, x) if x.dtype.kind == "f" else x


def nanargmax(x: TensorLike, axis: AxisLike = None, keepdims: bool = False) -> Tensor:
    """``argmax`` ignoring NaN."""
    return argmax(_nan_fill(x, -np.inf), axis, keepdims)


def nanargmin(x: TensorLike, axis: AxisLike = None, keepdims: bool = False) -> Tensor:
    """``argmin`` ignoring NaN."""
    return argmin(_nan_fill(x, np.inf), axis, keepdims)


def nansum(x: TensorLike, axis: AxisLike = None, keepdims: bool = False) -> Tensor:
    """``sum`` treating NaN as 0."""
    return sum(_nan_fill(x, 0.0), axis, keepdims)


def nanprod(x: TensorLike, axis: AxisLike = None, keepdims: bool = False) -> Tensor:
    """``prod`` treating NaN as 1."""
    return prod(_nan_fill(x, 1.0), axis, keepdims)


def nanmax(x: TensorLike, axis: AxisLike = None, keepdims: bool = False) -> Tensor:
    """``max`` ignoring NaN (NaN where a slice is all NaN)."""
    x = t(x)
    out = max(_nan_fill(x, -np.inf), axis, keepdims)
    if x.dtype.kind != "f":
        return out
    return lk.where(all(isnan(x), axis, keepdims), float("nan"), out)


def nanmin(x: TensorLike, axis: AxisLike = None, keepdims: bool = False) -> Tensor:
    """``min`` ignoring NaN (NaN where a slice is all NaN)."""
    x = t(x)
    out = min(_nan_fill(x, np.inf), axis, keepdims)
    if x.dtype.kind != "f":
        return out
    return lk.where(all(isnan(x), axis, keepdims), float("nan"), out)


def _nan_count(x, axis, keepdims):
    x = floating(x)
    return sum(lk.cast(lk.logical_not(lk.isnan(x)), x.dtype), axis, keepdims)


def nanmean(x: TensorLike, axis: AxisLike = None, keepdims: bool = False) -> Tensor:
    """``mean`` ignoring NaN."""
    x = floating(x)
    return nansum(x, axis, keepdims) / _nan_count(x, axis, keepdims)


def nanvar(x: TensorLike, axis: AxisLike = None, keepdims: bool = False) -> Tensor:
    """``var`` ignoring NaN."""
    x = floating(x)
    m = nanmean(x, axis, True)
    d = _nan_fill(x - m, 0.0)
    return sum(d * d, axis, keepdims) / _nan_count(x, axis, keepdims)


def nanstd(x: TensorLike, axis: AxisLike = None, keepdims: bool = False) -> Tensor:
    """``std`` ignoring NaN."""
    return lk.sqrt(nanvar(x, axis, keepdims))


def _cum(x, axis, dtype, fn, who):
    x = _sum_dtype(t(x))
    d = dtype_arg(dtype, who)
    if d is not None:
        x = lk.cast(x, d)
    y, ax = _flat_or_axis(x, axis, who)
    return fn(y, axis=ax)


def cumsum(x: TensorLike, axis: AxisLike = None, dtype: DTypeLike = None) -> Tensor:
    """Cumulative sum along ``axis``; ``axis=None`` scans the flattened tensor."""
    return _cum(x, axis, dtype, lk.cumsum, "cumsum")


def cumprod(x: TensorLike, axis: AxisLike = None, dtype: DTypeLike = None) -> Tensor:
    """Cumulative product along ``axis``; ``axis=None`` scans the flattened tensor."""
    return _cum(x, axis, dtype, lk.cumprod, "cumprod")


def nancumsum(x: TensorLike, axis: AxisLike = None, dtype: DTypeLike = None) -> Tensor:
    """``cumsum`` treating NaN as 0."""
    return cumsum(_nan_fill(x, 0.0), axis, dtype)


def nancumprod(x: TensorLike, axis: AxisLike = None, dtype: DTypeLike = None) -> Tensor:
    """``cumprod`` treating NaN as 1."""
    return cumprod(_nan_fill(x, 1.0), axis, dtype)


# ---- sorting and order statistics -------------------------------------------------------------
def _along_last(x: Tensor, axis, who: str):
    """(tensor with ``axis`` moved last, axis) — ``axis=None`` flattens."""
    if axis is None:
        return lk.reshape(x, [-1]), None
    ax = axis_one(axis, x.ndim, who)
    return P.moveaxis_to_end(x, ax), ax


def argsort(x: TensorLike, axis: AxisLike = -1) -> Tensor:
    """Indices that sort ``x`` along ``axis`` (stable; ``None`` flattens); int32."""
    x = t(x)
    if x.ndim == 0:
        return lk.zeros((), _INT)
    y, ax = _along_last(x, axis, "argsort")
    idx = P.argsort_last(y)
    return idx if ax is None else P.moveaxis_from_end(idx, ax)


def sort(x: TensorLike, axis: AxisLike = -1) -> Tensor:
    """``x`` sorted ascending along ``axis`` (``None`` flattens); differentiable."""
    x = t(x)
    if x.ndim == 0:
        return x
    y, ax = _along_last(x, axis, "sort")
    out = P.take_along(y, P.argsort_last(y), y.ndim - 1)
    return out if ax is None else P.moveaxis_from_end(out, ax)


def argpartition(x: TensorLike, kth: int, axis: int = -1) -> Tensor:
    """Indices that put the ``kth`` smallest value at position ``kth`` along ``axis``,
    smaller values before it and larger after (order within each side unspecified)."""
    x = t(x)
    ax = axis_one(axis, x.ndim, "argpartition")
    return P.run("argpartition", lambda a, kth, axis: np.argpartition(
        a, kth, axis=axis).astype(np.int32), x, kth=int(kth), axis=ax)


_METHODS = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile(x, q, axis, method, keepdims, nan: bool, who: str) -> Tensor:
    if method not in _METHODS:
        raise ValueError(f"keras_ops.{who}: method must be one of {_METHODS}, received "
                         f"{method!r}")
    x = floating(x)
    qt = lk.cast(t(q), x.dtype)
    if axis is None:
        y = lk.reshape(x, [-1])
        axes = list(range(x.ndim))
    else:
        axes = sorted(axes_arg(axis, x.ndim, who))
        rest = [i for i in range(x.ndim) if i not in axes]
        y = lk.transpose(x, rest + axes)
        y = lk.reshape(y, [x.shape[i] for i in rest] + [-1])
    s = sort(y, -1)                      # NaN sort last
    n = s.shape[-1]
    if nan:
        count = lk.reduce_sum(lk.cast(lk.logical_not(lk.isnan(s)), x.dtype), -1,
                              keepdims=True)
    else:
        count = lk.fill(list(s.shape[:-1]) + [1], np.asarray(n, x.dtype))
    # positions: q has its own shape; results get q's shape in front.
    qshape = qt.shape
    qv = lk.reshape(qt, list(qshape) + [1] * (s.ndim - 1) + [1])
    pos = qv * lk.maximum(count - 1.0, 0.0)                   # (*q, *rest, 1)
    lo = lk.floor(pos)
    hi = lk.minimum(lk.ceil(pos), lk.maximum(count - 1.0, 0.0))
    if method == "lower":
        hi = lo
    elif method == "higher":
        lo = hi
    elif method == "nearest":
        lo = hi = lk.round(pos)
    sb = lk.broadcast_to(s, list(qshape) + list(s.shape))
    big = list(qshape) + list(s.shape[:-1]) + [1]
    lo_i = lk.broadcast_to(lk.cast(lo, np.int64), big)
    hi_i = lk.broadcast_to(lk.cast(hi, np.int64), big)
    vlo = P.take_along(sb, lo_i, sb.ndim - 1)
    vhi = P.take_along(sb, hi_i, sb.ndim - 1)
    if method == "midpoint":
        out = (vlo + vhi) * 0.5
    elif method == "linear":
        out = vlo + (vhi - vlo) * (pos - lo)
    else:
        out = vlo
    out = lk.squeeze(out, [out.ndim - 1])
    if nan:
        out = lk.where(lk.broadcast_to(count, big)[..., 0] > 0, out, float("nan"))
    if keepdims:
        shape_ = list(qshape) + [1 if (axis is None or i in axes) else d
                                 for i, d in enumerate(x.shape)]
        out = lk.reshape(out, shape_)
    return out


def quantile(x: TensorLike, q: TensorLike, axis: AxisLike = None, method: str = "linear",
             keepdims: bool = False) -> Tensor:
    """The ``q``-th quantile(s) (``q`` in [0, 1]) over ``axis``; a ``q`` array puts its
    shape first. ``method``: linear, lower, higher, midpoint, nearest."""
    return _quantile(x, q, axis, method, keepdims, False, "quantile")


def percentile(x: TensorLike, q: TensorLike, axis: AxisLike = None, method: str = "linear",
               keepdims: bool = False) -> Tensor:
    """``quantile`` with ``q`` in percent."""
    return _quantile(x, t(q, FLOATX) / 100.0, axis, method, keepdims, False, "percentile")


def nanquantile(x: TensorLike, q: TensorLike, axis: AxisLike = None, method: str = "linear",
                keepdims: bool = False) -> Tensor:
    """``quantile`` ignoring NaN."""
    return _quantile(x, q, axis, method, keepdims, True, "nanquantile")


def nanpercentile(x: TensorLike, q: TensorLike, axis: AxisLike = None, method: str = "linear",
                  keepdims: bool = False) -> Tensor:
    """``percentile`` ignoring NaN."""
    return _quantile(x, t(q, FLOATX) / 100.0, axis, method, keepdims, True, "nanpercentile")


def median(x: TensorLike, axis: AxisLike = None, keepdims: bool = False) -> Tensor:
    """Median over ``axis`` (mean of the middle two for even counts); float."""
    return _quantile(x, 0.5, axis, "linear", keepdims, False, "median")


def nanmedian(x: TensorLike, axis: AxisLike = None, keepdims: bool = False) -> Tensor:
    """``median`` ignoring NaN."""
    return _quantile(x, 0.5, axis, "linear", keepdims, True, "nanmedian")


def searchsorted(sorted_sequence: TensorLike, values: Any, side: str = "left") -> Tensor:
    """Insertion indices of ``values`` into the 1-D ``sorted_sequence``; int32."""
    if side not in ("left", "right"):
        raise ValueError(f"keras_ops.searchsorted: side must be 'left' or 'right', "
                         f"received {side!r}")
    s = t(sorted_sequence)
    if s.ndim != 1:
        raise ValueError(f"keras_ops.searchsorted: sorted_sequence must be 1-D, received "
                         f"shape {s.shape}")
    return P.run("searchsorted", lambda a, v, side: np.searchsorted(a, v, side).astype(
        np.int32), s, t(values), side=side)


def digitize(x: TensorLike, bins: TensorLike) -> Tensor:
    """Index of the bin of each value of ``x`` (NumPy's ``digitize``); int32."""
    return P.run("digitize", lambda a, b: np.digitize(a, b).astype(np.int32), t(x), t(bins))


def bincount(x: TensorLike, weights: TensorLike | None = None, minlength: int = 0,
             sparse: bool = False) -> Tensor:
    """Counts (or summed ``weights``) of each non-negative integer in ``x`` (1-D, or
    2-D counted per row). Differentiable in ``weights``."""
    if sparse:
        raise ValueError("keras_ops.bincount: sparse=True is not supported")
    x = t(x)
    if x.dtype.kind not in "iu":
        raise TypeError(f"keras_ops.bincount: x must be integers, received {x.dtype}")
    if P.is_traced(x):
        raise ValueError("keras_ops.bincount: the output length depends on the values; "
                         "inside lk.function compute it outside")
    xs = x.numpy()
    if xs.size and xs.min() < 0:
        raise ValueError("keras_ops.bincount: x must be non-negative")
    n = builtins.max(int(minlength), int(xs.max()) + 1 if xs.size else 0)
    w = lk.ones(x.shape, _INT) if weights is None else t(weights)
    if x.ndim == 1:
        return P.scatter_add(lk.reshape(x, [-1, 1]), w, (n,))
    rows = np.broadcast_to(np.arange(x.shape[0])[:, None], x.shape)
    idx = lk.stack([lk.constant(rows.astype(x.dtype)), x], -1)
    return P.scatter_add(idx, w, (x.shape[0], n))


def histogram(x: TensorLike, bins: int = 10, range: Any = None) -> tuple:  # noqa: A002
    """``(counts, bin_edges)`` of 1-D ``x`` in ``bins`` equal bins (NumPy's rule)."""
    def fwd(a, bins, rng):
        c, e = np.histogram(a, bins=bins, range=rng)
        return c.astype(np.int32), e.astype(a.dtype if a.dtype.kind == "f" else FLOATX)
    rng = None if range is None else (float(range[0]), float(range[1]))
    return P.run("histogram", fwd, t(x), num_outputs=2, bins=int(bins), rng=rng)


def unique(x: TensorLike, sorted: bool = True, return_index: bool = False,  # noqa: A002
           return_inverse: bool = False, return_counts: bool = False, axis: int | None = None,
           size: Any = None, fill_value: Any = None) -> Any:
    """Sorted unique values of ``x`` (flattened unless ``axis``), optionally with the
    first indices, inverse indices and counts (int32), NumPy's order of outputs.
    ``size`` pads (with ``fill_value``, default the smallest value) or truncates."""
    x = t(x)

    def fwd(a, axis, ri, rv, rc, size, fill):
        res = np.unique(a, return_index=True, return_inverse=True, return_counts=True,
                        axis=axis)
        vals, index, inverse, counts = res
        if size is not None:
            k = vals.shape[0 if axis is None else axis]
            fv = fill if fill is not None else (vals.min() if vals.size else 0)
            if k >= size:
                vals = np.take(vals, np.arange(size), axis=0 if axis is None else axis)
                index, counts = index[:size], counts[:size]
            else:
                pad = [(0, 0)] * vals.ndim
                pad[0 if axis is None else axis] = (0, size - k)
                vals = np.pad(vals, pad, constant_values=fv)
                index = np.pad(index, (0, size - k))
                counts = np.pad(counts, (0, size - k))
        outs = [vals]
        if ri:
            outs.append(index.astype(np.int32))
        if rv:
            outs.append(inverse.reshape(a.shape if axis is None else -1).astype(np.int32))
        if rc:
            outs.append(counts.astype(np.int32))
        return tuple(outs) if len(outs) > 1 else outs[0]

    nout = 1 + builtins.sum(map(bool, (return_index, return_inverse, return_counts)))
    res = P.run("unique", fwd, x, num_outputs=nout, axis=None if axis is None else int(axis),
                ri=bool(return_index), rv=bool(return_inverse), rc=bool(return_counts),
                size=None if size is None else int(size), fill=fill_value)
    return res if nout == 1 else tuple(res)


def nonzero(x: TensorLike) -> tuple:
    """Indices of the non-zero entries, one int32 tensor per axis."""
    x = t(x)
    nd = builtins.max(x.ndim, 1)

    def fwd(a):
        idx = tuple(i.astype(np.int32) for i in np.nonzero(np.atleast_1d(a)))
        return idx if len(idx) > 1 else idx[0]

    out = P.run("nonzero", fwd, x, num_outputs=nd)
    return tuple(out) if nd > 1 else (out,)


def isin(x1: TensorLike, x2: TensorLike, assume_unique: bool = False,
         invert: bool = False) -> Tensor:
    """Whether each element of ``x1`` occurs in ``x2``; bool."""
    return P.run("isin", lambda a, b, invert: np.isin(a, b, invert=invert), t(x1), t(x2),
                 invert=bool(invert))


def unravel_index(indices: TensorLike, shape: Sequence[int]) -> tuple:
    """Flat ``indices`` as a tuple of coordinate tensors for ``shape``."""
    idx = t(indices)
    out = []
    rem = idx
    dims = [int(d) for d in shape]
    for i in builtins.range(len(dims) - 1, -1, -1):
        out.append(lk.mod(rem, dims[i]))
        rem = lk.floordiv(rem, dims[i])
    return tuple(reversed(out))


# ---- shapes ---------------------------------------------------------------------------------
def reshape(x: TensorLike, newshape: Any) -> Tensor:
    """``x`` with shape ``newshape`` (one ``-1`` allowed)."""
    return lk.reshape(t(x), [int(d) for d in _shape_tuple(newshape)])


def ravel(x: TensorLike) -> Tensor:
    """``x`` flattened to 1-D."""
    return lk.reshape(t(x), [-1])


def ndim(x: TensorLike) -> int:
    """Rank of ``x``."""
    return t(x).ndim


def size(x: TensorLike) -> int:
    """Number of elements of ``x``."""
    return int(np.prod(t(x).shape, dtype=np.int64))


def expand_dims(x: TensorLike, axis: AxisLike) -> Tensor:
    """``x`` with new length-1 axes at ``axis`` (an int or a tuple of ints)."""
    x = t(x)
    if isinstance(axis, (list, tuple)):
        out_nd = x.ndim + len(axis)
        axes = sorted(axis_one(a, out_nd, "expand_dims") for a in axis)
        for a in axes:
            x = lk.expand_dims(x, a)
        return x
    return lk.expand_dims(x, axis_one(axis, x.ndim + 1, "expand_dims"))


def squeeze(x: TensorLike, axis: AxisLike = None) -> Tensor:
    """``x`` without the length-1 axes ``axis`` (all of them when None)."""
    x = t(x)
    ax = axes_arg(axis, x.ndim, "squeeze")
    if ax is not None:
        for a in ax:
            if x.shape[a] != 1:
                raise ValueError(f"keras_ops.squeeze: cannot squeeze axis {a} of size "
                                 f"{x.shape[a]} (shape {x.shape})")
    return lk.squeeze(x, None if ax is None else list(ax))


def transpose(x: TensorLike, axes: Any = None) -> Tensor:
    """``x`` with its axes permuted (reversed when ``axes`` is None)."""
    x = t(x)
    if axes is None:
        return lk.transpose(x)
    return lk.transpose(x, [axis_one(a, x.ndim, "transpose") for a in axes])


def swapaxes(x: TensorLike, axis1: int, axis2: int) -> Tensor:
    """``x`` with ``axis1`` and ``axis2`` exchanged."""
    x = t(x)
    perm = list(builtins.range(x.ndim))
    a, b = axis_one(axis1, x.ndim, "swapaxes"), axis_one(axis2, x.ndim, "swapaxes")
    perm[a], perm[b] = perm[b], perm[a]
    return lk.transpose(x, perm)


def moveaxis(x: TensorLike, source: Any, destination: Any) -> Tensor:
    """``x`` with axes ``source`` moved to ``destination`` (ints or sequences)."""
    x = t(x)
    src = list(axes_arg(source, x.ndim, "moveaxis"))
    dst = list(axes_arg(destination, x.ndim, "moveaxis"))
    if len(src) != len(dst):
        raise ValueError("keras_ops.moveaxis: source and destination need the same number "
                         "of axes")
    order = [i for i in builtins.range(x.ndim) if i not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return lk.transpose(x, order)


def broadcast_to(x: TensorLike, shape: ShapeLike) -> Tensor:
    """``x`` broadcast to ``shape``."""
    return lk.broadcast_to(t(x), _shape_tuple(shape))


def _common(xs) -> list:
    ts = [t(v) for v in xs]
    if not ts:
        raise ValueError("keras_ops: need at least one tensor")
    dt = P.result_dtype([v.dtype for v in ts])
    return [v if v.dtype == dt else lk.cast(v, dt) for v in ts]


def concatenate(xs: TensorLike, axis: int | None = 0) -> Tensor:
    """Join tensors along an existing ``axis`` (``None``: flatten them first)."""
    ts = _common(xs)
    if axis is None:
        return lk.concat([lk.reshape(v, [-1]) for v in ts], 0)
    return lk.concat(ts, axis_one(axis, ts[0].ndim, "concatenate"))


def append(x1: TensorLike, x2: TensorLike, axis: int | None = None) -> Tensor:
    """``x2`` appended to ``x1`` along ``axis`` (flattened when None)."""
    return concatenate([x1, x2], axis)


def stack(x: TensorLike, axis: int = 0) -> Tensor:
    """Join tensors along a new ``axis``."""
    ts = _common(x)
    return lk.stack(ts, axis_one(axis, ts[0].ndim + 1, "stack"))


def hstack(xs: TensorLike) -> Tensor:
    """Concatenate along axis 1 (axis 0 for 1-D tensors)."""
    ts = _common(xs)
    return lk.concat(ts, 0 if ts[0].ndim == 1 else 1)


def vstack(xs: TensorLike) -> Tensor:
    """Concatenate along axis 0, 1-D tensors as rows."""
    ts = [lk.reshape(v, [1, -1]) if v.ndim < 2 else v for v in _common(xs)]
    return lk.concat(ts, 0)


def dstack(xs: TensorLike) -> Tensor:
    """Concatenate along axis 2 (1-D and 2-D tensors get length-1 axes first)."""
    out = []
    for v in _common(xs):
        if v.ndim == 0:
            v = lk.reshape(v, [1, 1, 1])
        elif v.ndim == 1:
            v = lk.reshape(v, [1, -1, 1])
        elif v.ndim == 2:
            v = lk.expand_dims(v, 2)
        out.append(v)
    return lk.concat(out, 2)


def _split_sizes(n: int, indices_or_sections, even: bool, who: str) -> list:
    if isinstance(indices_or_sections, (int, np.integer)):
        k = int(indices_or_sections)
        if k <= 0:
            raise ValueError(f"keras_ops.{who}: the number of sections must be > 0")
        if even and n % k:
            raise ValueError(f"keras_ops.{who}: an axis of length {n} does not split into "
                             f"{k} equal sections")
        q, r = divmod(n, k)
        return [q + 1] * r + [q] * (k - r)
    bounds = [builtins.min(builtins.max(int(i) if int(i) >= 0 else n + int(i), 0), n)
              for i in indices_or_sections]
    edges = [0, *bounds, n]
    return [builtins.max(b - a, 0) for a, b in zip(edges[:-1], edges[1:])]


def _split(x, indices_or_sections, axis, even, who) -> list:
    x = t(x)
    ax = axis_one(axis, x.ndim, who)
    sizes = _split_sizes(x.shape[ax], indices_or_sections, even, who)
    out, start = [], 0
    for s in sizes:
        begin = [0] * x.ndim
        begin[ax] = builtins.min(start, x.shape[ax])
        size_ = list(x.shape)
        size_[ax] = s
        out.append(lk.slice(x, begin, size_))
        start += s
    return out


def split(x: TensorLike, indices_or_sections: Any, axis: int = 0) -> list:
    """Split ``x`` into equal sections (an int) or at the given indices along ``axis``."""
    return _split(x, indices_or_sections, axis, True, "split")


def array_split(x: TensorLike, indices_or_sections: Any, axis: int = 0) -> list:
    """``split`` allowing unequal sections (the first ones one longer)."""
    return _split(x, indices_or_sections, axis, False, "array_split")


def hsplit(x: TensorLike, indices_or_sections: Any) -> list:
    """``split`` along axis 1 (axis 0 for 1-D)."""
    return split(x, indices_or_sections, 0 if t(x).ndim == 1 else 1)


def vsplit(x: TensorLike, indices_or_sections: Any) -> list:
    """``split`` along axis 0."""
    return split(x, indices_or_sections, 0)


def dsplit(x: TensorLike, indices_or_sections: Any) -> list:
    """``split`` along axis 2."""
    return split(x, indices_or_sections, 2)


def tile(x: TensorLike, repeats: Any) -> Tensor:
    """``x`` repeated ``repeats`` times per axis (NumPy's rule for mismatched ranks)."""
    x = t(x)
    reps = list(_shape_tuple(repeats))
    if len(reps) > x.ndim:
        x = lk.reshape(x, [1] * (len(reps) - x.ndim) + list(x.shape))
    reps = [1] * (x.ndim - len(reps)) + reps
    return lk.tile(x, reps)


def repeat(x: TensorLike, repeats: Any, axis: int | None = None) -> Tensor:
    """Each element repeated ``repeats`` times along ``axis`` (flattened when None);
    ``repeats`` an int or one count per element."""
    x = t(x)
    if axis is None:
        x = lk.reshape(x, [-1])
        ax = 0
    else:
        ax = axis_one(axis, x.ndim, "repeat")
    reps = repeats.numpy() if isinstance(repeats, Tensor) else np.asarray(repeats)
    idx = np.repeat(np.arange(x.shape[ax]), reps)
    return lk.gather(x, lk.constant(idx.astype(np.int64)), axis=ax)


def flip(x: TensorLike, axis: AxisLike = None) -> Tensor:
    """``x`` reversed along ``axis`` (all axes when None)."""
    x = t(x)
    axes = axes_arg(axis, x.ndim, "flip")
    ax = list(builtins.range(x.ndim)) if axes is None else list(axes)
    return lk.reverse(x, ax) if ax else x


def fliplr(x: TensorLike) -> Tensor:
    """``x`` reversed along axis 1."""
    return flip(x, 1)


def flipud(x: TensorLike) -> Tensor:
    """``x`` reversed along axis 0."""
    return flip(x, 0)


def rot90(array: TensorLike, k: int = 1, axes: Any = (0, 1)) -> Tensor:
    """``array`` rotated by 90 degrees ``k`` times in the plane of ``axes``."""
    x = t(array)
    a, b = (axis_one(v, x.ndim, "rot90") for v in axes)
    if a == b:
        raise ValueError("keras_ops.rot90: the two axes must differ")
    k = int(k) % 4
    if k == 0:
        return x
    if k == 2:
        return flip(flip(x, a), b)
    if k == 1:
        return swapaxes(flip(x, b), a, b)
    return flip(swapaxes(x, a, b), b)


def roll(x: TensorLike, shift: Any, axis: AxisLike = None) -> Tensor:
    """``x`` shifted cyclically by ``shift`` along ``axis`` (flattened when None)."""
    x = t(x)
    if axis is None:
        return reshape(roll(ravel(x), shift, 0), x.shape)
    axs = axis if isinstance(axis, (list, tuple)) else [axis]
    shifts = shift if isinstance(shift, (list, tuple)) else [shift] * len(axs)
    for a, s in zip(axs, shifts):
        ax = axis_one(a, x.ndim, "roll")
        n = x.shape[ax]
        if n == 0:
            continue
        idx = (np.arange(n) - int(s)) % n
        x = lk.gather(x, lk.constant(idx.astype(np.int64)), axis=ax)
    return x


def pad(x: TensorLike, pad_width: Any, mode: str = "constant",
        constant_values: Any = None) -> Tensor:
    """``x`` padded by ``pad_width`` (per-axis ``(before, after)``, or one pair / int for
    all axes). ``mode``: constant, edge, reflect, symmetric, wrap."""
    x = t(x)
    pw = np.broadcast_to(np.asarray(pad_width, np.int64), (x.ndim, 2)).tolist()
    if mode == "constant":
        cv = 0 if constant_values is None else constant_values
        return lk.pad(x, pw, "CONSTANT", cv)
    if constant_values is not None:
        raise ValueError(f"keras_ops.pad: constant_values only goes with mode='constant', "
                         f"received mode={mode!r}")
    if mode not in ("edge", "reflect", "symmetric", "wrap"):
        raise ValueError(f"keras_ops.pad: mode must be one of constant, edge, reflect, "
                         f"symmetric, wrap; received {mode!r}")
    for ax, (b, a) in enumerate(pw):
        if b or a:
            idx = np.pad(np.arange(x.shape[ax]), (b, a), mode=mode)
            x = lk.gather(x, lk.constant(idx.astype(np.int64)), axis=ax)
    return x


def copy(x: TensorLike) -> Tensor:
    """A copy of ``x`` (Tensors are immutable, so the same values)."""
    x = t(x)
    return lk.reshape(x, x.shape)


def array(x: TensorLike, dtype: DTypeLike = None) -> Tensor:
    """``x`` as a Tensor (``convert_to_tensor``)."""
    return t(x, dtype_arg(dtype, "array"))


def view(x: TensorLike, dtype: DTypeLike = None) -> Tensor:
    """The bytes of ``x`` reinterpreted as ``dtype`` (no gradient)."""
    d = dtype_arg(dtype, "view")
    x = t(x)
    if d is None:
        return x
    return P.run("view", lambda a, d: np.ascontiguousarray(a).view(d), x, d=d)


def get_item(x: TensorLike, key: TensorLike) -> Tensor:
    """``x[key]``."""
    return t(x)[key]


def _wrap_index(idx: Tensor, n: int) -> Tensor:
    return lk.where(idx < 0, idx + n, idx)


def take(x: TensorLike, indices: TensorLike, axis: int | None = None) -> Tensor:
    """Elements of ``x`` at ``indices`` along ``axis`` (flattened when None; negative
    indices count from the end)."""
    x = t(x)
    idx = t(indices)
    if idx.dtype.kind not in "iu":
        raise TypeError(f"keras_ops.take: indices must be integers, received {idx.dtype}")
    if axis is None:
        x, ax = lk.reshape(x, [-1]), 0
    else:
        ax = axis_one(axis, x.ndim, "take")
    return lk.gather(x, _wrap_index(idx, x.shape[ax]), axis=ax)


def take_along_axis(x: TensorLike, indices: TensorLike, axis: int | None = None) -> Tensor:
    """``x`` gathered along ``axis`` with ``indices`` of the same rank (other axes
    broadcast); ``axis=None`` uses the flattened ``x`` and ``indices``."""
    x = t(x)
    idx = t(indices)
    if axis is None:
        x, idx = lk.reshape(x, [-1]), lk.reshape(idx, [-1])
        ax = 0
    else:
        ax = axis_one(axis, x.ndim, "take_along_axis")
    if idx.ndim != x.ndim:
        raise ValueError(f"keras_ops.take_along_axis: indices rank {idx.ndim} must equal "
                         f"x's rank {x.ndim}")
    xs, is_ = list(x.shape), list(idx.shape)
    xs[ax] = is_[ax] = 1
    common = list(np.broadcast_shapes(tuple(xs), tuple(is_)))
    xb, ib = common.copy(), common.copy()
    xb[ax], ib[ax] = x.shape[ax], idx.shape[ax]
    x = lk.broadcast_to(x, xb)
    idx = lk.broadcast_to(_wrap_index(idx, x.shape[ax]), ib)
    return P.take_along(x, idx, ax)


def diff(a: TensorLike, n: int = 1, axis: int = -1) -> Tensor:
    """The ``n``-th discrete difference along ``axis``."""
    x = t(a)
    ax = axis_one(axis, x.ndim, "diff")
    for _ in builtins.range(int(n)):
        m = x.shape[ax]
        if m == 0:
            break
        hi = lk.slice(x, [1 if i == ax else 0 for i in builtins.range(x.ndim)],
                      [m - 1 if i == ax else -1 for i in builtins.range(x.ndim)])
        lo = lk.slice(x, [0] * x.ndim,
                      [m - 1 if i == ax else -1 for i in builtins.range(x.ndim)])
        x = hi - lo if x.dtype != bool else lk.not_equal(hi, lo)
    return x


# ---- products --------------------------------------------------------------------------------
def matmul(x1: TensorLike, x2: TensorLike) -> Tensor:
    """Matrix product with NumPy's rules (1-D operands promoted then squeezed)."""
    a, b = _common([x1, x2])
    if a.ndim == 0 or b.ndim == 0:
        raise ValueError("keras_ops.matmul: operands must not be scalars")
    va, vb = a.ndim == 1, b.ndim == 1
    if va:
        a = lk.expand_dims(a, 0)
    if vb:
        b = lk.expand_dims(b, 1)
    nd = builtins.max(a.ndim, b.ndim)
    if a.ndim != b.ndim or a.shape[:-2] != b.shape[:-2]:
        batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
        a = lk.broadcast_to(a, batch + a.shape[-2:])
        b = lk.broadcast_to(b, batch + b.shape[-2:])
        nd = a.ndim
    if a.dtype == bool:
        a, b = lk.cast(a, _INT), lk.cast(b, _INT)
    out = lk.matmul(a, b)
    if va:
        out = lk.squeeze(out, [nd - 2])
    if vb:
        out = lk.squeeze(out, [out.ndim - 1])
    return out


def dot(x1: TensorLike, x2: TensorLike) -> Tensor:
    """NumPy's ``dot``: products for scalars, matmul for 1-D/2-D, otherwise a sum over
    the last axis of ``x1`` and the second-to-last of ``x2``."""
    a, b = _common([x1, x2])
    if a.ndim == 0 or b.ndim == 0:
        return a * b
    if a.ndim <= 2 and b.ndim <= 2:
        return matmul(a, b)
    return lk.tensordot(a, b, [[a.ndim - 1], [builtins.max(b.ndim - 2, 0)]])


def vdot(x1: TensorLike, x2: TensorLike) -> Tensor:
    """Dot product of the flattened inputs."""
    a, b = _common([x1, x2])
    return lk.reduce_sum(lk.reshape(a, [-1]) * lk.reshape(b, [-1]))


def inner(x1: TensorLike, x2: TensorLike) -> Tensor:
    """Sum product over the last axes of ``x1`` and ``x2``."""
    a, b = _common([x1, x2])
    if a.ndim == 0 or b.ndim == 0:
        return a * b
    return lk.tensordot(a, b, [[a.ndim - 1], [b.ndim - 1]])


def outer(x1: TensorLike, x2: TensorLike) -> Tensor:
    """Outer product of the flattened inputs."""
    a, b = _common([x1, x2])
    return lk.reshape(a, [-1, 1]) * lk.reshape(b, [1, -1])


def tensordot(x1: TensorLike, x2: TensorLike, axes: Any = 2) -> Tensor:
    """Sum product over the last ``axes`` of ``x1`` and first of ``x2`` (or the given
    pairs of axis lists)."""
    a, b = _common([x1, x2])
    return lk.tensordot(a, b, axes)


def einsum(subscripts: str, *operands: Any, **kwargs: Any) -> Tensor:
    """Einstein summation over ``operands`` as described by ``subscripts``."""
    return lk.einsum(subscripts, *_common(operands))


def kron(x1: TensorLike, x2: TensorLike) -> Tensor:
    """Kronecker product."""
    a, b = _common([x1, x2])
    nd = builtins.max(a.ndim, b.ndim)
    a = lk.reshape(a, [1] * (nd - a.ndim) + list(a.shape))
    b = lk.reshape(b, [1] * (nd - b.ndim) + list(b.shape))
    ai = lk.reshape(a, [d for s in a.shape for d in (s, 1)])
    bi = lk.reshape(b, [d for s in b.shape for d in (1, s)])
    return lk.reshape(ai * bi, [p * q for p, q in zip(a.shape, b.shape)])


def cross(x1: TensorLike, x2: TensorLike, axisa: int = -1, axisb: int = -1, axisc: int = -1,
          axis: int | None = None) -> Tensor:
    """Cross product of 3-vectors (or 2-vectors, giving the z component) along the
    given axes."""
    a, b = _common([x1, x2])
    if axis is not None:
        axisa = axisb = axisc = axis
    a = moveaxis(a, axisa, -1)
    b = moveaxis(b, axisb, -1)
    na, nb = a.shape[-1], b.shape[-1]
    if na not in (2, 3) or nb not in (2, 3):
        raise ValueError(f"keras_ops.cross: vectors must have 2 or 3 components, received "
                         f"{na} and {nb}")
    ca = lk.unstack(a, axis=-1) + ([lk.zeros_like(a[..., 0])] if na == 2 else [])
    cb = lk.unstack(b, axis=-1) + ([lk.zeros_like(b[..., 0])] if nb == 2 else [])
    z = ca[0] * cb[1] - ca[1] * cb[0]
    if na == 2 and nb == 2:
        return z
    x_ = ca[1] * cb[2] - ca[2] * cb[1]
    y_ = ca[2] * cb[0] - ca[0] * cb[2]
    out = lk.stack([x_, y_, z], -1)
    return moveaxis(out, -1, axisc)


def correlate(x1: TensorLike, x2: TensorLike, mode: str = "valid") -> Tensor:
    """Cross-correlation of two 1-D sequences (``mode``: valid, same, full)."""
    a, b = _common([x1, x2])
    if a.ndim != 1 or b.ndim != 1:
        raise ValueError("keras_ops.correlate: both inputs must be 1-D")
    if mode not in ("valid", "same", "full"):
        raise ValueError(f"keras_ops.correlate: mode must be valid, same or full, "
                         f"received {mode!r}")
    n, m = a.shape[0], b.shape[0]
    if m > n:
        return flip(correlate(b, a, mode), 0)
    if mode == "full":
        a = lk.pad(a, [[m - 1, m - 1]])
    elif mode == "same":
        right = (m - 1) // 2
        a = lk.pad(a, [[m - 1 - right, right]])
    k = a.shape[0] - m + 1
    idx = np.arange(k)[:, None] + np.arange(m)[None, :]
    windows = lk.gather(a, lk.constant(idx.astype(np.int64)))
    return lk.reduce_sum(windows * b, axis=1)


def corrcoef(x: TensorLike) -> Tensor:
    """Pearson correlation coefficients of the rows of ``x``."""
    x = floating(x)
    if x.ndim == 1:
        x = lk.reshape(x, [1, -1])
    c = x - lk.reduce_mean(x, axis=1, keepdims=True)
    cov = lk.matmul(c, c, transpose_b=True)
    d = lk.sqrt(diagonal(cov))
    return cov / (lk.reshape(d, [-1, 1]) * lk.reshape(d, [1, -1]))


def trapezoid(y: TensorLike, x: TensorLike | None = None, dx: float = 1.0,
              axis: int = -1) -> Tensor:
    """Integral of ``y`` along ``axis`` by the trapezoidal rule."""
    y = floating(y)
    ax = axis_one(axis, y.ndim, "trapezoid")
    n = y.shape[ax]
    lo = [0] * y.ndim
    hi = [1 if i == ax else 0 for i in builtins.range(y.ndim)]
    size_ = [n - 1 if i == ax else -1 for i in builtins.range(y.ndim)]
    avg = (lk.slice(y, hi, size_) + lk.slice(y, lo, size_)) * 0.5
    if x is None:
        return lk.reduce_sum(avg, axis=ax) * float(dx)
    d = diff(lk.cast(t(x), y.dtype), 1, -1 if t(x).ndim == 1 else ax)
    if d.ndim == 1 and y.ndim > 1:
        view = [1] * y.ndim
        view[ax] = n - 1
        d = lk.reshape(d, view)
    return lk.reduce_sum(avg * d, axis=ax)


def vectorize(pyfunc: Callable, *, excluded: Any = None, signature: Any = None) -> Callable:
    """``pyfunc`` applied elementwise over broadcast tensor arguments (a Python loop).

    Only ``signature=None`` is supported: ``pyfunc`` maps scalars to scalars.
    """
    if signature is not None:
        raise ValueError("keras_ops.vectorize: signature is not supported")
    excluded = set(excluded or ())

    def wrapped(*args):
        pos = [i for i in builtins.range(len(args)) if i not in excluded]
        ts = [t(args[i]) for i in pos]
        shape_ = np.broadcast_shapes(*[v.shape for v in ts])
        flat = [lk.reshape(lk.broadcast_to(v, shape_), [-1]) for v in ts]
        n = int(np.prod(shape_, dtype=np.int64))
        outs = []
        for k in builtins.range(n):
            call = list(args)
            for i, v in zip(pos, flat):
                call[i] = v[k]
            outs.append(t(pyfunc(*call)))
        if not outs:
            return lk.zeros(shape_)
        return lk.reshape(lk.stack(outs), shape_)

    return wrapped


