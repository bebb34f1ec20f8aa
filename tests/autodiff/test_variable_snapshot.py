"""A Variable changed while a tape holds ops that read it, inside the tape's block or
after it and before ``gradient``: the ops keep the value they read (TensorFlow's
semantics), and gradients still reach the variable."""
import gc

import numpy as np
import pytest

import layerkit as lk
from layerkit._core import variable as _variable


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


# ---- a change after the block, before gradient() -------------------------------------------
def _sgd_step(v):
    lk.optimizers.SGD(1.0).apply_gradients([(np.ones(v.shape, np.float32), v)])


_CHANGES = {
    "assign": lambda v: v.assign([5.0]),
    "assign_add": lambda v: v.assign_add([3.0]),
    "assign_sub": lambda v: v.assign_sub([3.0]),
    "optimizer": _sgd_step,
}


@pytest.mark.parametrize("persistent", [False, True], ids=["plain", "persistent"])
@pytest.mark.parametrize("change", list(_CHANGES), ids=list(_CHANGES))
def test_a_change_after_the_block_leaves_the_gradient_at_the_values_read(change, persistent):
    v = lk.Variable([2.0])
    with lk.GradientTape(persistent=persistent) as tape:
        y = v * v * v
    before = v.numpy()
    _CHANGES[change](v)
    assert v.numpy()[0] != before[0]
    np.testing.assert_array_equal(tape.gradient(y, v).numpy(), [12.0])  # 3 v^2 at v = 2
    if persistent:  # and again, after a second change
        _CHANGES[change](v)
        np.testing.assert_array_equal(tape.gradient([y, y], v).numpy(), [24.0])


def test_an_unwatched_variable_changed_after_the_block_keeps_its_value():
    v = lk.Variable([2.0, 3.0], trainable=False)
    x = lk.constant([1.0, 1.0])
    with lk.GradientTape() as tape:
        tape.watch(x)
        y = lk.reduce_sum(x * v * v)
    v.assign([7.0, 7.0])
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), [4.0, 9.0])


_OPTIMIZERS = {
    "sgd": lambda: lk.optimizers.SGD(0.1),
    "sgd_momentum_nesterov": lambda: lk.optimizers.SGD(0.1, momentum=0.9, nesterov=True),
    "adam": lambda: lk.optimizers.Adam(0.1),
    "adam_amsgrad": lambda: lk.optimizers.Adam(0.1, amsgrad=True),
    "adamw": lambda: lk.optimizers.AdamW(0.1, weight_decay=0.5),
    "rmsprop_centered": lambda: lk.optimizers.RMSprop(0.1, momentum=0.5, centered=True),
    "adagrad": lambda: lk.optimizers.Adagrad(0.1),
    "sgd_weight_decay_clipnorm": lambda: lk.optimizers.SGD(0.1, weight_decay=0.1, clipnorm=1.0),
}


@pytest.mark.parametrize("make", list(_OPTIMIZERS.values()), ids=list(_OPTIMIZERS))
def test_every_optimizer_update_leaves_recorded_reads_alone(make, rng):
    # Small variables (updated together through the optimizer's shared buffers), a large
    # one (updated block by block) and a 0-d one.
    shapes = [(3,), (2, 2), (5, 1), (180, 200), ()]
    vs = [lk.Variable(rng.uniform(0.5, 1.5, s).astype(np.float32)) for s in shapes]
    cs = [lk.constant(rng.uniform(0.5, 1.5, s).astype(np.float32)) for s in shapes]
    old = [v.numpy() for v in vs]
    opt = make()
    with lk.GradientTape(persistent=True) as tape:
        loss = sum(lk.reduce_sum(v * v * c) for v, c in zip(vs, cs))
    first = tape.gradient(loss, vs)
    for _ in range(2):
        opt.apply_gradients(zip(first, vs))
    assert all(not np.array_equal(v.numpy(), o) for v, o in zip(vs, old))
    for g, o, c in zip(tape.gradient(loss, vs), old, cs):
        np.testing.assert_allclose(g.numpy(), 2 * o * c.numpy(), rtol=1e-6)


