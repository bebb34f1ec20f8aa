"""Linear algebra records: matmul (batched, transpose flags), tensordot, einsum; norm.

Gradients are written with the same ops (matmul of matmuls, einsum of einsums), so they
are differentiable again. Broadcast batch dimensions of ``matmul`` are summed back with
the shared ``sum_to_shape`` helper.
"""
from __future__ import annotations

import string
from functools import lru_cache

import numpy as np

from layerkit._core.convert import convert_to_tensor
from layerkit._core.op import RECORDERS, Op, apply, wrap
from layerkit._core.tensor import Tensor
from layerkit._core.tuning import EINSUM_CACHE
from layerkit._core.types import AxisLike, TensorLike
from layerkit.errors import InvalidArgumentError
from layerkit.primitives import array as _array
from layerkit.primitives import broadcast as _bc
from layerkit.primitives import elementwise as _ew
from layerkit.primitives import nn as _nn
from layerkit.primitives import reduce as _reduce
from layerkit.primitives.creation import axis_arg, int_arg
from layerkit.primitives.registry import export, top_level

_new = object.__new__


def _shape_of(x) -> tuple:
    return x._rv.shape if isinstance(x, Tensor) else np.shape(x)


def _perm_inverse(order) -> tuple:
    return tuple(np.argsort(order).tolist())


# ---- matmul -------------------------------------------------------------------------
def _t(a):
    # The ndarray method skips np.swapaxes's Python dispatch (~0.7 us per call).
    return a.swapaxes(-1, -2) if isinstance(a, np.ndarray) else np.swapaxes(a, -1, -2)


def _matmul_fwd(a, b, transpose_a, transpose_b):
    if transpose_a:
        a = _t(a)
    if transpose_b:
        b = _t(b)
    return np.matmul(a, b)


def _matmul_vjp(g, ins, y, needs, transpose_a, transpose_b):
    # Rules call the record directly: operands are rank >= 2 here (vectors were lifted).
    a, b = ins
    if not RECORDERS and not transpose_a and not transpose_b:
        # First-order backward of a plain 2-D product (the Dense case): NumPy directly;
        # no broadcast batch axes to sum back, so the shapes already match.
        av, bv, gv = a._v, b._v, g._v
        if av.ndim == 2 and bv.ndim == 2 and type(gv) is np.ndarray:
            ga = gb = None
            if needs[0]:
                ga = _new(Tensor)
                ga._v = gv @ bv.T
            if needs[1]:
                gb = _new(Tensor)
                gb._v = av.T @ gv
            return ga, gb
    ga = gb = None
    # For C = op(A) @ op(B): dA = g @ op(B)^T (transposed back if transpose_a), etc.
    if needs[0]:
        if transpose_a:
            ga = apply(_MATMUL, b, g, transpose_a=transpose_b, transpose_b=True)
        else:
            ga = apply(_MATMUL, g, b, transpose_a=False, transpose_b=not transpose_b)
        ga = _bc.sum_to_shape(ga, a.shape)
    if needs[1]:
        if transpose_b:
            gb = apply(_MATMUL, g, a, transpose_a=True, transpose_b=transpose_a)
        else:
            gb = apply(_MATMUL, a, g, transpose_a=not transpose_a, transpose_b=False)
        gb = _bc.sum_to_shape(gb, b.shape)
    return ga, gb


_MATMUL = Op("matmul", _matmul_fwd, _matmul_vjp, reads=(0, 1))


def _matmul_error(a, b, transpose_a, transpose_b) -> InvalidArgumentError:
    return InvalidArgumentError(  # a ValueError too; TF's error for this
        f"matmul: incompatible shapes: a has shape {_shape_of(a)}"
        f"{' (transposed)' if transpose_a else ''}, b has shape {_shape_of(b)}"
        f"{' (transposed)' if transpose_b else ''}; the inner dimensions must match and "
        f"the batch dimensions must broadcast"
    )


