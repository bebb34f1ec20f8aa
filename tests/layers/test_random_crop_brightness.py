"""RandomCrop and RandomBrightness: Keras 3's rules, checked on hand-computed windows and
offsets, eagerly, inside lk.function and in a pipeline."""
import collections

import numpy as np
import pytest

import layerkit as lk

X = np.arange(4 * 6, dtype=np.float32).reshape(1, 4, 6, 1)


def test_random_crop_windows_are_uniform_shared_by_the_batch_and_fresh_per_graph_call():
    layer = lk.layers.RandomCrop(2, 3, seed=0)
    batch = np.concatenate([X, X + 100.0])
    seen = collections.Counter()
    for _ in range(240):
        y = layer(batch, training=True).numpy()
        assert y.shape == (2, 2, 3, 1)
        np.testing.assert_array_equal(y[1], y[0] + 100.0)  # one window for the batch
        top, left = divmod(int(y[0, 0, 0, 0]), 6)
        np.testing.assert_array_equal(y[0, :, :, 0], X[0, top:top + 2, left:left + 3, 0])
        seen[(top, left)] += 1
    assert set(seen) == {(t, c) for t in range(3) for c in range(4)}  # every window occurs
    assert min(seen.values()) > 5
    f = lk.function(lambda t: layer(t, training=True))
    firsts = {float(f(X)[0, 0, 0, 0]) for _ in range(20)}
    assert len(firsts) > 1  # the draw re-runs on every graph call


def test_random_crop_inference_passthrough_and_small_inputs_resized():
    layer = lk.layers.RandomCrop(2, 3)
    np.testing.assert_array_equal(layer(X, training=False), X)
    # not larger along both axes: Keras's centred aspect-ratio window, then a resize
    y = lk.layers.RandomCrop(4, 3)(X, training=True)
    np.testing.assert_array_equal(y[0, :, :, 0], X[0, :, 1:4, 0])
    big = lk.layers.RandomCrop(5, 5)(X, training=True)
    assert big.shape == (1, 5, 5, 1)
    single = lk.layers.RandomCrop(2, 2, seed=1)(X[0], training=True)
    assert single.shape == (2, 2, 1)
    cf = lk.layers.RandomCrop(2, 3, data_format="channels_first")
    assert cf(np.ones((1, 1, 4, 6), np.float32), training=True).shape == (1, 1, 2, 3)
    with pytest.raises(ValueError, match="RandomCrop"):
        lk.layers.RandomCrop(0, 2)
    cfg = lk.layers.RandomCrop(2, 3, seed=4).get_config()
    assert lk.layers.RandomCrop.from_config(cfg).get_config() == cfg


def test_random_brightness_offsets_scale_with_the_value_range_and_clip():
    x = np.full((64, 2, 2, 3), 100.0, np.float32)
    y = lk.layers.RandomBrightness(0.2, seed=0)(x, training=True).numpy()
    delta = y[:, 0, 0, 0] - 100.0
    assert np.all(np.abs(delta) <= 0.2 * 255 + 1e-4) and delta.std() > 5
    assert np.all(y == y[:, :1, :1, :1])  # one offset per image, all channels and pixels
    fixed = lk.layers.RandomBrightness((0.1, 0.1), value_range=(0, 1))
    np.testing.assert_allclose(fixed(np.full((1, 2, 2, 1), 0.5, np.float32)), 0.6, rtol=1e-6)
    np.testing.assert_allclose(fixed(np.full((1, 1, 1, 1), 0.95, np.float32)), 1.0)  # clipped
    np.testing.assert_array_equal(lk.layers.RandomBrightness(0.5)(x, training=False), x)
    for bad in (1.5, (0.1, 2.0), "x"):
        with pytest.raises(ValueError, match="RandomBrightness"):
            lk.layers.RandomBrightness(bad)
    cfg = lk.layers.RandomBrightness((-0.3, 0.2), value_range=(0, 1), seed=2).get_config()
    assert cfg["factor"] == (-0.3, 0.2)
    assert lk.layers.RandomBrightness.from_config(cfg).get_config() == cfg


def test_both_in_a_dataset_map_and_a_model():
    ds = lk.data.Dataset.from_tensor_slices(np.repeat(X, 8, axis=0)).batch(4)
    aug = lk.Sequential([lk.layers.RandomCrop(2, 3, seed=1), lk.layers.RandomBrightness(0.1)])
    shapes = [tuple(b.shape) for b in ds.map(lambda b: aug(b, training=True))]
    assert shapes == [(4, 2, 3, 1), (4, 2, 3, 1)]
