"""Elementwise ops: forward values vs NumPy, dtypes, errors, gradient conventions, checks."""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import layerkit as lk
from layerkit._core.op import Op
from layerkit.primitives import elementwise as E
from tests.ops.rows_elementwise import ROWS

rng = np.random.default_rng(0)


def _grad(f, *xs):
    """Gradients of sum(f(*xs)) w.r.t. every x (Tensors)."""
    ts = [lk.constant(x) for x in xs]
    with lk.GradientTape() as tape:
        tape.watch(ts)
        y = f(*ts)
    return tape.gradient(y, ts)


# ---- forward values vs NumPy ------------------------------------------------------------
def _sigmoid_ref(x):
    return 1 / (1 + np.exp(-x.astype(np.float64)))


# (lk op, NumPy reference, input domain)
UNARY = [
    (lk.negative, np.negative, (-3, 3)),
    (lk.square, np.square, (-3, 3)),
    (lk.sqrt, np.sqrt, (0, 4)),
    (lk.rsqrt, lambda x: 1 / np.sqrt(x), (0.1, 4)),
    (lk.exp, np.exp, (-3, 3)),
    (lk.expm1, np.expm1, (-3, 3)),
    (lk.log, np.log, (0.1, 4)),
    (lk.log1p, np.log1p, (-0.9, 4)),
    (lk.abs, np.abs, (-3, 3)),
    (lk.sign, np.sign, (-3, 3)),
    (lk.sin, np.sin, (-3, 3)),
    (lk.cos, np.cos, (-3, 3)),
    (lk.tan, np.tan, (-1.5, 1.5)),
    (lk.tanh, np.tanh, (-3, 3)),
    (lk.sigmoid, _sigmoid_ref, (-10, 10)),
    (lk.erf, np.vectorize(math.erf, otypes=[np.float64]), (-4, 4)),
    (lk.floor, np.floor, (-3, 3)),
    (lk.ceil, np.ceil, (-3, 3)),
    (lk.round, np.round, (-3, 3)),
    (lk.isfinite, np.isfinite, (-3, 3)),
    (lk.isnan, np.isnan, (-3, 3)),
    (lk.logical_not, lambda x: np.logical_not(x > 0), (-3, 3)),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("fn,ref,domain", UNARY, ids=[u[0].__name__ for u in UNARY])
def test_unary_forward_matches_numpy(fn, ref, domain, dtype):
    x = rng.uniform(*domain, (3, 4)).astype(dtype)
    arg = x > 0 if fn is lk.logical_not else x
    out = fn(arg)
    expected = ref(x)
    assert isinstance(out, lk.Tensor)
    assert out.shape == (3, 4)
    if expected.dtype == bool:
        assert out.dtype == np.bool_
        np.testing.assert_array_equal(out.numpy(), expected)
    else:
        assert out.dtype == dtype
        tol = 2e-7 if dtype == np.float32 else 1e-15
        np.testing.assert_allclose(out.numpy(), expected, rtol=tol, atol=tol)


@pytest.mark.parametrize("fn,ref,domain", UNARY, ids=[u[0].__name__ for u in UNARY])
def test_unary_ops_on_0d_tensors_and_python_scalars(fn, ref, domain):
    v = float(np.mean(domain)) + 0.25
    arg = v > 0 if fn is lk.logical_not else v
    for x in (arg, lk.constant(arg), np.asarray(arg, np.float64)):
        out = fn(x)
        assert out.shape == ()
        expected = ref(np.asarray(v, np.float64))
        np.testing.assert_allclose(np.asarray(out, np.float64), expected, rtol=1e-6)
    if fn is not lk.logical_not and not isinstance(ref(np.float32(v)), np.bool_):
        assert fn(v).dtype == np.float32  # a Python float is float32


BINARY = [
    (lk.add, np.add, (-3, 3)),
    (lk.subtract, np.subtract, (-3, 3)),
    (lk.multiply, np.multiply, (-3, 3)),
    (lk.divide, np.divide, (0.5, 3)),
    (lk.floordiv, np.floor_divide, (0.5, 3)),
    (lk.mod, np.mod, (0.5, 3)),
    (lk.pow, np.power, (0.5, 3)),
    (lk.maximum, np.maximum, (-3, 3)),
    (lk.minimum, np.minimum, (-3, 3)),
    (lk.equal, np.equal, (-3, 3)),
    (lk.not_equal, np.not_equal, (-3, 3)),
    (lk.less, np.less, (-3, 3)),
    (lk.less_equal, np.less_equal, (-3, 3)),
    (lk.greater, np.greater, (-3, 3)),
    (lk.greater_equal, np.greater_equal, (-3, 3)),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("fn,ref,domain", BINARY, ids=[b[0].__name__ for b in BINARY])
def test_binary_forward_matches_numpy_with_broadcasting(fn, ref, domain, dtype):
    x = rng.uniform(*domain, (3, 1)).astype(dtype)
    y = rng.uniform(*domain, (1, 4)).astype(dtype)
    if fn in (lk.equal, lk.not_equal, lk.less_equal, lk.greater_equal):
        y[0, 0] = x[0, 0]  # exercise ties
    out = fn(lk.constant(x), lk.constant(y))
    expected = ref(x, y)
    assert out.shape == (3, 4)
    assert out.dtype == expected.dtype
    np.testing.assert_array_equal(out.numpy(), expected)


def test_scalar_with_matrix_broadcast():
    x = rng.standard_normal((2, 3)).astype(np.float32)
    out = lk.add(lk.constant(np.float32(2.5)), x)
    np.testing.assert_array_equal(out.numpy(), x + np.float32(2.5))


def test_logical_ops():
    a = np.array([True, True, False, False])
    b = np.array([True, False, True, False])
    np.testing.assert_array_equal(lk.logical_and(a, b).numpy(), a & b)
    np.testing.assert_array_equal(lk.logical_or(a, b).numpy(), a | b)
    np.testing.assert_array_equal(lk.logical_not(a).numpy(), ~a)


def test_isfinite_isnan_special_values():
    x = np.array([1.0, np.inf, -np.inf, np.nan], np.float32)
    np.testing.assert_array_equal(lk.isfinite(x).numpy(), [True, False, False, False])
    np.testing.assert_array_equal(lk.isnan(x).numpy(), [False, False, False, True])


def test_round_is_half_to_even():
    np.testing.assert_array_equal(lk.round([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5]).numpy(),
                                  [-2.0, -2.0, -0.0, 0.0, 2.0, 2.0])


def test_maximum_minimum_propagate_nan():
    x = np.array([np.nan, 1.0], np.float32)
    y = np.array([0.0, np.nan], np.float32)
    assert np.isnan(lk.maximum(x, y).numpy()).all()
    assert np.isnan(lk.minimum(x, y).numpy()).all()


def test_clip_by_value_values_and_broadcast_bounds():
    x = rng.uniform(-2, 2, (3, 4)).astype(np.float32)
    out = lk.clip_by_value(x, -0.5, 0.5)
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out.numpy(), np.clip(x, -0.5, 0.5))
    lo = np.full((1, 4), -1.0, np.float32)
    hi = np.array([[0.0], [0.5], [1.0]], np.float32)
    np.testing.assert_array_equal(lk.clip_by_value(x, lo, hi).numpy(), np.clip(x, lo, hi))


def test_clip_by_value_rejects_bounds_that_enlarge_t():
    with pytest.raises(ValueError, match=r"clip_by_value.*\(3,\).*\(2, 3\)"):
        lk.clip_by_value(np.zeros(3, np.float32), np.zeros((2, 3), np.float32), 1.0)


def test_where_select_broadcast_and_dtypes():
    cond = np.array([[True, False, True]])
    x = rng.standard_normal((2, 3)).astype(np.float32)
    y = np.float32(7.0)
    out = lk.where(cond, x, y)
    np.testing.assert_array_equal(out.numpy(), np.where(cond, x, y))
    assert out.dtype == np.float32
    # Python scalars for both branches take the default dtypes.
    assert lk.where(cond, 1.0, 0.0).dtype == np.float32
    assert lk.where(cond, 1, 0).dtype == np.int32
    assert lk.where(cond, x, 0.0).dtype == np.float32  # weak scalar


def test_where_one_argument_gives_coordinates():
    cond = np.array([[True, False], [False, True]])
    out = lk.where(cond)
    assert out.dtype == np.int64
    np.testing.assert_array_equal(out.numpy(), [[0, 0], [1, 1]])
    with pytest.raises(ValueError, match="where"):
        lk.where(cond, 1.0)


def test_cast():
    x = np.array([-1.7, -0.2, 0.5, 2.9], np.float32)
    out = lk.cast(x, "int32")
    assert out.dtype == np.int32
    np.testing.assert_array_equal(out.numpy(), [-1, 0, 0, 2])
    assert lk.cast(x, np.float64).dtype == np.float64
    np.testing.assert_array_equal(lk.cast([True, False], "float32").numpy(), [1.0, 0.0])


# ---- dtype rules -------------------------------------------------------------------------
def test_python_scalars_are_weak():
    x = lk.constant([1.0, 2.0])  # float32
    assert (x * 2.0).dtype == np.float32
    assert lk.add(x, 1).dtype == np.float32
    assert lk.pow(x, 2.0).dtype == np.float32
    assert lk.pow(2.0, x).dtype == np.float32
    assert lk.maximum(x, 0.0).dtype == np.float32
    assert lk.clip_by_value(x, 0.0, 1.0).dtype == np.float32
    i = lk.constant([1, 2])  # int32
    assert lk.add(i, 1).dtype == np.int32
    assert lk.add(lk.constant([1, 2], "int64"), 1).dtype == np.int64
    assert lk.multiply(lk.constant(np.array([1, 2], np.int32)), 3).dtype == np.int32


def test_scalars_alone_get_default_dtypes():
    assert lk.add(1.0, 2.0).dtype == np.float32
    assert lk.add(1, 2).dtype == np.int32
    assert lk.exp(1.0).dtype == np.float32


def test_arrays_promote_like_numpy():
    x32 = lk.constant(np.ones(2, np.float32))
    assert lk.add(x32, np.ones(2, np.float64)).dtype == np.float64
    assert lk.divide(np.array([1, 2]), np.array([2, 2])).dtype == np.float64
    assert lk.add(np.ones(2, np.int32), np.ones(2, np.float32)).dtype == np.float64


def test_integer_ops_follow_numpy():
    x = np.array([7, -7, 7, -7])
    y = np.array([2, 2, -2, -2])
    np.testing.assert_array_equal(lk.floordiv(x, y).numpy(), x // y)
    np.testing.assert_array_equal(lk.mod(x, y).numpy(), x % y)  # sign of the divisor
    assert lk.floordiv(x, y).dtype == np.int64
    np.testing.assert_array_equal(lk.pow(x, 2).numpy(), x ** 2)
    np.testing.assert_array_equal(lk.abs(x).numpy(), [7, 7, 7, 7])
    np.testing.assert_array_equal(lk.sign(x).numpy(), [1, -1, 1, -1])
    np.testing.assert_array_equal(lk.maximum(x, y).numpy(), np.maximum(x, y))
    with pytest.warns(RuntimeWarning):
        np.testing.assert_array_equal(lk.floordiv(x, 0).numpy(), [0, 0, 0, 0])
    with pytest.raises(ValueError, match="negative integer powers"):
        lk.pow(x, -1)


def test_float_mod_floordiv_python_semantics():
    x = np.array([-3.5, 3.5], np.float32)
    np.testing.assert_allclose(lk.mod(x, 2.0).numpy(), [0.5, 1.5])
    np.testing.assert_allclose(lk.floordiv(x, 2.0).numpy(), [-2.0, 1.0])


# ---- errors ------------------------------------------------------------------------------
@pytest.mark.parametrize("fn", [lk.add, lk.multiply, lk.pow, lk.less, lk.maximum, lk.mod])
def test_shape_mismatch_names_op_and_shapes(fn):
    with pytest.raises(ValueError) as err:
        fn(lk.constant(np.ones(3, np.float32)), np.ones((2, 4), np.float32))
    msg = str(err.value)
    assert fn.__name__ in msg and "(3,)" in msg and "(2, 4)" in msg


def test_shape_mismatch_on_recording_path_and_ternary():
    x = lk.constant(np.ones(3, np.float32))
    with lk.GradientTape() as tape:
        tape.watch(x)
        with pytest.raises(ValueError, match=r"subtract.*\(3,\).*\(4,\)"):
            lk.subtract(x, [1.0, 2.0, 3.0, 4.0])
    with pytest.raises(ValueError, match=r"where.*\(2,\).*\(3,\).*\(4,\)"):
        lk.where([True, False], np.ones(3), np.ones(4))


def test_erf_rejects_complex():
    with pytest.raises(TypeError, match="erf"):
        lk.erf(np.array([1j]))


# ---- erf and sigmoid accuracy ----------------------------------------------------------------
def _ulp_error(got: np.ndarray, ref: np.ndarray, dtype) -> float:
    ref_t = ref.astype(dtype)
    spacing = np.spacing(np.abs(ref_t)).astype(np.float64)
    keep = ref != 0
    return float((np.abs(got.astype(np.float64) - ref) / spacing)[keep].max())


def _erf_points() -> np.ndarray:
    return np.concatenate([rng.uniform(-7, 7, 4000), rng.standard_normal(2000),
                           np.geomspace(1e-30, 7, 500), -np.geomspace(1e-30, 7, 500),
                           [0.5, 1.0, 2.5, 3.9, 4.0, 6.0, -1.0, -2.5]])


def test_erf_float64_accuracy():
    x = _erf_points()
    ref = np.array([math.erf(v) for v in x])
    out = lk.erf(x)
    assert out.dtype == np.float64
    assert _ulp_error(out.numpy(), ref, np.float64) <= 2.0


def test_erf_float32_accuracy_and_dtype():
    x = _erf_points().astype(np.float32)
    ref = np.array([math.erf(float(v)) for v in x])
    out = lk.erf(x)
    assert out.dtype == np.float32
    assert _ulp_error(out.numpy(), ref, np.float32) <= 2.0


def test_erf_special_values_shapes_and_dtypes():
    for dt in (np.float32, np.float64):
        x = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 10.0], dt)
        out = lk.erf(x).numpy()
        np.testing.assert_array_equal(out[[0, 2, 3, 5]], [0.0, 1.0, -1.0, 1.0])
        assert np.signbit(out[1]) and np.isnan(out[4])
    assert lk.erf(np.float32(0.5)).shape == ()
    assert lk.erf(np.zeros((2, 0, 3), np.float32)).shape == (2, 0, 3)
    big = rng.standard_normal((70_000,)).astype(np.float32)  # several blocks
    ref = np.array([math.erf(float(v)) for v in big[::97]])
    np.testing.assert_allclose(lk.erf(big).numpy()[::97], ref, rtol=3e-7, atol=1e-30)
    assert lk.erf(np.array([0.5], np.float16)).dtype == np.float16
    with pytest.raises(TypeError, match="^erf: .*dtype int64"):  # float-only math (TF)
        lk.erf(np.array([0, 1]))
    np.testing.assert_allclose(lk.erf(np.array([1.0])).numpy(), [math.erf(1.0)], rtol=1e-15)


