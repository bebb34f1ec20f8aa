"""Preprocessing layers: Normalization, Rescaling, Discretization, CategoryEncoding,
Resizing, CenterCrop and the random augmentation layers (Keras parity on fixed weights is
in test_keras_parity_spatial.py)."""
import numpy as np
import pytest

import layerkit as lk
from layerkit import layers as L
from tests.ops.test_image import ref_affine, ref_resize_axis

from .layer_test_util import run_layer_test

_rng = np.random.default_rng(11)


def _x(*shape):
    return _rng.normal(size=shape).astype(np.float32)


# ---- Normalization ---------------------------------------------------------------------
def test_normalization_with_given_statistics():
    x = _x(4, 3)
    out = run_layer_test(L.Normalization, {"mean": [1.0, 2.0, 3.0], "variance": [4.0, 0.0, 2.0]},
                         x, (4, 3), [])
    # the divisor is max(sqrt(variance), 1e-7)
    want = (x - [1, 2, 3]) / np.maximum(np.sqrt([4.0, 0.0, 2.0]), 1e-7)
    np.testing.assert_allclose(out, want, rtol=1e-6)
    inv = L.Normalization(axis=None, mean=0.5, variance=4.0, invert=True)
    np.testing.assert_allclose(inv(x).numpy(), 0.5 + 2 * x, rtol=1e-6)
    per = L.Normalization(axis=(1, 2), mean=[1.0, -1.0], variance=[1.0, 4.0])
    x3 = _x(2, 3, 2)
    np.testing.assert_allclose(per(x3).numpy(), (x3 - [1, -1]) / [1, 2], rtol=1e-6)


@pytest.mark.parametrize("make_data", [
    lambda x: x.astype(np.float64),
    lambda x: lk.constant(x),
    lambda x: [x[:10], x[10:25], x[25:]],
    lambda x: (b for b in np.array_split(x, 4)),
    lambda x: lk.data.Dataset.from_tensor_slices(x),                     # single rows
    lambda x: lk.data.Dataset.from_tensor_slices((x, np.zeros(len(x)))).batch(7),  # (x, y)
])
def test_normalization_adapt_learns_mean_and_variance(make_data):
    x = _x(40, 3) * [1, 5, 0.1] + [0, 3, -2]
    layer = L.Normalization()
    layer.adapt(make_data(x))
    mean, var, count = layer.get_weights()
    np.testing.assert_allclose(mean, x.mean(0), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(var, x.var(0), rtol=1e-5)
    assert [w.name for w in layer.weights] == ["mean", "variance", "count"]
    assert count.dtype == np.int32 and count.shape == ()
    assert layer.trainable_weights == []
    np.testing.assert_allclose(layer(x).numpy(), (x - x.mean(0)) / x.std(0), rtol=1e-4,
                               atol=1e-5)


def test_normalization_adapt_errors_and_config():
    layer = L.Normalization(axis=-1)
    layer.adapt(_x(5, 3))
    with pytest.raises(ValueError, match=r"adapt\(\) received a batch of shape \(5, 4\)"):
        layer.adapt(_x(5, 4))
    with pytest.raises(ValueError, match="cannot adapt a layer built with given"):
        L.Normalization(mean=0.0, variance=1.0).adapt(_x(3, 2))
    with pytest.raises(ValueError, match="set both `mean` and `variance`"):
        L.Normalization(mean=1.0)
    with pytest.raises(ValueError, match="received no data"):
        L.Normalization().adapt([])
    config = L.Normalization(axis=(1, 2), mean=[1.0], variance=[2.0]).get_config()
    assert config["axis"] == (1, 2) and config["mean"] == [1.0]
    assert L.Normalization.from_config(config).get_config() == {**config, "name": config[
        "name"]}


def test_normalization_weights_are_live_in_a_trained_model():
    x = _x(64, 3) * 4 + 2
    y = x.sum(1, keepdims=True)
    norm = L.Normalization()
    norm.adapt(x)
    model = lk.Sequential([lk.Input((3,)), norm, L.Dense(1)])
    model.compile(optimizer=lk.optimizers.Adam(0.05), loss="mse")
    before = norm.get_weights()
    model.fit(x, y, epochs=3, batch_size=16, verbose=0)
    for a, b in zip(before, norm.get_weights()):
        np.testing.assert_array_equal(a, b)  # non-trainable
    f = lk.function(lambda t: norm(t))
    f(x[:2])
    norm.adapt(x * 2)  # a later adapt is seen by the traced function (variables are live)
    np.testing.assert_allclose(f(x[:2]).numpy(), norm(x[:2]).numpy(), rtol=1e-6)


# ---- Rescaling ---------------------------------------------------------------------------
def test_rescaling():
    x = _x(2, 3, 3)
    out = run_layer_test(L.Rescaling, {"scale": 0.5, "offset": 1.0}, x)
    np.testing.assert_allclose(out, x * 0.5 + 1, rtol=1e-6)
    per_channel = L.Rescaling([1.0, 2.0, 3.0])
    np.testing.assert_allclose(per_channel(x).numpy(), x * [1, 2, 3], rtol=1e-6)
    y = L.Rescaling(1 / 255)(np.array([[0, 255]], np.uint8))
    assert y.dtype == np.float32
    np.testing.assert_allclose(y.numpy(), [[0, 1]], rtol=1e-6)
    assert L.Rescaling.from_config(per_channel.get_config()).scale == [1.0, 2.0, 3.0]


# ---- Discretization and CategoryEncoding --------------------------------------------------
def _one_hot(i, depth):
    return (np.asarray(i)[..., None] == np.arange(depth)).astype(np.float32)


def test_discretization_output_modes():
    x = np.array([[-1.0, -0.5, 0.0, 0.69], [0.7, 2.0, -0.6, 0.0]], np.float32)
    bounds = [-0.5, 0.0, 0.7]
    # boundaries[i - 1] <= x < boundaries[i], compared in float32 (0.7 -> 3), as TF/Keras
    idx = np.digitize(x, np.float32(bounds))
    got = L.Discretization(bounds)(x)
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got.numpy(), idx)
    np.testing.assert_array_equal(L.Discretization(bounds, output_mode="one_hot")(
        x[:, :1]).numpy(), _one_hot(idx[:, 0], 4))
    np.testing.assert_array_equal(L.Discretization(bounds, output_mode="multi_hot")(x).numpy(),
                                  _one_hot(idx, 4).max(1))
    np.testing.assert_array_equal(L.Discretization(bounds, output_mode="count")(x).numpy(),
                                  _one_hot(idx, 4).sum(1))
    np.testing.assert_array_equal(L.Discretization(bounds)(np.array([1, -1])).numpy(), [3, 0])


