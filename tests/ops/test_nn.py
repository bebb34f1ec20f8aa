"""lk.nn (activations, softmax family, cross-entropies, dropout, normalisation).

Forward values against NumPy / hand-derived formulas (float64 references), stability at
extreme logits, error messages, dropout statistics, the block-wise float32 gelu and
softplus kernels (block edges, the threaded path, broadcast gradients), and that the
gradient-table rows of tests/ops/rows_nn.py cover every public function.
"""
import math
import os
import warnings

import numpy as np
import pytest

import layerkit as lk
from layerkit import nn
from layerkit import random as lkrandom
from layerkit._core import tuning
from layerkit.autodiff.function import EagerFallbackWarning
from layerkit.kernels import activation as K
from layerkit.kernels import blockwise as BW
from layerkit.kernels import special as S
from layerkit.primitives import nn as N
from tests.ops import rows_conv_nd, rows_elementwise, rows_nn, rows_tf_namespaces

_erf = np.vectorize(math.erf)


def _phi_cdf(x):
    return 0.5 * (1.0 + _erf(np.asarray(x, np.float64) / math.sqrt(2.0)))


def _gelu_ref(x):
    x = np.asarray(x, np.float64)
    return x * _phi_cdf(x)


def _gelu_prime_ref(x):
    x = np.asarray(x, np.float64)
    return _phi_cdf(x) + x * np.exp(-0.5 * x * x) / math.sqrt(2 * math.pi)


def _tanh_gelu_ref(x):
    x = np.asarray(x, np.float64)
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))


def _grad(f, x, g=None):
    x = lk.constant(x)
    with lk.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    return y, tape.gradient(y, x, output_gradients=g)


def _softmax_ref(x, axis=-1):
    x = np.asarray(x, np.float64)
    e = np.exp(x - x.max(axis, keepdims=True))
    return e / e.sum(axis, keepdims=True)


rng = np.random.default_rng(11)


# ---- gradient table (tests/ops/test_grad_table.py runs the rows) ----------------------
def test_rows_cover_every_public_nn_function():
    # tf.nn names published from other families (sigmoid, tanh, top_k, bias_add, ...)
    # have their rows with those families.
    covered = {r["name"] for r in rows_nn.ROWS + rows_conv_nd.ROWS + rows_elementwise.ROWS
               + rows_tf_namespaces.ROWS}
    public = set(nn.__all__) - {"conv2d", "conv2d_transpose", "depthwise_conv2d",
                                "max_pool2d", "avg_pool2d", "swish",
                                "zero_fraction"}  # a count: no gradient (tests/ops/test_rearrange)
    assert public <= covered, sorted(public - covered)


# ---- activations ------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_simple_activations_match_formulas(dtype):
    x = np.array([-3.0, -1.0, -0.25, 0.0, 0.5, 2.0, 6.0, 7.5], dtype)
    xd = x.astype(np.float64)
    tol = dict(rtol=1e-6 if dtype == np.float32 else 1e-12, atol=1e-7)
    alpha, scale = 1.6732632423543772, 1.0507009873554805
    cases = {
        "relu": (nn.relu(x), np.maximum(xd, 0)),
        "relu6": (nn.relu6(x), np.clip(xd, 0, 6)),
        "leaky_relu": (nn.leaky_relu(x), np.where(xd > 0, xd, 0.2 * xd)),
        "leaky_relu_a": (nn.leaky_relu(x, alpha=0.01), np.where(xd > 0, xd, 0.01 * xd)),
        "elu": (nn.elu(x), np.where(xd > 0, xd, np.expm1(xd))),
        "elu_a": (nn.elu(x, alpha=0.3), np.where(xd > 0, xd, 0.3 * np.expm1(xd))),
        "selu": (nn.selu(x), scale * np.where(xd > 0, xd, alpha * np.expm1(xd))),
        "softplus": (nn.softplus(x), np.logaddexp(0, xd)),
        "silu": (nn.silu(x), xd / (1 + np.exp(-xd))),
        "silu_beta": (nn.silu(x, beta=2.0), xd / (1 + np.exp(-2 * xd))),
        "gelu": (nn.gelu(x), _gelu_ref(xd)),
        "gelu_tanh": (nn.gelu(x, approximate=True), _tanh_gelu_ref(xd)),
    }
    for name, (got, want) in cases.items():
        assert got.dtype == dtype, name
        np.testing.assert_allclose(got.numpy(), want, err_msg=name, **tol)


