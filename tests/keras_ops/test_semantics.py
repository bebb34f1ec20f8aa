"""Keras 3 semantics where they differ from layerkit's TensorFlow-style ops, dtypes,
bad-input errors, and the image subset."""
import numpy as np
import pytest

import layerkit as lk
from layerkit import keras_ops as ops

X = np.array([[3.0, 9.0, 1.0], [7.0, 2.0, 8.0]], np.float32)


# ---- defaults that differ from layerkit's names --------------------------------------------
def test_argmax_argmin_flatten_when_axis_is_none():
    # layerkit.argmax (TF) means axis 0 for None; Keras flattens.
    assert ops.argmax(X).numpy() == np.argmax(X) == 1
    assert ops.argmin(X).numpy() == np.argmin(X) == 2
    assert lk.argmax(X).shape == (3,)
    np.testing.assert_array_equal(ops.argmax(X, axis=1, keepdims=True).numpy(),
                                  np.argmax(X, 1, keepdims=True))
    assert ops.argmax(X).dtype == np.int32


def test_cumsum_cumprod_argsort_take_flatten_when_axis_is_none():
    np.testing.assert_allclose(ops.cumsum(X).numpy(), np.cumsum(X))
    np.testing.assert_allclose(ops.cumprod(X).numpy(), np.cumprod(X))
    np.testing.assert_array_equal(ops.argsort(X, axis=None).numpy(),
                                  np.argsort(X, axis=None, kind="stable"))
    np.testing.assert_allclose(ops.take(X, [4, -1]).numpy(), X.ravel()[[4, -1]])
    # Keras argsort and sort default to the last axis.
    np.testing.assert_array_equal(ops.argsort(X).numpy(), np.argsort(X, -1))
    np.testing.assert_allclose(ops.sort(X).numpy(), np.sort(X, -1))


def test_transpose_takes_axes():
    x = np.arange(24.0).reshape(2, 3, 4)
    np.testing.assert_allclose(ops.transpose(x, axes=(1, 2, 0)).numpy(),
                               x.transpose(1, 2, 0))
    np.testing.assert_allclose(ops.transpose(x).numpy(), x.T)


def test_linspace_endpoint_num_default_and_dtype():
    np.testing.assert_allclose(ops.linspace(0.0, 1.0, 5, endpoint=False).numpy(),
                               np.linspace(0, 1, 5, endpoint=False))
    y = ops.linspace(2, 3)
    assert y.shape == (50,) and y.dtype == np.float32
    np.testing.assert_allclose(y.numpy(), np.linspace(2, 3, 50), rtol=1e-6)
    v, step = ops.linspace(0.0, 1.0, 5, retstep=True)
    assert float(step) == pytest.approx(0.25)
    arr = ops.linspace([0.0, 10.0], [1.0, 20.0], 3, axis=1)
    np.testing.assert_allclose(arr.numpy(), np.linspace([0, 10], [1, 20], 3, axis=1))


def test_reductions_keepdims_and_initial():
    np.testing.assert_allclose(ops.mean(X, axis=0, keepdims=True).numpy(),
                               X.mean(0, keepdims=True))
    np.testing.assert_allclose(ops.max(X, axis=1, keepdims=True).numpy(),
                               X.max(1, keepdims=True))
    np.testing.assert_allclose(ops.max(X, axis=1, initial=8.5).numpy(),
                               np.max(X, 1, initial=8.5))
    np.testing.assert_allclose(ops.sum(X, axis=[0, 1]).numpy(), X.sum())


def test_gelu_defaults_to_the_tanh_approximation():
    x = np.linspace(-3, 3, 7).astype(np.float32)
    tanh_form = 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))
    np.testing.assert_allclose(ops.gelu(x).numpy(), tanh_form, rtol=1e-6, atol=1e-6)
    exact = ops.gelu(x, approximate=False).numpy()
    assert not np.allclose(exact, tanh_form, atol=1e-5)


