"""MultiHeadAttention (Keras weight shapes: the EinsumDense kernels of Keras 3)."""
from __future__ import annotations

import math

import numpy as np

from layerkit import constraints, initializers, regularizers
from layerkit.layers.layer import Layer
from layerkit.ops import array as _array
from layerkit.ops import elementwise as _ew
from layerkit.ops import linalg as _linalg
from layerkit.ops import nn as _nn
from layerkit.ops import random as _random

__all__ = ["MultiHeadAttention"]


class MultiHeadAttention(Layer):
    """Multi-head scaled dot-product attention (Vaswani et al.), Keras semantics.

    ``q = query @ Wq + bq`` per head (likewise k from ``key``, v from ``value``);
    ``scores = softmax(q k^T / sqrt(key_dim) + mask_adder)``; the output is
    ``concat_heads(scores v) @ Wo + bo``. Masked positions get -1e9 before the softmax.

    Args:
        num_heads: number of heads.
        key_dim: size of each head for query and key.
        value_dim: size of each head for value (default ``key_dim``).
        dropout: dropout rate on the attention scores (training only).
        use_bias: whether the projections have biases.
        output_shape: last dimension of the output (default: the query's).
        kernel_initializer, bias_initializer, kernel_regularizer, bias_regularizer,
        kernel_constraint, bias_constraint: as for ``Dense``.

    Call arguments: ``query`` (B, T, dim), ``value`` (B, S, dim_v), ``key`` (B, S, dim_k;
    default ``value``), ``attention_mask`` (B, T, S), true where attention is allowed,
    ``return_attention_scores``, ``training``, ``use_causal_mask``.

    Weights (Keras order): query kernel (dim, heads, key_dim) and bias (heads, key_dim),
    key kernel/bias, value kernel (dim_v, heads, value_dim)/bias, output kernel
    (heads, value_dim, out_dim) and bias (out_dim,).

    Example:
        >>> import layerkit as lk
        >>> mha = lk.layers.MultiHeadAttention(num_heads=2, key_dim=4)
        >>> mha(lk.ones((1, 3, 8)), lk.ones((1, 5, 8))).shape
        (1, 3, 8)
    """

    _cast_int_inputs = True

    def __init__(self, num_heads: int, key_dim: int, value_dim: int | None = None,
                 dropout: float = 0.0, use_bias: bool = True, output_shape=None,
                 attention_axes=None, kernel_initializer="glorot_uniform",
                 bias_initializer="zeros", kernel_regularizer=None, bias_regularizer=None,
                 kernel_constraint=None, bias_constraint=None, seed: int | None = None,
                 **kwargs) -> None:
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

    def build(self, query_shape, value_shape, key_shape=None) -> None:
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

    def call(self, query, value, key=None, attention_mask=None,
             return_attention_scores: bool = False, training=None,
             use_causal_mask: bool = False):
        key = value if key is None else key
        b, t, _ = query.shape
        s = value.shape[1]
        if key.shape[:2] != value.shape[:2]:
            raise ValueError(f"MultiHeadAttention '{self.name}': key and value must share batch "
                             f"and length; received key {key.shape}, value {value.shape}")
        q = _ew.multiply(self._project(query, self.query_kernel, self.query_bias),
                         1.0 / math.sqrt(self.key_dim))
        k = self._project(key, self.key_kernel, self.key_bias)
        v = self._project(value, self.value_kernel, self.value_bias)
        scores = _linalg.matmul(q, k, transpose_b=True)  # (B, heads, T, S)
        mask = self._mask(attention_mask, use_causal_mask, (b, t, s), scores.dtype)
        if mask is not None:  # Keras: add (1 - mask) * -1e9, then softmax
            scores = _ew.add(scores, _ew.multiply(_ew.subtract(1.0, mask), -1e9))
        scores = _nn.softmax(scores, axis=-1)
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
        return (out, scores) if return_attention_scores else out

    def _mask(self, attention_mask, causal: bool, shape: tuple, dtype):
        """The mask as a float tensor broadcastable to (B, heads, T, S), or None."""
        mask = None
        if attention_mask is not None:
            mask = attention_mask if hasattr(attention_mask, "shape") else np.asarray(
                attention_mask)
            try:
                ok = tuple(np.broadcast_shapes(tuple(mask.shape), shape)) == shape
            except ValueError:
                ok = False
            if not ok:
                raise ValueError(f"MultiHeadAttention '{self.name}': attention_mask of shape "
                                 f"{tuple(mask.shape)} does not broadcast to (batch, target, "
                                 f"source) = {shape}")
            mask = _ew.cast(mask, dtype)
            while mask.ndim < 4:
                mask = _array.expand_dims(mask, -3)
        if causal:
            tri = np.tril(np.ones(shape[1:], dtype))
            mask = tri if mask is None else _ew.multiply(mask, tri)
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
