"""keras.ops.image: the cheap, differentiable subset (colour conversions, padding and
cropping, patch extraction, Gaussian blur, resizing). Images are ``(H, W, C)`` or
``(N, H, W, C)`` (``data_format="channels_first"`` for ``(..., C, H, W)``)."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

import layerkit as lk
from layerkit._core.tensor import Tensor
from layerkit._core.types import TensorLike
from layerkit.keras_ops import _prims as P
from layerkit.keras_ops._prims import floating, t

__all__ = ["rgb_to_grayscale", "rgb_to_hsv", "hsv_to_rgb", "pad_images", "crop_images",
           "extract_patches", "gaussian_blur", "resize", "map_coordinates",
           "affine_transform", "perspective_transform", "sobel_edges", "ssim",
           "extract_patches_3d", "elastic_transform", "scale_and_translate"]


def _nhwc(images, data_format, who, spatial: int = 2):
    """Batched channels-last images, plus what ``_back`` needs to undo the layout."""
    x = t(images)
    if x.ndim not in (spatial + 1, spatial + 2):
        raise ValueError(f"keras_ops.image.{who}: inputs must be rank {spatial + 1} or "
                         f"{spatial + 2}, received shape {x.shape}")
    single = x.ndim == spatial + 1
    if single:
        x = lk.expand_dims(x, 0)
    cf = data_format == "channels_first"
    if data_format not in (None, "channels_last", "channels_first"):
        raise ValueError(f"keras_ops.image.{who}: data_format must be 'channels_last' or "
                         f"'channels_first', received {data_format!r}")
    if cf:
        x = lk.transpose(x, [0, *range(2, x.ndim), 1])
    return x, single, cf


def _back(x, single, cf):
    if cf:
        x = lk.transpose(x, [0, x.ndim - 1, *range(1, x.ndim - 1)])
    return lk.squeeze(x, [0]) if single else x


def rgb_to_grayscale(images: TensorLike, data_format: str | None = None) -> Tensor:
    """Luma ``0.2989 R + 0.587 G + 0.114 B`` with one channel kept (dtype kept)."""
    x, single, cf = _nhwc(images, data_format, "rgb_to_grayscale")
    c = x.shape[-1]
    if c == 1:
        return _back(x, single, cf)
    if c != 3:
        raise ValueError(f"keras_ops.image.rgb_to_grayscale: expected 1 or 3 channels, "
                         f"received {c}")
    f = floating(x)
    w = lk.constant(np.array([0.2989, 0.587, 0.114], f.dtype))
    g = lk.reduce_sum(f * w, axis=-1, keepdims=True)
    return _back(lk.cast(g, x.dtype), single, cf)


def rgb_to_hsv(images: TensorLike, data_format: str | None = None) -> Tensor:
    """RGB in [0, 1] to HSV (hue in [0, 1)); float images only."""
    x, single, cf = _nhwc(images, data_format, "rgb_to_hsv")
    if x.dtype.kind != "f":
        raise ValueError(f"keras_ops.image.rgb_to_hsv: images must be float, received "
                         f"{x.dtype}")
    eps = float(np.finfo(x.dtype).eps)
    x = lk.where(lk.abs(x) < eps, lk.zeros_like(x), x)
    r, g, b = lk.unstack(x, axis=-1)
    v = lk.maximum(lk.maximum(r, g), b)
    mn = lk.minimum(lk.minimum(r, g), b)
    rng = v - mn
    safe_v = lk.where(v > 0, v, lk.ones_like(v))
    safe_r = lk.where(rng > 0, rng, lk.ones_like(rng))
    s = lk.where(v > 0, rng / safe_v, lk.zeros_like(v))
    norm = 1.0 / (6.0 * safe_r)
    h = lk.where(lk.equal(v, g), norm * (b - r) + 2.0 / 6.0, norm * (r - g) + 4.0 / 6.0)
    h = lk.where(lk.equal(v, r), norm * (g - b), h)
    h = lk.where(rng > 0, h, lk.zeros_like(h)) + lk.cast(h < 0.0, h.dtype)
    return _back(lk.stack([h, s, v], -1), single, cf)


def hsv_to_rgb(images: TensorLike, data_format: str | None = None) -> Tensor:
    """HSV (hue in [0, 1]) to RGB; float images only."""
    x, single, cf = _nhwc(images, data_format, "hsv_to_rgb")
    if x.dtype.kind != "f":
        raise ValueError(f"keras_ops.image.hsv_to_rgb: images must be float, received "
                         f"{x.dtype}")
    h, s, v = lk.unstack(x, axis=-1)
    dh = lk.mod(h, 1.0) * 6.0
    r = lk.clip_by_value(lk.abs(dh - 3.0) - 1.0, 0.0, 1.0)
    g = lk.clip_by_value(2.0 - lk.abs(dh - 2.0), 0.0, 1.0)
    b = lk.clip_by_value(2.0 - lk.abs(dh - 4.0), 0.0, 1.0)
    out = [v * (1.0 - s + s * c) for c in (r, g, b)]
    return _back(lk.stack(out, -1), single, cf)


def _amounts(before, after, target, size, who, what):
    if before is None and after is None:
        raise ValueError(f"keras_ops.image.{who}: pass {what} amounts or a target size")
    if target is not None:
        if before is None:
            before = size - target - after if what == "cropping" else target - size - after
        elif after is None:
            after = size - target - before if what == "cropping" else target - size - before
    before, after = int(before or 0), int(after or 0)
    if before < 0 or after < 0:
        raise ValueError(f"keras_ops.image.{who}: {what} must be non-negative, received "
                         f"{before} and {after}")
    return before, after


def _sides(images, data_format, who, what, top, left, bottom, right, height, width):
    x, single, cf = _nhwc(images, data_format, who)
    h, w = x.shape[1:3]
    top, bottom = _amounts(top, bottom, height, h, who, what)
    left, right = _amounts(left, right, width, w, who, what)
    return x, (single, cf), (top, bottom, left, right)


def pad_images(images: TensorLike, top_padding: Any = None, left_padding: Any = None,
               bottom_padding: Any = None, right_padding: Any = None, target_height: Any = None,
               target_width: Any = None, data_format: str | None = None) -> Tensor:
    """Zero-pad images; each side's amount is given or derived from the target size."""
    x, back, (top, bottom, left, right) = _sides(
        images, data_format, "pad_images", "padding", top_padding, left_padding,
        bottom_padding, right_padding, target_height, target_width)
    return _back(lk.pad(x, [[0, 0], [top, bottom], [left, right], [0, 0]]), *back)