def test_discretization_adapt_and_config():
    x = np.random.default_rng(0).uniform(0, 10, 2000)
    layer = L.Discretization(num_bins=4)
    layer.adapt(x)
    np.testing.assert_allclose(layer.bin_boundaries, [2.5, 5.0, 7.5], atol=0.2)  # quartiles
    clone = L.Discretization.from_config(layer.get_config())
    assert clone.bin_boundaries == layer.bin_boundaries
    np.testing.assert_array_equal(clone(x[:50]).numpy(), layer(x[:50]).numpy())
    batched = L.Discretization(num_bins=4)
    batched.adapt(lk.data.Dataset.from_tensor_slices(x).batch(500))
    np.testing.assert_allclose(batched.bin_boundaries, layer.bin_boundaries, atol=0.2)
    with pytest.raises(ValueError, match="set exactly one of `num_bins` and `bin_boundaries`"):
        L.Discretization()
    with pytest.raises(ValueError, match="cannot adapt a layer created with `bin_boundaries`"):
        L.Discretization([0.0]).adapt(x)
    with pytest.raises(ValueError, match="call adapt\\(\\) before using the layer"):
        L.Discretization(num_bins=3)(x)
    with pytest.raises(ValueError, match="`output_mode` must be one of"):
        L.Discretization([0.0], output_mode="tf_idf")


