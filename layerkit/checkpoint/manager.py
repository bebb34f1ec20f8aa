"""``lk.CheckpointManager``: numbered saves in a directory, with rotation."""
from __future__ import annotations

import contextlib
import os
from typing import Any

from layerkit._core import distribution
from layerkit._core.atomic import remove_stale_temps
from layerkit._core.types import PathLike
from layerkit.checkpoint import index as _index
from layerkit.checkpoint.checkpoint import Checkpoint

__all__ = ["CheckpointManager"]


class CheckpointManager:
    """Keep the last few checkpoints of a :class:`Checkpoint` in a directory.

    Each :meth:`save` writes ``{directory}/{checkpoint_name}-{n}`` atomically, then
    rewrites the directory's index atomically, then deletes checkpoints beyond
    ``max_to_keep`` (oldest first). A crash at any point leaves the index naming only
    complete files. A manager created on a directory that already has an index takes
    over the checkpoints in it that carry its own ``checkpoint_name`` (and their
    rotation). The index is untrusted: the manager only ever reads or deletes files
    named ``{checkpoint_name}-{number}`` directly inside ``directory``; any other entry
    is reported with a warning and ignored (see :mod:`layerkit.checkpoint.index`).

    Under ``lk.distribute`` every rank calls :meth:`save` (and gets the same path back)
    but only rank 0 writes and deletes files.

    Args:
        checkpoint: the :class:`Checkpoint` to save.
        directory: where to save; created if needed.
        max_to_keep: how many recent checkpoints to keep (None keeps all).
        keep_checkpoint_every_n_hours: additionally keep (never delete) one checkpoint
            per this many hours of saving, as in TensorFlow.
        checkpoint_name: the file prefix inside ``directory``.

    Examples:
        >>> import os, tempfile, layerkit as lk
        >>> ckpt = lk.Checkpoint(v=lk.Variable([1.0, 2.0]))
        >>> manager = lk.CheckpointManager(ckpt, tempfile.mkdtemp(), max_to_keep=3)
        >>> print(manager.latest_checkpoint)          # None on the first run
        None
        >>> status = ckpt.restore(manager.latest_checkpoint)   # restore(None) is a no-op
        >>> os.path.basename(manager.save())
        'ckpt-1'
    """

    def __init__(self, checkpoint: Checkpoint, directory: PathLike, max_to_keep: int | None = 5,
                 keep_checkpoint_every_n_hours: float | None = None,
                 checkpoint_name: str = "ckpt") -> None:
        if not isinstance(checkpoint, Checkpoint):
            raise TypeError(f"CheckpointManager: expected an lk.Checkpoint, received "
                            f"{type(checkpoint).__name__}")
        if max_to_keep is not None and (not isinstance(max_to_keep, int) or max_to_keep < 1):
            raise ValueError(f"CheckpointManager: max_to_keep must be a positive int or None, "
                             f"received {max_to_keep!r}")
        if keep_checkpoint_every_n_hours is not None and keep_checkpoint_every_n_hours <= 0:
            raise ValueError(f"CheckpointManager: keep_checkpoint_every_n_hours must be "
                             f"positive, received {keep_checkpoint_every_n_hours!r}")
        if (not isinstance(checkpoint_name, str) or not checkpoint_name
                or checkpoint_name in (os.curdir, os.pardir) or os.sep in checkpoint_name
                or (os.altsep and os.altsep in checkpoint_name) or "\x00" in checkpoint_name):
            raise ValueError(f"CheckpointManager: checkpoint_name must be a plain file name, "
                             f"received {checkpoint_name!r}")
        self._checkpoint = checkpoint
        self._directory = os.fspath(directory)
        self._max_to_keep = max_to_keep
        self._keep_hours = keep_checkpoint_every_n_hours
        self._name = checkpoint_name
        self._own = _index.checkpoint_name_re(checkpoint_name)
        self._prefix = os.path.join(self._directory, checkpoint_name)
        if distribution.writes_files():   # lk.distribute: rank 0 writes, every rank reads
            os.makedirs(self._directory, exist_ok=True)
        # A save killed before its rename leaves a hidden temporary file; remove those of
        # this manager's checkpoints whose writer process is gone.
        remove_stale_temps(self._directory, self._own.fullmatch)
        state = _index.read_index(self._directory)
        if state is None:
            self._managed: list[tuple[str, float]] = []
            self._last_preserved = _index._clock()
        else:
            self._managed = [(p, t) for p, t in state["checkpoints"]
                             if self._is_own(p) and os.path.isfile(p)]
            self._last_preserved = state["last_preserved_time"] or _index._clock()

    @property
    def directory(self) -> str:
        return self._directory

    @property
    def checkpoint(self) -> Checkpoint:
        return self._checkpoint

    @property
    def checkpoints(self) -> list:
        """Paths of the managed checkpoints, oldest first."""
        return [p for p, _ in self._managed]

    @property
    def latest_checkpoint(self) -> str | None:
        """The newest managed checkpoint, or None."""
        return self._managed[-1][0] if self._managed else None

    def save(self, checkpoint_number: int | None = None, check_interval: bool = True,
             options: Any = None) -> str:
        """Save a new checkpoint, update the index, and delete old checkpoints.

        Args:
            checkpoint_number: the number in the file name (an int, or a Variable/Tensor
                such as ``optimizer.iterations``); default the checkpoint's save counter.
                The save counter is incremented either way.
            check_interval: accepted for TensorFlow compatibility; layerkit's
                manager has no save interval and one local file format, so they change
                nothing.
            options: accepted for TensorFlow compatibility; layerkit's
                manager has no save interval and one local file format, so they change
                nothing.

        Returns:
            the path of the new checkpoint.
        """
        number = None if checkpoint_number is None else int(checkpoint_number)
        path = self._checkpoint._save_numbered(self._prefix, number)
        managed = [(p, t) for p, t in self._managed if p != path] + [(path, _index._clock())]
        managed, doomed, last_preserved = self._sweep(managed)
        _index.write_index(self._directory, path, managed, last_preserved)
        self._managed, self._last_preserved = managed, last_preserved
        for p in doomed:   # only after the index no longer names them
            if self._is_own(p) and distribution.writes_files():   # own files, rank 0 only
                with contextlib.suppress(FileNotFoundError):
                    os.remove(p)   # a symbolic link itself, never its target
        return path

    def restore_or_initialize(self) -> str | None:
        """Restore the latest checkpoint if there is one; return its path or None."""
        latest = self.latest_checkpoint
        if latest is not None:
            self._checkpoint.restore(latest)
        return latest

    def _sweep(self, managed: list) -> tuple:
        last_preserved = self._last_preserved
        doomed: list = []
        if self._max_to_keep is None:
            return managed, doomed, last_preserved
        managed = list(managed)
        while len(managed) > self._max_to_keep:
            p, t = managed.pop(0)
            if self._keep_hours and t - self._keep_hours * 3600.0 >= last_preserved:
                last_preserved = t   # kept on disk, no longer rotated
                continue
            doomed.append(p)
        return managed, doomed, last_preserved

    def _is_own(self, path: str) -> bool:
        """Whether ``path`` is a file name this manager itself saves, in its directory."""
        directory, name = os.path.split(path)
        return (os.path.abspath(directory) == os.path.abspath(self._directory)
                and self._own.fullmatch(name) is not None
                and _index.entry_problem(self._directory, name) is None)

    def __repr__(self) -> str:
        return (f"<CheckpointManager '{self._prefix}' max_to_keep={self._max_to_keep} "
                f"checkpoints={len(self._managed)}>")