def test_leaky_relu_default_slope_is_0_2():
    np.testing.assert_allclose(ops.leaky_relu([-1.0, 2.0]).numpy(), [-0.2, 2.0])


def test_softmax_default_axis_and_tuple_axis():
    x = np.arange(12.0, dtype=np.float32).reshape(2, 2, 3)
    e = np.exp(x - x.max(-1, keepdims=True))
    np.testing.assert_allclose(ops.softmax(x).numpy(), e / e.sum(-1, keepdims=True),
                               rtol=1e-6)
    e2 = np.exp(x - x.max((1, 2), keepdims=True))
    np.testing.assert_allclose(ops.softmax(x, axis=(1, 2)).numpy(),
                               e2 / e2.sum((1, 2), keepdims=True), rtol=1e-5)


def test_one_hot_float32_axis_and_out_of_range():
    y = ops.one_hot([0, 2, 7], 3)
    assert y.dtype == np.float32
    np.testing.assert_allclose(y.numpy(), [[1, 0, 0], [0, 0, 1], [0, 0, 0]])
    np.testing.assert_allclose(ops.one_hot([1, 0], 2, axis=0).numpy(), [[0, 1], [1, 0]])
    assert ops.one_hot([1], 3, dtype="int32").dtype == np.int32


def test_shape_is_a_tuple_of_python_ints():
    s = ops.shape(lk.zeros((2, 3)))
    assert s == (2, 3) and all(type(d) is int for d in s)
    assert ops.shape(np.zeros((4,))) == (4,)


def test_convert_to_tensor_dtypes():
    assert ops.convert_to_tensor([1, 2]).dtype == np.int32
    assert ops.convert_to_tensor(3).dtype == np.int32
    assert ops.convert_to_tensor([1.5]).dtype == np.float32
    assert ops.convert_to_tensor([1, 2], dtype="float16").dtype == np.float16
    assert ops.convert_to_tensor(np.zeros(2, np.int64)).dtype == np.int64
    with pytest.raises(ValueError, match="sparse"):
        ops.convert_to_tensor([1.0], sparse=True)


@pytest.mark.parametrize("name", ["sqrt", "exp", "log", "sin", "mean", "std", "var",
                                  "ceil", "floor", "median", "sigmoid", "erf", "arctan"])
def test_float_only_math_on_ints_returns_float32(name):
    out = getattr(ops, name)(np.array([1, 2, 4], np.int32))
    assert out.dtype == np.float32


@pytest.mark.parametrize("name", ["abs", "negative", "square", "round", "trunc", "relu",
                                  "sum", "max", "sign"])
def test_integer_preserving_functions(name):
    out = getattr(ops, name)(np.array([1, -2, 4], np.int32))
    assert out.dtype == np.int32


def test_index_results_are_int32():
    for out in (ops.argsort([3.0, 1.0]), ops.top_k([3.0, 1.0], 1)[1],
                ops.searchsorted([1.0, 2.0], [1.5]), ops.count_nonzero([1, 0]),
                ops.nonzero([1, 0])[0], ops.arange(3)):
        assert out.dtype == np.int32


def test_divide_of_ints_is_float32_and_sum_of_bools_is_int32():
    assert ops.divide(np.array([1, 2], np.int32), 2).dtype == np.float32
    assert ops.sum(np.array([True, True])).dtype == np.int32
    assert ops.arange(0.0, 1.0, 0.5).dtype == np.float32
    assert ops.full((2,), 3).dtype == np.float32


def test_top_k_descending_stable_and_unsorted_input():
    v, i = ops.top_k([[1.0, 4.0, 4.0, 2.0, 9.0]], 3)
    np.testing.assert_allclose(v.numpy(), [[9.0, 4.0, 4.0]])
    np.testing.assert_array_equal(i.numpy(), [[4, 1, 2]])
    with pytest.raises(ValueError, match="top_k"):
        ops.top_k([1.0, 2.0], 3)


