"""Gradient checks (float64 central differences, second order unless noted) for a
representative differentiable subset of ``lk.keras_ops``, including every op record
the package defines (sort/top_k/take_along_axis, scatter, arctan family, erfinv,
inv/solve/slogdet/cholesky/eigh)."""
import numpy as np
import pytest

import layerkit as lk
from layerkit import keras_ops as ops
from layerkit.autodiff.check import check_grads
from layerkit.keras_ops import image

R = np.random.default_rng(11)
A = R.standard_normal((3, 4))
B = R.standard_normal((3, 4))
U = R.random((3, 4)) * 1.6 - 0.8
P = R.random((3, 4)) + 0.5
M = R.standard_normal((3, 3))
SPD = M @ M.T + 3 * np.eye(3)
IMG = R.random((1, 5, 5, 3))
KER = R.standard_normal((3, 3, 3, 2))
SEQ = R.standard_normal((2, 6, 3))
Q = R.standard_normal((1, 3, 2, 4))
KV = R.standard_normal((1, 4, 2, 4))
LOG = R.standard_normal((4, 3))
PROB = np.exp(LOG) / np.exp(LOG).sum(1, keepdims=True)
LAB = np.array([0, 2, 1, 1])
SEG = np.array([0, 1, 0, 2])



def _sym(x):
    return (x + ops.transpose(x)) * 0.5


