"""layerkit: a lightweight eager deep-learning toolkit on NumPy.

    >>> import layerkit as lk
    >>> lk.matmul([[2.0]], [[2.0]])
    Tensor([[4.]], shape=(1, 1), dtype=float32)

Public names follow shared/API.md: the eager core and ops at top level, ``lk.nn``,
``lk.random``, autodiff (``GradientTape``, ``gradients_function``, ...), layers and models.
"""
import sys as _sys
import typing as _typing

__version__ = "0.1.0"  # first: submodules read it while the package loads

from layerkit._core import memory as _memory
from layerkit._core.context import executing_eagerly, get_current_name_scope, init_scope, name_scope
from layerkit._core.convert import constant, convert_to_tensor
from layerkit._core.dtypes import *  # noqa: F403  (lk.float32, lk.int64, ..., lk.as_dtype)
from layerkit._core.shape import TensorShape
from layerkit._core.tensor import Tensor
from layerkit._core.variable import Variable
from layerkit.primitives import *  # noqa: F403
# ---- BEGIN op registry exports for type checkers (generated) ----
if _typing.TYPE_CHECKING:  # tests/test_public_hints.py writes this block
    from layerkit.primitives.array import broadcast_to as broadcast_to
    from layerkit.primitives.array import concat as concat
    from layerkit.primitives.array import expand_dims as expand_dims
    from layerkit.primitives.array import gather as gather
    from layerkit.primitives.array import gather_nd as gather_nd
    from layerkit.primitives.array import pad as pad
    from layerkit.primitives.array import reshape as reshape
    from layerkit.primitives.array import reverse as reverse
    from layerkit.primitives.array import slice as slice
    from layerkit.primitives.array import split as split
    from layerkit.primitives.array import squeeze as squeeze
    from layerkit.primitives.array import stack as stack
    from layerkit.primitives.array import tile as tile
    from layerkit.primitives.array import transpose as transpose
    from layerkit.primitives.array import unstack as unstack
    from layerkit.primitives.creation import eye as eye
    from layerkit.primitives.creation import fill as fill
    from layerkit.primitives.creation import linspace as linspace
    from layerkit.primitives.creation import one_hot as one_hot
    from layerkit.primitives.creation import ones as ones
    from layerkit.primitives.creation import ones_like as ones_like
    from layerkit.primitives.creation import range as range
    from layerkit.primitives.creation import zeros as zeros
    from layerkit.primitives.creation import zeros_like as zeros_like
    from layerkit.primitives.elementwise import abs as abs
    from layerkit.primitives.elementwise import add as add
    from layerkit.primitives.elementwise import cast as cast
    from layerkit.primitives.elementwise import ceil as ceil
    from layerkit.primitives.elementwise import clip_by_value as clip_by_value
    from layerkit.primitives.elementwise import cos as cos
    from layerkit.primitives.elementwise import divide as divide
    from layerkit.primitives.elementwise import divide as realdiv  # noqa: F401
    from layerkit.primitives.elementwise import divide as truediv  # noqa: F401
    from layerkit.primitives.elementwise import equal as equal
    from layerkit.primitives.elementwise import erf as erf
    from layerkit.primitives.elementwise import exp as exp
    from layerkit.primitives.elementwise import expm1 as expm1
    from layerkit.primitives.elementwise import floor as floor
    from layerkit.primitives.elementwise import floordiv as floordiv
    from layerkit.primitives.elementwise import greater as greater
    from layerkit.primitives.elementwise import greater_equal as greater_equal
    from layerkit.primitives.elementwise import isfinite as isfinite
    from layerkit.primitives.elementwise import isnan as isnan
    from layerkit.primitives.elementwise import less as less
    from layerkit.primitives.elementwise import less_equal as less_equal
    from layerkit.primitives.elementwise import log as log
    from layerkit.primitives.elementwise import log1p as log1p
    from layerkit.primitives.elementwise import logical_and as logical_and
    from layerkit.primitives.elementwise import logical_not as logical_not
    from layerkit.primitives.elementwise import logical_or as logical_or
    from layerkit.primitives.elementwise import maximum as maximum
    from layerkit.primitives.elementwise import minimum as minimum
    from layerkit.primitives.elementwise import mod as mod
    from layerkit.primitives.elementwise import multiply as multiply
    from layerkit.primitives.elementwise import negative as negative
    from layerkit.primitives.elementwise import not_equal as not_equal
    from layerkit.primitives.elementwise import pow as pow
    from layerkit.primitives.elementwise import round as round
    from layerkit.primitives.elementwise import rsqrt as rsqrt
    from layerkit.primitives.elementwise import sigmoid as sigmoid
    from layerkit.primitives.elementwise import sign as sign
    from layerkit.primitives.elementwise import sin as sin
    from layerkit.primitives.elementwise import sqrt as sqrt
    from layerkit.primitives.elementwise import square as square
    from layerkit.primitives.elementwise import stop_gradient as stop_gradient
    from layerkit.primitives.elementwise import subtract as subtract
    from layerkit.primitives.elementwise import tan as tan
    from layerkit.primitives.elementwise import tanh as tanh
    from layerkit.primitives.elementwise import where as where
    from layerkit.primitives.linalg import einsum as einsum
    from layerkit.primitives.linalg import matmul as matmul
    from layerkit.primitives.linalg import norm as norm
    from layerkit.primitives.linalg import tensordot as tensordot
    from layerkit.primitives.math_ops import add_n as add_n
    from layerkit.primitives.math_ops import clip_by_global_norm as clip_by_global_norm
    from layerkit.primitives.math_ops import clip_by_norm as clip_by_norm
    from layerkit.primitives.math_ops import scalar_mul as scalar_mul
    from layerkit.primitives.rearrange import histogram_fixed_width as histogram_fixed_width
    from layerkit.primitives.rearrange import shape_n as shape_n
    from layerkit.primitives.rearrange import strided_slice as strided_slice
    from layerkit.primitives.rearrange import tensor_scatter_nd_max as tensor_scatter_nd_max
    from layerkit.primitives.rearrange import tensor_scatter_nd_min as tensor_scatter_nd_min
    from layerkit.primitives.reduce import argmax as argmax
    from layerkit.primitives.reduce import argmin as argmin
    from layerkit.primitives.reduce import cumprod as cumprod
    from layerkit.primitives.reduce import cumsum as cumsum
    from layerkit.primitives.reduce import reduce_all as reduce_all
    from layerkit.primitives.reduce import reduce_any as reduce_any
    from layerkit.primitives.reduce import reduce_logsumexp as reduce_logsumexp
    from layerkit.primitives.reduce import reduce_max as reduce_max
    from layerkit.primitives.reduce import reduce_mean as reduce_mean
    from layerkit.primitives.reduce import reduce_min as reduce_min
    from layerkit.primitives.reduce import reduce_prod as reduce_prod
    from layerkit.primitives.reduce import reduce_std as reduce_std
    from layerkit.primitives.reduce import reduce_sum as reduce_sum
    from layerkit.primitives.reduce import reduce_variance as reduce_variance
    from layerkit.primitives.selection import boolean_mask as boolean_mask
    from layerkit.primitives.selection import broadcast_dynamic_shape as broadcast_dynamic_shape
    from layerkit.primitives.selection import broadcast_static_shape as broadcast_static_shape
    from layerkit.primitives.selection import ensure_shape as ensure_shape
    from layerkit.primitives.selection import get_static_value as get_static_value
    from layerkit.primitives.selection import identity as identity
    from layerkit.primitives.selection import is_tensor as is_tensor
    from layerkit.primitives.selection import meshgrid as meshgrid
    from layerkit.primitives.selection import rank as rank
    from layerkit.primitives.selection import repeat as repeat
    from layerkit.primitives.selection import roll as roll
    from layerkit.primitives.selection import scatter_nd as scatter_nd
    from layerkit.primitives.selection import sequence_mask as sequence_mask
    from layerkit.primitives.selection import shape as shape
    from layerkit.primitives.selection import size as size
    from layerkit.primitives.selection import tensor_scatter_nd_add as tensor_scatter_nd_add
    from layerkit.primitives.selection import tensor_scatter_nd_update as tensor_scatter_nd_update
    from layerkit.primitives.selection import unravel_index as unravel_index
    from layerkit.primitives.sorting import argsort as argsort
    from layerkit.primitives.sorting import searchsorted as searchsorted
    from layerkit.primitives.sorting import sort as sort
    from layerkit.primitives.sorting import unique as unique
# ---- END op registry exports ----
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
