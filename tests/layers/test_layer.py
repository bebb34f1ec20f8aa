"""The Layer protocol: build, tracking, naming, weights order, freezing, losses, errors,
config, checkpoint protocol and symbolic calls."""
import numpy as np
import pytest

import layerkit as lk
import layerkit.random  # noqa: F401  (lk.random until the top-level export lands)
from layerkit.checkpoint import trackable
from layerkit.layers import BatchNormalization, Dense, Dropout, Layer, SymbolicTensor, reset_uids


class Scale(Layer):
    def build(self, input_shape):
        self.w = self.add_weight("w", (input_shape[-1],), initializer="ones")

    def call(self, x):
        return x * self.w


class Block(Layer):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.dense = Dense(3)
        self.norm = BatchNormalization()
        self.heads = [Dense(2), Dense(2)]

    def call(self, x, training=None):
        y = self.norm(self.dense(x), training=training)
        return self.heads[0](y) + self.heads[1](y)


def test_build_on_first_call_gets_batch_shape():
    seen = []

    class Probe(Layer):
        def build(self, input_shape):
            seen.append(input_shape)

        def call(self, x):
            return x

    layer = Probe()
    assert not layer.built
    layer(np.zeros((4, 7), np.float32))
    assert layer.built and seen == [(4, 7)]
    layer(np.zeros((4, 7), np.float32))
    assert seen == [(4, 7)]


def test_explicit_build_marks_built_and_creates_weights():
    d = Dense(5)
    d.build((None, 3))
    assert d.built and [w.shape for w in d.weights] == [(3, 5), (5,)]


def test_inputs_converted_to_layer_dtype():
    layer = Scale()
    y = layer(np.ones((2, 3), np.float64))
    assert y.dtype == np.float32
    y = layer([[1.0, 2.0, 3.0]])
    assert isinstance(y, lk.Tensor) and y.shape == (1, 3)


def test_unique_default_names_snake_case():
    reset_uids()
    assert [Dense(1).name for _ in range(3)] == ["dense", "dense_1", "dense_2"]
    assert Scale().name == "scale"
    assert lk.layers.Conv2D(1, 1).name == "conv2d"
    assert lk.layers.SimpleRNN(1).name == "simple_rnn"
    assert Dense(1, name="head").name == "head"


def test_tracking_in_assignment_order_and_keras_weight_order():
    b = Block()
    b(np.ones((4, 5), np.float32), training=True)
    assert b.layers == [b.dense, b.norm, b.heads[0], b.heads[1]]
    names = [w.name for w in b.weights]
    # Keras 3 order: each layer's trainable then non-trainable weights, layer by layer.
    assert names == ["kernel", "bias", "gamma", "beta", "moving_mean", "moving_variance",
                     "kernel", "bias", "kernel", "bias"]
    assert [w.name for w in b.trainable_weights] == ["kernel", "bias", "gamma", "beta",
                                                      "kernel", "bias", "kernel", "bias"]
    assert [w.name for w in b.non_trainable_weights] == ["moving_mean", "moving_variance"]
    assert b.trainable_variables == b.trainable_weights and b.variables == b.weights
    assert b.count_params() == 5 * 3 + 3 + 4 * 3 + 2 * (3 * 2 + 2)


def test_containers_and_variables_are_tracked_also_after_assignment():
    class Holder(Layer):
        def __init__(self):
            super().__init__()
            self.blocks = []
            self.table = {"a": Dense(1)}
            self.v = lk.Variable(np.zeros(2, np.float32), name="v")
            self.frozen = lk.Variable(np.ones(1, np.float32), trainable=False, name="f")

        def call(self, x):
            return x

    h = Holder()
    h.blocks.append(Dense(2))
    assert h.layers == [h.blocks[0], h.table["a"]]
    assert [w.name for w in h.weights] == ["v", "f"]
    assert [w.name for w in h.trainable_weights] == ["v"]
    h.blocks = None  # reassigning to a plain value stops tracking
    assert h.layers == [h.table["a"]]
    assert h.submodules == [h.table["a"]]