ROWS = [
    ("sort", lambda x: ops.sort(x, axis=0), [A]),
    ("sort_flat", lambda x: ops.sort(x, axis=None), [A]),
    ("top_k", lambda x: ops.top_k(x, 2)[0], [A]),
    ("take_along_axis", lambda x: ops.take_along_axis(x, np.array([[1, 1], [0, 3], [2, 0]]),
                                                      1), [A]),
    ("take", lambda x: ops.take(x, np.array([[0, -1], [3, 3]])), [A]),
    ("median", lambda x: ops.median(x, axis=1), [A]),
    ("quantile", lambda x: ops.quantile(x, [0.2, 0.9], axis=0), [A]),
    ("nanmean", lambda x: ops.nanmean(x, axis=1), [A]),
    ("sinh_cosh", lambda x: ops.sinh(x) + ops.cosh(x), [A]),
    ("arcsin_arccos", lambda x: ops.arcsin(x) * ops.arccos(x), [U]),
    ("arctan", ops.arctan, [A]),
    ("arctan2", ops.arctan2, [A, P]),
    ("arcsinh_arctanh", lambda x: ops.arcsinh(x * 3) + ops.arctanh(x), [U]),
    ("arccosh", lambda x: ops.arccosh(x + 1.2), [P]),
    ("cbrt", ops.cbrt, [P]),
    ("logaddexp", ops.logaddexp, [A, B]),
    ("hypot", ops.hypot, [A, B]),
    ("sinc", ops.sinc, [U]),
    ("erfinv", ops.erfinv, [U]),
    ("erfc", ops.erfc, [A]),
    ("linspace", lambda a, b: ops.linspace(a, b, 5, axis=1), [A[0], B[0]]),
    ("cumsum", lambda x: ops.cumsum(x), [A]),
    ("cumprod", lambda x: ops.cumprod(x, axis=1), [P]),
    ("trace_diag", lambda x: ops.trace(x) + ops.sum(ops.diag(x[0], 1)), [A]),
    ("diagonal", lambda x: ops.diagonal(x, -1), [A]),
    ("kron", ops.kron, [A[:2, :2], B[:2, :3]]),
    ("cross", ops.cross, [A[:, :3], B[:, :3]]),
    ("correlate", lambda a, b: ops.correlate(a, b, "full"), [A[0], B[0, :2]]),
    ("repeat_roll", lambda x: ops.roll(ops.repeat(x, [2, 0, 1, 1], axis=1), 2), [A]),
    ("pad_reflect", lambda x: ops.pad(x, ((1, 1), (2, 1)), mode="reflect"), [A]),
    ("tril_triu", lambda x: ops.tril(x, 1) * ops.triu(x), [A]),
    ("vander", lambda x: ops.vander(x, 3), [A[0]]),
    ("norm_vec", lambda x: ops.norm(x, ord=3, axis=1), [A]),
    ("norm_fro", lambda x: ops.norm(x, keepdims=True), [A]),
    ("norm_inf", lambda x: ops.norm(x, ord=np.inf), [A]),
    ("normalize", lambda x: ops.normalize(x, axis=0), [A]),
    ("logsumexp", lambda x: ops.logsumexp(x, axis=(0, 1)), [A]),
    ("softmax_tuple", lambda x: ops.softmax(x, axis=(0, 1)), [A]),
    ("log_softmax", ops.log_softmax, [A]),
    ("sparsemax", ops.sparsemax, [np.array([[0.1, 1.1, 0.5], [2.0, -1.0, 0.0]])]),
    ("celu_glu", lambda x: ops.celu(x, 0.7) + ops.glu(ops.concatenate([x, x], -1)), [A]),
    ("activations", lambda x: ops.hard_silu(x * 2) + ops.squareplus(x) + ops.softsign(x)
     + ops.log_sigmoid(x) + ops.gelu(x) + ops.tanh_shrink(x), [A]),
    ("layer_norm", lambda x, g, b: ops.layer_normalization(x, g, b), [A, B[0], P[0]]),
    ("rms_norm", lambda x, g: ops.rms_normalization(x, g), [A, B[0]]),
    ("batch_norm", lambda x, m, v: ops.batch_normalization(x, m, v, 1), [A, B[0], P[0]]),
    ("moments", lambda x: ops.moments(x, axes=[0]), [A]),
    ("bce", lambda p: ops.binary_crossentropy((B > 0) * 1.0, p), [U * 0.5 + 0.5]),
    ("bce_logits", lambda z: ops.binary_crossentropy((B > 0) * 1.0, z, True), [A]),
    ("cce", lambda p: ops.categorical_crossentropy(np.eye(3)[LAB], p), [PROB]),
    ("scce_logits", lambda z: ops.sparse_categorical_crossentropy(LAB, z, True), [LOG]),
    ("conv", lambda x, k: ops.conv(x, k, strides=2, padding="same"), [IMG, KER]),
    ("conv_transpose", lambda x, k: ops.conv_transpose(x, k, 2, "valid"),
     [IMG[:, :3, :3, :2], KER[..., :2, :]]),
    ("depthwise_conv", lambda x, k: ops.depthwise_conv(x, k, padding="same"),
     [IMG, KER[..., :1]]),
    ("depthwise_conv1d", lambda x, k: ops.depthwise_conv(x, k), [SEQ, KER[0, :, :, :1]]),
    ("separable_conv", lambda x, d, p: ops.separable_conv(x, d, p),
     [IMG, KER[..., :1], KER[:1, :1]]),
    ("pools", lambda x: ops.max_pool(x, 2, 1) + ops.average_pool(x, 2, 1), [IMG]),
    ("adaptive_pools", lambda x: ops.adaptive_average_pool(x, 4) * ops.adaptive_max_pool(
        x, 4), [SEQ]),
    ("attention", lambda q, k, v: ops.dot_product_attention(
        q, k, v, mask=np.array([[True, True, False, True]] * 3)), [Q, KV, KV]),
    ("attention_causal", lambda q: ops.dot_product_attention(q, q, q, is_causal=True), [Q]),
    ("segment_sum", lambda d: ops.segment_sum(d, SEG, 3), [A[:, :2].repeat(2, 0)[:4]]),
    ("segment_max", lambda d: ops.segment_max(d, SEG, 3), [A.ravel()[:4]]),
    ("scatter", lambda v: ops.scatter([[0, 1], [2, 2], [0, 1]], v, (3, 3)), [A[0, :3]]),
    ("scatter_update", lambda x, v: ops.scatter_update(x, [[0, 1], [2, 2], [0, 1]], v),
     [A, B[0, :3]]),
    ("slice_update", lambda x, u: ops.slice_update(x, (1, 0), u), [A, B[:2, :3]]),
    ("where_select", lambda x: ops.select([x > 0.5, x < -0.5], [x * x, -x], 2.0), [A]),
    ("inv", ops.inv, [SPD]),
    ("det", ops.det, [M]),
    ("slogdet", lambda x: ops.slogdet(x)[1], [M]),
    ("logdet", ops.logdet, [SPD]),
    ("solve", ops.solve, [SPD, A[:, :2]]),
    ("solve_vector", ops.solve, [SPD, A[:, 0]]),
    ("solve_triangular", lambda a, b: ops.solve_triangular(a, b, lower=True), [SPD, A]),
    # cholesky and eigh read one triangle; their gradients are for symmetric inputs
    # (TensorFlow's and Keras's convention), so the checks perturb symmetrically.
    ("cholesky", lambda x: ops.cholesky(_sym(x)), [SPD]),
    ("cholesky_inverse", lambda x: ops.cholesky_inverse(ops.cholesky(_sym(x))), [SPD]),
    ("eigh", lambda x: (ops.eigh(_sym(x))[0], ops.square(ops.eigh(_sym(x))[1])),
     [SPD + np.diag([0.0, 1.0, 2.5])]),
    ("lstsq", lambda a, b: ops.lstsq(a, b), [A.T, R.standard_normal(4)]),
    ("pinv", ops.pinv, [A]),
    ("fft", lambda a, b: ops.fft((a, b)), [A, B]),
    ("fft2_ifft2", lambda a, b: ops.ifft2(ops.fft2((a, b))[::-1]), [A, B]),
    ("rfft_irfft", lambda x: ops.irfft(ops.rfft(x, 6), 5), [A]),
    ("stft_istft", lambda x: ops.istft(ops.stft(x, 4, 2, 6), 4, 2, 6, length=4) * x,
     [A]),
    ("rearrange", lambda x: ops.rearrange(x, "(a b) c -> c b a", b=1), [A]),
    ("extract_sequences", lambda x: ops.extract_sequences(x, 3, 2), [SEQ[..., 0]]),
    ("unfold_fold", lambda x: ops.fold(ops.unfold(x, 2, stride=1) * 1.5, (4, 4), 2),
     [R.standard_normal((1, 2, 4, 4))]),
    ("cdist", ops.cdist, [A, B[:2]]),
    ("depth_space", lambda x: ops.depth_to_space(ops.space_to_depth(x * x, 2), 2),
     [R.standard_normal((1, 4, 4, 2))]),
    ("trapezoid", lambda y: ops.trapezoid(y, x=np.array([0.0, 0.5, 1.5, 2.0])), [A]),
    ("average", lambda x, w: ops.average(x, 1, w), [A, P[0]]),
    ("map_scan", lambda x: ops.scan(lambda c, r: (c * r, c + r), ops.ones(4, "float64"),
                                    ops.map(lambda r: r * r, x))[1], [A]),
    ("cond_switch", lambda x: ops.cond(True, lambda: x * x, lambda: x) + ops.switch(
        1, [lambda v: v, lambda v: ops.exp(v)], x), [A]),
    ("image_hsv", lambda x: image.rgb_to_hsv(x), [IMG[0] * 0.8 + 0.1]),
    ("image_gray_blur", lambda x: image.gaussian_blur(image.rgb_to_grayscale(x)), [IMG]),
    ("image_resize", lambda x: image.resize(x, (3, 7), "bicubic", antialias=True), [IMG]),
    ("ctc_loss", lambda z: ops.ctc_loss(np.array([[1, 2], [2, 2]]), z, np.array([2, 2]),
                                        np.array([5, 4])), [R.standard_normal((2, 5, 3))]),
    ("image_affine", lambda x: image.affine_transform(
        x, np.array([0.9, 0.2, 0.7, -0.1, 1.1, -0.4, 0.01, 0.0]), fill_mode="reflect"),
     [IMG]),
    ("map_coordinates", lambda x, c: image.map_coordinates(x, c, 1, "mirror"),
     [A, np.stack([R.random((2, 2)) * 2.6, R.random((2, 2)) * 3.6]) + 0.2]),
    ("image_sobel_ssim", lambda x: (image.sobel_edges(x), image.ssim(
        x, x * 0.8 + 0.1, filter_size=3)), [IMG]),
    ("image_patches_3d", lambda v: image.extract_patches_3d(v, 2, padding="same"),
     [R.random((1, 3, 4, 3, 2))]),
    ("image_perspective", lambda x, e: image.perspective_transform(
        x, np.array([[0.0, 0.0], [4.0, 0.0], [0.0, 4.0], [4.0, 4.0]]), e),
     [IMG, np.array([[0.3, 0.2], [3.6, 0.4], [0.1, 3.7], [4.2, 4.1]])]),
    ("image_elastic", lambda x: image.elastic_transform(x, 2.0, 1.0, seed=4), [IMG]),
    ("image_scale_translate", lambda x, s, tr: image.scale_and_translate(
        x, (1, 3, 7, 3), s, tr, (1, 2), "lanczos3"), [IMG, [0.6, 1.4], [0.3, -1.2]]),
    ("image_patches", lambda x: image.extract_patches(x, 2, padding="same"), [IMG]),
]


