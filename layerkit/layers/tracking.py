"""The one tracking mechanism: ``__setattr__`` records Layers, Variables and
lists/tuples/dicts of them in assignment order; weights, sublayers and checkpoint
children are read from that record. Lists and dicts are kept as
:class:`~layerkit.checkpoint.trackable.TrackedList` / ``TrackedDict`` copies (as Keras
does), so that what is added to them after a checkpoint restore is restored too. Also
the default names (``dense``, ``dense_1``)."""
from __future__ import annotations

import re

from layerkit._core.variable import Variable
from layerkit.checkpoint import trackable
from layerkit.module import Module
from layerkit.primitives import random as _random

_PENDING = trackable._PENDING_ATTR

__all__ = ["Tracked", "unique_name", "reset_uids"]

_UIDS: dict[str, int] = {}


def snake_case(name: str) -> str:
    """``MaxPooling2D`` -> ``max_pooling2d`` (Keras's rule)."""
    name = re.sub(r"(.)([A-Z][a-z]+)", r"\1_\2", name)
    return re.sub(r"([a-z])([A-Z])", r"\1_\2", name).lower()


def unique_name(cls_name: str) -> str:
    """The next default name for a class: ``dense``, ``dense_1``, ..."""
    base = snake_case(cls_name)
    n = _UIDS.get(base, 0)
    _UIDS[base] = n + 1
    return base if n == 0 else f"{base}_{n}"


def reset_uids() -> None:
    """Restart default names (``dense``, ``dense_1``, ...) from scratch."""
    _UIDS.clear()


def is_container(v) -> bool:
    return isinstance(v, (list, tuple, dict))


def holds_state(v) -> bool:
    """A Layer or other Module, a Variable, or a container holding one (empty lists/dicts
    may fill later)."""
    if isinstance(v, (Module, Variable)):
        return True
    if is_container(v):
        items = v.values() if isinstance(v, dict) else v
        return (not items and not isinstance(v, tuple)) or any(holds_state(x) for x in items)
    return False


def super_msg(obj) -> str:
    name = type(obj).__name__
    return (f"{name}.__init__ did not call super().__init__() before assigning layers or "
            f"variables (or before the layer was used). Add `super().__init__(**kwargs)` "
            f"as the first line of {name}.__init__.")


