"""ONNX emitters for layerkit's op records, and the table that maps each record to one.

Each emitter adds the ONNX nodes computing one record (see :mod:`.registry` for the
``emitter(b, n)`` protocol). Layouts: layerkit images are NHWC with HWIO kernels, ONNX
convolutions are NCHW with OIHW weights, so convolutions and pools transpose in and out
(ONNX Runtime cancels the transposes between consecutive layers). Recurrent sequence
records become ONNX ``LSTM``/``GRU``/``RNN`` nodes with Keras's gate order rearranged.

The table at the end of this file is the one place that lists the records: adding an
op is one emitter function and one entry.
"""
from __future__ import annotations

import numpy as np

from layerkit.layers import core as _core_layers
from layerkit.onnx._builder import INT64_MAX, INT64_MIN
from layerkit.onnx.registry import register_onnx
from layerkit.primitives import array as _array
from layerkit.primitives import categorical as _cat
from layerkit.primitives import conv as _conv
from layerkit.primitives import conv_nd as _conv_nd
from layerkit.primitives import elementwise as _ew
from layerkit.primitives import image as _image
from layerkit.primitives import linalg as _linalg
from layerkit.primitives import math_ops as _math
from layerkit.primitives import nn as _nn
from layerkit.primitives import reduce as _reduce
from layerkit.primitives import rnn as _rnn
from layerkit.primitives import selection as _sel


# ---- helpers -----------------------------------------------------------------------------------
def _inputs_as(b, n, dtype=None) -> list:
    """The inputs cast to ``dtype`` (default: the output dtype), as NumPy would compute."""
    dt = n.out_dtypes[0] if dtype is None else dtype
    return [b.cast(x, d, dt) for x, d in zip(n.inputs, n.in_dtypes)]


def _common(n) -> list:
    """Inputs promoted to their common dtype (for comparisons)."""
    return [np.result_type(*n.in_dtypes)]


def _fixed(n, values, what: str) -> tuple:
    vals = tuple(values)
    if any(not isinstance(v, (int, np.integer)) for v in vals):
        raise n.fail(f"{what} must have fixed sizes, received {vals}")
    return vals


# ---- elementwise -----------------------------------------------------------------------------
def _simple(onnx_op: str, cast: bool = True):
    """An elementwise record that is one ONNX operator on its (cast) inputs."""
    def emit(b, n):
        return b.add(onnx_op, _inputs_as(b, n) if cast else n.inputs)
    emit.__name__ = f"emit_{onnx_op.lower()}"
    return emit


def _compare(onnx_op: str, negate: bool = False):
    def emit(b, n):
        dt = _common(n)[0]
        y = b.add(onnx_op, _inputs_as(b, n, dt))
        return b.add("Not", [y]) if negate else y
    emit.__name__ = f"emit_{onnx_op.lower()}"
    return emit


def _logical(onnx_op: str):
    def emit(b, n):
        return b.add(onnx_op, _inputs_as(b, n, np.bool_))
    emit.__name__ = f"emit_{onnx_op.lower()}"
    return emit


def _scalar(b, n, value) -> str:
    return b.const(np.asarray(value, n.out_dtypes[0]))


def emit_square(b, n):
    x = _inputs_as(b, n)[0]
    return b.add("Mul", [x, x])


def emit_rsqrt(b, n):
    return b.add("Reciprocal", [b.add("Sqrt", _inputs_as(b, n))])


def emit_expm1(b, n):
    return b.add("Sub", [b.add("Exp", _inputs_as(b, n)), _scalar(b, n, 1)])


def emit_log1p(b, n):
    return b.add("Log", [b.add("Add", [_inputs_as(b, n)[0], _scalar(b, n, 1)])])


def emit_floordiv(b, n):
    dt = n.out_dtypes[0]
    if dt.kind == "f":
        return b.add("Floor", [b.add("Div", _inputs_as(b, n))])
    # Integers: floor of the exact quotient (float64 holds every int32 exactly).
    q = b.add("Floor", [b.add("Div", _inputs_as(b, n, np.float64))])
    return b.cast(q, np.float64, dt)


