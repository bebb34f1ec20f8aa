"""get_config/from_config of every exported layer and object, and save/load of each layer
inside a model.

The layer tests iterate ``lk.layers.__all__``: a layer added there needs an entry in
``CASES`` (constructor and inputs), which ``test_every_exported_layer_has_a_case``
demands, so new layers are saved and loaded here as soon as they are exported.
"""
import json

import numpy as np
import pytest

import layerkit as lk

L = lk.layers


def _layer_classes() -> dict:
    return {n: getattr(L, n) for n in L.__all__
            if isinstance(getattr(L, n), type) and issubclass(getattr(L, n), L.Layer)
            and getattr(L, n) is not L.Layer}


def _json(config):
    return json.loads(json.dumps(lk.saving.serialize_keras_object(config)))


def _unbuilt(config):
    if isinstance(config, dict):
        return {k: _unbuilt(v) for k, v in config.items() if k != "build_config"}
    return [_unbuilt(v) for v in config] if isinstance(config, list) else config


def _x(shape, dtype="float32", seed=0):
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind in "iu":
        return rng.integers(0, 6, size=shape).astype(dtype)
    return rng.normal(size=shape).astype(dtype)


def _one(make, shape, dtype="float32"):
    """A layer called on one input of ``shape`` (batch 2)."""
    return make, [(shape, dtype)], lambda layer, xs: layer(xs[0])


def _many(make, shapes):
    return make, [(s, "float32") for s in shapes], lambda layer, xs: layer(list(xs))


def _cell(cls):
    return _one(lambda: L.RNN(cls(3), return_sequences=True), (4, 3))


def _mha():
    return (lambda: L.MultiHeadAttention(2, 3, value_dim=4, output_shape=5,
                                         kernel_constraint=lk.constraints.MaxNorm(3.0)),
            [((4, 6), "float32"), ((3, 5), "float32")],
            lambda layer, xs: layer(xs[0], xs[1]))


