"""Forward values of the lk.math / lk.linalg / lk.nn / top-level TF ops against NumPy
(or hand-derived values), their errors, the registry that publishes them, and the
AttributeError that names the layerkit spelling of a missing name."""
import numpy as np
import pytest

import layerkit as lk
from layerkit.primitives.registry import NAMESPACES, export

_rng = np.random.default_rng(7)
X = _rng.standard_normal((3, 4)).astype(np.float32)
U = _rng.uniform(-0.9, 0.9, (3, 4)).astype(np.float32)


def _close(t, want, rtol=1e-5, atol=1e-6):
    np.testing.assert_allclose(np.asarray(t.numpy()), want, rtol=rtol, atol=atol)


@pytest.mark.parametrize("name,ref,x", [
    ("reciprocal", lambda a: 1 / a, X), ("asin", np.arcsin, U), ("acos", np.arccos, U),
    ("atan", np.arctan, X), ("sinh", np.sinh, X), ("cosh", np.cosh, X),
    ("asinh", np.arcsinh, X), ("acosh", np.arccosh, np.abs(X) + 1), ("atanh", np.arctanh, U),
    ("erfc", lambda a: 1 - np.vectorize(__import__("math").erf)(a), X),
    ("log_sigmoid", lambda a: -np.log1p(np.exp(-a)), X),
    ("softsign", lambda a: a / (1 + np.abs(a)), X),
    ("is_inf", np.isinf, np.array([1.0, np.inf, -np.inf, np.nan], np.float32)),
    ("is_nan", np.isnan, np.array([1.0, np.nan], np.float32)),
])
def test_unary_math_against_numpy(name, ref, x):
    _close(getattr(lk.math, name)(x), ref(x.astype(np.float64)), rtol=1e-5, atol=1e-6)


def test_float_only_math_refuses_integers():
    with pytest.raises(TypeError, match="asin.*int"):
        lk.math.asin(lk.constant([1, 2]))


def test_binary_math():
    y = np.array([[0.0, 2.0, -1.0, 0.5]] * 3, np.float32)
    _close(lk.math.atan2(X, y), np.arctan2(X, y))
    _close(lk.math.squared_difference(X, y), (X - y) ** 2)
    _close(lk.math.divide_no_nan(X, y), np.where(y == 0, 0, X / np.where(y == 0, 1, y)))
    _close(lk.math.divide_no_nan([np.inf, np.nan], [0.0, 0.0]), [0.0, 0.0])
    _close(lk.math.multiply_no_nan([np.inf, 2.0], [0.0, 3.0]), [0.0, 6.0])
    _close(lk.math.xlogy([0.0, 2.0], [0.0, 3.0]), [0.0, 2 * np.log(3.0)])
    _close(lk.math.xdivy([0.0, 2.0], [0.0, 4.0]), [0.0, 0.5])
    _close(lk.math.reciprocal_no_nan([0.0, 4.0]), [0.0, 0.25])
    _close(lk.math.logical_xor([True, True, False], [True, False, False]), [False, True, False])
    _close(lk.math.polyval([2.0, 0.0, 1.0], X), 2 * X.astype(np.float64) ** 2 + 1, rtol=1e-5)
    _close(lk.add_n([X, X, y]), 2 * X + y)
    _close(lk.math.reduce_euclidean_norm(X, axis=1), np.linalg.norm(X, axis=1))
    _close(lk.math.count_nonzero([[0, 1], [2, 3]], axis=0), [1, 2])
    assert lk.math.count_nonzero([0, 1]).dtype == np.int64


def test_counting():
    _close(lk.math.bincount([1, 1, 3]), [0, 2, 0, 1])
    _close(lk.math.bincount([1, 1, 3], weights=[0.5, 1.0, 2.0], minlength=6),
           np.bincount([1, 1, 3], [0.5, 1.0, 2.0], minlength=6))
    _close(lk.math.bincount([1, 1, 3, 4], maxlength=2), [0, 2])
    labels, preds = [0, 1, 2, 2, 1], [0, 2, 2, 1, 1]
    want = np.zeros((3, 3), int)
    for a, b in zip(labels, preds):
        want[a, b] += 1
    _close(lk.math.confusion_matrix(labels, preds), want)
    with pytest.raises(ValueError, match="bincount.*non-negative"):
        lk.math.bincount([-1, 2])