def test_submodules_depth_first():
    b = Block()
    outer = Block()
    outer.inner = b
    assert outer.submodules[:4] == [outer.dense, outer.norm, outer.heads[0], outer.heads[1]]
    assert outer.submodules[4:6] == [b, b.dense]


def test_trainable_false_freezes_sublayers_and_tapes():
    b = Block()
    x = np.ones((4, 5), np.float32)
    b(x)
    b.trainable = False
    assert b.trainable_weights == [] and len(b.non_trainable_weights) == 10
    assert not b.dense.trainable and not b.dense.kernel.trainable
    with lk.GradientTape() as tape:
        lk.reduce_sum(b(x))
    assert tape.watched_variables() == ()
    b.trainable = True
    assert len(b.trainable_weights) == 8 and b.dense.kernel.trainable
    assert not b.norm.moving_mean.trainable


def test_frozen_batch_norm_runs_in_inference_mode():
    bn = BatchNormalization()
    x = np.random.default_rng(0).normal(3.0, 2.0, (8, 2)).astype(np.float32)
    bn(x, training=True)
    moved = bn.moving_mean.numpy().copy()
    bn.trainable = False
    y = bn(x, training=True)
    np.testing.assert_array_equal(bn.moving_mean.numpy(), moved)
    ref = (x - moved) / np.sqrt(bn.moving_variance.numpy() + 1e-3)
    np.testing.assert_allclose(y.numpy(), ref, rtol=1e-5, atol=1e-6)


def test_training_flag_propagates_and_is_only_passed_when_accepted():
    got = []

    class Inner(Layer):
        def call(self, x, training=None):
            got.append(training)
            return x

    class NoFlag(Layer):
        def call(self, x):
            return x

    class Outer(Layer):
        def __init__(self):
            super().__init__()
            self.inner, self.plain = Inner(), NoFlag()

        def call(self, x, training=None):
            return self.plain(self.inner(x))

    o = Outer()
    o(np.ones(2, np.float32), training=True)
    o(np.ones(2, np.float32))
    o.inner(np.ones(2, np.float32), training=False)
    assert got == [True, None, False]
    NoFlag()(np.ones(2, np.float32), training=True)  # dropped silently, like Keras


def test_dropout_uses_training_flag():
    d = Dropout(0.5)
    x = np.ones((100, 10), np.float32)
    np.testing.assert_array_equal(d(x).numpy(), x)
    y = d(x, training=True).numpy()
    assert set(np.unique(y)) <= {0.0, 2.0} and 0.3 < (y == 0).mean() < 0.7


def test_input_spec_error_names_layer_expected_and_received():
    d = Dense(2, name="dense_1")
    d(np.ones((1, 4), np.float32))
    with pytest.raises(ValueError, match=r"layer 'dense_1'.*axis -1.*value 4.*\(1, 5\)"):
        d(np.ones((1, 5), np.float32))
    with pytest.raises(ValueError, match=r"layer 'dense_1'.*min_ndim=2.*ndim=1"):
        d(np.ones(4, np.float32))


def test_error_names_path_inside_model():
    class Model(Layer):  # any class named Model is reported as a model
        def __init__(self, **kw):
            super().__init__(**kw)
            self.first, self.second = Dense(3, name="dense"), Dense(2, name="dense_1")

        def call(self, x):
            return self.second(self.first(x))

    m = Model(name="sequential")
    m(np.ones((1, 4), np.float32))
    m.second.build((None, 3))
    m.first = Dense(5, name="dense")  # now feeds 5 features to dense_1 (built for 3)
    with pytest.raises(ValueError,
                       match=r"layer 'dense_1' of model 'sequential'.*value 3.*\(1, 5\)"):
        m(np.ones((1, 4), np.float32))


