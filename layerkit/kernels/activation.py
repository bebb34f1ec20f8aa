"""Activation kernels whose NumPy formulation matters for speed.

Leaky ReLU, 64x28x28x128 float32 (the DCGAN generator's widest activation), CPU time on
the 2-core box: ``np.where(x > 0, x, alpha * x)`` 59 ms, ``np.maximum(x, alpha * x)``
3.9 ms (two passes, valid for 0 <= alpha <= 1); the gradient through ``np.where`` or a
masked ``np.copyto`` 29-38 ms, ``g * fmax(sign(x), alpha)`` 7.6 ms.
"""
from __future__ import annotations

import numpy as np


def leaky_relu(x: np.ndarray, alpha: float) -> np.ndarray:
    """``x`` where ``x > 0``, else ``alpha * x`` (NaN stays NaN)."""
    y = np.multiply(x, alpha)
    if 0 <= alpha <= 1:
        # (a 0-d input gives a NumPy scalar, which cannot be an ``out``)
        return np.maximum(x, y, out=y) if isinstance(y, np.ndarray) else np.maximum(x, y)
    return np.where(x > 0, x, y)


def leaky_relu_grad(g: np.ndarray, x: np.ndarray, alpha: float) -> np.ndarray:
    """``g`` where ``x > 0``, else ``alpha * g`` (TensorFlow's LeakyReluGrad: the slope at
    0 and at NaN is ``alpha``)."""
    dtype = np.result_type(g, x)
    if 0 <= alpha <= 1:
        s = np.sign(x).astype(dtype, copy=False)
        if not isinstance(s, np.ndarray):  # a 0-d input: NumPy gives a scalar
            s = np.asarray(s)
        np.fmax(s, np.asarray(alpha, dtype), out=s)  # 1 where x > 0, else alpha
        return np.multiply(s, g, out=s)
    return np.where(x > 0, g, np.multiply(g, alpha)).astype(dtype, copy=False)
