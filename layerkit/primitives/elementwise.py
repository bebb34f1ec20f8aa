"""Elementwise records: forward (NumPy), vjp (lk ops) and numexpr template, side by side.

Dispatch rule for the eager path: every elementwise forward is NumPy. Measured on this
machine (shared/FACTS.md: numexpr 2.14 without VML, NumPy 2.4, 2-core Zen5), a single
float32 op is 2-30x faster in NumPy at every size (x*y+x on 1M: numexpr 0.71 ms, NumPy
0.18 ms; tanh 10.5 vs 0.16 ms) and numexpr's ~7 us call cost loses below ~30k elements;
numexpr only wins on long float64 chains, which eager mode never sees one op at a time.
The ``expr`` templates are for graph fusion of whole chains. They use integer literals
only (numexpr turns a float literal into float64 and would promote float32 chains);
``round`` and ``erf`` have no numexpr form that keeps float32, so they have no template
and are fusion boundaries.

dtypes: Python scalars stay weak (``float32 * 2.0`` is float32, NumPy 2 rules, see
``_core/op._values``). Gradient rules keep them weak too: a rule never combines two
Python scalars through an op (that would produce a strong ``np.float64``) and never
uses NumPy float64 constants, so float32 gradients stay float32.

Integer and bool inputs: float-only math (sqrt, rsqrt, exp, expm1, log, log1p, sin, cos,
tan, tanh, sigmoid, erf) raises a TypeError naming the op and dtype, as in TensorFlow
(``_fast1f``). The other ops follow NumPy 2 on them: integer arithmetic wraps around (as
in TF), ``/`` of integers gives float64, ``+``/``*`` of bools are or/and, and the
operations NumPy refuses (``-bool``, ``int8 + 1000``) raise errors that name the op.

Gradient conventions follow TensorFlow: ``abs``/``sign`` use sign(0) = 0; ``maximum``
and ``minimum`` send the gradient of a tie to the first argument; ``floor``, ``ceil``,
``round``, ``sign`` and ``floordiv`` have zero gradients; comparisons and logical ops
are not differentiable (their records have no vjp and are never recorded).
"""
from __future__ import annotations

import math

import numpy as np

from layerkit._core import tricks as _tricks
from layerkit._core.convert import as_dtype, to_array
from layerkit._core.op import _NO_ATTRS, RECORDERS, Op, _apply_recording, apply, record_binary, wrap
from layerkit._core.tensor import Tensor
from layerkit._core.tuning import F32_SCALARS_MAX
from layerkit._core.types import DTypeLike, TensorLike
from layerkit.errors import InvalidArgumentError
from layerkit.kernels import special as _kspecial
from layerkit.primitives import broadcast as _bc
from layerkit.primitives import creation as _creation
from layerkit.primitives.registry import export, top_level

_new = object.__new__
_PY_SCALARS = (float, int, bool)


# ---- record constructors -----------------------------------------------------------
def _unbroadcasting(rule):
    """Wrap a binary/ternary rule so each gradient is summed to its input's shape."""

    def vjp(g, ins, y, needs, **attrs):
        grads = rule(g, ins, y, needs, **attrs)
        return tuple(
            None if gi is None or not n else _bc.sum_to_shape(gi, x.shape)
            for gi, x, n in zip(grads, ins, needs)
        )

    return vjp


def binary(name: str, forward, rule, expr: str | None = None,
           reads: tuple | None = None) -> Op:
    """Record constructor for broadcasting binary (or ternary) ops.

    ``rule`` may return gradients of the broadcast shape; they are summed back to each
    input's shape here, in one place. ``rule=None`` makes the op non-differentiable.
    ``reads``: what ``rule`` reads (see ``Op``).
    """
    return Op(name, forward, None if rule is None else _unbroadcasting(rule), expr,
              reads=reads)


def unary(name: str, forward, rule, expr: str | None = None,
          reads: tuple | None = None) -> Op:
    """Record constructor for unary elementwise ops (``rule=None``: not differentiable;
    ``reads``: what ``rule`` reads, see ``Op``)."""
    return Op(name, forward, rule, expr, reads=reads)


def _broadcast_error(op: Op, args: tuple) -> None:
    """Raise an InvalidArgumentError (a ValueError) naming ``op`` and the shapes if
    ``args`` do not broadcast."""
    try:
        shapes = [np.shape(a._rv) if isinstance(a, Tensor) else np.shape(a) for a in args]
    except ValueError:
        return  # not a shape problem (e.g. a ragged list): keep NumPy's own error
    try:
        np.broadcast_shapes(*shapes)
    except ValueError:
        listed = " and ".join(str(s) for s in shapes)
        raise InvalidArgumentError(  # a ValueError too; TF's error for this
            f"{op.name}: incompatible shapes {listed}: they do not broadcast (each "
            f"dimension must be equal or 1, aligned from the right)"
        ) from None


