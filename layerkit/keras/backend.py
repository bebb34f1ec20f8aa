"""``lk.keras.backend``: Keras 3's global settings (``floatx``, ``epsilon``,
``image_data_format``), ``clear_session`` and the backend's name.

Examples:
    >>> import layerkit as lk
    >>> lk.keras.backend.floatx(), lk.keras.backend.image_data_format()
    ('float32', 'channels_last')
"""
from __future__ import annotations

import gc

from layerkit._core.types import TensorLike
from layerkit.keras import backend_legacy as _legacy
from layerkit.keras.backend_legacy import *  # noqa: F403  (tf.keras 2's K.mean, K.sum, ...)
from layerkit.layers import backend_config as _config
from layerkit.layers.backend_config import epsilon, floatx, image_data_format

__all__ = ["backend", "clear_session", "epsilon", "floatx", "image_data_format",
           "is_keras_tensor", "set_epsilon", "set_floatx", "set_image_data_format",
           *_legacy.__all__]


def backend() -> str:
    """The name of the backend: ``'layerkit'``."""
    return "layerkit"


def set_floatx(value: str) -> None:
    """Set the default dtype of layers created from now on (``'float16'``, ``'float32'``
    or ``'float64'``); existing layers keep theirs, as in Keras.

    Raises:
        ValueError: for any other dtype.
    """
    _config.set_setting("floatx", str(value), _config._FLOATS, "the default float dtype")


def _check_float(name: str, where: str) -> None:
    if name not in _config._FLOATS:
        raise ValueError(f"{where}: expected one of {list(_config._FLOATS)}; received "
                         f"{name!r}")


def set_epsilon(value: float) -> None:
    """Set the value :func:`epsilon` returns."""
    _config._SETTINGS["epsilon"] = float(value)


def set_image_data_format(data_format: str) -> None:
    """Set the ``data_format`` that convolution, pooling and other spatial layers use when
    they are given ``None``: ``'channels_last'`` or ``'channels_first'``.

    Raises:
        ValueError: for any other value.
    """
    _config.set_setting("image_data_format", data_format, _config._FORMATS, "data_format")


def clear_session(free_memory: bool = True) -> None:
    """Restart default layer names (``dense``, ``dense_1``, ...) and collect garbage, as
    Keras's ``clear_session`` does."""
    from layerkit.layers.tracking import reset_uids
    from layerkit.models import functional

    reset_uids()
    functional._INPUT_UIDS[0] = 0
    if free_memory:
        gc.collect()


def is_keras_tensor(x: TensorLike) -> bool:
    """True for the symbolic tensors of the functional API (``lk.Input`` and layer
    outputs on them)."""
    from layerkit.models.functional import SymbolicTensor

    return isinstance(x, SymbolicTensor)
