"""The layerkit checkpoint file: a fixed header, a JSON manifest, then raw array bytes.

Layout (all integers little-endian; the full description is docs/checkpoint_format.md)::

    0    header (64 bytes): magic, format version, manifest length and crc32,
         data offset and length, file length, header crc32
    64   manifest: UTF-8 JSON (format, version, tensors: key -> dtype/shape/offset/
         nbytes/grid64 checksum, and the caller's ``meta`` object)
    D    data area (D is a multiple of 64): each array's raw C-order bytes at a
         64-byte aligned offset relative to D, zero padding in between

Nothing here uses pickle and loading never runs code: dtypes are restricted to plain
numeric, bool and fixed-width string kinds. Writes are atomic
(:class:`layerkit._core.atomic.AtomicFile`: a temporary file in the same directory is
written, fsynced and renamed over the target, then the directory is fsynced), so a crash
leaves either the old or the new file, never a mix; temporary files left by killed
writers are removed by the next write of the same file.
Reads validate the header, the manifest and every array's checksum, and raise
:class:`CheckpointError` naming the file and the problem.
"""
from __future__ import annotations

import json
import math
import os
import queue
import struct
import sys
import threading
import zlib
from collections.abc import Iterable

import numpy as np

from layerkit import errors
from layerkit._core.atomic import AtomicFile, atomic_write_bytes, write_all
from layerkit._core.tuning import CHECKPOINT_OVERLAP_BYTES, CHECKPOINT_SLAB
from layerkit._core.types import PathLike
from layerkit.checkpoint.digest import BLOCK, Grid64

__all__ = ["CheckpointError", "CheckpointNotFoundError", "CheckpointReader", "write_file",
           "atomic_write_bytes", "FORMAT_VERSION"]

MAGIC = b"\x89LKCKPT\n"
FORMAT_NAME = "layerkit-checkpoint"
FORMAT_VERSION = 1
HEADER_SIZE = 64
ALIGN = 64
# magic, version, header size, manifest length, manifest crc32, flags, data offset,
# data length, file length, 4 reserved bytes, header crc32 (of the 60 bytes before it).
_HEADER = struct.Struct("<8sIIQIIQQQ4xI")
# Arrays are written, read and checksummed in 1 MiB pieces (grid64's block), so each
# piece is checksummed while it is still in cache.
_CHUNK = BLOCK
_CHECKSUM = "grid64"
_OVERLAP_BYTES = CHECKPOINT_OVERLAP_BYTES
_SLAB = CHECKPOINT_SLAB
# Plain numeric kinds plus fixed-width bytes/str: no object or structured dtypes, which
# would need pickle or could alias memory.
_ALLOWED_KINDS = frozenset("biufcSU")


class CheckpointError(ValueError):
    """A checkpoint file or directory is missing, corrupted, or does not match.

    Attributes:
        path: the file (or directory) concerned.
        problem: what is wrong, in words.
    """

    def __init__(self, path: PathLike, problem: str) -> None:
        self.path = os.fspath(path) if path is not None else None
        self.problem = problem
        where = f"checkpoint '{self.path}'" if self.path is not None else "checkpoint"
        super().__init__(f"{where}: {problem}")


class CheckpointNotFoundError(CheckpointError, errors.NotFoundError):
    """The checkpoint path does not exist (or a directory holds no checkpoint); also a
    ``FileNotFoundError`` and TensorFlow's ``lk.errors.NotFoundError``."""


class _Flusher:
    """fsync a file on a helper thread (the call releases the GIL while it waits)."""

    def __init__(self, fd: int) -> None:
        self._error = None
        self._thread = threading.Thread(target=self._run, args=(fd,), name="lk-ckpt-fsync",
                                        daemon=True)
        self._thread.start()

    def _run(self, fd: int) -> None:
        try:
            os.fsync(fd)
        except OSError as e:
            self._error = e

    def join(self) -> None:
        self._thread.join()
        if self._error is not None:
            raise self._error


