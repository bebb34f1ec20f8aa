"""Image resampling records: ``resize`` and ``affine_transform`` (channels last).

Both are linear in the image, so each has one transpose record as its gradient, whose own
gradient is the forward record again (any order of differentiation stays in the pair):

- ``resize(x)`` -> ``resize_backprop(g)`` -> ``resize``. Resizing is separable: each
  spatial axis is resampled in turn by a few gathers (taps) with per-output weights, and
  the transpose sums each tap's weighted gradient back into its source rows (the tap
  indices never decrease along the output, so a segmented ``np.add.reduceat`` does it
  without ``np.add.at``). The numbers are Keras 3's (``keras.ops.image.resize``, also
  TF's ``tf.image.resize`` and torch's ``interpolate``): half-pixel centres;
  ``'bilinear'`` is the triangle kernel, normalised over the taps inside the image (so
  the edges clamp), widened by the scale factor when downsampling with ``antialias``;
  ``'nearest'`` takes source ``floor((o + 1/2) * in / out)`` (computed exactly in
  integers).
- ``affine_transform(x, transforms)`` -> ``affine_transform_backprop(g, transforms)`` ->
  ``affine_transform`` (with a zero fill value: the fill is a constant term). Output
  pixel (row y, column x) samples the input at column ``a0*x + a1*y + a2`` and row
  ``b0*x + b1*y + b2`` for each image's transform ``[a0, a1, a2, b0, b1, b2, c0, c1]``
  (the projective terms ``c0, c1`` must be 0), with Keras 3's ``map_coordinates``
  rules: ``'bilinear'`` reads the 2x2 neighbours, ``'nearest'`` rounds half to even, and
  each neighbour index outside the image is mapped by the fill mode: ``'constant'``
  (reads ``fill_value``), ``'nearest'`` (clamps), ``'wrap'`` (modulo), ``'reflect'``
  (``dcba|abcd|dcba``) or ``'mirror'`` (``dcb|abcd|cba``). The transposed record adds
  each output gradient into the same neighbours with ``np.bincount``. The transforms
  get no gradient (augmentation layers draw them at random).

``lk.image`` is not public yet; the layers call :func:`resize` and
:func:`affine_transform` here.
"""
from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import numpy as np

from layerkit._core.op import Op, apply
from layerkit._core.tensor import Tensor
from layerkit._core.tuning import RESIZE_CACHE
from layerkit.primitives import array as _array
from layerkit.primitives.conv import _arg, _value

__all__: list[str] = []  # lk.image is out of scope for now; layers import the functions

RESIZE_METHODS = ("bilinear", "nearest")
INTERPOLATIONS = ("bilinear", "nearest")
FILL_MODES = ("constant", "nearest", "wrap", "reflect", "mirror")


