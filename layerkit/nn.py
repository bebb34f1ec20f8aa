"""``lk.nn``: activations, softmax, convolution and pooling, dropout, normalisation and
cross-entropy ops (TensorFlow names and semantics; channels last: NWC / NHWC / NDHWC, kernels
*spatial-IO).

    >>> import layerkit as lk
    >>> lk.nn.softmax([[1.0, 1.0]]).numpy()
    array([[0.5, 0.5]], dtype=float32)
"""
from typing import TYPE_CHECKING

from layerkit._core.tensor import Tensor
from layerkit._core.types import TensorLike
from layerkit._missing import missing_attribute
from layerkit.distribute.losses import compute_average_loss, scale_regularization_loss
from layerkit.primitives.conv import (
    avg_pool2d,
    conv2d,
    conv2d_transpose,
    depthwise_conv2d,
    max_pool2d,
)
from layerkit.primitives.conv_nd import (
    avg_pool,
    avg_pool1d,
    avg_pool3d,
    conv1d,
    conv1d_transpose,
    conv3d,
    conv3d_transpose,
    conv_transpose,
    convolution,
    max_pool,
    max_pool1d,
    max_pool3d,
    pool,
    separable_conv2d,
)
from layerkit.primitives.nn import (
    batch_normalization,
    dropout,
    elu,
    gelu,
    l2_normalize,
    leaky_relu,
    log_softmax,
    moments,
    relu,
    relu6,
    selu,
    sigmoid_cross_entropy_with_logits,
    silu,
    softmax,
    softmax_cross_entropy_with_logits,
    softplus,
    sparse_softmax_cross_entropy_with_logits,
)
from layerkit.primitives.registry import NAMESPACES

swish = silu  # Keras/TF alias


def local_response_normalization(input: TensorLike, depth_radius: int = 5,  # noqa: A002
                                 bias: float = 1.0, alpha: float = 1.0, beta: float = 0.5,
                                 name: str | None = None) -> Tensor:
    """``input / (bias + alpha * sum(input**2 over 2*depth_radius+1 channels))**beta``
    along the last axis (``tf.nn.local_response_normalization`` / ``lrn``), built from
    differentiable ops: a channel-window sum by cumulative sums."""
    from layerkit._core.convert import convert_to_tensor
    from layerkit.primitives import array as _array
    from layerkit.primitives import elementwise as _ew
    from layerkit.primitives import reduce as _reduce

    x = convert_to_tensor(input)
    if len(x.shape) == 0:
        raise ValueError("lk.nn.local_response_normalization: needs a channel axis (the "
                         "last one); received a scalar (rank 0)")
    r = int(depth_radius)
    c = x.shape[-1]
    sq = _ew.square(x)
    pads = [[0, 0]] * (len(x.shape) - 1) + [[r + 1, r]]
    cs = _reduce.cumsum(_array.pad(sq, pads), axis=-1)
    window = _ew.subtract(cs[..., 2 * r + 1:2 * r + 1 + c], cs[..., 0:c])
    return _ew.divide(x, _ew.pow(_ew.add(_ew.multiply(window, alpha), bias), beta))


lrn = local_response_normalization


def atrous_conv2d(value: TensorLike, filters: TensorLike, rate: int, padding: str,
                  name: str | None = None) -> Tensor:
    """Dilated 2-D convolution (``tf.nn.atrous_conv2d``): :func:`conv2d` with stride 1
    and ``dilations=rate``."""
    return conv2d(value, filters, strides=1, padding=padding, dilations=rate)


# Ops published to tf.nn by their own modules (sigmoid, tanh, top_k, bias_add, ...).
globals().update(NAMESPACES["nn"])
# ---- BEGIN op registry exports for type checkers (generated) ----
if TYPE_CHECKING:  # tests/test_public_hints.py writes this block
    from layerkit.primitives.elementwise import sigmoid as sigmoid
    from layerkit.primitives.elementwise import tanh as tanh
    from layerkit.primitives.math_ops import bias_add as bias_add
    from layerkit.primitives.math_ops import crelu as crelu
    from layerkit.primitives.math_ops import embedding_lookup as embedding_lookup
    from layerkit.primitives.math_ops import l2_loss as l2_loss
    from layerkit.primitives.math_ops import log_poisson_loss as log_poisson_loss
    from layerkit.primitives.math_ops import log_sigmoid as log_sigmoid
    from layerkit.primitives.math_ops import softsign as softsign
    from layerkit.primitives.math_ops import (
        weighted_cross_entropy_with_logits as weighted_cross_entropy_with_logits,
    )
    from layerkit.primitives.rearrange import depth_to_space as depth_to_space
    from layerkit.primitives.rearrange import space_to_depth as space_to_depth
    from layerkit.primitives.rearrange import zero_fraction as zero_fraction
    from layerkit.primitives.sorting import top_k as top_k
# ---- END op registry exports ----

__all__ = [
    "relu", "relu6", "leaky_relu", "elu", "selu", "gelu", "softplus", "silu", "swish",
    "softmax", "log_softmax", "conv2d", "conv2d_transpose", "depthwise_conv2d",
    "max_pool2d", "avg_pool2d", "dropout", "moments", "batch_normalization",
    "l2_normalize", "softmax_cross_entropy_with_logits",
    "sparse_softmax_cross_entropy_with_logits", "sigmoid_cross_entropy_with_logits",
    "conv1d", "conv3d", "convolution", "conv1d_transpose", "conv3d_transpose",
    "conv_transpose", "separable_conv2d", "max_pool1d", "max_pool3d", "avg_pool1d",
    "avg_pool3d", "max_pool", "avg_pool", "pool", "compute_average_loss",
    "scale_regularization_loss", "atrous_conv2d", "local_response_normalization", "lrn",
    *sorted(NAMESPACES["nn"]),
]


def __getattr__(name: str):
    raise missing_attribute("layerkit.nn", name)
