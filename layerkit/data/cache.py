"""cache: keep the elements of the first complete pass in memory or in a file.

The first pass that runs to the end records its elements; later passes replay them (so
a shuffle before ``cache`` is frozen, as in tf.data). A pass abandoned half-way records
nothing. With a ``filename`` the elements go to ``<filename>.lkcache``, written to a
temporary file that is fsynced and renamed when complete; an existing complete file is
read instead of running the input at all, also by later programs.

Iterator state resumes exactly, also in a new process that has nothing cached yet. As in
tf.data, the state of a memory cache holds the elements it recorded (all of them once
the pass completed). The state of a file cache saved while it records names its
temporary file and how much of it was written (flushed and fsynced when the state is
taken); that file is then kept even if the pass is abandoned, so that a later run can
continue the recording from it (the restored pass copies that part into a file of its
own). States saved while a file is replayed hold its position and size: restoring them
after the file was deleted or rebuilt differently is an error naming the file.

File format (little-endian): the magic ``b"LKCACHE2\\n"``, then records. A block record
is ``b"B"``, the payload's byte length (8 bytes), its element count (4 bytes) and the
CRC-32 of the payload (4 bytes), then the payload: the byte length of a UTF-8 JSON header
(8 bytes), the header (the block's elements encoded as by
:func:`layerkit.data.structure.encode_elements`, with every array replaced by
``{"__array__": k}``) and the arrays in ``.npy`` format, read back with
``allow_pickle=False``. The last record is ``b"E"``, the element count (8 bytes) and its
CRC-32 (4 bytes). A block whose checksum does not match is reported, never returned.
"""
from __future__ import annotations

import io
import json
import os
import struct
import zlib

import numpy as np

from layerkit.data import structure as _st
from layerkit.data.node import Node, NodeIterator

MAGIC = b"LKCACHE2\n"
_BLOCK = 256
_SUFFIX = ".lkcache"
_BLOCK_HEAD = struct.Struct("<QII")  # payload bytes, elements, CRC-32 of the payload
_END = struct.Struct("<QI")  # element count, its CRC-32


class CacheNode(Node):
    """Records the first complete pass and replays it afterwards."""

    name = "cache"

    def __init__(self, source: Node, filename: str) -> None:
        super().__init__(source)
        self.path = os.fspath(filename) + _SUFFIX if filename else None
        self.memory = None  # the recorded elements once a pass completed (memory mode)
        self.encoded = None  # memory, as encode_elements gives it (made for the first state)
        self.writers = 0  # passes recording now

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

    def set_memory(self, elements: list, encoded=None) -> None:
        self.memory = elements
        self.encoded = encoded


class CacheIterator(NodeIterator):
    __slots__ = ("_node", "_ctx", "_mode", "_up", "_pos", "_mem", "_rec", "_reader", "_writer")
    kind = "cache"

    def __init__(self, node: CacheNode, ctx) -> None:
        self._node = node
        self._ctx = ctx
        self._up = None
        self._pos = 0
        self._mem = None  # the elements replayed (memory mode)
        self._rec = None
        self._reader = None
        self._writer = None
        if node.complete():
            self._start_read()
        elif not node.writers:
            self._start_write()
        else:
            self._mode = "pass"  # another pass is recording: just read the input
            self._up = node.inputs[0].make_iterator(ctx)

    def _start_read(self) -> None:
        node = self._node
        self._mode = "read"
        self._pos = 0
        if node.path is not None:
            self._reader = _Reader(node.path)
        else:
            self._mem = node.memory

    def _start_write(self, writer=None) -> None:
        node = self._node
        self._mode = "write"
        node.writers += 1
        if self._up is None:
            self._up = node.inputs[0].make_iterator(self._ctx)
        self._rec = []
        if node.path is not None:
            self._writer = writer or _Writer(node.path)

    def _stop_write(self, commit: bool) -> None:
        node = self._node
        if self._mode != "write":
            return
        node.writers -= 1
        self._mode = "pass"
        rec, writer = self._rec, self._writer
        self._rec = self._writer = None
        if writer is None:
            if commit:
                node.set_memory(rec)
        elif commit:
            writer.commit(rec)
        else:
            writer.abort()

    def __next__(self):
        mode = self._mode
        if mode == "read":
            if self._reader is not None:
                return self._reader.next()
            mem = self._mem
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
        state = {"node": self.kind, "mode": self._mode}
        if self._mode == "read":
            if self._reader is not None:
                state.update(file=self._reader.path, size=self._reader.size,
                             pos=self._reader.position())
            else:
                node = self._node
                if self._mem is not node.memory:  # a restored pass: its own elements
                    state["elements"] = _st.encode_elements(self._mem)
                else:
                    if node.encoded is None:
                        node.encoded = _st.encode_elements(node.memory)
                    state["elements"] = node.encoded
                state["pos"] = self._pos
            return state
        if self._mode == "write":
            if self._writer is None:
                state["elements"] = _st.encode_elements(self._rec)
            else:
                if self._rec:
                    self._writer.write_block(self._rec)
                    self._rec = []
                state.update(zip(("file", "offset", "count"), self._writer.checkpoint()))
        state["input"] = self._up.get_state()
        return state

    def set_state(self, state: dict) -> None:
        self._check_state(state)
        mode = state["mode"]
        if mode not in ("read", "write", "pass"):
            raise ValueError(f"Dataset.cache: unknown mode {mode!r} in the iterator state "
                             f"(expected 'read', 'write' or 'pass')")
        node = self._node
        self._stop_write(commit=False)
        self._close_reader()
        if mode == "read":
            self._close_up()
            self._mode = "read"
            if node.path is not None:
                self._reader = _Reader.resumed(node.path, state["file"], int(state["size"]))
                self._reader.seek(state["pos"])
            else:
                encoded = state["elements"]
                self._mem = _st.decode_elements(encoded)
                if node.memory is None:  # what this pass replays is the complete cache
                    node.set_memory(self._mem, encoded)
                self._pos = int(state["pos"])
            return
        if self._up is None:
            self._up = node.inputs[0].make_iterator(self._ctx)
        if mode == "write":
            writer = None
            if node.path is not None:
                writer = _Writer.resumed(node.path, state["file"], int(state["offset"]),
                                         int(state["count"]))
            self._start_write(writer)
            if writer is None:
                self._rec = _st.decode_elements(state["elements"])
        else:
            self._mode = "pass"
        self._up.set_state(state["input"])

    def _close_up(self) -> None:
        if self._up is not None:
            self._up.close()
            self._up = None

    def _close_reader(self) -> None:
        if self._reader is not None:
            self._reader.close()
            self._reader = None
        self._mem = None

    def close(self) -> None:
        self._stop_write(commit=False)
        self._close_reader()
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