def emit_mod(b, n):
    dt = n.out_dtypes[0]
    if dt.kind in "iu":
        return b.add("Mod", _inputs_as(b, n), fmod=0)   # Python's sign rule, as NumPy
    x, y = _inputs_as(b, n)
    q = b.add("Floor", [b.add("Div", [x, y])])
    return b.add("Sub", [x, b.add("Mul", [q, y])])


def emit_clip(b, n):
    x, lo, hi = _inputs_as(b, n)
    return b.add("Min", [b.add("Max", [x, lo]), hi])


def emit_where(b, n):
    c = b.cast(n.inputs[0], n.in_dtypes[0], np.bool_)
    dt = n.out_dtypes[0]
    return b.add("Where", [c] + [b.cast(x, d, dt) for x, d in zip(n.inputs[1:], n.in_dtypes[1:])])


def emit_isfinite(b, n):
    x = n.inputs[0]
    if n.in_dtypes[0].kind != "f":
        return b.add("Equal", [x, x])
    return b.add("Not", [b.add("Or", [b.add("IsInf", [x]), b.add("IsNaN", [x])])])


def emit_isnan(b, n):
    if n.in_dtypes[0].kind != "f":
        return b.add("Not", [b.add("Equal", [n.inputs[0], n.inputs[0]])])
    return b.add("IsNaN", n.inputs)


def emit_isinf(b, n):
    if n.in_dtypes[0].kind != "f":
        return b.add("Not", [b.add("Equal", [n.inputs[0], n.inputs[0]])])
    return b.add("IsInf", n.inputs)


def emit_cast(b, n):
    return b.cast(n.inputs[0], n.in_dtypes[0], n.out_dtypes[0])


def emit_identity(b, n):
    return n.inputs[0]


def emit_leaky_relu(b, n):
    alpha = n.static(1)
    if alpha is None:
        raise n.fail("the slope alpha must be a constant")
    return b.add("LeakyRelu", [_inputs_as(b, n)[0]], alpha=float(np.asarray(alpha)))


def emit_gelu(b, n):
    x = n.inputs[0]
    half = b.add("Mul", [x, _scalar(b, n, 0.5)])
    if n.attrs["approximate"]:
        cube = b.add("Mul", [b.add("Mul", [x, x]), x])
        inner = b.add("Add", [x, b.add("Mul", [cube, _scalar(b, n, 0.044715)])])
        t = b.add("Tanh", [b.add("Mul", [inner, _scalar(b, n, np.sqrt(2 / np.pi))])])
    else:
        t = b.add("Erf", [b.add("Mul", [x, _scalar(b, n, 1 / np.sqrt(2))])])
    return b.add("Mul", [half, b.add("Add", [t, _scalar(b, n, 1)])])


def _axis_op(onnx_op: str):
    def emit(b, n):
        return b.add(onnx_op, n.inputs, axis=int(n.attrs["axis"]))
    emit.__name__ = f"emit_{onnx_op.lower()}"
    return emit


# ---- reductions --------------------------------------------------------------------------------
def _axes(n) -> list | None:
    axis = n.attrs["axis"]
    if axis is None:
        return None
    return [int(a) for a in (axis if isinstance(axis, (tuple, list)) else (axis,))]


def _reduce_node(b, onnx_op: str, x: str, axes, keepdims: bool) -> str:
    """``onnx_op`` over ``axes`` (None: all) with the opset's way of passing the axes."""
    kd = int(bool(keepdims))
    if onnx_op == "ReduceSum" or b.opset >= 18:
        ins = [x] if axes is None else [x, b.ints(axes)]
        return b.add(onnx_op, ins, keepdims=kd)
    return b.add(onnx_op, [x], axes=axes, keepdims=kd)


def _reduction(onnx_op: str):
    def emit(b, n):
        x = _inputs_as(b, n)[0]
        if _axes(n) == []:
            return b.add("Identity", [x])
        return _reduce_node(b, onnx_op, x, _axes(n), n.attrs["keepdims"])
    emit.__name__ = f"emit_{onnx_op.lower()}"
    return emit