def test_sort_argsort_top_k():
    _close(lk.sort(X), np.sort(X, axis=-1))
    _close(lk.sort(X, axis=0, direction="DESCENDING"), -np.sort(-X, axis=0))
    ties = np.array([3, 1, 3, 2, 1])
    _close(lk.argsort(ties), np.argsort(ties, kind="stable"))
    _close(lk.argsort(ties, direction="DESCENDING"), [0, 2, 3, 1, 4])  # ties: lower first
    assert lk.argsort(ties).dtype == np.int32
    v, i = lk.math.top_k(X, k=2)
    order = np.argsort(-X, axis=-1, kind="stable")[:, :2]
    _close(i, order)
    _close(v, np.take_along_axis(X, order, -1))
    assert lk.nn.top_k is lk.math.top_k
    with pytest.raises(ValueError, match="top_k: k must be in"):
        lk.math.top_k(X, k=5)
    with pytest.raises(ValueError, match="direction"):
        lk.sort(X, direction="UP")
    _close(lk.math.in_top_k([1, 0], [[0.1, 0.9, 0.5], [0.3, 0.2, 0.8]], 1), [True, False])


def test_unique_and_searchsorted():
    x = np.array([4, 1, 4, 2, 1, 9])
    y, idx = lk.unique(x)
    assert y.numpy().tolist() == [4, 1, 2, 9]            # first-occurrence order
    np.testing.assert_array_equal(y.numpy()[idx.numpy()], x)
    seq = np.sort(_rng.standard_normal((2, 6)), axis=-1)
    vals = _rng.standard_normal((2, 3))
    got = lk.searchsorted(seq, vals, side="right").numpy()
    want = np.stack([np.searchsorted(s, v, side="right") for s, v in zip(seq, vals)])
    np.testing.assert_array_equal(got, want)
    with pytest.raises(ValueError, match="unique: expected a 1-D"):
        lk.unique([[1, 2]])


def _segment_ref(data, ids, n, fn, empty):
    out = np.full((n,) + data.shape[1:], empty, np.float64)
    for k in range(n):
        rows = data[ids == k]
        if len(rows):
            out[k] = fn(rows, axis=0)
    return out


@pytest.mark.parametrize("kind,fn,empty", [
    ("sum", np.sum, 0.0), ("mean", np.mean, 0.0), ("max", np.max, 0.0),
    ("min", np.min, 0.0), ("prod", np.prod, 1.0),
    ("sqrt_n", lambda r, axis: r.sum(axis) / np.sqrt(len(r)), 0.0),
])
def test_segment_ops_against_numpy(kind, fn, empty):
    data = _rng.standard_normal((6, 2)).astype(np.float32)
    ids = np.array([0, 0, 1, 3, 3, 3])
    _close(getattr(lk.math, f"segment_{kind}")(data, ids), _segment_ref(data, ids, 4, fn, empty))
    uids = np.array([2, 0, 2, 1, 0, 4])
    unsorted_empty = {"max": -np.inf, "min": np.inf}.get(kind, empty)
    _close(getattr(lk.math, f"unsorted_segment_{kind}")(data, uids, 6),
           _segment_ref(data, uids, 6, fn, unsorted_empty))


def test_segment_errors():
    with pytest.raises(ValueError, match="segment_sum: segment_ids must be sorted"):
        lk.math.segment_sum([1.0, 2.0], [1, 0])
    with pytest.raises(IndexError, match="unsorted_segment_max"):
        lk.math.unsorted_segment_max([1.0, 2.0], [0, -1], 2)
    with pytest.raises(ValueError, match="prefix"):
        lk.math.unsorted_segment_sum([1.0, 2.0], [0, 1, 1], 2)


