"""Conv1D/3D (+Transpose), grouped and channels-first convolutions, DepthwiseConv1D,
SeparableConv1D/2D, 1-3D pooling and UpSampling/ZeroPadding/Cropping: NumPy references,
config round trips and gradient checks (run_layer_test), lk.function and Model.fit."""
import numpy as np
import pytest

import layerkit as lk
from layerkit import layers as L
from tests.ops.test_conv_nd import _same, ref_conv, ref_pool

from .layer_test_util import loss_and_grads_fn, run_layer_test


def _x(*shape, seed=0):
    return np.random.default_rng(seed).normal(size=shape).astype(np.float32)


def _pads(layer, sizes):
    if layer.padding == "valid":
        return [(0, 0)] * len(sizes)
    if layer.padding == "causal":
        return [((layer.kernel_size[0] - 1) * layer.dilation_rate[0], 0)]
    return [_same(n, k, s, d) for n, k, s, d in
            zip(sizes, layer.kernel_size, layer.strides, layer.dilation_rate)]


@pytest.mark.parametrize("cls,kwargs,shape,out_shape", [
    (L.Conv1D, {"filters": 3, "kernel_size": 3}, (2, 7, 2), (2, 5, 3)),
    (L.Conv1D, {"filters": 3, "kernel_size": 3, "padding": "causal", "dilation_rate": 2},
     (2, 7, 2), (2, 7, 3)),
    (L.Conv1D, {"filters": 4, "kernel_size": 2, "strides": 2, "padding": "same", "groups": 2},
     (2, 7, 4), (2, 4, 4)),
    (L.Conv2D, {"filters": 6, "kernel_size": 3, "groups": 3, "padding": "same"},
     (2, 5, 4, 3), (2, 5, 4, 6)),
    (L.Conv2D, {"filters": 4, "kernel_size": 2, "groups": 2}, (2, 5, 4, 4), (2, 4, 3, 4)),
    (L.Conv3D, {"filters": 2, "kernel_size": (2, 3, 2), "strides": (1, 2, 1),
                "padding": "same"}, (2, 3, 5, 4, 2), (2, 3, 3, 4, 2)),
    (L.Conv3D, {"filters": 4, "kernel_size": 2, "groups": 2, "activation": "tanh"},
     (1, 3, 3, 3, 4), (1, 2, 2, 2, 4)),
])
def test_convolutions_match_naive(cls, kwargs, shape, out_shape):
    x = _x(*shape)
    run_layer_test(cls, kwargs, x, out_shape)
    layer = cls(**kwargs)
    y = layer(x).numpy()
    k, b = layer.get_weights()
    assert k.shape == layer.kernel_size + (shape[-1] // layer.groups, kwargs["filters"])
    ref = ref_conv(x.astype(np.float64), k, layer.strides, _pads(layer, shape[1:-1]),
                   layer.dilation_rate) + b
    np.testing.assert_allclose(y, layer.activation(ref).numpy() if "activation" in kwargs
                               else ref, rtol=1e-4, atol=1e-5)


def test_causal_conv1d_output_t_sees_only_inputs_up_to_t():
    layer = L.Conv1D(1, 3, padding="causal", use_bias=False)
    x = _x(1, 6, 1)
    y = layer(x).numpy()
    x2 = x.copy()
    x2[0, 4:] += 10.0  # change the future
    np.testing.assert_array_equal(layer(x2).numpy()[0, :4], y[0, :4])


@pytest.mark.parametrize("make,shape", [
    (lambda f: L.Conv1D(3, 3, padding="same", data_format=f), (2, 7, 4)),
    (lambda f: L.Conv2D(4, 3, strides=2, groups=2, data_format=f), (2, 6, 5, 4)),
    (lambda f: L.Conv3D(2, 2, data_format=f), (1, 3, 4, 3, 2)),
    (lambda f: L.Conv2DTranspose(2, 3, strides=2, padding="same", data_format=f),
     (1, 3, 4, 3)),
    (lambda f: L.DepthwiseConv1D(3, depth_multiplier=2, data_format=f), (2, 6, 3)),
    (lambda f: L.SeparableConv2D(3, 3, data_format=f), (2, 5, 5, 2)),
    (lambda f: L.MaxPooling3D(2, data_format=f), (1, 4, 4, 4, 2)),
    (lambda f: L.AveragePooling1D(2, padding="same", data_format=f), (2, 5, 3)),
    (lambda f: L.GlobalAveragePooling3D(keepdims=True, data_format=f), (1, 2, 3, 4, 2)),
    (lambda f: L.UpSampling2D((2, 3), data_format=f, interpolation="bilinear"), (1, 3, 2, 2)),
    (lambda f: L.ZeroPadding3D(((1, 0), (0, 2), (1, 1)), data_format=f), (1, 2, 2, 2, 3)),
    (lambda f: L.Cropping2D(((1, 0), (0, 2)), data_format=f), (1, 4, 5, 3)),
])
def test_channels_first_is_channels_last_transposed(make, shape):
    x = _x(*shape)
    last = make("channels_last")
    y = last(x).numpy()
    first = make("channels_first")
    xf = np.moveaxis(x, -1, 1)
    first(xf)
    first.set_weights(last.get_weights())
    np.testing.assert_allclose(first(xf).numpy(), np.moveaxis(y, -1, 1), rtol=1e-5, atol=1e-6)
    assert first.get_config()["data_format"] == "channels_first"


@pytest.mark.parametrize("cls,kwargs,shape,out_shape,kshape", [
    (L.Conv1DTranspose, {"filters": 2, "kernel_size": 3, "strides": 2}, (2, 4, 3), (2, 9, 2),
     (3, 2, 3)),
    (L.Conv1DTranspose, {"filters": 2, "kernel_size": 3, "strides": 2, "padding": "same",
                         "output_padding": 1}, (2, 4, 3), (2, 8, 2), (3, 2, 3)),
    (L.Conv3DTranspose, {"filters": 2, "kernel_size": 2, "strides": (1, 2, 2),
                         "padding": "same"}, (1, 2, 3, 2, 3), (1, 2, 6, 4, 2),
     (2, 2, 2, 2, 3)),
])
def test_transposed_convolutions_are_adjoint_of_convolutions(cls, kwargs, shape, out_shape,
                                                             kshape):
    x = _x(*shape)
    run_layer_test(cls, kwargs, x, out_shape, [kshape, (2,)])
    layer = cls(**kwargs, use_bias=False)
    y = layer(x).numpy()
    u = _x(*y.shape, seed=3).astype(np.float64)
    k = layer.kernel.numpy()
    # the forward convolution of the output's size (TF: SAME padding from that size)
    conv_u = ref_conv(u, k, layer.strides, _pads(layer, y.shape[1:-1]), layer.dilation_rate)
    np.testing.assert_allclose((y * u).sum(), (x * conv_u).sum(), rtol=1e-4)


def test_depthwise_and_separable_layers_match_per_channel_references():
    x = _x(2, 7, 3)
    run_layer_test(L.DepthwiseConv1D, {"kernel_size": 3, "depth_multiplier": 2}, x, (2, 5, 6),
                   [(3, 3, 2), (6,)])
    dw = L.DepthwiseConv1D(3, depth_multiplier=2, padding="same", strides=2)
    y = dw(x).numpy()
    k, b = dw.get_weights()
    for c in range(3):
        ref = ref_conv(x[..., c:c + 1], k[:, c:c + 1], (2,), [(1, 1)], (1,))
        np.testing.assert_allclose(y[..., 2 * c:2 * c + 2], ref + b[2 * c:2 * c + 2],
                                   rtol=1e-5, atol=1e-5)
    run_layer_test(L.SeparableConv1D, {"filters": 4, "kernel_size": 3, "depth_multiplier": 2},
                   x, (2, 5, 4), [(3, 3, 2), (1, 6, 4), (4,)])
    x2 = _x(2, 6, 5, 2)
    sep = L.SeparableConv2D(4, 3, strides=2, padding="same", activation="relu")
    y2 = sep(x2).numpy()
    d, p, b2 = sep.get_weights()
    pads = [_same(6, 3, 2), _same(5, 3, 2)]
    depth = np.concatenate([ref_conv(x2[..., c:c + 1], d[:, :, c:c + 1], (2, 2), pads, (1, 1))
                            for c in range(2)], axis=-1)
    np.testing.assert_allclose(y2, np.maximum(depth @ p[0, 0] + b2, 0), rtol=1e-4, atol=1e-5)
    assert [w.name for w in sep.weights] == ["depthwise_kernel", "pointwise_kernel", "bias"]


@pytest.mark.parametrize("cls,kind,kwargs,shape", [
    (L.MaxPooling1D, "max", {}, (2, 7, 3)),
    (L.MaxPooling1D, "max", {"pool_size": 3, "strides": 2, "padding": "same"}, (2, 8, 3)),
    (L.AveragePooling1D, "avg", {"pool_size": 3, "strides": 1, "padding": "same"}, (2, 6, 2)),
    (L.MaxPooling3D, "max", {"padding": "same"}, (2, 3, 5, 4, 2)),
    (L.AveragePooling3D, "avg", {"pool_size": (2, 3, 2), "strides": 1}, (1, 3, 4, 3, 2)),
    (L.AveragePooling3D, "avg", {"pool_size": 2, "padding": "same"}, (1, 3, 3, 5, 1)),
])
def test_pooling_layers_match_naive(cls, kind, kwargs, shape):
    x = _x(*shape)
    out = run_layer_test(cls, kwargs, x)
    layer = cls(**kwargs)
    ref = ref_pool(x.astype(np.float64), layer.pool_size, layer.strides,
                   layer.padding.upper(), kind)
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-6)


