"""Keras 3 weights in layerkit models: ``.weights.h5`` files and ``.keras`` archives.

Keras 3 stores weights in HDF5 by *object path*, not by weight name: every layer (and
model, and optimizer) gets a group, and its own variables are the datasets
``<group>/vars/0``, ``vars/1``, ... in the layer's weight order (trainable weights, then
non-trainable ones, each in creation order). The group paths follow the object tree:

- a Functional or Sequential model lists its layers first, under ``layers/<name>``,
  where ``<name>`` is the snake_case class name made unique within the list
  (``dense``, ``dense_1``, ...; a nested functional model is ``functional``);
- then every other attribute holding a layer or a list of layers, sorted by attribute
  name with private (``_``) attributes last: ``cell`` of an RNN layer,
  ``forward_layer``/``backward_layer`` of ``Bidirectional``, ``blocks/block_1`` for a
  list ``self.blocks``, and for a subclassed model also ``layers`` (its sublayers not
  reached under an earlier attribute name);
- an object reached twice is stored once, at its first path.

:func:`keras_weight_groups` computes these paths for a layerkit model (layerkit layers
mirror Keras's structure and weight order; ``MultiHeadAttention``, which keeps its
projections as its own weights, maps them to Keras's ``query_dense``/``key_dense``/
``value_dense``/``output_dense`` groups). :func:`load_h5_group` assigns an open h5py
group tree to a built model through that map: it is the single loader behind
``Model.load_weights`` for ``.weights.h5``/``.keras`` files, and the piece a future
``lk.models.load_model`` reuses once it has built the model from ``config.json``.
:func:`save_keras_weights` writes the same layout (Keras 3's ``load_weights`` reads it).

Optimizer variables (the ``optimizer`` group) are loaded, as Keras does, when the model
has a built optimizer with as many variables as the file; otherwise they are skipped
with a warning (Keras's rule). Keras 2's legacy ``.h5`` layout (``layer_names``
attributes) loads through :mod:`layerkit.saving.legacy_h5` (by layer name).
"""
from __future__ import annotations

import io
import os
import warnings
from typing import Any

import numpy as np

from layerkit._core.types import PathLike
from layerkit._core.variable import Variable
from layerkit.checkpoint.checkpoint import _assign_fresh
from layerkit.io._optional import require
from layerkit.layers.attention import MultiHeadAttention
from layerkit.layers.tracking import Tracked, is_container, snake_case

__all__ = ["keras_weight_groups", "keras_weight_arrays", "keras_weights_h5_bytes",
           "assign_keras_weights", "h5_datasets", "load_h5_group", "load_keras_weights",
           "save_keras_weights"]

_FEATURE = "Keras .weights.h5 / .keras files"


# ---- the object tree as Keras 3 walks it ----------------------------------------------------
def _is_graph_model(obj) -> bool:
    """A functional model or a Sequential: Keras lists its ``layers`` first."""
    d = obj.__dict__
    return d.get("_graph") is not None or "_stack" in d.get("_tracked", {})


def _keras_class_name(obj) -> str:
    from layerkit.models.model import Model

    if type(obj) is Model and obj.__dict__.get("_graph") is not None:
        return "Functional"  # Keras's class for lk.Model(inputs, outputs)
    return type(obj).__name__


def _attr_key(name: str) -> str:
    return "~" + name if name.startswith("_") else name  # private attributes last


def _keras_layers(obj) -> list:
    """``obj.layers`` in Keras's order: a functional model's by decreasing depth (see
    :func:`~layerkit.models.functional_config.keras_operation_order`), with a
    placeholder for each ``InputLayer`` (it has no weights but takes its name)."""
    graph = obj.__dict__.get("_graph")
    if graph is None:
        return obj.layers
    from layerkit.models.functional_config import keras_operation_order

    return [op if isinstance(op, Tracked) else _INPUT_LAYER
            for op in keras_operation_order(graph)]


class _InputLayer:
    """Stands for a Keras ``InputLayer`` in a functional model's layer list."""


