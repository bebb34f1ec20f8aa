"""Atomic file writes: the one helper behind checkpoint files, checkpoint indexes and caches.

A file written with :class:`AtomicFile` appears at its path only complete: the bytes go
to a hidden temporary file in the same directory, which is flushed, fsynced and renamed
over the target, and then the directory is fsynced so that the rename itself survives a
power cut. A crash leaves the old file or the new one, never a mix.

A writer killed before its rename (SIGKILL, power cut) leaves its temporary file
behind. Temporary names carry the writer's host and process id,
``.{name}.tmp-{host}-{pid}-{token}``, so a later writer can tell a stale file (its
process is gone) from one being written right now: :func:`remove_stale_temps` deletes
only files of that exact pattern whose writer ran on this host and is dead. Every
:class:`AtomicFile` does so for its own target before it starts.

In a multi-process ``lk.distribute`` job only rank 0 writes (and cleans up): on the other
ranks an :class:`AtomicFile` discards what is written to it and leaves the file system
alone, so checkpoints, indexes and weights files come from rank 0 alone.

This module imports nothing from layerkit but :mod:`layerkit._core.distribution` (which
imports nothing), so any package (data included) may use it.
"""
from __future__ import annotations

import contextlib
import os
import re
import socket
import zlib

from layerkit._core import distribution

__all__ = ["AtomicFile", "atomic_write_bytes", "remove_stale_temps", "temp_path_for",
           "TMP_TAG"]

TMP_TAG = ".tmp-"
_HOST = f"{zlib.crc32(socket.gethostname().encode('utf-8', 'replace')):08x}"
_TEMP_RE = re.compile(r"^\.(?P<target>.+)\.tmp-(?P<host>[0-9a-f]{8})-(?P<pid>\d{1,10})"
                      r"-[0-9a-f]{8}$", re.DOTALL)


def temp_path_for(path, pid: int | None = None) -> str:
    """The hidden temporary name used while writing ``path`` (same directory, unique).

    Args:
        path: the target file.
        pid: the writer's process id (default this process); tests pass a dead one.
    """
    directory, base = os.path.split(os.path.abspath(os.fspath(path)))
    pid = os.getpid() if pid is None else int(pid)
    return os.path.join(directory, f".{base}{TMP_TAG}{_HOST}-{pid}-{os.urandom(4).hex()}")


def _pid_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True   # another write in this process may be using it
    if pid <= 0:
        return True   # never probe process groups
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:   # EPERM: it exists but belongs to someone else; be safe
        return True
    return True


def remove_stale_temps(directory, target) -> list[str]:
    """Delete the temporary files left in ``directory`` by dead writers of ``target``.

    Only names of this module's own pattern are considered, only those written on this
    host, and only when their writer process no longer exists; nothing else is touched.

    Args:
        directory: the directory to clean.
        target: the written file's base name (``'ckpt-3'``), or a predicate on base names
            (a manager cleans up after every numbered checkpoint it writes).

    Returns:
        the paths removed.
    """
    directory = os.fspath(directory)
    match = target.__eq__ if isinstance(target, str) else target
    removed: list = []
    if not distribution.writes_files():
        return removed
    try:
        names = os.listdir(directory)
    except OSError:
        return removed
    for name in names:
        m = _TEMP_RE.match(name)
        if (m is None or m["host"] != _HOST or not match(m["target"])
                or _pid_alive(int(m["pid"]))):
            continue
        p = os.path.join(directory, name)
        with contextlib.suppress(OSError):
            if os.path.isfile(p) and not os.path.islink(p):
                os.remove(p)
                removed.append(p)
    return removed


def fsync_dir(directory) -> None:
    """fsync a directory, making renames and creations in it durable (best effort: not
    every platform lets a directory be opened)."""
    try:
        fd = os.open(os.fspath(directory), os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


class AtomicFile:
    """A binary file that replaces ``path`` atomically when committed.

    Use it as a context manager (commit on success, abort on an exception) or call
    :meth:`commit` / :meth:`abort` yourself (a writer that outlives one block).

    Args:
        path: the target file; its directory is created if needed.
        buffering: passed to ``open`` (0 gives a raw file, as checkpoints use).

    Attributes:
        file: the open temporary file to write to.
        path: the absolute target path.
        tmp: the temporary file's path.

    Examples:
        >>> import os, tempfile
        >>> p = os.path.join(tempfile.mkdtemp(), "out.bin")
        >>> with AtomicFile(p) as f:
        ...     _ = f.file.write(b"all or nothing")
        >>> open(p, "rb").read()
        b'all or nothing'
    """

    def __init__(self, path, buffering: int = -1) -> None:
        self.path = os.path.abspath(os.fspath(path))
        self._done = False
        if not distribution.writes_files():   # lk.distribute: rank 0 writes this file
            self.tmp = None
            self.file = open(os.devnull, "wb", buffering=buffering)
            return
        directory, base = os.path.split(self.path)
        os.makedirs(directory, exist_ok=True)
        remove_stale_temps(directory, base)
        self.tmp = temp_path_for(self.path)
        self.file = open(self.tmp, "xb", buffering=buffering)   # never follows a symlink

    def commit(self) -> None:
        """Flush, fsync and rename the temporary file over the target; fsync the directory.

        Raises:
            OSError: the data could not be made durable or renamed (the temporary file is
                removed and the previous file at ``path`` is intact).
        """
        if self._done:
            return
        if self.tmp is None:   # not the writing rank
            self._done = True
            self.file.close()
            return
        try:
            self.file.flush()
            os.fsync(self.file.fileno())
            self.file.close()
            os.replace(self.tmp, self.path)
        except BaseException:
            self.abort()
            raise
        self._done = True
        fsync_dir(os.path.dirname(self.path))

    def abort(self) -> None:
        """Close and delete the temporary file; the target is left as it was."""
        if self._done:
            return
        self._done = True
        try:
            self.file.close()
        finally:
            if self.tmp is not None:
                with contextlib.suppress(OSError):
                    os.unlink(self.tmp)

    def __enter__(self) -> AtomicFile:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.commit()
        else:
            self.abort()


def atomic_write_bytes(path, data) -> None:
    """Write ``data`` (bytes-like) to ``path`` atomically (see :class:`AtomicFile`)."""
    with AtomicFile(path, buffering=0) as f:
        write_all(f.file, memoryview(data))


def write_all(f, mv: memoryview) -> None:
    """Write all of ``mv`` to a raw file (``FileIO.write`` may write fewer bytes)."""
    mv = mv.cast("B") if mv.format != "B" or mv.ndim != 1 else mv
    while len(mv):
        n = f.write(mv)
        mv = mv[n:]