def test_segment_prod_gradient_at_zeros():
    # One zero in a segment: only the zero gets the product of the others; two zeros: 0.
    x = lk.constant([2.0, 0.0, 3.0, 0.0, 0.0, 5.0])
    with lk.GradientTape() as tape:
        tape.watch(x)
        y = lk.math.segment_prod(x, [0, 0, 0, 1, 1, 1])
    _close(tape.gradient(y, x), [0.0, 6.0, 0.0, 0.0, 0.0, 0.0])


def test_shape_queries_and_identity():
    t = lk.zeros((2, 3, 4))
    _close(lk.shape(t), [2, 3, 4])
    assert lk.shape(t).dtype == np.int32 and lk.shape(t, out_type="int64").dtype == np.int64
    assert int(lk.size(t)) == 24 and int(lk.rank(t)) == 3
    assert lk.zeros((3,))[:, lk.newaxis].shape == (3, 1)
    v = lk.Variable([1.0, 2.0])
    out = lk.identity(v)
    v.assign([5.0, 6.0])
    _close(out, [1.0, 2.0])                           # a snapshot, not a view


def test_placement_ops():
    x = np.arange(12.0, dtype=np.float32).reshape(3, 4)
    mask = np.array([True, False, True])
    _close(lk.boolean_mask(x, mask), x[mask])
    m2 = x > 5
    _close(lk.boolean_mask(x, m2), x[m2])
    _close(lk.boolean_mask(x, np.array([True, False, False, True]), axis=1), x[:, [0, 3]])
    with pytest.raises(ValueError, match="boolean_mask: mask of shape"):
        lk.boolean_mask(x, [True, False])
    idx = np.array([[0, 1], [2, 3], [0, 1]])
    want = np.zeros((3, 4))
    np.add.at(want, (idx[:, 0], idx[:, 1]), [1.0, 2.0, 3.0])
    _close(lk.scatter_nd(idx, [1.0, 2.0, 3.0], [3, 4]), want)
    _close(lk.tensor_scatter_nd_add(x, idx, [1.0, 2.0, 3.0]), x + want)
    upd = x.copy()
    upd[0, 1], upd[2, 3] = -1.0, -2.0
    _close(lk.tensor_scatter_nd_update(x, idx[:2], [-1.0, -2.0]), upd)
    with pytest.raises(ValueError, match="scatter_nd: indices of shape"):
        lk.scatter_nd(idx, [1.0, 2.0], [3, 4])
    _close(lk.roll(x, [1, -1], [0, 1]), np.roll(x, (1, -1), (0, 1)))
    _close(lk.repeat(x, 2), np.repeat(x, 2))
    _close(lk.repeat(x, [1, 0, 2], axis=0), np.repeat(x, [1, 0, 2], axis=0))
    for indexing in ("xy", "ij"):
        got = lk.meshgrid([1, 2, 3], [4, 5], [6, 7, 8, 9], indexing=indexing)
        want = np.meshgrid([1, 2, 3], [4, 5], [6, 7, 8, 9], indexing=indexing)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g.numpy(), w)
    np.testing.assert_array_equal(lk.sequence_mask([1, 3, 0], 4).numpy(),
                                  np.arange(4) < np.array([1, 3, 0])[:, None])
    assert lk.sequence_mask([2, 1]).shape == (2, 2)
    assert lk.sequence_mask([2], 3, dtype="float32").dtype == np.float32


