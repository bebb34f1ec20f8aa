"""Property-based fuzzing of the op layer against NumPy oracles (hypothesis).

Each case draws shapes (0-size, 0-d, broadcast mismatches), dtypes (bool, every int and
uint, float16/32/64, complex), values (NaN, +-inf, integer extremes) and arguments (odd
axes: negative, repeated, out of range, floats, bools), runs the layerkit op and an
oracle, and classifies the outcome:

- **equal**: both give a result, with the same shape, dtype and values (exact, or within
  a stated tolerance where the computation legitimately differs from the oracle's);
- **clear error**: the oracle refuses (NumPy raises, or a TensorFlow rule encoded in the
  oracle says it must) and layerkit raises an expected exception type whose message
  names the op.

Anything else fails. The oracles are NumPy unless TensorFlow differs, where they follow
TF and say so in a comment. Examples are derandomized and bounded (deadline off): the
module runs 3,700 cases in about 22 s of CPU time.
"""
from __future__ import annotations

import math
import operator
import os
import sys
import warnings
from collections import Counter

import numpy as np
import pytest
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import layerkit as lk

# LK_FUZZ_SCALE=20 (say) runs 20x the examples, with a fresh random seed unless
# LK_FUZZ_SEED is set: a deep run to look for more bugs. The default is the budget above.
_SCALE = float(os.environ.get("LK_FUZZ_SCALE", "1"))
_SEED = os.environ.get("LK_FUZZ_SEED")


def fuzz(n: int):
    """Derandomized, bounded hypothesis settings (the module's time budget)."""
    deep = _SCALE != 1
    s = settings(max_examples=max(1, int(n * _SCALE)), deadline=None,
                 derandomize=not deep, database=None,
                 suppress_health_check=list(HealthCheck))
    return (lambda f: seed(int(_SEED))(s(f))) if deep and _SEED else s


INTS = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]
FLOATS = [np.float16, np.float32, np.float64]
COMPLEX = [np.complex64, np.complex128]
REAL = [np.bool_, *INTS, *FLOATS]
ALL = [*REAL, *COMPLEX]
CLEAR = (ValueError, TypeError, IndexError, OverflowError, MemoryError)


class Refuse(Exception):
    """Raised by an oracle: the op must refuse these arguments with ``kind``."""

    def __init__(self, kind: type[Exception] = Exception) -> None:
        super().__init__(kind.__name__)
        self.kind = kind


def shapes(min_dims: int = 0, max_dims: int = 3, max_side: int = 3):
    return hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=0,
                            max_side=max_side)


def arrays(dtypes, shape=None, finite: bool = False):
    """Arrays of one of ``dtypes``: full ranges, NaN/inf and subnormals unless finite."""
    shape = shapes() if shape is None else shape

    def build(dt):
        dt = np.dtype(dt)
        if dt.kind in "fc" and finite:
            lim = {2: 100.0, 4: 1e6, 8: 1e6, 16: 1e6}[dt.itemsize]
            elems = hnp.from_dtype(dt, allow_nan=False, allow_infinity=False,
                                   max_magnitude=lim)
        else:
            elems = hnp.from_dtype(dt)
        return hnp.arrays(dt, shape, elements=elems)

    return st.sampled_from(dtypes).flatmap(build)


def as_input(draw, a: np.ndarray):
    """The array as a Tensor or as a raw ndarray (both are accepted everywhere)."""
    return lk.constant(a) if draw(st.booleans()) else a


def _np(r):
    if isinstance(r, (list, tuple)):
        return [_np(v) for v in r]
    return np.asarray(r)


def outcome(fn):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            return True, fn()
        except Exception as e:  # classified by the caller
            return False, e


def same(got, want, rtol: float = 0.0, atol: float = 0.0, where: str = "") -> None:
    if isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want), f"{where}: {got} vs {want}"
        for g, w in zip(got, want):
            same(g, w, rtol, atol, where)
        return
    want = np.asarray(want)
    assert got.shape == want.shape, f"{where}: shape {got.shape}, expected {want.shape}"
    assert got.dtype == want.dtype, f"{where}: dtype {got.dtype}, expected {want.dtype}"
    if rtol or atol:
        with np.errstate(all="ignore"):
            np.testing.assert_allclose(got.astype(np.complex128 if got.dtype.kind == "c"
                                                  else np.float64),
                                       want.astype(np.complex128 if want.dtype.kind == "c"
                                                   else np.float64),
                                       rtol=rtol, atol=atol, err_msg=where)
    else:
        np.testing.assert_array_equal(got, want, err_msg=where, strict=True)


def check(counts: Counter, op: str, run, oracle, rtol: float = 0.0, atol: float = 0.0,
          note: str = "") -> None:
    """Run layerkit (``run``) and the oracle; assert equal results or a clear error."""
    ok_want, want = outcome(oracle)
    ok_got, got = outcome(run)
    where = f"{op} {note}".strip()
    if not ok_want:
        assert not ok_got, f"{where}: the oracle refuses ({want!r}) but layerkit returned {got}"
        kinds = want.kind if isinstance(want, Refuse) else CLEAR
        assert isinstance(got, kinds) and isinstance(got, CLEAR), \
            f"{where}: expected a clear {kinds} error, got {type(got).__name__}: {got}"
        assert op in str(got), f"{where}: the error does not name the op: {got!r}"
        counts["clear error"] += 1
        return
    assert ok_got, f"{where}: layerkit raised {type(got).__name__}: {got} (oracle: {want!r})"
    same(_np(got), _np(want) if not isinstance(want, list) else want, rtol, atol, where)
    counts["equal"] += 1


