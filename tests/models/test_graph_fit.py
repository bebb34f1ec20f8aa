"""fit/evaluate/predict/train_on_batch run their steps as lk.function graphs.

Every test compares the graph run with ``run_eagerly=True`` on the same seeded model
and data (weights, history, metrics), and checks that the step really is a graph:
the trace count stays at one per batch shape and no EagerFallbackWarning is raised.
"""
import warnings

import numpy as np
import pytest

import layerkit as lk
from layerkit import layers as L
from layerkit import losses, metrics, optimizers
from layerkit.autodiff.function import EagerFallbackWarning, TracingError
from layerkit.models import Input, Sequential
from tests.models.custom_steps import MLP, Keras2Step, Keras3Step

SCCE = losses.SparseCategoricalCrossentropy(from_logits=True)


@pytest.fixture(autouse=True)
def _no_eager_fallback():
    with warnings.catch_warnings():
        warnings.simplefilter("error", EagerFallbackWarning)
        yield


def _blobs(n=70, d=6, k=3, seed=0):
    rng = np.random.default_rng(seed)
    centers = rng.standard_normal((k, d)) * 2
    y = rng.integers(0, k, n)
    return (centers[y] + rng.standard_normal((n, d))).astype(np.float32), y


def _mlp(dropout=0.0, d=6, k=3, seed=None):
    return Sequential([Input(shape=(d,)), L.Dense(16, activation="relu"),
                       L.Dropout(dropout, seed=seed), L.BatchNormalization(),
                       L.Dense(8, activation="tanh"), L.Dense(k)])


def _fit_both(make, compile_kw, fit_kw, x, y, seed=3):
    """(eager model, eager history), (graph model, graph history) from the same seed.

    ``compile_kw`` is a function returning compile's arguments (fresh optimizer and
    metric objects for each model)."""
    out = []
    for eager in (True, False):
        lk.random.set_seed(seed)
        m = make()
        m.compile(run_eagerly=eager, **compile_kw())
        h = m.fit(x, y, verbose=0, **fit_kw)
        out.append((m, h))
    return out


def _assert_same_weights(a, b, rtol=1e-5, atol=1e-6):
    wa, wb = a.get_weights(), b.get_weights()
    assert len(wa) == len(wb)
    for u, v in zip(wa, wb):
        np.testing.assert_allclose(u, v, rtol=rtol, atol=atol)


def _assert_same_history(ha, hb):
    assert ha.history.keys() == hb.history.keys()
    for k in ha.history:
        np.testing.assert_allclose(ha.history[k], hb.history[k], rtol=1e-5, atol=1e-6)


def test_fit_as_a_graph_matches_eager_weights_history_and_metrics():
    x, y = _blobs()
    def kw():
        return dict(optimizer=optimizers.Adam(0.01), loss=SCCE,
                    metrics=["accuracy", metrics.SparseTopKCategoricalAccuracy(k=2)])
    (me, he), (mg, hg) = _fit_both(lambda: _mlp(), kw, dict(batch_size=16, epochs=4,
                                                           validation_split=0.2), x, y)
    _assert_same_weights(me, mg)
    _assert_same_history(he, hg)
    assert set(hg.history) == {"loss", "accuracy", "sparse_top_k_categorical_accuracy",
                               "val_loss", "val_accuracy",
                               "val_sparse_top_k_categorical_accuracy"}
    # 56 training samples in batches of 16: one trace for 16, one for the last 8
    assert mg._step_functions["train"].trace_count == 2
    assert me._step_functions == {}
    assert int(mg.optimizer.iterations.numpy()) == int(me.optimizer.iterations.numpy()) == 16
    np.testing.assert_allclose(mg.evaluate(x, y, verbose=0), me.evaluate(x, y, verbose=0),
                               rtol=1e-5)
    np.testing.assert_allclose(mg.predict(x, verbose=0), me.predict(x, verbose=0),
                               rtol=1e-5, atol=1e-6)


def test_many_epochs_trace_once_when_batches_divide_the_data():
    x, y = _blobs(n=64)
    m = _mlp()
    m.compile(optimizer="sgd", loss=SCCE)
    m.fit(x, y, batch_size=16, epochs=5, verbose=0)
    m.fit(x, y, batch_size=16, epochs=2, verbose=0)     # a second fit reuses the graph
    fn = m._step_functions["train"]
    assert fn.trace_count == 1
    batch = (lk.constant(x[:16]), lk.constant(y[:16]))
    assert fn.get_concrete_function(batch, True).mode == "graph"


def test_batch_normalization_moving_statistics_update_in_the_graph():
    x, y = _blobs()
    (me, _), (mg, _) = _fit_both(lambda: _mlp(), lambda: dict(optimizer="adam", loss=SCCE),
                                 dict(batch_size=14, epochs=3), x, y)
    bn_e, bn_g = me.layers[2], mg.layers[2]
    assert isinstance(bn_g, L.BatchNormalization)
    assert not np.allclose(bn_g.moving_mean.numpy(), 0.0)      # it moved
    np.testing.assert_allclose(bn_g.moving_mean.numpy(), bn_e.moving_mean.numpy(), rtol=1e-5,
                               atol=1e-7)
    np.testing.assert_allclose(bn_g.moving_variance.numpy(), bn_e.moving_variance.numpy(),
                               rtol=1e-5, atol=1e-7)
    assert mg._step_functions["train"].trace_count == 1


