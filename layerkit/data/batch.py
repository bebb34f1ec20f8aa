"""batch, padded_batch and unbatch.

``batch`` over an input that speaks the chunk protocol (tensor slices, range, columnar
file sources, shuffle over those, take/skip/repeat of those) takes stacked rows straight
from the input: no per-row Tensors are made and nothing is re-stacked. Over any other
input it asks for ``batch_size`` elements at once (``next_list``, one loop per batch in
sources and ``map``) and stacks each leaf with one ``np.array`` call.
"""
from __future__ import annotations

from itertools import islice

import numpy as np

from layerkit._core.op import wrap
from layerkit.data import structure as _st
from layerkit.data.node import INFINITE, UNKNOWN, Node, NodeIterator, ScalarStateIterator, pull_rows


def _batched_cardinality(n: int, size: int, drop: bool) -> int:
    if n in (INFINITE, UNKNOWN):
        return n
    return n // size if drop or n % size == 0 else n // size + 1


def _check_size(size, what: str) -> int:
    if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 1:
        raise ValueError(f"Dataset.{what}: batch_size must be a positive integer, "
                         f"received {size!r}")
    return int(size)


# ---- batch ---------------------------------------------------------------------------------
class BatchNode(Node):
    """Stacks ``batch_size`` consecutive elements; the last batch may be smaller."""

    name = "batch"

    def __init__(self, source: Node, batch_size: int, drop_remainder: bool) -> None:
        super().__init__(source)
        self.size = _check_size(batch_size, "batch")
        self.drop = bool(drop_remainder)

    def make_iterator(self, ctx):
        return BatchIterator(self, self.inputs[0].make_iterator(ctx))

    def cardinality(self) -> int:
        return _batched_cardinality(self.inputs[0].cardinality(), self.size, self.drop)

    def _compute_spec(self):
        return _st.batch_spec(self.inputs[0].element_spec(), self.size if self.drop else None)


class BatchIterator(ScalarStateIterator):
    __slots__ = ("_up", "_n", "_drop", "_done", "_chunked", "_codec")
    kind = "batch"
    _saved = (("done", "_done", bool),)

    def __init__(self, node: BatchNode, up: NodeIterator) -> None:
        self._up = up
        self._n = node.size
        self._drop = node.drop
        self._done = False
        self._chunked = up.supports_chunks()
        self._codec = None

    def __next__(self):
        if self._done:
            raise StopIteration
        n = self._n
        if self._chunked:
            up = self._up
            flat = up.next_chunk(n)
            if flat is None or len(flat[0]) < n:  # end of the input, or a chunk boundary
                rest = None if flat is None else pull_rows(up, n - len(flat[0]))
                if rest is not None:
                    flat = [np.concatenate(p) for p in zip(flat, rest)]
                if flat is None or (len(flat[0]) < n and self._drop):
                    self._done = True
                    raise StopIteration
                if len(flat[0]) < n:
                    self._done = True
            return up.codec.pack_arrays(flat)
        elems = self._up.next_list(n)
        if len(elems) < n:
            self._done = True
            if not elems or self._drop:
                raise StopIteration
        codec = self._codec
        if codec is None:
            codec = self._codec = _st.Codec(elems[0])
        return codec.pack_arrays(_st.stack(elems, codec, "Dataset.batch"))


