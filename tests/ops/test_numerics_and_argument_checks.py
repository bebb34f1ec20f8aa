"""Regressions of issue #11 in the op layer: float-only math on integer input, tails,
bad arguments that were accepted, and errors that did not name the op.

Each test failed before its fix. The rule for float-only math (TensorFlow's) is that an
integer or bool input raises a TypeError naming the op and the dtype.
"""
import math

import numpy as np
import pytest

import layerkit as lk
from layerkit.primitives import creation

INT_DTYPES = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
              np.uint64, np.bool_]

# (name in the message, callable): every float-only op of the public API.
FLOAT_ONLY = [
    ("sqrt", lk.sqrt), ("rsqrt", lk.rsqrt), ("exp", lk.exp), ("expm1", lk.expm1),
    ("log", lk.log), ("log1p", lk.log1p), ("sin", lk.sin), ("cos", lk.cos),
    ("tan", lk.tan), ("tanh", lk.tanh), ("sigmoid", lk.sigmoid), ("erf", lk.erf),
    ("reduce_logsumexp", lk.reduce_logsumexp), ("reduce_variance", lk.reduce_variance),
    ("reduce_std", lk.reduce_std), ("norm", lk.norm),
    ("softplus", lk.nn.softplus), ("softmax", lk.nn.softmax),
    ("log_softmax", lk.nn.log_softmax), ("l2_normalize", lk.nn.l2_normalize),
    ("gelu", lk.nn.gelu), ("silu", lk.nn.silu), ("elu", lk.nn.elu), ("selu", lk.nn.selu),
    ("moments", lambda x: lk.nn.moments(x, [0])),
]


# ---- float-only math on integer and bool input ---------------------------------------------
@pytest.mark.parametrize("dtype", INT_DTYPES)
@pytest.mark.parametrize("name, fn", FLOAT_ONLY, ids=[n for n, _ in FLOAT_ONLY])
def test_float_only_ops_refuse_integer_and_bool_input(name, fn, dtype):
    info = np.iinfo(dtype) if dtype is not np.bool_ else None
    x = np.array([1, 0] if info is None else [info.min, info.max, 1], dtype)
    with pytest.raises(TypeError, match=rf"{name}.*dtype {np.dtype(dtype).name}"):
        fn(x)


def test_sigmoid_of_uint8_is_an_error_not_a_wrapped_negation():
    # Was [1.8e-111, 4.8e-25]: -x wrapped around in uint8, and int8 -128 gave 1.0.
    with pytest.raises(TypeError, match="^sigmoid: .*uint8.*lk.cast"):
        lk.sigmoid(np.array([1, 200], np.uint8))
    with pytest.raises(TypeError, match="^sigmoid: .*dtype bool"):  # was "numpy boolean negative"
        lk.sigmoid(np.array([True]))


def test_norm_of_int8_is_an_error_not_a_float16_overflow():
    with pytest.raises(TypeError, match="^norm: .*int8"):  # was 5.656 (float16 overflow)
        lk.norm(np.array([100, 100], np.int8))
    np.testing.assert_allclose(lk.norm(np.array([100.0, 100.0], np.float32)).numpy(),
                               100 * math.sqrt(2), rtol=1e-6)


def test_python_int_scalars_and_lists_follow_the_rule():
    with pytest.raises(TypeError, match="^exp: .*int32"):
        lk.exp(1)
    with pytest.raises(TypeError, match="^sqrt: .*int32"):
        lk.sqrt([1, 4])
    assert float(lk.exp(1.0)) == pytest.approx(math.e)


def test_float_only_ops_still_take_every_float_dtype():
    for dt in (np.float16, np.float32, np.float64):
        x = np.array([0.5, 2.0], dt)
        for _, fn in FLOAT_ONLY[:12]:
            assert fn(x).dtype == dt
    assert lk.exp(np.array([1j])).dtype == np.complex128  # complex where NumPy has it


