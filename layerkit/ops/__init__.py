"""``lk.ops``: Keras 3's ``keras.ops`` namespace (being written; empty for now).

This name used to hold layerkit's internal op records; those now live in
``layerkit.primitives`` (their public functions are at the top level, in ``lk.math``,
``lk.nn`` and ``lk.linalg``). Nothing inside layerkit imports this module: it is the
user-facing Keras surface only. Until it is filled, a missing name says where the op
lives today::

    >>> import layerkit as lk
    >>> lk.ops.matmul
    Traceback (most recent call last):
      ...
    AttributeError: module 'layerkit.ops' has no attribute 'matmul'; use lk.matmul
"""
from __future__ import annotations

from layerkit._missing import missing_attribute

__all__: list[str] = []


def __getattr__(name: str):
    raise missing_attribute("layerkit.ops", name)