# class name -> (factory, [(sample shape, dtype), ...], call(layer, inputs) -> outputs or a
# model). Aliases (MaxPool2D, ...) use their class's entry. Entries for layers of other
# branches are unused until those layers are exported here.
CASES = {
    "Dense": _one(lambda: L.Dense(3, activation="relu", kernel_regularizer="l2",
                                  bias_constraint=lk.constraints.NonNeg()), (4,)),
    "Activation": _one(lambda: L.Activation("tanh"), (4,)),
    "Flatten": _one(lambda: L.Flatten(), (2, 3)),
    "Reshape": _one(lambda: L.Reshape((3, 2)), (6,)),
    "Dropout": _one(lambda: L.Dropout(0.3, seed=2), (4,)),
    "Embedding": _one(lambda: L.Embedding(6, 3, embeddings_constraint=lk.constraints.UnitNorm(1)),
                      (5,), "int32"),
    "Conv2D": _one(lambda: L.Conv2D(3, 3, padding="same", activation="relu"), (5, 5, 2)),
    "Conv2DTranspose": _one(lambda: L.Conv2DTranspose(2, 3, strides=2, padding="same"),
                            (3, 3, 2)),
    "DepthwiseConv2D": _one(lambda: L.DepthwiseConv2D(3, depth_multiplier=2,
                                                      depthwise_constraint=lk.constraints.MaxNorm()),
                            (5, 5, 2)),
    "MaxPooling2D": _one(lambda: L.MaxPooling2D(2), (4, 4, 2)),
    "AveragePooling2D": _one(lambda: L.AveragePooling2D(2, padding="same"), (5, 5, 2)),
    "GlobalAveragePooling2D": _one(lambda: L.GlobalAveragePooling2D(keepdims=True), (4, 4, 2)),
    "GlobalMaxPooling2D": _one(lambda: L.GlobalMaxPooling2D(), (4, 4, 2)),
    "BatchNormalization": _one(lambda: L.BatchNormalization(momentum=0.9,
                                                            gamma_constraint="non_neg"), (4,)),
    "LayerNormalization": _one(lambda: L.LayerNormalization(axis=(1, 2)), (3, 4)),
    "Add": _many(lambda: L.Add(), [(4,), (4,)]),
    "Concatenate": _many(lambda: L.Concatenate(axis=1), [(2,), (3,)]),
    "SimpleRNNCell": _cell(L.SimpleRNNCell),
    "LSTMCell": _cell(L.LSTMCell),
    "GRUCell": _cell(L.GRUCell),
    "RNN": _one(lambda: L.RNN(L.GRUCell(2, reset_after=False), go_backwards=True), (4, 3)),
    "SimpleRNN": _one(lambda: L.SimpleRNN(2, return_sequences=True), (4, 3)),
    "LSTM": _one(lambda: L.LSTM(3, unit_forget_bias=False,
                                recurrent_constraint=lk.constraints.MaxNorm(2.0)), (4, 3)),
    "GRU": _one(lambda: L.GRU(3, activation="relu"), (4, 3)),
    "Bidirectional": _one(lambda: L.Bidirectional(L.LSTM(2, return_sequences=True), "ave"),
                          (4, 3)),
    "MultiHeadAttention": _mha(),
    "Conv1D": _one(lambda: L.Conv1D(3, 3, padding="causal"), (6, 2)),
    "Conv1DTranspose": _one(lambda: L.Conv1DTranspose(2, 3, strides=2), (5, 3)),
    "Conv3D": _one(lambda: L.Conv3D(2, 2, activation="relu"), (4, 4, 4, 2)),
    "Conv3DTranspose": _one(lambda: L.Conv3DTranspose(2, 2), (3, 3, 3, 2)),
    "DepthwiseConv1D": _one(lambda: L.DepthwiseConv1D(3, depth_multiplier=2), (6, 3)),
    "SeparableConv1D": _one(lambda: L.SeparableConv1D(4, 3), (6, 3)),
    "SeparableConv2D": _one(lambda: L.SeparableConv2D(4, 3, padding="same"), (6, 6, 3)),
    "MaxPooling1D": _one(lambda: L.MaxPooling1D(2), (6, 3)),
    "MaxPooling3D": _one(lambda: L.MaxPooling3D(2), (4, 4, 4, 2)),
    "AveragePooling1D": _one(lambda: L.AveragePooling1D(2, padding="same"), (5, 3)),
    "AveragePooling3D": _one(lambda: L.AveragePooling3D(2), (4, 4, 4, 2)),
    "GlobalAveragePooling1D": _one(lambda: L.GlobalAveragePooling1D(), (6, 3)),
    "GlobalMaxPooling1D": _one(lambda: L.GlobalMaxPooling1D(keepdims=True), (6, 3)),
    "GlobalAveragePooling3D": _one(lambda: L.GlobalAveragePooling3D(), (3, 3, 3, 2)),
    "GlobalMaxPooling3D": _one(lambda: L.GlobalMaxPooling3D(), (3, 3, 3, 2)),
    "UpSampling1D": _one(lambda: L.UpSampling1D(3), (4, 2)),
    "UpSampling2D": _one(lambda: L.UpSampling2D((2, 3), interpolation="bilinear"), (3, 3, 2)),
    "UpSampling3D": _one(lambda: L.UpSampling3D(2), (2, 2, 2, 2)),
    "ZeroPadding1D": _one(lambda: L.ZeroPadding1D((1, 2)), (4, 2)),
    "ZeroPadding2D": _one(lambda: L.ZeroPadding2D(1), (3, 3, 2)),
    "ZeroPadding3D": _one(lambda: L.ZeroPadding3D(1), (2, 2, 2, 2)),
    "Cropping1D": _one(lambda: L.Cropping1D((1, 2)), (6, 2)),
    "Cropping2D": _one(lambda: L.Cropping2D(((1, 0), (0, 1))), (5, 5, 2)),
    "Cropping3D": _one(lambda: L.Cropping3D(1), (4, 4, 4, 2)),
    "Normalization": _one(lambda: L.Normalization(mean=0.5, variance=2.0), (4,)),
    "Discretization": _one(lambda: L.Discretization(bin_boundaries=[-0.5, 0.0, 0.5]), (4,)),
    "CategoryEncoding": _one(lambda: L.CategoryEncoding(7, output_mode="count"), (3,),
                             "int32"),
    "Rescaling": _one(lambda: L.Rescaling(1 / 255.0, offset=0.1), (4,)),
    "Resizing": _one(lambda: L.Resizing(4, 5), (6, 6, 3)),
    "CenterCrop": _one(lambda: L.CenterCrop(4, 4), (6, 6, 3)),
    "RandomFlip": _one(lambda: L.RandomFlip("horizontal", seed=1), (6, 6, 3)),
    "RandomRotation": _one(lambda: L.RandomRotation(0.1, seed=1), (6, 6, 3)),
    "RandomTranslation": _one(lambda: L.RandomTranslation(0.1, 0.2, seed=1), (6, 6, 3)),
    "RandomZoom": _one(lambda: L.RandomZoom(0.1, seed=1), (6, 6, 3)),
    "RandomContrast": _one(lambda: L.RandomContrast(0.2, seed=1), (6, 6, 3)),
    "RandomBrightness": _one(lambda: L.RandomBrightness(0.2, seed=1), (6, 6, 3)),
    "RandomCrop": _one(lambda: L.RandomCrop(4, 4, seed=1), (6, 6, 3)),
    "ReLU": _one(lambda: L.ReLU(max_value=2.0, negative_slope=0.1), (4,)),
    "LeakyReLU": _one(lambda: L.LeakyReLU(0.2), (4,)),
    "PReLU": _one(lambda: L.PReLU(alpha_initializer="ones", shared_axes=[1]), (3, 4)),
    "ELU": _one(lambda: L.ELU(0.5), (4,)),
    "Softmax": _one(lambda: L.Softmax(axis=1), (3, 4)),
    "Identity": _one(lambda: L.Identity(), (4,)),
    "Lambda": _one(lambda: L.Lambda(lk.tanh), (4,)),
    "InputLayer": (lambda: L.InputLayer(shape=(4,)), [((4,), "float32")],
                   lambda layer, xs: lk.Sequential([layer, L.Dense(2)])),
    "RepeatVector": _one(lambda: L.RepeatVector(3), (4,)),
    "Permute": _one(lambda: L.Permute((2, 1)), (3, 4)),
    "TimeDistributed": _one(lambda: L.TimeDistributed(L.Dense(2)), (3, 4)),
    "Subtract": _many(lambda: L.Subtract(), [(4,), (4,)]),
    "Multiply": _many(lambda: L.Multiply(), [(4,), (4,)]),
    "Average": _many(lambda: L.Average(), [(4,), (4,)]),
    "Maximum": _many(lambda: L.Maximum(), [(4,), (4,)]),
    "Minimum": _many(lambda: L.Minimum(), [(4,), (4,)]),
    "Dot": _many(lambda: L.Dot(axes=1, normalize=True), [(4,), (4,)]),
    "SpatialDropout1D": _one(lambda: L.SpatialDropout1D(0.2, seed=1), (4, 3)),
    "SpatialDropout2D": _one(lambda: L.SpatialDropout2D(0.2, seed=1), (4, 4, 3)),
    "SpatialDropout3D": _one(lambda: L.SpatialDropout3D(0.2, seed=1), (2, 2, 2, 3)),
    "GaussianNoise": _one(lambda: L.GaussianNoise(0.1, seed=1), (4,)),
    "GaussianDropout": _one(lambda: L.GaussianDropout(0.1, seed=1), (4,)),
    "AlphaDropout": _one(lambda: L.AlphaDropout(0.1, seed=1), (4,)),
    "ActivityRegularization": _one(lambda: L.ActivityRegularization(0.1, 0.2), (4,)),
    "GroupNormalization": _one(lambda: L.GroupNormalization(groups=2), (3, 4)),
    "UnitNormalization": _one(lambda: L.UnitNormalization(axis=-1), (4,)),
    "Masking": _one(lambda: L.Masking(0.0), (4, 3)),
    "StackedRNNCells": _one(lambda: L.RNN(L.StackedRNNCells([L.LSTMCell(3), L.GRUCell(2)])),
                            (4, 3)),
    "Attention": _many(lambda: L.Attention(use_scale=True), [(4, 3), (5, 3)]),
    "AdditiveAttention": _many(lambda: L.AdditiveAttention(), [(4, 3), (5, 3)]),
}