def run_fuzz(test, counts: Counter, min_errors: int = 1, depth: int = 1) -> None:
    test()
    # Guards against a fuzzer that stopped exercising one of the two outcomes.
    assert counts["equal"] > 0 and counts["clear error"] >= min_errors, counts
    group = sys._getframe(depth).f_code.co_name.removeprefix("test_fuzz_")
    RESULTS.update({f"{group}: {k}": v for k, v in counts.items()})


def run_cases(cases, n: int, tolerance=lambda name, args: {}) -> None:
    """Fuzz ``n`` draws of ``cases``: (op name, layerkit call, oracle, args for the message)."""
    counts = Counter()

    @fuzz(n)
    @given(cases)
    def run(case):
        name, call, oracle, args = case
        check(counts, name, call, oracle, note=f"args {args!r}", **tolerance(name, args))

    run_fuzz(run, counts, depth=2)


RESULTS: Counter = Counter()


def _eps(dt) -> float:
    return float(np.finfo(dt).eps)


def _tiny(dt) -> float:
    return float(np.finfo(dt).smallest_subnormal)


# ---- oracles shared by several groups ----------------------------------------------------------
def _int_like(a) -> bool:
    return isinstance(a, (int, np.integer)) and not isinstance(a, (bool, np.bool_))


def oracle_axes(axis, ndim: int):
    """TF's reduction axes: None, or sorted distinct axes (a repeated axis is reduced once,
    unlike NumPy, which refuses it); non-integers are a TypeError (never truncated)."""
    if axis is None:
        return None
    items = list(axis) if isinstance(axis, (list, tuple)) else [axis]
    if not all(_int_like(a) for a in items):
        raise Refuse(TypeError)
    if not all(-ndim <= a < ndim for a in items):
        raise Refuse(ValueError)
    return tuple(sorted({a % ndim for a in items}))


def oracle_axis(axis, ndim: int, extra: int = 0) -> int:
    if not _int_like(axis):
        raise Refuse(TypeError)
    n = ndim + extra
    if not -n <= axis < n:
        raise Refuse(ValueError)
    return axis % n


def float_only(a: np.ndarray, complex_ok: bool = True) -> None:
    # TF's rule: float-only math on integer or bool input is a TypeError naming the op.
    if a.dtype.kind not in ("fc" if complex_ok else "f"):
        raise Refuse(TypeError)


AXES = st.one_of(
    st.none(), st.integers(-4, 4),
    st.lists(st.integers(-4, 4), max_size=3).map(tuple),
    st.lists(st.integers(-3, 3), max_size=3),
    st.sampled_from([(), 1.5, 0.0, True, "0", np.int32(-1), np.int64(0)]),
)
ONE_AXIS = st.one_of(st.integers(-4, 4), st.sampled_from([1.5, True, np.int32(0), None, [0]]))


# ---- elementwise unary -------------------------------------------------------------------------
def _sigmoid_ref(x):
    x = x.astype(np.float64)
    e = np.exp(-np.abs(x))
    return np.where(x < 0, e / (1 + e), 1 / (1 + e))


_erf64 = np.vectorize(math.erf, otypes=[np.float64])

# name: (layerkit op, NumPy reference, float-only?, tolerance in ulps or 0 for exact)
UNARY = {
    "negative": (lk.negative, np.negative, False, 0), "abs": (lk.abs, np.abs, False, 0),
    "sign": (lk.sign, np.sign, False, 0), "square": (lk.square, np.square, False, 0),
    "floor": (lk.floor, np.floor, False, 0), "ceil": (lk.ceil, np.ceil, False, 0),
    "round": (lk.round, np.round, False, 0),
    "logical_not": (lk.logical_not, np.logical_not, False, 0),
    "isfinite": (lk.isfinite, np.isfinite, False, 0), "isnan": (lk.isnan, np.isnan, False, 0),
    "sqrt": (lk.sqrt, np.sqrt, True, 0), "rsqrt": (lk.rsqrt, lambda x: 1 / np.sqrt(x), True, 0),
    "exp": (lk.exp, np.exp, True, 0), "expm1": (lk.expm1, np.expm1, True, 0),
    "log": (lk.log, np.log, True, 0), "log1p": (lk.log1p, np.log1p, True, 0),
    "sin": (lk.sin, np.sin, True, 0), "cos": (lk.cos, np.cos, True, 0),
    "tan": (lk.tan, np.tan, True, 0), "tanh": (lk.tanh, np.tanh, True, 0),
    # Real only; compared with the exact value rounded once, within a few ulps.
    "sigmoid": (lk.sigmoid, _sigmoid_ref, "real", 4),
    "erf": (lk.erf, lambda x: _erf64(x.astype(np.float64)), "real", 2),
}


def test_fuzz_elementwise_unary():
    counts = Counter()

    @fuzz(500)
    @given(st.sampled_from(sorted(UNARY)), arrays(ALL), st.data())
    def run(name, a, data):
        fn, ref, only, ulps = UNARY[name]

        def oracle():
            if only:
                float_only(a, complex_ok=only is True)
            out = ref(a)
            return np.asarray(out).astype(a.dtype) if ulps else out

        x = as_input(data.draw, a)
        tol = {"rtol": ulps * _eps(a.dtype), "atol": ulps * _tiny(a.dtype)} \
            if ulps and a.dtype.kind == "f" else {}
        check(counts, name, lambda: fn(x), oracle, note=f"{a.dtype} {a.shape}", **tol)

    run_fuzz(run, counts)


