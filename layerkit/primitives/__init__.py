"""Op records and their public functions, one family per module.

``__all__`` here lists the ops published at the top level, so ``from layerkit.primitives
import *`` exports ops only — never the submodules themselves (``nn``, ``random``,
``array``, ...), which would otherwise shadow ``lk.nn`` and ``lk.random``.

Each public function says where it is published with ``registry.export`` next to its
definition (``@export("lk", "math")``); ``__all__`` and the TF namespaces ``lk.math``,
``lk.linalg`` and ``lk.nn`` are read from ``registry.NAMESPACES``.
"""
# Importing a module publishes its ops (``@export``); methods installs Tensor operators.
from layerkit.primitives import (  # noqa: F401
    array,
    creation,
    elementwise,
    linalg,
    linalg_ops,
    math_ops,
    methods,
    rearrange,
    reduce,
    segment,
    selection,
    sorting,
)
from layerkit.primitives import nn as _nn
from layerkit.primitives.registry import NAMESPACES as _NAMESPACES
from layerkit.primitives.registry import publish as _publish

# Everything published at the top level (``lk.name``); ``from layerkit.primitives import *``
# exports exactly these.
globals().update(_NAMESPACES["lk"])
__all__ = list(_NAMESPACES["lk"])

# primitives/nn.py's functions reach lk.nn through layerkit/nn.py; these are also tf.math /
# tf.linalg names.
for _fn in (_nn.softplus, _nn.softmax, _nn.log_softmax, _nn.l2_normalize):
    _publish(_fn, "math")
_publish(_nn.l2_normalize, "linalg")
del _fn
