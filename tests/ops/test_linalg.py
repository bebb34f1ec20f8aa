"""matmul, tensordot, einsum and norm: forward values vs NumPy, errors, gradients."""
import numpy as np
import pytest

import layerkit as lk
from layerkit._core.op import apply
from layerkit.primitives import linalg as L

RNG = np.random.default_rng(5)


def _n(*shape):
    return RNG.standard_normal(shape)


def _grad(f, *xs):
    ts = [lk.constant(np.asarray(x, np.float64)) for x in xs]
    with lk.GradientTape() as t:
        t.watch(ts)
        y = f(*ts)
    return [g.numpy() for g in t.gradient(y, ts)]


# ---- matmul ---------------------------------------------------------------------------
def test_seed_example():
    m = lk.matmul([[2.0]], [[2.0]])
    assert m.dtype == np.float32 and m.numpy().tolist() == [[4.0]]


@pytest.mark.parametrize("sa,sb", [
    ((3, 4), (4, 2)), ((2, 3, 4), (2, 4, 5)), ((2, 1, 3, 4), (5, 4, 2)), ((3, 4), (6, 4, 2)),
    ((4,), (4, 2)), ((3, 4), (4,)), ((4,), (4,)), ((4,), (2, 4, 3)), ((2, 3, 4), (4,)),
])
def test_matmul_matches_numpy(sa, sb):
    a, b = _n(*sa), _n(*sb)
    got = lk.matmul(a, b)
    want = np.matmul(a, b)
    assert got.shape == np.shape(want)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12)


@pytest.mark.parametrize("ta", [False, True])
@pytest.mark.parametrize("tb", [False, True])
def test_matmul_transpose_flags(ta, tb):
    a, b = _n(2, 3, 4), _n(2, 4, 5)
    a_in = np.swapaxes(a, -1, -2) if ta else a
    b_in = np.swapaxes(b, -1, -2) if tb else b
    got = lk.matmul(a_in, b_in, transpose_a=ta, transpose_b=tb)
    np.testing.assert_allclose(got.numpy(), a @ b, rtol=1e-12)


@pytest.mark.parametrize("dtype", [np.float32, np.int64])
def test_matmul_dtypes(dtype):
    a, b = (_n(3, 4) * 5).astype(dtype), (_n(4, 2) * 5).astype(dtype)
    got = lk.matmul(a, b)
    assert got.dtype == dtype
    np.testing.assert_allclose(got.numpy(), a @ b, rtol=1e-5)


def test_matmul_errors_name_both_shapes():
    with pytest.raises(ValueError, match=r"matmul: .*\(3, 4\), b has shape \(3, 4\)"):
        lk.matmul(np.ones((3, 4)), np.ones((3, 4)))
    with pytest.raises(ValueError, match=r"\(2, 3, 4\).*\(3, 4, 2\)"):
        lk.matmul(np.ones((2, 3, 4)), np.ones((3, 4, 2)))
    with pytest.raises(ValueError, match=r"\(transposed\)"):
        lk.matmul(np.ones((3, 4)), np.ones((4, 2)), transpose_a=True)
    with pytest.raises(ValueError, match=r"\(3,\).*\(4,\)"):
        lk.matmul(np.ones(3), np.ones(4))
    with pytest.raises(ValueError, match="rank >= 1"):
        lk.matmul(2.0, np.ones(3))


def test_matmul_broadcast_gradient_is_summed_over_batch():
    a, b = _n(1, 3, 4), _n(5, 4, 2)
    ga, gb = _grad(lambda a, b: lk.matmul(a, b), a, b)
    assert ga.shape == a.shape and gb.shape == b.shape
    np.testing.assert_allclose(ga, (np.ones((5, 3, 2)) @ np.swapaxes(b, -1, -2))
                               .sum(0, keepdims=True))
    np.testing.assert_allclose(gb, np.swapaxes(a, -1, -2) @ np.ones((5, 3, 2)))


