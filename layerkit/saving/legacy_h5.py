"""Whole models in Keras's legacy HDF5 format (``model.save("m.h5")``, ``load_model``).

Keras 3 still writes and reads this format when a file name ends in ``.h5`` / ``.hdf5``
(TensorFlow programs save "best_model.h5" with ``ModelCheckpoint`` and load it again).
The layout is Keras's:

- root attributes ``model_config`` (the model's config as JSON), ``training_config`` (the
  compile arguments, with ``optimizer_config``), ``keras_version`` and ``backend``;
- the group ``model_weights``: attribute ``layer_names`` (the model's layers in order)
  and one group per layer whose ``weight_names`` attribute lists its weights (trainable,
  then non-trainable, in the layer's order), each a dataset at that name;
- the group ``optimizer_weights`` (attribute ``weight_names``): the optimizer's
  variables, its own first (iterations, learning rate) then each weight's slots.

Loading rebuilds the model from ``model_config`` (classes found by name, as for
``.keras`` files), compiles it from ``training_config`` unless ``compile=False``, then
assigns each layer's weights by layer name (by position among the layers with weights
when the names differ) and the optimizer's by position. Nothing is assigned unless
every count and shape matches. ``h5py`` is needed (``pip install layerkit[h5]``). Keras 2
weights-only files (``layer_names`` at the root) load through ``load_weights``.
"""
from __future__ import annotations

import io
import json
import os
import warnings
from typing import Any

import numpy as np

from layerkit.checkpoint.checkpoint import _assign_fresh
from layerkit.io._optional import require

__all__ = ["is_hdf5", "save_model_to_hdf5", "load_model_from_hdf5",
           "load_weights_from_hdf5_group"]

_FEATURE = "Keras legacy HDF5 (.h5) model files"
_SIGNATURE = b"\x89HDF\r\n\x1a\n"


def is_hdf5(filepath: Any) -> bool:
    """Whether ``filepath`` is an HDF5 file (by its signature, not its name)."""
    try:
        with open(os.fspath(filepath), "rb") as f:
            return f.read(8) == _SIGNATURE
    except (OSError, TypeError):
        return False


def _str(value: Any) -> str:
    return value.decode("utf8") if isinstance(value, bytes) else str(value)


def _weight_names(layer) -> list[str]:
    names, seen = [], set()
    for i, v in enumerate(layer.weights):
        name = f"{layer.name}/{v.name}"
        if name in seen:  # e.g. both directions of a Bidirectional have a "kernel"
            name = f"{layer.name}/{v.name}_{i}"
        seen.add(name)
        names.append(name)
    return names


def _write_named(group, names: list[str], values: list) -> None:
    group.attrs["weight_names"] = np.array([n.encode("utf8") for n in names])
    for name, value in zip(names, values):
        group.create_dataset(name, data=np.asarray(value))


