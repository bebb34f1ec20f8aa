"""``lk.experimental``: the names TF programs use from ``tf.experimental``."""
from __future__ import annotations

from layerkit.data.optional import Optional

__all__ = ["Optional"]


def __getattr__(name: str):
    from layerkit._missing import missing_attribute
    raise missing_attribute("layerkit.experimental", name)
