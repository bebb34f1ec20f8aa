"""Keras's global settings that layers read: the default float dtype of new layers and
the default ``data_format`` of spatial layers (``lk.keras.backend`` sets them)."""
from __future__ import annotations

from typing import Any

_SETTINGS: dict[str, Any] = {"floatx": "float32", "image_data_format": "channels_last",
                             "epsilon": 1e-7}
_FLOATS = ("float16", "float32", "float64")
_FORMATS = ("channels_last", "channels_first")


def floatx() -> str:
    """The default dtype of new layers' weights and computations (``'float32'``)."""
    return _SETTINGS["floatx"]


def image_data_format() -> str:
    """The ``data_format`` spatial layers use when given ``None`` (``'channels_last'``)."""
    return _SETTINGS["image_data_format"]


def epsilon() -> float:
    """The fuzz factor Keras code reads from its backend (``1e-7``)."""
    return _SETTINGS["epsilon"]


def set_setting(key: str, value, allowed, what: str) -> None:
    if value not in allowed:
        raise ValueError(f"lk.keras.backend.set_{key}: expected one of {list(allowed)} for "
                         f"{what}; received {value!r}")
    _SETTINGS[key] = value