def test_category_encoding_modes():
    tokens = np.array([[0, 3, 3], [1, 1, 2]])
    np.testing.assert_array_equal(L.CategoryEncoding(4)(tokens).numpy(),
                                  _one_hot(tokens, 4).max(1))
    np.testing.assert_array_equal(L.CategoryEncoding(4, "count")(tokens).numpy(),
                                  _one_hot(tokens, 4).sum(1))
    np.testing.assert_array_equal(L.CategoryEncoding(4, "one_hot")(tokens).numpy(),
                                  _one_hot(tokens, 4))
    # a trailing axis of size 1 is replaced; a rank-1 input is one sample for multi_hot
    np.testing.assert_array_equal(L.CategoryEncoding(4, "one_hot")(tokens[:, :1]).numpy(),
                                  _one_hot(tokens[:, 0], 4))
    np.testing.assert_array_equal(L.CategoryEncoding(5)(np.array([1, 4])).numpy(),
                                  [0, 1, 0, 0, 1])
    assert L.CategoryEncoding(4)(tokens).dtype == np.float32
    with pytest.raises(ValueError, match=r"CategoryEncoding 'ce'.*token 4 is out of range"):
        L.CategoryEncoding(4, name="ce")(np.array([[1, 4]]))
    with pytest.raises(ValueError, match="count_weights` is only used with output_mode"):
        L.CategoryEncoding(4)(tokens, count_weights=np.ones((2, 3)))
    with pytest.raises(ValueError, match="`num_tokens` must be an int >= 1"):
        L.CategoryEncoding()
    config = L.CategoryEncoding(6, "binary").get_config()
    assert config["output_mode"] == "multi_hot"
    assert L.CategoryEncoding.from_config(config).num_tokens == 6


def test_category_encoding_count_weights_are_differentiable():
    tokens = np.array([[0, 2, 2], [1, 1, 3]])
    w = lk.constant(np.array([[1.0, 0.5, 2.0], [3.0, 1.0, 4.0]], np.float32))
    with lk.GradientTape() as tape:
        tape.watch(w)
        y = L.CategoryEncoding(4, "count")(tokens, count_weights=w)
        loss = lk.reduce_sum(y * np.array([1.0, 2.0, 3.0, 4.0], np.float32))
    np.testing.assert_allclose(y.numpy(), [[1, 0, 2.5, 0], [0, 4, 0, 4]])
    np.testing.assert_allclose(tape.gradient(loss, w).numpy(), [[1, 3, 3], [2, 2, 4]])


def test_encodings_run_per_call_inside_function():
    disc = L.Discretization([0.0, 1.0], output_mode="one_hot")
    enc = L.CategoryEncoding(3, "count")
    f = lk.function(lambda x, t: (disc(x), enc(t)))
    for seed in range(2):
        rng = np.random.default_rng(seed)
        x, t = rng.normal(size=(4, 1)).astype(np.float32), rng.integers(0, 3, (4, 2))
        a, b = f(x, t)
        np.testing.assert_array_equal(a.numpy(), disc(x).numpy())
        np.testing.assert_array_equal(b.numpy(), enc(t).numpy())
    with pytest.raises(ValueError, match="token 3 is out of range"):
        f(x, t + 1)


# ---- Resizing and CenterCrop ------------------------------------------------------------------
def _resized(x, h, w, method="bilinear", antialias=False):
    return ref_resize_axis(ref_resize_axis(x.astype(np.float64), 1, h, method, antialias),
                           2, w, method, antialias)


def test_resizing():
    x = _x(2, 6, 9, 2)
    out = run_layer_test(L.Resizing, {"height": 4, "width": 5}, x, (2, 4, 5, 2))
    np.testing.assert_allclose(out, _resized(x, 4, 5), rtol=1e-5, atol=1e-6)
    near = L.Resizing(7, 3, interpolation="nearest")(x).numpy()
    np.testing.assert_array_equal(near, _resized(x, 7, 3, "nearest"))
    aa = L.Resizing(3, 4, antialias=True)(x).numpy()
    np.testing.assert_allclose(aa, _resized(x, 3, 4, antialias=True), rtol=1e-5, atol=1e-6)
    # crop_to_aspect_ratio: the centred 6x6 window of the 6x9 image, then resized
    crop = L.Resizing(4, 4, crop_to_aspect_ratio=True)(x).numpy()
    np.testing.assert_allclose(crop, _resized(x[:, :, 1:7], 4, 4), rtol=1e-5, atol=1e-6)
    # pad_to_aspect_ratio: 1 row of fill above and below (6x9 -> 8x9 ~ 4x4.5), resized
    pad = L.Resizing(4, 4, pad_to_aspect_ratio=True, fill_value=0.5)(x).numpy()
    padded = np.pad(x, ((0, 0), (1, 1), (0, 0), (0, 0)), constant_values=0.5)
    np.testing.assert_allclose(pad, _resized(padded, 4, 4), rtol=1e-5, atol=1e-6)
    # a single image; integer images are rounded and saturated back to their dtype
    np.testing.assert_allclose(L.Resizing(4, 5)(x[0]).numpy(), out[0], rtol=1e-6)
    img = np.array([[[0], [255]], [[255], [0]]], np.uint8)
    up = L.Resizing(4, 4)(img)
    assert up.dtype == np.uint8
    np.testing.assert_array_equal(up.numpy()[..., 0],
                                  np.round(_resized(img[None].astype(np.float32), 4, 4))[0, ..., 0])
    with pytest.raises(ValueError, match="`interpolation` must be one of"):
        L.Resizing(2, 2, interpolation="lanczos3")
    with pytest.raises(ValueError, match="only one of `crop_to_aspect_ratio`"):
        L.Resizing(2, 2, crop_to_aspect_ratio=True, pad_to_aspect_ratio=True)
    with pytest.raises(ValueError, match="expected one image of rank 3 or a batch of rank 4"):
        L.Resizing(2, 2)(_x(4, 4))


