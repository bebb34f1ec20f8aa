"""Checkpoints: ``Checkpoint``, ``CheckpointManager``, ``latest_checkpoint``.

The file format (a header, a JSON manifest and raw arrays; no pickle) is described in
``docs/checkpoint_format.md``; ``format.py`` implements it. ``trackable.py`` is the
protocol layers, optimizers and iterators implement; nothing here imports them.
"""
from layerkit.checkpoint.checkpoint import Checkpoint, CheckpointLoadStatus, GlobalRNG
from layerkit.checkpoint.format import CheckpointError, CheckpointNotFoundError, CheckpointReader
from layerkit.checkpoint.index import latest_checkpoint
from layerkit.checkpoint.manager import CheckpointManager

__all__ = ["Checkpoint", "CheckpointManager", "latest_checkpoint", "CheckpointError",
           "CheckpointNotFoundError", "CheckpointLoadStatus", "CheckpointReader", "GlobalRNG"]