# ---- tails: -inf, inf, nan ------------------------------------------------------------------
def _sigmoid64(x):
    x = np.asarray(x, np.float64)
    e = np.exp(-np.abs(x))
    return np.where(x < 0, e / (1 + e), 1 / (1 + e))


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_sigmoid_is_exact_in_the_tails(dtype):
    x = np.array([-np.inf, -1000, -120, -100, -90, -30, -12, 0, 12, 90, np.inf], dtype)
    out = lk.sigmoid(x).numpy()
    assert out.dtype == dtype
    assert out[0] == 0.0 and out[-1] == 1.0  # sigmoid(-inf) was 6.05e-39 in float32
    want = _sigmoid64(x).astype(dtype)  # one rounding of the exact value
    tiny = np.finfo(dtype).smallest_subnormal
    np.testing.assert_allclose(out, want, rtol=4 * np.finfo(dtype).eps, atol=2 * tiny)
    assert np.isnan(lk.sigmoid(np.array([np.nan, -np.inf], dtype)).numpy()[0])


def test_silu_of_minus_inf_is_nan_like_tf_not_minus_inf():
    # silu = x * sigmoid(x): TF gives -inf * 0 = nan; it was -inf * 6e-39 = -inf.
    with np.errstate(invalid="ignore"):
        out = lk.nn.silu(np.array([-np.inf, -200.0, np.inf], np.float32)).numpy()
    assert np.isnan(out[0]) and out[1] == 0.0 and out[2] == np.inf


def test_gelu_accepts_pytorch_approximate_strings():
    x = np.linspace(-4, 4, 17).astype(np.float32)
    exact = lk.nn.gelu(x, approximate=False).numpy()
    tanh = lk.nn.gelu(x, approximate=True).numpy()
    assert not np.array_equal(exact, tanh)
    # 'none' silently used the tanh form before.
    np.testing.assert_array_equal(lk.nn.gelu(x, approximate="none").numpy(), exact)
    np.testing.assert_array_equal(lk.nn.gelu(x, approximate="tanh").numpy(), tanh)
    for bad in ("exact", "Tanh", 2, None):
        with pytest.raises(ValueError, match=r"^lk.nn.gelu: approximate .*'none'"):
            lk.nn.gelu(x, approximate=bad)


def test_integer_mean_does_not_wrap_around_and_float16_mean_does_not_overflow():
    # int8: the sum 200 wrapped to -56 (mean -28); float16: 120000 overflowed to inf.
    assert int(lk.reduce_mean(np.array([100, 100], np.int8))) == 100
    assert int(lk.reduce_mean(np.array([-128, -128, -127], np.int8))) == -127
    assert int(lk.reduce_mean(np.array([250, 251], np.uint8))) == 250
    m = lk.reduce_mean(np.array([60000, 60000], np.float16))
    assert m.dtype == np.float16 and float(m) == 60000
    v = lk.reduce_variance(np.array([60000, 60064], np.float16))  # the mean overflowed
    assert v.dtype == np.float16 and float(v) == 32.0 ** 2


def test_float16_logsumexp_sums_in_float32():
    x = np.zeros(70_000, np.float16)  # the sum of exp(0) exceeds float16's 65504
    out = lk.reduce_logsumexp(x)
    assert out.dtype == np.float16
    np.testing.assert_allclose(float(out), math.log(70_000), rtol=1e-3)