_INPUT_LAYER = _InputLayer()


def _child_attrs(obj) -> list:
    from layerkit.models.model import Model

    out = [("layers", _keras_layers(obj))] if _is_graph_model(obj) else []
    attrs = dict(obj._tracked)
    if isinstance(obj, Model) and not _is_graph_model(obj):
        attrs["layers"] = obj.layers  # Model.layers is an attribute Keras walks too
    return out + [(a, attrs[a]) for a in sorted(attrs, key=_attr_key)]


def _own_variables(obj) -> list:
    # Keras's save_own_variables order: trainable then non-trainable, as created.
    return obj._trainable_vars + obj._non_trainable_vars + obj._children()[1]


def _keras_trainable(model) -> list:
    """The model's trainable variables in Keras's order (each layer's own weights, then
    its sublayers', a functional model's layers in Keras's order): the order in which a
    Keras optimizer creates, and a Keras file stores, the slots of the variables."""
    out, seen, seen_layers = [], set(), set()

    def visit(obj) -> None:
        if id(obj) in seen_layers:
            return
        seen_layers.add(id(obj))
        for v in _own_variables(obj):
            if id(v) not in seen:
                seen.add(id(v))
                out.append(v)
        children = _keras_layers(obj) if obj.__dict__.get("_graph") is not None \
            else obj._children()[0]
        for child in children:
            if isinstance(child, Tracked):
                visit(child)

    visit(model)
    return [v for v in out if v.trainable] if model.trainable else []


def _optimizer_variables(model, optimizer) -> list:
    """The optimizer's variables as Keras stores them: its own (``iterations``, the
    learning rate), then each variable's slots in :func:`_keras_trainable` order."""
    own = list(optimizer.variables)
    head = own[:len(own) - len(optimizer._slot_vars)]
    slots: list[Any] = []
    placed: set[int] = set()
    for v in _keras_trainable(model):
        try:
            found = [optimizer.get_slot(v, n) for n in optimizer._slot_names]
        except KeyError:
            continue
        slots.extend(found)
        placed.update(id(x) for x in found)
    return head + slots + [x for x in own[len(head):] if id(x) not in placed]


def _mha_groups(layer: MultiHeadAttention) -> dict:
    groups: dict[str, list[Any]] = {"": []}
    for part in ("query", "key", "value", "output"):
        pair = (getattr(layer, f"{part}_kernel", None), getattr(layer, f"{part}_bias", None))
        groups[f"{part}_dense"] = [v for v in pair if v is not None]
    return groups


# Layers whose Keras object tree differs from layerkit's: layer -> {sub path: variables}.
_LAYOUTS = {MultiHeadAttention: _mha_groups}


def _join(path: str, name: str) -> str:
    return f"{path}/{name}" if path and name else (path or name)


def keras_weight_groups(model: Any) -> dict:
    """Where Keras 3 keeps each layer's weights, for a layerkit model or layer.

    Args:
        model: a built layerkit ``Model`` or ``Layer``.

    Returns:
        ``{group path: (layer, [Variable, ...])}``: the layer's variables are the ones
        stored at ``<group path>/vars/0``, ``vars/1``, ... (the root is ``""``). Layers
        without weights are included with an empty list.

    Examples:
        >>> import layerkit as lk
        >>> m = lk.Sequential([lk.Input((3,)), lk.layers.Dense(2), lk.layers.Dense(1)])
        >>> sorted(p for p, (_, vs) in keras_weight_groups(m).items() if vs)
        ['layers/dense', 'layers/dense_1']
    """
    out: dict = {}
    visited: set = set()

    def visit(obj, path: str) -> None:
        if id(obj) in visited:
            return
        visited.add(id(obj))
        for cls in type(obj).__mro__:
            if cls in _LAYOUTS:
                for sub, variables in _LAYOUTS[cls](obj).items():
                    out[_join(path, sub)] = (obj, variables)
                return
        out[path] = (obj, _own_variables(obj))
        for attr, child in _child_attrs(obj):
            if isinstance(child, Tracked):
                visit(child, _join(path, attr))
            elif is_container(child):
                visit_list(child, _join(path, attr), set())

    def visit_list(items, path: str, seen_lists: set) -> None:
        if id(items) in seen_lists:
            return
        seen_lists.add(id(items))
        used: dict = {}

        def unique(name: str) -> str:
            # Names are handed out to every element, also to those already stored.
            used[name] = used.get(name, -1) + 1
            return name if used[name] == 0 else f"{name}_{used[name]}"

        for x in items.values() if isinstance(items, dict) else items:
            if x is _INPUT_LAYER:
                unique("input_layer")
            elif isinstance(x, Tracked):
                visit(x, _join(path, unique(snake_case(_keras_class_name(x)))))
            elif is_container(x):
                visit_list(x, _join(path, unique("container")), seen_lists)

    visit(model, "")
    return out


