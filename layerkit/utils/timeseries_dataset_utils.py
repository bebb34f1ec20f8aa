"""``timeseries_dataset_from_array``: sliding windows over a timeseries as an lk.data Dataset."""
from __future__ import annotations

from typing import Any

import numpy as np

from layerkit._core.tensor import Tensor
from layerkit._core.types import TensorLike
from layerkit.data import Dataset

__all__ = ["timeseries_dataset_from_array"]


def _positive_below(name: str, value, length: int) -> None:
    if value <= 0:
        raise ValueError(f"timeseries_dataset_from_array: `{name}` must be higher than 0. "
                         f"Received: {name}={value}")
    if value >= length:
        raise ValueError(f"timeseries_dataset_from_array: `{name}` must be lower than the "
                         f"length of the data. Received: {name}={value}, for data of length "
                         f"{length}")


def timeseries_dataset_from_array(data: Any, targets: TensorLike, sequence_length: int,
                                  sequence_stride: int = 1, sampling_rate: int = 1,
                                  batch_size: int | None = 128, shuffle: bool = False,
                                  seed: int | None = None, start_index: int | None = None,
                                  end_index: int | None = None) -> Dataset:
    """Sliding windows over a timeseries, as a ``lk.data.Dataset`` (Keras 3's
    ``keras.utils.timeseries_dataset_from_array``, same windows).

    Window ``i`` starts at ``start_index + i * sequence_stride`` and holds the
    ``sequence_length`` steps ``start, start + sampling_rate, ...``; only windows that end
    before ``end_index`` are made. Its target is ``targets[start]`` (so
    ``targets[i]`` belongs to the window starting at ``data[i]``).

    Windows are gathered batch by batch from the array when iterated (nothing is copied
    up front). With ``shuffle``, the window start positions are permuted by
    ``numpy.random.RandomState(seed).shuffle`` (Keras's first shuffling stage, so the
    same order) and then, each epoch, within a buffer of ``8 * batch_size`` positions
    (Keras shuffles there with TensorFlow's generator, so that second stage's order
    differs from Keras's).

    Args:
        data: the timeseries (array-like or Tensor), time along axis 0.
        targets: per-step targets (``targets[i]`` for the window starting at ``i``), or
            None for a dataset of windows only.
        sequence_length: steps per window.
        sequence_stride: steps between the starts of consecutive windows.
        sampling_rate: steps between consecutive elements of a window.
        batch_size: windows per batch (the last batch may be smaller); None yields single
            windows.
        shuffle: shuffle the windows.
        seed: seed of the shuffling (None: drawn from NumPy's global generator, as Keras).
        start_index: data before this index is not used.
        end_index: data from this index on is not used.

    Returns:
        A Dataset of ``(windows, targets)`` batches (``windows`` alone if ``targets`` is
        None); windows have shape ``(batch, sequence_length) + data.shape[1:]`` and keep
        the data's dtype.

    Raises:
        ValueError: an index, stride, length or batch size out of range (Keras's checks
            and messages). ``targets`` may be shorter than ``data``: windows without a
            target are left out.

    Examples:
        >>> import numpy as np
        >>> import layerkit as lk
        >>> ds = lk.utils.timeseries_dataset_from_array(
        ...     np.arange(99), None, sequence_length=10, sequence_stride=3, sampling_rate=2,
        ...     batch_size=None)
        >>> windows = [w.numpy() for w in ds]
        >>> windows[0].tolist()
        [0, 2, 4, 6, 8, 10, 12, 14, 16, 18]
        >>> windows[-1].tolist()
        [78, 80, 82, 84, 86, 88, 90, 92, 94, 96]
    """
    data = np.asarray(data._v if isinstance(data, Tensor) else data)
    if data.ndim == 0:
        raise ValueError("timeseries_dataset_from_array: `data` must be an array with time "
                         "along axis 0, received a scalar")
    n = len(data)
    if start_index:
        if start_index < 0:
            raise ValueError(f"timeseries_dataset_from_array: `start_index` must be 0 or "
                             f"greater. Received: start_index={start_index}")
        if start_index >= n:
            raise ValueError(f"timeseries_dataset_from_array: `start_index` must be lower "
                             f"than the length of the data. Received: start_index="
                             f"{start_index}, for data of length {n}")
    if end_index:
        if start_index and end_index <= start_index:
            raise ValueError(f"timeseries_dataset_from_array: `end_index` must be higher "
                             f"than `start_index`. Received: start_index={start_index}, and "
                             f"end_index={end_index}")
        if end_index >= n:
            raise ValueError(f"timeseries_dataset_from_array: `end_index` must be lower than "
                             f"the length of the data. Received: end_index={end_index}, for "
                             f"data of length {n}")
        if end_index <= 0:
            raise ValueError(f"timeseries_dataset_from_array: `end_index` must be higher "
                             f"than 0. Received: end_index={end_index}")
    _positive_below("sampling_rate", sampling_rate, n)
    _positive_below("sequence_stride", sequence_stride, n)
    if sequence_length < 1:
        raise ValueError(f"timeseries_dataset_from_array: `sequence_length` must be at "
                         f"least 1. Received: sequence_length={sequence_length}")
    if batch_size is not None and batch_size < 1:
        raise ValueError(f"timeseries_dataset_from_array: `batch_size` must be a positive "
                         f"integer or None. Received: batch_size={batch_size}")
    start = start_index or 0
    end = end_index or n
    if targets is not None:
        targets = np.asarray(targets._v if isinstance(targets, Tensor) else targets)
    num_seqs = end - start - (sequence_length - 1) * sampling_rate
    if targets is not None:
        num_seqs = min(num_seqs, len(targets[start:end]))
    index_dtype = np.int32 if num_seqs < 2147483647 else np.int64
    positions = np.arange(0, max(num_seqs, 0), sequence_stride, dtype=index_dtype)
    if shuffle:
        if seed is None:
            seed = np.random.randint(1_000_000)
        np.random.RandomState(seed).shuffle(positions)
    steps = np.arange(sequence_length, dtype=index_dtype) * sampling_rate
    series = data[start:end]
    labels = None if targets is None else targets[start:end]

    def windows(pos):
        p = pos.numpy()
        x = series[p[..., None] + steps]
        return x if labels is None else (x, labels[p])

    ds = Dataset.from_tensor_slices(positions)
    if shuffle:
        ds = ds.shuffle(8 * batch_size if batch_size else 1024, seed=seed)
    if batch_size is not None:
        ds = ds.batch(batch_size)
    return ds.map(windows)