def save_model_to_hdf5(model, filepath, overwrite: bool = True,
                       include_optimizer: bool = True) -> str:
    """Write ``model`` to a legacy Keras ``.h5`` file (see the module docstring).

    Raises:
        ImportError: h5py is not installed.
        FileExistsError: the file exists and ``overwrite`` is False.
        ValueError: the model's config is not JSON-serializable.
    """
    from layerkit import __version__
    from layerkit.checkpoint.format import atomic_write_bytes
    from layerkit.io.keras_weights import _optimizer_variables
    from layerkit.saving.saving_lib import KERAS_FORMAT_VERSION
    from layerkit.saving.serialization_lib import ObjectSharingScope, serialize_keras_object

    h5py = require("h5py", "h5", _FEATURE)
    path = os.fspath(filepath)
    if not overwrite and os.path.exists(path):
        raise FileExistsError(f"save_model: {path!r} exists and overwrite=False")
    with ObjectSharingScope():
        config = serialize_keras_object(model)
    compile_config = config.pop("compile_config", None)
    try:
        model_config = json.dumps(config)
        training_config = None
        if include_optimizer and compile_config:
            training = {k: v for k, v in compile_config.items() if k != "optimizer"}
            training["optimizer_config"] = compile_config.get("optimizer")
            training_config = json.dumps(training)
    except (TypeError, ValueError) as e:
        raise ValueError(f"save_model({path!r}): the config of model '{model.name}' is not "
                         f"JSON-serializable ({e})") from e
    buffer = io.BytesIO()
    with h5py.File(buffer, "w") as f:
        f.attrs["keras_version"] = KERAS_FORMAT_VERSION
        f.attrs["backend"] = "layerkit"
        f.attrs["layerkit_version"] = __version__
        f.attrs["model_config"] = model_config
        if training_config is not None:
            f.attrs["training_config"] = training_config
        weights = f.create_group("model_weights")
        weights.attrs["layer_names"] = np.array([layer.name.encode("utf8")
                                                 for layer in model.layers])
        weights.attrs["backend"] = "layerkit"
        weights.attrs["keras_version"] = KERAS_FORMAT_VERSION
        for layer in model.layers:
            _write_named(weights.create_group(layer.name), _weight_names(layer),
                         [v._v for v in layer.weights])
        optimizer = getattr(model, "optimizer", None)
        if include_optimizer and optimizer is not None and getattr(optimizer, "built", False):
            variables = _optimizer_variables(model, optimizer)
            _write_named(f.create_group("optimizer_weights"),
                         [f"optimizer/{i}_{v.name}" for i, v in enumerate(variables)],
                         [v._v for v in variables])
    atomic_write_bytes(path, buffer.getvalue())
    return path


def _read_layers(group, source: str) -> list[tuple[str, list]]:
    """``[(layer name, [dataset, ...])]`` in the file's order."""
    if "layer_names" not in group.attrs:
        raise ValueError(f"{source!r}: not a Keras HDF5 weights group (no 'layer_names' "
                         f"attribute)")
    out = []
    for raw in group.attrs["layer_names"]:
        name = _str(raw)
        if name not in group:
            raise ValueError(f"{source!r}: damaged Keras HDF5 weights: layer '{name}' is "
                             f"listed in layer_names but has no group")
        g = group[name]
        names = [_str(n) for n in g.attrs.get("weight_names", [])]
        missing = [n for n in names if n not in g]
        if missing:
            raise ValueError(f"{source!r}: damaged Keras HDF5 weights: layer '{name}' lists "
                             f"weights {missing} that the file does not hold")
        out.append((name, [g[n] for n in names]))
    return out


def load_weights_from_hdf5_group(model, group, source: str,
                                 skip_mismatch: bool = False) -> list[str]:
    """Assign the layer weights of a legacy Keras HDF5 group (``layer_names`` layout).

    Layers are matched by name; if some name is missing from the model, the layers that
    have weights are matched by position instead (Keras's ``by_name=False`` rule).

    Returns:
        The names of the layers assigned.

    Raises:
        ValueError: the weight counts or shapes differ (naming the layer, the expected
            and the received shapes), unless ``skip_mismatch``; nothing is assigned then.
    """
    stored = [(n, ds) for n, ds in _read_layers(group, source) if ds]
    layers = [layer for layer in model.layers if layer.weights]
    by_name = {layer.name: layer for layer in layers}
    if all(n in by_name for n, _ in stored):
        pairs = [(by_name[n], n, ds) for n, ds in stored]
    elif len(stored) == len(layers):
        pairs = [(layer, n, ds) for layer, (n, ds) in zip(layers, stored)]
    else:
        raise ValueError(f"load_weights({source!r}): the file has weights for {len(stored)} "
                         f"layer(s) {[n for n, _ in stored]}, model '{model.name}' has "
                         f"{len(layers)} layer(s) with weights {list(by_name)}")
    plan: list = []
    problems, loaded = [], []
    for layer, name, datasets in pairs:
        variables = layer.weights
        shapes = [tuple(v.shape) for v in variables]
        stored_shapes = [tuple(d.shape) for d in datasets]
        if shapes != stored_shapes:
            problems.append(f"layer '{layer.name}' ({type(layer).__name__}) has weights "
                            f"{shapes}; the file's layer '{name}' has {stored_shapes}")
            continue
        plan.extend(zip(variables, datasets))
        loaded.append(layer.name)
    if problems:
        msg = (f"load_weights({source!r}): the weights do not match model "
               f"'{model.name}':\n  " + "\n  ".join(problems))
        if not skip_mismatch:
            raise ValueError(msg + "\nNothing was loaded.")
        warnings.warn(msg + "\nThese were skipped (skip_mismatch=True).", stacklevel=3)
    values = [(v, np.asarray(d[()], dtype=v.dtype)) for v, d in plan]
    for v, value in values:
        _assign_fresh(v, value)
    return loaded


