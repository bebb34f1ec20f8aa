"""keras.ops math functions: special functions, top-k, segment reductions, FFTs.

The FFTs take and return Keras's ``(real, imag)`` pairs of float tensors and are
computed as products with constant DFT matrices, so they are differentiable (and cost
O(n^2) per transform: fine for the short signals Keras models use them on).
"""
from __future__ import annotations

from typing import Any

import numpy as np

import layerkit as lk
from layerkit._core.tensor import Tensor
from layerkit._core.types import AxisLike, TensorLike
from layerkit.keras_ops import _prims as P
from layerkit.keras_ops import numpy as knp
from layerkit.keras_ops._prims import axes_arg, floating, t

__all__ = ["erf", "erfc", "erfinv", "logsumexp", "rsqrt", "top_k", "in_top_k",
           "segment_sum", "segment_max", "segment_min", "segment_prod",
           "extract_sequences", "logdet", "fft", "fft2", "ifft2", "rfft", "irfft", "stft",
           "istft", "cdist", "view_as_complex", "view_as_real"]


def erf(x: TensorLike) -> Tensor:
    """The error function (integers give float32)."""
    return lk.erf(floating(x))


def erfc(x: TensorLike) -> Tensor:
    """1 - erf(x)."""
    return 1.0 - lk.erf(floating(x))


def erfinv(x: TensorLike) -> Tensor:
    """Inverse of ``erf`` on (-1, 1) (+-inf at +-1, NaN outside)."""
    return P.erfinv(floating(x))


def logsumexp(x: TensorLike, axis: AxisLike = None, keepdims: bool = False) -> Tensor:
    """log(sum(exp(x))) over ``axis``, stable."""
    x = floating(x)
    ax = axes_arg(axis, x.ndim, "logsumexp")
    return lk.reduce_logsumexp(x, axis=None if ax is None else list(ax), keepdims=keepdims)


def rsqrt(x: TensorLike) -> Tensor:
    """1 / sqrt(x)."""
    return lk.rsqrt(floating(x))


def top_k(x: TensorLike, k: int, sorted: bool = True) -> tuple:  # noqa: A002 - Keras's name
    """``(values, indices)`` of the ``k`` largest entries along the last axis, largest
    first (ties: lower index first); indices int32. Differentiable in ``values``."""
    x = t(x)
    k = int(k)
    if not 0 <= k <= x.shape[-1]:
        raise ValueError(f"keras_ops.top_k: k={k} must be in [0, {x.shape[-1]}] for a last "
                         f"axis of length {x.shape[-1]}")
    idx = P.argsort_last(x, descending=True)
    idx = lk.slice(idx, [0] * x.ndim, [-1] * (x.ndim - 1) + [k])
    return P.take_along(x, idx, x.ndim - 1), idx


def in_top_k(targets: TensorLike, predictions: TensorLike, k: int) -> Tensor:
    """Whether ``targets[i]`` is among the ``k`` largest ``predictions[i]`` (ties count
    in its favour; a NaN target score is never in); bool."""
    p = t(predictions)
    tg = lk.cast(t(targets), np.int64)
    score = P.take_along(p, lk.expand_dims(tg, 1), 1)
    better = lk.reduce_sum(lk.cast(p > score, np.int32), axis=1)
    ok = lk.logical_not(lk.isnan(score[:, 0])) if score.dtype.kind == "f" else True
    return lk.logical_and(better < int(k), ok)


def _segments(data, segment_ids, num_segments, who):
    data = t(data)
    ids = t(segment_ids)
    if ids.dtype.kind not in "iu":
        raise TypeError(f"keras_ops.{who}: segment_ids must be integers, received {ids.dtype}")
    if num_segments is None:
        if P.is_traced(ids):
            raise ValueError(f"keras_ops.{who}: inside lk.function pass num_segments")
        num_segments = int(ids.numpy().max()) + 1 if ids.shape[0] else 0
    shape = (int(num_segments),) + tuple(data.shape[ids.ndim:])
    return data, lk.expand_dims(lk.cast(ids, np.int64), -1), shape