# ---- axis arguments -----------------------------------------------------------------------
X23 = np.arange(6.0).reshape(2, 3)
AXIS_OPS = {
    "reduce_sum": lambda a: lk.reduce_sum(X23, axis=a),
    "reduce_mean": lambda a: lk.reduce_mean(X23, axis=a),
    "reduce_max": lambda a: lk.reduce_max(X23, axis=a),
    "reduce_prod": lambda a: lk.reduce_prod(X23, axis=a),
    "reduce_logsumexp": lambda a: lk.reduce_logsumexp(X23, axis=a),
    "reduce_variance": lambda a: lk.reduce_variance(X23, axis=a),
    "reduce_std": lambda a: lk.reduce_std(X23, axis=a),
    "reduce_all": lambda a: lk.reduce_all(X23, axis=a),
    "argmax": lambda a: lk.argmax(X23, axis=a),
    "cumsum": lambda a: lk.cumsum(X23, axis=a),
    "expand_dims": lambda a: lk.expand_dims(X23, a),
    "squeeze": lambda a: lk.squeeze(np.ones((2, 1)), axis=a),
    "concat": lambda a: lk.concat([X23, X23], a),
    "stack": lambda a: lk.stack([X23, X23], a),
    "unstack": lambda a: lk.unstack(X23, axis=a),
    "split": lambda a: lk.split(X23, 1, axis=a),
    "gather": lambda a: lk.gather(X23, [0], axis=a),
    "reverse": lambda a: lk.reverse(X23, [a]),
    "norm": lambda a: lk.norm(X23, axis=a),
    "tensordot": lambda a: lk.tensordot(X23, X23, [[a], [1]]),
    "one_hot": lambda a: lk.one_hot([0, 1], 3, axis=a),
    "softmax": lambda a: lk.nn.softmax(X23, axis=a),
    "log_softmax": lambda a: lk.nn.log_softmax(X23, axis=a),
    "l2_normalize": lambda a: lk.nn.l2_normalize(X23, axis=a),
    "moments": lambda a: lk.nn.moments(X23, [a]),
    "softmax_cross_entropy_with_logits":
        lambda a: lk.nn.softmax_cross_entropy_with_logits(X23, X23, axis=a),
}


@pytest.mark.parametrize("name", sorted(AXIS_OPS))
def test_every_axis_argument_refuses_non_integers(name):
    # reduce_sum(axis=1.5) used axis 1; every op truncated floats with int().
    for bad in (1.5, 1.0, True, "1", np.float32(1)):
        with pytest.raises(TypeError, match=rf"{name}: .*must be an integer"):
            AXIS_OPS[name](bad)
    AXIS_OPS[name](1)  # an int is fine, and so are NumPy ints and 0-d int tensors
    AXIS_OPS[name](np.int32(1))


@pytest.mark.parametrize("name", sorted(AXIS_OPS))
def test_every_axis_argument_refuses_out_of_range_axes(name):
    with pytest.raises(ValueError, match=rf"{name}: .*axis.* (5|-6)"):
        AXIS_OPS[name](5 if name != "one_hot" else -6)


def test_reverse_refuses_a_repeated_axis_like_tf():
    with pytest.raises(ValueError, match=r"^reverse: axis \[0, 0\] .*more than once"):
        lk.reverse(np.arange(3), [0, 0])  # flipped once before
    with pytest.raises(ValueError, match="^reverse: .*more than once"):
        lk.reverse(X23, [1, -1])


def test_reductions_reduce_a_repeated_axis_once_like_tf():
    np.testing.assert_array_equal(lk.reduce_sum(X23, axis=[1, 1, -1]).numpy(), X23.sum(1))


# ---- other bad arguments --------------------------------------------------------------------
def test_one_hot_refuses_negative_and_fractional_depth():
    with pytest.raises(ValueError, match="^one_hot: depth must be non-negative, received -1"):
        lk.one_hot([1], depth=-1)  # gave a (1, 0) tensor
    with pytest.raises(TypeError, match="^one_hot: depth must be an integer"):
        lk.one_hot([1], depth=2.5)
    assert lk.one_hot([1], depth=0).shape == (1, 0)
    with pytest.raises(ValueError, match=r"^one_hot: axis must be -1 or in \[0, 1\]"):
        lk.one_hot([1], depth=2, axis=-2)  # TF allows only -1 below 0


def _conv(conv: str, w: np.ndarray):
    x = np.ones((1, 3, 3, 1), np.float32)
    if conv == "conv2d":
        return lk.nn.conv2d(x, w)
    if conv == "depthwise_conv2d":
        return lk.nn.depthwise_conv2d(x, w, 1, "VALID")
    return lk.nn.conv2d_transpose(x, w, (1, 3, 3, w.shape[2]), 1)


@pytest.mark.parametrize("conv, zero_channels", [("conv2d", (1, 1, 1, 0)),
                                                 ("depthwise_conv2d", (1, 1, 1, 0)),
                                                 ("conv2d_transpose", (1, 1, 0, 1))])
