"""Convolution and pooling: forward values vs slow loop references, gradients, errors."""
from __future__ import annotations

import threading

import numpy as np
import pytest

import layerkit as lk
from layerkit._core.op import Op
from layerkit.kernels import scratch
from layerkit.primitives import conv as C
from tests.ops.rows_conv import ROWS


# ---- slow references (explicit loops over every output element) ----------------------
def same_pads(n, k, s, d=1):
    out = -(-n // s)
    total = max((out - 1) * s + (k - 1) * d + 1 - n, 0)
    return total // 2, total - total // 2


def resolve(padding, hw, k, s, d):
    if padding == "VALID":
        return (0, 0), (0, 0)
    if padding == "SAME":
        return same_pads(hw[0], k[0], s[0], d[0]), same_pads(hw[1], k[1], s[1], d[1])
    return tuple(padding[1]), tuple(padding[2])


def ref_conv(x, w, s=(1, 1), padding="VALID", d=(1, 1)):
    n, h, wd, c = x.shape
    kh, kw, _, oc = w.shape
    (pt, pb), (pl, pr) = resolve(padding, (h, wd), (kh, kw), s, d)
    oh = (h + pt + pb - (kh - 1) * d[0] - 1) // s[0] + 1
    ow = (wd + pl + pr - (kw - 1) * d[1] - 1) // s[1] + 1
    y = np.zeros((n, oh, ow, oc))
    for b in range(n):
        for i in range(oh):
            for j in range(ow):
                for a in range(kh):
                    for e in range(kw):
                        r, q = i * s[0] + a * d[0] - pt, j * s[1] + e * d[1] - pl
                        if 0 <= r < h and 0 <= q < wd:
                            y[b, i, j] += x[b, r, q] @ w[a, e]
    return y


def ref_conv_transpose(g, w, in_shape, s=(1, 1), padding="VALID", d=(1, 1)):
    """Adjoint of ref_conv in x, by scattering (w is HWIO of the forward conv)."""
    n, h, wd, c = in_shape
    kh, kw, _, _ = w.shape
    (pt, _), (pl, _) = resolve(padding, (h, wd), (kh, kw), s, d)
    dx = np.zeros(in_shape)
    for b in range(n):
        for i in range(g.shape[1]):
            for j in range(g.shape[2]):
                for a in range(kh):
                    for e in range(kw):
                        r, q = i * s[0] + a * d[0] - pt, j * s[1] + e * d[1] - pl
                        if 0 <= r < h and 0 <= q < wd:
                            dx[b, r, q] += w[a, e] @ g[b, i, j]
    return dx


def ref_depthwise(x, w, s=(1, 1), padding="VALID", d=(1, 1)):
    c, m = w.shape[2:]
    cols = []
    for ci in range(c):
        cols.append(ref_conv(x[..., ci:ci + 1], w[:, :, ci:ci + 1, :], s, padding, d))
    return np.concatenate(cols, axis=-1)  # channel ci*m + mi


def ref_pool(x, k, s, padding, kind):
    n, h, wd, c = x.shape
    (pt, pb), (pl, pr) = resolve(padding, (h, wd), k, s, (1, 1))
    oh = (h + pt + pb - k[0]) // s[0] + 1
    ow = (wd + pl + pr - k[1]) // s[1] + 1
    y = np.zeros((n, oh, ow, c))
    arg = {}
    for b in range(n):
        for i in range(oh):
            for j in range(ow):
                for ch in range(c):
                    vals, where = [], []
                    for a in range(k[0]):  # row-major window order
                        for e in range(k[1]):
                            r, q = i * s[0] + a - pt, j * s[1] + e - pl
                            if 0 <= r < h and 0 <= q < wd:
                                vals.append(x[b, r, q, ch])
                                where.append((b, r, q, ch))
                    if kind == "max":
                        t = int(np.argmax(vals))  # first maximum
                        y[b, i, j, ch] = vals[t]
                        arg[(b, i, j, ch)] = where[t]
                    else:
                        y[b, i, j, ch] = np.mean(vals)
    return y, arg


def ref_max_pool_grad(x, g, k, s, padding):
    _, arg = ref_pool(x, k, s, padding, "max")
    dx = np.zeros_like(x)
    for out_idx, in_idx in arg.items():
        dx[in_idx] += g[out_idx]
    return dx


# ---- conv2d forward ------------------------------------------------------------------
CONV_CASES = [
    # (x shape, w shape, strides, padding, dilations)
    ((2, 5, 5, 3), (3, 3, 3, 4), 1, "SAME", 1),
    ((2, 5, 5, 3), (3, 3, 3, 4), 1, "VALID", 1),
    ((2, 7, 6, 2), (3, 3, 2, 3), 2, "SAME", 1),
    ((1, 7, 6, 2), (3, 2, 2, 3), [2, 1], "VALID", 1),
    ((1, 8, 7, 2), (3, 3, 2, 2), 1, "SAME", 2),
    ((1, 9, 8, 2), (2, 3, 2, 2), 1, "VALID", [2, 1]),
    ((2, 6, 5, 2), (2, 3, 2, 3), 2, [[0, 0], [1, 2], [0, 1], [0, 0]], 1),
    ((3, 7, 7, 1), (3, 3, 1, 4), 1, "SAME", 1),  # one input channel (transposed patches)
    ((3, 7, 7, 1), (3, 3, 1, 4), 2, "VALID", 1),
    ((2, 4, 5, 3), (1, 1, 3, 2), 1, "VALID", 1),  # 1x1: no patch copy
    ((2, 5, 5, 3), (1, 1, 3, 2), 2, "SAME", 1),
    ((1, 6, 6, 2), (4, 4, 2, 1), 3, "SAME", 1),  # even kernel, SAME padding split
    ((2, 6, 5, 5), (3, 3, 5, 4), 1, "SAME", 1),  # > 3 channels: window-copy patches
    ((1, 9, 8, 4), (3, 2, 4, 3), 2, "SAME", [2, 1]),
    ((1, 6, 7, 4), (2, 3, 4, 2), [1, 2], [[0, 0], [2, 1], [1, 0], [0, 0]], 1),
]


def _norm2(v):
    return (v, v) if isinstance(v, int) else tuple(v)


@pytest.mark.parametrize("xs,ws,s,pad,d", CONV_CASES)
def test_conv2d_matches_loop_reference(rng, xs, ws, s, pad, d):
    x, w = rng.standard_normal(xs), rng.standard_normal(ws)
    got = C.conv2d(x, w, strides=s, padding=pad, dilations=d).numpy()
    want = ref_conv(x, w, _norm2(s), pad, _norm2(d))
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10)