# ---- loading ---------------------------------------------------------------------------------
def _describe(shapes) -> str:
    return "[" + ", ".join(str(tuple(s)) for s in shapes) + "]" if shapes else "none"


def h5_datasets(group) -> dict:
    """``{path: h5py.Dataset}`` of every dataset under an open h5py group (lazy: only
    shapes are read until a value is asked for)."""
    import h5py

    found: dict[str, Any] = {}
    group.visititems(lambda name, obj: found.__setitem__(name, obj)
                     if isinstance(obj, h5py.Dataset) else None)
    return found


def _by_group(flat: dict) -> dict:
    """``{"<group>/vars": [value 0, value 1, ...]}`` from ``{"<group>/vars/<i>": value}``."""
    groups: dict = {}
    for path, value in flat.items():
        parent, _, last = path.rpartition("/")
        if last.isdigit():
            groups.setdefault(parent, {})[int(last)] = value
    return {g: [items[i] for i in sorted(items)] for g, items in groups.items()}


def load_h5_group(model: Any, group: Any, source: str = "<h5>",
                  skip_mismatch: bool = False) -> list:
    """Assign the weights of an open Keras 3 h5py weights tree to a built model
    (:func:`assign_keras_weights` on the tree's datasets)."""
    return assign_keras_weights(model, h5_datasets(group), source, skip_mismatch)