def test_relu_accepts_integers_and_keeps_dtype():
    y = nn.relu(np.array([-2, 3], np.int32))
    assert y.dtype == np.int32 and y.numpy().tolist() == [0, 3]


def test_activation_gradients_at_known_points():
    x = np.array([-2.0, -0.5, 0.0, 0.5, 2.0, 7.0])
    _, g = _grad(nn.relu, x)
    np.testing.assert_array_equal(g.numpy(), [0, 0, 0, 1, 1, 1])   # TF: 0 at 0
    _, g = _grad(nn.relu6, x)
    np.testing.assert_array_equal(g.numpy(), [0, 0, 0, 1, 1, 0])
    _, g = _grad(nn.leaky_relu, x)
    np.testing.assert_allclose(g.numpy(), [0.2, 0.2, 0.2, 1, 1, 1])
    _, g = _grad(nn.elu, x)
    np.testing.assert_allclose(g.numpy(), [np.exp(-2), np.exp(-0.5), 1, 1, 1, 1])
    _, g = _grad(nn.softplus, x)
    np.testing.assert_allclose(g.numpy(), 1 / (1 + np.exp(-x)))     # 1/2 at exactly 0
    _, g = _grad(nn.gelu, x)
    np.testing.assert_allclose(g.numpy(), _gelu_prime_ref(x), rtol=1e-12)
    _, g = _grad(nn.silu, x)
    s = 1 / (1 + np.exp(-x))
    np.testing.assert_allclose(g.numpy(), s * (1 + x * (1 - s)))


@pytest.mark.parametrize("alpha", [0.2, 0.0, 1.0, 1.5, -0.3])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_leaky_relu_record_values_gradients_and_graph(alpha, dtype):
    # The record's kernels (max(x, alpha*x) and g*fmax(sign(x), alpha) for alpha in [0, 1],
    # selects otherwise) against TensorFlow's definition, NaN included: the slope at 0 and
    # at NaN is alpha (LeakyReluGrad tests x > 0); a traced graph (template) agrees.
    x = np.array([-3.0, -0.5, -0.0, 0.0, 0.25, 4.0, np.nan], dtype)
    g = np.array([1.0, -2.0, 3.0, 0.5, 1.5, -1.0, 2.0], dtype)
    xt, gt = lk.constant(x), lk.constant(g)
    with np.errstate(invalid="ignore"):
        want = np.where(x > 0, x, alpha * x)
        want_g = np.where(x > 0, g, alpha * g)
    with lk.GradientTape() as tape:
        tape.watch(xt)
        y = nn.leaky_relu(xt, alpha)
        s = lk.reduce_sum(y * gt)
    got_g = tape.gradient(s, xt)
    assert y.dtype == dtype and got_g.dtype == dtype
    np.testing.assert_allclose(y.numpy(), want, rtol=1e-6)
    np.testing.assert_allclose(got_g.numpy(), want_g, rtol=1e-6)
    f = lk.function(lambda a: nn.leaky_relu(a * 1.0, alpha) + 0.0)
    big = np.resize(x, 70000).astype(dtype)  # large enough for a fused region
    with np.errstate(invalid="ignore"):
        np.testing.assert_allclose(f(big).numpy(), np.where(big > 0, big, alpha * big),
                                   rtol=1e-6)


class _CountingNumpy:
    """Stands in for ``numpy`` inside layerkit.kernels.activation; counts some ufunc calls."""

    def __init__(self, names):
        self.calls = dict.fromkeys(names, 0)

    def __getattr__(self, name):
        attr = getattr(np, name)
        if name not in self.calls:
            return attr

        def counted(*args, **kwargs):
            self.calls[name] += 1
            return attr(*args, **kwargs)
        return counted


