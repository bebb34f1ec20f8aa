"""Loss scaling for custom training loops under a strategy (``lk.nn``'s
``compute_average_loss`` and ``scale_regularization_loss``, TensorFlow's functions).

With ``strategy.run`` and an optimizer created in the strategy's scope, gradients are
*summed* over the replicas, so each replica scales its loss by the global batch size.
"""
from __future__ import annotations

import numpy as np

from layerkit._core import distribution
from layerkit._core.convert import convert_to_tensor
from layerkit._core.tensor import Tensor
from layerkit._core.types import TensorLike
from layerkit.primitives.elementwise import cast
from layerkit.primitives.reduce import reduce_sum

__all__ = ["compute_average_loss", "scale_regularization_loss"]


def _replicas(what: str) -> int:
    s = distribution.scope
    if s is None:
        return 1
    if not s._in_run:
        raise RuntimeError(f"You are calling `{what}` in cross replica context, while it was "
                           f"expected to be called in replica context (inside strategy.run)")
    return s.num_replicas_in_sync


def compute_average_loss(per_example_loss: TensorLike, sample_weight: TensorLike | None = None,
                         global_batch_size: int | None = None) -> Tensor:
    """The sum of the (weighted) per-example losses divided by the global batch size.

    Args:
        per_example_loss: losses of rank >= 1 (one per example, or more per example).
        sample_weight: optional weights broadcast against the losses.
        global_batch_size: the examples in one step over all replicas; default this
            replica's first dimension times ``num_replicas_in_sync``.

    Returns:
        A scalar in the losses' dtype.

    Raises:
        ValueError: a scalar loss, or a global batch size that is not positive.
        TypeError: a global batch size that is not an int.
        RuntimeError: the default batch size asked for in a cross-replica context.

    Examples:
        >>> import layerkit as lk
        >>> float(lk.nn.compute_average_loss([1.0, 2.0, 3.0], global_batch_size=6))
        1.0
    """
    loss = convert_to_tensor(per_example_loss)
    if len(loss.shape) < 1:
        raise ValueError(f"compute_average_loss: per_example_loss must have rank >= 1 (one "
                         f"loss per example), received a scalar of shape {loss.shape}")
    dtype = loss.dtype
    if sample_weight is not None:
        loss = cast(loss * cast(convert_to_tensor(sample_weight), dtype), dtype)
    if global_batch_size is None:
        global_batch_size = int(loss.shape[0]) * _replicas("compute_average_loss")
    elif isinstance(global_batch_size, bool) or not isinstance(global_batch_size,
                                                               (int, np.integer)):
        raise TypeError(f"compute_average_loss: global_batch_size must be an int, received "
                        f"{global_batch_size!r}")
    elif global_batch_size <= 0:
        raise ValueError(f"compute_average_loss: global_batch_size must be positive, received "
                         f"{global_batch_size}")
    return cast(reduce_sum(loss) / np.asarray(global_batch_size, dtype), dtype)


def scale_regularization_loss(regularization_loss: TensorLike) -> Tensor:
    """The sum of ``regularization_loss`` divided by ``num_replicas_in_sync`` (so that
    summing gradients over the replicas counts it once)."""
    loss = convert_to_tensor(regularization_loss)
    n = _replicas("scale_regularization_loss")
    return cast(reduce_sum(loss) / np.asarray(n, loss.dtype), loss.dtype)
