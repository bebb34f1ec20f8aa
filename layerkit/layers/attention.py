"""Attention layers: MultiHeadAttention (Keras weight shapes: the EinsumDense kernels of
Keras 3), Attention (Luong-style dot product) and AdditiveAttention (Bahdanau-style).

Masks follow Keras 3: a masked query position outputs zeros (Attention) or keeps its
mask on the output (MultiHeadAttention), a masked value position gets no attention, and
masked-out positions have probability exactly 0 (a row masked entirely gives zeros).
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from layerkit import constraints, initializers, regularizers
from layerkit._core.tensor import Tensor
from layerkit.layers.core import SeededLayer
from layerkit.layers.layer import Layer, get_keras_mask, set_keras_mask
from layerkit.primitives import array as _array
from layerkit.primitives import elementwise as _ew
from layerkit.primitives import linalg as _linalg
from layerkit.primitives import nn as _nn
from layerkit.primitives import random as _random
from layerkit.primitives import reduce as _reduce

__all__ = ["MultiHeadAttention", "Attention", "AdditiveAttention"]


def _masked_softmax(scores, mask, zero_masked: bool = True):
    """Keras 3's masked softmax over the last axis: masked positions get probability 0
    (their scores -1e9 before, their probabilities zeroed after). With
    ``zero_masked=False`` (Keras's fused attention path on torch) -0.7 times the float32
    maximum is added to masked scores and nothing is zeroed: a row masked entirely
    attends uniformly."""
    if mask is None:
        return _nn.softmax(scores, axis=-1)
    if not zero_masked:  # added, not selected: the gradient reaches masked scores too
        return _nn.softmax(_ew.add(scores, _ew.where(mask, 0.0, -0.7 * 3.38953e38)), axis=-1)
    return _ew.where(mask, _nn.softmax(_ew.where(mask, scores, -1e9), axis=-1), 0.0)


def _as_bool(mask):
    mask = mask if hasattr(mask, "dtype") else np.asarray(mask)
    return mask if mask.dtype.kind == "b" else _ew.cast(mask, "bool")


def _causal(tq: int, tv: int):
    """(1, Tq, Tv): position i attends to positions j <= i."""
    return np.tril(np.ones((tq, tv), bool))[None]


class MultiHeadAttention(Layer):
    """Multi-head scaled dot-product attention (Vaswani et al.), Keras semantics.

    ``q = query @ Wq + bq`` per head (likewise k from ``key``, v from ``value``);
    ``scores = softmax(q k^T / sqrt(key_dim))`` over the allowed positions (masked ones
    get probability 0); the output is ``concat_heads(scores v) @ Wo + bo``. A query row
    with no allowed position attends uniformly to all of them, except with
    ``return_attention_scores`` or ``dropout``, where its scores are 0 (as Keras 3 on its
    torch backend, whose fused attention op is used in the first case only).

    The allowed positions combine ``attention_mask``, the causal mask and the Keras masks
    of the inputs: the query's (as ``(B, T, 1)``), the value's and key's (as
    ``(B, 1, S)``), as in Keras 3 (which also removes the masks from the input tensors
    and puts the query's on the output).

    Args:
        num_heads: number of heads.
        key_dim: size of each head for query and key.
        value_dim: size of each head for value (default ``key_dim``).
        dropout: dropout rate on the attention scores (training only).
        use_bias: whether the projections have biases.
        output_shape: last dimension of the output (default: the query's).
        kernel_initializer: as for ``Dense``.
        bias_initializer: as for ``Dense``.
        kernel_regularizer: as for ``Dense``.
        bias_regularizer: as for ``Dense``.
        kernel_constraint: as for ``Dense``.
        bias_constraint: as for ``Dense``.

    Call arguments: ``query`` (B, T, dim), ``value`` (B, S, dim_v), ``key`` (B, S, dim_k;
    default ``value``), ``value_mask``/``key_mask`` (B, S) (default: the inputs' Keras
    masks), ``attention_mask`` (B, T, S), true where attention is allowed,
    ``return_attention_scores``, ``training``, ``use_causal_mask``.

    Weights (Keras order): query kernel (dim, heads, key_dim) and bias (heads, key_dim),
    key kernel/bias, value kernel (dim_v, heads, value_dim)/bias, output kernel
    (heads, value_dim, out_dim) and bias (out_dim,).

    Examples:
        >>> import layerkit as lk
        >>> mha = lk.layers.MultiHeadAttention(num_heads=2, key_dim=4)
        >>> mha(lk.ones((1, 3, 8)), lk.ones((1, 5, 8))).shape
        (1, 3, 8)
    """

    _cast_int_inputs = True
    supports_masking = True

    def __init__(self, num_heads: int, key_dim: int, value_dim: int | None = None,
                 dropout: float = 0.0, use_bias: bool = True, output_shape: Any = None,
                 attention_axes: Any = None, kernel_initializer: Any = "glorot_uniform",
                 bias_initializer: Any = "zeros", kernel_regularizer: Any = None,
                 bias_regularizer: Any = None, kernel_constraint: Any = None,
                 bias_constraint: Any = None, seed: int | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if attention_axes not in (None, 1, (1,), [1]):
            raise NotImplementedError("MultiHeadAttention: only attention over axis 1 "
                                      f"(sequences) is supported; received {attention_axes}")
        self.num_heads, self.key_dim = int(num_heads), int(key_dim)
        self.value_dim = int(value_dim) if value_dim is not None else self.key_dim
        self.dropout, self.use_bias = float(dropout), bool(use_bias)
        if isinstance(output_shape, (list, tuple)):
            output_shape = output_shape[-1] if len(output_shape) == 1 else output_shape
            if not isinstance(output_shape, int):
                raise NotImplementedError("MultiHeadAttention: output_shape must be an int")
        self._output_dim = output_shape
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.bias_initializer = initializers.get(bias_initializer)
        self.kernel_regularizer = regularizers.get(kernel_regularizer)
        self.bias_regularizer = regularizers.get(bias_regularizer)
        self.kernel_constraint = constraints.get(kernel_constraint)
        self.bias_constraint = constraints.get(bias_constraint)
        self.seed = seed
        self._generator = _random.Generator(seed) if seed is not None else None

    def _dense(self, name: str, kernel_shape: tuple, bias_shape: tuple) -> tuple:
        k = self.add_weight(f"{name}_kernel", kernel_shape, self.kernel_initializer,
                            regularizer=self.kernel_regularizer,
                            constraint=self.kernel_constraint)
        b = self.add_weight(f"{name}_bias", bias_shape, self.bias_initializer,
                            regularizer=self.bias_regularizer,
                            constraint=self.bias_constraint) if self.use_bias else None
        return k, b

    def build(self, query_shape: Any, value_shape: Any, key_shape: Any = None) -> None:
        key_shape = value_shape if key_shape is None else key_shape
        for what, s in (("query", query_shape), ("value", value_shape), ("key", key_shape)):
            if len(s) != 3 or s[-1] is None:
                raise ValueError(f"MultiHeadAttention '{self.name}': {what} must have shape "
                                 f"(batch, length, known_dim); received {tuple(s)}")
        h, dk, dv = self.num_heads, self.key_dim, self.value_dim
        out = self._output_dim or query_shape[-1]
        self.query_kernel, self.query_bias = self._dense("query", (query_shape[-1], h, dk), (h, dk))
        self.key_kernel, self.key_bias = self._dense("key", (key_shape[-1], h, dk), (h, dk))
        self.value_kernel, self.value_bias = self._dense("value", (value_shape[-1], h, dv), (h, dv))
        self.output_kernel, self.output_bias = self._dense("attention_output", (h, dv, out),
                                                           (out,))

    def _project(self, x, kernel, bias):
        """(B, L, dim) -> (B, heads, L, head_dim) as one GEMM."""
        b, n, d = x.shape
        _, h, e = kernel.shape
        y = _linalg.matmul(_array.reshape(x, (b * n, d)), _array.reshape(kernel, (d, h * e)))
        if bias is not None:
            y = _ew.add(y, _array.reshape(bias, (h * e,)))
        return _array.transpose(_array.reshape(y, (b, n, h, e)), (0, 2, 1, 3))

    def call(self, query: Tensor, value: Tensor, key: Tensor | None = None, query_mask: Any = None,
             value_mask: Any = None, key_mask: Any = None, attention_mask: Any = None,
             return_attention_scores: bool = False, training: bool | None = None,
             use_causal_mask: bool = False) -> Any:
        key = value if key is None else key
        b, t, _ = query.shape
        s = value.shape[1]
        if key.shape[:2] != value.shape[:2]:
            raise ValueError(f"MultiHeadAttention '{self.name}': key and value must share batch "
                             f"and length; received key {key.shape}, value {value.shape}")
        # Keras 3: the query's own mask is used (not the argument), and the inputs' masks
        # are removed from them (the layer consumes them); the output gets the query's.
        query_mask = get_keras_mask(query)
        for x in (query, value, key):
            if get_keras_mask(x) is not None:
                x._keras_mask = None
        mask = self._mask(attention_mask, use_causal_mask, (b, t, s),
                          query_mask, value_mask, key_mask)
        q = _ew.multiply(self._project(query, self.query_kernel, self.query_bias),
                         1.0 / math.sqrt(self.key_dim))
        k = self._project(key, self.key_kernel, self.key_bias)
        v = self._project(value, self.value_kernel, self.value_bias)
        scores = _linalg.matmul(q, k, transpose_b=True)  # (B, heads, T, S)
        # Keras 3 runs the fused dot_product_attention op unless scores are returned or
        # dropout is set; the two differ only for rows masked entirely (see the helper).
        scores = _masked_softmax(scores, mask, return_attention_scores or self.dropout > 0)
        attn = scores
        if training and self.dropout > 0:
            attn = _nn.dropout(scores, self.dropout, seed=self._generator)
        out = _linalg.matmul(attn, v)  # (B, heads, T, value_dim)
        h, dv, d_out = self.output_kernel.shape
        out = _array.reshape(_array.transpose(out, (0, 2, 1, 3)), (b * t, h * dv))
        out = _linalg.matmul(out, _array.reshape(self.output_kernel, (h * dv, d_out)))
        if self.output_bias is not None:
            out = _ew.add(out, self.output_bias)
        out = _array.reshape(out, (b, t, d_out))
        if query_mask is not None:
            out._keras_mask = query_mask
        if mask is not None and return_attention_scores:
            # Keras 3: its inner Softmax layer leaves the (B, 1, T, S) mask on the scores
            set_keras_mask(scores, mask)
        return (out, scores) if return_attention_scores else out

    def _mask(self, attention_mask, causal: bool, shape: tuple, query_mask=None,
              value_mask=None, key_mask=None):
        """The allowed positions as a bool tensor broadcastable to (B, 1, T, S), or None."""
        mask = None
        if attention_mask is not None:
            mask = _as_bool(attention_mask)
            try:
                ok = tuple(np.broadcast_shapes(tuple(mask.shape), shape)) == shape
            except ValueError:
                ok = False
            if not ok:
                raise ValueError(f"MultiHeadAttention '{self.name}': attention_mask of shape "
                                 f"{tuple(mask.shape)} does not broadcast to (batch, target, "
                                 f"source) = {shape}")
        parts = []
        if query_mask is not None:
            parts.append(_array.expand_dims(_as_bool(query_mask), -1))
        for m in (value_mask, key_mask):
            if m is not None:
                parts.append(_array.expand_dims(_as_bool(m), -2))
        if causal:
            parts.append(_causal(shape[1], shape[2]))
        if parts:
            auto = parts[0]
            for p in parts[1:]:
                auto = _ew.logical_and(auto, p)
            mask = auto if mask is None else _ew.logical_and(mask, auto)
        if mask is None:
            return None
        mask = mask if hasattr(mask, "ndim") else np.asarray(mask)
        while mask.ndim < 4:
            mask = _array.expand_dims(mask, -3)
        return mask

    def get_config(self) -> dict:
        return {**super().get_config(), "num_heads": self.num_heads, "key_dim": self.key_dim,
                "value_dim": self.value_dim, "dropout": self.dropout, "use_bias": self.use_bias,
                "output_shape": self._output_dim, "seed": self.seed,
                "kernel_initializer": initializers.serialize(self.kernel_initializer),
                "bias_initializer": initializers.serialize(self.bias_initializer),
                "kernel_regularizer": regularizers.serialize(self.kernel_regularizer),
                "bias_regularizer": regularizers.serialize(self.bias_regularizer),
                "kernel_constraint": constraints.serialize(self.kernel_constraint),
                "bias_constraint": constraints.serialize(self.bias_constraint)}


class Attention(SeededLayer):
    """Dot-product attention (Luong-style) over ``[query, value]`` or
    ``[query, value, key]``.

    ``scores = query @ key^T`` (``* scale`` with ``use_scale``) for ``score_mode='dot'``, or
    ``concat_score_weight * sum(tanh(scale * (query_i + key_j)))`` for ``'concat'``;
    ``weights = softmax(scores)`` over the allowed key positions; the output is
    ``weights @ value``, zero where the query is masked.

    Args:
        use_scale: learn a scalar ``scale`` of the scores (initialised to 1).
        score_mode: ``'dot'`` (default) or ``'concat'``.
        dropout: dropout rate on the attention weights (training only).
        seed: optional int for the dropout's own random stream.

    Call arguments: ``inputs`` (a list ``[query (B, Tq, dim), value (B, Tv, dim)]`` and
    optionally ``key (B, Tv, dim)``, default ``value``); ``mask`` (a list
    ``[query_mask (B, Tq), value_mask (B, Tv)]``; default: the inputs' Keras masks);
    ``training``; ``return_attention_scores`` (also return the weights (B, Tq, Tv));
    ``use_causal_mask`` (position i attends only to positions j <= i).

    Weights: ``scale`` () with ``use_scale``, then ``concat_score_weight`` () for
    ``'concat'``.

    Examples:
        >>> import layerkit as lk
        >>> lk.layers.Attention()([lk.ones((2, 3, 4)), lk.ones((2, 5, 4))]).shape
        (2, 3, 4)
    """

    _cast_int_inputs = True

    def __init__(self, use_scale: bool = False, score_mode: str = "dot",
                 dropout: float = 0.0, seed: int | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if score_mode not in ("dot", "concat"):
            raise ValueError(f"{type(self).__name__}: `score_mode` must be 'dot' or 'concat'; "
                             f"received score_mode={score_mode!r}")
        self.use_scale, self.score_mode = bool(use_scale), score_mode
        self.dropout = float(dropout)
        self._set_seed(seed)

    def _check(self, inputs, mask=None) -> list:
        name = type(self).__name__
        if not isinstance(inputs, (list, tuple)) or not 2 <= len(inputs) <= 3:
            got = f"{len(inputs)} tensors" if isinstance(inputs, (list, tuple)) else \
                "a single tensor"
            raise ValueError(f"{name} '{self.name}' must be called on a list [query, value] or "
                             f"[query, value, key]; received {got}")
        if mask is not None and (not isinstance(mask, (list, tuple)) or
                                 not 2 <= len(mask) <= 3):
            raise ValueError(f"{name} '{self.name}': `mask` must be a list [query_mask, "
                             f"value_mask]; received {mask!r}")
        return list(inputs)

    def build(self, input_shape: Any) -> None:
        self._check(input_shape)
        self.scale = self.add_weight("scale", (), "ones") if self.use_scale else None
        self.concat_score_weight = self.add_weight("concat_score_weight", (), "ones") \
            if self.score_mode == "concat" else None

    def _scores(self, query, key):
        """(B, Tq, Tv) scores of every query step against every key step."""
        if self.score_mode == "dot":
            scores = _linalg.matmul(query, key, transpose_b=True)
            return _ew.multiply(scores, self.scale) if self.scale is not None else scores
        pairs = _ew.add(_array.expand_dims(query, -2), _array.expand_dims(key, -3))
        if self.scale is not None:
            pairs = _ew.multiply(pairs, self.scale)
        return _ew.multiply(self.concat_score_weight,
                            _reduce.reduce_sum(_ew.tanh(pairs), axis=-1))

    def call(self, inputs: Any, mask: Any = None, training: bool | None = None,
             return_attention_scores: bool = False, use_causal_mask: bool = False) -> Any:
        q, v, *rest = self._check(inputs, mask)
        k = rest[0] if rest else v
        q_mask, v_mask = (mask[0], mask[1]) if mask else (None, None)
        scores = self._scores(q, k)
        allowed = None if v_mask is None else _as_bool(v_mask)
        if allowed is not None and allowed.ndim == 2:
            allowed = _array.expand_dims(allowed, -2)  # (B, 1, Tv)
        if use_causal_mask:
            causal = _causal(scores.shape[-2], scores.shape[-1])
            allowed = causal if allowed is None else _ew.logical_and(allowed, causal)
        if allowed is not None:  # Keras: masked scores - 1e9, not replaced
            scores = _ew.where(allowed, scores, _ew.subtract(scores, 1e9))
        weights = _nn.softmax(scores, axis=-1)
        if training and self.dropout > 0:
            weights = _nn.dropout(weights, self.dropout, seed=self._generator)
        out = _linalg.matmul(weights, v)
        if q_mask is not None:
            out = _ew.where(_array.expand_dims(_as_bool(q_mask), -1), out, 0.0)
        return (out, weights) if return_attention_scores else out

    def compute_mask(self, inputs: Any, mask: Any = None) -> Any:
        """The query's mask (None without one)."""
        if not mask or mask[0] is None:
            return None
        return _as_bool(mask[0])

    def get_config(self) -> dict:
        return {**super().get_config(), "use_scale": self.use_scale,
                "score_mode": self.score_mode, "dropout": self.dropout, "seed": self.seed}


class AdditiveAttention(Attention):
    """Additive attention (Bahdanau-style) over ``[query, value]`` or
    ``[query, value, key]``: ``scores[i, j] = sum(scale * tanh(query_i + key_j))``, then
    as :class:`Attention` (softmax over the allowed key positions, ``@ value``, masks,
    causal mask, dropout, ``return_attention_scores``).

    Args:
        use_scale: learn the per-feature ``scale`` (default True; glorot_uniform).
        dropout: dropout rate on the attention weights (training only).

    Weights: ``scale`` (dim,) with ``use_scale``.

    Examples:
        >>> import layerkit as lk
        >>> lk.layers.AdditiveAttention()([lk.ones((2, 3, 4)), lk.ones((2, 5, 4))]).shape
        (2, 3, 4)
    """

    def __init__(self, use_scale: bool = True, dropout: float = 0.0, **kwargs: Any) -> None:
        kwargs.pop("score_mode", None)
        super().__init__(use_scale=use_scale, dropout=dropout, **kwargs)

    def build(self, input_shape: Any) -> None:
        self._check(input_shape)
        self.scale = self.add_weight("scale", (input_shape[0][-1],), "glorot_uniform") \
            if self.use_scale else None
        self.concat_score_weight = None

    def _scores(self, query, key):
        pairs = _ew.tanh(_ew.add(_array.expand_dims(query, -2), _array.expand_dims(key, -3)))
        if self.scale is not None:
            pairs = _ew.multiply(pairs, self.scale)
        return _reduce.reduce_sum(pairs, axis=-1)

    def get_config(self) -> dict:
        return {k: v for k, v in super().get_config().items() if k != "score_mode"}
