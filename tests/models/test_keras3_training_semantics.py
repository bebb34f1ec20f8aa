"""Audit regressions for models, metrics and callbacks (API.md section 4) against Keras 3."""
import warnings

import numpy as np
import pytest

import layerkit as lk
from layerkit import layers as L
from layerkit import metrics

from .test_callbacks import Recorder


def _reg_model():
    m = lk.Sequential([lk.Input((3,)), L.Dense(1, kernel_initializer="ones")])
    m.compile(optimizer=lk.optimizers.SGD(0.01), loss="mse", metrics=["mae"])
    return m


def _reg_data(n=10):
    x = np.arange(3 * n, dtype=np.float32).reshape(n, 3) / (3 * n)
    return x, x.sum(1, keepdims=True) * 0.5


# ---- metrics ------------------------------------------------------------------------------
def test_sum_sums_over_the_non_batch_axes():
    # Keras's Sum reduces each sample with sum (its reduce_fn), not mean
    m = metrics.Sum()
    m.update_state(np.arange(6.0).reshape(2, 3))
    assert float(m.result()) == 15.0
    m.reset_state()
    m.update_state(np.arange(6.0).reshape(2, 3), sample_weight=[1.0, 3.0])
    assert float(m.result()) == 3.0 + 3 * 12.0
    mean = metrics.Mean()
    mean.update_state(np.arange(6.0).reshape(2, 3), sample_weight=[1.0, 3.0])
    assert float(mean.result()) == pytest.approx((1 * 1.0 + 3 * 4.0) / 4)


# ---- train_on_batch / test_on_batch ------------------------------------------------------
def test_train_on_batch_reports_this_batch_only():
    # Keras 2 (reset_metrics=True) and Keras 3 reset the metrics before the step
    x, y = _reg_data()
    m = _reg_model()
    for part in (slice(0, 4), slice(4, None)):
        expect = m.evaluate(x[part], y[part], verbose=0, return_dict=True)
        m.evaluate(x, y, verbose=0)  # leaves other metric state behind
        got = m.train_on_batch(x[part], y[part], return_dict=True)
        # the loss and mae of this batch before this step's update
        assert got == pytest.approx(expect, rel=1e-6)


# ---- callbacks ---------------------------------------------------------------------------
def test_every_hook_gets_a_logs_dict():
    # Keras passes {} where a loop has no logs (on_train_begin, on_*_batch_begin, ...)
    x, y = _reg_data()
    m = _reg_model()
    rec = Recorder()  # records each call as (hook, *args), a dict as its sorted keys
    m.fit(x, y, batch_size=5, epochs=1, verbose=0, validation_split=0.2, callbacks=[rec])
    m.evaluate(x, y, verbose=0, callbacks=[rec])
    m.predict(x, verbose=0, callbacks=[rec])
    hooks = {call[0] for call in rec.calls}
    assert {"on_train_begin", "on_train_batch_begin", "on_epoch_begin", "on_test_begin",
            "on_test_batch_begin", "on_predict_begin", "on_predict_end"} <= hooks
    bad = [call for call in rec.calls if len(call) < 2 or not isinstance(call[-1], list)]
    assert bad == []


# ---- fit: steps_per_epoch with arrays (Keras 3) -------------------------------------------
def _batches_seen(steps, epochs, n=10, batch_size=2):
    x = np.arange(n, dtype=np.float32).reshape(n, 1)
    seen = []

    class Probe(lk.Model):
        def __init__(self):
            super().__init__()
            self.d = L.Dense(1)

        def call(self, inputs):
            return self.d(inputs)

        def train_step(self, data):
            seen.append([int(v) for v in np.asarray(data[0]._v)[:, 0]])
            return {}

    m = Probe()
    m.compile(optimizer="sgd", loss="mse", run_eagerly=True)
    m(x[:1])
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        h = m.fit(x, x, batch_size=batch_size, epochs=epochs, steps_per_epoch=steps,
                  shuffle=False, verbose=0)
    return seen, h, [str(e.message) for e in w]


def test_steps_per_epoch_continues_the_pass_and_stops_at_its_end():
    # 5 batches per pass, 3 per epoch: epoch 0 takes batches 0-2, epoch 1 the last two
    # (the data ran out: warning), epoch 2 starts a new pass. It used to wrap around.
    seen, h, warns = _batches_seen(steps=3, epochs=3)
    firsts = [b[0] for b in seen]
    assert firsts == [0, 2, 4, 6, 8, 0, 2, 4]
    assert h.epoch == [0, 1, 2]
    assert len(warns) == 1 and "ran out of data after 2 of steps_per_epoch=3" in warns[0]


def test_steps_per_epoch_larger_than_the_data_runs_one_pass_per_epoch():
    seen, _, warns = _batches_seen(steps=7, epochs=2)
    assert [b[0] for b in seen] == [0, 2, 4, 6, 8] * 2
    assert len(warns) == 2


def test_steps_per_epoch_dividing_the_data_needs_no_warning():
    seen, _, warns = _batches_seen(steps=5, epochs=2)
    assert [b[0] for b in seen] == [0, 2, 4, 6, 8] * 2 and warns == []