# =====================================================================================
# resize
# =====================================================================================
@functools.lru_cache(maxsize=RESIZE_CACHE)
def resize_taps(in_len: int, out_len: int, method: str, antialias: bool = False):
    """Source indices and weights of one resized axis: (K, out_len) int and float64
    arrays; output ``o`` is ``sum_k w[k, o] * x[idx[k, o]]`` and each ``idx[k]`` is
    non-decreasing in ``o``."""
    o = np.arange(out_len)
    if method == "nearest":
        idx = np.minimum((2 * o + 1) * in_len // (2 * out_len), in_len - 1)
        return _frozen(idx[None], np.ones((1, out_len)))
    inv = in_len / out_len
    width = max(inv, 1.0) if antialias else 1.0  # the triangle's half-width in input pixels
    s = (o + 0.5) * inv - 0.5  # the sample position in input pixel coordinates
    lo = np.floor(s - width).astype(np.int64) + 1  # first index strictly inside the kernel
    k = int(np.max(np.ceil(s + width).astype(np.int64) - 1 - lo)) + 1
    i = lo[None, :] + np.arange(k)[:, None]
    w = np.maximum(0.0, 1.0 - np.abs(s[None, :] - i) / width)
    w[(i < 0) | (i >= in_len)] = 0.0
    w /= w.sum(axis=0, keepdims=True)
    keep = w.any(axis=1)
    return _frozen(np.clip(i[keep], 0, in_len - 1), w[keep])


def _frozen(*arrays):
    for a in arrays:
        a.flags.writeable = False
    return arrays


def _along(w: np.ndarray, axis: int, ndim: int, dtype) -> np.ndarray:
    """Per-output weights shaped to broadcast along ``axis`` of an ``ndim`` array."""
    return w.astype(dtype).reshape((-1,) + (1,) * (ndim - axis - 1))


def _resample(x: np.ndarray, axis: int, idx, w) -> np.ndarray:
    out = None
    for ik, wk in zip(idx, w):
        term = np.take(x, ik, axis=axis)
        if not (wk == 1).all():
            term *= _along(wk, axis, x.ndim, x.dtype)
        out = term if out is None else np.add(out, term, out=out)
    return out


def _resample_t(g: np.ndarray, axis: int, idx, w, in_len: int) -> np.ndarray:
    """The transpose of :func:`_resample`: each tap's weighted gradient summed back into
    its (non-decreasing) source indices by a segmented reduction."""
    shape = list(g.shape)
    shape[axis] = in_len
    out = np.zeros(shape, g.dtype)
    dst = np.moveaxis(out, axis, 0)
    for ik, wk in zip(idx, w):
        v = g if (wk == 1).all() else g * _along(wk, axis, g.ndim, g.dtype)
        starts = np.flatnonzero(np.concatenate(([True], ik[1:] != ik[:-1])))
        dst[ik[starts]] += np.moveaxis(np.add.reduceat(v, starts, axis=axis), axis, 0)
    return out


def _resize_fwd(x, size, method, antialias):
    for axis, n in enumerate(size, start=1):
        if x.shape[axis] != n:
            x = _resample(x, axis, *resize_taps(x.shape[axis], n, method, antialias))
    return x


def _resize_grad_fwd(g, input_shape, method, antialias):
    for axis in reversed(range(1, g.ndim - 1)):
        n = input_shape[axis]
        if g.shape[axis] != n:
            g = _resample_t(g, axis, *resize_taps(n, g.shape[axis], method, antialias), n)
    return g


def _resize_vjp(g, ins, y, needs, size, method, antialias):
    return (apply(_RESIZE_GRAD, g, input_shape=ins[0].shape, method=method,
                  antialias=antialias),)


def _resize_grad_vjp(h, ins, dx, needs, input_shape, method, antialias):
    return (apply(_RESIZE, h, size=tuple(ins[0].shape[1:-1]), method=method,
                  antialias=antialias),)


_RESIZE = Op("resize", _resize_fwd, _resize_vjp, reads=())
_RESIZE_GRAD = Op("resize_backprop", _resize_grad_fwd, _resize_grad_vjp, reads=())


def resize(images, size: Sequence[int], method: str = "bilinear",
           antialias: bool = False) -> Tensor:
    """Resize the spatial axes of a channels-last float tensor (Keras 3's numbers).

    Args:
        images: (N, *spatial, C) float tensor (e.g. NHWC images).
        size: the new spatial sizes, one per spatial axis.
        method: ``'bilinear'`` (half-pixel centres, edges clamped) or ``'nearest'``.
        antialias: widen the bilinear kernel when downsampling (as Keras/TF/torch).

    Returns:
        (N, *size, C) tensor of ``images``' dtype.

    Raises:
        ValueError: for an unknown method, a non-float input, a ``size`` that does not
            give one positive int per spatial axis, or an empty input axis.
    """
    op = "resize"
    xv = _value(images)
    if method not in RESIZE_METHODS:
        raise ValueError(f"{op}: method must be one of {RESIZE_METHODS}; received {method!r}")
    if xv.dtype.kind != "f":
        raise ValueError(f"{op}: needs a float tensor; received dtype {xv.dtype.name}")
    size = tuple(int(s) for s in size)
    if xv.ndim < 3 or len(size) != xv.ndim - 2 or min(size) < 1 or min(xv.shape[1:-1]) < 1:
        raise ValueError(f"{op}: size must give one positive int per spatial axis of a "
                         f"(batch, *spatial, channels) input; received size={size} for "
                         f"input shape {xv.shape}")
    return apply(_RESIZE, _arg(images, xv), size=size, method=method,
                 antialias=bool(antialias))


# =====================================================================================
# affine_transform
# =====================================================================================
def _fix(i: np.ndarray, n: int, mode: str) -> np.ndarray:
    """Map (possibly out-of-range) integer indices into [0, n) by the fill mode."""
    if mode == "wrap":
        return i % n
    if mode in ("reflect", "mirror") and n > 1:
        if mode == "reflect":  # reflect about the outer pixel edges: dcba|abcd|dcba
            return np.where((i // n) % 2 == 0, i % n, n - 1 - i % n)
        p = 2 * (n - 1)  # mirror about the outer pixel centres: dcb|abcd|cba
        return (n - 1) - np.abs(i % p - (n - 1))
    return np.clip(i, 0, n - 1)


def _nodes(c: np.ndarray, n: int, interpolation: str, mode: str):
    """(index, weight or None, valid or None) per interpolation node of coordinates ``c``."""
    if interpolation == "nearest":
        raw: list[tuple[np.ndarray, Any]] = [(np.rint(c).astype(np.int64), None)]
    else:
        lower = np.floor(c)
        upper_w = c - lower
        lower = lower.astype(np.int64)
        raw = [(lower, 1 - upper_w), (lower + 1, upper_w)]
    return [(_fix(i, n, mode), w, ((i >= 0) & (i < n)) if mode == "constant" else None)
            for i, w in raw]


def _affine_taps(t: np.ndarray, shape: tuple, interpolation: str, mode: str):
    """(flat pixel index (N, H, W), weight (N, H, W) or None, valid or None) per tap."""
    n, h, w = shape[:3]
    if np.any(t[:, 6:] != 0):
        raise ValueError("affine_transform: projective transforms (c0, c1 != 0) are not "
                         "supported")
    dt = np.result_type(t.dtype, np.float32)
    a0, a1, a2, b0, b1, b2 = (t[:, i].astype(dt)[:, None, None] for i in range(6))
    ys = np.arange(h, dtype=dt)[None, :, None]
    xs = np.arange(w, dtype=dt)[None, None, :]
    rows = _nodes(ys * b1 + xs * b0 + b2, h, interpolation, mode)
    cols = _nodes(ys * a1 + xs * a0 + a2, w, interpolation, mode)
    base = (np.arange(n) * (h * w))[:, None, None]
    taps = []
    for iy, wy, vy in rows:
        for ix, wx, vx in cols:
            wt = wx if wy is None else (wy if wx is None else wy * wx)
            valid = vx if vy is None else (vy if vx is None else vy & vx)
            taps.append((base + iy * w + ix, wt, valid))
    return taps


def _affine_fwd(x, t, interpolation, fill_mode, fill_value):
    flat = x.reshape(-1, x.shape[-1])
    fill = np.asarray(fill_value, x.dtype)
    out = None
    for idx, wt, valid in _affine_taps(t, x.shape, interpolation, fill_mode):
        v = flat[idx]
        if valid is not None:
            v = np.where(valid[..., None], v, fill)
        if wt is not None:
            v = v * wt[..., None].astype(x.dtype)
        out = v if out is None else np.add(out, v, out=out)
    return out


def _affine_grad_fwd(g, t, image_shape, interpolation, fill_mode):
    c = g.shape[-1]
    size = int(np.prod(image_shape))
    total = np.zeros(size)
    for idx, wt, valid in _affine_taps(t, image_shape, interpolation, fill_mode):
        v = g if wt is None else g * wt[..., None]
        if valid is not None:
            v = np.where(valid[..., None], v, 0)
        total += np.bincount((idx[..., None] * c + np.arange(c)).ravel(),
                             weights=v.ravel(), minlength=size)
    return total.astype(g.dtype).reshape(image_shape)


def _affine_vjp(g, ins, y, needs, interpolation, fill_mode, fill_value):
    x, t = ins
    gx = apply(_AFFINE_GRAD, g, t, image_shape=x.shape, interpolation=interpolation,
               fill_mode=fill_mode) if needs[0] else None
    return gx, None


def _affine_grad_vjp(h, ins, dx, needs, image_shape, interpolation, fill_mode):
    _, t = ins
    gg = apply(_AFFINE, h, t, interpolation=interpolation, fill_mode=fill_mode,
               fill_value=0.0) if needs[0] else None
    return gg, None


_AFFINE = Op("affine_transform", _affine_fwd, _affine_vjp, reads=(1,))
_AFFINE_GRAD = Op("affine_transform_backprop", _affine_grad_fwd, _affine_grad_vjp, reads=(1,))


def affine_transform(images, transforms, interpolation: str = "bilinear",
                     fill_mode: str = "constant", fill_value: float = 0.0) -> Tensor:
    """Apply one affine transform per image (Keras 3's ``ops.image.affine_transform``).

    Args:
        images: (N, H, W, C) float tensor.
        transforms: (N, 8) or (8,) ``[a0, a1, a2, b0, b1, b2, c0, c1]`` mapping each
            output pixel to its input position (see the module docstring); ``c0, c1``
            must be 0.
        interpolation: ``'bilinear'`` or ``'nearest'``.
        fill_mode: ``'constant'``, ``'nearest'``, ``'wrap'``, ``'reflect'`` or ``'mirror'``.
        fill_value: the value read outside the image with ``'constant'``.

    Returns:
        (N, H, W, C) tensor.

    Raises:
        ValueError: for an unknown interpolation or fill mode, a non-float or non-NHWC
            input, transforms of the wrong shape or (when run) with projective terms.
    """
    op = "affine_transform"
    xv, tv = _value(images), _value(transforms)
    if interpolation not in INTERPOLATIONS:
        raise ValueError(f"{op}: interpolation must be one of {INTERPOLATIONS}; received "
                         f"{interpolation!r}")
    if fill_mode not in FILL_MODES:
        raise ValueError(f"{op}: fill_mode must be one of {FILL_MODES}; received "
                         f"{fill_mode!r}")
    if xv.ndim != 4 or xv.dtype.kind != "f":
        raise ValueError(f"{op}: images must be a float (N, H, W, C) tensor; received shape "
                         f"{xv.shape}, dtype {xv.dtype.name}")
    if tv.shape not in ((8,), (1, 8), (xv.shape[0], 8)):
        raise ValueError(f"{op}: transforms must have shape ({xv.shape[0]}, 8) or (8,) for "
                         f"images of shape {xv.shape}; received shape {tv.shape}")
    if tv.shape != (xv.shape[0], 8):
        transforms = _array.broadcast_to(_array.reshape(_arg(transforms, tv), (1, 8)),
                                         (xv.shape[0], 8))
        tv = transforms._v
    return apply(_AFFINE, _arg(images, xv), _arg(transforms, tv), interpolation=interpolation,
                 fill_mode=fill_mode, fill_value=float(fill_value))
