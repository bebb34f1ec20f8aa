"""``lk.train``: TensorFlow's ``tf.train`` checkpoint names.

``Checkpoint``, ``CheckpointManager`` and ``latest_checkpoint`` are layerkit's own (see
:mod:`layerkit.checkpoint`); ``list_variables``, ``load_variable`` and
``load_checkpoint`` read a saved checkpoint without building the objects.

Examples:
    >>> import tempfile, layerkit as lk
    >>> d = tempfile.mkdtemp()
    >>> path = lk.train.Checkpoint(v=lk.Variable([1.0, 2.0])).save(d + "/ckpt")
    >>> lk.train.list_variables(d)
    [('save_counter/.ATTRIBUTES/VARIABLE_VALUE', ()), ('v/.ATTRIBUTES/VARIABLE_VALUE', (2,))]
    >>> lk.train.load_variable(d, "v")
    array([1., 2.], dtype=float32)

Names are listed in TensorFlow's spelling (``<path>/.ATTRIBUTES/VARIABLE_VALUE``), and
every reading function accepts that spelling or layerkit's own (``<path>``).
"""
from __future__ import annotations

import os
from typing import Any

import numpy as np

from layerkit._core.types import PathLike
from layerkit.checkpoint import Checkpoint, CheckpointManager, CheckpointReader
from layerkit.checkpoint.format import CheckpointNotFoundError
from layerkit.checkpoint.index import latest_checkpoint

__all__ = ["Checkpoint", "CheckpointManager", "CheckpointOptions", "CheckpointReader",
           "latest_checkpoint", "list_variables", "load_checkpoint", "load_variable"]


class CheckpointOptions:
    """Accepted for TensorFlow compatibility (``options=`` of save/restore); layerkit
    writes and reads one local file, so the options change nothing."""

    def __init__(self, experimental_io_device: str | None = None,
                 experimental_enable_async_checkpoint: bool = False, **kwargs: Any) -> None:
        self.experimental_io_device = experimental_io_device
        self.experimental_enable_async_checkpoint = experimental_enable_async_checkpoint


def _resolve(ckpt_dir_or_file) -> str:
    path = os.fspath(ckpt_dir_or_file)
    if os.path.isdir(path):
        found = latest_checkpoint(path)
        if found is None:
            raise CheckpointNotFoundError(path, "lk.train: the directory holds no "
                                                "recorded checkpoint")
        return found
    return path


_TF_SUFFIX = "/.ATTRIBUTES/VARIABLE_VALUE"


def _ours(name: str) -> str:
    return name[:-len(_TF_SUFFIX)] if name.endswith(_TF_SUFFIX) else name


class _Reader(CheckpointReader):
    """``tf.train.load_checkpoint``'s reader: TF's method and key names over layerkit's
    reader (keys listed as ``<path>/.ATTRIBUTES/VARIABLE_VALUE``; both spellings read)."""

    def get_tensor(self, name: str) -> np.ndarray:
        return self.read(_ours(name))

    def has_tensor(self, name: str) -> bool:
        return _ours(name) in self

    def get_variable_to_shape_map(self) -> dict:
        return {k + _TF_SUFFIX: list(self.shape(k)) for k in self.keys()}

    def get_variable_to_dtype_map(self) -> dict:
        return {k + _TF_SUFFIX: self.dtype(k) for k in self.keys()}


def load_checkpoint(ckpt_dir_or_file: PathLike) -> _Reader:
    """A reader of the checkpoint at a path, or of the newest one in a directory
    (``get_tensor``, ``has_tensor``, ``get_variable_to_shape_map``, ``keys``)."""
    return _Reader(_resolve(ckpt_dir_or_file))


def list_variables(ckpt_dir_or_file: PathLike) -> list:
    """``(name, shape)`` of every saved array, sorted by name, with TensorFlow's names
    (``net/l1/kernel/.ATTRIBUTES/VARIABLE_VALUE``)."""
    reader = load_checkpoint(ckpt_dir_or_file)
    try:
        return sorted((k + _TF_SUFFIX, tuple(reader.shape(k))) for k in reader.keys())
    finally:
        reader.close()


def load_variable(ckpt_dir_or_file: PathLike, name: str) -> np.ndarray:
    """The saved value of one array as a NumPy array.

    Raises:
        KeyError: the checkpoint has no array of that name (the message names the file).
    """
    reader = load_checkpoint(ckpt_dir_or_file)
    try:
        return reader.get_tensor(name)
    finally:
        reader.close()
