"""keras.ops.nn: activations, normalisations, losses, convolutions and pooling.

Keras 3 defaults apply where they differ from ``lk.nn``: ``gelu(approximate=True)``,
``leaky_relu(negative_slope=0.2)``, ``one_hot(axis=-1)`` float32, channels-last
``data_format`` with lowercase ``padding`` ("valid"/"same").
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

import layerkit as lk
from layerkit._core.tensor import Tensor
from layerkit._core.types import AxisLike, DTypeLike, TensorLike
from layerkit.keras_ops import _prims as P
from layerkit.keras_ops import numpy as knp
from layerkit.keras_ops._prims import FLOATX, axes_arg, axis_one, dtype_arg, floating, t

__all__ = ["relu", "relu6", "sigmoid", "softplus", "softsign", "silu", "swish",
           "log_sigmoid", "leaky_relu", "hard_sigmoid", "hard_silu", "hard_swish", "elu",
           "selu", "gelu", "celu", "glu", "hard_tanh", "hard_shrink", "soft_shrink",
           "tanh_shrink", "threshold", "sparse_plus", "sparse_sigmoid", "squareplus",
           "sparsemax", "softmax", "log_softmax", "one_hot", "multi_hot", "moments",
           "batch_normalization", "layer_normalization", "rms_normalization", "normalize",
           "binary_crossentropy", "categorical_crossentropy",
           "sparse_categorical_crossentropy", "conv", "conv_transpose", "depthwise_conv",
           "separable_conv", "max_pool", "average_pool", "adaptive_average_pool",
           "adaptive_max_pool", "dot_product_attention", "psnr", "depth_to_space",
           "space_to_depth", "unfold", "fold", "ctc_loss", "ctc_decode", "polar"]

EPSILON = 1e-7   # keras.config.epsilon()


# ---- activations -----------------------------------------------------------------------------
def relu(x: TensorLike) -> Tensor:
    """max(x, 0) (keeps integer dtypes)."""
    x = t(x)
    return lk.nn.relu(x) if x.dtype.kind == "f" else lk.maximum(x, 0)


def relu6(x: TensorLike) -> Tensor:
    """min(max(x, 0), 6) (keeps integer dtypes)."""
    x = t(x)
    return lk.nn.relu6(x) if x.dtype.kind == "f" else lk.clip_by_value(x, 0, 6)


def sigmoid(x: TensorLike) -> Tensor:
    """1 / (1 + exp(-x))."""
    return lk.sigmoid(floating(x))


def softplus(x: TensorLike) -> Tensor:
    """log(1 + exp(x)), stable."""
    return lk.nn.softplus(floating(x))


def softsign(x: TensorLike) -> Tensor:
    """x / (1 + |x|)."""
    x = floating(x)
    return x / (1.0 + lk.abs(x))


def silu(x: TensorLike) -> Tensor:
    """x * sigmoid(x)."""
    return lk.nn.silu(floating(x))


swish = silu


def log_sigmoid(x: TensorLike) -> Tensor:
    """log(sigmoid(x)) = -softplus(-x), stable."""
    return -lk.nn.softplus(-floating(x))


def leaky_relu(x: TensorLike, negative_slope: float = 0.2) -> Tensor:
    """x for x >= 0, ``negative_slope * x`` otherwise (Keras default 0.2)."""
    return lk.nn.leaky_relu(floating(x), alpha=float(negative_slope))


def hard_sigmoid(x: TensorLike) -> Tensor:
    """relu6(x + 3) / 6, the piecewise-linear sigmoid."""
    return lk.nn.relu6(floating(x) + 3.0) * (1.0 / 6.0)


def hard_silu(x: TensorLike) -> Tensor:
    """x * hard_sigmoid(x)."""
    x = floating(x)
    return x * hard_sigmoid(x)


hard_swish = hard_silu


def elu(x: TensorLike, alpha: float = 1.0) -> Tensor:
    """x for x > 0, ``alpha * (exp(x) - 1)`` otherwise."""
    return lk.nn.elu(floating(x), alpha=float(alpha))


def selu(x: TensorLike) -> Tensor:
    """Scaled ELU with the self-normalising constants."""
    return lk.nn.selu(floating(x))


def gelu(x: TensorLike, approximate: bool = True) -> Tensor:
    """Gaussian error linear unit; Keras's default is the tanh approximation."""
    return lk.nn.gelu(floating(x), approximate=bool(approximate))


def celu(x: TensorLike, alpha: float = 1.0) -> Tensor:
    """max(x, 0) + min(0, alpha * (exp(x / alpha) - 1))."""
    x = floating(x)
    a = float(alpha)
    return lk.maximum(x, 0.0) + lk.minimum(0.0, a * lk.expm1(x / a))


