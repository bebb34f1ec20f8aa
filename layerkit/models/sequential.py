"""``lk.Sequential``: a plain stack of layers, each feeding the next."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from layerkit._core.tensor import Tensor
from layerkit.layers.core import InputLayer
from layerkit.layers.layer import Layer
from layerkit.layers.symbolic import SymbolicTensor
from layerkit.models.model import Model

__all__ = ["Sequential"]


class Sequential(Model):
    """A linear stack of layers.

    The model is built as soon as the input shape is known: from an ``lk.Input`` as the
    first entry, from ``input_shape=`` on the first layer, from ``build(input_shape)``,
    or from the first batch it is called on.

    Args:
        layers: an optional list of layers (``lk.Input(...)`` may come first).
        name: the model name (default ``sequential``, ``sequential_1``, ...).
        trainable: whether its weights are trained.

    Examples:
        >>> import layerkit as lk
        >>> model = lk.Sequential([lk.Input(shape=(8,)), lk.layers.Dense(4),
        ...                        lk.layers.Dense(1)])
        >>> model.count_params()
        41
    """

    # Instance attributes written through ``__dict__`` (declared for type checkers).
    _input_shape: tuple | None
    _symbolic: list
    _sym_outs: list
    _sym_input: Any

    def __init__(self, layers: Sequence[Layer | SymbolicTensor] | None = None,
                 name: str | None = None, trainable: bool = True) -> None:
        super().__init__(name=name, trainable=trainable)
        self._stack = []  # tracked list: weights and checkpoint order follow it
        self.__dict__["_input_shape"] = None
        self.__dict__["_symbolic"] = []  # (layer, output shape) once built symbolically
        self.__dict__["_sym_outs"] = []  # each layer's symbolic output, in step
        for layer in layers or []:
            self.add(layer)

    @property
    def layers(self) -> list:
        return list(self._stack)

    def _checkpoint_children(self) -> dict:
        return {f"layer-{i}": layer for i, layer in enumerate(self._stack)}

    def add(self, layer: Layer | SymbolicTensor) -> None:
        """Append a layer (or set the input shape with ``lk.Input`` or an ``InputLayer``).

        Raises:
            TypeError: not a Layer or an ``lk.Input`` tensor.
            ValueError: an ``lk.Input`` or ``InputLayer`` after layers were added.
        """
        if isinstance(layer, InputLayer):  # Keras: Sequential([InputLayer(shape=...), ...])
            layer = layer.output
        if isinstance(layer, SymbolicTensor):
            if self._stack:
                raise ValueError(f"Sequential '{self.name}': lk.Input must come first, before "
                                 f"any layer")
            self.__dict__["_input_shape"] = tuple(layer.shape)
            self.__dict__["_input_dtype"] = layer.dtype
            self.__dict__["_input_name"] = layer.name
            self.__dict__["_sym_input"] = layer
            return
        if not isinstance(layer, Layer):
            raise TypeError(
                f"Sequential '{self.name}'.add: expected a Layer, received "
                f"{type(layer).__name__}"
            )
        if not self._stack and self._input_shape is None:
            shape = layer.__dict__.get("_batch_input_shape")
            if shape is not None:
                self.__dict__["_input_shape"] = tuple(shape)
        self._stack.append(layer)
        self.__dict__["_step_cache"] = None
        if self._input_shape is not None:
            self._build_symbolic(self._input_shape)

    def pop(self) -> Layer:
        """Remove and return the last layer."""
        if not self._stack:
            raise IndexError(f"Sequential '{self.name}' has no layers to pop")
        layer = self._stack.pop()
        self.__dict__["_symbolic"] = self._symbolic[:len(self._stack)]
        self.__dict__["_sym_outs"] = self._sym_outs[:len(self._stack)]
        self.__dict__["_step_cache"] = None
        return layer

    def _build_symbolic(self, input_shape) -> None:
        # Run the stack on symbolic tensors: builds every layer and records output shapes.
        done, outs = self._symbolic, self._sym_outs
        if done:
            x = outs[-1]
        else:
            x = self.__dict__.get("_sym_input")
            if x is None or tuple(x.shape[1:]) != tuple(input_shape)[1:]:
                x = SymbolicTensor(tuple(input_shape),
                                   self.__dict__.get("_input_dtype") or self._dtype,
                                   name=self.__dict__.get("_input_name"))
                self.__dict__["_sym_input"] = x
        for layer in self._stack[len(done):]:
            x = layer(x)
            if not isinstance(x, SymbolicTensor):
                raise TypeError(f"Sequential '{self.name}': layer '{layer.name}' returned "
                                f"{type(x).__name__}; each layer must return one tensor")
            done.append((layer, x.shape, x.dtype))
            outs.append(x)
        self.__dict__["built"] = True
        self.__dict__["_build_shape"] = (None,) + tuple(input_shape)[1:]

    @property
    def inputs(self) -> list | None:
        """``[the symbolic input]`` once the input shape is known, else None."""
        return [self._sym_input] if self._symbolic else None

    @property
    def outputs(self) -> list | None:
        """``[the last layer's symbolic output]`` once built, else None."""
        return [self._sym_outs[-1]] if self._symbolic else None

    def _structure(self, what: str):
        if not self._symbolic:
            raise AttributeError(f"Sequential '{self.name}' has no symbolic {what} yet: give "
                                 f"it an lk.Input first or build it with an input shape")
        return self._sym_input if what == "input" else self._sym_outs[-1]

    def _symbolic_shapes(self) -> list:
        return [(layer, shape) for layer, shape, _ in self._symbolic]

    def build(self, input_shape: Any = None) -> None:
        """Build every layer for inputs of ``input_shape`` (the batch size may be None)."""
        if input_shape is None:
            input_shape = self._input_shape
        if input_shape is None:
            raise ValueError(f"Sequential '{self.name}': build() needs an input shape")
        if self._input_shape is None:
            self.__dict__["_input_shape"] = tuple(input_shape)
        if self._stack:
            self._build_symbolic(input_shape)

    def _check_input(self, x) -> None:
        expected = self._input_shape
        shape = tuple(x.shape if isinstance(x, Tensor) else np.shape(x))  # never values
        if (expected, shape) == self.__dict__.get("_input_ok"):  # steps repeat one shape
            return
        if len(shape) != len(expected) or any(
                e is not None and e != s for e, s in zip(expected[1:], shape[1:])):
            raise ValueError(
                f"Input 0 of model '{self.name}' is incompatible: expected shape "
                f"{(None,) + tuple(expected[1:])}, received {shape}"
            )
        self.__dict__["_input_ok"] = (expected, shape)

    def call(self, inputs: Any, training: bool | None = None, mask: Any = None) -> Any:
        if self._input_shape is not None:
            self._check_input(inputs)
        x = inputs
        for layer in self._stack:
            x = layer(x)
        return x

    def get_config(self) -> dict:
        """Keras 3's Sequential config: an ``InputLayer`` entry (when the input shape is
        known), then each layer's full config (``lk.saving.serialize_keras_object``)."""
        from layerkit.saving.serialization_lib import serialize_keras_object

        layers = []
        shape = self._input_shape
        if shape is not None:
            dtype = np.dtype(self.__dict__.get("_input_dtype") or self._dtype).name
            layers.append({"module": "keras.layers", "class_name": "InputLayer",
                           "config": {"batch_shape": list(shape), "dtype": dtype,
                                      "sparse": False, "ragged": False,
                                      "name": self.__dict__.get("_input_name") or
                                      "input_layer", "optional": False},
                           "registered_name": None})
        for layer in self._stack:
            entry = serialize_keras_object(layer)
            if shape is not None:
                entry["config"].pop("batch_input_shape", None)  # the InputLayer says it
            layers.append(entry)
        config = {"name": self.name, "trainable": self.trainable, "dtype": self.dtype,
                  "layers": layers}
        if shape is not None:
            config["build_input_shape"] = list(shape)
        return config

    @classmethod
    def from_config(cls, config: dict, custom_objects: dict | None = None) -> Sequential:
        """A new (freshly initialised) model from :meth:`get_config`'s output or Keras 3's.

        Args:
            config: the dict from ``get_config``.
            custom_objects: ``{class_name: class}`` for layers that are neither built in
                nor registered (``lk.saving.register_serializable``), and
                ``{name: function}`` for the functions of ``Lambda`` layers.

        Raises:
            ValueError: a layer class that is neither built in nor registered nor in
                custom_objects.
        """
        from layerkit.models.functional import Input
        from layerkit.saving.object_registration import CustomObjectScope
        from layerkit.saving.serialization_lib import deserialize_keras_object

        specs = config.get("layers", [])
        if not isinstance(specs, list):
            raise ValueError(f"Sequential.from_config: 'layers' must be a list of layer "
                             f"configs; received {type(specs).__name__}")
        model = cls(name=config.get("name"), trainable=config.get("trainable", True))
        shape = config.get("build_input_shape")
        dtype = config.get("input_dtype")
        input_name = None
        with CustomObjectScope(custom_objects):
            for i, spec in enumerate(specs):
                if isinstance(spec, dict) and spec.get("class_name") == "InputLayer" and i == 0:
                    inner = spec.get("config") or {}
                    shape = inner.get("batch_shape", inner.get("batch_input_shape", shape))
                    dtype = inner.get("dtype", dtype)
                    input_name = inner.get("name")
                    continue
                if shape is not None and not model._input_shape:
                    model.add(Input(batch_shape=tuple(shape), dtype=dtype, name=input_name))
                layer = deserialize_keras_object(spec, kind="layers")
                if not isinstance(layer, Layer):
                    raise ValueError(f"Sequential.from_config: entry {i} is a "
                                     f"{type(layer).__name__}, not a layer")
                model.add(layer)
        if shape is not None and not model._input_shape:
            model.add(Input(batch_shape=tuple(shape), dtype=dtype, name=input_name))
        return model

    def get_build_config(self) -> dict | None:
        """``{"input_shape": [None, ...]}`` once the input shape is known, else None."""
        shape = self._input_shape
        return {"input_shape": [None] + list(shape)[1:]} if shape is not None else None

    def build_from_config(self, config: dict) -> None:
        """Build from :meth:`get_build_config` output (Keras's too)."""
        if config and config.get("input_shape") is not None and not self.built:
            self.build(tuple(config["input_shape"]))