def test_split_numpy_rules():
    parts = ops.split(np.arange(6.0), [2, 5])
    assert [p.shape for p in parts] == [(2,), (3,), (1,)]
    with pytest.raises(ValueError, match="equal sections"):
        ops.split(np.arange(5.0), 2)
    assert [p.shape for p in ops.array_split(np.arange(5.0), 2)] == [(3,), (2,)]


def test_losses_match_keras_clipping_and_shapes():
    t = np.array([[0.0, 1.0], [1.0, 0.0]], np.float32)
    p = np.array([[0.0, 1.0], [0.5, 0.5]], np.float32)
    # probabilities clipped to [1e-7, 1 - 1e-7] before the log
    eps = 1e-7
    expect = -(t * np.log(np.clip(p, eps, 1 - eps)) + (1 - t) * np.log(1 - np.clip(
        p, eps, 1 - eps)))
    np.testing.assert_allclose(ops.binary_crossentropy(t, p).numpy(), expect, rtol=1e-5)
    with pytest.raises(ValueError, match="same shape"):
        ops.binary_crossentropy(t, p[:1])
    # sparse labels with a trailing length-1 axis
    logits = np.array([[2.0, 0.0, -1.0]], np.float32)
    a = ops.sparse_categorical_crossentropy([[0]], logits, from_logits=True).numpy()
    lse = np.log(np.exp(logits).sum())
    np.testing.assert_allclose(a, [lse - 2.0], rtol=1e-6)
    # unnormalised probabilities are renormalised (categorical)
    np.testing.assert_allclose(
        ops.categorical_crossentropy([[0.0, 1.0]], [[1.0, 3.0]]).numpy(), [-np.log(0.75)],
        rtol=1e-6)


def test_normalize_and_moments():
    x = np.array([[3.0, 4.0], [0.0, 0.0]], np.float32)
    np.testing.assert_allclose(ops.normalize(x).numpy(), [[0.6, 0.8], [0.0, 0.0]])
    mean, var = ops.moments(x, axes=[0], keepdims=True)
    assert mean.shape == (1, 2)
    np.testing.assert_allclose(var.numpy(), x.var(0, keepdims=True))


def test_segment_ops_empty_segments_and_dropped_ids():
    data = np.array([1.0, 2.0, 3.0, 4.0], np.float32)
    ids = np.array([0, 0, 2, 5])
    np.testing.assert_allclose(ops.segment_sum(data, ids, num_segments=3).numpy(),
                               [3.0, 0.0, 3.0])
    mx = ops.segment_max(data, ids, num_segments=3).numpy()
    assert mx[0] == 2.0 and mx[2] == 3.0 and mx[1] == -np.inf


def test_control_flow():
    assert ops.while_loop(lambda i: i < 5, lambda i: i + 2, 0) == 6
    out = ops.while_loop(lambda i, s: i < 100, lambda i, s: (i + 1, s + i), (0, 0),
                         maximum_iterations=4)
    assert out == (4, 6)
    carry, ys = ops.scan(lambda c, x: (c + x, c), 0.0, np.array([1.0, 2.0, 3.0]),
                         reverse=True)
    assert float(carry) == 6.0
    np.testing.assert_allclose(ys.numpy(), [5.0, 3.0, 0.0])
    carry, ys = ops.scan(lambda c, _: (c * 2, None), 1.0, length=3)
    assert float(carry) == 8.0 and ys is None
    np.testing.assert_allclose(
        ops.associative_scan(lambda a, b: a + b, np.arange(4.0), reverse=True).numpy(),
        np.cumsum(np.arange(4.0)[::-1])[::-1])
    d = ops.map(lambda e: {"s": e["a"] + e["b"]}, {"a": np.ones(3), "b": np.arange(3.0)})
    np.testing.assert_allclose(d["s"].numpy(), [1.0, 2.0, 3.0])
    assert ops.switch(-3, [lambda: "a", lambda: "b"]) == "a"