def test_conv2d_hand_values_same_padding_goes_bottom_right():
    # 5 wide, kernel 2, stride 2, SAME: 3 outputs, one pad column on the right only (TF).
    x = np.arange(25, dtype=np.float32).reshape(1, 5, 5, 1)
    w = np.ones((2, 2, 1, 1), np.float32)
    y = C.conv2d(x, w, strides=2, padding="SAME").numpy()[0, :, :, 0]
    np.testing.assert_array_equal(y, [[12, 20, 13], [52, 60, 33], [41, 45, 24]])
    assert C.conv2d(x, w, strides=2, padding="SAME").dtype == np.float32


def test_conv2d_float32_stays_float32_and_accepts_tensors(rng):
    x = lk.constant(rng.standard_normal((2, 6, 6, 3)).astype(np.float32))
    w = lk.Variable(rng.standard_normal((3, 3, 3, 5)).astype(np.float32))
    y = C.conv2d(x, w, strides=[1, 1, 1, 1], padding="SAME")
    assert y.dtype == np.float32 and y.shape == (2, 6, 6, 5)
    np.testing.assert_allclose(y.numpy(), ref_conv(x.numpy(), w.numpy(), padding="SAME"),
                               rtol=1e-4, atol=1e-4)


# ---- conv2d gradients and transpose ------------------------------------------------
@pytest.mark.parametrize("xs,ws,s,pad,d", CONV_CASES)
def test_conv2d_gradients_match_reference_adjoint(rng, xs, ws, s, pad, d):
    x, w = rng.standard_normal(xs), rng.standard_normal(ws)
    xt, wt = lk.constant(x), lk.constant(w)
    y = ref_conv(x, w, _norm2(s), pad, _norm2(d))
    g = rng.standard_normal(y.shape)
    with lk.GradientTape() as tape:
        tape.watch([xt, wt])
        out = C.conv2d(xt, wt, strides=s, padding=pad, dilations=d)
    gx, gw = tape.gradient(out, [xt, wt], output_gradients=lk.constant(g))
    np.testing.assert_allclose(
        gx.numpy(), ref_conv_transpose(g, w, x.shape, _norm2(s), pad, _norm2(d)), atol=1e-10)
    # dL/dw[a, e, i, o] = sum over outputs of patch * g: check by finite structure
    want_gw = np.zeros_like(w)
    for a in range(w.shape[0]):
        for e in range(w.shape[1]):
            for i in range(w.shape[2]):
                basis = np.zeros_like(w)
                basis[a, e, i] = 1.0
                resp = ref_conv(x, basis, _norm2(s), pad, _norm2(d))  # (.., OC) one-hot in i
                want_gw[a, e, i] = np.einsum("nhwo,nhwo->o", resp, g)
    np.testing.assert_allclose(gw.numpy(), want_gw, atol=1e-10)


