"""lk.nn conv1d/conv3d/convolution/conv*_transpose/separable_conv2d and the 1-3D pools
against naive NumPy loops (gradients: tests/ops/rows_conv_nd.py)."""
import itertools

import numpy as np
import pytest

import layerkit as lk
from layerkit.primitives import conv_nd as N

_rng = np.random.default_rng(5)


def _r(*shape):
    return _rng.standard_normal(shape)


def _same(n, k, s, d=1):
    out = -(-n // s)
    total = max((out - 1) * s + (k - 1) * d + 1 - n, 0)
    return total // 2, total - total // 2


def ref_conv(x, w, strides, pads, dil):
    """Grouped cross-correlation, channels last, one output position at a time."""
    r = x.ndim - 2
    xp = np.pad(x, ((0, 0), *pads, (0, 0)))
    ks, cg, f = w.shape[:r], w.shape[-2], w.shape[-1]
    groups = x.shape[-1] // cg
    fg = f // groups
    out = [(xp.shape[1 + i] - (ks[i] - 1) * dil[i] - 1) // strides[i] + 1 for i in range(r)]
    y = np.zeros((x.shape[0], *out, f))
    for o in itertools.product(*map(range, out)):
        for k in itertools.product(*map(range, ks)):
            v = xp[(slice(None), *(o[i] * strides[i] + k[i] * dil[i] for i in range(r)))]
            for g in range(groups):
                y[(slice(None), *o, slice(g * fg, (g + 1) * fg))] += \
                    v[:, g * cg:(g + 1) * cg] @ w[k][:, g * fg:(g + 1) * fg]
    return y


def ref_pool(x, ks, strides, padding, kind):
    """TF pooling: padding never wins a max and is not counted in a mean."""
    r = x.ndim - 2
    pads = [_same(x.shape[1 + i], ks[i], strides[i]) if padding == "SAME" else (0, 0)
            for i in range(r)]
    fill = -np.inf if kind == "max" else np.nan
    xp = np.pad(x, ((0, 0), *pads, (0, 0)), constant_values=fill)
    out = [(xp.shape[1 + i] - ks[i]) // strides[i] + 1 for i in range(r)]
    y = np.zeros((x.shape[0], *out, x.shape[-1]))
    for o in itertools.product(*map(range, out)):
        win = xp[(slice(None), *(slice(o[i] * strides[i], o[i] * strides[i] + ks[i])
                                 for i in range(r)))]
        win = win.reshape(x.shape[0], -1, x.shape[-1])
        y[(slice(None), *o)] = win.max(1) if kind == "max" else np.nanmean(win, 1)
    return y


@pytest.mark.parametrize("shape,kshape,strides,padding,dil", [
    ((2, 7, 3), (3, 3, 4), 1, "SAME", 1),
    ((2, 9, 4), (4, 2, 6), 2, "VALID", 1),          # 2 groups of 2 channels
    ((2, 8, 3), (2, 1, 6), 1, "SAME", 3),           # one channel per group (depthwise-like)
    ((1, 5, 6, 4), (3, 2, 2, 6), 2, "SAME", 1),     # grouped 2-D
    ((1, 6, 6, 3), (2, 2, 1, 3), 1, "VALID", 2),    # depthwise-like 2-D, dilated
    ((2, 4, 5, 6, 2), (2, 3, 2, 2, 3), (1, 2, 1), "SAME", 1),
    ((1, 5, 5, 5, 4), (2, 2, 2, 2, 4), 1, "VALID", 2),  # grouped, dilated 3-D
])
def test_convolution_matches_naive(shape, kshape, strides, padding, dil):
    x, w = _r(*shape), _r(*kshape)
    r = len(shape) - 2
    s = (strides,) * r if isinstance(strides, int) else strides
    pads = [_same(n, k, st, dil) if padding == "SAME" else (0, 0)
            for n, k, st in zip(shape[1:-1], kshape[:r], s)]
    want = ref_conv(x, w, s, pads, (dil,) * r)
    np.testing.assert_allclose(lk.nn.convolution(x, w, strides, padding, dilations=dil).numpy(),
                               want, rtol=1e-10, atol=1e-10)
    fn = {1: lk.nn.conv1d, 3: lk.nn.conv3d}.get(r)
    if fn is not None:
        np.testing.assert_allclose(fn(x, w, strides, padding, dilations=dil).numpy(), want,
                                   rtol=1e-10, atol=1e-10)


def test_explicit_padding_and_tf_argument_forms():
    x, w = _r(1, 5, 4, 3, 2), _r(2, 2, 2, 2, 3)
    y = lk.nn.conv3d(x, w, [1, 1, 2, 1, 1], [[0, 0], [1, 0], [0, 2], [1, 1], [0, 0]])
    want = ref_conv(x, w, (1, 2, 1), [(1, 0), (0, 2), (1, 1)], (1, 1, 1))
    np.testing.assert_allclose(y.numpy(), want, rtol=1e-10)
    x1, w1 = _r(2, 6, 2), _r(3, 2, 2)
    np.testing.assert_allclose(lk.nn.conv1d(x1, w1, [1, 2, 1], "VALID").numpy(),
                               ref_conv(x1, w1, (2,), [(0, 0)], (1,)), rtol=1e-10)


@pytest.mark.parametrize("fn,shape,kshape,out_shape,strides,padding", [
    (lk.nn.conv1d_transpose, (2, 3, 4), (3, 2, 4), (2, 6, 2), 2, "SAME"),
    (lk.nn.conv1d_transpose, (2, 3, 4), (3, 2, 4), (2, 7, 2), 2, "VALID"),
    (lk.nn.conv3d_transpose, (1, 2, 3, 2, 3), (2, 3, 2, 2, 3), (1, 4, 5, 4, 2), 2, "SAME"),
    (lk.nn.conv_transpose, (1, 3, 3, 2), (3, 3, 1, 2), (1, 5, 6, 1), 2, "SAME"),
])
def test_conv_transpose_is_the_adjoint_of_convolution(fn, shape, kshape, out_shape, strides,
                                                      padding):
    # <conv_transpose(x), u> == <x, conv(u)> with the same (*K, out, in) kernel
    x, w = _r(*shape), _r(*kshape)
    y = fn(x, w, out_shape, strides, padding).numpy()
    assert y.shape == out_shape
    u = _r(*out_shape)
    np.testing.assert_allclose((y * u).sum(), (x * lk.nn.convolution(u, w, strides, padding)
                                                .numpy()).sum(), rtol=1e-10)


def test_separable_conv2d_is_depthwise_then_pointwise():
    x, d, p = _r(2, 6, 5, 3), _r(3, 3, 3, 2), _r(1, 1, 6, 4)
    y = lk.nn.separable_conv2d(x, d, p, [1, 2, 2, 1], "SAME").numpy()
    pads = [_same(6, 3, 2), _same(5, 3, 2)]
    dw = np.concatenate([ref_conv(x[..., c:c + 1], d[:, :, c:c + 1], (2, 2), pads, (1, 1))
                         for c in range(3)], axis=-1)
    np.testing.assert_allclose(y, dw @ p[0, 0], rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("fn,kind,shape,ks,strides,padding", [
    (lk.nn.max_pool1d, "max", (2, 7, 3), 3, 2, "SAME"),
    (lk.nn.avg_pool1d, "avg", (2, 7, 3), 3, 2, "SAME"),
    (lk.nn.avg_pool1d, "avg", (2, 8, 2), 2, 1, "VALID"),
    (lk.nn.max_pool3d, "max", (2, 3, 5, 4, 2), (2, 3, 2), (1, 2, 2), "SAME"),
    (lk.nn.avg_pool3d, "avg", (2, 3, 5, 4, 2), (2, 3, 2), (1, 2, 2), "SAME"),
    (lk.nn.avg_pool3d, "avg", (1, 4, 4, 6, 1), 2, 2, "VALID"),
])
def test_pools_match_naive(fn, kind, shape, ks, strides, padding):
    x = _r(*shape)
    r = len(shape) - 2
    ks_t = (ks,) * r if isinstance(ks, int) else ks
    st_t = (strides,) * r if isinstance(strides, int) else strides
    np.testing.assert_allclose(fn(x, ks, strides, padding).numpy(),
                               ref_pool(x, ks_t, st_t, padding, kind), rtol=1e-12)
    generic = lk.nn.max_pool if kind == "max" else lk.nn.avg_pool
    np.testing.assert_allclose(generic(x, ks, strides, padding).numpy(),
                               fn(x, ks, strides, padding).numpy(), rtol=1e-12)
    np.testing.assert_allclose(
        lk.nn.pool(x, ks_t, kind.upper(), strides=strides, padding=padding).numpy(),
        fn(x, ks, strides, padding).numpy(), rtol=1e-12)


def test_max_pool3d_gradient_goes_to_the_first_maximum():
    x = np.zeros((1, 2, 2, 2, 1))  # one window, all tied
    xt = lk.constant(x)
    with lk.GradientTape() as tape:
        tape.watch(xt)
        y = lk.nn.max_pool3d(xt, 2, 2, "VALID")
    g = tape.gradient(y, xt).numpy().ravel()
    np.testing.assert_array_equal(g, [1, 0, 0, 0, 0, 0, 0, 0])


def test_float32_stays_float32():
    x, w = _r(1, 5, 4, 4).astype(np.float32), _r(2, 2, 2, 4).astype(np.float32)
    assert lk.nn.convolution(x, w, 1, "SAME").dtype == np.float32
    assert lk.nn.avg_pool3d(_r(1, 2, 2, 2, 1).astype(np.float32), 2, 2, "VALID").dtype == \
        np.float32


@pytest.mark.parametrize("call,match", [
    (lambda: lk.nn.conv1d(_r(2, 5, 3), _r(2, 2, 4), 1, "SAME"),
     r"conv1d: input has 3 channels .* take 2 per group"),
    (lambda: lk.nn.conv1d(_r(2, 5, 4), _r(2, 2, 3), 1, "SAME"),
     r"conv1d: .*3 filters a multiple of the number of groups"),
    (lambda: lk.nn.conv3d(_r(2, 5, 3), _r(2, 3, 4), 1, "SAME"),
     r"conv3d: input must be rank 5 .*received shape \(2, 5, 3\)"),
    (lambda: lk.nn.conv1d(_r(2, 5, 3), _r(2, 3, 4), 1, "SAME", data_format="NCW"),
     r"conv1d: only data_format='NWC'.*transpose NCW"),
    (lambda: lk.nn.conv1d(_r(2, 5, 3), _r(2, 3, 4), 1, "FULL"),
     r"conv1d: padding must be 'SAME', 'VALID' or 3 \[before, after\] pairs"),
    (lambda: lk.nn.conv1d(_r(2, 2, 3), _r(3, 3, 4), 1, "VALID"),
     r"conv1d: the window \(effective size \(3,\)\) does not fit"),
    (lambda: lk.nn.conv3d(_r(1, 4, 4, 4, 1), _r(2, 2, 2, 1, 1), [2, 1, 1, 1, 1], "SAME"),
     r"conv3d: strides along the batch and channel axes must be 1"),
    (lambda: lk.nn.max_pool1d(_r(1, 4, 1), 2, 0, "VALID"), r"max_pool1d: strides must be >= 1"),
    (lambda: lk.nn.avg_pool1d(np.ones((1, 4, 1), np.int32), 2, 2, "VALID"),
     r"avg_pool1d: needs a float tensor"),
    (lambda: lk.nn.max_pool1d(_r(1, 4, 1), 2, 2, [[0, 0], [2, 0], [0, 0]]),
     r"max_pool1d: explicit padding must be smaller than the window"),
    (lambda: lk.nn.pool(_r(1, 4, 1), 2, "MIN"), r"pool: pooling_type must be 'MAX' or 'AVG'"),
    (lambda: lk.nn.pool(_r(1, 4, 1), 2, "MAX", dilations=2), r"pool: only dilations of 1"),
    (lambda: lk.nn.conv1d_transpose(_r(2, 3, 4), _r(3, 2, 4), (2, 9, 2), 2, "SAME"),
     r"conv1d_transpose: output_shape \(2, 9, 2\) is inconsistent with input shape"),
    (lambda: lk.nn.separable_conv2d(_r(1, 4, 4, 2), _r(3, 3, 2, 1), _r(1, 1, 3, 2), 1, "SAME"),
     r"separable_conv2d: pointwise_filter must be \(1, 1, 2, C_out\)"),
])
def test_bad_arguments_name_the_op_and_the_values(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_convolution_runs_inside_function_and_matches_eager():
    f = lk.function(lambda x, w: lk.nn.conv3d(x, w, 1, "SAME") + lk.nn.max_pool1d(
        lk.reshape(x, (1, -1, 2)), 1, 1, "VALID")[:, :1, :1])
    x, w = _r(1, 3, 3, 3, 2), _r(2, 2, 2, 2, 2)
    for _ in range(2):
        np.testing.assert_allclose(f(x, w).numpy(), N.conv3d(x, w, 1, "SAME").numpy() +
                                   x.reshape(1, -1, 2)[:, :1, :1], rtol=1e-12)
        x = _r(1, 3, 3, 3, 2)