def _case(cls):
    return CASES.get(cls.__name__)


def test_every_exported_layer_has_a_case():
    missing = sorted({cls.__name__ for cls in _layer_classes().values()} - set(CASES))
    assert not missing, (f"add constructor arguments and inputs for {missing} to CASES in "
                         f"{__file__} so that their configs and saving are tested")


def _build(cls):
    make, specs, call = _case(cls)
    inputs = [lk.Input(shape, dtype=dtype) for shape, dtype in specs]
    layer = make()
    out = call(layer, inputs)  # (or a whole model, for layers that are not called)
    model = out if isinstance(out, lk.Model) else lk.Model(
        inputs if len(inputs) > 1 else inputs[0], out)
    data = [_x((2,) + shape, dtype, seed=i) for i, (shape, dtype) in enumerate(specs)]
    rng = np.random.default_rng(3)
    model.set_weights([rng.normal(size=w.shape).astype(w.dtype) if "variance" not in w.name
                       else rng.uniform(0.5, 1.5, w.shape).astype(w.dtype)
                       for w in model.weights])
    return model, layer, data if len(data) > 1 else data[0]


@pytest.mark.parametrize("name", sorted(_layer_classes()))
def test_layer_config_round_trip(name):
    cls = _layer_classes()[name]
    if _case(cls) is None:
        pytest.fail(f"no CASES entry for {name}")
    _, layer, _ = _build(cls)
    config = layer.get_config()
    text = json.dumps(lk.saving.serialize_keras_object(layer))  # JSON-able, Keras's schema
    again = lk.saving.deserialize_keras_object(json.loads(text))
    assert type(again) is type(layer)
    assert _json(again.get_config()) == _json(config)
    # an unbuilt clone: the same config but for the build shapes of inner layers
    assert _unbuilt(type(layer).from_config(config).get_config()) == _unbuilt(config)


