"""Core layers: Dense, Activation, Flatten, Reshape, Dropout, Embedding, Identity, Lambda,
InputLayer."""
from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from layerkit import constraints, initializers, regularizers
from layerkit._core.op import Op, apply
from layerkit._core.types import DTypeLike, ShapeLike
from layerkit.layers import activations
from layerkit.layers.input_spec import InputSpec
from layerkit.layers.layer import Layer, enable_masks
from layerkit.layers.symbolic import SymbolicTensor
from layerkit.primitives import array as _array
from layerkit.primitives import elementwise as _ew
from layerkit.primitives import linalg as _linalg
from layerkit.primitives import nn as _nn
from layerkit.primitives import random as _random

__all__ = ["Dense", "Activation", "Flatten", "Reshape", "Dropout", "Embedding", "Identity",
           "Lambda", "InputLayer"]


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
        kernel_initializer: initializers or names.
        bias_initializer: initializers or names.
        kernel_regularizer: optional weight penalties.
        bias_regularizer: optional weight penalties.
        kernel_constraint: optional constraints.
        bias_constraint: optional constraints.

    Input shape: ``(batch, ..., input_dim)``. Output shape: ``(batch, ..., units)``.
    Weights: ``kernel`` (input_dim, units), ``bias`` (units,).

    Examples:
        >>> import layerkit as lk
        >>> lk.layers.Dense(4)(lk.ones((2, 3))).shape
        (2, 4)
    """

    _cast_int_inputs = True
    supports_masking = True

    def __init__(self, units: int, activation: str | Callable | None = None, use_bias: bool = True,
                 kernel_initializer: Any = "glorot_uniform", bias_initializer: Any = "zeros",
                 kernel_regularizer: Any = None, bias_regularizer: Any = None,
                 kernel_constraint: Any = None, bias_constraint: Any = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.units = _positive_int("Dense", "units", units)
        kernel_bias_options(self, activation, use_bias, kernel_initializer, bias_initializer,
                            kernel_regularizer, bias_regularizer, kernel_constraint,
                            bias_constraint)
        self.input_spec = InputSpec(min_ndim=2)

    def build(self, input_shape: Any) -> None:
        in_dim = input_shape[-1]
        if in_dim is None:
            raise ValueError(f"Dense '{self.name}': the last dimension of the input must be "
                             f"known, received input shape {tuple(input_shape)}")
        add_kernel_bias(self, "kernel", (in_dim, self.units), self.units)
        self.input_spec = InputSpec(min_ndim=2, axes={-1: in_dim})

    def call(self, inputs: Any) -> Any:
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

    Examples:
        >>> import layerkit as lk
        >>> lk.layers.Activation("relu")(lk.constant([-1.0, 2.0])).numpy()
        array([0., 2.], dtype=float32)
    """

    supports_masking = True

    def __init__(self, activation: str | Callable | None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.activation = activations.get(activation)

    def call(self, inputs: Any) -> Any:
        return self.activation(inputs)

    def get_config(self) -> dict:
        return {**super().get_config(), "activation": activations.serialize(self.activation)}


class Flatten(Layer):
    """Flattens every dimension but the batch: ``(batch, ...) -> (batch, prod(...))``."""

    def __init__(self, data_format: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.data_format = data_format
        self.input_spec = InputSpec(min_ndim=1)

    def call(self, inputs: Any) -> Any:
        shape = inputs.shape
        n = math.prod(shape[1:])
        # -1 for the batch: no batch size in a graph traced with a None batch dimension
        return _array.reshape(inputs, (-1, n) if n else (shape[0], n))

    def get_config(self) -> dict:
        return {**super().get_config(), "data_format": self.data_format}


class Reshape(Layer):
    """Reshapes each sample to ``target_shape`` (one entry may be -1).

    Input shape: ``(batch, ...)``. Output shape: ``(batch,) + target_shape``.
    """

    def __init__(self, target_shape: Sequence[int], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.target_shape = tuple(int(d) for d in target_shape)

    def call(self, inputs: Any) -> Any:
        shape = inputs.shape
        n, known = math.prod(shape[1:]), math.prod(d for d in self.target_shape if d != -1)
        target = self.target_shape
        if (-1 not in target and n != known) or (-1 in target and (known == 0 or n % known)):
            raise ValueError(f"Reshape '{self.name}': cannot reshape samples of shape "
                             f"{shape[1:]} ({n} values) to target_shape {target}")
        if -1 not in target and known:  # -1 for the batch (see Flatten)
            return _array.reshape(inputs, (-1,) + target)
        return _array.reshape(inputs, (shape[0],) + target)

    def get_config(self) -> dict:
        return {**super().get_config(), "target_shape": list(self.target_shape)}


class SeededLayer(Layer):
    """Base of layers that draw random numbers while training (Dropout, GaussianNoise, ...).

    Without a seed they draw from ``lk.random``'s global generator (reproducible after
    ``lk.random.set_seed``); with an int ``seed`` from their own stream, whose position
    checkpoints save (``seed_generator``), so a resumed run draws the same numbers.
    """

    def _set_seed(self, seed: int | None) -> None:
        self.seed = seed
        self._generator = _random.Generator(seed) if seed is not None else None

    def _checkpoint_children(self) -> dict:
        children = super()._checkpoint_children()
        if self._generator is not None:
            children["seed_generator"] = self._generator
        return children


class Dropout(SeededLayer):
    """Zeroes a fraction ``rate`` of the inputs during training and scales the rest by
    ``1 / (1 - rate)``; the identity at inference.

    Args:
        rate: fraction to drop, in [0, 1).
        noise_shape: optional shape of the keep mask (broadcast to the input).
        seed: optional int making the sequence of masks reproducible; without it masks
            draw from ``lk.random``'s global generator.
    """

    supports_masking = True

    def __init__(self, rate: float, noise_shape: Any = None, seed: int | None = None,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if not 0 <= rate < 1:
            raise ValueError(f"Dropout: `rate` must be in [0, 1), received rate={rate}")
        self.rate, self.noise_shape = float(rate), noise_shape
        self._set_seed(seed)

    def call(self, inputs: Any, training: bool | None = None) -> Any:
        if not training or self.rate == 0:
            return inputs
        # The layer's own stream (or None: the global one) is drawn from when the mask
        # is made, so a traced step draws a fresh mask per call, as eager steps do.
        return _nn.dropout(inputs, self.rate, noise_shape=self.noise_shape,
                           seed=self._generator)

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
        embeddings_regularizer: optional.
        embeddings_constraint: optional.
        mask_zero: whether index 0 is padding: the output then carries the mask
            ``inputs != 0`` (Keras masking), so RNNs skip padded steps and losses and
            metrics leave them out. ``input_dim`` must leave room for index 0.

    Input shape: ``(batch, ...)`` integers. Output shape: ``(batch, ..., output_dim)``.
    Weights: ``embeddings`` (input_dim, output_dim).
    """

    def __init__(self, input_dim: int, output_dim: int, embeddings_initializer: Any = "uniform",
                 embeddings_regularizer: Any = None, embeddings_constraint: Any = None,
                 mask_zero: bool = False, **kwargs: Any) -> None:
        kwargs.pop("input_length", None)  # Keras 2 argument, not needed
        super().__init__(**kwargs)
        self.input_dim = _positive_int("Embedding", "input_dim", input_dim)
        self.output_dim = _positive_int("Embedding", "output_dim", output_dim)
        self.embeddings_initializer = initializers.get(embeddings_initializer)
        self.embeddings_regularizer = regularizers.get(embeddings_regularizer)
        self.embeddings_constraint = constraints.get(embeddings_constraint)
        self.mask_zero = bool(mask_zero)
        if self.mask_zero:
            enable_masks()

    def build(self, input_shape: Any = None) -> None:
        self.embeddings = self.add_weight("embeddings", (self.input_dim, self.output_dim),
                                          self.embeddings_initializer,
                                          regularizer=self.embeddings_regularizer,
                                          constraint=self.embeddings_constraint)

    def call(self, inputs: Any) -> Any:
        # The range check is a record on the indices: in a traced graph it runs per call.
        inputs = apply(_CHECK_INDICES, inputs, layer=self.name, input_dim=self.input_dim)
        if inputs.dtype.kind not in "iu":
            inputs = _ew.cast(inputs, "int64")
        return _array.gather(self.embeddings, inputs)

    def compute_mask(self, inputs: Any, mask: Any = None) -> Any:
        """``inputs != 0`` with ``mask_zero=True``, else None."""
        if not self.mask_zero:
            return None
        return _ew.not_equal(inputs, 0)

    def get_config(self) -> dict:
        return {**super().get_config(), "input_dim": self.input_dim,
                "output_dim": self.output_dim, "mask_zero": self.mask_zero,
                "embeddings_initializer": initializers.serialize(self.embeddings_initializer),
                "embeddings_regularizer": regularizers.serialize(self.embeddings_regularizer),
                "embeddings_constraint": constraints.serialize(self.embeddings_constraint)}


class Identity(Layer):
    """Returns its input unchanged (masks pass through)."""

    supports_masking = True

    def call(self, inputs: Any) -> Any:
        return inputs

    def compute_output_shape(self, input_shape: Any) -> Any:
        return input_shape


def _function_config(fn) -> dict:
    """A function by reference (never its code): Keras's entry for a named function."""
    if not callable(fn):
        raise ValueError(f"Lambda: cannot serialize {fn!r}: it is not callable")
    name = getattr(fn, "__name__", None)
    if name == "<lambda>" or name is None:
        # Only a marker: layerkit never serializes code (no bytecode, no pickle).
        return {"class_name": "__lambda__", "config": {"module": getattr(fn, "__module__", None)}}
    return {"module": getattr(fn, "__module__", None) or "builtins", "class_name": "function",
            "config": name, "registered_name": "function"}


def _function_from_config(spec, custom_objects: dict | None, what: str):
    if callable(spec):
        return spec
    if not isinstance(spec, dict):
        return spec  # a shape or a fixed mask
    kind = spec.get("class_name")
    if kind == "__lambda__":
        raise ValueError(
            f"Lambda.from_config: the `{what}` in this config is a Python lambda, whose code "
            f"was not saved: layerkit never deserializes code (Keras 3 also refuses lambdas "
            f"unless safe_mode=False, which layerkit does not offer). Re-create the layer in "
            f"code, or use a named function and pass it as custom_objects={{name: fn}}.")
    if kind != "function":
        raise ValueError(f"Lambda.from_config: cannot interpret the `{what}` entry {spec!r}")
    name = spec.get("config")
    fn = (custom_objects or {}).get(name)
    if fn is None and str(spec.get("module", "")).startswith("layerkit"):
        import layerkit  # noqa: PLC0415 (a layerkit function named in the config)
        fn = getattr(layerkit, name, None) or getattr(layerkit.nn, name, None)
    if fn is None:
        raise ValueError(f"Lambda.from_config: unknown function {name!r} (module "
                         f"{spec.get('module')!r}); pass it as custom_objects={{{name!r}: fn}}")
    return fn


class Lambda(Layer):
    """Wraps a function of the inputs as a layer: ``Lambda(lambda x: x ** 2)``.

    Args:
        function: called as ``function(inputs, **arguments)``; it also receives
            ``mask=`` and ``training=`` if its signature names them.
        output_shape: optional output shape without the batch axis (a tuple), or a
            function of the input shape; by default found by running the function.
        mask: optional output mask: a function ``mask(inputs, previous_mask)`` or a fixed
            mask tensor. Without it the layer drops input masks (as Keras).
        arguments: optional dict of keyword arguments for ``function``.

    ``get_config`` names a named function (its module and name) and never stores code:
    ``from_config`` finds it in ``custom_objects`` (or layerkit's own functions) and
    raises ``ValueError`` for a Python lambda (Keras refuses those by default too).

    Examples:
        >>> import layerkit as lk
        >>> lk.layers.Lambda(lambda x, k: x * k, arguments={"k": 3.0})(lk.ones((1, 2))).numpy()
        array([[3., 3.]], dtype=float32)
    """

    def __init__(self, function: Callable, output_shape: Any = None, mask: Any = None,
                 arguments: dict[str, Any] | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if not callable(function):
            raise TypeError(f"Lambda: `function` must be callable; received {function!r}")
        self.function = function
        self.arguments = dict(arguments or {})
        self.mask = mask
        self.supports_masking = mask is not None
        if mask is not None:
            enable_masks()
        self._output_shape = output_shape
        try:
            params = inspect.signature(function).parameters
        except (TypeError, ValueError):  # some builtins have no signature
            params = {}
        self._fn_kwargs = [k for k in ("mask", "training") if k in params]

    def call(self, inputs: Any, mask: Any = None, training: bool | None = None) -> Any:
        kwargs = dict(self.arguments)
        if "mask" in self._fn_kwargs:
            kwargs["mask"] = mask
        if "training" in self._fn_kwargs:
            kwargs["training"] = training
        return self.function(inputs, **kwargs)

    def compute_mask(self, inputs: Any, mask: Any = None) -> Any:
        if callable(self.mask):
            return self.mask(inputs, mask)
        return self.mask

    def compute_output_shape(self, input_shape: Any) -> Any:
        shape = self._output_shape
        if shape is None:
            return super().compute_output_shape(input_shape)
        if callable(shape):
            return shape(input_shape)
        first = input_shape[0] if input_shape and isinstance(input_shape[0], (list, tuple)) \
            else input_shape
        return (first[0] if first else None,) + tuple(shape)

    def get_config(self) -> dict:
        config = {**super().get_config(), "function": _function_config(self.function)}
        shape = self._output_shape
        if shape is not None:
            config["output_shape"] = _function_config(shape) if callable(shape) else list(shape)
        if self.mask is not None:
            config["mask"] = _function_config(self.mask) if callable(self.mask) else \
                np.asarray(self.mask).tolist()
        config["arguments"] = dict(self.arguments)
        return config

    @classmethod
    def from_config(cls, config: dict, custom_objects: dict | None = None,
                    safe_mode: bool | None = None) -> Lambda:
        """A Lambda from :meth:`get_config` (functions found by name; see the class).

        Raises:
            ValueError: the config holds a Python lambda, or names an unknown function.
        """
        config = dict(config)
        config["function"] = _function_from_config(config["function"], custom_objects,
                                                   "function")
        if "output_shape" in config:
            shape = _function_from_config(config["output_shape"], custom_objects,
                                          "output_shape")
            config["output_shape"] = tuple(shape) if isinstance(shape, list) else shape
        if "mask" in config:
            config["mask"] = _function_from_config(config["mask"], custom_objects, "mask")
        return cls(**config)


class InputLayer(Layer):
    """The input of a model as a layer: ``lk.Sequential([InputLayer(shape=(8,)), ...])``.

    Args:
        shape: the shape of one sample (without the batch axis).
        batch_size: optional fixed batch size.
        dtype: the input dtype (default float32).
        batch_shape: the full shape including the batch axis (instead of ``shape``).
        input_tensor: optional symbolic tensor (from ``lk.Input``) to use.
        sparse: unsupported; must be None or False.
        ragged: unsupported; must be None or False.
        optional: accepted for Keras compatibility.
        name: default ``input_layer``, ``input_layer_1``, ...

    ``output`` is its symbolic tensor, so ``lk.Model(layer.output, ...)`` works too.

    Raises:
        ValueError: neither or both of ``shape`` and ``batch_shape``, or unsupported args.
    """

    def __init__(self, shape: int | ShapeLike | None = None, batch_size: Any = None,
                 dtype: DTypeLike = None, sparse: Any = None, batch_shape: Any = None,
                 input_tensor: Any = None, optional: bool = False, name: str | None = None,
                 ragged: Any = None, **kwargs: Any) -> None:
        shape = kwargs.pop("input_shape", shape)
        batch_shape = kwargs.pop("batch_input_shape", batch_shape)
        if kwargs:
            raise TypeError(f"InputLayer: unexpected keyword argument(s) {sorted(kwargs)}")
        if sparse or ragged:
            raise ValueError("InputLayer: sparse and ragged inputs are not supported")
        if input_tensor is not None:
            if not isinstance(input_tensor, SymbolicTensor):
                raise ValueError(f"InputLayer: `input_tensor` must be a symbolic tensor (from "
                                 f"lk.Input); received {type(input_tensor).__name__}")
            batch_shape, dtype = input_tensor.shape, input_tensor.dtype
        elif shape is not None and batch_shape is not None:
            raise ValueError("InputLayer: pass only one of `shape` and `batch_shape`")
        elif shape is None and batch_shape is None:
            raise ValueError("InputLayer: pass shape=(...) (without the batch axis) or "
                             "batch_shape")
        elif batch_size is not None and batch_shape is not None:
            raise ValueError("InputLayer: pass only one of `batch_size` and `batch_shape`")
        elif shape is not None:
            dims = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
            batch_shape = (batch_size, *dims)
        batch_shape = tuple(None if d is None else int(d) for d in batch_shape)
        super().__init__(name=name, dtype=dtype or "float32")
        self._input_tensor = input_tensor if input_tensor is not None else \
            SymbolicTensor(batch_shape, dtype or "float32", name=self.name)
        self.sparse, self.ragged, self.optional = False, False, bool(optional)
        self.__dict__["built"] = True

    @property
    def batch_shape(self) -> tuple:
        return tuple(self._input_tensor.shape)

    @property
    def output(self) -> SymbolicTensor:
        """The symbolic tensor this layer stands for."""
        return self._input_tensor

    def call(self, inputs: Any = None) -> Any:
        return inputs

    def get_config(self) -> dict:
        return {"batch_shape": list(self.batch_shape), "dtype": self.dtype,
                "sparse": self.sparse, "ragged": self.ragged, "name": self.name,
                "optional": self.optional}
