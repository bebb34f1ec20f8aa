"""Public ops: each submodule lists its public names in ``__all__``."""
from layerkit.ops import methods as _methods  # noqa: F401  (installs Tensor operators)
from layerkit.ops.array import *  # noqa: F403
from layerkit.ops.creation import *  # noqa: F403
from layerkit.ops.elementwise import *  # noqa: F403
from layerkit.ops.linalg import *  # noqa: F403
from layerkit.ops.reduce import *  # noqa: F403
