"""Objects to JSON-able configs and back, in Keras 3's schema.

A serialized object is ``{"module", "class_name", "config", "registered_name"}`` (plus
``"build_config"`` / ``"compile_config"`` for layers and models, and
``"shared_object_id"`` for an object met twice while saving a model). layerkit's
built-in classes are written under Keras's public module names (``keras.layers``,
``keras.initializers``, ...; a functional model is Keras's ``Functional``), so Keras 3
reads the configs layerkit writes and layerkit reads Keras's.

Reading never executes code from the config: a class or function is looked up by name
in ``custom_objects``, the active :class:`~layerkit.saving.CustomObjectScope`, the
registry (:func:`~layerkit.saving.register_serializable`) and layerkit's built-ins (every
public class of ``lk.layers``, ``lk.initializers``, ... and their layerkit subclasses),
never imported from the ``module`` a config names. Python lambdas are never restored:
layerkit writes only a marker for them (no bytecode) and refuses Keras's marshalled
ones in every mode.
"""
from __future__ import annotations

import inspect
import threading
import types
import warnings
from typing import Any

import numpy as np

from layerkit.saving import object_registration as _reg

__all__ = ["serialize_keras_object", "deserialize_keras_object", "in_safe_mode",
           "SafeModeScope", "ObjectSharingScope"]

PLAIN_TYPES = (str, int, float, bool)

# Keras's public module for each kind of layerkit built-in.
_KERAS_MODULES = {
    "layers": "keras.layers", "initializers": "keras.initializers",
    "regularizers": "keras.regularizers", "constraints": "keras.constraints",
    "losses": "keras.losses", "metrics": "keras.metrics", "optimizers": "keras.optimizers",
    "schedules": "keras.optimizers.schedules", "activations": "keras.activations",
}
# Module-path components naming a kind, in the order they are checked
# ("keras.optimizers.schedules" is a schedule, "keras.src.models.functional" a layer).
_KIND_WORDS = ("schedules", "initializers", "regularizers", "constraints", "losses",
               "metrics", "optimizers", "activations", "layers", "models")
_NOUNS = {"layers": "layer", "initializers": "initializer", "regularizers": "regularizer",
          "constraints": "constraint", "losses": "loss", "metrics": "metric",
          "optimizers": "optimizer", "schedules": "learning-rate schedule",
          "activations": "activation"}

_STATE = threading.local()  # .safe_mode (None outside a load), .shared (dict or None)


# ---- scopes -------------------------------------------------------------------------------
def in_safe_mode():
    """The safe mode of the deserialization in progress (None outside one)."""
    return getattr(_STATE, "safe_mode", None)


class SafeModeScope:
    """Set the safe mode seen by nested deserializations (``from_config`` calls)."""

    def __init__(self, safe_mode: bool = True) -> None:
        self.safe_mode = safe_mode

    def __enter__(self) -> SafeModeScope:
        self._outer = in_safe_mode()
        _STATE.safe_mode = self.safe_mode
        return self

    def __exit__(self, *exc) -> None:
        _STATE.safe_mode = self._outer


class ObjectSharingScope:
    """Within the block, an object serialized twice gets a ``shared_object_id`` in both
    configs, and configs with the same id deserialize to one object (shared layers)."""

    def __enter__(self) -> ObjectSharingScope:
        self._outer = getattr(_STATE, "shared", None)
        _STATE.shared = {"by_id": {}, "objects": {}, "produced": {}}
        return self

    def __exit__(self, *exc) -> None:
        _STATE.shared = self._outer


def _shared() -> dict | None:
    return getattr(_STATE, "shared", None)


# ---- layerkit's built-ins ---------------------------------------------------------------
_TABLES: dict = {}


def _public_layerkit(cls) -> bool:
    module = getattr(cls, "__module__", "") or ""
    return (module.startswith("layerkit.") and not cls.__name__.startswith("_")
            and not any(p.startswith("_") for p in module.split(".")))


def _subclasses(base) -> list:
    out, stack, seen = [], [base], set()
    while stack:
        cls = stack.pop()
        for sub in cls.__subclasses__():
            if sub not in seen:
                seen.add(sub)
                out.append(sub)
                stack.append(sub)
    return out


