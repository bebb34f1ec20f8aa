"""Issue 13 item 1: dtype constants, lk.dtypes.as_dtype, DType, and TF's int32 literals."""
import numpy as np
import pytest

import layerkit as lk

NAMES = ["float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8",
         "uint16", "uint32", "uint64", "bool", "complex64", "complex128"]


@pytest.mark.parametrize("name", NAMES)
def test_constants_match_numpy(name):
    d = getattr(lk, name)
    np_dtype = np.dtype(name)
    assert d is getattr(lk.dtypes, name)
    assert d.name == name and str(d) == f"<dtype: '{name}'>"
    assert d.as_numpy_dtype is np_dtype.type
    assert np.dtype(d) == np_dtype and np.zeros(2, d).dtype == np_dtype
    # equality and hashing with NumPy dtypes, NumPy types and names, both ways round
    assert d == np_dtype and np_dtype == d and d == np_dtype.type and d == name
    assert name == d and not d != name
    assert hash(d) == hash(np_dtype) and {np_dtype: 1}[d] == 1
    assert d.is_floating == (np_dtype.kind == "f")
    assert d.is_integer == (np_dtype.kind in "iu")
    assert d.is_complex == (np_dtype.kind == "c")
    assert d.is_bool == (np_dtype.kind == "b")
    assert d.size == np_dtype.itemsize
    others = [getattr(lk, n) for n in NAMES if n != name]
    assert all(d != o for o in others)
    assert d != None and d != "bfloat16" and d != 3  # noqa: E711


def test_min_and_max():
    assert lk.int8.min == -128 and lk.int8.max == 127
    assert lk.uint8.min == 0 and lk.uint8.max == 255
    assert lk.int32.min == -(2 ** 31) and lk.int32.max == 2 ** 31 - 1
    assert lk.uint64.max == 2 ** 64 - 1 and lk.int64.min == -(2 ** 63)
    assert lk.float16.max == 65504.0
    assert lk.float32.max == np.float32(3.4028235e38) and lk.float32.min == -lk.float32.max
    assert lk.float64.max == np.finfo(np.float64).max
    for d in (lk.bool, lk.complex64):
        with pytest.raises(TypeError, match="Cannot find minimum"):
            _ = d.min
        with pytest.raises(TypeError, match="Cannot find maximum"):
            _ = d.max
    assert lk.int16.limits == (-32768, 32767) and lk.bool.limits == (0, True)


def test_real_dtype_and_properties():
    assert lk.complex64.real_dtype is lk.float32
    assert lk.complex128.real_dtype is lk.float64
    assert lk.int32.real_dtype is lk.int32
    assert lk.float32.base_dtype is lk.float32
    assert lk.float32.as_datatype_enum == 1 and lk.int64.as_datatype_enum == 9
    assert lk.uint8.is_unsigned and not lk.int8.is_unsigned
    assert lk.float32.is_compatible_with("float32") and not lk.float32.is_compatible_with(
        lk.float64)
    assert lk.half is lk.float16 and lk.double is lk.float64


def test_as_dtype():
    as_dtype = lk.dtypes.as_dtype
    assert as_dtype("float32") is lk.float32
    assert as_dtype(np.float64) is lk.float64
    assert as_dtype(np.dtype("int16")) is lk.int16
    assert as_dtype(lk.uint8) is lk.uint8
    assert as_dtype(bool) is lk.bool and as_dtype(np.bool_) is lk.bool
    # TensorFlow's spellings: 'float'/float are float32, int is int32, half/double
    assert as_dtype("float") is lk.float32 and as_dtype(float) is lk.float32
    assert as_dtype(int) is lk.int32
    assert as_dtype("half") is lk.float16 and as_dtype("double") is lk.float64
    assert lk.as_dtype is as_dtype
    with pytest.raises(TypeError, match="bfloat16.*not supported"):
        as_dtype("bfloat16")
    with pytest.raises(TypeError, match="cannot convert 'flaot32'"):
        as_dtype("flaot32")
    with pytest.raises(TypeError, match="has no layerkit dtype"):
        as_dtype(np.dtype("datetime64[s]"))


def test_tensor_dtype_compares_with_constants():
    t = lk.constant([1.0, 2.0])
    assert t.dtype == lk.float32 and lk.float32 == t.dtype
    assert t.dtype in (lk.float16, lk.float32) and t.dtype != lk.float64
    assert lk.as_dtype(t.dtype).is_floating