# ---- elementwise binary and operators --------------------------------------------------------
BINARY = {
    "add": (lk.add, np.add, "__add__"), "subtract": (lk.subtract, np.subtract, "__sub__"),
    "multiply": (lk.multiply, np.multiply, "__mul__"),
    "divide": (lk.divide, np.true_divide, "__truediv__"),
    "floordiv": (lk.floordiv, np.floor_divide, "__floordiv__"),
    "mod": (lk.mod, np.mod, "__mod__"), "pow": (lk.pow, np.power, "__pow__"),
    "maximum": (lk.maximum, np.maximum, None), "minimum": (lk.minimum, np.minimum, None),
    "equal": (lk.equal, np.equal, None), "not_equal": (lk.not_equal, np.not_equal, None),
    "less": (lk.less, np.less, "__lt__"), "less_equal": (lk.less_equal, np.less_equal, "__le__"),
    "greater": (lk.greater, np.greater, "__gt__"),
    "greater_equal": (lk.greater_equal, np.greater_equal, "__ge__"),
    "logical_and": (lk.logical_and, np.logical_and, None),
    "logical_or": (lk.logical_or, np.logical_or, None),
}
SCALARS = st.one_of(st.integers(-300, 300), st.sampled_from([2 ** 40, -1, 0, 1000]),
                    st.floats(allow_nan=True, allow_infinity=True, width=32), st.booleans())


@st.composite
def binary_operands(draw):
    if draw(st.booleans()):  # shapes that broadcast
        sa, sb = draw(hnp.mutually_broadcastable_shapes(num_shapes=2, min_side=0,
                                                        max_side=3, max_dims=3)).input_shapes
    else:  # independent shapes: often a mismatch
        sa, sb = draw(shapes()), draw(shapes())
    a = draw(arrays(ALL, st.just(sa)))
    b = draw(st.one_of(arrays(ALL, st.just(sb)), SCALARS))
    return a, b


def test_fuzz_elementwise_binary_and_operators():
    counts = Counter()

    @fuzz(600)
    @given(st.sampled_from(sorted(BINARY)), binary_operands(), st.integers(0, 2), st.data())
    def run(name, ab, form, data):
        fn, ref, dunder = BINARY[name]
        a, b = ab
        x = lk.constant(a)
        y = as_input(data.draw, b) if isinstance(b, np.ndarray) else b
        note = (f"{a.dtype}{a.shape} op {getattr(b, 'dtype', type(b).__name__)}"
                f"{getattr(b, 'shape', '')} form {form}")
        reflected = "__r" + dunder[2:] if dunder else ""
        if form == 2 and not isinstance(b, np.ndarray) and hasattr(lk.Tensor, reflected):
            # A Python scalar on the left: 2 - t runs t.__rsub__(2).
            check(counts, name, lambda: getattr(x, reflected)(b), lambda: ref(b, a), note=note)
        elif form == 2 and isinstance(b, np.ndarray) and dunder:
            # An ndarray on the left: NumPy hands the ufunc to Tensor.__array_ufunc__.
            op = getattr(operator, dunder.strip("_"))
            check(counts, name, lambda: op(b, x), lambda: ref(b, a), note=note)
        elif form == 1 and dunder:  # the operator (the fast path)
            check(counts, name, lambda: getattr(x, dunder)(y), lambda: ref(a, b), note=note)
        else:
            check(counts, name, lambda: fn(x, y), lambda: ref(a, b), note=note)

    run_fuzz(run, counts)


# ---- reductions --------------------------------------------------------------------------------
def _lse_ref(a, axis, keepdims):
    x = a.astype(np.float64)
    m = np.max(x, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0)
    with np.errstate(divide="ignore"):
        s = np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True)) + m
    return (s if keepdims else np.squeeze(s, axis=axis)).astype(a.dtype)