def _reduce_bool(onnx_op: str):
    def emit(b, n):
        x = b.cast(b.cast(n.inputs[0], n.in_dtypes[0], np.bool_), np.bool_, np.int32)
        y = _reduce_node(b, onnx_op, x, _axes(n), n.attrs["keepdims"])
        return b.cast(y, np.int32, np.bool_)
    emit.__name__ = f"emit_{onnx_op.lower()}_bool"
    return emit


def _arg(onnx_op: str):
    def emit(b, n):
        y = b.add(onnx_op, n.inputs, axis=int(n.attrs["axis"]), keepdims=0)
        return b.cast(y, np.int64, n.out_dtypes[0])
    emit.__name__ = f"emit_{onnx_op.lower()}"
    return emit


def emit_cumsum(b, n):
    return b.add("CumSum", [n.inputs[0], b.const(np.asarray(n.attrs["axis"], np.int64))],
                 exclusive=int(n.attrs["exclusive"]), reverse=int(n.attrs["reverse"]))


# ---- shapes and indexing -----------------------------------------------------------------------
def emit_reshape(b, n):
    shape = list(n.dyn("shape"))
    dynamic = [i for i, d in enumerate(shape) if not isinstance(d, (int, np.integer))]
    if len(dynamic) == 1 and -1 not in shape:
        shape[dynamic[0]] = -1     # the one size that follows the batch: inferred
    allowzero = 1 if 0 in shape else None
    return b.add("Reshape", [n.inputs[0], b.shape(shape)], allowzero=allowzero)


def emit_transpose(b, n):
    return b.add("Transpose", n.inputs, perm=[int(p) for p in n.attrs["perm"]])


def emit_broadcast_to(b, n):
    return b.add("Expand", [n.inputs[0], b.shape(n.dyn("shape"))])


def emit_tile(b, n):
    return b.add("Tile", [n.inputs[0], b.shape(n.dyn("multiples"))])


def emit_concat(b, n):
    return b.add("Concat", _inputs_as(b, n), axis=int(n.attrs["axis"]))


def emit_stack(b, n):
    axis = b.ints([n.attrs["axis"]])
    parts = [b.add("Unsqueeze", [x, axis]) for x in _inputs_as(b, n)]
    return b.add("Concat", parts, axis=int(n.attrs["axis"]))


def emit_unstack(b, n):
    axis = int(n.attrs.get("axis", 0))
    k = len(n.out_shapes)
    parts = b.add("Split", [n.inputs[0], b.ints([1] * k)], outputs=k, axis=axis)
    parts = [parts] if isinstance(parts, str) else parts
    return [b.add("Squeeze", [p, b.ints([axis])]) for p in parts]


def emit_split(b, n):
    sizes = _fixed(n, n.attrs["sizes"], "split sizes")
    out = b.add("Split", [n.inputs[0], b.ints(sizes)], outputs=len(sizes),
                axis=int(n.attrs["axis"]))
    return [out] if isinstance(out, str) else out


def emit_pad(b, n):
    mode = n.attrs["mode"]
    if mode not in ("CONSTANT", "REFLECT"):
        raise n.fail(f"padding mode '{mode}' has no ONNX equivalent (CONSTANT and REFLECT "
                     f"do)")
    pads = n.attrs["paddings"]
    flat = [int(p[0]) for p in pads] + [int(p[1]) for p in pads]
    ins = [n.inputs[0], b.ints(flat)]
    if mode == "CONSTANT":
        ins.append(b.const(np.asarray(n.attrs["constant_values"], n.out_dtypes[0])))
    return b.add("Pad", ins, mode=mode.lower())


def emit_gather(b, n):
    if n.attrs["batch_dims"]:
        raise n.fail("gather with batch_dims > 0 is not supported by the ONNX exporter")
    return b.add("Gather", n.inputs, axis=int(n.attrs["axis"]))