def test_global_pooling_and_the_masked_mean():
    x = _x(2, 5, 3)
    np.testing.assert_allclose(run_layer_test(L.GlobalAveragePooling1D, {}, x), x.mean(1),
                               rtol=1e-6)
    np.testing.assert_array_equal(run_layer_test(L.GlobalMaxPooling1D, {"keepdims": True}, x),
                                  x.max(1, keepdims=True))
    x3 = _x(2, 2, 3, 4, 2)
    np.testing.assert_allclose(run_layer_test(L.GlobalAveragePooling3D, {}, x3),
                               x3.mean((1, 2, 3)), rtol=1e-6)
    np.testing.assert_array_equal(run_layer_test(L.GlobalMaxPooling3D, {}, x3),
                                  x3.max((1, 2, 3)))
    mask = np.array([[1, 1, 0, 1, 0], [0, 0, 0, 0, 1]], bool)
    x[0, 2] = np.nan  # masked steps do not reach the mean, even as NaN
    got = L.GlobalAveragePooling1D()(x, mask=mask).numpy()
    np.testing.assert_allclose(got[0], x[0, [0, 1, 3]].mean(0), rtol=1e-6)
    np.testing.assert_allclose(got[1], x[1, 4], rtol=1e-6)
    with pytest.raises(ValueError, match=r"mask must have shape \(batch, steps\) = \(2, 5\)"):
        L.GlobalAveragePooling1D()(x, mask=mask[:, :3])


