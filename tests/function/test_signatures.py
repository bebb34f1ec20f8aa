"""lk.function signatures: None dimensions (one trace for every size), reduce_retracing,
ConcreteFunction calls and attributes, Variable arguments, and the retrace/error rules of
TensorFlow's tf.function guide (counts derived by hand from those rules)."""
import warnings

import numpy as np
import pytest

import layerkit as lk
from layerkit.autodiff.function import RetracingWarning, TensorSpec, function

BATCHES = (1, 2, 5, 7)


@pytest.fixture
def rng():
    return np.random.default_rng(7)


# ---- None dimensions: one trace ---------------------------------------------------------------
def test_none_batch_traces_once_and_matches_numpy(rng):
    runs = []

    @function(input_signature=[TensorSpec([None, 3])])
    def f(x):
        runs.append(1)
        return lk.tanh(x) * 2.0 + lk.reduce_sum(x, axis=1, keepdims=True)

    for n in BATCHES + (2, 7):
        a = rng.standard_normal((n, 3)).astype(np.float32)
        np.testing.assert_allclose(f(a).numpy(), np.tanh(a) * 2 + a.sum(1, keepdims=True),
                                   rtol=1e-5, atol=1e-6)
    assert f.trace_count == 1 and f.experimental_get_tracing_count() == 1
    assert len(runs) == 1                         # the Python body ran once
    cf = f.get_concrete_function()
    assert cf.graph_generic
    assert cf._program.plans == len(set(BATCHES))  # one buffer plan per concrete size


def test_static_shape_inside_shows_none_and_lk_shape_is_run_time(rng):
    seen = []

    @function(input_signature=[TensorSpec([None, 4])])
    def f(x):
        seen.append(x.shape)
        n = lk.shape(x)[0]
        z = lk.zeros([n, 3]) + 1.0
        o = lk.ones((n, 2), "int32")
        filled = lk.fill([n], 2.5)
        r = lk.random.normal((lk.shape(x)[0], 6), seed=11)
        mean = lk.reduce_sum(x) / lk.cast(n, "float32")
        return (z, o, filled, r, mean, lk.reshape(x, [-1, 2]), lk.reshape(x, [n * 2, 2]),
                lk.expand_dims(x, 1), lk.size(x), lk.zeros_like(x))

    for n in BATCHES:
        a = rng.standard_normal((n, 4)).astype(np.float32)
        z, o, filled, r, mean, r1, r2, e, size, zl = f(a)
        np.testing.assert_array_equal(z.numpy(), np.ones((n, 3), np.float32))
        np.testing.assert_array_equal(o.numpy(), np.ones((n, 2), np.int32))
        np.testing.assert_array_equal(filled.numpy(), np.full(n, 2.5, np.float32))
        assert r.shape == (n, 6) and r.dtype == np.float32
        np.testing.assert_allclose(mean.numpy(), a.sum() / n, rtol=1e-5)
        np.testing.assert_array_equal(r1.numpy(), a.reshape(-1, 2))
        np.testing.assert_array_equal(r2.numpy(), a.reshape(-1, 2))
        np.testing.assert_array_equal(e.numpy(), a[:, None, :])
        assert int(size.numpy()) == 4 * n and zl.shape == (n, 4)
    assert seen == [(None, 4)] and f.trace_count == 1


def test_random_with_run_time_shape_draws_new_numbers_each_call():
    @function(input_signature=[TensorSpec([None])])
    def f(x):
        return lk.random.uniform((lk.shape(x)[0], 1000), seed=5)

    a, b = f(np.zeros(3, np.float32)).numpy(), f(np.zeros(3, np.float32)).numpy()
    assert a.shape == b.shape == (3, 1000) and not np.array_equal(a, b)
    assert 0.45 < a.mean() < 0.55 and f(np.zeros(6, np.float32)).shape == (6, 1000)
    assert f.trace_count == 1


