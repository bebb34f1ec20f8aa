"""The ONNX graph under construction (:class:`Builder`) and what an emitter sees of one
layerkit graph node (:class:`NodeView`)."""
from __future__ import annotations

import numpy as np

from layerkit.onnx._trace import Dim, ExportError, NotScaling

INT64_MAX = np.iinfo(np.int64).max
INT64_MIN = np.iinfo(np.int64).min


class UnsupportedOpError(NotImplementedError):
    """An op (or a use of it) that the ONNX exporter cannot write; the message names it."""


class Builder:
    """Collects ONNX nodes and initializers, with fresh names and shared constants.

    ``sym_dims`` maps each dynamic dimension's name to the (graph input name, axis)
    whose run-time size it is; :meth:`shape` turns symbolic sizes into int64 tensors.
    """

    def __init__(self, onnx, opset: int, sym_dims: dict) -> None:
        self.onnx = onnx
        self.helper = onnx.helper
        self.opset = opset
        self.nodes: list = []
        self.initializers: list = []
        self._taken: set = set()
        self._consts: dict = {}
        self._dims: dict = {}
        self._sym_dims = sym_dims

    # ---- names -----------------------------------------------------------------------------
    def fresh(self, hint: str) -> str:
        """A new unique value name based on ``hint``."""
        base = "".join(c if c.isalnum() or c in "_/.:-" else "_" for c in hint) or "v"
        name, k = base, 1
        while name in self._taken:
            name = f"{base}_{k}"
            k += 1
        self._taken.add(name)
        return name

    def take(self, name: str) -> None:
        """Reserve ``name`` (graph inputs)."""
        self._taken.add(name)

    # ---- nodes and constants -------------------------------------------------------------------
    def add(self, op_type: str, inputs: list, outputs: int | list = 1, **attrs):
        """Add one ONNX node; returns its output name (or list of names).

        Args:
            op_type: the ONNX operator (default domain).
            inputs: input names ("" for an omitted optional input).
            outputs: the number of outputs (fresh names) or a list of names to use.
            **attrs: ONNX attributes (None values are left out).
        """
        outs = ([self.fresh(op_type.lower()) for _ in range(outputs)]
                if isinstance(outputs, int) else list(outputs))
        attrs = {k: v for k, v in attrs.items() if v is not None}
        self.nodes.append(self.helper.make_node(op_type, list(inputs), outs,
                                                name=self.fresh(f"node_{op_type}"), **attrs))
        return outs[0] if len(outs) == 1 else outs

    def initializer(self, array: np.ndarray, hint: str) -> str:
        """A named initializer holding ``array`` (never shared)."""
        name = self.fresh(hint)
        self.initializers.append(self.onnx.numpy_helper.from_array(np.asarray(array), name))
        return name

    def const(self, value, dtype=None) -> str:
        """An initializer holding ``value`` (as ``dtype``); small ones are shared."""
        a = np.asarray(value, dtype=dtype)
        if a.dtype == np.float64 and dtype is None and not isinstance(value, np.ndarray):
            a = a.astype(np.float32)   # Python floats: the default float
        if a.size > 64:
            return self.initializer(a, "const")
        key = (a.dtype.str, a.shape, a.tobytes())
        name = self._consts.get(key)
        if name is None:
            name = self._consts[key] = self.initializer(a, "const")
        return name

    def ints(self, values) -> str:
        """A 1-D int64 constant."""
        return self.const(np.asarray(list(values), dtype=np.int64).reshape(-1))

    # ---- dynamic sizes ---------------------------------------------------------------------
    def _sym(self, sym: str) -> str:
        key = ("sym", sym)
        name = self._dims.get(key)
        if name is None:
            src, axis = self._sym_dims[sym]
            name = self._dims[key] = self.add("Shape", [src], start=axis, end=axis + 1)
        return name

    def dim(self, d) -> str:
        """A 1-element int64 tensor holding size ``d`` (an int or a :class:`Dim`)."""
        if not isinstance(d, Dim):
            return self.ints([d])
        name = self._dims.get(d)
        if name is None:
            name = self._sym(d.syms[0])
            for s in d.syms[1:]:
                name = self.add("Mul", [name, self._sym(s)])
            if d.coef.numerator != 1:
                name = self.add("Mul", [name, self.ints([d.coef.numerator])])
            if d.coef.denominator != 1:
                name = self.add("Div", [name, self.ints([d.coef.denominator])])
            self._dims[d] = name
        return name

    def shape(self, dims) -> str:
        """A 1-D int64 tensor of the sizes ``dims`` (ints and :class:`Dim`)."""
        dims = tuple(dims)
        if not any(isinstance(d, Dim) for d in dims):
            return self.ints(dims)
        parts: list = []
        run: list = []
        for d in dims:
            if isinstance(d, Dim):
                if run:
                    parts.append(self.ints(run))
                    run = []
                parts.append(self.dim(d))
            else:
                run.append(d)
        if run:
            parts.append(self.ints(run))
        return self.add("Concat", parts, axis=0)

    def cast(self, name: str, src, dst) -> str:
        """``name`` cast from dtype ``src`` to ``dst`` (no node if they are equal)."""
        if np.dtype(src) == np.dtype(dst):
            return name
        return self.add("Cast", [name], to=self.onnx_type(dst))

    def onnx_type(self, dtype) -> int:
        """The ONNX element type of a NumPy dtype."""
        return self.helper.np_dtype_to_tensor_dtype(np.dtype(dtype))


class NodeView:
    """One layerkit graph node as its emitter sees it.

    Attributes:
        op: the op record; ``name``: its name.
        attrs: the node's attributes (as traced at the base sizes).
        inputs: ONNX names of the inputs (Python scalars already typed constants).
        in_shapes / out_shapes: symbolic shapes (ints and :class:`Dim`; None where a size
            does not scale with the dynamic dimensions).
        in_dtypes / out_dtypes: NumPy dtypes.
        where: the layer and line the node came from (may be empty).
    """

    def __init__(self, node, inputs, in_shapes, in_dtypes, out_shapes, out_dtypes,
                 statics, dyn: dict, where: str) -> None:
        self.op = node.op
        self.name = node.op.name
        self.attrs = node.attrs
        self.inputs = inputs
        self.in_shapes, self.in_dtypes = in_shapes, in_dtypes
        self.out_shapes, self.out_dtypes = out_shapes, out_dtypes
        self._statics = statics
        self._dyn = dyn
        self.used_dyn: set = set()
        self.where = where

    def dyn(self, key: str):
        """Attribute ``key`` with sizes that follow dynamic dimensions as :class:`Dim`."""
        self.used_dyn.add(key)
        v = self._dyn.get(key, self.attrs[key])
        if isinstance(v, NotScaling):
            raise ExportError(f"ONNX export: {v}{self.at()}")
        return v

    def static(self, i: int):
        """The value of input ``i`` if it is a constant known at export time, else None."""
        return self._statics[i]

    def static_shape(self, i: int, what: str = "input") -> tuple:
        """The shape of input ``i``; raises if a dimension of it is dynamic."""
        s = self.in_shapes[i]
        if any(not isinstance(d, int) for d in s):
            raise self.fail(f"the {what} must have a fixed shape; its shape is {s}")
        return s

    def at(self) -> str:
        return f" ({self.where})" if self.where else ""

    def fail(self, why: str) -> UnsupportedOpError:
        """An error naming this op, why it cannot be exported and where it came from."""
        return UnsupportedOpError(f"ONNX export: op '{self.name}': {why}{self.at()}")
