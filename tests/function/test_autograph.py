"""AutoGraph: Python if/while/for on tensors inside lk.function become graph control
flow (cond / while nodes holding sub-graphs) that follow each call's data."""
import io
import sys

import numpy as np
import pytest

import layerkit as lk
from layerkit.autodiff.check import check_grads
from layerkit.autodiff.function.trace import TracingError


def _np_collatz(n: int) -> int:
    steps = 0
    while n > 1:
        n = n // 2 if n % 2 == 0 else 3 * n + 1
        steps += 1
    return steps


def test_if_on_a_tensor_takes_the_branch_of_each_call_with_one_trace():
    @lk.function
    def relu_or_square(x):
        if lk.reduce_sum(x) > 0:
            y = x * x
        else:
            y = -x
        return y

    for v in ([1.0, 2.0], [-3.0, 1.0], [0.5, 0.25], [-1.0, -1.0]):
        a = np.float32(v)
        want = a * a if a.sum() > 0 else -a
        np.testing.assert_allclose(relu_or_square(lk.constant(a)).numpy(), want)
    assert relu_or_square.trace_count == 1
    kinds = [n.op.name for n in relu_or_square.get_concrete_function(
        lk.constant([1.0, 2.0])).graph.nodes if n.kind == "op"]
    assert "cond" in kinds


def test_if_runs_only_the_taken_branch_of_a_side_effect():
    v = lk.Variable(0.0)

    @lk.function
    def bump(x):
        if x > 0:
            v.assign_add(x)
        else:
            v.assign_sub(1.0)
        return v.read_value()

    assert float(bump(lk.constant(2.0))) == 2.0      # the tracing call: one branch ran
    assert float(bump(lk.constant(-5.0))) == 1.0
    assert float(bump(lk.constant(3.0))) == 4.0
    assert bump.trace_count == 1


def test_data_dependent_while_counts_collatz_steps():
    @lk.function
    def collatz(n):
        steps = 0
        while n > 1:
            if n % 2 == 0:
                n = n // 2
            else:
                n = 3 * n + 1
            steps += 1
        return steps

    for v in (1, 6, 7, 27, 97):
        assert int(collatz(lk.constant(v))) == _np_collatz(v)
    assert collatz.trace_count == 1


def test_fizzbuzz_over_lk_range_with_a_traced_bound():
    out = io.StringIO()

    @lk.function
    def fizzbuzz(n):
        count = 0
        for i in lk.range(1, n + 1):
            if i % 15 == 0:
                lk.print("FizzBuzz", output_stream=out)
            elif i % 3 == 0:
                lk.print("Fizz", output_stream=out)
                count += 1
            elif i % 5 == 0:
                lk.print("Buzz", output_stream=out)
            else:
                lk.print(i, output_stream=out)
        return count

    assert int(fizzbuzz(lk.constant(15))) == 4
    want = ["FizzBuzz" if i % 15 == 0 else "Fizz" if i % 3 == 0 else "Buzz" if i % 5 == 0
            else str(i) for i in range(1, 16)]
    assert out.getvalue().split() == want
    out.truncate(0)
    out.seek(0)
    assert int(fizzbuzz(lk.constant(7))) == 2
    assert out.getvalue().split() == want[:7]
    assert fizzbuzz.trace_count == 1
    out.truncate(0)
    out.seek(0)
    fizzbuzz.get_concrete_function(lk.constant(4.0))   # a dry run prints nothing
    assert out.getvalue() == ""


def test_break_continue_and_range_of_a_traced_bound():
    @lk.function
    def f(x, n):
        s = 0.0
        for i in range(n):
            if i > 5:
                break
            if i % 2 == 0:
                continue
            s += x
        return s

    def want(x, n):
        return x * len([i for i in range(min(n, 6)) if i % 2 == 1])

    for n in (0, 1, 4, 6, 20):
        np.testing.assert_allclose(float(f(lk.constant(1.5), lk.constant(n))), want(1.5, n))
    assert f.trace_count == 1


def test_early_return_inside_a_loop_over_a_tensor():
    @lk.function
    def first_above(x, limit):
        for v in x:
            if v > limit:
                return v
        return -1.0

    x = lk.constant([1.0, 7.0, 9.0])
    assert float(first_above(x, lk.constant(5.0))) == 7.0
    assert float(first_above(x, lk.constant(8.0))) == 9.0
    assert float(first_above(x, lk.constant(10.0))) == -1.0
    assert first_above.trace_count == 1


def test_while_with_an_else_and_return_in_an_if():
    @lk.function
    def sign(x):
        if x > 0:
            return 1.0
        elif x < 0:
            return -1.0
        return 0.0

    assert [float(sign(lk.constant(v))) for v in (3.0, -2.0, 0.0)] == [1.0, -1.0, 0.0]
    assert sign.trace_count == 1


