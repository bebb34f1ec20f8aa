"""``export``: trace, convert each node through the emitter table, write the file."""
from __future__ import annotations

import inspect
import os
import tempfile
from typing import Any

import numpy as np

from layerkit._core.nest import flatten
from layerkit._core.nest import pack_sequence_as as pack_like
from layerkit._core.spec import TensorSpec
from layerkit._core.types import PathLike
from layerkit.autodiff.function.api import Function
from layerkit.autodiff.function.fuse import scalar_dtype
from layerkit.io._optional import require
from layerkit.onnx import emitters as _emitters  # noqa: F401  (fills the table)
from layerkit.onnx._builder import Builder, NodeView, UnsupportedOpError
from layerkit.onnx._trace import BATCH, Dim, ExportError, trace
from layerkit.onnx.registry import emitter_for

DEFAULT_OPSET = 17
MAX_OPSET = 18   # the emitters know the operator versions up to this opset


# ---- what to trace ---------------------------------------------------------------------------
def _spec_of(x, name=None) -> TensorSpec:
    if isinstance(x, TensorSpec):
        return x
    shape, dtype = getattr(x, "shape", None), getattr(x, "dtype", None)
    if shape is not None and dtype is not None:   # lk.Input, Tensor, ndarray
        return TensorSpec(tuple(shape), dtype, name or getattr(x, "name", None))
    raise TypeError(f"ONNX export: input_signature entries must be lk.TensorSpec (or "
                    f"lk.Input / tensors / arrays giving a shape and dtype), received "
                    f"{type(x).__name__}")


def _as_signature(sig) -> list:
    if isinstance(sig, (list, tuple)):
        return [pack_like(a, [_spec_of(x) for x in flatten(a)]) for a in sig]
    return [_spec_of(sig)]


def _layer_signature(layer) -> list:
    if getattr(layer, "inputs", None) is not None:
        inputs = layer.input   # a model: one argument, the structure of its lk.Inputs
        return [pack_like(inputs, [_spec_of(x) for x in flatten(inputs)])]
    d = layer.__dict__
    shape = d.get("_input_shape") or d.get("_build_shape")
    if shape is None:
        raise ValueError(
            f"ONNX export: '{layer.name}' has never been called and has no input shape, so "
            f"its input signature is unknown; call it once (or build it) before export, "
            f"or pass input_signature=[lk.TensorSpec((None, ...), dtype)]")
    dtype = d.get("_input_dtype") or getattr(layer, "_dtype", None) or "float32"

    def spec(s):
        return TensorSpec((None,) + tuple(s)[1:], dtype)

    if isinstance(shape, list) and shape and isinstance(shape[0], (list, tuple)):
        return [[spec(s) for s in shape]]
    return [spec(shape)]


def _target(obj, input_signature):
    """(callable, signature, argument names, name) for a layer/model or a function."""
    from layerkit.layers.layer import Layer

    if isinstance(obj, Layer):
        sig = (_as_signature(input_signature) if input_signature is not None
               else _layer_signature(obj))
        names = list(getattr(obj, "input_names", None) or [])
        if not names and obj.__dict__.get("_input_name"):   # Sequential from lk.Input
            names = [obj.__dict__["_input_name"]]
        if not names:
            names = _positional_names(obj.call)[:len(sig)]

        def call(*args):
            return obj(*args, training=False)

        return call, sig, names, obj.name
    fn = getattr(obj, "python_function", None)
    if isinstance(obj, Function) or fn is not None:
        if input_signature is None:
            input_signature = obj.input_signature
        name = getattr(obj, "_name", None) or getattr(fn, "__name__", "function")
    elif callable(obj):
        fn, name = obj, getattr(obj, "__name__", type(obj).__name__)
    else:
        raise TypeError(f"ONNX export: expected a model, a layer, an lk.function or a "
                        f"callable, received {type(obj).__name__}")
    if input_signature is None:
        raise ValueError(f"ONNX export of '{name}': pass input_signature (a list of "
                         f"lk.TensorSpec, one per argument; None for the batch size), or "
                         f"give the lk.function an input_signature")
    return fn, _as_signature(input_signature), _positional_names(fn), name