@export("lk", "linalg")
def matmul(a: TensorLike, b: TensorLike, transpose_a: bool = False,
           transpose_b: bool = False) -> Tensor:
    """Matrix product of the last two axes, batched (and broadcast) over leading axes.

    1-D operands follow NumPy: a vector ``a`` is a row, a vector ``b`` a column, and the
    added axis is removed from the result (transpose flags do not apply to vectors).

    Args:
        a: tensors of rank >= 1.
        b: tensors of rank >= 1.
        transpose_a: use the transpose of the last two axes.
        transpose_b: use the transpose of the last two axes.

    Raises:
        ValueError: naming both shapes when the inner dimensions differ, the batch
            dimensions do not broadcast, or an operand is a scalar.
    """
    na = a._rv.ndim if isinstance(a, Tensor) else np.ndim(a)
    nb = b._rv.ndim if isinstance(b, Tensor) else np.ndim(b)
    if na >= 2 and nb >= 2:
        try:
            return apply(_MATMUL, a, b, transpose_a=bool(transpose_a),
                         transpose_b=bool(transpose_b))
        except ValueError:
            raise _matmul_error(a, b, transpose_a, transpose_b) from None
    if na == 0 or nb == 0:
        raise ValueError(
            f"matmul: operands must have rank >= 1; received shapes {_shape_of(a)} and "
            f"{_shape_of(b)} (use multiply for scalars)"
        )
    # Vectors: lift to matrices with reshape (differentiable), multiply, drop the axis.
    sa, sb = _shape_of(a), _shape_of(b)
    a2 = _array.reshape(a, (1,) + sa) if na == 1 else a
    b2 = _array.reshape(b, sb + (1,)) if nb == 1 else b
    try:
        out = apply(_MATMUL, a2, b2, transpose_a=bool(transpose_a) and na > 1,
                    transpose_b=bool(transpose_b) and nb > 1)
    except ValueError:
        raise _matmul_error(a, b, transpose_a, transpose_b) from None
    shape = out.shape
    if na == 1 and nb == 1:
        shape = shape[:-2]
    elif na == 1:
        shape = shape[:-2] + shape[-1:]
    else:
        shape = shape[:-1]
    return _array.reshape(out, shape)


# ---- fused_matmul: x @ w + b, then an activation (what Dense layers call) -------------
# One record instead of matmul + add + relu: the bias and the ReLU run in place on the
# GEMM's fresh output. The vjp has two paths (as conv.fused_conv2d's): with no recorder
# active (a plain first-order backward) it is NumPy on the saved arrays, the hand-written
# MLP step; with a recorder active (higher order, persistent tapes, traces) it composes
# differentiable records. Digits 64-64-10 step (1 BLAS thread): forward 5 records -> 2,
# tape.gradient 136 -> 106 us.
_ACTIVATIONS = ("linear", "relu")


def _fused_matmul_fwd(x, w, *bias, activation):
    y = x @ w
    if bias:
        y += bias[0]
    if activation == "relu":
        np.maximum(y, 0, out=y)
    return y


def _fused_matmul_vjp(g, ins, y, needs, activation):
    x, w = ins[0], ins[1]
    if not RECORDERS:
        gv = g._v
        if activation == "relu":
            gv = gv * (y._v > 0)
        gx = wrap(gv @ w._v.T) if needs[0] else None
        gw = wrap(x._v.T @ gv) if needs[1] else None
        if len(ins) == 2:
            return gx, gw
        return gx, gw, (wrap(np.add.reduce(gv, axis=0)) if needs[2] else None)
    if activation == "relu":
        # One record, g * (y > 0), that a traced graph recomputes per call (relu'' = 0).
        g = apply(_nn._RELU_GRAD, g, y)
    gx = apply(_MATMUL, g, w, transpose_a=False, transpose_b=True) if needs[0] else None
    gw = apply(_MATMUL, x, g, transpose_a=True, transpose_b=False) if needs[1] else None
    if len(ins) == 2:
        return gx, gw
    return gx, gw, (_reduce.reduce_sum(g, axis=0) if needs[2] else None)


_FUSED_MATMUL = Op("fused_matmul", _fused_matmul_fwd, _fused_matmul_vjp, reads=(0, 1, "out"))


