"""What the exporter refuses, and how it says so: unsupported ops by name and place,
sizes that depend on the batch in ways ONNX cannot follow, missing signatures, the
missing optional package, Model.export's formats; and the emitter registry."""
import sys

import numpy as np
import pytest

import layerkit as lk
from layerkit.onnx import ExportError, UnsupportedOpError, register_onnx
from layerkit.onnx.registry import emitter_for
from layerkit.primitives import reduce as _reduce

pytest.importorskip("onnx")

L = lk.layers
X = [lk.TensorSpec((None, 3))]


def test_unsupported_op_names_the_op_and_the_line(tmp_path):
    def f(x):
        return lk.cumprod(x, axis=1)   # no ONNX emitter

    with pytest.raises(UnsupportedOpError, match=r"op 'cumprod' has no ONNX emitter.*"
                                                 r"test_errors\.py:\d+.*lk\.cumprod"):
        lk.onnx.export(f, tmp_path / "f.onnx", input_signature=X)
    assert not (tmp_path / "f.onnx").exists()


class _CumProd(L.Layer):
    def call(self, x):
        return lk.cumprod(x, axis=-1)


def test_unsupported_op_names_the_layer(tmp_path):
    model = lk.Sequential([lk.Input((3,)), L.Dense(3), _CumProd(name="running_product")],
                          name="seq")
    with pytest.raises(UnsupportedOpError, match=r"'cumprod'.*in layer 'seq/running_product'"):
        lk.onnx.export(model, tmp_path / "m.onnx")


def test_size_not_proportional_to_the_batch_is_refused(tmp_path):
    def drop_last_row(x):
        return x[: x.shape[0] - 1] * 2.0

    with pytest.raises(ExportError, match=r"attribute 'key' of op 'getitem' changes with the "
                                          r"dynamic dimensions"):
        lk.onnx.export(drop_last_row, tmp_path / "f.onnx", input_signature=X)


def test_python_loop_over_the_batch_is_refused(tmp_path):
    def per_row(x):
        return lk.stack([x[i] * float(i) for i in range(x.shape[0])])

    with pytest.raises(ExportError, match=r"changes with the size of dynamic dimension "
                                          r"'batch'.*fixed size in input_signature"):
        lk.onnx.export(per_row, tmp_path / "f.onnx", input_signature=X)


def test_fixed_batch_size_exports_the_same_function(tmp_path):
    pytest.importorskip("onnxruntime")
    from tests.onnx.helpers import session

    def per_row(x):
        return lk.stack([x[i] * float(i) for i in range(x.shape[0])])

    path = tmp_path / "f.onnx"
    lk.onnx.export(per_row, path, input_signature=[lk.TensorSpec((4, 3))])
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    np.testing.assert_array_equal(session(path).run(None, {"x": x})[0], per_row(x).numpy())


def test_signature_is_required_for_plain_functions(tmp_path):
    with pytest.raises(ValueError, match="pass input_signature"):
        lk.onnx.export(lambda x: x * 2.0, tmp_path / "f.onnx")


def test_unbuilt_model_needs_a_signature(tmp_path):
    model = lk.Sequential([L.Dense(2)])
    with pytest.raises(ValueError, match="never been called"):
        lk.onnx.export(model, tmp_path / "m.onnx")


def test_non_tensor_output_is_refused(tmp_path):
    with pytest.raises(ExportError, match="returns a Python value 3"):
        lk.onnx.export(lambda x: (x, 3), tmp_path / "f.onnx", input_signature=X)


def test_opset_range(tmp_path):
    with pytest.raises(ValueError, match="opset must be between 17 and 18, received 13"):
        lk.onnx.export(lambda x: x * 2.0, tmp_path / "f.onnx", input_signature=X, opset=13)


def test_missing_onnx_package_names_the_extra(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "onnx", None)   # import onnx -> ImportError
    with pytest.raises(ImportError, match=r"pip install layerkit\[onnx\]"):
        lk.onnx.export(lambda x: x * 2.0, tmp_path / "f.onnx", input_signature=X)


def test_model_export_formats(tmp_path):
    model = lk.Sequential([lk.Input((3,)), L.Dense(2)])
    with pytest.raises(ValueError, match="Unrecognized format='bad'"):
        model.export(tmp_path / "m", format="bad")
    with pytest.raises(NotImplementedError, match="format='onnx'"):
        model.export(tmp_path / "m")


def test_register_onnx_checks_its_arguments():
    assert emitter_for(_reduce._CUMPROD) is None
    with pytest.raises(TypeError, match="must be an op record"):
        register_onnx("cumprod", lambda b, n: None)
    with pytest.raises(TypeError, match="must be callable"):
        register_onnx(_reduce._CUMPROD, None)
    with pytest.raises(ValueError, match="'reduce_sum' already has an ONNX emitter"):
        register_onnx(_reduce._SUM, lambda b, n: None)


def test_registering_an_emitter_makes_the_op_exportable(tmp_path, monkeypatch):
    pytest.importorskip("onnxruntime")
    from layerkit.onnx import registry
    from tests.onnx.helpers import session

    def emit_cumprod(b, n):   # exp(cumsum(log x)) for positive x: enough for this test
        axis = b.const(np.asarray(n.attrs["axis"], np.int64))
        return b.add("Exp", [b.add("CumSum", [b.add("Log", n.inputs), axis])])

    monkeypatch.setattr(registry, "_EMITTERS", dict(registry._EMITTERS))
    register_onnx(_reduce._CUMPROD, emit_cumprod)
    path = tmp_path / "f.onnx"
    lk.onnx.export(lambda x: lk.cumprod(x, axis=1), path, input_signature=X)
    x = np.random.default_rng(0).uniform(0.5, 2.0, (5, 3)).astype(np.float32)
    np.testing.assert_allclose(session(path).run(None, {"x": x})[0],
                               np.cumprod(x, axis=1), rtol=1e-5)
