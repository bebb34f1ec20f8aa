"""Jacobians from a tape: one reverse pass per target element (seeded with a one-hot)."""
from __future__ import annotations

import numpy as np

from layerkit._core import context
from layerkit._core.op import wrap
from layerkit._core.tensor import Tensor
from layerkit.autodiff.backprop import backward
from layerkit.ops import array as _array
from layerkit.ops.creation import zeros


def _prepare(tape, target, source):
    if tape._used and not tape._persistent:
        raise RuntimeError(
            "A non-persistent GradientTape can only be used to compute one set of "
            "gradients (jacobian counts as one); use GradientTape(persistent=True)"
        )
    tape._used = True
    if not isinstance(target, Tensor) or not isinstance(source, Tensor):
        raise TypeError("jacobian expects a Tensor target and a Tensor/Variable source")
    return list(tape._nodes)


def _pass(tape, nodes, target, seed: np.ndarray, source):
    """One reverse pass seeded with ``seed`` (the tape records it only if persistent)."""
    seed_t = wrap(seed.reshape(target.shape))
    if tape._persistent:
        return backward(nodes, [target], [seed_t], [source])[0]
    with context.paused(tape):
        return backward(nodes, [target], [seed_t], [source])[0]


def _finish(tape, rows, source, out_shape, unconnected_gradients, stack_axis):
    if not tape._persistent:
        tape._nodes = []
    if all(r is None for r in rows):
        if unconnected_gradients == "zero":
            return zeros(out_shape, dtype=source.dtype)
        return None
    rows = [zeros(source.shape, dtype=source.dtype) if r is None else r for r in rows]
    return _array.reshape(_array.stack(rows, axis=stack_axis), out_shape)


def jacobian(tape, target, source, unconnected_gradients: str = "none"):
    """Full Jacobian, shape ``target.shape + source.shape`` (see GradientTape.jacobian)."""
    nodes = _prepare(tape, target, source)
    n = int(np.prod(target.shape, dtype=np.int64))
    rows = []
    for i in range(n):
        seed = np.zeros(n, dtype=target.dtype)
        seed[i] = 1
        rows.append(_pass(tape, nodes, target, seed, source))
    return _finish(tape, rows, source, target.shape + source.shape, unconnected_gradients, 0)


def batch_jacobian(tape, target, source, unconnected_gradients: str = "none"):
    """Per-example Jacobian ``(batch,) + target.shape[1:] + source.shape[1:]``.

    Assumes example ``b`` of ``target`` depends only on example ``b`` of ``source``
    (TensorFlow's contract); cross-example terms are summed away.
    """
    nodes = _prepare(tape, target, source)
    if not target.shape or not source.shape or target.shape[0] != source.shape[0]:
        raise ValueError(
            f"batch_jacobian needs target and source with the same leading (batch) "
            f"dimension; received {target.shape} and {source.shape}"
        )
    b = target.shape[0]
    inner = int(np.prod(target.shape[1:], dtype=np.int64))
    rows = []
    for j in range(inner):
        seed = np.zeros((b, inner), dtype=target.dtype)
        seed[:, j] = 1
        rows.append(_pass(tape, nodes, target, seed, source))
    # Rows stack on axis 1: (b, inner, *source.shape[1:]).
    out_shape = (b,) + target.shape[1:] + source.shape[1:]
    return _finish(tape, rows, source, out_shape, unconnected_gradients, 1)