def fused_matmul(x, w, bias=None, activation: str = "linear") -> Tensor:
    """``activation(x @ w + bias)`` for 2-D ``x`` and ``w`` as one record (the Dense path).

    Args:
        x: (batch, in) tensor.
        w: (in, units) tensor.
        bias: None or a (units,) tensor.
        activation: ``'linear'`` or ``'relu'``.

    Raises:
        ValueError: naming the shapes when they do not fit, or an unknown activation.
    """
    xs, ws = _shape_of(x), _shape_of(w)
    if len(xs) != 2 or len(ws) != 2 or xs[1] != ws[0]:
        raise ValueError(f"fused_matmul: x must be (batch, n) and w (n, units); received "
                         f"x {xs} and w {ws}")
    if activation not in _ACTIVATIONS:
        raise ValueError(f"fused_matmul: activation must be one of {_ACTIVATIONS}; received "
                         f"{activation!r}")
    if bias is None:
        return apply(_FUSED_MATMUL, x, w, activation=activation)
    if _shape_of(bias) != (ws[1],):
        raise ValueError(f"fused_matmul: bias must have shape ({ws[1]},) for w of shape {ws}; "
                         f"received {_shape_of(bias)}")
    return apply(_FUSED_MATMUL, x, w, bias, activation=activation)


# ---- tensordot ----------------------------------------------------------------------
def _tensordot_vjp(g, ins, y, needs, axes_a, axes_b):
    a, b = ins
    fa = [i for i in range(a.ndim) if i not in axes_a]
    fb = [i for i in range(b.ndim) if i not in axes_b]
    ga = gb = None
    if needs[0]:
        # g[fa, fb] . b[cb, fb] over fb -> dims (fa..., b's contracted axes ascending).
        t = tensordot(g, b, (list(range(len(fa), g.ndim)), fb))
        order = fa + [axes_a[axes_b.index(c)] for c in sorted(axes_b)]
        ga = _maybe_transpose(t, order)
    if needs[1]:
        # a[fa, ca] . g[fa, fb] over fa -> dims (a's contracted axes ascending, fb...).
        t = tensordot(a, g, (fa, list(range(len(fa)))))
        order = [axes_b[axes_a.index(c)] for c in sorted(axes_a)] + fb
        gb = _maybe_transpose(t, order)
    return ga, gb


def _maybe_transpose(t: Tensor, order: list) -> Tensor:
    perm = _perm_inverse(order)
    return t if perm == tuple(range(len(perm))) else _array.transpose(t, perm)


_TENSORDOT = Op("tensordot", lambda a, b, axes_a, axes_b: np.tensordot(a, b, (axes_a, axes_b)),
                _tensordot_vjp, reads=(0, 1))


def _norm_axes_list(axes, n: int, which: str) -> tuple:
    if isinstance(axes, Tensor):
        axes = np.asarray(axes._v).tolist()
    if isinstance(axes, (int, np.integer)):
        axes = [axes]
    out = [axis_arg(ax, n, "tensordot", what=f"axis of {which}") for ax in axes]
    if len(set(out)) != len(out):
        raise ValueError(f"tensordot: repeated axis in {axes} for {which}")
    return tuple(out)


@export("lk", "linalg")
def tensordot(a: TensorLike, b: TensorLike, axes: TensorLike) -> Tensor:
    """Contract ``a`` and ``b`` over the given axes (TF/NumPy ``tensordot``).

    Args:
        a: tensors.
        b: tensors.
        axes: an int ``N`` (last ``N`` axes of ``a`` with the first ``N`` of ``b``) or a
            pair ``[axes_a, axes_b]`` of ints or equal-length lists.

    Raises:
        ValueError: bad axes or mismatched contracted sizes (names both shapes).
    """
    sa, sb = _shape_of(a), _shape_of(b)
    if isinstance(axes, Tensor):
        axes = np.asarray(axes._v).tolist()
    if not isinstance(axes, (list, tuple, np.ndarray)):
        n = int_arg(axes, "tensordot", "axes")
        if not 0 <= n <= min(len(sa), len(sb)):
            raise ValueError(
                f"tensordot: axes={n} must be in [0, {min(len(sa), len(sb))}] for shapes "
                f"{sa} and {sb}"
            )
        axes_a, axes_b = tuple(range(len(sa) - n, len(sa))), tuple(range(n))
    else:
        if len(axes) != 2:
            raise ValueError(
                f"tensordot: axes must be an int or a pair of lists, received {axes!r}")
        axes_a = _norm_axes_list(axes[0], len(sa), "a")
        axes_b = _norm_axes_list(axes[1], len(sb), "b")
    if len(axes_a) != len(axes_b) or any(sa[i] != sb[j] for i, j in zip(axes_a, axes_b)):
        raise ValueError(
            f"tensordot: cannot contract axes {axes_a} of shape {sa} with axes {axes_b} of "
            f"shape {sb}: the contracted sizes must be equal"
        )
    return apply(_TENSORDOT, a, b, axes_a=axes_a, axes_b=axes_b)