# ---- weak Python scalars with float32 arrays -----------------------------------------
# NumPy 2 casts a Python scalar operand to the array's dtype (``float32 * 2.0`` is
# float32), but working that out costs ~400 ns per call: ``a * 2`` on a (128, 32) float32
# array takes 0.91 us, ``a * z`` with z a 0-d float32 array 0.52 us, same values. The eager
# fast paths below therefore hand NumPy a cached read-only 0-d float32 array equal to the
# scalar. Only where that is exactly NumPy's cast: nonzero (0.0 and -0.0 are equal as
# dict keys but not as operands), finite after the cast, ints within 2**24 (exact in
# float32). The cache is bounded; scalars beyond it take NumPy's own path. The operator
# methods hold the cache itself: clear it, never rebind it.
_F32 = np.dtype(np.float32)
_F32_SCALARS_MAX = F32_SCALARS_MAX
_F32_EXACT_INT = 1 << 24


class _F32Scalars(dict):
    """``cache[v]``: a nonzero Python scalar ``v`` as a read-only 0-d float32 array when
    that is exact (cached), else ``v`` itself (not cached)."""

    def __missing__(self, v):
        if len(self) >= _F32_SCALARS_MAX or (
                type(v) is int and not -_F32_EXACT_INT <= v <= _F32_EXACT_INT):
            return v
        with np.errstate(over="ignore"):
            z = np.array(v, np.float32)
        if not np.isfinite(z):
            return v
        z.flags.writeable = False
        self[v] = z
        return z


_F32_SCALARS = _F32Scalars()


def _fast2(op: Op, x, y) -> Tensor:
    # Hot path for binary ops on Tensors (or a Tensor and a Python scalar, which stays
    # weak exactly as in ``apply``) with no recorder active. The try costs nothing
    # unless NumPy raises; only then do we look at the shapes.
    try:
        if not RECORDERS:
            if type(x) is Tensor:
                if type(y) is Tensor:
                    t = _new(Tensor)
                    t._v = op.forward(x._v, y._v)
                    return t
                ty = type(y)
                if ty is float or ty is int:
                    xv = x._v
                    if y and type(xv) is np.ndarray and xv.dtype is _F32:
                        y = _F32_SCALARS[y]
                    t = _new(Tensor)
                    t._v = op.forward(xv, y)
                    return t
            elif type(y) is Tensor:
                tx = type(x)
                if tx is float or tx is int:
                    yv = y._v
                    if x and type(yv) is np.ndarray and yv.dtype is _F32:
                        x = _F32_SCALARS[x]
                    t = _new(Tensor)
                    t._v = op.forward(x, yv)
                    return t
        elif type(x) is Tensor and type(y) is Tensor:
            return record_binary(op, x, y)
        return apply(op, x, y)
    except ValueError as e:
        _broadcast_error(op, (x, y))
        _named_error(op, e, (x, y))
        raise
    except (TypeError, OverflowError) as e:
        _named_error(op, e, (x, y))
        raise


def _named_error(op: Op, e: Exception, args: tuple) -> None:
    """Re-raise a bare NumPy/Python error of ``op`` (``int ** -1``, ``int8 + 1000``,
    ``float + str``) with the op's name and the operands' dtypes; errors that already
    name the op pass through unchanged."""
    msg = str(e)
    if msg.startswith(op.name) or not (type(e) in (ValueError, TypeError, OverflowError)
                                       or type(e).__module__.startswith("numpy")):
        return
    kinds = ", ".join(getattr(getattr(a, "_v", a), "dtype", type(a).__name__).__str__()
                      for a in args)
    base = OverflowError if isinstance(e, OverflowError) else (
        TypeError if isinstance(e, TypeError) else InvalidArgumentError)
    raise base(f"{op.name}: {msg} (received operands of dtype {kinds})") from e


# ---- temporary elision for operators (what NumPy does for ``a * b + c``) -------------
# ``x * y + x`` on large arrays: NumPy reuses the buffer of the temporary ``x * y`` for
# the sum (it sees a refcount of 1); a Tensor wrapper would hide that and cost a fresh
# 16 MB allocation and its page faults per op. So the *operator* methods do the same
# check: a Tensor operand referenced only by the interpreter's operand stack and this
# frame, owning an array nobody else references, is a temporary, and the result is
# written into its buffer. Plain calls (``lk.add``) never elide: CPython 3.11 passes
# call arguments without a stack reference, so a named tensor could not be told apart
# from a temporary there. A CPython-3.11 trick: see ``layerkit._core.tricks`` (its
# measurement, and the switch that turns it off).
_ELIDE = _tricks.ELIDE
_ELIDE_MIN_BYTES = _tricks.ELIDE_MIN_BYTES
_elide = _tricks.elide


_NUMPY_ERRORS = (ValueError, TypeError, OverflowError)


def _operator(op: Op):
    """The ``Tensor.__op__`` method for a ufunc-backed binary record, with elision."""
    ufunc = op.forward
    public = {_ADD: add, _SUB: subtract, _MUL: multiply, _DIV: divide}[op]
    ndarray, f32, cached = np.ndarray, _F32, _F32_SCALARS  # closure cells: ~30 ns less

    def method(x, y):
        # Errors (``int8_tensor + 1000``, ``bool - bool``, shapes that do not broadcast)
        # are left to the public function, which names the op; the try costs nothing.
        if not RECORDERS and type(x) is Tensor and (type(y) is float or type(y) is int):
            xv = x._v  # Tensor with a weak Python scalar: one frame, as in _fast2
            try:
                t = _new(Tensor)
                t._v = ufunc(xv, cached[y] if y and type(xv) is ndarray and xv.dtype is f32
                             else y)
                return t
            except _NUMPY_ERRORS:
                return public(x, y)
        if not RECORDERS and type(x) is Tensor and type(y) is Tensor:
            xv, yv = x._v, y._v
            try:
                if (_ELIDE and type(xv) is np.ndarray and type(yv) is np.ndarray
                        and (xv.nbytes >= _ELIDE_MIN_BYTES or yv.nbytes >= _ELIDE_MIN_BYTES)):
                    del xv, yv  # our own references would hide a temporary
                    t = _elide(ufunc, x, y)
                    return public(x, y) if t is None else t
                t = _new(Tensor)
                t._v = ufunc(xv, yv)
                return t
            except _NUMPY_ERRORS:
                pass
        return public(x, y)

    method.__name__ = f"__{op.name}__"
    return method


