"""Gradient-table rows for the reduction, shape/indexing and linear-algebra records.

Each row: ``name`` (the ``Op.name`` of the record it exercises), ``fn`` (a function of
Tensors), ``args`` (float64 arrays) and ``order`` (checked with
``layerkit.autodiff.check.check_grads``). Indices are captured in the lambdas. Inputs of
max/min rows have no ties; inputs of cumprod/prod rows stay away from zero (cumprod's
rule divides). Outputs are cubed (see ``_row``).
"""
from __future__ import annotations

import numpy as np

import layerkit as lk
from layerkit._core.op import apply
from layerkit.primitives import array as A
from layerkit.primitives import linalg as L

_rng = np.random.default_rng(20261120)


def _n(*shape):
    return _rng.standard_normal(shape)


def _away(*shape):
    # |x| in [0.5, 1.5] with random signs: safe for rules that divide by x.
    return _rng.uniform(0.5, 1.5, shape) * _rng.choice([-1.0, 1.0], shape)


def _row(name, fn, *args, order=2):
    # Cube the outputs: the upstream gradient then depends on the inputs, so the
    # second-order check also differentiates each rule with respect to its upstream
    # gradient (a linear read-out would only exercise the dependence on the inputs; a
    # square would cancel the sqrt of norm/std rows).
    def cubed(*xs):
        out = fn(*xs)
        if isinstance(out, (list, tuple)):
            return [o * lk.square(o) for o in out]
        return out * lk.square(out)

    return {"name": name, "fn": cubed, "args": list(args), "order": order}


def _rank1(s, u, v):
    return lk.matmul(A.getitem(u, (Ellipsis, slice(0, 1))), A.getitem(v, (Ellipsis, slice(0, 1))),
                     transpose_b=True)


def _projectors(s, u, v):
    return [lk.matmul(u, u, transpose_b=True), lk.matmul(v, v, transpose_b=True)]


_IDX_REP = np.array([2, 0, 2, 1])             # repeated index: gradients must add up
_IDX_MANY = np.random.default_rng(3).integers(0, 5, 70)
_IDX_2D = np.array([[0, 3], [3, 3], [1, 0]])
_MASK = np.array([[True, False, True, True], [False, False, True, False],
                  [True, True, False, False]])

