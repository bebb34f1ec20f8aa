"""cache: keep the elements of the first complete pass in memory or in a file.

The first pass that runs to the end records its elements; later passes replay them (so
a shuffle before ``cache`` is frozen, as in tf.data). A pass abandoned half-way records
nothing. With a ``filename`` the elements go to ``<filename>.lkcache``, written to a
temporary file and renamed when complete; an existing complete file is read instead
of running the input at all, also by later programs.

File format (little-endian): the magic ``b"LKCACHE1\\n"``, then records. A block record
is ``b"B"``, the byte length of a UTF-8 JSON header (8 bytes), the header (the block's
elements encoded as by :func:`layerkit.data.structure.encode_elements`, with every
array replaced by ``{"__array__": k}``) and the arrays in ``.npy`` format, read back
with ``allow_pickle=False``. The last record is ``b"E"`` and the element count (8 bytes).
"""
from __future__ import annotations

import json
import os
import struct

import numpy as np

from layerkit.data import structure as _st
from layerkit.data.node import Node, NodeIterator

MAGIC = b"LKCACHE1\n"
_BLOCK = 256
_SUFFIX = ".lkcache"


class CacheNode(Node):
    """Records the first complete pass and replays it afterwards."""

    name = "cache"

    def __init__(self, source: Node, filename: str) -> None:
        super().__init__(source)
        self.path = os.fspath(filename) + _SUFFIX if filename else None
        self.memory = None  # the recorded elements once a pass completed (memory mode)
        self.writer_active = False

    def make_iterator(self, ctx):
        return CacheIterator(self, ctx)

    def cardinality(self) -> int:
        if self.memory is not None:
            return len(self.memory)
        return self.inputs[0].cardinality()

    def _compute_spec(self):
        return self.inputs[0].element_spec()

    def complete(self) -> bool:
        if self.path is None:
            return self.memory is not None
        return os.path.exists(self.path)


class CacheIterator(NodeIterator):
    __slots__ = ("_node", "_ctx", "_mode", "_up", "_pos", "_rec", "_reader", "_writer")
    kind = "cache"

    def __init__(self, node: CacheNode, ctx) -> None:
        self._node = node
        self._ctx = ctx
        self._up = None
        self._pos = 0
        self._rec = None
        self._reader = None
        self._writer = None
        if node.complete():
            self._mode = "read"
            if node.path is not None:
                self._reader = _Reader(node.path)
        elif not node.writer_active:
            self._start_write()
        else:
            self._mode = "pass"  # another pass is recording: just read the input
            self._up = node.inputs[0].make_iterator(ctx)

    def _start_write(self) -> None:
        node = self._node
        self._mode = "write"
        node.writer_active = True
        self._up = node.inputs[0].make_iterator(self._ctx)
        self._rec = []
        if node.path is not None:
            self._writer = _Writer(node.path)

    def _stop_write(self, commit: bool) -> None:
        node = self._node
        if self._mode != "write":
            return
        node.writer_active = False
        self._mode = "pass"
        if commit:
            if self._writer is not None:
                self._writer.commit(self._rec)
            else:
                node.memory = self._rec
        elif self._writer is not None:
            self._writer.abort()
        self._rec = None
        self._writer = None

    def __next__(self):
        mode = self._mode
        if mode == "read":
            if self._reader is not None:
                return self._reader.next()
            mem = self._node.memory
            i = self._pos
            if i >= len(mem):
                raise StopIteration
            self._pos = i + 1
            return mem[i]
        try:
            e = next(self._up)
        except StopIteration:
            self._stop_write(commit=True)
            raise
        if mode == "write":
            self._rec.append(e)
            if self._writer is not None and len(self._rec) >= _BLOCK:
                self._writer.write_block(self._rec)
                self._rec = []
        return e

    def get_state(self) -> dict:
        if self._mode == "read":
            pos = self._reader.position() if self._reader is not None else self._pos
            return {"node": self.kind, "mode": "read", "pos": pos, "input": None}
        # A recording pass resumes as a plain pass: what it recorded is not in the state.
        return {"node": self.kind, "mode": "pass", "pos": 0, "input": self._up.get_state()}

    def set_state(self, state: dict) -> None:
        self._check_state(state)
        self._stop_write(commit=False)
        node = self._node
        if state["mode"] == "read":
            if node.complete():
                self._close_up()
                self._mode = "read"
                if node.path is not None:
                    self._reader = self._reader or _Reader(node.path)
                    self._reader.seek(state["pos"])
                else:
                    self._pos = int(state["pos"])
                return
            # Saved while replaying a memory cache that this process does not have:
            # record it again from the input, up to the saved position.
            self._close_up()
            self._start_write()
            for _ in range(int(state["pos"])):
                next(self)
            return
        if self._up is None:
            self._up = node.inputs[0].make_iterator(self._ctx)
        self._mode = "pass"
        self._up.set_state(state["input"])

    def _close_up(self) -> None:
        if self._up is not None:
            self._up.close()
            self._up = None

    def close(self) -> None:
        self._stop_write(commit=False)
        if self._reader is not None:
            self._reader.close()
            self._reader = None
        self._close_up()

    def __del__(self):
        try:
            self._stop_write(commit=False)
        except Exception:
            pass


