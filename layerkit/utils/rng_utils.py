"""``set_random_seed``: seed every random source a Keras program uses."""
from __future__ import annotations

import random

import numpy as np

from layerkit.primitives import random as _random

__all__ = ["set_random_seed"]


def set_random_seed(seed: int) -> None:
    """Seed Python's ``random``, NumPy's global generator and ``lk.random`` at once.

    As Keras 3's ``keras.utils.set_random_seed`` (which seeds Python, NumPy and the
    backend): after it, initializers, dropout, shuffling in ``fit`` and ``lk.data``, and
    code using ``random`` or ``np.random`` give the same results on every run.

    Args:
        seed: an integer.

    Raises:
        ValueError: ``seed`` is not an integer (the error type Keras raises).

    Examples:
        >>> import layerkit as lk
        >>> lk.utils.set_random_seed(42)
        >>> a = lk.random.normal([2]).numpy()
        >>> lk.utils.set_random_seed(42)
        >>> bool((lk.random.normal([2]).numpy() == a).all())
        True
    """
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise ValueError(f"Expected `seed` argument to be an integer. Received: seed={seed!r} "
                         f"(of type {type(seed)})")
    seed = int(seed)
    random.seed(seed)
    np.random.seed(seed % (1 << 32))   # NumPy's legacy seed is 32-bit
    _random.set_seed(seed)
