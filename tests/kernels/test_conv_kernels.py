"""layerkit.kernels.conv: every algorithm of every convolution kernel against the loop
references of tests/ops/test_conv.py, on odd shapes, strides, dilations, SAME / VALID /
explicit padding, batch 1, and with batches split into many chunks; which algorithm the
cost model picks for the shapes it was built for; and bounded memory for large kernels."""
from __future__ import annotations

import threading
import tracemalloc

import numpy as np
import pytest

from layerkit.kernels import conv as K
from layerkit.kernels import scratch
from tests.ops.test_conv import ref_conv, ref_conv_transpose, resolve

# (x shape, w shape, strides, padding, dilations)
CASES = [
    ((2, 5, 5, 3), (3, 3, 3, 4), (1, 1), "SAME", (1, 1)),
    ((1, 7, 6, 2), (3, 3, 2, 3), (2, 2), "SAME", (1, 1)),           # batch 1, odd sizes
    ((2, 8, 7, 2), (3, 3, 2, 2), (1, 1), "SAME", (2, 2)),           # dilated
    ((2, 6, 5, 2), (2, 3, 2, 3), (2, 2), [[0, 0], [1, 2], [0, 1], [0, 0]], (1, 1)),
    ((3, 7, 7, 1), (3, 3, 1, 4), (1, 1), "SAME", (1, 1)),           # transposed patches
    ((2, 4, 5, 3), (1, 1, 3, 2), (1, 1), "VALID", (1, 1)),          # 1x1: plain GEMM
    ((1, 6, 6, 2), (4, 4, 2, 1), (3, 3), "SAME", (1, 1)),           # even kernel
    ((2, 6, 5, 5), (3, 3, 5, 4), (1, 1), "SAME", (1, 1)),           # window patches
    ((1, 9, 8, 4), (3, 2, 4, 3), (2, 2), "SAME", (2, 1)),
    ((1, 6, 7, 4), (2, 3, 4, 2), (1, 2), [[0, 0], [2, 1], [1, 0], [0, 0]], (1, 1)),
    ((3, 9, 9, 5), (7, 7, 5, 1), (1, 1), "SAME", (1, 1)),           # large kernel, 1 out
    ((2, 5, 5, 6), (3, 3, 6, 2), (1, 1), [[0, 0], [3, 3], [1, 1], [0, 0]], (1, 1)),
    ((2, 7, 7, 6), (4, 4, 6, 3), (2, 2), "SAME", (1, 1)),           # transposed-conv-like
    ((1, 5, 6, 2), (3, 3, 2, 2), (1, 1), "VALID", (1, 1)),
    ((2, 9, 7, 4), (5, 3, 4, 2), (1, 1), "VALID", (1, 2)),
    ((2, 7, 8, 2), (2, 2, 2, 3), (3, 3), "SAME", (1, 1)),           # phases with no taps
    ((1, 8, 8, 2), (1, 1, 2, 3), (2, 2), "VALID", (1, 1)),          # strided 1x1
]
IDS = [f"x{c[0]}-w{c[1]}-s{c[2]}-{c[3] if isinstance(c[3], str) else 'explicit'}-d{c[4]}"
       for c in CASES]
# CHUNK_BYTES values: the default (one chunk here), then tiny ones that split the batch
# into single images and single images into row blocks.
CHUNKS = [None, 64, 300]


def _setup(rng, case):
    xs, ws, s, pad, d = case
    x, w = rng.standard_normal(xs), rng.standard_normal(ws)
    pads = resolve(pad, xs[1:3], ws[:2], s, d)
    return x, w, s, pad, d, pads


def _chunked(monkeypatch, chunk):
    if chunk is not None:
        monkeypatch.setattr(K, "CHUNK_BYTES", chunk)