@pytest.mark.parametrize("row", ROWS, ids=[r[0] for r in ROWS])
def test_gradient(row):
    name, fn, args = row
    with np.errstate(all="ignore"):
        check_grads(fn, args, order=2, rtol=1e-5, atol=1e-6)


def test_jvp_matches_the_jacobian():
    x = lk.constant(A)
    v = lk.constant(B)
    y, tangent = ops.jvp(lambda z: ops.sin(z) * z, (x,), (v,))
    np.testing.assert_allclose(tangent.numpy(), (np.cos(A) * A + np.sin(A)) * B, rtol=1e-10)
    (y2, tangent2, aux) = ops.jvp(lambda z: (z * z, "aux"), (x,), (v,), has_aux=True)
    assert aux == "aux"
    np.testing.assert_allclose(tangent2.numpy(), 2 * A * B, rtol=1e-12)


def test_integer_and_order_outputs_have_no_gradient():
    x = lk.constant(A)
    with lk.GradientTape() as tape:
        tape.watch(x)
        idx = ops.argsort(x)
        vals = ops.top_k(x, 2)[0]
        s = ops.sum(vals) + ops.sum(ops.cast(idx, "float64"))
    g = tape.gradient(s, x).numpy()
    want = np.zeros_like(A)
    top = np.argsort(-A, axis=1, kind="stable")[:, :2]
    np.put_along_axis(want, top, 1.0, axis=1)
    np.testing.assert_array_equal(g, want)


def test_custom_gradient_with_keras_upstream_convention():
    @ops.custom_gradient
    def log1pexp(x):
        e = ops.exp(x)

        def grad(*args, upstream=None):
            if upstream is None:
                (upstream,) = args
            return ops.multiply(upstream, 1.0 - 1.0 / ops.add(1, e))

        return ops.log(1 + e), grad

    x = lk.constant(100.0)
    with lk.GradientTape() as tape:
        tape.watch(x)
        y = log1pexp(x)
    assert float(tape.gradient(y, x)) == pytest.approx(1.0)