@pytest.mark.parametrize("weights_format", ["h5", "layerkit"])
@pytest.mark.parametrize("name", sorted(_layer_classes()))
def test_layer_saved_and_loaded_in_a_model(name, weights_format, tmp_path):
    if weights_format == "h5":
        pytest.importorskip("h5py")
    model, _, data = _build(_layer_classes()[name])
    path = model.save(tmp_path / "m.keras", weights_format=weights_format)
    again = lk.models.load_model(path)
    for a, b in zip(again.get_weights(), model.get_weights()):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(again.predict(data, verbose=0), model.predict(data, verbose=0),
                               rtol=1e-6, atol=1e-6)


def test_constraints_round_trip_and_values():
    w = np.array([[3.0, 0.0, -1.0], [4.0, 0.5, 1.0]], np.float32)
    norms = np.sqrt((w ** 2).sum(0, keepdims=True))
    cases = [
        (lk.constraints.MaxNorm(1.0), w * np.clip(norms, 0, 1.0) / (1e-7 + norms)),
        (lk.constraints.NonNeg(), np.maximum(w, 0)),
        (lk.constraints.UnitNorm(axis=0), w / (1e-7 + norms)),
        (lk.constraints.MinMaxNorm(1.0, 2.0, rate=0.5),
         w * (0.5 * np.clip(norms, 1.0, 2.0) + 0.5 * norms) / (1e-7 + norms)),
    ]
    for c, expected in cases:
        np.testing.assert_allclose(c(lk.constant(w)).numpy(), expected, rtol=1e-6)
        again = lk.constraints.get(json.loads(json.dumps(lk.constraints.serialize(c))))
        assert type(again) is type(c) and again.get_config() == c.get_config()
    assert isinstance(lk.constraints.get("max_norm"), lk.constraints.MaxNorm)
    assert lk.constraints.get(None) is None
    with pytest.raises(ValueError, match="unknown constraint 'maxx'"):
        lk.constraints.get("maxx")