def test_training_step_with_none_batch_matches_hand_derived_sgd(rng):
    w = lk.Variable(np.full((4, 3), 0.1, np.float32))
    b = lk.Variable(np.zeros(3, np.float32))

    @function(input_signature=[TensorSpec([None, 4]), TensorSpec([None, 3])])
    def step(x, y):
        with lk.GradientTape() as tape:
            loss = lk.reduce_mean((lk.matmul(x, w) + b - y) ** 2)
        gw, gb = tape.gradient(loss, [w, b])
        w.assign_sub(0.1 * gw)
        b.assign_sub(0.1 * gb)
        return loss

    wn, bn = np.full((4, 3), 0.1), np.zeros(3)
    for n in BATCHES + (3,):
        x = rng.random((n, 4)).astype(np.float32)
        y = rng.random((n, 3)).astype(np.float32)
        loss = step(x, y).numpy()
        err = x @ wn + bn - y
        d = 2 * err / err.size                 # d mean(err**2) / d err
        np.testing.assert_allclose(loss, (err ** 2).mean(), rtol=1e-5)
        wn, bn = wn - 0.1 * x.T @ d, bn - 0.1 * d.sum(0)
        np.testing.assert_allclose(w.numpy(), wn, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(b.numpy(), bn, rtol=1e-5, atol=1e-6)
    assert step.trace_count == 1


def test_gradient_through_generic_function_at_each_size(rng):
    w = lk.Variable(rng.standard_normal((4, 2)).astype(np.float32))

    @function(input_signature=[TensorSpec([None, 4])])
    def f(x):
        return lk.reduce_sum(lk.tanh(lk.matmul(x, w)))

    for n in (2, 5, 2, 1):
        x = lk.constant(rng.standard_normal((n, 4)).astype(np.float32))
        for _ in range(2):  # the first call of a size traces or plans, the second replays
            with lk.GradientTape() as tape:
                tape.watch(x)
                out = f(x)
            gx = tape.gradient(out, x).numpy()
            wv = w.numpy()
            want = (1 - np.tanh(x.numpy() @ wv) ** 2) @ wv.T
            np.testing.assert_allclose(gx, want, rtol=1e-4, atol=1e-5)
    assert f.trace_count == 1


def test_keras_model_step_with_none_batch_matches_eager(rng):
    layers = lk.keras.layers

    def make():
        lk.random.set_seed(3)
        return lk.keras.Sequential([layers.Input((6,)), layers.Reshape((2, 3)), layers.Flatten(),
                                    layers.Dense(5, activation="relu"), layers.Dense(3)])

    graph_model, eager_model = make(), make()
    opt_g, opt_e = lk.keras.optimizers.Adam(0.01), lk.keras.optimizers.Adam(0.01)
    loss_fn = lk.keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    def step(model, opt, x, y):
        with lk.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    fstep = function(lambda x, y: step(graph_model, opt_g, x, y),
                     input_signature=[TensorSpec([None, 6]), TensorSpec([None], "int32")])
    with warnings.catch_warnings():
        warnings.simplefilter("error", RetracingWarning)
        for n in BATCHES + (3,):
            x = rng.random((n, 6)).astype(np.float32)
            y = rng.integers(0, 3, n).astype(np.int32)
            np.testing.assert_allclose(fstep(x, y).numpy(),
                                       step(eager_model, opt_e, lk.constant(x), lk.constant(y))
                                       .numpy(), rtol=1e-5)
    for a, b in zip(graph_model.weights, eager_model.weights):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6)
    assert fstep.trace_count == 1


def test_lstm_with_none_batch_is_one_trace(rng):
    model = lk.keras.Sequential([lk.keras.layers.LSTM(4), lk.keras.layers.Dense(2)])
    model(np.zeros((1, 5, 3), np.float32))
    f = function(lambda x: model(x), input_signature=[TensorSpec([None, 5, 3])])
    for n in BATCHES:
        x = rng.random((n, 5, 3)).astype(np.float32)
        np.testing.assert_allclose(f(x).numpy(), model(x).numpy(), rtol=1e-5, atol=1e-6)
    assert f.trace_count == 1


def test_an_op_needing_the_traced_size_falls_back_per_shape_with_a_warning():
    c = lk.constant(np.arange(6, dtype=np.float32).reshape(2, 3))

    @function(input_signature=[TensorSpec([None, 3])])
    def f(x):
        return x + c            # only a batch of 2 (or 1) broadcasts against c

    x = np.ones((2, 3), np.float32)
    with pytest.warns(RetracingWarning, match="op 'add'.*traced once per concrete shape"):
        out = f(x)
    np.testing.assert_array_equal(out.numpy(), x + c.numpy())
    np.testing.assert_array_equal(f(x[:1]).numpy(), x[:1] + c.numpy())
    assert f.trace_count == 2   # per concrete shape, as without None dimensions
    with pytest.raises(ValueError):
        f(np.ones((3, 3), np.float32))