def segment_sum(data: Any, segment_ids: TensorLike, num_segments: int | None = None,
                sorted: bool = False) -> Tensor:  # noqa: A002
    """Sums of ``data`` rows grouped by ``segment_ids`` (empty segments are 0; ids out
    of ``[0, num_segments)`` are dropped). Differentiable in ``data``."""
    data, idx, shape = _segments(data, segment_ids, num_segments, "segment_sum")
    keep = lk.logical_and(idx >= 0, idx < shape[0])
    idx = lk.where(keep, idx, 0)
    mask = lk.reshape(keep, list(keep.shape[:-1]) + [1] * (data.ndim - keep.ndim + 1))
    return P.scatter_add(idx, lk.where(mask, data, lk.zeros_like(data)), shape)


def _segment_extreme(data, segment_ids, num_segments, sorted, kind):  # noqa: A002
    who = f"segment_{kind}"
    data, idx, shape = _segments(data, segment_ids, num_segments, who)
    ufunc = np.maximum if kind == "max" else np.minimum
    fill = -np.inf if kind == "max" else np.inf

    def fwd(d, i, shape):
        init = np.asarray(fill).astype(d.dtype) if d.dtype.kind == "f" else (
            np.iinfo(d.dtype).min if kind == "max" else np.iinfo(d.dtype).max)
        out = np.full(shape, init, d.dtype)
        i = i[..., 0]
        ok = (i >= 0) & (i < shape[0])
        ufunc.at(out, i[ok], d[ok])
        return out

    ext = P.run(who, fwd, data, idx, shape=shape)
    if data.dtype.kind != "f":
        return ext
    # Differentiable form: the gradient is shared among the entries equal to the extreme.
    hit = lk.cast(lk.equal(data, lk.gather_nd(lk.stop_gradient(ext),
                                              lk.maximum(lk.minimum(idx, shape[0] - 1), 0))),
                  data.dtype)
    s = segment_sum(data * hit, segment_ids, shape[0])
    c = segment_sum(hit, segment_ids, shape[0])
    return lk.where(c > 0, s / lk.maximum(c, 1.0), ext)


def segment_max(data: Any, segment_ids: TensorLike, num_segments: int | None = None,
                sorted: bool = False) -> Tensor:  # noqa: A002
    """Maxima of ``data`` rows grouped by ``segment_ids`` (empty segments: the lowest
    value, -inf for floats)."""
    return _segment_extreme(data, segment_ids, num_segments, sorted, "max")


def segment_min(data: Any, segment_ids: TensorLike, num_segments: int | None = None,
                sorted: bool = False) -> Tensor:  # noqa: A002
    """Minima of ``data`` rows grouped by ``segment_ids`` (empty segments: +inf)."""
    return _segment_extreme(data, segment_ids, num_segments, sorted, "min")


def segment_prod(data: Any, segment_ids: TensorLike, num_segments: int | None = None,
                 sorted: bool = False) -> Tensor:  # noqa: A002
    """Products of ``data`` rows grouped by ``segment_ids`` (empty segments are 1)."""
    data, idx, shape = _segments(data, segment_ids, num_segments, "segment_prod")

    def fwd(d, i, shape):
        out = np.ones(shape, d.dtype)
        i = i[..., 0]
        ok = (i >= 0) & (i < shape[0])
        np.multiply.at(out, i[ok], d[ok])
        return out

    return P.run("segment_prod", fwd, data, idx, shape=shape)


