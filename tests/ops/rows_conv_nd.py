"""Gradient-table rows for layerkit/primitives/conv_nd.py and layerkit/primitives/image.py.

Records: the N-D convolution family (``conv_nd`` and its two backprops; grouped
convolutions reach it through a block-diagonal kernel) and the
linear resampling pairs (``resize``/``resize_backprop``,
``affine_transform``/``affine_transform_backprop``). The resampling ops are linear in
the image, so their rows square the result: the upstream gradient then depends on the
input and the second-order check sees a rule that detaches it. Public composites
(``conv1d``, ``max_pool3d``, ...) get rows under their own names. Max-pool inputs are
distinct values spaced far apart, so no argmax flips during the check.
"""
from __future__ import annotations

import numpy as np

from layerkit._core.op import apply
from layerkit.primitives import conv_nd as N
from layerkit.primitives import image as I

_rng = np.random.default_rng(14)


def _r(*shape) -> np.ndarray:
    return _rng.standard_normal(shape)


def _distinct(*shape) -> np.ndarray:
    n = int(np.prod(shape))
    return (_rng.permutation(n).astype(np.float64) * 0.1 - n * 0.05).reshape(shape)


def _geo(rank, s=1, pads=None, d=1):
    return {"strides": (s,) * rank, "pads": pads or ((0, 0),) * rank, "dilations": (d,) * rank}


_T = np.array([[0.9, -0.3, 1.2, 0.4, 1.1, -0.7, 0, 0], [1.3, 0.2, -2.5, -0.1, 0.8, 3.1, 0, 0]])
_ZOOM = np.array([[0.5, 0, 1.0, 0, 1.5, -0.5, 0, 0]] * 2)


def _sq(t):
    return t * t


