"""Nested structures of leaves: flatten, rebuild, map and compare them (the one helper
the library uses; ``tf.nest`` and Keras 3's ``keras.tree`` are the models).

A structure nests lists, tuples, namedtuples and dicts; anything else (a Tensor, an
array, ``None``, a string) is a leaf. Two options say how, and every caller picks them
explicitly where it differs from the default:

- ``sort_keys`` (default True): a dict's values are taken in sorted key order, as
  ``tf.nest`` and ``keras.tree`` do (tapes, ``lk.function``, models, metrics). Keys that
  cannot be compared with each other (``{1: a, "b": c}``) keep insertion order.
  ``sort_keys=False`` takes them in insertion order, as ``layerkit.data`` orders an
  element's components (the order the user wrote them in, which ``element_spec`` and
  saved datasets follow).
- ``lists_are_leaves`` (default False): a list is one leaf, not a structure, as in
  ``tf.data``, where a list is converted to one tensor.

Rebuilt structures keep their types: a dict keeps its own key order whatever the flat
order, a dict subclass is made from ``(key, value)`` pairs, a namedtuple from its fields,
a list or tuple (or subclass) from its items.

Examples:
    >>> from layerkit._core import nest
    >>> s = {"b": 1, "a": (2, [3, None])}
    >>> nest.flatten(s)
    [2, 3, None, 1]
    >>> nest.flatten(s, sort_keys=False, lists_are_leaves=True)
    [1, 2, [3, None]]
    >>> nest.pack_sequence_as(s, [20, 30, 40, 10])
    {'b': 10, 'a': (20, [30, 40])}
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["is_nested", "flatten", "pack_sequence_as", "map_structure", "flatten_up_to",
           "same_structure", "assert_same_structure"]

_SEQ = (list, tuple)


def _seq(lists_are_leaves: bool) -> type | tuple:
    # (inlined as `tuple if lists_are_leaves else _SEQ` where a call per use shows: the
    # flatten/pack of every lk.function call and gradient)
    return tuple if lists_are_leaves else _SEQ


def _keys(d: dict, sort_keys: bool) -> list:
    if sort_keys:
        try:
            return sorted(d)
        except TypeError:   # keys of mixed types: insertion order
            pass
    return list(d)


def is_nested(x, *, lists_are_leaves: bool = False) -> bool:
    """Whether ``x`` is a structure (a dict, tuple, or list unless ``lists_are_leaves``)."""
    return isinstance(x, (dict, _seq(lists_are_leaves)))


def flatten(structure, *, sort_keys: bool = True, lists_are_leaves: bool = False) -> list:
    """The leaves of ``structure`` in order (a leaf alone gives ``[leaf]``).

    Args:
        structure: a nest of lists, tuples, namedtuples and dicts, or a leaf.
        sort_keys: dict values in sorted key order (True) or insertion order (False).
        lists_are_leaves: treat lists as leaves (``tf.data``'s rule).

    Returns:
        A list of the leaves (``None`` leaves included).
    """
    out: list = []
    _flatten(structure, out, sort_keys, tuple if lists_are_leaves else _SEQ)
    return out


def _flatten(s, out: list, sort_keys: bool, seq) -> None:
    # Module-level recursions here, not closures that call themselves: such a closure is a
    # reference cycle, which kept every array it saw alive until the garbage collector ran
    # (freed memory then cannot be reused: 2,500 page faults per 16 MB array measured in a
    # loop).
    if isinstance(s, dict):
        for k in _keys(s, sort_keys):
            _flatten(s[k], out, sort_keys, seq)
    elif isinstance(s, seq):
        for v in s:
            _flatten(v, out, sort_keys, seq)
    else:
        out.append(s)


def _rebuild(s, vals):
    """``s``'s type holding ``vals`` (a dict by key for dicts, a list for sequences)."""
    if isinstance(s, dict):
        if type(s) is dict:
            return {k: vals[k] for k in s}
        return type(s)((k, vals[k]) for k in s)
    if isinstance(s, tuple):
        if type(s) is tuple:
            return tuple(vals)
        if hasattr(s, "_fields"):
            return type(s)(*vals)
    return type(s)(vals)


def _pack(s, it, sort_keys: bool, seq):
    if isinstance(s, dict):
        return _rebuild(s, {k: _pack(s[k], it, sort_keys, seq) for k in _keys(s, sort_keys)})
    if isinstance(s, seq):
        return _rebuild(s, [_pack(v, it, sort_keys, seq) for v in s])
    return next(it)


def pack_sequence_as(structure, flat_sequence, *, sort_keys: bool = True,
                     lists_are_leaves: bool = False):
    """``structure`` with its leaves replaced, in :func:`flatten` order, by
    ``flat_sequence`` (the inverse of :func:`flatten` with the same options).

    Raises:
        ValueError: ``flat_sequence`` has more or fewer items than ``structure`` leaves.
    """
    it = iter(flat_sequence)
    try:
        out = _pack(structure, it, sort_keys, tuple if lists_are_leaves else _SEQ)
    except StopIteration:
        out = None
    else:
        if next(it, it) is it:
            return out
    n = len(flatten(structure, sort_keys=sort_keys, lists_are_leaves=lists_are_leaves))
    got = len(flat_sequence) if hasattr(flat_sequence, "__len__") else "a different number"
    raise ValueError(f"pack_sequence_as: the structure has {n} leaves but the flat sequence "
                     f"has {got} items; structure: {structure!r:.200}")


def _map(fn, s, sort_keys: bool, seq):
    if isinstance(s, dict):
        return _rebuild(s, {k: _map(fn, s[k], sort_keys, seq) for k in _keys(s, sort_keys)})
    if isinstance(s, seq):
        return _rebuild(s, [_map(fn, v, sort_keys, seq) for v in s])
    return fn(s)


def map_structure(fn: Callable, *structures, sort_keys: bool = True,
                  lists_are_leaves: bool = False, check_types: bool = True):
    """``fn`` applied to the leaves of ``structures`` (one leaf from each), in the shape
    of the first; ``fn`` is called in :func:`flatten` order.

    Raises:
        ValueError / TypeError: the structures differ (see :func:`assert_same_structure`).
    """
    seq = _seq(lists_are_leaves)
    if len(structures) == 1:
        return _map(fn, structures[0], sort_keys, seq)
    if not structures:
        raise TypeError("map_structure: at least one structure is required")
    first = structures[0]
    for other in structures[1:]:
        assert_same_structure(first, other, check_types=check_types,
                              lists_are_leaves=lists_are_leaves)
    columns = [flatten(s, sort_keys=sort_keys, lists_are_leaves=lists_are_leaves)
               for s in structures]
    return pack_sequence_as(first, [fn(*leaves) for leaves in zip(*columns)],
                            sort_keys=sort_keys, lists_are_leaves=lists_are_leaves)


def flatten_up_to(shallow, structure, *, sort_keys: bool = True,
                  lists_are_leaves: bool = False) -> list:
    """``structure`` flattened only as deep as ``shallow`` goes: each leaf of ``shallow``
    takes the whole sub-structure at its place (``tf.nest.flatten_up_to``). Dict keys of
    ``structure`` that ``shallow`` lacks are not read.

    Raises:
        TypeError: ``structure`` is not a dict (a sequence) where ``shallow`` has one.
        ValueError: a sequence of another length, or a key ``shallow`` has is missing.
    """
    out: list = []
    _up_to(shallow, structure, out, sort_keys, _seq(lists_are_leaves))
    return out


def _up_to(shallow, s, out: list, sort_keys: bool, seq) -> None:
    if isinstance(shallow, dict):
        if not isinstance(s, dict):
            raise TypeError(f"flatten_up_to: expected a dict with keys {list(shallow)} "
                            f"where the shallow structure has one, received "
                            f"{type(s).__name__}: {s!r:.80}")
        for k in _keys(shallow, sort_keys):
            if k not in s:
                raise ValueError(f"flatten_up_to: the key {k!r} is missing; expected the "
                                 f"keys {list(shallow)}, received {list(s)}")
            _up_to(shallow[k], s[k], out, sort_keys, seq)
    elif isinstance(shallow, seq):
        if not isinstance(s, _SEQ):
            raise TypeError(f"flatten_up_to: expected a sequence of {len(shallow)} items "
                            f"where the shallow structure has one, received "
                            f"{type(s).__name__}: {s!r:.80}")
        if len(s) != len(shallow):
            raise ValueError(f"flatten_up_to: expected a sequence of {len(shallow)} items, "
                             f"received {len(s)}: {s!r:.80}")
        for a, b in zip(shallow, s):
            _up_to(a, b, out, sort_keys, seq)
    else:
        out.append(s)


def _path(path: tuple) -> str:
    return "".join(f"[{p!r}]" for p in path) or "the top level"


def _mismatch(a, b, check_types: bool, seq, path: tuple):
    """None if ``a`` and ``b`` have the same structure, else (error type, message)."""
    a_nested, b_nested = isinstance(a, (dict, seq)), isinstance(b, (dict, seq))
    if a_nested != b_nested or (a_nested and isinstance(a, dict) != isinstance(b, dict)):
        return ValueError, (f"at {_path(path)} the first holds {type(a).__name__}, the "
                            f"second {type(b).__name__}")
    if not a_nested:
        return None
    if check_types and type(a) is not type(b):
        return TypeError, (f"at {_path(path)} the types differ: {type(a).__name__} and "
                           f"{type(b).__name__} (check_types=False ignores this)")
    if isinstance(a, dict):
        if a.keys() != b.keys():
            return ValueError, (f"at {_path(path)} the dict keys differ: {_keys(a, True)} "
                                f"and {_keys(b, True)}")
        pairs: Any = ((k, a[k], b[k]) for k in _keys(a, True))
    else:
        if len(a) != len(b):
            return ValueError, (f"at {_path(path)} the lengths differ: {len(a)} and "
                                f"{len(b)}")
        pairs = ((i, x, y) for i, (x, y) in enumerate(zip(a, b)))
    for k, x, y in pairs:
        found = _mismatch(x, y, check_types, seq, path + (k,))
        if found is not None:
            return found
    return None


def same_structure(a, b, *, check_types: bool = True, lists_are_leaves: bool = False) -> bool:
    """Whether ``a`` and ``b`` nest the same way (leaves are not compared); see
    :func:`assert_same_structure`."""
    return _mismatch(a, b, check_types, _seq(lists_are_leaves), ()) is None


def assert_same_structure(a, b, *, check_types: bool = True,
                          lists_are_leaves: bool = False) -> None:
    """Check that ``a`` and ``b`` nest the same way: the same dict keys (in any order)
    and sequence lengths at every level; with ``check_types`` also the same container
    types (a list is not a tuple, a namedtuple not a tuple).

    Raises:
        ValueError: the nesting, a sequence length or a dict's keys differ (the message
            gives the path of the first difference).
        TypeError: ``check_types`` and two containers of different types.
    """
    found = _mismatch(a, b, check_types, _seq(lists_are_leaves), ())
    if found is not None:
        kind, msg = found
        raise kind(f"The two structures differ: {msg}. First: {a!r:.120}; second: "
                   f"{b!r:.120}")