def test_scatter_update_and_slice_update():
    x = np.zeros((2, 3), np.float32)
    y = ops.scatter_update(x, [[1, 2]], [5.0])
    np.testing.assert_allclose(y.numpy(), [[0, 0, 0], [0, 0, 5]])
    y = ops.scatter_update(np.ones((2, 2), np.float32), [[0, 0], [0, 0]], [1.0, 2.0],
                           reduction="add")
    np.testing.assert_allclose(y.numpy(), [[4, 1], [1, 1]])
    # duplicated indices: the last write wins; reductions combine with the input
    y = ops.scatter_update(x, [[0, 0], [1, 1], [0, 0]], [1.0, 2.0, 3.0])
    np.testing.assert_allclose(y.numpy(), [[3, 0, 0], [0, 2, 0]])
    base = np.array([[1.0, 5.0], [2.0, 2.0]], np.float32)
    idx = [[0, 1], [0, 1], [1, 0]]
    np.testing.assert_allclose(ops.scatter_update(base, idx, [7.0, 3.0, 0.5], "max").numpy(),
                               [[1, 7], [2, 2]])
    np.testing.assert_allclose(ops.scatter_update(base, idx, [7.0, 3.0, 0.5], "min").numpy(),
                               [[1, 3], [0.5, 2]])
    np.testing.assert_allclose(ops.scatter_update(base, idx, [2.0, 3.0, 0.5], "mul").numpy(),
                               [[1, 30], [1, 2]])
    # rows of a matrix (indices name the first axis only)
    y = ops.scatter_update(np.zeros((3, 2), np.float32), [[2], [0]], [[1.0, 2.0], [3.0, 4.0]])
    np.testing.assert_allclose(y.numpy(), [[3, 4], [0, 0], [1, 2]])
    with pytest.raises(ValueError, match="reduction"):
        ops.scatter_update(base, idx, [1.0, 1.0, 1.0], "mean")
    with pytest.raises(ValueError, match="does not fit"):
        ops.slice_update(x, (1, 2), np.ones((2, 2)))


def test_bad_inputs_name_the_function_and_argument():
    with pytest.raises(ValueError, match=r"keras_ops\.argmax.*axis 3"):
        ops.argmax(X, axis=3)
    with pytest.raises(TypeError, match=r"keras_ops\.take: indices"):
        ops.take(X, [0.5])
    with pytest.raises(ValueError, match=r"keras_ops\.pad: mode"):
        ops.pad(X, 1, mode="bogus")
    with pytest.raises(ValueError, match=r"keras_ops\.quantile: method"):
        ops.quantile(X, 0.5, method="weird")
    with pytest.raises(ValueError, match=r"keras_ops\.conv: padding"):
        ops.conv(np.zeros((1, 4, 4, 1)), np.zeros((2, 2, 1, 1)), padding="full")
    with pytest.raises(ValueError, match=r"keras_ops\.squeeze"):
        ops.squeeze(X, 0)
    with pytest.raises(TypeError, match=r"keras_ops\.cast: dtype"):
        ops.cast(X, object())
    with pytest.raises(ValueError, match=r"keras_ops\.inv: expected square"):
        ops.inv(X)


# ---- channels_first and image ------------------------------------------------------------------
IMG = np.random.default_rng(3).random((2, 6, 5, 3)).astype(np.float32)


def test_channels_first_matches_channels_last():
    k = np.random.default_rng(1).standard_normal((3, 3, 3, 4)).astype(np.float32)
    last = ops.conv(IMG, k, padding="same").numpy()
    first = ops.conv(IMG.transpose(0, 3, 1, 2), k, padding="same",
                     data_format="channels_first").numpy()
    np.testing.assert_allclose(first.transpose(0, 2, 3, 1), last, rtol=1e-5, atol=1e-5)
    mp = ops.max_pool(IMG.transpose(0, 3, 1, 2), 2, data_format="channels_first").numpy()
    np.testing.assert_allclose(mp.transpose(0, 2, 3, 1), ops.max_pool(IMG, 2).numpy())


