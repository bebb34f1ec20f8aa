"""Where each public op is published: one ``@export`` next to its definition.

``@export("lk", "math")`` puts a function at the top level (``lk.name``) and in ``lk.math``;
``"math.is_nan"`` publishes it under another name there. Each primitives module derives
its ``__all__`` (the top-level names) with :func:`top_level`, and ``lk.math`` /
``lk.linalg`` / ``lk.nn`` build themselves from :data:`NAMESPACES`, and NumPy's dispatch
to Tensors reads :data:`NUMPY`, so adding an op means writing its record, its function
with one decorator, and its gradient-table row.

The decorator returns the function unchanged: it costs nothing per call.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

#: a function, kept with its own signature by :func:`export` (type checkers see the op's
#: hints through the decorator).
F = TypeVar("F", bound=Callable[..., Any])

#: namespace ("lk" is the top level) -> public name -> function.
NAMESPACES: dict[str, dict[str, Callable]] = {"lk": {}, "math": {}, "linalg": {}, "nn": {}}
#: NumPy ufunc or array function -> the op that serves it on Tensors (``np.arcsin(t)``);
#: read by ``Tensor.__array_ufunc__`` / ``__array_function__`` (primitives/methods.py).
NUMPY: dict[Callable, Callable] = {}
_MODULES: dict[str, list[str]] = {}


def export(*paths: str, numpy: Callable | None = None) -> Callable[[F], F]:
    """Decorator publishing a function under each ``path`` (``"ns"`` or ``"ns.name"``),
    and as the op behind the NumPy ufunc or function ``numpy`` (same call signature).

    Raises:
        ValueError: an unknown namespace, or a name already published there by another
            function (two ops must never silently share a public name).
    """

    def decorate(fn: F) -> F:
        publish(fn, *paths)
        if numpy is not None:
            NUMPY[numpy] = fn
        return fn

    return decorate


def publish(fn: Callable, *paths: str) -> None:
    """``export`` for an existing function (aliases, ops defined by a record helper)."""
    for path in paths:
        ns, _, name = path.partition(".")
        name = name or fn.__name__
        table = NAMESPACES.get(ns)
        if table is None:
            raise ValueError(f"export: unknown namespace {ns!r} in {path!r}; "
                             f"expected one of {sorted(NAMESPACES)}")
        if table.get(name, fn) is not fn:
            raise ValueError(f"export: {'lk' if ns == 'lk' else 'lk.' + ns}.{name} is already "
                             f"{table[name].__module__}.{table[name].__name__}")
        table[name] = fn
        if ns == "lk":
            _MODULES.setdefault(fn.__module__, []).append(name)


def top_level(module: str) -> list[str]:
    """The top-level names exported from ``module``: its ``__all__``."""
    return list(_MODULES.get(module, ()))