def _fsync_dir(path: str) -> None:
    """Make a rename in ``path``'s directory durable (where directories can be opened)."""
    try:
        fd = os.open(os.path.dirname(os.path.abspath(path)), os.O_RDONLY)
    except OSError:  # pragma: no cover (Windows)
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class _Writer:
    def __init__(self, path: str) -> None:
        self.path = path
        self.count = 0
        self.source = None  # the file a resumed recording copied its start from
        self.keep = False  # a state names this file: keep it if the pass is abandoned
        while True:  # a new name: a kept file (of an earlier run, maybe) is never reused
            self.tmp = f"{path}.tmp-{os.getpid()}-{os.urandom(4).hex()}"
            try:
                self.f = open(self.tmp, "xb")
                break
            except FileExistsError:  # pragma: no cover (2**-32)
                continue
        self.f.write(MAGIC)

    @classmethod
    def resumed(cls, path: str, tmp: str, offset: int, count: int) -> _Writer:
        """A writer continuing a recording saved in a state: it starts with the first
        ``offset`` bytes (``count`` elements) of the saved temporary file, or of the
        complete file that the saving pass went on to write."""
        if not isinstance(tmp, str) or not os.path.basename(tmp).startswith(
                os.path.basename(path) + ".tmp-"):
            raise ValueError(f"'file' must name a temporary file of {path}, received {tmp!r}")
        source = next((p for p in (tmp, path) if os.path.exists(p)), None)
        if source is None:
            raise ValueError(
                f"Dataset.cache: cannot resume recording {path}: the state was saved while "
                f"the cache was being written to {tmp}, and neither that file nor {path} "
                f"exists any more")
        self = cls(path)
        try:
            with open(source, "rb") as src:
                if src.read(len(MAGIC)) != MAGIC:
                    raise ValueError(f"Dataset.cache: cannot resume recording {path}: "
                                     f"{source} is not a layerkit cache file (bad magic)")
                _copy(src, self.f, offset - len(MAGIC))
            self.f.flush()
            found = _Reader(self.tmp).count_to(offset)
            if found != count:
                raise ValueError(f"Dataset.cache: cannot resume recording {path}: the "
                                 f"first {offset} bytes of {source} hold {found} elements, "
                                 f"the state says {count}")
        except BaseException:
            self.abort()
            raise
        self.count = count
        self.source = source if source != path else None
        return self

    def write_block(self, elements: list) -> None:
        arrays: list = []
        header = json.dumps(_split_arrays(_st.encode_elements(elements), arrays)).encode()
        buf = io.BytesIO()
        buf.write(struct.pack("<Q", len(header)))
        buf.write(header)
        for a in arrays:
            np.lib.format.write_array(buf, a, allow_pickle=False)
        payload = buf.getbuffer()
        self.f.write(b"B" + _BLOCK_HEAD.pack(len(payload), len(elements), zlib.crc32(payload)))
        self.f.write(payload)
        self.count += len(elements)

    def checkpoint(self) -> tuple:
        """Make what was written durable; ``(file, byte length, element count)``."""
        self.f.flush()
        os.fsync(self.f.fileno())
        self.keep = True
        return self.tmp, self.f.tell(), self.count

    def commit(self, rest: list) -> None:
        if rest:
            self.write_block(rest)
        self.f.write(b"E" + _END.pack(self.count, zlib.crc32(struct.pack("<Q", self.count))))
        self.f.flush()
        os.fsync(self.f.fileno())
        self.f.close()
        os.replace(self.tmp, self.path)
        _fsync_dir(self.path)
        if self.source is not None:  # a saved recording, now complete: its file is done
            try:
                os.remove(self.source)
            except OSError:
                pass

    def abort(self) -> None:
        try:
            self.f.close()
        finally:
            if not self.keep and os.path.exists(self.tmp):
                os.remove(self.tmp)