def _objects():
    sched = lk.optimizers.schedules
    return [
        *[cls() for cls in (lk.initializers.Zeros, lk.initializers.Ones,
                            lk.initializers.GlorotUniform, lk.initializers.GlorotNormal,
                            lk.initializers.HeNormal, lk.initializers.HeUniform,
                            lk.initializers.LecunNormal, lk.initializers.LecunUniform)],
        lk.initializers.Constant(0.5), lk.initializers.RandomNormal(0.1, 0.2, seed=1),
        lk.initializers.RandomUniform(-1, 1, seed=2), lk.initializers.TruncatedNormal(seed=3),
        lk.initializers.VarianceScaling(2.0, "fan_out", "uniform", seed=4),
        lk.initializers.Orthogonal(2.0, seed=5), lk.initializers.Identity(3.0),
        lk.regularizers.L1(0.2), lk.regularizers.L2(0.3), lk.regularizers.L1L2(0.1, 0.2),
        lk.constraints.MaxNorm(3, axis=[0, 1]), lk.constraints.NonNeg(),
        lk.losses.MeanSquaredError(reduction="sum"), lk.losses.MeanAbsoluteError(),
        lk.losses.MeanAbsolutePercentageError(), lk.losses.MeanSquaredLogarithmicError(),
        lk.losses.Huber(2.0), lk.losses.LogCosh(), lk.losses.KLDivergence(), lk.losses.Hinge(),
        lk.losses.SquaredHinge(), lk.losses.Poisson(),
        lk.losses.BinaryCrossentropy(True, 0.1), lk.losses.CategoricalCrossentropy(
            label_smoothing=0.2), lk.losses.SparseCategoricalCrossentropy(True, ignore_class=0),
        lk.metrics.Accuracy(), lk.metrics.BinaryAccuracy(threshold=0.3),
        lk.metrics.CategoricalAccuracy(), lk.metrics.SparseCategoricalAccuracy(),
        lk.metrics.TopKCategoricalAccuracy(3), lk.metrics.SparseTopKCategoricalAccuracy(2),
        lk.metrics.MeanSquaredError(), lk.metrics.MeanAbsoluteError(), lk.metrics.Mean(),
        lk.metrics.Sum(), lk.metrics.Precision(thresholds=[0.3, 0.6]), lk.metrics.Recall(top_k=2),
        lk.metrics.AUC(num_thresholds=50, curve="PR"),
        lk.optimizers.SGD(0.1, momentum=0.5, nesterov=True), lk.optimizers.Adam(amsgrad=True),
        lk.optimizers.AdamW(weight_decay=0.1), lk.optimizers.RMSprop(centered=True),
        lk.optimizers.Adagrad(clipnorm=1.0),
        lk.optimizers.Adam(sched.ExponentialDecay(0.1, 10, 0.5, staircase=True)),
        sched.CosineDecay(0.1, 100, alpha=0.1), sched.PiecewiseConstantDecay([5], [1.0, 0.5]),
    ]


@pytest.mark.parametrize("obj", _objects(), ids=lambda o: type(o).__name__)
def test_object_config_round_trip(obj):
    config = json.loads(json.dumps(lk.saving.serialize_keras_object(obj)))
    assert config["module"].startswith("keras.") and config["registered_name"] is None
    again = lk.saving.deserialize_keras_object(config)
    assert type(again) is type(obj)
    assert _json(again.get_config()) == _json(obj.get_config())
    assert type(obj).from_config(obj.get_config()).get_config() == obj.get_config()


