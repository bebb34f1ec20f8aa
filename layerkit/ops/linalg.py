"""Linear algebra records: matmul (batched, transpose flags), tensordot, einsum, norm."""
from __future__ import annotations

import numpy as np

from layerkit._core.op import Op, apply
from layerkit._core.tensor import Tensor
from layerkit.ops import broadcast as _bc

__all__ = ["matmul"]


def _t(a):
    return np.swapaxes(a, -1, -2) if np.ndim(a) >= 2 else a


def _matmul_fwd(a, b, transpose_a, transpose_b):
    if transpose_a:
        a = _t(a)
    if transpose_b:
        b = _t(b)
    return np.matmul(a, b)


def _matmul_vjp(g, ins, y, needs, transpose_a, transpose_b):
    a, b = ins
    if a.ndim < 2 or b.ndim < 2:
        raise NotImplementedError("matmul gradient needs inputs of rank >= 2")
    ga = gb = None
    # For C = op(A) @ op(B): dA = g @ op(B)^T (transposed back if transpose_a), etc.
    if needs[0]:
        if transpose_a:
            ga = matmul(b, g, transpose_a=transpose_b, transpose_b=True)
        else:
            ga = matmul(g, b, transpose_b=not transpose_b)
        ga = _bc.sum_to_shape(ga, a.shape)
    if needs[1]:
        if transpose_b:
            gb = matmul(g, a, transpose_a=True, transpose_b=transpose_a)
        else:
            gb = matmul(a, g, transpose_a=not transpose_a)
        gb = _bc.sum_to_shape(gb, b.shape)
    return ga, gb


_MATMUL = Op("matmul", _matmul_fwd, _matmul_vjp)


def matmul(a, b, transpose_a: bool = False, transpose_b: bool = False) -> Tensor:
    """Matrix product of the last two axes, batched over the leading axes.

    Raises:
        ValueError: naming both shapes when the inner dimensions differ.
    """
    av = a._v if isinstance(a, Tensor) else np.asarray(a)
    bv = b._v if isinstance(b, Tensor) else np.asarray(b)
    ka = np.shape(av)[-2 if transpose_a else -1] if np.ndim(av) else None
    kb = np.shape(bv)[-1 if transpose_b else -2] if np.ndim(bv) >= 2 else (
        np.shape(bv)[0] if np.ndim(bv) == 1 else None)
    if ka is None or kb is None or ka != kb:
        raise ValueError(
            f"matmul: inner dimensions do not match: a has shape {np.shape(av)}"
            f"{' (transposed)' if transpose_a else ''}, b has shape {np.shape(bv)}"
            f"{' (transposed)' if transpose_b else ''}"
        )
    return apply(_MATMUL, a, b, transpose_a=bool(transpose_a), transpose_b=bool(transpose_b))
