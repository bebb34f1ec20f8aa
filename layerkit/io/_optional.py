"""Optional dependencies: imported only when a feature that needs them is used."""
from __future__ import annotations

import importlib
from types import ModuleType

__all__ = ["require"]


def require(module: str, extra: str, feature: str) -> ModuleType:
    """Import ``module`` for ``feature``, or explain which extra installs it.

    Args:
        module: the module to import (``"h5py"``, ``"safetensors.numpy"``).
        extra: the layerkit extra that installs it (``"h5"``, ``"safetensors"``).
        feature: what needs it, for the message (``"Keras .weights.h5 files"``).

    Returns:
        The imported module.

    Raises:
        ImportError: the package is not installed; the message names the package and
            ``pip install layerkit[extra]``.
    """
    try:
        return importlib.import_module(module)
    except ImportError as e:
        package = module.split(".")[0]
        raise ImportError(
            f"{feature} need the optional package '{package}', which is not installed; "
            f"install it with: pip install layerkit[{extra}]  (or: pip install {package})"
        ) from e
