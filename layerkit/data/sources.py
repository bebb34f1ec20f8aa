"""In-memory sources: from_tensor_slices, from_tensors, range, from_generator, zip."""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from layerkit._core.op import wrap
from layerkit._core.tensor import Tensor
from layerkit.data import structure as _st
from layerkit.data.node import (
    INFINITE,
    UNKNOWN,
    IterationContext,
    Node,
    NodeIterator,
    ScalarStateIterator,
    annotate,
    fn_name,
    pull_rows,
)

_new = object.__new__


def _as_leaf_arrays(value, what: str):
    """Convert source input to an element of NumPy leaves (lists are tensors, as in tf.data)."""
    def leaf(v):
        t = _st.to_tensor(v)
        a = t._v
        if a is v:  # the dataset keeps it: never the caller's own array (TF copies too)
            return a.copy()
        return a if isinstance(a, np.ndarray) else np.asarray(a)
    try:
        return _st.map_structure(leaf, value)
    except (TypeError, ValueError) as e:
        raise type(e)(f"{what}: cannot convert the input to tensors: {e}") from None


# ---- from_tensor_slices --------------------------------------------------------------------
class TensorSlicesNode(Node):
    """Elements are the slices of every component along its first axis."""

    name = "from_tensor_slices"

    def __init__(self, value) -> None:
        super().__init__()
        arrays = _as_leaf_arrays(value, "Dataset.from_tensor_slices")
        flat = _st.flatten(arrays)
        if not flat:
            raise ValueError("Dataset.from_tensor_slices: the input has no tensors")
        for a in flat:
            if a.ndim == 0:
                raise ValueError(
                    f"Dataset.from_tensor_slices: every component needs at least one "
                    f"dimension to slice; received a scalar of dtype {a.dtype.name} "
                    f"(use from_tensors for a single element)")
        n = flat[0].shape[0]
        for a in flat:
            if a.shape[0] != n:
                raise ValueError(
                    f"Dataset.from_tensor_slices: all components must have the same size "
                    f"in the first dimension; received {_st.describe(arrays)}")
        self.codec = _st.Codec(arrays)
        self.arrays = flat
        self.n = n

    def make_iterator(self, ctx: IterationContext) -> NodeIterator:
        return SlicesIterator(self)

    def cardinality(self) -> int:
        return self.n

    def static_chunk_spec(self):
        return self.codec.pack([_st.TensorSpec(a.shape[1:], a.dtype) for a in self.arrays])

    _compute_spec = static_chunk_spec


class _ObjectRows:
    """Row access for an object array: indexing ``a[i]`` would return the raw Python
    object, so rows stay 0-d views."""

    __slots__ = ("a",)

    def __init__(self, a: np.ndarray) -> None:
        self.a = a

    def __getitem__(self, key):
        if isinstance(key, slice):
            return [self.a[k, ...] for k in range(*key.indices(len(self.a)))]
        return self.a[key, ...]


def _rows(a: np.ndarray):
    """What ``rows[i]`` and iterating over ``rows[i:j]`` give is what elements hold:
    row views, or NumPy scalars for 1-D arrays (immutable, and cheaper to make than 0-d
    views, which iteration cannot produce)."""
    return _ObjectRows(a) if a.dtype.kind == "O" else a


