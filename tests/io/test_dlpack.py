"""DLPack: zero-copy exchange with NumPy in both directions, read-only buffers included."""
import numpy as np
import pytest

import layerkit as lk


class OldConsumerView:
    """Forwards DLPack the way a pre-1.0 consumer asks: without max_version."""

    def __init__(self, x, copy=None):
        self.x, self.copy = x, copy

    def __dlpack__(self, stream=None, **_):
        kwargs = {} if self.copy is None else {"copy": self.copy}
        return self.x.__dlpack__(stream=stream, **kwargs)

    def __dlpack_device__(self):
        return self.x.__dlpack_device__()


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.int8, np.bool_,
                                   np.float16, np.complex64])
def test_numpy_from_tensor_shares_memory(dtype):
    t = lk.constant(np.arange(6).reshape(2, 3).astype(dtype))
    a = np.from_dlpack(t)
    assert a.dtype == dtype and a.shape == (2, 3)
    np.testing.assert_array_equal(a, t.numpy())
    assert np.shares_memory(a, np.asarray(t))
    assert t.__dlpack_device__() == (1, 0)  # kDLCPU, device 0


def test_tensor_from_numpy_shares_memory_and_computes():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    t = lk.from_dlpack(a)
    assert isinstance(t, lk.Tensor) and t.dtype == np.float32
    assert np.shares_memory(np.asarray(t), a)
    a[0, 0] = 10.0  # documented: the tensor views the producer's buffer
    np.testing.assert_array_equal((t * 2.0).numpy(), a * 2.0)
    c = lk.from_dlpack(a, copy=True)
    assert not np.shares_memory(np.asarray(c), a)
    np.testing.assert_array_equal(c.numpy(), a)


def test_round_trip_through_a_strided_view():
    base = np.arange(24, dtype=np.float64).reshape(4, 6)
    view = base[::2, 1::2]  # non-contiguous: DLPack carries the strides
    t = lk.from_dlpack(view)
    np.testing.assert_array_equal(t.numpy(), view)
    assert np.shares_memory(np.from_dlpack(t), base)


def test_variable_exports_a_snapshot_like_numpy():
    v = lk.Variable([1.0, 2.0])
    a = np.from_dlpack(v)
    v.assign_add([1.0, 1.0])
    np.testing.assert_array_equal(a, [1.0, 2.0])  # later updates do not show through
    np.testing.assert_array_equal(np.from_dlpack(v), [2.0, 3.0])
    with pytest.raises(BufferError, match="snapshot"):
        v.__dlpack__(copy=False)
    t = v.value()  # a Tensor of the value is shared as usual
    assert np.shares_memory(np.from_dlpack(t), np.asarray(t))


def test_read_only_buffer_modern_consumer_gets_a_read_only_view():
    src = np.arange(4, dtype=np.float32)
    src.flags.writeable = False
    t = lk.from_dlpack(src)  # lk.Tensor(src) would copy; from_dlpack keeps the buffer
    a = np.from_dlpack(t)  # NumPy 2 asks for DLPack 1.x, which carries the read-only flag
    assert np.shares_memory(a, src) and not a.flags.writeable
    back = lk.from_dlpack(src)
    assert np.shares_memory(np.asarray(back), src) and not np.asarray(back).flags.writeable


def test_read_only_buffer_old_consumer_gets_a_copy():
    src = np.arange(4, dtype=np.float32)
    src.flags.writeable = False
    t = lk.from_dlpack(src)
    with pytest.raises(BufferError):  # NumPy itself refuses this export ...
        src.__dlpack__()
    a = np.from_dlpack(OldConsumerView(t))  # ... the tensor hands over a copy instead
    np.testing.assert_array_equal(a, src)
    assert not np.shares_memory(a, src)
    with pytest.raises(BufferError):  # unless the consumer forbids copies
        np.from_dlpack(OldConsumerView(t, copy=False))
    # A Tensor's buffer is always exported read-only (tensors are immutable), so old
    # consumers get a copy of it too.
    w = lk.constant([1.0, 2.0])
    assert not np.shares_memory(np.from_dlpack(OldConsumerView(w)), np.asarray(w))


def test_from_dlpack_errors():
    with pytest.raises(TypeError, match="from_dlpack: expected an object implementing "
                                        "__dlpack__.*list"):
        lk.from_dlpack([1.0, 2.0])
