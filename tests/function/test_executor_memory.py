"""The executor frees each value after its last use: a graph call never holds more arrays
at once than eager execution of the same function (issue 15)."""
from __future__ import annotations

import tracemalloc

import numpy as np

import layerkit as lk
from layerkit.kernels import scratch


def _peak(fn, *args):
    """(result, peak bytes allocated during ``fn(*args)``), scratch buffers counted."""
    scratch._TLS.__dict__.clear()
    tracemalloc.start()
    try:
        out = fn(*args)
        return out, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def _chain(x, w):
    # Ten matmuls, each result read only by the next one: at most two are live at once.
    for _ in range(10):
        x = lk.matmul(x, w)
    return lk.reduce_sum(x)


def test_chain_of_intermediates_is_freed_as_it_goes(rng):
    x = lk.constant(rng.standard_normal((512, 512)).astype(np.float32) * 0.05)
    w = lk.constant(rng.standard_normal((512, 512)).astype(np.float32) * 0.05)
    f = lk.function(_chain)
    f(x, w)  # trace
    eager, eager_peak = _peak(_chain, x, w)
    graph, graph_peak = _peak(f, x, w)
    np.testing.assert_allclose(graph.numpy(), eager.numpy(), rtol=1e-5)
    one = 512 * 512 * 4
    assert graph_peak <= eager_peak + one // 4, (graph_peak, eager_peak)
    assert graph_peak < 4 * one  # not ten intermediates


def _two_convs(x, w):
    # lk.function(lambda x: conv(x) + conv(x * 2.0)) from the issue, with conv = a Conv2D
    # layer's fused record (whose patch output is unused here) and the DCGAN's 7x7 conv.
    y1 = lk.nn.conv2d(x, w, 1, "SAME")
    y2 = lk.nn.conv2d(x * 2.0, w, 1, "SAME")
    return y1 + y2


def test_graph_peak_never_above_eager_for_two_convs(rng):
    x = lk.constant(rng.standard_normal((8, 28, 28, 128)).astype(np.float32))
    w = lk.constant(rng.standard_normal((7, 7, 128, 1)).astype(np.float32))
    f = lk.function(_two_convs)
    f(x, w)
    eager, eager_peak = _peak(_two_convs, x, w)
    graph, graph_peak = _peak(f, x, w)
    np.testing.assert_allclose(graph.numpy(), eager.numpy(), rtol=1e-4, atol=1e-3)
    assert graph_peak <= eager_peak * 1.05 + 4096, (graph_peak, eager_peak)


def test_unused_extra_outputs_are_dropped_where_made(rng):
    # A Conv2D layer's record returns (y, patches); a forward-only graph never reads the
    # patches, so the generated code deletes them right after the record runs.
    layer = lk.layers.Conv2D(8, 3, padding="same")
    x = lk.constant(rng.standard_normal((4, 12, 12, 16)).astype(np.float32))
    f = lk.function(lambda t: lk.reduce_sum(layer(t)))
    f(x)
    src = f.get_concrete_function(x).source
    lines = src.splitlines()
    call = next(i for i, ln in enumerate(lines) if "F" in ln and ", = F" in ln)
    produced = lines[call].split("=")[0].replace(",", " ").split()
    assert lines[call + 1].strip().startswith("del ") and produced[-1] in lines[call + 1]
    np.testing.assert_allclose(f(x).numpy(), lk.reduce_sum(layer(x)).numpy(), rtol=1e-5)


def test_outputs_and_repeated_calls_stay_correct(rng):
    # Values read after other values died, an output that is also an intermediate, and a
    # second call reusing the program: all equal to eager.
    def fn(a, b):
        c = lk.matmul(a, b)
        d = lk.nn.relu(c)
        e = lk.matmul(d, b)
        return c, lk.reduce_sum(e * d)

    a = lk.constant(rng.standard_normal((6, 6)))
    b = lk.constant(rng.standard_normal((6, 6)))
    f = lk.function(fn)
    for _ in range(3):
        for got, want in zip(f(a, b), fn(a, b)):
            np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12)