def glu(x: TensorLike, axis: int = -1) -> Tensor:
    """Gated linear unit: ``a * sigmoid(b)`` for the two halves of ``x`` on ``axis``."""
    x = floating(x)
    ax = axis_one(axis, x.ndim, "glu")
    if x.shape[ax] % 2:
        raise ValueError(f"keras_ops.glu: axis {axis} must have an even length, received "
                         f"shape {x.shape}")
    a, b = lk.split(x, 2, axis=ax)
    return a * lk.sigmoid(b)


def hard_tanh(x: TensorLike) -> Tensor:
    """x clipped to [-1, 1]."""
    return lk.clip_by_value(floating(x), -1.0, 1.0)


def hard_shrink(x: TensorLike, threshold: float = 0.5) -> Tensor:
    """x where |x| > threshold, else 0."""
    x = floating(x)
    return lk.where(lk.abs(x) > threshold, x, lk.zeros_like(x))


def soft_shrink(x: TensorLike, threshold: float = 0.5) -> Tensor:
    """x - threshold above it, x + threshold below -threshold, else 0."""
    x = floating(x)
    th = float(threshold)
    return lk.where(x > th, x - th, lk.where(x < -th, x + th, lk.zeros_like(x)))


def tanh_shrink(x: TensorLike) -> Tensor:
    """x - tanh(x)."""
    x = floating(x)
    return x - lk.tanh(x)


def threshold(x: TensorLike, threshold: float, default_value: float) -> Tensor:
    """x where x > threshold, else ``default_value``."""
    x = floating(x)
    return lk.where(x > threshold, x, lk.fill(x.shape, np.asarray(default_value, x.dtype)))


def sparse_plus(x: TensorLike) -> Tensor:
    """0 for x <= -1, x for x >= 1, (x + 1)^2 / 4 between."""
    x = floating(x)
    return lk.where(x <= -1.0, lk.zeros_like(x),
                    lk.where(x >= 1.0, x, 0.25 * lk.square(x + 1.0)))


def sparse_sigmoid(x: TensorLike) -> Tensor:
    """0 for x <= -1, 1 for x >= 1, (x + 1) / 2 between."""
    x = floating(x)
    return lk.clip_by_value(0.5 * (x + 1.0), 0.0, 1.0)


def squareplus(x: TensorLike, b: float = 4) -> Tensor:
    """(x + sqrt(x^2 + b)) / 2."""
    x = floating(x)
    return 0.5 * (x + lk.sqrt(x * x + float(b)))


def sparsemax(x: TensorLike, axis: int = -1) -> Tensor:
    """Euclidean projection of ``x`` onto the probability simplex along ``axis``."""
    x = floating(x)
    ax = axis_one(axis, x.ndim, "sparsemax")
    y = P.moveaxis_to_end(x, ax)
    n = y.shape[-1]
    z = knp.flip(knp.sort(y, -1), -1)                  # descending
    k = np.arange(1, n + 1, dtype=x.dtype)
    csum = lk.cumsum(z, axis=y.ndim - 1)
    support = lk.cast(1.0 + k * z > csum, x.dtype)
    kz = lk.reduce_sum(support, axis=-1, keepdims=True)
    tau = (lk.reduce_sum(z * support, axis=-1, keepdims=True) - 1.0) / kz
    return P.moveaxis_from_end(lk.maximum(y - tau, 0.0), ax)


def softmax(x: TensorLike, axis: AxisLike = -1) -> Tensor:
    """exp(x) normalised over ``axis`` (an int or a tuple of ints)."""
    x = floating(x)
    if isinstance(axis, (list, tuple)):
        ax = list(axes_arg(axis, x.ndim, "softmax"))
        return lk.exp(x - lk.reduce_logsumexp(x, axis=ax, keepdims=True))
    return lk.nn.softmax(x, axis=axis_one(axis, x.ndim, "softmax"))


def log_softmax(x: TensorLike, axis: AxisLike = -1) -> Tensor:
    """log(softmax(x)) over ``axis``, stable."""
    x = floating(x)
    if isinstance(axis, (list, tuple)):
        ax = list(axes_arg(axis, x.ndim, "log_softmax"))
        return x - lk.reduce_logsumexp(x, axis=ax, keepdims=True)
    return lk.nn.log_softmax(x, axis=axis_one(axis, x.ndim, "log_softmax"))


# ---- encodings -------------------------------------------------------------------------------
def one_hot(x: TensorLike, num_classes: int, axis: int = -1, dtype: DTypeLike = None,
            sparse: bool = False) -> Tensor:
    """One-hot rows of the integer ``x`` (out-of-range indices give all zeros); the new
    axis is ``axis``; float32 unless ``dtype``."""
    if sparse:
        raise ValueError("keras_ops.one_hot: sparse=True is not supported")
    x = t(x)
    if x.dtype.kind not in "iu":
        x = lk.cast(x, np.int64)
    d = dtype_arg(dtype, "one_hot") or FLOATX
    ax = axis_one(axis, x.ndim + 1, "one_hot")
    # Compared with a constant range (a recorded op), not lk.one_hot, which encodes in
    # NumPy and so cannot be replayed inside lk.function.
    classes = np.arange(int(num_classes), dtype=x.dtype)
    out = lk.cast(lk.equal(lk.expand_dims(x, -1), classes), d)
    return out if ax == x.ndim else P.moveaxis_from_end(out, ax)


