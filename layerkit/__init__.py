"""layerkit: a lightweight eager deep-learning toolkit on NumPy.

    >>> import layerkit as lk
    >>> lk.matmul([[2.0]], [[2.0]])
    Tensor([[4.]], shape=(1, 1), dtype=float32)

Public names follow shared/API.md: the eager core and ops at top level, ``lk.nn``,
``lk.random``, autodiff (``GradientTape``, ``gradients_function``, ...), layers and models.
"""
import sys as _sys

__version__ = "0.1.0"  # first: submodules read it while the package loads

from layerkit._core import memory as _memory
from layerkit._core.context import executing_eagerly, get_current_name_scope, init_scope, name_scope
from layerkit._core.convert import constant, convert_to_tensor
from layerkit._core.dtypes import *  # noqa: F403  (lk.float32, lk.int64, ..., lk.as_dtype)
from layerkit._core.shape import TensorShape
from layerkit._core.tensor import Tensor
from layerkit._core.variable import Variable
from layerkit.primitives import *  # noqa: F403
from layerkit.autodiff import *  # noqa: F403
from layerkit import data, initializers, layers, nn, random, regularizers  # noqa: E402
from layerkit import callbacks, losses, metrics, models, optimizers, utils  # noqa: E402
from layerkit import constraints, saving  # noqa: E402
from layerkit.models import Input, Model, Sequential  # noqa: E402

layers.Input = Input  # keras.layers.Input (defined with the functional API it starts)
from layerkit import checkpoint  # noqa: E402
from layerkit.checkpoint import Checkpoint, CheckpointManager, latest_checkpoint  # noqa: E402
from layerkit import io  # noqa: E402
from layerkit import extend, linalg, math  # noqa: E402
from layerkit import summary  # noqa: E402
from layerkit import onnx  # noqa: E402
from layerkit import distribute  # noqa: E402
from layerkit import keras_ops  # noqa: E402

ops = keras_ops  # lk.ops is Keras 3's keras.ops (layerkit's own op records: layerkit.primitives)
_sys.modules["layerkit.ops"] = keras_ops
for _sub in ("core", "einops", "image", "linalg", "math", "nn", "numpy"):
    _sys.modules[f"layerkit.ops.{_sub}"] = getattr(keras_ops, _sub)
from layerkit.io.dlpack import from_dlpack  # noqa: E402
from layerkit._info import show_config  # noqa: E402
from layerkit import experimental, keras, train  # noqa: E402
from layerkit import bitwise, config, debugging, dtypes, errors, nest  # noqa: E402
from layerkit.autodiff.tape import UnconnectedGradients  # noqa: E402
from layerkit.config import device  # noqa: E402
from layerkit.module import Module  # noqa: E402
from layerkit.debugging import Assert, assert_equal, assert_greater, assert_less, assert_rank  # noqa: E402,F401
from layerkit.functional_ops import foldl, foldr, map_fn, scan, vectorized_map  # noqa: E402
from layerkit.runtime import (  # noqa: E402
    compat,
    control_dependencies,
    get_logger,
    group,
    no_op,
    recompute_grad,
    test,
    version,
)
from layerkit.control_flow import TensorArray, case, cond, switch_case, while_loop  # noqa: E402
from layerkit import autograph  # noqa: E402

from layerkit._missing import missing_attribute as _missing_attribute  # noqa: E402

newaxis = None  # ``x[:, lk.newaxis]`` (TF's spelling of NumPy's None)

_memory.tune_on_import()



def __getattr__(name: str):
    raise _missing_attribute("layerkit", name)
