"""stateful=True recurrent layers (Keras 3 semantics): each call starts from the states the
previous call ended with, so consecutive chunks of a sequence give the outputs and final
states of one call on the whole sequence (checked against the NumPy references of
test_recurrent), eagerly, under lk.function and inside fit/predict's traced steps."""
import warnings

import numpy as np
import pytest

import layerkit as lk
from layerkit.autodiff.function.api import EagerFallbackWarning
from layerkit.layers import (
    GRU,
    LSTM,
    RNN,
    Bidirectional,
    Dense,
    GRUCell,
    Layer,
    LSTMCell,
    SimpleRNN,
    SimpleRNNCell,
)

from .test_recurrent import _set_random_weights, _x, np_gru, np_lstm, np_simple_rnn

B, T, F, U = 2, 7, 3, 4
CUTS = (3, 5)   # chunks [0:3], [3:5], [5:7]


def _chunks(x):
    edges = (0,) + CUTS + (x.shape[1],)
    return [x[:, a:b] for a, b in zip(edges[:-1], edges[1:])]


def _reference(cls, weights, x, **cfg):
    """NumPy outputs and final states of one call on the whole sequence from zeros."""
    k, r, b = weights
    if cls is SimpleRNN:
        return np_simple_rnn(x, k, r, b, np.zeros((B, U), np.float32))
    if cls is LSTM:
        return np_lstm(x, k, r, b, np.zeros((B, U), np.float32), np.zeros((B, U), np.float32))
    return np_gru(x, k, r, b, np.zeros((B, U), np.float32), cfg.get("reset_after", True))


class _LoopLSTMCell(LSTMCell):
    """The stock cell's math in a subclass: RNN runs it through the step loop."""


def _stateful(cls, **cfg):
    if cls is _LoopLSTMCell:
        layer = RNN(cls(U), stateful=True, return_sequences=True, return_state=True)
    else:
        layer = cls(U, stateful=True, return_sequences=True, return_state=True, **cfg)
    layer.build((B, T, F))
    return layer, _set_random_weights(layer)


# (class, config): the default configurations take the fused path; the others the loop.
CASES = [(SimpleRNN, {}), (LSTM, {}), (GRU, {}), (GRU, {"reset_after": False}),
         (_LoopLSTMCell, {})]


@pytest.mark.parametrize("cls,cfg", CASES)
def test_chunks_match_one_call_on_the_whole_sequence(cls, cfg):
    layer, weights = _stateful(cls, **cfg)
    x = _x(B, T, F)
    outs, states = [], None
    for chunk in _chunks(x):
        out, *states = layer(chunk)
        outs.append(out.numpy())
    seq, final = _reference(LSTM if cls is _LoopLSTMCell else cls, weights, x, **cfg)
    np.testing.assert_allclose(np.concatenate(outs, 1), seq, rtol=1e-5, atol=1e-5)
    for got, kept, want in zip(states, layer.states, final):
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-5)
        np.testing.assert_array_equal(kept.numpy(), got.numpy())


class _MinimalCell(Layer):
    """A user cell (Keras's doc example): ``h = x K + h R``; runs the step loop."""

    def __init__(self, units, **kwargs):
        super().__init__(**kwargs)
        self.units, self.state_size = units, units

    def build(self, input_shape):
        self.kernel = self.add_weight("kernel", (input_shape[-1], self.units))
        self.recurrent_kernel = self.add_weight("recurrent_kernel", (self.units, self.units))

    def call(self, inputs, states):
        h = lk.matmul(inputs, self.kernel) + lk.matmul(states[0], self.recurrent_kernel)
        return h, [h]


