"""Shared helpers for the layerkit.data tests: the one save/restore check every node uses,
value conversion for comparisons, and thread-leak waiting."""
from __future__ import annotations

import gc
import json
import threading
import time

import numpy as np

import layerkit.data as lkd


def values(ds_or_iter) -> list:
    """All elements as plain Python values (lists, tuples, dicts, numbers, bytes)."""
    it = ds_or_iter.as_numpy_iterator() if isinstance(ds_or_iter, lkd.Dataset) else ds_or_iter
    return [plain(e) for e in it]


def plain(e):
    if isinstance(e, dict):
        return {k: plain(v) for k, v in e.items()}
    if isinstance(e, tuple):
        return tuple(plain(v) for v in e)
    if hasattr(e, "_v"):
        e = np.asarray(e._v)
    if isinstance(e, (np.ndarray, np.generic)):
        return np.asarray(e).tolist()
    return e


def roundtrip(state):
    """Pass a state through JSON (arrays set aside, as a checkpoint stores them).

    Fails on anything that is neither a JSON value nor an ndarray (NumPy scalars,
    tuples as dict keys, arbitrary objects), so states stay checkpointable."""
    arrays: list = []

    def split(o):
        if isinstance(o, np.ndarray):
            assert not o.dtype.hasobject, "object arrays are not checkpointable"
            arrays.append(o.copy())
            return {"__array__": len(arrays) - 1}
        if isinstance(o, dict):
            assert all(isinstance(k, str) for k in o), f"non-str keys in {list(o)}"
            return {k: split(v) for k, v in o.items()}
        if isinstance(o, list):
            return [split(v) for v in o]
        assert o is None or type(o) in (bool, int, float, str), f"not JSON: {type(o)} {o!r}"
        return o

    def join(o):
        if isinstance(o, dict):
            if set(o) == {"__array__"}:
                return arrays[o["__array__"]]
            return {k: join(v) for k, v in o.items()}
        if isinstance(o, list):
            return [join(v) for v in o]
        return o

    return join(json.loads(json.dumps(split(state))))


def assert_save_restore(build, ks=None, expected=None):
    """The generic state test: take k elements, save, restore into a fresh iterator of a
    freshly built dataset, and get exactly the elements the original iterator gives next.

    ``build()`` returns the dataset (called anew for the restore, as a new process would).
    ``expected``: the full element list, checked for the saving iterator when given.
    """
    ds = build()
    n = sum(1 for _ in ds) if expected is None else len(expected)
    if ks is None:
        ks = sorted({0, 1, n // 3, n // 2, max(n - 1, 0), n})
    for k in ks:
        it = iter(ds)
        head = [plain(next(it)) for _ in range(k)]
        state = roundtrip(it.get_state())
        tail = [plain(e) for e in it]  # the saving iterator goes on unchanged
        if expected is not None:
            assert head + tail == expected, f"saving iterator changed the stream at k={k}"
        it2 = iter(build())
        it2.set_state(state)
        restored = [plain(e) for e in it2]
        assert restored == tail, (f"restored iterator differs at k={k}: "
                                  f"{restored[:5]}... != {tail[:5]}...")
        # a state can be restored twice, and into an iterator that already ran
        it3 = iter(ds)
        next(it3, None)
        it3.set_state(state)
        assert [plain(e) for e in it3] == tail, f"restoring into a used iterator failed at k={k}"
        it.close()
        it2.close()
        it3.close()


def settle_threads() -> None:
    """Wait for the threads of earlier tests to end (each test starts from a settled
    thread count). Collects garbage first: ``pytest.raises`` keeps an error, and through
    its traceback a failed iterator, in a reference cycle with the test's frame. lk.nn's
    process-lifetime kernel pool ("layerkit-nn_*") is not waited for."""
    gc.collect()
    resident = sum(1 for t in threading.enumerate() if t.name.startswith("layerkit-nn"))
    wait_for_threads(1 + resident, timeout=3.0)


def wait_for_threads(baseline: int, timeout: float = 5.0) -> int:
    """Wait until threading.active_count() is back to ``baseline``; return the count."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        n = threading.active_count()
        if n <= baseline:
            return n
        time.sleep(0.02)
    return threading.active_count()