def _positional_names(fn) -> list:
    try:
        return [p.name for p in inspect.signature(fn).parameters.values()
                if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        return []


def _input_names(sig: list, arg_names: list) -> list:
    names, seen = [], set()
    flat_args = [flatten(a) for a in sig]
    functional = len(arg_names) == len(flat_args[0]) and len(sig) == 1 and len(flat_args[0]) > 1
    for i, leaves in enumerate(flat_args):
        for j, spec in enumerate(leaves):
            if spec.name:
                nm = spec.name
            elif functional:
                nm = arg_names[j]
            elif i < len(arg_names):
                nm = arg_names[i] if len(leaves) == 1 else f"{arg_names[i]}_{j}"
            else:
                nm = f"input_{i}" if len(leaves) == 1 else f"input_{i}_{j}"
            base, k = nm, 1
            while nm in seen:
                nm, k = f"{base}_{k}", k + 1
            seen.add(nm)
            names.append(nm)
    return names


# ---- conversion ------------------------------------------------------------------------------
def _dims_proto(shape) -> list:
    out = []
    for d in shape:
        if isinstance(d, int):
            out.append(d)
        elif isinstance(d, Dim) and d.coef == 1 and len(d.syms) == 1:
            out.append(d.syms[0])
        else:
            out.append(None)
    return out


class _Converter:
    def __init__(self, traced, onnx, opset: int) -> None:
        self.t = traced
        self.g = traced.graph
        self.onnx = onnx
        sym_dims = {}
        for s in traced.symbols:
            k, axis = s.uses[0]
            sym_dims[s.name] = (traced.inputs[k][0], axis)
        self.b = Builder(onnx, opset, sym_dims)
        self.names: dict = {}      # vid -> ONNX name (None: an output left out)
        self.producer: dict = {}   # vid -> (node, output index) for messages
        self.const_names: dict = {}

    def run(self, name: str, output_names: list):
        b, g, h = self.b, self.g, self.onnx.helper
        inputs = []
        for nm, vid, shape, dtype in self.t.inputs:
            b.take(nm)
            self.names[vid] = nm
            inputs.append(h.make_tensor_value_info(nm, b.onnx_type(dtype), _dims_proto(shape)))
        reads: dict = {}
        for node in self.t.nodes:
            if node.kind == "read":
                var = node.var
                if id(var) not in reads:
                    hint = self.t.var_names.get(id(var), var.name)
                    reads[id(var)] = b.initializer(np.asarray(var._v), hint)
                self.names[node.outs[0]] = reads[id(var)]
            elif node.kind == "op":
                self._emit(node)
            else:
                raise ExportError(f"ONNX export: graph node of kind '{node.kind}' cannot be "
                                  f"exported")
        outputs = []
        vids = []
        for kind, x in g.outputs:
            if kind != "value":
                what = f"Variable '{x.name}'" if kind == "var" else f"Python value {x!r}"
                raise ExportError(f"ONNX export of '{name}': the function returns a {what}; "
                                  f"only tensors computed from the inputs can be outputs")
            vids.append(x)
        for vid, out in zip(vids, output_names):
            b.take(out)
            b.add("Identity", [self._value(vid, None, 0)], [out])
            v = g.values[vid]
            shape = self.t.shapes.get(vid, v.shape)
            outputs.append(h.make_tensor_value_info(out, b.onnx_type(v.dtype), _dims_proto(shape)))
        graph = h.make_graph(b.nodes, name, inputs, outputs, initializer=b.initializers)
        opsets = [h.make_opsetid("", b.opset)]
        model = h.make_model(graph, opset_imports=opsets, producer_name="layerkit",
                             producer_version=_version())
        model.ir_version = h.find_min_ir_version_for(opsets)
        return model

    def _value(self, vid: int, node, i: int) -> str:
        """The ONNX name of graph value ``vid`` as input ``i`` of ``node``."""
        v = self.g.values[vid]
        if v.kind != "const":
            name = self.names.get(vid)
            if name is None:
                src = self.producer.get(vid)
                what = (f"output {src[1]} of op '{src[0].op.name}'" if src else f"value %{vid}")
                user = f"op '{node.op.name}'" if node is not None else "the function's outputs"
                raise UnsupportedOpError(
                    f"ONNX export: {what} is read by {user}, but that output (kept for "
                    f"gradients) has no ONNX equivalent{_at(self.t, node)}")
            return name
        dyn = self.t.dyn_consts.get(vid)
        if dyn is not None:
            return self._dynamic_const(vid, dyn, node)
        if v.is_py_scalar:
            dt = scalar_dtype(self.g, node, vid) if node is not None else None
            return self.b.const(np.asarray(v.const, dt))
        name = self.const_names.get(vid)
        if name is None:
            name = self.const_names[vid] = self.b.const(np.asarray(v.const))
        return name

    def _dynamic_const(self, vid: int, dyn, node) -> str:
        b = self.b
        v = self.g.values[vid]
        if isinstance(dyn, str):
            who = f"op '{node.op.name}'" if node is not None else "an output"
            raise ExportError(f"ONNX export: an input of {who} is {dyn}{_at(self.t, node)}")
        if dyn[0] == "fill":
            value = self.onnx.numpy_helper.from_array(dyn[1].reshape(1), "value")
            return b.add("ConstantOfShape", [b.shape(dyn[2])], value=value)
        sizes = b.shape(dyn[1])
        if np.ndim(v.const) == 0:
            sizes = b.add("Squeeze", [sizes, b.ints([0])])
        dt = (scalar_dtype(self.g, node, vid) if v.is_py_scalar and node is not None
              else np.asarray(v.const).dtype)
        return b.cast(sizes, np.int64, dt)

    def _emit(self, node) -> None:
        t, g = self.t, self.g
        emitter = emitter_for(node.op)
        if emitter is None:
            raise UnsupportedOpError(
                f"ONNX export: op '{node.op.name}' has no ONNX emitter{_at(t, node)}; "
                f"register one with layerkit.onnx.register_onnx(record, emitter)")
        ins = [self._value(vid, node, i) for i, vid in enumerate(node.ins)]
        statics = [np.asarray(g.values[vid].const) if g.values[vid].kind == "const"
                   and vid not in t.dyn_consts else None for vid in node.ins]

        def shape(vid):
            v = g.values[vid]
            if v.kind == "const":
                dyn = t.dyn_consts.get(vid)
                if isinstance(dyn, tuple) and dyn[0] == "fill":
                    return tuple(dyn[2])
                return tuple(np.shape(v.const))
            return tuple(t.shapes.get(vid, v.shape))

        def dtype(vid):
            v = g.values[vid]
            if v.is_py_scalar:
                return np.dtype(scalar_dtype(g, node, vid))
            return np.dtype(v.dtype) if v.dtype is not None else None

        dyn = t.dyn_attrs.get(id(node), {})
        n = NodeView(node, ins, [shape(v) for v in node.ins], [dtype(v) for v in node.ins],
                     [shape(v) for v in node.outs], [dtype(v) for v in node.outs], statics,
                     dyn, t.where.get(id(node), ""))
        outs = emitter(self.b, n)
        if isinstance(outs, str):
            outs = [outs]
        for key in dyn:
            if key not in n.used_dyn:
                raise ExportError(
                    f"ONNX export: attribute '{key}' of op '{node.op.name}' changes with the "
                    f"dynamic dimensions ({node.attrs[key]!r} at the traced sizes), which "
                    f"its ONNX form cannot follow; give those dimensions fixed sizes in "
                    f"input_signature{_at(t, node)}")
        for k, vid in enumerate(node.outs):
            self.names[vid] = outs[k] if k < len(outs) else None
            self.producer[vid] = (node, k)


def _at(traced, node) -> str:
    w = traced.where.get(id(node), "") if node is not None else ""
    return f" ({w})" if w else ""


def _version() -> str:
    import layerkit

    return getattr(layerkit, "__version__", "")


# ---- the public function -----------------------------------------------------------------------
def export(model_or_function: Any, path: PathLike, input_signature: Any = None,
           opset: int = DEFAULT_OPSET, verbose: bool = False) -> Any:
    """Write a model, layer or function as an ONNX file for inference.

    The call is traced into layerkit's graph (models and layers with
    ``training=False``: Dropout is the identity, BatchNormalization uses its moving
    statistics) and each op is written as ONNX operators; Variables become
    initializers holding their current values. ``None`` dimensions of the input
    signature stay dynamic in the file (``'batch'`` for the first axis): the function is
    traced at two sizes of each, and sizes that follow them (reshapes, zero initial
    states) are computed from the input's shape at run time.

    Args:
        model_or_function: a built ``lk.Model`` (Sequential, functional or subclassed),
            a ``Layer``, an ``lk.function`` or a plain Python function of tensors.
        path: the ``.onnx`` file to write (replaced atomically).
        input_signature: one ``lk.TensorSpec`` (or nested list/tuple/dict of them) per
            positional argument; ``None`` in a shape is a dynamic size. Defaults to the
            model's inputs (batch size dynamic) or the lk.function's input_signature.
        opset: the ONNX opset to target (17 or 18).
        verbose: print where the file was written.

    Returns:
        The ``onnx.ModelProto`` written.

    Raises:
        ImportError: the ``onnx`` package is missing (``pip install layerkit[onnx]``).
        UnsupportedOpError: an op has no ONNX form; the message names it and the layer
            and line it came from.
        ValueError: no input signature can be found, or a size depends on a dynamic
            dimension in a way ONNX cannot follow (the message says which).

    Examples:
        >>> import layerkit as lk
        >>> model = lk.Sequential([lk.Input((4,)), lk.layers.Dense(2)])
        >>> proto = lk.onnx.export(model, "model.onnx")   # doctest: +SKIP

        ``onnxruntime.InferenceSession("model.onnx").run(None, {"input_0": x})`` then
        runs it (inputs are named after the model's inputs or the function's arguments;
        outputs are ``output_0``, ``output_1``, ...).
    """
    onnx = require("onnx", "onnx", "ONNX export (lk.onnx.export)")
    opset = int(opset)
    if not DEFAULT_OPSET <= opset <= MAX_OPSET:
        raise ValueError(f"ONNX export: opset must be between {DEFAULT_OPSET} and "
                         f"{MAX_OPSET}, received {opset}")
    fn, sig, arg_names, name = _target(model_or_function, input_signature)
    names = _input_names(sig, arg_names)
    traced = trace(fn, sig, names, name)
    n_out = sum(1 for kind, _ in traced.graph.outputs)
    out_names = [f"output_{i}" for i in range(n_out)]
    model = _Converter(traced, onnx, opset).run(name, out_names)
    onnx.checker.check_model(model)
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".onnx-", dir=folder)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(model.SerializeToString())
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    if verbose:
        dims = ", ".join(s.name for s in traced.symbols) or "none"
        print(f"Saved ONNX model at '{path}' (opset {opset}; dynamic dimensions: {dims}).")
    return model


__all__ = ["export", "BATCH"]