@pytest.mark.parametrize("make_cell", [
    lambda: _MinimalCell(U),
    lambda: [SimpleRNNCell(3), LSTMCell(U)],          # stacked: nested states
    lambda: [GRUCell(3), _MinimalCell(U)],
])
def test_rnn_with_any_cell_chunks_match_the_whole_sequence(make_cell):
    x = _x(B, T, F)
    plain = RNN(make_cell(), return_sequences=True, return_state=True)
    seq, *final = plain(x)
    layer = RNN(make_cell(), return_sequences=True, return_state=True, stateful=True)
    layer.build((B, T, F))
    layer.set_weights(plain.get_weights())
    outs = []
    for chunk in _chunks(x):
        out, *states = layer(chunk)
        outs.append(out.numpy())
    np.testing.assert_allclose(np.concatenate(outs, 1), seq.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.concatenate([s.numpy() for s in _flat(states)], 1),
                               np.concatenate([s.numpy() for s in _flat(final)], 1),
                               rtol=1e-5, atol=1e-6)
    kept = _flat(layer.states)
    assert [v.shape for v in kept] == [s.shape for s in _flat(states)]
    for v, s in zip(kept, _flat(states)):
        np.testing.assert_array_equal(v.numpy(), s.numpy())


def _flat(x):
    if isinstance(x, (list, tuple)):
        return [y for e in x for y in _flat(e)]
    return [x]


def test_go_backwards_continues_over_chunks_fed_last_first():
    x = _x(B, T, F)
    plain = GRU(U, go_backwards=True, return_state=True)
    _, whole = plain(x)
    layer = GRU(U, go_backwards=True, stateful=True)
    layer.build((B, T, F))
    layer.set_weights(plain.get_weights())
    for chunk in _chunks(x)[::-1]:
        layer(chunk)
    np.testing.assert_allclose(layer.states[0].numpy(), whole.numpy(), rtol=1e-5, atol=1e-6)


