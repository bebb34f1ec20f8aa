"""A user layer's call with Python control flow on tensors works inside lk.function and
fit (AutoGraph converts the call while tracing, as TensorFlow does), and stays plain
Python eagerly."""
import numpy as np

import layerkit as lk


class Gate(lk.layers.Layer):
    def call(self, x):
        if lk.reduce_sum(x) > 0:
            return x * 2.0
        return -x


class Accumulate(lk.layers.Layer):
    def call(self, x):
        total = lk.zeros_like(x[0])
        for row in x:
            if lk.reduce_max(row) > 0.5:
                total = total + row
        return total


def test_branches_on_traced_tensors_in_a_layer_call():
    layer = Gate()
    f = lk.function(lambda x: layer(x))
    np.testing.assert_allclose(f(lk.constant([1.0, 2.0])), [2.0, 4.0])
    np.testing.assert_allclose(f(lk.constant([-1.0, -2.0])), [1.0, 2.0])
    assert f.trace_count == 1  # one graph serves both branches
    np.testing.assert_allclose(layer(lk.constant([-3.0])), [3.0])  # eager: plain Python


def test_loops_in_a_layer_call_and_gradients_through_the_branch():
    layer = Accumulate()
    x = np.array([[0.9, 0.1], [0.2, 0.3], [0.7, 0.8]], np.float32)
    f = lk.function(lambda t: layer(t))
    np.testing.assert_allclose(f(lk.constant(x)), x[0] + x[2], rtol=1e-6)
    g = lk.function(lambda t: lk.reduce_sum(Gate()(t) * t))
    v = lk.Variable([1.0, 2.0])
    with lk.GradientTape() as tape:
        y = g(v)
    np.testing.assert_allclose(tape.gradient(y, v), [4.0, 8.0])  # d(2 v^2)/dv


def test_fit_with_a_branching_layer():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(32, 2)).astype(np.float32)
    model = lk.Sequential([lk.Input((2,)), Gate(), lk.layers.Dense(1)])
    model.compile(lk.optimizers.SGD(0.05), "mse")
    hist = model.fit(x, np.zeros((32, 1), np.float32), epochs=3, batch_size=8, verbose=0)
    assert np.all(np.isfinite(hist.history["loss"]))
    eager = np.concatenate([model.layers[1](Gate()(x[i:i + 8])).numpy()
                            for i in range(0, 32, 8)])
    np.testing.assert_allclose(model.predict(x, batch_size=8, verbose=0), eager, rtol=1e-5)