def emit_gather_nd(b, n):
    idx = b.cast(n.inputs[1], n.in_dtypes[1], np.int64)
    return b.add("GatherND", [n.inputs[0], idx], batch_dims=int(n.attrs["batch_dims"]))


def emit_getitem(b, n):
    """Basic indexing (ints, slices, None, ...) as Slice/Squeeze/Unsqueeze, plus one
    integer index array (Gather) when it is the only advanced index."""
    spec = list(n.attrs["key"])
    rank = len(n.in_shapes[0])
    used = sum(1 for s in spec if s is not None and s is not Ellipsis
               and not (type(s) is tuple and s[0] == "b"))
    if Ellipsis in spec:
        i = spec.index(Ellipsis)
        spec[i:i + 1] = [("s", None, None, None)] * (rank - used)
    else:
        spec += [("s", None, None, None)] * (rank - used)
    arrays = [s for s in spec if type(s) is tuple and s[0] == "a"]
    if any(type(s) is tuple and s[0] == "b" for s in spec) or len(arrays) > 1 or (
            arrays and any(type(s) is int for s in spec)):
        raise n.fail(f"index {n.attrs['key']!r}: boolean indices and several (or int with "
                     f"array) advanced indices are not supported by the ONNX exporter")
    starts, ends, axes, steps, squeeze = [], [], [], [], []
    ax = 0
    gather_axis = None
    out_pos = 0
    new_axes = []
    for s in spec:
        if s is None:
            new_axes.append(out_pos)
            out_pos += 1
            continue
        if type(s) is int:
            starts.append(s)
            ends.append(s + 1 if s != -1 else INT64_MAX)
            axes.append(ax)
            steps.append(1)
            squeeze.append(ax)
        elif s[0] == "s":
            _, lo, hi, step = s
            step = 1 if step is None else step
            if (lo, hi, step) != (None, None, 1):
                starts.append(lo if lo is not None else (0 if step > 0 else INT64_MAX))
                ends.append(hi if hi is not None else (INT64_MAX if step > 0 else INT64_MIN))
                axes.append(ax)
                steps.append(step)
            out_pos += 1
        else:  # the index array
            gather_axis = ax - len(squeeze)
            out_pos += len(n.in_shapes[1 + s[1]])
        ax += 1
    x = n.inputs[0]
    if axes:
        x = b.add("Slice", [x, b.ints(starts), b.ints(ends), b.ints(axes), b.ints(steps)])
    if squeeze:
        x = b.add("Squeeze", [x, b.ints(squeeze)])
    if gather_axis is not None:
        x = b.add("Gather", [x, n.inputs[1]], axis=gather_axis)
    if new_axes:
        x = b.add("Unsqueeze", [x, b.ints(new_axes)])
    if not (axes or squeeze or new_axes or gather_axis is not None):
        x = b.add("Identity", [x])
    return x


# ---- linear algebra ----------------------------------------------------------------------------
def _swap_last(b, x: str, rank: int) -> str:
    perm = list(range(rank))
    perm[-2:] = perm[-1], perm[-2]
    return b.add("Transpose", [x], perm=perm)


def emit_matmul(b, n):
    a, c = _inputs_as(b, n)
    if n.attrs.get("transpose_a"):
        a = _swap_last(b, a, len(n.in_shapes[0]))
    if n.attrs.get("transpose_b"):
        c = _swap_last(b, c, len(n.in_shapes[1]))
    return b.add("MatMul", [a, c])


_FUSED_ACTIVATIONS = {"linear": None, "relu": "Relu"}


def _activation(b, n, y: str) -> str:
    act = n.attrs.get("activation", "linear")
    if act not in _FUSED_ACTIVATIONS:
        raise n.fail(f"fused activation '{act}' has no ONNX emitter")
    return y if _FUSED_ACTIVATIONS[act] is None else b.add(_FUSED_ACTIVATIONS[act], [y])


def emit_fused_matmul(b, n):
    ins = _inputs_as(b, n)
    y = b.add("MatMul", ins[:2])
    if len(ins) > 2:
        y = b.add("Add", [y, ins[2]])
    return _activation(b, n, y)


