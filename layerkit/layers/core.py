"""Core layers: Dense, Activation, Flatten, Reshape, Dropout, Embedding."""
from __future__ import annotations

import math

import numpy as np

from layerkit import constraints, initializers, regularizers
from layerkit._core.op import Op, apply
from layerkit.layers import activations
from layerkit.layers.input_spec import InputSpec
from layerkit.layers.layer import Layer
from layerkit.ops import array as _array
from layerkit.ops import elementwise as _ew
from layerkit.ops import linalg as _linalg
from layerkit.ops import nn as _nn
from layerkit.ops import random as _random

__all__ = ["Dense", "Activation", "Flatten", "Reshape", "Dropout", "Embedding"]


def _positive_int(layer: str, arg: str, value) -> int:
    if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value <= 0:
        raise ValueError(f"{layer}: received an invalid value for `{arg}`, expected a positive "
                         f"integer. Received: {arg}={value!r}")
    return int(value)


def kernel_bias_options(layer: Layer, activation, use_bias: bool, kernel_initializer,
                        bias_initializer, kernel_regularizer, bias_regularizer,
                        kernel_constraint, bias_constraint) -> None:
    """Resolve and store the kernel/bias arguments shared by Dense-like layers."""
    layer.activation = activations.get(activation)
    layer.use_bias = use_bias
    layer.kernel_initializer = initializers.get(kernel_initializer)
    layer.bias_initializer = initializers.get(bias_initializer)
    layer.kernel_regularizer = regularizers.get(kernel_regularizer)
    layer.bias_regularizer = regularizers.get(bias_regularizer)
    layer.kernel_constraint = constraints.get(kernel_constraint)
    layer.bias_constraint = constraints.get(bias_constraint)


def add_kernel_bias(layer: Layer, kernel_name: str, kernel_shape: tuple, units: int) -> None:
    """Create ``layer.kernel`` and ``layer.bias`` (None without ``use_bias``) from the
    options stored by :func:`kernel_bias_options`."""
    layer.kernel = layer.add_weight(kernel_name, kernel_shape, layer.kernel_initializer,
                                    regularizer=layer.kernel_regularizer,
                                    constraint=layer.kernel_constraint)
    layer.bias = layer.add_weight("bias", (units,), layer.bias_initializer,
                                  regularizer=layer.bias_regularizer,
                                  constraint=layer.bias_constraint) if layer.use_bias else None


def kernel_bias_config(layer: Layer) -> dict:
    """The :func:`kernel_bias_options` entries of a layer's config, serialized."""
    return {"activation": activations.serialize(layer.activation), "use_bias": layer.use_bias,
            "kernel_initializer": initializers.serialize(layer.kernel_initializer),
            "bias_initializer": initializers.serialize(layer.bias_initializer),
            "kernel_regularizer": regularizers.serialize(layer.kernel_regularizer),
            "bias_regularizer": regularizers.serialize(layer.bias_regularizer),
            "kernel_constraint": constraints.serialize(layer.kernel_constraint),
            "bias_constraint": constraints.serialize(layer.bias_constraint)}


