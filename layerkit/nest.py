"""``lk.nest``: TensorFlow's ``tf.nest`` (nested lists, tuples, namedtuples and dicts).

Dicts are flattened in sorted key order, as in TensorFlow; everything that is not a
list, tuple or dict (tensors, arrays, None, strings) is a leaf.

Examples:
    >>> import layerkit as lk
    >>> lk.nest.flatten({"b": 2, "a": [1, (3, None)]})
    [1, 3, None, 2]
    >>> lk.nest.map_structure(lambda x: x * 10, {"a": 1, "b": (2, 3)})
    {'a': 10, 'b': (20, 30)}
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from layerkit._core import nest as _nest

__all__ = ["flatten", "pack_sequence_as", "map_structure", "is_nested",
           "assert_same_structure"]


def flatten(structure: Any, expand_composites: bool = False) -> list:
    """The leaves of ``structure`` in order (dict values by sorted key)."""
    return _nest.flatten(structure)


def pack_sequence_as(structure: Any, flat_sequence: Any,
                     expand_composites: bool = False) -> Any:
    """``flat_sequence`` rebuilt in the shape of ``structure``.

    Raises:
        ValueError: ``flat_sequence`` has more or fewer items than ``structure`` leaves.
    """
    return _nest.pack_sequence_as(structure, list(flat_sequence))


def map_structure(func: Callable, *structure: Any, check_types: bool = True,
                  expand_composites: bool = False) -> Any:
    """``func`` applied to the corresponding leaves of one or more structures of the
    same shape, rebuilt in that shape.

    Raises:
        ValueError / TypeError: the structures differ (naming the path).
    """
    return _nest.map_structure(func, *structure, check_types=check_types)


def is_nested(seq: Any) -> bool:
    """Whether ``seq`` is a list, tuple (namedtuple) or dict rather than a leaf."""
    return _nest.is_nested(seq)


def assert_same_structure(nest1: Any, nest2: Any, check_types: bool = True,
                          expand_composites: bool = False) -> None:
    """Raise ValueError (or TypeError for different sequence types with
    ``check_types``) unless both have the same nested structure."""
    _nest.assert_same_structure(nest1, nest2, check_types=check_types)
