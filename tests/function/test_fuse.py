"""Graph passes and fusion: fused regions equal eager (values and gradients) in every mode."""
import numpy as np
import pytest

import layerkit as lk
from layerkit.autodiff.function import function
from layerkit.autodiff.function import numexpr_kernel as nek


@pytest.fixture(params=["numpy", "blocks", "numexpr"])
def mode(request, monkeypatch):
    """Force one execution mode for every fused region."""
    if request.param == "numexpr":
        monkeypatch.setattr(nek, "numexpr_wins", lambda *a: True)
    else:
        monkeypatch.setattr(nek, "numexpr_wins", lambda *a: False)
        monkeypatch.setattr(nek, "BLOCK_MIN_SIZE", 0 if request.param == "blocks" else 1 << 62)
        monkeypatch.setattr(nek, "BLOCK_ELEMS", 64)   # several blocks on small test arrays
    return request.param


def _modes(f, *args):
    g = f.get_concrete_function(*args).graph
    return [n.region.mode for n in g.nodes if n.kind == "fused"]


def _chain(x, y, b):
    t = x * y + x                      # broadcasting against the bias below
    t = lk.tanh(t + b) * 0.5 - y
    t = lk.where(t > 0.1, t, t * 0.01)
    t = lk.maximum(t, -0.3) + lk.sigmoid(y) * lk.exp(-lk.abs(x))
    return lk.sqrt(lk.square(t) + 1.0) / (1.0 + lk.square(y))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_fused_chain_equals_eager(mode, dtype, rng):
    f = function(_chain)
    shape = (37, 16)
    args = [lk.constant(rng.standard_normal(shape).astype(dtype)),
            lk.constant(rng.standard_normal(shape).astype(dtype)),
            lk.constant(rng.standard_normal(16).astype(dtype))]
    f(*args)
    assert _modes(f, *args) and set(_modes(f, *args)) == {mode}
    tol = 1e-5 if dtype == np.float32 else 1e-12
    for _ in range(2):
        args = [lk.constant(rng.standard_normal(a.shape).astype(dtype)) for a in args]
        got = f(*args)
        want = _chain(*args)
        assert got.dtype == want.dtype == dtype
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=tol, atol=tol)


def test_fused_gradients_equal_eager(mode, rng):
    w = lk.Variable(rng.standard_normal((8, 8)).astype(np.float32), name="w")

    def loss_and_grads(x, y):
        with lk.GradientTape() as tape:
            tape.watch(x)
            h = lk.matmul(x, w)
            z = lk.tanh(h * 1.5 + y) * lk.sigmoid(h) - lk.square(y) * 0.25
            loss = lk.reduce_mean(lk.exp(-lk.abs(z)) + z * z)
        return (loss, *tape.gradient(loss, [x, w]))

    f = function(loss_and_grads)
    for _ in range(3):
        x = lk.constant(rng.standard_normal((64, 8)).astype(np.float32))
        y = lk.constant(rng.standard_normal((64, 8)).astype(np.float32))
        got = f(x, y)
        want = loss_and_grads(x, y)
        for g, e in zip(got, want):
            np.testing.assert_allclose(g.numpy(), e.numpy(), rtol=2e-5, atol=1e-6)
    assert mode in _modes(f, x, y)


def test_function_gradients_match_finite_differences(rng):
    # float64: the gradient computed by the graph (tape inside) against central differences
    def value_and_grad(x):
        with lk.GradientTape() as tape:
            tape.watch(x)
            y = lk.reduce_sum(lk.tanh(x * 1.3) * lk.exp(-x * x) + lk.sigmoid(x) * x)
        return y, tape.gradient(y, x)

    f = function(value_and_grad)
    x0 = rng.standard_normal(6)
    f(lk.constant(x0))
    x1 = rng.standard_normal(6)
    _, g = f(lk.constant(x1))
    eps = 1e-6
    num = np.empty(6)
    for i in range(6):
        e = np.zeros(6)
        e[i] = eps
        num[i] = (float(f(lk.constant(x1 + e))[0]) - float(f(lk.constant(x1 - e))[0])) / (2 * eps)
    np.testing.assert_allclose(g.numpy(), num, rtol=1e-6, atol=1e-8)


def test_float32_stays_float32_with_python_constants(mode, rng):
    f = function(lambda x: (x * 1.7 + 0.3) * (x - 2.5) + 0.1)
    x = lk.constant(rng.standard_normal(500).astype(np.float32))
    f(x)
    out = f(x * 2.0)
    assert out.dtype == np.float32
    xv = x.numpy() * 2
    np.testing.assert_allclose(out.numpy(), (xv * 1.7 + 0.3) * (xv - 2.5) + 0.1, rtol=1e-5)


def test_integer_and_bool_regions(mode):
    f = function(lambda a, b: lk.logical_and(a * 3 + b > 4, b < 3))
    a = lk.constant(np.arange(10))
    b = lk.constant(np.arange(10)[::-1].copy())
    for _ in range(2):
        np.testing.assert_array_equal(f(a, b).numpy(), (a.numpy() * 3 + b.numpy() > 4)
                                      & (b.numpy() < 3))


def test_values_with_several_consumers_are_materialised():
    @function
    def f(x):
        t = lk.exp(x) + 1.0      # used twice: a region boundary
        return t * 2.0 + t * 3.0, t
    x = lk.constant([0.0, 1.0])
    a, t = f(x)
    a2, t2 = f(x)
    np.testing.assert_allclose(a2.numpy(), 5 * (np.exp([0.0, 1.0]) + 1), rtol=1e-6)
    np.testing.assert_allclose(t2.numpy(), np.exp([0.0, 1.0]) + 1, rtol=1e-6)
    g = f.get_concrete_function(x).graph
    fused = [n for n in g.nodes if n.kind == "fused"]
    assert any(len(n.region.members) == 2 for n in fused)