@pytest.mark.parametrize("approximate", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gelu_gradient_is_one_pass_that_reads_the_forward_answer(monkeypatch, approximate,
                                                                 dtype):
    # tape.gradient of gelu costs one backward pass: the gradient kernel reads Phi (or
    # (1 + tanh u)/2) off the forward answer y / x and never evaluates tanh or erf again;
    # values against the float64 formulas, x = 0 (0/0 in y / x) and the tails included.
    x64 = np.concatenate([np.linspace(-9.0, 9.0, 721), [0.0, -0.0, 1e-20, -1e-20, 30, -30]])
    g64 = np.cos(3.0 * x64) + 1.5
    k, c = math.sqrt(2.0 / math.pi), 0.044715
    if approximate:
        t = np.tanh(k * (x64 + c * x64 ** 3))
        want = g64 * (0.5 * (1 + t) + 0.5 * x64 * (1 - t * t) * k * (1 + 3 * c * x64 * x64))
    else:
        cdf = 0.5 * (1 + np.array([math.erf(v / math.sqrt(2.0)) for v in x64]))
        want = g64 * (cdf + x64 * np.exp(-0.5 * x64 * x64) / math.sqrt(2.0 * math.pi))
    xt, gt = lk.constant(x64.astype(dtype)), lk.constant(g64.astype(dtype))
    with lk.GradientTape() as tape:
        tape.watch(xt)
        y = nn.gelu(xt, approximate=approximate)
    counting = _CountingNumpy(("tanh",))
    erf_calls = []
    monkeypatch.setattr(K, "np", counting)
    monkeypatch.setattr(K, "erf", lambda v: erf_calls.append(v))
    monkeypatch.setattr(S, "erf", lambda v: erf_calls.append(v))
    got = tape.gradient(y, xt, output_gradients=gt)
    assert counting.calls["tanh"] == 0 and not erf_calls
    assert got.dtype == dtype
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(got.numpy(), want, rtol=0, atol=tol * 2.5)


def test_elu_gradient_is_finite_for_large_inputs():
    # The unselected expm1 branch must not turn 0 * inf into nan.
    for f in (nn.elu, nn.selu):
        _, g = _grad(f, np.array([100.0, 1000.0], np.float32))
        assert np.all(np.isfinite(g.numpy())), f


def test_activations_reject_integer_inputs():
    for f in (nn.gelu, nn.softplus, nn.softmax, nn.elu, nn.silu, nn.log_softmax):
        with pytest.raises(TypeError, match=r"lk\.nn\.\w+: expected a floating-point"):
            f(np.array([1, 2]))


# ---- gelu / softplus kernels --------------------------------------------------------------
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("n", [1, 1000, 3 * tuning.NN_BLOCK + 17, tuning.NN_PARALLEL_MIN + 12345])
def test_gelu_float32_kernel_sizes(n, threads, monkeypatch):
    # Sizes around one block, several blocks with a ragged tail, and the threaded path.
    monkeypatch.setattr(BW, "THREADS", threads)
    x = (rng.standard_normal(n) * 3).astype(np.float32)
    g = rng.standard_normal(n).astype(np.float32)
    for approximate, ref, dref in (
            (False, _gelu_ref, _gelu_prime_ref),
            (True, _tanh_gelu_ref, None)):
        y, dx = _grad(lambda t, a=approximate: nn.gelu(t, approximate=a), x, lk.constant(g))
        assert y.dtype == np.float32 and dx.dtype == np.float32
        np.testing.assert_allclose(y.numpy(), ref(x), rtol=2e-6, atol=3e-7)
        if dref is not None:
            np.testing.assert_allclose(dx.numpy(), g * dref(x), rtol=2e-6, atol=3e-7)


def test_kernel_threads_follow_the_blas_thread_count(monkeypatch):
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"):
        monkeypatch.delenv(var, raising=False)
    assert BW.default_threads() == 1  # multi-threaded BLAS: its spinning workers own the core
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "1")
    assert BW.default_threads() == min(os.cpu_count() or 1, 2)
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "4")
    assert BW.default_threads() == 1