def test_constants_are_accepted_wherever_a_dtype_is():
    x = np.array([1.5, -2.5], np.float32)
    assert lk.constant(x, lk.float64).dtype == np.float64
    assert lk.convert_to_tensor([1, 2], dtype=lk.int64).dtype == np.int64
    assert lk.cast(x, lk.int32).numpy().tolist() == [1, -2]
    assert lk.dtypes.cast(x, lk.int16).dtype == np.int16
    assert lk.zeros((2,), lk.int8).dtype == np.int8
    assert lk.ones((2,), dtype=lk.float16).dtype == np.float16
    assert lk.zeros_like(x, dtype=lk.float64).dtype == np.float64
    assert lk.eye(2, dtype=lk.int32).numpy().tolist() == [[1, 0], [0, 1]]
    assert lk.range(3, dtype=lk.float32).numpy().tolist() == [0.0, 1.0, 2.0]
    assert lk.one_hot([1], 2, dtype=lk.int64).dtype == np.int64
    assert lk.argmax(x, output_type=lk.int32).dtype == np.int32
    v = lk.Variable([1, 2], dtype=lk.float64)
    assert v.dtype == np.float64
    assert lk.random.normal((3,), dtype=lk.float64, seed=1).dtype == np.float64
    assert lk.TensorSpec([None], lk.int32).dtype == np.int32
    layer = lk.layers.Dense(2, dtype=lk.float64)
    assert layer(np.ones((1, 3))).dtype == np.float64
    assert layer.kernel.dtype == np.float64


def test_python_int_literals_are_int32_as_in_tensorflow():
    assert lk.constant(1).dtype == np.int32
    assert lk.constant([1, 2, 3]).dtype == np.int32
    assert lk.constant([[1, 2], [3, 4]]).dtype == np.int32
    assert lk.constant((1, True)).dtype == np.int32
    assert lk.constant(range(4)).dtype == np.int32
    assert lk.Variable(3).dtype == np.int32
    # the int32 bounds, hand-derived: [-2**31, 2**31 - 1]
    assert lk.constant(2 ** 31 - 1).dtype == np.int32
    assert lk.constant(-(2 ** 31)).dtype == np.int32
    assert lk.constant(2 ** 31).dtype == np.int64
    assert lk.constant(-(2 ** 31) - 1).dtype == np.int64
    big = lk.constant([1, 2 ** 40])
    assert big.dtype == np.int64 and big.numpy().tolist() == [1, 2 ** 40]
    # explicit NumPy values keep their dtype; floats and bools as before
    assert lk.constant(np.int64(1)).dtype == np.int64
    assert lk.constant([np.int64(1), 2]).dtype == np.int64
    assert lk.constant(np.array([1, 2])).dtype == np.int64
    assert lk.constant([1.0, 2]).dtype == np.float32
    assert lk.constant([True, False]).dtype == np.bool_
    assert lk.constant([]).dtype == np.float32
    # operators: a Python int stays weak next to a tensor (NumPy 2 promotion)
    assert (lk.constant([1, 2], lk.int64) + 1).dtype == np.int64
    assert (lk.constant([1, 2], lk.int8) * 3).dtype == np.int8
    np.testing.assert_array_equal((lk.constant([1, 2]) * 3).numpy(), [3, 6])


def test_int32_literals_fit_an_int32_input_signature():
    @lk.function(input_signature=[lk.TensorSpec([None], "int32")])
    def double(x):
        return x * 2

    out = double(lk.constant([1, 2]))
    assert out.dtype == np.int32 and out.numpy().tolist() == [2, 4]


def test_convert_to_tensor_dtype_hint_applies_only_to_values_without_a_dtype():
    assert lk.convert_to_tensor([1, 2], dtype_hint=lk.float32).dtype == np.float32
    assert lk.convert_to_tensor(3, dtype_hint="float64").dtype == np.float64
    # a lossy hint is ignored (TF falls back to the value's own dtype)
    assert lk.convert_to_tensor([1.5], dtype_hint=lk.int32).dtype == np.float32
    assert lk.convert_to_tensor(True, dtype_hint=lk.float32).dtype == np.bool_
    # arrays and tensors keep theirs
    assert lk.convert_to_tensor(np.ones(2), dtype_hint=lk.float32).dtype == np.float64
    t = lk.constant([1, 2])
    assert lk.convert_to_tensor(t, dtype_hint=lk.float32) is t
    np.testing.assert_array_equal(lk.convert_to_tensor([1, 2], dtype_hint=lk.float32), [1, 2])
