"""Model.load_weights with weights that do not fit: skip_mismatch skips them (Keras),
otherwise a ValueError names the file and the model. A user Loss subclass gets Tensors."""
import os

import numpy as np
import pytest

import layerkit as lk


def _saved(tmp_path):
    m = lk.Sequential([lk.Input((2,)), lk.layers.Dense(1), lk.layers.Dense(3)])
    path = os.path.join(tmp_path, "w")
    m.save_weights(path)
    return m, path


def test_skip_mismatch_loads_the_weights_that_fit_and_warns(tmp_path):
    m, path = _saved(tmp_path)
    other = lk.Sequential([lk.Input((3,)), lk.layers.Dense(1), lk.layers.Dense(3)])
    kept = other.layers[0].kernel.numpy()
    with pytest.warns(UserWarning, match=r"(?s)skipped 1 variable.*layer-0/kernel"):
        other.load_weights(path, skip_mismatch=True)
    np.testing.assert_array_equal(other.layers[0].kernel.numpy(), kept)
    for a, b in zip(other.layers[1].get_weights(), m.layers[1].get_weights()):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(other.layers[0].bias.numpy(), m.layers[0].bias.numpy())


def test_a_mismatch_without_skip_is_a_value_error_naming_the_file(tmp_path):
    _, path = _saved(tmp_path)
    other = lk.Sequential([lk.Input((3,)), lk.layers.Dense(1), lk.layers.Dense(3)])
    with pytest.raises(ValueError, match=r"layer-0/kernel"):
        other.load_weights(path)
    bigger = lk.Sequential([lk.Input((2,)), lk.layers.Dense(1), lk.layers.Dense(3),
                            lk.layers.Dense(1)])
    with pytest.raises(ValueError,
                       match=r"(?s)load_weights: .*/w'.*do not match model.*layer-2/kernel"):
        bigger.load_weights(path)


def test_a_user_loss_subclass_gets_tensors_from_lists():
    class MyMSE(lk.losses.Loss):
        def call(self, y_true, y_pred):
            return lk.reduce_mean(lk.square(y_true - y_pred), axis=-1)

    assert float(MyMSE()([[0.0, 1.0]], [[1.0, 3.0]])) == 2.5