def test_clip_by_norm_and_global_norm():
    x = _rng.standard_normal((3, 4)).astype(np.float32)
    n = np.linalg.norm(x)
    _close(lk.clip_by_norm(x, 1.0), x / n, rtol=1e-5)
    _close(lk.clip_by_norm(x, 10 * n), x, rtol=1e-6)
    rows = np.linalg.norm(x, axis=1, keepdims=True)
    _close(lk.clip_by_norm(x, 0.5, axes=[1]), x * 0.5 / np.maximum(rows, 0.5), rtol=1e-5)
    a, b = _rng.standard_normal(3), _rng.standard_normal((2, 2))
    g = np.sqrt((a ** 2).sum() + (b ** 2).sum())
    clipped, norm = lk.clip_by_global_norm([a, None, b], 1.0)
    _close(norm, g)
    assert clipped[1] is None
    _close(clipped[2], b / max(g, 1.0))
    _close(lk.linalg.global_norm([a, b]), g)
    with pytest.raises(TypeError, match="clip_by_global_norm: t_list must be a list"):
        lk.clip_by_global_norm(lk.constant(a), 1.0)


def test_nn_helpers():
    x = _rng.standard_normal((2, 3)).astype(np.float32)
    b = np.array([1.0, 2.0, 3.0], np.float32)
    _close(lk.nn.bias_add(x, b), x + b)
    _close(lk.nn.bias_add(x[:, :, None], b, data_format="NCW"),
           x[:, :, None] + b[None, :, None])
    _close(lk.nn.l2_loss(x), (x.astype(np.float64) ** 2).sum() / 2, rtol=1e-5)
    _close(lk.nn.embedding_lookup(x, [1, 0, 1]), x[[1, 0, 1]])
    z = np.array([0.0, 1.0, 1.0], np.float32)
    logits = x[0]
    want = (1 - z) * logits + (1 + (2.0 - 1) * z) * np.log1p(np.exp(-logits))
    _close(lk.nn.weighted_cross_entropy_with_logits(z, logits, 2.0), want, rtol=1e-5)
    _close(lk.nn.crelu(x), np.concatenate([np.maximum(x, 0), np.maximum(-x, 0)], -1))
    _close(lk.nn.sigmoid(x), 1 / (1 + np.exp(-x)), rtol=1e-5)
    t, c = np.array([0.0, 1.0, 3.0]), np.array([0.5, -0.2, 1.1])
    _close(lk.nn.log_poisson_loss(t, c), np.exp(c) - t * c)
    stirling = np.where(t > 1, t * np.log(np.maximum(t, 1)) - t
                        + 0.5 * np.log(2 * np.pi * np.maximum(t, 1)), 0)
    _close(lk.nn.log_poisson_loss(t, c, compute_full_loss=True), np.exp(c) - t * c + stirling)


A = _rng.standard_normal((2, 3, 3)) + 3 * np.eye(3)
SPD = A @ np.swapaxes(A, -1, -2)


def test_linalg_against_numpy():
    la = lk.linalg
    _close(la.inv(A), np.linalg.inv(A))
    _close(la.inv(A, adjoint=True), np.linalg.inv(np.swapaxes(A, -1, -2)))
    b = _rng.standard_normal((2, 3, 2))
    _close(la.solve(A, b), np.linalg.solve(A, b))
    _close(la.det(A), np.linalg.det(A))
    sign, logabs = la.slogdet(A)
    _close(sign, np.linalg.slogdet(A)[0])
    _close(logabs, np.linalg.slogdet(A)[1])
    _close(la.logdet(SPD), np.linalg.slogdet(SPD)[1])
    _close(la.cholesky(SPD), np.linalg.cholesky(SPD))
    q, r = la.qr(A[0][:, :2])
    _close(lk.matmul(q, r), A[0][:, :2])
    _close(r, np.triu(r.numpy()))
    e, v = la.eigh(SPD)
    _close(e, np.linalg.eigh(SPD)[0])
    _close(lk.matmul(lk.matmul(v, la.diag(e)), v, transpose_b=True), SPD)
    _close(la.eigvalsh(SPD), np.linalg.eigvalsh(SPD))
    s, u, vv = la.svd(A[0])
    _close(s, np.linalg.svd(A[0], compute_uv=False))
    _close(lk.matmul(u * s, vv, transpose_b=True), A[0])
    assert la.svd(A[0], full_matrices=True)[1].shape == (3, 3)
    _close(la.diag_part(A), np.diagonal(A, axis1=-2, axis2=-1))
    _close(la.trace(A), np.trace(A, axis1=-2, axis2=-1))
    _close(la.band_part(A, 1, 0), np.tril(np.triu(A, -1)))
    _close(la.band_part(A, -1, 0), np.tril(A))
    _close(la.matrix_transpose(A), np.swapaxes(A, -1, -2))
    _close(la.matvec(A, b[..., 0]), np.einsum("bij,bj->bi", A, b[..., 0]))
    _close(la.triangular_solve(A, b, lower=True), np.linalg.solve(np.tril(A), b))
    low = np.linalg.cholesky(SPD)
    _close(la.cholesky_solve(low, b), np.linalg.solve(SPD, b))
    p, w = _rng.standard_normal((4, 3)), _rng.standard_normal((4, 3))
    _close(la.cross(p, w), np.cross(p, w))
    assert la.matmul is lk.matmul and la.norm is lk.norm