def _copy(src, dst, n: int) -> None:
    while n > 0:
        chunk = src.read(min(n, 1 << 20))
        if not chunk:
            raise ValueError(f"Dataset.cache: {src.name} is shorter than the iterator state "
                             f"says (it was truncated or rewritten)")
        dst.write(chunk)
        n -= len(chunk)


class _Reader:
    # Who reads the file and what to do about a bad one, for messages (Dataset.load
    # reads its shards with a subclass).
    where = "Dataset.cache"
    kind = "cache file"
    advice = "delete it to rebuild the cache"

    def __init__(self, path: str) -> None:
        self.path = path
        self.f = open(path, "rb")
        self.size = os.fstat(self.f.fileno()).st_size
        if self.f.read(len(MAGIC)) != MAGIC:
            self.f.close()
            raise ValueError(f"{self.where}: {path} is not a layerkit {self.kind} of this "
                             f"version (bad magic); {self.advice}")
        self.block: list = []
        self.block_offset = self.f.tell()  # where the current block's record starts
        self.i = 0
        self.done = False

    @classmethod
    def resumed(cls, path: str, saved: str, size: int) -> _Reader:
        """The reader of a state saved while replaying ``saved``, checked to be that file."""
        if not os.path.exists(path):
            raise ValueError(f"{cls.where}: cannot resume replaying the file {path}: "
                             f"it no longer exists (the state was saved while replaying "
                             f"{saved}); {cls.advice}")
        self = cls(path)
        if self.size != size:
            self.close()
            raise ValueError(f"{cls.where}: cannot resume replaying the file {path}: "
                             f"it has {self.size} bytes, {size} when the state was saved "
                             f"(it was rebuilt since)")
        return self

    def _corrupt(self, offset: int, what: str) -> ValueError:
        return ValueError(f"{self.where}: {self.path} is corrupted or truncated in the record "
                          f"at byte {offset}: {what}; {self.advice}")

    def _read_record(self):
        """The next block's ``(offset, element count, payload)``; None at the end record."""
        f = self.f
        offset = f.tell()
        tag = f.read(1)
        if tag == b"E":
            raw = f.read(_END.size)
            if len(raw) != _END.size or zlib.crc32(raw[:8]) != _END.unpack(raw)[1]:
                raise self._corrupt(offset, "bad end record")
            self.done = True
            return None
        if tag != b"B":
            raise self._corrupt(offset, "expected a block record")
        raw = f.read(_BLOCK_HEAD.size)
        if len(raw) != _BLOCK_HEAD.size:
            raise self._corrupt(offset, "the file ends inside a block header")
        n, count, crc = _BLOCK_HEAD.unpack(raw)
        payload = f.read(n) if n <= self.size else b""
        if len(payload) != n:
            raise self._corrupt(offset, "the file ends inside a block")
        if zlib.crc32(payload) != crc:
            raise self._corrupt(offset, "checksum mismatch")
        return offset, count, payload

    def _read_block(self) -> bool:
        rec = self._read_record()
        if rec is None:
            return False
        offset, count, payload = rec
        buf = io.BytesIO(payload)
        try:
            (n,) = struct.unpack("<Q", buf.read(8))
            header = json.loads(buf.read(n).decode())
            arrays = [np.lib.format.read_array(buf, allow_pickle=False)
                      for _ in range(_count_arrays(header))]
            block = _st.decode_elements(_join_arrays(header, arrays))
        except (ValueError, UnicodeDecodeError, EOFError, KeyError, TypeError, struct.error) as e:
            raise self._corrupt(offset, str(e)) from None
        if len(block) != count:
            raise self._corrupt(offset, f"{len(block)} elements, the header says {count}")
        self.block = block
        self.block_offset = offset
        self.i = 0
        return True

    def count_to(self, end: int) -> int:
        """The elements of the (checksummed) records before byte ``end``, which must be
        a record boundary."""
        total = 0
        while self.f.tell() < end:
            rec = self._read_record()
            if rec is None:
                break
            total += rec[1]
        if self.f.tell() != end:
            raise self._corrupt(self.f.tell(), f"no record boundary at byte {end}")
        self.close()
        return total

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
        offset, i = int(offset), int(i)
        if not len(MAGIC) <= offset < self.size:
            raise ValueError(f"{self.where}: the iterator state's position {offset} is "
                             f"outside the cache file {self.path} ({self.size} bytes)")
        self.f.seek(offset)
        self.block, self.i, self.done = [], 0, bool(done)
        if not self.done and self._read_block():
            if not 0 <= i <= len(self.block):
                raise ValueError(f"{self.where}: the iterator state's element {i} is "
                                 f"outside the block at byte {offset} of {self.path}")
            self.i = i

    def close(self) -> None:
        self.f.close()