def test_python_conditions_keep_python_semantics():
    calls = []

    @lk.function
    def f(x, training):
        if training:           # a Python bool: decided while tracing, no graph node
            calls.append("t")
            x = x * 2.0
        for _ in range(3):     # a Python range: unrolled
            x = x + 1.0
        return x

    assert float(f(lk.constant(1.0), True)) == 5.0
    assert float(f(lk.constant(1.0), False)) == 4.0
    kinds = {n.op.name for n in f.get_concrete_function(lk.constant(1.0), True).graph.nodes
             if n.kind == "op"}
    assert "cond" not in kinds and "while" not in kinds
    assert calls == ["t"]


def test_tensor_array_accumulates_in_a_loop():
    @lk.function
    def running(x):
        ta = lk.TensorArray(lk.float32, size=x.shape[0])
        total = lk.constant(0.0)
        for i in lk.range(x.shape[0]):
            total += x[i]
            ta = ta.write(i, total)
        return ta.stack()

    a = np.float32([1.0, 2.0, 3.0, 4.0])
    np.testing.assert_allclose(running(lk.constant(a)).numpy(), np.cumsum(a))
    np.testing.assert_allclose(running(lk.constant(a[::-1].copy())).numpy(),
                               np.cumsum(a[::-1]))


def test_gradient_through_a_converted_while_matches_finite_differences():
    @lk.function
    def power(x, n):
        y = lk.ones_like(x)
        i = 0
        while i < n:
            y = y * x
            i += 1
        return y

    x = np.float64([0.5, -1.25, 2.0])
    for n in (0, 1, 3):
        check_grads(lambda t, n=n: power(t, lk.constant(n)), [x], order=2)
    with lk.GradientTape() as tape:   # the outside tape sees one graph node
        t = lk.constant(x)
        tape.watch(t)
        y = lk.reduce_sum(power(t, lk.constant(4)))
    np.testing.assert_allclose(tape.gradient(y, t).numpy(), 4 * x ** 3)
    assert power.trace_count == 1


def test_gradient_inside_the_function_through_a_loop_and_a_variable():
    w = lk.Variable(np.float64([0.5, 2.0]))

    @lk.function
    def grad_of(x, n):
        with lk.GradientTape() as tape:
            y = x
            for _ in lk.range(n):
                y = lk.tanh(y * w)
            loss = lk.reduce_sum(y)
        return tape.gradient(loss, w)

    def numpy_loss(wv, xv, n):
        y = xv
        for _ in range(n):
            y = np.tanh(y * wv)
        return y.sum()

    x = np.float64([0.3, -0.4])
    for n in (1, 3):
        got = grad_of(lk.constant(x), lk.constant(n)).numpy()
        eps = 1e-6
        want = [(numpy_loss(w.numpy() + eps * e, x, n) - numpy_loss(w.numpy() - eps * e, x, n))
                / (2 * eps) for e in np.eye(2)]
        np.testing.assert_allclose(got, want, rtol=1e-6)
    assert grad_of.trace_count == 1


def test_training_loop_over_a_dataset_inside_the_function():
    xs = np.float32([[0.0], [1.0], [2.0], [3.0], [4.0], [5.0]])
    ys = 3.0 * xs + 1.0
    ds = lk.data.Dataset.from_tensor_slices((xs, ys)).batch(4)   # batches of 4 and 2
    w = lk.Variable([[0.0]])
    b = lk.Variable([0.0])
    opt = lk.optimizers.SGD(0.02)

    @lk.function
    def train_epoch(data):
        total = 0.0
        for x, y in data:
            with lk.GradientTape() as tape:
                loss = lk.reduce_mean((lk.matmul(x, w) + b - y) ** 2)
            grads = tape.gradient(loss, [w, b])
            opt.apply_gradients(zip(grads, [w, b]))
            total += loss
        return total

    # The same steps in NumPy.
    wn, bn = np.zeros((1, 1), np.float32), np.zeros(1, np.float32)
    for _ in range(3):
        tot = 0.0
        for lo in (0, 4):
            x, y = xs[lo:lo + 4], ys[lo:lo + 4]
            err = x @ wn + bn - y
            tot += float((err ** 2).mean())
            gw = 2 * x.T @ err / err.size
            gb = 2 * err.sum(0) / err.size
            wn, bn = wn - 0.02 * gw, bn - 0.02 * gb
        got = float(train_epoch(ds))
        np.testing.assert_allclose(got, tot, rtol=1e-5)
        np.testing.assert_allclose(w.numpy(), wn, rtol=1e-5)
        np.testing.assert_allclose(b.numpy(), bn, rtol=1e-5)
    assert train_epoch.trace_count == 1


