"""ONNX emitters for the records behind the 3-D convolution, resizing and categorical
layers (conv_nd, conv_nd_backprop_input, resize, bucketize, category_encode): each layer
and op is exported, checked and run by ONNX Runtime at batch sizes other than the traced
ones, matching layerkit within 1e-5; what the emitters refuse names the op."""
import numpy as np
import pytest

import layerkit as lk
from layerkit.onnx import UnsupportedOpError
from layerkit.primitives import image as _image
from tests.onnx.helpers import export_and_run, floats, ints

pytest.importorskip("onnxruntime")

L = lk.layers
S = lk.TensorSpec


def predict(model):
    return lambda x: model(x, training=False).numpy()


# name, layer, input shape (None = batch), input maker
LAYERS = [
    ("conv3d", lambda: L.Conv3D(3, 2, strides=(1, 2, 1), padding="same", use_bias=True),
     (None, 5, 6, 4, 2), floats(None, 5, 6, 4, 2)),
    ("conv3d_dilated_valid", lambda: L.Conv3D(2, 2, dilation_rate=2, activation="relu"),
     (None, 5, 5, 5, 3), floats(None, 5, 5, 5, 3)),
    ("conv3d_groups", lambda: L.Conv3D(4, 2, groups=2), (None, 4, 4, 4, 4),
     floats(None, 4, 4, 4, 4)),
    ("conv3d_transpose", lambda: L.Conv3DTranspose(3, 3, strides=2, padding="same"),
     (None, 3, 4, 2, 2), floats(None, 3, 4, 2, 2)),
    ("conv3d_transpose_valid", lambda: L.Conv3DTranspose(2, (2, 3, 2), strides=(2, 1, 3)),
     (None, 3, 3, 2, 2), floats(None, 3, 3, 2, 2)),
    ("resizing_bilinear_up", lambda: L.Resizing(7, 9), (None, 4, 5, 2), floats(None, 4, 5, 2)),
    ("resizing_bilinear_down", lambda: L.Resizing(3, 4), (None, 7, 9, 2),
     floats(None, 7, 9, 2)),
    ("resizing_nearest", lambda: L.Resizing(6, 3, interpolation="nearest"), (None, 4, 5, 2),
     floats(None, 4, 5, 2)),
    ("upsampling2d_bilinear", lambda: L.UpSampling2D((2, 3), interpolation="bilinear"),
     (None, 3, 4, 2), floats(None, 3, 4, 2)),
    ("discretization", lambda: L.Discretization([-1.0, 0.0, 0.5, 2.0]), (None, 6),
     floats(None, 6)),
    ("category_one_hot", lambda: L.CategoryEncoding(5, output_mode="one_hot"), (None,),
     ints(5, None)),
    ("category_multi_hot", lambda: L.CategoryEncoding(6, output_mode="multi_hot"), (None, 4),
     ints(6, None, 4)),
    ("category_count", lambda: L.CategoryEncoding(6, output_mode="count"), (None, 7),
     ints(6, None, 7)),
]


@pytest.mark.parametrize("name,make,shape,maker", LAYERS, ids=[c[0] for c in LAYERS])
def test_layer_matches_layerkit(name, make, shape, maker, tmp_path):
    dtype = "int32" if name.startswith("category") else "float32"
    inp = L.Input(shape[1:], dtype=dtype)
    model = lk.models.Model(inp, make()(inp))
    export_and_run(model, None, [maker], tmp_path / f"{name}.onnx", call=predict(model))


def test_ops_at_opset_18(tmp_path):
    # ReduceMax (multi_hot) takes its axes as an input from opset 18
    encode = L.CategoryEncoding(4, output_mode="multi_hot")

    def f(x, t):
        return (lk.nn.conv3d(x, lk.ones((2, 2, 2, 2, 3)) * 0.25, [1, 1, 1, 1, 1], "SAME"),
                _image.resize(x[:, 0], (5, 3), "nearest"), encode(t))

    export_and_run(lk.function(f), [S((None, 3, 4, 4, 2)), S((None, 3), "int32")],
                   [floats(None, 3, 4, 4, 2), ints(4, None, 3)], tmp_path / "f.onnx", opset=18)


def test_bucketize_nan_and_int_inputs(tmp_path):
    # NaN lands past the last boundary (np.digitize); integer inputs compare as float64
    d1, d2 = L.Discretization([0.0, 1.0]), L.Discretization([2.5, 4.0])
    f = lk.function(lambda x, i: (d1(x), d2(i)))
    x = lambda b: np.array([[np.nan, -1.0, 0.0, 1.0, 3.0]] * b, np.float32)
    export_and_run(f, [S((None, 5)), S((None, 5), "int32")], [x, ints(6, None, 5)],
                   tmp_path / "b.onnx")


def test_antialiased_downsampling_names_the_op(tmp_path):
    f = lambda x: _image.resize(x, (2, 2), "bilinear", antialias=True)
    with pytest.raises(UnsupportedOpError, match=r"'resize'.*antialiased downsampling"):
        lk.onnx.export(f, tmp_path / "f.onnx", input_signature=[S((None, 6, 6, 1))])
    assert not (tmp_path / "f.onnx").exists()
