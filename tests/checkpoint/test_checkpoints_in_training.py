"""User journeys: checkpoints moving between eager training and lk.function graphs,
and a CheckpointManager restart mid-training that must equal an uninterrupted run."""
from __future__ import annotations

import numpy as np
import pytest

import layerkit as lk
from layerkit.checkpoint import GlobalRNG

_rng = np.random.default_rng(0)
X = _rng.normal(size=(40, 4)).astype(np.float32)
Y = (X.sum(1, keepdims=True) > 0).astype(np.float32)


class Net(lk.Model):
    def __init__(self, rate: float = 0.3) -> None:
        super().__init__()
        self.d1 = lk.layers.Dense(8, activation="tanh")
        self.bn = lk.layers.BatchNormalization()
        self.dr = lk.layers.Dropout(rate)
        self.d2 = lk.layers.Dense(1)

    def call(self, x, training=None):
        h = self.bn(self.d1(x), training=training)
        return self.d2(self.dr(h, training=training))


def _dataset():
    return lk.data.Dataset.from_tensor_slices((X, Y)).shuffle(40, seed=5).batch(8).repeat()


def _step_fn(model, opt, graph: bool):
    loss_fn = lk.losses.MeanSquaredError()

    def step(x, y):
        with lk.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    return lk.function(step) if graph else step


def _run(total: int, graph_before: bool, graph_after: bool, directory=None,
         interrupt_at=None, build_before_restore: bool = True):
    lk.random.set_seed(11)
    model, opt, it = Net(), lk.optimizers.Adam(0.01), iter(_dataset())
    ckpt = lk.Checkpoint(model=model, optimizer=opt, it=it, rng=GlobalRNG())
    manager = lk.CheckpointManager(ckpt, directory, max_to_keep=2) if directory else None
    step = _step_fn(model, opt, graph_before)
    losses = []
    for i in range(total):
        if i == interrupt_at:
            manager.save()
            # A simulated restart: new objects, other RNG state, an iterator elsewhere.
            lk.random.set_seed(999)
            model, opt, it = Net(), lk.optimizers.Adam(0.01), iter(_dataset())
            next(it)
            if build_before_restore:
                model(X[:1])
            ckpt = lk.Checkpoint(model=model, optimizer=opt, it=it, rng=GlobalRNG())
            manager = lk.CheckpointManager(ckpt, directory, max_to_keep=2)
            status = ckpt.restore(manager.latest_checkpoint)
            step = _step_fn(model, opt, graph_after)
        x, y = next(it)
        losses.append(float(step(x, y)))
        if i == interrupt_at:
            status.assert_consumed()
    return (losses, [v.numpy() for v in model.variables], [v.numpy() for v in opt.variables])


@pytest.mark.parametrize("graph_before,graph_after",
                         [(False, False), (False, True), (True, False), (True, True)])
def test_manager_restart_mid_training_equals_uninterrupted_run(tmp_path, graph_before,
                                                               graph_after):
    base = _run(9, graph_before, graph_before)
    resumed = _run(9, graph_before, graph_after, tmp_path, interrupt_at=4)
    assert resumed[0] == base[0]
    assert len(resumed[1]) == len(base[1]) and len(resumed[2]) == len(base[2])
    for a, b in zip(resumed[1] + resumed[2], base[1] + base[2]):
        np.testing.assert_array_equal(a, b)


def test_deferred_restore_inside_a_trace_is_not_replayed_by_the_graph(tmp_path):
    # Restore into an unbuilt model whose weights and optimizer slots are created on the
    # first call of an lk.function: the restored values must be set once, not become
    # assign nodes that reset the variables on every call (momentum and weights were
    # reset to the checkpoint at each step before the fix).
    def train(model, opt, step, n):
        return [float(step(lk.constant(X[8 * i:8 * i + 8]), lk.constant(Y[8 * i:8 * i + 8])))
                for i in range(n)]

    lk.random.set_seed(1)
    m, opt = Net(rate=0.0), lk.optimizers.SGD(0.1, momentum=0.9)
    train(m, opt, _step_fn(m, opt, False), 1)
    path = lk.Checkpoint(model=m, optimizer=opt).write(str(tmp_path / "c"))
    expected = train(m, opt, _step_fn(m, opt, False), 4)

    m2, opt2 = Net(rate=0.0), lk.optimizers.SGD(0.1, momentum=0.9)
    lk.Checkpoint(model=m2, optimizer=opt2).read(path)
    step = _step_fn(m2, opt2, True)
    got = train(m2, opt2, step, 4)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
    for a, b in zip(m2.variables + opt2.variables, m.variables + opt.variables):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6)


def test_restore_into_an_unbuilt_model_continues_the_saved_random_stream(tmp_path):
    # The restored weights replace the initial values, so building the model after the
    # restore draws nothing from the restored global generator: dropout masks then
    # continue exactly as in the saved run.
    def make():
        return lk.Sequential([lk.layers.Dense(4), lk.layers.Dropout(0.5)])

    x = lk.ones((1, 3))
    lk.random.set_seed(0)
    m = make()
    m(x)
    path = lk.Checkpoint(model=m, rng=GlobalRNG()).save(str(tmp_path / "c"))
    want = [m(x, training=True).numpy() for _ in range(3)]
    fresh = make()
    lk.Checkpoint(model=fresh, rng=GlobalRNG()).restore(path)
    got = [fresh(x, training=True).numpy() for _ in range(3)]
    for a, b in zip(want, got):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(fresh.layers[0].kernel.numpy(), m.layers[0].kernel.numpy())
