import numpy as np
import pytest

import layerkit as lk


def test_watch_constant_and_gradient():
    x = lk.constant(3.0)
    with lk.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    g = tape.gradient(y, x)
    assert g.dtype == np.float32
    assert float(g) == 6.0


def test_trainable_variables_are_watched_automatically():
    v = lk.Variable(2.0)
    frozen = lk.Variable(5.0, trainable=False)
    with lk.GradientTape() as tape:
        y = v * v * frozen
    assert tape.watched_variables() == (v,)
    gv, gf = tape.gradient(y, [v, frozen])
    assert float(gv) == 20.0
    assert gf is None


def test_watch_accessed_variables_false():
    v = lk.Variable(2.0)
    with lk.GradientTape(watch_accessed_variables=False) as tape:
        y = v * v
    assert tape.gradient(y, v) is None


def test_non_persistent_tape_second_call_raises():
    x = lk.constant(1.0)
    with lk.GradientTape() as tape:
        tape.watch(x)
        y = x * 2.0
    tape.gradient(y, x)
    with pytest.raises(RuntimeError, match="non-persistent"):
        tape.gradient(y, x)


def test_persistent_tape_answers_repeatedly():
    x = lk.constant(2.0)
    with lk.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * x
        z = y * y
    assert float(tape.gradient(y, x)) == 4.0
    assert float(tape.gradient(z, x)) == 32.0  # 4x^3


def test_non_scalar_target_is_summed_and_broadcast_undone():
    x = lk.constant(np.arange(6, dtype=np.float32).reshape(2, 3))
    b = lk.constant(np.ones((1, 3), np.float32))
    with lk.GradientTape() as tape:
        tape.watch([x, b])
        y = x * b + b
    gx, gb = tape.gradient(y, [x, b])
    np.testing.assert_allclose(gx.numpy(), np.ones((2, 3)))
    np.testing.assert_allclose(gb.numpy(), np.asarray(x).sum(0, keepdims=True) + 2)


def test_unconnected_gradients():
    x = lk.constant(1.0)
    z = lk.constant(2.0)
    with lk.GradientTape(persistent=True) as tape:
        tape.watch([x, z])
        y = x * 3.0
    assert tape.gradient(y, z) is None
    assert float(tape.gradient(y, z, unconnected_gradients="zero")) == 0.0
    with pytest.raises(ValueError, match="unconnected_gradients"):
        tape.gradient(y, z, unconnected_gradients="zeros")


def test_output_gradients():
    x = lk.constant([1.0, 2.0])
    with lk.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    g = tape.gradient(y, x, output_gradients=lk.constant([10.0, 100.0]))
    np.testing.assert_allclose(g.numpy(), [20.0, 400.0])


def test_output_gradients_shape_mismatch():
    x = lk.constant([1.0, 2.0])
    with lk.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    with pytest.raises(ValueError, match="does not match"):
        tape.gradient(y, x, output_gradients=lk.constant([1.0]))


def test_nested_source_structures():
    a, b, c = lk.constant(1.0), lk.constant(2.0), lk.constant(3.0)
    with lk.GradientTape() as tape:
        tape.watch([a, b, c])
        y = a * b * c
    g = tape.gradient(y, {"a": a, "rest": (b, [c])})
    assert set(g) == {"a", "rest"}
    assert float(g["a"]) == 6.0
    assert isinstance(g["rest"], tuple) and isinstance(g["rest"][1], list)
    assert float(g["rest"][0]) == 3.0 and float(g["rest"][1][0]) == 2.0


def test_a_source_that_is_a_target_gets_its_seed():
    # TensorFlow: d(v)/d(v) is 1 even if no op read v in the block.
    v0 = lk.Variable(3.0)
    x = lk.constant([1.0, 2.0])
    with lk.GradientTape(persistent=True) as tape:
        tape.watch(x)
        r = v0
        y = x * 3.0
    assert float(tape.gradient(r, v0)) == 1.0
    np.testing.assert_array_equal(tape.gradient(x, x).numpy(), [1.0, 1.0])
    g = tape.gradient({"a": [r, y], "b": x, "c": r}, {"v": v0, "x": (x,)})
    assert float(g["v"]) == 2.0                                  # r appears twice
    np.testing.assert_array_equal(g["x"][0].numpy(), [4.0, 4.0])  # 1 + 3
    seed = lk.constant([5.0, 7.0])
    np.testing.assert_array_equal(
        tape.gradient(x, x, output_gradients=seed).numpy(), [5.0, 7.0])
    assert float(tape.gradient([r, r * 2.0], [v0])[0]) == 1.0    # r * 2.0: not recorded
    k = lk.Variable(2, dtype="int64")
    assert tape.gradient(k, k) is None                           # integers: no gradient