def _reflected_operator(op: Op):
    """``Tensor.__rop__``: ``2.0 * t`` with one frame when the other side is a scalar."""
    ufunc = op.forward
    public = {_ADD: add, _SUB: subtract, _MUL: multiply, _DIV: divide}[op]
    ndarray, f32, cached = np.ndarray, _F32, _F32_SCALARS

    def method(y, x):
        if not RECORDERS and type(y) is Tensor and (type(x) is float or type(x) is int):
            yv = y._v
            try:
                t = _new(Tensor)
                t._v = ufunc(cached[x] if x and type(yv) is ndarray and yv.dtype is f32
                             else x, yv)
                return t
            except _NUMPY_ERRORS:
                pass  # the public function names the op
        return public(x, y)

    method.__name__ = f"__r{op.name}__"
    return method


def _fast1(op: Op, x) -> Tensor:
    # Hot path for unary ops on a Tensor with no recorder active. The try costs nothing
    # unless NumPy raises (``-bool_tensor``); then the error is given the op's name.
    try:
        if not RECORDERS and type(x) is Tensor:
            t = _new(Tensor)
            t._v = op.forward(x._v)
            return t
        if RECORDERS and type(x) is Tensor:
            return _apply_recording(op, (x,), _NO_ATTRS)
        return apply(op, x)
    except (ValueError, TypeError, OverflowError) as e:
        _named_error(op, e, (x,))
        raise


# ---- float-only math ------------------------------------------------------------------
# The rule (TensorFlow's): float-only math (sqrt, exp, log, trig, tanh, sigmoid, erf, and
# in other modules softmax, norm, reduce_variance, ...) on an integer or bool tensor
# raises a TypeError naming the op and the dtype; it never computes in the integer dtype
# (``sigmoid(uint8)`` wrapped ``-x`` around) or in NumPy's promoted float16 (``norm`` of
# int8 overflowed). Cast explicitly: ``lk.exp(lk.cast(x, 'float32'))``.
_REAL_FLOATS = frozenset(np.dtype(t) for t in (np.float16, np.float32, np.float64,
                                               np.longdouble))
_FLOATS = _REAL_FLOATS | frozenset(np.dtype(t) for t in (np.complex64, np.complex128,
                                                         np.clongdouble))


def float_only_error(op: str, dtype, complex_ok: bool = True) -> TypeError:
    """The TypeError for float-only math ``op`` given a ``dtype`` it does not take."""
    wanted = "a floating-point or complex" if complex_ok else "a floating-point"
    return TypeError(
        f"{op}: expected {wanted} tensor, received dtype {np.dtype(dtype).name}; float-only "
        f"math does not take integer or bool input (as in TensorFlow): cast it first, "
        f"e.g. lk.cast(x, 'float32')"
    )


def _fast1f(op: Op, x, kinds: frozenset = _FLOATS) -> Tensor:
    """``_fast1`` for float-only ops: the dtype must be in ``kinds``.

    The check (float32 by identity, other dtypes by a set lookup) costs ~50 ns per call:
    ``tanh`` of a (4,) float32 tensor took 550 ns instead of 495 (minimum of 200 runs).
    """
    if type(x) is Tensor:
        v = x._v
        try:
            d = v.dtype
        except AttributeError:  # a weak Python scalar held by a Tensor
            d = None
        if d is _F32 or d in kinds:
            if not RECORDERS:
                t = _new(Tensor)
                t._v = op.forward(v)
                return t
            return _apply_recording(op, (x,), _NO_ATTRS)
    dt = x.dtype if isinstance(x, Tensor) else to_array(x).dtype  # (traced: no value read)
    if dt not in kinds:
        raise float_only_error(op.name, dt, kinds is _FLOATS)
    return _fast1(op, x)


def _apply_n(op: Op, *args, **attrs):
    try:
        return apply(op, *args, **attrs)
    except ValueError:
        _broadcast_error(op, args)
        raise


def _py(t: Tensor):
    """The Python scalar behind a weak-scalar input (so it stays weak), else ``t``."""
    v = t._rv
    return v if type(v) in _PY_SCALARS else t


def _zeros_rule(g, ins, y, needs):
    # Piecewise-constant functions: the derivative is zero wherever it exists.
    return tuple(_creation.zeros_like(x) if n else None for x, n in zip(ins, needs))


# ---- arithmetic --------------------------------------------------------------------
def _mul_rule(g, ins, y, needs):
    return (multiply(g, ins[1]) if needs[0] else None,
            multiply(g, ins[0]) if needs[1] else None)