def test_errors_inside_call_are_annotated_with_the_layer():
    class Bad(Layer):
        def build(self, input_shape):
            self.w = self.add_weight("w", (3, 2))

        def call(self, x):
            return lk.matmul(x, self.w)

    b = Bad(name="bad")
    b(np.ones((1, 3), np.float32))
    with pytest.raises(ValueError, match=r"layer 'bad'.*\(1, 4\).*built for input shape "
                                         r"\(1, 3\).*matmul"):
        b(np.ones((1, 4), np.float32))


def test_forgotten_super_init_is_detected():
    class NoSuper(Layer):
        def __init__(self):
            self.dense = Dense(2)

    with pytest.raises(RuntimeError, match=r"NoSuper.*super\(\).__init__\(\)"):
        NoSuper()

    class NoSuperLate(Layer):
        def __init__(self):
            self.units = 3

        def call(self, x):
            return x

    with pytest.raises(RuntimeError, match="super"):
        NoSuperLate()(np.ones(2, np.float32))


def test_state_locked_after_build():
    s = Scale(name="scale_locked")
    s(np.ones((1, 2), np.float32))
    with pytest.raises(ValueError, match=r"scale_locked.*already built.*__init__\(\) or in "
                                         r"build\(\)"):
        s.add_weight("extra", (1,))
    with pytest.raises(ValueError, match="already built"):
        s.v = lk.Variable(np.zeros(1, np.float32))


def test_get_set_weights_round_trip_and_errors():
    d = Dense(3, name="dd")
    d(np.ones((1, 2), np.float32))
    ws = [np.arange(6, dtype=np.float32).reshape(2, 3), np.ones(3, np.float32)]
    d.set_weights(ws)
    for a, b in zip(d.get_weights(), ws):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(d(np.ones((1, 2), np.float32)).numpy(), [[4.0, 6.0, 8.0]])
    with pytest.raises(ValueError, match=r"'dd'.*'kernel'.*\(2, 3\).*\(3, 2\)"):
        d.set_weights([np.ones((3, 2)), np.ones(3)])
    with pytest.raises(ValueError, match=r"'dd'.*expected 2 arrays.*received 1"):
        d.set_weights([np.ones((2, 3))])


def test_count_params_unbuilt_raises():
    with pytest.raises(ValueError, match="not built"):
        Dense(2, name="fresh").count_params()


def test_add_loss_lasts_one_outer_call_and_regularizers_recomputed():
    class WithLoss(Layer):
        def __init__(self):
            super().__init__()
            self.dense = Dense(2, kernel_regularizer=lk.regularizers.L2(0.5),
                               kernel_initializer="ones")

        def call(self, x):
            y = self.dense(x)
            self.add_loss(lk.reduce_sum(y))
            return y

    layer = WithLoss()
    layer(np.ones((1, 3), np.float32))
    losses = [float(v) for v in layer.losses]
    assert losses == [6.0, 0.5 * 6.0]
    layer(np.zeros((1, 3), np.float32))
    assert [float(v) for v in layer.losses] == [0.0, 3.0]
    layer.dense.kernel.assign(np.zeros((3, 2), np.float32))
    assert float(layer.losses[1]) == 0.0
    # regularizer losses are differentiable functions of the weights
    layer.dense.kernel.assign(np.ones((3, 2), np.float32))
    with lk.GradientTape() as tape:
        reg = layer.dense.losses[-1]
    g = tape.gradient(reg, layer.dense.kernel)
    np.testing.assert_allclose(g.numpy(), np.ones((3, 2)))


def test_activity_regularizer_added_per_call():
    d = Dense(2, kernel_initializer="ones", activity_regularizer="l2")
    d(np.ones((2, 3), np.float32))
    # 0.01 * sum(3**2 over 2x2 outputs) / batch 2
    np.testing.assert_allclose(float(d.losses[0]), 0.01 * 36 / 2, rtol=1e-6)


