"""Type aliases used in layerkit's hints (annotations only: nothing here runs per op).

``TensorLike`` is what ops accept and convert (a Tensor or Variable, a NumPy array or
scalar, a Python number or nested lists of them); ``DTypeLike`` what ``dtype=`` accepts;
``ShapeLike`` a shape (``TensorShape``, a tuple/list with ``None`` for unknown sizes);
``AxisLike`` one axis or several. They are strings resolved by the type checker, so
importing this module imports nothing else of layerkit.
"""
from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TypeAlias

if TYPE_CHECKING:
    import numpy as np

    from layerkit._core.dtypes import DType
    from layerkit._core.shape import TensorShape
    from layerkit._core.tensor import Tensor

__all__ = ["AxisLike", "DTypeLike", "Logs", "PathLike", "ShapeLike", "TensorLike"]

TensorLike: TypeAlias = (
    "Tensor | np.ndarray | np.generic | int | float | bool | complex | Sequence[Any]")
DTypeLike: TypeAlias = "str | type | np.dtype | DType | None"
ShapeLike: TypeAlias = "TensorShape | Sequence[int | None]"
AxisLike: TypeAlias = "int | Sequence[int] | None"
PathLike: TypeAlias = "str | os.PathLike[str]"
#: the ``logs`` dict callbacks receive (metric name -> value).
Logs: TypeAlias = "dict[str, Any] | None"