class SlicesIterator(ScalarStateIterator):
    __slots__ = ("_arrays", "_rows", "_n", "_i", "codec", "_pair")
    kind = "from_tensor_slices"
    _saved = (("pos", "_i", int),)

    def __init__(self, node: TensorSlicesNode) -> None:
        self._arrays = node.arrays
        self._rows = [_rows(a) for a in node.arrays]
        self._n = node.n
        self._i = 0
        self.codec = node.codec
        self._pair = node.codec.kind == "tuple" and node.codec.ttype is tuple and node.codec.n == 2

    def __next__(self):
        i = self._i
        if i >= self._n:
            raise StopIteration
        self._i = i + 1
        if self._pair:  # the common (features, labels) case, without the generic packing
            a, b = self._rows
            return (wrap(a[i]), wrap(b[i]))
        return self.codec.pack([wrap(a[i]) for a in self._rows])

    def next_list(self, n: int) -> list:
        i = self._i
        j = min(i + n, self._n)
        if j <= i:
            return []
        self._i = j
        if self._pair:
            a, b = self._rows
            out: list[Any] = []
            append = out.append
            for x, y in zip(a[i:j], b[i:j]):  # wrap() inlined: this loop is the hot path
                u = _new(Tensor)
                u._v = x
                v = _new(Tensor)
                v._v = y
                append((u, v))
            return out
        cols = [list(map(wrap, a[i:j])) for a in self._rows]
        codec = self.codec
        if codec.kind == "leaf":
            return cols[0]
        if codec.kind == "tuple" and codec.ttype is tuple:
            return list(zip(*cols))
        return [codec.pack(leaves) for leaves in zip(*cols)]

    def supports_chunks(self) -> bool:
        return True

    def next_chunk(self, n: int):
        i = self._i
        if i >= self._n:
            return None
        j = min(i + n, self._n)
        self._i = j
        if self._pair:
            a, b = self._arrays
            return [a[i:j], b[i:j]]
        return [a[i:j] for a in self._arrays]


# ---- from_tensors --------------------------------------------------------------------------
class TensorsNode(Node):
    """A dataset of exactly one element."""

    name = "from_tensors"

    def __init__(self, value) -> None:
        super().__init__()
        arrays = _as_leaf_arrays(value, "Dataset.from_tensors")
        self.codec = _st.Codec(arrays)
        self.arrays = _st.flatten(arrays)

    def make_iterator(self, ctx):
        return TensorsIterator(self)

    def cardinality(self) -> int:
        return 1

    def static_chunk_spec(self):
        return self.codec.pack([_st.TensorSpec(a.shape, a.dtype) for a in self.arrays])

    _compute_spec = static_chunk_spec


class TensorsIterator(ScalarStateIterator):
    __slots__ = ("_node", "_done", "codec")
    kind = "from_tensors"
    _saved = (("done", "_done", bool),)

    def __init__(self, node: TensorsNode) -> None:
        self._node = node
        self._done = False
        self.codec = node.codec

    def __next__(self):
        if self._done:
            raise StopIteration
        self._done = True
        return self.codec.pack_arrays(self._node.arrays)

    def supports_chunks(self) -> bool:
        return True

    def next_chunk(self, n: int):
        if self._done:
            return None
        self._done = True
        return [a[None] for a in self._node.arrays]


# ---- range ---------------------------------------------------------------------------------
class RangeNode(Node):
    """``range(start, stop, step)`` as scalar Tensors (int64 by default)."""

    name = "range"

    def __init__(self, start: int, stop: int, step: int, dtype) -> None:
        super().__init__()
        if step == 0:
            raise ValueError("Dataset.range: step must not be 0")
        self.start, self.stop, self.step = int(start), int(stop), int(step)
        self.dtype = np.dtype(dtype)
        self.n = len(range(self.start, self.stop, self.step))
        self.codec = _st.Codec(None)

    def make_iterator(self, ctx):
        return RangeIterator(self)

    def cardinality(self) -> int:
        return self.n

    def static_chunk_spec(self):
        return _st.TensorSpec((), self.dtype)

    _compute_spec = static_chunk_spec


class RangeIterator(ScalarStateIterator):
    __slots__ = ("_node", "_i", "codec")
    kind = "range"
    _saved = (("pos", "_i", int),)

    def __init__(self, node: RangeNode) -> None:
        self._node = node
        self._i = 0
        self.codec = node.codec

    def __next__(self):
        i = self._i
        node = self._node
        if i >= node.n:
            raise StopIteration
        self._i = i + 1
        return wrap(node.dtype.type(node.start + i * node.step))

    def next_list(self, n: int) -> list:
        chunk = self.next_chunk(n)
        return [] if chunk is None else list(map(wrap, chunk[0]))

    def supports_chunks(self) -> bool:
        return True

    def next_chunk(self, n: int):
        i = self._i
        node = self._node
        if i >= node.n:
            return None
        j = min(i + n, node.n)
        self._i = j
        first = node.start + i * node.step
        return [np.arange(first, first + (j - i) * node.step, node.step, dtype=node.dtype)]