def test_config_round_trip_and_custom_layer_needs_get_config():
    d = Dense(4, activation="relu", use_bias=False, name="cfg",
              kernel_initializer=lk.initializers.GlorotNormal(seed=3))
    config = d.get_config()
    assert config["units"] == 4 and config["activation"] == "relu"
    clone = Dense.from_config(config)
    assert clone.get_config() == config

    class Custom(Layer):
        def __init__(self, units, **kwargs):
            super().__init__(**kwargs)
            self.units = units

    # Keras 3's automatic config: plain constructor arguments are recorded...
    auto = Custom(3, name="c").get_config()
    assert auto == {"name": "c", "trainable": True, "dtype": "float32", "units": 3}
    assert Custom.from_config(auto).units == 3
    # ...others need get_config
    with pytest.raises(NotImplementedError, match=r"Custom.*\['units'\].*get_config"):
        Custom(lk.initializers.Ones()).get_config()
    assert Scale(name="s").get_config() == {"name": "s", "trainable": True, "dtype": "float32"}


def test_checkpoint_protocol_and_deferred_restore():
    b = Block()
    b(np.ones((2, 5), np.float32))
    assert list(b._checkpoint_children()) == ["dense", "norm", "heads/0", "heads/1"]
    assert list(b.norm._checkpoint_variables()) == ["gamma", "beta", "moving_mean",
                                                    "moving_variance"]
    fresh = Dense(2)
    trackable.defer(fresh, "kernel", np.full((3, 2), 7.0, np.float32))
    fresh(np.ones((1, 3), np.float32))
    np.testing.assert_array_equal(fresh.kernel.numpy(), np.full((3, 2), 7.0))


def test_duplicate_weight_names_are_made_unique_for_checkpoints():
    class Two(Layer):
        def build(self, input_shape):
            self.a = self.add_weight("w", (1,))
            self.b = self.add_weight("w", (2,))

        def call(self, x):
            return x

    t = Two()
    t(np.ones(1, np.float32))
    assert list(t._checkpoint_variables()) == ["w", "w_1"]


def test_add_weight_keras3_argument_order_and_defaults():
    class K3(Layer):
        def build(self, input_shape):
            self.w = self.add_weight(shape=(2, 2), initializer="zeros", name="w")
            self.n = self.add_weight((3,), dtype="int64")

        def call(self, x):
            return x

    k = K3()
    k(np.ones(1, np.float32))
    assert k.w.shape == (2, 2) and k.w.dtype == np.float32
    assert k.n.shape == (3,) and k.n.dtype == np.int64 and k.n.name == "variable"


def test_initializers_are_reproducible_with_set_seed():
    lk.random.set_seed(7)
    a = Dense(3)
    a.build((None, 4))
    lk.random.set_seed(7)
    b = Dense(3)
    b.build((None, 4))
    np.testing.assert_array_equal(a.kernel.numpy(), b.kernel.numpy())
    c = Dense(3)
    c.build((None, 4))
    assert not np.array_equal(a.kernel.numpy(), c.kernel.numpy())


def test_symbolic_call_builds_and_records_graph():
    x = SymbolicTensor((None, 4))
    d1, d2 = Dense(3), Dense(2)
    h = d1(x)
    y = d2(h)
    assert h.shape == (None, 3) and y.shape == (None, 2) and y.dtype == np.float32
    assert d1.built and d1.kernel.shape == (4, 3)
    assert y.layer is d2 and y.inputs == [h] and h.inputs == [x] and x.node is None
    # replaying the graph gives the eager result
    data = np.ones((5, 4), np.float32)
    np.testing.assert_allclose(y.layer(h.layer(data)).numpy(), d2(d1(data)).numpy())


def test_symbolic_call_with_unknown_time_dim_and_multiple_outputs():
    x = SymbolicTensor((None, None, 3))
    out, h, c = lk.layers.LSTM(5, return_sequences=True, return_state=True)(x)
    assert out.shape == (None, None, 5) and h.shape == (None, 5) and c.shape == (None, 5)
    assert (out.index, h.index, c.index) == (0, 1, 2) and out.node is h.node
    merged = lk.layers.Concatenate()([h, c])
    assert merged.shape == (None, 10) and merged.inputs == [h, c]


