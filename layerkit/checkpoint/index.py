"""The per-directory checkpoint index (``checkpoint_index.json``) and ``latest_checkpoint``.

The index names the latest checkpoint of a directory and the checkpoints a
:class:`CheckpointManager` manages, with their save times. It is small JSON, rewritten
atomically (temporary file, fsync, rename) after each save, so a crash leaves the old
or the new index, each naming only complete checkpoint files.

The index is untrusted input: anyone who can write the directory can write it. An
entry is used only if it names a checkpoint the way layerkit writes them, a plain file
name ``{prefix}-{number}`` inside the directory (no path separators, no absolute or
``..`` paths, no symbolic link leading out of the directory), with a finite numeric
time. Any other entry is reported with a warning and ignored, so nothing outside the
directory is ever read or deleted because of what an index says. An index that is not
an index at all (not JSON, too large, the wrong format) is refused with a
:class:`CheckpointError` naming it.
"""
from __future__ import annotations

import json
import math
import os
import re
import time
import warnings

from layerkit._core.atomic import atomic_write_bytes
from layerkit._core.types import PathLike
from layerkit.checkpoint.format import CheckpointError

__all__ = ["latest_checkpoint", "INDEX_NAME", "checkpoint_name_re"]

INDEX_NAME = "checkpoint_index.json"
_INDEX_FORMAT = "layerkit-checkpoint-index"
# Far above any real index (an entry is ~50 bytes): a bigger file is not one of ours.
MAX_INDEX_BYTES = 16 << 20
_NUMBERED = re.compile(r"-?\d+")
_clock = time.time   # a seam for tests of keep_checkpoint_every_n_hours


def index_path(directory) -> str:
    return os.path.join(os.fspath(directory), INDEX_NAME)


def checkpoint_name_re(prefix: str | None = None) -> re.Pattern:
    """The file names ``{prefix}-{number}`` that checkpoints are saved under (any plain
    prefix when ``prefix`` is None)."""
    head = re.escape(prefix) if prefix is not None else r"[^/\\\x00]+"
    return re.compile(rf"{head}-{_NUMBERED.pattern}")


_ANY_CHECKPOINT = checkpoint_name_re()


def entry_problem(directory: str, name) -> str | None:
    """Why ``name`` may not be used as a checkpoint of ``directory`` (None if it may).

    A usable name is a string naming a file directly inside ``directory`` in the form
    layerkit saves checkpoints under; if that file is a symbolic link, it must lead to a
    file inside ``directory`` too.
    """
    if not isinstance(name, str):
        return f"the path is a {type(name).__name__}, not a string"
    if (not name or name in (os.curdir, os.pardir) or os.sep in name
            or (os.altsep and os.altsep in name) or "\x00" in name or os.path.isabs(name)):
        return "not a plain file name inside the checkpoint directory"
    if _ANY_CHECKPOINT.fullmatch(name) is None:
        return "not a checkpoint name of the form '{prefix}-{number}'"
    p = os.path.join(directory, name)
    if os.path.islink(p):
        real = os.path.realpath(p)
        if os.path.dirname(real) != os.path.realpath(directory):
            return f"a symbolic link leading out of the checkpoint directory (to '{real}')"
    return None


def _time_problem(t) -> str | None:
    if type(t) not in (int, float) or not math.isfinite(t):
        return f"its time {t!r:.60} is not a finite number"
    return None


def _short(x) -> str:
    r = repr(x)
    return r if len(r) <= 80 else r[:77] + "..."