def test_masked_steps_keep_the_previous_state_across_chunks():
    x = _x(B, T, F)
    mask = np.array([[1, 1, 0, 1, 0, 1, 1], [1, 0, 0, 1, 0, 1, 0]], bool)  # chunks start kept
    w_layer, weights = _stateful(SimpleRNN)
    k, r, b = weights
    outs = []
    edges = (0,) + CUTS + (T,)
    for lo, hi in zip(edges[:-1], edges[1:]):
        out, _ = w_layer(x[:, lo:hi], mask=mask[:, lo:hi])
        outs.append(out.numpy())
    # NumPy: a masked step keeps h and repeats the previous output.
    h = np.zeros((B, U), np.float32)
    want = []
    for t in range(T):
        new = np.tanh(x[:, t] @ k + b + h @ r)
        h = np.where(mask[:, t:t + 1], new, h)
        want.append(h)
    np.testing.assert_allclose(np.concatenate(outs, 1), np.stack(want, 1), rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_allclose(w_layer.states[0].numpy(), h, rtol=1e-5, atol=1e-6)


def test_reset_state_zeros_or_sets_the_states():
    x = _x(B, T, F)
    layer, weights = _stateful(LSTM)
    layer(x)
    assert np.abs(layer.states[0].numpy()).sum() > 0
    layer.reset_state()
    for v in layer.states:
        np.testing.assert_array_equal(v.numpy(), np.zeros((B, U), np.float32))
    seq, _ = _reference(LSTM, weights, x)
    np.testing.assert_allclose(layer(x)[0].numpy(), seq, rtol=1e-5, atol=1e-5)
    # Keras 2's reset_states(states=...): start the next call from given values.
    h0, c0 = _x(B, U, seed=3), _x(B, U, seed=4)
    layer.reset_states([h0, c0])
    np.testing.assert_array_equal(layer.states[1].numpy(), c0)
    want, _ = np_lstm(x, *weights, h0, c0)
    np.testing.assert_allclose(layer(x)[0].numpy(), want, rtol=1e-5, atol=1e-5)
    layer.reset_states()   # the Keras 2 spelling zeros too
    assert not np.any(layer.states[0].numpy())


def test_reset_state_of_stacked_cells_takes_nested_or_flat_values():
    layer = RNN([SimpleRNNCell(3), LSTMCell(U)], stateful=True)
    layer(_x(B, T, F))
    values = [_x(B, 3, seed=5), [_x(B, U, seed=6), _x(B, U, seed=7)]]
    layer.reset_state(values)
    np.testing.assert_array_equal(layer.states[1][1].numpy(), values[1][1])
    layer.reset_state()
    assert all(not np.any(v.numpy()) for v in _flat(layer.states))
    layer.reset_state(_flat(values))
    np.testing.assert_array_equal(layer.states[0][0].numpy(), values[0])


def test_initial_state_overrides_and_the_final_state_is_kept():
    x = _x(B, T, F)
    layer, weights = _stateful(SimpleRNN)
    layer(x)   # some state that initial_state must override
    h0 = _x(B, U, seed=9)
    out, h = layer(x, initial_state=[h0])
    want, (hw,) = np_simple_rnn(x, *weights, h0)
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(layer.states[0].numpy(), hw, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(layer.states[0].numpy(), h.numpy())


def test_states_are_not_weights_as_in_keras_3():
    layer, weights = _stateful(LSTM)
    layer(_x(B, T, F))
    assert [w.name for w in layer.weights] == ["kernel", "recurrent_kernel", "bias"]
    assert layer.non_trainable_weights == []
    assert len(layer.get_weights()) == 3
    for v in layer.states:
        assert isinstance(v, lk.Variable) and not v.trainable and v.shape == (B, U)
    model = lk.Sequential([lk.Input(batch_shape=(B, T, F)), LSTM(U, stateful=True)])
    assert len(model.weights) == 3 and model.layers[0].states[0].shape == (B, U)
    assert SimpleRNN(U).states is None


def test_checkpoints_hold_the_weights_not_the_states(tmp_path):
    model = lk.Sequential([lk.Input(batch_shape=(B, 3, F)), LSTM(U, stateful=True)])
    model(_x(B, 3, F))
    path = lk.train.Checkpoint(model=model).write(str(tmp_path / "ckpt"))
    shapes = [tuple(shape) for _, shape in lk.train.list_variables(path)]
    assert (U, 4 * U) in shapes and (B, U) not in shapes
    lk.train.Checkpoint(model=model).read(path).assert_existing_objects_matched()


def test_non_stateful_layers_keep_no_states():
    layer = GRU(U)
    layer(_x(B, T, F))
    assert layer.states is None and not layer.stateful
    layer.reset_state()   # nothing to reset (Keras 3: no error)
    a, b = layer(_x(B, T, F)).numpy(), layer(_x(B, T, F)).numpy()
    np.testing.assert_array_equal(a, b)


# ---- traced: lk.function, fit, predict ------------------------------------------------------
@pytest.mark.parametrize("mask", [False, True])
def test_lk_function_updates_the_states_on_every_call(mask):
    layer, weights = _stateful(GRU)
    x = _x(B, 9, F)
    m = np.ones((B, 3), bool)
    f = lk.function(lambda c, mk: layer(c, mask=mk)) if mask else lk.function(layer)
    outs = []
    with warnings.catch_warnings():
        warnings.simplefilter("error", EagerFallbackWarning)
        for i in range(3):
            chunk = x[:, 3 * i:3 * i + 3]
            out = f(chunk, m) if mask else f(chunk)
            outs.append(out[0].numpy())
    assert f.trace_count <= 2
    seq, (h,) = np_gru(x, *weights, np.zeros((B, U), np.float32))
    np.testing.assert_allclose(np.concatenate(outs, 1), seq, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(layer.states[0].numpy(), h, rtol=1e-5, atol=1e-5)
    layer.reset_state()   # read live: the next call starts from zeros again
    out = f(x[:, :3], m) if mask else f(x[:, :3])
    np.testing.assert_allclose(out[0].numpy(), seq[:, :3], rtol=1e-5, atol=1e-5)


def _chunked_dataset(x, n_chunks):
    """Consecutive chunks as consecutive batches: batch i holds chunk i of every sequence."""
    return np.concatenate(np.split(x, n_chunks, axis=1), axis=0)


def test_fit_and_predict_carry_the_states_over_consecutive_batches():
    x = _x(B, 9, F)
    model = lk.Sequential([LSTM(U, stateful=True, batch_input_shape=(B, 3, F)), Dense(1)])
    lstm = model.layers[0]
    weights = _set_random_weights(lstm)
    model.compile(lk.optimizers.SGD(learning_rate=0.0), "mse")
    xs = _chunked_dataset(x, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("error", EagerFallbackWarning)
        model.fit(xs, np.zeros((3 * B, 1), np.float32), batch_size=B, shuffle=False,
                  epochs=1, verbose=0)
    _, (h, c) = np_lstm(x, *weights, np.zeros((B, U), np.float32), np.zeros((B, U), np.float32))
    np.testing.assert_allclose(lstm.states[0].numpy(), h, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(lstm.states[1].numpy(), c, rtol=1e-5, atol=1e-5)
    lstm.reset_state()
    pred = model.predict(xs, batch_size=B, verbose=0)
    dense = model.layers[1].get_weights()
    for i in range(3):
        _, (hi, _) = np_lstm(x[:, :3 * i + 3], *weights, np.zeros((B, U), np.float32),
                             np.zeros((B, U), np.float32))
        np.testing.assert_allclose(pred[B * i:B * i + B], hi @ dense[0] + dense[1], rtol=1e-4,
                                   atol=1e-5)


def test_fit_with_training_updates_keeps_carrying_states():
    # With a real learning rate: the stored state after each batch is the layer run from
    # the previous stored state with the weights of that step (checked step by step).
    x = _x(B, 6, F)
    model = lk.Sequential([SimpleRNN(U, stateful=True, batch_input_shape=(B, 3, F)),
                           Dense(1)])
    rnn = model.layers[0]
    model.compile(lk.optimizers.SGD(learning_rate=0.1), "mse")
    y = _x(B, 1, seed=2)
    h = np.zeros((B, U), np.float32)
    for chunk in _chunks_of(x, 3):
        k, r, b = rnn.get_weights()
        model.train_on_batch(chunk, y)
        _, (h,) = np_simple_rnn(chunk, k, r, b, h)
        np.testing.assert_allclose(rnn.states[0].numpy(), h, rtol=1e-5, atol=1e-6)


def _chunks_of(x, size):
    return [x[:, i:i + size] for i in range(0, x.shape[1], size)]


def test_symbolic_calls_and_summary_leave_the_states_alone():
    # Shape inference runs layers on zero batches: the states must not change.
    inp = lk.Input(batch_shape=(B, 3, F))
    gru = GRU(U, stateful=True)
    model = lk.Model(inp, Dense(1)(gru(inp)))
    assert model.output_shape == (B, 1)
    _set_random_weights(gru)
    h0 = _x(B, U, seed=8)
    gru.reset_state([h0])
    outer = lk.Input(batch_shape=(B, 3, F))
    lk.Model(outer, model(outer))     # probes the inner model
    model.summary(print_fn=lambda *a, **k: None)
    np.testing.assert_array_equal(gru.states[0].numpy(), h0)
    model(_x(B, 3, F))
    assert not np.allclose(gru.states[0].numpy(), h0)


# ---- Bidirectional ---------------------------------------------------------------------------
def test_bidirectional_keeps_both_directions_states():
    x = _x(B, 6, F)
    bi = Bidirectional(SimpleRNN(U, stateful=True), merge_mode="concat")
    bi.build((B, 3, F))
    wf, wb = _set_random_weights(bi)[:3], _set_random_weights(bi)[3:]
    h_f = h_b = np.zeros((B, U), np.float32)
    for chunk in _chunks_of(x, 3):
        out = bi(chunk).numpy()
        _, (h_f,) = np_simple_rnn(chunk, *wf, h_f)
        _, (h_b,) = np_simple_rnn(chunk[:, ::-1], *wb, h_b)
        np.testing.assert_allclose(out, np.concatenate([h_f, h_b], 1), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(bi.forward_layer.states[0].numpy(), h_f, rtol=1e-5, atol=1e-6)
    bi.reset_state()
    assert not np.any(bi.forward_layer.states[0].numpy())
    assert not np.any(bi.backward_layer.states[0].numpy())
    assert bi.stateful and len(bi.weights) == 6


def test_bidirectional_reset_state_needs_a_stateful_layer():
    bi = Bidirectional(LSTM(U))
    bi(_x(B, 3, F))
    with pytest.raises(AttributeError, match="stateful"):
        bi.reset_state()


# ---- errors ----------------------------------------------------------------------------------
def test_unknown_batch_size_at_build_is_an_error():
    with pytest.raises(ValueError, match=r"'stateful_lstm'.*batch size must be known"):
        lk.Model(*(lambda i: (i, LSTM(U, stateful=True, name="stateful_lstm")(i)))(
            lk.Input((3, F))))
    with pytest.raises(ValueError, match="batch size must be known"):
        lk.Sequential([SimpleRNN(U, stateful=True, input_shape=(3, F))])


def test_a_batch_of_another_size_is_an_error():
    layer = GRU(U, stateful=True, name="g_state")
    layer(_x(B, 3, F))
    with pytest.raises(ValueError, match=r"'g_state'.*batch of 2.*received a batch of 3"):
        layer(_x(3, 3, F))
    with pytest.raises(ValueError, match=r"'g_state'.*received a batch of 3"):
        layer(_x(3, 3, F), initial_state=[_x(3, U)])
    f = lk.function(layer)
    f(_x(B, 3, F))
    with pytest.raises(ValueError, match="'g_state'"):
        f(_x(3, 3, F))


def test_reset_state_rejects_bad_values():
    layer = LSTM(U, stateful=True, name="l_state")
    with pytest.raises(ValueError, match="'l_state'.*built"):
        layer.reset_state([np.zeros((B, U))] * 2)   # not built yet: nothing to set
    layer(_x(B, 3, F))
    with pytest.raises(ValueError, match=r"'l_state'.*2 state value\(s\).*\(2, 4\)"):
        layer.reset_state([np.zeros((B, U))])
    with pytest.raises(ValueError, match="'l_state'"):
        layer.reset_state([np.zeros((3, U))] * 2)
    plain = LSTM(U)
    plain(_x(B, 3, F))
    with pytest.raises(ValueError, match="stateful=False"):
        plain.reset_state([np.zeros((B, U))] * 2)


# ---- configs and saving ----------------------------------------------------------------------
@pytest.mark.parametrize("make", [
    lambda: LSTM(U, stateful=True, return_sequences=True),
    lambda: RNN([SimpleRNNCell(3), GRUCell(U)], stateful=True),
    lambda: Bidirectional(GRU(U, stateful=True)),
])
def test_config_round_trip_keeps_stateful(make):
    layer = make()
    config = layer.get_config()
    inner = config["layer"]["config"] if "layer" in config else config
    assert inner["stateful"] is True
    clone = type(layer).from_config(config)
    assert clone.stateful and clone.get_config() == config
    clone(_x(B, 3, F))
    owner = clone.forward_layer if isinstance(clone, Bidirectional) else clone
    assert all(v.shape[0] == B for v in _flat(owner.states))


def test_keras_archive_round_trip_keeps_stateful_and_the_batch(tmp_path):
    x = _x(B, 6, F)
    model = lk.Sequential([LSTM(U, stateful=True, batch_input_shape=(B, 3, F)), Dense(2)])
    _set_random_weights(model)
    config = model.get_config()
    assert config["layers"][0]["config"]["batch_shape"] == [B, 3, F]   # as Keras 3
    want = np.concatenate([model.predict_on_batch(c) for c in _chunks_of(x, 3)])
    path = str(tmp_path / "stateful.keras")
    model.save(path)
    loaded = lk.keras.models.load_model(path)
    lstm = loaded.layers[0]
    assert lstm.stateful and [v.shape for v in lstm.states] == [(B, U), (B, U)]
    assert not np.any(lstm.states[0].numpy())   # states are not saved (Keras 3)
    got = np.concatenate([loaded.predict_on_batch(c) for c in _chunks_of(x, 3)])
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
