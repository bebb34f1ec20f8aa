"""Models: the three construction forms, compile/fit/evaluate/predict, data inputs,
custom steps, summary, weights files and bad input."""
import os

import numpy as np
import pytest

import layerkit as lk
from layerkit import layers as L
from layerkit import losses, metrics, optimizers
from layerkit.checkpoint.checkpoint import Checkpoint
from layerkit.models import Input, Model, Sequential
from layerkit.primitives import random as lk_random
from tests.models.custom_steps import MLP, Keras2Step, Keras3Step


def _blobs(n=128, d=6, k=3, seed=0):
    rng = np.random.default_rng(seed)
    centers = rng.standard_normal((k, d)) * 3
    y = rng.integers(0, k, n)
    x = (centers[y] + rng.standard_normal((n, d))).astype(np.float32)
    return x, y


def _seq(d=6, k=3):
    return Sequential([Input(shape=(d,)), L.Dense(16, activation="relu"), L.Dense(k)])


SCCE = losses.SparseCategoricalCrossentropy(from_logits=True)


def test_sequential_fit_learns_and_history():
    x, y = _blobs()
    m = _seq()
    m.compile(optimizer=optimizers.Adam(0.05), loss=SCCE, metrics=["accuracy"])
    hist = m.fit(x, y, epochs=8, batch_size=16, verbose=0)
    assert set(hist.history) == {"loss", "accuracy"}
    assert len(hist.history["loss"]) == 8 and hist.epoch == list(range(8))
    assert hist.history["loss"][-1] < 0.5 * hist.history["loss"][0]
    assert hist.history["accuracy"][-1] > 0.9
    assert m.history is hist
    assert isinstance(m._compile_metrics.metrics[0], metrics.SparseCategoricalAccuracy)
    loss, acc = m.evaluate(x, y, verbose=0)
    assert acc > 0.9
    # evaluate's loss is the batch-size weighted mean of the per-batch losses
    per = losses.SparseCategoricalCrossentropy(from_logits=True, reduction="none")(
        y, m.predict(x, verbose=0)).numpy()
    assert loss == pytest.approx(per.mean(), rel=1e-5)
    assert m.optimizer.iterations.numpy() == 8 * 8


def test_three_forms_give_same_results_for_same_weights():
    x, y = _blobs(n=40)
    seq = _seq()
    inp = Input(shape=(6,))
    func = Model(inp, L.Dense(3)(L.Dense(16, activation="relu")(inp)))
    sub = MLP()
    sub.build((None, 6))
    weights = seq.get_weights()
    func.set_weights(weights)
    sub.set_weights(weights)
    want = seq.predict(x, verbose=0)
    np.testing.assert_allclose(func.predict(x, verbose=0), want, rtol=1e-6)
    np.testing.assert_allclose(sub.predict(x, batch_size=7, verbose=0), want, rtol=1e-6)
    for model in (seq, func, sub):
        model.compile(optimizer=optimizers.SGD(0.1), loss=SCCE)
        model.fit(x, y, epochs=2, batch_size=8, shuffle=False, verbose=0)
    np.testing.assert_allclose(func.get_weights()[0], seq.get_weights()[0], rtol=1e-5)
    np.testing.assert_allclose(sub.get_weights()[0], seq.get_weights()[0], rtol=1e-5)