def _class_table(namespaces, base) -> dict:
    table: dict[str, type] = {}
    for namespace in namespaces:
        for name, value in vars(namespace).items():
            if isinstance(value, type) and issubclass(value, base) and not name.startswith("_"):
                table.setdefault(value.__name__, value)
                table.setdefault(name, value)
    for sub in _subclasses(base):
        if _public_layerkit(sub):
            table.setdefault(sub.__name__, sub)
    return table


def _build_tables() -> dict:
    from layerkit import (
        constraints,
        initializers,
        layers,
        losses,
        metrics,
        models,
        optimizers,
        regularizers,
    )
    from layerkit.layers import activations
    from layerkit.optimizers import schedules

    layer_table = _class_table([layers, models], layers.Layer)
    layer_table["Functional"] = models.Model
    return {
        "layers": (layer_table, {}),
        "initializers": (_class_table([initializers], initializers.Initializer), {}),
        "regularizers": (_class_table([regularizers], regularizers.Regularizer), {}),
        "constraints": (_class_table([constraints], constraints.Constraint), {}),
        "losses": (_class_table([losses], losses.Loss), dict(losses._FUNCTIONS)),
        "metrics": (_class_table([metrics], metrics.Metric), {}),
        "optimizers": (_class_table([optimizers], optimizers.Optimizer), {}),
        "schedules": (_class_table([schedules], schedules.LearningRateSchedule), {}),
        "activations": ({}, activations._names()),
    }


def _tables(refresh: bool = False) -> dict:
    if refresh or not _TABLES:
        _TABLES.clear()
        _TABLES.update(_build_tables())
    return _TABLES


def _builtin(name: str, kinds, functions: bool):
    for refresh in (False, True):  # a layerkit module imported since the last look
        tables = _tables(refresh)
        for kind in kinds:
            obj = tables[kind][1 if functions else 0].get(name)
            if obj is not None:
                return obj
    return None


def _kind_of_module(module) -> str | None:
    if not isinstance(module, str):
        return None
    parts = module.split(".")
    if parts[0] not in ("keras", "layerkit", "tf_keras"):
        return None
    for word in _KIND_WORDS:
        if word in parts:
            return "layers" if word == "models" else word
    return "layers" if len(parts) == 1 else None


def _kind_of_object(obj) -> str | None:
    from layerkit import (
        constraints,
        initializers,
        layers,
        losses,
        metrics,
        optimizers,
        regularizers,
    )
    from layerkit.optimizers import schedules

    for kind, base in (("layers", layers.Layer), ("initializers", initializers.Initializer),
                       ("regularizers", regularizers.Regularizer),
                       ("constraints", constraints.Constraint), ("losses", losses.Loss),
                       ("metrics", metrics.Metric), ("optimizers", optimizers.Optimizer),
                       ("schedules", schedules.LearningRateSchedule)):
        if isinstance(obj, base):
            return kind
    return None


