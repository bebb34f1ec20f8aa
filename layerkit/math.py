"""``lk.math``: TensorFlow's ``tf.math`` names (every one NumPy can serve).

The namespace is built from the op registry (``layerkit.primitives.registry``): each
op says where it is published, next to its definition. A name that ``tf.math`` has and
layerkit does not raises an AttributeError saying so (or naming the layerkit spelling).

    >>> import layerkit as lk
    >>> lk.math.reduce_sum([[1.0, 2.0], [3.0, 4.0]], axis=1).numpy()
    array([3., 7.], dtype=float32)
    >>> lk.math.segment_sum([1.0, 2.0, 3.0], [0, 0, 1]).numpy()
    array([3., 3.], dtype=float32)
"""
from typing import TYPE_CHECKING

from layerkit._missing import missing_attribute
from layerkit.primitives.registry import NAMESPACES

globals().update(NAMESPACES["math"])
# ---- BEGIN op registry exports for type checkers (generated) ----
if TYPE_CHECKING:  # tests/test_public_hints.py writes this block
    from layerkit.primitives.elementwise import abs as abs
    from layerkit.primitives.elementwise import add as add
    from layerkit.primitives.elementwise import ceil as ceil
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
    from layerkit.primitives.elementwise import isfinite as is_finite  # noqa: F401
    from layerkit.primitives.elementwise import isnan as is_nan  # noqa: F401
    from layerkit.primitives.elementwise import less as less
    from layerkit.primitives.elementwise import less_equal as less_equal
    from layerkit.primitives.elementwise import log as log
    from layerkit.primitives.elementwise import log1p as log1p
    from layerkit.primitives.elementwise import logical_and as logical_and
    from layerkit.primitives.elementwise import logical_not as logical_not
    from layerkit.primitives.elementwise import logical_or as logical_or
    from layerkit.primitives.elementwise import maximum as maximum
    from layerkit.primitives.elementwise import minimum as minimum
    from layerkit.primitives.elementwise import mod as floormod  # noqa: F401
    from layerkit.primitives.elementwise import mod as mod
    from layerkit.primitives.elementwise import multiply as multiply
    from layerkit.primitives.elementwise import negative as negative
    from layerkit.primitives.elementwise import not_equal as not_equal
    from layerkit.primitives.elementwise import pow as pow
    from layerkit.primitives.elementwise import round as rint  # noqa: F401
    from layerkit.primitives.elementwise import round as round
    from layerkit.primitives.elementwise import rsqrt as rsqrt
    from layerkit.primitives.elementwise import sigmoid as sigmoid
    from layerkit.primitives.elementwise import sign as sign
    from layerkit.primitives.elementwise import sin as sin
    from layerkit.primitives.elementwise import sqrt as sqrt
    from layerkit.primitives.elementwise import square as square
    from layerkit.primitives.elementwise import subtract as subtract
    from layerkit.primitives.elementwise import tan as tan
    from layerkit.primitives.elementwise import tanh as tanh
    from layerkit.primitives.math_ops import accumulate_n as accumulate_n
    from layerkit.primitives.math_ops import acos as acos
    from layerkit.primitives.math_ops import acosh as acosh
    from layerkit.primitives.math_ops import add_n as add_n
    from layerkit.primitives.math_ops import asin as asin
    from layerkit.primitives.math_ops import asinh as asinh
    from layerkit.primitives.math_ops import atan as atan
    from layerkit.primitives.math_ops import atan2 as atan2
    from layerkit.primitives.math_ops import atanh as atanh
    from layerkit.primitives.math_ops import bincount as bincount
    from layerkit.primitives.math_ops import confusion_matrix as confusion_matrix
    from layerkit.primitives.math_ops import cosh as cosh
    from layerkit.primitives.math_ops import count_nonzero as count_nonzero
    from layerkit.primitives.math_ops import divide_no_nan as divide_no_nan
    from layerkit.primitives.math_ops import erfc as erfc
    from layerkit.primitives.math_ops import is_inf as is_inf
    from layerkit.primitives.math_ops import log_sigmoid as log_sigmoid
    from layerkit.primitives.math_ops import logical_xor as logical_xor
    from layerkit.primitives.math_ops import multiply_no_nan as multiply_no_nan
    from layerkit.primitives.math_ops import polyval as polyval
    from layerkit.primitives.math_ops import reciprocal as reciprocal
    from layerkit.primitives.math_ops import reciprocal_no_nan as reciprocal_no_nan
    from layerkit.primitives.math_ops import reduce_euclidean_norm as reduce_euclidean_norm
    from layerkit.primitives.math_ops import scalar_mul as scalar_mul
    from layerkit.primitives.math_ops import sinh as sinh
    from layerkit.primitives.math_ops import softsign as softsign
    from layerkit.primitives.math_ops import squared_difference as squared_difference
    from layerkit.primitives.math_ops import xdivy as xdivy
    from layerkit.primitives.math_ops import xlogy as xlogy
    from layerkit.primitives.nn import l2_normalize as l2_normalize
    from layerkit.primitives.nn import log_softmax as log_softmax
    from layerkit.primitives.nn import softmax as softmax
    from layerkit.primitives.nn import softplus as softplus
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
    from layerkit.primitives.segment import segment_max as segment_max
    from layerkit.primitives.segment import segment_mean as segment_mean
    from layerkit.primitives.segment import segment_min as segment_min
    from layerkit.primitives.segment import segment_prod as segment_prod
    from layerkit.primitives.segment import segment_sqrt_n as segment_sqrt_n
    from layerkit.primitives.segment import segment_sum as segment_sum
    from layerkit.primitives.segment import unsorted_segment_max as unsorted_segment_max
    from layerkit.primitives.segment import unsorted_segment_mean as unsorted_segment_mean
    from layerkit.primitives.segment import unsorted_segment_min as unsorted_segment_min
    from layerkit.primitives.segment import unsorted_segment_prod as unsorted_segment_prod
    from layerkit.primitives.segment import unsorted_segment_sqrt_n as unsorted_segment_sqrt_n
    from layerkit.primitives.segment import unsorted_segment_sum as unsorted_segment_sum
    from layerkit.primitives.sorting import argsort as argsort
    from layerkit.primitives.sorting import in_top_k as in_top_k
    from layerkit.primitives.sorting import sort as sort
    from layerkit.primitives.sorting import top_k as top_k
# ---- END op registry exports ----
__all__ = sorted(NAMESPACES["math"])


def __getattr__(name: str):
    raise missing_attribute("layerkit.math", name)
