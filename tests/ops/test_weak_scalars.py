"""Python scalars with float32 Tensors: the eager fast paths hand NumPy a cached 0-d
float32 array instead of the Python scalar. The answers must be NumPy's own, bit for bit."""
from __future__ import annotations

import operator

import numpy as np
import pytest

import layerkit as lk
from layerkit.primitives import elementwise as E

_VALUES = [2, 1, -3, 7, 2.0, 0.1, -1.5, 1e-30, 3.4e38, 1e300, -1e300, 2**24, 2**24 + 1,
           -(2**24) - 3, 10**30, 0, 0.0, -0.0, float("inf"), float("-inf"), float("nan")]
_OPS = [operator.add, operator.sub, operator.mul, operator.truediv]
_PUBLIC = [lk.add, lk.subtract, lk.multiply, lk.divide]


def _same(got, want) -> None:
    got = np.asarray(got)
    assert got.dtype == want.dtype
    assert got.shape == want.shape
    assert np.array_equal(got, want, equal_nan=True)
    assert np.array_equal(np.signbit(got), np.signbit(want))  # -0.0 stays -0.0


@pytest.fixture
def arrays():
    a = np.array([[1.5, -2.0, 0.0], [-0.0, 3e38, 1e-40]], np.float32)
    return a, lk.constant(a)


@pytest.mark.parametrize("v", _VALUES, ids=repr)
@pytest.mark.parametrize("op", _OPS, ids=lambda f: f.__name__)
def test_operators_with_python_scalars_match_numpy(arrays, op, v):
    a, t = arrays
    with np.errstate(all="ignore"):
        _same(op(t, v).numpy(), op(a, v))
        _same(op(v, t).numpy(), op(v, a))
        _same(op(op(t, v), v).numpy(), op(op(a, v), v))  # the cached operand again


@pytest.mark.parametrize("v", [2, 0.1, -0.0, 1e300, 2**24 + 1], ids=repr)
@pytest.mark.parametrize("fn", _PUBLIC, ids=lambda f: f.__name__)
def test_public_binary_ops_with_python_scalars_match_numpy(arrays, fn, v):
    a, t = arrays
    ufunc = {lk.add: np.add, lk.subtract: np.subtract, lk.multiply: np.multiply,
             lk.divide: np.divide}[fn]
    with np.errstate(all="ignore"):
        _same(fn(t, v).numpy(), ufunc(a, v))
        _same(fn(v, t).numpy(), ufunc(v, a))


def test_scalar_cache_holds_only_exact_read_only_values():
    t = lk.constant(np.ones(3, np.float32))
    with np.errstate(over="ignore"):
        _ = t * 0.25, t + 2**24 + 1, t * 1e300, t - 0.0
    cache = E._F32_SCALARS
    assert 0.25 in cache and cache[0.25].dtype == np.float32 and cache[0.25].ndim == 0
    assert not cache[0.25].flags.writeable
    assert 2**24 + 1 not in cache  # not exact in float32: NumPy's own cast decides
    assert 1e300 not in cache  # overflows float32
    assert all(k != 0 for k in cache)  # 0.0 and -0.0 are one dict key but two operands


def test_scalar_cache_is_bounded():
    saved = dict(E._F32_SCALARS)
    E._F32_SCALARS.clear()  # (the operators hold the dict itself: never rebind it)
    try:
        t = lk.constant(np.ones(2, np.float32))
        for i in range(E._F32_SCALARS_MAX + 50):
            v = 1.0 + i / 1024
            np.testing.assert_array_equal((t * v).numpy(), np.ones(2, np.float32) * v)
            np.testing.assert_array_equal((v - t).numpy(), v - np.ones(2, np.float32))
        assert len(E._F32_SCALARS) == E._F32_SCALARS_MAX
    finally:
        E._F32_SCALARS.clear()
        E._F32_SCALARS.update(saved)


def test_other_dtypes_and_python_scalar_tensors_keep_numpy_results():
    for dt in (np.float64, np.float16, np.int32, np.int64):
        a = np.arange(1, 5).astype(dt)
        t = lk.constant(a)
        for v in (3, 0.5):
            _same((t * v).numpy(), a * v)
            _same((v - t).numpy(), v - a)
    s = lk.constant(np.float32(2.5))  # 0-d: NumPy answers with a scalar
    _same((s * 2).numpy(), np.float32(2.5) * 2)
    assert (s * 2).dtype == np.float32
