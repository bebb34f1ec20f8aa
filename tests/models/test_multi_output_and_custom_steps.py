"""User journeys through compile/fit/evaluate (second audit round): multi-output models
with per-output sample weights, clear errors naming the output, and custom steps written
the tf.keras 2 way (``compute_loss`` + ``compute_metrics``) logging their loss."""
import numpy as np
import pytest

import layerkit as lk
from layerkit import layers as L
from layerkit import losses, optimizers

from .custom_steps import Keras3Step

SCCE = losses.SparseCategoricalCrossentropy(from_logits=True)


def _two_outputs():
    a = lk.Input(shape=(3,), name="a")
    reg = L.Dense(1, name="reg")(a)
    cls = L.Dense(3, name="cls")(a)
    return lk.Model(a, {"reg": reg, "cls": cls})


def _data(n=12, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 3)).astype(np.float32)
    y = {"reg": rng.standard_normal((n, 1)).astype(np.float32),
         "cls": rng.integers(0, 3, n)}
    return x, y, rng


def _ce(logits, labels):
    z = logits - logits.max(1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(1, keepdims=True))
    return -logp[np.arange(len(labels)), labels]


def test_per_output_sample_weight_dict_reaches_weighted_metrics_of_each_output():
    x, y, rng = _data()
    sw = {"reg": rng.random(12).astype(np.float32), "cls": rng.random(12).astype(np.float32)}
    m = _two_outputs()
    m.compile(optimizer=optimizers.SGD(0.0), loss={"reg": "mse", "cls": SCCE},
              loss_weights={"reg": 1.0, "cls": 3.0}, weighted_metrics={"reg": ["mae"]})
    logs = m.evaluate(x, y, sample_weight=sw, batch_size=12, verbose=0, return_dict=True)
    p = m.predict(x, verbose=0)
    err = (p["reg"] - y["reg"])[:, 0]
    mse = (err ** 2 * sw["reg"]).sum() / 12
    ce = (_ce(p["cls"], y["cls"]) * sw["cls"]).sum() / 12
    np.testing.assert_allclose(logs["reg_loss"], mse, rtol=1e-5)
    np.testing.assert_allclose(logs["cls_loss"], ce, rtol=1e-5)
    np.testing.assert_allclose(logs["loss"], mse + 3 * ce, rtol=1e-5)
    np.testing.assert_allclose(logs["reg_weighted_mae"],
                               (np.abs(err) * sw["reg"]).sum() / sw["reg"].sum(), rtol=1e-5)


def test_a_loss_shape_mismatch_names_the_output():
    x, y, _ = _data(n=6)
    m = _two_outputs()
    m.compile(optimizer="sgd", loss={"reg": "mse", "cls": "mse"})
    with pytest.raises(ValueError, match="output 'cls'.*mean_squared_error"):
        m.fit(x, y, verbose=0)


def test_a_metric_shape_mismatch_names_the_metric_and_shapes():
    x, y, _ = _data(n=6)
    m = _two_outputs()
    m.compile(optimizer="sgd", loss={"reg": "mse", "cls": SCCE}, metrics=["mae"])
    with pytest.raises(ValueError, match=r"metric 'cls_mae'.*\(6,\).*\(6, 3\)"):
        m.fit(x, y, verbose=0)


class _Net(lk.Model):
    def __init__(self):
        super().__init__()
        self.d = L.Dense(1)

    def call(self, x, training=None):
        return self.d(x)


class _TF2Style(_Net):
    """The tf.keras 2.11+ guide's step: compute_loss, then return compute_metrics."""

    def train_step(self, data):
        x, y = data
        with lk.GradientTape() as tape:
            y_pred = self(x, training=True)
            loss = self.compute_loss(x=x, y=y, y_pred=y_pred)
        grads = tape.gradient(loss, self.trainable_variables)
        self.optimizer.apply_gradients(zip(grads, self.trainable_variables))
        return self.compute_metrics(x, y, y_pred, None)

    def test_step(self, data):
        x, y = data
        y_pred = self(x, training=False)
        self.compute_loss(x=x, y=y, y_pred=y_pred)
        return self.compute_metrics(x, y, y_pred, None)


class _Keras3Style(_Net):
    """Keras 3's guide: compute_loss, then the `loss` metric updated by hand."""

    train_step = Keras3Step.train_step


