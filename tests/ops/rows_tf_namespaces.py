"""Gradient-table rows for the lk.math / lk.linalg / top-level TF ops (records and
composites): inverse trig and hyperbolic functions, atan2, sort/top_k, segment
reductions, scatters, roll, repeat and the linalg decompositions.

Rows cube their outputs (as in rows_reduce_array_linalg) so the second-order check also
differentiates each rule with respect to its upstream gradient. Decomposition rows use
sign-invariant functions of eigen/singular vectors and well-conditioned inputs.
"""
from __future__ import annotations

import numpy as np

import layerkit as lk
from layerkit._core.op import apply
from layerkit.primitives import sorting as S
from tests.ops.rows_reduce_array_linalg import _row

_rng = np.random.default_rng(20261203)


def _n(*shape):
    return _rng.standard_normal(shape)


def _u(lo, hi, *shape):
    return _rng.uniform(lo, hi, shape)


def _away(*shape):
    return _rng.uniform(0.5, 1.5, shape) * _rng.choice([-1.0, 1.0], shape)


def _spd(n, batch=()):
    a = _rng.standard_normal(batch + (n, n))
    return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)


def _well(n, batch=()):
    return _rng.standard_normal(batch + (n, n)) + 3 * np.eye(n)


_IDS = np.array([0, 0, 1, 3, 3, 3])        # sorted, segment 2 empty
_UIDS = np.array([2, 0, 2, 1, 0])
_ND = np.array([[1], [3], [1]])             # repeated index: updates add up