def multi_hot(inputs: Any, num_classes: int | None = None, axis: int = -1, dtype: DTypeLike = None,
              sparse: bool = False, **kwargs: Any) -> Tensor:
    """1 at every class listed in the last axis of ``inputs`` (a batch of index lists,
    or one 1-D list), 0 elsewhere."""
    if num_classes is None:
        num_classes = kwargs.pop("num_tokens", None)
    if num_classes is None:
        raise ValueError("keras_ops.multi_hot: num_classes is required")
    x = t(inputs)
    d = dtype_arg(dtype, "multi_hot") or FLOATX
    oh = one_hot(x, num_classes, axis=-1, dtype=d, sparse=sparse)
    red = lk.reduce_max(oh, axis=oh.ndim - 2) if x.ndim >= 1 else oh
    if x.ndim >= 2 and axis not in (-1, red.ndim - 1):
        red = P.moveaxis_from_end(red, axis_one(axis, red.ndim, "multi_hot"))
    return red


# ---- normalisation ---------------------------------------------------------------------------
def moments(x: TensorLike, axes: Any, keepdims: bool = False, synchronized: bool = False) -> tuple:
    """``(mean, variance)`` of ``x`` over ``axes``."""
    x = floating(x)
    ax = list(axes_arg(axes, x.ndim, "moments"))
    return lk.nn.moments(x, ax, keepdims=keepdims)


def batch_normalization(x: TensorLike, mean: TensorLike, variance: TensorLike, axis: int,
                        offset: TensorLike | None = None, scale: Any = None,
                        epsilon: float = 1e-3) -> Tensor:
    """``(x - mean) / sqrt(variance + epsilon) * scale + offset``, with 1-D statistics
    laid along ``axis``."""
    x = floating(x)
    ax = axis_one(axis, x.ndim, "batch_normalization")
    view = [1] * x.ndim
    view[ax] = x.shape[ax]

    def shaped(v):
        if v is None:
            return None
        v = lk.cast(t(v), x.dtype)
        return lk.reshape(v, view) if v.ndim == 1 else v

    inv = lk.rsqrt(shaped(variance) + float(epsilon))
    if scale is not None:
        inv = inv * shaped(scale)
    out = (x - shaped(mean)) * inv
    return out + shaped(offset) if offset is not None else out


def layer_normalization(x: TensorLike, gamma: TensorLike | None = None,
                        beta: TensorLike | None = None, axis: int | Sequence[int] = -1,
                        epsilon: float | None = None, **kwargs: Any) -> Tensor:
    """Normalise over ``axis`` to zero mean and unit variance, then ``* gamma + beta``
    (``epsilon`` defaults to 1e-7; ``rms_scaling=True`` divides by the RMS only)."""
    eps = EPSILON if epsilon is None else float(epsilon)
    rms = bool(kwargs.pop("rms_scaling", False))
    if kwargs:
        raise TypeError(f"keras_ops.layer_normalization: unexpected arguments {sorted(kwargs)}")
    x = floating(x)
    ax = sorted(axes_arg(axis, x.ndim, "layer_normalization"))
    view = [x.shape[i] if i in ax else 1 for i in range(x.ndim)]

    def shaped(v):
        v = lk.cast(t(v), x.dtype)
        return lk.reshape(v, view) if v.ndim != x.ndim and ax != [x.ndim - 1] else v

    mean, var_ = lk.nn.moments(x, ax, keepdims=True)
    if rms:
        out = x * lk.rsqrt(var_ + eps)
        return out * shaped(gamma) if gamma is not None else out
    inv = lk.rsqrt(var_ + eps)
    if gamma is not None:
        inv = inv * shaped(gamma)
    out = (x - mean) * inv
    return out + shaped(beta) if beta is not None else out


def rms_normalization(x: TensorLike, scale: Any = None, axis: int | Sequence[int] = -1,
                      epsilon: float | None = None) -> Tensor:
    """``x / sqrt(mean(x^2 over axis) + epsilon) * scale`` (epsilon default 1e-7)."""
    eps = EPSILON if epsilon is None else float(epsilon)
    x = floating(x)
    ax = list(axes_arg(axis, x.ndim, "rms_normalization"))
    out = x * lk.rsqrt(lk.reduce_mean(lk.square(x), axis=ax, keepdims=True) + eps)
    return out * lk.cast(t(scale), x.dtype) if scale is not None else out