class Dense(Layer):
    """A densely connected layer: ``activation(inputs @ kernel + bias)``.

    Args:
        units: output size.
        activation: a name (``'relu'``) or callable; None is linear.
        use_bias: whether to add a bias.
        kernel_initializer, bias_initializer: initializers or names.
        kernel_regularizer, bias_regularizer: optional weight penalties.
        kernel_constraint, bias_constraint: optional constraints.

    Input shape: ``(batch, ..., input_dim)``. Output shape: ``(batch, ..., units)``.
    Weights: ``kernel`` (input_dim, units), ``bias`` (units,).

    Example:
        >>> import layerkit as lk
        >>> lk.layers.Dense(4)(lk.ones((2, 3))).shape
        (2, 4)
    """

    _cast_int_inputs = True

    def __init__(self, units: int, activation=None, use_bias: bool = True,
                 kernel_initializer="glorot_uniform", bias_initializer="zeros",
                 kernel_regularizer=None, bias_regularizer=None, kernel_constraint=None,
                 bias_constraint=None, **kwargs) -> None:
        super().__init__(**kwargs)
        self.units = _positive_int("Dense", "units", units)
        kernel_bias_options(self, activation, use_bias, kernel_initializer, bias_initializer,
                            kernel_regularizer, bias_regularizer, kernel_constraint,
                            bias_constraint)
        self.input_spec = InputSpec(min_ndim=2)

    def build(self, input_shape) -> None:
        in_dim = input_shape[-1]
        if in_dim is None:
            raise ValueError(f"Dense '{self.name}': the last dimension of the input must be "
                             f"known, received input shape {tuple(input_shape)}")
        add_kernel_bias(self, "kernel", (in_dim, self.units), self.units)
        self.input_spec = InputSpec(min_ndim=2, axes={-1: in_dim})

    def call(self, inputs):
        # One fused record (matmul + bias + ReLU; ops/linalg.py fused_matmul), called
        # directly: the input spec already checked the last dimension.
        act = self.activation
        fused = "relu" if act is _nn.relu else "linear"
        shape = inputs.shape
        x = inputs if len(shape) == 2 else _array.reshape(inputs, (-1, shape[-1]))
        if self.bias is None:
            y = apply(_linalg._FUSED_MATMUL, x, self.kernel, activation=fused)
        else:
            y = apply(_linalg._FUSED_MATMUL, x, self.kernel, self.bias, activation=fused)
        if len(shape) != 2:  # one 2-D GEMM, not a batched one
            y = _array.reshape(y, shape[:-1] + (self.units,))
        return y if fused == "relu" or act is activations.linear else act(y)

    def get_config(self) -> dict:
        return {**super().get_config(), "units": self.units,
                **kernel_bias_config(self)}


class Activation(Layer):
    """Applies an activation function (a Keras name or a callable).

    Example:
        >>> import layerkit as lk
        >>> lk.layers.Activation("relu")(lk.constant([-1.0, 2.0])).numpy()
        array([0., 2.], dtype=float32)
    """

    def __init__(self, activation, **kwargs) -> None:
        super().__init__(**kwargs)
        self.activation = activations.get(activation)

    def call(self, inputs):
        return self.activation(inputs)

    def get_config(self) -> dict:
        return {**super().get_config(), "activation": activations.serialize(self.activation)}


class Flatten(Layer):
    """Flattens every dimension but the batch: ``(batch, ...) -> (batch, prod(...))``."""

    def __init__(self, data_format: str | None = None, **kwargs) -> None:
        super().__init__(**kwargs)
        self.data_format = data_format
        self.input_spec = InputSpec(min_ndim=1)

    def call(self, inputs):
        shape = inputs.shape
        return _array.reshape(inputs, (shape[0], math.prod(shape[1:])))

    def get_config(self) -> dict:
        return {**super().get_config(), "data_format": self.data_format}


class Reshape(Layer):
    """Reshapes each sample to ``target_shape`` (one entry may be -1).

    Input shape: ``(batch, ...)``. Output shape: ``(batch,) + target_shape``.
    """

    def __init__(self, target_shape, **kwargs) -> None:
        super().__init__(**kwargs)
        self.target_shape = tuple(int(d) for d in target_shape)

    def call(self, inputs):
        shape = inputs.shape
        n, known = math.prod(shape[1:]), math.prod(d for d in self.target_shape if d != -1)
        target = self.target_shape
        if (-1 not in target and n != known) or (-1 in target and (known == 0 or n % known)):
            raise ValueError(f"Reshape '{self.name}': cannot reshape samples of shape "
                             f"{shape[1:]} ({n} values) to target_shape {target}")
        return _array.reshape(inputs, (shape[0],) + target)

    def get_config(self) -> dict:
        return {**super().get_config(), "target_shape": list(self.target_shape)}