@pytest.mark.parametrize("chunk", CHUNKS)
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_conv2d_every_method_matches_loop_reference(rng, monkeypatch, case, chunk):
    _chunked(monkeypatch, chunk)
    x, w, s, pad, d, pads = _setup(rng, case)
    want = ref_conv(x, w, s, pad, d)
    methods = K.costs(x.shape, K.padding_frame(x.shape, pads), w.shape, s, want.shape[1:3])
    assert "im2col" in methods and ("taps" in methods) == (s == (1, 1))
    b = rng.standard_normal(w.shape[3])
    for m in methods:
        np.testing.assert_allclose(K.conv2d(x, w, s, pads, d, method=m), want, atol=1e-10,
                                   err_msg=m)
        # bias and ReLU in the epilogue; kept patches (im2col only) with the ones column
        y, cols = K.conv2d(x, w, s, pads, d, bias=b, activation="relu", method=m, keep=True)
        np.testing.assert_allclose(y, np.maximum(want + b, 0), atol=1e-10, err_msg=m)
        assert (cols is not None) == (m == "im2col")
        if cols is not None:
            kc = w.shape[0] * w.shape[1] * w.shape[2]
            assert cols.shape == (want.size // w.shape[3], kc + 1)
            np.testing.assert_array_equal(cols[:, kc], 1.0)
            g = rng.standard_normal(want.shape)
            gw, gb = K.backprop_filter_from_patches(cols, g, w.shape, bias=True)
            np.testing.assert_allclose(gw, _ref_filter_grad(x, g, w.shape, s, pads, d),
                                       atol=1e-10)
            np.testing.assert_allclose(gb, g.sum(axis=(0, 1, 2)), atol=1e-10)


@pytest.mark.parametrize("chunk", CHUNKS)
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_backprop_input_every_method_matches_loop_reference(rng, monkeypatch, case, chunk):
    _chunked(monkeypatch, chunk)
    x, w, s, pad, d, pads = _setup(rng, case)
    g = rng.standard_normal(ref_conv(x, w, s, pad, d).shape)
    want = ref_conv_transpose(g, w, x.shape, s, pad, d)
    methods = K.backprop_input_costs(g.shape, w.shape, x.shape, s, pads, d)
    assert {"col2im", "t-im2col", "t-taps"} <= set(methods)  # every stride: stuffed frame
    assert ("phases" in methods) == (s != (1, 1) and d == (1, 1))
    for m in methods:
        got = K.conv2d_backprop_input(g, w, x.shape, s, pads, d, method=m)
        np.testing.assert_allclose(got, want, atol=1e-10, err_msg=m)


def _ref_filter_grad(x, g, fshape, s, pads, d):
    xp = np.pad(x, ((0, 0), pads[0], pads[1], (0, 0)))
    dw = np.zeros(fshape)
    for i in range(fshape[0]):
        for j in range(fshape[1]):
            t = K.tap(xp, i, j, s, d, g.shape[1], g.shape[2])
            dw[i, j] = np.einsum("nhwc,nhwo->co", t, g)
    return dw


@pytest.mark.parametrize("chunk", CHUNKS)
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_backprop_filter_both_methods_match_reference(rng, monkeypatch, case, chunk):
    _chunked(monkeypatch, chunk)
    x, w, s, pad, d, pads = _setup(rng, case)
    g = rng.standard_normal(ref_conv(x, w, s, pad, d).shape)
    want = _ref_filter_grad(x, g, w.shape, s, pads, d)
    for m in ("x-patches", "g-patches"):
        got = K.conv2d_backprop_filter(x, g, w.shape, s, pads, d, method=m)
        np.testing.assert_allclose(got, want, atol=1e-10, err_msg=m)
        assert got.flags.c_contiguous


def test_float32_and_mixed_dtypes(rng):
    x = rng.standard_normal((2, 6, 6, 4)).astype(np.float32)
    w = rng.standard_normal((3, 3, 4, 2)).astype(np.float32)
    want = ref_conv(x.astype(np.float64), w.astype(np.float64), (1, 1), "SAME")
    pads = ((1, 1), (1, 1))
    for m in ("im2col", "taps", "rows"):
        y = K.conv2d(x, w, (1, 1), pads, (1, 1), method=m)
        assert y.dtype == np.float32
        np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5)
    y64 = K.conv2d(x, w.astype(np.float64), (1, 1), pads, (1, 1))
    assert y64.dtype == np.float64
    np.testing.assert_allclose(y64, want, atol=1e-5)


def test_empty_batch(rng):
    w = rng.standard_normal((3, 3, 2, 4))
    y, cols = K.conv2d(np.zeros((0, 5, 5, 2)), w, (1, 1), ((1, 1), (1, 1)), (1, 1), keep=True)
    assert y.shape == (0, 5, 5, 4)
    dx = K.conv2d_backprop_input(np.zeros((0, 3, 3, 4)), w, (0, 5, 5, 2), (2, 2),
                                 ((1, 1), (1, 1)), (1, 1))
    assert dx.shape == (0, 5, 5, 2)
    dw = K.conv2d_backprop_filter(np.zeros((0, 5, 5, 2)), np.zeros((0, 5, 5, 4)), w.shape,
                                  (1, 1), ((1, 1), (1, 1)), (1, 1))
    np.testing.assert_array_equal(dw, 0)


