"""Flatten and rebuild nested structures (lists, tuples, dicts) of tensors."""
from __future__ import annotations


def flatten(structure) -> list:
    if isinstance(structure, dict):
        out = []
        for k in sorted(structure, key=repr):
            out.extend(flatten(structure[k]))
        return out
    if isinstance(structure, (list, tuple)):
        out = []
        for s in structure:
            out.extend(flatten(s))
        return out
    return [structure]


def pack_like(structure, flat: list):
    it = iter(flat)

    def build(s):
        if isinstance(s, dict):
            vals = {k: build(s[k]) for k in sorted(s, key=repr)}
            if type(s) is dict:
                return {k: vals[k] for k in s}
            return type(s)((k, vals[k]) for k in s)
        if isinstance(s, tuple) and hasattr(s, "_fields"):
            return type(s)(*[build(v) for v in s])
        if isinstance(s, (list, tuple)):
            return type(s)(build(v) for v in s)
        return next(it)

    return build(structure)