# ---- padded_batch --------------------------------------------------------------------------
class PaddedBatchNode(Node):
    """Batches elements of different shapes, padding each component to a common shape."""

    name = "padded_batch"

    def __init__(self, source: Node, batch_size: int, padded_shapes, padding_values,
                 drop_remainder: bool) -> None:
        super().__init__(source)
        self.size = _check_size(batch_size, "padded_batch")
        self.drop = bool(drop_remainder)
        self.padded_shapes = padded_shapes
        self.padding_values = padding_values
        self._plan = None  # per-leaf (target shape or None, padding value), built on first use

    def make_iterator(self, ctx):
        return PaddedBatchIterator(self, self.inputs[0].make_iterator(ctx))

    def cardinality(self) -> int:
        return _batched_cardinality(self.inputs[0].cardinality(), self.size, self.drop)

    def _compute_spec(self):
        spec = self.inputs[0].element_spec()
        codec = _st.Codec(spec)
        specs = codec.flatten(spec)
        shapes = self._leaf_option(self.padded_shapes, codec, len(specs), "padded_shapes")
        out = []
        for s, target in zip(specs, shapes):
            shape = s.shape if target is None else tuple(
                None if d is None or d == -1 else int(d) for d in _shape_tuple(target))
            lead = self.size if self.drop else None
            out.append(_st.TensorSpec((lead,) + tuple(shape), s.dtype))
        return codec.pack(out)

    def _leaf_option(self, option, codec, n: int, what: str) -> list:
        if option is None:
            return [None] * n
        if codec.kind == "leaf":
            return [option]
        if not _st.is_structure(option):
            if what == "padding_values":
                return [option] * n
            raise ValueError(f"Dataset.padded_batch: {what} must match the element structure "
                             f"{_st.describe(codec.template)}, received {option!r}")
        try:
            # shapes are lists/tuples of ints: walk the element's template only
            leaves = _st.flatten_up_to(codec.template, option)
        except (KeyError, TypeError, IndexError, ValueError):
            raise ValueError(f"Dataset.padded_batch: {what} must match the element structure "
                             f"{_st.describe(codec.template)}, received {option!r}") from None
        return leaves


def _shape_tuple(shape) -> tuple:
    if isinstance(shape, (int, np.integer)) or shape is None:
        return (shape,)  # a rank-1 shape given as its length, as tf.data accepts
    if hasattr(shape, "shape") and not isinstance(shape, (list, tuple)):
        shape = np.asarray(shape).tolist()
    if isinstance(shape, _st.TensorSpec):
        shape = shape.shape
    return tuple(shape)


class PaddedBatchIterator(ScalarStateIterator):
    __slots__ = ("_up", "_node", "_done", "_codec", "_shapes", "_pads")
    kind = "padded_batch"
    _saved = (("done", "_done", bool),)

    def __init__(self, node: PaddedBatchNode, up: NodeIterator) -> None:
        self._up = up
        self._node = node
        self._done = False
        self._codec = None

    def __next__(self):
        if self._done:
            raise StopIteration
        node = self._node
        elems = list(islice(self._up, node.size))
        if len(elems) < node.size:
            self._done = True
            if not elems or node.drop:
                raise StopIteration
        if self._codec is None:
            codec = self._codec = _st.Codec(elems[0])
            self._shapes = node._leaf_option(node.padded_shapes, codec, codec.n, "padded_shapes")
            self._pads = node._leaf_option(node.padding_values, codec, codec.n, "padding_values")
        codec = self._codec
        try:
            cols = list(zip(*[codec.flatten(e) for e in elems]))
        except (KeyError, TypeError, IndexError):
            _st._structure_error(elems, "Dataset.padded_batch")
        out = [self._pad(c, [t._v for t in col]) for c, col in enumerate(cols)]
        return codec.pack_arrays(out)

    def _pad(self, c: int, arrays: list) -> np.ndarray:
        rank = arrays[0].ndim
        for i, a in enumerate(arrays):
            if a.ndim != rank:
                raise ValueError(
                    f"Dataset.padded_batch: component {c} has rank {rank} in the first element "
                    f"and rank {a.ndim} in element {i} of the batch")
        longest = [max(a.shape[d] for a in arrays) for d in range(rank)]
        target = self._shapes[c]
        if target is not None:
            target = _shape_tuple(target)
            if len(target) != rank:
                raise ValueError(
                    f"Dataset.padded_batch: padded_shapes for component {c} is {tuple(target)} "
                    f"(rank {len(target)}) but the elements have rank {rank}")
            for d, t in enumerate(target):
                if t is None or t == -1:
                    continue
                if longest[d] > t:
                    raise ValueError(
                        f"Dataset.padded_batch: component {c} has size {longest[d]} in dimension "
                        f"{d}, larger than its padded shape {tuple(target)}")
                longest[d] = int(t)
        dtype = arrays[0].dtype
        if dtype.kind in "SU":
            dtype = np.result_type(*[a.dtype for a in arrays])
        pad = self._pads[c]
        if pad is None:
            pad = b"" if dtype.kind == "S" else ("" if dtype.kind == "U" else 0)
        elif hasattr(pad, "_v"):
            pad = np.asarray(pad._v)
        out = np.full([len(arrays)] + longest, pad, dtype=dtype)
        for i, a in enumerate(arrays):
            if a.dtype != arrays[0].dtype and dtype.kind not in "SU":
                raise TypeError(
                    f"Dataset.padded_batch: component {c} is {arrays[0].dtype.name} in the first "
                    f"element and {a.dtype.name} in element {i}")
            out[(i,) + tuple(slice(0, s) for s in a.shape)] = a
        return out