def test_get_concrete_function_with_none_spec_serves_every_size():
    f = function(lambda x: x * 3.0)
    cf = f.get_concrete_function(TensorSpec([None, 2]))
    for n in (4, 1, 9):
        a = np.arange(2 * n, dtype=np.float32).reshape(n, 2)
        np.testing.assert_array_equal(cf(lk.constant(a)).numpy(), a * 3)
        np.testing.assert_array_equal(f(a).numpy(), a * 3)   # the Function reuses it
    assert f.trace_count == 1
    assert cf.inputs == [TensorSpec([None, 2], "float32", name="x")]
    assert cf.outputs == [TensorSpec([None, 2], "float32")]


# ---- reduce_retracing ----------------------------------------------------------------------------
@pytest.mark.parametrize("option", ["reduce_retracing", "experimental_relax_shapes"])
def test_reduce_retracing_generalises_after_a_second_shape(option):
    seen = []

    @function(**{option: True})
    def g(tag, x):
        seen.append(x.shape)
        return lk.reduce_sum(x) * 2.0

    # hand-derived: 1st shape traces as is; 2nd shape traces with None in the changed
    # dims; later shapes of that kind reuse it; a new Python value starts over.
    counts = []
    for tag, n in [("a", 3), ("a", 5), ("a", 8), ("a", 1), ("b", 2), ("b", 4), ("b", 6)]:
        x = np.arange(n, dtype=np.float32)
        np.testing.assert_allclose(g(tag, x).numpy(), x.sum() * 2)
        counts.append(g.trace_count)
    assert counts == [1, 2, 2, 2, 3, 4, 4]
    assert seen == [(3,), (None,), (2,), (None,)]


def test_without_reduce_retracing_each_shape_traces():
    f = function(lambda x: x + 1.0)
    for n in (3, 5, 8, 5):
        f(np.zeros(n, np.float32))
    assert f.trace_count == 3


# ---- retrace rules of the tf.function guide ------------------------------------------------------
def test_python_scalars_retrace_per_value_tensors_per_shape_and_dtype():
    f = function(lambda x: x * 2)
    calls = [2, 3, 2, 3.0, lk.constant(2), lk.constant(5), lk.constant(2.0),
             lk.constant([1, 2]), lk.constant([3, 4])]
    counts = []
    for c in calls:
        f(c)
        counts.append(f.trace_count)
    # 2 and 3 are new values; 2 again is cached; 3.0 is a float (another key); int32
    # scalar tensors share a trace; a float32 scalar and an int32 vector are new.
    assert counts == [1, 2, 2, 3, 4, 4, 5, 6, 6]


def test_input_signature_mismatches_raise_typeerror_or_valueerror():
    f = function(lambda x: x + 1, input_signature=[TensorSpec([None], "int32")])
    with pytest.raises(TypeError, match="dtype float32.*int32"):
        f(lk.constant([1.0, 2.0]))
    with pytest.raises(ValueError, match=r"shape \(2, 1\)") as e:
        f(lk.constant([[1], [2]]))
    assert isinstance(e.value, TypeError)         # TF 2.13+ raises TypeError here
    with pytest.raises(TypeError, match="1 argument"):
        f(lk.constant([1]), lk.constant([2]))
    np.testing.assert_array_equal(f(x=lk.constant([1, 2])).numpy(), [2, 3])
    with pytest.raises(TypeError, match="unexpected keyword argument 'y'"):
        f(y=lk.constant([1]))
    assert f.trace_count == 1


def test_a_wrong_keyword_raises_typeerror_before_tracing():
    f = function(lambda x, scale=2.0: x * scale)
    with pytest.raises(TypeError, match="unexpected keyword argument 'sclae'"):
        f(lk.constant(1.0), sclae=3.0)
    assert f.trace_count == 0
    assert float(f(lk.constant(1.0), scale=3.0)) == 3.0


# ---- ConcreteFunction ---------------------------------------------------------------------------
def _scaled_power():
    @function
    def f(x, y, power, scale=1.0):
        return {"out": (x + y) ** power * scale, "power": power}
    return f


