"""Python in graphs: lk.print, lk.py_function, lk.numpy_function and python_call.

Each runs its Python on every call of a traced function (a stateful graph node), and
right away when eager. Expected texts are derived by hand from tf.print's rules: the
first and last ``summarize`` elements of each dimension with ``...`` between, rows on
new lines indented by depth (a blank line between blocks of 3-d tensors), floats with
6 (float32) or 15 (float64) significant digits, or 9 / 17 when fewer do not give the
value back, booleans as 1/0.
"""
import logging
import sys
import warnings

import numpy as np
import pytest

import layerkit as lk
from layerkit.autodiff.check import check_grads
from layerkit.autodiff.function import EagerFallbackWarning, python_call
from layerkit.autodiff.function.pyfunc import format_tensor


def _strict(f, *args):
    """Call ``f`` with eager fallbacks turned into errors."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", EagerFallbackWarning)
        return f(*args)


# ---- formatting ----------------------------------------------------------------------------
@pytest.mark.parametrize("value, summarize, text", [
    (np.arange(10, dtype=np.int32), 3, "[0 1 2 ... 7 8 9]"),
    (np.arange(6, dtype=np.int32), 3, "[0 1 2 3 4 5]"),
    (np.arange(7, dtype=np.int32), 3, "[0 1 2 ... 4 5 6]"),
    (np.arange(10, dtype=np.int32), -1, "[0 1 2 3 4 5 6 7 8 9]"),
    (np.arange(10, dtype=np.int32), None, "[0 1 2 ... 7 8 9]"),
    (np.zeros((0,), np.float32), 3, "[]"),
    (np.int64(7), 3, "7"),
    (np.array([[1, 2], [3, 4]]), 3, "[[1 2]\n [3 4]]"),
    (np.arange(8).reshape(2, 2, 2), 3, "[[[0 1]\n  [2 3]]\n\n [[4 5]\n  [6 7]]]"),
    (np.arange(25).reshape(5, 5), 1, "[[0 ... 4]\n ...\n [20 ... 24]]"),
    (np.array([True, False]), 3, "[1 0]"),
    (np.array([1.5, 2.0, -0.25], np.float32), 3, "[1.5 2 -0.25]"),
    (np.array([0.1, 1 / 3], np.float32), 3, "[0.1 0.333333343]"),
    (np.array([0.1, 1 / 3], np.float64), 3, "[0.1 0.33333333333333331]"),
    (np.array([1e20, np.inf, -np.inf, np.nan], np.float32), 3, "[1e+20 inf -inf nan]"),
    (np.array([0.5, 3.0], np.float16), 3, "[0.5 3]"),
])
def test_format_tensor_follows_tf_print(value, summarize, text):
    assert format_tensor(lk.constant(value), summarize) == text


def test_print_eager_writes_now_with_separators_and_containers(capsys):
    lk.print("tensors:", lk.constant(np.arange(10, dtype=np.int32)),
             {2: lk.constant(np.arange(0, 20, 2, dtype=np.int32))}, [1, "a"])
    assert capsys.readouterr().err == (
        "tensors: [0 1 2 ... 7 8 9] {2: [0 2 4 ... 14 16 18]} [1, 'a']\n")
    a = lk.constant(np.arange(2, dtype=np.int32))
    lk.print(a, a * 2, sep=",", end="!", output_stream=sys.stdout)
    assert capsys.readouterr().out == "[0 1],[0 2]!"
    lk.print((lk.constant(np.int32(3)),), output_stream=sys.stdout)
    assert capsys.readouterr().out == "(3,)\n"


def test_print_to_a_file_and_a_logging_function(tmp_path, caplog):
    path = tmp_path / "log.txt"
    lk.print("a", lk.constant([1.5]), output_stream=f"file://{path}")
    lk.print("b", output_stream=f"file://{path}")
    assert path.read_text() == "a [1.5]\nb\n"
    with caplog.at_level(logging.INFO):
        lk.print("value", lk.constant([2.0]), output_stream=logging.info)
    assert [r.getMessage() for r in caplog.records] == ["value [2]"]


@pytest.mark.parametrize("stream", ["stdout", 42])
def test_print_rejects_an_unknown_output_stream(stream):
    with pytest.raises(ValueError, match="lk.print: output_stream"):
        lk.print("x", output_stream=stream)


# ---- lk.print inside lk.function ------------------------------------------------------------
def test_print_in_a_traced_function_prints_on_every_call(capsys):
    v = lk.Variable([1.0, 2.0], name="v")

    @lk.function
    def f(x):
        y = x * 2.0
        lk.print("y =", y, "v =", v, output_stream=sys.stdout)
        return y + 1.0

    outs = []
    for k in range(4):
        outs.append(_strict(f, lk.constant([float(k)])).numpy())
        v.assign_add([1.0, 1.0])
    lines = capsys.readouterr().out.splitlines()
    # one line per call (none extra for the trace), with that call's values (v live)
    assert lines == [f"y = [{2 * k}] v = [{1 + k} {2 + k}]" for k in range(4)]
    assert f.trace_count == 1
    assert f.get_concrete_function(lk.constant([0.0])).mode == "graph"
    np.testing.assert_allclose(np.concatenate(outs), [1.0, 3.0, 5.0, 7.0])


def test_print_is_not_merged_or_dropped_by_graph_passes(capsys):
    @lk.function
    def f(x):
        lk.print(x, output_stream=sys.stdout)
        lk.print(x, output_stream=sys.stdout)   # the same print twice: two nodes
        return x

    _strict(f, lk.constant([1.0]))
    _strict(f, lk.constant([2.0]))
    assert capsys.readouterr().out.splitlines() == ["[1]", "[1]", "[2]", "[2]"]


# ---- lk.py_function ---------------------------------------------------------------------------
def test_py_function_runs_the_callback_on_every_graph_call():
    calls = []

    def cb(a, b):
        calls.append(type(a))
        return lk.sin(a) * b, a + 1.0

    @lk.function
    def f(x, y):
        s, t = lk.py_function(cb, [x, y], ["float32", "float32"])
        return s * 2.0 + t

    rng = np.random.default_rng(0)
    for k in range(3):
        x = rng.standard_normal(3).astype(np.float32)
        y = rng.standard_normal(3).astype(np.float32)
        out = _strict(f, lk.constant(x), lk.constant(y))
        np.testing.assert_allclose(out.numpy(), np.sin(x) * y * 2 + x + 1, rtol=1e-5)
        assert len(calls) == k + 1
    assert all(c is lk.Tensor for c in calls)   # the callback gets eager Tensors
    assert f.get_concrete_function(lk.constant(x), lk.constant(y)).mode == "graph"


def test_py_function_gradient_inside_a_traced_function():
    calls = []

    def cube(a):
        calls.append(1)
        return a * a * a

    @lk.function
    def grad(x):
        with lk.GradientTape() as tape:
            tape.watch(x)
            y = lk.py_function(cube, [x], "float32")
            loss = lk.reduce_sum(y * lk.constant([1.0, 2.0, 3.0]))
        return tape.gradient(loss, x)

    for x in ([1.0, 2.0, -1.0], [0.5, -3.0, 2.0]):
        g = _strict(grad, lk.constant(x))
        np.testing.assert_allclose(g.numpy(), 3 * np.square(x) * [1.0, 2.0, 3.0], rtol=1e-6)
    assert len(calls) == 4   # per call: the forward and the gradient's rerun
    assert grad.get_concrete_function(lk.constant([1.0, 2.0, 3.0])).mode == "graph"


def test_py_function_gradient_matches_finite_differences():
    def body(a, b):
        return lk.sin(a) * b + lk.exp(b)

    def eager(x, y):
        return lk.py_function(body, [x, y], "float64")

    traced = lk.function(eager)
    x = np.array([0.3, -1.2, 2.0])
    y = np.array([1.5, 0.2, -0.7])
    check_grads(eager, [x, y], order=1)
    check_grads(traced, [x, y], order=1)


def test_py_function_gives_no_gradient_to_integer_inputs_and_checks_results():
    @lk.function
    def f(x, n):
        with lk.GradientTape() as tape:
            tape.watch(x)
            y = lk.py_function(lambda a, k: a * lk.cast(k, "float32"), [x, n], "float32")
        return tape.gradient(y, x)

    n = lk.constant(np.int32(3))
    np.testing.assert_allclose(_strict(f, lk.constant([1.0, 2.0]), n).numpy(), [3.0, 3.0])
    with pytest.raises(ValueError, match=r"py_function 'pair': the function returned 1 "
                                         r"value, expected 2"):
        lk.py_function(lambda a: a, [lk.constant(1.0)], ["float32", "float32"], name="pair")
    with pytest.raises(ValueError, match="value 0 .* dtype float64, expected float32"):
        lk.py_function(lambda a: lk.cast(a, "float64"), [lk.constant(1.0)], "float32")
    assert lk.py_function(lambda a: None, [lk.constant(1.0)], []) == []
    out = lk.py_function(lambda a: 2, [lk.constant(1.0)], "float32")   # Python values cast
    assert out.dtype == np.float32 and float(out) == 2.0
    v = lk.Variable([1.0, 2.0])
    f = lk.function(lambda x: lk.py_function(lambda a: v, [x], "float32"))
    for call in (lambda: lk.py_function(lambda a: v, [n], "float32"), lambda: f(n)):
        got = call()
        assert type(got) is lk.Tensor   # a snapshot of the variable, not the variable
        v.assign_add([1.0, 1.0])
        np.testing.assert_array_equal(got.numpy(), v.numpy() - 1.0)


# ---- lk.numpy_function --------------------------------------------------------------------------
def test_numpy_function_receives_numpy_arrays_on_every_call():
    seen = []

    def cb(a, b):
        seen.append((type(a), type(b), a.flags.writeable))
        return np.sort(a) + b, np.int32(a.size)

    @lk.function
    def f(x, y):
        s, n = lk.numpy_function(cb, [x, y], ["float32", "int32"])
        return s * 2.0, n

    for x in ([3.0, 1.0, 2.0], [0.0, -1.0, 5.0]):
        s, n = _strict(f, lk.constant(x), lk.constant(np.float32(1.0)))
        np.testing.assert_allclose(s.numpy(), (np.sort(x) + 1.0) * 2.0)
        assert int(n) == 3 and n.dtype == np.int32
    assert seen == [(np.ndarray, np.ndarray, False)] * 2
    assert f.get_concrete_function(lk.constant([1.0, 2.0, 3.0]),
                                   lk.constant(np.float32(1.0))).mode == "graph"


def test_numpy_function_is_strict_about_dtypes_and_has_no_gradient():
    x = lk.constant([1.0, 2.0])
    with pytest.raises(ValueError, match=r"numpy_function 'widen': value 0 .* float64, "
                                         r"expected float32"):
        lk.numpy_function(lambda a: a.astype(np.float64), [x], "float32", name="widen")
    with lk.GradientTape() as tape:
        tape.watch(x)
        y = lk.numpy_function(lambda a: a * 2, [x], "float32")
    assert tape.gradient(y, x) is None
    np.testing.assert_array_equal(y.numpy(), [2.0, 4.0])
    v = lk.Variable([1.0, 2.0])
    same = lk.numpy_function(lambda a: a, [v], "float32")   # a view of v is copied
    v.assign([5.0, 6.0])
    np.testing.assert_array_equal(same.numpy(), [1.0, 2.0])


# ---- python_call: the mechanism itself -------------------------------------------------------
def test_python_call_declared_updates_make_later_reads_see_the_change():
    v = lk.Variable([1.0], name="counter")

    def bump():
        v.assign_add([1.0])   # plain Python: runs when the node runs (returns None)

    @lk.function
    def f(x):
        before = v * 1.0
        python_call(bump, name="bump", updates=[v])
        return before, v * 1.0 + x

    for k in range(3):
        before, after = _strict(f, lk.constant([0.0]))
        assert float(before[0]) == 1.0 + k and float(after[0]) == 2.0 + k
    assert float(v[0]) == 4.0
    assert "  python_call(call=<bump>)\n" in str(f.get_concrete_function(lk.constant([0.0])).graph)
    with pytest.raises(TypeError, match=r"python_call 'bad': .* None or a list/tuple of "
                                        r"arrays, received Variable"):
        python_call(lambda: v, name="bad")


def test_python_call_outputs_and_its_gradient():
    def fwd(a):
        return (np.cos(a),)

    def grad(gs, ins, outs, needs):
        return (gs[0] * -lk.sin(ins[0]),)

    def f(x):
        return python_call(fwd, [x], name="cos", grad=grad)[0]

    x = np.array([0.2, 1.0, -2.0])
    np.testing.assert_allclose(f(lk.constant(x)).numpy(), np.cos(x))
    check_grads(f, [x], order=1)
    check_grads(lk.function(f), [x], order=1)


def test_get_concrete_function_runs_no_python_side_effects(capsys):
    w = lk.Variable([1.0, -2.0], name="w")
    opt = lk.optimizers.Adam(0.1)
    mean = lk.metrics.Mean()

    @lk.function
    def step(x):
        with lk.GradientTape() as tape:
            loss = lk.reduce_sum(lk.square(w * x))
        opt.apply_gradients([(tape.gradient(loss, w), w)])
        mean.update_state(loss)
        lk.print("loss", loss, output_stream=sys.stdout)
        return loss

    x = lk.constant([1.0, 1.0])
    cf = step.get_concrete_function(lk.TensorSpec([2], "float32"))
    assert capsys.readouterr().out == ""
    np.testing.assert_array_equal(w.numpy(), [1.0, -2.0])
    assert int(opt.iterations) == 0 and float(mean.result()) == 0.0
    cf(x)   # the graph's first run does all of it, once
    assert capsys.readouterr().out == "loss 5\n"
    assert int(opt.iterations) == 1 and float(mean.result()) == 5.0
    # Adam's first step moves each weight by the learning rate against its gradient's sign
    np.testing.assert_allclose(w.numpy(), [0.9, -1.9], rtol=1e-5)