def test_symbolic_probe_has_no_side_effects():
    bn = BatchNormalization()
    bn(SymbolicTensor((None, 3)))
    np.testing.assert_array_equal(bn.moving_mean.numpy(), np.zeros(3))
    state = lk.random.get_state()
    Dropout(0.5)(SymbolicTensor((None, 3)), training=True)
    assert lk.random.get_state() == state


def test_compute_output_shape():
    assert Dense(7).compute_output_shape((None, 3)) == (None, 7)
    assert lk.layers.Conv2D(4, 3).compute_output_shape((None, 8, 8, 2)) == (None, 6, 6, 4)


def test_call_must_be_implemented():
    class NoCall(Layer):
        pass

    with pytest.raises(NotImplementedError, match="no_call.*call"):
        NoCall()(np.ones(1, np.float32))


def test_unknown_constructor_argument():
    with pytest.raises(TypeError, match=r"Dense.*\['unitz'\]"):
        Dense(2, unitz=3)


def test_input_shape_kwarg_recorded():
    d = Dense(2, input_shape=(4,))
    assert d._batch_input_shape == (None, 4)
    assert d.get_config()["batch_input_shape"] == (None, 4)


def test_checkpoint_restores_into_an_unbuilt_nested_layer(tmp_path):
    from layerkit.checkpoint import Checkpoint

    x = np.random.default_rng(0).normal(size=(4, 5)).astype(np.float32)
    b = Block()
    b(x, training=True)  # moves the batch-norm statistics too
    path = Checkpoint(model=b).write(str(tmp_path / "ck"))
    fresh = Block()
    status = Checkpoint(model=fresh).restore(path)
    np.testing.assert_allclose(fresh(x).numpy(), b(x).numpy(), rtol=1e-6)
    status.assert_consumed()


@pytest.mark.parametrize("layer", [
    lk.layers.Dense(3, activation="gelu", kernel_regularizer="l2"),
    lk.layers.Activation("softmax"), lk.layers.Flatten(), lk.layers.Reshape((2, -1)),
    lk.layers.Dropout(0.3, seed=2), lk.layers.Embedding(7, 3),
    lk.layers.Conv2D(2, (3, 1), strides=2, padding="same", activation="relu"),
    lk.layers.Conv2DTranspose(2, 3, output_padding=1, strides=2),
    lk.layers.DepthwiseConv2D(3, depth_multiplier=2), lk.layers.MaxPooling2D(3, 1),
    lk.layers.AveragePooling2D(), lk.layers.GlobalAveragePooling2D(keepdims=True),
    lk.layers.GlobalMaxPooling2D(), lk.layers.BatchNormalization(momentum=0.9),
    lk.layers.LayerNormalization(axis=(1, 2)), lk.layers.Add(), lk.layers.Concatenate(1),
    lk.layers.SimpleRNNCell(3), lk.layers.LSTMCell(3, unit_forget_bias=False),
    lk.layers.GRUCell(3, reset_after=False), lk.layers.RNN(lk.layers.GRUCell(2)),
    lk.layers.SimpleRNN(2, return_sequences=True), lk.layers.LSTM(4, dropout=0.1),
    lk.layers.GRU(3, go_backwards=True), lk.layers.Bidirectional(lk.layers.GRU(2), "ave"),
    lk.layers.MultiHeadAttention(2, 3, value_dim=4, output_shape=5),
], ids=lambda layer: type(layer).__name__)
def test_every_builtin_layer_config_round_trip(layer):
    import json

    config = layer.get_config()
    json.dumps(config)  # JSON-able
    clone = type(layer).from_config(config)
    assert type(clone) is type(layer) and clone.get_config() == config