def _div_rule(g, ins, y, needs):
    # d(x/y)/dy = -x/y^2 = -(x/y)/y: reuse the answer.
    return (divide(g, ins[1]) if needs[0] else None,
            negative(divide(multiply(g, y), ins[1])) if needs[1] else None)


def _mod_rule(g, ins, y, needs):
    # x mod y = x - floor(x/y)*y (floor semantics, like TF's FloorMod gradient).
    return (g if needs[0] else None,
            negative(multiply(g, floordiv(ins[0], ins[1]))) if needs[1] else None)


_ADD = binary("add", np.add, lambda g, ins, y, needs: (g, g), "({0} + {1})", reads=())
_SUB = binary("subtract", np.subtract, lambda g, ins, y, needs: (g, negative(g)),
              "({0} - {1})", reads=())
_MUL = binary("multiply", np.multiply, _mul_rule, "({0} * {1})", reads=(0, 1))
_DIV = binary("divide", np.true_divide, _div_rule, "({0} / {1})", reads=(1, "out"))
_FLOORDIV = binary("floordiv", np.floor_divide, _zeros_rule, "({0} // {1})", reads=())
_MOD = binary("mod", np.mod, _mod_rule, "({0} % {1})", reads=(0, 1))
_NEG = unary("negative", np.negative, lambda g, ins, y, needs: (negative(g),), "(-{0})", reads=())


@export("lk", "math")
def add(x: TensorLike, y: TensorLike) -> Tensor:
    """Elementwise ``x + y`` with NumPy broadcasting.

    Raises:
        ValueError: the shapes do not broadcast (the message names both).
    """
    return _fast2(_ADD, x, y)


@export("lk", "math")
def subtract(x: TensorLike, y: TensorLike) -> Tensor:
    """Elementwise ``x - y``."""
    return _fast2(_SUB, x, y)


@export("lk", "math")
def multiply(x: TensorLike, y: TensorLike) -> Tensor:
    """Elementwise ``x * y``."""
    return _fast2(_MUL, x, y)


@export("lk", "math", "math.truediv")
def divide(x: TensorLike, y: TensorLike) -> Tensor:
    """Elementwise true division ``x / y`` (integers give float64, like NumPy)."""
    return _fast2(_DIV, x, y)


@export("lk", "math")
def floordiv(x: TensorLike, y: TensorLike) -> Tensor:
    """Elementwise ``floor(x / y)`` (``x // y``); its gradient is zero.

    Integer division by zero follows NumPy (result 0 with a RuntimeWarning).
    """
    return _fast2(_FLOORDIV, x, y)


@export("lk", "math.floormod", "math")
def mod(x: TensorLike, y: TensorLike) -> Tensor:
    """Elementwise remainder with the sign of ``y`` (``x % y``, TF's ``floormod``).

    Gradients: ``g`` for ``x`` and ``-g * floor(x / y)`` for ``y``.
    """
    return _fast2(_MOD, x, y)


@export("lk", "math")
def negative(x: TensorLike) -> Tensor:
    """Elementwise ``-x``."""
    return _fast1(_NEG, x)


# ---- powers and roots --------------------------------------------------------------
def _pow_rule(g, ins, z, needs):
    x, y = ins
    gx = gy = None
    if needs[0]:
        yv = _py(y)
        ym1 = yv - 1 if type(yv) in _PY_SCALARS else subtract(yv, 1)
        gx = multiply(g, multiply(yv, pow(x, ym1)))
    if needs[1]:
        # d(x^y)/dy = x^y log(x); like TF, use 0 where x <= 0 so x == 0 gives 0, not nan.
        xv = _py(x)
        if type(xv) in _PY_SCALARS:
            log_x = math.log(xv) if xv > 0 else 0.0
        else:
            pos = greater(xv, 0)
            log_x = where(pos, log(where(pos, xv, 1)), 0)
        gy = multiply(g, multiply(z, log_x))
    return gx, gy


def _rsqrt_forward(x):
    return 1 / np.sqrt(x)


_POW = binary("pow", np.power, _pow_rule, "({0} ** {1})", reads=(0, 1, "out"))
_SQUARE = unary("square", np.square,
                lambda g, ins, y, needs: (multiply(g, multiply(2, ins[0])),), "({0} * {0})",
                reads=(0,))
# d sqrt(x) = 1 / (2 sqrt(x)): reuse the answer; at x == 0 this is inf, as in TF.
_SQRT = unary("sqrt", np.sqrt, lambda g, ins, y, needs: (divide(g, multiply(2, y)),),
              "sqrt({0})", reads=("out",))
# rsqrt is a record (not 1/sqrt) to save a pass and a node: d x^-1/2 = -y^3 / 2.
_RSQRT = unary("rsqrt", _rsqrt_forward,
               lambda g, ins, y, needs: (multiply(g, multiply(-0.5, multiply(y, square(y)))),),
               "(1 / sqrt({0}))", reads=("out",))


@export("lk", "math")
def pow(x: TensorLike, y: TensorLike) -> Tensor:
    """Elementwise ``x ** y``, differentiable in both arguments.

    The gradient with respect to ``y`` is ``x**y * log(x)`` where ``x > 0`` and 0
    elsewhere (TensorFlow's convention, so ``x == 0`` gives 0 instead of nan).
    Integer ``x`` with negative integer ``y`` raises ``ValueError`` as in NumPy.
    """
    return _fast2(_POW, x, y)


