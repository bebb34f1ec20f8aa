"""Shape and indexing ops: forward values vs NumPy, errors, gradients."""
import numpy as np
import pytest

import layerkit as lk
from layerkit._core.op import apply
from layerkit.primitives import array as A
from layerkit.primitives import broadcast as B

RNG = np.random.default_rng(11)
X = RNG.standard_normal((2, 3, 4))
DTYPES = [np.float32, np.float64, np.int64, np.int32]


def _grad(f, *xs):
    ts = [lk.constant(np.asarray(x, np.float64)) for x in xs]
    with lk.GradientTape() as t:
        t.watch(ts)
        y = f(*ts)
    gs = t.gradient(y, ts)
    return [g.numpy() for g in gs]


# ---- reshape family -------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(24,), (-1,), (4, -1), (2, 3, 2, 2), (6, 4), [3, 8]])
def test_reshape(shape, dtype):
    x = (X * 10).astype(dtype)
    y = lk.reshape(x, shape)
    assert y.dtype == dtype
    np.testing.assert_array_equal(y.numpy(), np.reshape(x, shape))


def test_reshape_errors_name_shapes_and_sizes():
    with pytest.raises(ValueError, match=r"reshape: .*\(2, 3, 4\) \(24 elements\).*\(5, 5\)"):
        lk.reshape(X, (5, 5))
    with pytest.raises(ValueError, match=r"24 elements cannot be split into parts of 5"):
        lk.reshape(X, (5, -1))
    with pytest.raises(ValueError, match="only one dimension can be -1"):
        lk.reshape(X, (-1, -1))


def test_expand_dims_and_squeeze():
    for axis in (0, 1, 3, -1, -4):
        np.testing.assert_array_equal(lk.expand_dims(X, axis).numpy(), np.expand_dims(X, axis))
    with pytest.raises(ValueError, match=r"expand_dims: axis 4 .* rank 3"):
        lk.expand_dims(X, 4)
    z = np.ones((1, 3, 1, 2))
    assert lk.squeeze(z).shape == (3, 2)
    assert lk.squeeze(z, axis=2).shape == (1, 3, 2)
    assert lk.squeeze(z, axis=[0, -2]).shape == (3, 2)
    with pytest.raises(ValueError, match=r"squeeze: cannot squeeze axis 1 .*\(1, 3, 1, 2\)"):
        lk.squeeze(z, axis=1)


def test_broadcast_to():
    x = np.arange(3.0).reshape(3, 1)
    np.testing.assert_array_equal(lk.broadcast_to(x, (2, 3, 4)).numpy(),
                                  np.broadcast_to(x, (2, 3, 4)))
    with pytest.raises(ValueError, match=r"broadcast_to: .*\(3, 1\) to shape \(2, 4\)"):
        lk.broadcast_to(x, (2, 4))


@pytest.mark.parametrize("perm", [None, (0, 2, 1), (2, 0, 1), [-1, 0, 1]])
def test_transpose(perm):
    np.testing.assert_array_equal(lk.transpose(X, perm).numpy(), np.transpose(X, perm))


def test_transpose_rejects_bad_perm():
    with pytest.raises(ValueError, match=r"transpose: perm \(0, 0, 1\) .* rank 3"):
        lk.transpose(X, (0, 0, 1))
    with pytest.raises(ValueError, match="rank 3"):
        lk.transpose(X, (0, 1))


# ---- concat / stack / unstack / split -------------------------------------------------
@pytest.mark.parametrize("axis", [0, 1, 2, -1])
def test_concat(axis):
    parts = [X, X * 2, X[:, :, :1] if axis in (2, -1) else X]
    got = lk.concat(parts, axis)
    np.testing.assert_array_equal(got.numpy(), np.concatenate(parts, axis))


