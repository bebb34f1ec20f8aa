"""TensorBoard event files, written directly (no TensorFlow, no protobuf package).

An event file is a sequence of TFRecord records, each::

    uint64 length | uint32 masked_crc32c(length bytes) | data | uint32 masked_crc32c(data)

(little-endian), where ``data`` is a serialized ``tensorflow.Event`` protocol buffer.
The first event carries ``file_version = "brain.Event:2"``. This module encodes the few
messages layerkit writes by hand: scalar summaries (``Summary.Value.simple_value``),
histograms (``HistogramProto``), tensor summaries with plugin metadata (``TensorProto`` +
``SummaryMetadata``, what ``tf.summary`` writes) and a ``GraphDef`` of named nodes with inputs and
attributes. Field numbers follow tensorflow/core/util/event.proto,
framework/summary.proto, framework/graph.proto, node_def.proto, attr_value.proto and
tensor_shape.proto. TensorBoard reads these files as it reads TensorFlow's.
"""
from __future__ import annotations

import itertools
import os
import struct
import time
from typing import BinaryIO

import numpy as np

__all__ = ["EventFileWriter", "crc32c", "masked_crc32c", "graph_def", "node_def"]


# ---- CRC-32C (Castagnoli), as TFRecord uses it ------------------------------------------------
def _make_table() -> list:
    poly = 0x82F63B78  # the reversed Castagnoli polynomial
    table = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ poly if c & 1 else c >> 1
        table.append(c)
    return table


_TABLE = _make_table()


