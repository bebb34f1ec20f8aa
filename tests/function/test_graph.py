"""Introspection, retrace warnings, eager fallback, random and stateful ops."""
import warnings

import numpy as np
import pytest

import layerkit as lk
from layerkit._core.op import Op, apply, wrap
from layerkit.autodiff.function import (
    EagerFallbackWarning,
    RetracingWarning,
    TensorSpec,
    function,
)


def test_concrete_function_graph_prints_nodes_and_fused_kernels():
    w = lk.Variable(np.ones((3, 2), np.float32), name="kernel")

    @function
    def f(x):
        h = lk.matmul(x, w)
        w.assign_sub(lk.ones_like(w) * 0.0)
        return lk.tanh(h * 2.0 + 1.0)

    x = lk.constant(np.ones((4, 3), np.float32))
    cf = f.get_concrete_function(x)
    text = str(cf.graph)
    assert text.startswith("graph f(%0: float32[4,3] x)")
    assert "read_variable 'kernel'" in text
    assert "matmul(" in text and "float32[4,2]" in text
    assert "fused[numpy, 3 ops]" in text and "tanh(((%" in text and "* 2.0) + 1.0))" in text
    assert "assign_sub 'kernel'" in text
    assert text.rstrip().splitlines()[-1].startswith("  return %")
    assert "def __run(" in cf.source
    assert cf.mode == "graph" and f.trace_count == 1


def test_get_concrete_function_has_no_side_effects():
    v = lk.Variable([1.0, 2.0])
    calls = []

    @function
    def f(x):
        calls.append(1)
        v.assign_add(x)
        return v * 1.0

    cf = f.get_concrete_function(TensorSpec([2], "float32"))
    np.testing.assert_allclose(v.numpy(), [1.0, 2.0])     # the trace's assign was undone
    assert len(calls) == 1 and f.trace_count == 1
    out = cf(lk.constant([1.0, 1.0]))
    np.testing.assert_allclose(out.numpy(), [2.0, 3.0])
    np.testing.assert_allclose(f(lk.constant([1.0, 1.0])).numpy(), [3.0, 4.0])
    assert len(calls) == 1
    with pytest.raises(TypeError, match="not match the traced signature"):
        cf(lk.constant([1.0, 1.0, 1.0]))


def test_excessive_retracing_warns_with_reason():
    f = function(lambda x, k: x * k)
    x = lk.constant([1.0])
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        for k in range(5):
            f(x, float(k))
        assert not [m for m in w if issubclass(m.category, RetracingWarning)]
        f(x, 5.0)
    msgs = [str(m.message) for m in w if issubclass(m.category, RetracingWarning)]
    assert len(msgs) == 1
    assert "traced 6 times" in msgs[0]
    assert "argument k changed from Python float 4.0 to Python float 5.0" in msgs[0]
    with pytest.warns(RetracingWarning, match=r"argument x changed from tensor shape \(1,\)"):
        f(lk.constant([1.0, 2.0]), 5.0)


# ---- eager fallback ---------------------------------------------------------------------------
def _leaky_vjp(g, ins, y, needs):
    # computes a mask from the forward value in NumPy: invisible to a tracer
    return (lk.multiply(g, wrap((y._v > 0).astype(y._v.dtype))),)


_LEAKY = Op("leaky_relu_test", lambda x: np.maximum(x, 0), _leaky_vjp)


def test_values_read_outside_ops_fall_back_to_eager_with_warning():
    def grad(x):
        with lk.GradientTape() as tape:
            tape.watch(x)
            y = lk.reduce_sum(apply(_LEAKY, x) * 3.0)
        return tape.gradient(y, x)

    f = function(grad)
    with pytest.warns(EagerFallbackWarning, match=r"_leaky_vjp .*test_graph.py"):
        first = f(lk.constant([1.0, -1.0]))
    np.testing.assert_allclose(first.numpy(), [3.0, 0.0])
    # later calls with another sign pattern are still right (the body runs eagerly)
    np.testing.assert_allclose(f(lk.constant([-1.0, 2.0])).numpy(), [0.0, 3.0])
    assert f.get_concrete_function(lk.constant([1.0, 1.0])).mode == "eager"


def test_shape_only_reads_do_not_fall_back():
    @function
    def f(x):
        return lk.zeros_like(x) + lk.ones_like(x) * lk.reduce_sum(x, axis=0)
    x = lk.constant(np.ones((2, 3), np.float32))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        f(x)
    assert f.get_concrete_function(x).mode == "graph"
    np.testing.assert_allclose(f(x * 2.0).numpy(), np.full((2, 3), 4.0))


# ---- random numbers -------------------------------------------------------------------------
def test_seedless_random_ops_stay_random_on_every_call():
    # Random ops are stateful records: the graph redraws on every call (no fallback),
    # and the sequence follows lk.random's global seed like eager code does.
    def draws():
        lk.random.set_seed(3)
        f = function(lambda x: x + lk.random.normal([3]))
        x = lk.constant(np.zeros(3, np.float32))
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            out = [f(x).numpy() for _ in range(4)]
        assert f.get_concrete_function(x).mode == "graph"
        return out

    first = draws()
    for a, b in zip(first, first[1:]):
        assert not np.array_equal(a, b)
    for a, b in zip(first, draws()):
        np.testing.assert_array_equal(a, b)


def test_op_seed_gives_a_reproducible_sequence():
    # TF semantics: an op seed inside a traced function gives a fixed *sequence* of
    # values over calls (the first equal to the eager draw), the same for every trace.
    def sequence():
        f = function(lambda x: x + lk.random.normal([3], seed=7))
        x = lk.constant(np.zeros(3, np.float32))
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            return [f(x).numpy() for _ in range(3)]

    a, b, c = sequence()
    assert not np.array_equal(a, b) and not np.array_equal(b, c)
    np.testing.assert_array_equal(a, lk.random.normal([3], seed=7).numpy())
    for got, want in zip(sequence(), (a, b, c)):
        np.testing.assert_array_equal(got, want)


def test_variables_created_on_first_call_with_random_init():
    holder = {}

    @function
    def f(x):
        if "w" not in holder:   # a layer building its weights on the first call
            holder["w"] = lk.Variable(lk.random.normal([3, 2]), name="w")
        return lk.matmul(x, holder["w"])

    x = lk.constant(np.ones((1, 3), np.float32))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        a = f(x)
        b = f(x)
        c = f(x)
    np.testing.assert_allclose(a.numpy(), b.numpy())
    np.testing.assert_allclose(c.numpy(), x.numpy() @ holder["w"].numpy(), rtol=1e-6)
    assert f.trace_count == 1   # the initial value becomes the variable, not a graph input
    assert f.get_concrete_function(x).mode == "graph"


# ---- stateful op records ------------------------------------------------------------------------
def test_stateful_records_run_every_call_and_are_never_merged():
    state = {"n": 0}

    def draw(x):
        state["n"] += 1
        return np.full_like(x, state["n"])

    op = Op("counter", draw, stateful=True)

    @function
    def f(x):
        a = apply(op, x)
        b = apply(op, x)       # same inputs: must not be merged
        apply(op, x)           # unused: must not be removed
        return a + b * 10.0
    x = lk.constant([0.0])
    np.testing.assert_allclose(f(x).numpy(), [1.0 + 20.0])
    np.testing.assert_allclose(f(x).numpy(), [4.0 + 50.0])
    assert state["n"] == 6