def test_concrete_function_calls_without_python_arguments():
    f = _scaled_power()
    cf = f.get_concrete_function(TensorSpec([None]), TensorSpec([None]), 2)
    x, y = lk.constant([1.0, 2.0]), lk.constant([3.0, 0.0])
    want = np.array([16.0, 4.0], np.float32)
    for out in (cf(x, y), cf(x=x, y=y), cf(x, y=y), cf(x, y, 2), cf(x, y, power=2)):
        np.testing.assert_array_equal(out["out"].numpy(), want)
        assert out["power"] == 2
    assert f.trace_count == 1
    assert cf.structured_input_signature == (
        (TensorSpec([None], "float32", "x"), TensorSpec([None], "float32", "y"), 2), {})
    assert cf.structured_outputs == {"out": TensorSpec([None], "float32"), "power": 2}
    assert cf.inputs == [TensorSpec([None], "float32", "x"), TensorSpec([None], "float32", "y")]


def test_concrete_function_signature_errors_name_the_argument():
    f = _scaled_power()
    cf = f.get_concrete_function(TensorSpec([2]), TensorSpec([2]), 3)
    x = lk.constant([1.0, 2.0])
    with pytest.raises(TypeError, match=r"argument 'y' .*float32.*received .*dtype int32"):
        cf(x, lk.constant([1, 2]))
    with pytest.raises(TypeError, match=r"argument 'x' .*shape=\(2,\).*shape \(3,\)"):
        cf(lk.constant([1.0, 2.0, 3.0]), x)
    with pytest.raises(ValueError):
        cf(lk.constant([1.0, 2.0, 3.0]), x)
    with pytest.raises(TypeError, match="missing required argument 'y'"):
        cf(x)
    with pytest.raises(TypeError, match=r"takes 4 argument\(s\) \(x, y, power, scale\)"):
        cf(x, x, 3, 1.0, 5)
    with pytest.raises(TypeError, match="unexpected keyword argument 'z'"):
        cf(x, x, z=x)
    with pytest.raises(TypeError, match="'power' was traced with the Python value 3"):
        cf(x, x, power=4)
    with pytest.raises(TypeError, match="'scale' was traced with the Python value 1.0"):
        cf(x, x, scale=2.0)
    np.testing.assert_array_equal(cf(x, x, scale=1.0)["out"].numpy(), [8.0, 64.0])
    assert f.trace_count == 1


def test_concrete_function_graph_views_and_printed_signatures():
    @function
    def f(x):
        return lk.tanh(x) * 2.0

    cf = f.get_concrete_function(TensorSpec([None, 3]))
    types = [op.type for op in cf.graph.get_operations()]
    assert types[0] == "Placeholder" and "tanh" in types and "multiply" in types
    text = str(cf.graph.as_graph_def())
    assert 'op: "tanh"' in text and 'input: "x"' in text
    assert [n.op for n in cf.graph.as_graph_def().node] == types
    sig = cf.pretty_printed_signature()
    assert "x (POSITIONAL_OR_KEYWORD): TensorSpec(shape=(None, 3), dtype=float32" in sig
    assert "Output Type:\n  TensorSpec(shape=(None, 3), dtype=float32" in sig
    f.get_concrete_function(TensorSpec([2], "float64"))
    both = f.pretty_printed_concrete_signatures()
    assert both.count("Input Parameters:") == 2 and "float64" in both
    assert f.python_function(lk.constant(0.0)).numpy() == 0.0
    assert f.input_signature is None


# ---- Variables as arguments ------------------------------------------------------------
def test_variable_arguments_are_live_and_rebound_without_retracing():
    @function
    def bump(v, x):
        v.assign_add(x)
        return v * 2.0

    a, b = lk.Variable([1.0, 2.0]), lk.Variable([10.0, 20.0])
    one = lk.constant([1.0, 1.0])
    np.testing.assert_array_equal(bump(a, one).numpy(), [4.0, 6.0])
    np.testing.assert_array_equal(bump(b, one).numpy(), [22.0, 42.0])   # another Variable
    np.testing.assert_array_equal(a.numpy(), [2.0, 3.0])
    np.testing.assert_array_equal(b.numpy(), [11.0, 21.0])
    a.assign([0.0, 0.0])                                                 # changed outside
    np.testing.assert_array_equal(bump(a, one).numpy(), [2.0, 2.0])
    assert bump.trace_count == 1
    c = lk.Variable([1.0, 2.0, 3.0])                                     # another shape
    np.testing.assert_array_equal(bump(c, lk.constant([1.0, 1.0, 1.0])).numpy(), [4.0, 6.0, 8.0])
    assert bump.trace_count == 2


