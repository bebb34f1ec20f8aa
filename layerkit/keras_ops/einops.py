"""keras.ops.rearrange: einops-style axis rearrangement (reshape + transpose)."""
from __future__ import annotations

import re
from typing import Any

import numpy as np

import layerkit as lk
from layerkit._core.tensor import Tensor
from layerkit._core.types import TensorLike
from layerkit.keras_ops._prims import t

__all__ = ["rearrange"]

_TOKEN = re.compile(r"\(|\)|[A-Za-z_][A-Za-z0-9_]*|1")


def _groups(side: str, who: str) -> list:
    """``"b (h w) c"`` -> ``[["b"], ["h", "w"], ["c"]]`` ("1" is an empty group)."""
    out: list = []
    cur: list | None = None
    rest = _TOKEN.sub(" ", side)
    if rest.strip():
        raise ValueError(f"keras_ops.{who}: cannot parse {side!r} (ellipsis and other "
                         f"tokens are not supported)")
    for tok in _TOKEN.findall(side):
        if tok == "(":
            if cur is not None:
                raise ValueError(f"keras_ops.{who}: nested parentheses in {side!r}")
            cur = []
        elif tok == ")":
            if cur is None:
                raise ValueError(f"keras_ops.{who}: unbalanced ')' in {side!r}")
            out.append(cur)
            cur = None
        elif cur is not None:
            if tok != "1":
                cur.append(tok)
        else:
            out.append([] if tok == "1" else [tok])
    if cur is not None:
        raise ValueError(f"keras_ops.{who}: unbalanced '(' in {side!r}")
    return out


def rearrange(tensor: TensorLike, pattern: str, **axes_lengths: Any) -> Tensor:
    """Reorder, merge and split axes as described by ``pattern`` (einops syntax).

    Example: ``rearrange(x, "b (h w) c -> b h w c", h=4)``. Every name on one side must
    appear on the other; ``axes_lengths`` give the sizes needed to split a group.
    """
    x = t(tensor)
    if "->" not in pattern:
        raise ValueError(f"keras_ops.rearrange: pattern needs '->', received {pattern!r}")
    left, right = (_groups(s, "rearrange") for s in pattern.split("->"))
    if len(left) != x.ndim:
        raise ValueError(f"keras_ops.rearrange: pattern {pattern!r} has {len(left)} input "
                         f"axes, tensor has shape {x.shape}")
    names_l = [n for g in left for n in g]
    names_r = [n for g in right for n in g]
    if sorted(names_l) != sorted(names_r) or len(set(names_l)) != len(names_l):
        raise ValueError(f"keras_ops.rearrange: both sides of {pattern!r} must name the "
                         f"same axes once each")
    sizes: dict = {}
    for g, d in zip(left, x.shape):
        unknown = [n for n in g if n not in axes_lengths]
        known = int(np.prod([axes_lengths[n] for n in g if n in axes_lengths], dtype=np.int64))
        if len(unknown) > 1:
            raise ValueError(f"keras_ops.rearrange: give the sizes of {unknown[1:]} to split "
                             f"an axis of length {d}")
        if unknown:
            if known == 0 or d % known:
                raise ValueError(f"keras_ops.rearrange: cannot split length {d} by {known}")
            sizes[unknown[0]] = d // known
        elif known != d:
            raise ValueError(f"keras_ops.rearrange: group {g} has size {known}, axis has {d}")
        for n in g:
            sizes.setdefault(n, int(axes_lengths.get(n, 0)))
    y = lk.reshape(x, [sizes[n] for n in names_l])
    y = lk.transpose(y, [names_l.index(n) for n in names_r])
    shape = [int(np.prod([sizes[n] for n in g], dtype=np.int64)) for g in right]
    return lk.reshape(y, shape)
