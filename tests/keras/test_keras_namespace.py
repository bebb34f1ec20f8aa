"""lk.keras: TensorFlow's tf.keras spellings reach layerkit's modules, and the backend
settings act on the layers created after them."""
import importlib

import numpy as np
import pytest

import layerkit as lk
from layerkit.keras import backend as K


@pytest.fixture(autouse=True)
def _restore_settings():
    saved = (K.floatx(), K.image_data_format(), K.epsilon())
    yield
    K.set_floatx(saved[0])
    K.set_image_data_format(saved[1])
    K.set_epsilon(saved[2])


@pytest.mark.parametrize("name", ["layers", "models", "optimizers", "losses", "metrics",
                                  "callbacks", "initializers", "regularizers", "constraints",
                                  "saving", "random"])
def test_each_submodule_is_layerkits_module_by_attribute_and_by_import(name):
    ours = getattr(lk, name)
    assert getattr(lk.keras, name) is ours
    assert importlib.import_module(f"layerkit.keras.{name}") is ours


def test_the_three_import_forms_of_tf_keras_programs():
    from layerkit.keras.layers import Dense
    from layerkit.keras.optimizers.schedules import ExponentialDecay

    from layerkit.keras import layers

    assert layers.Dense is Dense is lk.layers.Dense
    assert ExponentialDecay is lk.optimizers.schedules.ExponentialDecay
    model = lk.keras.Sequential([lk.keras.Input((3,)), Dense(2)])
    assert isinstance(model, lk.keras.Model) and model.output_shape == (None, 2)


def test_set_floatx_changes_the_dtype_of_new_layers_only():
    before = lk.keras.layers.Dense(2)
    K.set_floatx("float64")
    after = lk.keras.layers.Dense(2)
    x = np.ones((1, 3))
    assert after(x).dtype == np.float64 and after.kernel.dtype == np.float64
    assert before(x).dtype == np.float32
    assert lk.keras.mixed_precision.global_policy().name == "float64"


def test_set_floatx_and_policies_refuse_what_layerkit_cannot_do():
    with pytest.raises(ValueError, match="set_floatx.*'int32'"):
        K.set_floatx("int32")
    with pytest.raises(ValueError, match="mixed_float16"):
        lk.keras.mixed_precision.set_global_policy("mixed_float16")
    assert K.floatx() == "float32"


def test_image_data_format_is_the_default_of_spatial_layers():
    K.set_image_data_format("channels_first")
    conv = lk.keras.layers.Conv2D(4, 3)
    pool = lk.keras.layers.MaxPooling2D()
    x = np.ones((2, 3, 8, 8), np.float32)
    assert conv(x).shape == (2, 4, 6, 6) and pool(x).shape == (2, 3, 4, 4)
    K.set_image_data_format("channels_last")
    assert lk.keras.layers.Conv2D(4, 3)(np.ones((2, 8, 8, 3), np.float32)).shape == (
        2, 6, 6, 4)
    with pytest.raises(ValueError, match="set_image_data_format"):
        K.set_image_data_format("nhwc")


def test_clear_session_restarts_default_names():
    lk.keras.layers.Dense(1)
    K.clear_session()
    assert lk.keras.layers.Dense(1).name == "dense"
    assert lk.keras.layers.Dense(1).name == "dense_1"


def test_activations_by_name_and_round_trip():
    acts = lk.keras.activations
    x = lk.constant([-2.0, 0.5])
    np.testing.assert_allclose(acts.relu(x).numpy(), [0.0, 0.5])
    np.testing.assert_allclose(acts.get("sigmoid")(x).numpy(), 1 / (1 + np.exp([2.0, -0.5])),
                               rtol=1e-6)
    assert acts.deserialize(acts.serialize(acts.tanh)) is acts.tanh
    with pytest.raises(ValueError, match="unknown activation"):
        acts.get("relu7")


def test_backend_helpers():
    assert K.epsilon() == 1e-7 and K.backend() == "layerkit"
    K.set_epsilon(1e-5)
    assert K.epsilon() == 1e-5
    assert K.is_keras_tensor(lk.keras.Input((2,))) and not K.is_keras_tensor(lk.ones(2))