def test_sigmoid_extremes_without_warnings():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for dt in (np.float32, np.float64):
            x = np.array([-1000.0, -100.0, -20.0, 0.0, 20.0, 1000.0], dt)
            out = lk.sigmoid(x).numpy()
            assert out.dtype == dt
            assert np.all(np.isfinite(out))
            np.testing.assert_allclose(out[2:], _sigmoid_ref(x[2:]), rtol=1e-6)
            assert out[0] >= 0 and out[1] < 1e-38 and out[-1] == 1.0


# ---- gradient conventions ------------------------------------------------------------------
def test_abs_and_sign_gradient_at_zero_is_zero():
    (g,) = _grad(lk.abs, np.array([-2.0, 0.0, 3.0]))
    np.testing.assert_array_equal(g.numpy(), [-1.0, 0.0, 1.0])
    (g,) = _grad(lk.sign, np.array([-2.0, 0.0, 3.0]))
    np.testing.assert_array_equal(g.numpy(), [0.0, 0.0, 0.0])


@pytest.mark.parametrize("fn", [lk.maximum, lk.minimum])
def test_maximum_minimum_ties_send_gradient_to_first_argument(fn):
    x = np.array([1.0, 2.0, 3.0])
    y = np.array([1.0, 0.0, 5.0])
    gx, gy = _grad(fn, x, y)
    if fn is lk.maximum:
        np.testing.assert_array_equal(gx.numpy(), [1.0, 1.0, 0.0])
        np.testing.assert_array_equal(gy.numpy(), [0.0, 0.0, 1.0])
    else:
        np.testing.assert_array_equal(gx.numpy(), [1.0, 0.0, 1.0])
        np.testing.assert_array_equal(gy.numpy(), [0.0, 1.0, 0.0])