def test_more_linalg_and_small_tf_helpers():
    la = lk.linalg
    a = _rng.standard_normal((4, 3))
    _close(la.pinv(a), np.linalg.pinv(a), rtol=1e-6)
    b = _rng.standard_normal((4, 2))
    _close(la.lstsq(a, b), np.linalg.lstsq(a, b, rcond=None)[0], rtol=1e-6)
    _close(la.lstsq(a, b, l2_regularizer=0.5),
           np.linalg.solve(a.T @ a + 0.5 * np.eye(3), a.T @ b), rtol=1e-6)
    assert int(la.matrix_rank(a)) == 3 and int(la.matrix_rank(np.outer(a[:, 0], a[0]))) == 1
    m = _rng.standard_normal((3, 3))
    want = m.copy()
    np.fill_diagonal(want, [1.0, 2.0, 3.0])
    _close(la.set_diag(m, [1.0, 2.0, 3.0]), want)
    unit, n = la.normalize(a, axis=1)
    _close(n, np.linalg.norm(a, axis=1, keepdims=True))
    _close(unit, a / np.linalg.norm(a, axis=1, keepdims=True))
    assert lk.is_tensor(lk.constant(1.0)) and not lk.is_tensor(np.ones(2))
    assert lk.ensure_shape(lk.zeros((2, 3)), [None, 3]).shape == (2, 3)
    with pytest.raises(ValueError, match=r"ensure_shape: expected shape \(None, 4\)"):
        lk.ensure_shape(lk.zeros((2, 3)), [None, 4])
    np.testing.assert_array_equal(lk.get_static_value(lk.constant([1, 2])), [1, 2])
    assert lk.broadcast_static_shape((2, 1), (3,)) == (2, 3)
    np.testing.assert_array_equal(lk.broadcast_dynamic_shape([2, 1], [3]).numpy(), [2, 3])
    np.testing.assert_array_equal(lk.unravel_index([5, 7], [3, 4]).numpy(),
                                  np.stack(np.unravel_index([5, 7], (3, 4))))
    assert lk.truediv is lk.divide and lk.math.accumulate_n([X, X]).shape == X.shape


def test_linalg_errors():
    with pytest.raises(ValueError, match="inv: .*not invertible"):
        lk.linalg.inv(np.zeros((2, 2)))
    with pytest.raises(ValueError, match="cholesky: .*positive definite"):
        lk.linalg.cholesky(-np.eye(2))
    with pytest.raises(ValueError, match=r"det: expected a tensor of square matrices"):
        lk.linalg.det(np.ones((2, 3)))
    with pytest.raises(TypeError, match="inv"):
        lk.linalg.inv(np.eye(2, dtype=int))


