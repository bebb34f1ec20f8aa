"""``lk.random``: seeded random ops and generators.

``set_seed(s)`` makes every seedless call (and every seedless consumer: initializers,
dropout, shuffling) reproducible; an op-level ``seed`` alone gives the same result on
every eager call, and inside ``lk.function`` a reproducible sequence (a fresh draw per
call, as an op seed in a TensorFlow graph); ``Generator(seed)`` is an independent
stream with the same methods, also accepted as a ``seed`` (each call continues it);
``SeedGenerator(seed)`` is Keras 3's stateful seed source (a ``[seed, counter]`` state).

    >>> import layerkit as lk
    >>> lk.random.set_seed(0)
    >>> a = lk.random.normal([3])
    >>> lk.random.set_seed(0)
    >>> bool((lk.random.normal([3]).numpy() == a.numpy()).all())
    True
"""
from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np

from layerkit._core.tensor import Tensor
from layerkit._core.types import DTypeLike, ShapeLike, TensorLike
from layerkit.primitives.random import (
    FLOATX,
    Generator,
    SeedGenerator,
    _categorical,
    _normal,
    _truncated_normal,
    _uniform,
    categorical,
    gamma,
    get_state,
    global_generator,
    normal,
    poisson,
    set_seed,
    set_state,
    shuffle,
    truncated_normal,
    uniform,
)

__all__ = ["set_seed", "get_state", "set_state", "normal", "uniform", "truncated_normal",
           "categorical", "shuffle", "Generator", "SeedGenerator", "stateless_normal",
           "stateless_uniform", "stateless_truncated_normal", "stateless_categorical",
           "split", "fold_in", "experimental", "gamma", "poisson", "get_global_generator",
           "set_global_generator"]


def get_global_generator() -> Generator:
    """The generator that seedless draws use (``tf.random.get_global_generator``)."""
    return global_generator()


def set_global_generator(generator: Generator) -> None:
    """Make ``generator`` the one seedless draws use (``tf.random.set_global_generator``).

    Raises:
        TypeError: ``generator`` is not an ``lk.random.Generator``.
    """
    from layerkit.primitives import random as _prims

    if not isinstance(generator, Generator):
        raise TypeError(f"lk.random.set_global_generator: expected an lk.random.Generator, "
                        f"received {type(generator).__name__}")
    _prims._GLOBAL[0] = generator


# ---- stateless sampling: the values depend on the seed pair alone ----------------------
def _pair(seed: Any, op: str) -> tuple[int, int]:
    """A TensorFlow stateless seed (two ints: a list, tuple, array or eager Tensor)."""
    try:
        arr = np.asarray(seed)
    except TypeError as e:  # a traced tensor (TracingError is a TypeError)
        raise TypeError(f"{op}: the seed must be known when the function is traced (a "
                        f"list of two ints or an eager tensor), received {seed!r}") from e
    except ValueError:
        arr = np.asarray(None)
    if arr.shape != (2,) or arr.dtype.kind not in "iu":
        raise ValueError(f"{op}: seed must be a shape [2] integer tensor or list (TF's "
                         f"stateless seed), received {seed!r}")
    return int(arr[0]) % (1 << 64), int(arr[1]) % (1 << 64)


def _stateless_source(seed: Any, op: str) -> int:
    # SeedSequence mixes both words, so seeds that differ in either give unrelated streams.
    words = np.random.SeedSequence(list(_pair(seed, op))).generate_state(2, np.uint32)
    return (int(words[0]) << 32) | int(words[1])


def stateless_normal(shape: ShapeLike, seed: TensorLike, mean: TensorLike = 0.0,
                     stddev: TensorLike = 1.0, dtype: DTypeLike = FLOATX,
                     alg: str = "auto_select") -> Tensor:
    """Normal samples that depend only on ``seed`` (a pair of ints), as
    ``tf.random.stateless_normal``: the same seed gives the same values on every call,
    eagerly and inside ``lk.function``. The values are layerkit's own, not TensorFlow's.

    >>> import layerkit as lk
    >>> a = lk.random.stateless_normal([3], seed=[1, 2])
    >>> bool((a.numpy() == lk.random.stateless_normal([3], seed=[1, 2]).numpy()).all())
    True
    """
    return _normal(_stateless_source(seed, "lk.random.stateless_normal"), shape, mean,
                   stddev, dtype)


def stateless_uniform(shape: ShapeLike, seed: TensorLike, minval: TensorLike = 0,
                      maxval: TensorLike | None = None, dtype: DTypeLike = FLOATX,
                      alg: str = "auto_select") -> Tensor:
    """Uniform samples on ``[minval, maxval)`` that depend only on ``seed`` (see
    :func:`stateless_normal`); ``maxval`` is required for integer dtypes."""
    return _uniform(_stateless_source(seed, "lk.random.stateless_uniform"), shape, minval,
                    maxval, dtype)


def stateless_truncated_normal(shape: ShapeLike, seed: TensorLike, mean: TensorLike = 0.0,
                               stddev: TensorLike = 1.0, dtype: DTypeLike = FLOATX,
                               alg: str = "auto_select") -> Tensor:
    """Truncated normal samples (within two standard deviations) that depend only on
    ``seed`` (see :func:`stateless_normal`)."""
    return _truncated_normal(_stateless_source(seed, "lk.random.stateless_truncated_normal"),
                             shape, mean, stddev, dtype)


def stateless_categorical(logits: TensorLike, num_samples: int, seed: TensorLike,
                          dtype: DTypeLike = np.int64) -> Tensor:
    """Class indices drawn from ``softmax(logits)`` that depend only on ``seed``."""
    return _categorical(_stateless_source(seed, "lk.random.stateless_categorical"), logits,
                        num_samples, dtype)


def split(seed: TensorLike, num: int = 2) -> Tensor:
    """``num`` new stateless seeds derived from ``seed``, as a ``(num, 2)`` int64 tensor
    (``tf.random.split``)."""
    a, b = _pair(seed, "lk.random.split")
    words = np.random.SeedSequence([a, b, 0x5EED]).generate_state(2 * int(num), np.uint32)
    return Tensor(words.astype(np.int64).reshape(int(num), 2))


def fold_in(seed: TensorLike, data: int) -> Tensor:
    """A new stateless seed from ``seed`` and an integer ``data`` (``tf.random.fold_in``)."""
    a, b = _pair(seed, "lk.random.fold_in")
    words = np.random.SeedSequence([a, b, int(data) % (1 << 64)]).generate_state(2, np.uint32)
    return Tensor(words.astype(np.int64))


experimental = SimpleNamespace(stateless_split=split, stateless_fold_in=fold_in,
                               Generator=Generator)