def test_clip_gradient_inclusive_bounds_and_bound_gradients():
    x = np.array([-2.0, -1.0, 0.0, 1.0, 2.0])
    gx, glo, ghi = _grad(lambda t, lo, hi: lk.clip_by_value(t, lo, hi), x,
                         np.float64(-1.0), np.float64(1.0))
    np.testing.assert_array_equal(gx.numpy(), [0.0, 1.0, 1.0, 1.0, 0.0])
    assert float(glo) == 1.0 and float(ghi) == 1.0
    assert glo.shape == () and ghi.shape == ()


def test_piecewise_constant_ops_have_zero_gradients():
    x = np.array([-1.3, 0.4, 2.6])
    for fn in (lk.floor, lk.ceil, lk.round):
        (g,) = _grad(fn, x)
        np.testing.assert_array_equal(g.numpy(), np.zeros(3))
    gx, gy = _grad(lk.floordiv, x, np.array([2.0, 2.0, 2.0]))
    np.testing.assert_array_equal(gx.numpy(), np.zeros(3))
    np.testing.assert_array_equal(gy.numpy(), np.zeros(3))


def test_mod_gradients_like_tensorflow():
    x = np.array([5.5, -5.5])
    y = np.array([2.0, 2.0])
    gx, gy = _grad(lk.mod, x, y)
    np.testing.assert_array_equal(gx.numpy(), [1.0, 1.0])
    np.testing.assert_array_equal(gy.numpy(), -np.floor(x / y))


