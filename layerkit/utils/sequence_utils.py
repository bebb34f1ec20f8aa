"""``pad_sequences``: pad/truncate sequences to one length (Keras 3's rules)."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from layerkit._core.types import DTypeLike

__all__ = ["pad_sequences"]


def pad_sequences(sequences: Sequence[Any], maxlen: int | None = None, dtype: DTypeLike = "int32",
                  padding: str = "pre", truncating: str = "pre", value: Any = 0.0) -> np.ndarray:
    """Pad (or truncate) a list of sequences into one ``(len(sequences), maxlen, ...)`` array.

    Keras 3's ``keras.utils.pad_sequences``: sequences longer than ``maxlen`` lose values
    at the start (``truncating='pre'``) or the end (``'post'``); shorter ones are padded
    with ``value`` at the start (``padding='pre'``) or the end (``'post'``). Elements may
    themselves be arrays (a trailing shape shared by all non-empty sequences).

    Args:
        sequences: a list of sequences (lists or arrays).
        maxlen: the output length (default: the longest sequence).
        dtype: the output dtype (``object`` or a string dtype for text).
        padding: ``'pre'`` or ``'post'``.
        truncating: ``'pre'`` or ``'post'``.
        value: the padding value.

    Returns:
        A NumPy array of shape ``(len(sequences), maxlen) + element shape``.

    Raises:
        ValueError: ``sequences`` (or one of them) is not iterable, an unknown
            ``padding``/``truncating``, a string ``value`` with a non-string ``dtype``,
            elements of different shapes, or no sequences and no ``maxlen``.

    Examples:
        >>> import layerkit as lk
        >>> lk.utils.pad_sequences([[1, 2, 3], [4, 5], [6]], maxlen=2, padding="post")
        array([[2, 3],
               [4, 5],
               [6, 0]], dtype=int32)
    """
    if not hasattr(sequences, "__len__"):
        raise ValueError(f"pad_sequences: `sequences` must be iterable, received "
                         f"{type(sequences).__name__}")
    for name, mode in (("padding", padding), ("truncating", truncating)):
        if mode not in ("pre", "post"):
            raise ValueError(f"pad_sequences: {name} must be 'pre' or 'post', received "
                             f"{name}={mode!r}")
    lengths, sample_shape = [], None
    for i, s in enumerate(sequences):
        try:
            lengths.append(len(s))
        except TypeError:
            raise ValueError(f"pad_sequences: `sequences` must be a list of iterables; "
                             f"found a non-iterable at position {i}: {s!r:.60}") from None
        if sample_shape is None and len(s):
            sample_shape = np.asarray(s).shape[1:]
    sample_shape = sample_shape or ()
    if maxlen is None:
        if not lengths:
            raise ValueError("pad_sequences: no sequences and no maxlen: the output length "
                             "is unknown")
        maxlen = max(lengths)
    text = np.issubdtype(dtype, np.str_) or np.issubdtype(dtype, np.bytes_)
    if isinstance(value, str) and dtype is not object and not text:
        raise ValueError(f"pad_sequences: `dtype` {dtype} is not compatible with `value`'s "
                         f"type: {type(value)}. Set dtype=object for variable length strings.")
    out = np.full((len(lengths), int(maxlen)) + tuple(sample_shape), value, dtype=dtype)
    if maxlen == 0:
        return out
    for i, s in enumerate(sequences):
        if not len(s):
            continue
        kept = s[-maxlen:] if truncating == "pre" else s[:maxlen]
        kept = np.asarray(kept, dtype=dtype)
        if kept.shape[1:] != tuple(sample_shape):
            raise ValueError(f"pad_sequences: the elements of sequence {i} have shape "
                             f"{kept.shape[1:]}, expected {tuple(sample_shape)} (the shape of "
                             f"the first non-empty sequence's elements)")
        if padding == "post":
            out[i, :len(kept)] = kept
        else:
            out[i, -len(kept):] = kept
    return out
