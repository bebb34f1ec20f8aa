"""``lk.keras.tree``: Keras 3's ``keras.tree`` utilities for nested structures (dict
keys in sorted order, as Keras; see :mod:`layerkit.nest` for ``tf.nest``).

Examples:
    >>> import layerkit as lk
    >>> lk.keras.tree.flatten_with_path({"b": [1, 2], "a": 3})
    [(('a',), 3), (('b', 0), 1), (('b', 1), 2)]
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from layerkit._core import nest as _nest
from layerkit.nest import assert_same_structure, is_nested, pack_sequence_as

__all__ = ["is_nested", "flatten", "flatten_with_path", "pack_sequence_as", "map_structure",
           "map_structure_up_to", "assert_same_structure", "lists_to_tuples", "traverse"]


def flatten(structure: Any) -> list:
    """The leaves of ``structure`` in order (dict values by sorted key)."""
    return _nest.flatten(structure)


def map_structure(func: Callable, *structures: Any) -> Any:
    """``func`` on the corresponding leaves of structures of the same shape.

    Raises:
        ValueError / TypeError: the structures differ.
    """
    return _nest.map_structure(func, *structures)


def flatten_with_path(structure: Any) -> list:
    """``(path, leaf)`` pairs, ``path`` a tuple of dict keys and sequence indices."""
    out: list = []

    def walk(s: Any, path: tuple) -> None:
        if isinstance(s, dict):
            for k in sorted(s, key=_sort_key):
                walk(s[k], path + (k,))
        elif isinstance(s, (list, tuple)):
            for i, v in enumerate(s):
                walk(v, path + (i,))
        else:
            out.append((path, s))

    walk(structure, ())
    return out


def _sort_key(k: Any) -> Any:
    return (type(k).__name__, k) if not isinstance(k, (int, float)) else ("", k)


def map_structure_up_to(shallow_structure: Any, func: Callable, *structures: Any) -> Any:
    """``func`` on the sub-structures of ``structures`` found at the leaves of
    ``shallow_structure``, rebuilt in the shallow structure's shape."""
    parts = [_nest.flatten_up_to(shallow_structure, s) for s in structures]
    return _nest.pack_sequence_as(shallow_structure, [func(*p) for p in zip(*parts)])


def lists_to_tuples(structure: Any) -> Any:
    """``structure`` with every list turned into a tuple (recursively)."""
    if isinstance(structure, dict):
        return type(structure)((k, lists_to_tuples(v)) for k, v in structure.items())
    if isinstance(structure, list):
        return tuple(lists_to_tuples(v) for v in structure)
    if isinstance(structure, tuple) and hasattr(structure, "_fields"):
        return type(structure)(*[lists_to_tuples(v) for v in structure])
    if isinstance(structure, tuple):
        return tuple(lists_to_tuples(v) for v in structure)
    return structure


def traverse(func: Callable, structure: Any, top_down: bool = True) -> Any:
    """Visit every sub-structure and leaf. Top down: where ``func`` returns something
    other than None, that replaces the sub-structure and its inside is not visited.
    Bottom up: ``func`` sees sub-structures already rebuilt from its results."""
    def visit(s: Any) -> Any:
        if top_down:
            r = func(s)
            if r is not None:
                return r
        if isinstance(s, dict):
            rebuilt: Any = type(s)((k, visit(v)) for k, v in s.items())
        elif isinstance(s, tuple) and hasattr(s, "_fields"):
            rebuilt = type(s)(*[visit(v) for v in s])
        elif isinstance(s, (list, tuple)):
            rebuilt = type(s)(visit(v) for v in s)
        else:
            rebuilt = s
        if top_down:
            return rebuilt
        r = func(rebuilt)
        return rebuilt if r is None else r

    return visit(structure)
