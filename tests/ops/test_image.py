"""The resize and affine_transform records (ops/image.py) against per-pixel NumPy
references and hand-derived values (gradients: tests/ops/rows_conv_nd.py)."""
import math

import numpy as np
import pytest

import layerkit as lk
from layerkit.primitives import image as I

_rng = np.random.default_rng(3)


def ref_resize_axis(x, axis, out, method, antialias=False):
    """One axis, one output sample at a time: half-pixel centres; bilinear is a triangle
    kernel (widened by in/out when antialiasing a downsample) normalised over the
    in-range samples; nearest takes floor((o + 0.5) * in / out)."""
    n = x.shape[axis]
    xs = np.moveaxis(x, axis, 0)
    y = np.zeros((out,) + xs.shape[1:])
    for o in range(out):
        if method == "nearest":
            y[o] = xs[min(math.floor((o + 0.5) * n / out), n - 1)]
            continue
        width = max(n / out, 1.0) if antialias else 1.0
        s = (o + 0.5) * n / out - 0.5
        w = np.array([max(0.0, 1 - abs(s - i) / width) for i in range(n)])
        y[o] = np.tensordot(w / w.sum(), xs, axes=1)
    return np.moveaxis(y, 0, axis)


@pytest.mark.parametrize("size,method,antialias", [
    ((9, 11), "bilinear", False), ((2, 3), "bilinear", False), ((3, 2), "bilinear", True),
    ((7, 4), "bilinear", True), ((9, 3), "nearest", False), ((4, 5), "bilinear", False),
])
def test_resize_matches_reference(size, method, antialias):
    x = _rng.standard_normal((2, 4, 5, 3))
    want = ref_resize_axis(ref_resize_axis(x, 1, size[0], method, antialias), 2, size[1],
                           method, antialias)
    got = I.resize(x, size, method, antialias).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_resize_hand_values():
    x = np.array([0.0, 1.0], np.float32).reshape(1, 1, 2, 1)
    up = I.resize(x, (1, 4), "bilinear").numpy().ravel()
    np.testing.assert_allclose(up, [0, 0.25, 0.75, 1], rtol=0, atol=1e-7)  # edges clamp
    x = np.arange(4.0, dtype=np.float32).reshape(1, 1, 4, 1)
    np.testing.assert_array_equal(I.resize(x, (1, 2), "bilinear").numpy().ravel(), [0.5, 2.5])
    np.testing.assert_array_equal(I.resize(x, (1, 3), "nearest").numpy().ravel(), [0, 2, 3])
    assert I.resize(x, (1, 3), "nearest").dtype == np.float32


def test_resize_gradient_is_the_transpose():
    # <resize(x), g> == <x, resize_backprop(g)> for every method
    for method, aa in (("bilinear", False), ("bilinear", True), ("nearest", False)):
        x = _rng.standard_normal((2, 5, 7, 2))
        g = _rng.standard_normal((2, 3, 11, 2))
        xt = lk.constant(x)
        with lk.GradientTape() as tape:
            tape.watch(xt)
            y = I.resize(xt, (3, 11), method, aa)
        dx = tape.gradient(y, xt, output_gradients=lk.constant(g)).numpy()
        np.testing.assert_allclose((y.numpy() * g).sum(), (x * dx).sum(), rtol=1e-12)


def _fix(i, n, mode):
    """Fill-mode index maps written out case by case."""
    if mode in ("constant", "nearest"):
        return min(max(i, 0), n - 1)
    if mode == "wrap":
        return i % n
    period = 2 * n if mode == "reflect" else 2 * (n - 1)
    i %= period
    if mode == "reflect":
        return i if i < n else period - 1 - i
    return i if i < n else period - i