# ---- from_generator ------------------------------------------------------------------------
class GeneratorNode(Node):
    """Elements produced by calling a Python generator function."""

    name = "from_generator"

    def __init__(self, generator, output_signature=None, args=None) -> None:
        super().__init__()
        if not callable(generator):
            raise TypeError(
                f"Dataset.from_generator: `generator` must be a callable that returns an "
                f"iterator (so each pass can start again), received a "
                f"{type(generator).__name__}; wrap it: from_generator(lambda: gen)")
        self.generator = generator
        self.args = tuple(args) if args is not None else ()
        self.signature = output_signature
        if output_signature is not None:
            for s in _st.flatten(output_signature):
                if not isinstance(s, _st.TensorSpec):
                    raise TypeError(
                        f"Dataset.from_generator: output_signature must be a nested structure "
                        f"of TensorSpec, found {type(s).__name__}")
            self.sig_codec = _st.Codec(output_signature)
            self.sig_flat = self.sig_codec.flatten(output_signature)

    def make_iterator(self, ctx):
        return GeneratorIterator(self)

    def cardinality(self) -> int:
        return UNKNOWN

    def _compute_spec(self):
        if self.signature is not None:
            return self.signature
        return super()._compute_spec()


class GeneratorIterator(NodeIterator):
    """State is the number of elements produced: restoring replays the generator that far
    (so the generator must be deterministic for resumption to be exact)."""

    __slots__ = ("_node", "_gen", "_count", "_done")
    kind = "from_generator"

    def __init__(self, node: GeneratorNode) -> None:
        self._node = node
        self._gen = None
        self._count = 0
        self._done = False

    def _start(self) -> Iterator[Any]:
        node = self._node
        try:
            gen = self._gen = iter(node.generator(*node.args))
        except Exception as e:
            raise annotate(e, f"raised by the generator function {fn_name(node.generator)} "
                              f"passed to Dataset.from_generator when starting a pass") from None
        return gen

    def __next__(self):
        if self._done:
            raise StopIteration
        if self._gen is None:
            self._start()
        i = self._count
        try:
            value = next(self._gen)
        except StopIteration:
            self._done = True
            self._gen = None
            raise
        except Exception as e:
            self._done = True
            raise annotate(e, f"raised by the generator {fn_name(self._node.generator)} "  # noqa: B904
                              f"passed to Dataset.from_generator while producing element {i}")
        self._count = i + 1
        return self._convert(value, i)

    def _convert(self, value, i):
        node = self._node
        if node.signature is None:
            return _st.normalize(value, lists_as_tuples=False)
        where = f"Dataset.from_generator: element {i}"
        try:
            flat = node.sig_codec.flatten(value) if node.sig_codec.kind != "leaf" else [value]
            if node.sig_codec.kind == "tuple" and len(flat) != node.sig_codec.n:
                raise TypeError
        except (TypeError, KeyError, IndexError):
            raise TypeError(
                f"{where} does not match output_signature: expected "
                f"{_st.describe(node.signature)}, received {type(value).__name__} "
                f"{_short(value)}") from None
        leaves = []
        for v, spec in zip(flat, node.sig_flat):
            leaves.append(_conform(v, spec, where))
        return node.sig_codec.pack(leaves)

    def get_state(self) -> dict:
        return {"node": self.kind, "count": self._count, "done": self._done}

    def set_state(self, state: dict) -> None:
        self._check_state(state)
        count = int(state["count"])
        self._count = 0
        self._done = bool(state["done"])
        self._gen = None
        if self._done:
            self._count = count
            return
        gen = self._start()
        for _ in range(count):  # replay: generators cannot seek
            try:
                next(gen)
            except StopIteration:
                raise ValueError(
                    f"Dataset.from_generator: cannot restore the iterator: the generator "
                    f"stopped after {self._count} elements while replaying to {count}; "
                    f"resuming needs a deterministic generator") from None
            self._count += 1


def _short(value) -> str:
    s = repr(value)
    return s if len(s) <= 80 else s[:77] + "..."