def test_nested_user_functions_are_converted():
    def clip_positive(v):
        if v < 0:
            v = lk.zeros_like(v)
        return v

    @lk.function
    def f(x):
        return clip_positive(x) + 1.0

    assert float(f(lk.constant(-3.0))) == 1.0
    assert float(f(lk.constant(2.0))) == 3.0
    assert f.trace_count == 1


def test_variable_defined_in_one_branch_is_a_clear_error_naming_the_line():
    @lk.function
    def f(x):
        if x > 0:
            y = x
        return y

    with pytest.raises(UnboundLocalError, match=r"'y' must also be defined.*test_autograph"):
        f(lk.constant(1.0))


def test_python_values_differing_between_branches_are_an_error():
    @lk.function
    def f(x):
        if x > 0:
            mode = "up"
        else:
            mode = "down"
        return x, mode

    with pytest.raises(ValueError, match="'mode' is a Python value"):
        f(lk.constant(1.0))


def test_errors_inside_converted_code_name_the_users_line():
    @lk.function
    def f(x):
        while x > 0:
            x = x - lk.constant([1.0, 2.0])   # changes the loop variable's shape
        return x

    with pytest.raises(ValueError, match=r"shape.*test_autograph.py:\d+"):
        f(lk.constant(3.0))
    try:
        f(lk.constant(3.0))
    except ValueError:
        tb = sys.exc_info()[2]
        lines = []
        while tb is not None:
            lines.append((tb.tb_frame.f_code.co_filename, tb.tb_lineno))
            tb = tb.tb_next
    src = f.python_function.__code__
    assert any(fn == src.co_filename and src.co_firstlineno < ln <= src.co_firstlineno + 4
               for fn, ln in lines)


def test_autograph_false_keeps_todays_error():
    def f(x):
        if x > 0:
            return x
        return -x

    with pytest.raises(TracingError, match="Python bool"):
        lk.function(f, autograph=False)(lk.constant(1.0))
    assert float(lk.function(f)(lk.constant(-2.0))) == 2.0


def test_lambdas_and_do_not_convert_are_traced_as_written():
    f = lk.function(lambda x: x * 2.0)
    assert float(f(lk.constant(2.0))) == 4.0

    @lk.autograph.experimental.do_not_convert
    def g(x):
        if x > 0:
            return x
        return -x

    with pytest.raises(TracingError):
        lk.function(g)(lk.constant(1.0))


def test_to_code_and_to_graph():
    def f(x):
        while x > 1:
            x = x / 2
        return x

    code = lk.autograph.to_code(f)
    assert "ag__.while_stmt" in code and "def f(x)" in code
    g = lk.autograph.to_graph(f)
    assert float(g(lk.constant(10.0))) == 0.625        # eager: Python semantics
    traced = lk.function(g, autograph=False)
    assert float(traced(lk.constant(10.0))) == 0.625
    assert float(traced(lk.constant(3.0))) == 0.75
    assert traced.trace_count == 1
    with pytest.raises(lk.autograph.ConversionError):
        lk.autograph.to_graph(len)


def test_python_print_runs_while_tracing_only_as_in_tensorflow(capsys):
    @lk.function
    def f(x):
        print("tracing")
        if x > 0:
            x = x + 1.0
        return x

    f(lk.constant(1.0))
    f(lk.constant(-1.0))
    assert capsys.readouterr().out.split() == ["tracing"]


def test_converted_code_runs_eagerly_with_python_semantics():
    def f(x):
        total = 0.0
        for v in x:
            if v > 0 and v < 10:
                total += v
        return total

    g = lk.autograph.to_graph(f)
    x = lk.constant([3.0, -1.0, 20.0, 4.0])
    assert float(g(x)) == float(f(x)) == 7.0
    traced = lk.function(f)
    assert float(traced(x)) == 7.0
    assert float(traced(lk.constant([1.0, 2.0, 3.0, 40.0]))) == 6.0