def test_matmul_vector_gradients():
    a, b = _n(4), _n(4, 3)
    ga, gb = _grad(lambda a, b: lk.matmul(a, b), a, b)
    np.testing.assert_allclose(ga, b.sum(1))
    np.testing.assert_allclose(gb, np.outer(a, np.ones(3)))


# ---- tensordot -------------------------------------------------------------------------
@pytest.mark.parametrize("sa,sb,axes", [
    ((2, 3), (3, 4), 1), ((2, 3, 4), (3, 4, 5), 2), ((2, 3), (4,), 0),
    ((2, 3, 4), (4, 5, 2), [[0, 2], [2, 0]]), ((2, 3, 4), (4, 3), [[-1, 1], [0, -1]]),
    ((3, 4), (4, 3), [1, 0]), ((3, 4), (4, 3), lk.constant(1)),
])
def test_tensordot_matches_numpy(sa, sb, axes):
    a, b = _n(*sa), _n(*sb)
    np_axes = np.asarray(axes).tolist() if not isinstance(axes, list) else axes
    np.testing.assert_allclose(lk.tensordot(a, b, axes).numpy(), np.tensordot(a, b, np_axes),
                               rtol=1e-12)


def test_tensordot_errors():
    with pytest.raises(ValueError, match=r"tensordot: cannot contract axes \(1,\) of shape "
                                         r"\(2, 3\) with axes \(0,\) of shape \(4, 5\)"):
        lk.tensordot(np.ones((2, 3)), np.ones((4, 5)), 1)
    with pytest.raises(ValueError, match="tensordot: axes=3"):
        lk.tensordot(np.ones((2, 3)), np.ones((3, 4)), 3)
    with pytest.raises(ValueError, match="out of range"):
        lk.tensordot(np.ones((2, 3)), np.ones((3, 4)), [[2], [0]])


# ---- einsum ----------------------------------------------------------------------------
@pytest.mark.parametrize("eq,shapes", [
    ("ij,jk->ik", [(2, 3), (3, 4)]), ("ij,jk", [(2, 3), (3, 4)]), ("ba,ac", [(2, 3), (3, 4)]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]), ("ij->ji", [(2, 3)]), ("ij->", [(2, 3)]),
    ("i,i", [(3,), (3,)]), ("i,j->ij", [(2,), (3,)]), ("...ij,...jk->...ik", [(2, 2, 3), (3, 4)]),
    ("...i->...", [(2, 3, 4)]), ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 2)]), ("ii->i", [(3, 3)]),
    ("ii", [(3, 3)]), ("bhqd,bhkd->bhqk", [(2, 2, 3, 4), (2, 2, 5, 4)]),
    ("Ab,bA->A", [(2, 3), (3, 2)]),
    ("ij,ij->i", [(2, 3), (1, 3)]), ("i j , j k -> i k", [(2, 3), (3, 4)]),
])
def test_einsum_matches_numpy(eq, shapes):
    ops = [_n(*s) for s in shapes]
    got = lk.einsum(eq, *ops)
    want = np.einsum(eq.replace(" ", ""), *ops)
    assert got.shape == np.shape(want)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-10, atol=1e-12)


def test_einsum_large_uses_blas_path_and_keeps_float32():
    a, b = _n(64, 300).astype(np.float32), _n(300, 80).astype(np.float32)
    got = lk.einsum("ij,jk->ik", a, b)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got.numpy(), a @ b, rtol=1e-4, atol=1e-4)


def test_einsum_errors():
    with pytest.raises(ValueError, match="einsum: equation 'ij,jk->ik' names 2 operands"):
        lk.einsum("ij,jk->ik", np.ones((2, 2)))
    with pytest.raises(ValueError, match="einsum: subscripts 'ijk' do not match .* rank 2"):
        lk.einsum("ijk->i", np.ones((2, 2)))
    with pytest.raises(ValueError, match=r"einsum: 'ij,jk->ik' with operand shapes "
                                         r"\[\(2, 3\), \(4, 5\)\]"):
        lk.einsum("ij,jk->ik", np.ones((2, 3)), np.ones((4, 5)))
    with pytest.raises(ValueError, match="invalid output"):
        lk.einsum("ij->iz", np.ones((2, 3)))