def test_concat_errors_and_dtypes():
    with pytest.raises(ValueError, match=r"concat: .*received shapes \[\(2, 3\), \(2, 4\)\]"):
        lk.concat([np.ones((2, 3)), np.ones((2, 4))], 0)
    with pytest.raises(ValueError, match=r"concat: axis 2 .* rank 2"):
        lk.concat([np.ones((2, 3))], 2)
    with pytest.raises(ValueError, match="non-empty list"):
        lk.concat([], 0)
    y = lk.concat([np.ones(2, np.int32), np.zeros(1, np.int32)], 0)
    assert y.dtype == np.int32 and y.numpy().tolist() == [1, 1, 0]
    assert lk.concat([[1.0], [2.0]], 0).dtype == np.float32


@pytest.mark.parametrize("axis", [0, 1, 3, -1, -4])
def test_stack_unstack(axis):
    vals = [X, X + 1, X * 3]
    s = lk.stack(vals, axis)
    np.testing.assert_array_equal(s.numpy(), np.stack(vals, axis))
    parts = lk.unstack(s, axis=axis)
    assert isinstance(parts, list) and len(parts) == 3
    for p, v in zip(parts, vals):
        np.testing.assert_array_equal(p.numpy(), v)


def test_stack_unstack_errors():
    with pytest.raises(ValueError, match=r"stack: all tensors must have the same shape"):
        lk.stack([np.ones(2), np.ones(3)])
    with pytest.raises(ValueError, match=r"stack: axis 2 .* rank 1"):
        lk.stack([np.ones(2)], axis=2)
    with pytest.raises(ValueError, match=r"unstack: num=2 .* length 3"):
        lk.unstack(np.ones((3, 2)), num=2)
    with pytest.raises(ValueError, match="scalar"):
        lk.unstack(1.0)
    assert len(lk.unstack(np.ones((3, 2)), num=2, axis=1)) == 2


@pytest.mark.parametrize("spec,axis,sizes", [
    (2, 0, [1, 1]), (3, 1, [1, 1, 1]), (2, -1, [2, 2]), ([1, 3], 2, [1, 3]),
    ([2, -1], -1, [2, 2]), ([0, 3, -1], 1, [0, 3, 0]), (lk.constant([1, 2]), 1, [1, 2]),
])
def test_split(spec, axis, sizes):
    parts = lk.split(X, spec, axis)
    assert [p.shape[axis] for p in parts] == sizes
    np.testing.assert_array_equal(np.concatenate([p.numpy() for p in parts], axis), X)


def test_split_errors():
    with pytest.raises(ValueError, match=r"split: cannot split axis 1 of length 3 .* into 2"):
        lk.split(X, 2, axis=1)
    with pytest.raises(ValueError, match=r"add up to 5, but axis 2 .* length 4"):
        lk.split(X, [2, 3], axis=2)
    with pytest.raises(ValueError, match="at most one -1"):
        lk.split(X, [-1, -1], axis=2)
    with pytest.raises(ValueError, match="exceed"):
        lk.split(X, [5, -1], axis=2)


def test_split_of_one_part_has_gradient():
    # A multi-output op with a single output must still reach its vjp correctly.
    g = _grad(lambda x: lk.split(x * x, 1, axis=0)[0], [1.0, 2.0])[0]
    np.testing.assert_allclose(g, [2.0, 4.0])
    g = _grad(lambda x: lk.reduce_sum(lk.unstack(x)[0]), [[1.0, 2.0]])[0]
    np.testing.assert_allclose(g, [[1.0, 1.0]])


def test_unused_unstack_outputs_get_zero_gradient():
    g = _grad(lambda x: lk.unstack(x, axis=1)[2] * 3.0, np.ones((2, 4)))[0]
    np.testing.assert_allclose(g, [[0, 0, 3, 0], [0, 0, 3, 0]])


# ---- tile / pad ---------------------------------------------------------------------------
@pytest.mark.parametrize("mult", [(1, 1, 1), (2, 1, 3), (1, 0, 2), lk.constant([3, 2, 1])])
def test_tile(mult):
    np.testing.assert_array_equal(lk.tile(X, mult).numpy(), np.tile(X, np.asarray(mult)))


def test_tile_errors():
    with pytest.raises(ValueError, match=r"tile: multiples \(2, 2\) .*\(2, 3, 4\)"):
        lk.tile(X, (2, 2))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("mode", ["CONSTANT", "REFLECT", "SYMMETRIC", "reflect"])