def _int_mean(a, axis, keepdims):
    # TF: an integer mean truncates toward zero in the input dtype (exact, Python ints).
    s = np.sum(a.astype(object), axis=axis, keepdims=keepdims)
    n = max(math.prod(a.shape[i] for i in (range(a.ndim) if axis is None else axis)), 1)
    t = np.vectorize(lambda v: -(-v // n) if v < 0 else v // n, otypes=[object])(s)
    return np.asarray(t).astype(a.dtype)


def _mean_ref(a, axis, keepdims):
    if a.dtype.kind in "iu":
        return _int_mean(a, axis, keepdims)
    if a.dtype == np.bool_:  # a float32 fraction (NumPy gives float64)
        return np.mean(a, axis=axis, keepdims=keepdims, dtype=np.float32)
    return np.mean(a, axis=axis, keepdims=keepdims).astype(a.dtype)


def _extremum(fn):
    def ref(a, axis, keepdims):
        if a.size == 0 and (axis is None or any(a.shape[i] == 0 for i in axis)):
            raise Refuse(ValueError)  # no identity: a clear error (TF would give -inf/+inf)
        return fn(a, axis=axis, keepdims=keepdims)
    return ref


def _int_dtype(a):
    return a.dtype if a.dtype.kind in "iu" else None


REDUCE = {
    "reduce_sum": (lk.reduce_sum,
                   lambda a, ax, k: np.sum(a, axis=ax, keepdims=k, dtype=_int_dtype(a)), 0),
    "reduce_prod": (lk.reduce_prod,
                    lambda a, ax, k: np.prod(a, axis=ax, keepdims=k, dtype=_int_dtype(a)), 0),
    "reduce_mean": (lk.reduce_mean, _mean_ref, 2),
    "reduce_max": (lk.reduce_max, _extremum(np.max), 0),
    "reduce_min": (lk.reduce_min, _extremum(np.min), 0),
    "reduce_all": (lk.reduce_all, lambda a, ax, k: np.all(a, axis=ax, keepdims=k), 0),
    "reduce_any": (lk.reduce_any, lambda a, ax, k: np.any(a, axis=ax, keepdims=k), 0),
    "reduce_logsumexp": (lk.reduce_logsumexp, _lse_ref, 8),
    # Two-pass variance in the input dtype, as NumPy and TF compute it.
    "reduce_variance": (lk.reduce_variance,
                        lambda a, ax, k: np.var(a, axis=ax, keepdims=k).astype(
                            a.real.dtype), 8),
    "reduce_std": (lk.reduce_std,
                   lambda a, ax, k: np.std(a, axis=ax, keepdims=k).astype(a.real.dtype), 8),
}


def test_fuzz_reductions_with_every_axis_form():
    counts = Counter()

    @fuzz(600)
    @given(st.sampled_from(sorted(REDUCE)), arrays(REAL + COMPLEX[:1], shapes(max_dims=3)),
           AXES, st.booleans(), st.data())
    def run(name, a, axis, keepdims, data):
        fn, ref, tol = REDUCE[name]

        def oracle():
            if name == "reduce_logsumexp":
                float_only(a, complex_ok=False)
            elif name in ("reduce_variance", "reduce_std"):
                float_only(a)
            return ref(a, oracle_axes(axis, a.ndim), keepdims)

        x = as_input(data.draw, a)
        kw = {}
        if tol and a.dtype.kind in "fc":
            # Rounding noise scales with the largest magnitude: the mean of [a, a, a] is
            # a within an ulp of a, so the variance is 0 within (ulp(a))^2.
            eps = _eps(a.real.dtype)
            fin = np.abs(a[np.isfinite(a)])
            big = max(float(fin.max()) if fin.size else 1.0, 1.0)
            atol = tol * eps * big
            if name == "reduce_variance":
                atol = min(atol, 1e150) ** 2
            kw = {"rtol": tol * eps, "atol": atol}
        check(counts, name, lambda: fn(x, axis=axis, keepdims=keepdims), oracle,
              note=f"{a.dtype}{a.shape} axis={axis!r} keepdims={keepdims}", **kw)

    run_fuzz(run, counts)


def _arg_ref(fn):
    def ref(a, axis):
        if isinstance(axis, list):  # TF: the axis must be a scalar
            raise Refuse(ValueError)
        ax = oracle_axis(0 if axis is None else axis, a.ndim)  # TF: None means axis 0
        if a.shape[ax] == 0:
            raise Refuse(ValueError)
        return fn(a, axis=ax).astype(np.int64)
    return ref


def _scan_ref(fn, identity):
    def ref(a, axis, exclusive, reverse):
        if isinstance(axis, list):
            raise Refuse(ValueError)
        ax = oracle_axis(axis, a.ndim)
        x = np.flip(a, ax) if reverse else a
        y = fn(x, axis=ax, dtype=a.dtype if a.dtype.kind in "iuf" else None)
        if exclusive and y.shape[ax]:  # shift by one, the identity first
            y = np.concatenate([np.full_like(np.take(y, [0], ax), identity),
                                np.take(y, np.arange(y.shape[ax] - 1), ax)], ax)
        return np.flip(y, ax) if reverse else y
    return ref


def test_fuzz_argmax_argmin_cumsum_cumprod():
    counts = Counter()
    ops = {"argmax": (lk.argmax, _arg_ref(np.argmax)), "argmin": (lk.argmin, _arg_ref(np.argmin)),
           "cumsum": (lk.cumsum, _scan_ref(np.cumsum, 0)),
           "cumprod": (lk.cumprod, _scan_ref(np.cumprod, 1))}

    @fuzz(300)
    @given(st.sampled_from(sorted(ops)), arrays(REAL, shapes(max_dims=3)), ONE_AXIS,
           st.booleans(), st.booleans())
    def run(name, a, axis, exclusive, reverse):
        fn, ref = ops[name]
        if name.startswith("arg"):
            check(counts, name, lambda: fn(a, axis=axis), lambda: ref(a, axis),
                  note=f"{a.dtype}{a.shape} axis={axis!r}")
        else:
            check(counts, name, lambda: fn(a, axis, exclusive, reverse),
                  lambda: ref(a, axis, exclusive, reverse),
                  note=f"{a.dtype}{a.shape} axis={axis!r} {exclusive} {reverse}")

    run_fuzz(run, counts)


# ---- shape ops -----------------------------------------------------------------------------------
DIMS = st.lists(st.integers(-2, 4), max_size=4)


def _reshape_ref(a, shape):
    if shape.count(-1) > 1 or any(s < -1 for s in shape):
        raise Refuse(ValueError)
    return np.reshape(a, shape)


def _squeeze_ref(a, axis):
    if axis is None:
        return np.squeeze(a)
    axes = {oracle_axis(v, a.ndim) for v in (axis if isinstance(axis, list) else [axis])}
    if any(a.shape[i] != 1 for i in axes):  # TF: a repeated axis is fine (NumPy refuses)
        raise Refuse(ValueError)
    return np.squeeze(a, tuple(axes))


def _split_ref(a, k, axis):
    if a.ndim == 0:
        raise Refuse(ValueError)
    ax = oracle_axis(axis, a.ndim)
    n = a.shape[ax]
    if isinstance(k, int):
        if k <= 0 or n % k:
            raise Refuse(ValueError)
        return np.split(a, k, ax)
    sizes = list(k)
    if sizes.count(-1) > 1 or any(s < -1 for s in sizes):
        raise Refuse(ValueError)
    if -1 in sizes:
        rest = n - (sum(sizes) + 1)
        if rest < 0:
            raise Refuse(ValueError)
        sizes[sizes.index(-1)] = rest
    if sum(sizes) != n:
        raise Refuse(ValueError)
    return np.split(a, np.cumsum(sizes[:-1]).tolist(), ax)


def _slice_ref(a, begin, size):
    if len(begin) != a.ndim or len(size) != a.ndim:
        raise Refuse(ValueError)
    key = []
    for b, s, n in zip(begin, size, a.shape):
        end = n if s == -1 else b + s
        if not (0 <= b <= n and s >= -1 and b <= end <= n):
            raise Refuse(ValueError)
        key.append(slice(b, end))
    return a[tuple(key)]


def _pad_ref(a, pads, mode, cv):
    if len(pads) != a.ndim or any(p < 0 for pair in pads for p in pair):
        raise Refuse(ValueError)
    if mode != "CONSTANT":
        extra = 1 if mode == "REFLECT" else 0
        if any(max(p) > n - extra for p, n in zip(pads, a.shape)):
            raise Refuse(ValueError)
        return np.pad(a, pads, mode=mode.lower())
    # TF converts constant_values to the tensor's dtype: a value it cannot hold (a float
    # for an integer tensor, -1 for unsigned, 300 for int8) is refused, never truncated.
    v = np.asarray(cv)
    if a.dtype.kind in "iub" and not (float(v) == int(v) if np.isfinite(v) else False):
        raise Refuse(TypeError)
    if a.dtype.kind in "iu" and not np.iinfo(a.dtype).min <= int(v) <= np.iinfo(a.dtype).max:
        raise Refuse(ValueError)
    if a.dtype.kind == "b" and int(v) not in (0, 1):
        raise Refuse(ValueError)
    if a.ndim == 0:
        return a.copy()
    return np.pad(a, pads, constant_values=np.asarray(v).astype(a.dtype))


def _tile_ref(a, m):
    if len(m) != a.ndim or any(k < 0 for k in m):
        raise Refuse(ValueError)
    return np.tile(a, m) if a.ndim else a.copy()


def _reverse_ref(a, axes):
    ax = [oracle_axis(v, a.ndim) for v in axes]
    if len(set(ax)) != len(ax):  # TF: an axis given twice is an error (was flipped once)
        raise Refuse(ValueError)
    return np.flip(a, tuple(ax)) if ax else a


def _broadcast_ref(a, shape):
    if any(s < 0 for s in shape):
        raise Refuse(ValueError)
    return np.broadcast_to(a, shape)


def _transpose_ref(a, perm):
    if perm is None:
        return np.transpose(a)
    if any(not -a.ndim <= p < a.ndim for p in perm) or sorted(p % max(a.ndim, 1)
                                                             for p in perm) != list(
            range(a.ndim)):
        raise Refuse(ValueError)
    return np.transpose(a, perm)


def _gather_ref(a, idx, axis):
    ax = oracle_axis(axis, a.ndim)
    if idx.size and (idx.min() < 0 or idx.max() >= a.shape[ax]):
        raise Refuse(IndexError)  # TF on CPU checks every index
    return np.take(a, idx, axis=ax)


def _join_ref(kind):
    def ref(parts, axis):
        n = parts[0].ndim
        if kind == "concat":
            if n == 0:
                raise Refuse(ValueError)
            return np.concatenate(parts, axis=oracle_axis(axis, n))
        ax = oracle_axis(axis, n, extra=1)
        if any(p.shape != parts[0].shape for p in parts):
            raise Refuse(ValueError)
        return np.stack(parts, axis=ax)
    return ref


@st.composite
def shape_case(draw):
    a = draw(arrays(REAL, shapes(max_dims=3)))
    name = draw(st.sampled_from(["reshape", "transpose", "concat", "stack", "split", "gather",
                                 "slice", "pad", "tile", "reverse", "broadcast_to",
                                 "expand_dims", "squeeze", "unstack"]))
    n = a.ndim
    if name == "reshape":
        shape = draw(st.one_of(DIMS, st.permutations(list(a.shape) + [1]).map(list),
                               st.just([-1]), st.just([a.size, -1])))
        return name, lambda: lk.reshape(a, shape), lambda: _reshape_ref(a, shape), shape
    if name == "transpose":
        perm = draw(st.one_of(st.none(), st.permutations(list(range(n))),
                              st.lists(st.integers(-n - 1, n), max_size=n + 1)))
        return name, lambda: lk.transpose(a, perm), lambda: _transpose_ref(a, perm), perm
    if name in ("concat", "stack"):
        other = draw(st.one_of(st.just(a), arrays(REAL, st.just(a.shape)),
                               arrays(REAL, shapes(max_dims=3))))
        axis = draw(ONE_AXIS.filter(lambda v: v is not None and not isinstance(v, list)))
        fn = lk.concat if name == "concat" else lk.stack
        return name, lambda: fn([a, other], axis), lambda: _join_ref(name)([a, other], axis), (
            other.shape, axis)
    if name == "split":
        k = draw(st.one_of(st.integers(-1, 4), st.lists(st.integers(-2, 3), max_size=3)))
        axis = draw(ONE_AXIS.filter(lambda v: v is not None and not isinstance(v, list)))
        return name, lambda: lk.split(a, k, axis), lambda: _split_ref(a, k, axis), (k, axis)
    if name == "gather":
        idx = draw(hnp.arrays(np.int64, shapes(max_dims=2), elements=st.integers(-1, 4)))
        axis = draw(ONE_AXIS.filter(lambda v: v is not None and not isinstance(v, list)))
        return name, lambda: lk.gather(a, idx, axis=axis), lambda: _gather_ref(a, idx, axis), (
            idx.tolist(), axis)
    if name == "slice":
        begin = draw(st.lists(st.integers(-1, 3), min_size=n, max_size=n + 1))
        size = draw(st.lists(st.integers(-2, 3), min_size=n, max_size=n))
        return name, lambda: lk.slice(a, begin, size), lambda: _slice_ref(a, begin, size), (
            begin, size)
    if name == "pad":
        pads = draw(st.lists(st.tuples(st.integers(-1, 3), st.integers(0, 3)), min_size=n,
                             max_size=n + 1))
        mode = draw(st.sampled_from(["CONSTANT", "REFLECT", "SYMMETRIC"]))
        cv = draw(st.sampled_from([0, 1, -1, 300, 2.5, 7.0]))
        return name, lambda: lk.pad(a, pads, mode, cv), lambda: _pad_ref(a, pads, mode, cv), (
            pads, mode, cv)
    if name == "tile":
        m = draw(st.lists(st.integers(-1, 3), min_size=max(n - 1, 0), max_size=n + 1))
        return name, lambda: lk.tile(a, m), lambda: _tile_ref(a, m), m
    if name == "reverse":
        axes = draw(st.lists(st.integers(-n - 1, n), max_size=3))
        return name, lambda: lk.reverse(a, axes), lambda: _reverse_ref(a, axes), axes
    if name == "broadcast_to":
        shape = draw(st.one_of(DIMS, st.just(list(a.shape)), st.just([2] + list(a.shape))))
        return name, lambda: lk.broadcast_to(a, shape), lambda: _broadcast_ref(a, shape), shape
    if name == "expand_dims":
        axis = draw(ONE_AXIS.filter(lambda v: v is not None and not isinstance(v, list)))
        return name, lambda: lk.expand_dims(a, axis), lambda: np.expand_dims(
            a, oracle_axis(axis, n, extra=1)), axis
    if name == "squeeze":
        axis = draw(st.one_of(st.none(), st.integers(-4, 3), st.lists(st.integers(-3, 3),
                                                                      max_size=3)))
        return name, lambda: lk.squeeze(a, axis), lambda: _squeeze_ref(a, axis), axis
    axis = draw(ONE_AXIS.filter(lambda v: v is not None and not isinstance(v, list)))

    def unstack_ref():
        if n == 0:
            raise Refuse(ValueError)
        ax = oracle_axis(axis, n)
        return list(np.moveaxis(a, ax, 0))
    return name, lambda: lk.unstack(a, axis=axis), unstack_ref, axis


def test_fuzz_shape_ops():
    run_cases(shape_case(), 600)


# ---- matmul / tensordot ------------------------------------------------------------------------
def _matmul_ref(a, b, ta, tb):
    if a.ndim == 0 or b.ndim == 0:
        raise Refuse(ValueError)
    if ta and a.ndim > 1:
        a = np.swapaxes(a, -1, -2)
    if tb and b.ndim > 1:
        b = np.swapaxes(b, -1, -2)
    return np.matmul(a, b)


def _tensordot_ref(a, b, axes):
    if isinstance(axes, int):
        if not 0 <= axes <= min(a.ndim, b.ndim):
            raise Refuse(ValueError)
        return np.tensordot(a, b, axes)
    xa = [oracle_axis(v, a.ndim) for v in axes[0]]
    xb = [oracle_axis(v, b.ndim) for v in axes[1]]
    if len(set(xa)) != len(xa) or len(set(xb)) != len(xb) or len(xa) != len(xb) or any(
            a.shape[i] != b.shape[j] for i, j in zip(xa, xb)):
        raise Refuse(ValueError)
    return np.tensordot(a, b, (xa, xb))


def test_fuzz_matmul_and_tensordot():
    counts = Counter()
    small = [np.int32, np.int64, np.float32, np.float64, np.bool_, np.uint8]

    @fuzz(300)
    @given(arrays(small, shapes(max_dims=3), finite=True),
           arrays(small, shapes(max_dims=3), finite=True), st.booleans(), st.booleans(),
           st.one_of(st.integers(-1, 3), st.tuples(st.lists(st.integers(-3, 2), max_size=2),
                                                   st.lists(st.integers(-3, 2), max_size=2))),
           st.booleans())
    def run(a, b, ta, tb, axes, dot):
        floats = a.dtype.kind == "f" or b.dtype.kind == "f"
        kw = {"rtol": 1e-5, "atol": 1e-3} if floats else {}
        if dot:
            check(counts, "tensordot", lambda: lk.tensordot(a, b, axes),
                  lambda: _tensordot_ref(a, b, axes), note=f"{a.shape} {b.shape} {axes}", **kw)
        else:
            check(counts, "matmul", lambda: lk.matmul(a, b, transpose_a=ta, transpose_b=tb),
                  lambda: _matmul_ref(a, b, ta, tb), note=f"{a.shape} {b.shape} {ta} {tb}",
                  **kw)

    run_fuzz(run, counts)


@st.composite
def matmul_pair(draw):
    # Compatible shapes most of the time (the fuzz above mostly draws mismatches).
    m, k, n = draw(st.integers(0, 3)), draw(st.integers(0, 3)), draw(st.integers(0, 3))
    batch = draw(hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=2, max_side=2))
    dt = draw(st.sampled_from([np.float32, np.float64, np.int32, np.int64]))
    a = draw(arrays([dt], st.just(batch.input_shapes[0] + (m, k)), finite=True))
    b = draw(arrays([dt], st.just(batch.input_shapes[1] + (k, n)), finite=True))
    return a, b


def test_fuzz_matmul_compatible_shapes():
    counts = Counter()

    @fuzz(100)
    @given(matmul_pair())
    def run(ab):
        a, b = ab
        kw = {"rtol": 1e-5, "atol": 1e-2} if a.dtype.kind == "f" else {}
        check(counts, "matmul", lambda: lk.matmul(a, b), lambda: np.matmul(a, b),
              note=f"{a.dtype} {a.shape} {b.shape}", **kw)

    run_fuzz(run, counts, min_errors=0)


# ---- creation ops ------------------------------------------------------------------------------
DTYPE_ARG = st.sampled_from([None, "float32", "int8", "uint8", "bool", "float64", "int64"])
SHAPE_ARG = st.one_of(st.lists(st.integers(-1, 3), max_size=3), st.integers(-1, 3),
                      st.sampled_from([[2.5], [1.0], ["a"], [2 ** 40, 2 ** 40]]))


def _shape_ref(shape):
    # Integral floats (1.0) are accepted as dimensions; 2.5 and "a" are not.
    dims = shape if isinstance(shape, list) else [shape]
    if not all(_int_like(d) or isinstance(d, float) and d.is_integer() for d in dims):
        raise Refuse(ValueError)
    dims = [int(d) for d in dims]
    if any(d < 0 for d in dims):
        raise Refuse(ValueError)
    if math.prod(dims) > 2 ** 40:
        raise Refuse(ValueError)
    return tuple(dims)


def _one_hot_ref(idx, depth, axis):
    if not _int_like(depth):
        raise Refuse(TypeError)
    if depth < 0:
        raise Refuse(ValueError)
    if axis is not None and not _int_like(axis):
        raise Refuse(TypeError)
    if axis is not None and not -1 <= axis <= idx.ndim:  # TF: -1 or [0, rank]
        raise Refuse(ValueError)
    out = (idx[..., None] == np.arange(depth)).astype(np.float32)
    return out if axis in (None, -1) else np.moveaxis(out, -1, axis)


def _range_ref(start, limit, delta):
    if delta == 0:
        raise Refuse(ValueError)
    return np.arange(start, limit, delta, dtype=np.int32)  # Python ints: int32, as in TF


@st.composite
def creation_case(draw):
    name = draw(st.sampled_from(["zeros", "ones", "fill", "eye", "range", "one_hot",
                                 "zeros_like", "ones_like", "linspace"]))
    if name in ("zeros", "ones"):
        shape, dt = draw(SHAPE_ARG), draw(DTYPE_ARG)
        fn, ref = (lk.zeros, np.zeros) if name == "zeros" else (lk.ones, np.ones)
        want = np.dtype("float32" if dt is None else dt)
        return name, lambda: fn(shape, dt or "float32"), lambda: ref(_shape_ref(shape), want), (
            shape, dt)
    if name == "fill":
        shape, v = draw(SHAPE_ARG), draw(st.sampled_from([0, 2.5, True, -7]))
        vd = lk.constant(v).dtype
        return name, lambda: lk.fill(shape, v), lambda: np.full(_shape_ref(shape), v, vd), (
            shape, v)
    if name == "eye":
        r, c = draw(st.integers(-1, 3)), draw(st.one_of(st.none(), st.integers(-1, 3),
                                                        st.just(2.5)))

        def eye_ref():
            if not _int_like(c) and c is not None:
                raise Refuse(TypeError)
            if r < 0 or (c is not None and c < 0):
                raise Refuse(ValueError)
            return np.eye(r, c, dtype=np.float32)
        return name, lambda: lk.eye(r, c), eye_ref, (r, c)
    if name == "range":
        s, lim, d = draw(st.integers(-5, 5)), draw(st.integers(-5, 5)), draw(st.integers(-2, 2))
        return name, lambda: lk.range(s, lim, d), lambda: _range_ref(s, lim, d), (s, lim, d)
    if name == "one_hot":
        idx = draw(hnp.arrays(np.int64, shapes(max_dims=2), elements=st.integers(-2, 4)))
        depth = draw(st.one_of(st.integers(-1, 4), st.just(2.5)))
        axis = draw(st.one_of(st.none(), st.integers(-3, 3), st.just(1.5)))
        return name, lambda: lk.one_hot(idx, depth, axis=axis), lambda: _one_hot_ref(
            idx, depth, axis), (idx.shape, depth, axis)
    if name == "linspace":
        num = draw(st.one_of(st.integers(-1, 4), st.just(2.5)))
        a, b = draw(st.floats(-10, 10, width=32)), draw(st.floats(-10, 10, width=32))

        def lin_ref():
            if not _int_like(num):
                raise Refuse(TypeError)
            if num < 0:
                raise Refuse(ValueError)
            return np.linspace(np.float64(a), np.float64(b), num).astype(np.float32)
        return name, lambda: lk.linspace(a, b, num), lin_ref, (a, b, num)
    a = draw(arrays(REAL))
    dt = draw(st.sampled_from([None, "float32", "int8"]))
    fn, ref = (lk.zeros_like, np.zeros_like) if name == "zeros_like" else (lk.ones_like,
                                                                           np.ones_like)
    return name, lambda: fn(a, dt), lambda: ref(a, dtype=dt), (a.dtype, a.shape, dt)


def test_fuzz_creation_ops():
    run_cases(creation_case(), 250,
              lambda name, args: {"rtol": 1e-6, "atol": 1e-6} if name == "linspace" else {})


# ---- softmax family, where, clip --------------------------------------------------------------
def _softmax_ref(a, axis, log):
    float_only(a, complex_ok=False)
    ax = oracle_axis(axis, a.ndim)
    if a.size == 0:  # TF: an empty axis gives an empty result
        return a.copy()
    x = a.astype(np.float64)
    m = np.max(x, axis=ax, keepdims=True)
    s = x - m
    out = s - np.log(np.sum(np.exp(s), axis=ax, keepdims=True)) if log else \
        np.exp(s) / np.sum(np.exp(s), axis=ax, keepdims=True)
    return out.astype(a.dtype)


def _sparse_ce_ref(labels, logits):
    float_only(logits, complex_ok=False)
    if logits.ndim < 1 or labels.shape != logits.shape[:-1]:
        raise Refuse(ValueError)
    c = logits.shape[-1]
    if labels.size and (c == 0 or labels.min() < 0 or labels.max() >= c):
        raise Refuse(ValueError)
    if logits.size == 0:
        return np.zeros(labels.shape, logits.dtype)
    lsm = _softmax_ref(logits, -1, True).astype(np.float64)
    return -np.take_along_axis(lsm, labels[..., None], -1)[..., 0].astype(logits.dtype)


@st.composite
def softmax_case(draw):
    name = draw(st.sampled_from(["softmax", "log_softmax", "sparse_softmax_cross_entropy"]))
    a = draw(arrays(FLOATS * 3 + [np.int32, np.bool_], shapes(max_dims=3),
                    finite=draw(st.booleans())))
    if name != "sparse_softmax_cross_entropy":
        axis = draw(st.sampled_from([*range(-a.ndim - 1, a.ndim + 1), 1.5]))
        fn = lk.nn.softmax if name == "softmax" else lk.nn.log_softmax
        return name, lambda: fn(a, axis), lambda: _softmax_ref(a, axis, name != "softmax"), (
            a.dtype, a.shape, axis)
    lshape = draw(st.sampled_from([a.shape[:-1]] * 3 + [(2,), ()]))
    c = a.shape[-1] if a.ndim else 1
    labels = draw(hnp.arrays(np.int64, lshape, elements=st.sampled_from(
        [*range(max(c, 1))] * 4 + [-1, c])))
    return name, lambda: lk.nn.sparse_softmax_cross_entropy_with_logits(labels, a), \
        lambda: _sparse_ce_ref(labels, a), (a.dtype, a.shape, labels.tolist())


def test_fuzz_softmax_family():
    run_cases(softmax_case(), 250, lambda name, args: {"rtol": 8 * _eps(args[0]),
                                                       "atol": 16 * _eps(args[0])}
              if args[0].kind == "f" else {})


def _where_ref(c, x, y):
    return np.where(c, x, y)


def _clip_ref(t, lo, hi):
    out = np.minimum(np.maximum(t, lo), hi)
    if out.shape != t.shape:  # TF: the bounds may not enlarge t
        raise Refuse(ValueError)
    return out


@st.composite
def where_clip_case(draw):
    if draw(st.booleans()):  # shapes that broadcast, or independent ones
        sc, sx, sy = draw(hnp.mutually_broadcastable_shapes(
            num_shapes=3, min_side=0, max_side=3, max_dims=3)).input_shapes
    else:
        sc, sx, sy = draw(shapes()), draw(shapes()), draw(shapes())
    x, y = draw(arrays(REAL, st.just(sx))), draw(arrays(REAL, st.just(sy)))
    if draw(st.booleans()):
        c = draw(arrays([np.bool_, np.int64], st.just(sc)))
        return "where", lambda: lk.where(c, x, y), lambda: _where_ref(c, x, y), (
            c.dtype, sc, x.dtype, sx, y.dtype, sy)
    t = draw(arrays(REAL, st.just(sc)))
    return "clip_by_value", lambda: lk.clip_by_value(t, x, y), lambda: _clip_ref(t, x, y), (
        t.dtype, sc, x.dtype, sx, y.dtype, sy)


def test_fuzz_where_and_clip():
    run_cases(where_clip_case(), 200)


@pytest.fixture(scope="module", autouse=True)
def _report():
    yield
    if RESULTS:  # shown with -s: how many cases ran and how they were classified
        print("\nfuzz cases:", sum(RESULTS.values()), dict(sorted(RESULTS.items())))