def test_einsum_trace_gradient_is_not_implemented():
    x = lk.constant(np.eye(3))
    with lk.GradientTape() as t:
        t.watch(x)
        y = lk.einsum("ii->", x)
    assert float(y) == 3.0
    with pytest.raises(NotImplementedError, match="einsum: .*'ii->'.*repeats an index"):
        t.gradient(y, x)


def test_einsum_gradient_of_index_summed_in_one_operand():
    a, b = _n(2, 3), _n(4)
    ga, gb = _grad(lambda a, b: lk.einsum("ij,k->ik", a, b), a, b)
    np.testing.assert_allclose(ga, np.full((2, 3), b.sum()))
    np.testing.assert_allclose(gb, np.full(4, a.sum()))


# ---- norm -------------------------------------------------------------------------------
@pytest.mark.parametrize("ord_", ["euclidean", "fro", 1, 2, np.inf, 3, 0.5])
@pytest.mark.parametrize("axis", [None, 0, -1])
@pytest.mark.parametrize("keepdims", [False, True])
def test_vector_norms(ord_, axis, keepdims):
    x = _n(3, 4)
    got = lk.norm(x, ord=ord_, axis=axis, keepdims=keepdims)
    p = 2 if isinstance(ord_, str) else ord_
    flat = x.reshape(-1) if axis is None else x
    want = np.linalg.norm(flat, ord=p, axis=0 if axis is None else axis)
    if keepdims:
        want = np.reshape(want, (1, 1) if axis is None else
                          np.expand_dims(want, axis).shape)
    assert got.shape == np.shape(want)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12)


@pytest.mark.parametrize("ord_", ["euclidean", "fro", 1, 2, np.inf])
@pytest.mark.parametrize("axis", [(0, 1), (-1, -2), (0, 2)])
@pytest.mark.parametrize("keepdims", [False, True])
def test_matrix_norms(ord_, axis, keepdims):
    x = _n(3, 4, 5)
    got = lk.norm(x, ord=ord_, axis=axis, keepdims=keepdims)
    p = "fro" if isinstance(ord_, str) else ord_
    want = np.linalg.norm(x, ord=p, axis=axis, keepdims=keepdims)
    assert got.shape == want.shape
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12)


def test_norm_float32_and_errors():
    assert lk.norm([3.0, 4.0]).dtype == np.float32
    assert float(lk.norm([3.0, 4.0])) == 5.0
    with pytest.raises(ValueError, match="norm: unsupported ord 'nuc'"):
        lk.norm(np.ones((2, 2)), ord="nuc")
    with pytest.raises(ValueError, match="norm: vector ord must be a positive"):
        lk.norm(np.ones(2), ord=-1)
    with pytest.raises(ValueError, match="norm: unsupported matrix ord 3"):
        lk.norm(np.ones((2, 2)), ord=3, axis=(0, 1))
    with pytest.raises(ValueError, match=r"norm: axis 2 .* rank 2"):
        lk.norm(np.ones((2, 2)), axis=2)
    with pytest.raises(ValueError, match="must differ"):
        lk.norm(np.ones((2, 2)), axis=(1, -1))


def test_spectral_norm_gradient_is_top_singular_pair():
    x = _n(3, 2)
    g = _grad(lambda x: lk.norm(x, ord=2, axis=(0, 1)), x)[0]
    u, _, vh = np.linalg.svd(x)
    np.testing.assert_allclose(g, np.outer(u[:, 0], vh[0]), rtol=1e-10)
    y = lk.norm(x.astype(np.float32), ord=2, axis=(0, 1))
    assert y.dtype == np.float32


