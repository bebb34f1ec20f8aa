"""Masking: marks padded time steps so that later layers skip them (Keras masks).

How masks travel (as in Keras 3): a layer that makes a mask (``Masking``,
``Embedding(mask_zero=True)``) attaches a ``(batch, time)`` boolean tensor to its output
as ``output._keras_mask``. Each later layer call reads the masks of its inputs: a layer
whose ``call`` has a ``mask`` argument receives it (RNNs skip masked steps,
``Softmax``/attention exclude masked positions, ``GlobalAveragePooling1D`` averages kept
steps), and a layer that ``supports_masking`` attaches ``compute_mask(inputs, mask)`` to
its outputs (by default the input mask unchanged). Other layers drop the mask with a
warning. Losses and metrics in ``fit`` leave out masked entries of ``y_pred``: the mask
becomes part of the sample weights. The same happens in eager calls, Sequential and
functional models, and traced train steps.
"""
from __future__ import annotations

from typing import Any

from layerkit.layers.layer import Layer, enable_masks
from layerkit.primitives import elementwise as _ew
from layerkit.primitives import reduce as _reduce

__all__ = ["Masking"]


class Masking(Layer):
    """Masks the time steps where every feature equals ``mask_value``.

    The output is the input with masked steps set to 0, and carries the mask
    ``any(inputs != mask_value, axis=-1)`` of shape ``(batch, time)``.

    Args:
        mask_value: the padding value (default 0.0).

    Examples:
        >>> import layerkit as lk
        >>> y = lk.layers.Masking()(lk.constant([[[1.0], [0.0], [2.0]]]))
        >>> y._keras_mask.numpy()
        array([[ True, False,  True]])
    """

    supports_masking = True

    def __init__(self, mask_value: float = 0.0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.mask_value = mask_value
        enable_masks()

    def compute_mask(self, inputs: Any, mask: Any = None) -> Any:
        return _reduce.reduce_any(_ew.not_equal(inputs, self.mask_value), axis=-1)

    def call(self, inputs: Any) -> Any:
        keep = _reduce.reduce_any(_ew.not_equal(inputs, self.mask_value), axis=-1,
                                  keepdims=True)
        return _ew.where(keep, inputs, 0.0)

    def compute_output_shape(self, input_shape: Any) -> Any:
        return input_shape

    def get_config(self) -> dict:
        return {**super().get_config(), "mask_value": self.mask_value}