@export("lk", "math")
def square(x: TensorLike) -> Tensor:
    """Elementwise ``x ** 2``."""
    return _fast1(_SQUARE, x)


@export("lk", "math")
def sqrt(x: TensorLike) -> Tensor:
    """Elementwise square root (nan for negative inputs).

    Float-only math (as are ``rsqrt``, ``exp``, ``expm1``, ``log``, ``log1p``, ``sin``,
    ``cos``, ``tan``, ``tanh``, ``sigmoid`` and ``erf``): like TensorFlow, integer and
    bool inputs raise instead of being computed in a promoted dtype.

    Raises:
        TypeError: ``x`` has an integer or bool dtype (the message names the op and
            dtype); cast first with ``lk.cast(x, 'float32')``.
    """
    return _fast1f(_SQRT, x)


@export("lk", "math")
def rsqrt(x: TensorLike) -> Tensor:
    """Elementwise reciprocal square root ``1 / sqrt(x)``.

    Raises:
        TypeError: ``x`` is an integer or bool tensor (float-only math, see ``sqrt``).
    """
    return _fast1f(_RSQRT, x)


# ---- exponentials and logarithms ---------------------------------------------------
# Rules reuse the forward answer ``y`` where it is cheaper (exp, expm1).
_EXP = unary("exp", np.exp, lambda g, ins, y, needs: (multiply(g, y),), "exp({0})", reads=("out",))
_EXPM1 = unary("expm1", np.expm1, lambda g, ins, y, needs: (multiply(g, add(y, 1)),),
               "expm1({0})", reads=("out",))
_LOG = unary("log", np.log, lambda g, ins, y, needs: (divide(g, ins[0]),), "log({0})", reads=(0,))
_LOG1P = unary("log1p", np.log1p, lambda g, ins, y, needs: (divide(g, add(ins[0], 1)),),
               "log1p({0})", reads=(0,))


@export("lk", "math")
def exp(x: TensorLike) -> Tensor:
    """Elementwise ``e ** x``.

    Raises:
        TypeError: ``x`` is an integer or bool tensor (float-only math, see ``sqrt``).
    """
    return _fast1f(_EXP, x)


@export("lk", "math")
def expm1(x: TensorLike) -> Tensor:
    """Elementwise ``exp(x) - 1``, accurate for small ``x``.

    Raises:
        TypeError: ``x`` is an integer or bool tensor (float-only math, see ``sqrt``).
    """
    return _fast1f(_EXPM1, x)


@export("lk", "math")
def log(x: TensorLike) -> Tensor:
    """Elementwise natural logarithm (``-inf`` at 0, nan below).

    Raises:
        TypeError: ``x`` is an integer or bool tensor (float-only math, see ``sqrt``).
    """
    return _fast1f(_LOG, x)


@export("lk", "math")
def log1p(x: TensorLike) -> Tensor:
    """Elementwise ``log(1 + x)``, accurate for small ``x``.

    Raises:
        TypeError: ``x`` is an integer or bool tensor (float-only math, see ``sqrt``).
    """
    return _fast1f(_LOG1P, x)


# ---- trigonometric and hyperbolic --------------------------------------------------
# exp(-x) overflows (with a warning) where -x exceeds these.
_EXP_ARG_MAX = {np.dtype(np.float16): 11.0, np.dtype(np.float32): 88.0}


def _sigmoid_forward(x):
    n = np.negative(x)
    if n.size and not n.max() <= _EXP_ARG_MAX.get(x.dtype, 709.0):  # (or a nan)
        return _sigmoid_tails(x)
    e = np.exp(n, out=n) if n.ndim else np.exp(n)  # 0-d: a NumPy scalar
    e += 1
    return np.reciprocal(e, out=e) if e.ndim else np.reciprocal(e)


def _sigmoid_tails(x):
    # Inputs far below 0: 1 / (1 + e) for x >= 0 and e / (1 + e) below, with
    # e = exp(-|x|) <= 1, never overflows and is exact to the last subnormal; the
    # common case above saves the select. sigmoid(-inf) = 0 exactly.
    e = np.exp(np.negative(np.abs(x)))
    r = 1 / (1 + e)
    return np.where(x < 0, e * r, r)


_SIN = unary("sin", np.sin, lambda g, ins, y, needs: (multiply(g, cos(ins[0])),), "sin({0})",
             reads=(0,))
_COS = unary("cos", np.cos, lambda g, ins, y, needs: (negative(multiply(g, sin(ins[0]))),),
             "cos({0})", reads=(0,))
_TAN = unary("tan", np.tan, lambda g, ins, y, needs: (multiply(g, add(1, square(y))),),
             "tan({0})", reads=("out",))
def _times_g(t: np.ndarray, g):
    # ``t * g`` written into the temporary ``t`` when ``g`` has its shape (the usual case).
    if type(g) is np.ndarray and g.shape == t.shape:
        t *= g
        return t
    return t * g


def _tanh_grad_fwd(y, g):
    # g * (1 - y*y) with one temporary: one record instead of three eager ops.
    t = y * y
    if type(t) is not np.ndarray:  # 0-d inputs give NumPy scalars (no out=)
        return g * (1 - t)
    np.subtract(1, t, t)
    return _times_g(t, g)