def normalize(x: TensorLike, axis: int = -1, order: int = 2,
              epsilon: float | None = None) -> Tensor:
    """``x`` divided by its ``order``-norm over ``axis`` (at least ``epsilon``, default
    1e-7)."""
    if not isinstance(order, int) or order < 1:
        raise ValueError(f"keras_ops.normalize: order must be an int >= 1, received {order!r}")
    eps = EPSILON if epsilon is None else float(epsilon)
    x = floating(x)
    if x.ndim == 0:
        x = lk.reshape(x, [1])
    ax = list(axes_arg(axis, x.ndim, "normalize"))
    if order == 2:
        inv = lk.rsqrt(lk.reduce_sum(lk.square(x), axis=ax, keepdims=True))
        return x * lk.minimum(inv, 1.0 / eps)
    n = lk.pow(lk.reduce_sum(lk.pow(lk.abs(x), float(order)), axis=ax, keepdims=True),
               1.0 / order)
    return x / lk.maximum(n, eps)


# ---- losses ----------------------------------------------------------------------------------
def _same_shape(target, output, who):
    if target.shape != output.shape:
        raise ValueError(f"keras_ops.{who}: target and output must have the same shape, "
                         f"received target.shape={target.shape}, output.shape={output.shape}")


def binary_crossentropy(target: TensorLike, output: TensorLike,
                        from_logits: bool = False) -> Tensor:
    """Elementwise binary cross-entropy (probabilities clipped to [1e-7, 1 - 1e-7])."""
    output = floating(output)
    target = lk.cast(t(target), output.dtype)
    _same_shape(target, output, "binary_crossentropy")
    if from_logits:
        return lk.nn.sigmoid_cross_entropy_with_logits(labels=target, logits=output)
    p = lk.clip_by_value(output, EPSILON, 1.0 - EPSILON)
    return -(target * lk.log(p) + (1.0 - target) * lk.log(1.0 - p))


def categorical_crossentropy(target: TensorLike, output: TensorLike, from_logits: bool = False,
                             axis: int = -1) -> Tensor:
    """Cross-entropy between one-hot (or soft) ``target`` and ``output`` over ``axis``;
    probabilities are renormalised and clipped to [1e-7, 1 - 1e-7]."""
    output = floating(output)
    target = lk.cast(t(target), output.dtype)
    _same_shape(target, output, "categorical_crossentropy")
    if output.ndim < 1:
        raise ValueError("keras_ops.categorical_crossentropy: inputs must be at least rank 1")
    ax = axis_one(axis, output.ndim, "categorical_crossentropy")
    if from_logits:
        logp = lk.nn.log_softmax(output, axis=ax)
    else:
        p = output / lk.reduce_sum(output, axis=ax, keepdims=True)
        logp = lk.log(lk.clip_by_value(p, EPSILON, 1.0 - EPSILON))
    return -lk.reduce_sum(target * logp, axis=ax)


def sparse_categorical_crossentropy(target: TensorLike, output: TensorLike,
                                    from_logits: bool = False, axis: int = -1) -> Tensor:
    """``categorical_crossentropy`` with integer class ``target`` (a trailing length-1
    axis is dropped)."""
    output = floating(output)
    target = t(target)
    if output.ndim < 1:
        raise ValueError("keras_ops.sparse_categorical_crossentropy: output must be at "
                         "least rank 1")
    ax = axis_one(axis, output.ndim, "sparse_categorical_crossentropy")
    if target.ndim == output.ndim and target.shape[ax] == 1:
        target = lk.squeeze(target, [ax])
    expect = output.shape[:ax] + output.shape[ax + 1:]
    if tuple(target.shape) != expect:
        raise ValueError("keras_ops.sparse_categorical_crossentropy: target shape must be "
                         f"output's without the class axis, received target.shape="
                         f"{target.shape}, output.shape={output.shape}")
    oh = one_hot(lk.cast(target, np.int64), output.shape[ax], axis=ax, dtype=output.dtype)
    return categorical_crossentropy(oh, output, from_logits, ax)


def polar(abs_: TensorLike, angle: TensorLike) -> Tensor:
    """The complex tensor ``abs_ * exp(1j * angle)`` (complex64 for float32; no
    gradient)."""
    a, th = P.float_pair(abs_, angle)
    a, th = t(a), lk.cast(t(th), t(a).dtype)
    return P.run("polar", lambda r, p: (r * np.exp(1j * p)).astype(
        np.complex128 if r.dtype == np.float64 else np.complex64), a, th)


def psnr(x1: TensorLike, x2: TensorLike, max_val: Any) -> Tensor:
    """Peak signal-to-noise ratio in dB over all elements."""
    a, b = P.float_pair(x1, x2)
    a, b = t(a), t(b)
    if a.shape != b.shape:
        raise ValueError(f"keras_ops.psnr: inputs must have the same shape, received "
                         f"{a.shape} and {b.shape}")
    mse = lk.reduce_mean(lk.square(a - b))
    return (20.0 * lk.log(lk.cast(t(max_val), a.dtype)) - 10.0 * lk.log(mse)) * float(
        1.0 / np.log(10.0))


# ---- convolution and pooling -----------------------------------------------------------------
def _to_last(x: Tensor, data_format: str | None) -> tuple[Tensor, bool]:
    if data_format in (None, "channels_last"):
        return x, False
    if data_format != "channels_first":
        raise ValueError(f"keras_ops: data_format must be 'channels_last' or "
                         f"'channels_first', received {data_format!r}")
    return lk.transpose(x, [0, *range(2, x.ndim), 1]), True