def test_pow_gradient_at_zero_base_is_finite():
    gx, gy = _grad(lk.pow, np.array([0.0, 2.0]), np.array([2.0, 3.0]))
    np.testing.assert_allclose(gx.numpy(), [0.0, 12.0])
    np.testing.assert_allclose(gy.numpy(), [0.0, 8.0 * math.log(2.0)])


def test_sqrt_gradient_at_zero_is_inf():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        (g,) = _grad(lk.sqrt, np.array([0.0, 4.0]))
    assert np.isinf(g.numpy()[0]) and g.numpy()[1] == 0.25


def test_where_gradients_with_broadcasting():
    cond = np.array([[True, False, True], [False, False, True]])
    gx, gy = _grad(lambda x, y: lk.where(cond, x, y), np.ones((1, 3)), np.ones(()))
    np.testing.assert_array_equal(gx.numpy(), [[1.0, 0.0, 2.0]])
    assert gy.shape == () and float(gy) == 3.0


def test_comparisons_and_logic_are_not_recorded():
    x = lk.constant([1.0, 2.0])
    with lk.GradientTape(persistent=True) as tape:
        tape.watch(x)
        outs = [lk.less(x, 1.5), lk.equal(x, x), lk.isnan(x), lk.isfinite(x),
                lk.logical_not(lk.greater(x, 0.0))]
    for o in outs:
        assert o.dtype == np.bool_
        assert tape.gradient(o, x) is None
    assert not tape._nodes