# ---- infinite datasets -----------------------------------------------------------------------
def test_infinite_dataset_without_steps_is_an_error_not_a_hang():
    x, y = _reg_data(8)
    ds = lk.data.Dataset.from_tensor_slices((x, y)).batch(4).repeat()
    m = _reg_model()
    with pytest.raises(ValueError, match=r"fit: the dataset is infinite.*steps_per_epoch"):
        m.fit(ds, epochs=1, verbose=0)
    with pytest.raises(ValueError, match=r"infinite.*validation_steps"):
        m.fit(x, y, epochs=1, verbose=0, validation_data=ds)
    with pytest.raises(ValueError, match=r"evaluate: the dataset is infinite.*steps="):
        m.evaluate(ds, verbose=0)
    with pytest.raises(ValueError, match=r"predict: the dataset is infinite.*steps="):
        m.predict(ds, verbose=0)
    h = m.fit(ds, epochs=2, steps_per_epoch=3, verbose=0, validation_data=ds,
              validation_steps=1)
    assert len(h.history["val_loss"]) == 2
    assert m.evaluate(ds, steps=2, verbose=0) == pytest.approx(m.evaluate(x, y, verbose=0),
                                                               rel=1e-5)


# ---- losses ----------------------------------------------------------------------------------
def _scce_ref(labels, probs, ignore, sw=None):
    p = probs / probs.sum(-1, keepdims=True)
    keep = labels != ignore
    per = np.where(keep, -np.log(np.clip(p[np.arange(len(labels)), np.where(keep, labels, 0)],
                                         1e-7, 1 - 1e-7)), 0.0)
    sw = np.ones(len(labels)) if sw is None else sw
    return per, keep, sw


@pytest.mark.parametrize("reduction", ["sum_over_batch_size", "mean", "sum",
                                       "mean_with_sample_weight"])
@pytest.mark.parametrize("weighted", [False, True])
def test_ignore_class_masks_samples_out_of_the_mean(reduction, weighted):
    # Keras masks ignored samples: the mean is over the kept ones (it was over all)
    rng = np.random.default_rng(0)
    labels = np.array([0, -1, 1, 2, -1])
    probs = rng.dirichlet(np.ones(3), 5)
    sw = rng.uniform(0.5, 1.5, 5) if weighted else None
    per, keep, w = _scce_ref(labels, probs, -1, sw)
    expect = {"sum_over_batch_size": (per * w).sum() / keep.sum(),
              "mean": (per * w).sum() / keep.sum(), "sum": (per * w).sum(),
              "mean_with_sample_weight": (per * w).sum() / (w * keep).sum()}[reduction]
    loss = lk.losses.SparseCategoricalCrossentropy(ignore_class=-1, reduction=reduction)
    got = loss(labels[:, None], probs, sample_weight=sw)
    assert float(got) == pytest.approx(expect, rel=1e-5)
    none = lk.losses.SparseCategoricalCrossentropy(ignore_class=-1, reduction="none")
    np.testing.assert_allclose(none(labels, probs).numpy(), per, rtol=1e-5)


def test_ignore_class_in_fit_matches_the_kept_samples_alone():
    x = np.random.default_rng(1).normal(size=(6, 3)).astype(np.float32)
    labels = np.array([0, 1, 1, 0, 0, 1])
    masked = labels.copy()
    masked[[1, 4]] = -1
    losses = []
    for lab, xs, ignore in ((masked, x, -1), (labels[[0, 2, 3, 5]], x[[0, 2, 3, 5]], None)):
        m = lk.Sequential([lk.Input((3,)), L.Dense(2, kernel_initializer="ones")])
        m.compile("sgd", lk.losses.SparseCategoricalCrossentropy(from_logits=True,
                                                                 ignore_class=ignore))
        losses.append(m.evaluate(xs, lab, verbose=0))
    assert losses[0] == pytest.approx(losses[1], rel=1e-5)


def test_empty_batch_loss_is_not_nan():
    # the fast path took reduce_mean of nothing (nan); the weighted path already gave []
    mse = lk.losses.MeanSquaredError()
    empty = np.zeros((0, 2), np.float32)
    assert mse(empty, empty).shape == (0,)
    assert mse(empty, empty, sample_weight=np.zeros(0, np.float32)).shape == (0,)


# ---- Sequential config ---------------------------------------------------------------------
def test_sequential_from_config_round_trip():
    import json

    class Twice(L.Layer):
        def call(self, x):
            return x * 2.0

    src = lk.Sequential([lk.Input((3,)), L.Dense(2, activation="relu"), L.Dropout(0.1),
                         Twice()])
    config = json.loads(json.dumps(src.get_config()))
    with pytest.raises(ValueError, match="unknown layer class 'Twice'"):
        lk.Sequential.from_config(config)
    copy = lk.Sequential.from_config(config, custom_objects={"Twice": Twice})
    assert [type(x).__name__ for x in copy.layers] == ["Dense", "Dropout", "Twice"]
    assert copy.built and copy.layers[0].activation is src.layers[0].activation
    copy.set_weights(src.get_weights())
    x = np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3)
    np.testing.assert_allclose(copy.predict(x, verbose=0), src.predict(x, verbose=0))
    unbuilt = lk.Sequential.from_config(lk.Sequential([L.Dense(2)]).get_config())
    assert not unbuilt.built and len(unbuilt.layers) == 1
