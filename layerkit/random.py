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
from layerkit.primitives.random import (
    Generator,
    SeedGenerator,
    categorical,
    get_state,
    normal,
    set_seed,
    set_state,
    shuffle,
    truncated_normal,
    uniform,
)

__all__ = ["set_seed", "get_state", "set_state", "normal", "uniform", "truncated_normal",
           "categorical", "shuffle", "Generator", "SeedGenerator"]
