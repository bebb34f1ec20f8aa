"""ONNX export: ``lk.onnx.export(model_or_function, path, input_signature=None)``.

The call is traced into layerkit's graph and each op record is written as ONNX
operators by the emitter registered for it (:mod:`layerkit.onnx.emitters` holds the
table; :func:`register_onnx` adds one). ``None`` sizes in the input signature stay
dynamic in the file. The ``onnx`` package is an optional extra
(``pip install layerkit[onnx]``), imported only when exporting; running the file needs
an ONNX runtime such as ``onnxruntime``.

Examples:
    >>> import layerkit as lk
    >>> model = lk.Sequential([lk.Input((4,)), lk.layers.Dense(2)])
    >>> lk.onnx.export(model, "model.onnx")          # doctest: +SKIP
    >>> model.export("model.onnx", format="onnx")    # the same  # doctest: +SKIP
"""
from layerkit.onnx._builder import UnsupportedOpError
from layerkit.onnx._export import export
from layerkit.onnx._trace import ExportError
from layerkit.onnx.registry import register_onnx, registered

__all__ = ["export", "register_onnx", "registered", "UnsupportedOpError", "ExportError"]