def _sigmoid_grad_fwd(y, g):
    # g * y * (1 - y), one temporary.
    t = np.subtract(1, y)
    if type(t) is not np.ndarray:
        return g * y * t
    t *= y
    return _times_g(t, g)


def _act_grad_rule(grad_op: Op):
    """The rule of tanh/sigmoid: ``grad_op(y, g)``, itself a differentiable record.
    With no recorder active (a first-order backward) its forward runs directly."""
    fwd = grad_op.forward

    def rule(g, ins, y, needs):
        if not RECORDERS and type(g) is Tensor:
            t = _new(Tensor)
            t._v = fwd(y._v, g._v)
            return (t,)
        return (apply(grad_op, y, g),)
    return rule


# The gradients of tanh and sigmoid are records of their own (tanh_grad(y, g),
# sigmoid_grad(y, g)) whose rules are again lk ops, so higher orders still work.
_TANH_GRAD = Op("tanh_grad", _tanh_grad_fwd,
                lambda up, ins, out, needs: (
                    multiply(up, multiply(ins[1], multiply(-2, ins[0]))) if needs[0] else None,
                    apply(_TANH_GRAD, ins[0], up) if needs[1] else None),
                "({1} * (1 - {0} * {0}))")
_SIGMOID_GRAD = Op("sigmoid_grad", _sigmoid_grad_fwd,
                   lambda up, ins, out, needs: (
                       multiply(up, multiply(ins[1], subtract(1, multiply(2, ins[0]))))
                       if needs[0] else None,
                       apply(_SIGMOID_GRAD, ins[0], up) if needs[1] else None),
                   "({1} * {0} * (1 - {0}))")
_TANH = unary("tanh", np.tanh, _act_grad_rule(_TANH_GRAD), "tanh({0})", reads=("out",))
_SIGMOID = unary("sigmoid", _sigmoid_forward, _act_grad_rule(_SIGMOID_GRAD),
                 "(1 / (1 + exp(-{0})))", reads=("out",))


@export("lk", "math")
def sin(x: TensorLike) -> Tensor:
    """Elementwise sine (radians).

    Raises:
        TypeError: ``x`` is an integer or bool tensor (float-only math, see ``sqrt``).
    """
    return _fast1f(_SIN, x)


@export("lk", "math")
def cos(x: TensorLike) -> Tensor:
    """Elementwise cosine (radians).

    Raises:
        TypeError: ``x`` is an integer or bool tensor (float-only math, see ``sqrt``).
    """
    return _fast1f(_COS, x)


@export("lk", "math")
def tan(x: TensorLike) -> Tensor:
    """Elementwise tangent (radians).

    Raises:
        TypeError: ``x`` is an integer or bool tensor (float-only math, see ``sqrt``).
    """
    return _fast1f(_TAN, x)


@export("lk", "math", "nn")
def tanh(x: TensorLike) -> Tensor:
    """Elementwise hyperbolic tangent.

    Raises:
        TypeError: ``x`` is an integer or bool tensor (float-only math, see ``sqrt``).
    """
    return _fast1f(_TANH, x)


@export("lk", "math", "nn")
def sigmoid(x: TensorLike) -> Tensor:
    """Elementwise logistic function ``1 / (1 + exp(-x))``, without overflow warnings.

    Exact in the tails: ``sigmoid(-inf)`` is 0 and ``sigmoid(-100.0)`` the float32
    subnormal ``3.7e-44``.

    Raises:
        TypeError: ``x`` is not a real floating-point tensor (float-only math, as in TF).
    """
    return _fast1f(_SIGMOID, x, _REAL_FLOATS)


# ---- erf ---------------------------------------------------------------------------
# The kernel (a piecewise polynomial fit, evaluated block-wise) is in
# layerkit.kernels.special.
_TWO_OVER_SQRT_PI = 2 / math.sqrt(math.pi)


def _erf_forward(x):
    x = np.asarray(x)
    if x.dtype.kind != "f":
        raise float_only_error("erf", x.dtype, complex_ok=False)
    return _kspecial.erf(x)


_ERF = unary("erf", _erf_forward,
             lambda g, ins, y, needs: (
                 multiply(g, multiply(_TWO_OVER_SQRT_PI, exp(negative(square(ins[0]))))),),
             reads=(0,))


@export("lk", "math")
def erf(x: TensorLike) -> Tensor:
    """Elementwise Gauss error function ``2/sqrt(pi) * integral_0^x exp(-t^2) dt``.

    Accurate to about 1 ulp for float64 and float32.

    Raises:
        TypeError: ``x`` is not a real floating-point tensor (float-only math, as in TF).
    """
    return _fast1f(_ERF, x, _REAL_FLOATS)


# ---- sign and rounding -------------------------------------------------------------
_ABS = unary("abs", np.abs, lambda g, ins, y, needs: (multiply(g, sign(ins[0])),),
             "abs({0})", reads=(0,))
_SIGN = unary("sign", np.sign, _zeros_rule,
              "where({0} > 0, ones_like({0}), where({0} < 0, -ones_like({0}), {0} * 0))", reads=())
_FLOOR = unary("floor", np.floor, _zeros_rule, "floor({0})", reads=())
_CEIL = unary("ceil", np.ceil, _zeros_rule, "ceil({0})", reads=())
_ROUND = unary("round", np.round, _zeros_rule, reads=())


