"""The tape records each op's needs (which inputs were watched); gradient() trusts them
only when every directly watched tensor is a source and none was watched late. These
cases check both paths against hand-derived gradients and against each other."""
import numpy as np
import pytest

import layerkit as lk
from layerkit.autodiff.backprop import backward


def _x(v):
    return lk.constant(np.asarray(v, dtype=np.float64))


def test_late_watch_counts_ops_recorded_before_the_watch():
    x, y = _x([1.0, 2.0]), _x([3.0, 5.0])
    with lk.GradientTape() as tape:
        tape.watch(y)
        z = x * y                    # recorded (y is watched); x not watched yet
        tape.watch(x)
        w = lk.reduce_sum(z + x * x)
    gx, gy = tape.gradient(w, [x, y])  # every watched tensor is a source
    np.testing.assert_allclose(gx.numpy(), [3.0 + 2.0, 5.0 + 4.0])
    np.testing.assert_allclose(gy.numpy(), [1.0, 2.0])


def test_subset_of_watched_variables():
    a = lk.Variable(np.array([1.0, -2.0]))
    b = lk.Variable(np.array([0.5, 3.0]))
    with lk.GradientTape(persistent=True) as tape:
        loss = lk.reduce_sum(a * a * b + lk.tanh(b))
    ga = tape.gradient(loss, a)
    gb = tape.gradient(loss, [b])[0]
    gab = tape.gradient(loss, {"a": a, "b": b})
    av, bv = a.numpy(), b.numpy()
    np.testing.assert_allclose(ga.numpy(), 2 * av * bv)
    np.testing.assert_allclose(gb.numpy(), av * av + 1 - np.tanh(bv) ** 2)
    np.testing.assert_allclose(gab["a"].numpy(), ga.numpy())
    np.testing.assert_allclose(gab["b"].numpy(), gb.numpy())


def test_intermediate_source_counts_only_paths_through_it():
    W = lk.Variable(np.array([[1.0, 2.0], [3.0, 4.0]]))
    x = _x([[1.0, -1.0]])
    with lk.GradientTape() as tape:
        h = lk.matmul(x, W)
        out = lk.reduce_sum(h * h) + lk.reduce_sum(W)
    g = tape.gradient(out, h)
    np.testing.assert_allclose(g.numpy(), 2 * (x.numpy() @ W.numpy()))


def test_unwatched_source_is_none_and_zero_on_request():
    a = lk.Variable(np.array([1.0, 2.0]))
    c = _x([1.0, 1.0])
    with lk.GradientTape() as tape:
        loss = lk.reduce_sum(a * c)
    ga, gc = tape.gradient(loss, [a, c], unconnected_gradients="zero")
    np.testing.assert_allclose(ga.numpy(), [1.0, 1.0])
    np.testing.assert_allclose(gc.numpy(), [0.0, 0.0])


@pytest.mark.parametrize("which", ["x", "y", "both"])
def test_recorded_needs_match_the_sweep(which):
    x, y = _x([[0.3, -0.7], [1.1, 0.2]]), _x([[0.5], [-1.5]])
    with lk.GradientTape(persistent=True) as tape:
        tape.watch([x, y])
        h = lk.tanh(lk.matmul(x, y))
        loss = lk.reduce_sum(h * x + lk.exp(y))
    sources = {"x": [x], "y": [y], "both": [x, y]}[which]
    nodes = list(tape._nodes)
    seed = lk.constant(np.float64(1.0))
    swept = backward(nodes, [loss], [seed], sources, True)
    general = backward(nodes, [loss], [seed], sources, False)
    for s, g in zip(swept, general):
        np.testing.assert_allclose(s.numpy(), g.numpy())
    # and the tape's own answer (which picks the path itself) agrees
    for g, ref in zip(tape.gradient(loss, sources), general):
        np.testing.assert_allclose(g.numpy(), ref.numpy())


def test_integer_results_stop_gradients_on_both_paths():
    x = _x([0.2, 1.7, -0.4])
    with lk.GradientTape(persistent=True) as tape:
        tape.watch(x)
        k = lk.cast(lk.floor(x), "int64")            # integer result: no gradient
        loss = lk.reduce_sum(x * lk.cast(k, "float64"))
    g = tape.gradient(loss, x)
    np.testing.assert_allclose(g.numpy(), np.floor(x.numpy()))
    nodes = list(tape._nodes)
    seed = lk.constant(np.float64(1.0))
    general = backward(nodes, [loss], [seed], [x], False)[0]
    np.testing.assert_allclose(general.numpy(), g.numpy())
