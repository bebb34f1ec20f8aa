"""Seeded random ops (no gradients) and the global generator.

``lk.random.set_seed(s)`` reseeds the global generator; every consumer that takes an
optional ``seed`` (initializers, dropout, Dataset.shuffle, Model.fit shuffling) draws
its seed from it with :func:`next_seed` when none is given, so one call makes a whole
program reproducible.
"""
from __future__ import annotations

import numpy as np

__all__: list[str] = []  # public names are exported through layerkit.random


class Generator:
    """A seeded random stream (wraps ``numpy.random.Generator`` / PCG64).

    Args:
        seed: an int; None draws one from the global generator.
    """

    def __init__(self, seed: int | None = None) -> None:
        if seed is None:
            seed = next_seed()
        self._seed = int(seed)
        self._rng = np.random.Generator(np.random.PCG64(self._seed))

    @property
    def numpy_generator(self) -> np.random.Generator:
        return self._rng

    def next_seed(self) -> int:
        """Draw a fresh 63-bit seed from this stream."""
        return int(self._rng.integers(0, 2**63 - 1))

    def get_state(self) -> dict:
        """The stream position as a JSON-able dict (for checkpoints)."""
        st = self._rng.bit_generator.state
        return {"seed": self._seed, "state": str(st["state"]["state"]),
                "inc": str(st["state"]["inc"]), "has_uint32": int(st["has_uint32"]),
                "uinteger": int(st["uinteger"])}

    def set_state(self, state: dict) -> None:
        self._seed = int(state["seed"])
        self._rng.bit_generator.state = {
            "bit_generator": "PCG64",
            "state": {"state": int(state["state"]), "inc": int(state["inc"])},
            "has_uint32": int(state["has_uint32"]), "uinteger": int(state["uinteger"]),
        }


_GLOBAL = [Generator(seed=np.random.SeedSequence().entropy % (2**63))]


def global_generator() -> Generator:
    """The process-wide generator that ``set_seed`` resets."""
    return _GLOBAL[0]


def set_seed(seed: int) -> None:
    """Make every seedless random consumer reproducible from ``seed``."""
    _GLOBAL[0] = Generator(int(seed))


def next_seed() -> int:
    """A fresh seed drawn from the global generator."""
    return _GLOBAL[0].next_seed()


def rng_for(seed: int | None) -> np.random.Generator:
    """A NumPy generator for an op-level ``seed`` (None: drawn from the global one)."""
    return np.random.default_rng(next_seed() if seed is None else int(seed))