@export("lk", "math")
def abs(x: TensorLike) -> Tensor:
    """Elementwise absolute value; its gradient at 0 is 0 (``sign(0) = 0``, as in TF)."""
    return _fast1(_ABS, x)


@export("lk", "math")
def sign(x: TensorLike) -> Tensor:
    """Elementwise sign: -1, 0 or 1 (nan for nan); zero gradient."""
    return _fast1(_SIGN, x)


@export("lk", "math")
def floor(x: TensorLike) -> Tensor:
    """Elementwise floor; zero gradient."""
    return _fast1(_FLOOR, x)


@export("lk", "math")
def ceil(x: TensorLike) -> Tensor:
    """Elementwise ceiling; zero gradient."""
    return _fast1(_CEIL, x)


@export("lk", "math", "math.rint")
def round(x: TensorLike) -> Tensor:
    """Elementwise rounding to the nearest integer, halves to even (TF's ``round``).

    Zero gradient.
    """
    return _fast1(_ROUND, x)


# ---- maximum, minimum, clip, where ---------------------------------------------------
def _max_rule(g, ins, y, needs):
    # TF's convention: the first argument takes the gradient of a tie (x >= y).
    mask = greater_equal(ins[0], ins[1])
    return (where(mask, g, 0) if needs[0] else None,
            where(mask, 0, g) if needs[1] else None)


def _min_rule(g, ins, y, needs):
    # As for maximum: ties (x <= y) send the gradient to x.
    mask = less_equal(ins[0], ins[1])
    return (where(mask, g, 0) if needs[0] else None,
            where(mask, 0, g) if needs[1] else None)


def _clip_forward(x, lo, hi):
    return np.minimum(np.maximum(x, lo), hi)


def _clip_rule(g, ins, y, needs):
    # TF's ClipByValue gradient: x gets g where lo <= x <= hi, each bound where it was hit.
    x, lo, hi = ins
    below = less(x, lo)
    above = greater(x, hi)
    return (where(logical_or(below, above), 0, g) if needs[0] else None,
            where(below, g, 0) if needs[1] else None,
            where(above, g, 0) if needs[2] else None)


def _where_rule(g, ins, y, needs):
    cond = ins[0]
    return (None,
            where(cond, g, 0) if needs[1] else None,
            where(cond, 0, g) if needs[2] else None)


# NaN-propagating select forms, like np.maximum/np.minimum (x + y is nan if either is).
_MAXIMUM = binary("maximum", np.maximum, _max_rule,
                  "where({0} >= {1}, {0}, where({1} > {0}, {1}, {0} + {1}))", reads=(0, 1))
_MINIMUM = binary("minimum", np.minimum, _min_rule,
                  "where({0} <= {1}, {0}, where({1} < {0}, {1}, {0} + {1}))", reads=(0, 1))
_CLIP = binary("clip_by_value", _clip_forward, _clip_rule,
               "where({1} > {2}, {2}, where({0} < {1}, {1}, where({0} > {2}, {2}, {0})))",
               reads=(0, 1, 2))
_WHERE = binary("where", np.where, _where_rule, "where({0}, {1}, {2})", reads=(0,))


@export("lk", "math")
def maximum(x: TensorLike, y: TensorLike) -> Tensor:
    """Elementwise maximum (nan if either is nan); a tie sends the gradient to ``x``."""
    return _fast2(_MAXIMUM, x, y)


@export("lk", "math")
def minimum(x: TensorLike, y: TensorLike) -> Tensor:
    """Elementwise minimum (nan if either is nan); a tie sends the gradient to ``x``."""
    return _fast2(_MINIMUM, x, y)


@export("lk")
def clip_by_value(t: TensorLike, clip_value_min: TensorLike, clip_value_max: TensorLike) -> Tensor:
    """Clip ``t`` elementwise to ``[clip_value_min, clip_value_max]``.

    The bounds broadcast against ``t`` but may not enlarge it. The gradient flows to
    ``t`` where ``min <= t <= max`` and to a bound where ``t`` was clipped to it.

    Raises:
        ValueError: the bounds do not broadcast to ``t``'s shape.
    """
    out = _apply_n(_CLIP, t, clip_value_min, clip_value_max)
    tshape = np.shape(t._rv) if isinstance(t, Tensor) else np.shape(t)
    if out.shape != tshape:
        raise ValueError(
            f"clip_by_value: the bounds (shapes {np.shape(to_array(clip_value_min))} and "
            f"{np.shape(to_array(clip_value_max))}) would broadcast t of shape {tshape} "
            f"to the larger shape {out.shape}"
        )
    return out


@export("lk")
def where(cond: TensorLike, x: TensorLike | None = None, y: TensorLike | None = None) -> Tensor:
    """Elementwise select: ``x`` where ``cond`` is true, else ``y`` (broadcasting).

    With ``x`` and ``y`` both None, returns the coordinates of the true elements as an
    int64 tensor of shape ``(num_true, cond.ndim)`` (TF's one-argument form).
    The gradient flows to ``x`` and ``y`` (zero where not selected), not to ``cond``.

    Raises:
        ValueError: only one of ``x`` and ``y`` is given, or the shapes do not broadcast.
    """
    if x is None and y is None:
        return wrap(np.argwhere(to_array(cond)).astype(np.int64))
    if x is None or y is None:
        raise ValueError("where: give both x and y, or neither (to get coordinates)")
    if type(x) in _PY_SCALARS and type(y) in _PY_SCALARS:
        # Only the condition is an array: scalars take the default dtypes (float32),
        # a float with an int too (never int64 + float32 -> float64).
        dt = np.float32 if float in (type(x), type(y)) else None
        x, y = to_array(x, dt), to_array(y, dt)
    return _apply_n(_WHERE, cond, x, y)