@pytest.mark.parametrize("in_shape,ws,s,pad", [
    ((2, 6, 6, 2), (3, 3, 2, 3), 2, "SAME"),
    ((2, 7, 7, 2), (3, 3, 2, 3), 2, "SAME"),
    ((1, 7, 5, 3), (3, 2, 3, 2), 2, "VALID"),
    ((1, 5, 5, 2), (3, 3, 2, 4), 1, "SAME"),
])
def test_conv2d_transpose_is_input_gradient_of_conv2d(rng, in_shape, ws, s, pad):
    w = rng.standard_normal(ws)  # conv2d's HWIO == conv2d_transpose's HWOI
    x = lk.constant(rng.standard_normal(in_shape))
    with lk.GradientTape() as tape:
        tape.watch(x)
        y = C.conv2d(x, w, strides=s, padding=pad)
    g = rng.standard_normal(y.shape)
    gx = tape.gradient(y, x, output_gradients=lk.constant(g))
    t = C.conv2d_transpose(g, w, in_shape, strides=s, padding=pad)
    assert t.shape == in_shape
    np.testing.assert_allclose(t.numpy(), gx.numpy(), atol=1e-12)
    np.testing.assert_allclose(t.numpy(), ref_conv_transpose(g, w, in_shape, _norm2(s), pad),
                               atol=1e-10)
    # Adjoint identity <conv(x), g> == <x, conv_transpose(g)>.
    np.testing.assert_allclose(np.vdot(y.numpy(), g), np.vdot(x.numpy(), t.numpy()))


def test_conv2d_transpose_dilated_and_explicit(rng):
    w = rng.standard_normal((2, 2, 3, 2))
    g = rng.standard_normal((1, 4, 4, 2))
    shape = (1, 6, 6, 3)
    got = C.conv2d_transpose(g, w, shape, strides=1, padding="VALID", dilations=2)
    np.testing.assert_allclose(got.numpy(),
                               ref_conv_transpose(g, w, shape, (1, 1), "VALID", (2, 2)), atol=1e-12)
    pad = [[0, 0], [1, 0], [2, 1], [0, 0]]
    g2 = rng.standard_normal((1, 3, 4, 2))
    got = C.conv2d_transpose(g2, w, (1, 5, 6, 3), strides=2, padding=pad)
    np.testing.assert_allclose(got.numpy(),
                               ref_conv_transpose(g2, w, (1, 5, 6, 3), (2, 2), pad), atol=1e-12)


def test_conv2d_backprop_input_uneven_height_padding(rng):
    # The transposed-conv input gradient with top != bottom padding and a tall kernel
    # (the implicit-padding row ranges differ per kernel row), vs the loop reference.
    w = rng.standard_normal((4, 3, 32, 3))
    for pad in ([[0, 0], [0, 3], [1, 1], [0, 0]], [[0, 0], [3, 0], [2, 0], [0, 0]],
                [[0, 0], [1, 2], [0, 2], [0, 0]]):
        shape = (2, 5, 4, 32)
        g = rng.standard_normal(ref_conv(np.zeros(shape), w, (1, 1), pad).shape)
        got = C.conv2d_backprop_input(shape, w, g, strides=1, padding=pad)
        np.testing.assert_allclose(got.numpy(), ref_conv_transpose(g, w, shape, (1, 1), pad),
                                   atol=1e-10)
    # No width padding: the (non-contiguous) gradient is read in place, never copied.
    w1 = rng.standard_normal((3, 1, 32, 3))
    g = np.swapaxes(rng.standard_normal((2, 4, 5, 3)), 1, 2)
    got = C.conv2d_backprop_input((2, 5, 4, 32), w1, g, strides=1, padding="SAME")
    np.testing.assert_allclose(got.numpy(),
                               ref_conv_transpose(g, w1, (2, 5, 4, 32), (1, 1), "SAME"),
                               atol=1e-10)


def test_conv_ops_from_data_map_worker_threads(rng):
    # lk.data runs parallel map calls in worker threads; the conv ops there use per-thread
    # padding scratch buffers. Every element must equal the same computation done
    # serially in this thread (bit for bit: the same operations on the same data).
    xs = rng.standard_normal((12, 2, 9, 9, 32)).astype(np.float32)
    w = rng.standard_normal((3, 3, 32, 32)).astype(np.float32) * 0.1
    b = rng.standard_normal(32).astype(np.float32)

    threads = set()

    def work(i):
        threads.add(threading.get_ident())
        x = lk.constant(xs[int(i)])
        wt = lk.constant(w)
        with lk.GradientTape() as tape:
            tape.watch([x, wt])
            y = C.fused_conv2d(x, wt, b, padding="SAME", activation="relu")
            p = C.max_pool2d(y, 2, 2, "SAME")
            loss = lk.reduce_sum(p * p)
        gx, gw = tape.gradient(loss, [x, wt])
        return gx.numpy(), gw.numpy(), p.numpy()

    serial = [work(i) for i in range(len(xs))]
    threads.clear()
    ds = lk.data.Dataset.range(len(xs)).map(lambda i: work(i), num_parallel_calls=2)
    got = list(ds)
    assert threads - {threading.get_ident()}, "the map calls did not run in worker threads"
    assert len(got) == len(serial)
    for g, s in zip(got, serial):
        for a, e in zip(g, s):
            np.testing.assert_array_equal(np.asarray(a), e)
    # The padding scratch is per thread: a worker never writes into this thread's buffer.
    x = np.ones((1, 4, 4, 2))
    mine = scratch.pad(x, ((1, 1), (1, 1)))
    other = []
    t = threading.Thread(target=lambda: other.append(scratch.pad(2 * x, ((1, 1), (1, 1)))))
    t.start()
    t.join()
    assert not np.may_share_memory(mine, other[0])
    assert mine[0, 1:5, 1:5].min() == 1 and other[0][0, 1:5, 1:5].min() == 2