def test_unknown_or_inapplicable_method_is_named():
    x, w = np.zeros((1, 5, 5, 2)), np.zeros((3, 3, 2, 2))
    with pytest.raises(ValueError, match="'taps'"):
        K.conv2d(x, w, (2, 2), ((1, 1), (1, 1)), (1, 1), method="taps")  # stride 2
    with pytest.raises(ValueError, match="'col2im', 'phases' .* or 't-<method>'"):
        K.conv2d_backprop_input(np.zeros((1, 5, 5, 2)), w, (1, 5, 5, 2), (1, 1),
                                ((1, 1), (1, 1)), (1, 1), method="im2col")
    with pytest.raises(ValueError, match="'phases' \\(strided, undilated\\)"):
        K.conv2d_backprop_input(np.zeros((1, 5, 5, 2)), w, (1, 5, 5, 2), (1, 1),
                                ((1, 1), (1, 1)), (1, 1), method="phases")  # stride 1
    with pytest.raises(ValueError, match="'x-patches' or 'g-patches'"):
        K.conv2d_backprop_filter(x, np.zeros((1, 5, 5, 2)), w.shape, (1, 1),
                                 ((1, 1), (1, 1)), (1, 1), method="taps")


# ---- the cost model's choices at the shapes it was measured on --------------------------
def _fwd_plan(xs, ws, s, pads):
    oh, ow = K.conv_out_hw(xs, ws, s, pads, (1, 1))
    return K.plan(xs, K.padding_frame(xs, pads), ws, s, (oh, ow))


def _best(costs):
    return min(costs, key=costs.get)


def test_plan_choices_at_benchmark_shapes():
    same3, same7 = ((1, 1), (1, 1)), ((3, 3), (3, 3))
    # The DCGAN generator's 7x7 conv to one channel: per-tap GEMM, never a full im2col.
    assert _fwd_plan((64, 28, 28, 128), (7, 7, 128, 1), (1, 1), same7) == "taps"
    assert _best(K.backprop_input_costs((64, 28, 28, 1), (7, 7, 128, 1), (64, 28, 28, 128),
                                        (1, 1), same7, (1, 1))) == "t-im2col"
    assert _best(K.backprop_filter_costs((64, 28, 28, 128), (64, 28, 28, 1), (7, 7, 128, 1),
                                         (1, 1), same7)) == "g-patches"
    # Its 4x4 stride-2 transposed convolutions: four stride-1 phase correlations (no
    # zero-stuffing, no scatter-add); the discriminator's 64 -> 1 channel input gradient:
    # GEMM then col2im.
    for g_hw in (7, 14):
        assert _best(K.backprop_input_costs((64, g_hw, g_hw, 128), (4, 4, 128, 128),
                                            (64, 2 * g_hw, 2 * g_hw, 128), (2, 2), same3,
                                            (1, 1))) == "phases"
    assert _best(K.backprop_input_costs((64, 14, 14, 64), (3, 3, 1, 64), (64, 28, 28, 1),
                                        (2, 2), ((0, 1), (0, 1)), (1, 1))) == "col2im"
    # The issue-3 CNN: im2col forwards, column-patch input gradient, im2col filter grads.
    assert _fwd_plan((64, 28, 28, 1), (3, 3, 1, 32), (1, 1), same3) == "im2col"
    assert _fwd_plan((64, 14, 14, 32), (3, 3, 32, 64), (1, 1), same3) == "im2col"
    assert _best(K.backprop_input_costs((64, 14, 14, 64), (3, 3, 32, 64), (64, 14, 14, 32),
                                        (1, 1), same3, (1, 1))) == "t-rows"
    assert _best(K.backprop_filter_costs((64, 14, 14, 32), (64, 14, 14, 64), (3, 3, 32, 64),
                                         (1, 1), same3)) == "x-patches"
    # A 1x1 stride-1 unpadded conv is one GEMM of the input itself.
    assert _fwd_plan((8, 7, 7, 64), (1, 1, 64, 32), (1, 1), ((0, 0), (0, 0))) == "gemm"


