"""fit/evaluate/predict arguments: class_weight as Keras handles it, and a clear error
naming the argument and the received value for every bad one."""
from __future__ import annotations

import numpy as np
import pytest

from layerkit import layers as L
from layerkit import losses, optimizers
from layerkit.models import Input, Model, Sequential
from tests.models.test_model import SCCE, _blobs, _seq


def _fit_pair(make, loss, x, y, **kw):
    """Two copies of one model fitted with ``kw`` and with the sample weights it should
    mean; returns their weights."""
    a, b = make(), make()
    b.set_weights(a.get_weights())
    for m in (a, b):
        m.compile(optimizer=optimizers.SGD(0.1), loss=loss)
    sw = kw.pop("expected_sample_weight")
    a.fit(x, y, epochs=1, batch_size=8, shuffle=False, verbose=0, **kw)
    b.fit(x, y, sample_weight=sw, epochs=1, batch_size=8, shuffle=False, verbose=0)
    return a.get_weights(), b.get_weights()


def _assert_same(pair):
    for wa, wb in zip(*pair):
        np.testing.assert_allclose(wa, wb, rtol=1e-6, atol=1e-7)


def test_classes_left_out_of_class_weight_get_weight_one():
    """Keras 3: a class without an entry (inside or beyond the given keys) weighs 1."""
    x, y = _blobs(n=32)
    expected = np.where(y == 1, 2.0, 1.0).astype(np.float32)
    _assert_same(_fit_pair(_seq, SCCE, x, y, class_weight={1: 2.0},
                           expected_sample_weight=expected))


def test_float_targets_are_rounded_to_classes_as_in_keras():
    x = np.random.default_rng(1).standard_normal((24, 6)).astype(np.float32)
    y = np.tile(np.array([0.2, 0.9, 1.6, 1.4], np.float32), 6)   # classes 0, 1, 2, 1
    expected = np.tile(np.array([1.0, 3.0, 5.0, 3.0], np.float32), 6)

    def make():
        return Sequential([Input(shape=(6,)), L.Dense(1)])

    _assert_same(_fit_pair(make, "mse", x, y, class_weight={0: 1.0, 1: 3.0, 2: 5.0},
                           expected_sample_weight=expected))


def test_one_hot_targets_use_their_argmax():
    x, y = _blobs(n=32)
    onehot = np.eye(3, dtype=np.float32)[y]
    expected = np.array([0.5, 1.0, 4.0], np.float32)[y]
    _assert_same(_fit_pair(_seq, losses.CategoricalCrossentropy(from_logits=True), x, onehot,
                           class_weight={0: 0.5, 2: 4.0}, expected_sample_weight=expected))


@pytest.mark.parametrize("class_weight, error, match", [
    ({0: 1.0, 1: 2.0, -1: 5.0}, ValueError, "negative key -1"),
    ({0: 1.0, 3: 2.0}, ValueError, "key 3, but there are 3 classes"),
    ({0.0: 1.0}, TypeError, "integer class indices, received the key 0.0"),
    ({"0": 1.0}, TypeError, "integer class indices, received the key '0'"),
    ({True: 1.0}, TypeError, "received the key True"),
    ({0: "heavy"}, ValueError, "class_weight\\[0\\] must be a finite number"),
    ({0: float("nan")}, ValueError, "class_weight\\[0\\] must be a finite number"),
    ({}, ValueError, "class_weight is empty"),
    ([1.0, 2.0], TypeError, "class_weight must be a dict"),
])
@pytest.mark.parametrize("form", ["sequential", "functional"])
def test_bad_class_weight_is_refused(class_weight, error, match, form):
    x, y = _blobs(n=16)
    if form == "sequential":
        m = _seq()
    else:
        inp = Input(shape=(6,))
        m = Model(inp, L.Dense(3)(inp))
    m.compile(optimizer="sgd", loss=SCCE)
    before = [w.copy() for w in m.get_weights()]
    with pytest.raises(error, match=f"fit: .*{match}"):
        m.fit(x, y, class_weight=class_weight, verbose=0)
    with pytest.raises(error, match=f"train_on_batch: .*{match}"):
        m.train_on_batch(x, y, class_weight=class_weight)
    for a, b in zip(before, m.get_weights()):
        np.testing.assert_array_equal(a, b)   # refused before any step


def test_class_weight_key_beyond_one_hot_width_and_3d_targets():
    x, y = _blobs(n=16)

    class Free(Model):   # a subclassed model: its output width is not known up front
        def __init__(self):
            super().__init__()
            self.d = L.Dense(3)

        def call(self, x):
            return self.d(x)

    m = Free()
    m.compile(optimizer="sgd", loss=losses.CategoricalCrossentropy(from_logits=True))
    with pytest.raises(ValueError, match="fit: class_weight has the key 5, but the one-hot "
                                         "targets have 3 classes"):
        m.fit(x, np.eye(3, dtype=np.float32)[y], class_weight={0: 1.0, 5: 2.0}, verbose=0)
    seq = Sequential([Input(shape=(4, 6)), L.Dense(3)])
    seq.compile(optimizer="sgd", loss=losses.CategoricalCrossentropy(from_logits=True))
    with pytest.raises(ValueError, match="3 or more dimensions; received y of shape "
                                         "\\(8, 4, 3\\)"):
        seq.fit(np.zeros((8, 4, 6), np.float32), np.zeros((8, 4, 3), np.float32),
                class_weight={0: 1.0}, verbose=0)


