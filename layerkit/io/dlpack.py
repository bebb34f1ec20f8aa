"""``lk.from_dlpack``: tensors from any DLPack producer (NumPy, PyTorch, JAX, CuPy on CPU).

Copy semantics (both directions share memory unless a copy is asked for or needed):

- ``lk.from_dlpack(x)`` wraps a NumPy view of ``x``'s CPU buffer: no copy. Changing
  ``x`` in place afterwards changes the tensor too; pass ``copy=True`` to decouple.
  A producer that marks its buffer read-only (DLPack >= 1.0, e.g. a read-only NumPy
  array) gives a read-only view.
- ``np.from_dlpack(t)``, ``torch.from_dlpack(t)``, ``jax.dlpack.from_dlpack(t)`` on an
  ``lk.Tensor`` share its buffer through ``Tensor.__dlpack__``. If the buffer is
  read-only, NumPy 2 exports it flagged read-only to DLPack >= 1.0 consumers (NumPy's
  own ``from_dlpack`` then returns a read-only view); consumers of older DLPack
  versions receive a copy instead, since they cannot be told it is read-only.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from layerkit._core.op import wrap
from layerkit._core.tensor import Tensor
from layerkit._core.types import TensorLike

__all__ = ["from_dlpack"]


def from_dlpack(x: TensorLike, *, device: Any = None, copy: bool | None = None) -> Tensor:
    """A Tensor sharing the memory of a DLPack-capable object (no copy by default).

    Args:
        x: an object with ``__dlpack__`` and ``__dlpack_device__`` on the CPU (a NumPy
            array, a PyTorch or JAX CPU tensor, an ``lk.Tensor``).
        device: only ``None`` or ``"cpu"``.
        copy: ``None`` shares memory when possible; ``True`` always copies; ``False``
            never copies (``BufferError`` if it would have to).

    Returns:
        A Tensor with ``x``'s shape and dtype.

    Raises:
        TypeError: ``x`` does not implement DLPack, or its dtype has no NumPy
            equivalent (e.g. bfloat16).
        BufferError: the data is not on the CPU, or ``copy=False`` cannot be honoured.

    Examples:
        >>> import numpy as np, layerkit as lk
        >>> a = np.arange(3.0)
        >>> t = lk.from_dlpack(a)
        >>> np.shares_memory(np.asarray(t), a)
        True
    """
    if not hasattr(x, "__dlpack__"):
        raise TypeError(f"from_dlpack: expected an object implementing __dlpack__ (a NumPy "
                        f"array, a torch/jax tensor, an lk.Tensor); received "
                        f"{type(x).__name__}")
    kwargs: dict[str, Any] = {k: v for k, v in (("device", device), ("copy", copy))
                              if v is not None}
    try:
        value = np.from_dlpack(x, **kwargs)
    except (TypeError, RuntimeError) as e:
        raise TypeError(f"from_dlpack: cannot import a {type(x).__name__} as a NumPy array "
                        f"({e})") from None
    return wrap(value)