# ---- serialization ------------------------------------------------------------------------
def serialize_keras_object(obj: Any) -> Any:
    """A JSON-able config of ``obj`` that :func:`deserialize_keras_object` inverts.

    Plain values, lists, tuples and dicts are converted item by item; NumPy arrays and
    tensors become ``__numpy__``/``__tensor__`` entries; functions become references by
    name (built-in, registered, or their ``__name__`` for ``custom_objects``); objects
    with ``get_config`` become ``{"module", "class_name", "config", "registered_name"}``
    with their ``build_config``/``compile_config``.

    Raises:
        TypeError: an object that has no ``get_config`` and is none of the above.

    Examples:
        >>> import layerkit as lk
        >>> lk.saving.serialize_keras_object(lk.initializers.Constant(2.0))
        {'module': 'keras.initializers', 'class_name': 'Constant', 'config': {'value': 2.0}, \
'registered_name': None}
    """
    if obj is None or isinstance(obj, PLAIN_TYPES):
        return obj
    if isinstance(obj, (list, tuple)):
        return [serialize_keras_object(x) for x in obj]
    if isinstance(obj, dict):
        shared = _shared()
        if shared is not None and id(obj) in shared["produced"]:
            return obj  # already serialized: kept, so a later shared_object_id shows
        return serialize_dict(obj)
    if isinstance(obj, bytes):
        return {"class_name": "__bytes__", "config": {"value": obj.decode("utf-8")}}
    if obj is Ellipsis:
        return {"class_name": "__ellipsis__", "config": {}}
    if isinstance(obj, slice):
        return {"class_name": "__slice__", "config": {
            "start": serialize_keras_object(obj.start), "stop": serialize_keras_object(obj.stop),
            "step": serialize_keras_object(obj.step)}}
    if isinstance(obj, np.dtype):
        return obj.name
    if isinstance(obj, (np.generic, np.ndarray)) and np.ndim(obj) == 0:
        return np.asarray(obj).item()
    if isinstance(obj, np.ndarray):
        return {"class_name": "__numpy__",
                "config": {"value": obj.tolist(), "dtype": obj.dtype.name}}
    from layerkit._core.tensor import Tensor
    from layerkit._core.variable import Variable

    if isinstance(obj, Tensor) and not isinstance(obj, Variable):
        a = np.asarray(obj._v)
        return {"class_name": "__tensor__", "config": {"value": a.tolist(), "dtype": a.dtype.name}}
    if isinstance(obj, (types.FunctionType, types.BuiltinFunctionType)):
        return _serialize_function(obj)
    if not hasattr(obj, "get_config"):
        raise TypeError(f"serialize_keras_object: cannot serialize {obj!r} of type "
                        f"{type(obj).__name__}: it has no get_config() method")
    inner = obj.get_config()
    if not isinstance(inner, dict):
        raise TypeError(f"serialize_keras_object: {type(obj).__name__}.get_config() must "
                        f"return a dict; it returned {type(inner).__name__}")
    module, class_name, registered = _class_entry(obj)
    config = {"module": module, "class_name": class_name, "config": serialize_dict(inner),
              "registered_name": registered}
    for getter, key in (("get_build_config", "build_config"),
                        ("get_compile_config", "compile_config")):
        fn = getattr(obj, getter, None)
        value = fn() if fn is not None else None
        if value is not None:
            config[key] = serialize_dict(value)
    _record_shared(obj, config)
    return config


def serialize_dict(obj: dict) -> dict:
    """``{key: serialize_keras_object(value)}``."""
    return {key: serialize_keras_object(value) for key, value in obj.items()}


def _class_entry(obj) -> tuple:
    """(module, class_name, registered_name) written for ``obj``'s class."""
    cls = type(obj)
    registered = _reg._GLOBAL_CUSTOM_NAMES.get(cls)
    if registered is None and _public_layerkit(cls):
        kind = _kind_of_object(obj)
        if kind == "layers" and obj.__dict__.get("_graph") is not None \
                and cls.__name__ == "Model":
            return "keras.src.models.functional", "Functional", "Functional"
        if kind is not None and _builtin(cls.__name__, [kind], False) is cls:
            module = "keras" if cls.__name__ in ("Sequential", "Model") else _KERAS_MODULES[kind]
            return module, cls.__name__, None
    home = cls.__module__ if cls.__module__ != "__main__" else None
    return home, cls.__name__, registered or cls.__name__


def _serialize_function(fn) -> dict:
    registered = _reg._GLOBAL_CUSTOM_NAMES.get(fn)
    if registered is not None:
        return {"module": fn.__module__, "class_name": "function", "config": registered,
                "registered_name": registered}
    if fn.__name__ == "<lambda>":
        warnings.warn("serialize_keras_object: a Python lambda is saved only as a marker "
                      "(layerkit never stores code), so the saved config cannot be loaded "
                      "again; use a named function registered with "
                      "lk.saving.register_serializable", stacklevel=3)
        return {"class_name": "__lambda__", "config": {"value": None}}
    for kind in ("activations", "losses"):
        if _builtin(fn.__name__, [kind], True) is fn:
            return {"module": _KERAS_MODULES[kind], "class_name": "function",
                    "config": fn.__name__, "registered_name": fn.__name__}
    module = fn.__module__ if fn.__module__ != "__main__" else None
    return {"module": module, "class_name": "function", "config": fn.__name__,
            "registered_name": fn.__name__}


def _record_shared(obj, config: dict) -> None:
    shared = _shared()
    if shared is None:
        return
    shared["produced"][id(config)] = config
    first = shared["by_id"].get(id(obj))
    if first is None:
        shared["by_id"][id(obj)] = (obj, config)  # obj kept alive: ids stay unique
    else:
        config["shared_object_id"] = first[1]["shared_object_id"] = id(obj)