def test_conv2d_second_order_through_nested_tapes(rng):
    # d/dw of sum(grad_x(sum(conv(x, w)**2))): a gradient of a gradient, vs finite differences.
    x = rng.standard_normal((1, 4, 4, 2))
    w = rng.standard_normal((3, 3, 2, 2))

    def grad_norm(w_arr):
        xt, wt = lk.constant(x), lk.constant(w_arr)
        with lk.GradientTape() as outer:
            outer.watch(wt)
            with lk.GradientTape() as inner:
                inner.watch(xt)
                y = C.conv2d(xt, wt, padding="SAME")
                loss = lk.reduce_sum(y * y)
            gx = inner.gradient(loss, xt)
            s = lk.reduce_sum(gx * gx)
        return float(s), outer.gradient(s, wt).numpy()

    val, gw = grad_norm(w)
    d = rng.standard_normal(w.shape)
    eps = 1e-6
    num = (grad_norm(w + eps * d)[0] - grad_norm(w - eps * d)[0]) / (2 * eps)
    np.testing.assert_allclose(np.vdot(gw, d), num, rtol=1e-6)


# ---- fused_conv2d ----------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("activation,use_bias,s,pad", [
    ("relu", True, 1, "SAME"), ("linear", True, 2, "VALID"), ("relu", False, 1, "VALID"),
    ("linear", False, [1, 2], [[0, 0], [1, 0], [0, 2], [0, 0]])])
@pytest.mark.parametrize("persistent", [False, True])  # the NumPy and the record vjp paths
def test_fused_conv2d_matches_composite(rng, dtype, activation, use_bias, s, pad, persistent):
    x = lk.constant(rng.standard_normal((2, 7, 6, 3)).astype(dtype))
    w = lk.Variable(rng.standard_normal((3, 2, 3, 4)).astype(dtype))
    b = lk.Variable(rng.standard_normal(4).astype(dtype)) if use_bias else None
    srcs = [x, w] + ([b] if use_bias else [])

    def run(fused):
        with lk.GradientTape(persistent=persistent) as tape:
            tape.watch(x)
            if fused:
                y = C.fused_conv2d(x, w, b, strides=s, padding=pad, activation=activation)
            else:
                y = C.conv2d(x, w, strides=s, padding=pad)
                y = y + b if use_bias else y
                y = lk.nn.relu(y) if activation == "relu" else y
            loss = lk.reduce_sum(y * y * y)
        return y, tape.gradient(loss, srcs)

    (yf, gf), (yc, gc) = run(True), run(False)
    tol = 1e-4 if dtype == np.float32 else 1e-10
    assert yf.dtype == dtype and yf.shape == yc.shape
    np.testing.assert_allclose(yf.numpy(), yc.numpy(), rtol=tol, atol=tol)
    for a, e in zip(gf, gc):
        assert a.dtype == dtype
        np.testing.assert_allclose(a.numpy(), e.numpy(), rtol=tol, atol=tol)


@pytest.mark.parametrize("cin", [1, 4])  # transposed few-channel patches; window patches
@pytest.mark.parametrize("use_bias", [True, False])
def test_fused_conv2d_traced_gradient_reads_the_patches(rng, cin, use_bias):
    # The recording vjp (what an lk.function train step runs) masks with one relu_grad,
    # takes the filter gradient from the saved patches (with a bias: filter and bias
    # gradients from one GEMM over the patches and their ones column), and agrees with
    # the eager NumPy path.
    x = lk.constant(rng.standard_normal((2, 6, 5, cin)).astype(np.float32))
    w = lk.Variable(rng.standard_normal((3, 3, cin, 4)).astype(np.float32))
    b = lk.Variable(rng.standard_normal(4).astype(np.float32)) if use_bias else None

    def grads(x):
        with lk.GradientTape() as tape:
            tape.watch(x)
            y = C.fused_conv2d(x, w, b, strides=1, padding="SAME", activation="relu")
            loss = lk.reduce_sum(y * y)
        return tape.gradient(loss, [x, w, b] if use_bias else [x, w])

    f = lk.function(grads)
    nodes = f.get_concrete_function(x).graph.nodes
    names = [m.op.name for n in nodes
             for m in (n.region.members if n.kind == "fused" else [n] if n.kind == "op" else [])]
    patches = ("conv2d_backprop_filter_and_bias_from_patches" if use_bias
               else "conv2d_backprop_filter_from_patches")
    assert names.count(patches) == 1 and "bias_add_grad" not in names
    assert "conv2d_backprop_filter" not in names and "greater" not in names
    assert names.count("relu_grad") == 1
    for _ in range(2):  # the trace call and a replay
        for a, e in zip(f(x), grads(x)):
            np.testing.assert_allclose(a.numpy(), e.numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("cin", [2, 5])  # transposed few-channel patches; window patches
@pytest.mark.parametrize("persistent", [False, True])
def test_fused_conv2d_bias_rides_in_the_patches(rng, cin, persistent):
    # With a bias the patch matrix carries a ones column (the bias is the GEMM's last
    # kernel row); the eager filter-gradient GEMM then also yields the bias gradient.
    x = rng.standard_normal((2, 6, 5, cin))
    w = rng.standard_normal((3, 3, cin, 4))
    b = rng.standard_normal(4)
    y, cols = C._FUSED_CONV.forward(x, w, b, strides=(1, 1), pads=((1, 1), (1, 1)),
                                    dilations=(1, 1), activation="linear")
    assert cols.shape == (2 * 6 * 5, 9 * cin + 1)
    np.testing.assert_array_equal(cols[:, -1], 1.0)
    np.testing.assert_allclose(y, ref_conv(x, w, (1, 1), "SAME") + b, atol=1e-12)
    xt, wt, bt = lk.constant(x), lk.Variable(w), lk.Variable(b)
    gy = rng.standard_normal(y.shape)
    with lk.GradientTape(persistent=persistent) as tape:
        tape.watch(xt)
        out = C.fused_conv2d(xt, wt, bt, padding="SAME")
        loss = lk.reduce_sum(out * gy)
    gx, gw, gb = tape.gradient(loss, [xt, wt, bt])
    np.testing.assert_allclose(gb.numpy(), gy.sum(axis=(0, 1, 2)), atol=1e-12)
    ref_gw = np.einsum("nhwijc,nhwo->ijco", np.lib.stride_tricks.sliding_window_view(
        np.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0))), (3, 3), axis=(1, 2)).transpose(
        0, 1, 2, 4, 5, 3), gy)
    np.testing.assert_allclose(gw.numpy(), ref_gw, atol=1e-10)
    np.testing.assert_allclose(gx.numpy(), ref_conv_transpose(gy, w, x.shape, (1, 1), "SAME"),
                               atol=1e-10)


