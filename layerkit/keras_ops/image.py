"""keras.ops.image: the cheap, differentiable subset (colour conversions, padding and
cropping, patch extraction, Gaussian blur). Images are ``(H, W, C)`` or
``(N, H, W, C)`` (``data_format="channels_first"`` for ``(..., C, H, W)``)."""
from __future__ import annotations

import numpy as np

import layerkit as lk
from layerkit._core.tensor import Tensor
from layerkit.keras_ops._prims import floating, t

__all__ = ["rgb_to_grayscale", "rgb_to_hsv", "hsv_to_rgb", "pad_images", "crop_images",
           "extract_patches", "gaussian_blur"]


def _nhwc(images, data_format, who):
    x = t(images)
    if x.ndim not in (3, 4):
        raise ValueError(f"keras_ops.image.{who}: images must be rank 3 or 4, received "
                         f"shape {x.shape}")
    single = x.ndim == 3
    if single:
        x = lk.expand_dims(x, 0)
    cf = data_format == "channels_first"
    if data_format not in (None, "channels_last", "channels_first"):
        raise ValueError(f"keras_ops.image.{who}: data_format must be 'channels_last' or "
                         f"'channels_first', received {data_format!r}")
    if cf:
        x = lk.transpose(x, [0, 2, 3, 1])
    return x, single, cf


def _back(x, single, cf):
    if cf:
        x = lk.transpose(x, [0, 3, 1, 2])
    return lk.squeeze(x, [0]) if single else x


def rgb_to_grayscale(images, data_format=None) -> Tensor:
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


def rgb_to_hsv(images, data_format=None) -> Tensor:
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


def hsv_to_rgb(images, data_format=None) -> Tensor:
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


def pad_images(images, top_padding=None, left_padding=None, bottom_padding=None,
               right_padding=None, target_height=None, target_width=None,
               data_format=None) -> Tensor:
    """Zero-pad images; each side's amount is given or derived from the target size."""
    x, back, (top, bottom, left, right) = _sides(
        images, data_format, "pad_images", "padding", top_padding, left_padding,
        bottom_padding, right_padding, target_height, target_width)
    return _back(lk.pad(x, [[0, 0], [top, bottom], [left, right], [0, 0]]), *back)


def crop_images(images, top_cropping=None, left_cropping=None, bottom_cropping=None,
                right_cropping=None, target_height=None, target_width=None,
                data_format=None) -> Tensor:
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


def extract_patches(images, size, strides=None, dilation_rate=1, padding: str = "valid",
                    data_format=None) -> Tensor:
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


def gaussian_blur(images, kernel_size=(3, 3), sigma=(1.0, 1.0), data_format=None) -> Tensor:
    """Per-channel Gaussian blur with zero padding of ``kernel_size // 2``."""
    x, single, cf = _nhwc(images, data_format, "gaussian_blur")
    x = floating(x)
    kh, kw = (int(kernel_size),) * 2 if isinstance(kernel_size, int) else map(int, kernel_size)
    sy, sx = (float(sigma),) * 2 if isinstance(sigma, (int, float)) else map(float, sigma)

    def k1(n, s):
        v = np.exp(-0.5 * ((np.arange(n) - (n - 1) / 2.0) / s) ** 2)
        return v / v.sum()

    k2 = np.outer(k1(kh, sy), k1(kw, sx)).astype(x.dtype)
    c = x.shape[-1]
    kern = lk.constant(np.broadcast_to(k2[:, :, None, None], (kh, kw, c, 1)).copy())
    p = kh // 2
    xp = lk.pad(x, [[0, 0], [p, p], [p, p], [0, 0]])
    out = lk.nn.depthwise_conv2d(xp, kern, [1, 1, 1, 1], "VALID")
    return _back(out, single, cf)
