"""Per-element random streams for functions run by ``Dataset.map``.

A map runs the user function from a frame of one of the functions registered with
:func:`keyed`, whose locals ``src`` (the pass's :class:`SeedSource`) and ``index`` (the
element's position) name the element. :func:`element_rng` walks up the calling thread's
frames to the nearest such frame and turns ``(seed, pass, index)`` into a NumPy
generator, so random augmentation inside a map is reproducible whatever
``num_parallel_calls`` is, whichever thread or process runs the call, and after an
iterator is restored mid-epoch. A map inside another map's function is found first, and
outside a mapped function there is no such frame. The map's hot loop pays nothing for
this. The walk is a CPython trick (``layerkit._core.tricks``, with its measurement): with
the tricks off the loops call the function through a :class:`KeyedCall`, which sets a
thread-local key around each call.
"""
from __future__ import annotations

import threading

import numpy as np

from layerkit._core import tricks as _tricks


class _Context(threading.local):
    # class-level defaults are what every new thread sees
    gen: np.random.Generator | None = None
    gen_key: tuple | None = None
    key: tuple | None = None  # (SeedSource, index) set by KeyedCall when the frame walk is off


_CTX = _Context()
_KEYED: dict = {}  # code object -> (name of the index local, offset)


def keyed(fn=None, *, index: str = "index", offset: int = 0):
    """Register ``fn`` as a function that calls map functions with a local ``src`` and
    the element's position in the local ``index`` (plus ``offset``); ``src`` must be
    unbound while it pulls input, which may run an upstream stage's function."""
    def register(f):
        _KEYED[f.__code__] = (index, offset)
        return f
    return register if fn is None else register(fn)


class SeedSource:
    """The seed of one map pass: the map's seed and the pass counters."""

    __slots__ = ("seed", "top", "inner")

    def __init__(self, seed: int, top: int, inner: int) -> None:
        self.seed, self.top, self.inner = int(seed), int(top), int(inner)

    def entropy(self, index: int) -> list:
        return [self.seed, self.top, self.inner, int(index)]

    def as_tuple(self) -> tuple:
        return (self.seed, self.top, self.inner)


if _tricks.FRAME_WALK:
    def current_key():
        """``(SeedSource, index)`` of the element being mapped in this thread, or None."""
        return _tricks.walk_to_key(_KEYED)
else:
    def current_key():
        """``(SeedSource, index)`` of the element being mapped in this thread, or None."""
        return _CTX.key


#: True when map loops must hand the user function a :class:`KeyedCall` (the frame walk
#: is off): ``if PLAIN: fn = KeyedCall(fn, src, first_index)``.
PLAIN = not _tricks.FRAME_WALK


class KeyedCall:
    """The plain path of :func:`current_key`: ``fn`` with the element's key set in a
    thread-local around each call, for elements ``index``, ``index + 1``, ... in order."""

    __slots__ = ("fn", "src", "index")

    def __init__(self, fn, src, index: int) -> None:
        self.fn, self.src, self.index = fn, src, index

    def __call__(self, *args):
        ctx = _CTX
        outer = ctx.key  # a map inside another map's function: put the outer key back
        ctx.key = (self.src, self.index)
        self.index += 1
        try:
            return self.fn(*args)
        finally:
            ctx.key = outer


def element_rng() -> np.random.Generator:
    """The random generator of the element being mapped.

    Call it inside a function passed to ``Dataset.map``: the generator is seeded from
    the map's ``seed`` (drawn from layerkit's global generator when None), the pass
    number and the element's position, so results do not depend on thread scheduling.

    Raises:
        RuntimeError: when called outside a mapped function.

    Examples:
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
    key = current_key()
    if key is None:
        raise RuntimeError("lk.data.element_rng() can only be called inside a function "
                           "passed to Dataset.map")
    src, index = key
    ctx = _CTX
    cached, gen = ctx.gen_key, ctx.gen
    if gen is None or cached is None or cached[0] is not src or cached[1] != index:
        gen = ctx.gen = np.random.Generator(
            np.random.PCG64(np.random.SeedSequence(src.entropy(index))))
        ctx.gen_key = (src, index)
    return gen


def element_seed() -> int:
    """A fresh seed from :func:`element_rng`, for ops that take ``seed=`` (``lk.random.*``)."""
    return int(element_rng().integers(0, 2**63 - 1))


class Stream:
    """The random words of one pass of a random stage (``Dataset.random``, the selector of
    ``sample_from_datasets``, ...): a PCG64 generator seeded with ``entropy``.

    Its state is the entropy and the number of 64-bit words drawn; a restored stream
    advances a new generator by that many words, so resuming is exact and costs nothing
    per word drawn before.
    """

    __slots__ = ("entropy", "drawn", "_bg")

    def __init__(self, entropy, drawn: int = 0) -> None:
        self.entropy = [int(e) for e in entropy]
        self._bg = np.random.PCG64(np.random.SeedSequence(self.entropy))
        self.drawn = int(drawn)
        if drawn:
            self._bg.advance(self.drawn)

    def words(self, n: int) -> np.ndarray:
        """The next ``n`` 64-bit words (uint64)."""
        self.drawn += n
        return self._bg.random_raw(n)

    def uniform(self) -> float:
        """A float in [0, 1) from the next word (its top 53 bits)."""
        self.drawn += 1
        return (int(self._bg.random_raw()) >> 11) * (1.0 / 9007199254740992.0)

    def state(self) -> dict:
        return {"entropy": list(self.entropy), "drawn": self.drawn}

    @classmethod
    def from_state(cls, state: dict) -> Stream:
        return cls(state["entropy"], int(state["drawn"]))


def pass_entropy(node, ctx, rerandomize: bool) -> list:
    """The entropy of a random stage's stream for the pass ``ctx`` starts: the node's
    seed (``ctx`` has the saved one after a restore), and the pass counters when each
    pass draws anew."""
    top, inner = ctx.epoch(node)
    seed = ctx.seed(node, node.seed)
    return [seed, top, inner] if rerandomize else [seed, 0, 0]