def test_padding_scratch_is_reused_but_never_leaks(rng):
    # Padded copies live in a reused per-thread buffer: results of an earlier call (the
    # patches fused_conv2d keeps for the backward pass) must not change on a later call.
    shape, w = (2, 5, 5, 4), rng.standard_normal((3, 3, 4, 3))
    geo = {"strides": (1, 1), "pads": ((1, 1), (1, 1)), "dilations": (1, 1)}
    x1, x2 = rng.standard_normal(shape), rng.standard_normal(shape)
    y1, cols1 = C._FUSED_CONV.forward(x1, w, strides=(1, 1), pads=((1, 1), (1, 1)),
                                      dilations=(1, 1), activation="linear")
    keep = cols1.copy()
    y2, cols2 = C._FUSED_CONV.forward(x2, w, **geo, activation="linear")
    np.testing.assert_array_equal(cols1, keep)
    assert not np.may_share_memory(cols1, cols2)
    np.testing.assert_allclose(y1, ref_conv(x1, w, (1, 1), "SAME"), atol=1e-12)
    np.testing.assert_allclose(y2, ref_conv(x2, w, (1, 1), "SAME"), atol=1e-12)
    # A window that covers the whole padded input: the patch reshape could be a view.
    x3 = rng.standard_normal((1, 1, 1, 4))
    _, cols3 = C._FUSED_CONV.forward(x3, w, **geo, activation="linear")
    C._FUSED_CONV.forward(rng.standard_normal((1, 1, 1, 4)), w, **geo, activation="linear")
    np.testing.assert_array_equal(cols3.reshape(3, 3, 4)[1, 1], x3[0, 0, 0])
    assert np.count_nonzero(cols3) == 4


def test_fused_conv2d_errors():
    x = np.zeros((1, 5, 5, 3), np.float32)
    w = np.zeros((3, 3, 3, 4), np.float32)
    _raises(lambda: C.fused_conv2d(x, w, np.zeros(3, np.float32)), "fused_conv2d", "bias",
            "(4,)", "(3,)")
    _raises(lambda: C.fused_conv2d(x, w, activation="tanh"), "fused_conv2d", "'relu'", "tanh")
    _raises(lambda: C.fused_conv2d(x, np.zeros((3, 3, 2, 4))), "fused_conv2d", "3 channels")


# ---- depthwise -------------------------------------------------------------------------
DW_CASES = [
    ((2, 5, 5, 3), (3, 3, 3, 1), [1, 1, 1, 1], "SAME", None),
    ((2, 7, 6, 2), (3, 3, 2, 2), [1, 2, 2, 1], "SAME", None),
    ((1, 7, 7, 2), (2, 3, 2, 3), 1, "VALID", [2, 2]),
    ((1, 6, 5, 2), (2, 2, 2, 2), [1, 2, 1, 1], [[0, 0], [0, 1], [1, 1], [0, 0]], None),
    ((1, 5, 6, 2), (2, 2, 2, 2), 1, [[0, 0], [0, 3], [2, 0], [0, 0]], None),  # pad > kernel
]


