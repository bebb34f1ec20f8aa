"""TF ``tf.linalg`` records: inv, solve, det, slogdet, cholesky, qr, eigh, svd, cross;
and compositions: diag_part, diag, trace, band_part, matrix_transpose, logdet, matvec,
triangular_solve, cholesky_solve.

Every op works on the last two axes, batched over the leading ones. Gradient rules are
written with layerkit ops (matmul, inv, transposes), so they are differentiable again:
- ``inv``: ``-Y^T g Y^T``; ``solve``: ``B`` gets ``solve(A^T, g)``, ``A`` gets ``-gB X^T``;
  ``det``: ``g det(A) A^-T``; ``slogdet``: ``g A^-T`` for the log-determinant.
- ``cholesky``: Murray (2016), ``S = L^-T Phi(L^T gL) L^-1``, symmetrised;
- ``qr`` (reduced, rows >= columns) and ``eigh``: TensorFlow's rules; ``eigh`` reads
  the lower triangle only (as TF and NumPy do), so its gradient is lower triangular.
Decompositions need distinct eigen/singular values for their gradients, as everywhere.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from layerkit._core.convert import convert_to_tensor
from layerkit._core.op import Op, apply, wrap
from layerkit._core.tensor import Tensor
from layerkit._core.types import AxisLike, TensorLike
from layerkit.primitives import array as _array
from layerkit.primitives import elementwise as _ew
from layerkit.primitives import linalg as _linalg
from layerkit.primitives import reduce as _reduce
from layerkit.primitives.creation import int_arg
from layerkit.primitives.linalg import _SVD, matmul
from layerkit.primitives.registry import export, top_level

_add, _sub, _mul = _ew.add, _ew.subtract, _ew.multiply


def _matrices(x, op: str, square: bool = True) -> Tensor:
    t = convert_to_tensor(x)
    if t.ndim < 2 or (square and t.shape[-1] != t.shape[-2]):
        kind = "square matrices" if square else "matrices"
        raise ValueError(f"{op}: expected a tensor of {kind} (shape (..., M, M)), received "
                         f"shape {t.shape}")
    if t.dtype.kind not in "fc":
        raise _ew.float_only_error(op, t.dtype)
    return t


def _mT(t: Tensor) -> Tensor:
    n = t.ndim
    return _array.transpose(t, tuple(range(n - 2)) + (n - 1, n - 2))


def _linalg_error(op: str, fn):
    def forward(*args, **attrs):
        try:
            return fn(*args, **attrs)
        except np.linalg.LinAlgError as e:
            raise ValueError(f"{op}: {e} (the input is not invertible / not positive "
                             f"definite)") from None
    return forward


# ---- inverse, solve, determinants --------------------------------------------------------
def _inv_vjp(g, ins, y, needs):
    return (_ew.negative(matmul(matmul(y, g, transpose_a=True), y, transpose_b=True)),)


_INV = Op("inv", _linalg_error("inv", np.linalg.inv), _inv_vjp, reads=("out",))


@export("linalg", numpy=np.linalg.inv)
def inv(input: TensorLike, adjoint: bool = False, name: str | None = None) -> Tensor:
    """The inverse of each square matrix (of its transpose with ``adjoint=True``).

        >>> import layerkit as lk
        >>> lk.linalg.inv([[2.0, 0.0], [0.0, 4.0]]).numpy()
        array([[0.5 , 0.  ],
               [0.  , 0.25]], dtype=float32)

    Raises:
        ValueError: a non-square or singular matrix.
    """
    a = _matrices(input, "inv")
    return apply(_INV, _mT(a) if adjoint else a)


def _solve_fwd(a, b, adjoint):
    return np.linalg.solve(np.swapaxes(a, -1, -2) if adjoint else a, b)


def _solve_vjp(g, ins, x, needs, adjoint):
    a, _ = ins
    gb = apply(_SOLVE, a, g, adjoint=not adjoint)
    ga = None
    if needs[0]:
        ga = _ew.negative(matmul(x, gb, transpose_b=True) if adjoint else
                          matmul(gb, x, transpose_b=True))
    return ga, gb if needs[1] else None


_SOLVE = Op("solve", _linalg_error("solve", _solve_fwd), _solve_vjp, reads=(0, "out"))


@export("linalg", numpy=np.linalg.solve)
def solve(matrix: TensorLike, rhs: TensorLike, adjoint: bool = False,
          name: str | None = None) -> Tensor:
    """``X`` with ``matrix @ X = rhs`` (``matrix^T @ X = rhs`` with ``adjoint=True``).

        >>> import layerkit as lk
        >>> lk.linalg.solve([[2.0, 0.0], [0.0, 4.0]], [[1.0], [1.0]]).numpy()
        array([[0.5 ],
               [0.25]], dtype=float32)

    Raises:
        ValueError: a singular matrix, or shapes that do not fit (names both).
    """
    a, b = _matrices(matrix, "solve"), _matrices(rhs, "solve", square=False)
    if b.shape[-2] != a.shape[-1] or a.shape[:-2] != b.shape[:-2]:
        raise ValueError(f"solve: matrix {a.shape} and rhs {b.shape} do not fit (rhs must be "
                         f"(..., {a.shape[-1]}, K) with the same batch shape)")
    return apply(_SOLVE, a, b, adjoint=bool(adjoint))


def _det_vjp(g, ins, y, needs):
    a = ins[0]
    return (_mul(_array.expand_dims(_array.expand_dims(_mul(g, y), -1), -1),
                 _mT(apply(_INV, a))),)


_DET = Op("det", np.linalg.det, _det_vjp, reads=(0, "out"))


@export("linalg", numpy=np.linalg.det)
def det(input: TensorLike, name: str | None = None) -> Tensor:
    """The determinant of each square matrix; differentiable where it is invertible."""
    return apply(_DET, _matrices(input, "det"))


def _slogdet_vjp(g, ins, y, needs):
    glog = g[1]
    return (_mul(_array.expand_dims(_array.expand_dims(glog, -1), -1), _mT(apply(_INV, ins[0]))),)


_SLOGDET = Op("slogdet", lambda a: tuple(np.linalg.slogdet(a)), _slogdet_vjp, num_outputs=2,
              reads=(0,))


@export("linalg", numpy=np.linalg.slogdet)
def slogdet(input: TensorLike, name: str | None = None) -> tuple[Tensor, Tensor]:
    """``(sign, log|det|)`` of each square matrix (TF ``slogdet``), stable for large or
    tiny determinants; ``log|det|`` is differentiable."""
    return apply(_SLOGDET, _matrices(input, "slogdet"))


@export("linalg")
def logdet(matrix: TensorLike, name: str | None = None) -> Tensor:
    """``log(det(matrix))`` of a symmetric positive definite matrix, via Cholesky."""
    chol = cholesky(matrix)
    return _mul(2.0, _reduce.reduce_sum(_ew.log(diag_part(chol)), -1))


# ---- Cholesky -----------------------------------------------------------------------------
def _phi_mask(n: int, dtype) -> Tensor:
    return wrap((np.tril(np.ones((n, n))) - 0.5 * np.eye(n)).astype(dtype))


def _cholesky_vjp(g, ins, chol, needs):
    linv = apply(_INV, chol)
    p = _mul(matmul(chol, g, transpose_a=True), _phi_mask(chol.shape[-1], chol.dtype))
    s = matmul(matmul(linv, p, transpose_a=True), linv)
    return (_mul(0.5, _add(s, _mT(s))),)


_CHOLESKY = Op("cholesky", _linalg_error("cholesky", np.linalg.cholesky), _cholesky_vjp)


@export("linalg", numpy=np.linalg.cholesky)
def cholesky(input: TensorLike, name: str | None = None) -> Tensor:
    """Lower-triangular ``L`` with ``L @ L^T = input`` for symmetric positive definite
    matrices (reads the lower triangle, as TF).

    Raises:
        ValueError: a matrix that is not positive definite.
    """
    return apply(_CHOLESKY, _matrices(input, "cholesky"))


@export("linalg")
def cholesky_solve(chol: TensorLike, rhs: TensorLike, name: str | None = None) -> Tensor:
    """``X`` with ``(chol @ chol^T) X = rhs`` given the Cholesky factor ``chol``."""
    y = triangular_solve(chol, rhs, lower=True)
    return triangular_solve(chol, y, lower=True, adjoint=True)


@export("linalg")
def triangular_solve(matrix: TensorLike, rhs: TensorLike, lower: bool = True, adjoint: bool = False,
                     name: str | None = None) -> Tensor:
    """``X`` with ``T @ X = rhs``, ``T`` the lower (or upper) triangle of ``matrix``
    (``T^T`` with ``adjoint=True``); the other triangle is ignored, as in TF."""
    t = band_part(matrix, -1, 0) if lower else band_part(matrix, 0, -1)
    return solve(t, rhs, adjoint=adjoint)


# ---- QR and eigh --------------------------------------------------------------------------
def _qr_fwd(a, full_matrices):
    return tuple(np.linalg.qr(a, mode="complete" if full_matrices else "reduced"))


def _qr_vjp(g, ins, outs, needs, full_matrices):
    # TensorFlow's rule for the reduced QR with rows >= columns.
    gq, gr = g
    q, r = outs
    qdq = matmul(q, gq, transpose_a=True)
    rdr = matmul(r, gr, transpose_b=True)
    tril = band_part(_add(_sub(qdq, _mT(qdq)), _sub(rdr, _mT(rdr))), -1, 0)
    rinv_t = _mT(apply(_INV, r))
    ga = matmul(q, _add(gr, matmul(tril, rinv_t)))
    gb = matmul(_sub(gq, matmul(q, qdq)), rinv_t)
    return (_add(ga, gb),)


_QR = Op("qr", _qr_fwd, _qr_vjp, num_outputs=2)


class Qr(NamedTuple):
    """The result of :func:`qr`: ``q`` and ``r`` (a tuple, as TensorFlow's)."""

    q: Tensor
    r: Tensor


@export("linalg")
def qr(input: TensorLike, full_matrices: bool = False, name: str | None = None) -> Qr:
    """``(q, r)`` with ``input = q @ r``, ``q`` orthonormal columns, ``r`` upper triangular
    (a named tuple: ``.q`` and ``.r`` also work).

    The gradient is defined (as in TF) for ``full_matrices=False`` and matrices with at
    least as many rows as columns.
    """
    a = _matrices(input, "qr", square=False)
    return Qr(*apply(_QR, a, full_matrices=bool(full_matrices)))


def _eigh_vjp(g, ins, outs, needs):
    ge, gv = g
    e, v = outs
    n = e.shape[-1]
    eye = wrap(np.eye(n, dtype=e.dtype))
    diff = _sub(_array.expand_dims(e, -2), _array.expand_dims(e, -1))  # e_j - e_i
    f = _ew.divide(_sub(1.0, eye), _add(diff, eye))
    inner = _add(_mul(eye, _array.expand_dims(ge, -2)),
                 _mul(f, matmul(v, gv, transpose_a=True)))
    ga = matmul(matmul(v, inner), v, transpose_b=True)
    # Only the lower triangle is read: fold the symmetric gradient onto it.
    return (_sub(band_part(_add(ga, _mT(ga)), -1, 0), _mul(eye, ga)),)


_EIGH = Op("eigh", lambda a: tuple(np.linalg.eigh(a)), _eigh_vjp, num_outputs=2)


@export("linalg", numpy=np.linalg.eigh)
def eigh(tensor: TensorLike, name: str | None = None) -> tuple[Tensor, Tensor]:
    """Eigenvalues (ascending) and eigenvectors (columns) of symmetric matrices, reading
    the lower triangle (TF ``eigh``)."""
    return apply(_EIGH, _matrices(tensor, "eigh"))


@export("linalg", numpy=np.linalg.eigvalsh)
def eigvalsh(tensor: TensorLike, name: str | None = None) -> Tensor:
    """Eigenvalues (ascending) of symmetric matrices; see ``eigh``."""
    return eigh(tensor)[0]


_SVD_FULL = Op("svd_full", lambda a: (lambda u, s, vh: (s, u, np.swapaxes(vh, -1, -2)))(
    *np.linalg.svd(a, full_matrices=True)), num_outputs=3)


@export("linalg")
def svd(tensor: TensorLike, full_matrices: bool = False, compute_uv: bool = True,
        name: str | None = None) -> Tensor | tuple[Tensor, Tensor, Tensor]:
    """Singular values ``s`` (descending) and, with ``compute_uv``, ``(s, u, v)`` with
    ``tensor = u @ diag(s) @ v^T`` (TF's order and ``v``, not ``v^T``).

    Differentiable for ``full_matrices=False`` with distinct non-zero singular values.
    """
    a = _matrices(tensor, "svd", square=False)
    s, u, v = apply(_SVD_FULL if full_matrices else _SVD, a)
    return (s, u, v) if compute_uv else s


# ---- compositions -------------------------------------------------------------------------
@export("linalg")
def matrix_transpose(a: TensorLike, name: str | None = None, conjugate: bool = False) -> Tensor:
    """Swap the last two axes."""
    t = convert_to_tensor(a)
    if t.ndim < 2:
        raise ValueError(f"matrix_transpose: expected rank >= 2, received shape {t.shape}")
    return _mT(t)


@export("linalg")
def adjoint(matrix: TensorLike, name: str | None = None) -> Tensor:
    """The conjugate transpose of the last two axes (the transpose for real tensors)."""
    return matrix_transpose(matrix)


@export("linalg")
def diag_part(input: TensorLike, name: str | None = None) -> Tensor:
    """The main diagonal of the last two axes: shape ``(..., min(M, N))``."""
    t = convert_to_tensor(input)
    if t.ndim < 2:
        raise ValueError(f"diag_part: expected rank >= 2, received shape {t.shape}")
    k = np.arange(min(t.shape[-2:]))
    return _array.getitem(t, (Ellipsis, k, k))


@export("linalg")
def diag(diagonal: TensorLike, name: str | None = None) -> Tensor:
    """Square matrices with ``diagonal`` (shape ``(..., N)``) on the diagonal."""
    d = convert_to_tensor(diagonal)
    if d.ndim < 1:
        raise ValueError("diag: expected rank >= 1, received a scalar")
    return _mul(_array.expand_dims(d, -1), wrap(np.eye(d.shape[-1], dtype=d.dtype)))


@export("linalg")
def trace(x: TensorLike, name: str | None = None) -> Tensor:
    """Sum of the main diagonal of the last two axes."""
    return _reduce.reduce_sum(diag_part(x), -1)


@export("linalg")
def band_part(input: TensorLike, num_lower: TensorLike, num_upper: TensorLike,
              name: str | None = None) -> Tensor:
    """Zero everything outside a band: keep ``num_lower`` sub-diagonals and ``num_upper``
    super-diagonals (negative: keep the whole triangle), as TF ``band_part``.

        >>> import layerkit as lk
        >>> lk.linalg.band_part(lk.ones((3, 3)), 0, -1).numpy()
        array([[1., 1., 1.],
               [0., 1., 1.],
               [0., 0., 1.]], dtype=float32)
    """
    t = convert_to_tensor(input)
    if t.ndim < 2:
        raise ValueError(f"band_part: expected rank >= 2, received shape {t.shape}")
    lo = int_arg(num_lower, "band_part", "num_lower")
    hi = int_arg(num_upper, "band_part", "num_upper")
    m, n = t.shape[-2:]
    i, j = np.arange(m)[:, None], np.arange(n)[None, :]
    keep = ((lo < 0) | (i - j <= lo)) & ((hi < 0) | (j - i <= hi))
    return _ew.where(wrap(keep), t, 0)


@export("linalg")
def matvec(a: TensorLike, b: TensorLike, transpose_a: bool = False,
           name: str | None = None) -> Tensor:
    """Matrix-vector product over the last axes: ``a @ b[..., None]`` squeezed."""
    prod = matmul(a, _array.expand_dims(b, -1), transpose_a=transpose_a)
    return _array.squeeze(prod, -1)


def _cross_vjp(g, ins, y, needs):
    a, b = ins
    return (apply(_CROSS, b, g) if needs[0] else None, apply(_CROSS, g, a) if needs[1] else None)


_CROSS = Op("cross", lambda a, b: np.cross(a, b), _cross_vjp)


@export("linalg", numpy=np.cross)
def cross(a: TensorLike, b: TensorLike, name: str | None = None) -> Tensor:
    """Cross product of 3-vectors along the last axis."""
    x, y = convert_to_tensor(a), convert_to_tensor(b)
    if x.shape[-1:] != (3,) or x.shape != y.shape:
        raise ValueError(f"cross: expected two tensors of one shape (..., 3), received "
                         f"{x.shape} and {y.shape}")
    return apply(_CROSS, x, y)


@export("linalg")
def set_diag(input: TensorLike, diagonal: TensorLike, name: str | None = None,
             k: int = 0) -> Tensor:
    """``input`` with its main diagonal replaced by ``diagonal`` (square matrices;
    ``k=0`` only)."""
    x = _matrices(input, "set_diag")
    if k != 0:
        raise ValueError(f"set_diag: only the main diagonal (k=0) is supported, received k={k}")
    return _add(_sub(x, diag(diag_part(x))), diag(diagonal))


@export("linalg")
def normalize(tensor: TensorLike, ord: str | int | float = "euclidean", axis: AxisLike = None,
              name: str | None = None) -> tuple[Tensor, Tensor]:
    """``(tensor / norm, norm)`` with ``norm = lk.norm(tensor, ord, axis, keepdims=True)``
    (TF ``tf.linalg.normalize``)."""
    n = _linalg.norm(tensor, ord=ord, axis=axis, keepdims=True)
    return _ew.divide(tensor, n), n


@export("linalg")
def pinv(a: TensorLike, rcond: TensorLike | None = None, name: str | None = None) -> Tensor:
    """Moore-Penrose pseudo-inverse through the SVD; singular values below
    ``rcond * max(s)`` (default ``10 * max(M, N) * eps``) count as zero, as in TF.
    Differentiable where the singular values are distinct."""
    x = _matrices(a, "pinv", square=False)
    if rcond is None:
        rcond = 10.0 * max(x.shape[-2:]) * float(np.finfo(x.dtype).eps)
    s, u, v = apply(_SVD, x)
    cutoff = _mul(rcond, _reduce.reduce_max(s, -1, keepdims=True))
    keep = _ew.greater(s, cutoff)
    inv_s = _ew.where(keep, _ew.divide(1.0, _ew.where(keep, s, 1.0)), 0.0)
    return matmul(_mul(v, _array.expand_dims(inv_s, -2)), u, transpose_b=True)


@export("linalg")
def lstsq(matrix: TensorLike, rhs: TensorLike, l2_regularizer: TensorLike = 0.0,
          fast: bool = True, name: str | None = None) -> Tensor:
    """Least-squares ``X`` minimising ``|matrix X - rhs|^2 + l2 |X|^2`` (the normal
    equations, as TF's ``fast=True`` path); differentiable."""
    a, b = _matrices(matrix, "lstsq", square=False), _matrices(rhs, "lstsq", square=False)
    if a.shape[-2] != b.shape[-2]:
        raise ValueError(f"lstsq: matrix {a.shape} and rhs {b.shape} need equal row counts")
    n = a.shape[-1]
    gram = matmul(a, a, transpose_a=True)
    if l2_regularizer:
        gram = _add(gram, _mul(l2_regularizer, wrap(np.eye(n, dtype=a.dtype))))
    return solve(gram, matmul(a, b, transpose_a=True))


@export("linalg")
def matrix_rank(a: TensorLike, tol: TensorLike | None = None, validate_args: bool = False,
                name: str | None = None) -> Tensor:
    """Number of singular values above ``tol`` (default ``max(s) * max(M, N) * eps``)."""
    x = _matrices(a, "matrix_rank", square=False)
    s = svd(x, compute_uv=False)
    if tol is None:
        tol = _mul(_reduce.reduce_max(s, -1, keepdims=True),
                   max(x.shape[-2:]) * float(np.finfo(x.dtype).eps))
    return _reduce.reduce_sum(_ew.cast(_ew.greater(s, tol), "int32"), -1)


__all__ = top_level(__name__)
