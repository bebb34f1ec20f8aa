"""The Keras mask protocol: Masking and Embedding(mask_zero=True) create masks, layers
receive them (``mask=``), pass them on (``supports_masking``/``compute_mask``) or drop
them; masked RNN steps keep the state; losses and metrics leave masked steps out. All
against NumPy references written here."""
import warnings

import numpy as np
import pytest

import layerkit as lk
from layerkit.layers import (
    GRU,
    LSTM,
    RNN,
    Bidirectional,
    Dense,
    Embedding,
    Masking,
    SimpleRNN,
    SimpleRNNCell,
    get_keras_mask,
    set_keras_mask,
)

from .layer_test_util import check_layer_grads

IDS = np.array([[3, 1, 4, 0, 0], [0, 2, 5, 1, 0], [1, 0, 2, 0, 3]])
MASK = IDS != 0


def _x(*shape, seed=0):
    return np.random.default_rng(seed).normal(size=shape).astype(np.float32)


def np_sigmoid(z):
    return 1 / (1 + np.exp(-z))


def np_masked_rnn(x, mask, step, states, go_backwards=False, zero_output=False):
    """Keras's masked loop: a masked step keeps the states and repeats the previous
    output (zeros before the first kept step), or outputs zeros with zero_output."""
    order = range(x.shape[1])[::-1] if go_backwards else range(x.shape[1])
    outs, prev = [], np.zeros_like(step(x[:, 0], states)[0])
    for t in order:
        out, new = step(x[:, t], states)
        keep = mask[:, t][:, None]
        out = np.where(keep, out, 0.0 if zero_output else prev)
        states = [np.where(keep, n, s) for n, s in zip(new, states)]
        outs.append(out)
        prev = out
    return np.stack(outs, 1), states


def simple_step(k, r, b):
    def step(xt, states):
        h = np.tanh(xt @ k + states[0] @ r + b)
        return h, [h]
    return step


def lstm_step(k, r, b):
    def step(xt, states):
        h, c = states
        z = xt @ k + h @ r + b
        i, f, g, o = np.split(z, 4, axis=-1)
        c = np_sigmoid(f) * c + np_sigmoid(i) * np.tanh(g)
        h = np_sigmoid(o) * np.tanh(c)
        return h, [h, c]
    return step


# ---- creating and passing masks -------------------------------------------------------------
def test_embedding_mask_zero_and_masking_create_masks():
    e = Embedding(6, 3, mask_zero=True)
    y = e(IDS)
    np.testing.assert_array_equal(get_keras_mask(y).numpy(), MASK)
    assert Embedding.from_config(e.get_config()).mask_zero
    assert get_keras_mask(Embedding(6, 3)(IDS)) is None
    x = _x(3, 5, 2)
    x[~MASK] = 0.0
    x[0, 0, 0] = 0.0  # one zero feature does not mask a step
    y = Masking()(x)
    np.testing.assert_array_equal(get_keras_mask(y).numpy(), MASK)
    x[~MASK] = 7.0
    y = Masking(mask_value=7.0)(x)
    np.testing.assert_array_equal(get_keras_mask(y).numpy(), MASK)
    np.testing.assert_array_equal(y.numpy(), np.where(MASK[..., None], x, 0.0))
    assert Masking.from_config(Masking(mask_value=7.0).get_config()).mask_value == 7.0


def test_layers_receive_pass_or_drop_masks():
    x = Embedding(6, 3, mask_zero=True)(IDS)
    np.testing.assert_array_equal(get_keras_mask(Dense(2)(x)).numpy(), MASK)
    with pytest.warns(UserWarning, match="does not support masking"):
        assert get_keras_mask(lk.layers.Flatten()(x)) is None
    seen = {}

    class Consumer(lk.layers.Layer):  # takes `mask`, defines no compute_mask
        def call(self, inputs, mask=None):
            seen["mask"] = mask
            return inputs[:, 0]

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a layer that takes `mask` consumed it: no warning
        y = Consumer()(x)
    np.testing.assert_array_equal(np.asarray(seen["mask"]), MASK)
    assert get_keras_mask(y) is None

    class Flip(lk.layers.Layer):  # a user's compute_mask
        def call(self, inputs):
            return inputs * 1.0  # (a returned input keeps the mask it has, as in Keras)

        def compute_mask(self, inputs, mask=None):
            return lk.logical_not(mask)

    np.testing.assert_array_equal(get_keras_mask(Flip()(x)).numpy(), ~MASK)
    # an explicit mask= beats the attached one, and a cast keeps the mask
    Consumer()(x, mask=np.ones((3, 5), bool))
    assert np.asarray(seen["mask"]).all()
    t = lk.constant(_x(3, 5, 2).astype(np.float64))
    set_keras_mask(t, MASK)
    np.testing.assert_array_equal(get_keras_mask(Dense(2)(t)).numpy(), MASK)


