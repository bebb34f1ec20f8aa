"""Each op emitter: an lk.function using the op is exported and run by ONNX Runtime at
batch sizes other than the traced ones (2 and 3); the outputs match layerkit's eager
results within 1e-5, and the file passes onnx.checker (full check)."""
import numpy as np
import pytest

import layerkit as lk
from tests.onnx.helpers import export_and_run
from tests.onnx.helpers import floats as _f
from tests.onnx.helpers import ints as _i

pytest.importorskip("onnxruntime")

S = lk.TensorSpec
R = np.random.default_rng(7)


X = S((None, 4, 6))
x46 = _f(None, 4, 6)
W = lk.constant(R.standard_normal((6, 5)).astype(np.float32))
K = lk.constant(R.standard_normal((3, 3, 2, 2)).astype(np.float32))

# name, function, signature, input makers
CASES = [
    ("add_sub_mul_div", lambda x, y: (x + y) * 2.0 - x / (y * y + 1.0), [X, X], [x46, x46]),
    ("pow_neg_square", lambda x: lk.pow(lk.abs(x) + 1.0, 1.5) - lk.square(-x), [X], [x46]),
    ("sqrt_rsqrt_exp_log", lambda x: lk.sqrt(lk.abs(x)) + lk.rsqrt(lk.abs(x) + 1.0)
     + lk.exp(x) * 0.1 + lk.log(lk.abs(x) + 0.5), [X], [x46]),
    ("expm1_log1p", lambda x: lk.expm1(x) + lk.log1p(lk.abs(x)), [X], [x46]),
    ("trig_erf", lambda x: lk.sin(x) + lk.cos(x) + lk.tan(x * 0.3) + lk.erf(x),
     [X], [x46]),
    ("inverse_hyperbolic_reciprocal", lambda x: lk.math.asin(x * 0.4) + lk.math.acos(x * 0.4)
     + lk.math.atan(x) + lk.math.sinh(x) + lk.math.cosh(x) + lk.math.asinh(x)
     + lk.math.acosh(lk.abs(x) + 1.5) + lk.math.atanh(x * 0.3)
     + lk.math.reciprocal(lk.abs(x) + 0.5) + lk.identity(x), [X], [x46]),
    ("is_inf", lambda x: lk.cast(lk.math.is_inf(lk.math.reciprocal(lk.floor(x))), "float32"),
     [X], [x46]),
    ("sign_floor_ceil_round", lambda x: lk.sign(x) + lk.floor(x * 3.0) + lk.ceil(x)
     + lk.round(x * 2.0), [X], [x46]),
    ("floordiv_mod", lambda x: lk.floordiv(x * 5.0, 1.5) + lk.mod(x * 5.0, 1.5),
     [X], [x46]),
    ("int_floordiv_mod", lambda i: lk.floordiv(i - 5, 3) * 10 + lk.mod(i - 5, 3),
     [S((None, 7), "int32")], [_i(11, None, 7)]),
    ("max_min_clip", lambda x, y: lk.maximum(x, y) + lk.minimum(x, 0.3)
     + lk.clip_by_value(x, -0.5, 0.5), [X, X], [x46, x46]),
    ("where_compare", lambda x, y: lk.where(x > y, x, y) + lk.cast(x >= 0.0, "float32")
     + lk.cast(lk.logical_and(x < 0.5, lk.logical_not(x <= -0.5)), "float32")
     + lk.cast(lk.logical_or(lk.equal(x, y), lk.not_equal(x, 0.0)), "float32"),
     [X, X], [x46, x46]),
    ("isfinite_isnan", lambda x: lk.cast(lk.isfinite(lk.log(x)), "float32")
     + lk.cast(lk.isnan(lk.sqrt(x)), "float32"), [X], [x46]),
    ("cast_int_stop_gradient", lambda x: lk.cast(lk.cast(x * 10.0, "int32"), "float32")
     + lk.stop_gradient(x), [X], [x46]),
    ("activations", lambda x: lk.nn.relu(x) + lk.nn.softplus(x * 30.0) + lk.nn.gelu(x)
     + lk.nn.gelu(x, approximate=True) + lk.sigmoid(x) + lk.tanh(x) + lk.nn.elu(x)
     + lk.nn.selu(x) + lk.nn.silu(x) + lk.nn.leaky_relu(x, 0.1) + lk.nn.relu6(x * 8.0),
     [X], [x46]),
    ("softmax_log_softmax", lambda x: lk.nn.softmax(x, axis=1) + lk.nn.log_softmax(x),
     [X], [x46]),
    ("reductions", lambda x: lk.reduce_sum(x, axis=1) + lk.reduce_mean(x, axis=1)
     + lk.reduce_max(x, axis=1) + lk.reduce_min(x, axis=1) + lk.reduce_prod(x, axis=1)
     + lk.reduce_logsumexp(x, axis=1), [X], [x46]),
    ("reduce_keepdims_all", lambda x: lk.reduce_sum(x, axis=(1, 2), keepdims=True) * x
     + lk.reduce_mean(x) + lk.reduce_max(x, axis=-1, keepdims=True), [X], [x46]),
    ("reduce_bool_arg", lambda x: lk.cast(lk.reduce_all(x > -1.0, axis=2), "float32")
     + lk.cast(lk.reduce_any(x > 1.0, axis=2), "float32")
     + lk.cast(lk.argmax(x, axis=2), "float32") + lk.cast(lk.argmin(x, axis=2), "float32"),
     [X], [x46]),
    ("cumsum", lambda x: lk.cumsum(x, axis=1) + lk.cumsum(x, axis=2, exclusive=True,
                                                                     reverse=True), [X], [x46]),
    ("reshape_transpose", lambda x: lk.transpose(lk.reshape(x, (-1, 12, 2)), (0, 2, 1)),
     [X], [x46]),
    ("reshape_batch_merge", lambda x: lk.reshape(lk.reshape(x, (-1, 6)) * 2.0,
                                                  (-1, 4, 6)), [X], [x46]),
    ("batch_size_as_value", lambda x: (x + x.shape[0], lk.zeros((x.shape[0], 4, 6)) + x,
                                       lk.fill((x.shape[0], 2), 7.0)), [X], [x46]),
    ("expand_squeeze", lambda x: lk.squeeze(lk.expand_dims(x, 1), 1) + 1.0, [X], [x46]),
    ("broadcast_tile", lambda x: lk.broadcast_to(lk.reduce_sum(x, axis=2, keepdims=True),
                                                 x.shape) + lk.tile(x, (1, 1, 2))[..., :6],
     [X], [x46]),
    ("concat_stack_unstack_split", lambda x: lk.concat(lk.split(x, [2, 4], axis=2)[::-1],
                                                       axis=2)
     + lk.stack(lk.unstack(x, axis=1)[::-1], axis=1), [X], [x46]),
    ("pad", lambda x: lk.pad(x, [[0, 0], [1, 2], [2, 0]], constant_values=0.5)[:, :4, :6]
     + lk.pad(x, [[0, 0], [1, 1], [2, 1]], mode="REFLECT")[:, 1:5, 2:8], [X], [x46]),
    ("getitem", lambda x: (x[:, 1] + x[:, -1], x[:, ::-1][:, 0], x[..., 1:3],
                           x[:, None, 2, ::2], x[:, -2:, -1], x[1:, 3:0:-2]), [X], [x46]),
    ("getitem_array", lambda x, i: x[:, i] * 1.0, [X, S((3,), "int32")],
     [x46, lambda b: np.array([3, 0, 2], np.int32)]),
    ("gather_gather_nd", lambda p, i: (lk.gather(p, i), lk.gather_nd(
        p, lk.stack([i, i], axis=-1))), [S((9, 9)), S((None, 3), "int32")],
     [lambda b: _f(9, 9)(0), _i(9, None, 3)]),
    ("matmul_transpose", lambda x, y: lk.matmul(x, y, transpose_b=True)
     + lk.matmul(lk.transpose(x, (0, 2, 1)), lk.transpose(y, (0, 2, 1)), transpose_a=True),
     [X, X], [x46, x46]),
    ("matmul_weight_vector", lambda x: lk.matmul(x, W) + lk.matmul(x, W[:, 0])[..., None],
     [X], [x46]),
    ("einsum_tensordot", lambda x, y: lk.einsum("bij,bkj->bik", x, y)
     + lk.tensordot(x, lk.transpose(y, (2, 0, 1)), [[2], [0]])[:, :, 0, :], [X, X],
     [x46, x46]),
    ("conv_pool", lambda x: (lk.nn.max_pool2d(lk.nn.conv2d(x, lk.ones((3, 3, 2, 3)) * 0.1, 1,
                                                          "SAME"), 2, 2, "SAME"),
                          lk.nn.avg_pool2d(lk.nn.conv2d(x, lk.ones((2, 2, 2, 3)), 2, "VALID"),
                                           3, 1, "SAME")),
     [S((None, 7, 8, 2))], [_f(None, 7, 8, 2)]),
    ("depthwise_transpose", lambda x: (
        lk.nn.depthwise_conv2d(x, K, [1, 1, 1, 1], "VALID"),
        lk.nn.conv2d_transpose(x, K, [x.shape[0], 12, 14, 2], 2, "SAME")), [S((None, 6, 7, 2))],
     [_f(None, 6, 7, 2)]),
]


@pytest.mark.parametrize("name,fn,sig,makers", CASES, ids=[c[0] for c in CASES])
def test_op_matches_layerkit(name, fn, sig, makers, tmp_path):
    export_and_run(lk.function(fn), sig, makers, tmp_path / f"{name}.onnx")


OPSET18 = [c for c in CASES if c[0] in ("reductions", "reduce_keepdims_all", "reduce_bool_arg",
                                        "concat_stack_unstack_split", "pad")]


@pytest.mark.parametrize("name,fn,sig,makers", OPSET18, ids=[c[0] for c in OPSET18])
def test_op_matches_layerkit_at_opset_18(name, fn, sig, makers, tmp_path):
    # opset 18 passes the axes of ReduceMean/Max/... as an input instead of an attribute
    proto, _ = export_and_run(lk.function(fn), sig, makers, tmp_path / f"{name}.onnx",
                              opset=18)
    assert proto.opset_import[0].version == 18
