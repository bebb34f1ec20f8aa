"""space_to_depth / depth_to_space, strided_slice, shape_n, zero_fraction, the max/min
scatters, qr's named result and lk.bitwise, against NumPy written out by hand."""
import numpy as np
import pytest

import layerkit as lk

rng = np.random.default_rng(0)


def _s2d_reference(x, bs):
    b, h, w, c = x.shape
    out = np.zeros((b, h // bs, w // bs, bs * bs * c), x.dtype)
    for i in range(h // bs):
        for j in range(w // bs):
            for bh in range(bs):
                for bw in range(bs):
                    out[:, i, j, (bh * bs + bw) * c:(bh * bs + bw + 1) * c] = \
                        x[:, i * bs + bh, j * bs + bw, :]
    return out


@pytest.mark.parametrize("bs", [2, 3])
def test_space_to_depth_and_back(bs):
    x = rng.normal(size=(2, 2 * bs, 3 * bs, 3)).astype(np.float32)
    y = lk.nn.space_to_depth(x, bs)
    np.testing.assert_array_equal(y, _s2d_reference(x, bs))
    np.testing.assert_array_equal(lk.nn.depth_to_space(y, bs), x)
    xc = np.transpose(x, (0, 3, 1, 2))
    yc = lk.nn.space_to_depth(xc, bs, data_format="NCHW")
    np.testing.assert_array_equal(yc, np.transpose(_s2d_reference(x, bs), (0, 3, 1, 2)))
    np.testing.assert_array_equal(lk.nn.depth_to_space(yc, bs, data_format="NCHW"), xc)


def test_space_to_depth_errors():
    with pytest.raises(ValueError, match="divisible by block_size 2"):
        lk.nn.space_to_depth(lk.ones((1, 3, 4, 1)), 2)
    with pytest.raises(ValueError, match="channels 3 must be divisible"):
        lk.nn.depth_to_space(lk.ones((1, 2, 2, 3)), 2)
    with pytest.raises(ValueError, match="4-D"):
        lk.nn.space_to_depth(lk.ones((4, 4)), 2)
    with pytest.raises(ValueError, match="data_format"):
        lk.nn.space_to_depth(lk.ones((1, 4, 4, 1)), 2, data_format="NDHWC")


def test_strided_slice_masks_match_python_slicing():
    x = np.arange(60).reshape(3, 4, 5)
    t = lk.constant(x)
    np.testing.assert_array_equal(lk.strided_slice(t, [0, 1, 0], [3, 4, 5], [1, 2, 2]),
                                  x[0:3, 1:4:2, 0:5:2])
    np.testing.assert_array_equal(lk.strided_slice(t, [1, 0, 0], [0, 2, 0], begin_mask=4,
                                                   end_mask=5), x[1:, 0:2, :])
    np.testing.assert_array_equal(lk.strided_slice(t, [2, 0], [3, 1], shrink_axis_mask=1),
                                  x[2, 0:1])
    np.testing.assert_array_equal(lk.strided_slice(t, [0, 0, 1], [0, 0, 3], ellipsis_mask=1,
                                                   new_axis_mask=2), x[..., None, 1:3])
    np.testing.assert_array_equal(lk.strided_slice(t, [-1], [-4], [-1]), x[-1:-4:-1])
    with pytest.raises(ValueError, match="same length"):
        lk.strided_slice(t, [0, 0], [1], [1])


def test_shape_n_zero_fraction_and_scatters():
    s = lk.shape_n([lk.ones((2, 3)), lk.ones(4)], out_type=lk.int64)
    assert [v.numpy().tolist() for v in s] == [[2, 3], [4]] and s[0].dtype == np.int64
    np.testing.assert_allclose(lk.nn.zero_fraction([[0.0, 1.0], [0.0, 0.0]]), 0.75)
    base = np.array([0.0, 5.0, -1.0, 2.0])
    idx = [[0], [2], [2], [3]]
    upd = np.array([3.0, -4.0, 7.0, 1.0])
    want_max, want_min = base.copy(), base.copy()
    for (i,), u in zip(idx, upd):
        want_max[i] = max(want_max[i], u)
        want_min[i] = min(want_min[i], u)
    np.testing.assert_array_equal(lk.tensor_scatter_nd_max(base, idx, upd), want_max)
    np.testing.assert_array_equal(lk.tensor_scatter_nd_min(base, idx, upd), want_min)


def test_qr_result_is_named_and_bitwise_ops():
    a = rng.normal(size=(4, 3))
    res = lk.linalg.qr(a)
    q, r = res
    assert res.q is q and res.r is r
    np.testing.assert_allclose(q.numpy() @ r.numpy(), a, atol=1e-12)
    np.testing.assert_array_equal(lk.bitwise.bitwise_and([12, 7], [10, 3]), [8, 3])
    np.testing.assert_array_equal(lk.bitwise.bitwise_or([12], [3]), [15])
    np.testing.assert_array_equal(lk.bitwise.bitwise_xor([12], [10]), [6])
    np.testing.assert_array_equal(lk.bitwise.invert(np.array([0, 5], np.uint8)), [255, 250])
    np.testing.assert_array_equal(lk.bitwise.left_shift([1, 3], [2, 1]), [4, 6])
    np.testing.assert_array_equal(lk.bitwise.right_shift([16], [3]), [2])


def test_local_response_normalization_matches_a_loop():
    x = rng.normal(size=(2, 3, 3, 9)).astype(np.float32)
    r, bias, alpha, beta = 3, 2.0, 0.1, 0.6
    want = np.empty_like(x)
    for i in range(9):
        lo, hi = max(0, i - r), min(9, i + r + 1)
        want[..., i] = x[..., i] / (bias + alpha * (x[..., lo:hi] ** 2).sum(-1)) ** beta
    got = lk.nn.local_response_normalization(x, depth_radius=r, bias=bias, alpha=alpha, beta=beta)
    np.testing.assert_allclose(got, want, rtol=1e-5)
    assert lk.nn.lrn is lk.nn.local_response_normalization


def test_histogram_fixed_width_clamps_to_the_end_bins():
    v = np.array([-3.0, 0.0, 0.49, 0.5, 2.0, 9.9, 10.0, 42.0])
    want = np.zeros(4, np.int32)
    for x in v:
        want[int(np.clip(np.floor(x / 10.0 * 4), 0, 3))] += 1
    got = lk.histogram_fixed_width(v, [0.0, 10.0], nbins=4)
    np.testing.assert_array_equal(got, want)
    assert got.dtype == np.int32
    assert lk.histogram_fixed_width([1.0], [0.0, 1.0], 2, dtype=lk.int64).dtype == np.int64
    f = lk.function(lambda t: lk.histogram_fixed_width(t, [0.0, 10.0], nbins=4))
    np.testing.assert_array_equal(f(lk.constant(v)), want)
    with pytest.raises(ValueError, match="value_range"):
        lk.histogram_fixed_width([1.0], [1.0, 1.0])
    with pytest.raises(ValueError, match="nbins"):
        lk.histogram_fixed_width([1.0], [0.0, 1.0], nbins=0)


def test_rebatch_and_function_accepts_jit_compile():
    ds = lk.data.Dataset.range(7).batch(3).rebatch(2, drop_remainder=True)
    assert [b.tolist() for b in ds.as_numpy_iterator()] == [[0, 1], [2, 3], [4, 5]]
    f = lk.function(lambda x: x + 1, jit_compile=True)
    assert float(f(lk.constant(1.0))) == 2.0
    assert lk.utils.unpack_x_y_sample_weight((1, 2)) == (1, 2, None)
    assert lk.keras.utils.pack_x_y_sample_weight(1, 2, 3) == (1, 2, 3)