def test_convolutions_refuse_empty_kernels_like_tf(conv, zero_channels):
    # conv2d with a 0x0 kernel gave a (1, 4, 4, 1) tensor of zeros.
    for shape in [(0, 0, 1, 1), (1, 0, 1, 1), zero_channels]:
        with pytest.raises(ValueError, match=rf"^{conv}: filters? must not have zero elements"):
            _conv(conv, np.ones(shape, np.float32))
    assert _conv(conv, np.ones((1, 1, 1, 1), np.float32)).shape == (1, 3, 3, 1)


def test_broadcast_to_refuses_a_lower_rank_target():
    with pytest.raises(ValueError, match=r"^broadcast_to: .*\(1,\) to shape \(\)"):
        lk.broadcast_to([5.0], ())  # returned 5.0
    with pytest.raises(ValueError, match=r"^broadcast_to: .*\(1, 1\) to shape \(3,\)"):
        lk.broadcast_to([[5.0]], (3,))
    np.testing.assert_array_equal(lk.broadcast_to([5.0], (2, 3)).numpy(), np.full((2, 3), 5.0))


# ---- errors name the op ------------------------------------------------------------------------
def test_softmax_family_over_an_empty_axis_gives_an_empty_result_like_tf():
    x = np.ones((2, 0), np.float32)
    for fn in (lk.nn.softmax, lk.nn.log_softmax):  # was NumPy's "zero-size array" error
        assert fn(x).shape == (2, 0) and fn(x, axis=0).shape == (2, 0)
    labels = np.zeros((0,), np.int64)
    loss = lk.nn.sparse_softmax_cross_entropy_with_logits(labels, np.ones((0, 0), np.float32))
    assert loss.shape == (0,)
    with pytest.raises(ValueError, match=r"^lk.nn.sparse_softmax_cross_entropy_with_logits: "
                                         r"logits have 0 classes"):
        lk.nn.sparse_softmax_cross_entropy_with_logits(np.zeros(2, np.int64), x)


def test_composite_ops_name_themselves_in_axis_errors():
    # reduce_std said "reduce_variance", l2_normalize said "reduce_sum".
    with pytest.raises(ValueError, match="^reduce_std: axis 5"):
        lk.reduce_std(X23, axis=5)
    with pytest.raises(ValueError, match="^lk.nn.l2_normalize: axis 5"):
        lk.nn.l2_normalize(X23, axis=5)
    with pytest.raises(ValueError, match="^lk.nn.moments: axis 5"):
        lk.nn.moments(X23, [5])


def test_creation_of_a_too_big_tensor_names_the_op():
    with pytest.raises(ValueError, match=r"^zeros: shape \(1099511627776, 1099511627776\) "
                                         r"has 1.21e\+24 elements"):
        lk.zeros([2 ** 40] * 2)  # was NumPy's bare "array is too big"
    for fn in (lk.ones, lk.random.normal, lambda s: lk.fill(s, 1.0)):
        with pytest.raises(ValueError, match=r"(ones|normal|fill): shape .* elements"):
            fn([2 ** 40] * 2)
    with pytest.raises(ValueError, match=r"^range: cannot allocate .*\(4611686018427387904,\)"):
        lk.range(2 ** 62)
    with pytest.raises(MemoryError, match=r"^range: cannot allocate .*\(144115188075855872,\)"):
        lk.range(0.0, 2.0 ** 57)  # 2**60 bytes of float64 steps
    # 2**60 bytes: more than any address space, so the allocation fails everywhere.
    with pytest.raises(MemoryError, match=r"^zeros: cannot allocate .*\(288230376151711743,\) "
                                          r".*float32"):
        lk.zeros([2 ** 58 - 1])

    def out_of_memory(shape, dtype):
        raise MemoryError("Unable to allocate")

    with pytest.raises(MemoryError, match=r"^eye: cannot allocate a tensor of shape \(4, 4\)"):
        creation.allocate("eye", out_of_memory, (4, 4), np.float32)


