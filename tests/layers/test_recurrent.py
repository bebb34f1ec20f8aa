"""RNN cells and layers vs step-by-step NumPy references in Keras's weight layout and gate
order (so Keras weights loaded by position give Keras's outputs)."""
import numpy as np
import pytest

import layerkit as lk
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

from .layer_test_util import check_layer_grads, run_layer_test


def _x(*shape, seed=0):
    return np.random.default_rng(seed).normal(size=shape).astype(np.float32)


def sigmoid(v):
    return 1 / (1 + np.exp(-v))


def np_simple_rnn(x, k, r, b, h):
    outs = []
    for t in range(x.shape[1]):
        h = np.tanh(x[:, t] @ k + b + h @ r)
        outs.append(h)
    return np.stack(outs, 1), [h]


def np_lstm(x, k, r, b, h, c):
    """Keras LSTM: z = x K + h R + b split in the order i, f, c, o."""
    u = h.shape[1]
    outs = []
    for t in range(x.shape[1]):
        z = x[:, t] @ k + h @ r + b
        i, f, g, o = (z[:, :u], z[:, u:2 * u], z[:, 2 * u:3 * u], z[:, 3 * u:])
        c = sigmoid(f) * c + sigmoid(i) * np.tanh(g)
        h = sigmoid(o) * np.tanh(c)
        outs.append(h)
    return np.stack(outs, 1), [h, c]


def np_gru(x, k, r, b, h, reset_after=True):
    """Keras GRU: gates z, r, h; reset_after uses bias (2, 3u) = [input, recurrent]."""
    u = h.shape[1]
    outs = []
    for t in range(x.shape[1]):
        if reset_after:
            mx = x[:, t] @ k + b[0]
            mh = h @ r + b[1]
            z = sigmoid(mx[:, :u] + mh[:, :u])
            rr = sigmoid(mx[:, u:2 * u] + mh[:, u:2 * u])
            hh = np.tanh(mx[:, 2 * u:] + rr * mh[:, 2 * u:])
        else:
            mx = x[:, t] @ k + b
            z = sigmoid(mx[:, :u] + h @ r[:, :u])
            rr = sigmoid(mx[:, u:2 * u] + h @ r[:, u:2 * u])
            hh = np.tanh(mx[:, 2 * u:] + (rr * h) @ r[:, 2 * u:])
        h = z * h + (1 - z) * hh
        outs.append(h)
    return np.stack(outs, 1), [h]


def _set_random_weights(layer, seed=1):
    rng = np.random.default_rng(seed)
    layer.set_weights([rng.normal(0, 0.5, w.shape).astype(np.float32) for w in layer.weights])
    return layer.get_weights()