@pytest.mark.parametrize("xs,ws,s,pad,d", DW_CASES)
def test_depthwise_matches_reference(rng, xs, ws, s, pad, d):
    x, w = rng.standard_normal(xs), rng.standard_normal(ws)
    got = C.depthwise_conv2d(x, w, s, pad, dilations=d).numpy()
    s2 = (s, s) if isinstance(s, int) else tuple(s[1:3])
    want = ref_depthwise(x, w, s2, pad, _norm2(d or 1))
    np.testing.assert_allclose(got, want, atol=1e-10)


@pytest.mark.parametrize("xs,ws,s,pad,d", DW_CASES)
def test_depthwise_gradients_are_reference_adjoints(rng, xs, ws, s, pad, d):
    # Linear in x and in w: <A(x2), g> == <x2, dA/dx^T g>, and likewise for w.
    x, w = rng.standard_normal(xs), rng.standard_normal(ws)
    s2 = (s, s) if isinstance(s, int) else tuple(s[1:3])
    d2 = _norm2(d or 1)
    xt, wt = lk.constant(x), lk.constant(w)
    with lk.GradientTape() as tape:
        tape.watch([xt, wt])
        y = C.depthwise_conv2d(xt, wt, s, pad, dilations=d)
    g = rng.standard_normal(y.shape)
    gx, gw = tape.gradient(y, [xt, wt], output_gradients=lk.constant(g))
    x2, w2 = rng.standard_normal(xs), rng.standard_normal(ws)
    np.testing.assert_allclose(np.vdot(ref_depthwise(x2, w, s2, pad, d2), g),
                               np.vdot(x2, gx.numpy()))
    np.testing.assert_allclose(np.vdot(ref_depthwise(x, w2, s2, pad, d2), g),
                               np.vdot(w2, gw.numpy()))


# ---- pooling ---------------------------------------------------------------------------
POOL_CASES = [
    ((2, 4, 4, 3), 2, 2, "VALID"),
    ((2, 5, 5, 3), 2, 2, "VALID"),  # odd size: last row/column dropped
    ((2, 5, 5, 3), 2, 2, "SAME"),  # odd size: padded border window
    ((1, 7, 6, 2), 3, 2, "SAME"),  # overlapping windows
    ((1, 7, 6, 2), [3, 2], [1, 2], "VALID"),
    ((1, 5, 5, 2), 3, 1, "SAME"),
    ((1, 6, 6, 1), [1, 3, 3, 1], [1, 3, 3, 1], "SAME"),
    ((1, 6, 5, 2), 2, 2, [[0, 0], [1, 1], [0, 1], [0, 0]]),
]


@pytest.mark.parametrize("xs,k,s,pad", POOL_CASES)
@pytest.mark.parametrize("kind", ["max", "avg"])
def test_pool_matches_reference(rng, xs, k, s, pad, kind):
    x = rng.standard_normal(xs)
    fn = C.max_pool2d if kind == "max" else C.avg_pool2d
    got = fn(x, k, s, pad).numpy()
    want, _ = ref_pool(x, _hw(k), _hw(s), pad, kind)
    np.testing.assert_allclose(got, want, atol=1e-12)


def _hw(v):
    if isinstance(v, int):
        return (v, v)
    return tuple(v[1:3]) if len(v) == 4 else tuple(v)


def test_avg_pool_same_does_not_count_padding():
    x = np.ones((1, 3, 3, 1), np.float32)
    y = C.avg_pool2d(x, 2, 2, "SAME").numpy()
    np.testing.assert_array_equal(y, np.ones((1, 2, 2, 1)))  # counting pads would give 0.5
    x = np.arange(9, dtype=np.float32).reshape(1, 3, 3, 1)
    y = C.avg_pool2d(x, 2, 2, "SAME").numpy()[0, :, :, 0]
    np.testing.assert_allclose(y, [[2.0, 3.5], [6.5, 8.0]])


def test_max_pool_same_negative_inputs_ignore_padding():
    x = -np.arange(1, 10, dtype=np.float32).reshape(1, 3, 3, 1)
    y = C.max_pool2d(x, 2, 2, "SAME").numpy()[0, :, :, 0]
    np.testing.assert_array_equal(y, [[-1, -3], [-7, -9]])  # a zero pad would win


@pytest.mark.parametrize("xs,k,s,pad", POOL_CASES)
def test_max_pool_gradient_goes_to_first_max_with_ties(rng, xs, k, s, pad):
    # Rounded values: plenty of ties, like ReLU outputs full of zeros.
    x = np.maximum(np.round(rng.standard_normal(xs)), 0.0)
    xt = lk.constant(x)
    with lk.GradientTape() as tape:
        tape.watch(xt)
        y = C.max_pool2d(xt, k, s, pad)
    g = rng.standard_normal(y.shape)
    gx = tape.gradient(y, xt, output_gradients=lk.constant(g)).numpy()
    np.testing.assert_allclose(gx, ref_max_pool_grad(x, g, _hw(k), _hw(s), pad), atol=1e-12)
    # Each output's gradient lands exactly once (sum preserved even with ties).
    np.testing.assert_allclose(gx.sum(), g.sum())