def test_upsampling_padding_and_cropping():
    x = _x(2, 3, 4, 2)
    np.testing.assert_array_equal(run_layer_test(L.UpSampling1D, {"size": 3}, x[:, 0]),
                                  np.repeat(x[:, 0], 3, axis=1))
    np.testing.assert_array_equal(run_layer_test(L.UpSampling2D, {"size": (2, 3)}, x),
                                  np.repeat(np.repeat(x, 2, 1), 3, 2))
    x5 = _x(1, 2, 2, 3, 1)
    np.testing.assert_array_equal(run_layer_test(L.UpSampling3D, {"size": (1, 2, 3)}, x5),
                                  np.repeat(np.repeat(x5, 2, 2), 3, 3))
    # bilinear x2 of [a, b]: [a, .75a + .25b, .25a + .75b, b] (half-pixel centres, clamped)
    row = np.array([[[[1.0], [5.0]]]], np.float32)
    np.testing.assert_allclose(L.UpSampling2D((1, 2), interpolation="bilinear")(row).numpy()
                               .ravel(), [1, 2, 4, 5])
    np.testing.assert_array_equal(run_layer_test(L.ZeroPadding1D, {"padding": (1, 2)}, x[:, 0]),
                                  np.pad(x[:, 0], ((0, 0), (1, 2), (0, 0))))
    np.testing.assert_array_equal(run_layer_test(L.ZeroPadding2D, {"padding": (1, 2)}, x),
                                  np.pad(x, ((0, 0), (1, 1), (2, 2), (0, 0))))
    np.testing.assert_array_equal(run_layer_test(L.ZeroPadding3D, {"padding": 1}, x5),
                                  np.pad(x5, ((0, 0), (1, 1), (1, 1), (1, 1), (0, 0))))
    np.testing.assert_array_equal(run_layer_test(L.Cropping1D, {"cropping": (1, 0)}, x[:, 0]),
                                  x[:, 0, 1:])
    np.testing.assert_array_equal(
        run_layer_test(L.Cropping2D, {"cropping": ((1, 0), (1, 2))}, x), x[:, 1:, 1:2])
    x6 = _x(1, 3, 4, 5, 1)
    np.testing.assert_array_equal(run_layer_test(L.Cropping3D, {}, x6), x6[:, 1:2, 1:3, 1:4])
    assert L.Cropping1D().get_config()["cropping"] == (1, 1)
    assert "data_format" not in L.Cropping1D().get_config()
    assert L.ZeroPadding2D(2).get_config()["padding"] == ((2, 2), (2, 2))