def emit_einsum(b, n):
    return b.add("Einsum", _inputs_as(b, n), equation=n.attrs["equation"])


def emit_tensordot(b, n):
    ra, rb = len(n.in_shapes[0]), len(n.in_shapes[1])
    letters = iter("abcdefghijklmnopqrstuvwxyz")
    sa = [next(letters) for _ in range(ra)]
    sb = [next(letters) for _ in range(rb)]
    for i, j in zip(n.attrs["axes_a"], n.attrs["axes_b"]):
        sb[j] = sa[i]
    out = [c for i, c in enumerate(sa) if i not in n.attrs["axes_a"]]
    out += [c for j, c in enumerate(sb) if j not in n.attrs["axes_b"]]
    eq = f"{''.join(sa)},{''.join(sb)}->{''.join(out)}"
    return b.add("Einsum", _inputs_as(b, n), equation=eq)


# ---- convolutions and pools (NHWC in layerkit, NCHW in ONNX) -----------------------------------
def _to_first(rank: int) -> list:
    """The permutation from channels last to channels first for ``rank`` spatial axes."""
    return [0, rank + 1] + list(range(1, rank + 1))


def _to_last(rank: int) -> list:
    return [0] + list(range(2, rank + 2)) + [1]


def _kernel_oi(rank: int) -> list:
    """The permutation from a (*K, I, O) kernel to ONNX's (O, I, *K)."""
    return [rank + 1, rank] + list(range(rank))


def _geometry(n) -> dict:
    pads = n.attrs["pads"]
    return {"strides": [int(s) for s in n.attrs["strides"]],
            "pads": [int(p[0]) for p in pads] + [int(p[1]) for p in pads]}


def _convolve(b, n, x: str, w_oihw: str, bias: str | None, group: int | None = None) -> str:
    geo = _geometry(n)
    rank = len(geo["strides"])
    ins = [b.add("Transpose", [x], perm=_to_first(rank)), w_oihw] + ([bias] if bias else [])
    y = b.add("Conv", ins, dilations=[int(d) for d in n.attrs["dilations"]], group=group,
              **geo)
    return b.add("Transpose", [_activation(b, n, y)], perm=_to_last(rank))


def emit_conv(b, n):
    """``conv2d`` and ``conv_nd`` (Conv3D): one ONNX Conv between layout transposes."""
    x, w = _inputs_as(b, n)[:2]
    rank = len(n.attrs["strides"])
    return _convolve(b, n, x, b.add("Transpose", [w], perm=_kernel_oi(rank)), None)


def emit_fused_conv2d(b, n):
    ins = _inputs_as(b, n)
    w = b.add("Transpose", [ins[1]], perm=[3, 2, 0, 1])
    return [_convolve(b, n, ins[0], w, ins[2] if len(ins) > 2 else None)]  # patches: left out


def emit_depthwise_conv2d(b, n):
    x, w = _inputs_as(b, n)
    kh, kw, c, mult = n.static_shape(1, "depthwise filter")
    w = b.add("Reshape", [b.add("Transpose", [w], perm=[2, 3, 0, 1]),
                          b.ints([c * mult, 1, kh, kw])])
    return _convolve(b, n, x, w, None, group=c)


def emit_conv_transpose(b, n):
    """``conv2d_backprop_input`` / ``conv_nd_backprop_input`` (the transposed convolution
    layers) as ONNX ConvTranspose, its output padding fixed by the target size."""
    g, w = _inputs_as(b, n)
    geo = _geometry(n)
    rank = len(geo["strides"])
    ks = n.static_shape(1, "filter")[:rank]
    target = _fixed(n, n.dyn("input_shape")[1:rank + 1], "the spatial output size")
    sizes = _fixed(n, n.in_shapes[0][1:rank + 1], "the spatial input size")
    pads, dil = geo["pads"], [int(d) for d in n.attrs["dilations"]]
    extra = [target[i] - ((sizes[i] - 1) * geo["strides"][i] + (ks[i] - 1) * dil[i] + 1
                          - pads[i] - pads[rank + i]) for i in range(rank)]
    y = b.add("ConvTranspose", [b.add("Transpose", [g], perm=_to_first(rank)),
                                b.add("Transpose", [w], perm=_kernel_oi(rank))],
              dilations=dil, output_padding=extra if any(extra) else None, **geo)
    return b.add("Transpose", [y], perm=_to_last(rank))