# ---- unbatch -------------------------------------------------------------------------------
class UnbatchNode(Node):
    """Splits every element along its first axis into consecutive elements."""

    name = "unbatch"

    def make_iterator(self, ctx):
        return UnbatchIterator(self.inputs[0].make_iterator(ctx))

    def cardinality(self) -> int:
        n = self.inputs[0].cardinality()
        if n in (INFINITE, 0):
            return n
        if n == UNKNOWN:
            return UNKNOWN
        try:
            specs = _st.flatten(self.inputs[0].element_spec())
        except ValueError:
            return UNKNOWN
        dims = {s.shape[0] if s.shape else None for s in specs}
        if len(dims) == 1 and None not in dims:
            return n * dims.pop()
        return UNKNOWN

    def _compute_spec(self):
        def unbatched(s):
            if s.shape is not None and len(s.shape) == 0:
                raise ValueError("Dataset.unbatch: every component must have at least one "
                                 "dimension; found a scalar")
            return _st.TensorSpec(None if s.shape is None else s.shape[1:], s.dtype)
        return _st.map_structure(unbatched, self.inputs[0].element_spec())


class UnbatchIterator(NodeIterator):
    __slots__ = ("_up", "_arrays", "_pos", "_len", "codec", "_done")
    kind = "unbatch"

    def __init__(self, up: NodeIterator) -> None:
        self._up = up
        self._arrays = None
        self._pos = 0
        self._len = 0
        self.codec = None
        self._done = False

    def _fill(self) -> bool:
        while self._pos >= self._len:
            if self._done:
                return False
            try:
                elem = next(self._up)
            except StopIteration:
                self._done = True
                return False
            if self.codec is None:
                self.codec = _st.Codec(elem)
            arrays = [t._v for t in self.codec.flatten(elem)]
            self._set_batch(arrays)
        return True

    def _set_batch(self, arrays) -> None:
        dims = {a.shape[0] if a.ndim else None for a in arrays}
        if None in dims:
            raise ValueError("Dataset.unbatch: every component must have at least one "
                             "dimension; found a scalar")
        if len(dims) != 1:
            raise ValueError(
                f"Dataset.unbatch: all components of an element must have the same size in "
                f"the first dimension; received sizes {[a.shape[0] for a in arrays]}")
        self._arrays = arrays
        self._pos = 0
        self._len = dims.pop()

    def __next__(self):
        if self._pos >= self._len and not self._fill():
            raise StopIteration
        i = self._pos
        self._pos = i + 1
        return self.codec.pack([wrap(a[i, ...]) for a in self._arrays])

    def supports_chunks(self) -> bool:
        return True

    def next_chunk(self, n: int):
        if self._pos >= self._len and not self._fill():
            return None
        i = self._pos
        j = min(i + n, self._len)
        self._pos = j
        return [a[i:j] for a in self._arrays]

    def get_state(self) -> dict:
        rest = None
        if self._arrays is not None and self._pos < self._len:
            rest = _st.encode(self.codec.pack([a[self._pos:] for a in self._arrays]))
        return {"node": self.kind, "done": self._done, "rest": rest, "input": self._up.get_state()}

    def set_state(self, state: dict) -> None:
        self._check_state(state)
        self._done = bool(state["done"])
        self._up.set_state(state["input"])
        self._arrays, self._pos, self._len = None, 0, 0
        if state["rest"] is not None:
            elem = _st.decode(state["rest"])
            self.codec = _st.Codec(elem)
            self._set_batch([t._v for t in self.codec.flatten(elem)])
