"""Masks in the functional API: a symbolic tensor carries the symbolic mask its layer
computes (Keras's KerasTensor._keras_mask), and layers called on it while the graph is
built receive a mask, as they will on real data."""
import numpy as np

import layerkit as lk

L = lk.layers


class NeedsMask(L.Layer):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.supports_masking = True
        self.seen = []

    def call(self, inputs, mask=None):
        self.seen.append(mask is not None)
        return inputs * lk.expand_dims(lk.cast(mask, inputs.dtype), -1)


def test_symbolic_tensors_carry_the_mask_and_layers_receive_it():
    inputs = lk.Input((None,), dtype="int32")
    x = L.Embedding(10, 4, mask_zero=True)(inputs)
    assert x._keras_mask is not None
    assert x._keras_mask.shape == (None, None) and x._keras_mask.dtype == np.bool_
    y = L.Dense(3)(x)  # Dense passes the mask on
    assert y._keras_mask is not None and y._keras_mask.shape == (None, None)
    layer = NeedsMask()
    out = layer(y)
    assert layer.seen and all(layer.seen)  # the graph-building calls got a mask
    assert inputs._keras_mask is None and L.Dense(2)(lk.Input((3,)))._keras_mask is None
    model = lk.Model(inputs, out)
    data = np.array([[1, 2, 0, 0], [3, 0, 0, 0]])
    got = model(data).numpy()
    assert np.all(got[data == 0] == 0) and np.any(got[data != 0] != 0)