def test_gelu_float32_accuracy_over_the_whole_range():
    x = np.linspace(-9, 9, 200_001).astype(np.float32)
    err = np.abs(nn.gelu(x).numpy() - _gelu_ref(x))
    assert err.max() < 3e-7
    # relative accuracy near 0 and in the moderate negative tail
    small = np.abs(x) < 3
    rel = err[small] / np.maximum(np.abs(_gelu_ref(x[small])), 1e-30)
    assert rel.max() < 2e-6


def test_gelu_tanh_gradient_matches_its_formula():
    x = np.linspace(-6, 6, 1001).astype(np.float32)
    _, g = _grad(lambda t: nn.gelu(t, approximate=True), x)
    xd = x.astype(np.float64)
    k, c = math.sqrt(2 / math.pi), 0.044715
    t = np.tanh(k * (xd + c * xd**3))
    want = 0.5 * (1 + t) + 0.5 * xd * (1 - t * t) * k * (1 + 3 * c * xd * xd)
    np.testing.assert_allclose(g.numpy(), want, rtol=1e-5, atol=2e-6)


def test_gelu_special_values_and_zero_gradient():
    x = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e30, -1e30, 30.0, -30.0], np.float32)
    y = nn.gelu(x).numpy()
    np.testing.assert_array_equal(y[[0, 1, 2, 3, 5, 6, 7, 8]], x[[0, 0, 2, 0, 5, 0, 7, 0]])
    assert np.isnan(y[4])
    _, g = _grad(nn.gelu, np.array([0.0, 1e30, -1e30, 30.0, -30.0, 2.0], np.float32))
    np.testing.assert_allclose(g.numpy(), [0.5, 1, 0, 1, 0, _gelu_prime_ref(2.0)], rtol=1e-6)


def test_gelu_gradient_of_a_mean_uses_the_broadcast_upstream():
    # reduce_mean's gradient is a zero-stride broadcast view; the kernel reads it as is.
    x = rng.standard_normal((300, 70)).astype(np.float32)
    _, g = _grad(lambda t: lk.reduce_mean(nn.gelu(t)), x)
    np.testing.assert_allclose(g.numpy(), _gelu_prime_ref(x) / x.size, rtol=2e-6, atol=1e-10)


def test_gelu_non_contiguous_and_float16_inputs():
    x = rng.standard_normal((50, 40)).astype(np.float32)
    np.testing.assert_allclose(nn.gelu(x.T).numpy(), _gelu_ref(x.T), rtol=2e-6, atol=3e-7)
    h = x.astype(np.float16)
    y = nn.gelu(h)
    assert y.dtype == np.float16
    np.testing.assert_allclose(y.numpy(), _gelu_ref(h), rtol=2e-3, atol=2e-3)
    _, g = _grad(nn.gelu, h)
    assert g.dtype == np.float16
    np.testing.assert_allclose(g.numpy(), _gelu_prime_ref(h), rtol=3e-3, atol=3e-3)


def test_gelu_second_derivative_in_float32():
    x = lk.constant(np.array([-1.5, 0.3, 2.0], np.float32))
    with lk.GradientTape() as outer:
        outer.watch(x)
        with lk.GradientTape() as inner:
            inner.watch(x)
            y = nn.gelu(x)
        dy = inner.gradient(y, x)
    d2 = outer.gradient(dy, x).numpy()
    xd = x.numpy().astype(np.float64)
    want = np.exp(-xd * xd / 2) / math.sqrt(2 * math.pi) * (2 - xd * xd)
    np.testing.assert_allclose(d2, want, rtol=1e-5)


def test_softplus_float32_kernel_and_extremes():
    x = np.concatenate([np.linspace(-120, 120, 100_003), [0.0, 1e-8, -1e-8]]).astype(np.float32)
    y = nn.softplus(x).numpy()
    want = np.logaddexp(0, x.astype(np.float64))
    np.testing.assert_allclose(y, want, rtol=2e-6, atol=1e-37)
    assert np.all(np.isfinite(y))