def _gan_step(G, D, opt_d, opt_g, z):
    with lk.GradientTape(persistent=True) as tape:
        d_out = lk.matmul(lk.matmul(z, G), D)
        d_loss = lk.reduce_sum(d_out * d_out)
        g_loss = -lk.reduce_sum(d_out)
    opt_d.apply_gradients([(tape.gradient(d_loss, D), D)])   # update D first
    g_grad = tape.gradient(g_loss, G)                         # then G's, from the same tape
    opt_g.apply_gradients([(g_grad, G)])
    return g_grad


def _gan_reference(g, d, z, steps):
    grads = []
    for _ in range(steps):
        d_out = z @ g @ d
        gd = (z @ g).T @ (2 * d_out)
        gg = z.T @ (-np.ones_like(d_out)) @ d.T     # at D's value before its update
        d, g = d - 0.1 * gd, g - 0.1 * gg
        grads.append(gg)
    return grads


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "lk.function"])
def test_gan_update_d_then_take_g_gradient_from_the_same_persistent_tape(compiled, rng):
    g0 = rng.standard_normal((2, 3)).astype(np.float32)
    d0 = rng.standard_normal((3, 1)).astype(np.float32)
    z = rng.standard_normal((4, 2)).astype(np.float32)
    G, D = lk.Variable(g0), lk.Variable(d0)
    opt_d, opt_g = lk.optimizers.SGD(0.1), lk.optimizers.SGD(0.1)
    step = lk.function(_gan_step) if compiled else _gan_step
    got = [step(G, D, opt_d, opt_g, lk.constant(z)).numpy() for _ in range(3)]
    for g, want in zip(got, _gan_reference(g0, d0, z, 3)):
        np.testing.assert_allclose(g, want, rtol=1e-5, atol=1e-6)


def test_higher_order_after_a_change():
    v = lk.Variable(3.0)
    with lk.GradientTape(persistent=True) as outer:
        with lk.GradientTape() as inner:
            y = v * v * v
        v.assign(10.0)                          # inside outer's block, after inner's
        g = inner.gradient(y, v)                # 3 v^2 at v = 3
    _sgd_step(v)                                # after both blocks
    np.testing.assert_allclose(float(g), 27.0)
    np.testing.assert_allclose(float(outer.gradient(g, v)), 18.0)   # 6 v at v = 3
    np.testing.assert_allclose(float(outer.gradient(y, v)), 27.0)


def test_a_function_called_under_a_tape_keeps_the_values_it_read(rng):
    w0 = rng.standard_normal((3, 2)).astype(np.float32)
    x = lk.constant(rng.standard_normal((4, 3)).astype(np.float32))
    W = lk.Variable(w0)

    @lk.function
    def f(x):
        flat = lk.reshape(W, [-1])              # a view of W's array, kept for backward
        return lk.reduce_sum(lk.square(lk.matmul(x, W))) + lk.reduce_sum(flat * flat * flat)

    want = 2 * x.numpy().T @ (x.numpy() @ w0) + 3 * w0 * w0
    for _ in range(3):                          # the tracing call, then the graph node
        W.assign(w0)
        with lk.GradientTape(persistent=True) as tape:
            y = f(x)
        _sgd_step(W)
        np.testing.assert_allclose(tape.gradient(y, W).numpy(), want, rtol=1e-5, atol=1e-5)
        W.assign_add(np.ones_like(w0))
        np.testing.assert_allclose(tape.gradient(y, W).numpy(), want, rtol=1e-5, atol=1e-5)
    assert f.get_concrete_function(x).differentiable


def test_tapes_stop_watching_variables_once_their_ops_are_gone():
    def registered(tape):
        return any(ref() is tape for ref in _variable.KEEPERS)

    v = lk.Variable([1.0])
    with lk.GradientTape() as tape:
        y = v * v
    assert registered(tape)
    tape.gradient(y, v)                         # a non-persistent tape that answered
    assert not registered(tape)
    with lk.GradientTape(persistent=True) as tape:
        y = v * v
    assert registered(tape)
    n = len(_variable.KEEPERS)
    del tape
    gc.collect()
    assert len(_variable.KEEPERS) == n - 1      # garbage-collected: gone