ROWS = [
    # ---- elementwise records ---------------------------------------------------------
    _row("reciprocal", lk.math.reciprocal, _away(2, 3)),
    _row("asin", lk.math.asin, _u(-0.8, 0.8, 2, 3)),
    _row("acos", lk.math.acos, _u(-0.8, 0.8, 2, 3)),
    _row("atan", lk.math.atan, _n(2, 3)),
    _row("sinh", lk.math.sinh, _u(-2, 2, 2, 3)),
    _row("cosh", lk.math.cosh, _u(-2, 2, 2, 3)),
    _row("asinh", lk.math.asinh, _n(2, 3)),
    _row("acosh", lk.math.acosh, _u(1.3, 3, 2, 3)),
    _row("atanh", lk.math.atanh, _u(-0.8, 0.8, 2, 3)),
    _row("atan2", lk.math.atan2, _away(2, 3), _away(3)),
    # ---- compositions ------------------------------------------------------------------
    _row("squared_difference", lk.math.squared_difference, _n(2, 3), _n(3)),
    _row("divide_no_nan", lk.math.divide_no_nan, _n(2, 3), _away(2, 3)),
    _row("xlogy", lk.math.xlogy, _away(2, 3), _u(0.5, 2, 2, 3)),
    _row("log_sigmoid", lk.math.log_sigmoid, _n(2, 3)),
    _row("softsign", lk.nn.softsign, _away(2, 3)),
    _row("reduce_euclidean_norm", lambda x: lk.math.reduce_euclidean_norm(x, axis=1), _n(2, 3)),
    _row("clip_by_norm", lambda x: lk.clip_by_norm(x, 0.5, axes=[1]), _n(3, 4)),
    _row("clip_by_global_norm", lambda x, y: lk.clip_by_global_norm([x, y], 0.5)[0],
         _n(3), _n(2, 2)),
    _row("bias_add", lk.nn.bias_add, _n(2, 3), _n(3)),
    _row("crelu", lk.nn.crelu, _away(2, 3)),
    _row("embedding_lookup", lambda p: lk.nn.embedding_lookup(p * p, np.array([2, 0, 2])),
         _n(3, 2)),
    _row("top_k", lambda x: lk.nn.top_k(x * x, k=3).values, _n(2, 4)),
    _row("l2_loss", lk.nn.l2_loss, _n(2, 3)),
    _row("log_poisson_loss",
         lambda c: lk.nn.log_poisson_loss(np.array([0.0, 2.0, 3.0]), c, compute_full_loss=True),
         _n(3)),
    _row("weighted_cross_entropy_with_logits",
         lambda x: lk.nn.weighted_cross_entropy_with_logits(np.array([0.0, 1.0, 1.0]), x, 2.0),
         _n(3)),
    # ---- sorting: take_along_axis pair --------------------------------------------------
    _row("take_along_axis", lambda x: lk.sort(x * x), _n(3, 4)),
    _row("take_along_axis", lambda x: lk.sort(x, axis=0, direction="DESCENDING"), _n(3, 4)),
    _row("take_along_axis", lambda x: lk.math.top_k(x, k=2).values, _n(2, 5)),
    _row("take_along_axis_grad",
         lambda g: apply(S._TAKE_ALONG_GRAD, g * g, np.array([[2, 0], [1, 1]]), shape=(2, 3),
                         axis=1), _n(2, 2)),
    # ---- segments ----------------------------------------------------------------------
    _row("segment_sum", lambda x: lk.math.segment_sum(x * x, _IDS), _n(6, 2)),
    _row("segment_mean", lambda x: lk.math.segment_mean(x, _IDS), _n(6, 2)),
    _row("unsorted_segment_sqrt_n", lambda x: lk.math.unsorted_segment_sqrt_n(x, _UIDS, 3),
         _n(5)),
    _row("unsorted_segment_max", lambda x: lk.math.unsorted_segment_max(x, _UIDS, 3), _n(5, 2)),
    _row("unsorted_segment_max", lambda x: lk.math.segment_max(x, _IDS), _n(6)),
    _row("unsorted_segment_min", lambda x: lk.math.unsorted_segment_min(x, _UIDS, 3), _n(5, 2)),
    _row("unsorted_segment_prod", lambda x: lk.math.unsorted_segment_prod(x, _UIDS, 3),
         _away(5, 2)),
    _row("unsorted_segment_prod", lambda x: lk.math.segment_prod(x, _IDS), _away(6)),
    # ---- placement ---------------------------------------------------------------------
    _row("scatter_nd", lambda u: lk.scatter_nd(_ND, u * u, [5, 2]), _n(3, 2)),
    _row("tensor_scatter_nd_add", lambda t, u: lk.tensor_scatter_nd_add(t, _ND, u),
         _n(5, 2), _n(3, 2)),
    _row("tensor_scatter_nd_update",
         lambda t, u: lk.tensor_scatter_nd_update(t * t, np.array([[0], [3]]), u * t[:2]),
         _n(5, 2), _n(2, 2)),
    _row("boolean_mask", lambda x: lk.boolean_mask(x * x, np.array([True, False, True])),
         _n(3, 2)),
    _row("roll", lambda x: lk.roll(x * x, [1, -2], [0, 1]), _n(3, 4)),
    _row("repeat", lambda x: lk.repeat(x * x, [2, 0, 3], axis=0), _n(3, 2)),
    _row("identity", lambda x: lk.identity(x * x), _n(2, 3)),
    _row("meshgrid", lambda x, y: lk.meshgrid(x, y * y), _n(3), _n(2)),
    # ---- linalg records ----------------------------------------------------------------
    _row("inv", lk.linalg.inv, _well(3)),
    _row("inv", lambda a: lk.linalg.inv(a, adjoint=True), _well(2, (2,))),
    _row("solve", lk.linalg.solve, _well(3), _n(3, 2)),
    _row("solve", lambda a, b: lk.linalg.solve(a, b, adjoint=True), _well(3, (2,)), _n(2, 3, 1)),
    _row("det", lk.linalg.det, _well(3)),
    _row("det", lk.linalg.det, _well(2, (3,))),
    _row("slogdet", lambda a: lk.linalg.slogdet(a)[1], _well(3)),
    _row("cholesky", lambda a: lk.linalg.cholesky(a @ lk.linalg.matrix_transpose(a)),
         _well(3)),
    _row("cholesky", lambda a: lk.linalg.cholesky(a + lk.linalg.matrix_transpose(a)),
         _spd(3, (2,))),
    _row("qr", lambda a: list(lk.linalg.qr(a)), _n(4, 3)),
    _row("qr", lambda a: list(lk.linalg.qr(a)), _well(3)),
    # eigh reads the lower triangle: feed a symmetric matrix built from the input.
    _row("eigh", lambda a: lk.linalg.eigh(a + lk.linalg.matrix_transpose(a))[0], _spd(3)),
    _row("eigh", lambda a: [v * v for v in lk.linalg.eigh(a + lk.linalg.matrix_transpose(a))],
         _spd(3)),
    _row("eigh", lambda a: lk.linalg.eigh(a)[1] * lk.linalg.eigh(a)[1], _spd(3)),
    _row("svd", lambda a: lk.linalg.svd(a, compute_uv=False), _n(4, 3)),
    _row("cross", lk.linalg.cross, _n(2, 3), _n(2, 3)),
    # ---- linalg compositions -----------------------------------------------------------
    # Cholesky reads one triangle and its rule is symmetric (TF's): feed symmetric input.
    _row("logdet", lambda a: lk.linalg.logdet(a + lk.linalg.matrix_transpose(a)), _spd(3)),
    _row("trace", lk.linalg.trace, _n(2, 3, 3)),
    _row("diag_part", lambda x: lk.linalg.diag_part(x * x), _n(3, 4)),
    _row("diag", lk.linalg.diag, _n(2, 3)),
    _row("band_part", lambda x: lk.linalg.band_part(x, 1, 0), _n(3, 4)),
    _row("matvec", lk.linalg.matvec, _n(3, 2), _n(2)),
    _row("triangular_solve", lambda a, b: lk.linalg.triangular_solve(a, b, lower=False),
         _well(3), _n(3, 1)),
    _row("pinv", lk.linalg.pinv, _n(4, 3)),
    _row("lstsq", lambda a, b: lk.linalg.lstsq(a, b, l2_regularizer=0.1), _n(4, 3), _n(4, 2)),
    _row("set_diag", lk.linalg.set_diag, _n(3, 3), _n(3)),
    _row("normalize", lambda x: list(lk.linalg.normalize(x, axis=1)), _n(2, 3)),
    _row("cholesky_solve", lambda a, b: lk.linalg.cholesky_solve(a, b),
         np.linalg.cholesky(_spd(3)), _n(3, 2)),
    _row("atrous_conv2d", lambda x, k: lk.nn.atrous_conv2d(x, k, rate=2, padding="SAME"),
         _n(1, 5, 5, 2), _n(2, 2, 2, 3)),
    _row("lrn", lambda x: lk.nn.lrn(x, depth_radius=1) * x, _n(2, 4)),
    _row("local_response_normalization",
         lambda x: lk.nn.local_response_normalization(x, depth_radius=2, bias=1.5, alpha=0.3,
                                                      beta=0.75), _n(2, 3, 6)),
    # ---- rearranging ops (primitives/rearrange.py) ----------------------------------------
    _row("space_to_depth", lambda x: lk.nn.space_to_depth(x * x, 2), _n(2, 4, 6, 3)),
    _row("space_to_depth", lambda x: lk.nn.space_to_depth(x, 2, data_format="NCHW") ** 2,
         _n(1, 3, 4, 2)),
    _row("depth_to_space", lambda x: lk.nn.depth_to_space(x * x, 2), _n(2, 2, 3, 8)),
    _row("strided_slice", lambda x: lk.strided_slice(x * x, [1, 0], [4, 3], [2, 2],
                                                     end_mask=2), _n(5, 4)),
    _row("strided_slice", lambda x: lk.strided_slice(x, [1, 0], [2, 3], shrink_axis_mask=1)
         ** 3, _n(3, 4)),
    # unique indices, so no ties: the max/min is where the record's rule sends the gradient
    _row("tensor_scatter_nd_extreme",
         lambda t, u: lk.tensor_scatter_nd_max(t, [[0], [2], [3]], u) ** 2, _n(5), _n(3)),
    _row("tensor_scatter_nd_extreme",
         lambda t, u: lk.tensor_scatter_nd_min(t * t, [[1, 0], [0, 2]], u) ** 2, _n(2, 3),
         _n(2)),
]
