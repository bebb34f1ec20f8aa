"""Module-level functions for process-based map tests (picklable, for platforms
without fork where worker processes import them)."""
from __future__ import annotations

import numpy as np

import layerkit.data as lkd


def noisy(x):
    return x + int(lkd.element_rng().integers(0, 1000))


def pair_sum(a, b):
    return {"s": np.asarray(a._v) + np.asarray(b._v), "a": a}


def killed_at(x):
    """Element 57 SIGKILLs the worker process running it; the others take 1 ms."""
    import os
    import signal
    import time
    if int(x) == 57:
        os.kill(os.getpid(), signal.SIGKILL)
    time.sleep(0.001)
    return x * 2
