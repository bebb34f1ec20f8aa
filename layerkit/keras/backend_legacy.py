"""The tf.keras 2 backend functions (``from keras import backend as K``; ``K.mean``, ...).

Keras 3 dropped most of them in favour of ``keras.ops``; TensorFlow programs written for
tf.keras 2 still call them, so ``lk.keras.backend`` keeps them, each a thin wrapper over
the ``lk.ops`` function with tf.keras 2's argument names and defaults.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from layerkit import keras_ops as _keras_ops
from layerkit._core.tensor import Tensor
from layerkit._core.variable import Variable
from layerkit.layers.backend_config import floatx

__all__ = ["mean", "sum", "max", "min", "std", "var", "prod", "any", "all", "argmax",
           "argmin", "clip", "dot", "batch_dot", "concatenate", "reshape", "expand_dims",
           "squeeze", "transpose", "permute_dimensions", "repeat_elements", "stack",
           "gather", "cumsum", "logsumexp", "square", "sqrt", "abs", "exp", "log", "pow",
           "sign", "round", "maximum", "minimum", "equal", "not_equal", "greater",
           "greater_equal", "less", "less_equal", "sigmoid", "hard_sigmoid", "softmax",
           "softplus", "softsign", "relu", "elu", "tanh", "binary_crossentropy",
           "categorical_crossentropy", "sparse_categorical_crossentropy", "one_hot", "tile",
           "zeros", "ones", "zeros_like", "ones_like", "cast", "shape", "int_shape", "ndim",
           "dtype", "stop_gradient", "switch", "flatten", "batch_flatten", "l2_normalize",
           "variable", "constant", "get_value", "set_value", "batch_get_value",
           "batch_set_value", "eval", "count_params", "random_normal", "random_uniform",
           "learning_phase", "set_learning_phase", "cos", "sin", "bias_add"]

_ops: Any = _keras_ops  # its functions are made in a loop, which mypy cannot type


def _reduce(op):
    def f(x: Any, axis: Any = None, keepdims: bool = False) -> Tensor:
        return op(x, axis=axis, keepdims=keepdims)
    return f


mean, sum, max, min = (_reduce(_ops.mean), _reduce(_ops.sum),  # noqa: A001
                       _reduce(_ops.max), _reduce(_ops.min))
std, var, prod = _reduce(_ops.std), _reduce(_ops.var), _reduce(_ops.prod)
any, all = _reduce(_ops.any), _reduce(_ops.all)  # noqa: A001
for _f, _n in ((mean, "mean"), (sum, "sum"), (max, "max"), (min, "min"), (std, "std"),
               (var, "var"), (prod, "prod"), (any, "any"), (all, "all")):
    _f.__name__ = _f.__qualname__ = _n
    _f.__doc__ = f"``ops.{_n}(x, axis, keepdims)`` (tf.keras 2's ``K.{_n}``)."

square = _ops.square
sqrt = _ops.sqrt
abs = _ops.abs  # noqa: A001
exp = _ops.exp
log = _ops.log
sign = _ops.sign
round = _ops.round  # noqa: A001
cos = _ops.cos
sin = _ops.sin
maximum = _ops.maximum
minimum = _ops.minimum
equal = _ops.equal
not_equal = _ops.not_equal
greater = _ops.greater
greater_equal = _ops.greater_equal
less = _ops.less
less_equal = _ops.less_equal
sigmoid = _ops.sigmoid
hard_sigmoid = _ops.hard_sigmoid
softplus = _ops.softplus
softsign = _ops.softsign
tanh = _ops.tanh
elu = _ops.elu
stop_gradient = _ops.stop_gradient
cumsum = _ops.cumsum
tile = _ops.tile
zeros_like = _ops.zeros_like
ones_like = _ops.ones_like
cast = _ops.cast
stack = _ops.stack
transpose = _ops.transpose
ndim = _ops.ndim
shape = _ops.shape


def argmax(x: Any, axis: int = -1) -> Tensor:
    """Index of the largest value along ``axis`` (last by default)."""
    return _ops.argmax(x, axis=axis)


def argmin(x: Any, axis: int = -1) -> Tensor:
    """Index of the smallest value along ``axis`` (last by default)."""
    return _ops.argmin(x, axis=axis)


def logsumexp(x: Any, axis: Any = None, keepdims: bool = False) -> Tensor:
    """``log(sum(exp(x)))`` along ``axis``, computed stably."""
    return _ops.logsumexp(x, axis=axis, keepdims=keepdims)


def clip(x: Any, min_value: Any, max_value: Any) -> Tensor:
    """``x`` clipped to ``[min_value, max_value]``."""
    return _ops.clip(x, min_value, max_value)


def pow(x: Any, a: Any) -> Tensor:  # noqa: A001
    """``x ** a`` elementwise."""
    return _ops.power(x, a)


def dot(x: Any, y: Any) -> Tensor:
    """The product of ``x`` and ``y``, contracting x's last axis with y's second to last
    (NumPy's ``dot``, which tf.keras 2's ``K.dot`` follows)."""
    return _ops.dot(x, y)


def batch_dot(x: Any, y: Any, axes: Any = None) -> Tensor:
    """Per-sample dot products of two batches (``K.batch_dot``): for 2-D inputs the
    row-wise products summed to shape ``(batch, 1)``; for higher ranks a batched matmul
    contracting ``x``'s last axis with ``y``'s second (or the given ``axes``)."""
    xn, yn = _ops.ndim(x), _ops.ndim(y)
    if axes is None:
        axes = (xn - 1, yn - 1) if yn == 2 else (xn - 1, yn - 2)
    if isinstance(axes, int):
        axes = (axes, axes)
    ax, ay = (int(a) % n for a, n in zip(axes, (xn, yn)))
    if xn == 2 and yn == 2:
        return _ops.sum(_ops.multiply(x, y), axis=ax, keepdims=True)
    x = _ops.moveaxis(x, ax, -1)
    y = _ops.moveaxis(y, ay, 1)
    letters = "cdefghjklmnopqrstuvwxyz"
    xs, ys = letters[:xn - 2], letters[xn - 2:xn - 2 + yn - 2]
    return _ops.einsum(f"b{xs}i,bi{ys}->b{xs}{ys}", x, y)


def concatenate(tensors: Any, axis: int = -1) -> Tensor:
    """Join tensors along ``axis`` (last by default, as ``K.concatenate``)."""
    return _ops.concatenate(tensors, axis=axis)


def reshape(x: Any, shape: Any) -> Tensor:
    """``x`` with a new shape (one dimension may be -1)."""
    return _ops.reshape(x, shape)


def expand_dims(x: Any, axis: int = -1) -> Tensor:
    """``x`` with a new axis of size 1 at ``axis`` (last by default)."""
    return _ops.expand_dims(x, axis)


def squeeze(x: Any, axis: int) -> Tensor:
    """``x`` without its size-1 axis ``axis``."""
    return _ops.squeeze(x, axis)


def permute_dimensions(x: Any, pattern: Any) -> Tensor:
    """``x`` with its axes reordered by ``pattern`` (``K.permute_dimensions``)."""
    return _ops.transpose(x, pattern)


def repeat_elements(x: Any, rep: int, axis: int) -> Tensor:
    """Each element of ``x`` repeated ``rep`` times along ``axis``."""
    return _ops.repeat(x, rep, axis=axis)


def gather(reference: Any, indices: Any) -> Tensor:
    """Rows ``indices`` of ``reference`` (axis 0)."""
    return _ops.take(reference, indices, axis=0)


def flatten(x: Any) -> Tensor:
    """``x`` as a 1-D tensor."""
    return _ops.reshape(x, (-1,))


def batch_flatten(x: Any) -> Tensor:
    """``x`` as ``(batch, everything else)``."""
    return _ops.reshape(x, (-1, int(np.prod(x.shape[1:]))))


def l2_normalize(x: Any, axis: Any = None) -> Tensor:
    """``x / sqrt(max(sum(x**2, axis), eps))``."""
    return _ops.normalize(x, axis=-1 if axis is None else axis, order=2)


def softmax(x: Any, axis: int = -1) -> Tensor:
    """Softmax along ``axis``."""
    return _ops.softmax(x, axis=axis)


def relu(x: Any, alpha: float = 0.0, max_value: Any = None, threshold: float = 0.0) -> Tensor:
    """``K.relu``: ``x`` above ``threshold``, ``alpha * (x - threshold)`` below, capped at
    ``max_value``."""
    from layerkit.keras.activations import relu as _relu

    return _relu(x, negative_slope=alpha, max_value=max_value, threshold=threshold)


def binary_crossentropy(target: Any, output: Any, from_logits: bool = False) -> Tensor:
    """Elementwise binary cross-entropy (no mean over the last axis, as ``K``'s)."""
    return _ops.binary_crossentropy(target, output, from_logits=from_logits)


def categorical_crossentropy(target: Any, output: Any, from_logits: bool = False,
                             axis: int = -1) -> Tensor:
    """Cross-entropy between one-hot ``target`` and ``output`` along ``axis``."""
    return _ops.categorical_crossentropy(target, output, from_logits=from_logits, axis=axis)


def sparse_categorical_crossentropy(target: Any, output: Any, from_logits: bool = False,
                                    axis: int = -1) -> Tensor:
    """Cross-entropy between integer ``target`` and ``output`` along ``axis``."""
    return _ops.sparse_categorical_crossentropy(target, output, from_logits=from_logits,
                                                axis=axis)


def one_hot(indices: Any, num_classes: int) -> Tensor:
    """One-hot encoding of integer ``indices``."""
    return _ops.one_hot(indices, num_classes)


def zeros(shape: Any, dtype: Any = None, name: str | None = None) -> Variable:
    """A Variable of zeros (tf.keras 2's ``K.zeros`` makes a variable)."""
    return Variable(np.zeros(shape, dtype or floatx()), name=name)


def ones(shape: Any, dtype: Any = None, name: str | None = None) -> Variable:
    """A Variable of ones."""
    return Variable(np.ones(shape, dtype or floatx()), name=name)


def variable(value: Any, dtype: Any = None, name: str | None = None,
             constraint: Any = None) -> Variable:
    """A Variable holding ``value`` (float values in ``floatx()`` by default)."""
    a = np.asarray(value)
    if dtype is None and a.dtype.kind == "f":
        dtype = floatx()
    return Variable(a if dtype is None else a.astype(dtype), name=name)


def constant(value: Any, dtype: Any = None, shape: Any = None, name: str | None = None) -> Tensor:
    """A constant Tensor (float values in ``floatx()`` by default)."""
    from layerkit._core.convert import constant as _constant

    a = np.asarray(value)
    if dtype is None and a.dtype.kind == "f":
        dtype = floatx()
    return _constant(a, dtype=dtype, shape=shape)


def int_shape(x: Any) -> tuple:
    """The static shape as a tuple of ints (None where unknown)."""
    return tuple(x.shape)


def dtype(x: Any) -> str:
    """The dtype's name (``'float32'``)."""
    return np.dtype(x.dtype).name


def switch(condition: Any, then_expression: Any, else_expression: Any) -> Tensor:
    """``then_expression`` where ``condition`` holds, else ``else_expression`` (callables
    are called first, as ``K.switch`` allows)."""
    a = then_expression() if callable(then_expression) else then_expression
    b = else_expression() if callable(else_expression) else else_expression
    return _ops.where(condition, a, b)


def get_value(x: Any) -> np.ndarray:
    """The value of a Variable or Tensor as a NumPy array."""
    return np.array(x)


def batch_get_value(tensors: Any) -> list:
    """``get_value`` of each."""
    return [get_value(t) for t in tensors]


def set_value(x: Variable, value: Any) -> None:
    """Assign ``value`` to the Variable ``x``."""
    x.assign(np.asarray(value, dtype=x.dtype))


def batch_set_value(tuples: Any) -> None:
    """``set_value`` for each ``(variable, value)`` pair."""
    for x, value in tuples:
        set_value(x, value)


def eval(x: Any) -> np.ndarray:  # noqa: A001
    """The value of ``x`` as a NumPy array."""
    return np.array(x)


def count_params(x: Any) -> int:
    """The number of elements of ``x``."""
    return int(np.prod(x.shape))


def random_normal(shape: Any, mean: float = 0.0, stddev: float = 1.0, dtype: Any = None,
                  seed: Any = None) -> Tensor:
    """Normal samples (``floatx()`` by default)."""
    from layerkit.random import normal

    return normal(shape, mean=mean, stddev=stddev, dtype=dtype or floatx(), seed=seed)


def random_uniform(shape: Any, minval: float = 0.0, maxval: float = 1.0, dtype: Any = None,
                   seed: Any = None) -> Tensor:
    """Uniform samples on ``[minval, maxval)`` (``floatx()`` by default)."""
    from layerkit.random import uniform

    return uniform(shape, minval=minval, maxval=maxval, dtype=dtype or floatx(), seed=seed)


def learning_phase() -> int:
    """0: layerkit passes ``training`` explicitly to layers instead of a global phase."""
    return 0


def set_learning_phase(value: int) -> None:
    """Refused: pass ``training=True/False`` to the model call (the tf.keras 2 global
    phase is deprecated there too).

    Raises:
        NotImplementedError: always.
    """
    raise NotImplementedError("lk.keras.backend.set_learning_phase: layerkit has no global "
                              "learning phase; call the model with training=True/False")


def bias_add(x: Any, bias: Any, data_format: str | None = None) -> Tensor:
    """``x + bias`` along the channels axis (last, or 1 for ``'channels_first'``)."""
    if data_format == "channels_first" and _ops.ndim(x) > 2:
        bias = _ops.reshape(bias, (-1,) + (1,) * (_ops.ndim(x) - 2))
    return _ops.add(x, bias)