def test_math_namespace_has_the_tf_names():
    wanted = ("argmax argmin reduce_sum reduce_mean reduce_max reduce_min reduce_prod "
              "reduce_logsumexp reduce_variance reduce_std reduce_all reduce_any top_k "
              "cumsum cumprod segment_sum unsorted_segment_sum logical_and logical_or "
              "logical_not logical_xor is_nan is_finite is_inf divide_no_nan "
              "squared_difference sigmoid softplus truediv floormod").split()
    assert not [n for n in wanted if not hasattr(lk.math, n)]
    assert lk.math.is_nan is lk.isnan and lk.math.reduce_sum is lk.reduce_sum
    linalg = "matmul inv solve det slogdet cholesky qr svd eigh norm diag_part trace band_part"
    assert not [n for n in linalg.split() if not hasattr(lk.linalg, n)]


def test_registry_refuses_a_second_function_under_one_name():
    with pytest.raises(ValueError, match="lk.math.reduce_sum is already"):
        export("math.reduce_sum")(lambda x: x)
    with pytest.raises(ValueError, match="unknown namespace"):
        export("maths.foo")(lambda x: x)
    assert NAMESPACES["math"]["reduce_sum"] is lk.reduce_sum


@pytest.mark.parametrize("expr,message", [
    (lambda: lk.math.matmul, "use lk.matmul"),
    (lambda: lk.segment_sum, "use lk.math.segment_sum"),
    (lambda: lk.layers.dense, "use lk.layers.Dense"),
    (lambda: lk.layers.relu, "use lk.layers.ReLU"),
    (lambda: lk.nn.reduce_sum, "use lk.reduce_sum"),
    (lambda: lk.reduce_sun, "use lk.reduce_sum"),
    (lambda: lk.strings, "string tensors are not supported"),
    (lambda: lk.nn.no_such_op, "lk.nn.no_such_op is not supported"),
    (lambda: lk.linalg.no_such_op, "lk.linalg.no_such_op is not supported"),
])
def test_missing_names_say_what_to_use(expr, message):
    with pytest.raises(AttributeError, match=message):
        expr()
    assert not hasattr(lk, "__no_such_dunder__")


def test_new_ops_trace_into_one_graph_that_follows_new_inputs():
    import warnings

    @lk.function
    def f(x, ids):
        return (lk.math.unsorted_segment_mean(x, ids, 3), lk.sort(x),
                lk.linalg.det(lk.reshape(x, (2, 2))), lk.math.top_k(x, 2).values,
                lk.tensor_scatter_nd_update(x, [[0]], [5.0]))

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no fallback to eager
        f(lk.constant([1.0, 3.0, 2.0, 5.0]), lk.constant(np.array([0, 2, 2, 1])))
        x, ids = np.array([2.0, 6.0, 4.0, 10.0], np.float32), np.array([1, 1, 2, 0])
        mean, srt, det, top, upd = f(lk.constant(x), lk.constant(ids))
    _close(mean, [10.0, 4.0, 4.0])
    _close(srt, np.sort(x))
    _close(det, np.linalg.det(x.reshape(2, 2)), rtol=1e-5)
    _close(top, [10.0, 6.0])
    _close(upd, [5.0, 6.0, 4.0, 10.0])
    assert f.trace_count == 1


def test_numpy_calls_dispatch_to_the_published_ops():
    x = lk.constant(U)
    with lk.GradientTape() as tape:
        tape.watch(x)
        y = np.sum(np.arcsin(x) + np.arctan2(x, 2.0 * x + 3.0) + np.cosh(x))
    _close(y, (np.arcsin(U.astype(np.float64)) + np.arctan2(U, 2.0 * U + 3.0)
               + np.cosh(U)).sum(), rtol=1e-5)
    assert tape.gradient(y, x) is not None             # stayed on the tape
    m = lk.constant(A[0])
    _close(np.linalg.inv(m), np.linalg.inv(A[0]))
    _close(np.linalg.det(m), np.linalg.det(A[0]))
    _close(np.repeat(lk.constant([1, 2]), 2), [1, 1, 2, 2])
    assert isinstance(np.linalg.inv(m), lk.Tensor)
