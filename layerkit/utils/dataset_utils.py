"""``split_dataset``: split arrays or a small ``lk.data`` dataset in two (Keras 3's rules)."""
from __future__ import annotations

import random
from typing import Any

import numpy as np

from layerkit._core.nest import flatten
from layerkit._core.nest import pack_sequence_as as pack_like
from layerkit._core.tensor import Tensor
from layerkit.data import Dataset

__all__ = ["split_dataset"]


def _batch_size_of(ds: Dataset) -> int | None:
    """The batch size of a batched dataset (``batch``/``padded_batch``, possibly followed
    by ``prefetch``/``cache``), else None."""
    node = ds._node
    while getattr(node, "name", None) in ("prefetch", "cache") and node.inputs:
        node = node.inputs[0]
    return node.size if getattr(node, "name", None) in ("batch", "padded_batch") else None


def _as_array(v, where: str) -> np.ndarray:
    a = np.asarray(v._v if isinstance(v, Tensor) else v)
    if a.ndim == 0:
        raise ValueError(f"split_dataset: {where} must be an array with one row per sample, "
                         f"received a scalar")
    return a


def _columns(dataset):
    """``(structure, [column arrays], n, batch_size)`` of the dataset's samples."""
    if isinstance(dataset, Dataset):
        batch_size = _batch_size_of(dataset)
        rows = list((dataset.unbatch() if batch_size else dataset).as_numpy_iterator())
        if not rows:
            raise ValueError("split_dataset: received an empty dataset; expected at least "
                             "one sample")
        first = rows[0]
        flat_rows = [flatten(r) for r in rows]
        shapes = [tuple(np.shape(x) for x in fr) for fr in flat_rows]
        for i, s in enumerate(shapes):
            if s != shapes[0]:
                raise ValueError(f"split_dataset: all samples must have the same shape; "
                                 f"sample 0 has {shapes[0]}, sample {i} has {s}")
        cols = [np.stack([fr[j] for fr in flat_rows]) for j in range(len(flat_rows[0]))]
        return first, cols, len(rows), batch_size
    if isinstance(dataset, (np.ndarray, Tensor)):
        a = _as_array(dataset, "dataset")
        return a, [a], len(a), None
    if isinstance(dataset, (list, tuple, dict)) and dataset:
        structure = tuple(dataset) if isinstance(dataset, list) else dataset
        leaves = flatten(structure)
        cols = [_as_array(v, f"element {i} of dataset") for i, v in enumerate(leaves)]
        sizes = {len(c) for c in cols}
        if len(sizes) > 1:
            raise ValueError(f"split_dataset: the arrays must have the same length (one row "
                             f"per sample); received lengths {[len(c) for c in cols]}")
        return structure, cols, sizes.pop(), None
    raise TypeError(f"split_dataset: `dataset` must be a lk.data.Dataset, a NumPy array or a "
                    f"non-empty list/tuple/dict of arrays. Received: {type(dataset).__name__}")


def _split_sizes(left_size, right_size, total: int) -> tuple[int, int]:
    """Keras's rules: ints are counts, floats fractions of ``total`` (rounded)."""
    for name, size in (("left_size", left_size), ("right_size", right_size)):
        if size is not None and (isinstance(size, bool) or type(size) not in (int, float)):
            raise TypeError(f"split_dataset: invalid `{name}` type. Expected: int or float or "
                            f"None, received: type({name})={type(size).__name__}")
    if left_size is None and right_size is None:
        raise ValueError("split_dataset: at least one of `left_size` or `right_size` must be "
                         "specified. Received: left_size=None and right_size=None")
    if left_size == 0 and right_size == 0:
        raise ValueError("split_dataset: both `left_size` and `right_size` are zero. At "
                         "least one of the split sizes must be non-zero.")
    for name, size in (("left_size", left_size), ("right_size", right_size)):
        if (type(size) is int and not 0 < size < total) or (
                type(size) is float and not 0 < size < 1):
            raise ValueError(f"split_dataset: `{name}` should be either a positive integer "
                             f"smaller than {total}, or a float within the range (0, 1). "
                             f"Received: {name}={size}")
    if type(left_size) is float and type(right_size) is float and left_size + right_size > 1:
        raise ValueError("split_dataset: the sum of `left_size` and `right_size` is greater "
                         "than 1. It must be less than or equal to 1.")
    left = round(left_size * total) if type(left_size) is float else left_size
    right = round(right_size * total) if type(right_size) is float else right_size
    if left is None:
        left = total - right
    elif right is None:
        right = total - left
    if left + right > total:
        raise ValueError(f"split_dataset: the sum of `left_size` and `right_size` should be "
                         f"at most the number of samples {total}. Received: left_size + "
                         f"right_size = {left + right}")
    for side, size in (("left", left), ("right", right)):
        if size == 0:
            raise ValueError(f"split_dataset: with a dataset of {total} samples, "
                             f"left_size={left_size} and right_size={right_size}, the {side} "
                             f"split would be empty")
    return int(left), int(right)


def split_dataset(dataset: Any, left_size: Any = None, right_size: Any = None,
                  shuffle: bool = False, seed: int | None = None) -> tuple[Dataset, Dataset]:
    """Split a dataset into a left and a right ``lk.data.Dataset`` (Keras 3's
    ``keras.utils.split_dataset``).

    The left split takes the first ``left_size`` samples, the right split the last
    ``right_size`` (samples in between, if the sizes do not add up, are in neither).
    Sizes are counts (ints) or fractions of the samples (floats, rounded); a missing one
    is the rest. With ``shuffle`` the samples are permuted first, exactly as Keras does
    (``random.shuffle`` of Python's generator seeded with ``seed``; layerkit seeds a
    private generator and leaves the global one alone). A batched ``lk.data`` dataset is
    unbatched and both splits are batched again with its batch size. The whole dataset is
    read into memory: this is for small datasets.

    Args:
        dataset: a NumPy array or Tensor, a list/tuple/dict of arrays with the same
            length, or a ``lk.data.Dataset``.
        left_size: an int (samples) or a float in (0, 1) (a fraction), or None.
        right_size: the same, for the right split.
        shuffle: shuffle the samples before splitting.
        seed: the shuffling seed (None: drawn from Python's global ``random``).

    Returns:
        ``(left, right)`` datasets.

    Raises:
        TypeError: an unsupported ``dataset`` or size type.
        ValueError: sizes out of range or leaving a split empty (Keras's rules), arrays
            of different lengths, an empty dataset.

    Examples:
        >>> import numpy as np
        >>> import layerkit as lk
        >>> left, right = lk.utils.split_dataset(np.arange(10), left_size=0.8)
        >>> [int(x) for x in right]
        [8, 9]
    """
    structure, cols, total, batch_size = _columns(dataset)
    left, right = _split_sizes(left_size, right_size, total)
    order = np.arange(total)
    if shuffle:
        if seed is None:
            seed = random.randint(0, int(1e6))
        shuffled = list(range(total))
        random.Random(seed).shuffle(shuffled)
        order = np.asarray(shuffled)
    out = []
    for idx in (order[:left], order[total - right:]):
        part = [c[idx] for c in cols]
        ds = Dataset.from_tensor_slices(pack_like(structure, part) if len(cols) > 1 or
                                        isinstance(structure, (tuple, dict)) else part[0])
        out.append(ds.batch(batch_size) if batch_size else ds)
    return out[0], out[1]
