"""TensorFlow ``tf.math`` ops beyond the core elementwise set: inverse trig and hyperbolic
functions, reciprocal, atan2, the ``*_no_nan`` family, ``xlogy``, norms and clipping
by norm, counting.

New differentiable elementwise functions are records built with the elementwise module's
``unary``/``binary`` constructors (NumPy forward, rule in lk ops, numexpr template);
the rest are compositions of existing ops, so their gradients come from those ops.
``*_no_nan`` ops use the double-``where`` pattern so that the masked branch never puts a
NaN into the gradient.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from layerkit._core.convert import as_dtype, convert_to_tensor
from layerkit._core.op import Op, apply
from layerkit._core.tensor import Tensor
from layerkit._core.types import AxisLike, DTypeLike, ShapeLike, TensorLike
from layerkit.primitives import array as _array
from layerkit.primitives import creation as _creation
from layerkit.primitives import elementwise as _ew
from layerkit.primitives import nn as _nn
from layerkit.primitives import reduce as _reduce
from layerkit.primitives.creation import int_arg
from layerkit.primitives.registry import export, publish, top_level

_ew_add, _mul, _div, _sub = _ew.add, _ew.multiply, _ew.divide, _ew.subtract
publish(_ew.divide, "lk.truediv", "lk.realdiv", "math.realdiv")

# ---- records: elementwise functions with gradients ------------------------------------
_RECIPROCAL = _ew.unary("reciprocal", np.reciprocal,
                        lambda g, ins, y, needs: (_ew.negative(_mul(g, _ew.square(y))),),
                        "(1 / {0})")
_ASIN = _ew.unary("asin", np.arcsin, lambda g, ins, y, needs: (
    _mul(g, _ew.rsqrt(_sub(1, _ew.square(ins[0])))),), "arcsin({0})")
_ACOS = _ew.unary("acos", np.arccos, lambda g, ins, y, needs: (
    _ew.negative(_mul(g, _ew.rsqrt(_sub(1, _ew.square(ins[0]))))),), "arccos({0})")
_ATAN = _ew.unary("atan", np.arctan, lambda g, ins, y, needs: (
    _div(g, _ew_add(1, _ew.square(ins[0]))),), "arctan({0})")
_SINH = _ew.unary("sinh", np.sinh, lambda g, ins, y, needs: (_mul(g, cosh(ins[0])),),
                  "sinh({0})")
_COSH = _ew.unary("cosh", np.cosh, lambda g, ins, y, needs: (_mul(g, sinh(ins[0])),),
                  "cosh({0})")
_ASINH = _ew.unary("asinh", np.arcsinh, lambda g, ins, y, needs: (
    _mul(g, _ew.rsqrt(_ew_add(_ew.square(ins[0]), 1))),), "arcsinh({0})")
_ACOSH = _ew.unary("acosh", np.arccosh, lambda g, ins, y, needs: (
    _mul(g, _ew.rsqrt(_sub(_ew.square(ins[0]), 1))),), "arccosh({0})")
_ATANH = _ew.unary("atanh", np.arctanh, lambda g, ins, y, needs: (
    _div(g, _sub(1, _ew.square(ins[0]))),), "arctanh({0})")


def _atan2_rule(g, ins, z, needs):
    y, x = ins
    r = _ew_add(_ew.square(x), _ew.square(y))
    return (_div(_mul(g, x), r) if needs[0] else None,
            _ew.negative(_div(_mul(g, y), r)) if needs[1] else None)


_ATAN2 = _ew.binary("atan2", np.arctan2, _atan2_rule, "arctan2({0}, {1})")
_IS_INF = _ew.unary("is_inf", np.isinf, None)


def _float1(op: Op):
    def fn(x, name: str | None = None) -> Tensor:
        return _ew._fast1f(op, x)

    fn.__name__ = fn.__qualname__ = op.name
    fn.__module__ = __name__
    return fn


reciprocal = _float1(_RECIPROCAL)
asin, acos, atan = _float1(_ASIN), _float1(_ACOS), _float1(_ATAN)
sinh, cosh = _float1(_SINH), _float1(_COSH)
asinh, acosh, atanh = _float1(_ASINH), _float1(_ACOSH), _float1(_ATANH)
for _fn, _what in ((reciprocal, "``1 / x``"), (asin, "arcsine"), (acos, "arccosine"),
                   (atan, "arctangent"), (sinh, "hyperbolic sine"),
                   (cosh, "hyperbolic cosine"), (asinh, "inverse hyperbolic sine"),
                   (acosh, "inverse hyperbolic cosine"),
                   (atanh, "inverse hyperbolic tangent")):
    _record = globals()[f"_{_fn.__name__.upper()}"]
    _fn.__doc__ = (f"Elementwise {_what} (float-only math, as in TF).\n\n    Raises:\n"
                   f"        TypeError: an integer or bool input.\n    ")
    _fn.__annotations__ = {"x": "Tensor", "name": "str | None", "return": "Tensor"}
    export("math", numpy=_record.forward)(_fn)  # np.arcsin(t) runs lk.math.asin
del _fn, _what, _record


@export("math", numpy=np.arctan2)
def atan2(y: TensorLike, x: TensorLike, name: str | None = None) -> Tensor:
    """Elementwise angle of the point ``(x, y)``: ``arctan(y / x)`` in the right quadrant."""
    return _ew._fast2(_ATAN2, y, x)


@export("math", numpy=np.isinf)
def is_inf(x: TensorLike, name: str | None = None) -> Tensor:
    """Elementwise: is ``x`` +inf or -inf (bool; not differentiable)."""
    return _ew._fast1(_IS_INF, x)


# ---- compositions ---------------------------------------------------------------------
@export("math")
def squared_difference(x: TensorLike, y: TensorLike, name: str | None = None) -> Tensor:
    """Elementwise ``(x - y) ** 2``."""
    return _ew.square(_sub(x, y))


def _no_nan(x, y, combine) -> Tensor:
    y = convert_to_tensor(y)
    zero = _ew.equal(y, 0)
    return _ew.where(zero, 0, combine(x, _ew.where(zero, 1, y)))


@export("math")
def divide_no_nan(x: TensorLike, y: TensorLike, name: str | None = None) -> Tensor:
    """``x / y``, but 0 wherever ``y == 0`` (also for ``x`` inf or nan), as in TF.

        >>> import layerkit as lk
        >>> lk.math.divide_no_nan([1.0, 2.0], [0.0, 4.0]).numpy()
        array([0. , 0.5], dtype=float32)
    """
    return _no_nan(x, y, _div)


@export("math")
def multiply_no_nan(x: TensorLike, y: TensorLike, name: str | None = None) -> Tensor:
    """``x * y``, but 0 wherever ``y == 0`` (also for ``x`` inf or nan), as in TF."""
    return _no_nan(x, y, _mul)


@export("math")
def reciprocal_no_nan(x: TensorLike, name: str | None = None) -> Tensor:
    """``1 / x``, but 0 where ``x == 0``."""
    x = convert_to_tensor(x)
    return divide_no_nan(1, x)


@export("math")
def xlogy(x: TensorLike, y: TensorLike, name: str | None = None) -> Tensor:
    """``x * log(y)``, 0 where ``x == 0`` (even for ``y == 0``), as in TF."""
    x, y = convert_to_tensor(x), convert_to_tensor(y)
    zero = _ew.equal(x, 0)
    return _ew.where(zero, 0, _mul(x, _ew.log(_ew.where(zero, 1, y))))


@export("math")
def xdivy(x: TensorLike, y: TensorLike, name: str | None = None) -> Tensor:
    """``x / y``, 0 where ``x == 0`` (even for ``y == 0``), as in TF."""
    x, y = convert_to_tensor(x), convert_to_tensor(y)
    zero = _ew.equal(x, 0)
    return _ew.where(zero, 0, _div(x, _ew.where(zero, 1, y)))


@export("math", numpy=np.logical_xor)
def logical_xor(x: TensorLike, y: TensorLike, name: str | None = None) -> Tensor:
    """Elementwise exclusive or of two bool tensors."""
    return _ew.logical_and(_ew.logical_or(x, y), _ew.logical_not(_ew.logical_and(x, y)))


@export("math", "nn")
def log_sigmoid(x: TensorLike, name: str | None = None) -> Tensor:
    """``log(sigmoid(x)) = -softplus(-x)``, computed without overflow."""
    return _ew.negative(_nn.softplus(_ew.negative(x)))


@export("math", "nn")
def softsign(features: TensorLike, name: str | None = None) -> Tensor:
    """``features / (1 + |features|)``."""
    return _div(features, _ew_add(1, _ew.abs(features)))


@export("math")
def erfc(x: TensorLike, name: str | None = None) -> Tensor:
    """Complementary error function ``1 - erf(x)``."""
    return _sub(1, _ew.erf(x))


@export("math")
def polyval(coeffs: TensorLike, x: TensorLike, name: str | None = None) -> Tensor:
    """``coeffs[0] * x**(n-1) + ... + coeffs[n-1]`` by Horner's rule (TF ``polyval``)."""
    if not isinstance(coeffs, (list, tuple)):
        raise TypeError(f"polyval: coeffs must be a list of tensors, received "
                        f"{type(coeffs).__name__}")
    x = convert_to_tensor(x)
    if not coeffs:
        return _creation.zeros_like(x)
    out = convert_to_tensor(coeffs[0])
    for c in coeffs[1:]:
        out = _ew_add(_mul(out, x), c)
    return out