# ---- softmax family -------------------------------------------------------------------------
@pytest.mark.parametrize("axis", [-1, 0, 1])
def test_softmax_and_log_softmax_match_numpy(axis):
    x = rng.standard_normal((3, 4, 5))
    np.testing.assert_allclose(nn.softmax(x, axis=axis).numpy(), _softmax_ref(x, axis))
    np.testing.assert_allclose(nn.log_softmax(x, axis=axis).numpy(),
                               np.log(_softmax_ref(x, axis)), atol=1e-12)


def test_softmax_axis_out_of_range():
    with pytest.raises(ValueError, match=r"softmax: axis 2 is out of range .* rank 2"):
        nn.softmax(np.zeros((2, 3)), axis=2)


def test_extreme_logits_give_no_nan_or_inf():
    x = np.array([[1000.0, -1000.0, 0.0], [-1000.0, -1000.0, 1000.0]], np.float32)
    labels = np.array([[0.2, 0.3, 0.5], [0.0, 1.0, 0.0]], np.float32)
    sparse = np.array([1, 0])
    funcs = {
        "softmax": lambda t: nn.softmax(t),
        "log_softmax": lambda t: nn.log_softmax(t),
        "softplus": lambda t: nn.softplus(t),
        "softmax_ce": lambda t: nn.softmax_cross_entropy_with_logits(labels, t),
        "sparse_ce": lambda t: nn.sparse_softmax_cross_entropy_with_logits(sparse, t),
        "sigmoid_ce": lambda t: nn.sigmoid_cross_entropy_with_logits(labels=labels, logits=t),
    }
    for name, f in funcs.items():
        y, g = _grad(f, x)
        assert np.all(np.isfinite(y.numpy())), name
        assert np.all(np.isfinite(g.numpy())), name
    np.testing.assert_allclose(nn.softmax(x).numpy(), [[1, 0, 0], [0, 0, 1]])
    np.testing.assert_allclose(nn.log_softmax(x).numpy()[0], [0, -2000, -1000])
    np.testing.assert_allclose(
        nn.sparse_softmax_cross_entropy_with_logits(sparse, x).numpy(), [2000, 2000])
    np.testing.assert_allclose(
        nn.sigmoid_cross_entropy_with_logits(labels=labels, logits=x).numpy(),
        [[800, 300, math.log(2)], [0, 1000, 1000]], rtol=1e-6)


# ---- cross-entropies -------------------------------------------------------------------------
def test_softmax_cross_entropy_values_and_gradients():
    x = rng.standard_normal((4, 5))
    z = rng.uniform(0.1, 1, (4, 5))
    z /= z.sum(-1, keepdims=True)
    want = -(z * np.log(_softmax_ref(x))).sum(-1)
    np.testing.assert_allclose(nn.softmax_cross_entropy_with_logits(z, x).numpy(), want)
    np.testing.assert_allclose(
        nn.softmax_cross_entropy_with_logits(labels=z.T, logits=x.T, axis=0).numpy(), want)
    _, g = _grad(lambda t: nn.softmax_cross_entropy_with_logits(z, t), x)
    np.testing.assert_allclose(g.numpy(), _softmax_ref(x) - z, atol=1e-12)


def test_sparse_softmax_cross_entropy_values_and_gradients():
    x = rng.standard_normal((2, 3, 4))
    labels = np.array([[0, 3, 1], [2, 2, 0]], np.int32)
    p = _softmax_ref(x)
    want = -np.log(np.take_along_axis(p, labels[..., None], -1)[..., 0])
    loss = nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=x)
    assert loss.shape == (2, 3)
    np.testing.assert_allclose(loss.numpy(), want)
    _, g = _grad(lambda t: nn.sparse_softmax_cross_entropy_with_logits(labels, t), x)
    np.testing.assert_allclose(g.numpy(), p - np.eye(4)[labels], atol=1e-12)
    # agrees with the dense form on one-hot labels
    dense = nn.softmax_cross_entropy_with_logits(np.eye(4)[labels], x)
    np.testing.assert_allclose(loss.numpy(), dense.numpy())