def test_tensor_array_written_at_a_traced_index_in_a_graph_loop():
    @lk.function
    def squares(n):
        ta = lk.TensorArray(lk.float32, size=5)
        for i in lk.range(n):
            ta = ta.write(i, lk.cast(i * i, lk.float32))
        return ta.stack()

    np.testing.assert_array_equal(squares(lk.constant(3)).numpy(), [0, 1, 4, 0, 0])
    np.testing.assert_array_equal(squares(lk.constant(5)).numpy(), [0, 1, 4, 9, 16])
    assert squares.trace_count == 1

    @lk.function
    def rnn(x, h, steps):
        states = lk.TensorArray(lk.float64, size=x.shape[0])
        i = 0
        while i < steps:
            h = lk.tanh(x[i] + h)
            states = states.write(i, h)
            i += 1
        return lk.reduce_sum(states.stack() ** 2)

    x = np.float64([[0.1, -0.2], [0.3, 0.5], [-0.4, 0.2]])
    for steps in (1, 3):
        check_grads(lambda a, b, s=steps: rnn(a, b, lk.constant(s)),
                    [x, np.float64([0.05, -0.1])], order=1)

    @lk.function
    def grows(x, n):
        ta = lk.TensorArray(x.dtype, size=0, dynamic_size=True)
        for i in lk.range(n):
            if x[i % 3] > 0:
                ta = ta.write(i, x * lk.cast(i, x.dtype))
        return ta.stack()

    x = np.float32([1.0, -2.0, 3.0])
    for n in (1, 4, 6):
        want = np.zeros((0, 3), np.float32)
        for i in range(n):
            if x[i % 3] > 0:
                grown = np.zeros((i + 1, 3), np.float32)
                grown[:len(want)] = want
                grown[i] = x * i
                want = grown
        np.testing.assert_array_equal(grows(lk.constant(x), lk.constant(n)).numpy(), want)
    assert grows.trace_count == 1
    check_grads(lambda a: lk.reduce_sum(grows(a, lk.constant(5)) ** 2),
                [np.float64([0.5, -1.0, 2.0])], order=2)


def test_converted_python_semantics_match_the_original():
    def loops(pairs):
        out = []
        for _i, (a, b) in enumerate(pairs):
            if a > b:
                out.append(a)
            elif a == b:
                continue
            else:
                out.append(b)
                if b > 10:
                    break
        else:
            out.append(-1)
        return out

    def nested_return(d):
        acc = {}
        for k in sorted(d):
            v = d[k]
            while v > 1:
                v //= 2
                if v == 3:
                    return k, v
            acc[k] = v
        return acc

    def closures(x):
        def bump(flag):
            nonlocal x
            if flag:
                x = x + 1
            return x
        bump(True)
        bump(False)
        try:
            y = 1 / x
        except ZeroDivisionError:
            y = None
        return x, y, (x if x else -1)

    class Base:
        def describe(self, x):
            if x > 3:
                return "big " + super().__repr__()[:1]
            return "small"

    for f, args in [(loops, ([(1, 2), (3, 3), (5, 4), (1, 11), (9, 0)],)),
                    (loops, ([(1, 2)],)), (nested_return, ({"a": 12, "b": 7},)),
                    (nested_return, ({"a": 4},)), (closures, (1,)), (closures, (-1,))]:
        assert lk.autograph.to_graph(f)(*args) == f(*args)
    obj = Base()
    conv = lk.autograph.to_graph(obj.describe)
    assert conv(5) == obj.describe(5) and conv(1) == "small"


def test_methods_nested_functions_and_models_in_graph_loops():
    class Scaled(lk.Module):
        def __init__(self):
            self.w = lk.Variable(2.0)

        @lk.function
        def __call__(self, x):
            if x > 0:
                return x * self.w
            return x

    m = Scaled()
    assert float(m(lk.constant(3.0))) == 6.0 and float(m(lk.constant(-3.0))) == -3.0

    @lk.function
    def doubling(x):
        while x < 10.0:
            x = x * 2.0
        return x

    @lk.function
    def outer(x):
        return doubling(x) + 1.0   # inlined, converted

    assert float(outer(lk.constant(3.0))) == 13.0 and float(outer(lk.constant(11.0))) == 12.0

    model = lk.keras.Sequential([lk.keras.layers.Dense(2)])
    model.build((None, 3))

    @lk.function
    def apply_n(x, n):
        for _ in lk.range(n):
            x = lk.tanh(model(x)) @ lk.ones((2, 3))
        return x

    x = np.ones((4, 3), np.float32)
    for n in (0, 2, 3):
        want = x
        for _ in range(n):
            want = np.tanh(want @ model.weights[0].numpy() + model.weights[1].numpy()) @ \
                np.ones((2, 3), np.float32)
        np.testing.assert_allclose(apply_n(lk.constant(x), lk.constant(n)).numpy(), want,
                                   rtol=1e-5)
    assert apply_n.trace_count == 1


def test_statements_with_jumps_the_lowering_cannot_reach_run_as_written():
    def f(x, k):
        match k:
            case 1:
                if x > 0:
                    return x
                return -x
            case _:
                for i in range(3):
                    if i == k:
                        return i
        return 0

    g = lk.autograph.to_graph(f)
    assert [g(2, 1), g(-2, 1), g(1, 2), g(1, 7)] == [f(2, 1), f(-2, 1), f(1, 2), f(1, 7)]
    assert float(lk.function(f)(lk.constant(3.0), 2)) == 2.0