def test_center_crop():
    x = _x(2, 6, 7, 2)
    out = run_layer_test(L.CenterCrop, {"height": 3, "width": 4}, x, (2, 3, 4, 2))
    np.testing.assert_array_equal(out, x[:, 1:4, 1:5])
    assert L.CenterCrop(3, 4)(np.zeros((6, 7, 2), np.uint8)).dtype == np.float32
    # smaller than the target: crop to the aspect ratio (4x7 -> 4x3), then resize
    up = L.CenterCrop(5, 4)(x[:, :4]).numpy()
    np.testing.assert_allclose(up, _resized(x[:, :4, 2:5], 5, 4), rtol=1e-5, atol=1e-6)


# ---- augmentation -------------------------------------------------------------------------------
_AUGMENTERS = [
    lambda **k: L.RandomFlip(**k), lambda **k: L.RandomRotation(0.2, **k),
    lambda **k: L.RandomZoom(0.3, 0.2, **k), lambda **k: L.RandomTranslation(0.2, 0.3, **k),
    lambda **k: L.RandomContrast(0.5, **k),
]


@pytest.mark.parametrize("make", _AUGMENTERS)
def test_augmentation_is_identity_at_inference_and_random_in_training(make):
    x = _x(4, 6, 5, 3) * 40 + 100
    layer = make(seed=3)
    np.testing.assert_array_equal(layer(x, training=False).numpy(), x)
    a, b = layer(x).numpy(), layer(x, training=True).numpy()  # call's default: training
    assert a.shape == x.shape and not np.array_equal(a, b)
    lk.random.set_seed(5)
    seedless = make()
    c = seedless(x).numpy()
    lk.random.set_seed(5)
    np.testing.assert_array_equal(make()(x).numpy(), c)  # set_seed reproduces a run
    np.testing.assert_array_equal(make(seed=3)(x).numpy(), a)  # an int seed too
    assert make(seed=3)(x[0]).shape == x[0].shape  # a single image
    clone = type(layer).from_config(layer.get_config())
    assert clone.get_config() == {**layer.get_config(), "name": clone.name}


def test_random_flip_flips_whole_images_both_ways_together():
    x = _x(64, 3, 4, 1)
    both = L.RandomFlip(seed=0)(x).numpy()
    flipped = [np.array_equal(b, a[::-1, ::-1]) for a, b in zip(x, both)]
    kept = [np.array_equal(b, a) for a, b in zip(x, both)]
    assert all(f or k for f, k in zip(flipped, kept)) and 10 < sum(flipped) < 54
    horizontal = L.RandomFlip("horizontal", seed=1)(x).numpy()
    assert all(np.array_equal(b, a) or np.array_equal(b, a[:, ::-1])
               for a, b in zip(x, horizontal))
    with pytest.raises(ValueError, match="`mode` must be one of"):
        L.RandomFlip("diagonal")