def test_max_pool_grad_grad_is_adjoint_gather(rng):
    x = np.maximum(np.round(rng.standard_normal((2, 5, 5, 2))), 0.0)
    y = C.max_pool2d(x, 3, 2, "SAME")
    g = rng.standard_normal(y.shape)
    h = rng.standard_normal(x.shape)
    dx = C.max_pool2d_grad(x, y, g, 3, 2, "SAME").numpy()
    gh = C.max_pool2d_grad_grad(x, y, h, 3, 2, "SAME").numpy()
    np.testing.assert_allclose(np.vdot(dx, h), np.vdot(g, gh))  # gather is scatter's adjoint


def test_max_pool_gradient_float32_fast_path(rng):
    x = np.maximum(rng.standard_normal((3, 8, 6, 4)), 0).astype(np.float32)
    xt = lk.constant(x)
    with lk.GradientTape() as tape:
        tape.watch(xt)
        y = C.max_pool2d(xt, 2, 2, "VALID")
    g = rng.standard_normal(y.shape).astype(np.float32)
    gx = tape.gradient(y, xt, output_gradients=lk.constant(g))
    assert gx.dtype == np.float32
    np.testing.assert_allclose(gx.numpy(), ref_max_pool_grad(x, g, (2, 2), (2, 2), "VALID"),
                               rtol=1e-6)


@pytest.mark.parametrize("k,s,pad", [(2, 2, "VALID"), (3, 2, "SAME"), (2, 1, "VALID")])
@pytest.mark.parametrize("fused", [True, False])  # Conv2D's fused record; a plain relu
def test_traced_relu_then_max_pool_masks_the_pooled_gradient(rng, k, s, pad, fused):
    # lk.function rewrites relu_grad(max_pool2d_grad(y, p, g), y) as
    # max_pool2d_grad(y, p, relu_grad(g, p)): the mask runs on the pooled gradient.
    # Rounded inputs give ties (zeros and repeated positive values) in many windows.
    x = lk.constant(np.round(rng.standard_normal((2, 6, 6, 2)) * 2) / 2)
    w = lk.Variable(np.round(rng.standard_normal((2, 2, 2, 3)) * 2) / 2)
    b = lk.Variable(np.array([0.0, 0.5, -0.5]))

    def grads(x):
        with lk.GradientTape() as tape:
            tape.watch(x)
            if fused:
                y = C.fused_conv2d(x, w, b, padding="SAME", activation="relu")
            else:
                y = lk.nn.relu(C.conv2d(x, w, padding="SAME") + b)
            p = C.max_pool2d(y, k, s, pad)
            loss = lk.reduce_sum(p * c)  # nonzero upstream where p == 0 too
        return tape.gradient(loss, [x, w, b])

    pooled = C.max_pool2d(np.zeros((2, 6, 6, 3)), k, s, pad).shape
    c = lk.constant(rng.standard_normal(pooled))
    f = lk.function(grads)
    cf = f.get_concrete_function(x)
    assert cf.stats["relu_pool"] == 1
    masks = [cf.graph.values[n.outs[0]].shape for n in cf.ops_nodes
             if n.kind == "op" and n.op.name == "relu_grad"]
    assert masks == [pooled]
    for _ in range(2):  # the trace call and a replay
        for a, e in zip(f(x), grads(x)):
            np.testing.assert_allclose(a.numpy(), e.numpy(), rtol=1e-12, atol=1e-12)


def test_traced_relu_pool_rewrite_skips_a_shared_activation(rng):
    # y also feeds another op: relu's upstream is a sum, not the pool gradient alone.
    x = lk.constant(np.round(rng.standard_normal((1, 4, 4, 2)) * 2) / 2)

    def grads(x):
        with lk.GradientTape() as tape:
            tape.watch(x)
            y = lk.nn.relu(x)
            loss = lk.reduce_sum(C.max_pool2d(y, 2, 2, "VALID") ** 2) + lk.reduce_sum(y * x)
        return tape.gradient(loss, x)

    f = lk.function(grads)
    assert f.get_concrete_function(x).stats["relu_pool"] == 0
    np.testing.assert_allclose(f(x).numpy(), grads(x).numpy(), atol=1e-12)


@pytest.mark.parametrize("xs,k,s,pad", POOL_CASES)
def test_avg_pool_gradient_matches_adjoint(rng, xs, k, s, pad):
    x = rng.standard_normal(xs)
    xt = lk.constant(x)
    with lk.GradientTape() as tape:
        tape.watch(xt)
        y = C.avg_pool2d(xt, k, s, pad)
    g = rng.standard_normal(y.shape)
    gx = tape.gradient(y, xt, output_gradients=lk.constant(g)).numpy()
    # Linear map: <A x, g> == <x, A^T g> for a second random x.
    x2 = rng.standard_normal(xs)
    y2, _ = ref_pool(x2, _hw(k), _hw(s), pad, "avg")
    np.testing.assert_allclose(np.vdot(y2, g), np.vdot(x2, gx))


