"""The per-directory checkpoint index (``checkpoint_index.json``) and ``latest_checkpoint``.

The index names the latest checkpoint of a directory and the checkpoints a
:class:`CheckpointManager` manages, with their save times. It is small JSON, rewritten
atomically (temporary file, fsync, rename) after each save, so a crash leaves the old
or the new index, each naming only complete checkpoint files.
"""
from __future__ import annotations

import json
import os
import time

from layerkit.checkpoint.format import CheckpointError, atomic_write_bytes

__all__ = ["latest_checkpoint", "INDEX_NAME"]

INDEX_NAME = "checkpoint_index.json"
_INDEX_FORMAT = "layerkit-checkpoint-index"
_clock = time.time   # a seam for tests of keep_checkpoint_every_n_hours


def index_path(directory) -> str:
    return os.path.join(os.fspath(directory), INDEX_NAME)


def _rel(directory: str, path: str) -> str:
    path = os.path.abspath(path)
    rel = os.path.relpath(path, os.path.abspath(directory))
    return path if rel.startswith(os.pardir) else rel


def _abs(directory: str, path: str) -> str:
    return path if os.path.isabs(path) else os.path.join(directory, path)


def read_index(directory) -> dict | None:
    """The index of ``directory`` with absolute paths, or None if there is none.

    Raises:
        CheckpointError: the index exists but is not a valid layerkit index.
    """
    directory = os.fspath(directory)
    p = index_path(directory)
    try:
        with open(p, "rb") as f:
            raw = f.read()
    except FileNotFoundError:
        return None
    try:
        doc = json.loads(raw.decode("utf-8"))
        if doc.get("format") != _INDEX_FORMAT:
            raise ValueError("not a layerkit checkpoint index")
        return {
            "latest": _abs(directory, doc["latest"]) if doc.get("latest") else None,
            "checkpoints": [(_abs(directory, e["path"]), float(e["time"]))
                            for e in doc.get("checkpoints", [])],
            "last_preserved_time": doc.get("last_preserved_time"),
        }
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        raise CheckpointError(p, f"the checkpoint index is unreadable ({e})") from None


def write_index(directory, latest: str | None, checkpoints, last_preserved_time=None) -> None:
    """Atomically replace the index of ``directory``."""
    directory = os.fspath(directory)
    doc = {"format": _INDEX_FORMAT, "version": 1,
           "latest": _rel(directory, latest) if latest else None,
           "checkpoints": [{"path": _rel(directory, p), "time": t} for p, t in checkpoints],
           "last_preserved_time": last_preserved_time}
    atomic_write_bytes(index_path(directory), json.dumps(doc, indent=1).encode("utf-8"))


def record_save(path) -> None:
    """Note ``path`` as the newest checkpoint of its directory (used by Checkpoint.save)."""
    path = os.path.abspath(os.fspath(path))
    directory = os.path.dirname(path)
    old = read_index(directory) or {"checkpoints": [], "last_preserved_time": None}
    entries = [(p, t) for p, t in old["checkpoints"] if p != path] + [(path, _clock())]
    write_index(directory, path, entries, old["last_preserved_time"])


def latest_checkpoint(directory) -> str | None:
    """The path of the newest checkpoint recorded in ``directory``, or None.

    Checkpoints are recorded by ``Checkpoint.save`` and ``CheckpointManager.save``.
    An entry whose file has been deleted is skipped.

    Args:
        directory: the directory the checkpoints were saved in.

    Returns:
        a path to pass to ``Checkpoint.restore``, or None if there is no checkpoint.

    Raises:
        CheckpointError: the directory's index file is corrupted.
    """
    index = read_index(directory)
    if index is None:
        return None
    candidates = [index["latest"]] if index["latest"] else []
    candidates += [p for p, _ in reversed(index["checkpoints"])]
    for p in candidates:
        if os.path.isfile(p):
            return p
    return None