def test_stop_gradient():
    x = lk.constant(3.0)
    with lk.GradientTape() as tape:
        tape.watch(x)
        y = x * lk.stop_gradient(x * x)
    assert float(tape.gradient(y, x)) == 9.0
    assert "stop_gradient" in E.__all__
    assert lk.stop_gradient is E.stop_gradient


def test_cast_gradient_between_floats_and_none_for_ints():
    x = lk.constant([1.5, 2.5])
    with lk.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y64 = lk.cast(x, np.float64) * 2.0
        yi = lk.cast(x, np.int32)
    g = tape.gradient(y64, x)
    assert g.dtype == np.float32
    np.testing.assert_array_equal(g.numpy(), [2.0, 2.0])
    assert tape.gradient(yi, x) is None


# ---- gradient rules keep float32 ------------------------------------------------------------
def _records() -> list[Op]:
    return [v for v in vars(E).values() if isinstance(v, Op)]


@pytest.fixture
def dtype_checked_rules(monkeypatch):
    """Make every elementwise rule assert that it returns gradients of g's dtype."""
    seen = []
    for op in _records():
        if op.vjp is None or op.name == "cast":
            continue

        def checked(g, ins, y, needs, _vjp=op.vjp, _name=op.name, **attrs):
            grads = _vjp(g, ins, y, needs, **attrs)
            for gi, x in zip(grads, ins):
                if gi is not None and x.dtype == np.float32:
                    assert gi.dtype == np.float32, f"{_name} rule promoted to {gi.dtype}"
            seen.append(_name)
            return grads

        monkeypatch.setattr(op, "vjp", checked)
    return seen


