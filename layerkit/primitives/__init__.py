"""Public ops: each submodule lists its public names in ``__all__``.

``__all__`` here is the union of those lists, so ``from layerkit.primitives import *``
exports ops only — never the submodules themselves (``nn``, ``random``, ``array``, ...),
which would otherwise shadow ``lk.nn`` and ``lk.random``.

The TF namespaces ``lk.math``, ``lk.linalg`` and ``lk.nn`` are read from
``registry.NAMESPACES``: newer modules publish with ``@export``; the table below
publishes the ops of the older modules under their ``tf.math`` / ``tf.linalg`` names.
"""
from layerkit.primitives import array as _array
from layerkit.primitives import creation as _creation
from layerkit.primitives import elementwise as _elementwise
from layerkit.primitives import linalg as _linalg
from layerkit.primitives import linalg_ops as _linalg_ops  # noqa: F401  (lk.linalg ops)
from layerkit.primitives import math_ops as _math_ops
from layerkit.primitives import methods as _methods  # noqa: F401  (installs Tensor operators)
from layerkit.primitives import nn as _nn
from layerkit.primitives import reduce as _reduce
from layerkit.primitives import segment as _segment  # noqa: F401  (publishes lk.math ops)
from layerkit.primitives import selection as _selection
from layerkit.primitives import sorting as _sorting
from layerkit.primitives.array import *  # noqa: F403
from layerkit.primitives.creation import *  # noqa: F403
from layerkit.primitives.elementwise import *  # noqa: F403
from layerkit.primitives.linalg import *  # noqa: F403
from layerkit.primitives.math_ops import *  # noqa: F403
from layerkit.primitives.reduce import *  # noqa: F403
from layerkit.primitives.registry import publish as _publish
from layerkit.primitives.selection import *  # noqa: F403
from layerkit.primitives.sorting import *  # noqa: F403

__all__ = [*_array.__all__, *_creation.__all__, *_elementwise.__all__, *_linalg.__all__,
           *_reduce.__all__, *_math_ops.__all__, *_selection.__all__, *_sorting.__all__]

# tf.math names of the core ops ("name" or "tf_name=layerkit_name").
_MATH = (
    "abs add subtract multiply divide floordiv negative pow square sqrt rsqrt exp expm1 "
    "log log1p sign maximum minimum sin cos tan tanh sigmoid erf floor ceil round "
    "equal not_equal less less_equal greater greater_equal logical_and logical_or "
    "logical_not reduce_sum reduce_mean reduce_max reduce_min reduce_prod "
    "reduce_logsumexp reduce_variance reduce_std reduce_all reduce_any argmax argmin "
    "cumsum cumprod is_nan=isnan is_finite=isfinite truediv=divide floormod=mod mod "
    "rint=round"
)
for _entry in _MATH.split():
    _tf, _, _ours = _entry.partition("=")
    _publish(globals()[_ours or _tf], f"math.{_tf}")
for _fn in (_nn.softplus, _nn.softmax, _nn.log_softmax, _nn.l2_normalize):
    _publish(_fn, "math")
for _fn in (_linalg.matmul, _linalg.tensordot, _linalg.einsum, _linalg.norm,
            _creation.eye, _nn.l2_normalize):
    _publish(_fn, "linalg")
_publish(_elementwise.sigmoid, "nn")
_publish(_elementwise.tanh, "nn")
del _entry, _tf, _ours, _fn