# ---- deserialization ----------------------------------------------------------------------
def deserialize_keras_object(config: dict[str, Any], custom_objects: dict | None = None,
                             safe_mode: bool = True, *, kind: str | None = None,
                             module_objects: dict | None = None) -> Any:
    """Rebuild an object from :func:`serialize_keras_object` output (or Keras 3's).

    Classes and functions are looked up by name only (see the module docstring), then
    created with their ``from_config`` (given ``custom_objects`` when it takes them),
    built from ``build_config`` and compiled from ``compile_config``.

    Args:
        config: the config (a dict, a list of them, or a plain value returned as is).
        custom_objects: ``{name: class or function}`` for your own objects; a name may
            be the class name or the registered ``"package>name"``.
        safe_mode: refuse configs that would need code to be deserialized. layerkit
            never deserializes code, so Python lambdas are refused in both modes.
        kind: optional hint (``"layers"``, ``"initializers"``, ``"losses"``, ...) for
            configs without a ``module`` entry.
        module_objects: extra ``{name: object}`` searched after ``custom_objects``.

    Returns:
        The object.

    Raises:
        ValueError: an unknown class or function (named with its module and kind), a
            lambda, or a malformed special entry.
        TypeError: the config is not a dict/list/plain value, or ``from_config``
            rejected it (the message names the class).

    Examples:
        >>> import layerkit as lk
        >>> d = lk.saving.deserialize_keras_object(
        ...     {"module": "keras.layers", "class_name": "Dense", "config": {"units": 3},
        ...      "registered_name": None})
        >>> type(d).__name__, d.units
        ('Dense', 3)
    """
    outer = in_safe_mode()
    safe = outer if outer is not None else bool(safe_mode)
    with _reg.CustomObjectScope(custom_objects), SafeModeScope(safe):
        if _shared() is None:
            with ObjectSharingScope():
                return _deserialize(config, kind, module_objects)
        return _deserialize(config, kind, module_objects)


def _deserialize(config, kind, module_objects):
    if config is None:
        return None
    if isinstance(config, str):
        found = _reg.get_registered_object(config, module_objects=module_objects)
        return found if found is not None else config
    if isinstance(config, PLAIN_TYPES):
        return config
    if isinstance(config, (list, tuple)):
        return [_deserialize(x, kind, module_objects) for x in config]
    if not isinstance(config, dict):
        raise TypeError(f"deserialize_keras_object: cannot interpret {config!r} (of type "
                        f"{type(config).__name__}) as a config")
    if "class_name" not in config or "config" not in config:
        return {k: _deserialize(v, None, module_objects) for k, v in config.items()}
    class_name = config["class_name"]
    if not isinstance(class_name, str):
        raise ValueError(f"deserialize_keras_object: 'class_name' must be a string; "
                         f"received {class_name!r}")
    inner = config["config"] if config["config"] is not None else {}
    if class_name.startswith("__") and class_name.endswith("__"):
        return _special(class_name, inner)
    module = config.get("module")
    registered = config.get("registered_name")
    if class_name == "function":
        return _function(inner, registered, module, "module" in config, kind, module_objects)
    shared_id = config.get("shared_object_id")
    shared = _shared()
    if shared_id is not None and shared is not None and shared_id in shared["objects"]:
        return shared["objects"][shared_id]
    if not isinstance(inner, dict):
        raise TypeError(f"deserialize_keras_object: the 'config' of {class_name} must be a "
                        f"dict; received {type(inner).__name__}")
    cls = _class(class_name, registered, module, "module" in config, kind, module_objects)
    if isinstance(cls, types.FunctionType):
        return cls
    instance = _from_config(cls, class_name, inner)
    build_config = config.get("build_config")
    if build_config and not getattr(instance, "built", True) \
            and hasattr(instance, "build_from_config"):
        instance.build_from_config(build_config)
    compile_config = config.get("compile_config")
    if compile_config and hasattr(instance, "compile_from_config"):
        instance.compile_from_config(compile_config)
    if shared_id is not None and shared is not None:
        shared["objects"][shared_id] = instance
    return instance


def _from_config(cls, class_name: str, inner: dict):
    from_config = getattr(cls, "from_config", None)
    if from_config is None:
        raise TypeError(f"deserialize_keras_object: {class_name} has no from_config() method")
    params = inspect.signature(from_config).parameters
    kwargs = {}
    if "custom_objects" in params:  # (those of every active scope, innermost first)
        kwargs["custom_objects"] = _reg.scoped_objects()
    if "safe_mode" in params:
        kwargs["safe_mode"] = in_safe_mode()
    try:
        return from_config(dict(inner), **kwargs)
    except TypeError as e:
        if getattr(e, "_lk_config", False):  # a nested object's, already explained
            raise
        err = TypeError(f"{class_name}.from_config could not rebuild the object from its "
                        f"config {sorted(inner)}: {e}")
        err._lk_config = True
        raise err from e


