"""The Keras 3 ``keras.ops`` namespace on layerkit ops (``lk.keras_ops``).

Backend-agnostic Keras 3 code that calls ``keras.ops.*`` runs with
``from layerkit import keras_ops as ops``. Every function takes Tensors, Variables,
NumPy arrays and Python values, returns layerkit Tensors, is recorded by
``GradientTape`` (differentiable wherever Keras's is, unless its docstring says "no
gradient") and traces into ``lk.function`` graphs. Semantics are Keras 3's, which
differ from layerkit's TensorFlow-style names in places: ``argmax``/``argmin``/
``cumsum``/``argsort``/``take`` flatten when ``axis=None``; ``transpose(x, axes)``;
``linspace(..., endpoint=True)``; ``gelu`` defaults to the tanh approximation; index
results and Python ints are int32; float-only math on integers returns float32.

Submodules mirror Keras: ``numpy``, ``nn``, ``math``, ``linalg``, ``image``, ``core``;
all their names (but ``image``'s) are also available here, as in ``keras.ops``.

    >>> from layerkit import keras_ops as ops
    >>> ops.argmax([[1.0, 5.0], [7.0, 2.0]])
    Tensor(2, shape=(), dtype=int32)
"""
from layerkit.keras_ops import core, einops, image, linalg, math, nn, numpy  # noqa: F401
from layerkit.keras_ops.core import *  # noqa: F403
from layerkit.keras_ops.einops import *  # noqa: F403
from layerkit.keras_ops.linalg import *  # noqa: F403
from layerkit.keras_ops.math import *  # noqa: F403
from layerkit.keras_ops.nn import *  # noqa: F403
from layerkit.keras_ops.numpy import *  # noqa: F403

__all__ = sorted({*core.__all__, *einops.__all__, *numpy.__all__, *nn.__all__, *math.__all__,
                  *linalg.__all__})