def test_simple_rnn_matches_numpy():
    x = _x(2, 4, 3)
    run_layer_test(SimpleRNN, {"units": 5}, x, (2, 5), [(3, 5), (5, 5), (5,)])
    layer = SimpleRNN(5, return_sequences=True, return_state=True)
    layer(x)
    k, r, b = _set_random_weights(layer)
    seq, h = layer(x)
    ref, (ref_h,) = np_simple_rnn(x, k, r, b, np.zeros((2, 5), np.float32))
    np.testing.assert_allclose(seq.numpy(), ref, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(h.numpy(), ref_h, rtol=1e-5, atol=1e-6)


def test_lstm_matches_numpy_gate_order_ifco():
    x = _x(3, 5, 4)
    run_layer_test(LSTM, {"units": 2}, x, (3, 2), [(4, 8), (2, 8), (8,)])
    layer = LSTM(6, return_sequences=True, return_state=True)
    layer(x)
    k, r, b = _set_random_weights(layer)
    seq, h, c = layer(x)
    z = np.zeros((3, 6), np.float32)
    ref, (rh, rc) = np_lstm(x, k, r, b, z, z)
    np.testing.assert_allclose(seq.numpy(), ref, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(h.numpy(), rh, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(c.numpy(), rc, rtol=1e-5, atol=1e-6)


def test_lstm_initial_weights_keras_defaults():
    layer = LSTM(3)
    layer(_x(1, 2, 4))
    b = layer.cell.bias.numpy()
    np.testing.assert_array_equal(b, [0, 0, 0, 1, 1, 1, 0, 0, 0, 0, 0, 0])  # unit_forget_bias
    r = layer.cell.recurrent_kernel.numpy()  # orthogonal: (3, 12) has orthonormal rows
    np.testing.assert_allclose(r @ r.T, np.eye(3), atol=1e-5)
    assert layer.units == 3 and layer.cell.name.startswith("lstm_cell")


@pytest.mark.parametrize("reset_after", [True, False])
def test_gru_matches_numpy(reset_after):
    x = _x(2, 4, 3)
    bias_shape = (2, 15) if reset_after else (15,)
    run_layer_test(GRU, {"units": 5, "reset_after": reset_after}, x, (2, 5),
                   [(3, 15), (5, 15), bias_shape])
    layer = GRU(5, reset_after=reset_after, return_sequences=True)
    layer(x)
    k, r, b = _set_random_weights(layer)
    ref, _ = np_gru(x, k, r, b, np.zeros((2, 5), np.float32), reset_after)
    np.testing.assert_allclose(layer(x).numpy(), ref, rtol=1e-5, atol=1e-6)


def test_go_backwards_initial_state_and_return_state():
    x = _x(2, 4, 3)
    layer = LSTM(3, return_sequences=True, go_backwards=True, return_state=True)
    layer(x)
    k, r, b = _set_random_weights(layer)
    h0, c0 = _x(2, 3, seed=5), _x(2, 3, seed=6)
    seq, h, c = layer(x, initial_state=[h0, c0])
    ref, (rh, rc) = np_lstm(x[:, ::-1], k, r, b, h0, c0)
    np.testing.assert_allclose(seq.numpy(), ref, rtol=1e-5, atol=1e-6)  # reversed order
    np.testing.assert_allclose(c.numpy(), rc, rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match=r"initial_state must be 2 tensor\(s\) of shapes "
                                         r"\[\(2, 3\), \(2, 3\)\]; received shapes \[\(2, 4\)\]"):
        layer(x, initial_state=[_x(2, 4)])


def test_cells_called_directly_follow_the_contract():
    x, h = _x(2, 3), _x(2, 4, seed=1)
    for cell, n_states in ((SimpleRNNCell(4), 1), (LSTMCell(4), 2), (GRUCell(4), 1)):
        states = [h] * n_states
        out, new = cell(x, states)
        assert isinstance(new, list) and len(new) == n_states
        assert out.shape == (2, 4) and all(s.shape == (2, 4) for s in new)
    cell = LSTMCell(4)
    cell(x, [h, h])
    k, r, b = [w.numpy() for w in cell.weights]
    out, (h1, c1) = cell(x, [h, h])
    ref, (rh, rc) = np_lstm(x[:, None], k, r, b, h, h)
    np.testing.assert_allclose(c1.numpy(), rc, rtol=1e-5, atol=1e-6)


def test_rnn_loops_a_user_cell():
    class MinimalCell(Layer):
        """h_t = tanh(x W) + h_{t-1}; a second state counts steps."""

        def __init__(self, units, **kwargs):
            super().__init__(**kwargs)
            self.units = units
            self.state_size = [units, 1]

        def build(self, input_shape):
            self.w = self.add_weight("w", (input_shape[-1], self.units))

        def call(self, inputs, states):
            h = lk.tanh(lk.matmul(inputs, self.w)) + states[0]
            return h, [h, states[1] + 1.0]

        def get_config(self):
            return {**super().get_config(), "units": self.units}

    x = _x(2, 5, 3)
    layer = RNN(MinimalCell(4), return_sequences=True, return_state=True)
    seq, h, count = layer(x)
    w = layer.cell.w.numpy()
    ref = np.cumsum(np.tanh(x @ w), axis=1)
    np.testing.assert_allclose(seq.numpy(), ref, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(count.numpy(), np.full((2, 1), 5.0))
    assert layer.weights == [layer.cell.w]
    # a user's cell class is found through custom_objects (or registration), as in Keras
    with pytest.raises(ValueError, match="unknown layer class 'MinimalCell'"):
        RNN.from_config(layer.get_config())
    clone = RNN.from_config(layer.get_config(), custom_objects={"MinimalCell": MinimalCell})
    assert isinstance(clone.cell, MinimalCell) and clone.cell.units == 4
    x64 = x.astype(np.float64)
    check_layer_grads(RNN(MinimalCell(3, dtype="float64"), dtype="float64"), [x64])
    with pytest.raises(ValueError, match="state_size"):
        RNN(Dense(3))


def test_rnn_gradients_float64():
    x = _x(2, 3, 2).astype(np.float64)
    check_layer_grads(LSTM(3, dtype="float64", return_sequences=True), [x])
    check_layer_grads(GRU(2, dtype="float64"), [x])
    check_layer_grads(GRU(2, reset_after=False, dtype="float64", go_backwards=True), [x])
    check_layer_grads(SimpleRNN(2, dtype="float64"), [x], order=2)


def test_bidirectional_concat_and_other_modes():
    x = _x(2, 4, 3)
    bi = Bidirectional(LSTM(3, return_sequences=True))
    y = bi(x)
    assert y.shape == (2, 4, 6)
    assert bi.forward_layer.name.startswith("forward_") and bi.backward_layer.go_backwards
    ws = _set_random_weights(bi)
    assert [w.shape for w in ws] == [(3, 12), (3, 12), (12,)] * 2  # forward then backward
    z = np.zeros((2, 3), np.float32)
    fwd, _ = np_lstm(x, *ws[:3], z, z)
    bwd, _ = np_lstm(x[:, ::-1], *ws[3:], z, z)
    ref = np.concatenate([fwd, bwd[:, ::-1]], -1)
    np.testing.assert_allclose(bi(x).numpy(), ref, rtol=1e-5, atol=1e-6)
    summed = Bidirectional(GRU(2), merge_mode="sum")
    summed(x)
    wf, wb = summed.forward_layer, summed.backward_layer
    np.testing.assert_allclose(summed(x).numpy(), (wf(x) + wb(x)).numpy(), rtol=1e-6)
    out = Bidirectional(LSTM(2, return_state=True))(x)
    assert len(out) == 5 and out[0].shape == (2, 4)
    clone = Bidirectional.from_config(bi.get_config())
    assert clone(x).shape == (2, 4, 6)
    with pytest.raises(ValueError, match="merge_mode"):
        Bidirectional(LSTM(2), merge_mode="max")
    check_layer_grads(Bidirectional(SimpleRNN(2, dtype="float64"), dtype="float64"),
                      [x.astype(np.float64)])


def test_recurrent_dropout_masks_fixed_per_sequence():
    x = np.ones((4, 6, 3), np.float32)
    cell = SimpleRNNCell(3, dropout=0.5, recurrent_dropout=0.5, seed=1)
    layer = RNN(cell, return_sequences=True)
    y_inf = layer(x).numpy()
    y1, y2 = layer(x, training=True).numpy(), layer(x, training=True).numpy()
    assert not np.allclose(y1, y_inf) and not np.allclose(y1, y2)
    cell._masks = [None, None]
    # the same input mask is applied at every step: dropped features never contribute
    dp = cell._mask(0, x[:, 0], 0.5, True).numpy()
    proj = cell.project_inputs(lk.constant(x), training=True).numpy()
    np.testing.assert_allclose(proj, (x * dp[:, None]) @ cell.kernel.numpy() +
                               cell.bias.numpy(), rtol=1e-5)


def test_rnn_rejects_empty_sequence_and_bad_rank():
    with pytest.raises(ValueError, match="no time steps"):
        LSTM(2)(np.zeros((1, 0, 3), np.float32))
    with pytest.raises(ValueError, match=r"min_ndim=3.*ndim=2"):
        LSTM(2)(np.zeros((1, 3), np.float32))


# ---- the fused whole-sequence path (layerkit/primitives/rnn.py) vs the per-step loop ----------
class LoopSimpleRNNCell(SimpleRNNCell):
    """Stock cells seen as user cells: RNN takes the generic per-step loop for them."""


class LoopLSTMCell(LSTMCell):
    pass


class LoopGRUCell(GRUCell):
    pass


_LOOP_CELL = {SimpleRNN: LoopSimpleRNNCell, LSTM: LoopLSTMCell, GRU: LoopGRUCell}


def _fused_and_loop(cls, x, weights_seed=1, **kwargs):
    """A stock layer and an RNN over the subclassed cell with the same weights."""
    layer_kw = {k: kwargs.pop(k) for k in list(kwargs) if k in
                ("return_sequences", "return_state", "go_backwards", "dtype")}
    fused = cls(4, **layer_kw, **kwargs)
    loop = RNN(_LOOP_CELL[cls](4, dtype=layer_kw.get("dtype", "float32"), **kwargs),
               **layer_kw)
    fused(x)
    loop(x)
    loop.set_weights(_set_random_weights(fused, weights_seed))
    return fused, loop


def _outputs_and_grads(layer, x, **call_kwargs):
    xt = lk.constant(x)
    with lk.GradientTape() as tape:
        tape.watch(xt)
        out = layer(xt, **call_kwargs)
        outs = out if isinstance(out, list) else [out]
        w = [lk.constant(np.linspace(-1, 1, o.size).reshape(o.shape).astype(o.dtype))
             for o in outs]
        loss = sum(lk.reduce_sum(o * wi) for o, wi in zip(outs, w))
    grads = tape.gradient(loss, [xt] + layer.trainable_weights)
    return [o.numpy() for o in outs], [g.numpy() for g in grads]


@pytest.mark.parametrize("cls", [SimpleRNN, LSTM, GRU])
@pytest.mark.parametrize("config", [
    {}, {"return_sequences": True}, {"return_state": True, "go_backwards": True},
    {"return_sequences": True, "return_state": True, "use_bias": False}])
def test_fused_path_matches_the_step_loop(cls, config):
    x = _x(3, 6, 5)
    fused, loop = _fused_and_loop(cls, x, **config)
    assert fused.cell.fused_sequence is not None and \
        loop.cell.fused_sequence(lk.constant(x), [lk.zeros((3, 4))] * 2) is None
    out_f, grads_f = _outputs_and_grads(fused, x)
    out_l, grads_l = _outputs_and_grads(loop, x)
    assert len(out_f) == len(out_l)
    for a, b in zip(out_f + grads_f, out_l + grads_l):
        assert a.shape == b.shape and a.dtype == b.dtype
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("cls", [SimpleRNN, LSTM, GRU])
def test_fused_path_with_initial_state_matches_the_step_loop(cls):
    x = _x(2, 5, 3)
    fused, loop = _fused_and_loop(cls, x, return_sequences=True, return_state=True)
    states = [_x(2, 4, seed=7 + i) for i in range(2 if cls is LSTM else 1)]
    out_f, grads_f = _outputs_and_grads(fused, x, initial_state=states)
    out_l, grads_l = _outputs_and_grads(loop, x, initial_state=states)
    for a, b in zip(out_f + grads_f, out_l + grads_l):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_fused_path_only_for_stock_default_cells():
    x, states = lk.constant(_x(2, 3, 3)), [lk.zeros((2, 4))] * 2

    def fused(cell, training=None):
        cell(x[:, 0], states[:len(_sizes_of(cell))])  # build
        return cell.fused_sequence(x, states[:len(_sizes_of(cell))], training=training)

    assert fused(LSTMCell(4)) is not None and fused(GRUCell(4)) is not None
    assert fused(SimpleRNNCell(4)) is not None
    assert fused(LSTMCell(4, activation="relu")) is None
    assert fused(LSTMCell(4, recurrent_activation="tanh")) is None
    assert fused(GRUCell(4, reset_after=False)) is None
    assert fused(SimpleRNNCell(4, activation="sigmoid")) is None
    rd = LSTMCell(4, recurrent_dropout=0.5, seed=1)
    assert fused(rd, training=True) is None and fused(rd, training=False) is not None
    assert fused(LSTMCell(4, dropout=0.5, seed=1), training=True) is not None


def _sizes_of(cell):
    s = cell.state_size
    return list(s) if isinstance(s, (list, tuple)) else [s]


def test_non_default_cells_still_match_numpy_through_the_loop():
    x = _x(2, 4, 3)
    layer = LSTM(3, activation="relu", return_sequences=True)
    layer(x)
    k, r, b = _set_random_weights(layer)
    u, h, c, outs = 3, np.zeros((2, 3), np.float32), np.zeros((2, 3), np.float32), []
    for t in range(4):
        z = x[:, t] @ k + h @ r + b
        c = sigmoid(z[:, u:2 * u]) * c + sigmoid(z[:, :u]) * np.maximum(z[:, 2 * u:3 * u], 0)
        h = sigmoid(z[:, 3 * u:]) * np.maximum(c, 0)
        outs.append(h)
    np.testing.assert_allclose(layer(x).numpy(), np.stack(outs, 1), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("cls", [LSTM, GRU, SimpleRNN])
def test_fused_input_dropout_uses_the_same_mask_as_the_loop(cls):
    x = _x(4, 5, 3)
    fused, loop = _fused_and_loop(cls, x, return_sequences=True, dropout=0.4, seed=3)
    y_f = fused(x, training=True).numpy()
    y_l = loop(x, training=True).numpy()
    np.testing.assert_allclose(y_f, y_l, rtol=1e-5, atol=1e-6)
    assert not np.allclose(y_f, fused(x).numpy())  # the mask changed the output
    np.testing.assert_allclose(fused(x).numpy(), loop(x).numpy(), rtol=1e-5, atol=1e-6)


def test_fused_layers_second_order_float64():
    x = _x(2, 3, 2).astype(np.float64)
    check_layer_grads(LSTM(2, dtype="float64", return_state=True, go_backwards=True), [x],
                      order=2)
    check_layer_grads(GRU(2, dtype="float64", return_sequences=True), [x], order=2)


def test_stacked_fused_layers_match_the_loop():
    # The sequence output is a time-major view; the next layer reads it back as such.
    x = _x(3, 7, 4)
    first, first_loop = _fused_and_loop(LSTM, x, return_sequences=True)
    y = first(x)
    second, second_loop = _fused_and_loop(GRU, y.numpy(), go_backwards=True, weights_seed=2)
    xt = lk.constant(x)
    for a, b in ((first, second), (first_loop, second_loop)):
        with lk.GradientTape() as tape:
            tape.watch(xt)
            out = b(a(xt))
            loss = lk.reduce_sum(out * out)
        g = tape.gradient(loss, [xt] + a.trainable_weights)
        if a is first:
            want_out, want_g = out.numpy(), [gi.numpy() for gi in g]
    np.testing.assert_allclose(out.numpy(), want_out, rtol=1e-5, atol=1e-6)
    for gi, w in zip(g, want_g):
        np.testing.assert_allclose(gi.numpy(), w, rtol=1e-4, atol=1e-6)

    class Stack(Layer):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.first = LSTM(3, return_sequences=True, dtype="float64")
            self.second = GRU(2, dtype="float64")

        def call(self, inputs):
            return self.second(self.first(inputs))

    check_layer_grads(Stack(dtype="float64"), [x[:2, :3].astype(np.float64)])


def test_traced_training_step_keeps_one_backward_record():
    # Under lk.function the backward is traced from the vjps: the LSTM's is one BPTT
    # record, not hundreds of per-step ops.
    function = pytest.importorskip("layerkit.autodiff.function").function
    x = lk.constant(_x(3, 6, 4))
    layer = LSTM(5)
    layer(x)

    def step(x):
        with lk.GradientTape() as tape:
            loss = lk.reduce_sum(layer(x))
        return tape.gradient(loss, layer.trainable_weights)

    traced = function(step)
    for got, want in zip(traced(x), step(x)):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6, atol=1e-7)
    graph = str(traced.get_concrete_function(x).graph)
    assert graph.count("lstm_sequence_grad(") == 1 and "tanh" not in graph
