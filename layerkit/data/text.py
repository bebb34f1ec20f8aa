"""TextLineDataset's node: the lines of text files, as bytes scalars without the newline."""
from __future__ import annotations

import gzip
import os

import numpy as np

from layerkit._core.op import wrap
from layerkit.data import structure as _st
from layerkit.data.node import UNKNOWN, Node, NodeIterator


class TextLineNode(Node):
    """Lines of ``filenames`` in order; ``\\n`` and ``\\r\\n`` endings are removed."""

    name = "TextLineDataset"

    def __init__(self, filenames: list, compression_type, buffer_size) -> None:
        super().__init__()
        ct = (compression_type or "").upper()
        if ct not in ("", "GZIP"):
            raise ValueError(f"TextLineDataset: compression_type must be None, '' or 'GZIP', "
                             f"received {compression_type!r}")
        self.filenames = filenames
        self.gzip = ct == "GZIP"
        self.buffer_size = int(buffer_size) if buffer_size else 256 * 1024

    def make_iterator(self, ctx):
        return TextLineIterator(self)

    def cardinality(self) -> int:
        return 0 if not self.filenames else UNKNOWN

    def _compute_spec(self):
        return _st.TensorSpec((), np.dtype("S"))

    def open(self, i: int):
        path = self.filenames[i]
        try:
            if self.gzip:
                return gzip.open(path, "rb")
            return open(path, "rb", buffering=self.buffer_size)
        except OSError as e:
            raise type(e)(f"TextLineDataset: cannot open {path}: {e.strerror or e}") from None


class TextLineIterator(NodeIterator):
    __slots__ = ("_node", "_file", "_f", "_offset")
    kind = "TextLineDataset"

    def __init__(self, node: TextLineNode) -> None:
        self._node = node
        self._file = 0
        self._f = None
        self._offset = 0  # byte offset of the next line in the current file

    def __next__(self):
        node = self._node
        while self._file < len(node.filenames):
            f = self._f
            if f is None:
                f = self._f = node.open(self._file)
                if self._offset:
                    f.seek(self._offset)
            line = f.readline()
            if line:
                self._offset += len(line)
                if line.endswith(b"\n"):
                    line = line[:-2] if line.endswith(b"\r\n") else line[:-1]
                return wrap(np.array(line))
            f.close()
            self._f = None
            self._file += 1
            self._offset = 0
        raise StopIteration

    def get_state(self) -> dict:
        return {"node": self.kind, "file": self._file, "offset": self._offset}

    def set_state(self, state: dict) -> None:
        self._check_state(state)
        self.close()
        self._file, self._offset = int(state["file"]), int(state["offset"])

    def close(self) -> None:
        if self._f is not None:
            self._f.close()
            self._f = None


def filename_list(filenames) -> list:
    """File names from a str/bytes/PathLike, a list of them, or a 1-D string tensor."""
    if isinstance(filenames, (str, bytes, os.PathLike)):
        return [os.fsdecode(filenames)]
    if hasattr(filenames, "_v"):
        filenames = np.asarray(filenames._v)
    if isinstance(filenames, np.ndarray):
        filenames = filenames.reshape(-1).tolist()
    out = []
    for f in filenames:
        if hasattr(f, "_v"):
            f = np.asarray(f._v).item()
        out.append(os.fsdecode(f))
    return out
