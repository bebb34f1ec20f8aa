"""Models whose outputs, masks and losses were recorded once with Keras 3 (torch backend) on
the same weights, in tests/fixtures/keras_layers_a.npz (see make_keras_layers_a.py there).

Each builder takes the layers module ``L``, ``Input`` and ``Model`` of either library, so
one definition serves the generator (Keras) and the test (layerkit). Everything here is
masked through ``Embedding(mask_zero=True)``: the recorded numbers pin down how masks
travel (RNN steps, merges, attention) and how they weigh losses and metrics in
``evaluate`` and one ``fit`` step.
"""
import numpy as np

IDS = np.array([[3, 1, 4, 0, 0], [0, 2, 5, 1, 0], [1, 0, 2, 0, 3]])
IDS_V = np.array([[2, 2, 0, 0, 0, 1], [4, 0, 1, 3, 5, 0], [0, 0, 0, 0, 0, 0]])
IDS_V[2, 3] = 5  # one kept position in the third row


def _embedded(layer_fn, dim: int = 3):
    def build(L, Input, Model):
        inp = Input((5,), dtype="int32")
        return Model(inp, layer_fn(L)(L.Embedding(6, dim, mask_zero=True)(inp)))
    return build


def _two_inputs(fn, dim: int = 4):
    """fn(L, q, v) on Embedding(mask_zero) of IDS (query) and IDS_V (value)."""
    def build(L, Input, Model):
        q_in, v_in = Input((5,), dtype="int32"), Input((6,), dtype="int32")
        q = L.Embedding(6, dim, mask_zero=True)(q_in)
        v = L.Embedding(6, dim, mask_zero=True)(v_in)
        return Model([q_in, v_in], fn(L, q, v))
    return build


def _same_length(fn, dim: int = 4):
    """fn(L, a, b) on two Embedding(mask_zero) of IDS and of a shifted IDS."""
    def build(L, Input, Model):
        a_in, b_in = Input((5,), dtype="int32"), Input((5,), dtype="int32")
        a = L.Embedding(6, dim, mask_zero=True)(a_in)
        b = L.Embedding(6, dim, mask_zero=True)(b_in)
        return Model([a_in, b_in], fn(L, a, b))
    return build


def _mha_residual(L, Input, Model):
    inp = Input((5,), dtype="int32")
    x = L.Embedding(6, 4, mask_zero=True)(inp)
    a = L.MultiHeadAttention(2, 2)(x, x)
    return Model(inp, L.Dense(4, activation="softmax")(L.Add()([x, a])))


def _lstm_classifier(L, Input, Model):
    inp = Input((5,), dtype="int32")
    h = L.LSTM(4, return_sequences=True)(L.Embedding(6, 3, mask_zero=True)(inp))
    return Model(inp, L.Dense(4, activation="softmax")(h))


def _masking_gru(L, Input, Model):
    inp = Input((5, 2))
    h = L.GRU(3, return_sequences=True)(L.Masking()(inp))
    return Model(inp, L.TimeDistributed(L.Dense(2))(h))


def _ids_b():
    b = IDS.copy()
    b[:, 1:] = IDS[:, :-1]
    b[0, 4] = 0
    return b


# name -> (builder, inputs)
OUTPUT_CASES = {
    "lstm_seq": (_embedded(lambda L: L.LSTM(4, return_sequences=True)), IDS),
    "lstm_state": (_embedded(lambda L: L.LSTM(4, return_state=True)), IDS),
    "gru_backwards": (_embedded(lambda L: L.GRU(4, go_backwards=True, return_sequences=True)),
                      IDS),
    "simple_rnn_zero_output": (_embedded(lambda L: L.SimpleRNN(
        4, return_sequences=True, zero_output_for_mask=True)), IDS),
    "bidirectional_seq": (_embedded(lambda L: L.Bidirectional(
        L.LSTM(3, return_sequences=True))), IDS),
    "bidirectional_sum": (_embedded(lambda L: L.Bidirectional(L.GRU(3), merge_mode="sum")),
                          IDS),
    "stacked_cells": (_embedded(lambda L: L.RNN([L.SimpleRNNCell(3), L.LSTMCell(2)],
                                                return_sequences=True, return_state=True)),
                      IDS),
    "time_distributed": (_embedded(lambda L: L.TimeDistributed(L.Dense(2))), IDS),
    "attention": (_two_inputs(lambda L, q, v: L.Attention(use_scale=True)(
        [q, v], return_attention_scores=True)), [IDS, IDS_V]),
    "attention_causal": (_same_length(lambda L, a, b: L.Attention()(
        [a, b], use_causal_mask=True)), [IDS, _ids_b()]),
    "additive_attention": (_two_inputs(lambda L, q, v: L.AdditiveAttention()([q, v])),
                           [IDS, IDS_V]),
    "mha": (_two_inputs(lambda L, q, v: L.MultiHeadAttention(2, 3)(q, v)), [IDS, IDS_V]),
    "mha_scores": (_two_inputs(lambda L, q, v: L.MultiHeadAttention(2, 3)(
        q, v, return_attention_scores=True)), [IDS, IDS_V]),
    "multiply": (_same_length(lambda L, a, b: L.Multiply()([a, b])), [IDS, _ids_b()]),
    "maximum": (_same_length(lambda L, a, b: L.Maximum()([a, b])), [IDS, _ids_b()]),
    "add": (_same_length(lambda L, a, b: L.Add()([a, b])), [IDS, _ids_b()]),
    "concatenate": (_same_length(lambda L, a, b: L.Concatenate()([a, b])), [IDS, _ids_b()]),
    "mha_residual": (_mha_residual, IDS),
    "masking_gru": (_masking_gru, None),  # inputs: masking_inputs()
}


def masking_inputs():
    x = np.random.default_rng(5).normal(size=(3, 5, 2)).astype("float32")
    x[0, 3:] = 0.0
    x[1, :2] = 0.0
    x[2, 2] = 0.0
    return x


def fit_targets():
    rng = np.random.default_rng(7)
    return rng.integers(0, 4, size=(3, 5)), rng.random((3, 5)).astype("float32")


# name -> builder, (evaluated with sparse CE + "accuracy" (plain and weighted), with and
# without (batch, time) sample weights, and after one SGD step of fit)
LOSS_CASES = {"fit_lstm_classifier": _lstm_classifier, "fit_mha_residual": _mha_residual}
# After the fit step, the weights of these match Keras's. Not fit_mha_residual's: its
# padded query rows attend to no position, and torch's CPU attention kernel (which Keras
# uses there) back-propagates such a row as if every probability were 1 (exp(s - lse)
# with s and lse both -2.4e38), where layerkit gives the softmax's own gradient.
FIT_WEIGHTS_MATCH = {"fit_lstm_classifier"}
