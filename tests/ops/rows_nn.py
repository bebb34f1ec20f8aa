"""Gradient-table rows for ``lk.nn`` (everything except convolution and pooling).

Each row: ``name`` (the ``Op.name`` of the record it exercises, or the public function
name for a composite), ``fn`` (a function of Tensors), ``args`` (float64 arrays) and
``order`` (checked with ``layerkit.autodiff.check.check_grads``). Inputs of piecewise
functions stay away from their kinks (relu at 0, relu6 at 0 and 6, elu/selu/leaky_relu
at 0). gelu rows check order 3: its gradient is the ``gelu_grad`` record, whose own
gradient is written in lk ops.
"""
from __future__ import annotations

import numpy as np

from layerkit import nn
from layerkit._core.op import apply
from layerkit.primitives import nn as N

_rng = np.random.default_rng(20261121)


def _n(*shape):
    return _rng.standard_normal(shape)


def _away(*shape):
    # |x| in [0.5, 1.5] with random signs: away from the kink at 0.
    return _rng.uniform(0.5, 1.5, shape) * _rng.choice([-1.0, 1.0], shape)


def _probs(*shape):
    p = _rng.uniform(0.1, 1.0, shape)
    return p / p.sum(-1, keepdims=True)


def _row(name, fn, *args, order=2):
    return {"name": name, "fn": fn, "args": list(args), "order": order}


_LABELS = np.array([[0, 3, 1], [2, 2, 0]])
_RELU_Y = np.maximum(_away(3, 4), 0)     # a relu answer: zeros and positives


def _gelu_grad(approximate):
    return lambda x, g: apply(N._GELU_GRAD, x, nn.gelu(x, approximate=approximate), g,
                              approximate=approximate)


ROWS = [
    # ---- records ---------------------------------------------------------------------
    _row("relu", lambda x: nn.relu(x), _away(3, 4)),
    _row("relu", lambda x: nn.relu(x * x - 0.5), _away(2, 3)),
    _row("relu_grad", lambda g: N.relu_grad(g, _RELU_Y), _n(3, 4)),
    _row("relu_grad", lambda g, y: N.relu_grad(g * y, y), _n(3, 4), _away(3, 4)),
    _row("leaky_relu", lambda x: nn.leaky_relu(x), _away(3, 4)),
    _row("leaky_relu", lambda x: nn.leaky_relu(x, alpha=0.05), _away(3, 4)),
    _row("leaky_relu", lambda x: nn.leaky_relu(x * x - 0.5, alpha=1.5), _away(2, 3)),
    _row("leaky_relu", lambda x: nn.leaky_relu(x, alpha=-0.3), _away(3, 4)),
    _row("leaky_relu_grad", lambda g, x: apply(N._LEAKY_RELU_GRAD, g * x, x, 0.2), _n(3, 4),
         _away(3, 4)),
    _row("leaky_relu_grad", lambda g, x: apply(N._LEAKY_RELU_GRAD, g, x, 2.5), _n(3, 4),
         _away(3, 4)),
    _row("softplus", lambda x: nn.softplus(x), _n(3, 4) * 3),
    _row("gelu", lambda x: nn.gelu(x), _n(3, 4) * 2, order=3),
    _row("gelu", lambda x: nn.gelu(x, approximate=True), _n(3, 4) * 2, order=3),
    _row("gelu_grad", _gelu_grad(False), _n(3, 4) * 2, _n(3, 4)),
    _row("gelu_grad", _gelu_grad(True), _n(3, 4) * 2, _n(3, 4)),
    _row("softmax", lambda x: nn.softmax(x), _n(3, 4)),
    _row("softmax", lambda x: nn.softmax(x, axis=0), _n(3, 4)),
    _row("softmax", lambda x: nn.softmax(x, axis=1), _n(2, 3, 2)),
    _row("log_softmax", lambda x: nn.log_softmax(x), _n(3, 4)),
    _row("log_softmax", lambda x: nn.log_softmax(x, axis=0), _n(2, 3, 2)),
    _row("sparse_softmax_cross_entropy_with_logits",
         lambda x: nn.sparse_softmax_cross_entropy_with_logits(_LABELS, x), _n(2, 3, 4)),
    _row("sparse_softmax_cross_entropy_with_logits",
         lambda x: nn.sparse_softmax_cross_entropy_with_logits(np.array([4, 0]), x * x),
         _n(2, 5)),
    _row("sparse_softmax_cross_entropy_grad",
         lambda x, g: apply(N._SPARSE_CE_GRAD, _LABELS, x, g), _n(2, 3, 4), _n(2, 3)),
    _row("sparse_softmax_cross_entropy_grad",
         lambda x, g: apply(N._SPARSE_CE_GRAD, np.array([4, 0]), x * x, g * g), _n(2, 5),
         _n(2)),
    # ---- composites ------------------------------------------------------------------
    _row("relu6", lambda x: nn.relu6(x), np.array([[-2.0, 1.0, 3.5], [7.5, 5.0, -0.5]])),
    _row("elu", lambda x: nn.elu(x), _away(3, 4)),
    _row("elu", lambda x: nn.elu(x, alpha=0.5), _away(3, 4)),
    _row("selu", lambda x: nn.selu(x), _away(3, 4)),
    _row("silu", lambda x: nn.silu(x), _n(3, 4) * 2),
    _row("silu", lambda x: nn.silu(x, beta=1.5), _n(3, 4)),
    _row("softmax_cross_entropy_with_logits",
         lambda z, x: nn.softmax_cross_entropy_with_logits(z, x), _probs(3, 4), _n(3, 4)),
    _row("softmax_cross_entropy_with_logits",
         lambda z, x: nn.softmax_cross_entropy_with_logits(z, x, axis=0), _probs(4, 3).T.copy(),
         _n(3, 4)),
    _row("sigmoid_cross_entropy_with_logits",
         lambda z, x: nn.sigmoid_cross_entropy_with_logits(labels=z, logits=x),
         _rng.uniform(0, 1, (3, 4)), _n(3, 4) * 3),
    _row("dropout", lambda x: nn.dropout(x, 0.4, seed=7), _n(4, 5)),
    _row("dropout", lambda x: nn.dropout(x, 0.5, noise_shape=[4, 1], seed=3), _n(4, 5)),
    _row("moments", lambda x: list(nn.moments(x, [0])), _n(5, 3)),
    _row("moments", lambda x: list(nn.moments(x, [0, 2], keepdims=True)), _n(3, 2, 4)),
    _row("batch_normalization",
         lambda x, m, v, o, s: nn.batch_normalization(x, m, v, o, s, 1e-3),
         _n(4, 3), _n(3), _rng.uniform(0.5, 2.0, 3), _n(3), _n(3)),
    _row("batch_normalization",
         lambda x, m, v: nn.batch_normalization(x, m, v, None, None, 1e-3),
         _n(4, 3), _n(3), _rng.uniform(0.5, 2.0, 3)),
    _row("l2_normalize", lambda x: nn.l2_normalize(x, axis=-1), _n(3, 4)),
    _row("l2_normalize", lambda x: nn.l2_normalize(x), _n(2, 3)),
    _row("compute_average_loss",
         lambda x, w: nn.compute_average_loss(x * x, sample_weight=w, global_batch_size=8),
         _n(3, 2), _n(3, 1)),
    _row("scale_regularization_loss", lambda x: nn.scale_regularization_loss(x * x), _n(3)),
]
