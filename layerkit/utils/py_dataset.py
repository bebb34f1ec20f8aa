"""``lk.utils.PyDataset``: Keras 3's base class for Python batch sources (``fit(x=...)``)."""
from __future__ import annotations

from collections.abc import Iterator

__all__ = ["PyDataset"]


class PyDataset:
    """Keras 3's ``keras.utils.PyDataset``: subclass it, define ``__len__`` (the number of
    batches) and ``__getitem__(index)`` (batch ``index`` as ``(x, y)`` or
    ``(x, y, sample_weight)``), and pass an instance to ``fit``/``evaluate``/``predict``.

    Batches are produced in index order, one epoch per pass; ``on_epoch_begin`` and
    ``on_epoch_end`` run around each complete pass (shuffle there, as Keras programs do).
    A subclass without ``__len__`` (``num_batches`` None) runs until ``__getitem__``
    raises ``IndexError``. ``workers``, ``use_multiprocessing`` and ``max_queue_size`` are
    accepted and recorded: batches are made in the training thread (for parallel input,
    use an ``lk.data`` pipeline with ``num_parallel_calls``).

    Examples:
        >>> import numpy as np, layerkit as lk
        >>> class Squares(lk.utils.PyDataset):
        ...     def __len__(self):
        ...         return 3
        ...     def __getitem__(self, i):
        ...         x = np.full((4, 1), float(i), np.float32)
        ...         return x, x * x
        >>> model = lk.Sequential([lk.Input((1,)), lk.layers.Dense(1)])
        >>> model.compile("sgd", "mse")
        >>> len(model.fit(Squares(), epochs=2, verbose=0).history["loss"])
        2
    """

    def __init__(self, workers: int = 1, use_multiprocessing: bool = False,
                 max_queue_size: int = 10) -> None:
        self._workers = workers
        self._use_multiprocessing = use_multiprocessing
        self._max_queue_size = max_queue_size

    @property
    def workers(self) -> int:
        return getattr(self, "_workers", 1)

    @property
    def use_multiprocessing(self) -> bool:
        return getattr(self, "_use_multiprocessing", False)

    @property
    def max_queue_size(self) -> int:
        return getattr(self, "_max_queue_size", 10)

    def __getitem__(self, index: int):
        raise NotImplementedError(f"{type(self).__name__} must define __getitem__(index) "
                                  f"returning batch number index")

    @property
    def num_batches(self) -> int | None:
        """``len(self)`` when the subclass defines ``__len__``, else None (unknown)."""
        if type(self).__len__ is PyDataset.__len__:
            return None
        return len(self)

    def __len__(self) -> int:
        raise TypeError(f"{type(self).__name__} defines no __len__ (its size is unknown)")

    def on_epoch_begin(self) -> None:
        """Called before each pass over the batches."""

    def on_epoch_end(self) -> None:
        """Called after each complete pass over the batches."""

    def __iter__(self) -> Iterator:
        self.on_epoch_begin()
        n = self.num_batches
        i = 0
        while n is None or i < n:
            try:
                batch = self[i]
            except IndexError:
                if n is None:
                    break
                raise
            yield batch
            i += 1
        self.on_epoch_end()