@pytest.mark.parametrize("seed", [None, 7])
def test_dropout_in_the_graph_is_fresh_per_step_and_reproducible(seed):
    x, y = _blobs()
    def kw():
        return dict(optimizer="adam", loss=SCCE)
    fit_kw = dict(batch_size=14, epochs=3)
    (me, he), (mg, hg) = _fit_both(lambda: _mlp(0.4, seed=seed), kw, fit_kw, x, y)
    # the masks come from the same streams in the same order as in eager steps
    _assert_same_weights(me, mg)
    _assert_same_history(he, hg)
    (_, _), (mg2, _) = _fit_both(lambda: _mlp(0.4, seed=seed), kw, fit_kw, x, y)
    _assert_same_weights(mg, mg2, rtol=0, atol=0)
    # fresh masks per step: two steps on the same batch see different masks
    m = _mlp(0.4, seed=seed)
    m.compile(optimizer=optimizers.SGD(0.0), loss=SCCE)
    a = m.train_on_batch(x[:14], y[:14])
    b = m.train_on_batch(x[:14], y[:14])
    assert a != b
    assert m._step_functions["train"].trace_count == 1


def test_train_on_batch_and_test_on_batch_match_eager():
    x, y = _blobs(n=20)
    runs = []
    for eager in (True, False):
        lk.random.set_seed(1)
        m = _mlp()
        m.compile(optimizer="rmsprop", loss=SCCE, metrics=["accuracy"], run_eagerly=eager)
        logs = [m.train_on_batch(x, y, return_dict=True) for _ in range(3)]
        logs.append(m.test_on_batch(x, y, return_dict=True))
        runs.append((m, logs))
    (me, le), (mg, lg) = runs
    for a, b in zip(le, lg):
        assert a.keys() == b.keys()
        for k in a:
            assert a[k] == pytest.approx(b[k], rel=1e-5)
    _assert_same_weights(me, mg)
    assert mg._step_functions["train"].trace_count == 1


def test_sample_and_class_weights_and_mean_with_sample_weight():
    x, y = _blobs(n=48)
    sw = np.random.default_rng(2).random(48).astype(np.float32)
    def kw():
        return dict(optimizer="adam", metrics=["accuracy"], weighted_metrics=["accuracy"],
                    loss=losses.SparseCategoricalCrossentropy(
                        from_logits=True, reduction="mean_with_sample_weight"))
    (me, he), (mg, hg) = _fit_both(lambda: _mlp(), kw, dict(batch_size=16, epochs=2,
                                                          sample_weight=sw), x, y)
    _assert_same_weights(me, mg)
    _assert_same_history(he, hg)
    cw = {0: 1.0, 1: 2.0, 2: 0.5}
    (me, he), (mg, hg) = _fit_both(lambda: _mlp(), kw, dict(batch_size=16, epochs=2,
                                                          class_weight=cw), x, y)
    _assert_same_weights(me, mg)


def test_learning_rate_schedules_callbacks_and_constraints_are_live():
    x, y = _blobs(n=48)
    sched = optimizers.schedules.ExponentialDecay(0.1, decay_steps=2, decay_rate=0.5)

    def make():
        return Sequential([Input(shape=(6,)),
                           L.Dense(8, activation="relu", kernel_constraint=lk_max_norm),
                           L.Dense(3)])

    for opt, cbs in ((lambda: optimizers.SGD(sched, momentum=0.9), []),
                     (lambda: optimizers.Adam(0.05, global_clipnorm=0.1),
                      [lk.callbacks.LearningRateScheduler(lambda epoch, lr: lr * 0.5)])):
        (me, _), (mg, _) = _fit_both(make, lambda opt=opt: dict(optimizer=opt(), loss=SCCE),
                                     dict(batch_size=16, epochs=3, callbacks=cbs), x, y)
        _assert_same_weights(me, mg)
        kernel = mg.layers[0].kernel.numpy()
        assert np.linalg.norm(kernel, axis=0).max() <= 1.0 + 1e-5


def lk_max_norm(w):
    """A kernel constraint: columns of norm at most 1 (reads the updated kernel)."""
    norms = lk.sqrt(lk.reduce_sum(lk.square(w), axis=0, keepdims=True))
    return w / lk.maximum(norms, 1.0)


class _Keras2Step(Keras2Step):
    def step_logs(self, loss):
        return {"loss": loss, **self.compiled_metrics.result(),
                "step": self.optimizer.iterations + 0}


