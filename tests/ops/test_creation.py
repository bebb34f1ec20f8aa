"""Creation ops: zeros, ones, *_like, fill, eye, range, linspace, one_hot."""
from __future__ import annotations

import numpy as np
import pytest

import layerkit as lk


def test_zeros_ones_default_float32_and_shapes():
    for fn, value in ((lk.zeros, 0.0), (lk.ones, 1.0)):
        t = fn((2, 3))
        assert t.dtype == np.float32 and t.shape == (2, 3)
        np.testing.assert_array_equal(t.numpy(), np.full((2, 3), value))
        assert fn(4).shape == (4,)
        assert fn([]).shape == ()
        assert fn(lk.constant([2, 1])).shape == (2, 1)
        assert fn((2,), dtype="int32").dtype == np.int32
        assert fn((2,), dtype=None).dtype == np.float32


@pytest.mark.parametrize("bad", [(2, -1), (2.5,), ("a",)])
def test_zeros_rejects_bad_shapes(bad):
    with pytest.raises(ValueError, match="zeros"):
        lk.zeros(bad)


def test_like_ops_keep_shape_and_dtype():
    x = np.arange(6, dtype=np.int32).reshape(2, 3)
    z = lk.zeros_like(x)
    o = lk.ones_like(lk.constant(x))
    assert z.dtype == np.int32 and o.dtype == np.int32
    np.testing.assert_array_equal(z.numpy(), np.zeros((2, 3)))
    np.testing.assert_array_equal(o.numpy(), np.ones((2, 3)))
    assert lk.zeros_like(x, dtype="float64").dtype == np.float64
    assert lk.ones_like(2.0).dtype == np.float32  # Python float -> float32


def test_fill():
    t = lk.fill([2, 3], 9.0)
    assert t.dtype == np.float32
    np.testing.assert_array_equal(t.numpy(), np.full((2, 3), 9.0))
    assert lk.fill((2,), 3).dtype == np.int32  # a Python int, as in TensorFlow
    assert lk.fill((2,), 2 ** 40).dtype == np.int64
    assert lk.fill((2,), np.array(1.5)).dtype == np.float64
    assert lk.fill((2,), True).dtype == np.bool_
    with pytest.raises(ValueError, match="fill: value must be a scalar"):
        lk.fill((2,), [1.0, 2.0])


def test_eye():
    np.testing.assert_array_equal(lk.eye(3).numpy(), np.eye(3))
    assert lk.eye(3).dtype == np.float32
    np.testing.assert_array_equal(lk.eye(2, 4).numpy(), np.eye(2, 4))
    b = lk.eye(2, batch_shape=[3], dtype="float64")
    assert b.shape == (3, 2, 2) and b.dtype == np.float64
    np.testing.assert_array_equal(b.numpy()[1], np.eye(2))
    with pytest.raises(ValueError, match="eye"):
        lk.eye(-1)


def test_range_like_tensorflow():
    t = lk.range(5)
    assert t.dtype == np.int32  # tf.range of Python ints is int32
    assert lk.range(2 ** 31, 2 ** 31 + 2).dtype == np.int64  # ... if they fit
    assert lk.range(np.int64(3)).dtype == np.int64
    np.testing.assert_array_equal(t.numpy(), np.arange(5))
    np.testing.assert_array_equal(lk.range(3, 18, 3).numpy(), [3, 6, 9, 12, 15])
    f = lk.range(3, 1, -0.5)
    assert f.dtype == np.float32
    np.testing.assert_array_equal(f.numpy(), [3.0, 2.5, 2.0, 1.5])
    np.testing.assert_array_equal(lk.range(5.0).numpy(), [0, 1, 2, 3, 4])
    assert lk.range(5.0).dtype == np.float32
    tenth = lk.range(0.0, 1.0, 0.1)
    assert tenth.shape == (10,)
    np.testing.assert_allclose(tenth.numpy(), np.arange(10) * 0.1, rtol=1e-6)
    assert lk.range(4, 1).shape == (0,)  # empty, like TF
    assert lk.range(3, dtype="float64").dtype == np.float64
    assert lk.range(lk.constant(np.int32(4))).dtype == np.int32
    assert lk.range(np.array(0.0), 1.0, 0.25).dtype == np.float64
    # The builtin is untouched outside the op module.
    assert list(range(3)) == [0, 1, 2]


def test_range_errors():
    with pytest.raises(ValueError, match="delta must not be 0"):
        lk.range(0, 5, 0)
    with pytest.raises(ValueError, match="range: start must be a scalar"):
        lk.range([1, 2], 5)


def test_linspace():
    t = lk.linspace(0.0, 1.0, 5)
    assert t.dtype == np.float32
    np.testing.assert_array_equal(t.numpy(), np.linspace(0, 1, 5, dtype=np.float32))
    assert lk.linspace(0, 10, 3).dtype == np.float32
    assert lk.linspace(np.array(0.0), 1.0, 3).dtype == np.float64
    two = lk.linspace([0.0, 10.0], [1.0, 20.0], 3, axis=1)
    np.testing.assert_allclose(two.numpy(), [[0.0, 0.5, 1.0], [10.0, 15.0, 20.0]])
    assert lk.linspace(1.0, 2.0, 1).numpy().tolist() == [1.0]
    with pytest.raises(ValueError, match="linspace"):
        lk.linspace(0.0, 1.0, -1)


def test_one_hot():
    t = lk.one_hot([0, 2, 1], 3)
    assert t.dtype == np.float32
    np.testing.assert_array_equal(t.numpy(), np.eye(3)[[0, 2, 1]])
    # Out-of-range and negative indices give all-off rows (TF).
    np.testing.assert_array_equal(lk.one_hot([3, -1], 3).numpy(), np.zeros((2, 3)))
    custom = lk.one_hot([1], 3, on_value=5.0, off_value=-1.0)
    np.testing.assert_array_equal(custom.numpy(), [[-1.0, 5.0, -1.0]])
    assert custom.dtype == np.float32
    assert lk.one_hot([1], 2, on_value=7, off_value=0).dtype == np.int32
    assert lk.one_hot([1], 2, dtype="int32").dtype == np.int32
    idx = np.array([[0, 1], [2, 0]])
    np.testing.assert_array_equal(lk.one_hot(idx, 3).numpy(), np.eye(3)[idx])
    first = lk.one_hot(idx, 3, axis=0)
    assert first.shape == (3, 2, 2)
    np.testing.assert_array_equal(first.numpy(), np.moveaxis(np.eye(3)[idx], -1, 0))
    assert lk.one_hot(2, 4).shape == (4,)


def test_one_hot_errors():
    with pytest.raises(TypeError, match="one_hot: indices must be integers"):
        lk.one_hot([0.5], 3)
    with pytest.raises(ValueError, match=r"one_hot: axis must be -1 or in \[0, 1\].*received 3"):
        lk.one_hot([0, 1], 3, axis=3)


def test_creation_ops_are_constants_on_a_tape():
    x = lk.constant([1.0, 2.0])
    with lk.GradientTape() as tape:
        tape.watch(x)
        y = lk.reduce_sum(lk.ones_like(x) * 3.0 + lk.zeros_like(x))
    assert tape.gradient(y, x) is None