def test_pad(mode, dtype):
    x = (X * 10).astype(dtype)
    pads = [[1, 0], [2, 2], [0, 3]]
    got = lk.pad(x, pads, mode=mode)
    want = np.pad(x, pads, mode=mode.lower()) if mode.upper() != "CONSTANT" else np.pad(x, pads)
    assert got.dtype == dtype
    np.testing.assert_array_equal(got.numpy(), want)


def test_pad_constant_values_and_errors():
    got = lk.pad(np.ones((2, 2), np.float32), [[1, 1], [0, 0]], constant_values=-2.5)
    np.testing.assert_array_equal(got.numpy(), np.pad(np.ones((2, 2)), [[1, 1], [0, 0]],
                                                      constant_values=-2.5))
    with pytest.raises(ValueError, match=r"pad: paddings must have shape \(2, 2\)"):
        lk.pad(np.ones((2, 2)), [[1, 1]])
    with pytest.raises(ValueError, match="non-negative"):
        lk.pad(np.ones((2, 2)), [[1, -1], [0, 0]])
    with pytest.raises(ValueError, match=r"REFLECT padding \(2, 0\) on axis 0 .*smaller"):
        lk.pad(np.ones((2, 2)), [[2, 0], [0, 0]], mode="REFLECT")
    lk.pad(np.ones((2, 2)), [[2, 0], [0, 0]], mode="SYMMETRIC")
    with pytest.raises(ValueError, match="mode must be"):
        lk.pad(np.ones(2), [[1, 1]], mode="wrap")


def test_pad_reflect_gradient_folds_back():
    g = _grad(lambda x: lk.pad(x, [[2, 1]], mode="REFLECT"), [1.0, 2.0, 3.0])[0]
    # output = x[2], x[1], x0, x1, x2, x1
    np.testing.assert_allclose(g, [1.0, 3.0, 2.0])
    g = _grad(lambda x: lk.pad(x, [[2, 1]], mode="SYMMETRIC"), [1.0, 2.0, 3.0])[0]
    # output = x1, x0, x0, x1, x2, x2
    np.testing.assert_allclose(g, [2.0, 2.0, 2.0])


# ---- gather / gather_nd ---------------------------------------------------------------
@pytest.mark.parametrize("axis", [0, 1, 2, -1])
@pytest.mark.parametrize("idx", [np.array([1, 0, 1]), np.array([[0], [1]]), np.array(1)])
def test_gather_matches_take(axis, idx):
    got = lk.gather(X, idx, axis=axis)
    np.testing.assert_array_equal(got.numpy(), np.take(X, idx, axis=axis))


def test_gather_batch_dims():
    params = RNG.standard_normal((2, 3, 5, 4))
    idx = RNG.integers(0, 5, (2, 3, 6))
    got = lk.gather(params, idx, axis=2, batch_dims=2)
    want = np.stack([np.stack([params[b, m][idx[b, m]] for m in range(3)]) for b in range(2)])
    np.testing.assert_array_equal(got.numpy(), want)
    idx = RNG.integers(0, 5, (2, 7))
    got = lk.gather(params, idx, axis=2, batch_dims=1)  # middle axis 1 kept before indices
    want = np.stack([params[b][:, idx[b]] for b in range(2)])
    assert got.shape == (2, 3, 7, 4)
    np.testing.assert_array_equal(got.numpy(), want)
    got = lk.gather(params, idx[:, :3] % 3, axis=1, batch_dims=-1)
    want = np.stack([params[b][idx[b, :3] % 3] for b in range(2)])
    np.testing.assert_array_equal(got.numpy(), want)


def test_gather_errors():
    with pytest.raises(IndexError, match=r"gather: index 3 is out of range for axis 0 of size 3"):
        lk.gather(np.ones((3, 2)), [0, 3])
    with pytest.raises(IndexError, match="index -1"):
        lk.gather(np.ones((3, 2)), [-1])
    with pytest.raises(TypeError, match="gather: indices must be integers"):
        lk.gather(np.ones((3, 2)), [0.5])
    with pytest.raises(ValueError, match="batch_dims=1"):
        lk.gather(np.ones((3, 2)), np.zeros((3, 1), np.int64), axis=0, batch_dims=1)