# ---- comparisons and logic (not differentiable) -------------------------------------
_EQUAL = binary("equal", np.equal, None, "({0} == {1})")
_NOT_EQUAL = binary("not_equal", np.not_equal, None, "({0} != {1})")
_LESS = binary("less", np.less, None, "({0} < {1})")
_LESS_EQUAL = binary("less_equal", np.less_equal, None, "({0} <= {1})")
_GREATER = binary("greater", np.greater, None, "({0} > {1})")
_GREATER_EQUAL = binary("greater_equal", np.greater_equal, None, "({0} >= {1})")
_LOGICAL_AND = binary("logical_and", np.logical_and, None, "({0} & {1})")
_LOGICAL_OR = binary("logical_or", np.logical_or, None, "({0} | {1})")
_LOGICAL_NOT = unary("logical_not", np.logical_not, None, "(~{0})")
_ISFINITE = unary("isfinite", np.isfinite, None, "(({0} - {0}) == 0)")  # inf-inf is nan
_ISNAN = unary("isnan", np.isnan, None, "({0} != {0})")


@export("lk", "math")
def equal(x: TensorLike, y: TensorLike) -> Tensor:
    """Elementwise ``x == y`` (bool)."""
    return _fast2(_EQUAL, x, y)


@export("lk", "math")
def not_equal(x: TensorLike, y: TensorLike) -> Tensor:
    """Elementwise ``x != y`` (bool)."""
    return _fast2(_NOT_EQUAL, x, y)


@export("lk", "math")
def less(x: TensorLike, y: TensorLike) -> Tensor:
    """Elementwise ``x < y`` (bool)."""
    return _fast2(_LESS, x, y)


@export("lk", "math")
def less_equal(x: TensorLike, y: TensorLike) -> Tensor:
    """Elementwise ``x <= y`` (bool)."""
    return _fast2(_LESS_EQUAL, x, y)


@export("lk", "math")
def greater(x: TensorLike, y: TensorLike) -> Tensor:
    """Elementwise ``x > y`` (bool)."""
    return _fast2(_GREATER, x, y)


@export("lk", "math")
def greater_equal(x: TensorLike, y: TensorLike) -> Tensor:
    """Elementwise ``x >= y`` (bool)."""
    return _fast2(_GREATER_EQUAL, x, y)


@export("lk", "math")
def logical_and(x: TensorLike, y: TensorLike) -> Tensor:
    """Elementwise logical AND (bool)."""
    return _fast2(_LOGICAL_AND, x, y)


@export("lk", "math")
def logical_or(x: TensorLike, y: TensorLike) -> Tensor:
    """Elementwise logical OR (bool)."""
    return _fast2(_LOGICAL_OR, x, y)


@export("lk", "math")
def logical_not(x: TensorLike) -> Tensor:
    """Elementwise logical NOT (bool)."""
    return _fast1(_LOGICAL_NOT, x)


@export("lk", "math.is_finite")
def isfinite(x: TensorLike) -> Tensor:
    """Elementwise test for finite values (not inf, not nan)."""
    return _fast1(_ISFINITE, x)


@export("lk", "math.is_nan")
def isnan(x: TensorLike) -> Tensor:
    """Elementwise test for nan."""
    return _fast1(_ISNAN, x)


# ---- dtype and gradient control -------------------------------------------------------
def _cast_vjp(g, ins, y, needs, dtype):
    # Like TF: a gradient only between float (or complex) dtypes; casting to an integer
    # or bool cuts the path.
    x = ins[0]
    if x.dtype.kind not in "fc" or g.dtype.kind not in "fc":
        return (None,)
    return (cast(g, x.dtype),)


_CAST = Op("cast", lambda x, dtype: np.asarray(x).astype(dtype, copy=False), _cast_vjp)
# Identity with no vjp: never recorded, so nothing upstream of it gets a gradient.
_STOP_GRADIENT = Op("stop_gradient", lambda x: x, None, "{0}")


@export("lk")
def cast(x: TensorLike, dtype: DTypeLike) -> Tensor:
    """Cast ``x`` to ``dtype`` (differentiable between float dtypes).

    Float to integer truncates toward zero, as in NumPy and TensorFlow.
    """
    return apply(_CAST, x, dtype=as_dtype(dtype))


@export("lk")
def stop_gradient(x: TensorLike) -> Tensor:
    """Return ``x`` unchanged, but as a constant for every gradient tape.

    Examples:
        >>> import layerkit as lk
        >>> x = lk.constant(3.0)
        >>> with lk.GradientTape() as tape:
        ...     tape.watch(x)
        ...     y = x * lk.stop_gradient(x)
        >>> tape.gradient(y, x)
        Tensor(3., shape=(), dtype=float32)
    """
    return _fast1(_STOP_GRADIENT, x)

__all__ = top_level(__name__)