def _regression(n=20, seed=1):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 4)).astype(np.float32)
    return x, (x @ np.array([[1.0], [-2.0], [0.5], [3.0]], np.float32)).astype(np.float32)


@pytest.mark.parametrize("eager", [False, True])
def test_custom_step_with_compute_loss_and_compute_metrics_logs_the_loss(eager):
    x, y = _regression()
    m = _TF2Style()
    m.compile(optimizer=optimizers.SGD(0.0), loss="mse", metrics=["mae"], run_eagerly=eager)
    seen = []
    cb = lk.callbacks.LambdaCallback(on_train_batch_end=lambda b, logs: seen.append(
        logs["loss"]))
    h = m.fit(x, y, batch_size=8, epochs=2, verbose=0, shuffle=False,
              validation_data=(x, y), callbacks=[cb])
    p = m.predict(x, verbose=0)
    sq = ((p - y) ** 2)[:, 0]
    # the loss metric is the batch-size weighted mean of the batch losses: the sample mean
    assert h.history["loss"] == pytest.approx([sq.mean()] * 2, rel=1e-5)
    assert h.history["val_loss"] == pytest.approx([sq.mean()] * 2, rel=1e-5)
    assert h.history["mae"] == pytest.approx([np.abs(p - y).mean()] * 2, rel=1e-5)
    assert seen[0] == pytest.approx(sq[:8].mean(), rel=1e-5)
    assert seen[2] == pytest.approx(sq.mean(), rel=1e-5)
    assert m.evaluate(x, y, verbose=0, return_dict=True)["loss"] == pytest.approx(
        sq.mean(), rel=1e-5)


def test_keras3_style_step_that_updates_the_loss_metric_is_not_counted_twice():
    x, y = _regression()
    m = _Keras3Style()
    m.compile(optimizer=optimizers.SGD(0.0), loss="mse")
    h = m.fit(x, y, batch_size=8, epochs=1, verbose=0, shuffle=False)
    sq = ((m.predict(x, verbose=0) - y) ** 2)[:, 0]
    # update_state(loss) without weights: the plain mean of the three batch losses
    expected = np.mean([sq[:8].mean(), sq[8:16].mean(), sq[16:].mean()])
    assert h.history["loss"] == pytest.approx([expected], rel=1e-5)


class _Unsupervised(_Net):
    """Keras's GAN/autoencoder examples: ``fit(images)``; the step gets the bare batch."""

    def __init__(self):
        super().__init__()
        self.seen = []
        self.tracker = lk.metrics.Mean(name="recon")

    @property
    def metrics(self):
        return [self.tracker]

    def train_step(self, data):
        self.seen.append(isinstance(data, lk.Tensor))
        n = data.shape[0]                    # not a tuple: Keras passes a lone x as is
        with lk.GradientTape() as tape:
            loss = lk.reduce_mean(lk.square(self(data, training=True) - data[:, :1]))
        grads = tape.gradient(loss, self.trainable_variables)
        self.optimizer.apply_gradients(zip(grads, self.trainable_variables))
        self.tracker.update_state(loss, sample_weight=n)
        return {"recon": self.tracker.result()}


def test_a_lone_x_reaches_train_step_unwrapped_from_arrays_and_datasets():
    x, _ = _regression(n=16)
    m = _Unsupervised()
    m.compile(optimizer=optimizers.SGD(0.0))
    h1 = m.fit(x, batch_size=8, epochs=1, verbose=0, shuffle=False)
    h2 = m.fit(lk.data.Dataset.from_tensor_slices(x).batch(8), epochs=1, verbose=0)
    assert m.seen and all(m.seen)
    p = m.predict(x, verbose=0)
    assert h1.history["recon"] == pytest.approx([((p - x[:, :1]) ** 2).mean()], rel=1e-5)
    assert h2.history["recon"] == h1.history["recon"]


@pytest.mark.parametrize("as_dict", [False, True])
def test_class_weight_with_several_outputs_says_it_needs_a_single_output(as_dict):
    x, y, _ = _data(n=6)
    m = _two_outputs()
    m.compile(optimizer="sgd", loss={"reg": "mse", "cls": SCCE})
    y = y if as_dict else [y["cls"], y["reg"]]
    with pytest.raises(ValueError, match="class_weight is only supported for models with a "
                                         "single output"):
        m.fit(x, y, class_weight={0: 1.0, 1: 2.0, 2: 1.0}, verbose=0)