@export("lk", "math")
def add_n(inputs: Sequence[TensorLike] | Tensor, name: str | None = None) -> Tensor:
    """Elementwise sum of a non-empty list of tensors of the same shape (TF ``add_n``).

    Raises:
        ValueError: an empty list or differing shapes.
    """
    tensors = [convert_to_tensor(t) for t in ([inputs] if isinstance(inputs, Tensor) else inputs)]
    if not tensors or len({t.shape for t in tensors}) != 1:
        raise ValueError(f"add_n: expected a non-empty list of tensors of one shape, "
                         f"received shapes {[t.shape for t in tensors]}")
    out = tensors[0]
    for t in tensors[1:]:
        out = _ew_add(out, t)
    return out


@export("math")
def accumulate_n(inputs: Sequence[TensorLike], shape: ShapeLike | TensorLike | None = None,
                 tensor_dtype: DTypeLike = None, name: str | None = None) -> Tensor:
    """The same as ``add_n`` (TF's deprecated alias)."""
    return add_n(inputs)


@export("lk", "math")
def scalar_mul(scalar: TensorLike, x: TensorLike, name: str | None = None) -> Tensor:
    """``scalar * x`` for a scalar (TF ``scalar_mul``).

    Raises:
        ValueError: ``scalar`` is not a scalar.
    """
    if np.ndim(scalar._v if isinstance(scalar, Tensor) else scalar) != 0:
        raise ValueError(f"scalar_mul: scalar must be a scalar, received {scalar!r}")
    return _mul(scalar, x)