def test_masks_travel_through_sequential_functional_and_function():
    seq = lk.Sequential([lk.Input(shape=(5,), dtype="int32"), Embedding(6, 3, mask_zero=True),
                         Dense(4), LSTM(2, return_sequences=True)])
    y = seq(IDS)
    np.testing.assert_array_equal(get_keras_mask(y).numpy(), MASK)
    inp = lk.Input(shape=(5,), dtype="int32")
    model = lk.Model(inp, GRU(2, return_sequences=True)(Embedding(6, 3, mask_zero=True)(inp)))
    np.testing.assert_array_equal(get_keras_mask(model(IDS)).numpy(), MASK)

    @lk.function
    def masked_sum(ids):
        out = model(ids)
        return lk.reduce_sum(out * lk.cast(get_keras_mask(out), out.dtype)[..., None])

    ref = (model(IDS).numpy() * MASK[..., None]).sum()
    np.testing.assert_allclose(masked_sum(IDS).numpy(), ref, rtol=1e-5)
    # a mask given to a functional model's call is attached to its input
    inp2 = lk.Input(shape=(5, 3))
    m2 = lk.Model(inp2, LSTM(2)(inp2))
    x = _x(3, 5, 3)
    np.testing.assert_allclose(m2(x, mask=MASK).numpy(), m2.layers[-1](x, mask=MASK).numpy(),
                               rtol=1e-6)


