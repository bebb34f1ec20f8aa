"""``lk.keras.config``: Keras 3's global settings (``keras.config``).

The float type, epsilon and image layout are the same settings as ``lk.keras.backend``;
the dtype policy is the one of ``lk.keras.mixed_precision``.

Examples:
    >>> import layerkit as lk
    >>> lk.keras.config.floatx(), lk.keras.config.backend()
    ('float32', 'layerkit')
"""
from __future__ import annotations

from layerkit.keras.backend import (
    backend,
    epsilon,
    floatx,
    image_data_format,
    set_epsilon,
    set_floatx,
    set_image_data_format,
)
from layerkit.keras.mixed_precision import global_policy as dtype_policy
from layerkit.keras.mixed_precision import set_global_policy as set_dtype_policy

__all__ = ["backend", "epsilon", "floatx", "image_data_format", "set_epsilon", "set_floatx",
           "set_image_data_format", "dtype_policy", "set_dtype_policy",
           "enable_unsafe_deserialization", "enable_interactive_logging",
           "disable_interactive_logging", "is_interactive_logging_enabled",
           "enable_traceback_filtering", "disable_traceback_filtering",
           "is_traceback_filtering_enabled"]

_FLAGS = {"interactive_logging": True, "traceback_filtering": True}


def enable_unsafe_deserialization() -> None:
    """Accepted for Keras compatibility. layerkit never runs code read from a file, in
    any mode: a saved ``Lambda`` layer is rebuilt only from a function you pass in
    ``custom_objects``, and loading says so when one is missing."""


def enable_interactive_logging() -> None:
    """Record that interactive (progress-bar) logging is on (Keras's default)."""
    _FLAGS["interactive_logging"] = True


def disable_interactive_logging() -> None:
    """Record that interactive logging is off. layerkit's progress bar follows ``fit``'s
    ``verbose`` argument; pass ``verbose=0`` or ``2`` to quiet it."""
    _FLAGS["interactive_logging"] = False


def is_interactive_logging_enabled() -> bool:
    """Whether interactive logging was last enabled (True by default)."""
    return _FLAGS["interactive_logging"]


def enable_traceback_filtering() -> None:
    """Accepted for Keras compatibility (layerkit's tracebacks are never filtered)."""
    _FLAGS["traceback_filtering"] = True


def disable_traceback_filtering() -> None:
    """Accepted for Keras compatibility (layerkit's tracebacks are never filtered)."""
    _FLAGS["traceback_filtering"] = False


def is_traceback_filtering_enabled() -> bool:
    """Whether traceback filtering was last enabled (a flag only; see above)."""
    return _FLAGS["traceback_filtering"]