def test_sparse_softmax_cross_entropy_errors():
    x = np.zeros((3, 4), np.float32)
    with pytest.raises(ValueError, match=r"label 4 is out of range \[0, 4\).*num_classes=4"):
        nn.sparse_softmax_cross_entropy_with_logits(np.array([0, 4, 1]), x)
    with pytest.raises(ValueError, match=r"label -1 is out of range"):
        nn.sparse_softmax_cross_entropy_with_logits(np.array([-1, 0, 1]), x)
    with pytest.raises(TypeError, match="labels must be integers"):
        nn.sparse_softmax_cross_entropy_with_logits(np.array([0.0, 1.0, 2.0]), x)
    with pytest.raises(ValueError, match=r"labels must have shape logits.shape\[:-1\]"):
        nn.sparse_softmax_cross_entropy_with_logits(np.array([0, 1]), x)


def test_sigmoid_cross_entropy_values_and_gradients():
    x = rng.standard_normal((3, 4)) * 4
    z = rng.uniform(0, 1, (3, 4))
    s = 1 / (1 + np.exp(-x))
    want = -(z * np.log(s) + (1 - z) * np.log(1 - s))
    got = nn.sigmoid_cross_entropy_with_logits(labels=z, logits=x)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-10)
    _, g = _grad(lambda t: nn.sigmoid_cross_entropy_with_logits(labels=z, logits=t), x)
    np.testing.assert_allclose(g.numpy(), s - z, atol=1e-12)
    _, g0 = _grad(lambda t: nn.sigmoid_cross_entropy_with_logits(labels=[0.25], logits=t),
                  np.array([0.0]))
    np.testing.assert_allclose(g0.numpy(), [0.25])       # sigmoid(0) - z, exact at 0


def test_cross_entropy_shape_errors():
    with pytest.raises(ValueError, match=r"same shape, received labels \(3,\) and logits \(4,\)"):
        nn.sigmoid_cross_entropy_with_logits(labels=np.zeros(3), logits=np.zeros(4))
    with pytest.raises(ValueError, match="same shape"):
        nn.softmax_cross_entropy_with_logits(np.zeros((2, 3)), np.zeros((3, 3)))
    with pytest.raises(ValueError, match="labels= and logits= are required"):
        nn.sigmoid_cross_entropy_with_logits(logits=np.zeros(3))


def test_cross_entropy_labels_are_cast_to_the_logits_dtype():
    x = np.zeros((2, 3), np.float32)
    y = nn.softmax_cross_entropy_with_logits([[0, 1, 0], [1, 0, 0]], x)
    assert y.dtype == np.float32
    np.testing.assert_allclose(y.numpy(), [math.log(3)] * 2, rtol=1e-6)


# ---- dropout ---------------------------------------------------------------------------------
def test_dropout_statistics_and_scaling():
    x = np.ones((200, 500), np.float32)
    y = nn.dropout(x, 0.3, seed=1).numpy()
    kept = y != 0
    assert abs(kept.mean() - 0.7) < 0.01
    np.testing.assert_allclose(y[kept], 1 / 0.7, rtol=1e-6)
    assert abs(y.mean() - 1.0) < 0.02
    assert y.dtype == np.float32


def test_dropout_gradient_is_the_scaled_mask():
    x = rng.standard_normal((20, 30))
    y, g = _grad(lambda t: nn.dropout(t, 0.5, seed=5), x)
    mask = y.numpy() != 0
    np.testing.assert_array_equal(g.numpy(), np.where(mask, 2.0, 0.0))


def test_dropout_seed_reproducibility():
    x = np.ones((50, 50), np.float32)
    a = nn.dropout(x, 0.5, seed=42).numpy()
    np.testing.assert_array_equal(a, nn.dropout(x, 0.5, seed=42).numpy())
    assert not np.array_equal(a, nn.dropout(x, 0.5, seed=43).numpy())
    lkrandom.set_seed(9)
    b1, b2 = nn.dropout(x, 0.5).numpy(), nn.dropout(x, 0.5).numpy()
    assert not np.array_equal(b1, b2)          # seedless calls advance the global stream
    lkrandom.set_seed(9)
    np.testing.assert_array_equal(nn.dropout(x, 0.5).numpy(), b1)
    np.testing.assert_array_equal(nn.dropout(x, 0.5).numpy(), b2)