def _special(class_name: str, inner):
    if class_name == "__lambda__":
        raise ValueError(
            "deserialize_keras_object: the config holds a Python lambda. layerkit never "
            "deserializes code (no marshal, no eval, no pickle), with or without "
            "safe_mode=False, so the lambda cannot be restored: rebuild the layer in code, "
            "or use a named function passed as custom_objects={name: fn} or registered "
            "with lk.saving.register_serializable")
    if not isinstance(inner, dict):
        raise ValueError(f"deserialize_keras_object: malformed {class_name} entry {inner!r}")
    if class_name in ("__numpy__", "__tensor__"):
        dtype = np.dtype(str(inner.get("dtype")))
        if dtype.kind not in "biufc":
            raise ValueError(f"deserialize_keras_object: {class_name} entries must have a "
                             f"numeric or bool dtype; received {dtype}")
        value = np.array(inner.get("value"), dtype=dtype)
        if class_name == "__tensor__":
            from layerkit._core.op import wrap

            return wrap(value)
        return value
    if class_name == "__bytes__":
        return str(inner.get("value")).encode("utf-8")
    if class_name == "__ellipsis__":
        return Ellipsis
    if class_name == "__slice__":
        return slice(*(_deserialize(inner.get(k), None, None) for k in ("start", "stop",
                                                                         "step")))
    if class_name == "__keras_tensor__":
        raise ValueError("deserialize_keras_object: a symbolic tensor reference "
                         "(__keras_tensor__) is only meaningful inside a functional model's "
                         "node list")
    raise ValueError(f"deserialize_keras_object: unknown special entry {class_name!r}")


def _lookup_custom(names, module_objects):
    for name in names:
        if isinstance(name, str):
            found = _reg.get_registered_object(name, module_objects=module_objects)
            if found is not None:
                return found
    return None


def _builtin_module(module, has_module: bool) -> bool:
    """Whether built-ins may answer: no module entry (older configs), or a Keras or
    layerkit module (``module: None`` is Keras's mark of a user class)."""
    if not has_module:
        return True
    return isinstance(module, str) and (module.split(".")[0] in ("keras", "layerkit",
                                                                  "tf_keras")
                                        or module == "builtins")


def _kinds_for(module, kind) -> list:
    found = _kind_of_module(module) or kind
    if found is not None:
        return [found]
    return [k for k in _NOUNS if k != "activations"]


def _class(class_name, registered, module, has_module, kind, module_objects):
    obj = _lookup_custom((registered, class_name), module_objects)
    if obj is not None:
        return obj
    kinds = _kinds_for(module, kind)
    if _builtin_module(module, has_module):
        obj = _builtin(class_name, kinds, functions=False)
        if obj is not None:
            return obj
    noun = _NOUNS.get(kinds[0], "object") if len(kinds) == 1 else "object"
    raise ValueError(
        f"unknown {noun} class {class_name!r} (module {module!r}, registered_name "
        f"{registered!r}): it is not a layerkit built-in, not registered with "
        f"lk.saving.register_serializable and not in custom_objects. layerkit never imports "
        f"the modules a saved file names: define the class and pass "
        f"custom_objects={{{class_name!r}: cls}}, or register it")


def _function(name, registered, module, has_module, kind, module_objects):
    if not isinstance(name, str):
        raise ValueError(f"deserialize_keras_object: a function entry must name the "
                         f"function; received config={name!r}")
    obj = _lookup_custom((registered, name), module_objects)
    if obj is not None:
        return obj
    if _builtin_module(module, has_module):
        kinds = [_kind_of_module(module) or kind] if (_kind_of_module(module) or kind) \
            else ["activations", "losses"]
        obj = _builtin(name, [k for k in kinds if k in ("activations", "losses")], True)
        if obj is not None:
            return obj
    raise ValueError(
        f"unknown function {name!r} (module {module!r}): it is not a layerkit built-in, not "
        f"registered with lk.saving.register_serializable and not in custom_objects; pass "
        f"custom_objects={{{name!r}: fn}}")