@pytest.mark.parametrize("call,err,match", [
    (lambda: L.Conv1D(2, 3, padding="full"), ValueError, r"Conv1D: `padding` must be one of"),
    (lambda: L.Conv2D(2, 3, padding="causal"), ValueError, r"'valid', 'same'\)"),
    (lambda: L.Conv3D(3, 2, groups=2), ValueError, r"filters must be evenly divisible"),
    (lambda: L.Conv1D(2, (3, 3)), ValueError, r"`kernel_size` must be a positive int or a "
                                              r"tuple of 1"),
    (lambda: L.Conv1DTranspose(2, 3, strides=2, output_padding=2), ValueError,
     r"output_padding.*strictly less"),
    (lambda: L.Conv3D(2, 2)(_x(1, 4, 4, 2)), ValueError, r"ndim=5.*ndim=4"),
    (lambda: L.MaxPooling1D(pool_size=0), ValueError, r"`pool_size` must be a positive int"),
    (lambda: L.UpSampling1D(2.0), TypeError, r"UpSampling1D: `size` must be an int"),
    (lambda: L.UpSampling2D(interpolation="bicubic"), ValueError, r"`interpolation` must be"),
    (lambda: L.ZeroPadding2D((1, 2, 3)), ValueError, r"`padding` must be an int, 2 ints"),
    (lambda: L.Cropping2D(-1), ValueError, r"`cropping` cannot be negative"),
    (lambda: L.Cropping1D((2, 2))(_x(1, 4, 1)), ValueError,
     r"`cropping` \(\(2, 2\),\) must leave at least one element"),
])
def test_bad_arguments_raise_clear_errors(call, err, match):
    with pytest.raises(err, match=match):
        call()


def test_aliases():
    assert L.MaxPool1D is L.MaxPooling1D and L.AvgPool3D is L.AveragePooling3D
    assert L.GlobalAvgPool1D is L.GlobalAveragePooling1D
    assert L.GlobalMaxPool3D is L.GlobalMaxPooling3D
    assert L.Convolution3D is L.Conv3D and L.SeparableConvolution2D is L.SeparableConv2D


def test_layers_inside_function_match_eager():
    layers = [L.Conv1D(4, 3, padding="causal", groups=2), L.MaxPooling1D(2, padding="same"),
              L.UpSampling1D(2), L.Conv1DTranspose(2, 3, strides=2), L.Cropping1D(1),
              L.GlobalAveragePooling1D()]

    run = loss_and_grads_fn(layers)
    compiled = lk.function(run)
    for seed in range(2):
        x = lk.constant(_x(2, 7, 4, seed=seed))
        for got, want in zip(compiled(x), run(x)):
            np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-4, atol=1e-5)


def test_model_fit_learns_with_3d_and_separable_layers():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(32, 4, 4, 4, 1)).astype(np.float32)
    y = x.mean(axis=(1, 2, 3))
    model = lk.Sequential([lk.Input((4, 4, 4, 1)), L.Conv3D(4, 2, padding="same"),
                           L.AveragePooling3D(2), L.Reshape((8, 4)),
                           L.SeparableConv1D(4, 2, padding="same"),
                           L.GlobalMaxPooling1D(), L.Dense(1)])
    model.compile(optimizer=lk.optimizers.Adam(0.01), loss="mse")
    hist = model.fit(x, y, epochs=15, batch_size=8, verbose=0).history["loss"]
    assert hist[-1] < 0.5 * hist[0]
