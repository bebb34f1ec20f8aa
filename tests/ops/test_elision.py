"""Operators reuse a large temporary's buffer (like NumPy) and never touch a live tensor."""
import functools
import operator
import tracemalloc

import numpy as np
import pytest

import layerkit as lk
from layerkit.primitives import elementwise as E

N = 1 << 17  # 512 KiB of float32: above the 256 KiB elision threshold


@pytest.fixture
def ab():
    a = lk.constant(np.linspace(1.0, 2.0, N, dtype=np.float32))
    b = lk.constant(np.linspace(3.0, 4.0, N, dtype=np.float32))
    return a, b, a.numpy().copy(), b.numpy().copy()


def _unchanged(ab):
    a, b, a0, b0 = ab
    np.testing.assert_array_equal(a.numpy(), a0)
    np.testing.assert_array_equal(b.numpy(), b0)


@pytest.mark.skipif(not E._ELIDE, reason="elision is specific to CPython 3.11")
def test_temporary_buffer_is_reused(ab):
    a, b, a0, b0 = ab

    def peak(f):
        tracemalloc.start()
        try:
            out = f()
            return out, tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    out, reused = peak(lambda: (a * b) + a)
    _, fresh = peak(lambda: lk.add(lk.multiply(a, b), a))   # plain calls never elide
    np.testing.assert_allclose(out.numpy(), a0 * b0 + a0, rtol=1e-6)
    assert reused < 0.75 * fresh  # one N-element buffer instead of two
    _unchanged(ab)


def test_named_and_held_tensors_are_never_modified(ab):
    a, b, a0, b0 = ab
    c = a * b
    d = c + a                     # c is named: no reuse
    e = a + b                     # both named
    f = lk.add(c, a)              # plain calls never elide
    held = [a * b, a * b]
    g = held[0] - a
    h = sum(held)                 # sum's own accumulator may be reused, not the list items
    k = functools.reduce(operator.mul, held)
    np.testing.assert_allclose(c.numpy(), a0 * b0, rtol=1e-6)
    np.testing.assert_allclose(d.numpy(), a0 * b0 + a0, rtol=1e-6)
    np.testing.assert_allclose(e.numpy(), a0 + b0, rtol=1e-6)
    np.testing.assert_allclose(f.numpy(), a0 * b0 + a0, rtol=1e-6)
    for t in held:
        np.testing.assert_allclose(t.numpy(), a0 * b0, rtol=1e-6)
    np.testing.assert_allclose(g.numpy(), a0 * b0 - a0, rtol=1e-6)
    np.testing.assert_allclose(h.numpy(), 2 * a0 * b0, rtol=1e-6)
    np.testing.assert_allclose(k.numpy(), (a0 * b0) ** 2, rtol=1e-5)
    _unchanged(ab)


def test_no_reuse_under_a_tape_or_of_views_and_variables(ab):
    a, b, a0, b0 = ab
    v = lk.Variable(a0)
    with lk.GradientTape() as tape:
        tape.watch(a)
        y = (a * b) + a
    np.testing.assert_allclose(tape.gradient(y, a).numpy(), b0 + 1, rtol=1e-6)
    z = (v * 1.0) + b             # scalar products are not Tensor*Tensor temporaries here
    np.testing.assert_allclose(z.numpy(), a0 + b0, rtol=1e-6)
    w = lk.reshape(a, (N // 2, 2)) + lk.reshape(b, (N // 2, 2))   # views of live arrays
    np.testing.assert_allclose(w.numpy().ravel(), a0 + b0, rtol=1e-6)
    np.testing.assert_array_equal(v.numpy(), a0)
    _unchanged(ab)


def test_broadcast_and_dtype_changes_are_not_written_in_place(ab):
    a, b, a0, b0 = ab
    small = lk.constant(np.float64(2.0) * np.ones(1))
    out = (a * b) * small          # float32 * float64 -> float64: a new array
    assert out.dtype == np.float64
    col = lk.constant(np.ones((4, 1), np.float32))
    row = lk.constant(np.ones((1, N // 4), np.float32)) * lk.constant(np.ones((1, N // 4),
                                                                          np.float32))
    grown = row + col              # (1, M) temp + (4, 1) -> (4, M): does not fit in place
    assert grown.shape == (4, N // 4)
    np.testing.assert_array_equal(grown.numpy(), 2.0)


def test_explicit_dunder_calls_never_reuse_a_named_tensor(ab):
    a, b, a0, b0 = ab
    c = a * b
    d = c.__add__(a)              # c's argument reference looks like a stack temporary's
    e = lk.Tensor.__mul__(c, 2.0)
    f = c.__rsub__(1.0)
    np.testing.assert_allclose(c.numpy(), a0 * b0, rtol=1e-6)
    np.testing.assert_allclose(d.numpy(), a0 * b0 + a0, rtol=1e-6)
    np.testing.assert_allclose(e.numpy(), 2 * a0 * b0, rtol=1e-6)
    np.testing.assert_allclose(f.numpy(), 1 - a0 * b0, rtol=1e-6)
    _unchanged(ab)
