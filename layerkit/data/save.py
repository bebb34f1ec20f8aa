"""Dataset.save and Dataset.load: a directory of checksummed record files and a JSON spec.

The format is documented in ``docs/data_save_format.md``. In short: ``path/`` holds
``dataset_spec.json`` (format tag, element spec, cardinality, one entry per shard with
its file name, element count and byte size) and one ``shard_<index>.lkrecords`` file
per shard index that ``shard_func`` returned, in the record format of ``Dataset.cache``
files (CRC-32 per block of up to 256 elements, ``.npy`` arrays, no pickle). Elements
keep their order within a shard. Everything is written into a temporary directory
beside ``path``, fsynced, and renamed into place, so ``path`` is either the complete
old save, the complete new one, or (only during the final swap over an older save) absent.
"""
from __future__ import annotations

import json
import os
import shutil

import numpy as np

from layerkit.data import structure as _st
from layerkit.data.cache import _fsync_dir, _Reader, _Writer
from layerkit.data.node import IterationContext, Node, NodeIterator, call_fn, fn_name

FORMAT = "layerkit.data.Dataset.save/1"
SPEC_FILE = "dataset_spec.json"
_BLOCK = 256


def _check_compression(compression, where: str) -> None:
    if compression not in (None, ""):
        raise ValueError(f"{where}: compression {compression!r} is not supported; only None "
                         f"(uncompressed records)")


def _shard_index(shard_func, elem, i: int) -> int:
    try:
        v = call_fn(shard_func, elem)
    except Exception as e:
        e.add_note(f"raised by {fn_name(shard_func)} in Dataset.save (shard_func) on "
                   f"element {i}")
        raise
    a = np.asarray(getattr(v, "_v", v))
    if a.shape != () or a.dtype.kind not in "iu" or int(a) < 0:
        raise ValueError(f"Dataset.save: shard_func must return a non-negative int64 scalar, "
                         f"received {a.dtype.name} {a.tolist()!r} for element {i}")
    return int(a)


def save(node: Node, path, compression=None, shard_func=None) -> None:
    """Write every element of ``node``'s dataset under ``path`` (see the module doc)."""
    _check_compression(compression, "Dataset.save")
    if shard_func is not None and not callable(shard_func):
        raise TypeError(f"Dataset.save: shard_func must be callable, received "
                        f"{type(shard_func).__name__}")
    path = os.path.abspath(os.fspath(path))
    spec = node.element_spec()
    parent = os.path.dirname(path)
    os.makedirs(parent, exist_ok=True)
    tmp = f"{path}.tmp-{os.getpid()}-{os.urandom(4).hex()}"
    os.mkdir(tmp)
    writers: dict = {}
    pending: dict = {}
    it = node.make_iterator(IterationContext())
    try:
        count = 0
        for elem in it:
            k = 0 if shard_func is None else _shard_index(shard_func, elem, count)
            if k not in writers:
                writers[k] = _Writer(os.path.join(tmp, f"shard_{k:05d}.lkrecords"))
                pending[k] = []
            rows = pending[k]
            rows.append(elem)
            if len(rows) >= _BLOCK:
                writers[k].write_block(rows)
                pending[k] = []
            count += 1
        shards = []
        for k in sorted(writers):
            w = writers.pop(k)
            w.commit(pending[k])
            shards.append({"index": k, "file": os.path.basename(w.path), "elements": w.count,
                           "bytes": os.path.getsize(w.path)})
        meta = {"format": FORMAT, "element_spec": _st.spec_to_json(spec), "cardinality": count,
                "compression": None, "shards": shards}
        text = json.dumps(meta, indent=1).encode()
        meta_path = os.path.join(tmp, SPEC_FILE)
        with open(meta_path, "wb") as f:
            f.write(text)
            f.write(b"\n")
            f.flush()
            os.fsync(f.fileno())
        _fsync_dir(meta_path)
        old = None
        if os.path.lexists(path):
            if not os.path.isdir(path) or (os.listdir(path) and not os.path.exists(
                    os.path.join(path, SPEC_FILE))):
                raise FileExistsError(f"Dataset.save: {path} exists and is not a saved "
                                      f"dataset; refusing to replace it")
            old = f"{path}.old-{os.getpid()}-{os.urandom(4).hex()}"
            os.rename(path, old)
        os.rename(tmp, path)
        _fsync_dir(path)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        for w in writers.values():
            w.abort()
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    finally:
        it.close()