def _conform(v, spec: _st.TensorSpec, where: str):
    try:
        t = _st.to_tensor(v)
    except (TypeError, ValueError) as e:
        raise TypeError(f"{where} does not match output_signature: expected {spec}, received "
                        f"{type(v).__name__} {_short(v)} ({e})") from None
    a = t._v if isinstance(t._v, np.ndarray) else np.asarray(t._v)
    dt = spec.dtype
    if a.dtype != dt and not (a.dtype.kind == dt.kind == "S"):
        if isinstance(v, (np.ndarray,)) and not np.can_cast(a.dtype, dt, "same_kind"):
            raise TypeError(f"{where} does not match output_signature: expected dtype "
                            f"{dt.name}, received {a.dtype.name}")
        try:
            with np.errstate(invalid="ignore", over="ignore"):
                b = a.astype(dt)
                # Into an integer type only exact values pass: 1.5 -> 1 or 300 -> 44 (uint8)
                # would be silently wrong values.
                lossy = (dt.kind in "iu" and a.dtype.kind in "iufb"
                         and not np.can_cast(a.dtype, dt, "safe")
                         and not np.array_equal(b.astype(a.dtype), a))
        except (TypeError, ValueError, OverflowError):
            raise TypeError(f"{where} does not match output_signature: cannot convert "
                            f"{a.dtype.name} to {dt.name}") from None
        if lossy:
            raise TypeError(f"{where} does not match output_signature: the value "
                            f"{_short(v)} does not fit dtype {dt.name} exactly")
        t = wrap(b)
    if not _st.shapes_compatible(spec.shape, a.shape):
        raise ValueError(f"{where} does not match output_signature: expected shape "
                         f"{spec.shape}, received {a.shape}")
    return t


# ---- zip -----------------------------------------------------------------------------------
class ZipNode(Node):
    """Elements pair up the inputs' elements; stops at the shortest input."""

    name = "zip"

    def __init__(self, structure, nodes: list[Node]) -> None:
        super().__init__(*nodes)
        self.codec = _st.Codec(structure)

    def make_iterator(self, ctx):
        return ZipIterator(self, [n.make_iterator(ctx) for n in self.inputs])

    def cardinality(self) -> int:
        result = INFINITE
        for node in self.inputs:
            n = node.cardinality()
            if n == UNKNOWN:
                return UNKNOWN
            if n != INFINITE and (result == INFINITE or n < result):
                result = n
        return result

    def _compute_spec(self):
        return self.codec.pack([n.element_spec() for n in self.inputs])

    def static_chunk_spec(self):
        specs = [n.static_chunk_spec() for n in self.inputs]
        return None if any(s is None for s in specs) else self.codec.pack(specs)


class ZipIterator(NodeIterator):
    __slots__ = ("_its", "_codec", "_done", "codec", "_chunked")
    kind = "zip"

    def __init__(self, node: ZipNode, its: list) -> None:
        self._its = its
        self._codec = node.codec
        self._done = False
        self.codec: _st.Codec | None = None  # built from the inputs' codecs on the 1st chunk
        self._chunked = all(it.supports_chunks() for it in its)

    def __next__(self):
        if self._done:
            raise StopIteration
        try:
            items = [next(it) for it in self._its]
        except StopIteration:
            self._done = True
            raise
        return self._codec.pack(items)

    def supports_chunks(self) -> bool:
        return self._chunked

    def next_chunk(self, n: int):
        # Pull a chunk from the first input, then exactly as many rows from the others.
        if self._done:
            return None
        parts: list[Any] = []
        want = n
        for it in self._its:
            got = pull_rows(it, want)
            if got is None:
                self._done = True
                return None  # rows pulled from earlier inputs are dropped, as in tf.data
            if len(got[0]) < want:  # this input ended: the zip ends after these rows
                self._done = True
                want = len(got[0])
                parts = [[a[:want] for a in p] for p in parts]
            parts.append(got)
        if self.codec is None:
            self.codec = _st.Codec(self._codec.pack([it.codec.template for it in self._its]))
        flat = []
        for p in parts:
            flat.extend(p)
        return flat

    def get_state(self) -> dict:
        return {"node": self.kind, "done": self._done,
                "inputs": [it.get_state() for it in self._its]}

    def set_state(self, state: dict) -> None:
        self._check_state(state)
        self._done = bool(state["done"])
        for it, s in zip(self._its, state["inputs"]):
            it.set_state(s)

    def _inputs(self) -> tuple:
        return tuple(self._its)

