"""Public ops: each submodule lists its public names in ``__all__``.

``__all__`` here is the union of those lists, so ``from layerkit.ops import *`` exports
ops only — never the submodules themselves (``nn``, ``random``, ``array``, ...), which
would otherwise shadow ``lk.nn`` and ``lk.random``.
"""
from layerkit.ops import array as _array
from layerkit.ops import creation as _creation
from layerkit.ops import elementwise as _elementwise
from layerkit.ops import linalg as _linalg
from layerkit.ops import methods as _methods  # noqa: F401  (installs Tensor operators)
from layerkit.ops import reduce as _reduce
from layerkit.ops.array import *  # noqa: F403
from layerkit.ops.creation import *  # noqa: F403
from layerkit.ops.elementwise import *  # noqa: F403
from layerkit.ops.linalg import *  # noqa: F403
from layerkit.ops.reduce import *  # noqa: F403

__all__ = [*_array.__all__, *_creation.__all__, *_elementwise.__all__, *_linalg.__all__,
           *_reduce.__all__]