# ---- einsum -------------------------------------------------------------------------
def _einsum_fwd(*ops, equation):
    # optimize=True routes big contractions to BLAS but costs ~15 us of planning, which
    # dominates on small operands (measured: 4x4 matmul 1.7 us plain vs 16 us optimized).
    big = len(ops) > 2 or sum(np.size(o) for o in ops) > 16384
    return np.einsum(equation, *ops, optimize=big)


def _einsum_vjp(g, ins, y, needs, equation):
    lhs, out = equation.split("->")
    subs = lhs.split(",")
    grads = []
    for i, (x, s) in enumerate(zip(ins, subs)):
        if not needs[i]:
            grads.append(None)
            continue
        if len(set(s)) != len(s):
            raise NotImplementedError(
                f"einsum: the gradient of '{equation}' is not implemented: operand {i} "
                f"repeats an index ('{s}', a trace or diagonal)"
            )
        others = [subs[j] for j in range(len(subs)) if j != i]
        avail = set(out).union(*others)
        kept = "".join(c for c in s if c in avail)
        r = einsum(",".join([out] + others) + "->" + kept, g, *[ins[j] for j in range(len(ins))
                                                                if j != i])
        if r.shape != x.shape:
            # Indices summed inside this operand alone come back as broadcast axes; axes
            # where this operand had length 1 against a longer one are summed back.
            rs = dict(zip(kept, r.shape))
            full = tuple(rs.get(c, 1) for c in s)
            if full != r.shape:
                r = _array.reshape(r, full)
            axes = tuple(k for k, n in enumerate(x.shape) if n == 1 and full[k] != 1)
            if axes:
                r = _reduce.reduce_sum(r, axis=axes, keepdims=True)
            if r.shape != x.shape:
                r = _array.broadcast_to(r, x.shape)
        grads.append(r)
    return tuple(grads)


_EINSUM = Op("einsum", _einsum_fwd, _einsum_vjp)


@lru_cache(maxsize=EINSUM_CACHE)
def _normalize_equation(equation: str, ranks: tuple) -> str:
    """Explicit form ``'ab,bc->ac'`` with every ``...`` replaced by letters (cached: it
    depends only on the equation and the operand ranks)."""
    eq = equation.replace(" ", "")
    lhs, arrow, out = eq.partition("->")
    subs = lhs.split(",")
    if len(subs) != len(ranks):
        raise ValueError(
            f"einsum: equation '{equation}' names {len(subs)} operands, received {len(ranks)}"
        )
    used = set(eq) - set(",->.")
    if any(c not in string.ascii_letters for c in used):
        raise ValueError(f"einsum: equation '{equation}' may only use letters, ',', '->' and '...'")
    free = [c for c in string.ascii_letters if c not in used]
    n_ell = max([r - (len(s) - 3) for s, r in zip(subs, ranks) if "..." in s], default=0)
    ell = "".join(free[:max(n_ell, 0)])
    new = []
    for s, r in zip(subs, ranks):
        if "..." in s:
            k = r - (len(s) - 3)
            if k < 0:
                raise ValueError(f"einsum: operand '{s}' has more indices than its rank {r}")
            s = s.replace("...", ell[len(ell) - k:])
        if len(s) != r or "." in s:
            raise ValueError(
                f"einsum: subscripts '{s}' do not match an operand of rank {r} in '{equation}'"
            )
        new.append(s)
    if arrow:
        out = out.replace("...", ell)
        if "." in out or len(set(out)) != len(out) or not set(out) <= set("".join(new)):
            raise ValueError(f"einsum: invalid output subscripts in '{equation}'")
    else:
        # Implicit mode (NumPy): broadcast axes, then the indices seen once, sorted.
        joined = "".join(new)
        out = ell + "".join(sorted(c for c in set(joined) if joined.count(c) == 1
                                   and c not in ell))
    return ",".join(new) + "->" + out


