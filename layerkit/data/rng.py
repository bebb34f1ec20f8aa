"""Per-element random streams for functions run by ``Dataset.map``.

A map stage sets, for the duration of each call of the user function, a key
``(seed, pass, element index)`` in a thread-local: an :class:`ElementKey` that a map
updates in place per element (cheaper than a new tuple per call on the hot path) and
that a map running inside another map's function restores when it is done.
:func:`element_rng` turns the key into a NumPy generator, so random augmentation inside
a map is reproducible whatever ``num_parallel_calls`` is, whichever thread or process
runs the call, and after an iterator is restored mid-epoch.
"""
from __future__ import annotations

import threading

import numpy as np


class _Context(threading.local):
    key = None  # class-level defaults are what every new thread sees
    gen = None
    gen_key = None


_CTX = _Context()


class SeedSource:
    """The seed of one map pass: the map's seed and the pass counters."""

    __slots__ = ("seed", "top", "inner")

    def __init__(self, seed: int, top: int, inner: int) -> None:
        self.seed, self.top, self.inner = int(seed), int(top), int(inner)

    def entropy(self, index: int) -> list:
        return [self.seed, self.top, self.inner, int(index)]

    def as_tuple(self) -> tuple:
        return (self.seed, self.top, self.inner)


class ElementKey:
    """Which element a map is running: its pass's :class:`SeedSource` and its index."""

    __slots__ = ("src", "index")

    def __init__(self, src: SeedSource, index: int = 0) -> None:
        self.src = src
        self.index = index


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
    ctx = _CTX
    key = ctx.key
    if key is None:
        raise RuntimeError("lk.data.element_rng() can only be called inside a function "
                           "passed to Dataset.map")
    src, index = key.src, key.index
    cached = ctx.gen_key
    if cached is None or cached[0] is not src or cached[1] != index:
        ctx.gen = np.random.Generator(np.random.PCG64(np.random.SeedSequence(src.entropy(index))))
        ctx.gen_key = (src, index)
    return ctx.gen


def element_seed() -> int:
    """A fresh seed from :func:`element_rng`, for ops that take ``seed=`` (``lk.random.*``)."""
    return int(element_rng().integers(0, 2**63 - 1))