@export("math")
def reduce_euclidean_norm(input_tensor: TensorLike, axis: AxisLike = None, keepdims: bool = False,
                          name: str | None = None) -> Tensor:
    """``sqrt(reduce_sum(x ** 2, axis))`` (TF ``reduce_euclidean_norm``)."""
    return _ew.sqrt(_reduce.reduce_sum(_ew.square(input_tensor), axis, keepdims=keepdims))


@export("math")
def count_nonzero(input: TensorLike, axis: AxisLike = None, keepdims: bool = False,
                  dtype: DTypeLike = "int64",
                  name: str | None = None) -> Tensor:
    """Number of non-zero entries along ``axis`` (int64 by default, as in TF)."""
    nz = _ew.not_equal(input, 0)
    return _ew.cast(_reduce.reduce_sum(_ew.cast(nz, "int64"), axis, keepdims=keepdims), dtype)


def _bincount_fwd(x, w, minlength, maxlength, dtype):
    flat = x.reshape(-1)
    if flat.size and flat.min() < 0:
        raise ValueError(f"bincount: values must be non-negative, received {flat.min()}")
    n = max(int(flat.max()) + 1 if flat.size else 0, minlength or 0)
    if maxlength is not None:
        n = min(n, maxlength)
        keep = flat < n
        flat, w = flat[keep], (None if w is None else w.reshape(-1)[keep])
    elif w is not None:
        w = w.reshape(-1)
    return np.bincount(flat, weights=w, minlength=n)[:n].astype(dtype)


_BINCOUNT = Op("bincount", lambda x, minlength, maxlength, dtype:
               _bincount_fwd(x, None, minlength, maxlength, dtype))
_BINCOUNT_W = Op("bincount_weighted", _bincount_fwd)