def test_loss_classes_have_keras_signatures():
    import inspect

    sig = inspect.signature(lk.losses.BinaryCrossentropy)
    assert list(sig.parameters) == ["from_logits", "label_smoothing", "axis", "reduction",
                                    "name", "dtype"]
    assert sig.parameters["from_logits"].default is False
    assert list(inspect.signature(lk.losses.Huber).parameters) == ["delta", "reduction", "name",
                                                                   "dtype"]
    assert lk.losses.MeanSquaredError("sum").reduction == "sum"  # Keras's positional order
    # Keras writes SparseCategoricalCrossentropy without axis, BCE with its arguments
    assert lk.losses.SparseCategoricalCrossentropy().get_config() == {
        "name": "sparse_categorical_crossentropy", "reduction": "sum_over_batch_size",
        "from_logits": False, "ignore_class": None}
    assert lk.losses.BinaryCrossentropy().get_config() == {
        "name": "binary_crossentropy", "reduction": "sum_over_batch_size", "from_logits": False,
        "label_smoothing": 0.0, "axis": -1}


def test_keras_only_arguments():
    # Keras 3 writes arguments layerkit does not take: dropped at their neutral values...
    dense = L.Dense.from_config({"units": 2, "quantization_config": None, "lora_rank": None})
    assert dense.units == 2
    adam = lk.optimizers.Adam.from_config({"learning_rate": 0.1, "use_ema": False,
                                           "ema_momentum": 0.99, "loss_scale_factor": None})
    assert float(adam.learning_rate) == pytest.approx(0.1)
    init = lk.initializers.GlorotUniform.from_config({"seed": 1, "input_axes": None,
                                                      "output_axes": None})
    assert init.seed == 1
    # ...refused otherwise, never silently ignored
    with pytest.raises(NotImplementedError, match="use_ema=True"):
        lk.optimizers.Adam.from_config({"use_ema": True})
    with pytest.raises(NotImplementedError, match="MultiHeadAttention.*use_gate=True"):
        L.MultiHeadAttention.from_config({"num_heads": 2, "key_dim": 2, "use_gate": True})
    with pytest.raises(TypeError, match="unexpected keyword.*bogus"):
        L.Dense.from_config({"units": 2, "bogus": 1})
    # a Keras dtype policy
    d = L.Dense.from_config({"units": 2, "dtype": {"module": "keras", "class_name": "DTypePolicy",
                                                   "config": {"name": "float64"},
                                                   "registered_name": None}})
    assert d.dtype == "float64"


@pytest.mark.parametrize("traced", [False, True])
def test_optimizers_apply_constraints_after_each_update(traced):
    """As in Keras 3: apply_gradients (in any training loop, eager or traced) projects
    each updated variable with its constraint."""
    layer = L.Dense(3, kernel_constraint=lk.constraints.MaxNorm(0.5),
                    bias_constraint=lk.constraints.NonNeg())
    layer.build((None, 4))
    assert isinstance(layer.kernel.constraint, lk.constraints.MaxNorm)
    assert lk.Variable([1.0]).constraint is None
    opt = lk.optimizers.SGD(1.0)
    x = _x((5, 4))

    def step():
        with lk.GradientTape() as tape:
            loss = lk.reduce_sum(layer(x)) * -1.0   # pushes weights up
        grads = tape.gradient(loss, layer.trainable_variables)
        opt.apply_gradients(zip(grads, layer.trainable_variables))

    run = lk.function(step) if traced else step
    for _ in range(3):
        kernel_before, bias_before = layer.kernel.numpy(), layer.bias.numpy()
        run()
        # the unconstrained SGD update, then the projection
        g_kernel = -np.repeat(x.sum(0)[:, None], 3, axis=1)
        raw = kernel_before - g_kernel
        norms = np.sqrt((raw ** 2).sum(0, keepdims=True))
        np.testing.assert_allclose(layer.kernel.numpy(),
                                   raw * np.clip(norms, 0, 0.5) / (1e-7 + norms), rtol=1e-5)
        np.testing.assert_allclose(layer.bias.numpy(), np.maximum(bias_before + 5.0, 0),
                                   rtol=1e-6)