class Tracked(Module):
    """Base of Layer: attribute tracking, weight collection and the checkpoint protocol.

    A :class:`layerkit.Module` (as Keras layers are ``tf.Module`` s in TensorFlow), whose
    weights and sublayers come from the tracking below rather than from reflection.

    Expects ``_tracked`` (attr -> value), ``_trainable_vars``, ``_non_trainable_vars``,
    ``_var_names`` (id -> unique weight name), ``built``, ``_building``, ``_trainable``
    and ``name`` in ``__dict__`` (set by ``Layer.__init__``).
    """

    # Instance attributes Layer.__init__ writes through ``__dict__`` (for type checkers).
    _tracked: dict
    _trainable_vars: list
    _non_trainable_vars: list
    _var_names: dict
    _trainable: bool
    _building: bool
    built: bool

    def __setattr__(self, name: str, value) -> None:
        d = self.__dict__
        tracked = d.get("_tracked")
        if tracked is None:
            if holds_state(value):
                raise RuntimeError(super_msg(self))
        elif holds_state(value):
            if isinstance(value, Variable):
                self._track_variable(value, name)
            else:   # lists/dicts report what is added to them later
                value = trackable.track(value, self)
            tracked[name] = value
            object.__setattr__(self, name, value)
            if _PENDING in d:   # values a checkpoint restore parked for what this adds
                trackable.settle(self)
            return
        elif name in tracked:
            del tracked[name]
        object.__setattr__(self, name, value)

    def __delattr__(self, name: str) -> None:
        self.__dict__.get("_tracked", {}).pop(name, None)
        object.__delattr__(self, name)

    def _track_variable(self, v: Variable, name: str, trainable: bool | None = None) -> None:
        if id(v) in self._var_names:
            return
        if self.built and not self._building:
            raise ValueError(
                f"Layer '{self.name}' is already built: cannot create weight '{name}' now. "
                f"All state must be created in __init__() or in build(); "
                f"move the creation of '{name}' there.")
        taken = set(self._var_names.values())
        unique, n = name, 1
        while unique in taken:
            unique, n = f"{name}_{n}", n + 1
        self._var_names[id(v)] = unique
        trainable = v.trainable if trainable is None else trainable
        (self._trainable_vars if trainable else self._non_trainable_vars).append(v)

    def _children(self) -> tuple[list, list]:
        """Direct sublayers and Variables held in containers (and by plain lk.Modules),
        in assignment order."""
        layers, variables, seen = [], [], {id(self)}

        def visit(v):
            if isinstance(v, Tracked):
                if id(v) not in seen:
                    seen.add(id(v))
                    layers.append(v)
            elif isinstance(v, Variable):
                variables.append(v)
            elif isinstance(v, Module):
                variables.extend(v.variables)
            elif isinstance(v, dict):
                for x in v.values():
                    visit(x)
            elif isinstance(v, (list, tuple)):
                for x in v:
                    visit(x)

        for v in self._tracked.values():
            if not isinstance(v, Variable):
                visit(v)
        return layers, variables

    def _own_weights(self) -> list:
        extra = self._children()[1]
        return self._trainable_vars + self._non_trainable_vars + extra

    def _module_leaves(self):
        # What lk.Module's walk sees in a layer it holds: its weights, then its sublayers.
        yield from self._own_weights()
        yield from self._children()[0]

    def _collect(self, out: list, seen: set, seen_layers: set) -> None:
        seen_layers.add(id(self))
        for v in self._own_weights():
            if id(v) not in seen:
                seen.add(id(v))
                out.append(v)
        for layer in self._children()[0]:
            if id(layer) not in seen_layers:
                layer._collect(out, seen, seen_layers)

    @property
    def layers(self) -> list:
        """Direct sublayers, in assignment order."""
        return self._children()[0]

    @property
    def submodules(self) -> list:
        """All nested sublayers, depth first."""
        out, seen = [], {id(self)}
        stack = list(reversed(self.layers))
        while stack:
            layer = stack.pop()
            if id(layer) not in seen:
                seen.add(id(layer))
                out.append(layer)
                stack.extend(reversed(layer.layers))
        return out

    # ---- weights ---------------------------------------------------------------------
    @property
    def weights(self) -> list:
        """All weights: each layer's trainable then non-trainable ones, then its sublayers'
        (the order of Keras 3 and of ``get_weights``)."""
        out: list = []
        self._collect(out, set(), set())
        return out

    variables = weights

    @property
    def trainable_weights(self) -> list:
        """The weights an optimizer updates (empty when the layer is frozen)."""
        return [v for v in self.weights if v.trainable] if self._trainable else []

    trainable_variables = trainable_weights

    @property
    def non_trainable_weights(self) -> list:
        """Statistics such as moving means, plus every weight of a frozen layer."""
        return [v for v in self.weights if not v.trainable] if self._trainable else self.weights

    non_trainable_variables = non_trainable_weights

    # ---- trackable protocol (layerkit.checkpoint) --------------------------------------
    def _checkpoint_children(self) -> dict:
        """Sublayers by attribute name; list/dict elements as ``attr/0``, ``attr/key``."""
        out = {}
        for attr, v in self._tracked.items():
            if isinstance(v, Module):
                out[attr] = v
            elif is_container(v):
                items = v.items() if isinstance(v, dict) else enumerate(v)
                out.update({f"{attr}/{k}": x for k, x in items if isinstance(x, Tracked)})
        # Random streams set as public attributes (Keras's ``self.seed_generator =
        # SeedGenerator(1337)``) are saved with the layer, so a restore continues them.
        for attr, v in vars(self).items():
            if isinstance(v, _random.Generator) and not attr.startswith("_"):
                out.setdefault(attr, v)
        return out

    def _checkpoint_variables(self) -> dict:
        """This layer's own weights by their (unique) weight names."""
        names = self._var_names
        out = {names[id(v)]: v for v in self._trainable_vars + self._non_trainable_vars}
        for attr, v in self._tracked.items():
            if isinstance(v, (list, tuple)):
                out.update({f"{attr}/{i}": x for i, x in enumerate(v) if isinstance(x, Variable)})
            elif isinstance(v, dict):
                out.update({f"{attr}/{k}": x for k, x in v.items() if isinstance(x, Variable)})
        return out
