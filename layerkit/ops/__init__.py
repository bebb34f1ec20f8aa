"""``lk.ops``: Keras 3's ``keras.ops`` namespace (being written).

This name used to hold layerkit's internal op records; those now live in
``layerkit.primitives`` (their public functions are at the top level and in ``lk.math``,
``lk.nn`` and ``lk.linalg``). Nothing inside layerkit imports this module: it is the
user-facing Keras surface only. Until the Keras namespace is filled in, a name that
layerkit publishes at the top level resolves to that op (``lk.ops.tanh`` is
``lk.tanh``), so code written against the old ``lk.ops`` keeps running; anything else
raises an AttributeError saying what to use::

    >>> import layerkit as lk
    >>> lk.ops.tanh is lk.tanh
    True
    >>> lk.ops.segment_sum
    Traceback (most recent call last):
      ...
    AttributeError: module 'layerkit.ops' has no attribute 'segment_sum'; use lk.math.segment_sum
"""
from __future__ import annotations

from layerkit._missing import missing_attribute
from layerkit.primitives.registry import NAMESPACES

__all__: list[str] = []


def __getattr__(name: str):
    op = NAMESPACES["lk"].get(name)
    if op is None:
        raise missing_attribute("layerkit.ops", name)
    globals()[name] = op  # later lookups are plain attribute hits
    return op
