"""``lk.models.clone_model``: the same architecture with new weights (Keras 3's API)."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from layerkit._core.nest import flatten, pack_sequence_as
from layerkit.layers.layer import Layer
from layerkit.layers.symbolic import SymbolicTensor
from layerkit.models.functional import Input
from layerkit.models.model import Model
from layerkit.models.sequential import Sequential

__all__ = ["clone_model"]


def _default_clone(layer: Layer) -> Layer:
    return layer.__class__.from_config(layer.get_config())


def clone_model(model: Model, input_tensors: Any = None,
                clone_function: Callable[[Layer], Layer] | None = None,
                call_function: Callable[..., Any] | None = None,
                recursive: bool = False, **kwargs: Any) -> Model:
    """A new model with the architecture of ``model`` and freshly initialised weights.

    Sequential and functional models are rebuilt layer by layer: each layer is
    replaced by ``clone_function(layer)`` (default: ``layer.__class__.from_config(
    layer.get_config())``; a layer shared by several calls is cloned once) and a
    functional graph is replayed on new inputs. A subclassed model is rebuilt from its
    config. Nothing is compiled (as in Keras).

    Args:
        model: the model to clone.
        input_tensors: optional ``lk.Input`` tensor(s) to build the clone on (same
            structure as the model's inputs).
        clone_function: ``fn(layer) -> new layer``.
        call_function: ``fn(layer, *args, **kwargs)`` called instead of
            ``layer(*args, **kwargs)`` for each replayed call of a functional model.
        recursive: also clone the layers of nested Sequential/functional models with
            ``clone_function`` (by default a nested model is cloned as one layer).

    Returns:
        The new model.

    Raises:
        ValueError: ``input_tensors``/``clone_function`` for a subclassed model, or
            input tensors that do not match the model's inputs.
        TypeError: unexpected keyword arguments.

    Examples:
        >>> import layerkit as lk
        >>> model = lk.Sequential([lk.Input((3,)), lk.layers.Dense(2)])
        >>> twin = lk.models.clone_model(model)
        >>> twin.get_config() == model.get_config(), twin.layers[0] is model.layers[0]
        (True, False)
    """
    from layerkit.saving.object_registration import CustomObjectScope

    if kwargs:
        raise TypeError(f"clone_model: unexpected keyword argument(s) {sorted(kwargs)}")
    base = clone_function or _default_clone

    def clone(layer):
        if recursive and isinstance(layer, Model) and (
                isinstance(layer, Sequential) or layer._graph is not None):
            return clone_model(layer, clone_function=clone_function,
                               call_function=call_function, recursive=True)
        return base(layer)

    # The model's own classes resolve by name inside configs (unregistered ones too).
    classes = {type(x).__name__: type(x) for x in [model] + model.submodules}
    with CustomObjectScope(classes):
        if isinstance(model, Sequential):
            return _clone_sequential(model, input_tensors, clone)
        if model._graph is not None:
            return _clone_functional(model, input_tensors, clone, call_function)
        if input_tensors is not None or clone_function is not None:
            raise ValueError(f"clone_model: model '{model.name}' is a subclassed model; "
                             f"it is rebuilt from its config, so input_tensors and "
                             f"clone_function cannot be used")
        return model.__class__.from_config(model.get_config())


def _clone_sequential(model: Sequential, input_tensors, clone) -> Sequential:
    first = []
    if input_tensors is not None:
        flat = flatten(input_tensors)
        if len(flat) != 1 or not isinstance(flat[0], SymbolicTensor):
            raise ValueError(f"clone_model: a Sequential model takes one lk.Input tensor as "
                             f"input_tensors; received {input_tensors!r}")
        first = [flat[0]]
    elif model._input_shape is not None:
        first = [Input(batch_shape=(None,) + tuple(model._input_shape)[1:],
                       dtype=model.__dict__.get("_input_dtype"),
                       name=model.__dict__.get("_input_name"))]
    return Sequential(first + [clone(layer) for layer in model.layers], name=model.name,
                      trainable=model.trainable)


def _clone_functional(model: Model, input_tensors, clone, call_function) -> Model:
    graph = model._graph
    if input_tensors is None:
        new_inputs = [Input(batch_shape=t.shape, dtype=t.dtype, name=t.name)
                      for t in graph.flat_inputs]
    else:
        new_inputs = flatten(input_tensors)
        if len(new_inputs) != len(graph.flat_inputs) or not all(
                isinstance(t, SymbolicTensor) for t in new_inputs):
            raise ValueError(f"clone_model: input_tensors must be {len(graph.flat_inputs)} "
                             f"lk.Input tensor(s) like the inputs of model '{model.name}'")
    clones: dict = {}

    def call(node, args, kwargs):
        layer = clones.get(id(node.layer))
        if layer is None:
            layer = clones[id(node.layer)] = clone(node.layer)
        return call_function(layer, *args, **kwargs) if call_function else layer(*args,
                                                                                  **kwargs)

    memo = {id(old): new for old, new in zip(graph.flat_inputs, new_inputs)}
    outputs = graph.replay(memo, call)
    inputs = pack_sequence_as(graph.inputs, new_inputs) if not isinstance(
        graph.inputs, SymbolicTensor) else new_inputs[0]
    cls = type(model) if type(model) is not Model else Model
    return cls(inputs=inputs, outputs=outputs, name=model.name, trainable=model.trainable)