def extract_sequences(x: TensorLike, sequence_length: int, sequence_stride: int) -> Tensor:
    """Frames of length ``sequence_length`` every ``sequence_stride`` along the last
    axis: shape ``(..., num_frames, sequence_length)``."""
    x = t(x)
    n = x.shape[-1]
    m, s = int(sequence_length), int(sequence_stride)
    frames = max(0, (n - m) // s + 1)
    idx = (np.arange(frames)[:, None] * s + np.arange(m)[None, :]).reshape(-1)
    out = lk.gather(x, lk.constant(idx.astype(np.int64)), axis=x.ndim - 1)
    return lk.reshape(out, list(x.shape[:-1]) + [frames, m])


def logdet(x: TensorLike) -> Tensor:
    """log(det(x)) of positive-definite matrices (NaN for negative determinants)."""
    sign, logabs = P.slogdet(floating(x))
    return lk.where(sign > 0, logabs, lk.where(sign < 0, float("nan"), -float("inf")))


# ---- FFTs as constant DFT products -----------------------------------------------------------
def _dft(n: int, m: int, inverse: bool, dtype):
    k = np.arange(n)[:, None] * np.arange(m)[None, :]
    ang = 2.0 * np.pi * k / n * (1.0 if inverse else -1.0)
    return lk.constant(np.cos(ang).astype(dtype)), lk.constant(np.sin(ang).astype(dtype))


def _pair(x, who):
    if not isinstance(x, (tuple, list)) or len(x) != 2:
        raise ValueError(f"keras_ops.{who}: x must be a (real, imag) pair of tensors")
    re, im = floating(x[0]), floating(x[1])
    if re.shape != im.shape:
        raise ValueError(f"keras_ops.{who}: real and imag shapes differ: {re.shape} and "
                         f"{im.shape}")
    return re, lk.cast(im, re.dtype)


def _cdft_last(re, im, inverse):
    n = re.shape[-1]
    c, s = _dft(n, n, inverse, re.dtype)
    out_re = lk.tensordot(re, c, 1) - lk.tensordot(im, s, 1)
    out_im = lk.tensordot(re, s, 1) + lk.tensordot(im, c, 1)
    if inverse:
        out_re, out_im = out_re * (1.0 / n), out_im * (1.0 / n)
    return out_re, out_im


def fft(x: TensorLike) -> tuple:
    """Complex FFT over the last axis of ``(real, imag)``; returns ``(real, imag)``."""
    return _cdft_last(*_pair(x, "fft"), False)


def _fft2(x, inverse, who):
    re, im = _pair(x, who)
    re, im = _cdft_last(re, im, inverse)
    re, im = P.swap_last(re), P.swap_last(im)
    re, im = _cdft_last(re, im, inverse)
    return P.swap_last(re), P.swap_last(im)


def fft2(x: TensorLike) -> tuple:
    """2-D complex FFT over the last two axes of ``(real, imag)``."""
    return _fft2(x, False, "fft2")


def ifft2(x: TensorLike) -> tuple:
    """2-D inverse complex FFT over the last two axes of ``(real, imag)``."""
    return _fft2(x, True, "ifft2")


def rfft(x: TensorLike, fft_length: int | None = None) -> tuple:
    """FFT of a real signal over the last axis: ``(real, imag)`` of length
    ``fft_length // 2 + 1`` (the input is cropped or zero-padded to ``fft_length``)."""
    x = floating(x)
    n = x.shape[-1] if fft_length is None else int(fft_length)
    x = _fit_last(x, n)
    c, s = _dft(n, n // 2 + 1, False, x.dtype)
    return lk.tensordot(x, c, 1), lk.tensordot(x, s, 1)


def _fit_last(x: Tensor, n: int) -> Tensor:
    m = x.shape[-1]
    if m > n:
        return lk.slice(x, [0] * x.ndim, [-1] * (x.ndim - 1) + [n])
    if m < n:
        return lk.pad(x, [[0, 0]] * (x.ndim - 1) + [[0, n - m]])
    return x


def irfft(x: TensorLike, fft_length: int | None = None) -> Tensor:
    """Inverse of ``rfft``: a real signal of length ``fft_length`` (default
    ``2 * (m - 1)``) from the ``(real, imag)`` half spectrum."""
    re, im = _pair(x, "irfft")
    m = re.shape[-1]
    n = 2 * (m - 1) if fft_length is None else int(fft_length)
    h = n // 2 + 1
    re, im = _fit_last(re, h), _fit_last(im, h)
    # Hermitian weights: interior bins count twice; DC and Nyquist once; imag of DC and
    # Nyquist are ignored, as in NumPy.
    w = np.full(h, 2.0)
    w[0] = 1.0
    if n % 2 == 0:
        w[-1] = 1.0
    k = np.arange(h)[:, None] * np.arange(n)[None, :]
    ang = 2.0 * np.pi * k / n
    c = lk.constant((np.cos(ang) * w[:, None] / n).astype(re.dtype))
    s = lk.constant((-np.sin(ang) * w[:, None] / n).astype(re.dtype))
    return lk.tensordot(re, c, 1) + lk.tensordot(im, s, 1)


def _stft_window(window, sequence_length: int, fft_length: int, dtype, who: str):
    """The window (periodic Hann/Hamming, an array, or ones) zero-padded to the
    centre of ``fft_length``, as a NumPy array."""
    n = int(sequence_length)
    if window is None:
        w = np.ones(n)
    elif isinstance(window, str):
        if window not in ("hann", "hamming"):
            raise ValueError(f"keras_ops.{who}: window must be 'hann', 'hamming', an array "
                             f"or None, received {window!r}")
        a = 0.5 if window == "hann" else 0.54
        w = a - (1.0 - a) * np.cos(2.0 * np.pi * np.arange(n) / n)
    else:
        w = np.asarray(window.numpy() if isinstance(window, Tensor) else window, np.float64)
        if w.shape != (n,):
            raise ValueError(f"keras_ops.{who}: window must have shape ({n},), received "
                             f"{w.shape}")
    if fft_length < n:
        raise ValueError(f"keras_ops.{who}: fft_length {fft_length} must be >= "
                         f"sequence_length {n}")
    left = (fft_length - n) // 2
    full = np.zeros(fft_length)
    full[left:left + n] = w
    return full.astype(dtype)


def stft(x: TensorLike, sequence_length: int, sequence_stride: int, fft_length: int,
         window: str = "hann", center: bool = True) -> tuple:
    """Short-time Fourier transform over the last axis: ``(real, imag)`` of shape
    ``(..., num_frames, fft_length // 2 + 1)``; ``center`` reflect-pads by
    ``fft_length // 2`` on both sides first (PyTorch's framing, which Keras follows)."""
    x = floating(x)
    fft_length = int(fft_length)
    win = _stft_window(window, sequence_length, fft_length, x.dtype, "stft")
    if center:
        x = knp.pad(x, [[0, 0]] * (x.ndim - 1) + [[fft_length // 2] * 2], mode="reflect")
    frames = extract_sequences(x, fft_length, sequence_stride)
    return rfft(frames * win, fft_length)


def istft(x: TensorLike, sequence_length: int, sequence_stride: int, fft_length: int,
          length: int | None = None, window: str = "hann", center: bool = True) -> Tensor:
    """Inverse of ``stft``: overlap-added windowed frames divided by the summed squared
    window; ``length`` crops or zero-pads the result."""
    frames = irfft(x, int(fft_length))                       # (..., F, fft)
    fft_length = int(fft_length)
    stride = int(sequence_stride)
    win = _stft_window(window, sequence_length, fft_length, frames.dtype, "istft")
    frames = frames * win
    nf = frames.shape[-2]
    total = (nf - 1) * stride + fft_length
    pos = (np.arange(nf)[:, None] * stride + np.arange(fft_length)[None, :]).reshape(-1, 1)
    batch = list(frames.shape[:-2])
    flat = lk.reshape(frames, [-1, nf * fft_length])
    flat = lk.transpose(flat)                                 # (F * fft, batch)
    out = lk.transpose(P.scatter_add(lk.constant(pos), flat, (total, flat.shape[1])))
    norm = np.zeros(total)
    np.add.at(norm, pos[:, 0], np.tile(win.astype(np.float64) ** 2, nf))
    start = fft_length // 2 if center else 0
    end = total - fft_length // 2 if center else total
    if length is not None:
        end = start + int(length)
    keep = slice(start, min(end, total))
    denom = np.where(norm > 1e-11, norm, 1.0)[keep].astype(frames.dtype)
    out = out[:, keep] / denom
    if length is not None and out.shape[-1] < int(length):
        out = lk.pad(out, [[0, 0], [0, int(length) - out.shape[-1]]])
    return lk.reshape(out, batch + [out.shape[-1]])


def cdist(x: TensorLike, y: TensorLike) -> Tensor:
    """Euclidean distances between the rows of ``x`` (..., n, d) and ``y`` (..., m, d)."""
    a, b = knp._common([floating(x), floating(y)])
    diff = lk.expand_dims(a, -2) - lk.expand_dims(b, -3)
    return lk.sqrt(lk.reduce_sum(diff * diff, axis=-1))


def view_as_real(x: TensorLike) -> Tensor:
    """A complex tensor as floats with a trailing axis of 2 (real, imag); no gradient."""
    x = t(x)
    if x.dtype.kind != "c":
        raise TypeError(f"keras_ops.view_as_real: x must be complex, received {x.dtype}")
    return P.run("view_as_real", lambda a: np.stack([a.real, a.imag], -1), x)


def view_as_complex(x: TensorLike) -> Tensor:
    """A float tensor with a trailing axis of 2 as complex numbers; no gradient."""
    x = floating(x)
    if x.ndim == 0 or x.shape[-1] != 2:
        raise ValueError(f"keras_ops.view_as_complex: the last axis must have length 2, "
                         f"received shape {x.shape}")
    return P.run("view_as_complex", lambda a: (a[..., 0] + 1j * a[..., 1]).astype(
        np.complex128 if a.dtype == np.float64 else np.complex64), x)