@export("lk", "linalg")
def einsum(equation: str, *inputs: TensorLike) -> Tensor:
    """Einstein summation (NumPy/TF ``einsum``), with ``...`` broadcasting.

    The gradient of each operand is an einsum of the upstream gradient with the other
    operands. Repeated indices inside one operand (traces, diagonals) are computed but
    their gradient raises ``NotImplementedError``.

    Raises:
        ValueError: a malformed equation or sizes that do not match.
    """
    if len(inputs) == 1 and isinstance(inputs[0], (list, tuple)):
        inputs = tuple(inputs[0])
    eq = _normalize_equation(equation, tuple(len(_shape_of(x)) for x in inputs))
    try:
        return apply(_EINSUM, *inputs, equation=eq)
    except ValueError as e:
        shapes = [_shape_of(x) for x in inputs]
        raise ValueError(f"einsum: '{equation}' with operand shapes {shapes}: {e}") from None


# ---- norm ---------------------------------------------------------------------------
def _mT(t: Tensor) -> Tensor:
    n = t.ndim
    return _array.transpose(t, tuple(range(n - 2)) + (n - 1, n - 2))


def _svd_fwd(x):
    u, s, vh = np.linalg.svd(x, full_matrices=False)
    return s, u, np.swapaxes(vh, -1, -2)


def _svd_vjp(g, ins, outs, needs):
    # Reduced SVD x = u diag(s) v^T (Townsend 2016, "Differentiating the SVD"):
    #   xbar = u [ (F o (u^T ubar - ubar^T u)) S + diag(sbar) + S (F o (v^T vbar - vbar^T v)) ] v^T
    #          + (I - u u^T) ubar S^-1 v^T + u S^-1 vbar^T (I - v v^T),
    # F_ij = 1 / (s_j^2 - s_i^2) off the diagonal. Written with lk ops on the outputs, so
    # it is differentiable again. Needs distinct, non-zero singular values.
    gs, gu, gv = g
    s, u, v = outs
    eye = wrap(np.eye(s.shape[-1], dtype=s.dtype))
    s_row = _array.expand_dims(s, -2)
    s_col = _array.expand_dims(s, -1)
    s2_row, s2_col = _ew.square(s_row), _ew.square(s_col)
    f = _ew.divide(_ew.subtract(1.0, eye), _ew.add(_ew.subtract(s2_row, s2_col), eye))
    utgu = matmul(u, gu, transpose_a=True)
    vtgv = matmul(v, gv, transpose_a=True)
    inner = _ew.add(
        _ew.add(_ew.multiply(_ew.multiply(f, _ew.subtract(utgu, _mT(utgu))), s_row),
                _ew.multiply(eye, _array.expand_dims(gs, -2))),
        _ew.multiply(s_col, _ew.multiply(f, _ew.subtract(vtgv, _mT(vtgv)))))
    ga = matmul(matmul(u, inner), v, transpose_b=True)
    inv_s_row = _ew.divide(1.0, s_row)
    u_perp = _ew.subtract(gu, matmul(u, utgu))
    v_perp = _ew.subtract(gv, matmul(v, vtgv))
    ga = _ew.add(ga, matmul(_ew.multiply(u_perp, inv_s_row), v, transpose_b=True))
    ga = _ew.add(ga, matmul(_ew.multiply(u, inv_s_row), v_perp, transpose_b=True))
    return (ga,)


# Outputs (s, u, v) with x = u @ diag(s) @ v^T over the last two axes (reduced matrices).
_SVD = Op("svd", _svd_fwd, _svd_vjp, num_outputs=3)


_EUCLID = ("euclidean", "fro")