def _read_doc(p: str):
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(p, flags)
    except FileNotFoundError:
        return None
    except OSError as e:   # ELOOP: the index itself is a symbolic link
        if os.path.islink(p):
            raise CheckpointError(p, "the checkpoint index is a symbolic link; refusing to "
                                     "follow it (delete it to start a new index)") from None
        raise CheckpointError(p, f"the checkpoint index cannot be read ({e})") from None
    with open(fd, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size > MAX_INDEX_BYTES:
            raise CheckpointError(p, f"the checkpoint index is {size} bytes, more than any "
                                     f"index layerkit writes ({MAX_INDEX_BYTES} bytes); "
                                     f"refusing to read it")
        raw = f.read(MAX_INDEX_BYTES + 1)
    try:
        doc = json.loads(raw.decode("utf-8"))
    except RecursionError:
        raise CheckpointError(p, "the checkpoint index is unreadable (nested too deeply "
                                 "to be an index)") from None
    except ValueError as e:   # also UnicodeDecodeError and over-long integers
        raise CheckpointError(p, f"the checkpoint index is unreadable ({e})") from None
    if not isinstance(doc, dict) or doc.get("format") != _INDEX_FORMAT:
        raise CheckpointError(p, "the checkpoint index is unreadable (not a layerkit "
                                 "checkpoint index)")
    if not isinstance(doc.get("checkpoints", []), list):
        raise CheckpointError(p, "the checkpoint index is unreadable ('checkpoints' is a "
                                 f"{type(doc['checkpoints']).__name__}, not a list)")
    return doc


def read_index(directory) -> dict | None:
    """The index of ``directory`` with absolute paths, or None if there is none.

    Entries that do not name a checkpoint file inside ``directory`` (see the module
    docstring) are left out, with one warning listing them.

    Returns:
        ``{"latest": path or None, "checkpoints": [(path, time), ...],
        "last_preserved_time": float or None}``.

    Raises:
        CheckpointError: the index exists but is not a layerkit index.
    """
    directory = os.fspath(directory)
    p = index_path(directory)
    doc = _read_doc(p)
    if doc is None:
        return None
    bad: list[str] = []
    checkpoints = []
    for e in doc.get("checkpoints", []):
        if not isinstance(e, dict) or "path" not in e or "time" not in e:
            bad.append(f"{_short(e)}: not an object with 'path' and 'time'")
            continue
        problem = entry_problem(directory, e["path"]) or _time_problem(e["time"])
        if problem:
            bad.append(f"{_short(e['path'])}: {problem}")
        else:
            checkpoints.append((os.path.join(directory, e["path"]), float(e["time"])))
    latest = doc.get("latest")
    if latest is not None:
        problem = entry_problem(directory, latest)
        if problem:
            bad.append(f"latest {_short(latest)}: {problem}")
            latest = None
        else:
            latest = os.path.join(directory, latest)
    kept = doc.get("last_preserved_time")
    if kept is not None and _time_problem(kept):
        bad.append(f"last_preserved_time {_short(kept)}: not a finite number")
        kept = None
    if bad:
        more = f" (and {len(bad) - 10} more)" if len(bad) > 10 else ""
        warnings.warn(f"checkpoint '{p}': ignoring {len(bad)} invalid entr"
                      f"{'y' if len(bad) == 1 else 'ies'} of the checkpoint index: "
                      + "; ".join(bad[:10]) + more, UserWarning, stacklevel=3)
    return {"latest": latest, "checkpoints": checkpoints, "last_preserved_time": kept}


def write_index(directory, latest: str | None, checkpoints, last_preserved_time=None) -> None:
    """Atomically replace the index of ``directory``.

    Args:
        directory: the checkpoint directory.
        latest: the newest checkpoint's path (inside ``directory``) or None.
        checkpoints: ``[(path, time), ...]`` of files inside ``directory``.
        last_preserved_time: the manager's keep_checkpoint_every_n_hours bookkeeping.
    """
    directory = os.fspath(directory)
    doc = {"format": _INDEX_FORMAT, "version": 1,
           "latest": os.path.basename(latest) if latest else None,
           "checkpoints": [{"path": os.path.basename(p), "time": t} for p, t in checkpoints],
           "last_preserved_time": last_preserved_time}
    atomic_write_bytes(index_path(directory), json.dumps(doc, indent=1).encode("utf-8"))


def record_save(path) -> None:
    """Note ``path`` as the newest checkpoint of its directory (used by Checkpoint.save)."""
    path = os.path.abspath(os.fspath(path))
    directory = os.path.dirname(path)
    old = read_index(directory) or {"checkpoints": [], "last_preserved_time": None}
    entries = [(p, t) for p, t in old["checkpoints"] if os.path.abspath(p) != path]
    write_index(directory, path, entries + [(path, _clock())], old["last_preserved_time"])


def latest_checkpoint(directory: PathLike) -> str | None:
    """The path of the newest checkpoint recorded in ``directory``, or None.

    Checkpoints are recorded by ``Checkpoint.save`` and ``CheckpointManager.save``.
    An entry whose file has been deleted is skipped, and so is any entry that does not
    name a checkpoint file inside ``directory`` (with a warning).

    Args:
        directory: the directory the checkpoints were saved in.

    Returns:
        a path to pass to ``Checkpoint.restore``, or None if there is no checkpoint.

    Raises:
        CheckpointError: the directory's index file is not a checkpoint index.

    Examples:
        >>> import tempfile, layerkit as lk
        >>> d = tempfile.mkdtemp()
        >>> print(lk.latest_checkpoint(d))
        None
        >>> path = lk.Checkpoint(v=lk.Variable(1.0)).save(d + "/ckpt")
        >>> lk.latest_checkpoint(d) == path
        True
    """
    directory = os.fspath(directory)
    index = read_index(directory)
    if index is None:
        return None
    candidates = [index["latest"]] if index["latest"] else []
    candidates += [p for p, _ in reversed(index["checkpoints"])]
    for p in candidates:
        if os.path.isfile(p):
            return p
    return None