@pytest.mark.parametrize("cls", [Keras3Step, _Keras2Step])
def test_overridden_train_steps_are_traced_and_match_eager(cls):
    x, y = _blobs(n=64)
    def kw():
        return dict(optimizer=optimizers.Adam(0.02), loss=SCCE, metrics=["accuracy"])
    (me, he), (mg, hg) = _fit_both(cls, kw, dict(batch_size=16, epochs=3), x, y)
    _assert_same_weights(me, mg)
    _assert_same_history(he, hg)
    assert mg._step_functions["train"].trace_count == 1   # the subclass built on the trace
    if cls is _Keras2Step:
        # a value read after the update is the updated one, on every call
        assert hg.history["step"] == [4.0, 8.0, 12.0]


def test_data_dependent_control_flow_in_a_step_raises_tracing_error():
    class Branchy(MLP):
        def train_step(self, data):
            x, y = data
            loss = self.compute_loss(y=y, y_pred=self(x, training=True))
            if loss > 100.0:      # a traced tensor as a Python bool
                self.stop_training = True
            return {"loss": loss}

    x, y = _blobs(n=32)
    m = Branchy()
    m.compile(optimizer="sgd", loss=SCCE, run_eagerly=False)
    with pytest.raises(TracingError, match="test_graph_fit.py"):
        m.fit(x, y, batch_size=16, epochs=1, verbose=0)
    m.compile(optimizer="sgd", loss=SCCE, run_eagerly=True)
    m.fit(x, y, batch_size=16, epochs=1, verbose=0)   # eager: fine


def test_a_step_that_reads_values_falls_back_to_eager_with_a_warning():
    class Peeking(L.Layer):
        def call(self, x):
            self.seen = float(np.asarray(x._v).sum())   # value read outside ops
            return x

    x, y = _blobs(n=32)
    m = Sequential([Input(shape=(6,)), Peeking(), L.Dense(3)])
    m.compile(optimizer="sgd", loss=SCCE)
    with warnings.catch_warnings():
        warnings.simplefilter("always", EagerFallbackWarning)
        with pytest.warns(EagerFallbackWarning, match="test_graph_fit.py"):
            m.fit(x, y, batch_size=16, epochs=2, verbose=0, shuffle=False)
    # the body ran on every step (a graph would have kept the first batch's value)
    assert m.layers[0].seen == pytest.approx(float(x[16:].sum()), rel=1e-5)
    assert int(m.optimizer.iterations.numpy()) == 4


def test_trainable_changes_between_fits_retrace():
    x, y = _blobs(n=32)
    m = _mlp()
    m.compile(optimizer="adam", loss=SCCE)
    m.fit(x, y, batch_size=16, epochs=1, verbose=0)
    m.layers[0].trainable = False
    frozen = m.layers[0].kernel.numpy().copy()
    m.fit(x, y, batch_size=16, epochs=2, verbose=0)
    np.testing.assert_array_equal(m.layers[0].kernel.numpy(), frozen)
    m.compile(optimizer="adam", loss=SCCE)
    assert m._step_functions == {}


def test_metrics_update_result_and_reset_are_graph_nodes():
    m = metrics.Mean()
    auc = metrics.AUC(num_thresholds=20)

    @lk.function
    def step(v, yt, yp):
        m.update_state(v)
        auc.update_state(yt, yp)
        return m.result(), auc.result()

    rng = np.random.default_rng(0)
    seen, want = [], metrics.AUC(num_thresholds=20)
    for _ in range(3):
        v = lk.constant(rng.random(5).astype(np.float32))
        yt = lk.constant(rng.integers(0, 2, 8).astype(np.float32))
        yp = lk.constant(rng.random(8).astype(np.float32))
        seen.append(v.numpy())
        want.update_state(yt, yp)
        r, a = step(v, yt, yp)
        assert float(r.numpy()) == pytest.approx(np.concatenate(seen).mean(), rel=1e-6)
        assert float(a.numpy()) == pytest.approx(float(want.result()), rel=1e-6)
    assert step.trace_count == 1

    @lk.function
    def reset():
        m.reset_state()
        return m.result()

    assert float(reset().numpy()) == 0.0
    m.update_state([4.0])
    assert float(reset().numpy()) == 0.0 and float(m.result()) == 0.0


def test_make_functions_and_the_run_eagerly_attribute():
    x, y = _blobs(n=16)
    m = _mlp()
    m.compile(optimizer="sgd", loss=SCCE, metrics=["accuracy"])
    step = m.make_train_function()
    batch = (lk.constant(x), lk.constant(y))
    logs = step(batch)
    assert set(logs) == {"loss", "accuracy"} and isinstance(logs["loss"], lk.Tensor)
    assert m._step_functions["train"].trace_count == 1
    out = m.make_predict_function()((lk.constant(x),))
    np.testing.assert_allclose(out.numpy(), m.predict(x, verbose=0), rtol=1e-6, atol=1e-7)
    assert set(m.make_test_function()(batch)) == {"loss", "accuracy"}
    m.run_eagerly = True                      # Keras allows setting it after compile
    assert m.make_train_function() == m.train_step
    m.fit(x, y, epochs=1, verbose=0)
    assert int(m.optimizer.iterations.numpy()) == 2
