"""keras.ops.linalg on batched square matrices (the last two axes).

Differentiable: ``inv``, ``det``, ``solve``, ``solve_triangular``, ``cholesky``,
``cholesky_inverse``, ``eigh``, ``norm``, ``lstsq`` and ``pinv`` (full-rank inputs),
``jvp``. Forward only (no gradient): ``qr``, ``svd``, ``eig``, ``lu_factor``,
``matrix_rank``.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

import layerkit as lk
from layerkit._core.nest import flatten
from layerkit._core.nest import pack_sequence_as as pack_like
from layerkit._core.tensor import Tensor
from layerkit._core.types import AxisLike, TensorLike
from layerkit.keras_ops import _prims as P
from layerkit.keras_ops._prims import axes_arg, floating, swap_last, t

__all__ = ["inv", "det", "slogdet", "solve", "solve_triangular", "cholesky",
           "cholesky_inverse", "eig", "eigh", "qr", "svd", "lu_factor", "lstsq", "pinv",
           "matrix_rank", "norm", "jvp"]


def _square(x, who) -> Tensor:
    x = floating(x)
    if x.ndim < 2 or x.shape[-1] != x.shape[-2]:
        raise ValueError(f"keras_ops.{who}: expected square matrices in the last two axes, "
                         f"received shape {x.shape}")
    return x


def inv(x: TensorLike) -> Tensor:
    """Matrix inverse."""
    return P.inv(_square(x, "inv"))


def det(x: TensorLike) -> Tensor:
    """Determinant."""
    sign, logabs = P.slogdet(_square(x, "det"))
    return sign * lk.exp(logabs)


def slogdet(x: TensorLike) -> tuple:
    """``(sign, log|det|)``."""
    return P.slogdet(_square(x, "slogdet"))


def solve(a: TensorLike, b: TensorLike) -> Tensor:
    """``x`` with ``a @ x = b`` (``b`` a matrix, or a vector per batch)."""
    a = _square(a, "solve")
    b = lk.cast(floating(b), a.dtype)
    return P.solve(a, b, b.ndim == a.ndim - 1)


def solve_triangular(a: TensorLike, b: TensorLike, lower: bool = False) -> Tensor:
    """``solve`` reading only the lower (``lower=True``) or upper triangle of ``a``."""
    a = _square(a, "solve_triangular")
    n = a.shape[-1]
    mask = np.tri(n, dtype=bool) if lower else ~np.tri(n, k=-1, dtype=bool)
    return solve(lk.where(mask, a, lk.zeros_like(a)), b)


def cholesky(x: TensorLike, upper: bool = False) -> Tensor:
    """Cholesky factor ``L`` (``x = L L^T``), or ``L^T`` when ``upper``."""
    L = P.cholesky(_square(x, "cholesky"))
    return swap_last(L) if upper else L


def cholesky_inverse(x: TensorLike, upper: bool = False) -> Tensor:
    """Inverse of ``A`` from its Cholesky factor ``x`` (lower, or upper if ``upper``)."""
    f = _square(x, "cholesky_inverse")
    a = lk.matmul(f, f, transpose_a=True) if upper else lk.matmul(f, f, transpose_b=True)
    return P.inv(a)


def eigh(x: TensorLike) -> tuple:
    """``(eigenvalues ascending, eigenvectors as columns)`` of symmetric matrices."""
    return P.eigh(_square(x, "eigh"))


def eig(x: TensorLike) -> tuple:
    """``(eigenvalues, eigenvectors)`` of general matrices (complex when NumPy's are;
    no gradient)."""
    return P.run("eig", lambda a: tuple(np.linalg.eig(a)), _square(x, "eig"), num_outputs=2)


def qr(x: TensorLike, mode: str = "reduced") -> tuple:
    """``(q, r)`` (``mode`` "reduced" or "complete"; no gradient)."""
    if mode not in ("reduced", "complete"):
        raise ValueError(f"keras_ops.qr: mode must be 'reduced' or 'complete', received "
                         f"{mode!r}")
    return P.run("qr", lambda a, mode: tuple(np.linalg.qr(a, mode=mode)), floating(x),
                 num_outputs=2, mode=mode)


def svd(x: TensorLike, full_matrices: bool = True, compute_uv: bool = True) -> Any:
    """``(u, s, vh)``, or ``s`` alone when not ``compute_uv`` (no gradient)."""
    x = floating(x)
    if not compute_uv:
        return P.run("svd_s", lambda a: np.linalg.svd(a, compute_uv=False), x)
    return P.run("svd", lambda a, full: tuple(np.linalg.svd(a, full_matrices=full)), x,
                 num_outputs=3, full=bool(full_matrices))


def _lu(a):
    a = np.array(a, dtype=a.dtype, copy=True)
    n = a.shape[-1]
    piv = np.zeros(a.shape[:-1], np.int32)
    flat = a.reshape(-1, n, n)
    pflat = piv.reshape(-1, n)
    for m, p in zip(flat, pflat):
        for k in range(n):
            i = k + int(np.argmax(np.abs(m[k:, k])))
            p[k] = i
            if i != k:
                m[[k, i]] = m[[i, k]]
            if m[k, k] != 0:
                m[k + 1:, k] /= m[k, k]
                m[k + 1:, k + 1:] -= np.outer(m[k + 1:, k], m[k, k + 1:])
    return a, piv


def lu_factor(x: TensorLike) -> tuple:
    """``(lu, pivots)`` as in SciPy's ``lu_factor`` (partial pivoting, 0-based pivot
    rows, int32; no gradient)."""
    return P.run("lu_factor", _lu, _square(x, "lu_factor"), num_outputs=2)


def lstsq(a: TensorLike, b: TensorLike, rcond: Any = None) -> Tensor:
    """Least-squares solution of ``a x = b`` for 2-D ``a`` (full column rank for the
    gradient: it is computed through the normal equations' pseudo-inverse)."""
    a = floating(a)
    b = lk.cast(floating(b), a.dtype)
    if a.ndim != 2:
        raise ValueError(f"keras_ops.lstsq: a must be 2-D, received shape {a.shape}")
    vec = b.ndim == 1
    if vec:
        b = lk.expand_dims(b, 1)
    out = lk.matmul(pinv(a, rcond), b)
    return lk.squeeze(out, [1]) if vec else out


def pinv(x: TensorLike, rcond: Any = None) -> Tensor:
    """Moore-Penrose pseudo-inverse. Full-rank inputs use ``(A^T A)^-1 A^T`` (or the
    transpose form), which is differentiable; rank-deficient ones fall back to the SVD
    (no gradient)."""
    x = floating(x)
    m, n = x.shape[-2:]
    if not P.is_traced(x):
        sv = np.linalg.svd(x.numpy(), compute_uv=False)
        top = sv.max(axis=-1, initial=0.0)[..., None]
        rel = max(m, n) * np.finfo(x.dtype).eps if rcond is None else float(rcond)
        if np.any(np.sum(sv > rel * top, axis=-1) < min(m, n)):
            return P.run("pinv", lambda a, r: np.linalg.pinv(a, rcond=r), x, r=rel)
    if m >= n:
        return lk.matmul(P.inv(lk.matmul(x, x, transpose_a=True)), swap_last(x))
    return lk.matmul(swap_last(x), P.inv(lk.matmul(x, x, transpose_b=True)))


def matrix_rank(x: TensorLike, tol: Any = None) -> Tensor:
    """Number of singular values above ``tol`` (NumPy's default tolerance); int32."""
    return P.run("matrix_rank", lambda a, tol: np.asarray(
        np.linalg.matrix_rank(a, tol=tol), np.int32), floating(x),
        tol=None if tol is None else float(tol))


def norm(x: TensorLike, ord: Any = None, axis: AxisLike = None,
         keepdims: bool = False) -> Tensor:  # noqa: A002
    """Vector or matrix norm with NumPy's rules for ``ord`` and ``axis``.

    Vector ``ord``: None/2, 1, inf, -inf, 0 and any number p; matrix ``ord`` (two axes,
    or a 2-D tensor with ``axis=None`` and ``ord`` given): "fro", "nuc", 1, -1, inf,
    -inf, 2, -2 (the spectral ones have no gradient).
    """
    x = floating(x)
    if axis is None:
        if ord is None:
            out = lk.sqrt(lk.reduce_sum(x * x))
            return lk.reshape(out, [1] * x.ndim) if keepdims else out
        if x.ndim == 1:
            axes: tuple[int, ...] = (0,)
        elif x.ndim == 2:
            axes = (0, 1)
        else:
            raise ValueError(f"keras_ops.norm: ord={ord!r} with axis=None needs a 1-D or "
                             f"2-D input, received shape {x.shape}")
    else:
        axes = axes_arg(axis, x.ndim, "norm")
    if len(axes) == 1:
        out = _vector_norm(x, axes[0], ord)
    elif len(axes) == 2:
        out = _matrix_norm(x, axes, ord)
    else:
        raise ValueError(f"keras_ops.norm: axis must name 1 or 2 axes, received {axis!r}")
    if keepdims:
        for a in sorted(axes):
            out = lk.expand_dims(out, a)
    return out


def _vector_norm(x, ax, ord):  # noqa: A002
    a = lk.abs(x)
    if ord is None or ord == 2:
        return lk.sqrt(lk.reduce_sum(x * x, axis=ax))
    if ord == np.inf:
        return lk.reduce_max(a, axis=ax)
    if ord == -np.inf:
        return lk.reduce_min(a, axis=ax)
    if ord == 0:
        return lk.reduce_sum(lk.cast(lk.not_equal(x, 0.0), x.dtype), axis=ax)
    if ord == 1:
        return lk.reduce_sum(a, axis=ax)
    if isinstance(ord, str):
        raise ValueError(f"keras_ops.norm: ord={ord!r} is a matrix norm; pass two axes")
    p = float(ord)
    return lk.pow(lk.reduce_sum(lk.pow(a, p), axis=ax), 1.0 / p)


def _matrix_norm(x, axes, ord):  # noqa: A002
    r, c = axes
    if ord in (None, "fro"):
        return lk.sqrt(lk.reduce_sum(x * x, axis=list(axes)))
    a = lk.abs(x)
    if ord in (1, -1, np.inf, -np.inf):
        first, second = (r, c) if ord in (1, -1) else (c, r)
        s = lk.reduce_sum(a, axis=first, keepdims=True)
        red = lk.reduce_max if ord in (1, np.inf) else lk.reduce_min
        return lk.squeeze(red(s, axis=second, keepdims=True), sorted([r, c]))
    if ord in (2, -2, "nuc"):
        rest = [i for i in range(x.ndim) if i not in (r, c)]
        s = svd(lk.transpose(x, rest + [r, c]), compute_uv=False)
        if ord == "nuc":
            return lk.reduce_sum(s, axis=-1)
        return (lk.reduce_max if ord == 2 else lk.reduce_min)(s, axis=-1)
    raise ValueError(f"keras_ops.norm: invalid matrix ord {ord!r}")


def jvp(fun: Callable, primals: Sequence[TensorLike], tangents: Sequence[TensorLike],
        has_aux: bool = False) -> Any:
    """Forward-mode product: ``(fun(*primals), J @ tangents)`` (and ``aux`` when
    ``has_aux``), computed as the gradient of a vector-Jacobian product."""
    ps = [floating(p) for p in primals]
    ts = [lk.cast(floating(v), p.dtype) for p, v in zip(ps, tangents)]
    if len(ps) != len(ts):
        raise ValueError("keras_ops.jvp: primals and tangents need the same length")
    with lk.GradientTape() as outer:
        with lk.GradientTape() as inner:
            inner.watch(ps)
            res = fun(*ps)
            out, aux = (res if has_aux else (res, None))
            flat = [t(o) for o in flatten(out)]
            us = [lk.zeros_like(o) for o in flat]
            outer.watch(us)
            s = None
            for o, u in zip(flat, us):
                term = lk.reduce_sum(o * u)
                s = term if s is None else s + term
        grads = inner.gradient(s, ps, unconnected_gradients="zero")
        dot = None
        for g, v in zip(grads, ts):
            term = lk.reduce_sum(g * v)
            dot = term if dot is None else dot + term
    tangent_out = outer.gradient(dot, us, unconnected_gradients="zero")
    result = (out, pack_like(out, tangent_out))
    return (*result, aux) if has_aux else result