@export("math")
def bincount(arr: TensorLike, weights: TensorLike | None = None,
             minlength: TensorLike | None = None, maxlength: TensorLike | None = None,
             dtype: DTypeLike = "int32",
             name: str | None = None) -> Tensor:
    """Count of each value ``0..max(arr)`` in ``arr`` (summed ``weights`` if given).

        >>> import layerkit as lk
        >>> lk.math.bincount([1, 1, 3]).numpy().tolist()
        [0, 2, 0, 1]

    Raises:
        ValueError: a negative value.
    """
    a = convert_to_tensor(arr)
    if a.dtype.kind not in "iu":
        raise TypeError(f"bincount: arr must be integers, received dtype {a.dtype}")
    lo = None if minlength is None else int_arg(minlength, "bincount", "minlength")
    hi = None if maxlength is None else int_arg(maxlength, "bincount", "maxlength")
    if weights is None:
        return apply(_BINCOUNT, a, minlength=lo, maxlength=hi, dtype=as_dtype(dtype))
    w = convert_to_tensor(weights)
    return apply(_BINCOUNT_W, a, w, minlength=lo, maxlength=hi, dtype=w.dtype)


@export("math")
def confusion_matrix(labels: TensorLike, predictions: TensorLike,
                     num_classes: TensorLike | None = None, weights: TensorLike | None = None,
                     dtype: DTypeLike = "int32",
                     name: str | None = None) -> Tensor:
    """``num_classes x num_classes`` counts: rows are labels, columns predictions (TF).

        >>> import layerkit as lk
        >>> lk.math.confusion_matrix([0, 1, 1], [0, 1, 0]).numpy().tolist()
        [[1, 0], [1, 1]]
    """
    lab, pred = convert_to_tensor(labels), convert_to_tensor(predictions)
    if lab.shape != pred.shape or lab.ndim != 1:
        raise ValueError(f"confusion_matrix: labels and predictions must be 1-D of one "
                         f"shape, received {lab.shape} and {pred.shape}")
    if num_classes is None:
        num_classes = int(max(np.max(lab.numpy(), initial=-1),
                              np.max(pred.numpy(), initial=-1))) + 1
    n = int_arg(num_classes, "confusion_matrix", "num_classes")
    flat = _ew_add(_mul(_ew.cast(lab, "int64"), n), _ew.cast(pred, "int64"))
    counts = bincount(flat, weights, minlength=n * n, maxlength=n * n,
                      dtype=dtype)
    return _ew.cast(_array.reshape(counts, (n, n)), dtype)


# ---- norms and clipping -----------------------------------------------------------------
@export("lk")
def clip_by_norm(t: TensorLike, clip_norm: TensorLike, axes: AxisLike = None,
                 name: str | None = None) -> Tensor:
    """``t`` scaled so that its L2 norm over ``axes`` is at most ``clip_norm`` (TF).

        >>> import layerkit as lk
        >>> lk.clip_by_norm([3.0, 4.0], 1.0).numpy()
        array([0.6, 0.8], dtype=float32)
    """
    t = convert_to_tensor(t)
    norm = _ew.sqrt(_reduce.reduce_sum(_ew.square(t), axes, keepdims=True))
    # TF: t * clip_norm / max(norm, clip_norm); no division by a zero norm.
    return _div(_mul(t, clip_norm), _ew.maximum(norm, clip_norm))


@export("linalg")
def global_norm(t_list: Sequence[TensorLike | None], name: str | None = None) -> Tensor:
    """``sqrt(sum of the squared L2 norms of every tensor in t_list)`` (None skipped)."""
    parts = [_reduce.reduce_sum(_ew.square(t)) for t in t_list if t is not None]
    if not parts:
        raise ValueError("global_norm: t_list holds no tensors")
    return _ew.sqrt(add_n([_ew.cast(p, parts[0].dtype) for p in parts]))


@export("lk")
def clip_by_global_norm(t_list: Sequence[TensorLike | None], clip_norm: TensorLike,
                        use_norm: TensorLike | None = None,
                        name: str | None = None) -> tuple[list[Tensor | None], Tensor]:
    """Scale every tensor of ``t_list`` by ``clip_norm / max(global_norm, clip_norm)``.

    Returns ``(clipped_list, global_norm)`` as TF does; None entries stay None.

        >>> import layerkit as lk
        >>> clipped, norm = lk.clip_by_global_norm([lk.constant([3.0]), lk.constant([4.0])], 1.0)
        >>> float(norm), clipped[1].numpy()
        (5.0, array([0.8], dtype=float32))

    Raises:
        TypeError: ``t_list`` is a single tensor rather than a list.
    """
    if isinstance(t_list, Tensor) or not isinstance(t_list, (list, tuple)):
        raise TypeError(f"clip_by_global_norm: t_list must be a list of tensors, received "
                        f"{type(t_list).__name__}")
    norm = global_norm(t_list) if use_norm is None else convert_to_tensor(use_norm)
    scale = _div(clip_norm, _ew.maximum(norm, clip_norm))
    return [None if t is None else _mul(t, _ew.cast(scale, convert_to_tensor(t).dtype))
            for t in t_list], norm