def ref_affine(x, t, interpolation, fill_mode, fill_value):
    b, h, w, c = x.shape
    y = np.zeros_like(x)
    for n in range(b):
        a0, a1, a2, b0, b1, b2 = t[n, :6]
        for r in range(h):
            for q in range(w):
                cy, cx = b0 * q + b1 * r + b2, a0 * q + a1 * r + a2
                if interpolation == "nearest":
                    taps = [(int(np.rint(cy)), int(np.rint(cx)), 1.0)]
                else:
                    fy, fx = math.floor(cy), math.floor(cx)
                    ty, tx = cy - fy, cx - fx
                    taps = [(fy + dy, fx + dx, (ty if dy else 1 - ty) * (tx if dx else 1 - tx))
                            for dy in (0, 1) for dx in (0, 1)]
                for iy, ix, wt in taps:
                    if fill_mode == "constant" and not (0 <= iy < h and 0 <= ix < w):
                        y[n, r, q] += wt * fill_value
                    else:
                        y[n, r, q] += wt * x[n, _fix(iy, h, fill_mode), _fix(ix, w, fill_mode)]
    return y


_T = np.array([[0.9, -0.3, 1.2, 0.4, 1.1, -0.7, 0, 0], [1.3, 0.2, -2.5, -0.1, 0.8, 3.1, 0, 0]])


@pytest.mark.parametrize("interpolation", ["bilinear", "nearest"])
@pytest.mark.parametrize("fill_mode", ["constant", "nearest", "wrap", "reflect", "mirror"])
def test_affine_transform_matches_reference(interpolation, fill_mode):
    x = _rng.standard_normal((2, 4, 5, 2))
    got = I.affine_transform(x, _T, interpolation, fill_mode, 0.5).numpy()
    np.testing.assert_allclose(got, ref_affine(x, _T, interpolation, fill_mode, 0.5),
                               rtol=1e-12, atol=1e-12)


def test_affine_transform_hand_values():
    x = np.arange(4.0).reshape(1, 1, 4, 1)
    shift = [1, 0, -1.5, 0, 1, 0, 0, 0]  # output column q reads input column q - 1.5
    got = I.affine_transform(x, shift, "bilinear", "constant", 10.0).numpy().ravel()
    np.testing.assert_allclose(got, [10, 5, 0.5, 1.5])  # -1.5 reads fill only
    got = I.affine_transform(x, shift, "bilinear", "reflect").numpy().ravel()
    np.testing.assert_allclose(got, [0.5, 0, 0.5, 1.5])  # dcba|abcd: -2 -> 1, -1 -> 0


def test_affine_transform_gradient_is_the_transpose_and_skips_the_fill():
    x = _rng.standard_normal((2, 4, 5, 2))
    g = _rng.standard_normal((2, 4, 5, 2))
    xt = lk.constant(x)
    with lk.GradientTape() as tape:
        tape.watch(xt)
        y = I.affine_transform(xt, _T, "bilinear", "constant", 3.0)
    dx = tape.gradient(y, xt, output_gradients=lk.constant(g)).numpy()
    linear = I.affine_transform(x, _T, "bilinear", "constant", 0.0).numpy()
    np.testing.assert_allclose((linear * g).sum(), (x * dx).sum(), rtol=1e-12)


def test_image_ops_check_their_arguments():
    x = np.zeros((1, 4, 4, 1), np.float32)
    with pytest.raises(ValueError, match="resize: method must be one of"):
        I.resize(x, (2, 2), "bicubic")
    with pytest.raises(ValueError, match="resize: needs a float tensor"):
        I.resize(x.astype(np.uint8), (2, 2))
    with pytest.raises(ValueError, match=r"resize: size must give one positive int"):
        I.resize(x, (2,))
    with pytest.raises(ValueError, match="affine_transform: fill_mode must be one of"):
        I.affine_transform(x, [1, 0, 0, 0, 1, 0, 0, 0], fill_mode="edge")
    with pytest.raises(ValueError, match=r"transforms must have shape \(1, 8\)"):
        I.affine_transform(x, np.zeros((2, 8)))
    with pytest.raises(ValueError, match="projective transforms"):
        I.affine_transform(x, [1, 0, 0, 0, 1, 0, 0.1, 0])