ROWS = [
    # ---- reductions ----------------------------------------------------------------
    _row("reduce_sum", lambda x: lk.reduce_sum(x), _n(3, 4)),
    _row("reduce_sum", lambda x: lk.reduce_sum(x, axis=1), _n(3, 4)),
    _row("reduce_sum", lambda x: lk.reduce_sum(x, axis=(0, 2), keepdims=True), _n(2, 3, 4)),
    _row("reduce_sum", lambda x: lk.reduce_sum(x * x, axis=-1), _n(2, 3)),
    _row("reduce_mean", lambda x: lk.reduce_mean(x), _rng.uniform(0.5, 1.5, (3, 4))),
    _row("reduce_mean", lambda x: lk.reduce_mean(x * x, axis=[-1], keepdims=True), _n(2, 3, 4)),
    _row("reduce_max", lambda x: lk.reduce_max(x * x, axis=0), _n(3, 4)),
    _row("reduce_max", lambda x: lk.reduce_max(x), _n(2, 3, 2)),
    _row("reduce_max", lambda x: lk.reduce_max(x, axis=(0, 2), keepdims=True), _n(2, 3, 2)),
    _row("reduce_min", lambda x: lk.reduce_min(x * x, axis=-1), _n(3, 4)),
    _row("reduce_min", lambda x: lk.reduce_min(x, axis=1, keepdims=True), _n(3, 4)),
    _row("reduce_prod", lambda x: lk.reduce_prod(x), _away(2, 3)),
    _row("reduce_prod", lambda x: lk.reduce_prod(x, axis=1, keepdims=True), _away(3, 4)),
    _row("reduce_prod", lambda x: lk.reduce_prod(x, axis=(0, 2)), _away(2, 3, 2)),
    _row("reduce_logsumexp", lambda x: lk.reduce_logsumexp(x, axis=-1), _n(3, 4)),
    _row("reduce_logsumexp", lambda x: lk.reduce_logsumexp(x), _n(2, 3)),
    _row("reduce_logsumexp", lambda x: lk.reduce_logsumexp(x, axis=(0, 1), keepdims=True),
         _n(2, 3, 2)),
    _row("reduce_mean", lambda x: lk.reduce_variance(x, axis=0), _n(4, 3)),
    _row("reduce_mean", lambda x: lk.reduce_std(x, axis=-1, keepdims=True), _n(3, 5)),
    _row("cumsum", lambda x: lk.cumsum(x * x, axis=0), _n(4, 3)),
    _row("cumsum", lambda x: lk.cumsum(x * x, axis=1, exclusive=True, reverse=True), _n(3, 4)),
    _row("cumprod", lambda x: lk.cumprod(x, axis=1), _away(3, 4)),
    _row("cumprod", lambda x: lk.cumprod(x, axis=0, exclusive=True), _away(4, 2)),
    _row("cumprod", lambda x: lk.cumprod(x, axis=-1, reverse=True), _away(2, 4)),
    _row("cumprod", lambda x: lk.cumprod(x, axis=0, exclusive=True, reverse=True), _away(4, 2)),
    # ---- shape ----------------------------------------------------------------------
    _row("reshape", lambda x: lk.reshape(x * x, (-1,)), _n(2, 3)),
    _row("reshape", lambda x: lk.reshape(x * x, (3, -1, 2)), _n(2, 3, 2)),
    _row("reshape", lambda x: lk.expand_dims(x * x, -1), _n(2, 3)),
    _row("reshape", lambda x: lk.squeeze(x * x, axis=1), _n(2, 1, 3)),
    _row("broadcast_to", lambda x: lk.broadcast_to(x * x, (2, 3, 4)), _n(3, 1)),
    _row("transpose", lambda x: lk.transpose(x * x), _n(2, 3)),
    _row("transpose", lambda x: lk.transpose(x * x, (1, 2, 0)), _n(2, 3, 4)),
    _row("concat", lambda x, y: lk.concat([x * A.getitem(y, (slice(None), slice(0, 1))), y * y],
                                          axis=1), _n(3, 2), _n(3, 4)),
    _row("concat", lambda x, y, z: lk.concat([x * x, y, z * A.getitem(x, slice(0, 1))], axis=0),
         _n(2, 3), _n(1, 3), _n(3, 3)),
    _row("stack", lambda x, y: lk.stack([x * y, y * y], axis=0), _n(2, 3), _n(2, 3)),
    _row("stack", lambda x, y: lk.stack([x * y, y], axis=-1), _n(2, 3), _n(2, 3)),
    _row("unstack", lambda x: [t * t for t in lk.unstack(x, axis=1)], _n(2, 3)),
    _row("unstack", lambda x: lk.unstack(x * x)[1], _n(3, 2)),
    _row("split", lambda x: [t * t for t in lk.split(x, 3, axis=1)], _n(2, 6)),
    _row("split", lambda x: lk.split(x * x, [1, -1], axis=0)[1], _n(4, 2)),
    _row("tile", lambda x: lk.tile(x * x, (2, 1, 3)), _n(2, 3, 1)),
    _row("pad", lambda x: lk.pad(x * x, [[1, 2], [0, 1]]), _n(2, 3)),
    _row("pad", lambda x: lk.pad(x * x, [[2, 1], [1, 2]], mode="REFLECT"), _n(3, 4)),
    _row("pad", lambda x: lk.pad(x * x, [[1, 2], [3, 0]], mode="symmetric"), _n(2, 3)),
    _row("pad_grad", lambda g: apply(A._PAD_GRAD, g * g, paddings=((2, 1), (1, 2)),
                                     mode="REFLECT", shape=(3, 4)), _n(6, 7)),
    # ---- gather ---------------------------------------------------------------------
    _row("gather", lambda x: lk.gather(x * x, _IDX_REP), _n(3, 2)),
    _row("gather", lambda x: lk.gather(x * x, _IDX_2D, axis=1), _n(2, 4)),
    _row("gather", lambda x: lk.gather(x * x, _IDX_2D, axis=1, batch_dims=1), _n(3, 4)),
    _row("gather", lambda x: lk.gather(x * x, _IDX_2D[:, :1] % 2, axis=2, batch_dims=1),
         _n(3, 2, 2, 2)),
    # >= 64 indices into rows of >= 32 elements: the sort-and-sum scatter path.
    _row("gather", lambda x: lk.gather(x, _IDX_MANY), _n(5, 4, 8)),
    _row("gather_grad", lambda g: apply(A._GATHER_GRAD, g * g, _IDX_MANY, shape=(5, 4, 8),
                                        axis=0, batch_dims=0), _n(70, 4, 8)),
    _row("gather_grad", lambda g: apply(A._GATHER_GRAD, g * g, _IDX_REP, shape=(3, 2), axis=0,
                                        batch_dims=0), _n(4, 2)),
    _row("gather_nd", lambda x: lk.gather_nd(x * x, np.array([[0, 1], [2, 0], [0, 1]])),
         _n(3, 2, 2)),
    _row("gather_nd", lambda x: lk.gather_nd(x * x, np.array([[[1], [1]], [[0], [2]]]),
                                             batch_dims=1), _n(2, 3, 2)),
    _row("gather_nd_grad", lambda g: apply(A._GATHER_ND_GRAD, g * g, np.array([[0], [2], [0]]),
                                           shape=(3, 2), batch_dims=0), _n(3, 2)),
    # ---- indexing -------------------------------------------------------------------
    _row("getitem", lambda x: A.getitem(x * x, 1), _n(3, 4)),
    _row("getitem", lambda x: A.getitem(x * x, (slice(None), slice(1, 3))), _n(3, 4)),
    _row("getitem", lambda x: A.getitem(x * x, (slice(None, None, -2), slice(3, 0, -1))), _n(5, 4)),
    _row("getitem", lambda x: A.getitem(x * x, (None, ..., 1, None)), _n(2, 3, 4)),
    _row("getitem", lambda x: A.getitem(x * x, [0, 2, 0, 0]), _n(3, 2)),
    _row("getitem", lambda x: A.getitem(x * x, (slice(1, None), [3, 3, 0])), _n(3, 4)),
    _row("getitem", lambda x: A.getitem(x * x, _MASK), _n(3, 4)),
    _row("getitem", lambda x: A.getitem(x * x, lk.constant(np.array([True, False, True]))),
         _n(3, 2)),
    _row("getitem", lambda x: A.getitem(x * x, lk.constant(np.array([[1, 1], [0, 2]]))), _n(3, 2)),
    _row("getitem", lambda x: lk.slice(x * x, [1, 0], [-1, 2]), _n(3, 4)),
    _row("getitem", lambda x: lk.reverse(x * x, [0, -1]), _n(3, 4)),
    _row("getitem_grad", lambda g: apply(A._GETITEM_GRAD, g * g, key=(("s", None, None, -2),),
                                         shape=(5, 2)), _n(3, 2)),
    _row("getitem_grad", lambda g: apply(A._GETITEM_GRAD, g * g, np.array([1, 1, 0]),
                                         key=(("a", 0),), shape=(3, 2)), _n(3, 2)),
    # ---- linear algebra -------------------------------------------------------------
    _row("matmul", lambda a, b: lk.matmul(a, b), _n(3, 4), _n(4, 2)),
    _row("matmul", lambda a, b: lk.matmul(a, b, transpose_a=True), _n(4, 3), _n(4, 2)),
    _row("matmul", lambda a, b: lk.matmul(a, b, transpose_b=True), _n(3, 4), _n(2, 4)),
    _row("matmul", lambda a, b: lk.matmul(a, b, transpose_a=True, transpose_b=True),
         _n(4, 3), _n(2, 4)),
    _row("matmul", lambda a, b: lk.matmul(a, b), _n(2, 1, 3, 4), _n(5, 4, 2)),
    _row("matmul", lambda a, b: lk.matmul(a, b, transpose_b=True), _n(3, 4), _n(2, 5, 4)),
    _row("matmul", lambda a, b: lk.matmul(a, b), _n(4), _n(2, 4, 3)),
    _row("matmul", lambda a, b: lk.matmul(a, b), _n(2, 3, 4), _n(4)),
    _row("matmul", lambda a, b: lk.matmul(a, b), _n(4), _n(4)),
    _row("fused_matmul", lambda x, w, b: L.fused_matmul(x, w, b, "relu"), _n(5, 3), _n(3, 4),
         _n(4)),
    _row("fused_matmul", lambda x, w: L.fused_matmul(x, w), _n(2, 3), _n(3, 2)),
    _row("tensordot", lambda a, b: lk.tensordot(a, b, 1), _n(2, 3), _n(3, 4)),
    _row("tensordot", lambda a, b: lk.tensordot(a, b, [[0, 2], [2, 0]]), _n(2, 3, 4),
         _n(4, 5, 2)),
    _row("tensordot", lambda a, b: lk.tensordot(a, b, 0), _n(2), _n(3)),
    _row("einsum", lambda a, b: lk.einsum("ij,jk->ik", a, b), _n(2, 3), _n(3, 4)),
    _row("einsum", lambda a, b: lk.einsum("bij,bkj->bik", a, b), _n(2, 2, 3), _n(2, 4, 3)),
    _row("einsum", lambda a: lk.einsum("ij->", a * a), _n(2, 3)),
    _row("einsum", lambda a: lk.einsum("ijk->kj", a), _n(2, 3, 4)),
    _row("einsum", lambda a, b: lk.einsum("i,i", a, b), _n(3), _n(3)),
    _row("einsum", lambda a, b: lk.einsum("...ij,jk", a, b), _n(2, 2, 3), _n(3, 2)),
    _row("einsum", lambda a, b: lk.einsum("ij,ij->i", a, b), _n(2, 3), _n(1, 3)),
    _row("einsum", lambda a, b: lk.einsum("ij,kj->ik", a, b), _n(2, 3), _n(4, 1)),
    _row("einsum", lambda a, b, c: lk.einsum("ij,jk,kl->il", a, b, c), _n(2, 3), _n(3, 2),
         _n(2, 2)),
    # ---- norms (composites, plus the spectral-norm record: first order only) -------
    _row("reduce_sum", lambda x: lk.norm(x), _n(3, 4)),
    _row("reduce_sum", lambda x: lk.norm(x, axis=1, keepdims=True), _n(3, 4)),
    _row("reduce_sum", lambda x: lk.norm(x, ord=1, axis=-1), _away(2, 3)),
    _row("reduce_max", lambda x: lk.norm(x, ord=np.inf, axis=0), _n(3, 2)),
    _row("reduce_sum", lambda x: lk.norm(x, ord=1.5, axis=0), _away(3, 2)),
    _row("reduce_max", lambda x: lk.norm(x, ord=1, axis=(0, 1)), _away(3, 2)),
    _row("reduce_max", lambda x: lk.norm(x, ord=np.inf, axis=(1, 2), keepdims=True),
         _away(2, 3, 2)),
    _row("reduce_sum", lambda x: lk.norm(x, ord="fro", axis=(0, 1)), _n(3, 2)),
    _row("svd", lambda x: lk.norm(x, ord=2, axis=(-2, -1)), _n(2, 3, 2)),
    _row("svd", lambda x: lk.norm(x, ord=2, axis=(1, 0)), _n(3, 4)),
    _row("svd", lambda x: apply(L._SVD, x)[0], _n(4, 3)),
    _row("svd", lambda x: apply(L._SVD, x)[0], _n(2, 5)),
    # Sign-invariant functions of the singular vectors (u_i, v_i flip together).
    _row("svd", lambda x: _rank1(*apply(L._SVD, x)), _n(4, 3)),
    _row("svd", lambda x: _rank1(*apply(L._SVD, x)), _n(2, 3, 5)),
    _row("svd", lambda x: _projectors(*apply(L._SVD, x)), _n(4, 2)),
    _row("svd", lambda x: _projectors(*apply(L._SVD, x)), _n(2, 4)),
    _row("matmul", lambda x: L.matmul(x, x, transpose_b=True), _n(3, 2)),
]

# Records a graph traced with None dimensions uses instead of trace-time shapes (the
# shape-taking input is a constant here: only the first input is differentiated).
from layerkit.primitives import reduce as _R  # noqa: E402

ROWS += [
    _row("reshape_like", lambda x: apply(A._RESHAPE_LIKE, x, np.zeros((4, 3))), _n(3, 4)),
    _row("expand_dims", lambda x: apply(A._EXPAND_DIMS, x, axis=1), _n(3, 4)),
    _row("reshape_dynamic", lambda x: apply(A._RESHAPE_DYN, x, np.array([2, 6])), _n(3, 4)),
    _row("reduce_grad", lambda g: apply(_R._SPREAD, g, np.zeros((3, 4)), axis=(1,),
                                        keepdims=False, mean=True), _n(3)),
    _row("reduce_grad", lambda g: apply(_R._SPREAD, g, np.zeros((2, 3)), axis=None,
                                        keepdims=False, mean=False), _n()),
    _row("reduce_grad", lambda g: apply(_R._SPREAD, g, np.zeros((2, 3, 4)), axis=(0, 2),
                                        keepdims=True, mean=True), _n(1, 3, 1)),
]
