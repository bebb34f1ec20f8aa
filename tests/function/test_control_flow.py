"""lk.cond / case / switch_case / while_loop / TensorArray: eager Python semantics,
gradients through them, and traced predicates inside lk.function."""
import numpy as np
import pytest

import layerkit as lk
from layerkit.autodiff.check import check_grads


def test_cond_runs_only_the_chosen_branch_eagerly():
    ran = []
    x = lk.constant(2.0)
    out = lk.cond(x > 1.0, lambda: ran.append("t") or x * 3.0,
                  lambda: ran.append("f") or x)
    assert float(out) == 6.0 and ran == ["t"]
    with pytest.raises(TypeError, match="false_fn must be callable"):
        lk.cond(True, lambda: 1, None)


def test_cond_on_a_traced_predicate_traces_once_and_selects():
    @lk.function
    def f(x):
        return lk.cond(lk.reduce_sum(x) > 0, lambda: x * 2.0, lambda: x - 10.0)

    for v in ([1.0, 2.0], [-3.0, 1.0], [0.5, 0.5]):
        a = np.float32(v)
        want = a * 2 if a.sum() > 0 else a - 10
        np.testing.assert_allclose(f(lk.constant(a)).numpy(), want)
    assert f.trace_count == 1


def test_gradients_through_cond_eager_and_traced():
    x = np.float64([0.3, -0.7, 1.2])
    check_grads(lambda t: lk.cond(lk.reduce_sum(t) > 0, lambda: t * t, lambda: -t), [x])
    g = lk.function(lambda t: lk.cond(lk.reduce_sum(t) > 0, lambda: t * t, lambda: -t))
    with lk.GradientTape() as tape:
        v = lk.constant(x)
        tape.watch(v)
        y = lk.reduce_sum(g(v))
    np.testing.assert_allclose(tape.gradient(y, v).numpy(), 2 * x)


def test_case_picks_the_first_true_predicate_eager_and_traced():
    def pick(x):
        return lk.case([(x < 0, lambda: lk.constant(-1.0)), (x < 10, lambda: x * 1.0)],
                       default=lambda: lk.constant(99.0))

    assert [float(pick(lk.constant(v))) for v in (-5.0, 4.0, 50.0)] == [-1.0, 4.0, 99.0]
    traced = lk.function(pick)
    assert [float(traced(lk.constant(v))) for v in (-5.0, 4.0, 50.0)] == [-1.0, 4.0, 99.0]
    with pytest.raises(ValueError, match="no predicate is true"):
        lk.case([(False, lambda: 1)])
    with pytest.raises(ValueError, match="exclusive"):
        lk.case([(True, lambda: 1), (True, lambda: 2)], exclusive=True)


def test_switch_case_with_default_and_out_of_range_index():
    fns = {0: lambda: lk.constant(10.0), 2: lambda: lk.constant(30.0)}
    assert float(lk.switch_case(2, fns)) == 30.0
    assert float(lk.switch_case(1, fns, default=lambda: lk.constant(-1.0))) == -1.0
    assert float(lk.switch_case(5, [lambda: lk.constant(1.0), lambda: lk.constant(2.0)])) == 2.0
    traced = lk.function(lambda i: lk.switch_case(i, fns, default=lambda: lk.constant(-1.0)))
    assert [float(traced(lk.constant(i))) for i in (0, 1, 2, 7)] == [10.0, -1.0, 30.0, -1.0]


def test_while_loop_structure_maximum_iterations_and_gradient():
    i, (a, b) = lk.while_loop(lambda i, ab: i < 5, lambda i, ab: (i + 1, (ab[1], ab[0] + ab[1])),
                              (lk.constant(0), (lk.constant(0), lk.constant(1))))
    assert (int(i), int(a), int(b)) == (5, 5, 8)  # Fibonacci
    (n,) = lk.while_loop(lambda n: n < 100, lambda n: [n * 2], [lk.constant(1)],
                         maximum_iterations=3)
    assert int(n) == 8
    with pytest.raises(ValueError, match="body returned 1 loop variables, expected 2"):
        lk.while_loop(lambda a, b: a < 1, lambda a, b: [a + 1], [0, 0])
    # d/dx of x**4 computed by repeated multiplication
    check_grads(lambda x: lk.while_loop(lambda k, y: k < 3, lambda k, y: (k + 1, y * x),
                                        [0, x])[1], [np.float64([1.5, -0.5])], order=2)