class _Digester:
    """grid64 per key of 1 MiB pieces fed in order, on a helper thread if asked.

    Reading is the slow part of a restore; checksumming each piece on a helper thread
    right after it arrives (NumPy reductions release the GIL) hides most of the
    checksum cost. The queue is short, so the helper works on pieces still in cache.
    """

    def __init__(self, threaded: bool) -> None:
        self._hashes: dict = {}
        self._error = None
        self._queue = self._thread = None
        if threaded:
            self._queue = queue.Queue(4)
            self._thread = threading.Thread(target=self._run, name="lk-ckpt-digest",
                                            daemon=True)
            self._thread.start()

    def _update(self, key, piece) -> None:
        h = self._hashes.get(key)
        if h is None:
            h = self._hashes[key] = Grid64()
        h.update(piece)

    def add(self, key, piece) -> None:
        if self._queue is None:
            self._update(key, piece)
        else:
            self._queue.put((key, piece))

    def _run(self) -> None:
        while (item := self._queue.get()) is not None:
            if self._error is None:
                try:
                    self._update(*item)
                except Exception as e:  # noqa: BLE001 - re-raised in results()
                    self._error = e

    def _stop(self) -> None:
        if self._thread is not None:
            self._queue.put(None)
            self._thread.join()
            self._thread = None

    def results(self) -> dict:
        self._stop()
        if self._error is not None:
            raise self._error
        return {k: h.digest() for k, h in self._hashes.items()}

    def __enter__(self) -> _Digester:
        return self

    def __exit__(self, *exc) -> None:
        self._stop()


def _digest(flat: np.ndarray) -> int:
    h = Grid64()
    for j in range(0, max(flat.size, 1), _CHUNK):
        h.update(flat[j:j + _CHUNK])
    return h.digest()


def _short(x) -> str:
    """``repr(x)``, cut short: crafted manifests may hold huge values."""
    r = repr(x)
    return r if len(r) <= 80 else r[:77] + "..."