# ---- masked recurrent layers ---------------------------------------------------------------
@pytest.mark.parametrize("go_backwards", [False, True])
@pytest.mark.parametrize("zero_output", [False, True])
def test_simple_rnn_masked_steps_match_numpy(go_backwards, zero_output):
    x = _x(3, 5, 4)
    layer = SimpleRNN(3, return_sequences=True, return_state=True, go_backwards=go_backwards,
                      zero_output_for_mask=zero_output)
    seq, h = layer(x, mask=MASK)
    k, r, b = (w.numpy() for w in layer.weights)
    ref_seq, ref_states = np_masked_rnn(x, MASK, simple_step(k, r, b), [np.zeros((3, 3))],
                                        go_backwards, zero_output)
    np.testing.assert_allclose(seq.numpy(), ref_seq, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(h.numpy(), ref_states[0], rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(get_keras_mask(seq).numpy(), MASK)
    assert get_keras_mask(h) is None


def test_lstm_masked_last_output_and_states_match_numpy():
    x = _x(3, 5, 4)
    layer = LSTM(3, return_state=True)
    out, h, c = layer(x, mask=MASK)
    k, r, b = (w.numpy() for w in layer.weights)
    seq, (rh, rc) = np_masked_rnn(x, MASK, lstm_step(k, r, b), [np.zeros((3, 3))] * 2)
    np.testing.assert_allclose(out.numpy(), seq[:, -1], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(h.numpy(), rh, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(c.numpy(), rc, rtol=1e-5, atol=1e-6)
    assert get_keras_mask(out) is None


def test_right_padding_equals_the_unpadded_sequence():
    # a padded sample's final state is its unpadded prefix's final state
    x = _x(3, 5, 4)
    lengths = [3, 5, 1]
    mask = np.arange(5)[None] < np.array(lengths)[:, None]
    for layer in (LSTM(3), GRU(3), SimpleRNN(3)):
        out = layer(x, mask=mask).numpy()
        for i, n in enumerate(lengths):
            np.testing.assert_allclose(out[i], layer(x[i:i + 1, :n]).numpy()[0], rtol=1e-5,
                                       atol=1e-6)


def test_bidirectional_masks_and_zero_outputs():
    x = _x(3, 5, 4)
    layer = Bidirectional(SimpleRNN(2, return_sequences=True))
    assert layer.forward_layer.zero_output_for_mask and layer.backward_layer.zero_output_for_mask
    y = layer(x, mask=MASK)
    w = [v.numpy() for v in layer.weights]
    fwd, _ = np_masked_rnn(x, MASK, simple_step(*w[:3]), [np.zeros((3, 2))], False, True)
    bwd, _ = np_masked_rnn(x, MASK, simple_step(*w[3:]), [np.zeros((3, 2))], True, True)
    np.testing.assert_allclose(y.numpy(), np.concatenate([fwd, bwd[:, ::-1]], -1), rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_array_equal(get_keras_mask(y).numpy(), MASK)
    assert np.all(y.numpy()[~MASK] == 0)
    last = Bidirectional(GRU(2), merge_mode=None)(x, mask=MASK)
    assert all(get_keras_mask(t) is None for t in last)


def test_masked_rnn_gradients_and_errors():
    x = _x(2, 4, 3).astype(np.float64)
    mask = np.array([[1, 1, 0, 1], [0, 1, 1, 0]], bool)
    check_layer_grads(LSTM(2, return_sequences=True, dtype="float64"), [x], {"mask": mask})
    check_layer_grads(GRU(2, go_backwards=True, dtype="float64"), [x], {"mask": mask})
    with pytest.raises(ValueError, match=r"mask must have shape \(batch, time\) = \(2, 4\)"):
        SimpleRNN(2)(x, mask=np.ones((2, 3), bool))


# ---- losses and metrics -----------------------------------------------------------------------
def np_sparse_ce(probs, labels):
    return -np.log(np.clip(np.take_along_axis(probs, labels[..., None], -1)[..., 0], 1e-7, 1))


@pytest.mark.parametrize("run_eagerly", [False, True])
def test_masked_steps_leave_the_loss_and_metrics(run_eagerly):
    model = lk.Sequential([lk.Input(shape=(5,), dtype="int32"), Embedding(6, 3, mask_zero=True),
                           SimpleRNN(4, return_sequences=True), Dense(3, activation="softmax")])
    model.compile("sgd", "sparse_categorical_crossentropy", metrics=["accuracy"],
                  run_eagerly=run_eagerly)
    labels = np.random.default_rng(1).integers(0, 3, size=(3, 5))
    probs = model.predict(IDS, verbose=0)
    ce = np_sparse_ce(probs, labels)
    acc = probs.argmax(-1) == labels
    logs = model.evaluate(IDS, labels, verbose=0, return_dict=True)
    np.testing.assert_allclose(logs["loss"], ce[MASK].mean(), rtol=1e-5)
    np.testing.assert_allclose(logs["accuracy"], acc[MASK].mean(), rtol=1e-6)
    # per-sample weights with a per-step mask: each kept step weighs its sample's weight
    sw = np.array([1.0, 0.5, 2.0], np.float32)
    logs = model.evaluate(IDS, labels, sample_weight=sw, verbose=0, return_dict=True)
    w = sw[:, None] * MASK
    np.testing.assert_allclose(logs["loss"], (ce * w).sum() / MASK.sum(), rtol=1e-5)
    # fit minimises the masked loss: padded steps' labels do not matter
    other = np.where(MASK, labels, (labels + 1) % 3)
    before = [v.numpy() for v in model.weights]
    model.fit(IDS, labels, batch_size=3, shuffle=False, verbose=0)
    after = [v.numpy() for v in model.weights]
    for v, a in zip(model.weights, before):
        v.assign(a)
    model.fit(IDS, other, batch_size=3, shuffle=False, verbose=0)
    for a, b in zip(after, model.weights):
        np.testing.assert_allclose(b.numpy(), a, rtol=1e-5, atol=1e-7)


def test_loss_objects_read_the_mask_of_y_pred():
    y_pred = lk.constant(_x(3, 5, 2))
    y_true = _x(3, 5, 2, seed=1)
    set_keras_mask(y_pred, MASK)
    mse = ((y_pred.numpy() - y_true) ** 2).mean(-1)
    np.testing.assert_allclose(float(lk.losses.MeanSquaredError()(y_true, y_pred)),
                               mse[MASK].mean(), rtol=1e-5)
    np.testing.assert_allclose(float(lk.losses.MeanSquaredError(reduction="sum")(y_true, y_pred)),
                               mse[MASK].sum(), rtol=1e-5)
    set_keras_mask(y_pred, np.zeros((3, 5), bool))  # nothing kept: 0, not nan
    assert float(lk.losses.MeanSquaredError()(y_true, y_pred)) == 0.0


def test_stacked_rnn_masked():
    x = _x(3, 5, 4)
    layer = RNN([SimpleRNNCell(3), SimpleRNNCell(2)], return_sequences=True)
    y = layer(x, mask=MASK)
    w = [v.numpy() for v in layer.weights]
    s1, s2 = simple_step(*w[:3]), simple_step(*w[3:])

    def step(xt, states):
        h1, _ = s1(xt, [states[0]])
        h2, _ = s2(h1, [states[1]])
        return h2, [h1, h2]

    ref, _ = np_masked_rnn(x, MASK, step, [np.zeros((3, 3)), np.zeros((3, 2))])
    np.testing.assert_allclose(y.numpy(), ref, rtol=1e-5, atol=1e-6)