def test_conv_transpose_is_the_adjoint_of_conv():
    rng = np.random.default_rng(2)
    k = rng.standard_normal((3, 3, 2, 3)).astype(np.float64)   # conv: in 2, out 3
    x = rng.standard_normal((1, 8, 8, 2))
    y = rng.standard_normal((1, 4, 4, 3))
    lhs = np.sum(ops.conv(x, k, strides=2, padding="same").numpy() * y)
    rhs = np.sum(x * ops.conv_transpose(y, k, strides=2, padding="same").numpy())
    np.testing.assert_allclose(lhs, rhs, rtol=1e-10)
    assert ops.conv_transpose(y, k, strides=2, padding="valid").shape == (1, 9, 9, 2)
    assert ops.conv_transpose(y, k, strides=2, padding="valid",
                              output_padding=1).shape == (1, 10, 10, 2)


def test_image_functions():
    import colorsys

    from layerkit.keras_ops import image
    g = image.rgb_to_grayscale(IMG).numpy()
    np.testing.assert_allclose(g[..., 0], IMG @ np.array([0.2989, 0.587, 0.114]),
                               rtol=1e-5)
    hsv = image.rgb_to_hsv(IMG).numpy()
    ref = np.array([colorsys.rgb_to_hsv(*p) for p in IMG.reshape(-1, 3)]).reshape(IMG.shape)
    np.testing.assert_allclose(hsv, ref, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(image.hsv_to_rgb(hsv).numpy(), IMG, rtol=1e-5, atol=1e-5)
    p = image.pad_images(IMG, 1, 2, target_height=9, target_width=8).numpy()
    np.testing.assert_allclose(p, np.pad(IMG, [(0, 0), (1, 2), (2, 1), (0, 0)]))
    c = image.crop_images(IMG, 1, 2, target_height=3, target_width=2).numpy()
    np.testing.assert_allclose(c, IMG[:, 1:4, 2:4])
    pt = image.extract_patches(IMG[:, :6, :4], 2).numpy()
    want = IMG[:, :6, :4].reshape(2, 3, 2, 2, 2, 3).transpose(0, 1, 3, 2, 4, 5).reshape(
        2, 3, 2, 12)
    np.testing.assert_allclose(pt, want)
    blur = image.gaussian_blur(IMG, (3, 3), (1.0, 1.0)).numpy()
    w = np.exp(-0.5 * np.array([1.0, 0.0, 1.0]))
    w /= w.sum()
    padded = np.pad(IMG, [(0, 0), (1, 1), (1, 1), (0, 0)])
    centre = np.einsum("nhwc,h,w->nc", padded[:, 2:5, 2:5], w, w)
    np.testing.assert_allclose(blur[:, 2, 2], centre, rtol=1e-5)
    single = image.rgb_to_grayscale(IMG[0], data_format="channels_last")
    assert single.shape == (6, 5, 1)


def test_keras_type_promotion():
    i32 = np.array([1, 2], np.int32)
    f32 = np.array([0.5, 1.5], np.float32)
    # NumPy would give float64 for each of these; Keras keeps the float's width.
    assert ops.add(i32, 2.5).dtype == np.float32
    assert ops.multiply(i32, f32).dtype == np.float32
    assert ops.stack([i32, f32]).dtype == np.float32
    assert ops.concatenate([i32, f32]).dtype == np.float32
    assert ops.where([True, False], i32, 2.5).dtype == np.float32
    assert ops.maximum(i32, np.array([1.0, 1.0], np.float16)).dtype == np.float16
    np.testing.assert_allclose(ops.power(i32, 2.0).numpy(), [1.0, 4.0])
    # integer combinations follow NumPy; Python ints stay weak
    assert ops.add(i32, 3).dtype == np.int32
    assert ops.add(i32, np.array([1, 1], np.int64)).dtype == np.int64
    assert ops.fmod(-i32, 3).dtype == np.int32
    np.testing.assert_array_equal(ops.fmod(-i32, 3).numpy(), np.fmod(-i32, 3))


def test_affine_transform_projective_and_nearest_rounding():
    from layerkit.keras_ops import image
    img = np.arange(30.0, dtype=np.float32).reshape(1, 5, 6, 1)
    # a shift by one column; outside is the fill value
    out = image.affine_transform(img, [1, 0, 1, 0, 1, 0, 0, 0], "nearest",
                                 fill_value=-1).numpy()[0, ..., 0]
    np.testing.assert_allclose(out, np.concatenate([img[0, :, 1:, 0], -np.ones((5, 1))], 1))
    # nearest rounds half to even: source columns 0.5, 1.5, 2.5 -> 0, 2, 2
    out = image.affine_transform(img, [1, 0.5, 0, 0, 1, 0, 0, 0], "nearest").numpy()
    np.testing.assert_allclose(out[0, 1, :3, 0], img[0, 1, [0, 2, 2], 0])
    # the projective row (TensorFlow's rule): x' = x / (0.1 x + 1)
    out = image.affine_transform(img, [1, 0, 0, 0, 1, 0, 0.1, 0], "bilinear").numpy()
    xs = np.arange(6) / (0.1 * np.arange(6) + 1)
    want = np.interp(xs, np.arange(6), img[0, 0, :, 0])
    np.testing.assert_allclose(out[0, 0, :, 0], want, rtol=1e-5)


def _blur_np(v, k, s):
    g = np.exp(-0.5 * ((np.arange(k) - (k - 1) / 2) / s) ** 2)
    g /= g.sum()
    p = np.pad(v, [(0, 0), (k // 2, k // 2), (k // 2, k // 2)])
    h, w = v.shape[1:]
    return np.stack([[[np.sum(p[b, i:i + k, j:j + k] * np.outer(g, g)) for j in range(w)]
                      for i in range(h)] for b in range(v.shape[0])])


def _reflect(i, n):
    j = np.mod(i, 2 * n)
    return np.where(j >= n, 2 * n - 1 - j, j)


def test_elastic_transform_against_numpy_with_the_same_noise():
    from layerkit.keras_ops import image
    img = np.random.default_rng(8).random((2, 7, 6, 2)).astype(np.float32)
    sigma, alpha = 1.0, 3.0
    out = image.elastic_transform(img, alpha, sigma, seed=11).numpy()
    again = image.elastic_transform(img, alpha, sigma, seed=11).numpy()
    np.testing.assert_array_equal(out, again)
    noise = lk.random.normal((4, 7, 6, 1), seed=11).numpy()[..., 0] * sigma
    d = _blur_np(noise.astype(np.float64), int(6 * sigma) | 1, sigma) * alpha
    want = np.zeros_like(img, dtype=np.float64)
    for b in range(2):
        yy, xx = np.meshgrid(np.arange(7), np.arange(6), indexing="ij")
        sy, sx = yy + d[b], xx + d[2 + b]
        y0, x0 = np.floor(sy).astype(int), np.floor(sx).astype(int)
        fy, fx = sy - y0, sx - x0
        for dy_, wy in ((0, 1 - fy), (1, fy)):
            for dx_, wx in ((0, 1 - fx), (1, fx)):
                v = img[b][_reflect(y0 + dy_, 7), _reflect(x0 + dx_, 6)]
                want[b] += v * (wy * wx)[..., None]
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-5)
    np.testing.assert_array_equal(image.elastic_transform(img, alpha=0.0).numpy(), img)
