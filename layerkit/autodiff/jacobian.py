"""Jacobians from a tape: one reverse pass per target element (seeded with a one-hot)."""
from __future__ import annotations

import numpy as np

from layerkit._core import context
from layerkit._core.nest import flatten
from layerkit._core.nest import pack_sequence_as as pack_like
from layerkit._core.op import wrap
from layerkit._core.tensor import Tensor
from layerkit.autodiff.backprop import backward
from layerkit.primitives import array as _array
from layerkit.primitives.creation import zeros


def _prepare(tape, target, source, unconnected_gradients: str, what: str):
    """Check the call; return the recorded nodes and the flat sources (``source`` may be
    a nested structure, as in TensorFlow)."""
    if unconnected_gradients not in ("none", "zero"):
        raise ValueError(f"{what}: unconnected_gradients must be 'none' or 'zero', "
                         f"received {unconnected_gradients!r}")
    if tape._used and not tape._persistent:
        raise RuntimeError(
            "A non-persistent GradientTape can only be used to compute one set of "
            "gradients (jacobian counts as one); use GradientTape(persistent=True)"
        )
    flat = [source] if isinstance(source, Tensor) else flatten(source)
    if not isinstance(target, Tensor) or not all(isinstance(s, Tensor) for s in flat):
        bad = target if not isinstance(target, Tensor) else next(
            s for s in flat if not isinstance(s, Tensor))
        raise TypeError(f"{what} expects a Tensor target and Tensor/Variable sources "
                        f"(or a nested structure of them); received {type(bad).__name__}")
    tape._used = True
    return list(tape._nodes), flat


def _pass(tape, nodes, target, seed: np.ndarray, source):
    """One reverse pass seeded with ``seed`` (the tape records it only if persistent)."""
    seed_t = wrap(seed.reshape(target.shape))
    if tape._persistent:
        return backward(nodes, [target], [seed_t], [source])[0]
    with context.paused(tape):
        return backward(nodes, [target], [seed_t], [source])[0]


def _finish(rows, source, out_shape, unconnected_gradients, stack_axis):
    if all(r is None for r in rows):
        # No rows at all (an empty target) is an empty Jacobian, not an unconnected one.
        if unconnected_gradients == "zero" or not rows:
            return zeros(out_shape, dtype=source.dtype)
        return None
    rows = [zeros(source.shape, dtype=source.dtype) if r is None else r for r in rows]
    return _array.reshape(_array.stack(rows, axis=stack_axis), out_shape)


def _each_source(tape, source, flat, one):
    """``one(src)`` for every flat source (None for unwatched ones: unconnected, as in
    ``gradient``), packed like ``source``; a non-persistent tape is spent afterwards."""
    watched = tape._watched
    try:
        out = [one(s, id(s) in watched) for s in flat]
    finally:
        if not tape._persistent:
            tape._release()
    return out[0] if isinstance(source, Tensor) else pack_like(source, out)


def jacobian(tape, target, source, unconnected_gradients: str = "none"):
    """Full Jacobian, shape ``target.shape + source.shape`` (see GradientTape.jacobian)."""
    nodes, flat = _prepare(tape, target, source, unconnected_gradients, "jacobian")
    n = int(np.prod(target.shape, dtype=np.int64))

    def one(src, watched):
        rows = []
        for i in range(n if watched else 0):
            seed = np.zeros(n, dtype=target.dtype)
            seed[i] = 1
            rows.append(_pass(tape, nodes, target, seed, src))
        if not watched and n:
            rows = [None]
        return _finish(rows, src, target.shape + src.shape, unconnected_gradients, 0)

    return _each_source(tape, source, flat, one)


def batch_jacobian(tape, target, source, unconnected_gradients: str = "none"):
    """Per-example Jacobian ``(batch,) + target.shape[1:] + source.shape[1:]``.

    Assumes example ``b`` of ``target`` depends only on example ``b`` of ``source``
    (TensorFlow's contract); cross-example terms are summed away.
    """
    nodes, flat = _prepare(tape, target, source, unconnected_gradients, "batch_jacobian")
    for src in flat:
        if not target.shape or not src.shape or target.shape[0] != src.shape[0]:
            raise ValueError(
                f"batch_jacobian needs target and source with the same leading (batch) "
                f"dimension; received {target.shape} and {src.shape}"
            )
    b = target.shape[0]
    inner = int(np.prod(target.shape[1:], dtype=np.int64))

    def one(src, watched):
        rows = []
        for j in range(inner if watched else 0):
            seed = np.zeros((b, inner), dtype=target.dtype)
            seed[:, j] = 1
            rows.append(_pass(tape, nodes, target, seed, src))
        if not watched and inner:
            rows = [None]
        # Rows stack on axis 1: (b, inner, *source.shape[1:]).
        out_shape = (b,) + target.shape[1:] + src.shape[1:]
        return _finish(rows, src, out_shape, unconnected_gradients, 1)

    return _each_source(tape, source, flat, one)