class Dropout(Layer):
    """Zeroes a fraction ``rate`` of the inputs during training and scales the rest by
    ``1 / (1 - rate)``; the identity at inference.

    Args:
        rate: fraction to drop, in [0, 1).
        noise_shape: optional shape of the keep mask (broadcast to the input).
        seed: optional int making the sequence of masks reproducible; without it masks
            draw from ``lk.random``'s global generator.
    """

    def __init__(self, rate: float, noise_shape=None, seed: int | None = None, **kwargs):
        super().__init__(**kwargs)
        if not 0 <= rate < 1:
            raise ValueError(f"Dropout: `rate` must be in [0, 1), received rate={rate}")
        self.rate, self.noise_shape, self.seed = float(rate), noise_shape, seed
        self._generator = _random.Generator(seed) if seed is not None else None

    def call(self, inputs, training=None):
        if not training or self.rate == 0:
            return inputs
        # The layer's own stream (or None: the global one) is drawn from when the mask
        # is made, so a traced step draws a fresh mask per call, as eager steps do.
        return _nn.dropout(inputs, self.rate, noise_shape=self.noise_shape,
                           seed=self._generator)

    def _checkpoint_children(self) -> dict:
        # A seeded layer owns its mask stream: checkpoints save its position so a
        # resumed run draws the same masks.
        children = super()._checkpoint_children()
        if self._generator is not None:
            children["seed_generator"] = self._generator
        return children

    def get_config(self) -> dict:
        return {**super().get_config(), "rate": self.rate, "noise_shape": self.noise_shape,
                "seed": self.seed}


def _check_indices_fwd(idx, layer: str, input_dim: int):
    if idx.size and (idx.min() < 0 or idx.max() >= input_dim):
        bad = idx[(idx < 0) | (idx >= input_dim)].ravel()[0]
        raise ValueError(f"Embedding '{layer}': index {bad} is out of range [0, {input_dim})")
    return idx


_CHECK_INDICES = Op("embedding_check_indices", _check_indices_fwd)


class Embedding(Layer):
    """Maps integer indices in ``[0, input_dim)`` to rows of an ``embeddings`` matrix.

    Args:
        input_dim: vocabulary size.
        output_dim: embedding size.
        embeddings_initializer: default ``'uniform'`` (in ±0.05), like Keras.
        embeddings_regularizer, embeddings_constraint: optional.
        mask_zero: must be False: layerkit layers do not propagate Keras masks.

    Input shape: ``(batch, ...)`` integers. Output shape: ``(batch, ..., output_dim)``.
    Weights: ``embeddings`` (input_dim, output_dim).
    """

    def __init__(self, input_dim: int, output_dim: int, embeddings_initializer="uniform",
                 embeddings_regularizer=None, embeddings_constraint=None,
                 mask_zero: bool = False, **kwargs) -> None:
        kwargs.pop("input_length", None)  # Keras 2 argument, not needed
        super().__init__(**kwargs)
        self.input_dim = _positive_int("Embedding", "input_dim", input_dim)
        self.output_dim = _positive_int("Embedding", "output_dim", output_dim)
        self.embeddings_initializer = initializers.get(embeddings_initializer)
        self.embeddings_regularizer = regularizers.get(embeddings_regularizer)
        self.embeddings_constraint = constraints.get(embeddings_constraint)
        if mask_zero:
            raise NotImplementedError("Embedding: mask_zero=True is not supported (layerkit "
                                      "layers do not propagate masks); pad and mask explicitly")
        self.mask_zero = False

    def build(self, input_shape=None) -> None:
        self.embeddings = self.add_weight("embeddings", (self.input_dim, self.output_dim),
                                          self.embeddings_initializer,
                                          regularizer=self.embeddings_regularizer,
                                          constraint=self.embeddings_constraint)

    def call(self, inputs):
        # The range check is a record on the indices: in a traced graph it runs per call.
        inputs = apply(_CHECK_INDICES, inputs, layer=self.name, input_dim=self.input_dim)
        if inputs.dtype.kind not in "iu":
            inputs = _ew.cast(inputs, "int64")
        return _array.gather(self.embeddings, inputs)

    def get_config(self) -> dict:
        return {**super().get_config(), "input_dim": self.input_dim,
                "output_dim": self.output_dim, "mask_zero": self.mask_zero,
                "embeddings_initializer": initializers.serialize(self.embeddings_initializer),
                "embeddings_regularizer": regularizers.serialize(self.embeddings_regularizer),
                "embeddings_constraint": constraints.serialize(self.embeddings_constraint)}