def _align(n: int) -> int:
    return -(-n // ALIGN) * ALIGN


def _bytes_view(a: np.ndarray) -> np.ndarray:
    return a.reshape(-1).view(np.uint8)


def _check_dtype(dtype: np.dtype, key: str, path) -> None:
    if dtype.kind not in _ALLOWED_KINDS or dtype.fields is not None or dtype.subdtype:
        raise CheckpointError(
            path, f"tensor '{key}' has dtype {dtype!r}; checkpoints hold only numeric, bool "
                  f"and fixed-width string arrays (no object dtypes: they would need pickle)")


def _little_endian(a: np.ndarray) -> np.ndarray:
    if a.dtype.byteorder == ">" or (a.dtype.byteorder == "=" and sys.byteorder == "big"):
        a = a.astype(a.dtype.newbyteorder("<"))
    # not np.ascontiguousarray: it turns 0-d arrays into shape (1,)
    return a if a.flags.c_contiguous else a.copy(order="C")


# ---- writing ------------------------------------------------------------------------------
def write_file(path, tensors: dict, meta=None) -> None:
    """Atomically write a checkpoint file.

    Args:
        path: destination file; its directory is created if needed.
        tensors: ``{key: array}``. The same array object under several keys is stored
            once and shared (shared variables).
        meta: any JSON-serialisable object stored in the manifest under ``"meta"``.

    Raises:
        CheckpointError: an array has a dtype that cannot be stored.
        OSError: the file cannot be written (the previous file at ``path`` is intact).
    """
    path = os.fspath(path)
    # ---- 1. layout: unique arrays at aligned offsets ----
    entries: dict[str, dict] = {}
    blobs: list[tuple[np.ndarray, dict]] = []   # (little-endian contiguous array, entry)
    by_id: dict[int, dict] = {}
    keep_alive = []   # ids stay unique only while the objects live
    end = 0
    for key, value in tensors.items():
        if not isinstance(key, str):
            raise TypeError(f"checkpoint tensor keys must be strings, received {key!r}")
        keep_alive.append(value)
        shared = by_id.get(id(value))
        if shared is not None:
            entries[key] = shared
            continue
        a = np.asarray(value)
        _check_dtype(a.dtype, key, path)
        a = _little_endian(a)
        offset = _align(end)
        entry = {"dtype": a.dtype.str, "shape": list(a.shape), "offset": offset,
                 "nbytes": int(a.nbytes), _CHECKSUM: "0" * 16}
        end = offset + a.nbytes
        entries[key] = by_id[id(value)] = entry
        blobs.append((a, entry))
    data_length = _align(end)

    def manifest_bytes() -> bytes:
        doc = {"format": FORMAT_NAME, "version": FORMAT_VERSION, "checksum": _CHECKSUM,
               "alignment": ALIGN, "tensors": entries, "meta": meta}
        return json.dumps(doc, separators=(",", ":"), ensure_ascii=True).encode("ascii")

    manifest = manifest_bytes()   # checksums are fixed-width hex: the length will not change
    data_offset = _align(HEADER_SIZE + len(manifest))
    file_length = data_offset + data_length

    # ---- 2. header and manifest placeholders, then the arrays ----
    with AtomicFile(path, buffering=0) as atomic:
        f = atomic.file
        write_all(f, memoryview(bytes(HEADER_SIZE)))
        write_all(f, memoryview(manifest))
        pos = HEADER_SIZE + len(manifest)
        zeros = bytes(ALIGN)
        for a, entry in blobs:
            target = data_offset + entry["offset"]
            write_all(f, memoryview(zeros[: target - pos]))
            write_all(f, memoryview(_bytes_view(a)))
            pos = target + entry["nbytes"]
        write_all(f, memoryview(bytes(file_length - pos)))
        # ---- 3. checksums, computed while the data is being flushed to disk ----
        # fsync is mostly waiting on the device; checksumming 120 MB during it instead of
        # before it took a save from 73% to ~90% of a raw write+fsync here. The final
        # sync after the manifest is written then has two pages left to flush.
        flusher = _Flusher(f.fileno()) if end > _OVERLAP_BYTES else None
        try:
            for a, entry in blobs:
                entry[_CHECKSUM] = f"{_digest(_bytes_view(a)):016x}"
        finally:
            if flusher is not None:
                flusher.join()
        # ---- 3. the real manifest and header, written over the placeholders ----
        final = manifest_bytes()
        assert len(final) == len(manifest), "manifest length changed while writing"
        head = _HEADER.pack(MAGIC, FORMAT_VERSION, HEADER_SIZE, len(final), zlib.crc32(final),
                            0, data_offset, data_length, file_length, 0)
        head = head[:-4] + struct.pack("<I", zlib.crc32(head[:-4]))
        os.pwrite(f.fileno(), final, HEADER_SIZE)
        os.pwrite(f.fileno(), head, 0)


# ---- reading ------------------------------------------------------------------------------
class CheckpointReader:
    """Random access to the arrays of one checkpoint file, validated on open.

    Opening checks the header, the file length and the manifest; each array's checksum is
    checked when it is read. Only the arrays asked for are read.

    Args:
        path: the checkpoint file.

    Raises:
        CheckpointNotFoundError: the file does not exist.
        CheckpointError: the path is a directory, not a layerkit checkpoint, truncated,
            or its header or manifest is corrupted.

    Examples:
        >>> import os, tempfile, layerkit as lk
        >>> ckpt = lk.Checkpoint(v=lk.Variable([1.0, 2.0]))
        >>> reader = CheckpointReader(ckpt.save(os.path.join(tempfile.mkdtemp(), "ckpt")))
        >>> reader.keys(), reader.shape("v")
        (['save_counter', 'v'], (2,))
    """

    def __init__(self, path: PathLike) -> None:
        self.path = os.fspath(path)
        if os.path.isdir(self.path):
            raise CheckpointError(self.path, "is a directory, not a checkpoint file (use "
                                             "lk.latest_checkpoint(directory) to find one)")
        try:
            self._f = open(self.path, "rb", buffering=0)
        except FileNotFoundError:
            raise CheckpointNotFoundError(self.path, "no such file") from None
        try:
            self._open()
        except BaseException:
            self._f.close()
            raise

    def _err(self, problem: str) -> CheckpointError:
        return CheckpointError(self.path, problem)

    def _open(self) -> None:
        size = os.fstat(self._f.fileno()).st_size
        head = self._f.read(HEADER_SIZE)
        n = min(len(head), len(MAGIC))
        if n == 0 or head[:n] != MAGIC[:n]:
            raise self._err("not a layerkit checkpoint (the file does not start with the "
                       "layerkit checkpoint magic bytes)")
        if len(head) < HEADER_SIZE:
            raise self._err(f"truncated: {size} bytes, shorter than the {HEADER_SIZE}-byte header")
        (_, version, header_size, mlen, mcrc, _flags, data_offset, data_length,
         file_length, hcrc) = _HEADER.unpack(head)
        if zlib.crc32(head[:-4]) != hcrc:
            raise self._err("corrupted header (header checksum mismatch)")
        if version > FORMAT_VERSION:
            raise self._err(f"format version {version} is newer than this layerkit reads "
                       f"(up to {FORMAT_VERSION}); upgrade layerkit")
        if size < file_length:
            raise self._err(f"truncated: the header says {file_length} bytes, the file has {size}")
        if size > file_length:
            raise self._err(f"has {size} bytes but the header says {file_length} "
                       f"(trailing data: not a complete checkpoint)")
        if (header_size != HEADER_SIZE or data_offset % ALIGN or data_offset < HEADER_SIZE + mlen
                or data_offset + data_length != file_length):
            raise self._err("corrupted header (inconsistent section offsets)")
        manifest = self._f.read(mlen)
        if zlib.crc32(manifest) != mcrc:
            raise self._err("corrupted manifest (manifest checksum mismatch)")
        try:
            doc = json.loads(manifest.decode("utf-8"))
        except RecursionError:
            raise self._err("the manifest is nested too deeply to be a checkpoint "
                            "manifest") from None
        except ValueError as e:   # also UnicodeDecodeError and over-long integers
            raise self._err(f"the manifest is not valid JSON ({e})") from None
        if not isinstance(doc, dict) or doc.get("format") != FORMAT_NAME:
            raise self._err("the manifest does not describe a layerkit checkpoint")
        if doc.get("checksum") != _CHECKSUM:
            raise self._err(f"unsupported checksum algorithm {_short(doc.get('checksum'))} "
                            f"(this layerkit knows {_CHECKSUM!r})")
        tensors = doc.get("tensors")
        if not isinstance(tensors, dict):
            raise self._err("the manifest has no 'tensors' table")
        self._entries = {}
        for key, e in tensors.items():
            self._entries[key] = self._check_entry(key, e, data_length)
        self._check_overlaps()
        self.version = version
        self.meta = doc.get("meta")
        self._data_offset = data_offset

    def _check_entry(self, key: str, e, data_length: int) -> tuple:
        bad = f"manifest entry for tensor '{key:.200}' is malformed"
        if not isinstance(e, dict):
            raise self._err(f"{bad} (a {type(e).__name__}, not an object)")
        missing = [f for f in ("dtype", "shape", "offset", "nbytes", _CHECKSUM) if f not in e]
        if missing:
            raise self._err(f"{bad} (no {', '.join(missing)})")
        shape, offset, nbytes, digest = e["shape"], e["offset"], e["nbytes"], e[_CHECKSUM]
        if not isinstance(e["dtype"], str) or len(e["dtype"]) > 32:
            raise self._err(f"{bad} (dtype {_short(e['dtype'])} is not a dtype string)")
        try:
            dtype = np.dtype(e["dtype"])
        except Exception:  # noqa: BLE001 - NumPy raises several types for bad strings
            raise self._err(f"{bad} (dtype {_short(e['dtype'])} is not a NumPy dtype)") \
                from None
        if not isinstance(digest, str) or not 1 <= len(digest) <= 16 or any(
                c not in "0123456789abcdefABCDEF" for c in digest):
            raise self._err(f"{bad} (checksum {_short(digest)} is not 16 hex digits)")
        if (not isinstance(shape, list) or len(shape) > 64
                or not all(type(s) is int and s >= 0 for s in shape)
                or type(offset) is not int or type(nbytes) is not int
                or offset < 0 or nbytes < 0):
            raise self._err(f"manifest entry for tensor '{key:.200}' has an invalid shape, "
                            f"offset or size: {_short(e)}")
        shape = tuple(shape)
        _check_dtype(dtype, key, self.path)
        if dtype.itemsize == 0:
            raise self._err(f"tensor '{key:.200}' has the zero-size dtype {dtype.str!r}")
        if math.prod(shape) * dtype.itemsize != nbytes:
            raise self._err(f"tensor '{key:.200}': shape {_short(shape)} and dtype {dtype} "
                            f"need {math.prod(shape) * dtype.itemsize} bytes, the manifest "
                            f"says {nbytes}")
        if offset + nbytes > data_length:
            raise self._err(f"tensor '{key:.200}' (offset {offset}, {nbytes} bytes) points "
                            f"past the end of the data area ({data_length} bytes)")
        return dtype, shape, offset, nbytes, int(digest, 16)

    def _check_overlaps(self) -> None:
        # The writer stores each array once; keys sharing an array share its whole entry.
        # Ranges that partly overlap were not written by layerkit.
        def span(e: tuple) -> tuple:
            return e[2], e[3], e[0].str, e[1]

        spans = sorted({span(e) for e in self._entries.values() if e[3]})
        for s1, s2 in zip(spans, spans[1:]):
            (o1, n1), (o2, n2) = s1[:2], s2[:2]
            if o2 < o1 + n1:
                k1, k2 = (next(k for k, e in self._entries.items() if span(e) == s)
                          for s in (s1, s2))
                raise self._err(f"tensors '{k1:.200}' (bytes {o1}..{o1 + n1}) and "
                                f"'{k2:.200}' (bytes {o2}..{o2 + n2}) overlap in the data "
                                f"area")

    # ---- queries ----
    def keys(self) -> list:
        """The tensor keys in file order."""
        return list(self._entries)

    def __contains__(self, key) -> bool:
        return key in self._entries

    def shape(self, key: str) -> tuple:
        return self._entry(key)[1]

    def dtype(self, key: str) -> np.dtype:
        return self._entry(key)[0]

    def _entry(self, key: str) -> tuple:
        try:
            return self._entries[key]
        except KeyError:
            raise KeyError(f"checkpoint '{self.path}' has no tensor '{key}'") from None

    # ---- array access ----
    def read(self, key: str) -> np.ndarray:
        """Read one array (a fresh, writable, native-endian copy) and verify its checksum.

        Raises:
            CheckpointError: the stored bytes do not match their checksum.
        """
        return self.read_many([key])[key]

    def read_many(self, keys: Iterable[str]) -> dict:
        """Read several arrays in file order, verifying each one's checksum.

        Arrays are placed in shared "slabs" of at least 16 MiB instead of one
        allocation each: NumPy asks for huge pages only from 4 MiB up, and 4 MB arrays
        each faulted in separately read 2x slower here. A slab stays allocated while any
        array in it is alive, so at most ~16 MiB beyond the arrays themselves is held.

        Returns:
            ``{key: array}`` (writable, native-endian arrays).

        Raises:
            CheckpointError: some array's bytes do not match their checksum.
        """
        keys = sorted(set(keys), key=lambda k: self._entry(k)[2])
        flats = {}
        total_bytes = sum(self._entries[k][3] for k in keys)
        with _Digester(threaded=total_bytes > _OVERLAP_BYTES) as digester:
            start = 0
            while start < len(keys):
                places, total, stop = [], 0, start
                while stop < len(keys) and (stop == start or total < _SLAB):
                    total = _align(total)
                    places.append(total)
                    total += self._entries[keys[stop]][3]
                    stop += 1
                slab = np.empty(total, np.uint8)
                for key, at in zip(keys[start:stop], places):
                    flats[key] = flat = slab[at:at + self._entries[key][3]]
                    self._read_into(key, flat, digester)
                start = stop
            digests = digester.results()
        out = {}
        for key in keys:
            dtype, shape, _, nbytes, expected = self._entries[key]
            if digests[key] != expected:
                raise self._err(f"tensor '{key}' is corrupted (checksum {digests[key]:016x}, "
                                f"the manifest says {expected:016x})")
            a = flats[key].view(dtype).reshape(shape) if nbytes else np.empty(shape, dtype)
            out[key] = a if dtype.isnative else a.astype(dtype.newbyteorder("="))
        return out

    def _read_into(self, key: str, flat: np.ndarray, digester: _Digester) -> None:
        self._f.seek(self._data_offset + self._entries[key][2])
        for i in range(0, max(flat.size, 1), _CHUNK):
            piece = flat[i:i + _CHUNK]
            view = memoryview(piece)
            while len(view):
                n = self._f.readinto(view)
                if not n:
                    raise self._err(f"truncated while reading tensor '{key}'")
                view = view[n:]
            digester.add(key, piece)

    def memmap(self, key: str) -> np.ndarray:
        """A read-only memory map of one array: nothing is copied or verified."""
        dtype, shape, offset, _, _ = self._entry(key)
        if math.prod(shape) == 0:
            return np.empty(shape, dtype)
        return np.memmap(self.path, dtype=dtype, mode="r", shape=shape,
                         offset=self._data_offset + offset)

    def verify(self) -> None:
        """Verify every array's checksum (raises :class:`CheckpointError` on a mismatch)."""
        for key in self.keys():
            self.read_many([key])

    def close(self) -> None:
        self._f.close()

    def __del__(self) -> None:
        # A reader kept open for lazily restored values closes when they are gone.
        f = self.__dict__.get("_f")
        if f is not None:
            f.close()

    def __enter__(self) -> CheckpointReader:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return (f"<CheckpointReader '{self.path}' "
                f"tensors={len(getattr(self, '_entries', ()))}>")
