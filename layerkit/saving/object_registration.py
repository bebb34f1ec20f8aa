"""The registry of custom objects: what a saved config may name besides layerkit's own
classes and functions.

Deserialization never imports a module a file names: a class or function in a config
is found in ``custom_objects`` (the argument of ``load_model``/``from_config``), in an
active :class:`CustomObjectScope`, in the objects registered with
:func:`register_serializable`, or among layerkit's built-ins, and nowhere else.

Registered names are ``"package>name"``, as in Keras 3, so a file written by Keras
naming ``"my_package>MyLayer"`` finds the layerkit class registered under the same name.
"""
from __future__ import annotations

import inspect
import threading
from collections.abc import Callable
from typing import Any

__all__ = ["register_serializable", "register_keras_serializable", "get_registered_name",
           "get_registered_object", "get_custom_objects", "CustomObjectScope",
           "custom_object_scope"]

_GLOBAL_CUSTOM_OBJECTS: dict = {}   # "package>name" -> class or function
_GLOBAL_CUSTOM_NAMES: dict = {}     # class or function -> "package>name"
_SCOPE = threading.local()          # .stack: dicts of the active CustomObjectScopes


def register_serializable(package: str = "Custom", name: str | None = None) -> Callable[[Any], Any]:
    """Class/function decorator: make a custom object loadable by name.

    The object is registered under ``"package>name"`` (``name`` defaults to its
    ``__name__``); configs written for it carry that ``registered_name``, and
    ``load_model`` / ``deserialize_keras_object`` find it without ``custom_objects``.
    Also exported as ``register_keras_serializable`` (Keras's spelling).

    Args:
        package: the package part of the key.
        name: the name part of the key (default: the object's ``__name__``).

    Returns:
        A decorator returning the object unchanged.

    Raises:
        ValueError: a class without ``get_config``, or a ``package`` containing ``>``.

    Examples:
        >>> import layerkit as lk
        >>> @lk.saving.register_serializable("my_package")
        ... class Twice(lk.layers.Layer):
        ...     def call(self, x):
        ...         return 2.0 * x
        >>> lk.saving.get_registered_name(Twice)
        'my_package>Twice'
    """
    if not isinstance(package, str) or ">" in package:
        raise ValueError(f"register_serializable: `package` must be a string without '>'; "
                         f"received {package!r}")

    def decorator(obj):
        key = f"{package}>{name if name is not None else obj.__name__}"
        if inspect.isclass(obj) and not hasattr(obj, "get_config"):
            raise ValueError(f"register_serializable: class {obj.__name__} has no get_config() "
                             f"method, so it cannot be saved")
        _GLOBAL_CUSTOM_OBJECTS[key] = obj
        _GLOBAL_CUSTOM_NAMES[obj] = key
        return obj

    return decorator


register_keras_serializable = register_serializable


def get_registered_name(obj: Any) -> str:
    """The name ``obj`` is registered under, or its ``__name__`` if it is not registered."""
    try:
        return _GLOBAL_CUSTOM_NAMES[obj]
    except (KeyError, TypeError):
        return obj.__name__


def _scoped() -> list:
    stack = getattr(_SCOPE, "stack", None)
    if stack is None:
        stack = _SCOPE.stack = []
    return stack


def scoped_objects() -> dict:
    """The objects of every active :class:`CustomObjectScope` (inner ones win)."""
    merged: dict = {}
    for scope in _scoped():
        merged.update(scope)
    return merged


def get_registered_object(name: str, custom_objects: dict | None = None,
                          module_objects: dict | None = None) -> Any:
    """The class or function registered (or given) under ``name``, or None.

    Looks in the active :class:`CustomObjectScope` (innermost first), the global
    registry, then ``custom_objects`` and ``module_objects``.
    """
    for scope in reversed(_scoped()):
        if name in scope:
            return scope[name]
    if name in _GLOBAL_CUSTOM_OBJECTS:
        return _GLOBAL_CUSTOM_OBJECTS[name]
    for table in (custom_objects, module_objects):
        if table and name in table:
            return table[name]
    return None


def get_custom_objects() -> dict:
    """The live global registry ``{"package>name": object}`` (scopes not included)."""
    return _GLOBAL_CUSTOM_OBJECTS


class CustomObjectScope:
    """Make custom objects loadable by name inside a ``with`` block.

    Args:
        custom_objects: ``{name: class or function}`` (a dict, or several dicts).

    Examples:
        >>> import layerkit as lk
        >>> def swish2(x):
        ...     return x * lk.sigmoid(2.0 * x)
        >>> with lk.saving.custom_object_scope({"swish2": swish2}):
        ...     lk.layers.Dense(2, activation="swish2").activation is swish2
        True
    """

    def __init__(self, *custom_objects: dict[str, Any] | None) -> None:
        merged = {}
        for objects in custom_objects:
            if objects:
                merged.update(objects)
        self.custom_objects = merged

    def __enter__(self) -> CustomObjectScope:
        _scoped().append(self.custom_objects)
        return self

    def __exit__(self, *exc) -> None:
        _scoped().pop()


custom_object_scope = CustomObjectScope