def read_meta(path, element_spec=None, compression=None) -> tuple:
    """``(element spec, shard file nodes, cardinality)`` of a saved dataset."""
    _check_compression(compression, "Dataset.load")
    path = os.path.abspath(os.fspath(path))
    meta_path = os.path.join(path, SPEC_FILE)
    try:
        with open(meta_path, "rb") as f:
            meta = json.loads(f.read().decode())
    except FileNotFoundError:
        raise FileNotFoundError(f"Dataset.load: {path} holds no saved dataset (no "
                                f"{SPEC_FILE})") from None
    except (ValueError, UnicodeDecodeError) as e:
        raise ValueError(f"Dataset.load: {meta_path} is not valid JSON ({e})") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        got = meta.get("format") if isinstance(meta, dict) else type(meta).__name__
        raise ValueError(f"Dataset.load: {meta_path} is not a layerkit saved dataset of "
                         f"format {FORMAT!r} (received {got!r})")
    try:
        saved_spec = _st.spec_from_json(meta["element_spec"])
        shards = [(str(s["file"]), int(s["elements"]), int(s["bytes"]))
                  for s in meta["shards"]]
        cardinality = int(meta["cardinality"])
    except (KeyError, TypeError, ValueError) as e:
        raise ValueError(f"Dataset.load: {meta_path} is malformed ({type(e).__name__}: "
                         f"{e})") from None
    if element_spec is not None and not _specs_match(element_spec, saved_spec):
        raise ValueError(f"Dataset.load: element_spec {element_spec!r} does not match the "
                         f"saved {saved_spec!r} in {path}")
    spec = saved_spec if element_spec is None else element_spec
    nodes = []
    for name, n, size in shards:
        shard = os.path.join(path, name)
        if os.path.basename(name) != name or not os.path.isfile(shard):
            raise ValueError(f"Dataset.load: shard file {shard} named in {meta_path} is "
                             f"missing")
        if os.path.getsize(shard) != size:
            raise ValueError(f"Dataset.load: shard file {shard} has "
                             f"{os.path.getsize(shard)} bytes, {meta_path} says {size} "
                             f"(truncated or replaced)")
        nodes.append(ShardFileNode(shard, spec, n, size))
    if sum(n for _, n, _ in shards) != cardinality:
        raise ValueError(f"Dataset.load: {meta_path} is inconsistent: its shards hold "
                         f"{sum(n for _, n, _ in shards)} elements, its cardinality says "
                         f"{cardinality}")
    return spec, nodes, cardinality


def _specs_match(given, saved) -> bool:
    if not _st.same_structure(given, saved):
        return False
    return all(a.dtype == b.dtype and _st.shapes_compatible(a.shape, b.shape)
               for a, b in zip(_st.flatten(given), _st.flatten(saved)))


class _ShardReader(_Reader):
    where = "Dataset.load"
    kind = "saved dataset shard"
    advice = "save the dataset again"


class ShardFileNode(Node):
    """The elements of one shard file of a saved dataset."""

    name = "load_shard"

    def __init__(self, path: str, spec, count: int, size: int) -> None:
        super().__init__()
        self.path = path
        self.count = count
        self.size = size
        self._spec = spec

    def make_iterator(self, ctx):
        return ShardFileIterator(self)

    def cardinality(self) -> int:
        return self.count

    def _compute_spec(self):
        return self._spec

    def encode(self) -> dict:
        return {"kind": "load_shard", "path": self.path, "count": self.count,
                "size": self.size, "spec": _st.spec_to_json(self._spec)}

    @classmethod
    def decode(cls, obj: dict) -> ShardFileNode:
        return cls(str(obj["path"]), _st.spec_from_json(obj["spec"]), int(obj["count"]),
                   int(obj["size"]))


_st.DATASET_DECODERS["load_shard"] = ShardFileNode.decode


class ShardFileIterator(NodeIterator):
    __slots__ = ("_node", "_reader")
    kind = "load_shard"

    def __init__(self, node: ShardFileNode) -> None:
        self._node = node
        self._reader = _ShardReader.resumed(node.path, node.path, node.size)

    def __next__(self):
        return self._reader.next()

    def get_state(self) -> dict:
        return {"node": self.kind, "pos": self._reader.position()}

    def set_state(self, state: dict) -> None:
        self._check_state(state)
        self._reader.seek(state["pos"])

    def close(self) -> None:
        self._reader.close()