def test_integer_sources_get_none():
    i = lk.constant(3)
    with lk.GradientTape() as tape:
        tape.watch(i)
        y = i * 2
    assert tape.gradient(y, i) is None


def test_stop_recording():
    x = lk.constant(2.0)
    with lk.GradientTape() as tape:
        tape.watch(x)
        y = x * x
        with tape.stop_recording():
            z = x * x
    assert float(tape.gradient(y, x)) == 4.0
    assert z.numpy() == 4.0


def test_stop_recording_outside_block_raises():
    tape = lk.GradientTape()
    with pytest.raises(ValueError):
        with tape.stop_recording():
            pass


def test_reset():
    x = lk.constant(2.0)
    with lk.GradientTape() as tape:
        tape.watch(x)
        y = x * x
        tape.reset()
        tape.watch(x)
        y = x * 3.0
    assert float(tape.gradient(y, x)) == 3.0


def test_jacobian_matches_numpy():
    xv = np.array([1.0, 2.0, 3.0])
    W = np.arange(6.0).reshape(2, 3)
    x = lk.constant(xv)
    with lk.GradientTape() as tape:
        tape.watch(x)
        y = lk.tanh(lk.matmul(lk.constant(W), lk.reshape(x, (3, 1))))
    J = tape.jacobian(y, x)
    assert J.shape == (2, 1, 3)
    pre = W @ xv
    expected = (1 - np.tanh(pre) ** 2)[:, None] * W
    np.testing.assert_allclose(J.numpy().reshape(2, 3), expected, rtol=1e-10)


def test_jacobian_unconnected():
    x = lk.constant([1.0, 2.0])
    z = lk.constant([1.0])
    with lk.GradientTape(persistent=True) as tape:
        tape.watch([x, z])
        y = x * 2.0
    assert tape.jacobian(y, z) is None
    assert tape.jacobian(y, z, unconnected_gradients="zero").shape == (2, 1)


def test_batch_jacobian():
    xv = np.random.default_rng(0).standard_normal((4, 3))
    x = lk.constant(xv)
    with lk.GradientTape() as tape:
        tape.watch(x)
        y = x * x  # (4, 3): example b depends only on x[b]
    J = tape.batch_jacobian(y, x)
    assert J.shape == (4, 3, 3)
    for b in range(4):
        np.testing.assert_allclose(J.numpy()[b], np.diag(2 * xv[b]))


def test_watch_rejects_non_tensors():
    with lk.GradientTape() as tape:
        with pytest.raises(TypeError, match="expects Tensors"):
            tape.watch(3.0)


def test_gradient_of_variable_used_twice_accumulates():
    v = lk.Variable([1.0, 2.0])
    with lk.GradientTape() as tape:
        y = lk.reduce_sum(v * 3.0) + lk.reduce_sum(v * v)
    np.testing.assert_allclose(tape.gradient(y, v).numpy(), [5.0, 7.0])


def test_deep_chain_is_iterative():
    x = lk.constant(1.0)
    with lk.GradientTape() as tape:
        tape.watch(x)
        y = x
        for _ in range(5000):
            y = y * 1.0
    assert float(tape.gradient(y, x)) == 1.0


def test_gradients_function_and_params():
    f = lambda x, y: x * x * y  # noqa: E731
    gx, gy = lk.gradients_function(f)(3.0, 2.0)
    assert float(gx) == 12.0 and float(gy) == 9.0
    (only_y,) = lk.gradients_function(f, params=[1])(3.0, 2.0)
    assert float(only_y) == 9.0
    value, grads = lk.value_and_gradients_function(f)(3.0, 2.0)
    assert float(value) == 18.0 and len(grads) == 2
    with pytest.raises(ValueError, match="out of range"):
        lk.gradients_function(f, params=[5])(1.0, 1.0)


def test_tape_ignores_ops_of_other_threads():
    import threading

    x = lk.constant(2.0)
    done = []
    with lk.GradientTape() as tape:
        tape.watch(x)
        y = x * 3.0

        def worker():
            done.append(x * x * x)  # runs while the tape is open, in another thread

        t = threading.Thread(target=worker)
        t.start()
        t.join()
    assert len(tape._nodes) == 1
    assert float(tape.gradient(y, x)) == 3.0
    assert float(done[0]) == 8.0


def test_variable_numpy_is_a_snapshot():
    v = lk.Variable([1.0, 2.0])
    before = v.numpy()
    arr = np.asarray(v)
    opt = lk.optimizers.SGD(0.5)
    opt.apply_gradients([(lk.constant([1.0, 1.0]), v)])
    np.testing.assert_array_equal(before, [1.0, 2.0])
    np.testing.assert_array_equal(arr, [1.0, 2.0])
    np.testing.assert_array_equal(v.numpy(), [0.5, 1.5])
