"""Gradient-table rows for layerkit/primitives/conv.py: one or more rows per differentiable record.

Each row: ``{"name": <Op.name>, "fn": f(*Tensors), "args": [float64 arrays], "order": 2}``
for ``layerkit.autodiff.check.check_grads(row["fn"], row["args"], order=row["order"])``.
Sizes are tiny; max-pool inputs are distinct values spaced far more than the
finite-difference step apart, so no window's argmax flips during the check.
"""
from __future__ import annotations

import numpy as np

from layerkit._core.op import apply, wrap
from layerkit.primitives import conv as C

_rng = np.random.default_rng(7)


def _r(*shape) -> np.ndarray:
    return _rng.standard_normal(shape)


def _distinct(*shape) -> np.ndarray:
    # A random permutation of well-separated values: no ties in any pooling window.
    n = int(np.prod(shape))
    return (_rng.permutation(n).astype(np.float64) * 0.1 - n * 0.05).reshape(shape)


_EXPLICIT = [[0, 0], [1, 0], [0, 2], [0, 0]]


def _bpf_from_patches(fshape, strides, pads, dilations):
    """conv2d_backprop_filter_from_patches(x, cols, g) as a function of (x, g), with
    ``cols`` taken from fused_conv2d(x, 0) as the Conv2D layer's traced vjp does."""
    geo = {"strides": strides, "pads": pads, "dilations": dilations}

    def fn(x, g):
        w = wrap(np.zeros(fshape, x.dtype))
        cols = apply(C._FUSED_CONV, x, w, activation="linear", **geo)[1]
        return apply(C._CONV_BPF_COLS, x, cols, g, filter_shape=fshape, **geo)

    return fn

def _bpf_bias_from_patches(fshape, strides, pads, dilations):
    """conv2d_backprop_filter_and_bias_from_patches(x, cols, g) as a function of (x, g)
    (patches with a ones column: fused_conv2d with a bias); both outputs folded into one
    tensor, dw + db broadcast over the kernel."""
    geo = {"strides": strides, "pads": pads, "dilations": dilations}

    def fn(x, g):
        w = wrap(np.zeros(fshape, x.dtype))
        b = wrap(np.zeros(fshape[3], x.dtype))
        cols = apply(C._FUSED_CONV, x, w, b, activation="linear", **geo)[1]
        dw, db = apply(C._CONV_BPF_BIAS_COLS, x, cols, g, filter_shape=fshape, **geo)
        return dw * (db * db + 1.0)

    return fn