# ---- file format ---------------------------------------------------------------------------
def _split_arrays(obj, arrays: list):
    if isinstance(obj, np.ndarray):
        if obj.dtype.hasobject:
            raise TypeError("Dataset.cache: cannot write object arrays to a cache file")
        arrays.append(obj)
        return {"__array__": len(arrays) - 1}
    if isinstance(obj, dict):
        return {k: _split_arrays(v, arrays) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_split_arrays(v, arrays) for v in obj]
    return obj


def _join_arrays(obj, arrays: list):
    if isinstance(obj, dict):
        if set(obj) == {"__array__"}:
            return arrays[obj["__array__"]]
        return {k: _join_arrays(v, arrays) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_join_arrays(v, arrays) for v in obj]
    return obj


def _count_arrays(obj) -> int:
    if isinstance(obj, dict):
        if set(obj) == {"__array__"}:
            return 1
        return sum(_count_arrays(v) for v in obj.values())
    if isinstance(obj, list):
        return sum(_count_arrays(v) for v in obj)
    return 0


class _Writer:
    def __init__(self, path: str) -> None:
        self.path = path
        self.tmp = f"{path}.tmp-{os.getpid()}-{id(self)}"
        self.count = 0
        self.f = open(self.tmp, "wb")
        self.f.write(MAGIC)

    def write_block(self, elements: list) -> None:
        arrays: list = []
        header = json.dumps(_split_arrays(_st.encode_elements(elements), arrays)).encode()
        self.f.write(b"B" + struct.pack("<Q", len(header)) + header)
        for a in arrays:
            np.lib.format.write_array(self.f, a, allow_pickle=False)
        self.count += len(elements)

    def commit(self, rest: list) -> None:
        if rest:
            self.write_block(rest)
        self.f.write(b"E" + struct.pack("<Q", self.count))
        self.f.close()
        os.replace(self.tmp, self.path)

    def abort(self) -> None:
        try:
            self.f.close()
        finally:
            if os.path.exists(self.tmp):
                os.remove(self.tmp)


class _Reader:
    def __init__(self, path: str) -> None:
        self.path = path
        self.f = open(path, "rb")
        if self.f.read(len(MAGIC)) != MAGIC:
            self.f.close()
            raise ValueError(f"Dataset.cache: {path} is not a layerkit cache file (bad magic); "
                             f"delete it to rebuild the cache")
        self.block: list = []
        self.block_offset = self.f.tell()  # where the current block's record starts
        self.i = 0
        self.done = False

    def _read_block(self) -> bool:
        f = self.f
        offset = f.tell()
        tag = f.read(1)
        if tag == b"E":
            self.done = True
            return False
        if tag != b"B":
            raise ValueError(f"Dataset.cache: {self.path} is corrupted or truncated at byte "
                             f"{offset} (expected a block record)")
        raw = f.read(8)
        if len(raw) != 8:
            raise ValueError(f"Dataset.cache: {self.path} is truncated at byte {offset}")
        (n,) = struct.unpack("<Q", raw)
        try:
            header = json.loads(f.read(n).decode())
            arrays = [np.lib.format.read_array(f, allow_pickle=False)
                      for _ in range(_count_arrays(header))]
        except (ValueError, UnicodeDecodeError, EOFError) as e:
            raise ValueError(f"Dataset.cache: {self.path} is corrupted or truncated in the "
                             f"block at byte {offset}: {e}") from None
        self.block = _st.decode_elements(_join_arrays(header, arrays))
        self.block_offset = offset
        self.i = 0
        return True

    def next(self):
        while self.i >= len(self.block):
            if self.done or not self._read_block():
                raise StopIteration
        e = self.block[self.i]
        self.i += 1
        return e

    def position(self) -> list:
        return [self.block_offset, self.i, self.done]

    def seek(self, pos) -> None:
        offset, i, done = pos
        self.f.seek(int(offset))
        self.block, self.i, self.done = [], 0, bool(done)
        if not self.done and self._read_block():
            self.i = int(i)

    def close(self) -> None:
        self.f.close()
