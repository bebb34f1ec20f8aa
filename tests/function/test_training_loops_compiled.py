"""User journeys with lk.function: a custom training loop compiled vs eager, and the
tf.function features a TensorFlow user relies on (retracing, signatures, randomness,
training flags, gradients through graphs, Python side effects)."""
from __future__ import annotations

import numpy as np
import pytest

import layerkit as lk

_rng = np.random.default_rng(0)
X = _rng.normal(size=(48, 5)).astype(np.float32)
Y = _rng.integers(0, 3, size=48)


class MLP(lk.Model):
    def __init__(self) -> None:
        super().__init__()
        self.d1 = lk.layers.Dense(16, activation="relu")
        self.bn = lk.layers.BatchNormalization()
        self.drop = lk.layers.Dropout(0.3)
        self.d2 = lk.layers.Dense(3)

    def call(self, x, training=None):
        h = self.bn(self.d1(x), training=training)
        return self.d2(self.drop(h, training=training))


def _train(graph: bool, opt_factory):
    lk.random.set_seed(0)
    model, opt = MLP(), opt_factory()   # unbuilt: weights and slots made on call 1
    loss_fn = lk.losses.SparseCategoricalCrossentropy(from_logits=True)
    runs = []

    def step(x, y):
        runs.append(1)
        with lk.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    fn = lk.function(step) if graph else step
    losses = [float(fn(lk.constant(X[i:i + 8]), lk.constant(Y[i:i + 8])))
              for i in range(0, 48, 8)]
    return losses, [v.numpy() for v in model.variables + opt.variables], len(runs), fn