def test_while_loop_on_a_traced_predicate_is_a_graph_loop_and_python_bounds_trace():
    @lk.function
    def counted(x):
        return lk.while_loop(lambda k, y: k < 3, lambda k, y: (k + 1, y + x), [0, x])[1]

    np.testing.assert_allclose(counted(lk.constant([1.0, 2.0])).numpy(), [4.0, 8.0])
    kinds = {n.op.name for n in counted.get_concrete_function(lk.constant([1.0, 2.0]))
             .graph.nodes if n.kind == "op"}
    assert "while" not in kinds   # a Python bound unrolls

    @lk.function
    def data_dependent(x):
        return lk.while_loop(lambda y: lk.reduce_sum(y) < 10.0, lambda y: y * 2.0, [x])

    for v in ([1.0], [3.0], [20.0], [0.25]):
        y = np.float32(v)
        while y.sum() < 10.0:
            y = y * 2
        np.testing.assert_allclose(data_dependent(lk.constant(v))[0].numpy(), y)
    assert data_dependent.trace_count == 1

    @lk.function
    def capped(x, n):
        return lk.while_loop(lambda y: y < 100.0, lambda y: y + 1.0, [x],
                             maximum_iterations=n)

    assert float(capped(lk.constant(1.0), lk.constant(5))[0]) == 6.0
    assert float(capped(lk.constant(98.0), lk.constant(5))[0]) == 100.0
    assert capped.trace_count == 1


def test_while_loop_on_traced_data_gradient_matches_finite_differences():
    f = lk.function(lambda x: lk.while_loop(
        lambda k, y: lk.reduce_sum(lk.abs(y)) < 20.0,
        lambda k, y: (k + 1, y * x + 0.5), [lk.constant(0), x])[1])
    for v in ([1.5, -0.5], [0.9, 2.0]):
        check_grads(f, [np.float64(v)], order=2)


def test_cond_on_traced_data_runs_one_branch_with_its_effects():
    v = lk.Variable(0.0)

    @lk.function
    def f(x):
        return lk.cond(x > 0, lambda: v.assign_add(1.0).read_value() * 0.0 + x,
                       lambda: v.assign_sub(10.0).read_value() * 0.0 - x)

    assert float(f(lk.constant(2.0))) == 2.0 and float(v.numpy()) == 1.0
    assert float(f(lk.constant(-3.0))) == 3.0 and float(v.numpy()) == -9.0
    assert f.trace_count == 1


def test_tensor_array_write_read_stack_and_errors():
    ta = lk.TensorArray(lk.float32, size=2)
    ta = ta.write(0, [1.0, 2.0]).write(1, lk.constant([3, 4]))
    np.testing.assert_array_equal(ta.stack().numpy(), [[1, 2], [3, 4]])
    assert ta.stack().dtype == np.float32 and int(ta.size()) == 2
    np.testing.assert_array_equal(ta.read(1).numpy(), [3, 4])
    with pytest.raises(IndexError, match="dynamic_size=True"):
        ta.write(2, [0.0, 0.0])
    with pytest.raises(ValueError, match="element shape"):
        ta.write(0, [1.0])
    grown = lk.TensorArray("float32", size=0, dynamic_size=True).unstack(np.eye(3))
    np.testing.assert_array_equal(grown.gather([2, 0]).numpy(), np.eye(3)[[2, 0]])
    np.testing.assert_array_equal(grown.concat().numpy(), np.eye(3).ravel())
    sparse = lk.TensorArray(lk.float32, size=3, element_shape=(2,)).write(1, [5.0, 6.0])
    np.testing.assert_array_equal(sparse.stack().numpy(), [[0, 0], [5, 6], [0, 0]])


def test_tensor_array_in_a_traced_loop_and_under_a_tape():
    @lk.function
    def cumulative(x):
        ta = lk.TensorArray(lk.float32, size=0, dynamic_size=True)
        total = lk.constant(0.0)
        for i in range(3):
            total = total + x[i]
            ta = ta.write(i, total)
        return ta.stack()

    np.testing.assert_allclose(cumulative(lk.constant([1.0, 2.0, 3.0])).numpy(), [1, 3, 6])
    x = lk.Variable([1.0, 2.0])
    with lk.GradientTape() as tape:
        ta = lk.TensorArray(lk.float32, size=2)
        ta = ta.write(0, x * x).write(1, x * 3.0)
        y = lk.reduce_sum(ta.stack())
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), [2 * 1 + 3, 2 * 2 + 3])


def test_case_and_switch_case_on_traced_values_run_only_the_taken_branch():
    v = lk.Variable(0.0)

    def bump(k):
        return lambda: v.assign_add(float(k)).read_value() * 0.0 + float(k)

    @lk.function
    def pick(i):
        return lk.switch_case(i, [bump(1), bump(10), bump(100)])

    @lk.function
    def first(x):
        return lk.case([(x < 0.0, bump(1)), (x < 5.0, bump(10))], default=bump(100))

    assert float(pick(lk.constant(1))) == 10.0 and float(v.numpy()) == 10.0
    assert float(pick(lk.constant(7))) == 100.0 and float(v.numpy()) == 110.0  # last
    assert float(first(lk.constant(-1.0))) == 1.0 and float(v.numpy()) == 111.0
    assert float(first(lk.constant(3.0))) == 10.0 and float(v.numpy()) == 121.0
    assert float(first(lk.constant(9.0))) == 100.0 and float(v.numpy()) == 221.0
    assert pick.trace_count == 1 and first.trace_count == 1
