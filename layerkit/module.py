"""``lk.Module``: TensorFlow's ``tf.Module``, a named container of Variables and modules.

Tracking works by reflection, as in TensorFlow: ``variables``, ``trainable_variables``
and ``submodules`` walk the instance's attributes when they are read, so a subclass
that never calls ``super().__init__()`` (as some TF guides do) is tracked all the same.
:class:`layerkit.layers.Layer` is a Module too; its weights come from its own tracking
(in Keras order) when a module holds it.
"""
from __future__ import annotations

import functools
import re
from collections.abc import Callable

from layerkit._core.context import name_scope
from layerkit._core.nest import flatten
from layerkit._core.variable import Variable
from layerkit.checkpoint import trackable

__all__ = ["Module"]

_CAMEL = re.compile(r"((?<=[a-z0-9])[A-Z]|(?!^)[A-Z](?=[a-z]))")
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_PENDING = trackable._PENDING_ATTR


def camel_to_snake(name: str) -> str:
    """``MyModule`` -> ``my_module``, ``MLP`` -> ``mlp`` (TensorFlow's rule for modules)."""
    return _CAMEL.sub(r"_\1", name).lower()


def _walk(module, predicate, seen: set):
    # Direct leaves first (attribute order), then each sub-module's in turn: TF's order.
    subs = []
    for leaf in module._module_leaves():
        if id(leaf) in seen:
            continue
        seen.add(id(leaf))
        if predicate(leaf):
            yield leaf
        if isinstance(leaf, Module):
            subs.append(leaf)
    for sub in subs:
        yield from _walk(sub, predicate, seen)


def _holds_state(value) -> bool:
    if isinstance(value, (Variable, Module)) or trackable.has_state(value) \
            or hasattr(value, "_checkpoint_children") or hasattr(value, "_checkpoint_variables"):
        return True
    if isinstance(value, (list, tuple, dict)):
        return any(_holds_state(v) for v in flatten(value))
    return False


class _DefaultName:
    """``Module.name``: the name given to ``__init__``, else the snake_case class name.

    A non-data descriptor, so that a Layer's own ``name`` attribute takes precedence."""

    def __get__(self, instance, owner=None):
        if instance is None:
            return self
        name = instance.__dict__.get("_name")
        return camel_to_snake(type(instance).__name__) if name is None else name


class Module:
    """Base class for a named container of Variables, sub-modules and functions.

    Variables and modules assigned as attributes (also inside lists, tuples and dicts)
    are found by :attr:`variables`, :attr:`trainable_variables` and
    :attr:`submodules`, ordered as in TensorFlow: this module's own, sorted by attribute
    name, then each sub-module's. Calling ``super().__init__()`` is optional. Methods may
    be decorated with :func:`layerkit.function`, and a module is checkpointable: pass it
    to :class:`layerkit.Checkpoint` (its variables are saved under their attribute
    names, as TensorFlow names them).

    Args:
        name: the module's name (a valid Python identifier); default the snake_case
            class name (``MyModule`` -> ``my_module``).

    Raises:
        ValueError: ``name`` is not a valid Python identifier.

    Examples:
        >>> import layerkit as lk
        >>> class Dense(lk.Module):
        ...     def __init__(self, n_in, n_out, name=None):
        ...         super().__init__(name=name)
        ...         self.w = lk.Variable(lk.ones((n_in, n_out)), name="w")
        ...         self.b = lk.Variable(lk.zeros((n_out,)), name="b")
        ...     def __call__(self, x):
        ...         return lk.matmul(x, self.w) + self.b
        >>> d = Dense(2, 3)
        >>> d.name, [v.name for v in d.variables]
        ('dense', ['b', 'w'])
        >>> d(lk.ones((1, 2))).numpy().tolist()
        [[2.0, 2.0, 2.0]]
    """

    # Attributes the walk skips (name bookkeeping and checkpoint restore records).
    _MODULE_IGNORED = frozenset({"_name", "_name_scope", _PENDING})

    name = _DefaultName()

    def __init__(self, name: str | None = None) -> None:
        if name is not None and (not isinstance(name, str) or not _IDENTIFIER.match(name)):
            raise ValueError(f"{name!r} is not a valid module name. Module names must be "
                             f"valid Python identifiers (e.g. a valid class name).")
        d = self.__dict__
        d["_name"] = name
        d["_name_scope"] = name_scope.absolute(self.name)

    def __setattr__(self, name: str, value) -> None:
        object.__setattr__(self, name, value)
        if _PENDING in self.__dict__:  # values a checkpoint restore parked for this
            trackable.settle(self)

    @property
    def name_scope(self) -> name_scope:
        """The module's :class:`layerkit.name_scope` (re-entrant: ``with m.name_scope:``);
        its name includes the scopes that were open when the module was made."""
        scope = self.__dict__.get("_name_scope")
        if scope is None:  # __init__ was not called
            scope = self.__dict__["_name_scope"] = name_scope.absolute(self.name)
        return scope

    # ---- reflection ---------------------------------------------------------------------
    def _module_leaves(self):
        """The values held by this module's attributes, sorted by attribute name, with
        lists/tuples/dicts flattened (a Layer overrides this with its own tracking)."""
        d = vars(self)
        for key in sorted(d):
            if key not in self._MODULE_IGNORED:
                yield from flatten(d[key])

    def _flatten(self, predicate=None) -> tuple:
        if predicate is None:
            def predicate(_):
                return True
        return tuple(_walk(self, predicate, {id(self)}))

    @property
    def variables(self) -> tuple:
        """Variables of this module (sorted by attribute name), then of its sub-modules."""
        return self._flatten(lambda v: isinstance(v, Variable))

    @property
    def trainable_variables(self) -> tuple:
        """The trainable ones among :attr:`variables`."""
        return self._flatten(lambda v: isinstance(v, Variable) and v.trainable)

    @property
    def non_trainable_variables(self) -> tuple:
        """The non-trainable ones among :attr:`variables`."""
        return self._flatten(lambda v: isinstance(v, Variable) and not v.trainable)

    @property
    def submodules(self) -> tuple:
        """Every module reachable from this one's attributes (direct ones first)."""
        return self._flatten(lambda v: isinstance(v, Module))

    @classmethod
    def with_name_scope(cls, method: Callable) -> Callable:
        """Decorator: run ``method`` inside the module's :attr:`name_scope`.

        Examples:
            >>> import layerkit as lk
            >>> class M(lk.Module):
            ...     @lk.Module.with_name_scope
            ...     def __call__(self, x):
            ...         return lk.get_current_name_scope()
            >>> M()(1)
            'm'
        """
        @functools.wraps(method)
        def method_with_name_scope(self, *args, **kwargs):
            with self.name_scope:
                return method(self, *args, **kwargs)

        return method_with_name_scope

    # ---- checkpoint protocol (layerkit.checkpoint) -------------------------------------
    def _checkpoint_children(self) -> dict:
        """Attributes holding Variables, modules or other trackable objects, by name."""
        d = vars(self)
        return {k: d[k] for k in sorted(d)
                if k not in self._MODULE_IGNORED and _holds_state(d[k])}
