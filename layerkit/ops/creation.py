"""Creation ops (no gradients): zeros, ones, fill, eye, range, linspace, one_hot, ..."""
from __future__ import annotations

import numpy as np

from layerkit._core.convert import FLOATX, as_dtype, to_array
from layerkit._core.op import wrap
from layerkit._core.tensor import Tensor

__all__ = ["zeros", "ones", "zeros_like", "ones_like"]


def _shape(shape) -> tuple:
    if isinstance(shape, Tensor):
        shape = np.asarray(shape._v).tolist()
    if isinstance(shape, (int, np.integer)):
        return (int(shape),)
    return tuple(int(s) for s in shape)


def zeros(shape, dtype=FLOATX) -> Tensor:
    """A tensor of zeros (float32 by default)."""
    return wrap(np.zeros(_shape(shape), as_dtype(dtype)))


def ones(shape, dtype=FLOATX) -> Tensor:
    """A tensor of ones (float32 by default)."""
    return wrap(np.ones(_shape(shape), as_dtype(dtype)))


def zeros_like(x, dtype=None) -> Tensor:
    """Zeros with the shape (and dtype, unless given) of ``x``."""
    a = to_array(x)
    return wrap(np.zeros(a.shape, as_dtype(dtype) or a.dtype))


def ones_like(x, dtype=None) -> Tensor:
    """Ones with the shape (and dtype, unless given) of ``x``."""
    a = to_array(x)
    return wrap(np.ones(a.shape, as_dtype(dtype) or a.dtype))