ROWS = [
    # ---- conv2d and its backprops --------------------------------------------------
    {"name": "conv2d", "order": 2, "args": [_r(2, 5, 5, 2), _r(3, 3, 2, 3)],
     "fn": lambda x, w: C.conv2d(x, w, strides=1, padding="SAME")},
    {"name": "conv2d", "order": 2, "args": [_r(1, 6, 5, 2), _r(2, 3, 2, 2)],
     "fn": lambda x, w: C.conv2d(x, w, strides=2, padding=_EXPLICIT)},
    {"name": "conv2d", "order": 2, "args": [_r(1, 5, 4, 4), _r(2, 2, 4, 2)],
     "fn": lambda x, w: C.conv2d(x, w, strides=[1, 2], padding="SAME")},
    {"name": "conv2d", "order": 2, "args": [_r(1, 6, 6, 1), _r(2, 2, 1, 2)],
     "fn": lambda x, w: C.conv2d(x, w, strides=1, padding="VALID", dilations=2)},
    {"name": "conv2d_backprop_input", "order": 2, "args": [_r(2, 3, 3, 3), _r(3, 3, 2, 3)],
     "fn": lambda g, w: C.conv2d_backprop_input((2, 5, 5, 2), w, g, strides=2,
                                                padding="SAME")},
    {"name": "conv2d_backprop_filter", "order": 2, "args": [_r(2, 5, 4, 2), _r(2, 3, 2, 3)],
     "fn": lambda x, g: C.conv2d_backprop_filter(x, (3, 3, 2, 3), g, strides=2,
                                                 padding="SAME")},
    {"name": "conv2d_backprop_input", "order": 2, "args": [_r(1, 4, 4, 2), _r(3, 3, 2, 2)],
     "fn": lambda g, w: C.conv2d_transpose(g, w, (1, 4, 4, 2), strides=1, padding="SAME")},
    # ---- fused_conv2d (conv + bias + activation, the Conv2D layer's record) -------------
    {"name": "fused_conv2d", "order": 2, "args": [_r(2, 5, 5, 2), _r(3, 3, 2, 3), _r(3)],
     "fn": lambda x, w, b: C.fused_conv2d(x, w, b, strides=1, padding="SAME",
                                          activation="relu")},
    {"name": "fused_conv2d", "order": 2, "args": [_r(1, 6, 5, 4), _r(2, 3, 4, 2)],
     "fn": lambda x, w: C.fused_conv2d(x, w, None, strides=2, padding=_EXPLICIT)},
    {"name": "fused_conv2d", "order": 2, "args": [_r(1, 6, 6, 1), _r(2, 2, 1, 2), _r(2)],
     "fn": lambda x, w, b: C.fused_conv2d(x, w, b, strides=1, padding="VALID", dilations=2)},
    # ---- the filter gradient from fused_conv2d's patches (few-channel transposed
    # patches; strided window patches with uneven padding; dilated) -------------------
    {"name": "conv2d_backprop_filter_from_patches", "order": 2,
     "args": [_r(2, 5, 5, 2), _r(2, 5, 5, 3)],
     "fn": _bpf_from_patches((3, 3, 2, 3), (1, 1), ((1, 1), (1, 1)), (1, 1))},
    {"name": "conv2d_backprop_filter_from_patches", "order": 2,
     "args": [_r(1, 6, 5, 4), _r(1, 3, 3, 2)],
     "fn": _bpf_from_patches((2, 3, 4, 2), (2, 2), ((1, 0), (0, 2)), (1, 1))},
    {"name": "conv2d_backprop_filter_from_patches", "order": 2,
     "args": [_r(1, 6, 6, 1), _r(1, 4, 4, 2)],
     "fn": _bpf_from_patches((2, 2, 1, 2), (1, 1), ((0, 0), (0, 0)), (2, 2))},
    {"name": "conv2d_backprop_filter_and_bias_from_patches", "order": 2,
     "args": [_r(2, 5, 5, 2), _r(2, 5, 5, 3)],
     "fn": _bpf_bias_from_patches((3, 3, 2, 3), (1, 1), ((1, 1), (1, 1)), (1, 1))},
    {"name": "conv2d_backprop_filter_and_bias_from_patches", "order": 2,
     "args": [_r(1, 6, 5, 4), _r(1, 3, 3, 2)],
     "fn": _bpf_bias_from_patches((2, 3, 4, 2), (2, 2), ((1, 0), (0, 2)), (1, 1))},
    # ---- bias_add_grad (the fused vjp's bias gradient); cubed so the second-order
    # check depends on the upstream gradient ---------------------------------------
    {"name": "bias_add_grad", "order": 2, "args": [_r(2, 3, 2, 3)],
     "fn": lambda g: (lambda s: s * s * s)(apply(C._BIAS_GRAD, g))},
    # ---- depthwise -----------------------------------------------------------------
    {"name": "depthwise_conv2d", "order": 2, "args": [_r(2, 5, 5, 2), _r(3, 3, 2, 2)],
     "fn": lambda x, w: C.depthwise_conv2d(x, w, [1, 2, 2, 1], "SAME")},
    {"name": "depthwise_conv2d", "order": 2, "args": [_r(1, 6, 6, 3), _r(2, 2, 3, 1)],
     "fn": lambda x, w: C.depthwise_conv2d(x, w, [1, 1, 1, 1], "VALID", dilations=[2, 2])},
    {"name": "depthwise_conv2d_backprop_input", "order": 2,
     "args": [_r(1, 3, 3, 4), _r(3, 3, 2, 2)],
     "fn": lambda g, w: C.depthwise_conv2d_backprop_input((1, 5, 5, 2), w, g, [1, 2, 2, 1],
                                                          "SAME")},
    {"name": "depthwise_conv2d_backprop_filter", "order": 2,
     "args": [_r(1, 5, 5, 2), _r(1, 3, 3, 4)],
     "fn": lambda x, g: C.depthwise_conv2d_backprop_filter(x, (3, 3, 2, 2), g, [1, 2, 2, 1],
                                                           "SAME")},
    # ---- max pooling (no ties) -----------------------------------------------------
    {"name": "max_pool2d", "order": 2, "args": [_distinct(2, 4, 4, 2)],
     "fn": lambda x: C.max_pool2d(x, 2, 2, "VALID")},
    {"name": "max_pool2d", "order": 2, "args": [_distinct(1, 5, 5, 2)],
     "fn": lambda x: C.max_pool2d(x, 3, 2, "SAME")},
    {"name": "max_pool2d_grad", "order": 2, "args": [_distinct(1, 5, 5, 2), _r(1, 3, 3, 2)],
     "fn": lambda x, g: C.max_pool2d_grad(x, C.max_pool2d(x, 3, 2, "SAME"), g, 3, 2, "SAME")},
    {"name": "max_pool2d_grad_grad", "order": 2,
     "args": [_distinct(1, 5, 5, 2), _r(1, 5, 5, 2)],
     "fn": lambda x, h: C.max_pool2d_grad_grad(x, C.max_pool2d(x, 3, 2, "SAME"), h, 3, 2,
                                               "SAME")},
    # ---- average pooling -----------------------------------------------------------
    {"name": "avg_pool2d", "order": 2, "args": [_r(2, 4, 4, 2)],
     "fn": lambda x: C.avg_pool2d(x, 2, 2, "VALID")},
    {"name": "avg_pool2d", "order": 2, "args": [_r(1, 5, 5, 2)],
     "fn": lambda x: C.avg_pool2d(x, 3, 2, "SAME")},
    {"name": "avg_pool2d_grad", "order": 2, "args": [_r(1, 3, 3, 2)],
     "fn": lambda g: C.avg_pool2d_grad((1, 5, 5, 2), g, 3, 2, "SAME")},
]
