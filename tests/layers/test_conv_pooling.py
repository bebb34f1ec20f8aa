"""Conv2D, Conv2DTranspose, DepthwiseConv2D and pooling layers vs naive NumPy loops."""
import numpy as np
import pytest

from layerkit.layers import (
    AveragePooling2D,
    Conv2D,
    Conv2DTranspose,
    DepthwiseConv2D,
    GlobalAveragePooling2D,
    GlobalMaxPooling2D,
    MaxPooling2D,
)

from .layer_test_util import loss_and_grads_fn, run_layer_test


def _x(*shape, seed=0):
    return np.random.default_rng(seed).normal(size=shape).astype(np.float32)


def _same_pads(n, k, s, d=1):
    out = -(-n // s)
    total = max((out - 1) * s + (k - 1) * d + 1 - n, 0)
    return total // 2, total - total // 2


def ref_conv(x, w, stride=(1, 1), padding="valid", dilation=(1, 1)):
    """Cross-correlation, NHWC x HWIO, TensorFlow SAME split."""
    kh, kw = w.shape[:2]
    if padding == "same":
        (top, bot), (left, right) = (_same_pads(x.shape[1], kh, stride[0], dilation[0]),
                          _same_pads(x.shape[2], kw, stride[1], dilation[1]))
        x = np.pad(x, ((0, 0), (top, bot), (left, right), (0, 0)))
    n, h, wd, _ = x.shape
    ekh, ekw = (kh - 1) * dilation[0] + 1, (kw - 1) * dilation[1] + 1
    oh, ow = (h - ekh) // stride[0] + 1, (wd - ekw) // stride[1] + 1
    out = np.zeros((n, oh, ow, w.shape[3]))
    for i in range(oh):
        for j in range(ow):
            patch = x[:, i * stride[0]:i * stride[0] + ekh:dilation[0],
                      j * stride[1]:j * stride[1] + ekw:dilation[1]]
            out[:, i, j] = np.einsum("nhwc,hwco->no", patch, w)
    return out


@pytest.mark.parametrize("kwargs", [
    {"filters": 3, "kernel_size": 3},
    {"filters": 2, "kernel_size": (2, 3), "strides": 2, "padding": "same"},
    {"filters": 2, "kernel_size": 2, "dilation_rate": 2, "padding": "same"},
])
def test_conv2d_matches_naive(kwargs):
    x = _x(2, 6, 7, 3)
    out = run_layer_test(Conv2D, kwargs, x)
    layer = Conv2D(**kwargs)
    layer(x)
    k, b = layer.get_weights()
    ref = ref_conv(x, k, layer.strides, layer.padding, layer.dilation_rate) + b
    np.testing.assert_allclose(layer(x).numpy(), ref, rtol=1e-4, atol=1e-5)
    assert out.shape == ref.shape
    assert k.shape == layer.kernel_size + (3, kwargs["filters"])


def test_conv2d_activation_and_errors():
    x = _x(1, 4, 4, 2)
    layer = Conv2D(2, 3, activation="relu", name="c2")
    y = layer(x).numpy()
    assert y.min() >= 0
    with pytest.raises(ValueError, match=r"layer 'c2'.*axis -1.*value 2.*\(1, 4, 4, 3\)"):
        layer(_x(1, 4, 4, 3))
    with pytest.raises(ValueError, match=r"layer 'c2'.*ndim=4.*ndim=3"):
        layer(_x(4, 4, 2))
    with pytest.raises(ValueError, match="padding"):
        Conv2D(2, 3, padding="full")
    with pytest.raises(ValueError, match="`data_format` must be 'channels_last' or "
                                         "'channels_first'; received 'NHWC'"):
        Conv2D(2, 3, data_format="NHWC")
    with pytest.raises(ValueError, match=r"strides > 1.*dilation_rate > 1"):
        Conv2D(2, 3, strides=2, dilation_rate=2)
    with pytest.raises(ValueError, match=r"input channels must be evenly divisible.*groups=2"):
        Conv2D(2, 3, groups=2)(_x(1, 4, 4, 3))


@pytest.mark.parametrize("kwargs,out_hw", [
    ({"filters": 2, "kernel_size": 3}, (6, 7)),
    ({"filters": 2, "kernel_size": 3, "strides": 2, "padding": "same"}, (8, 10)),
    ({"filters": 2, "kernel_size": 3, "strides": 2}, (9, 11)),
    ({"filters": 2, "kernel_size": 3, "strides": 2, "padding": "same",
      "output_padding": 0}, (7, 9)),
])
def test_conv2d_transpose_is_adjoint_of_conv2d(kwargs, out_hw):
    x = _x(2, 4, 5, 3)
    run_layer_test(Conv2DTranspose, kwargs, x, (2, *out_hw, 2), [(3, 3, 2, 3), (2,)])
    layer = Conv2DTranspose(**kwargs, use_bias=False)
    y = layer(x).numpy()
    # <conv_transpose(x), u> == <x, conv(u)> with the same kernel (HW, out, in layout)
    u = _x(*y.shape, seed=3)
    k = layer.kernel.numpy()
    conv_u = ref_conv(u, k, layer.strides, layer.padding)
    np.testing.assert_allclose((y * u).sum(), (x * conv_u).sum(), rtol=1e-4)


def test_depthwise_conv2d_matches_per_channel_conv():
    x = _x(2, 5, 5, 3)
    run_layer_test(DepthwiseConv2D, {"kernel_size": 3, "depth_multiplier": 2}, x, (2, 3, 3, 6),
                   [(3, 3, 3, 2), (6,)])
    layer = DepthwiseConv2D(3, depth_multiplier=2, padding="same")
    y = layer(x).numpy()
    k, b = layer.get_weights()
    for c in range(3):
        ref = ref_conv(x[..., c:c + 1], k[:, :, c:c + 1, :], padding="same")
        np.testing.assert_allclose(y[..., 2 * c:2 * c + 2], ref + b[2 * c:2 * c + 2],
                                   rtol=1e-4, atol=1e-5)


def test_pooling_layers():
    x = _x(2, 4, 6, 3)
    mp = run_layer_test(MaxPooling2D, {}, x, (2, 2, 3, 3))
    np.testing.assert_array_equal(mp, x.reshape(2, 2, 2, 3, 2, 3).max(axis=(2, 4)))
    ap = run_layer_test(AveragePooling2D, {"pool_size": 2}, x, (2, 2, 3, 3))
    np.testing.assert_allclose(ap, x.reshape(2, 2, 2, 3, 2, 3).mean(axis=(2, 4)), rtol=1e-5)
    strided = MaxPooling2D(pool_size=3, strides=1)(x).numpy()
    assert strided.shape == (2, 2, 4, 3)
    np.testing.assert_array_equal(strided[:, 1, 2], x[:, 1:4, 2:5].max(axis=(1, 2)))
    # 'same' average pooling does not count the padding (TensorFlow semantics)
    same = AveragePooling2D(pool_size=2, padding="same")(x[:, :3, :3]).numpy()
    np.testing.assert_allclose(same[:, 1, 1], x[:, 2, 2], rtol=1e-6)
    ga = run_layer_test(GlobalAveragePooling2D, {}, x, (2, 3))
    np.testing.assert_allclose(ga, x.mean(axis=(1, 2)), rtol=1e-5)
    gm = run_layer_test(GlobalMaxPooling2D, {"keepdims": True}, x, (2, 1, 1, 3))
    np.testing.assert_array_equal(gm[:, 0, 0], x.max(axis=(1, 2)))


def test_fused_layer_records_under_function_trace_match_eager():
    # Conv2D/Dense run one fused record each; traced by lk.function, their backward must
    # recompute the ReLU mask from each call's data (not keep the trace's), so a compiled
    # training step equals the eager one on new batches.
    import layerkit as lk
    from layerkit.autodiff.function import function
    from layerkit.layers import Dense, Flatten

    layers = [Conv2D(3, 3, padding="same", activation="relu"), MaxPooling2D(2), Flatten(),
              Dense(4, activation="relu"), Dense(2)]

    loss_and_grads = loss_and_grads_fn(layers)

    compiled = function(loss_and_grads)
    for seed in range(3):
        x = lk.constant(_x(2, 6, 6, 2, seed=seed))
        want = loss_and_grads(x)
        got = compiled(x)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-4, atol=1e-5)
