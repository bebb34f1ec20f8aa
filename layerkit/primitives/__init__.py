"""Public ops: each submodule lists its public names in ``__all__``.

``__all__`` here is the union of those lists, so ``from layerkit.primitives import *`` exports
ops only — never the submodules themselves (``nn``, ``random``, ``array``, ...), which
would otherwise shadow ``lk.nn`` and ``lk.random``.
"""
from layerkit.primitives import array as _array
from layerkit.primitives import creation as _creation
from layerkit.primitives import elementwise as _elementwise
from layerkit.primitives import linalg as _linalg
from layerkit.primitives import methods as _methods  # noqa: F401  (installs Tensor operators)
from layerkit.primitives import reduce as _reduce
from layerkit.primitives.array import *  # noqa: F403
from layerkit.primitives.creation import *  # noqa: F403
from layerkit.primitives.elementwise import *  # noqa: F403
from layerkit.primitives.linalg import *  # noqa: F403
from layerkit.primitives.reduce import *  # noqa: F403

__all__ = [*_array.__all__, *_creation.__all__, *_elementwise.__all__, *_linalg.__all__,
           *_reduce.__all__]