# ---- tf.nn helpers ------------------------------------------------------------------------
@export("nn")
def bias_add(value: TensorLike, bias: TensorLike, data_format: str | None = None,
             name: str | None = None) -> Tensor:
    """``value + bias`` with a 1-D ``bias`` on the channel axis (last, or axis 1 for
    ``data_format='NC...'``), as TF ``bias_add``.

    Raises:
        ValueError: ``bias`` is not 1-D of the channel size.
    """
    v, b = convert_to_tensor(value), convert_to_tensor(bias)
    axis = 1 if data_format is not None and data_format.startswith("NC") else v.ndim - 1
    if b.ndim != 1 or v.ndim < 2 or v.shape[axis] != b.shape[0]:
        raise ValueError(f"bias_add: bias of shape {b.shape} does not match the channel axis "
                         f"{axis} of a value of shape {v.shape}")
    if axis != v.ndim - 1:
        b = _array.reshape(b, (-1,) + (1,) * (v.ndim - 2))
    return _ew_add(v, b)


@export("nn")
def l2_loss(t: TensorLike, name: str | None = None) -> Tensor:
    """``sum(t ** 2) / 2`` (TF ``l2_loss``)."""
    return _mul(_reduce.reduce_sum(_ew.square(t)), 0.5)


@export("nn")
def embedding_lookup(params: TensorLike, ids: TensorLike, max_norm: TensorLike | None = None,
                     name: str | None = None) -> Tensor:
    """Rows of ``params`` at ``ids`` (``gather`` along axis 0; one params tensor)."""
    if isinstance(params, (list, tuple)):
        if len(params) != 1:
            raise ValueError("embedding_lookup: sharded params (a list of several tensors) "
                             "are not supported; pass one tensor")
        params = params[0]
    out = _array.gather(params, ids)
    return out if max_norm is None else clip_by_norm(out, max_norm, axes=-1)


@export("nn")
def weighted_cross_entropy_with_logits(labels: TensorLike, logits: TensorLike,
                                       pos_weight: TensorLike,
                                       name: str | None = None) -> Tensor:
    """Sigmoid cross-entropy with the positive term weighted by ``pos_weight`` (TF):
    ``(1 - z) x + (1 + (q - 1) z) log(1 + exp(-x))``, computed without overflow."""
    z, x = convert_to_tensor(labels), convert_to_tensor(logits)
    log_weight = _ew_add(1, _mul(_sub(pos_weight, 1), z))
    return _ew_add(_mul(_sub(1, z), x), _mul(log_weight, _nn.softplus(_ew.negative(x))))


@export("nn")
def crelu(features: TensorLike, axis: int = -1, name: str | None = None) -> Tensor:
    """``concat([relu(x), relu(-x)], axis)`` (TF ``crelu``)."""
    return _array.concat([_nn.relu(features), _nn.relu(_ew.negative(features))], axis)


@export("nn")
def log_poisson_loss(targets: TensorLike, log_input: TensorLike, compute_full_loss: bool = False,
                     name: str | None = None) -> Tensor:
    """Poisson negative log-likelihood ``exp(log_input) - targets * log_input`` (TF), with
    Stirling's approximation of ``log(targets!)`` added when ``compute_full_loss``."""
    z, c = convert_to_tensor(targets), convert_to_tensor(log_input)
    loss = _sub(_ew.exp(c), _mul(z, c))
    if not compute_full_loss:
        return loss
    # TF: z log z - z + 0.5 log(2 pi z), only where z > 1.
    safe = _ew.where(_ew.greater(z, 1), z, 1)
    stirling = _ew_add(_sub(_mul(safe, _ew.log(safe)), safe),
                       _mul(0.5, _ew.log(_mul(2 * np.pi, safe))))
    return _ew_add(loss, _ew.where(_ew.greater(z, 1), stirling, 0))


__all__ = top_level(__name__)
