"""Neural-network ops: activations, softmax family, dropout, normalisation, cross-entropies.

Most functions here are composites of primitive ops and have no gradient rule of their
own (relu6, leaky_relu, elu, selu, silu, moments, batch_normalization, l2_normalize,
softmax/sigmoid cross-entropy). Records exist only where stability or speed
asks for one:

- ``relu`` and ``relu_grad`` (``g * (y > 0)``): relu's rule is one record, exact at
  every order since relu'' = 0, where a composite would need a select and a comparison.
  The mask is computed inside the record, so a traced graph recomputes it per call.
- ``softplus``: stable forward; a composite with ``abs``/``maximum`` would get the wrong
  derivative at exactly 0 (both kinks contribute 0 there instead of 1/2).
- ``softmax``/``log_softmax``: max-shifted forwards, rules that reuse the answer.
- ``sparse_softmax_cross_entropy_with_logits``: one pass; its label range check runs in
  the forward (so on every call of a traced graph), and its gradient
  ``(softmax - onehot) * g`` is the record ``sparse_softmax_cross_entropy_grad``.
- ``dropout_mask``: a stateful record (no inputs, no gradient) that draws the scaled
  keep-mask when it runs; ``dropout`` multiplies by it.
- ``gelu`` and its gradient ``gelu_grad``: block-wise float32 kernels (``kernels.activation``).

Every rule is written with layerkit ops, so gradients of gradients work.

The NumPy kernels behind the gelu, gelu_grad and softplus records (block-wise float32
chains, their measurements, the float32 erf-free gelu) are in
:mod:`layerkit.kernels.activation`.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from layerkit._core.convert import convert_to_tensor, to_array
from layerkit._core.op import Op, apply
from layerkit._core.tensor import Tensor
from layerkit._core.types import AxisLike, TensorLike
from layerkit.kernels import activation as _kact
from layerkit.primitives import array as _array
from layerkit.primitives import creation as _creation
from layerkit.primitives import elementwise as _ew
from layerkit.primitives import random as _random
from layerkit.primitives import reduce as _reduce
from layerkit.primitives.creation import axis_arg

# Public names are exported through ``layerkit.nn`` (not the top-level namespace).
__all__: list[str] = []

_INV_SQRT_2PI = _kact.INV_SQRT_2PI
_TANH_K = _kact.TANH_K      # gelu tanh form: tanh(K * (x + C * x^3))
_TANH_C = _kact.TANH_C
_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def _floating(x, op: str) -> Tensor:
    """``x`` as a Tensor, which must have a floating dtype."""
    t = x if isinstance(x, Tensor) else convert_to_tensor(x)
    if t.dtype.kind != "f":
        raise TypeError(
            f"lk.nn.{op}: expected a floating-point tensor, received dtype {t.dtype.name} "
            f"(convert with lk.cast(x, 'float32'))"
        )
    return t


def _axis_arg(axis, ndim: int, op: str) -> int:
    return axis_arg(axis, ndim, f"lk.nn.{op}")


# =====================================================================================
# relu
# =====================================================================================


def _relu_grad_fwd(g, y):
    return np.multiply(g, y > 0, dtype=np.result_type(g, y))


# g * (y > 0): relu's gradient as a record of its own, so that the mask is computed when
# the gradient runs (in a traced graph too), never captured as a constant. relu'' = 0, so
# its rule is itself for the upstream and nothing for y: exact at every order.
_RELU_GRAD = Op("relu_grad", _relu_grad_fwd,
                lambda h, ins, out, needs: (apply(_RELU_GRAD, h, ins[1]), None),
                "where({1} > 0, {0}, 0)", reads=(1,))


def relu_grad(g, y) -> Tensor:
    """``g * (y > 0)``: relu's gradient for the upstream ``g`` and relu's answer ``y``."""
    return apply(_RELU_GRAD, g, y)


_RELU = Op("relu", lambda x: np.maximum(x, 0),
           lambda g, ins, y, needs: (apply(_RELU_GRAD, g, y),), "where({0} > 0, {0}, 0)",
           reads=("out",))


def relu(features: TensorLike) -> Tensor:
    """Rectified linear unit ``max(features, 0)``; the gradient at 0 is 0 (as in TF).

    Examples:
        >>> import layerkit as lk
        >>> lk.nn.relu([-1.0, 2.0]).numpy()
        array([0., 2.], dtype=float32)
    """
    return apply(_RELU, features)


def relu6(features: TensorLike) -> Tensor:
    """``min(max(features, 0), 6)``; the gradient is 0 at 0 and at 6 (as in TF)."""
    # 6 first: minimum sends a tie's gradient to its first argument.
    return _ew.minimum(6, relu(features))


# leaky_relu(x, alpha) and leaky_relu_grad(g, x, alpha): records (the slope ``alpha`` is a
# Python-scalar input, so graph fusion still inlines their templates) whose kernels avoid
# np.where (15x slower here; see kernels/activation.py). leaky_relu_grad is linear in g
# and piecewise constant in x, so its rule is itself: exact at every order.
def _leaky_relu_grad_vjp(h, ins, out, needs):
    return apply(_LEAKY_RELU_GRAD, h, ins[1], ins[2]) if needs[0] else None, None, None


_LEAKY_RELU_GRAD = Op("leaky_relu_grad", _kact.leaky_relu_grad, _leaky_relu_grad_vjp,
                      "where({1} > 0, {0}, {0} * {2})", reads=(1, 2))
_LEAKY_RELU = Op("leaky_relu", _kact.leaky_relu,
                 lambda g, ins, y, needs: (apply(_LEAKY_RELU_GRAD, g, ins[0], ins[1]), None),
                 "where({0} > 0, {0}, {0} * {1})", reads=(0, 1))


def leaky_relu(features: TensorLike, alpha: float = 0.2) -> Tensor:
    """``features`` where positive, else ``alpha * features`` (gradient ``alpha`` at 0)."""
    x = _floating(features, "leaky_relu")
    return apply(_LEAKY_RELU, x, float(alpha))


def _neg_expm1(x: Tensor, alpha: float) -> Tensor:
    # alpha * expm1(x) on the negative side. The clamp keeps the unselected branch of
    # the select finite for large x: otherwise its zero gradient times exp(x) = inf is nan.
    return _ew.multiply(_ew.expm1(_ew.minimum(x, 0)), float(alpha))


def elu(features: TensorLike, alpha: float = 1.0) -> Tensor:
    """Exponential linear unit: ``x`` if ``x > 0`` else ``alpha * (exp(x) - 1)``."""
    x = _floating(features, "elu")
    return _ew.where(_ew.greater(x, 0), x, _neg_expm1(x, alpha))


def selu(features: TensorLike) -> Tensor:
    """Scaled ELU with the self-normalising constants of Klambauer et al. (2017)."""
    x = _floating(features, "selu")
    # >= 0: the gradient at 0 is ``scale`` (TF's SeluGrad tests ``x < 0``).
    return _ew.multiply(_ew.where(_ew.greater_equal(x, 0), x, _neg_expm1(x, _SELU_ALPHA)),
                        _SELU_SCALE)


def silu(features: TensorLike, beta: float = 1.0) -> Tensor:
    """Sigmoid linear unit (swish): ``features * sigmoid(beta * features)``."""
    x = _floating(features, "silu")
    z = x if beta == 1.0 else _ew.multiply(x, float(beta))
    return _ew.multiply(x, _ew.sigmoid(z))


# =====================================================================================
# softplus (record: stable forward, block-wise in float32)
# =====================================================================================


_SOFTPLUS = Op("softplus", _kact.softplus,
               lambda g, ins, y, needs: (_ew.multiply(g, _ew.sigmoid(ins[0])),),
               "where({0} > 0, {0} + log1p(exp(-{0})), log1p(exp({0})))", reads=(0,))


def softplus(features: TensorLike) -> Tensor:
    """``log(1 + exp(features))``, computed without overflow; the gradient is sigmoid.

    Examples:
        >>> import layerkit as lk
        >>> lk.nn.softplus([-1000.0, 0.0, 1000.0]).numpy().tolist()
        [0.0, 0.6931471824645996, 1000.0]
    """
    return apply(_SOFTPLUS, _floating(features, "softplus"))


# =====================================================================================
# gelu (record) and gelu_grad (record), block-wise float32 kernels
# =====================================================================================
def _gelu_second(x: Tensor, approximate: bool) -> Tensor:
    """gelu''(x) in layerkit ops (differentiable again)."""
    x2 = _ew.square(x)
    if not approximate:
        # d/dx [Phi + x phi] = 2 phi - x^2 phi
        pdf = _ew.multiply(_ew.exp(_ew.multiply(x2, -0.5)), _INV_SQRT_2PI)
        return _ew.multiply(pdf, _ew.subtract(2.0, x2))
    # t = tanh(u): gelu'' = (1 - t^2) * (u' - x t u'^2 + x u'' / 2), u'' = 6 K C x
    t = _ew.tanh(_ew.multiply(_ew.add(x, _ew.multiply(_ew.multiply(x2, x), _TANH_C)),
                              _TANH_K))
    du = _ew.multiply(_ew.add(_ew.multiply(x2, 3.0 * _TANH_C), 1.0), _TANH_K)
    inner = _ew.add(_ew.subtract(du, _ew.multiply(_ew.multiply(x, t), _ew.square(du))),
                    _ew.multiply(x2, 3.0 * _TANH_K * _TANH_C))
    return _ew.multiply(_ew.subtract(1.0, _ew.square(t)), inner)


def _gelu_grad_vjp(h, ins, dx, needs, approximate):
    # gelu_grad(x, y, g) = g * gelu'(x); y is the forward answer, a cache of gelu(x),
    # not a free input, so it gets no gradient.
    x, y, g = ins
    gx = (_ew.multiply(_ew.multiply(h, g), _gelu_second(x, approximate))
          if needs[0] else None)
    gg = apply(_GELU_GRAD, x, y, h, approximate=approximate) if needs[2] else None
    return gx, None, gg


_GELU_GRAD = Op("gelu_grad", _kact.gelu_grad, _gelu_grad_vjp, reads=(0, 1, 2))
_GELU = Op("gelu", _kact.gelu,
           lambda g, ins, y, needs, approximate: (
               apply(_GELU_GRAD, ins[0], y, g, approximate=approximate),), reads=(0, "out"))


def _gelu_approximate(approximate) -> bool:
    # TF/Keras pass a bool; PyTorch users write approximate='none' / 'tanh'.
    if isinstance(approximate, (bool, np.bool_)):
        return bool(approximate)
    if isinstance(approximate, str) and approximate in ("none", "tanh"):
        return approximate == "tanh"
    raise ValueError(
        f"lk.nn.gelu: approximate must be True/False, 'none' (exact) or 'tanh'; received "
        f"{approximate!r}")


def gelu(features: TensorLike, approximate: bool | str = False) -> Tensor:
    """Gaussian error linear unit ``x * Phi(x)`` (Phi: the standard normal CDF).

    Args:
        features: a float tensor.
        approximate: use the tanh form ``x/2 * (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))``.
            ``'none'`` (exact) and ``'tanh'`` are accepted as PyTorch spells them.

    Raises:
        TypeError: ``features`` is not a float tensor.
        ValueError: ``approximate`` is not a bool, ``'none'`` or ``'tanh'``.

    Examples:
        >>> import layerkit as lk
        >>> lk.nn.gelu([-1.0, 0.0, 1.0]).numpy().round(6)
        array([-0.158655,  0.      ,  0.841345], dtype=float32)
    """
    return apply(_GELU, _floating(features, "gelu"),
                 approximate=_gelu_approximate(approximate))


# =====================================================================================
# softmax, log_softmax (records)
# =====================================================================================


def _softmax_fwd(x, axis):
    if not x.size:  # an empty axis (TF: an empty result; max has no identity)
        return np.empty_like(x)
    e = x - np.maximum.reduce(x, axis=axis, keepdims=True)
    np.exp(e, out=e)
    e /= np.add.reduce(e, axis=axis, keepdims=True)
    return e


def _softmax_vjp(g, ins, y, needs, axis):
    # y * (g - sum(g * y)): the answer is reused, the input is not needed.
    gy = _ew.multiply(g, y)
    return (_ew.subtract(gy, _ew.multiply(y, _reduce.reduce_sum(gy, axis, keepdims=True))),)


def _log_softmax_fwd(x, axis):
    if not x.size:
        return np.empty_like(x)
    s = x - np.maximum.reduce(x, axis=axis, keepdims=True)
    s -= np.log(np.add.reduce(np.exp(s), axis=axis, keepdims=True))
    return s


def _log_softmax_vjp(g, ins, y, needs, axis):
    # g - softmax * sum(g), softmax = exp(answer)
    return (_ew.subtract(g, _ew.multiply(_ew.exp(y), _reduce.reduce_sum(g, axis, keepdims=True))),)


_SOFTMAX = Op("softmax", _softmax_fwd, _softmax_vjp, reads=("out",))
_LOG_SOFTMAX = Op("log_softmax", _log_softmax_fwd, _log_softmax_vjp, reads=("out",))


def softmax(logits: TensorLike, axis: int = -1) -> Tensor:
    """``exp(logits) / sum(exp(logits), axis)``, computed stably (shifted by the max).

    Raises:
        ValueError: ``axis`` is out of range.
    """
    x = _floating(logits, "softmax")
    return apply(_SOFTMAX, x, axis=_axis_arg(axis, x.ndim, "softmax"))


def log_softmax(logits: TensorLike, axis: int = -1) -> Tensor:
    """``logits - log(sum(exp(logits), axis))``, computed stably.

    Raises:
        ValueError: ``axis`` is out of range.
    """
    x = _floating(logits, "log_softmax")
    return apply(_LOG_SOFTMAX, x, axis=_axis_arg(axis, x.ndim, "log_softmax"))


# =====================================================================================
# cross-entropies
# =====================================================================================


def _labels_like(labels, logits: Tensor, op: str) -> Tensor:
    t = labels if isinstance(labels, Tensor) else convert_to_tensor(labels)
    if t.shape != logits.shape:
        raise ValueError(
            f"lk.nn.{op}: labels and logits must have the same shape, received labels "
            f"{t.shape} and logits {logits.shape}"
        )
    return t if t.dtype == logits.dtype else _ew.cast(t, logits.dtype)


def softmax_cross_entropy_with_logits(labels: TensorLike, logits: TensorLike,
                                      axis: int = -1) -> Tensor:
    """Cross-entropy between ``labels`` (probabilities) and ``softmax(logits)``.

    Computed as ``-sum(labels * log_softmax(logits), axis)``, stable for any logits.
    Gradients flow to both ``labels`` and ``logits`` (TF 2 semantics).

    Args:
        labels: same shape as ``logits``; each slice along ``axis`` a distribution.
        logits: unscaled log-probabilities.
        axis: the class axis.

    Returns:
        The loss, with ``axis`` removed.

    Raises:
        ValueError: the shapes differ or ``axis`` is out of range.
    """
    op = "softmax_cross_entropy_with_logits"
    x = _floating(logits, op)
    z = _labels_like(labels, x, op)
    a = _axis_arg(axis, x.ndim, op)
    return _ew.negative(_reduce.reduce_sum(_ew.multiply(z, log_softmax(x, a)), a))


def _check_labels(labels, num_classes: int) -> None:
    # In the forward, not in the front door: a traced graph runs it on every call.
    if labels.size and not num_classes:
        raise ValueError(
            f"lk.nn.sparse_softmax_cross_entropy_with_logits: logits have 0 classes (last "
            f"axis of length 0) but there are {labels.size} labels; need at least one class")
    if labels.size and (labels.min() < 0 or labels.max() >= num_classes):
        bad = (labels < 0) | (labels >= num_classes)
        first = np.asarray(labels)[bad].flat[0]
        raise ValueError(
            f"lk.nn.sparse_softmax_cross_entropy_with_logits: label {int(first)} is out of "
            f"range [0, {num_classes}) (num_classes={num_classes})"
        )


def _picked(labels):
    # Index of each row's label: direct fancy indexing on (N, C) logits is 5x cheaper
    # per call than take_along_axis (whose index building is Python).
    if labels.ndim == 1:
        return np.arange(labels.shape[0]), labels
    return tuple(np.indices(labels.shape, sparse=True)) + (labels,)


def _sparse_ce_fwd(labels, logits):
    _check_labels(labels, logits.shape[-1])
    if not logits.size:  # an empty batch (no classes with no labels is refused above)
        return np.zeros(labels.shape, logits.dtype)
    s = logits - np.maximum.reduce(logits, axis=-1, keepdims=True)
    lse = np.log(np.add.reduce(np.exp(s), axis=-1))
    return lse - s[_picked(labels)]


def _sparse_ce_grad_fwd(labels, logits, g):
    # (softmax(logits) - onehot(labels)) * g[..., None] in one pass over the logits.
    p = _softmax_fwd(logits, -1)
    p[_picked(labels)] -= 1
    p *= np.asarray(g, p.dtype)[..., None]
    return p


def _sparse_ce_grad_vjp(h, ins, out, needs):
    # out = g' * (s - onehot) with s = softmax(logits), g' = g[..., None]:
    # d/dlogits = softmax's rule applied to h * g';  d/dg = sum(h * (s - onehot), -1),
    # where s - onehot is this record at g = 1.
    labels, logits, g = ins
    gl = gg = None
    if needs[1]:
        gl = _softmax_vjp(_ew.multiply(h, _array.expand_dims(g, -1)), (logits,),
                          softmax(logits), (True,), -1)[0]
    if needs[2]:
        d = apply(_SPARSE_CE_GRAD, labels, logits, _creation.ones_like(g))
        gg = _reduce.reduce_sum(_ew.multiply(h, d), -1)
    return None, gl, gg


_SPARSE_CE_GRAD = Op("sparse_softmax_cross_entropy_grad", _sparse_ce_grad_fwd,
                     _sparse_ce_grad_vjp, reads=(0, 1, 2))
_SPARSE_CE = Op("sparse_softmax_cross_entropy_with_logits", _sparse_ce_fwd,
                lambda g, ins, y, needs: (None, apply(_SPARSE_CE_GRAD, ins[0], ins[1], g)),
                reads=(0, 1))


def sparse_softmax_cross_entropy_with_logits(labels: TensorLike, logits: TensorLike) -> Tensor:
    """Cross-entropy between integer class ``labels`` and ``softmax(logits)``.

    Args:
        labels: integer tensor of shape ``logits.shape[:-1]`` with values in
            ``[0, num_classes)``.
        logits: float tensor of shape ``(..., num_classes)``.

    Returns:
        The loss, of shape ``labels.shape``.

    Raises:
        TypeError: ``labels`` is not an integer tensor.
        ValueError: the shapes do not match, or a label is outside ``[0, num_classes)``
            (the message names the label and ``num_classes``; inside ``lk.function`` the
            check runs on every call).
    """
    op = "sparse_softmax_cross_entropy_with_logits"
    x = _floating(logits, op)
    z = labels if isinstance(labels, Tensor) else convert_to_tensor(labels)
    if z.dtype.kind not in "iu":
        raise TypeError(f"lk.nn.{op}: labels must be integers, received dtype {z.dtype.name}")
    if x.ndim < 1 or z.shape != x.shape[:-1]:
        raise ValueError(
            f"lk.nn.{op}: labels must have shape logits.shape[:-1]; received labels "
            f"{z.shape} and logits {x.shape}"
        )
    return apply(_SPARSE_CE, z, x)


def sigmoid_cross_entropy_with_logits(labels: TensorLike | None = None,
                                      logits: TensorLike | None = None) -> Tensor:
    """Elementwise cross-entropy between ``labels`` in [0, 1] and ``sigmoid(logits)``.

    Uses TF's stable form ``max(x, 0) - x * z + log(1 + exp(-|x|))``, written as
    ``softplus(x) - x * z``, which is the same function with the exact gradient
    ``sigmoid(x) - z`` everywhere (including x = 0).

    Raises:
        ValueError: ``labels`` and ``logits`` are missing or have different shapes.
    """
    op = "sigmoid_cross_entropy_with_logits"
    if labels is None or logits is None:
        raise ValueError(f"lk.nn.{op}: both labels= and logits= are required")
    x = _floating(logits, op)
    z = _labels_like(labels, x, op)
    return _ew.subtract(softplus(x), _ew.multiply(x, z))


# =====================================================================================
# dropout, moments, normalisation
# =====================================================================================


def _dropout_mask_fwd(shape, dtype, rate, source):
    keep = _random.rng_of(source).random(shape, dtype=np.float32) >= rate
    mask = keep.astype(dtype)
    mask *= np.asarray(1.0 / (1.0 - rate), dtype)
    return mask


# The scaled keep-mask is drawn by a stateful record (no inputs, no gradient): a traced
# graph draws a fresh mask on every call; the product with x is an ordinary multiply.
_DROPOUT_MASK = Op("dropout_mask", _dropout_mask_fwd, stateful=True)


def dropout(x: TensorLike, rate: float, noise_shape: Sequence[int | None] | Tensor | None = None,
            seed: int | _random.Generator | None = None) -> Tensor:
    """Zero each element with probability ``rate`` and scale the rest by ``1/(1 - rate)``.

    Args:
        x: a float tensor.
        rate: the drop probability, in [0, 1).
        noise_shape: shape of the keep/drop mask, broadcast against ``x`` (each entry
            equal to ``x``'s dimension or 1; ``None`` entries take ``x``'s dimension).
        seed: None draws the mask from ``lk.random``'s global generator (reproducible
            after ``lk.random.set_seed``); an int gives the same mask on every eager call
            and a reproducible sequence of masks inside ``lk.function``; an
            ``lk.random.Generator`` continues its stream on every call.

    Raises:
        ValueError: ``rate`` is outside [0, 1) or ``noise_shape`` does not broadcast.
    """
    t = _floating(x, "dropout")
    rate = float(rate)
    if not 0.0 <= rate < 1.0:
        raise ValueError(f"lk.nn.dropout: rate must be in [0, 1), received rate={rate}")
    shape = t.shape
    if noise_shape is None:
        mask_shape: tuple = shape
    else:
        ns = to_array(noise_shape).tolist() if isinstance(noise_shape, Tensor) else noise_shape
        ns = list(ns)
        if len(ns) != len(shape) or any(
                d is not None and int(d) not in (1, n) for d, n in zip(ns, shape)):
            raise ValueError(
                f"lk.nn.dropout: noise_shape {tuple(ns)} does not broadcast to the input "
                f"shape {shape}"
            )
        mask_shape = tuple(n if d is None else int(d) for d, n in zip(ns, shape))
    if rate == 0.0:
        return t
    mask = apply(_DROPOUT_MASK, shape=tuple(mask_shape), dtype=t.dtype, rate=rate,
                 source=_random.source_of(seed, "lk.nn.dropout"))
    return _ew.multiply(t, mask)


def moments(x: TensorLike, axes: AxisLike, keepdims: bool = False) -> tuple:
    """Mean and variance of ``x`` over ``axes``.

    The variance is ``mean((x - mean)^2)`` with the mean not held constant, so its
    gradients are exact at every order.

    Returns:
        ``(mean, variance)``.
    """
    t = _floating(x, "moments")
    axes = _reduce._norm_axis(axes, t.ndim, "lk.nn.moments")
    mean = _reduce.reduce_mean(t, axes, keepdims=True)
    var = _reduce.reduce_mean(_ew.square(_ew.subtract(t, mean)), axes, keepdims=keepdims)
    if not keepdims:
        mean = _array.reshape(mean, var.shape)
    return mean, var


def batch_normalization(x: TensorLike, mean: TensorLike, variance: TensorLike,
                        offset: TensorLike | None, scale: TensorLike | None,
                        variance_epsilon: float) -> Tensor:
    """``(x - mean) * scale / sqrt(variance + variance_epsilon) + offset`` (TF's form).

    ``offset`` and ``scale`` may be None. All arguments broadcast against ``x``.
    """
    t = _floating(x, "batch_normalization")
    inv = _ew.rsqrt(_ew.add(variance, float(variance_epsilon)))
    if scale is not None:
        inv = _ew.multiply(inv, scale)
    shift = _ew.multiply(mean, inv)
    shift = _ew.negative(shift) if offset is None else _ew.subtract(offset, shift)
    # Statistics of another float dtype do not change the dtype of x (TF casts too).
    if inv.dtype != t.dtype:
        inv = _ew.cast(inv, t.dtype)
    if shift.dtype != t.dtype:
        shift = _ew.cast(shift, t.dtype)
    return _ew.add(_ew.multiply(t, inv), shift)


def l2_normalize(x: TensorLike, axis: AxisLike = None, epsilon: float = 1e-12) -> Tensor:
    """``x / sqrt(max(sum(x^2, axis), epsilon))``.

    Raises:
        TypeError: ``x`` is not a float tensor, or an axis is not an integer.
        ValueError: an axis is out of range.
    """
    t = _floating(x, "l2_normalize")
    axis = _reduce._norm_axis(axis, t.ndim, "lk.nn.l2_normalize")
    sq = _reduce.reduce_sum(_ew.square(t), axis, keepdims=True)
    return _ew.multiply(t, _ew.rsqrt(_ew.maximum(sq, float(epsilon))))