def _is_inf(o) -> bool:
    return not isinstance(o, str) and float(o) == np.inf


@export("lk", "linalg")
def norm(tensor: TensorLike, ord: str | int | float = "euclidean", axis: AxisLike = None,
         keepdims: bool = False) -> Tensor:
    """Vector or matrix norm (TF ``tf.norm``).

    Args:
        tensor: a float tensor.
        ord: ``'euclidean'`` (default; Frobenius for matrices), ``'fro'``, ``1``, ``2``,
            ``np.inf``, or for vectors any positive real ``p``.
        axis: None (the whole tensor as one vector), an int (vector norms along it) or a
            pair of ints (matrix norms over those two axes).
        keepdims: keep the reduced axes with length 1.

    The euclidean norm's gradient ``x / norm`` is NaN where the norm is 0, as in TF. The
    spectral norm (``ord=2`` with a pair of axes) goes through an SVD whose gradients (of
    any order) need distinct singular values.

    A norm is float-only math: integer and bool tensors raise (TF raises for all but
    ``ord=1``/``np.inf``, whose integer sums would wrap around quietly).

    Raises:
        TypeError: an integer or bool tensor (cast it first), or a non-integer axis.
        ValueError: an unsupported ``ord`` for the given ``axis``, or a bad ``axis``.
    """
    x = convert_to_tensor(tensor)
    n = x.ndim
    if isinstance(axis, Tensor):
        axis = np.asarray(axis._v).tolist()
    if axis is None:
        axes = None
    elif isinstance(axis, (list, tuple)):
        axes = tuple(axis_arg(a, n, "norm") for a in axis)
    else:
        axes = (axis_arg(axis, n, "norm"),)
    matrix = axes is not None and len(axes) == 2
    if axes is not None:
        if len(axes) not in (1, 2):
            raise ValueError(
                f"norm: axis must be None, an int or a pair of ints, received {axis!r}")
        if matrix and axes[0] == axes[1]:
            raise ValueError(f"norm: the two matrix axes must differ, received {axis!r}")
    if x.dtype.kind not in "fc":
        raise _ew.float_only_error("norm", x.dtype)
    if isinstance(ord, str) and ord in _EUCLID or (not isinstance(ord, str) and not matrix
                                                   and float(ord) == 2):
        if x.dtype.kind == "c":
            x = _ew.abs(x)
        return _ew.sqrt(_reduce.reduce_sum(_ew.square(x), axes, keepdims=keepdims))
    if isinstance(ord, str):
        raise ValueError(f"norm: unsupported ord {ord!r}; use 'euclidean', 'fro', 1, 2 or np.inf")
    if not matrix:
        p = float(ord)
        if not p > 0:
            raise ValueError(
                f"norm: vector ord must be a positive number or np.inf, received {ord!r}")
        ax = _ew.abs(x)
        if p == np.inf:
            return _reduce.reduce_max(ax, axes, keepdims=keepdims)
        if p == 1:
            return _reduce.reduce_sum(ax, axes, keepdims=keepdims)
        s = _reduce.reduce_sum(_ew.pow(ax, p), axes, keepdims=keepdims)
        return _ew.pow(s, 1.0 / p)
    r, c = axes
    if ord == 1 or _is_inf(ord):
        summed, maxed = (r, c) if ord == 1 else (c, r)
        out = _reduce.reduce_max(_reduce.reduce_sum(_ew.abs(x), summed, keepdims=True), maxed,
                                 keepdims=True)
    elif ord == 2:
        rest = [i for i in range(n) if i not in axes]
        xt = _array.transpose(x, rest + [r, c])
        out = _array.getitem(apply(_SVD, xt)[0], (Ellipsis, 0))
        out = _array.reshape(out, tuple(1 if i in axes else d for i, d in enumerate(x.shape)))
    else:
        raise ValueError(f"norm: unsupported matrix ord {ord!r}; use 'euclidean', 'fro', 1, 2 "
                         f"or np.inf")
    if keepdims:
        return out
    return _array.reshape(out, tuple(d for i, d in enumerate(x.shape) if i not in axes))

__all__ = top_level(__name__)
