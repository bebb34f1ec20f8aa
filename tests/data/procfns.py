"""Module-level functions for process-based map tests (picklable, for platforms
without fork where worker processes import them)."""
from __future__ import annotations

import numpy as np

import layerkit.data as lkd


def noisy(x):
    return x + int(lkd.element_rng().integers(0, 1000))


def pair_sum(a, b):
    return {"s": np.asarray(a._v) + np.asarray(b._v), "a": a}
