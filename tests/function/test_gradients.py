"""Gradients flow through an lk.function called under a GradientTape."""
import numpy as np
import pytest

import layerkit as lk
from layerkit.autodiff.function import function


def _model(w, b):
    def f(x):
        return lk.reduce_sum(lk.tanh(lk.matmul(x, w) + b) * x[:, :2])
    return f


def test_gradient_wrt_inputs_and_variables_read_inside(rng):
    w = lk.Variable(rng.standard_normal((3, 2)).astype(np.float32), name="w")
    b = lk.Variable(np.zeros(2, np.float32), name="b")
    eager = _model(w, b)
    compiled = function(eager)
    for i in range(3):
        x = lk.constant(rng.standard_normal((4, 3)).astype(np.float32))
        if i == 1:
            compiled(x)      # a graph exists: the call under the tape must still be right
        results = []
        for fn in (eager, compiled):
            with lk.GradientTape() as tape:
                tape.watch(x)
                y = fn(x) * 2.0
            results.append((y, *tape.gradient(y, [x, w, b])))
        for got, want in zip(results[1], results[0]):
            np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)


def test_second_order_through_function():
    f = function(lambda x: x * x * x)
    x = lk.constant(2.0)
    f(x)
    with lk.GradientTape() as outer:
        outer.watch(x)
        with lk.GradientTape() as inner:
            inner.watch(x)
            y = f(x)
        dy = inner.gradient(y, x)
    d2y = outer.gradient(dy, x)
    assert float(dy) == 12.0 and float(d2y) == 12.0


def test_gradients_function_of_compiled_function():
    f = function(lambda x: lk.exp(x) * lk.sin(x))
    g = lk.gradients_function(f)
    x = 0.7
    want = np.exp(x) * (np.sin(x) + np.cos(x))
    np.testing.assert_allclose(g(x)[0].numpy(), want, rtol=1e-6)


def test_unwatched_call_under_tape_gives_unconnected():
    f = function(lambda x: x * 3.0)
    x = lk.constant([1.0])
    z = lk.constant([2.0])
    with lk.GradientTape() as tape:
        tape.watch(z)
        y = f(x)
    assert tape.gradient(y, z) is None


def test_train_step_with_tape_inside_equals_eager(rng):
    params = [lk.Variable(rng.standard_normal((5, 4)).astype(np.float32) * 0.3),
              lk.Variable(np.zeros(4, np.float32)),
              lk.Variable(rng.standard_normal((4, 3)).astype(np.float32) * 0.3)]
    start = [p.numpy().copy() for p in params]

    def step(x, y):
        with lk.GradientTape() as tape:
            h = lk.maximum(lk.matmul(x, params[0]) + params[1], 0.0)
            logits = lk.matmul(h, params[2])
            loss = lk.reduce_mean(lk.nn.softmax_cross_entropy_with_logits(y, logits))
        grads = tape.gradient(loss, params)
        for p, g in zip(params, grads):
            p.assign_sub(0.1 * g)
        return loss

    batches = [(lk.constant(rng.standard_normal((8, 5)).astype(np.float32)),
                lk.constant(np.eye(3, dtype=np.float32)[rng.integers(0, 3, 8)]))
               for _ in range(4)]
    eager_losses = [float(step(x, y)) for x, y in batches]
    eager_end = [p.numpy().copy() for p in params]
    for p, s in zip(params, start):
        p.assign(s)
    compiled = function(step)
    fn_losses = [float(compiled(x, y)) for x, y in batches]
    assert compiled.trace_count == 1
    assert compiled.get_concrete_function(*batches[0]).mode == "graph"
    np.testing.assert_allclose(fn_losses, eager_losses, rtol=1e-5)
    for p, e in zip(params, eager_end):
        np.testing.assert_allclose(p.numpy(), e, rtol=1e-5, atol=1e-6)


def _cf(f, *args):
    return f.get_concrete_function(*args)


def test_single_node_with_multiple_outputs_and_repeated_variable_reads(rng):
    w = lk.Variable(rng.standard_normal((3, 3)).astype(np.float32), name="w")

    def body(x, scale):
        h = lk.matmul(x, w)
        h2 = lk.matmul(lk.tanh(h), w)          # w read twice
        return {"a": lk.reduce_sum(h2 * scale), "b": h * 2.0, "n": 3,
                "i": lk.argmax(h, axis=1)}

    f = function(body)
    x = lk.constant(rng.standard_normal((2, 3)).astype(np.float32))
    s = lk.constant(np.float32(0.5))
    f(x, s)                                       # trace outside any tape
    for _ in range(2):
        res = []
        for fn in (body, f):
            with lk.GradientTape(persistent=True) as tape:
                tape.watch([x, s])
                out = fn(x, s)
                y = out["a"] + lk.reduce_sum(out["b"] * out["b"])
            res.append([y] + tape.gradient(y, [x, s, w]) + [tape.gradient(out["b"], x)])
            assert out["n"] == 3 and out["i"].dtype == np.int64
        for got, want in zip(res[1], res[0]):
            np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=2e-5, atol=1e-5)
        x = lk.constant(rng.standard_normal((2, 3)).astype(np.float32))
    assert _cf(f, x, s)._backward is not None      # the one-node path was taken