def test_dropout_noise_shape_drops_whole_slices():
    x = np.ones((64, 8), np.float32)
    y = nn.dropout(x, 0.5, noise_shape=[64, 1], seed=0).numpy()
    assert np.all((y == 0).all(1) | (y == 2).all(1))
    assert 10 < (y[:, 0] == 0).sum() < 54
    z = nn.dropout(x, 0.5, noise_shape=[None, 1], seed=0).numpy()
    np.testing.assert_array_equal(y, z)


def test_dropout_errors_and_rate_zero():
    x = np.ones((4, 3), np.float32)
    for rate in (1.0, -0.1, 1.5):
        with pytest.raises(ValueError, match=r"rate must be in \[0, 1\)"):
            nn.dropout(x, rate)
    with pytest.raises(ValueError, match=r"noise_shape \(4, 2\) does not broadcast .* \(4, 3\)"):
        nn.dropout(x, 0.5, noise_shape=[4, 2])
    np.testing.assert_array_equal(nn.dropout(x, 0.0).numpy(), x)


# ---- moments, batch_normalization, l2_normalize ----------------------------------------------
def test_moments_match_numpy():
    x = rng.standard_normal((4, 3, 5))
    m, v = nn.moments(x, axes=[0, 2])
    np.testing.assert_allclose(m.numpy(), x.mean((0, 2)))
    np.testing.assert_allclose(v.numpy(), x.var((0, 2)))
    m, v = nn.moments(x, axes=[1], keepdims=True)
    assert m.shape == v.shape == (4, 1, 5)
    np.testing.assert_allclose(v.numpy(), x.var(1, keepdims=True))
    m, v = nn.moments(lk.constant(x.astype(np.float32)), axes=[0, 1, 2])
    assert m.shape == () and m.dtype == np.float32


def test_batch_normalization_matches_formula():
    x = rng.standard_normal((6, 3))
    mean, var = x.mean(0), x.var(0)
    offset, scale = rng.standard_normal(3), rng.standard_normal(3)
    got = nn.batch_normalization(x, mean, var, offset, scale, 1e-3).numpy()
    np.testing.assert_allclose(got, (x - mean) / np.sqrt(var + 1e-3) * scale + offset)
    got = nn.batch_normalization(x, mean, var, None, None, 1e-3).numpy()
    np.testing.assert_allclose(got, (x - mean) / np.sqrt(var + 1e-3))
    # float64 statistics do not turn a float32 input into float64
    y = nn.batch_normalization(x.astype(np.float32), mean, var, offset, scale, 1e-3)
    assert y.dtype == np.float32
    np.testing.assert_allclose(y.numpy(), (x - mean) / np.sqrt(var + 1e-3) * scale + offset,
                               rtol=1e-5, atol=1e-6)


def test_l2_normalize_matches_formula_and_guards_zero():
    x = rng.standard_normal((3, 4))
    np.testing.assert_allclose(nn.l2_normalize(x, axis=1).numpy(),
                               x / np.linalg.norm(x, axis=1, keepdims=True))
    np.testing.assert_allclose(nn.l2_normalize(x).numpy(), x / np.linalg.norm(x))
    z = nn.l2_normalize(np.zeros((2, 3), np.float32), axis=-1).numpy()
    np.testing.assert_array_equal(z, 0)
    _, g = _grad(lambda t: nn.l2_normalize(t, axis=-1), np.zeros((2, 3)))
    assert np.all(np.isfinite(g.numpy()))


def test_public_namespace():
    for name in nn.__all__:
        assert callable(getattr(nn, name)), name
    assert nn.swish is nn.silu