def _from_last(x: Tensor, moved: bool):
    return lk.transpose(x, [0, x.ndim - 1, *range(1, x.ndim - 1)]) if moved else x


def _padding(padding, who):
    p = str(padding).lower()
    if p not in ("valid", "same"):
        raise ValueError(f"keras_ops.{who}: padding must be 'valid' or 'same', received "
                         f"{padding!r}")
    return p.upper()


def _tuple(v, n, who, what):
    if isinstance(v, (int, np.integer)):
        return (int(v),) * n
    v = tuple(int(i) for i in v)
    if len(v) != n:
        raise ValueError(f"keras_ops.{who}: {what} needs {n} values, received {v}")
    return v


def conv(inputs: Any, kernel: TensorLike, strides: int | Sequence[int] = 1, padding: str = "valid",
         data_format: str | None = None, dilation_rate: int | Sequence[int] = 1) -> Tensor:
    """N-D convolution; ``kernel`` is ``(*spatial, in_channels / groups, out_channels)``
    (grouped when the input has a multiple of the kernel's input channels)."""
    x, moved = _to_last(floating(inputs), data_format)
    k = lk.cast(t(kernel), x.dtype)
    n = x.ndim - 2
    out = lk.nn.convolution(x, k, strides=_tuple(strides, n, "conv", "strides"),
                            padding=_padding(padding, "conv"),
                            dilations=_tuple(dilation_rate, n, "conv", "dilation_rate"))
    return _from_last(out, moved)


def _deconv_length(n, k, s, pad, out_pad, d):
    k = (k - 1) * d + 1
    if out_pad is None:
        return n * s if pad == "SAME" else n * s + max(k - s, 0)
    p = k // 2 if pad == "SAME" else 0
    return (n - 1) * s + k - 2 * p + out_pad


def conv_transpose(inputs: Any, kernel: TensorLike, strides: int | Sequence[int] = 1,
                   padding: str = "valid", output_padding: Any = None,
                   data_format: str | None = None,
                   dilation_rate: int | Sequence[int] = 1) -> Tensor:
    """Transposed N-D convolution; ``kernel`` is ``(*spatial, out_channels,
    in_channels)``; the output length follows Keras's rule (``output_padding``)."""
    x, moved = _to_last(floating(inputs), data_format)
    k = lk.cast(t(kernel), x.dtype)
    n = x.ndim - 2
    s = _tuple(strides, n, "conv_transpose", "strides")
    d = _tuple(dilation_rate, n, "conv_transpose", "dilation_rate")
    pad = _padding(padding, "conv_transpose")
    op = [None] * n if output_padding is None else _tuple(output_padding, n,
                                                          "conv_transpose", "output_padding")
    sizes = [_deconv_length(x.shape[1 + i], k.shape[i], s[i], pad, op[i], d[i])
             for i in range(n)]
    out_shape = [x.shape[0], *sizes, k.shape[-2]]
    out = lk.nn.conv_transpose(x, k, out_shape, s, padding=pad, dilations=d)
    return _from_last(out, moved)


def depthwise_conv(inputs: Any, kernel: TensorLike, strides: int | Sequence[int] = 1,
                   padding: str = "valid", data_format: str | None = None,
                   dilation_rate: int | Sequence[int] = 1) -> Tensor:
    """Depthwise 1-D or 2-D convolution; ``kernel`` is ``(*spatial, in, multiplier)``."""
    x, moved = _to_last(floating(inputs), data_format)
    k = lk.cast(t(kernel), x.dtype)
    n = x.ndim - 2
    if n not in (1, 2):
        raise ValueError(f"keras_ops.depthwise_conv: 1-D or 2-D inputs only, received rank "
                         f"{x.ndim}")
    s = _tuple(strides, n, "depthwise_conv", "strides")
    d = _tuple(dilation_rate, n, "depthwise_conv", "dilation_rate")
    pad = _padding(padding, "depthwise_conv")
    if n == 1:
        out = lk.nn.depthwise_conv2d(lk.expand_dims(x, 1), lk.expand_dims(k, 0),
                                     [1, 1, s[0], 1], pad, dilations=(1, d[0]))
        out = lk.squeeze(out, [1])
    else:
        out = lk.nn.depthwise_conv2d(x, k, [1, s[0], s[1], 1], pad, dilations=d)
    return _from_last(out, moved)


def separable_conv(inputs: Any, depthwise_kernel: TensorLike, pointwise_kernel: TensorLike,
                   strides: int | Sequence[int] = 1, padding: str = "valid",
                   data_format: str | None = None,
                   dilation_rate: int | Sequence[int] = 1) -> Tensor:
    """Depthwise convolution followed by a 1x1 (pointwise) convolution."""
    x, moved = _to_last(floating(inputs), data_format)
    y = depthwise_conv(x, depthwise_kernel, strides, padding, None, dilation_rate)
    pk = lk.cast(t(pointwise_kernel), x.dtype)
    out = lk.tensordot(y, lk.reshape(pk, [pk.shape[-2], pk.shape[-1]]), 1)
    return _from_last(out, moved)