def test_single_node_jacobian_and_unconnected(rng):
    f = function(lambda x, k: lk.sin(x) * k)
    x = lk.constant(rng.standard_normal(4).astype(np.float32))
    k = lk.constant(np.arange(4))                  # integer: no gradient
    f(x, k)
    with lk.GradientTape(persistent=True) as tape:
        tape.watch([x, k])
        y = f(x, k)
    jac = tape.jacobian(y, x)
    np.testing.assert_allclose(jac.numpy(), np.diag(np.cos(x.numpy()) * np.arange(4)),
                               rtol=1e-6, atol=1e-7)
    assert tape.gradient(y, k) is None


def test_functions_with_assigns_still_differentiate(rng):
    v = lk.Variable([0.0], name="calls")

    @function
    def f(x):
        v.assign_add([1.0])
        return lk.exp(x) * 2.0
    x = lk.constant([0.3])
    f(x)
    with lk.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), 2 * np.exp([0.3]), rtol=1e-6)
    np.testing.assert_allclose(v.numpy(), [2.0])    # the assign ran on both calls
    assert _cf(f, x).differentiable is False


def test_first_call_under_tape_traces_and_differentiates():
    f = function(lambda x: lk.reduce_sum(lk.square(x) * 3.0))
    x = lk.constant([1.0, 2.0])
    with lk.GradientTape() as tape:
        tape.watch(x)
        y = f(x)                                    # the trace itself is recorded
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), [6.0, 12.0])
    assert f.trace_count == 1 and type(x) is lk.Tensor


@lk.custom_gradient
def _log1pexp(x):
    e = lk.exp(x)

    def grad(dy):
        return dy * (1 - 1 / (1 + e))
    return lk.log(1 + e), grad


@pytest.mark.filterwarnings("ignore:overflow encountered")
def test_custom_gradient_inside_function():
    @function
    def value_and_grad(x):
        with lk.GradientTape() as tape:
            tape.watch(x)
            y = _log1pexp(x)
        return y, tape.gradient(y, x)

    for v in (100.0, 0.0, 100.0):
        y, g = value_and_grad(lk.constant(v))
        assert np.isfinite(float(g)) and abs(float(g) - 1 / (1 + np.exp(-v))) < 1e-6
    assert value_and_grad.trace_count == 1
    assert value_and_grad.get_concrete_function(lk.constant(1.0)).mode == "graph"

    f = function(_log1pexp)
    x = lk.constant(100.0)
    f(x)
    with lk.GradientTape() as tape:       # under a tape: the custom rule is used
        tape.watch(x)
        y = f(x)
    assert float(tape.gradient(y, x)) == 1.0


def test_scalar_input_signature_keeps_the_gradient_of_a_computed_value():
    v = lk.Variable(3.0)
    f = function(lambda x: x * 2.0, input_signature=[lk.TensorSpec([], "float32")])
    for _ in range(3):              # the tracing call, then the graph node
        with lk.GradientTape() as tape:
            y = f(v * v)            # a 0-d value computed from a Variable
        assert float(tape.gradient(y, v)) == 12.0   # 4 v
    assert f.trace_count == 1


@pytest.mark.parametrize("warm", [False, True], ids=["tracing_call", "graph_calls"])
def test_an_input_feeding_only_unused_outputs_gets_none(warm):
    def body(a, b, w):
        return lk.reduce_sum(a * w), lk.reduce_sum(b * b), lk.exp(b)

    f = function(body)
    a, b = lk.constant([1.0, 2.0]), lk.constant([0.5, -1.0])
    w = lk.Variable([3.0, 4.0])
    if warm:
        f(a, b, w)
    for fn in (body, f, f):
        with lk.GradientTape(persistent=True) as tape:
            tape.watch([a, b])
            p, q, e = fn(a, b, w)
        ga, gb, gw = tape.gradient(p, [a, b, w])
        np.testing.assert_array_equal(ga.numpy(), [3.0, 4.0])
        np.testing.assert_array_equal(gw.numpy(), [1.0, 2.0])
        assert gb is None                                     # as in eager mode
        assert tape.gradient(p, b, unconnected_gradients="zero").numpy().tolist() == [0, 0]
        ga, gb = tape.gradient([p, q], [a, b])                # both seeds: all connected
        np.testing.assert_array_equal(gb.numpy(), [1.0, -2.0])
        ga, gb = tape.gradient(e, [a, b])                     # only the third output
        assert ga is None
        np.testing.assert_allclose(gb.numpy(), np.exp([0.5, -1.0]), rtol=1e-6)
