"""The seam between layerkit's training code and ``lk.distribute``.

Two module attributes, both None unless a ``lk.distribute.MultiWorkerMirroredStrategy``
exists in this process, so code outside ``lk.distribute`` pays one attribute read:

- ``scope``: the strategy whose ``scope()`` is active. Variables created now are
  broadcast from rank 0 (``Variable.__init__``); models created or compiled now
  remember it (``Model.fit`` then trains data-parallel); optimizers created now
  all-reduce their gradients.
- ``world``: the MPI world once a strategy was created (``layerkit.distribute._mpi``).
  Atomic file writes (checkpoints, indexes, weights files) happen on its rank 0 only
  (:func:`writes_files`).

Nothing here imports MPI or ``lk.distribute``.
"""
from __future__ import annotations

scope = None
world = None


def writes_files() -> bool:
    """Whether this process writes files: always, except on ranks other than 0 of a
    multi-process ``lk.distribute`` job (rank 0 writes for all of them)."""
    w = world
    return w is None or w.rank == 0
