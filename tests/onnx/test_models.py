"""Whole models exported to ONNX and run by ONNX Runtime: an MLP, a CNN, an LSTM text
model, the DCGAN generator of the keras-io "Customizing what happens in fit()" guide and
a small transformer block, as Sequential, functional and subclassed models and as an
lk.function; predictions match layerkit's within 1e-5 at batch sizes other than the
traced ones."""
import numpy as np
import pytest

import layerkit as lk
from tests.onnx.architectures import cnn, dcgan_generator, lstm_text, mlp, transformer_block
from tests.onnx.helpers import export_and_run, floats, session
from tests.onnx.helpers import ints as tokens

pytest.importorskip("onnxruntime")

L = lk.layers
R = np.random.default_rng(3)


def predict(model):
    return lambda *xs: model(xs[0] if len(xs) == 1 else list(xs), training=False).numpy()


def test_mlp(tmp_path):
    model = mlp()
    proto, _ = export_and_run(model, None, [floats(None, 20)], tmp_path / "mlp.onnx",
                              call=predict(model))
    assert [i.name for i in proto.graph.input] == ["features"]


def test_cnn(tmp_path):
    model = cnn()
    # moving statistics other than 0/1, so inference-mode normalisation is exercised
    bn = next(layer for layer in model.layers if isinstance(layer, L.BatchNormalization))
    bn.moving_mean.assign(R.standard_normal(8).astype(np.float32))
    bn.moving_variance.assign(R.uniform(0.5, 2, 8).astype(np.float32))
    proto, _ = export_and_run(model, None, [floats(None, 16, 16, 1)], tmp_path / "cnn.onnx",
                              call=predict(model))
    assert [i.name for i in proto.graph.input] == ["image"]
    ops = {n.op_type for n in proto.graph.node}
    assert {"Conv", "MaxPool", "AveragePool", "Softmax"} <= ops
    assert "Dropout" not in ops


def test_lstm_text_model(tmp_path):
    model = lstm_text()
    proto, _ = export_and_run(model, None, [tokens(50, None, 12)], tmp_path / "lstm.onnx",
                              call=predict(model))
    assert [i.name for i in proto.graph.input] == ["tokens"]   # the lk.Input's name
    assert sum(n.op_type == "LSTM" for n in proto.graph.node) == 3


def test_lstm_text_model_with_dynamic_sequence_length(tmp_path):
    model = lstm_text(seq_len=None)
    model.build((None, None))
    path = tmp_path / "lstm_dyn.onnx"
    proto = lk.onnx.export(model, path)
    name = proto.graph.input[0].name
    dims = proto.graph.input[0].type.tensor_type.shape.dim
    assert [d.dim_param for d in dims] == ["batch", f"{name}_dim1"]
    sess = session(path)
    for b, t in [(1, 5), (4, 17)]:
        x = tokens(50, b, t)(0)
        np.testing.assert_allclose(sess.run(None, {name: x})[0], predict(model)(x),
                                   rtol=0, atol=1e-5)


def test_dcgan_generator(tmp_path):
    model = dcgan_generator()
    proto, _ = export_and_run(model, None, [floats(None, 128)], tmp_path / "gen.onnx",
                              call=predict(model), batches=(1, 4))
    out = proto.graph.output[0].type.tensor_type.shape.dim
    assert [d.dim_param or d.dim_value for d in out] == ["batch", 28, 28, 1]
    assert sum(n.op_type == "ConvTranspose" for n in proto.graph.node) == 2


def test_transformer_block(tmp_path):
    model = transformer_block()
    export_and_run(model, None, [tokens(40, None, 10)], tmp_path / "block.onnx",
                   call=predict(model))


def test_model_export_method_and_opset_18(tmp_path, capsys):
    model = mlp()
    path = tmp_path / "m.onnx"
    model.export(path, format="onnx", opset=18)
    assert "Saved ONNX model at" in capsys.readouterr().out
    import onnx

    proto = onnx.load(str(path))
    assert proto.opset_import[0].version == 18
    x = floats(None, 20)(5)
    name = proto.graph.input[0].name
    np.testing.assert_allclose(session(path).run(None, {name: x})[0], predict(model)(x),
                               rtol=0, atol=1e-5)


def test_functional_model_with_two_inputs_and_outputs(tmp_path):
    a, c = lk.Input((3,), name="a"), lk.Input((4,), name="c")
    h = L.Concatenate()([L.Dense(5)(a), L.Dense(5, activation="relu")(c)])
    model = lk.Model([a, c], [L.Dense(2)(h), L.Dense(1, activation="sigmoid")(h)])
    proto, _ = export_and_run(model, None, [floats(None, 3), floats(None, 4)],
                              tmp_path / "two.onnx",
                              call=lambda x, y: [t.numpy() for t in model([x, y])])
    assert [i.name for i in proto.graph.input] == ["a", "c"]
    assert [o.name for o in proto.graph.output] == ["output_0", "output_1"]


class _Residual(lk.Model):
    def __init__(self):
        super().__init__()
        self.inner = L.Dense(8, activation="gelu")
        self.norm = L.LayerNormalization()
        self.out = L.Dense(2)

    def call(self, x, training=None):
        h = self.norm(self.inner(x) + lk.tile(x, [1, 2]))
        return self.out(lk.concat([h, lk.reduce_max(h, axis=-1, keepdims=True)], axis=-1))


def test_subclassed_model(tmp_path):
    model = _Residual()
    model(np.zeros((2, 4), np.float32))   # built by a call: the signature comes from it
    proto, _ = export_and_run(model, None, [floats(None, 4)], tmp_path / "sub.onnx",
                              call=predict(model))
    assert [i.name for i in proto.graph.input] == ["x"]   # the call argument's name


def test_lk_function_with_input_signature(tmp_path):
    w = lk.Variable(R.standard_normal((4, 3)).astype(np.float32), name="w")

    @lk.function(input_signature=[lk.TensorSpec((None, 4)), lk.TensorSpec((None, 1))])
    def scored(x, scale):
        return lk.nn.softmax(lk.matmul(x, w) * scale)

    proto, _ = export_and_run(scored, None, [floats(None, 4), floats(None, 1)],
                              tmp_path / "fn.onnx", call=lambda x, s: scored(x, s).numpy())
    assert [i.name for i in proto.graph.input] == ["x", "scale"]
    # the Variable's current value is the initializer
    inits = {i.name: i for i in proto.graph.initializer}
    import onnx.numpy_helper as nh

    assert any(np.array_equal(nh.to_array(t), w.numpy()) for t in inits.values())