def crc32c(data: bytes) -> int:
    """CRC-32C of ``data`` (``crc32c(b"123456789") == 0xE3069283``)."""
    crc = 0xFFFFFFFF
    table = _TABLE
    for byte in data:
        crc = table[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def masked_crc32c(data: bytes) -> int:
    """TFRecord's masked CRC: rotate right by 15 bits and add a constant."""
    crc = crc32c(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def record(data: bytes) -> bytes:
    """One TFRecord: length, its masked CRC, the data, the data's masked CRC."""
    header = struct.pack("<Q", len(data))
    return (header + struct.pack("<I", masked_crc32c(header)) + data
            + struct.pack("<I", masked_crc32c(data)))


# ---- protocol buffer encoding (only what the messages below need) ----------------------------
def _varint(n: int) -> bytes:
    n &= 0xFFFFFFFFFFFFFFFF  # negative int64 values are sent as 64-bit two's complement
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _key(field: int, wire: int) -> bytes:
    return _varint(field << 3 | wire)


def _int(field: int, n: int) -> bytes:
    return _key(field, 0) + _varint(int(n))


def _double(field: int, x: float) -> bytes:
    return _key(field, 1) + struct.pack("<d", float(x))


def _float(field: int, x: float) -> bytes:
    return _key(field, 5) + struct.pack("<f", float(x))


def _bytes(field: int, b) -> bytes:
    if isinstance(b, str):
        b = b.encode("utf-8")
    return _key(field, 2) + _varint(len(b)) + b


def _packed_doubles(field: int, values) -> bytes:
    return _bytes(field, np.asarray(values, dtype="<f8").tobytes())


def _histogram(values) -> bytes:
    """A ``HistogramProto`` of 30 equal-width buckets between min and max."""
    v = np.asarray(values, dtype=np.float64).ravel()
    v = v[np.isfinite(v)]
    if v.size == 0:
        v = np.zeros(1)
    lo, hi = float(np.min(v)), float(np.max(v))
    counts, edges = np.histogram(v, bins=30, range=(lo, hi) if hi > lo else (lo - 0.5, lo + 0.5))
    return (_double(1, lo) + _double(2, hi) + _double(3, v.size) + _double(4, float(np.sum(v)))
            + _double(5, np.dot(v, v)) + _packed_doubles(6, edges[1:])
            + _packed_doubles(7, counts))


# TensorProto dtypes (tensorflow/core/framework/types.proto) of the arrays tensor summaries hold
_DT = {np.dtype(np.float32): 1, np.dtype(np.float64): 2, np.dtype(np.int32): 3,
       np.dtype(np.uint8): 4, np.dtype(np.int64): 9, np.dtype(np.bool_): 10}
_DT_STRING = 7


def _tensor(value) -> bytes:
    """A ``TensorProto``: dtype, shape, then the little-endian bytes in ``tensor_content``
    (numbers) or one ``string_val`` per element (str/bytes arrays, UTF-8)."""
    a = np.asarray(value)
    if a.dtype.kind in "USO":
        items = [x if isinstance(x, bytes) else str(x).encode("utf-8") for x in a.ravel()]
        return (_int(1, _DT_STRING) + _bytes(2, _shape(a.shape))
                + b"".join(_bytes(8, x) for x in items))
    if a.dtype not in _DT:
        raise TypeError(f"tensor summaries hold float32, float64, int32, int64, uint8, bool "
                        f"or string arrays; received dtype {a.dtype}")
    le = a.astype(a.dtype.newbyteorder("<"), copy=False)
    return (_int(1, _DT[a.dtype]) + _bytes(2, _shape(a.shape))
            + _bytes(4, np.ascontiguousarray(le).tobytes()))


def _shape(dims) -> bytes:
    """A ``TensorShapeProto``; None dimensions are -1 (unknown)."""
    return b"".join(_bytes(2, _int(1, -1 if d is None else d)) for d in dims)


def _attr(value) -> bytes:
    """An ``AttrValue``: str -> s, bool -> b, int -> i, float -> f, a list of shapes
    (tuples) -> list.shape."""
    if isinstance(value, str):
        return _bytes(2, value)
    if isinstance(value, bool):
        return _int(5, value)
    if isinstance(value, int):
        return _int(3, value)
    if isinstance(value, float):
        return _float(4, value)
    if isinstance(value, list):
        return _bytes(1, b"".join(_bytes(7, _shape(s)) for s in value))
    raise TypeError(f"graph attribute values are str, bool, int, float or a list of shapes; "
                    f"received {type(value).__name__}")


def node_def(name: str, op: str, inputs=(), attrs: dict | None = None) -> bytes:
    """A serialized ``NodeDef``: name, op, input node names and attributes."""
    body = _bytes(1, name) + _bytes(2, op) + b"".join(_bytes(3, i) for i in inputs)
    for k, v in (attrs or {}).items():
        body += _bytes(5, _bytes(1, k) + _bytes(2, _attr(v)))
    return body


def graph_def(nodes) -> bytes:
    """A serialized ``GraphDef`` from serialized ``NodeDef`` messages."""
    return b"".join(_bytes(1, n) for n in nodes) + _bytes(4, _int(1, 1))


# ---- the writer -------------------------------------------------------------------------------
_UIDS = itertools.count()


class EventFileWriter:
    """Appends events to a new ``events.out.tfevents.*`` file in ``logdir``.

    Args:
        logdir: the directory (created if needed); TensorBoard shows one run per
            directory.
        filename_suffix: the end of the file's name (TensorFlow's default ``.v2``).

    Examples:
        >>> import tempfile
        >>> w = EventFileWriter(tempfile.mkdtemp())
        >>> w.add_scalar("loss", 0.5, step=1)
        >>> w.close()
    """

    def __init__(self, logdir, filename_suffix: str = ".v2") -> None:
        import socket

        self.logdir = os.fspath(logdir)
        os.makedirs(self.logdir, exist_ok=True)
        name = (f"events.out.tfevents.{int(time.time()):010d}.{socket.gethostname()}."
                f"{os.getpid()}.{next(_UIDS)}{filename_suffix}")
        self.path = os.path.join(self.logdir, name)
        self._f: BinaryIO | None = open(self.path, "wb")
        self._event(_bytes(3, "brain.Event:2"), step=0)
        self.flush()

    def _event(self, what: bytes, step: int) -> None:
        if self._f is None:
            raise ValueError(f"EventFileWriter for {self.logdir!r} is closed")
        self._f.write(record(_double(1, time.time()) + _int(2, step) + what))

    def _summary(self, tag: str, value_field: bytes, step: int) -> None:
        self._event(_bytes(5, _bytes(1, _bytes(1, tag) + value_field)), step)

    def add_scalar(self, tag: str, value, step: int) -> None:
        """A scalar summary (``simple_value``) at ``step``."""
        self._summary(tag, _float(2, float(value)), step)

    def add_histogram(self, tag: str, values, step: int) -> None:
        """A histogram of ``values`` (30 equal-width buckets) at ``step``."""
        self._summary(tag, _bytes(5, _histogram(values)), step)

    def add_tensor(self, tag: str, value, step: int, plugin_name: str,
                   description: str | None = None) -> None:
        """A tensor summary at ``step``, as ``tf.summary`` writes it: the array ``value``
        (see :func:`_tensor`) with ``SummaryMetadata`` naming the TensorBoard plugin
        (``scalars``, ``histograms``, ``images``, ``text``) that shows it."""
        meta = _bytes(1, _bytes(1, plugin_name))
        if description:
            meta += _bytes(3, description)
        self._summary(tag, _bytes(9, meta) + _bytes(8, _tensor(value)), step)

    def add_graph(self, graph: bytes) -> None:
        """A serialized ``GraphDef`` (see :func:`graph_def`)."""
        self._event(_bytes(4, graph), step=0)

    def flush(self) -> None:
        if self._f is not None:
            self._f.flush()

    def close(self) -> None:
        if self._f is not None:
            self._f.close()
            self._f = None

    def __repr__(self) -> str:
        return f"<EventFileWriter {self.path!r}{' closed' if self._f is None else ''}>"