def test_gather_gradient_accumulates_repeats():
    g = _grad(lambda p: lk.gather(p, np.array([2, 0, 2, 2])), np.arange(6.0).reshape(3, 2))[0]
    np.testing.assert_allclose(g, [[1, 1], [0, 0], [3, 3]])


@pytest.mark.parametrize("n,width,k", [(50, 128, 2000), (7, 33, 70), (5, 8, 100), (9, 40, 10)])
def test_gather_gradient_paths_agree_with_add_at(n, width, k):
    idx = RNG.integers(0, n, (k // 2, 2) if k % 2 == 0 else k)
    g = RNG.standard_normal(np.shape(idx) + (width,))
    got = apply(A._GATHER_GRAD, g, idx, shape=(n, width), axis=0, batch_dims=0).numpy()
    want = np.zeros((n, width))
    np.add.at(want, idx, g)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_gather_nd():
    params = RNG.standard_normal((3, 4, 2))
    idx = np.array([[0, 1], [2, 3], [2, 3]])
    np.testing.assert_array_equal(lk.gather_nd(params, idx).numpy(), params[idx[:, 0], idx[:, 1]])
    idx3 = np.array([[[1, 0, 1]], [[0, 3, 0]]])
    np.testing.assert_array_equal(lk.gather_nd(params, idx3).numpy(),
                                  params[idx3[..., 0], idx3[..., 1], idx3[..., 2]])
    idxb = np.array([[1], [3], [0]])
    got = lk.gather_nd(params, idxb, batch_dims=1)
    np.testing.assert_array_equal(got.numpy(), params[np.arange(3), idxb[:, 0]])
    with pytest.raises(ValueError, match=r"gather_nd: indices of shape \(2, 4\)"):
        lk.gather_nd(params, np.zeros((2, 4), np.int64))
    with pytest.raises(IndexError, match="gather_nd: index 4"):
        lk.gather_nd(params, np.array([[0, 4]]))
    g = _grad(lambda p: lk.gather_nd(p, np.array([[1], [1], [0]])), np.ones((2, 3)))[0]
    np.testing.assert_allclose(g, [[1, 1, 1], [2, 2, 2]])


# ---- getitem / slice / reverse -------------------------------------------------------
KEYS = [
    1, -1, (1, 2), (slice(None), 1), slice(1, None), slice(None, None, -1),
    (slice(None, None, -2), slice(3, 0, -1)), (Ellipsis, 2), (None, 0, Ellipsis, None),
    (1, Ellipsis, slice(None, 2)), [1, 0, 1], (slice(None), [2, 2, 0]),
    ([0, 1], slice(None), [3, 3]), np.array([[0, 1], [1, 1]]), (Ellipsis, np.array([1, -1])),
    X > 0, (X[:, 0, 0] > 0,), (slice(None), np.array([True, False, True])),
    ([], slice(None)), (True,), np.int64(1), (1, slice(np.int64(0), np.int32(2))),
]


@pytest.mark.parametrize("key", KEYS, ids=[str(i) for i in range(len(KEYS))])
def test_getitem_matches_numpy(key):
    got = A.getitem(lk.constant(X), key)
    want = X[key]
    assert got.shape == np.shape(want)
    np.testing.assert_array_equal(got.numpy(), want)


def test_getitem_with_tensor_indices():
    t = lk.constant(X)
    np.testing.assert_array_equal(A.getitem(t, lk.constant([1, 0])).numpy(), X[[1, 0]])
    np.testing.assert_array_equal(A.getitem(t, (0, lk.constant(2))).numpy(), X[0, 2])
    m = lk.constant(X[0] > 0)
    np.testing.assert_array_equal(A.getitem(t, (1, m)).numpy(), X[1][X[0] > 0])
    np.testing.assert_array_equal(A.getitem(t, slice(lk.constant(1), None)).numpy(), X[1:])


def test_getitem_errors():
    t = lk.constant(X)
    with pytest.raises(IndexError, match=r"getitem: .*out of bounds.*\(2, 3, 4\)"):
        A.getitem(t, 5)
    with pytest.raises(IndexError, match="getitem: "):
        A.getitem(t, (0, 0, 0, 0))
    with pytest.raises(IndexError, match="getitem: .*boolean index did not match"):
        A.getitem(t, np.array([True, False, True]))
    with pytest.raises(TypeError, match="getitem: invalid index 1.5"):
        A.getitem(t, 1.5)
    with pytest.raises(TypeError, match="getitem: index tensors must be integer or bool"):
        A.getitem(t, lk.constant([0.0]))


def test_getitem_gradients():
    x = np.arange(12.0).reshape(3, 4)
    g = _grad(lambda x: A.getitem(x, (slice(None, None, -2), 1)), x)[0]
    want = np.zeros((3, 4))
    want[[0, 2], 1] = 1
    np.testing.assert_allclose(g, want)
    g = _grad(lambda x: A.getitem(x, ([0, 0, 2], [1, 1, 1])), x)[0]
    want = np.zeros((3, 4))
    want[0, 1], want[2, 1] = 2, 1
    np.testing.assert_allclose(g, want)
    g = _grad(lambda x: A.getitem(x, x > 5), x)[0]
    np.testing.assert_allclose(g, (x > 5).astype(float))


def test_slice_tf_semantics():
    np.testing.assert_array_equal(lk.slice(X, [1, 0, 1], [1, -1, 2]).numpy(), X[1:2, :, 1:3])
    np.testing.assert_array_equal(lk.slice(X, lk.constant([0, 1, 0]), [2, 2, -1]).numpy(),
                                  X[:, 1:3, :])
    with pytest.raises(ValueError, match=r"slice: begin 2 with size 3 .* axis 1 of length 3"):
        lk.slice(X, [0, 2, 0], [1, 3, 1])
    with pytest.raises(ValueError, match="one entry per axis"):
        lk.slice(X, [0, 0], [1, 1])


def test_reverse():
    np.testing.assert_array_equal(lk.reverse(X, [0, -1]).numpy(), X[::-1, :, ::-1])
    np.testing.assert_array_equal(lk.reverse(X, 1).numpy(), X[:, ::-1])
    with pytest.raises(ValueError, match=r"reverse: axis 3 .* rank 3"):
        lk.reverse(X, [3])


def test_views_are_not_written_through():
    v = lk.Variable(np.arange(4.0))
    row = A.getitem(v, slice(0, 2))
    v.assign([9.0, 9.0, 9.0, 9.0])
    np.testing.assert_array_equal(row.numpy(), [0.0, 1.0])


# ---- sum_to_shape ---------------------------------------------------------------------
@pytest.mark.parametrize("gshape,shape", [
    ((2, 3, 4), (2, 3, 4)), ((2, 3, 4), (3, 4)), ((2, 3, 4), (1, 4)), ((2, 3, 4), (3, 1)),
    ((2, 3, 4), ()), ((2, 3, 4), (1, 1, 1)), ((5, 1, 4), (1, 4)), ((2, 3), [2, 1]),
])
def test_sum_to_shape(gshape, shape):
    g = RNG.standard_normal(gshape)
    got = B.sum_to_shape(lk.constant(g), shape).numpy()
    lead = len(gshape) - len(shape)
    want = g.sum(axis=tuple(range(lead))) if lead else g
    want = want.sum(axis=tuple(i for i, n in enumerate(shape) if n == 1), keepdims=True)
    assert got.shape == tuple(shape)
    np.testing.assert_allclose(got, np.reshape(want, shape))


def test_sum_to_shape_rejects_incompatible():
    with pytest.raises(ValueError, match=r"sum_to_shape: .*\(2, 3\) .*\(2,\)"):
        B.sum_to_shape(lk.constant(np.ones((2, 3))), (2,))