# ---- the gradient table rows (tests/ops/test_grad_table.py runs them) ------------------
def test_rows_are_about_the_fifteen_differentiable_records():
    records = {v.name for v in vars(C).values() if isinstance(v, Op) and v.vjp is not None}
    assert {r["name"] for r in ROWS} == records
    assert len(records) == 15


def test_public_names():
    assert sorted(C.__all__) == sorted(
        ["conv2d", "conv2d_transpose", "depthwise_conv2d", "max_pool2d", "avg_pool2d"])


# ---- errors ------------------------------------------------------------------------------
def _raises(fn, *words):
    with pytest.raises(ValueError) as e:
        fn()
    msg = str(e.value)
    for word in words:
        assert word in msg, msg


def test_errors_name_op_expected_and_received():
    x = np.zeros((1, 5, 5, 3), np.float32)
    w = np.zeros((3, 3, 3, 4), np.float32)
    _raises(lambda: C.conv2d(np.zeros((5, 5, 3)), w), "conv2d", "rank 4", "(5, 5, 3)")
    _raises(lambda: C.conv2d(x, np.zeros((3, 3, 4))), "conv2d", "filters", "(3, 3, 4)")
    _raises(lambda: C.conv2d(x, np.zeros((3, 3, 2, 4))), "conv2d", "3 channels",
            "expect 2", "(3, 3, 2, 4)")
    _raises(lambda: C.conv2d(x, w, padding="FULL"), "conv2d", "'SAME'", "'FULL'")
    _raises(lambda: C.conv2d(x, w, strides=0), "conv2d", "strides", ">= 1", "0")
    _raises(lambda: C.conv2d(x, w, strides=[1, 0, 1, 1]), "conv2d", "strides")
    _raises(lambda: C.conv2d(x, w, strides=[2, 1, 1, 1]), "conv2d", "batch and channel")
    _raises(lambda: C.conv2d(x, w, dilations=0), "conv2d", "dilations", ">= 1")
    _raises(lambda: C.conv2d(x, np.zeros((7, 7, 3, 1))), "conv2d", "does not fit", "(7, 7)")
    _raises(lambda: C.conv2d(x, w, padding=[[0, 0], [1, 1], [1, 1]]), "conv2d", "explicit")
    _raises(lambda: C.conv2d(x, w, padding=[[1, 0], [1, 1], [1, 1], [0, 0]]), "explicit")
    _raises(lambda: C.conv2d(x, w, data_format="NCHW"), "conv2d", "NHWC", "NCHW")
    _raises(lambda: C.max_pool2d(np.zeros((5, 5, 3)), 2, 2, "VALID"), "max_pool2d", "rank 4")
    _raises(lambda: C.max_pool2d(x, 2, 2, "same-ish"), "max_pool2d", "same-ish")
    _raises(lambda: C.avg_pool2d(x, 0, 2, "VALID"), "avg_pool2d", "ksize", ">= 1")
    _raises(lambda: C.avg_pool2d(x, 2, -1, "VALID"), "avg_pool2d", "strides", "-1")
    _raises(lambda: C.avg_pool2d(x, 2, 2, [[0, 0], [2, 0], [0, 0], [0, 0]]), "avg_pool2d",
            "smaller than the window")
    _raises(lambda: C.avg_pool2d(np.zeros((1, 4, 4, 1), np.int64), 2, 2, "VALID"),
            "avg_pool2d", "float", "int64")
    _raises(lambda: C.depthwise_conv2d(x, np.zeros((3, 3, 2, 1)), 1, "SAME"),
            "depthwise_conv2d", "3 channels", "(3, 3, 2, 1)")
    g = np.zeros((1, 3, 3, 4))
    _raises(lambda: C.conv2d_transpose(g, np.zeros((3, 3, 3, 5)), (1, 5, 5, 3), 2),
            "conv2d_transpose", "4 channels", "(3, 3, 3, 5)")
    _raises(lambda: C.conv2d_transpose(g, w, (1, 5, 5, 2), 2), "conv2d_transpose",
            "output_shape", "(1, 5, 5, 2)")
    _raises(lambda: C.conv2d_transpose(g, w, (1, 9, 9, 3), 2), "conv2d_transpose",
            "inconsistent", "(5, 5)", "(3, 3)")
    _raises(lambda: C.conv2d_transpose(g, w, (1, 5, 5), 2), "conv2d_transpose", "output_shape")
    _raises(lambda: C.conv2d_backprop_filter(x, (3, 3, 3, 4), np.zeros((1, 4, 4, 4)),
                                             padding="SAME"),
            "conv2d_backprop_filter", "out_backprop", "(1, 4, 4, 4)", "(1, 5, 5, 4)")


def test_lowercase_padding_and_int_or_pair_strides_agree(rng):
    x, w = rng.standard_normal((1, 6, 6, 2)), rng.standard_normal((3, 3, 2, 2))
    a = C.conv2d(x, w, strides=2, padding="same").numpy()
    b = C.conv2d(x, w, strides=[2, 2], padding="SAME").numpy()
    c = C.conv2d(x, w, strides=[1, 2, 2, 1], padding="SAME").numpy()
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(a, c)
