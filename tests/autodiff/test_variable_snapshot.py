"""A Variable changed inside a tape's block: ops recorded before the change keep the
value they read (TensorFlow's semantics), and gradients still reach the variable."""
import numpy as np

import layerkit as lk


def test_assign_after_a_read_keeps_the_value_read():
    v = lk.Variable([1.0, 2.0])
    with lk.GradientTape() as tape:
        y = v * v
        v.assign([5.0, 5.0])
    np.testing.assert_array_equal(tape.gradient(y, v).numpy(), [2.0, 4.0])
    np.testing.assert_array_equal(v.numpy(), [5.0, 5.0])


def test_reads_before_and_after_an_assign_each_see_their_own_value():
    v = lk.Variable([1.0, 2.0])
    x = lk.constant([3.0, 4.0])
    with lk.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = lk.reduce_sum(x * v)              # v = [1, 2]
        v.assign_add([10.0, 10.0])
        z = lk.reduce_sum(x * v * v)          # v = [11, 12]
        v.assign_sub([1.0, 1.0])
        w = lk.reduce_sum(v * 2.0)            # v = [10, 11]
    gx, gv = tape.gradient(y, [x, v])
    np.testing.assert_array_equal(gx.numpy(), [1.0, 2.0])
    np.testing.assert_array_equal(gv.numpy(), [3.0, 4.0])
    gx, gv = tape.gradient(z, [x, v])
    np.testing.assert_array_equal(gx.numpy(), [121.0, 144.0])
    np.testing.assert_array_equal(gv.numpy(), [66.0, 96.0])
    np.testing.assert_array_equal(tape.gradient(w, v).numpy(), [2.0, 2.0])
    gx, gv = tape.gradient([y, z, w], [x, v])
    np.testing.assert_array_equal(gx.numpy(), [122.0, 146.0])
    np.testing.assert_array_equal(gv.numpy(), [71.0, 102.0])


def test_an_unwatched_variable_keeps_its_value_for_other_gradients():
    v = lk.Variable([2.0, 3.0], trainable=False)
    x = lk.constant([1.0, 1.0])
    with lk.GradientTape() as tape:
        tape.watch(x)
        y = lk.reduce_sum(x * v)
        v.assign([7.0, 7.0])
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), [2.0, 3.0])


def test_second_order_through_a_snapshot():
    v = lk.Variable(3.0)
    with lk.GradientTape() as outer:
        with lk.GradientTape() as inner:
            y = v * v * v
            v.assign(10.0)
        g = inner.gradient(y, v)                # 3 v^2 at v = 3
    np.testing.assert_allclose(float(g), 27.0)
    np.testing.assert_allclose(float(outer.gradient(g, v)), 18.0)  # 6 v at v = 3


def test_inside_a_traced_function_each_call_sees_the_value_before_its_assign():
    v = lk.Variable([1.0, 2.0])
    x = lk.constant([3.0, 4.0])

    @lk.function
    def f(x):
        with lk.GradientTape() as tape:
            tape.watch(x)
            y = lk.reduce_sum(x * v)
            v.assign_add([1.0, 1.0])
        return tape.gradient(y, x)

    for k in range(3):
        np.testing.assert_array_equal(f(x).numpy(), [1.0 + k, 2.0 + k])
    np.testing.assert_array_equal(v.numpy(), [4.0, 5.0])


def test_an_optimizer_step_inside_the_tape_keeps_the_values_read():
    # Optimizers update variables in place; the product rule of w * w needs w's value.
    w = lk.Variable([[1.0, 2.0], [3.0, 4.0]])
    opt = lk.optimizers.SGD(0.25)
    with lk.GradientTape(persistent=True) as tape:
        y = lk.reduce_sum(w * w)
        g = tape.gradient(y, w)
        opt.apply_gradients([(g, w)])
        g_after = tape.gradient(y, w)
    np.testing.assert_array_equal(g.numpy(), [[2.0, 4.0], [6.0, 8.0]])
    np.testing.assert_array_equal(g_after.numpy(), g.numpy())
    np.testing.assert_array_equal(w.numpy(), [[0.5, 1.0], [1.5, 2.0]])
