"""Shared fixtures: a fixed global seed per test so random draws are reproducible."""
import numpy as np
import pytest

import layerkit as lk


@pytest.fixture(autouse=True)
def _seed_everything():
    lk.random.set_seed(1234) if hasattr(lk, "random") and hasattr(lk.random, "set_seed") else None
    np.random.seed(1234)
    yield


@pytest.fixture
def rng():
    return np.random.default_rng(0)
