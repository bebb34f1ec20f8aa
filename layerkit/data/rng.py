"""Per-element random streams for functions run by ``Dataset.map``.

A map stage sets, for the duration of each call of the user function, a key
``(seed, pass, element index)`` in a thread-local. :func:`element_rng` turns the key
into a NumPy generator, so random augmentation inside a map is reproducible whatever
``num_parallel_calls`` is, whichever thread or process runs the call, and after an
iterator is restored mid-epoch.
"""
from __future__ import annotations

import threading

import numpy as np

_CTX = threading.local()


class SeedSource:
    """The seed of one map pass: the map's seed and the pass counters."""

    __slots__ = ("seed", "top", "inner")

    def __init__(self, seed: int, top: int, inner: int) -> None:
        self.seed, self.top, self.inner = int(seed), int(top), int(inner)

    def entropy(self, index: int) -> list:
        return [self.seed, self.top, self.inner, int(index)]

    def as_tuple(self) -> tuple:
        return (self.seed, self.top, self.inner)


def set_key(key) -> None:
    _CTX.key = key


def element_rng() -> np.random.Generator:
    """The random generator of the element being mapped.

    Call it inside a function passed to ``Dataset.map``: the generator is seeded from
    the map's ``seed`` (drawn from layerkit's global generator when None), the pass
    number and the element's position, so results do not depend on thread scheduling.

    Raises:
        RuntimeError: when called outside a mapped function.

    Example:
        >>> import layerkit as lk
        >>> import layerkit.data
        >>> def jitter(x):
        ...     return x + int(lk.data.element_rng().integers(100))
        >>> ds = lk.data.Dataset.range(4)
        >>> serial = list(ds.map(jitter, seed=1).as_numpy_iterator())
        >>> threads = list(ds.map(jitter, num_parallel_calls=3, seed=1).as_numpy_iterator())
        >>> serial == threads
        True
    """
    key = getattr(_CTX, "key", None)
    if key is None:
        raise RuntimeError("lk.data.element_rng() can only be called inside a function "
                           "passed to Dataset.map")
    if getattr(_CTX, "gen_key", None) is not key:
        src, index = key
        _CTX.gen = np.random.Generator(np.random.PCG64(np.random.SeedSequence(src.entropy(index))))
        _CTX.gen_key = key
    return _CTX.gen


def element_seed() -> int:
    """A fresh seed from :func:`element_rng`, for ops that take ``seed=`` (``lk.random.*``)."""
    return int(element_rng().integers(0, 2**63 - 1))