def test_operator_errors_name_the_op():
    i8 = lk.constant(np.array([1, 2], np.int8))
    b = lk.constant([True, False])
    # Each was a bare NumPy error on the operator fast path.
    with pytest.raises(OverflowError, match=r"^add: Python integer 1000 .*int8"):
        i8 + 1000
    with pytest.raises(OverflowError, match=r"^add: Python integer 1000 .*int8"):
        1000 + i8
    with pytest.raises(OverflowError, match=r"^multiply: .*int8"):
        i8 * 1000
    with pytest.raises(OverflowError, match=r"^subtract: .*int8"):
        1000 - i8
    with pytest.raises(TypeError, match=r"^negative: .*bool"):
        _ = -b
    with pytest.raises(TypeError, match=r"^subtract: .*bool"):
        b - b
    assert (i8 + 100).numpy().tolist() == [101, 102]


# ---- found by the fuzzer (tests/ops/test_fuzz_ops.py) ----------------------------------------
def test_pad_refuses_constant_values_the_dtype_cannot_hold():
    # Were truncated or wrapped around silently: 2.5 -> 2, -1 -> 255 (uint8), -1 -> True.
    with pytest.raises(TypeError, match=r"^pad: constant_values 2.5 is not an integer.*int32"):
        lk.pad(np.ones(2, np.int32), [[1, 1]], constant_values=2.5)
    with pytest.raises(ValueError, match=r"^pad: constant_values -1 does not fit .*uint8"):
        lk.pad(np.ones(2, np.uint8), [[1, 1]], constant_values=-1)
    with pytest.raises(ValueError, match=r"^pad: constant_values 300 does not fit .*int8"):
        lk.pad(np.ones(2, np.int8), [[1, 1]], constant_values=300)
    with pytest.raises(ValueError, match=r"^pad: constant_values -1 does not fit .*bool"):
        lk.pad(np.ones(2, bool), [[1, 1]], constant_values=-1)
    with pytest.raises(ValueError, match=r"^pad: constant_values must be a scalar"):
        lk.pad(np.ones(2), [[1, 1]], constant_values=[1, 2])
    np.testing.assert_array_equal(lk.pad(np.ones(2, np.uint8), [[1, 0]], constant_values=7.0)
                                  .numpy(), [7, 1, 1])
    np.testing.assert_array_equal(lk.pad(np.ones(1, np.float32), [[1, 0]],
                                         constant_values=2.5).numpy(), [2.5, 1])


def test_reshape_refuses_negative_sizes_other_than_minus_one():
    with pytest.raises(ValueError, match=r"^reshape: .*\(-2,\)"):  # NumPy reads -2 as -1
        lk.reshape(np.ones(4), [-2])
    with pytest.raises(ValueError, match=r"^reshape: .*only one dimension can be -1"):
        lk.reshape(np.ones(4), [-1, -1])
    assert lk.reshape(np.ones(4), [2, -1]).shape == (2, 2)


def test_int64_mean_is_exact_where_a_64_bit_sum_wraps_around():
    big = np.iinfo(np.int64).max
    x = np.array([big, big, big - 3], np.int64)  # the sum wrapped: the mean was -2
    assert int(lk.reduce_mean(x)) == big - 1
    lo = np.iinfo(np.int64).min
    np.testing.assert_array_equal(
        lk.reduce_mean(np.array([[lo, lo + 1], [5, -8]], np.int64), axis=1).numpy(),
        [lo + 1, -1])  # truncated toward zero, like TF
    assert int(lk.reduce_mean(np.full(4, np.iinfo(np.uint64).max, np.uint64))) == \
        np.iinfo(np.uint64).max


def test_float_mean_divides_once_like_numpy_and_tf():
    # sum * (1/n) rounded twice: the mean of three equal float32 values was not that
    # value, and their variance was 16 instead of 0.
    x = np.full(3, np.float32(4.0973524e7))
    assert float(lk.reduce_mean(x)) == float(x[0])
    assert float(lk.reduce_variance(x)) == 0.0
