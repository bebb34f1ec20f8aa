"""Records for categorical preprocessing (no gradients: their outputs are indices or
indicator counts of integer inputs).

- ``bucketize(x, boundaries)``: the bucket index of each value, ``i`` such that
  ``boundaries[i - 1] <= x < boundaries[i]`` (TensorFlow's ``Bucketize``, NumPy's
  ``digitize``), compared in ``x``'s float precision as TensorFlow's float32 boundaries
  are; int32 result.
- ``category_encode(x, depth, mode)``: ``'one_hot'`` adds an axis of size ``depth``;
  ``'multi_hot'`` and ``'count'`` mark (or count) the tokens of each sample, reducing
  axis 1 (axis 0 of a rank-1 input), as Keras's ``CategoryEncoding``. Tokens outside
  ``[0, depth)`` raise an error naming the caller (checked when the record runs, so in
  every call of a traced function too).

Being records, both run on each call of an ``lk.function`` graph (an eager NumPy result
would be frozen into the trace as a constant).
"""
from __future__ import annotations

import numpy as np

from layerkit._core.op import Op, apply
from layerkit._core.tensor import Tensor

__all__: list[str] = []

MODES = ("one_hot", "multi_hot", "count")


def _bucketize_fwd(x, boundaries):
    dt = x.dtype if x.dtype.kind == "f" else np.float64
    return np.digitize(x, np.asarray(boundaries, dt)).astype(np.int32)


_BUCKETIZE = Op("bucketize", _bucketize_fwd)


def bucketize(x, boundaries) -> Tensor:
    """Bucket indices of ``x`` for sorted ``boundaries`` (a list of floats), int32."""
    b = [float(v) for v in boundaries]
    if any(b2 < b1 for b1, b2 in zip(b, b[1:])):
        raise ValueError(f"bucketize: boundaries must be sorted; received {list(boundaries)}")
    return apply(_BUCKETIZE, x, boundaries=tuple(b))


def _tokens(x, depth: int, who: str) -> np.ndarray:
    if x.dtype.kind == "f":
        x = x.astype(np.int64)
    elif x.dtype.kind not in "iub":
        raise ValueError(f"{who}: expected integer tokens; received dtype {x.dtype}")
    if x.size and (x.min() < 0 or x.max() >= depth):
        bad = x[(x < 0) | (x >= depth)].ravel()[0]
        raise ValueError(f"{who}: token {bad} is out of range; input values must be in "
                         f"[0, {depth}) (num_tokens={depth})")
    return x


def one_hot_rows(x: np.ndarray, depth: int, dtype) -> np.ndarray:
    out = np.zeros(x.shape + (depth,), dtype)
    np.put_along_axis(out, x[..., None].astype(np.intp), 1, axis=-1)
    return out


def _encode_fwd(x, depth, mode, dtype, who):
    x = _tokens(x, depth, who)
    if mode == "one_hot":
        return one_hot_rows(x, depth, dtype)
    axis = 1 if x.ndim > 1 else 0
    rows = np.moveaxis(x, axis, -1)  # tokens of each sample along the last axis
    flat = rows.reshape(-1, rows.shape[-1]).astype(np.int64)
    offsets = (np.arange(flat.shape[0]) * depth)[:, None]
    counts = np.bincount((flat + offsets).ravel(), minlength=flat.shape[0] * depth)
    out = counts.reshape(rows.shape[:-1] + (depth,))
    if mode == "multi_hot":
        out = out > 0
    return out.astype(dtype)


_ENCODE = Op("category_encode", _encode_fwd)


def category_encode(x, depth: int, mode: str, dtype="float32", who: str = "category_encode"
                    ) -> Tensor:
    """One-hot, multi-hot or count encoding of integer tokens (see the module docstring).

    Args:
        x: integer tokens (floats are truncated to integers, as Keras).
        depth: the number of tokens.
        mode: ``'one_hot'``, ``'multi_hot'`` or ``'count'``.
        dtype: the result dtype.
        who: the caller named in errors.

    Raises:
        ValueError: an unknown mode, or (when run) a token outside ``[0, depth)``.
    """
    if mode not in MODES:
        raise ValueError(f"{who}: output_mode must be one of {MODES}; received {mode!r}")
    return apply(_ENCODE, x, depth=int(depth), mode=mode, dtype=np.dtype(dtype), who=who)