def _pool(kind, inputs, pool_size, strides, padding, data_format, who):
    x, moved = _to_last(floating(inputs), data_format)
    n = x.ndim - 2
    ks = _tuple(pool_size, n, who, "pool_size")
    st = ks if strides is None else _tuple(strides, n, who, "strides")
    fn = lk.nn.max_pool if kind == "max" else lk.nn.avg_pool
    return _from_last(fn(x, ks, st, _padding(padding, who)), moved)


def max_pool(inputs: Any, pool_size: int | Sequence[int],
             strides: int | Sequence[int] | None = None, padding: str = "valid",
             data_format: str | None = None) -> Tensor:
    """N-D max pooling (``strides`` default to ``pool_size``)."""
    return _pool("max", inputs, pool_size, strides, padding, data_format, "max_pool")


def average_pool(inputs: Any, pool_size: int | Sequence[int],
                 strides: int | Sequence[int] | None = None, padding: str = "valid",
                 data_format: str | None = None) -> Tensor:
    """N-D average pooling (``'same'`` averages over the valid entries only)."""
    return _pool("avg", inputs, pool_size, strides, padding, data_format, "average_pool")


def _adaptive(kind, inputs, output_size, data_format, who):
    x, moved = _to_last(floating(inputs), data_format)
    n = x.ndim - 2
    outs = _tuple(output_size, n, who, "output_size")
    reduce = lk.reduce_max if kind == "max" else lk.reduce_mean
    for i, m in enumerate(outs):
        ax = 1 + i
        length = x.shape[ax]
        parts = []
        for j in range(m):
            a = (j * length) // m
            b = -((-(j + 1) * length) // m)
            begin = [0] * x.ndim
            begin[ax] = a
            size = [-1] * x.ndim
            size[ax] = b - a
            parts.append(reduce(lk.slice(x, begin, size), axis=ax, keepdims=True))
        x = lk.concat(parts, ax)
    return _from_last(x, moved)


def adaptive_average_pool(inputs: Any, output_size: Any, data_format: str | None = None) -> Tensor:
    """Average pooling to a fixed ``output_size`` (PyTorch's bin boundaries)."""
    return _adaptive("avg", inputs, output_size, data_format, "adaptive_average_pool")


def adaptive_max_pool(inputs: Any, output_size: Any, data_format: str | None = None) -> Tensor:
    """Max pooling to a fixed ``output_size`` (PyTorch's bin boundaries)."""
    return _adaptive("max", inputs, output_size, data_format, "adaptive_max_pool")


def depth_to_space(x: TensorLike, block_size: int, data_format: str = "channels_last") -> Tensor:
    """Move channel blocks into ``block_size x block_size`` spatial blocks (NHWC)."""
    x, moved = _to_last(floating(x) if t(x).dtype.kind not in "fiu" else t(x), data_format)
    b = int(block_size)
    n, h, w, c = x.shape
    if c % (b * b):
        raise ValueError(f"keras_ops.depth_to_space: channels {c} are not divisible by "
                         f"block_size**2 = {b * b}")
    y = lk.reshape(x, [n, h, w, b, b, c // (b * b)])
    y = lk.transpose(y, [0, 1, 3, 2, 4, 5])
    return _from_last(lk.reshape(y, [n, h * b, w * b, c // (b * b)]), moved)


def space_to_depth(x: TensorLike, block_size: int, data_format: str = "channels_last") -> Tensor:
    """Move ``block_size x block_size`` spatial blocks into channels (NHWC)."""
    x, moved = _to_last(t(x), data_format)
    b = int(block_size)
    n, h, w, c = x.shape
    if h % b or w % b:
        raise ValueError(f"keras_ops.space_to_depth: height {h} and width {w} must be "
                         f"divisible by block_size {b}")
    y = lk.reshape(x, [n, h // b, b, w // b, b, c])
    y = lk.transpose(y, [0, 1, 3, 2, 4, 5])
    return _from_last(lk.reshape(y, [n, h // b, w // b, b * b * c]), moved)


def _patch_index(size, k, d, p, s):
    out = (size + 2 * p - d * (k - 1) - 1) // s + 1
    return (np.arange(out)[:, None] * s + np.arange(k)[None, :] * d), out


def unfold(x: TensorLike, kernel_size: int | Sequence[int], dilation: int = 1, padding: int = 0,
           stride: int = 1) -> Tensor:
    """Sliding local blocks of an NCHW tensor as ``(N, C * kh * kw, L)`` (PyTorch's
    ``unfold``, which Keras follows)."""
    x = t(x)
    if x.ndim != 4:
        raise ValueError(f"keras_ops.unfold: x must be NCHW (rank 4), received {x.shape}")
    kh, kw = _tuple(kernel_size, 2, "unfold", "kernel_size")
    dh, dw = _tuple(dilation, 2, "unfold", "dilation")
    ph, pw = _tuple(padding, 2, "unfold", "padding")
    sh, sw = _tuple(stride, 2, "unfold", "stride")
    n, c, h, w = x.shape
    xp = lk.pad(x, [[0, 0], [0, 0], [ph, ph], [pw, pw]])
    ih, oh = _patch_index(h, kh, dh, ph, sh)
    iw, ow = _patch_index(w, kw, dw, pw, sw)
    rows = lk.gather(xp, lk.constant(ih.reshape(-1)), axis=2)     # N C (oh kh) W
    rows = lk.reshape(rows, [n, c, oh, kh, xp.shape[3]])
    cols = lk.gather(rows, lk.constant(iw.reshape(-1)), axis=4)   # N C oh kh (ow kw)
    cols = lk.reshape(cols, [n, c, oh, kh, ow, kw])
    cols = lk.transpose(cols, [0, 1, 3, 5, 2, 4])
    return lk.reshape(cols, [n, c * kh * kw, oh * ow])


def fold(x: TensorLike, output_size: Any, kernel_size: int | Sequence[int], dilation: int = 1,
         padding: int = 0, stride: int = 1) -> Tensor:
    """The adjoint of ``unfold``: sums ``(N, C * kh * kw, L)`` blocks into NCHW."""
    x = t(x)
    oh_, ow_ = _tuple(output_size, 2, "fold", "output_size")
    kh, kw = _tuple(kernel_size, 2, "fold", "kernel_size")
    dh, dw = _tuple(dilation, 2, "fold", "dilation")
    ph, pw = _tuple(padding, 2, "fold", "padding")
    sh, sw = _tuple(stride, 2, "fold", "stride")
    n, ckk, L = x.shape
    c = ckk // (kh * kw)
    ih, oh = _patch_index(oh_, kh, dh, ph, sh)
    iw, ow = _patch_index(ow_, kw, dw, pw, sw)
    if oh * ow != L:
        raise ValueError(f"keras_ops.fold: {L} blocks do not match output_size "
                         f"{(oh_, ow_)} ({oh * ow} blocks)")
    hp, wp = oh_ + 2 * ph, ow_ + 2 * pw
    flat = (ih.T[:, None, :, None] * wp + iw.T[None, :, None, :])   # kh kw oh ow
    y = lk.transpose(lk.reshape(x, [n, c, kh * kw * oh * ow]), [2, 0, 1])
    idx = lk.constant(flat.reshape(-1, 1).astype(np.int64))
    out = P.scatter_add(idx, y, (hp * wp, n, c))
    out = lk.reshape(lk.transpose(out, [1, 2, 0]), [n, c, hp, wp])
    return lk.slice(out, [0, 0, ph, pw], [n, c, oh_, ow_])


# ---- attention -------------------------------------------------------------------------------
def dot_product_attention(query: TensorLike, key: TensorLike, value: Any,
                          bias: TensorLike | None = None, mask: Any = None, scale: Any = None,
                          is_causal: bool = False, flash_attention: Any = None,
                          attn_logits_soft_cap: Any = None) -> Tensor:
    """Scaled dot-product attention on ``(batch, seq, heads, dim)`` tensors (3-D inputs
    without the heads axis also work); ``mask`` is True where attention is allowed."""
    q, k, v = floating(query), floating(key), floating(value)
    squeeze = q.ndim == 3
    if squeeze:
        q, k, v = (lk.expand_dims(z, 2) for z in (q, k, v))
    hq, hk = q.shape[2], k.shape[2]
    if hq != hk:
        if hq % hk:
            raise ValueError(f"keras_ops.dot_product_attention: {hq} query heads are not a "
                             f"multiple of {hk} key heads")
        k = knp.repeat(k, hq // hk, axis=2)
        v = knp.repeat(v, hq // hk, axis=2)
    s = float(1.0 / np.sqrt(q.shape[-1])) if scale is None else float(scale)
    logits = lk.einsum("btnh,bsnh->bnts", q, k) * s
    if attn_logits_soft_cap is not None:
        cap = float(attn_logits_soft_cap)
        logits = lk.tanh(logits / cap) * cap
    if bias is not None:
        logits = logits + lk.cast(t(bias), logits.dtype)
    allowed = None
    if mask is not None:
        allowed = lk.cast(t(mask), "bool")
    if is_causal:
        tq, tk = q.shape[1], k.shape[1]
        causal = lk.constant(np.tril(np.ones((tq, tk), bool)))
        allowed = causal if allowed is None else lk.logical_and(allowed, causal)
    if allowed is not None:
        logits = lk.where(allowed, logits, float(np.finfo(logits.dtype).min) * 0.5)
    probs = lk.nn.softmax(logits, axis=-1)
    out = lk.einsum("bnts,bsnh->btnh", probs, v)
    return lk.squeeze(out, [2]) if squeeze else out


# ---- CTC ----------------------------------------------------------------------------------------
_NEG = -1e30   # log(0) stand-in: finite, so logaddexp and its gradient stay NaN-free


def _lse3(a, b, c):
    m = lk.maximum(lk.maximum(a, b), c)
    return m + lk.log(lk.exp(a - m) + lk.exp(b - m) + lk.exp(c - m))


def ctc_loss(target: TensorLike, output: TensorLike, target_length: TensorLike,
             output_length: TensorLike, mask_index: int = 0) -> Tensor:
    """Connectionist temporal classification loss per batch entry.

    Args:
        target: ``(batch, max_label_length)`` integer labels (padding ignored past
            ``target_length``).
        output: ``(batch, max_time, num_classes)`` logits.
        target_length: ``(batch,)`` valid lengths.
        output_length: ``(batch,)`` valid lengths.
        mask_index: the blank class.

    Returns:
        ``(batch,)`` negative log-likelihoods (differentiable in ``output``).
    """
    logits = floating(output)
    lab = t(target)
    if lab.dtype.kind not in "iu":
        raise TypeError(f"keras_ops.ctc_loss: target must be integers, received {lab.dtype}")
    b, tmax, _ = logits.shape
    n = lab.shape[1]
    logp = lk.nn.log_softmax(logits, axis=-1)
    blank = int(mask_index)
    lab = lk.cast(lab, np.int64)
    ext = lk.reshape(lk.stack([lk.fill([b, n], np.int64(blank)), lab], 2), [b, 2 * n])
    ext = lk.concat([ext, lk.fill([b, 1], np.int64(blank))], 1)          # (B, S)
    s = 2 * n + 1
    lp = P.take_along(logp, lk.broadcast_to(lk.expand_dims(ext, 1), [b, tmax, s]), 2)
    prev2 = lk.concat([lk.fill([b, 2], np.int64(-1)), ext[:, :-2]], 1)
    skip = lk.logical_and(lk.not_equal(ext, blank), lk.not_equal(ext, prev2))
    out_len = lk.cast(t(output_length), np.int64)
    neg = lk.fill([b, s], np.asarray(_NEG, logits.dtype))
    start = np.zeros(s, bool)
    start[:2] = True
    alpha = lk.where(start, lp[:, 0], neg)
    pad1 = [[0, 0], [1, 0]]
    for step in range(1, tmax):
        a1 = lk.pad(alpha[:, :-1], pad1, constant_values=_NEG)
        a2 = lk.pad(alpha[:, :-2], [[0, 0], [2, 0]], constant_values=_NEG)
        new = _lse3(alpha, a1, lk.where(skip, a2, neg)) + lp[:, step]
        alpha = lk.where(lk.expand_dims(out_len > step, 1), new, alpha)
    last = lk.expand_dims(2 * lk.cast(t(target_length), np.int64), 1)     # index S_b - 1
    end = P.take_along(alpha, last, 1)[:, 0]
    before = P.take_along(alpha, lk.maximum(last - 1, 0), 1)[:, 0]
    before = lk.where(last[:, 0] > 0, before, lk.fill([b], np.asarray(_NEG, logits.dtype)))
    m = lk.maximum(end, before)
    return -(m + lk.log(lk.exp(end - m) + lk.exp(before - m)))


def ctc_decode(inputs: Any, sequence_lengths: TensorLike, strategy: str = "greedy",
               beam_width: int = 100, top_paths: int = 1, merge_repeated: bool = True,
               mask_index: int = 0) -> tuple:
    """Greedy CTC decoding: the best class per step, repeats merged (unless
    ``merge_repeated=False``) and blanks (``mask_index``) removed.

    Returns ``(decoded, scores)``: decoded ``(1, batch, max_time)`` int32 padded with -1,
    and ``(batch, 1)`` scores, minus the summed best inputs over the valid steps. Only
    ``strategy="greedy"`` is supported (no gradient).
    """
    if strategy != "greedy":
        raise ValueError(f"keras_ops.ctc_decode: only strategy='greedy' is supported, "
                         f"received {strategy!r}")
    x = floating(inputs)
    best = lk.cast(lk.argmax(x, axis=2), np.int32)
    valid = lk.less(np.arange(x.shape[1])[None, :],
                    lk.expand_dims(lk.cast(t(sequence_lengths), np.int64), 1))
    scores = -lk.reduce_sum(lk.where(valid, lk.reduce_max(x, axis=2), 0.0), axis=1,
                            keepdims=True)

    def fwd(best, valid, merge, blank):
        out = np.full(best.shape, -1, np.int32)
        for i, (row, ok) in enumerate(zip(best, valid)):
            seq = row[ok]
            if merge and seq.size:
                seq = seq[np.r_[True, seq[1:] != seq[:-1]]]
            seq = seq[seq != blank]
            out[i, :seq.size] = seq
        return out[None]

    decoded = P.run("ctc_decode", fwd, best, valid, merge=bool(merge_repeated),
                    blank=int(mask_index))
    return decoded, scores
