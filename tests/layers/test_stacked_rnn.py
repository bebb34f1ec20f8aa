"""RNN([cells]) / StackedRNNCells: chaining, Keras's per-cell states, config, training."""
import numpy as np
import pytest

import layerkit as lk
from layerkit._core import nest
from layerkit.layers import RNN, GRUCell, LSTMCell, SimpleRNN, SimpleRNNCell, StackedRNNCells

from .layer_test_util import check_layer_grads


def _x(*shape, seed=0):
    return np.random.default_rng(seed).normal(size=shape).astype(np.float32)


def test_stacked_cells_equal_chained_layers():
    x = _x(2, 6, 4)
    stacked = RNN([SimpleRNNCell(5), LSTMCell(3), GRUCell(2)], return_sequences=True)
    y = stacked(x).numpy()
    w = stacked.get_weights()
    assert [v.shape for v in w] == [(4, 5), (5, 5), (5,), (5, 12), (3, 12), (12,), (3, 6),
                                    (2, 6), (2, 6)]
    l1 = SimpleRNN(5, return_sequences=True)
    l2 = lk.layers.LSTM(3, return_sequences=True)
    l3 = lk.layers.GRU(2, return_sequences=True)
    l3(l2(l1(x)))  # build
    l1.set_weights(w[:3])
    l2.set_weights(w[3:6])
    l3.set_weights(w[6:])
    ref = l3(l2(l1(x))).numpy()
    np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-6)


def test_return_state_gives_each_cells_states_like_keras():
    x = _x(2, 6, 4)
    out, s1, s2 = RNN([SimpleRNNCell(5), LSTMCell(3)], return_state=True)(x)
    assert out.shape == (2, 3)
    assert isinstance(s1, list) and [t.shape for t in s1] == [(2, 5)]
    assert isinstance(s2, list) and [t.shape for t in s2] == [(2, 3), (2, 3)]
    np.testing.assert_array_equal(out.numpy(), s2[0].numpy())
    layer = RNN([SimpleRNNCell(5), LSTMCell(3)], return_state=True)
    layer(x)
    # initial states: one entry per cell, or the same states flat
    init = [[lk.ones((2, 5))], [lk.zeros((2, 3)), lk.ones((2, 3))]]
    a = layer(x, initial_state=init)
    b = layer(x, initial_state=[lk.ones((2, 5)), lk.zeros((2, 3)), lk.ones((2, 3))])
    for u, v in zip(nest.flatten(a), nest.flatten(b)):
        np.testing.assert_array_equal(u.numpy(), v.numpy())
    assert not np.allclose(a[0].numpy(), layer(x)[0].numpy())
    with pytest.raises(ValueError, match=r"initial_state must be 3 tensor\(s\)"):
        layer(x, initial_state=[lk.ones((2, 5))])


def test_config_round_trip_and_cell_contract():
    layer = RNN([SimpleRNNCell(4), LSTMCell(2, dropout=0.1)], go_backwards=True)
    config = layer.get_config()
    assert config["cell"]["class_name"] == "StackedRNNCells"
    assert [c["class_name"] for c in config["cell"]["config"]["cells"]] == ["SimpleRNNCell",
                                                                             "LSTMCell"]
    clone = RNN.from_config(config)
    assert isinstance(clone.cell, StackedRNNCells) and clone.go_backwards
    assert clone.cell.cells[1].dropout == 0.1
    x = _x(2, 5, 3)
    layer(x)
    clone(x)
    clone.set_weights(layer.get_weights())
    np.testing.assert_allclose(clone(x).numpy(), layer(x).numpy(), rtol=1e-6)
    cells = StackedRNNCells([SimpleRNNCell(4), LSTMCell(2)])
    assert cells.state_size == [4, [2, 2]] and cells.output_size == 2
    with pytest.raises(ValueError, match="state_size"):
        StackedRNNCells([lk.layers.Dense(2)])


def test_stacked_gradients_and_fit():
    x = _x(2, 4, 3).astype(np.float64)
    check_layer_grads(RNN([SimpleRNNCell(3, dtype="float64"), GRUCell(2, dtype="float64")],
                          return_sequences=True, dtype="float64"), [x])
    model = lk.Sequential([lk.Input(shape=(6, 4)),
                           RNN([LSTMCell(6, recurrent_dropout=0.1), GRUCell(4)]),
                           lk.layers.Dense(1)])
    model.compile(lk.optimizers.Adam(0.01), "mse")
    xs, ys = _x(16, 6, 4), _x(16, 1, seed=1)
    before = model.evaluate(xs, ys, verbose=0)
    model.fit(xs, ys, epochs=8, batch_size=8, verbose=0)
    assert model.evaluate(xs, ys, verbose=0) < before