def crop_images(images: TensorLike, top_cropping: Any = None, left_cropping: Any = None,
                bottom_cropping: Any = None, right_cropping: Any = None, target_height: Any = None,
                target_width: Any = None, data_format: str | None = None) -> Tensor:
    """Crop images; each side's amount is given or derived from the target size."""
    x, back, (top, bottom, left, right) = _sides(
        images, data_format, "crop_images", "cropping", top_cropping, left_cropping,
        bottom_cropping, right_cropping, target_height, target_width)
    h, w = x.shape[1:3]
    if top + bottom > h or left + right > w:
        raise ValueError(f"keras_ops.image.crop_images: cropping exceeds the image size "
                         f"({h}, {w})")
    out = lk.slice(x, [0, top, left, 0], [-1, h - top - bottom, w - left - right, -1])
    return _back(out, *back)


def _starts(n, k, s, d, padding):
    span = (k - 1) * d + 1
    if padding == "valid":
        out = (n - span) // s + 1 if n >= span else 0
        return out, 0, 0
    out = -(-n // s)
    total = max((out - 1) * s + span - n, 0)
    return out, total // 2, total - total // 2


def extract_patches(images: TensorLike, size: Any, strides: int | Sequence[int] | None = None,
                    dilation_rate: int | Sequence[int] = 1, padding: str = "valid",
                    data_format: str | None = None) -> Tensor:
    """Patches of ``size`` as the last axis: ``(N, out_h, out_w, kh * kw * C)``, each
    patch row-major then channels (TensorFlow's ``extract_patches`` layout)."""
    x, single, cf = _nhwc(images, data_format, "extract_patches")
    kh, kw = (size, size) if isinstance(size, int) else tuple(size)
    sh, sw = (kh, kw) if strides is None else (
        (strides, strides) if isinstance(strides, int) else tuple(strides))
    dh, dw = (dilation_rate, dilation_rate) if isinstance(dilation_rate, int) else tuple(
        dilation_rate)
    padding = str(padding).lower()
    if padding not in ("valid", "same"):
        raise ValueError(f"keras_ops.image.extract_patches: padding must be 'valid' or "
                         f"'same', received {padding!r}")
    n, h, w, c = x.shape
    oh, pt, pb = _starts(h, kh, sh, dh, padding)
    ow, pl, pr = _starts(w, kw, sw, dw, padding)
    x = lk.pad(x, [[0, 0], [pt, pb], [pl, pr], [0, 0]])
    ih = (np.arange(oh)[:, None] * sh + np.arange(kh)[None, :] * dh).reshape(-1)
    iw = (np.arange(ow)[:, None] * sw + np.arange(kw)[None, :] * dw).reshape(-1)
    y = lk.gather(x, lk.constant(ih.astype(np.int64)), axis=1)
    y = lk.gather(y, lk.constant(iw.astype(np.int64)), axis=2)
    y = lk.reshape(y, [n, oh, kh, ow, kw, c])
    y = lk.reshape(lk.transpose(y, [0, 1, 3, 2, 4, 5]), [n, oh, ow, kh * kw * c])
    return _back(y, single, cf)


def _gauss1d(n: int, sigma: float) -> np.ndarray:
    v = np.exp(-0.5 * ((np.arange(n) - (n - 1) / 2.0) / sigma) ** 2)
    return v / v.sum()


def gaussian_blur(images: TensorLike, kernel_size: int | Sequence[int] = (3, 3),
                  sigma: Any = (1.0, 1.0), data_format: str | None = None) -> Tensor:
    """Per-channel Gaussian blur with zero padding of ``kernel_size // 2``."""
    x, single, cf = _nhwc(images, data_format, "gaussian_blur")
    x = floating(x)
    kh, kw = (int(kernel_size),) * 2 if isinstance(kernel_size, int) else map(int, kernel_size)
    sy, sx = (float(sigma),) * 2 if isinstance(sigma, (int, float)) else map(float, sigma)

    k2 = np.outer(_gauss1d(kh, sy), _gauss1d(kw, sx)).astype(x.dtype)
    c = x.shape[-1]
    kern = lk.constant(np.broadcast_to(k2[:, :, None, None], (kh, kw, c, 1)).copy())
    p = kh // 2
    xp = lk.pad(x, [[0, 0], [p, p], [p, p], [0, 0]])
    out = lk.nn.depthwise_conv2d(xp, kern, [1, 1, 1, 1], "VALID")
    return _back(out, single, cf)


def _cubic(d: np.ndarray, a: float = -0.75) -> np.ndarray:
    d = np.abs(d)
    return np.where(d <= 1, ((a + 2) * d - (a + 3)) * d * d + 1,
                    np.where(d < 2, (((d - 5) * d + 8) * d - 4) * a, 0.0))


def _taps(n_in: int, n_out: int, method: str, antialias: bool) -> np.ndarray:
    """The ``(n_out, n_in)`` interpolation matrix of one axis (half-pixel centres, as
    PyTorch's ``interpolate``, which Keras's reference backend uses)."""
    scale = n_in / n_out
    centre = (np.arange(n_out) + 0.5) * scale
    w = np.zeros((n_out, n_in))
    rows = np.arange(n_out)
    if method == "nearest":
        w[rows, np.minimum(np.floor(centre).astype(int), n_in - 1)] = 1.0
        return w
    if antialias and (scale > 1 or method == "bicubic"):
        # PyTorch's antialiased filters: a triangle, or Keys's cubic with a = -0.5,
        # stretched by the shrink factor and renormalised.
        if method == "bilinear":
            w = np.maximum(0.0, 1.0 - np.abs(
                (np.arange(n_in)[None, :] + 0.5 - centre[:, None]) / scale))
        else:
            w = _cubic((np.arange(n_in)[None, :] + 0.5 - centre[:, None]) / max(scale, 1.0),
                       -0.5)
        return w / w.sum(1, keepdims=True)
    src = centre - 0.5
    if method == "bilinear":
        src = np.maximum(src, 0.0)
        lo = np.floor(src).astype(int)
        frac = src - lo
        np.add.at(w, (rows, np.minimum(lo, n_in - 1)), 1.0 - frac)
        np.add.at(w, (rows, np.minimum(lo + 1, n_in - 1)), frac)
        return w
    lo = np.floor(src).astype(int)
    frac = src - lo
    for k in range(-1, 3):
        np.add.at(w, (rows, np.clip(lo + k, 0, n_in - 1)), _cubic(k - frac))
    return w


def resize(images: TensorLike, size: Any, interpolation: str = "bilinear", antialias: bool = False,
           crop_to_aspect_ratio: bool = False, pad_to_aspect_ratio: bool = False,
           fill_mode: str = "constant", fill_value: float = 0.0,
           data_format: str | None = None) -> Tensor:
    """Resize images to ``size = (height, width)`` ("nearest", "bilinear" or "bicubic";
    half-pixel centres; ``antialias`` widens the filter when shrinking). Optionally
    centre-crop or pad (with ``fill_value``) to the target aspect ratio first.
    Differentiable in ``images`` (a product with constant interpolation matrices)."""
    if interpolation not in ("nearest", "bilinear", "bicubic"):
        raise ValueError(f"keras_ops.image.resize: interpolation must be nearest, bilinear "
                         f"or bicubic, received {interpolation!r}")
    if crop_to_aspect_ratio and pad_to_aspect_ratio:
        raise ValueError("keras_ops.image.resize: pass only one of crop_to_aspect_ratio and "
                         "pad_to_aspect_ratio")
    if fill_mode != "constant":
        raise ValueError(f"keras_ops.image.resize: fill_mode must be 'constant', received "
                         f"{fill_mode!r}")
    x, single, cf = _nhwc(images, data_format, "resize")
    dtype = x.dtype
    x = floating(x)
    th, tw = (int(v) for v in size)
    h, w = x.shape[1:3]
    if crop_to_aspect_ratio:
        ch = max(min(h, int(w * th / tw)), 1)
        cw = max(min(w, int(h * tw / th)), 1)
        x = lk.slice(x, [0, (h - ch) // 2, (w - cw) // 2, 0], [-1, ch, cw, -1])
    elif pad_to_aspect_ratio:
        ph = max(h, int(w * th / tw))
        pw = max(w, int(h * tw / th))
        top, left = (ph - h) // 2, (pw - w) // 2
        x = lk.pad(x, [[0, 0], [top, ph - h - top], [left, pw - w - left], [0, 0]],
                   constant_values=float(fill_value))
    h, w = x.shape[1:3]
    wh = lk.constant(_taps(h, th, interpolation, antialias).astype(x.dtype))
    ww = lk.constant(_taps(w, tw, interpolation, antialias).astype(x.dtype))
    out = lk.einsum("ih,nhwc,jw->nijc", wh, x, ww)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        out = lk.cast(lk.clip_by_value(lk.round(out), float(info.min), float(info.max)), dtype)
    return _back(out, single, cf)


_FILL_MODES = ("constant", "nearest", "wrap", "mirror", "reflect")


def _fix_index(i: Tensor, n: int, mode: str) -> Tensor:
    """Integer sample positions mapped into ``[0, n)`` by ``mode`` (SciPy's rules)."""
    if mode in ("constant", "nearest"):
        return lk.clip_by_value(i, 0, n - 1)
    if mode == "wrap":
        return lk.mod(i, n)
    if mode == "mirror":
        if n == 1:
            return lk.zeros_like(i)
        p = 2 * n - 2
        j = lk.mod(lk.abs(i), p)
        return lk.where(j >= n, p - j, j)
    j = lk.mod(i, 2 * n)                                  # reflect
    return lk.where(j >= n, 2 * n - 1 - j, j)


def _sample(flat: Tensor, shape: tuple, coords: list, order: int, mode: str, fill: float):
    """Values of ``flat`` (the input flattened over ``shape``, trailing axes kept) at
    float ``coords`` (one tensor per axis of ``shape``), nearest or linear."""
    if mode not in _FILL_MODES:
        raise ValueError(f"keras_ops.image: fill_mode must be one of {_FILL_MODES}, "
                         f"received {mode!r}")
    if order not in (0, 1):
        raise ValueError(f"keras_ops.image: order/interpolation must be 0/nearest or "
                         f"1/bilinear, received {order!r}")
    corners = []
    for c in coords:
        if order == 0:
            lo = lk.round(c)                  # half to even, as Keras's backends
            corners.append([(lo, None)])
        else:
            lo = lk.floor(c)
            frac = c - lo
            corners.append([(lo, 1.0 - frac), (lo + 1.0, frac)])
    out = None
    import itertools
    for combo in itertools.product(*corners):
        idx = None
        weight = None
        inside = None
        for (pos, w), n, stride in zip(combo, shape, _strides(shape)):
            i = lk.cast(pos, np.int64)
            ok = lk.logical_and(i >= 0, i < n)
            inside = ok if inside is None else lk.logical_and(inside, ok)
            term = _fix_index(i, n, mode) * stride
            idx = term if idx is None else idx + term
            if w is not None:
                weight = w if weight is None else weight * w
        val = lk.gather(flat, idx, axis=0)
        if mode == "constant":
            val = lk.where(_expand_to(inside, val), val, lk.cast(fill, val.dtype))
        if weight is not None:
            val = val * _expand_to(weight, val)
        out = val if out is None else out + val
    return out


def _strides(shape: tuple) -> list:
    return [int(np.prod(shape[k + 1:], dtype=np.int64)) for k in range(len(shape))]


def _expand_to(m: Tensor, val: Tensor) -> Tensor:
    return lk.reshape(m, list(m.shape) + [1] * (val.ndim - m.ndim))


def map_coordinates(inputs: Any, coordinates: TensorLike, order: int, fill_mode: str = "constant",
                    fill_value: float = 0) -> Tensor:
    """Values of ``inputs`` at the float ``coordinates`` (shape ``(inputs.ndim, ...)``),
    nearest (``order=0``) or linear (``order=1``); positions outside are handled by
    ``fill_mode``. Differentiable in ``inputs`` (and in ``coordinates`` for order 1)."""
    x = floating(inputs)
    c = floating(coordinates)
    if c.ndim == 0 or c.shape[0] != x.ndim:
        raise ValueError(f"keras_ops.image.map_coordinates: coordinates need a leading "
                         f"axis of length {x.ndim}, received shape {c.shape}")
    flat = lk.reshape(x, [-1])
    coords = [lk.cast(v, x.dtype) for v in lk.unstack(c, axis=0)]
    return _sample(flat, tuple(x.shape), coords, int(order), fill_mode, float(fill_value))


def affine_transform(images: TensorLike, transform: TensorLike, interpolation: str = "bilinear",
                     fill_mode: str = "constant", fill_value: float = 0,
                     data_format: str | None = None) -> Tensor:
    """Apply projective transforms ``[a0, a1, a2, b0, b1, b2, c0, c1]`` (one, or one per
    image): the output pixel ``(x, y)`` reads the input at
    ``((a0 x + a1 y + a2) / k, (b0 x + b1 y + b2) / k)``, ``k = c0 x + c1 y + 1``
    (TensorFlow's projective rule; Keras's other backends treat ``c0``, ``c1`` as 0).
    Nearest sampling rounds half to even; ``fill_mode`` as in ``map_coordinates``."""
    x, single, cf = _nhwc(images, data_format, "affine_transform")
    x = floating(x)
    if interpolation not in ("nearest", "bilinear"):
        raise ValueError(f"keras_ops.image.affine_transform: interpolation must be "
                         f"'nearest' or 'bilinear', received {interpolation!r}")
    tr = lk.cast(floating(transform), x.dtype)
    if tr.ndim == 1:
        tr = lk.expand_dims(tr, 0)
    if tr.shape[-1] != 8:
        raise ValueError(f"keras_ops.image.affine_transform: transform must have 8 "
                         f"entries, received shape {tr.shape}")
    n, h, w, c = x.shape
    tr = lk.broadcast_to(tr, (n, 8))
    yy, xx = np.meshgrid(np.arange(h), np.arange(w), indexing="ij")
    xs, ys = lk.constant(xx.astype(x.dtype)), lk.constant(yy.astype(x.dtype))
    a = [lk.reshape(tr[:, k], [n, 1, 1]) for k in range(8)]
    k = a[6] * xs + a[7] * ys + 1.0
    src_x = (a[0] * xs + a[1] * ys + a[2]) / k
    src_y = (a[3] * xs + a[4] * ys + a[5]) / k
    batch = lk.constant(np.broadcast_to(np.arange(n, dtype=x.dtype)[:, None, None],
                                        (n, h, w)).copy())
    flat = lk.reshape(x, [n * h * w, c])
    order = 0 if interpolation == "nearest" else 1
    out = _sample(flat, (n, h, w), [batch, src_y, src_x], order, fill_mode,
                  float(fill_value))
    return _back(out, single, cf)


def sobel_edges(images: TensorLike, data_format: str | None = None) -> Tensor:
    """Sobel gradients with zero padding: shape ``(batch, height, width, channels, 2)``
    holding ``[dy, dx]`` (``(batch, channels, height, width, 2)`` for channels_first)."""
    x, single, cf = _nhwc(images, data_format, "sobel_edges")
    if x.ndim != 4 or single:
        raise ValueError(f"keras_ops.image.sobel_edges: images must be rank 4, received "
                         f"shape {t(images).shape}")
    x = floating(x)
    c = x.shape[-1]
    gx = np.array([[-1, 0, 1], [-2, 0, 2], [-1, 0, 1]], x.dtype)
    pair = np.stack([gx.T, gx], -1)[:, :, None, :]                 # (3, 3, 1, [dy, dx])
    kern = lk.constant(np.broadcast_to(pair, (3, 3, c, 2)).copy())
    xp = lk.pad(x, [[0, 0], [1, 1], [1, 1], [0, 0]])
    out = lk.nn.depthwise_conv2d(xp, kern, [1, 1, 1, 1], "VALID")   # (N, H, W, C * 2)
    out = lk.reshape(out, list(out.shape[:3]) + [c, 2])
    return lk.transpose(out, [0, 3, 1, 2, 4]) if cf else out


def ssim(image1: TensorLike, image2: TensorLike, max_val: float = 1.0, filter_size: int = 11,
         filter_sigma: float = 1.5, k1: float = 0.01, k2: float = 0.03,
         data_format: str | None = None) -> Tensor:
    """Structural similarity per image (averaged over the valid Gaussian windows and the
    channels); identical images give 1."""
    a, single, cf = _nhwc(image1, data_format, "ssim")
    b, _, _ = _nhwc(image2, data_format, "ssim")
    if a.shape != b.shape:
        raise ValueError(f"keras_ops.image.ssim: images must have the same shape, received "
                         f"{t(image1).shape} and {t(image2).shape}")
    dtype = a.dtype
    a, b = floating(a), lk.cast(floating(b), floating(a).dtype)
    n = int(filter_size)
    g = _gauss1d(n, float(filter_sigma))
    kern = lk.constant(np.broadcast_to(np.outer(g, g).astype(a.dtype)[:, :, None, None],
                                       (n, n, a.shape[-1], 1)).copy())

    def blur(v):
        return lk.nn.depthwise_conv2d(v, kern, [1, 1, 1, 1], "VALID")

    c1, c2 = (k1 * max_val) ** 2, (k2 * max_val) ** 2
    mu1, mu2 = blur(a), blur(b)
    s11 = blur(a * a) - mu1 * mu1
    s22 = blur(b * b) - mu2 * mu2
    s12 = blur(a * b) - mu1 * mu2
    smap = (2.0 * mu1 * mu2 + c1) * (2.0 * s12 + c2) / (
        (mu1 * mu1 + mu2 * mu2 + c1) * (s11 + s22 + c2))
    out = lk.reduce_mean(smap, axis=[1, 2, 3])
    out = lk.squeeze(out, [0]) if single else out
    return lk.cast(out, dtype) if dtype.kind == "f" else out


def extract_patches_3d(volumes: TensorLike, size: Any, strides: int | Sequence[int] | None = None,
                       dilation_rate: int | Sequence[int] = 1, padding: str = "valid",
                       data_format: str | None = None) -> Tensor:
    """3-D patches of ``size`` as the last axis: ``(N, d', h', w', kd * kh * kw * C)``
    (patch row-major, then channels)."""
    x, single, cf = _nhwc(volumes, data_format, "extract_patches_3d", spatial=3)

    def three(v):
        return (int(v),) * 3 if isinstance(v, (int, np.integer)) else tuple(int(i) for i in v)

    ks = three(size)
    st = ks if strides is None else three(strides)
    dl = three(dilation_rate)
    padding = str(padding).lower()
    if padding not in ("valid", "same"):
        raise ValueError(f"keras_ops.image.extract_patches_3d: padding must be 'valid' or "
                         f"'same', received {padding!r}")
    pads, outs = [[0, 0]], []
    for n, k, s, d in zip(x.shape[1:4], ks, st, dl):
        o, lo, hi = _starts(n, k, s, d, padding)
        pads.append([lo, hi])
        outs.append(o)
    x = lk.pad(x, pads + [[0, 0]])
    for ax, (o, k, s, d) in enumerate(zip(outs, ks, st, dl)):
        idx = (np.arange(o)[:, None] * s + np.arange(k)[None, :] * d).reshape(-1)
        x = lk.gather(x, lk.constant(idx.astype(np.int64)), axis=1 + ax)
    n, c = x.shape[0], x.shape[-1]
    x = lk.reshape(x, [n, outs[0], ks[0], outs[1], ks[1], outs[2], ks[2], c])
    x = lk.transpose(x, [0, 1, 3, 5, 2, 4, 6, 7])
    return _back(lk.reshape(x, [n, *outs, ks[0] * ks[1] * ks[2] * c]), single, cf)


def _homography(start: Tensor, end: Tensor) -> Tensor:
    """``(N, 8)`` projective transforms mapping each ``end`` point onto its ``start``
    point (four ``(x, y)`` pairs per image), by an 8x8 linear solve."""
    sx, sy = start[..., 0], start[..., 1]
    ex, ey = end[..., 0], end[..., 1]
    one, zero = lk.ones_like(ex), lk.zeros_like(ex)
    rows_x = lk.stack([ex, ey, one, zero, zero, zero, -sx * ex, -sx * ey], -1)   # (N, 4, 8)
    rows_y = lk.stack([zero, zero, zero, ex, ey, one, -sy * ex, -sy * ey], -1)
    a = lk.reshape(lk.stack([rows_x, rows_y], 2), [-1, 8, 8])
    b = lk.reshape(lk.stack([sx, sy], 2), [-1, 8])
    return P.solve(a, b, True)


def perspective_transform(images: TensorLike, start_points: TensorLike, end_points: TensorLike,
                          interpolation: str = "bilinear", fill_value: float = 0,
                          data_format: str | None = None) -> Tensor:
    """Warp images so that the four ``start_points`` ``(x, y)`` land on ``end_points``
    (each ``(4, 2)``, or ``(N, 4, 2)`` per image); outside is ``fill_value``."""
    x, single, cf = _nhwc(images, data_format, "perspective_transform")
    x = floating(x)
    sp = lk.cast(floating(start_points), x.dtype)
    ep = lk.cast(floating(end_points), x.dtype)
    if sp.shape[-2:] != (4, 2) or sp.shape != ep.shape or sp.ndim not in (2, 3):
        raise ValueError(f"keras_ops.image.perspective_transform: start_points and "
                         f"end_points must both be (4, 2) or (N, 4, 2), received "
                         f"{sp.shape} and {ep.shape}")
    if sp.ndim == 2:
        sp, ep = lk.expand_dims(sp, 0), lk.expand_dims(ep, 0)
    out = affine_transform(x, _homography(sp, ep), interpolation, "constant", fill_value)
    return _back(out, single, cf)


def elastic_transform(images: TensorLike, alpha: float = 20.0, sigma: float = 5.0,
                      interpolation: str = "bilinear", fill_mode: str = "reflect",
                      fill_value: float = 0.0, seed: Any = None,
                      data_format: str | None = None) -> Tensor:
    """Random elastic distortion: standard-normal displacement fields (``* sigma``, drawn
    through ``lk.random`` with ``seed``) smoothed by a Gaussian of ``sigma`` (kernel
    ``int(6 sigma) | 1``), scaled by ``alpha``, then sampled as ``map_coordinates``."""
    x, single, cf = _nhwc(images, data_format, "elastic_transform")
    x = floating(x)
    if interpolation not in ("nearest", "bilinear"):
        raise ValueError(f"keras_ops.image.elastic_transform: interpolation must be "
                         f"'nearest' or 'bilinear', received {interpolation!r}")
    n, h, w, c = x.shape
    sig = float(sigma)
    k = int(6 * sig) | 1
    noise = lk.random.normal((2 * n, h, w, 1), dtype=x.dtype, seed=seed) * sig
    d = gaussian_blur(noise, (k, k), (sig, sig))[..., 0] * float(alpha)
    dy, dx = d[:n], d[n:]
    yy, xx = np.meshgrid(np.arange(h), np.arange(w), indexing="ij")
    batch = np.broadcast_to(np.arange(n)[:, None, None], (n, h, w)).astype(x.dtype)
    order = 0 if interpolation == "nearest" else 1
    out = _sample(lk.reshape(x, [n * h * w, c]), (n, h, w),
                  [lk.constant(batch), dy + yy.astype(x.dtype), dx + xx.astype(x.dtype)],
                  order, fill_mode, float(fill_value))
    return _back(out, single, cf)


def _lanczos(radius: float):
    def k(d):
        pd = float(np.pi) * d
        y = radius * lk.sin(pd) * lk.sin(pd / radius) / lk.where(d != 0, pd * pd, 1.0)
        return lk.where(d > radius, 0.0, lk.where(d > 1e-3, y, 1.0))
    return k


_ST_KERNELS = {
    "linear": lambda d: lk.maximum(1.0 - d, 0.0),
    "cubic": lambda d: lk.where(d >= 2.0, 0.0, lk.where(
        d >= 1.0, ((-0.5 * d + 2.5) * d - 4.0) * d + 2.0, ((1.5 * d - 2.5) * d) * d + 1.0)),
    "lanczos3": _lanczos(3.0),
    "lanczos5": _lanczos(5.0),
}
_ST_ALIASES = {"bilinear": "linear", "trilinear": "linear", "triangle": "linear",
               "bicubic": "cubic", "tricubic": "cubic"}


def _st_weights(n_in: int, n_out: int, scale: Tensor, shift: Tensor, kernel, antialias):
    """``(n_in, n_out)`` weights (lk ops, so ``scale`` and ``shift`` may be traced or
    differentiated): output ``j`` samples the input at ``(j + 0.5 - shift) / scale -
    0.5``; the weights are renormalised and zero outside the input."""
    inv = 1.0 / scale
    kscale = lk.maximum(inv, 1.0) if antialias else 1.0
    sample = (np.arange(n_out, dtype=scale.dtype) + 0.5) * inv - shift * inv - 0.5
    d = lk.abs(lk.expand_dims(sample, 0) - np.arange(n_in, dtype=scale.dtype)[:, None])
    w = kernel(d / kscale)
    total = lk.reduce_sum(w, axis=0, keepdims=True)
    w = lk.where(lk.abs(total) > 1000.0 * float(np.finfo(np.float32).eps),
                 w / lk.where(total != 0, total, 1.0), 0.0)
    inside = lk.logical_and(sample >= -0.5, sample <= n_in - 0.5)
    return lk.where(lk.expand_dims(inside, 0), w, 0.0)


def scale_and_translate(images: TensorLike, output_shape: Any, scale: Any, translation: Any,
                        spatial_dims: Any, method: str, antialias: bool = True) -> Tensor:
    """Resample ``spatial_dims`` of ``images`` to ``output_shape``: output index ``j``
    reads the input at ``(j + 0.5 - translation) / scale - 0.5`` through the ``method``
    kernel (linear, cubic, lanczos3, lanczos5; JAX's ``scale_and_translate``), with one
    ``scale`` and ``translation`` per spatial dim. Differentiable in all three."""
    m = _ST_ALIASES.get(method, method)
    if m not in _ST_KERNELS:
        raise ValueError(f"keras_ops.image.scale_and_translate: method must be one of "
                         f"{sorted({*_ST_KERNELS, *_ST_ALIASES})}, received {method!r}")
    x = t(images)
    dtype = x.dtype
    out = floating(x)
    sc, tr = floating(scale), floating(translation)
    cd = np.result_type(sc.dtype, tr.dtype)
    sc, tr = lk.reshape(lk.cast(sc, cd), [-1]), lk.reshape(lk.cast(tr, cd), [-1])
    dims = [int(d) % x.ndim for d in spatial_dims]
    if sc.shape[0] != len(dims) or tr.shape[0] != len(dims):
        raise ValueError(f"keras_ops.image.scale_and_translate: scale and translation need "
                         f"one value per spatial dim ({len(dims)}), received {sc.shape[0]} "
                         f"and {tr.shape[0]}")
    for i, d in enumerate(dims):
        w = _st_weights(x.shape[d], int(output_shape[d]), sc[i], tr[i], _ST_KERNELS[m],
                        bool(antialias))
        out = lk.tensordot(out, lk.cast(w, out.dtype), [[d], [0]])
        out = P.moveaxis_from_end(out, d)
    if dtype.kind in "iu":
        lo, hi = lk.reduce_min(x), lk.reduce_max(x)
        out = lk.cast(lk.minimum(lk.maximum(lk.round(out), lk.cast(lo, out.dtype)),
                                 lk.cast(hi, out.dtype)), dtype)
    return out