def assign_keras_weights(model, flat: dict, source: str = "<weights>",
                         skip_mismatch: bool = False) -> list:
    """Assign weights stored by Keras path to a built layerkit model.

    Every layer is matched by its Keras group path (see :func:`keras_weight_groups`) and
    its weights by position within ``<path>/vars``. Everything is read and checked before
    anything is assigned. Values are cast to each variable's dtype. Optimizer variables
    (``optimizer/vars/<i>``) load as Keras loads them (see the module docstring).

    Args:
        model: a built ``lk.Model`` (or layer) of the same architecture as the saved one.
        flat: ``{"<path>/vars/<i>": value}``; a value is an array or anything with
            ``.shape`` that ``value[()]`` reads (an h5py dataset: see :func:`h5_datasets`).
        source: the file name, for messages.
        skip_mismatch: skip layers whose weight count or shapes differ (with a warning)
            instead of raising.

    Returns:
        The group paths whose weights were assigned.

    Raises:
        ValueError: the model is not built; a layer's weight count or a weight's shape
            differs (the message names the Keras path, the layer, the expected and the
            received shapes); or the file holds weights the model has no place for.
    """
    if not getattr(model, "built", True):
        if not any(not p.startswith("optimizer/") for p in flat):
            return []  # an unbuilt model saved without weights
        raise ValueError(f"load_weights({source!r}): model '{model.name}' is not built; "
                         f"Keras weights are matched by shape, so build it first (call it "
                         f"on a batch, or model.build(input_shape))")
    stored_groups = _by_group(flat)
    groups = keras_weight_groups(model)
    plan: list[Any] = []
    problems: list[str] = []
    loaded: list[Any] = []
    covered: set[str] = set()
    for path, (layer, variables) in groups.items():
        vpath = _join(path, "vars")
        stored = stored_groups.get(vpath, [])
        covered.add(vpath)
        if not variables and not stored:
            continue
        where = f"'{vpath}' (layer '{layer.name}', {type(layer).__name__})"
        if len(stored) != len(variables):
            problems.append(
                f"{where}: the model's layer has {len(variables)} weight(s) "
                f"{_describe(v.shape for v in variables)}, the file has {len(stored)} "
                f"{_describe(d.shape for d in stored)}")
            continue
        bad = [f"{where}: weight {i} ('{v.name}') expected shape {tuple(v.shape)}, "
               f"received {tuple(d.shape)}"
               for i, (v, d) in enumerate(zip(variables, stored))
               if tuple(d.shape) != tuple(v.shape)]
        if bad:
            problems.extend(bad)
            continue
        plan.extend(zip(variables, stored))
        loaded.append(path)
    extra = sorted(p for p in flat
                   if not p.startswith("optimizer/") and p.rsplit("/", 1)[0] not in covered)
    if extra:
        shown = ", ".join(f"'{p}' {tuple(flat[p].shape)}" for p in extra[:8])
        more = f" and {len(extra) - 8} more" if len(extra) > 8 else ""
        problems.append(f"the file has weights at paths that model '{model.name}' does not "
                        f"have: {shown}{more}")
    if problems:
        msg = (f"load_weights({source!r}): the Keras weights do not match model "
               f"'{model.name}':\n  " + "\n  ".join(problems))
        if not skip_mismatch:
            raise ValueError(msg + "\nNothing was loaded.")
        warnings.warn(msg + "\nThese were skipped (skip_mismatch=True).", stacklevel=3)
    plan.extend(_optimizer_plan(model, stored_groups.get("optimizer/vars", []), source))
    values = [(var, np.asarray(ds[()], dtype=var.dtype)) for var, ds in plan]
    for var, value in values:
        _assign_fresh(var, value)
    return loaded


def _optimizer_plan(model, stored: list, source: str) -> list:
    """Keras's rule: an optimizer's variables load by position when it is built with as
    many variables as the file has, with a warning otherwise."""
    optimizer = getattr(model, "optimizer", None)
    if optimizer is None or not stored:
        return []
    variables = [v for v in _optimizer_variables(model, optimizer) if isinstance(v, Variable)]
    shapes_ok = len(variables) == len(stored) and all(
        tuple(v.shape) == tuple(d.shape) for v, d in zip(variables, stored))
    if not shapes_ok:
        why = ("it is not built yet (it creates its variables at the first training step; "
               "call model.optimizer.build(model.trainable_variables) first)"
               if len(variables) <= 2 and len(stored) > 2 else
               f"it has {len(variables)} variable(s) {_describe(v.shape for v in variables)} "
               f"and the file {len(stored)} {_describe(d.shape for d in stored)}")
        warnings.warn(f"load_weights({source!r}): skipped the optimizer variables for "
                      f"optimizer '{optimizer.name}': {why}", stacklevel=4)
        return []
    return list(zip(variables, stored))


def _check_keras3(f, source: str) -> None:
    if "layers" not in f and "vars" not in f:
        raise ValueError(f"load_weights({source!r}): not a Keras 3 weights file (expected "
                         f"the groups 'layers' and 'vars' at its root; found "
                         f"{sorted(f.keys())})")