@pytest.mark.parametrize("opt_factory", [
    lambda: lk.optimizers.Adam(0.01),
    lambda: lk.optimizers.SGD(0.1, momentum=0.9, nesterov=True, global_clipnorm=1.0),
])
def test_custom_loop_in_lk_function_matches_eager_step_by_step(opt_factory):
    eager = _train(False, opt_factory)
    graph = _train(True, opt_factory)
    assert graph[2] < eager[2] == 6          # the graph ran without the Python body
    assert graph[3].trace_count <= 2
    np.testing.assert_allclose(graph[0], eager[0], rtol=1e-5, atol=1e-6)
    assert len(graph[1]) == len(eager[1])
    for a, b in zip(graph[1], eager[1]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_retracing_rules_and_input_signature():
    @lk.function
    def f(x, n):
        for _ in range(n):
            x = x * 2.0
        return x + 1.0 if x.shape[0] > 2 else x

    np.testing.assert_array_equal(f(lk.constant([1., 2.]), 2).numpy(), [4., 8.])
    np.testing.assert_array_equal(f(lk.constant([3., 1.]), 2).numpy(), [12., 4.])
    assert f.trace_count == 1
    np.testing.assert_array_equal(f(lk.constant([1., 2.]), 3).numpy(), [8., 16.])
    np.testing.assert_array_equal(f(lk.constant([1., 2., 3.]), 1).numpy(), [3., 5., 7.])
    assert f(lk.constant([1., 2.], dtype="float64"), 1).dtype == np.float64
    assert f.trace_count == 4

    @lk.function(input_signature=[lk.TensorSpec([None, 3], "float32")])
    def h(x):
        return lk.reduce_sum(x * x, axis=1)

    np.testing.assert_array_equal(h(np.ones((2, 3), np.float32)).numpy(), [3., 3.])
    np.testing.assert_array_equal(h(2 * lk.ones((4, 3))).numpy(), [12.] * 4)
    with pytest.raises(ValueError, match=r"'h'.*\(5, 4\)"):
        h(lk.ones((5, 4)))
    with pytest.raises(TypeError, match=r"'h'.*int32"):
        h(lk.ones((5, 3), dtype="int32"))


def test_branching_on_a_traced_tensor_converts_or_names_the_line():
    def g(x):
        if lk.reduce_sum(x) > 0:
            return x
        return -x

    converted = lk.function(g)   # AutoGraph: the `if` becomes a graph cond
    assert float(converted(lk.constant([1.]))[0]) == 1.0
    assert float(converted(lk.constant([-2.]))[0]) == 2.0
    assert converted.trace_count == 1
    with pytest.raises(TypeError, match=r"test_training_loops_compiled.py:\d+.*reduce_sum"):
        lk.function(g, autograph=False)(lk.constant([1.]))


def test_variables_made_on_first_call_only_and_read_live():
    class Lin:
        def __init__(self) -> None:
            self.w = None

        @lk.function
        def __call__(self, x):
            if self.w is None:
                self.w = lk.Variable(lk.ones((x.shape[-1], 2)))
            return x @ self.w

    lin = Lin()
    np.testing.assert_array_equal(lin(lk.ones((1, 3))).numpy(), [[3., 3.]])
    w = lin.w
    np.testing.assert_array_equal(lin(2 * lk.ones((1, 3))).numpy(), [[6., 6.]])
    assert lin.w is w
    w.assign(3 * w)
    np.testing.assert_array_equal(lin(lk.ones((1, 3))).numpy(), [[9., 9.]])


def test_nested_functions_and_higher_order_gradients_on_every_call():
    @lk.function
    def inner(x):
        return x * x * x

    @lk.function
    def outer(x):
        return inner(x) + inner(2.0 * x)          # 9 x^3

    for x0 in (2.0, 3.0, 0.5):
        x = lk.constant(x0)
        with lk.GradientTape() as t2:
            t2.watch(x)
            with lk.GradientTape() as t1:
                t1.watch(x)
                y = outer(x)
            dy = t1.gradient(y, x)
        d2 = t2.gradient(dy, x)
        np.testing.assert_allclose([float(y), float(dy), float(d2)],
                                   [9 * x0 ** 3, 27 * x0 ** 2, 54 * x0], rtol=1e-6)

    v = lk.Variable([1., 2.])

    @lk.function
    def g(x):
        return lk.reduce_sum(v * x)

    a = lk.constant([0.5, 1.5])
    for _ in range(3):
        with lk.GradientTape() as t:
            t.watch(a)
            y = g(a) * g(a)
        gv, ga = t.gradient(y, [v, a])
        s = float(np.sum(v.numpy() * a.numpy()))
        np.testing.assert_allclose(gv.numpy(), 2 * s * a.numpy(), rtol=1e-6)
        np.testing.assert_allclose(ga.numpy(), 2 * s * v.numpy(), rtol=1e-6)
        v.assign(2 * v)


def test_random_ops_in_graphs_draw_fresh_values_like_eager():
    @lk.function
    def f(x):
        return x + lk.random.normal([4]), lk.nn.dropout(lk.ones([8]), 0.5)

    lk.random.set_seed(3)
    got = [[t.numpy() for t in f(lk.zeros(4))] for _ in range(3)]
    lk.random.set_seed(3)
    want = [[lk.random.normal([4]).numpy(), lk.nn.dropout(lk.ones([8]), 0.5).numpy()]
            for _ in range(3)]
    assert f.trace_count == 1
    assert not np.array_equal(got[1][0], got[2][0])
    for g_, w_ in zip(got, want):
        np.testing.assert_array_equal(g_[0], w_[0])
        np.testing.assert_array_equal(g_[1], w_[1])


def test_training_flag_selects_batchnorm_and_dropout_behaviour_in_graphs():
    x = lk.constant(_rng.normal(size=(4, 3)).astype(np.float32))
    results = {}
    for graph in (False, True):
        lk.random.set_seed(3)
        bn, drop = lk.layers.BatchNormalization(momentum=0.5), lk.layers.Dropout(0.5)

        def run(x, training, bn=bn, drop=drop):
            return drop(bn(x, training=training), training=training)

        fn = lk.function(run) if graph else run
        outs = [fn(x, flag).numpy() for flag in (True, True, False, True, False)]
        results[graph] = outs, bn.moving_mean.numpy(), bn.moving_variance.numpy()
    for a, b in zip(results[True][0], results[False][0]):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(results[True][1], results[False][1], rtol=1e-6)
    np.testing.assert_allclose(results[True][2], results[False][2], rtol=1e-6)
    # inference (last call): batchnorm uses the moving statistics, dropout is identity
    mean, var = results[True][1], results[True][2]
    np.testing.assert_allclose(results[True][0][4], (x.numpy() - mean) / np.sqrt(var + 1e-3),
                               rtol=1e-5, atol=1e-5)
    assert np.any(results[True][0][0] == 0.0)      # training: dropout zeroed something


def test_python_side_effects_run_while_tracing_only(capsys):
    log = []

    @lk.function
    def f(x):
        log.append(1)
        print("tracing with", x)
        return x + 1.0

    for i in range(3):
        assert float(f(lk.constant(float(i)))) == i + 1.0
    assert log == [1]
    out = capsys.readouterr().out
    assert out.count("tracing with") == 1 and "shape=()" in out