def test_regions_do_not_cross_assignments():
    v = lk.Variable([1.0, 2.0])

    @function
    def f(x):
        a = v * 2.0              # read before the assign
        v.assign(x)
        return (a + 1.0) * v     # v read after the assign
    x = lk.constant([5.0, 6.0])
    np.testing.assert_allclose(f(x).numpy(), [3.0 * 5.0, 5.0 * 6.0])
    v.assign([1.0, 2.0])
    np.testing.assert_allclose(f(x).numpy(), [3.0 * 5.0, 5.0 * 6.0])


# ---- passes --------------------------------------------------------------------------------
def _op_names(f, *args):
    g = f.get_concrete_function(*args).graph
    names = []
    for n in g.nodes:
        if n.kind == "fused":
            names.extend(m.op.name for m in n.region.members)
        elif n.kind == "op":
            names.append(n.op.name)
    return names


def test_constant_folding():
    c = lk.constant(np.arange(4, dtype=np.float32))

    @function
    def f(x):
        k = lk.exp(c) * 2.0 + lk.reduce_sum(c)    # constants only: folded
        return x * k
    x = lk.constant(np.ones(4, np.float32))
    np.testing.assert_allclose(f(x).numpy(), np.exp(np.arange(4)) * 2 + 6, rtol=1e-6)
    assert _op_names(f, x) == ["multiply"]
    assert f.get_concrete_function(x).stats["folded"] == 4


def test_common_subexpressions_merged():
    @function
    def f(x):
        return lk.exp(x * 2.0) + lk.exp(x * 2.0)
    x = lk.constant([1.0, 2.0])
    np.testing.assert_allclose(f(x).numpy(), 2 * np.exp([2.0, 4.0]), rtol=1e-6)
    assert _op_names(f, x).count("exp") == 1
    assert f.get_concrete_function(x).stats["merged"] >= 2


def test_dead_nodes_removed():
    @function
    def f(x):
        unused = lk.matmul(x, x) + 1.0   # noqa: F841 - dead
        return x * 3.0
    x = lk.constant(np.eye(3, dtype=np.float32))
    np.testing.assert_allclose(f(x).numpy(), 3 * np.eye(3))
    assert _op_names(f, x) == ["multiply"]


def test_jit_false_runs_op_by_op(rng):
    f = function(_chain, jit=False)
    args = [lk.constant(rng.standard_normal((5, 4)).astype(np.float32)) for _ in range(2)]
    args.append(lk.constant(rng.standard_normal(4).astype(np.float32)))
    f(*args)
    np.testing.assert_allclose(f(*args).numpy(), _chain(*args).numpy(), rtol=1e-6)
    assert _modes(f, *args) == []


def test_numexpr_compile_cache_is_keyed_by_text_and_dtypes():
    k1 = nek.compile_expr("(i0 * i1) + i0", (("i0", np.float64), ("i1", np.float64)))
    k2 = nek.compile_expr("(i0 * i1) + i0", (("i0", np.float64), ("i1", np.float64)))
    k3 = nek.compile_expr("(i0 * i1) + i0", (("i0", np.float32), ("i1", np.float32)))
    assert k1 is k2 and k1 is not k3
    a = np.arange(4, dtype=np.float32)
    assert k3([a, a]).dtype == np.float32


def test_dispatch_rule():
    f64, f32 = {np.dtype(np.float64)}, {np.dtype(np.float32)}
    big = nek.NE_MIN_SIZE
    assert not nek.numexpr_wins(f32, 10, big * 4, "(i0 * i1)")
    assert not nek.numexpr_wins(f64, 10, big * 4, "tanh(i0)")
    assert not nek.numexpr_wins(f64, 10, 1000, "(i0 * i1)")
    assert nek.numexpr_wins(f64, nek.NE_MIN_OPS, big, "((i0 * i1) + i0)")


def test_blocks_on_2d_arrays_with_and_without_broadcasting(monkeypatch, rng):
    monkeypatch.setattr(nek, "BLOCK_MIN_SIZE", 0)
    monkeypatch.setattr(nek, "BLOCK_ELEMS", 50)
    f = function(lambda x, y, b: lk.tanh(x * y + 1.0) * x - y)   # same shapes: flat blocks
    g = function(lambda x, b: lk.tanh(x * b + 1.0) * x - b)      # a bias: blocks of rows
    x = lk.constant(rng.standard_normal((33, 7)).astype(np.float32))
    y = lk.constant(rng.standard_normal((33, 7)).astype(np.float32))
    b = lk.constant(rng.standard_normal(7).astype(np.float32))
    xt = lk.transpose(lk.constant(rng.standard_normal((7, 33)).astype(np.float32)))
    for fn, args, ref in ((f, (x, y, b), lambda x, y, b: np.tanh(x * y + 1) * x - y),
                          (g, (x, b), lambda x, b: np.tanh(x * b + 1) * x - b)):
        fn(*args)
        assert _modes(fn, *args) == ["blocks"]
        args2 = (xt,) + args[1:]          # a non-contiguous input on a later call
        np.testing.assert_allclose(fn(*args2).numpy(), ref(*[a.numpy() for a in args2]),
                                   rtol=1e-5, atol=1e-6)