def load_keras_weights(model: Any, filepath: PathLike, skip_mismatch: bool = False) -> list:
    """Load a Keras 3 ``.weights.h5`` file or the weights of a ``.keras`` archive.

    Args:
        model: a built layerkit model of the same architecture.
        filepath: ``*.weights.h5`` / ``*.h5`` (``model.save_weights`` in Keras 3) or
            ``*.keras`` (``model.save`` of Keras 3 or layerkit: only the weights member
            is read; see :mod:`layerkit.saving.saving_lib`).
        skip_mismatch: see :func:`load_h5_group`.

    Returns:
        The Keras group paths that were assigned.

    Raises:
        ImportError: h5py is not installed and the weights are HDF5
            (``pip install layerkit[h5]``).
        FileNotFoundError: no such file.
        ValueError: not a Keras 3 file, or weights that do not match (see
            :func:`assign_keras_weights`).

    Examples:
        >>> model.load_weights("model.weights.h5")  # doctest: +SKIP
    """
    path = os.fspath(filepath)
    if not os.path.exists(path):
        raise FileNotFoundError(f"load_weights: no such file: {path!r}")
    if path.endswith(".keras"):
        from layerkit.saving.saving_lib import load_archive_weights

        return load_archive_weights(model, path, skip_mismatch=skip_mismatch)
    h5py = require("h5py", "h5", _FEATURE)
    try:
        f = h5py.File(path, "r")
    except OSError as e:
        raise ValueError(f"load_weights({path!r}): not an HDF5 file ({e})") from None
    with f:
        if "layer_names" in f.attrs or "model_weights" in f:  # Keras 2's legacy layout
            from layerkit.saving.legacy_h5 import load_weights_from_hdf5_group

            group = f["model_weights"] if "model_weights" in f else f
            return load_weights_from_hdf5_group(model, group, path, skip_mismatch)
        _check_keras3(f, path)
        return load_h5_group(model, f, path, skip_mismatch=skip_mismatch)


def _saved_groups(model) -> list:
    """(group path, owner name, variables) of everything a Keras file holds: the
    layers' groups, then a built optimizer's variables under ``optimizer``."""
    groups = [(p, layer.name, vs) for p, (layer, vs) in keras_weight_groups(model).items()]
    optimizer = getattr(model, "optimizer", None)
    if optimizer is not None and getattr(optimizer, "built", False):
        groups.append(("optimizer", optimizer.name, _optimizer_variables(model, optimizer)))
    return groups


def keras_weight_arrays(model) -> dict:
    """``{"<path>/vars/<i>": array}``: a built model's weights (and its built optimizer's
    variables under ``optimizer/vars``) at their Keras 3 paths, in Keras's order."""
    return {f"{_join(group_path, 'vars')}/{i}": np.asarray(v._v)
            for group_path, _, variables in _saved_groups(model)
            for i, v in enumerate(variables)}


def keras_weights_h5_bytes(model) -> bytes:
    """The bytes of a Keras 3 ``.weights.h5`` file holding a built model's weights
    (what :func:`save_keras_weights` writes; also the ``model.weights.h5`` member of a
    ``.keras`` archive).

    Raises:
        ImportError: h5py is not installed (``pip install layerkit[h5]``).
    """
    h5py = require("h5py", "h5", _FEATURE)
    buffer = io.BytesIO()
    with h5py.File(buffer, "w") as f:
        for group_path, name, variables in _saved_groups(model):
            g = f.require_group(_join(group_path, "vars"))
            g.attrs["name"] = name
            for i, v in enumerate(variables):
                g.create_dataset(str(i), data=np.asarray(v._v))
    return buffer.getvalue()


def save_keras_weights(model: Any, filepath: PathLike) -> str:
    """Write a model's weights as a Keras 3 ``.weights.h5`` file, atomically.

    The layout is the one :func:`load_keras_weights` reads (each layer's weights at its
    Keras path, ``<path>/vars/<i>``), so Keras 3's ``model.load_weights`` loads the file
    into a Keras model of the same architecture; a built optimizer's variables are
    written under ``optimizer/vars`` as Keras does.

    Args:
        model: a built layerkit model.
        filepath: the file to write (``*.weights.h5``).

    Returns:
        The path written.

    Raises:
        ImportError: h5py is not installed (``pip install layerkit[h5]``).
        ValueError: the model is not built.
    """
    from layerkit.checkpoint.format import atomic_write_bytes

    require("h5py", "h5", _FEATURE)
    path = os.fspath(filepath)
    if not getattr(model, "built", True):
        raise ValueError(f"save_weights({path!r}): model '{model.name}' is not built, so "
                         f"it has no weights yet")
    atomic_write_bytes(path, keras_weights_h5_bytes(model))
    return path
