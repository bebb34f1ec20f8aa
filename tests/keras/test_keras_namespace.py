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
                                  "saving", "random", "utils"])
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
    from layerkit.keras import ops

    assert ops is lk.keras_ops and ops.argmax(np.array([[1, 5], [7, 2]])) == 2  # flattened
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


def test_layers_input_serialize_and_deserialize():
    from layerkit.keras.layers import Input

    assert Input is lk.Input and lk.keras.layers.Input((3,)).shape == (None, 3)
    dense = lk.keras.layers.Dense(3, activation="relu", name="d")
    config = lk.keras.layers.serialize(dense)
    assert config["class_name"] == "Dense"
    again = lk.keras.layers.deserialize(config)
    assert type(again) is lk.layers.Dense and again.get_config() == dense.get_config()


def test_executing_eagerly_is_false_only_while_tracing():
    seen = []

    @lk.function
    def f(x):
        seen.append(lk.executing_eagerly())
        return x + 1

    f(lk.constant(1.0))
    f(lk.constant(2.0))
    assert lk.executing_eagerly() and seen == [False]


def test_summary_of_an_unbuilt_model_lists_its_layers_as_keras_does():
    lines = []
    model = lk.keras.Sequential([lk.keras.layers.Dense(2), lk.keras.layers.Dense(3)])
    model.summary(print_fn=lines.append)
    text = "\n".join(lines)
    assert text.count("0 (unbuilt)") == 2 and "Total params: 0" in text
    model.build((None, 4))
    lines.clear()
    model.summary(print_fn=lines.append)
    assert "(None, 3)" in lines[0] and "Total params: 19" in lines[0]


def test_tf_keras_2_namespaces_reach_the_same_objects():
    import importlib

    import numpy as np

    seq = importlib.import_module("layerkit.keras.preprocessing.sequence")
    assert seq.pad_sequences is lk.utils.pad_sequences
    assert seq.pad_sequences([[1, 2], [3]], maxlen=3, padding="post").tolist() == \
        [[1, 2, 0], [3, 0, 0]]
    img = importlib.import_module("layerkit.keras.preprocessing.image")
    assert img.img_to_array is lk.utils.img_to_array
    assert lk.keras.preprocessing.timeseries_dataset_from_array is \
        lk.utils.timeseries_dataset_from_array
    pre = lk.keras.layers.experimental.preprocessing
    assert pre.Rescaling is lk.layers.Rescaling and pre.Normalization is lk.layers.Normalization
    np.testing.assert_allclose(pre.Rescaling(0.5)(lk.ones((1, 2))), [[0.5, 0.5]])
    assert lk.keras.utils.Sequence is lk.utils.PyDataset
    assert lk.keras.utils.register_keras_serializable is lk.saving.register_keras_serializable
    with lk.keras.utils.custom_object_scope({"Thing": int}):
        assert lk.keras.utils.get_custom_objects() is lk.saving.get_custom_objects()
        assert lk.keras.utils.get_registered_object("Thing") is int


def test_keras_3_top_level_names_config_and_dtype_policies():
    k = lk.keras
    assert k.Layer is lk.layers.Layer and k.Loss is lk.losses.Loss
    assert k.Metric is lk.metrics.Metric and k.Optimizer is lk.optimizers.Optimizer
    assert k.Variable is lk.Variable and k.InputSpec is lk.layers.InputSpec
    assert isinstance(k.Input((3,)), k.KerasTensor)
    assert k.version() == k.__version__
    assert k.config.floatx() == "float32" and k.config.backend() == "layerkit"
    assert k.config.dtype_policy().name == "float32"
    k.config.disable_interactive_logging()
    assert not k.config.is_interactive_logging_enabled()
    k.config.enable_interactive_logging()
    assert k.config.is_interactive_logging_enabled()
    p = k.dtype_policies.get("float64")
    assert p.compute_dtype == "float64"
    assert k.dtype_policies.deserialize(k.dtype_policies.serialize(p)).name == "float64"
    with k.name_scope("outer"):
        assert lk.get_current_name_scope().endswith("outer")