def _pool(onnx_op: str, **extra):
    def emit(b, n):
        rank = len(n.attrs["ksize"])
        x = b.add("Transpose", n.inputs, perm=_to_first(rank))
        y = b.add(onnx_op, [x], kernel_shape=[int(k) for k in n.attrs["ksize"]],
                  **_geometry(n), **extra)
        return b.add("Transpose", [y], perm=_to_last(rank))
    emit.__name__ = f"emit_{onnx_op.lower()}"
    return emit


# ---- image resampling and categorical preprocessing -------------------------------------------
def emit_resize(b, n):
    """``resize`` (Resizing, bilinear UpSampling2D) as ONNX Resize on the channels-last
    image. Half-pixel centres as layerkit; ``'nearest'`` takes source
    ``floor((o + 1/2) * in / out)``, which is ``round_prefer_ceil`` of the half-pixel
    coordinate. Antialiased downsampling (a widened kernel) is not exported."""
    x = n.inputs[0]
    size = [int(s) for s in n.attrs["size"]]
    rank = len(n.in_shapes[0])
    spatial = _fixed(n, n.in_shapes[0][1:rank - 1], "the spatial input size")
    if n.attrs["antialias"] and any(o < i for o, i in zip(size, spatial)):
        raise n.fail("antialiased downsampling has no ONNX Resize equivalent here")
    method = n.attrs["method"]
    mode = {"mode": "nearest", "nearest_mode": "round_prefer_ceil"} if method == "nearest" \
        else {"mode": "linear"}
    sizes = b.add("Concat", [b.add("Shape", [x], start=0, end=1), b.ints(size),
                             b.add("Shape", [x], start=rank - 1)], axis=0)
    return b.add("Resize", [x, "", "", sizes], coordinate_transformation_mode="half_pixel",
                 **mode)


def emit_bucketize(b, n):
    """``bucketize`` as the count of boundaries not above each value (NaN counts all of
    them, as ``np.digitize``)."""
    dt = n.in_dtypes[0] if n.in_dtypes[0].kind == "f" else np.dtype(np.float64)
    x = b.add("Unsqueeze", [b.cast(n.inputs[0], n.in_dtypes[0], dt), b.ints([-1])])
    bounds = b.const(np.asarray(n.attrs["boundaries"], dt))
    below = b.add("Not", [b.add("Less", [x, bounds])])
    count = b.add("ReduceSum", [b.cast(below, np.bool_, np.int64), b.ints([-1])], keepdims=0)
    return b.cast(count, np.int64, n.out_dtypes[0])


def emit_category_encode(b, n):
    """``category_encode`` as ONNX OneHot (summed or maxed over a sample's tokens for
    ``'count'`` and ``'multi_hot'``). ONNX cannot raise: a token outside ``[0, depth)``
    gives an all-zero row in the exported model where layerkit raises."""
    x = b.cast(n.inputs[0], n.in_dtypes[0], np.int64)
    depth, mode = int(n.attrs["depth"]), n.attrs["mode"]
    onehot = b.add("OneHot", [x, b.ints([depth]), b.const(np.array([0, 1], np.int64))],
                   axis=-1)
    if mode != "one_hot":
        axis = 1 if len(n.in_shapes[0]) > 1 else 0
        onehot = _reduce_node(b, "ReduceSum" if mode == "count" else "ReduceMax", onehot,
                              [axis], False)
    return b.cast(onehot, np.int64, n.out_dtypes[0])


# ---- recurrent sequences -----------------------------------------------------------------------
def _gate_rows(units: int, order: list) -> np.ndarray:
    return np.concatenate([np.arange(g * units, (g + 1) * units) for g in order])