@pytest.mark.parametrize("row", ROWS, ids=[f"{r['name']}-{i}" for i, r in enumerate(ROWS)])
def test_rules_keep_float32(row, dtype_checked_rules):
    if row["name"] == "cast":
        pytest.skip("cast changes dtype by design")
    args = [lk.constant(np.asarray(a, np.float32)) for a in row["args"]]
    with lk.GradientTape() as outer:
        outer.watch(args)
        with lk.GradientTape() as inner:
            inner.watch(args)
            y = row["fn"](*args)
        grads = inner.gradient(y, args)
        total = sum(lk.reduce_sum(g) for g in grads if g is not None)
    outer.gradient(total, args)  # second-order rules too
    assert row["name"] in dtype_checked_rules
    assert y.dtype == np.float32


# ---- numerical gradient checks: tests/ops/test_grad_table.py runs the rows ---------------------
def test_rows_check_key_rules_to_third_order():
    high = {r["name"] for r in ROWS if r["order"] >= 3}
    assert {"exp", "tanh", "sigmoid", "multiply"} <= high


def test_every_public_name_is_exported():
    for name in E.__all__:
        fn = getattr(lk, name)
        assert fn is getattr(E, name)
        assert fn.__doc__, name


# ---- numexpr templates agree with the eager forward ---------------------------------------
def _template_inputs(op: Op, dtype):
    x = rng.uniform(0.3, 2.5, (3, 4)).astype(dtype)
    x[0, :2] = [-1.5, 0.0]
    y = rng.uniform(0.5, 2.0, (1, 4)).astype(dtype)
    if op.name in ("logical_and", "logical_or", "logical_not"):
        return [x > 1, y > 1]
    if op.name == "where":
        return [x > 1, x, y]
    if op.name == "clip_by_value":
        return [x, np.full((1, 4), 0.5, dtype), np.full((3, 1), 1.5, dtype)]
    if op.name in ("sqrt", "rsqrt", "log", "log1p", "pow"):
        x = np.abs(x) + 0.1
    return [x, y]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("op", [o for o in _records() if o.expr is not None],
                         ids=lambda o: o.name)
def test_numexpr_template_matches_forward(op, dtype):
    import numexpr

    arity = max(int(c) for c in "0123" if "{" + c + "}" in op.expr) + 1
    ins = _template_inputs(op, dtype)[:arity]
    names = [f"v{i}" for i in range(arity)]
    expr = op.expr.format(*names)
    got = numexpr.evaluate(expr, local_dict=dict(zip(names, ins)))
    expected = op.forward(*ins)
    assert got.dtype == expected.dtype, expr
    np.testing.assert_allclose(got, expected, rtol=2e-6 if dtype == np.float32 else 1e-13)
