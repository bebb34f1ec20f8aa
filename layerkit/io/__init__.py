"""File formats and exchange with other libraries (optional packages imported lazily).

- :func:`save_safetensors` / :func:`load_safetensors`: dicts of tensors in the
  ``safetensors`` format (extra ``safetensors``); ``Model.save_weights`` /
  ``load_weights`` use it for ``.safetensors`` paths.
- :func:`load_keras_weights`: Keras 3 ``.weights.h5`` files and ``.keras`` archives
  into a built model (extra ``h5``); ``Model.load_weights`` uses it for those suffixes.
  :func:`load_h5_group` is its reusable core (an h5 weights tree onto a built model);
  :func:`save_keras_weights` writes the same layout (``save_weights("x.weights.h5")``).
- :func:`from_dlpack` (also ``lk.from_dlpack``): tensors from any DLPack producer.
- :mod:`layerkit.io.tfevents`: TensorBoard event files (``lk.callbacks.TensorBoard``).
"""
from layerkit.io.dlpack import from_dlpack
from layerkit.io.keras_weights import (
    keras_weight_groups,
    load_h5_group,
    load_keras_weights,
    save_keras_weights,
)
from layerkit.io.safetensors_format import load_safetensors, save_safetensors

__all__ = ["save_safetensors", "load_safetensors", "load_keras_weights", "load_h5_group",
           "save_keras_weights", "keras_weight_groups", "from_dlpack"]