def _recurrent(onnx_op: str, gates: int, order: list | None, **extra):
    """A whole-sequence record as one ONNX recurrent node (time-major, one direction).

    Keras kernels are (features, G*units) with gates in ``order``'s source layout; ONNX
    wants (1, G*units, features) in its own gate order; ``go_backwards`` reverses the
    input first, so the sequence comes out in processing order as in layerkit.
    """
    def emit(b, n):
        ins = _inputs_as(b, n)
        x, kernel, rec, bias = ins[:4]
        states = ins[4:]
        units = n.static_shape(2, "recurrent kernel")[0]
        xt = b.add("Transpose", [x], perm=[1, 0, 2])
        if n.attrs["go_backwards"]:
            xt = b.add("Slice", [xt, b.ints([-1]), b.ints([INT64_MIN]), b.ints([0]),
                                 b.ints([-1])])
        rows = None if order is None else b.const(_gate_rows(units, order).astype(np.int64))

        def weights(m):
            m = b.add("Transpose", [m], perm=[1, 0])
            if rows is not None:
                m = b.add("Gather", [m, rows], axis=0)
            return b.add("Unsqueeze", [m, b.ints([0])])

        if onnx_op == "GRU":   # (2, 3u): input and recurrent biases, z r h in both
            bvec = b.add("Reshape", [bias, b.ints([1, 2 * gates * units])])
        else:
            bb = b.add("Gather", [bias, rows], axis=0) if rows is not None else bias
            zeros = b.const(np.zeros(gates * units, n.in_dtypes[3]))
            bvec = b.add("Unsqueeze", [b.add("Concat", [bb, zeros], axis=0), b.ints([0])])
        init = [b.add("Unsqueeze", [s, b.ints([0])]) for s in states]
        outs = b.add(onnx_op, [xt, weights(kernel), weights(rec), bvec, ""] + init,
                     outputs=2 + (onnx_op == "LSTM"), hidden_size=int(units), **extra)
        seq = b.add("Transpose", [b.add("Squeeze", [outs[0], b.ints([1])])], perm=[1, 0, 2])
        finals = [b.add("Squeeze", [o, b.ints([0])]) for o in outs[1:]]
        return [seq] + finals      # residual outputs (for gradients) are left out
    emit.__name__ = f"emit_{onnx_op.lower()}"
    return emit