def _load_optimizer(model, group, source: str) -> None:
    from layerkit.io.keras_weights import _optimizer_variables

    optimizer = getattr(model, "optimizer", None)
    if optimizer is None:
        return
    names = [_str(n) for n in group.attrs.get("weight_names", [])]
    stored = [group[n] for n in names]
    variables = _optimizer_variables(model, optimizer) if optimizer.built else []
    if [tuple(v.shape) for v in variables] != [tuple(d.shape) for d in stored]:
        warnings.warn(f"load_model({source!r}): skipped the optimizer state: optimizer "
                      f"'{optimizer.name}' has {len(variables)} variable(s), the file "
                      f"{len(stored)}; training continues from a fresh optimizer",
                      stacklevel=3)
        return
    for v, d in zip(variables, stored):
        _assign_fresh(v, np.asarray(d[()], dtype=v.dtype))


def load_model_from_hdf5(filepath, custom_objects: dict | None = None, compile: bool = True,
                         safe_mode: bool = True):
    """Load a whole model from a legacy Keras ``.h5`` file (see the module docstring).

    Raises:
        ImportError: h5py is not installed.
        ValueError: the file holds weights only (no ``model_config``), an unknown class,
            or weights that do not match the architecture.
    """
    from layerkit.layers.layer import Layer
    from layerkit.saving.serialization_lib import deserialize_keras_object

    h5py = require("h5py", "h5", _FEATURE)
    source = os.fspath(filepath)
    try:
        f = h5py.File(source, "r")
    except OSError as e:
        raise ValueError(f"load_model({source!r}): not an HDF5 file ({e})") from None
    with f:
        if "model_config" not in f.attrs:
            raise ValueError(f"load_model({source!r}): the file holds weights only (no "
                             f"model_config); build the model and call "
                             f"model.load_weights({source!r})")
        try:
            config = json.loads(_str(f.attrs["model_config"]))
            training = json.loads(_str(f.attrs["training_config"])) \
                if "training_config" in f.attrs else None
        except ValueError as e:
            raise ValueError(f"load_model({source!r}): the model_config/training_config "
                             f"attribute is not valid JSON ({e})") from None
        if not isinstance(config, dict) or "class_name" not in config:
            raise ValueError(f"load_model({source!r}): model_config does not describe a "
                             f"model (expected an object with 'class_name' and 'config')")
        if compile and isinstance(training, dict):
            compile_config = {k: v for k, v in training.items() if k != "optimizer_config"}
            compile_config["optimizer"] = training.get("optimizer_config")
            config["compile_config"] = compile_config
        model = deserialize_keras_object(config, custom_objects, safe_mode, kind="layers")
        if not isinstance(model, Layer):
            raise ValueError(f"load_model({source!r}): model_config describes a "
                             f"{type(model).__name__}, not a model")
        if "model_weights" in f:
            load_weights_from_hdf5_group(model, f["model_weights"], source)
        if compile and "optimizer_weights" in f:
            _load_optimizer(model, f["optimizer_weights"], source)
    return model
