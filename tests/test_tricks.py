"""The CPython tricks of layerkit._core.tricks and their one off switch.

Each check runs in a fresh interpreter, with ``LAYERKIT_NO_TRICKS=1`` and without, since
the switch is read once at import. Each trick is observed by what it does (a buffer
reused, a Tensor refilled, frames walked), and both runs must give the same values.
"""
import json
import os
import subprocess
import sys

import pytest

_PROBE = r"""
import json, sys, tracemalloc
import numpy as np
import layerkit as lk
from layerkit._core import tricks
from layerkit.data import rng

out = {"enabled": lk.config.tricks_enabled(), "active": tricks.ACTIVE}

# ELIDE: (a * a) + a on 4 MB operands allocates one result buffer, not two.
a = lk.constant(np.linspace(0, 1, 1 << 20, dtype=np.float32))
tracemalloc.start()
r = (a * a) + a
out["elide_peak_mb"] = tracemalloc.get_traced_memory()[1] / 2**20
tracemalloc.stop()
out["elide_sum"] = float(np.asarray(r).astype(np.float64).sum())

# RECYCLE: the fused batch-first loop hands fn the same Tensor object batch after
# batch when fn drops it (else each batch brings a new one while the last still lives).
ids = []
def f(x, y):
    ids.append(id(x))
    return x * 2.0, y
x = np.arange(64 * 3, dtype=np.float32).reshape(64, 3)
y = np.arange(64, dtype=np.int64)
ds = lk.data.Dataset.from_tensor_slices((x, y)).batch(4).map(f)
vals = [np.asarray(p).sum() for p, _ in ds]
out["recycle_same_ids"] = sum(i == j for i, j in zip(ids, ids[1:]))
out["recycle_batches"] = len(ids)
out["recycle_sum"] = float(sum(vals))

# FRAME_WALK: element_rng walks frames only when the trick is on; the values match.
walks = []
walk = tricks.walk_to_key
def counting(keyed):
    walks.append(1)
    return walk(keyed)
tricks.walk_to_key = counting
def jitter(v):
    return v + int(lk.data.element_rng().integers(1000))
def jitter_pair(v, w):
    return jitter(v), w
r = lk.data.Dataset.range(10)
out["rng_serial"] = [int(v) for v in r.map(jitter, seed=3).as_numpy_iterator()]
out["rng_parallel"] = [int(v) for v in r.map(jitter, num_parallel_calls=2, seed=3)
                       .as_numpy_iterator()]
out["rng_batched"] = [int(v) for v in r.map(jitter, seed=3).batch(4)
                      .unbatch().as_numpy_iterator()]
nested = r.map(lambda v: v + next(iter(lk.data.Dataset.range(2).map(jitter, seed=5))),
               seed=4)
out["rng_nested"] = [int(v) for v in nested.as_numpy_iterator()]
xs = np.arange(40, dtype=np.int64)
fused = lk.data.Dataset.from_tensor_slices((xs, xs)).batch(4).map(jitter_pair, seed=6)
out["rng_fused"] = [np.asarray(p).tolist() for p, _ in fused]
out["rng_walks"] = len(walks)
print(json.dumps(out))
"""


def _probe(**env) -> dict:
    base = {k: v for k, v in os.environ.items() if k != "LAYERKIT_NO_TRICKS"}
    proc = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True,
                          env={**base, **env}, check=True)
    return json.loads(proc.stdout)


@pytest.fixture(scope="module")
def runs():
    return _probe(), _probe(LAYERKIT_NO_TRICKS="1")


def test_the_switch_turns_every_trick_off(runs):
    on, off = runs
    assert off["enabled"] is False
    assert off["active"] == {"elide": False, "recycle": False, "frame_walk": False}
    assert on["enabled"] is True
    assert on["active"]["recycle"] and on["active"]["frame_walk"]
    assert on["active"]["elide"] == (sys.implementation.name == "cpython"
                                     and sys.version_info[:2] == (3, 11))


@pytest.mark.parametrize("value, enabled", [("0", True), ("", True), ("false", True),
                                            ("1", False), ("yes", False)])
def test_the_environment_variable_is_read_at_import(value, enabled):
    code = "import layerkit as lk; print(lk.config.tricks_enabled())"
    base = {k: v for k, v in os.environ.items() if k != "LAYERKIT_NO_TRICKS"}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**base, "LAYERKIT_NO_TRICKS": value}, check=True)
    assert proc.stdout.strip() == str(enabled)


def test_elision_reuses_the_temporary_only_with_the_trick_on(runs):
    on, off = runs
    assert on["elide_sum"] == off["elide_sum"]
    assert off["elide_peak_mb"] >= 7.9  # the product and the sum: two 4 MiB buffers
    if on["active"]["elide"]:
        assert on["elide_peak_mb"] < 4.5  # the sum was written into the product


def test_recycling_refills_tensors_only_with_the_trick_on(runs):
    on, off = runs
    assert on["recycle_sum"] == off["recycle_sum"]
    assert on["recycle_batches"] == off["recycle_batches"] == 16
    assert on["recycle_same_ids"] == 15
    assert off["recycle_same_ids"] == 0


def test_element_rng_walks_frames_only_with_the_trick_on(runs):
    on, off = runs
    for key in ("rng_serial", "rng_parallel", "rng_batched", "rng_nested", "rng_fused"):
        assert on[key] == off[key], key
    assert on["rng_serial"] == on["rng_parallel"] == on["rng_batched"]
    assert on["rng_walks"] > 0
    assert off["rng_walks"] == 0