# ---- the table: op record -> emitter -----------------------------------------------------------
_TABLE = {
    # elementwise arithmetic and math
    _ew._ADD: _simple("Add"), _ew._SUB: _simple("Sub"), _ew._MUL: _simple("Mul"),
    _ew._DIV: _simple("Div"), _ew._POW: _simple("Pow"), _ew._NEG: _simple("Neg"),
    _ew._FLOORDIV: emit_floordiv, _ew._MOD: emit_mod,
    _ew._MAXIMUM: _simple("Max"), _ew._MINIMUM: _simple("Min"), _ew._CLIP: emit_clip,
    _ew._SQUARE: emit_square, _ew._SQRT: _simple("Sqrt"), _ew._RSQRT: emit_rsqrt,
    _ew._EXP: _simple("Exp"), _ew._EXPM1: emit_expm1, _ew._LOG: _simple("Log"),
    _ew._LOG1P: emit_log1p, _ew._SIN: _simple("Sin"), _ew._COS: _simple("Cos"),
    _ew._TAN: _simple("Tan"), _ew._TANH: _simple("Tanh"), _ew._SIGMOID: _simple("Sigmoid"),
    _ew._ERF: _simple("Erf"), _ew._ABS: _simple("Abs"), _ew._SIGN: _simple("Sign"),
    _ew._FLOOR: _simple("Floor"), _ew._CEIL: _simple("Ceil"), _ew._ROUND: _simple("Round"),
    _ew._WHERE: emit_where, _ew._CAST: emit_cast, _ew._STOP_GRADIENT: emit_identity,
    _sel._IDENTITY: emit_identity, _math._RECIPROCAL: _simple("Reciprocal"),
    _math._ASIN: _simple("Asin"), _math._ACOS: _simple("Acos"), _math._ATAN: _simple("Atan"),
    _math._SINH: _simple("Sinh"), _math._COSH: _simple("Cosh"), _math._ASINH: _simple("Asinh"),
    _math._ACOSH: _simple("Acosh"), _math._ATANH: _simple("Atanh"), _math._IS_INF: emit_isinf,
    # comparisons and logic
    _ew._EQUAL: _compare("Equal"), _ew._NOT_EQUAL: _compare("Equal", negate=True),
    _ew._LESS: _compare("Less"), _ew._LESS_EQUAL: _compare("LessOrEqual"),
    _ew._GREATER: _compare("Greater"), _ew._GREATER_EQUAL: _compare("GreaterOrEqual"),
    _ew._LOGICAL_AND: _logical("And"), _ew._LOGICAL_OR: _logical("Or"),
    _ew._LOGICAL_NOT: _logical("Not"), _ew._ISFINITE: emit_isfinite, _ew._ISNAN: emit_isnan,
    # activations and normalisers
    _nn._RELU: _simple("Relu"), _nn._SOFTPLUS: _simple("Softplus"), _nn._GELU: emit_gelu,
    _nn._LEAKY_RELU: emit_leaky_relu,
    _nn._SOFTMAX: _axis_op("Softmax"), _nn._LOG_SOFTMAX: _axis_op("LogSoftmax"),
    # reductions
    _reduce._SUM: _reduction("ReduceSum"), _reduce._MEAN: _reduction("ReduceMean"),
    _reduce._MAX: _reduction("ReduceMax"), _reduce._MIN: _reduction("ReduceMin"),
    _reduce._PROD: _reduction("ReduceProd"), _reduce._LSE: _reduction("ReduceLogSumExp"),
    _reduce._ALL: _reduce_bool("ReduceMin"), _reduce._ANY: _reduce_bool("ReduceMax"),
    _reduce._ARGMAX: _arg("ArgMax"), _reduce._ARGMIN: _arg("ArgMin"),
    _reduce._CUMSUM: emit_cumsum,
    # shapes and indexing
    _array._RESHAPE: emit_reshape, _array._TRANSPOSE: emit_transpose,
    _array._BROADCAST_TO: emit_broadcast_to, _array._TILE: emit_tile,
    _array._CONCAT: emit_concat, _array._STACK: emit_stack, _array._UNSTACK: emit_unstack,
    _array._SPLIT: emit_split, _array._PAD: emit_pad, _array._GATHER: emit_gather,
    _array._GATHER_ND: emit_gather_nd, _array._GETITEM: emit_getitem,
    _core_layers._CHECK_INDICES: emit_identity,   # Gather itself rejects bad indices
    # linear algebra
    _linalg._MATMUL: emit_matmul, _linalg._FUSED_MATMUL: emit_fused_matmul,
    _linalg._EINSUM: emit_einsum, _linalg._TENSORDOT: emit_tensordot,
    # convolutions and pools
    _conv._CONV: emit_conv, _conv._FUSED_CONV: emit_fused_conv2d,
    _conv._DW: emit_depthwise_conv2d, _conv._CONV_BPI: emit_conv_transpose,
    _conv_nd._ND: emit_conv, _conv_nd._ND_BPI: emit_conv_transpose,
    _conv._MAX: _pool("MaxPool"), _conv._AVG: _pool("AveragePool", count_include_pad=0),
    # image resampling, categorical preprocessing
    _image._RESIZE: emit_resize, _cat._BUCKETIZE: emit_bucketize,
    _cat._ENCODE: emit_category_encode,
    # recurrent sequences (Keras gates: LSTM i f c o -> ONNX i o f c; GRU z r h as ONNX)
    _rnn._LSTM: _recurrent("LSTM", 4, [0, 3, 1, 2]),
    _rnn._GRU: _recurrent("GRU", 3, None, linear_before_reset=1),
    _rnn._RNN: _recurrent("RNN", 1, None),
}

for _record, _emitter in _TABLE.items():
    register_onnx(_record, _emitter)