X, Y = _blobs(n=16)


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(x="abc"), TypeError, "fit: x must be arrays.*received a str: 'abc'"),
    (dict(y="labels"), TypeError, "fit: y must be arrays.*received a str: 'labels'"),
    (dict(x=3.5), ValueError, "fit: x must be an array with a batch axis.*3.5"),
    (dict(epochs=2.5), TypeError, "fit: epochs must be an integer >= 0, received epochs=2.5"),
    (dict(epochs=-1), ValueError, "received epochs=-1"),
    (dict(epochs="2"), TypeError, "received epochs='2'"),
    (dict(verbose="loud"), ValueError, "fit: verbose must be 'auto', 0, 1 or 2, received "
                                       "verbose='loud'"),
    (dict(verbose=3), ValueError, "received verbose=3"),
    (dict(steps_per_epoch=0), ValueError, "fit: steps_per_epoch must be a positive integer "
                                          "or None, received steps_per_epoch=0"),
    (dict(steps_per_epoch=1.5), TypeError, "received steps_per_epoch=1.5"),
    (dict(batch_size=0), ValueError, "fit: batch_size must be a positive integer or None, "
                                     "received batch_size=0"),
    (dict(batch_size=8.0), TypeError, "received batch_size=8.0"),
    (dict(batch_size=True), TypeError, "received batch_size=True"),
    (dict(validation_split=1.0), ValueError, "validation_split must be a number in \\[0, 1\\), "
                                             "received validation_split=1.0"),
    (dict(validation_split=-0.2), ValueError, "received validation_split=-0.2"),
    (dict(validation_split="0.2"), ValueError, "received validation_split='0.2'"),
    (dict(validation_freq=0), ValueError, "validation_freq must be a positive integer, "
                                          "received validation_freq=0"),
    (dict(validation_steps=0), ValueError, "received validation_steps=0"),
    (dict(validation_batch_size=-4), ValueError, "received validation_batch_size=-4"),
    (dict(initial_epoch=-1), ValueError, "initial_epoch must be an integer >= 0"),
    (dict(shuffle="yes"), ValueError, "fit: shuffle must be True, False or 'batch', "
                                      "received shuffle='yes'"),
    (dict(sample_weight=np.ones(15)), ValueError, "cardinality.*sample_weight: \\[15\\]"),
    (dict(y=Y[:10]), ValueError, "cardinality.*x: \\[16\\], y: \\[10\\]"),
    (dict(sample_weight="w"), TypeError, "fit: sample_weight must be arrays.*'w'"),
])
def test_bad_fit_arguments_name_the_argument_and_value(kwargs, error, match):
    m = _seq()
    m.compile(optimizer="sgd", loss=SCCE)
    args = dict(x=X, y=Y, verbose=0)
    args.update(kwargs)
    with pytest.raises(error, match=match):
        m.fit(**args)


@pytest.mark.parametrize("method, kwargs, error, match", [
    ("evaluate", dict(steps=0), ValueError, "evaluate: steps must be a positive integer or "
                                            "None, received steps=0"),
    ("evaluate", dict(batch_size="3"), TypeError, "evaluate: batch_size .* received "
                                                  "batch_size='3'"),
    ("evaluate", dict(verbose="loud"), ValueError, "evaluate: verbose must be"),
    ("evaluate", dict(x="abc"), TypeError, "evaluate: x must be arrays"),
    ("predict", dict(steps=2.0), TypeError, "predict: steps must be a positive integer or "
                                            "None, received steps=2.0"),
    ("predict", dict(batch_size=-1), ValueError, "predict: batch_size .* received "
                                                 "batch_size=-1"),
    ("predict", dict(verbose="x"), ValueError, "predict: verbose must be"),
    ("predict", dict(x="abc"), TypeError, "predict: x must be arrays"),
])
def test_bad_evaluate_and_predict_arguments(method, kwargs, error, match):
    m = _seq()
    m.compile(optimizer="sgd", loss=SCCE)
    args = dict(x=X, verbose=0) | (dict(y=Y) if method == "evaluate" else {})
    args.update(kwargs)
    with pytest.raises(error, match=match):
        getattr(m, method)(**args)


def test_valid_edge_values_are_accepted():
    m = _seq()
    m.compile(optimizer="sgd", loss=SCCE)
    assert m.fit(X, Y, epochs=0, verbose=0).history == {}
    hist = m.fit(X, Y, epochs=np.int64(2), batch_size=np.int32(8), verbose=True,
                 validation_split=0, shuffle="batch", steps_per_epoch=None)
    assert len(hist.history["loss"]) == 2
