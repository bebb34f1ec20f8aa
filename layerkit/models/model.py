"""``lk.Model``: a Layer that trains.

Three ways to make one (as in Keras):

- subclass ``lk.Model``, create layers in ``__init__`` and write ``call``;
- functional: ``lk.Model(inputs, outputs)`` from ``lk.Input`` tensors;
- ``lk.Sequential([...])`` (see :mod:`layerkit.models.sequential`).

This module holds the model proper: its layers and symbolic inputs/outputs, ``call``,
``build``, ``summary``, weights files, export and configs. Training (``compile``,
``fit``, ``evaluate``, ``predict``, the ``*_on_batch`` methods and the overridable
``train_step``/``test_step``/``predict_step``) comes from the
:class:`~layerkit.models.trainer.Trainer` mixin, as in Keras 3
(``keras/src/trainers/trainer.py``).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from layerkit._core import context
from layerkit._core.nest import flatten
from layerkit._core.types import PathLike
from layerkit.layers import layer as _layer_module
from layerkit.layers.layer import Layer
from layerkit.layers.symbolic import SymbolicTensor
from layerkit.layers.tracking import unique_name
from layerkit.models import _data
from layerkit.models import functional as _functional
from layerkit.models import summary as _summary
from layerkit.models.trainer import Trainer
from layerkit.utils.batch_utils import pack_x_y_sample_weight, unpack_x_y_sample_weight

__all__ = ["Model", "unpack_x_y_sample_weight", "pack_x_y_sample_weight"]


def _is_functional_call(args: tuple, kwargs: dict) -> bool:
    if "inputs" in kwargs or "outputs" in kwargs:
        return True
    return bool(args) and any(isinstance(t, SymbolicTensor) for t in flatten(args[0])) \
        if isinstance(args[0], (SymbolicTensor, list, tuple, dict)) else False


class Model(Trainer, Layer):
    """A layer with training and inference loops (``compile``/``fit``/``evaluate``/``predict``).

    Args (functional form): ``inputs``, ``outputs`` (from ``lk.Input``), ``name``.
    Args (subclass form): ``name``, ``trainable``, ``dtype`` passed to ``super().__init__``.

    Examples:
        >>> import layerkit as lk
        >>> inputs = lk.Input(shape=(4,))
        >>> outputs = lk.layers.Dense(2)(inputs)
        >>> model = lk.Model(inputs, outputs)
        >>> model.predict(lk.ones((3, 4)), verbose=0).shape
        (3, 2)
    """

    # Instance attributes written through ``__dict__`` (declared for type checkers).
    _graph: Any
    _implicit_build: bool

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if args or kwargs.keys() & {"inputs", "outputs"}:
            if not _is_functional_call(args, kwargs):
                raise TypeError(
                    f"Model() positional arguments are the functional form Model(inputs, "
                    f"outputs) with symbolic tensors from lk.Input; received "
                    f"{[type(a).__name__ for a in args]}"
                )
            self._init_functional(*args, **kwargs)
        else:
            super().__init__(**kwargs)
            self.__dict__["_graph"] = None
        self._init_training_state()

    def _init_functional(self, inputs=None, outputs=None, name: str | None = None,
                         trainable: bool = True, **kwargs) -> None:
        if inputs is None or outputs is None:
            raise ValueError("Model(inputs, outputs): both inputs and outputs are required")
        if kwargs:
            raise TypeError(f"Model(inputs, outputs): unexpected keyword arguments "
                            f"{sorted(kwargs)}")
        Layer.__init__(self, name=name or unique_name("Functional"), trainable=trainable)
        graph = _functional.Graph(inputs, outputs, self.name)
        self.__dict__["_graph"] = graph
        self._graph_layers = list(graph.layers)  # tracked: weights, checkpoints
        self.__dict__["built"] = True
        self.__dict__["_build_shape"] = [t.shape for t in graph.flat_inputs] \
            if len(graph.flat_inputs) > 1 else graph.flat_inputs[0].shape

    # ---- structure -----------------------------------------------------------------------
    @property
    def layers(self) -> list:
        if self._graph is not None:
            return list(self._graph.layers)
        return super().layers

    @property
    def inputs(self) -> list | None:
        """The model's symbolic inputs as a flat list (Keras 3), None before it has any."""
        return list(self._graph.flat_inputs) if self._graph is not None else None

    @property
    def outputs(self) -> list | None:
        """The model's symbolic outputs as a flat list (Keras 3), None before it has any."""
        return list(self._graph.flat_outputs) if self._graph is not None else None

    def _structure(self, what: str):
        if self._graph is None:
            raise AttributeError(f"Model '{self.name}' has no symbolic {what} yet: build it "
                                 f"on lk.Input tensors (or give a Sequential an lk.Input)")
        return self._graph.inputs if what == "input" else self._graph.outputs

    @property
    def input(self) -> Any:
        """The symbolic input(s) in the structure the model was built with."""
        return self._structure("input")

    @property
    def output(self) -> Any:
        """The symbolic output(s) in the structure the model was built with."""
        return self._structure("output")

    @property
    def input_shape(self) -> Any:
        """The input shape(s) with None for unknown sizes (a tuple, or a list of them)."""
        return _shapes(self._structure("input"))

    @property
    def output_shape(self) -> Any:
        """The output shape(s) with None for unknown sizes (a tuple, or a list of them)."""
        return _shapes(self._structure("output"))

    @property
    def input_names(self) -> list:
        return list(self._graph.input_names) if self._graph is not None else []

    @property
    def output_names(self) -> list:
        if self._graph is not None:
            return list(self._graph.output_names)
        return ["output"]

    def get_layer(self, name: str | None = None, index: int | None = None) -> Layer:
        """A layer by name or by index in :attr:`layers`.

        Raises:
            ValueError: no such layer (the message lists the available names).
        """
        layers = self.layers
        if index is not None:
            if not -len(layers) <= index < len(layers):
                raise ValueError(f"get_layer: index {index} is out of range for model "
                                 f"'{self.name}' with {len(layers)} layers")
            return layers[index]
        for layer in layers:
            if layer.name == name:
                return layer
        raise ValueError(f"get_layer: no layer named {name!r} in model '{self.name}'; "
                         f"layers are {[x.name for x in layers]}")

    def _checkpoint_children(self) -> dict:
        if self._graph is not None:
            return {f"layer-{i}": layer for i, layer in enumerate(self._graph.layers)}
        return super()._checkpoint_children()

    # ---- calling and building -----------------------------------------------------------
    def call(self, inputs: Any, training: bool | None = None, mask: Any = None) -> Any:
        """Run the model (functional models replay their graph; subclasses override)."""
        if self._graph is not None:
            return self._graph.run(inputs, mask)
        raise NotImplementedError(
            f"model '{self.name}' ({type(self).__name__}) must implement call(inputs); "
            f"subclasses of lk.Model define their forward pass there"
        )

    def _build_from(self, args: tuple, kwargs: dict) -> None:
        # The first real call builds sublayers as they run; build() need not run the model.
        self.__dict__["_implicit_build"] = True
        try:
            super()._build_from(args, kwargs)
        finally:
            self.__dict__["_implicit_build"] = False

    def build(self, input_shape: Any = None) -> None:
        """Create the weights for inputs of ``input_shape`` (None batch size allowed).

        For a subclassed model this runs ``call`` once on zeros of that shape (with no
        tape active and ``training=False``), which builds every sublayer.
        """
        if self._implicit_build or self._graph is not None or input_shape is None:
            return
        zeros = _data.zeros_like_shape(input_shape, self._dtype)
        saved = context.RECORDERS[:]
        context.RECORDERS.clear()
        try:
            # Through __call__ (which sees the model as being built) so that add_loss and
            # the training flag behave as in a real call.
            self(zeros, training=False)
        finally:
            context.RECORDERS[:] = saved
        self.__dict__["_build_shape"] = input_shape

    def summary(self, line_length: int | None = None, positions: Sequence[float] | None = None,
                print_fn: Callable[..., Any] | None = None,
                expand_nested: bool = False, show_trainable: bool = False) -> None:
        """Print a table of layers: name (type), output shape, parameter count; totals.

        Works for functional and Sequential models and for subclassed models once built
        (output shapes of their direct sublayers are found by one probing call).

        Raises:
            ValueError: the model is not built yet.
        """
        _summary.print_summary(self, line_length=line_length, print_fn=print_fn,
                               expand_nested=expand_nested, show_trainable=show_trainable)

    # ---- weights files ------------------------------------------------------------------------
    def save_weights(self, filepath: PathLike, overwrite: bool = True) -> str:
        """Write the model's weights to ``filepath``.

        The suffix picks the format: ``.safetensors`` (weights by layer path, through
        the optional ``safetensors`` package); ``.weights.h5``/``.h5`` (Keras 3's layout,
        which Keras's ``load_weights`` reads, through the optional ``h5py``); anything
        else is an ``lk.Checkpoint`` file. See :mod:`layerkit.io`.

        Returns:
            The path written.

        Raises:
            FileExistsError: the file exists and ``overwrite`` is False.
            ValueError: a ``.keras`` path (a whole-model archive, not weights).
        """
        import os

        from layerkit.checkpoint.checkpoint import Checkpoint

        path = os.fspath(filepath)
        if not overwrite and os.path.exists(path):
            raise FileExistsError(f"save_weights: {path} exists and overwrite=False")
        kind = _weights_format(path)
        if kind == "safetensors":
            from layerkit.io.safetensors_format import save_model_safetensors

            return save_model_safetensors(self, path)
        if kind == "keras":
            if path.lower().endswith(".keras"):
                raise ValueError(f"save_weights({path!r}): a .keras file is a whole-model "
                                 f"archive; save weights as '.weights.h5'")
            from layerkit.io.keras_weights import save_keras_weights

            return save_keras_weights(self, path)
        return Checkpoint(model=self).write(path)

    def load_weights(self, filepath: PathLike, skip_mismatch: bool = False) -> Any:
        """Restore weights written by :meth:`save_weights`, or by Keras 3.

        The suffix picks the format: ``.weights.h5``/``.h5`` (Keras 3
        ``save_weights``) and ``.keras`` (the weights of a Keras 3 archive) need the
        optional ``h5py`` and a built model of the same architecture; layers are matched
        by their Keras path, weights by position (:mod:`layerkit.io.keras_weights`).
        ``.safetensors`` files are matched by layer path. Anything else is an
        ``lk.Checkpoint`` file. For checkpoints and safetensors, values for layers that
        are not built yet are applied when they are built.

        Raises:
            FileNotFoundError / ValueError: a missing or corrupted file, or (unless
                ``skip_mismatch``) weights that do not match the model.
            ImportError: the optional package a format needs is not installed.
        """
        import os

        from layerkit.checkpoint.checkpoint import Checkpoint, restore_file

        kind = _weights_format(os.fspath(filepath))
        if kind == "keras":
            from layerkit.io.keras_weights import load_keras_weights

            return load_keras_weights(self, filepath, skip_mismatch=skip_mismatch)
        if kind == "safetensors":
            from layerkit.io.safetensors_format import load_model_safetensors

            return load_model_safetensors(self, filepath, skip_mismatch=skip_mismatch)
        status = restore_file(Checkpoint(model=self), filepath, skip_mismatch=skip_mismatch,
                              park_unknown=False)
        if not skip_mismatch and self.built:
            try:
                status.assert_existing_objects_matched()
            except AssertionError as e:
                raise ValueError(f"load_weights: the weights in {os.fspath(filepath)!r} do "
                                 f"not match model '{self.name}': {e}") from None
        else:
            status.expect_partial()
        return status

    def export(self, filepath: PathLike, format: str = "tf_saved_model",
               verbose: bool | None = None,
               input_signature: Any = None, **kwargs: Any) -> None:
        """Export the model's inference call as an artifact (Keras 3's ``Model.export``).

        ``format="onnx"`` writes an ONNX file through :func:`layerkit.onnx.export` (the
        optional ``onnx`` package): the batch size (and any other ``None`` size of the
        input signature) stays dynamic. Keras's default, ``"tf_saved_model"``, needs
        TensorFlow and is not available in layerkit.

        Args:
            filepath: the file to write.
            format: ``"onnx"``.
            verbose: print where the file was written (default: yes, as Keras).
            input_signature: one ``lk.TensorSpec`` (or structure of them) per call
                argument; defaults to the model's inputs with a dynamic batch size.
            **kwargs: passed to :func:`layerkit.onnx.export` (``opset``).

        Raises:
            ValueError: an unknown ``format``.
            NotImplementedError: ``format="tf_saved_model"``.

        Examples:
            >>> model.export("model.onnx", format="onnx")  # doctest: +SKIP
        """
        if format == "onnx":
            from layerkit.onnx import export as export_onnx

            export_onnx(self, filepath, input_signature=input_signature,
                        verbose=True if verbose is None else bool(verbose), **kwargs)
            return
        if format == "tf_saved_model":
            raise NotImplementedError(
                f"Model.export(format='tf_saved_model') needs TensorFlow, which layerkit does "
                f"not use; export model '{self.name}' with format='onnx' instead")
        raise ValueError(f"Unrecognized format={format!r}: Model.export supports "
                         f"format='onnx'")

    # ---- whole-model saving and configs ---------------------------------------------------
    def save(self, filepath: PathLike, overwrite: bool = True, zipped: bool | None = None,
             **kwargs: Any) -> str:
        """Save the whole model as a Keras 3 ``.keras`` archive (architecture, weights,
        optimizer state); see :func:`layerkit.saving.save_model`.

        Returns:
            The path written.
        """
        from layerkit.saving.saving_lib import save_model

        if zipped is not None and not zipped:
            raise ValueError(f"save({filepath!r}): only zipped .keras archives are written "
                             f"(zipped=False is not supported)")
        return save_model(self, filepath, overwrite=overwrite, **kwargs)

    def to_json(self, **kwargs: Any) -> str:
        """The model's config as a JSON string (``lk.models.model_from_json`` inverts it;
        Keras 3's ``model_from_json`` reads it). ``kwargs`` go to ``json.dumps``."""
        import json

        from layerkit.saving.serialization_lib import ObjectSharingScope, serialize_keras_object

        with ObjectSharingScope():
            config = serialize_keras_object(self)
        return json.dumps(config, **kwargs)

    def get_config(self) -> dict:
        """The model's config: Keras 3's functional config (layers, their calls, inputs
        and outputs) for a functional model; for a subclassed model, its constructor
        arguments (override it, as in Keras, when they are not plain values)."""
        if self._graph is not None and _functional_like(type(self)):
            from layerkit.models.functional_config import functional_config

            return functional_config(self)
        return Layer.get_config(self)

    @classmethod
    def from_config(cls, config: dict, custom_objects: dict | None = None) -> Model:
        """A new model (fresh weights) from :meth:`get_config` output or Keras 3's.

        Raises:
            TypeError: a subclassed model whose constructor does not take its config
                (implement ``get_config``/``from_config``).
            ValueError: an unknown layer class or a malformed functional config.
        """
        if all(k in config for k in ("layers", "input_layers", "output_layers")) \
                and _functional_like(cls):
            from layerkit.models.functional_config import functional_from_config

            return functional_from_config(cls, dict(config), custom_objects)
        try:
            return super().from_config(config)
        except TypeError as e:
            raise TypeError(
                f"{cls.__name__}.from_config: could not create the model from its config "
                f"{sorted(config)} ({e}). A subclassed model's get_config() must return the "
                f"arguments of its constructor (or define from_config), as in Keras") from e

    def get_build_config(self) -> dict | None:
        """The input shape(s) to rebuild a subclassed model's weights (None otherwise)."""
        if self._graph is not None:
            return None
        return super().get_build_config()

    def build_from_config(self, config: dict) -> None:
        """Build from :meth:`get_build_config` output (subclassed: one call on zeros)."""
        if self._graph is None and not self.built and config \
                and config.get("input_shape") is not None:
            from layerkit.layers.layer import _shape_tuple

            self.build(_shape_tuple(config["input_shape"]))
            self.__dict__["built"] = True


def _functional_like(cls) -> bool:
    """Keras's rule: a Model class whose constructor is Model's (or takes *args and
    **kwargs) is saved and rebuilt as a functional model."""
    import inspect

    if cls.__init__ is Model.__init__:
        return True
    params = inspect.signature(cls.__init__).parameters.values()
    return any(p.kind is p.VAR_POSITIONAL for p in params) and \
        any(p.kind is p.VAR_KEYWORD for p in params)


_layer_module._DEFAULT_CONFIGS.add(Model.get_config)


def _weights_format(path: str) -> str:
    """``'keras'``, ``'safetensors'`` or ``'checkpoint'``, from a weights file's suffix."""
    lower = path.lower()
    if lower.endswith((".h5", ".hdf5", ".keras")):
        return "keras"
    return "safetensors" if lower.endswith(".safetensors") else "checkpoint"


def _shapes(structure):
    flat = flatten(structure)
    shapes = [tuple(t.shape) for t in flat]
    return shapes[0] if len(shapes) == 1 and not isinstance(structure, (list, tuple, dict)) \
        else shapes