def test_fixed_geometric_transforms():
    x = np.arange(16.0, dtype=np.float32).reshape(1, 4, 4, 1)
    rot = L.RandomRotation((0.25, 0.25), fill_mode="constant")(x).numpy()
    np.testing.assert_allclose(rot[0, ..., 0], np.rot90(x[0, ..., 0]), atol=1e-5)  # CCW
    shift = L.RandomTranslation((0.25, 0.25), (0.5, 0.5), fill_mode="constant",
                                fill_value=-1.0)(x).numpy()[0, ..., 0]
    want = np.full((4, 4), -1.0)
    want[1:, 2:] = x[0, :3, :2, 0]  # one row down, two columns right
    np.testing.assert_array_equal(shift, want)
    wrap = L.RandomTranslation((0.25, 0.25), (0.5, 0.5), fill_mode="wrap")(x).numpy()
    np.testing.assert_array_equal(wrap[0, ..., 0], np.roll(x[0, ..., 0], (1, 2), (0, 1)))
    # zoom (height 1.5, width 0.8) about the centre: input = z * output + (n - 1) / 2 * (1 - z)
    xz = _x(2, 5, 6, 2)
    zoom = L.RandomZoom((0.5, 0.5), (-0.2, -0.2), interpolation="nearest",
                        fill_mode="nearest")(xz).numpy()
    t = np.array([[0.8, 0, 2.5 * 0.2, 0, 1.5, 2 * -0.5, 0, 0]] * 2)
    np.testing.assert_allclose(zoom, ref_affine(xz, t, "nearest", "nearest", 0.0), atol=1e-6)


def test_random_contrast():
    x = _x(2, 4, 5, 3)
    out = L.RandomContrast((-0.5, 0.5), value_range=(-1, 1))(x).numpy()  # factor 1.5 exactly
    mean = x.mean(axis=(1, 2), keepdims=True)
    np.testing.assert_allclose(out, np.clip((x - mean) * 1.5 + mean, -1, 1), rtol=1e-5,
                               atol=1e-6)
    assert L.RandomContrast(0.3).factor == (0.0, 0.3)  # Keras 3: [1, 1 + f]
    xi = np.full((1, 2, 2, 1), 7, np.uint8)
    assert L.RandomContrast(0.3)(xi, training=False).dtype == np.uint8  # unchanged
    with pytest.raises(ValueError, match=r"`factor` must be a number in \[0, 1\]"):
        L.RandomContrast(1.5)


@pytest.mark.parametrize("call,match", [
    (lambda: L.RandomRotation(1.5), r"RandomRotation: `factor` must be a number or a pair"),
    (lambda: L.RandomZoom(-1.0), r"RandomZoom: `height_factor` .* in \(-1.0, 1.0\]"),
    (lambda: L.RandomTranslation(0.1, (0.1, 2.0)), r"`width_factor` .* in \[-1.0, 1.0\]"),
])
def test_factor_errors(call, match):
    with pytest.raises(ValueError, match=match):
        call()
    with pytest.raises(NotImplementedError, match="unknown `fill_mode` 'edge'"):
        L.RandomRotation(0.1, fill_mode="edge")


def test_augmentation_in_dataset_map_function_and_fit():
    x = _x(8, 6, 6, 3)
    aug = L.RandomRotation(0.2)

    def run():
        lk.random.set_seed(11)
        ds = lk.data.Dataset.from_tensor_slices(x).map(aug).batch(4)
        return list(ds.as_numpy_iterator())

    first, again = run(), run()
    assert first[0].shape == (4, 6, 6, 3)
    for a, b in zip(first, again):
        np.testing.assert_array_equal(a, b)
    f = lk.function(lambda t, training: aug(t, training=training))
    assert not np.array_equal(f(x, True).numpy(), f(x, True).numpy())  # fresh draws per call
    np.testing.assert_array_equal(f(x, False).numpy(), x)
    y = x.mean(axis=(1, 2, 3))[:, None]
    model = lk.Sequential([lk.Input((6, 6, 3)), L.RandomFlip(seed=1), L.RandomZoom(0.1, seed=2),
                           L.Rescaling(0.5), L.Conv2D(2, 3), L.GlobalAveragePooling2D(),
                           L.Dense(1)])
    model.compile(optimizer="adam", loss="mse")
    model.fit(x, y, epochs=2, batch_size=4, verbose=0)
    np.testing.assert_array_equal(model.predict(x, verbose=0), model.predict(x, verbose=0))


def test_seeded_augmentation_stream_is_saved_by_checkpoints(tmp_path):
    x = _x(2, 5, 5, 1)
    layer = L.RandomTranslation(0.3, 0.3, seed=4)
    layer(x)
    ckpt = lk.Checkpoint(layer=layer)
    path = ckpt.write(str(tmp_path / "ck"))
    want = layer(x).numpy()
    layer(x)
    ckpt.read(path)
    np.testing.assert_array_equal(layer(x).numpy(), want)