def test_svd_record_reconstructs_batched_input():
    x = _n(2, 3, 5)
    s, u, v = apply(L._SVD, x)
    assert s.shape == (2, 3) and u.shape == (2, 3, 3) and v.shape == (2, 5, 3)
    np.testing.assert_allclose((u.numpy() * s.numpy()[:, None, :]) @ np.swapaxes(v.numpy(), 1, 2),
                               x, atol=1e-12)


# ---- fused_matmul (the Dense layer's record) --------------------------------------------
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("activation,use_bias", [("relu", True), ("linear", True),
                                                 ("relu", False), ("linear", False)])
@pytest.mark.parametrize("persistent", [False, True])  # the NumPy and the record vjp paths
def test_fused_matmul_matches_composite(dtype, activation, use_bias, persistent):
    x = lk.constant(RNG.standard_normal((6, 5)).astype(dtype))
    w = lk.Variable(RNG.standard_normal((5, 3)).astype(dtype))
    b = lk.Variable(RNG.standard_normal(3).astype(dtype)) if use_bias else None
    srcs = [x, w] + ([b] if use_bias else [])

    def run(fused):
        with lk.GradientTape(persistent=persistent) as tape:
            tape.watch(x)
            if fused:
                y = L.fused_matmul(x, w, b, activation)
            else:
                y = lk.matmul(x, w)
                y = y + b if use_bias else y
                y = lk.nn.relu(y) if activation == "relu" else y
            loss = lk.reduce_sum(y * y * y)
        return y, tape.gradient(loss, srcs)

    (yf, gf), (yc, gc) = run(True), run(False)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    assert yf.dtype == dtype
    np.testing.assert_allclose(yf.numpy(), yc.numpy(), rtol=tol, atol=tol)
    for a, e in zip(gf, gc):
        assert a.dtype == dtype
        np.testing.assert_allclose(a.numpy(), e.numpy(), rtol=tol, atol=tol)


def test_fused_matmul_traced_relu_mask_is_one_relu_grad():
    # The recording vjp (what an lk.function train step runs) masks with the relu_grad
    # record, not greater + cast + multiply, and agrees with the eager NumPy path.
    x = lk.constant(RNG.standard_normal((6, 5)).astype(np.float32))
    w = lk.Variable(RNG.standard_normal((5, 3)).astype(np.float32))
    b = lk.Variable(RNG.standard_normal(3).astype(np.float32))

    def grads(x):
        with lk.GradientTape() as tape:
            tape.watch(x)
            loss = lk.reduce_sum(L.fused_matmul(x, w, b, "relu") * 2.0)
        return tape.gradient(loss, [x, w, b])

    f = lk.function(grads)
    nodes = f.get_concrete_function(x).graph.nodes
    names = [m.op.name for n in nodes
             for m in (n.region.members if n.kind == "fused" else [n] if n.kind == "op" else [])]
    assert names.count("relu_grad") == 1
    assert "greater" not in names and "cast" not in names
    for _ in range(2):  # the trace call and a replay
        for a, e in zip(f(x), grads(x)):
            np.testing.assert_allclose(a.numpy(), e.numpy(), rtol=1e-5, atol=1e-6)


def test_fused_matmul_errors():
    with pytest.raises(ValueError, match=r"fused_matmul.*\(2, 3\).*\(4, 2\)"):
        L.fused_matmul(np.zeros((2, 3)), np.zeros((4, 2)))
    with pytest.raises(ValueError, match=r"fused_matmul: bias.*\(2,\).*\(3,\)"):
        L.fused_matmul(np.zeros((2, 3)), np.zeros((3, 2)), np.zeros(3))
    with pytest.raises(ValueError, match="fused_matmul: activation.*'tanh'"):
        L.fused_matmul(np.zeros((2, 3)), np.zeros((3, 2)), activation="tanh")