def test_fit_matches_a_hand_written_gradient_tape_loop():
    x, y = _blobs(n=48)
    m = _seq()
    ref = _seq()
    ref.set_weights(m.get_weights())
    m.compile(optimizer=optimizers.SGD(0.1, momentum=0.9), loss=SCCE)
    m.fit(x, y, epochs=2, batch_size=16, shuffle=False, verbose=0)
    opt = optimizers.SGD(0.1, momentum=0.9)
    for _ in range(2):
        for i in range(0, 48, 16):
            with lk.GradientTape() as tape:
                loss = SCCE(y[i:i + 16], ref(x[i:i + 16], training=True))
            grads = tape.gradient(loss, ref.trainable_variables)
            opt.apply_gradients(zip(grads, ref.trainable_variables))
    for a, b in zip(m.get_weights(), ref.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_shuffle_is_reproducible_with_set_seed():
    x, y = _blobs(n=64)
    results = []
    for seed in (3, 3, 4):
        lk_random.set_seed(seed)
        m = _seq()
        m.compile(optimizer=optimizers.SGD(0.1), loss=SCCE)
        m.fit(x, y, epochs=2, batch_size=8, verbose=0)
        results.append(m.get_weights()[0])
    np.testing.assert_array_equal(results[0], results[1])
    assert not np.allclose(results[0], results[2])


def test_validation_split_and_data_and_initial_epoch():
    x, y = _blobs(n=100)
    m = _seq()
    m.compile(optimizer="adam", loss=SCCE, metrics=["acc"])
    h = m.fit(x, y, epochs=2, validation_split=0.2, verbose=0)
    assert set(h.history) == {"loss", "acc", "val_loss", "val_acc"}
    # the held-out part is the last 20 samples
    val = m.evaluate(x[80:], y[80:], verbose=0, return_dict=True)
    assert h.history["val_loss"][-1] == pytest.approx(val["loss"], rel=1e-5)
    h2 = m.fit(x, y, epochs=5, initial_epoch=3, validation_data=(x[:10], y[:10]), verbose=0)
    assert h2.epoch == [3, 4] and len(h2.history["val_loss"]) == 2
    assert m.optimizer.iterations.numpy() == 2 * 3 + 2 * 4


def test_dict_multi_input_multi_output_functional():
    rng = np.random.default_rng(1)
    xa = rng.standard_normal((60, 5)).astype(np.float32)
    xb = rng.standard_normal((60, 2)).astype(np.float32)
    y_cls = (xa[:, 0] > 0).astype(np.int64)
    y_reg = (xa[:, :1] + xb[:, :1]).astype(np.float32)
    a, b = Input(shape=(5,), name="a"), Input(shape=(2,), name="b")
    h = L.Concatenate()([L.Dense(8, activation="relu")(a), b])
    model = Model({"a": a, "b": b}, {"cls": L.Dense(2, name="cls")(h),
                                     "reg": L.Dense(1, name="reg")(h)})
    model.compile(optimizer="adam", loss={"cls": SCCE, "reg": "mse"},
                  loss_weights={"cls": 1.0, "reg": 0.5}, metrics={"cls": ["accuracy"]})
    h = model.fit({"a": xa, "b": xb}, {"cls": y_cls, "reg": y_reg}, epochs=2, verbose=0)
    assert set(h.history) == {"loss", "cls_loss", "reg_loss", "cls_accuracy"}
    total = h.history["cls_loss"][-1] + 0.5 * h.history["reg_loss"][-1]
    assert h.history["loss"][-1] == pytest.approx(total, rel=1e-4)
    out = model.predict({"a": xa, "b": xb}, verbose=0)
    assert out["cls"].shape == (60, 2) and out["reg"].shape == (60, 1)
    with pytest.raises(ValueError, match=r"missing inputs \['b'\]"):
        model.predict({"a": xa}, verbose=0)


def test_list_inputs_and_outputs_and_input_shape_errors():
    a, b = Input(shape=(4,)), Input(shape=(3,))
    out = L.Dense(2)(L.Concatenate()([a, b]))
    model = Model([a, b], out)
    assert model.predict([np.ones((5, 4)), np.ones((5, 3))], verbose=0).shape == (5, 2)
    with pytest.raises(ValueError, match=r"expected shape \(None, 3\), received \(5, 2\)"):
        model([np.ones((5, 4)), np.ones((5, 2))])
    with pytest.raises(ValueError, match="expects 2 input"):
        model(np.ones((5, 4)))
    seq = _seq()
    with pytest.raises(ValueError, match=r"sequential.*expected shape \(None, 6\).*\(4, 5\)"):
        seq.predict(np.ones((4, 5)), verbose=0)
    with pytest.raises(ValueError, match="ndim|rank|shape"):
        seq(np.ones((4, 6, 1)))


def test_dataset_like_iterables_and_steps_per_epoch():
    x, y = _blobs(n=64)

    class Batches:  # re-iterable, like lk.data.Dataset: a fresh pass per iter()
        def __init__(self, with_weights=False):
            self.passes = 0
            self.with_weights = with_weights

        def __iter__(self):
            self.passes += 1
            for i in range(0, 64, 16):
                if self.with_weights:
                    yield x[i:i + 16], y[i:i + 16], np.ones(16, np.float32)
                else:
                    yield x[i:i + 16], y[i:i + 16]

        def __len__(self):
            return 4

    m = _seq()
    m.compile(optimizer="adam", loss=SCCE, metrics=["accuracy"])
    data = Batches()
    m.fit(data, epochs=3, verbose=0)
    assert data.passes == 3 and m.optimizer.iterations.numpy() == 12
    m.fit(Batches(with_weights=True), epochs=1, verbose=0, validation_data=Batches())
    # an infinite generator needs steps_per_epoch; one iterator is kept across epochs
    def forever():
        while True:
            for i in range(0, 64, 16):
                yield x[i:i + 16], y[i:i + 16]
    before = m.optimizer.iterations.numpy()
    m.fit(forever(), epochs=2, steps_per_epoch=5, verbose=0)
    assert m.optimizer.iterations.numpy() == before + 10
    # a finite generator that runs out stops training with a warning
    with pytest.warns(UserWarning, match="ran out of data"):
        m.fit((b for b in list(Batches())), epochs=3, steps_per_epoch=3, verbose=0)
    with pytest.raises(ValueError, match="y and sample_weight must be None"):
        m.fit(Batches(), y, verbose=0)


def test_lk_data_dataset_if_available():
    data = pytest.importorskip("layerkit.data")
    if not hasattr(data, "Dataset"):
        pytest.skip("layerkit.data.Dataset is not available yet")
    x, y = _blobs(n=64)
    ds = data.Dataset.from_tensor_slices((x, y)).batch(16)
    m = _seq()
    m.compile(optimizer="adam", loss=SCCE, metrics=["accuracy"])
    h = m.fit(ds, epochs=2, verbose=0)
    assert m.optimizer.iterations.numpy() == 8 and len(h.history["loss"]) == 2
    assert m.predict(ds, verbose=0).shape == (64, 3)
    assert len(m.evaluate(ds, verbose=0)) == 2
    with pytest.raises(ValueError, match="no batches|empty"):
        _seq().compile("adam", SCCE) or None
        m.fit(ds.take(0), epochs=1, verbose=0)


def test_sample_weight_and_class_weight():
    x, y = _blobs(n=32)
    m = _seq()
    m.compile(optimizer="sgd", loss=SCCE)
    zero = np.zeros(32, np.float32)
    before = m.get_weights()
    m.fit(x, y, sample_weight=zero, epochs=1, verbose=0)
    for a, b in zip(before, m.get_weights()):
        np.testing.assert_allclose(a, b)  # zero weights: zero gradients
    # class_weight = sample weight per label
    m1, m2 = _seq(), _seq()
    m2.set_weights(m1.get_weights())
    for mm in (m1, m2):
        mm.compile(optimizer=optimizers.SGD(0.1), loss=SCCE)
    cw = {0: 1.0, 1: 2.0, 2: 0.5}
    m1.fit(x, y, class_weight=cw, epochs=1, shuffle=False, verbose=0)
    m2.fit(x, y, sample_weight=np.array([cw[int(c)] for c in y], np.float32), epochs=1,
           shuffle=False, verbose=0)
    np.testing.assert_allclose(m1.get_weights()[0], m2.get_weights()[0], rtol=1e-6)


def test_train_and_test_on_batch_and_predict_on_batch():
    x, y = _blobs(n=16)
    m = _seq()
    m.compile(optimizer="adam", loss=SCCE, metrics=["accuracy"])
    loss, acc = m.train_on_batch(x, y)
    assert np.isfinite(loss) and 0 <= acc <= 1
    logs = m.test_on_batch(x, y, return_dict=True)
    assert set(logs) == {"loss", "accuracy"}
    assert m.predict_on_batch(x).shape == (16, 3)
    assert m.optimizer.iterations.numpy() == 1


def test_custom_train_step_keras3_and_keras2_styles():
    x, y = _blobs(n=32)

    for cls in (Keras3Step, Keras2Step):
        m = cls()
        m.compile(optimizer=optimizers.Adam(0.05), loss=SCCE, metrics=["accuracy"])
        h = m.fit(x, y, epochs=5, verbose=0)
        assert set(h.history) == {"loss", "accuracy"}
        assert h.history["loss"][-1] < h.history["loss"][0]

    class GAN_like(Model):  # fully custom: own metrics as attributes, no compiled loss
        def __init__(self):
            super().__init__()
            self.net = L.Dense(1)
            self.tracker = metrics.Mean(name="custom")

        def call(self, x):
            return self.net(x)

        def train_step(self, data):
            x, _ = data
            with lk.GradientTape() as tape:
                loss = lk.reduce_mean(lk.square(self(x)))
            grads = tape.gradient(loss, self.trainable_variables)
            self.optimizer.apply_gradients(zip(grads, self.trainable_variables))
            self.tracker.update_state(loss)
            return {"custom": self.tracker.result()}

    g = GAN_like()
    g.compile(optimizer="sgd")
    h = g.fit(x, y, epochs=3, verbose=0)
    assert set(h.history) == {"custom"} and h.history["custom"][-1] < h.history["custom"][0]


def test_add_loss_and_regularizers_enter_the_loss():
    x, y = _blobs(n=16)

    class WithAddLoss(MLP):
        def call(self, x, training=None):
            out = super().call(x)
            self.add_loss(lk.constant(10.0))
            return out

    m = WithAddLoss()
    m.compile(optimizer="sgd", loss=SCCE)
    plain = MLP()
    plain.compile(optimizer="sgd", loss=SCCE)
    plain.build((None, 6))
    m.build((None, 6))
    m.set_weights(plain.get_weights())
    assert m.evaluate(x, y, verbose=0) == pytest.approx(plain.evaluate(x, y, verbose=0) + 10.0,
                                                        rel=1e-5)
    class ActivityPenalty(MLP):
        def call(self, x, training=None):
            out = super().call(x)
            self.add_loss(lk.reduce_mean(lk.square(out)))
            return out

    only_add_loss = ActivityPenalty()
    only_add_loss.compile(optimizer="sgd")  # no compiled loss: add_loss alone is minimised
    h = only_add_loss.fit(x, y, epochs=3, verbose=0)
    assert h.history["loss"][-1] < h.history["loss"][0]
    reg = Sequential([Input(shape=(6,)), L.Dense(3, kernel_regularizer="l2")])
    reg.compile(optimizer="sgd", loss=SCCE)
    no_reg = Sequential([Input(shape=(6,)), L.Dense(3)])
    no_reg.compile(optimizer="sgd", loss=SCCE)
    no_reg.set_weights(reg.get_weights())
    penalty = 0.01 * float(np.sum(reg.get_weights()[0] ** 2))
    assert reg.evaluate(x, y, verbose=0) == pytest.approx(
        no_reg.evaluate(x, y, verbose=0) + penalty, rel=1e-5)
    none = MLP()
    none.compile(optimizer="sgd")
    with pytest.raises(ValueError, match="no loss to compute"):
        none.fit(x, y, epochs=1, verbose=0)


def test_summary_tables(capsys):
    m = _seq()
    m.summary()
    out = capsys.readouterr().out
    assert 'Sequential: "sequential' in out
    assert "(None, 16)" in out and "Dense" in out and "112" in out
    assert "Total params: 163" in out and "Trainable params: 163" in out
    sub = MLP()
    unbuilt = []
    sub.summary(print_fn=unbuilt.append)  # Keras 3 lists an unbuilt model's layers
    assert "0 (unbuilt)" in unbuilt[0] and "Total params: 0" in unbuilt[0]
    sub(np.zeros((2, 6), np.float32))
    lines = []
    sub.summary(print_fn=lines.append)
    text = "\n".join(lines)
    assert "(None, 16)" in text and "(None, 3)" in text and "Total params: 163" in text
    m.layers[0].trainable = False
    lines = []
    m.summary(print_fn=lines.append)
    assert "Non-trainable params: 112" in "\n".join(lines)


def test_save_and_load_weights(tmp_path):
    x, y = _blobs(n=32)
    m = _seq()
    m.compile(optimizer="adam", loss=SCCE)
    m.fit(x, y, epochs=1, verbose=0)
    path = os.fspath(tmp_path / "model.weights")
    assert m.save_weights(path) == path
    fresh = Sequential([L.Dense(16, activation="relu"), L.Dense(3)])  # not built yet
    fresh.load_weights(path)
    np.testing.assert_allclose(fresh.predict(x, verbose=0), m.predict(x, verbose=0), rtol=1e-6)
    built = _seq()
    built.load_weights(path)
    np.testing.assert_allclose(built.predict(x, verbose=0), m.predict(x, verbose=0), rtol=1e-6)
    wrong = Sequential([Input(shape=(6,)), L.Dense(8), L.Dense(3)])
    with pytest.raises(Exception, match="shape"):
        wrong.load_weights(path)
    sub = MLP()
    sub.build((None, 6))
    sub.set_weights(m.get_weights())
    sub.save_weights(os.fspath(tmp_path / "sub"))
    sub2 = MLP()
    sub2.load_weights(os.fspath(tmp_path / "sub"))
    np.testing.assert_allclose(sub2.predict(x, verbose=0), m.predict(x, verbose=0), rtol=1e-6)


def test_checkpoint_resume_gives_the_same_weights(tmp_path):
    x, y = _blobs(n=48)

    def make():
        m = _seq()
        m.compile(optimizer=optimizers.Adam(0.01), loss=SCCE)
        return m

    lk_random.set_seed(0)
    a = make()
    b = make()
    b.set_weights(a.get_weights())
    lk_random.set_seed(1)
    a.fit(x, y, epochs=1, verbose=0)
    Checkpoint(model=a, optimizer=a.optimizer).write(os.fspath(tmp_path / "ck"))
    lk_random.set_seed(2)
    a.fit(x, y, epochs=1, verbose=0)
    # b: restore the mid-training state into fresh objects, then train on identically
    c = make()
    Checkpoint(model=c, optimizer=c.optimizer).read(os.fspath(tmp_path / "ck"))
    lk_random.set_seed(2)
    c.fit(x, y, epochs=1, verbose=0)
    for wa, wc in zip(a.get_weights(), c.get_weights()):
        np.testing.assert_allclose(wa, wc, rtol=1e-6)


def test_errors_name_the_problem():
    x, y = _blobs(n=16)
    m = _seq()
    with pytest.raises(RuntimeError, match="must be compiled before fit"):
        m.fit(x, y, verbose=0)
    with pytest.raises(ValueError, match="unknown optimizer"):
        m.compile(optimizer="adamm", loss=SCCE)
    with pytest.raises(ValueError, match="unknown loss"):
        m.compile(optimizer="adam", loss="sparse_categorical_crossentropyy")
    with pytest.raises(ValueError, match="unknown metric"):
        m.compile(optimizer="adam", loss=SCCE, metrics=["accuracyy"])
    m.compile(optimizer="adam", loss=SCCE)
    with pytest.raises(ValueError, match="label 7 is out of range"):
        m.fit(x, np.full(16, 7), verbose=0)
    with pytest.raises(ValueError, match=r"labels of shape \(16, 3\)"):
        m.fit(x, np.zeros((16, 3)), verbose=0)
    mse_model = _seq()
    mse_model.compile(optimizer="adam", loss="mse")
    with pytest.raises(ValueError, match=r"mean_squared_error|mse.*\(16, 2\).*\(16, 3\)"):
        mse_model.fit(x, np.zeros((16, 2)), verbose=0)
    with pytest.raises(ValueError, match="empty"):
        m.fit(x[:0], y[:0], verbose=0)
    with pytest.raises(ValueError, match="cardinality.*x: \\[16\\].*y: \\[15\\]"):
        m.fit(x, y[:15], verbose=0)
    with pytest.raises(ValueError, match="no batches"):
        m.fit([], epochs=1, verbose=0) if False else m.fit(iter([]), epochs=1, verbose=0)
    with pytest.raises(ValueError, match="batch_size"):
        m.fit(x, y, batch_size=0, verbose=0)
    with pytest.raises(TypeError, match="functional form"):
        Model(3)


def test_sequential_building_nesting_and_freezing():
    x = np.random.default_rng(0).standard_normal((32, 8)).astype(np.float32)
    y = np.ones((32, 1), np.float32)
    s = Sequential([L.Dense(4, input_shape=(8,)), L.Dense(1)])
    assert s.built and s.count_params() == 41
    s.add(L.Dense(2))
    assert s.layers[-1].built and s.layers[-1].kernel.shape == (1, 2)
    s.pop()
    assert len(s.layers) == 2 and s.get_layer(index=1) is s.layers[1]
    with pytest.raises(ValueError, match="no layer named 'nope'"):
        s.get_layer("nope")
    with pytest.raises(TypeError, match="expected a Layer"):
        s.add("dense")
    lazy = Sequential([L.Dense(3), L.Dense(1)])
    assert not lazy.built
    lazy.build((None, 8))
    assert lazy.built and lazy.count_params() == 31
    # a functional model as a layer of a Sequential; a subclassed model in a functional one
    inp = Input(shape=(8,))
    inner = Model(inp, L.Dense(4, activation="relu")(inp))
    outer = Sequential([inner, L.Dense(1)])
    outer.compile(optimizer="adam", loss="mse")
    outer.fit(x, y, epochs=1, verbose=0)
    np.testing.assert_allclose(outer.predict(x, verbose=0),
                               outer.layers[1](inner(x)).numpy(), rtol=1e-6)
    # frozen: nothing changes and nothing fails
    s.trainable = False
    s.compile(optimizer="adam", loss="mse")
    before = s.get_weights()
    s.fit(x, y, epochs=1, verbose=0)
    for a, b in zip(before, s.get_weights()):
        np.testing.assert_array_equal(a, b)
    # partly frozen: only the trainable layer moves
    p = Sequential([Input(shape=(8,)), L.Dense(4), L.Dense(1)])
    p.layers[0].trainable = False
    p.compile(optimizer="sgd", loss="mse")
    k0, k1 = p.layers[0].kernel.numpy().copy(), p.layers[1].kernel.numpy().copy()
    p.fit(x, y, epochs=1, verbose=0)
    np.testing.assert_array_equal(p.layers[0].kernel.numpy(), k0)
    assert not np.allclose(p.layers[1].kernel.numpy(), k1)