def test_large_kernel_memory_stays_bounded(rng):
    # A 7x7 conv from 128 channels to 1 on (24, 28, 28, 128) float32 (9.6 MB): a full
    # im2col would be 24*784 x 6272 floats (472 MB). The forward, the input gradient and
    # the filter gradient each allocate their result plus at most ~2 chunks of
    # temporaries (scratch buffers included, counted from empty), whatever the batch.
    x = rng.standard_normal((24, 28, 28, 128), dtype=np.float32)
    w = rng.standard_normal((7, 7, 128, 1), dtype=np.float32)
    g = rng.standard_normal((24, 28, 28, 1), dtype=np.float32)
    pads = ((3, 3), (3, 3))
    calls = {"conv2d": lambda: K.conv2d(x, w, (1, 1), pads, (1, 1)),
             "backprop_input": lambda: K.conv2d_backprop_input(g, w, x.shape, (1, 1), pads,
                                                               (1, 1)),
             "backprop_filter": lambda: K.conv2d_backprop_filter(x, g, w.shape, (1, 1), pads,
                                                                 (1, 1))}
    results = {}
    for name, call in calls.items():
        scratch._TLS.__dict__.clear()
        tracemalloc.start()
        try:
            results[name] = call()
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        extra = peak - results[name].nbytes
        assert extra < 2 * K.CHUNK_BYTES, f"{name}: {extra / 1e6:.1f} MB of temporaries"
    # and the results are right (one image against the loop references)
    x1, g1, w64 = x[:1].astype(np.float64), g[:1].astype(np.float64), w.astype(np.float64)
    np.testing.assert_allclose(results["conv2d"][:1], ref_conv(x1, w64, (1, 1), "SAME"),
                               rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(results["backprop_input"][:1],
                               ref_conv_transpose(g1, w64, x1.shape, (1, 1), "SAME"),
                               rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(results["backprop_filter"],
                               _ref_filter_grad(x.astype(np.float64), g.astype(np.float64),
                                                w.shape, (1, 1), pads, (1, 1)),
                               rtol=1e-4, atol=1e-2)


# ---- frames (padding and stride-stuffing in scratch) -------------------------------------
@pytest.mark.parametrize("hw,offsets,steps", [
    ((7, 8), (1, 2), (1, 1)), ((9, 9), (2, 0), (2, 2)), ((4, 5), (-1, -2), (1, 1)),
    ((5, 6), (-3, 1), (2, 3)), ((3, 3), (5, 0), (1, 1)), ((6, 6), (0, 0), (1, 2))])
def test_frame_places_and_crops(rng, hw, offsets, steps):
    a = rng.standard_normal((2, 4, 3, 2))
    want = np.zeros((2, *hw, 2))
    for y in range(4):
        for x in range(3):
            fy, fx = offsets[0] + y * steps[0], offsets[1] + x * steps[1]
            if 0 <= fy < hw[0] and 0 <= fx < hw[1]:
                want[:, fy, fx] = a[:, y, x]
    for _ in range(2):  # the second call reuses the buffer: the zeros must still hold
        got = scratch.frame(a, hw, offsets, steps, tag="test")
        np.testing.assert_array_equal(got, want)
        a, want = 2 * a, 2 * want
    # a smaller batch with the same placement reuses the buffer's leading images
    np.testing.assert_array_equal(scratch.frame(a[:1], hw, offsets, steps, tag="test"),
                                  want[:1])


def test_scratch_is_per_thread_and_results_never_alias_it(rng):
    x = rng.standard_normal((2, 5, 5, 3))
    w = rng.standard_normal((3, 3, 3, 2))
    pads = ((1, 1), (1, 1))
    y1 = K.conv2d(x, w, (1, 1), pads, (1, 1), method="im2col")
    keep = y1.copy()
    y2 = K.conv2d(2 * x, w, (1, 1), pads, (1, 1), method="im2col")
    np.testing.assert_array_equal(y1, keep)
    np.testing.assert_allclose(y2, 2 * keep, atol=1e-12)
    mine = scratch.scratch("t", (4, 3), np.float64)
    other = []
    t = threading.Thread(target=lambda: other.append(scratch.scratch("t", (4, 3), np.float64)))
    t.start()
    t.join()
    assert not np.may_share_memory(mine, other[0])