def test_a_returned_variable_argument_is_the_callers_variable():
    f = function(lambda v: v)
    a, b = lk.Variable([1.0]), lk.Variable([2.0])
    assert f(a) is a and f(b) is b and f.trace_count == 1


def test_variable_argument_under_a_tape_gets_its_gradient():
    f = function(lambda v, x: lk.reduce_sum(v * x))
    a, b = lk.Variable([1.0, 2.0]), lk.Variable([3.0, 4.0])
    x = lk.constant([5.0, 7.0])
    for v in (a, b, a):
        with lk.GradientTape() as tape:
            out = f(v, x)
        np.testing.assert_array_equal(tape.gradient(out, v).numpy(), [5.0, 7.0])
    assert f.trace_count == 1


def test_concrete_function_under_a_tape_and_inside_another_function():
    f = function(lambda x: lk.reduce_sum(x ** 3))
    cf = f.get_concrete_function(TensorSpec([None]))
    x = lk.constant([1.0, 2.0])
    with lk.GradientTape() as tape:
        tape.watch(x)
        y = cf(x)
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), [3.0, 12.0])
    outer = function(lambda x: cf(x) * 2.0)
    np.testing.assert_allclose(outer(x).numpy(), 18.0)
    np.testing.assert_allclose(outer(lk.constant([1.0, 1.0])).numpy(), 4.0)


def test_a_spec_without_shape_leaves_every_dimension_unknown():
    f = function(lambda x: lk.reduce_sum(x) + 0.0, input_signature=[TensorSpec(None)])
    for shape in [(2, 3), (4, 1), (5, 5)]:
        a = np.ones(shape, np.float32)
        np.testing.assert_allclose(f(a).numpy(), a.size)
    assert f.trace_count == 1
    f(np.ones(3, np.float32))                 # another rank: another trace
    assert f.trace_count == 2


def test_batch_size_divisions_happen_at_run_time(rng):
    # sum_over_batch_size with sample weights and an activity regularizer's penalty /
    # batch size divide by the batch: with a None batch that size is computed per call.
    loss = lk.keras.losses.MeanSquaredError()
    layer = lk.keras.layers.Dense(2, activity_regularizer=lk.keras.regularizers.L2(0.5),
                                  kernel_initializer="ones")

    @function(input_signature=[TensorSpec([None, 3]), TensorSpec([None, 2]),
                               TensorSpec([None])])
    def f(x, y, w):
        out = layer(x)
        return loss(y, out, sample_weight=w), layer.losses[-1]

    for n in (2, 5, 1, 7):
        x = rng.random((n, 3)).astype(np.float32)
        y = rng.random((n, 2)).astype(np.float32)
        w = rng.random(n).astype(np.float32)
        got, penalty = f(x, y, w)
        out = x @ np.ones((3, 2)) + layer.bias.numpy()
        want = (((out - y) ** 2).mean(axis=1) * w).sum() / n
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-5)
        np.testing.assert_allclose(penalty.numpy(), 0.5 * (out ** 2).sum() / n, rtol=1e-5)
    assert f.trace_count == 1


def test_len_and_size_of_a_none_dimension_are_refused_in_user_code():
    @function(input_signature=[TensorSpec([None, 3])])
    def f(x):
        return x * float(len(x))

    with pytest.raises(TypeError, match=r"len\(\).*lk.shape"):
        f(np.ones((2, 3), np.float32))

    @function(input_signature=[TensorSpec([2, None])])
    def g(x):
        return x * float(x.size) + float(len(x))   # len() is static here: dim 0 is 2

    with pytest.raises(TypeError, match=r"the size of a tensor of shape \(2, None\)"):
        g(np.ones((2, 3), np.float32))
    h = function(lambda x: x * float(len(x)), input_signature=[TensorSpec([2, None])])
    np.testing.assert_array_equal(h(np.ones((2, 4), np.float32)).numpy(), np.full((2, 4), 2.0))


def test_python_print_once_lk_print_every_call_with_the_run_time_size(capsys):
    @function(input_signature=[TensorSpec([None])])
    def f(x):
        print("tracing")
        lk.print("n =", lk.shape(x)[0])
        return x

    for n in (1, 3, 3):   # a first batch of 1 is traced at size 2 as a dry run
        f(np.ones(n, np.float32))
    captured = capsys.readouterr()
    text = captured.out + captured.err
    assert text.count("tracing") == 1
    assert [ln for ln in text.splitlines() if ln.startswith("n =")] == ["n = 1", "n = 3", "n = 3"]