# ---- inside lk.function: gradients and random masks run as graph nodes -----------------------
def _graph_only(f, *args):
    """Call the lk.function ``f`` and fail on any eager fallback."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", EagerFallbackWarning)
        return f(*args)


def _relu_ce_step(x, labels):
    with lk.GradientTape() as tape:
        tape.watch(x)
        loss = lk.reduce_mean(nn.sparse_softmax_cross_entropy_with_logits(
            labels, nn.relu(x * 2.0)))
    return loss, tape.gradient(loss, x)


def test_relu_and_sparse_cross_entropy_gradients_trace_into_a_graph():
    f = lk.function(_relu_ce_step)
    labels = lk.constant(np.array([0, 1, 4, 2]))
    for i in range(3):  # new inputs: the relu mask and the one-hot are computed per call
        x = lk.constant(np.random.default_rng(i).standard_normal((4, 5)).astype(np.float32))
        loss, g = _graph_only(f, x, labels)
        want_loss, want_g = _relu_ce_step(x, labels)
        np.testing.assert_allclose(loss.numpy(), want_loss.numpy(), rtol=1e-6)
        np.testing.assert_allclose(g.numpy(), want_g.numpy(), rtol=1e-6, atol=1e-7)
    assert f.trace_count == 1
    assert f.get_concrete_function(x, labels).mode == "graph"


def test_sparse_cross_entropy_label_check_runs_on_every_graph_call():
    f = lk.function(_relu_ce_step)
    x = lk.constant(np.ones((3, 4), np.float32))
    _graph_only(f, x, lk.constant(np.array([0, 1, 3])))
    with pytest.raises(ValueError, match=r"label 4 is out of range \[0, 4\) \(num_classes=4\)"):
        f(x, lk.constant(np.array([0, 4, 1])))
    with pytest.raises(ValueError, match=r"label -1 is out of range"):
        f(x, lk.constant(np.array([-1, 0, 1])))
    assert f.trace_count == 1


def test_relu_grad_record_matches_the_mask_rule():
    g = rng.standard_normal((3, 4))
    y = np.maximum(rng.standard_normal((3, 4)), 0)
    np.testing.assert_array_equal(N.relu_grad(g, y).numpy(), g * (y > 0))
    assert N.relu_grad(g.astype(np.float32), y.astype(np.float32)).dtype == np.float32


def test_dropout_in_a_graph_draws_a_fresh_mask_per_call_from_the_global_stream():
    f = lk.function(lambda x: nn.dropout(x, 0.5))
    x = lk.constant(np.ones((30, 40), np.float32))
    lkrandom.set_seed(4)
    graph = [_graph_only(f, x).numpy() for _ in range(3)]
    lkrandom.set_seed(4)
    eager = [nn.dropout(x, 0.5).numpy() for _ in range(3)]
    for a, b in zip(graph, eager):          # the same sequence as eager code
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(graph[0], graph[1])
    assert f.trace_count == 1


def test_dropout_op_seed_in_a_graph_gives_a_reproducible_sequence():
    x = lk.constant(np.ones((30, 40), np.float32))

    def run():
        f = lk.function(lambda t: nn.dropout(t, 0.5, seed=11))
        return [_graph_only(f, x).numpy() for _ in range(3)]

    first, again = run(), run()
    # the first call is the eager value of that seed; later calls continue its stream
    np.testing.assert_array_equal(first[0], nn.dropout(x, 0.5, seed=11).numpy())
    assert not np.array_equal(first[0], first[1])
    assert not np.array_equal(first[1], first[2])
    for a, b in zip(first, again):
        np.testing.assert_array_equal(a, b)


def test_dropout_with_a_generator_seed_continues_its_stream_in_eager_and_graph():
    x = lk.constant(np.ones((30, 40), np.float32))
    g1, g2 = lkrandom.Generator(5), lkrandom.Generator(5)
    f = lk.function(lambda t: nn.dropout(t, 0.5, seed=g1))
    graph = [_graph_only(f, x).numpy() for _ in range(3)]
    eager = [nn.dropout(x, 0.5, seed=g2).numpy() for _ in range(3)]
    for a, b in zip(graph, eager):
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(eager[0], eager[1])
    with pytest.raises(TypeError, match="lk.nn.dropout: seed must be an int"):
        nn.dropout(x, 0.5, seed=1.5)