ROWS = [
    # ---- conv_nd family (3-D) ----------------------------------------------------------
    {"name": "conv_nd", "args": [_r(1, 4, 3, 4, 4), _r(2, 2, 2, 2, 4)],
     "fn": lambda x, w: N.conv3d(x, w, [1, 2, 1, 2, 1], "SAME")},
    {"name": "conv_nd", "args": [_r(1, 5, 4, 4, 2), _r(2, 1, 2, 2, 3)],
     "fn": lambda x, w: N.conv3d(x, w, 1, "VALID", dilations=[2, 1, 2])},
    {"name": "conv_nd", "args": [_r(1, 3, 4, 3, 4), _r(2, 2, 2, 2, 4)],  # 2 groups
     "fn": lambda x, w: N.conv3d(x, w, 1, "SAME")},
    # ---- grouped 1-D/2-D (block-diagonal kernels through conv2d) ----------------------
    {"name": "conv1d", "args": [_r(2, 6, 4), _r(3, 2, 4)],
     "fn": lambda x, w: N.conv1d(x, w, 2, "SAME")},
    {"name": "convolution", "args": [_r(1, 5, 4, 6), _r(2, 3, 2, 6)],
     "fn": lambda x, w: N.convolution(x, w, 1, [[0, 0], [1, 0], [0, 2], [0, 0]])},
    {"name": "conv_nd_backprop_input", "args": [_r(1, 2, 2, 3, 3), _r(2, 2, 2, 2, 3)],
     "fn": lambda g, w: N.conv3d_transpose(g, w, (1, 4, 3, 5, 2), [2, 2, 2], "SAME")},
    {"name": "conv_nd_backprop_input", "args": [_r(2, 6, 4), _r(3, 2, 4)],
     "fn": lambda g, w: apply(N._ND_BPI, g, w, input_shape=(2, 6, 2),
                              **_geo(1, pads=((1, 1),)))},
    {"name": "conv_nd_backprop_filter", "args": [_r(1, 4, 3, 4, 2), _r(1, 2, 2, 2, 4)],
     "fn": lambda x, g: apply(N._ND_BPF, x, g, filter_shape=(2, 2, 2, 2, 4),
                              **_geo(3, s=2, pads=((0, 0), (0, 1), (0, 0))))},
    # ---- public composites ---------------------------------------------------------
    {"name": "conv1d", "args": [_r(2, 6, 3), _r(3, 3, 2)],
     "fn": lambda x, w: N.conv1d(x, w, 1, "SAME", dilations=2)},
    {"name": "conv1d", "args": [_r(2, 6, 3), _r(2, 1, 6)],  # one channel per group
     "fn": lambda x, w: N.conv1d(x, w, 1, "VALID")},
    {"name": "conv3d", "args": [_r(1, 3, 3, 4, 2), _r(2, 2, 2, 2, 2)],
     "fn": lambda x, w: N.conv3d(x, w, 1, "SAME")},
    {"name": "convolution", "args": [_r(1, 5, 5, 4), _r(2, 2, 1, 4)],
     "fn": lambda x, w: N.convolution(x, w, 2, "SAME")},
    {"name": "conv1d_transpose", "args": [_r(2, 3, 2), _r(3, 3, 2)],
     "fn": lambda g, w: N.conv1d_transpose(g, w, (2, 6, 3), 2, "SAME")},
    {"name": "conv3d_transpose", "args": [_r(1, 2, 2, 2, 2), _r(2, 2, 2, 1, 2)],
     "fn": lambda g, w: N.conv3d_transpose(g, w, (1, 3, 3, 3, 1), 1, "VALID")},
    {"name": "conv_transpose", "args": [_r(1, 3, 3, 2), _r(3, 3, 1, 2)],
     "fn": lambda g, w: N.conv_transpose(g, w, (1, 5, 6, 1), 2, "SAME")},
    {"name": "separable_conv2d", "args": [_r(1, 5, 5, 2), _r(3, 3, 2, 2), _r(1, 1, 4, 3)],
     "fn": lambda x, d, p: N.separable_conv2d(x, d, p, [1, 2, 2, 1], "SAME")},
    {"name": "max_pool1d", "args": [_distinct(2, 7, 2)],
     "fn": lambda x: N.max_pool1d(x, 3, 2, "SAME")},
    {"name": "avg_pool1d", "args": [_r(2, 7, 2)],
     "fn": lambda x: N.avg_pool1d(x, 3, 2, "SAME")},
    {"name": "max_pool3d", "args": [_distinct(1, 3, 4, 5, 2)],
     "fn": lambda x: N.max_pool3d(x, [2, 2, 2], [1, 2, 1], "SAME")},
    {"name": "avg_pool3d", "args": [_r(1, 3, 4, 5, 2)],
     "fn": lambda x: N.avg_pool3d(x, [2, 3, 2], [2, 1, 2], "SAME")},
    {"name": "max_pool", "args": [_distinct(1, 4, 4, 2)],
     "fn": lambda x: N.max_pool(x, 2, 2, "VALID")},
    {"name": "avg_pool", "args": [_r(1, 5, 3)],
     "fn": lambda x: N.avg_pool(x, 2, 1, "VALID")},
    {"name": "pool", "args": [_distinct(1, 3, 4, 3, 1)],
     "fn": lambda x: N.pool(x, [2, 2, 2], "MAX", strides=[1, 2, 1], padding="SAME")},
    # ---- resize (bilinear up/down, antialiased, nearest) -------------------------------
    {"name": "resize", "args": [_r(2, 4, 5, 2)],
     "fn": lambda x: _sq(I.resize(x, (7, 9), "bilinear"))},
    {"name": "resize", "args": [_r(1, 6, 7, 2)],
     "fn": lambda x: _sq(I.resize(x, (3, 2), "bilinear", antialias=True))},
    {"name": "resize", "args": [_r(1, 4, 5, 2)],
     "fn": lambda x: _sq(I.resize(x, (6, 3), "nearest"))},
    {"name": "resize_backprop", "args": [_r(2, 7, 3, 2)],
     "fn": lambda g: _sq(apply(I._RESIZE_GRAD, g, input_shape=(2, 4, 5, 2),
                               method="bilinear", antialias=False))},
    {"name": "resize_backprop", "args": [_r(1, 2, 3, 1)],
     "fn": lambda g: _sq(apply(I._RESIZE_GRAD, g, input_shape=(1, 5, 4, 1),
                               method="bilinear", antialias=True))},
    # ---- affine_transform (each fill mode; both interpolations) -------------------------
    {"name": "affine_transform", "args": [_r(2, 4, 5, 2)],
     "fn": lambda x: _sq(I.affine_transform(x, _T, "bilinear", "constant", 0.5))},
    {"name": "affine_transform", "args": [_r(2, 4, 5, 2)],
     "fn": lambda x: _sq(I.affine_transform(x, _T, "bilinear", "reflect"))},
    {"name": "affine_transform", "args": [_r(2, 4, 5, 2)],
     "fn": lambda x: _sq(I.affine_transform(x, _ZOOM, "nearest", "wrap"))},
    {"name": "affine_transform_backprop", "args": [_r(2, 4, 5, 2)],
     "fn": lambda g: _sq(apply(I._AFFINE_GRAD, g, _T, image_shape=(2, 4, 5, 2),
                               interpolation="bilinear", fill_mode="nearest"))},
    {"name": "affine_transform_backprop", "args": [_r(2, 4, 5, 2)],
     "fn": lambda g: _sq(apply(I._AFFINE_GRAD, g, _T, image_shape=(2, 4, 5, 2),
                               interpolation="bilinear", fill_mode="mirror"))},
]
