"""Stochastic gradient descent with optional (Nesterov) momentum, Keras 3 update rule."""
from __future__ import annotations

from typing import Any

import numpy as np

from layerkit._core.tensor import Tensor
from layerkit._core.types import TensorLike
from layerkit._core.variable import Variable
from layerkit.optimizers.optimizer import LearningRateLike, Optimizer
from layerkit.primitives import elementwise as _ew


class SGD(Optimizer):
    """Gradient descent with momentum.

    Update rule (Keras 3), with ``m`` the ``'momentum'`` slot::

        m = momentum * m - learning_rate * g
        v += momentum * m - learning_rate * g   # nesterov
        v += m                                  # otherwise
        v -= learning_rate * g                  # momentum == 0 (no slot)

    Args:
        learning_rate: float or schedule (default 0.01).
        momentum: float in ``[0, 1]`` (default 0).
        nesterov: use Nesterov momentum.
        **kwargs: ``weight_decay``, ``clipnorm``, ``clipvalue``, ``global_clipnorm``,
            ``name`` (see :class:`~layerkit.optimizers.Optimizer`).

    Raises:
        ValueError: ``momentum`` outside ``[0, 1]``.

    Examples:
        >>> import layerkit as lk
        >>> v = lk.Variable([1.0, 2.0])
        >>> _ = SGD(learning_rate=0.1).apply_gradients([(lk.constant([1.0, 1.0]), v)])
        >>> v.numpy()
        array([0.9, 1.9], dtype=float32)
    """

    _default_name = "SGD"

    def __init__(self, learning_rate: LearningRateLike = 0.01, momentum: float = 0.0,
                 nesterov: bool = False,
                 **kwargs: Any) -> None:
        super().__init__(learning_rate=learning_rate, **kwargs)
        if not isinstance(momentum, (int, float)) or not 0 <= momentum <= 1:
            raise ValueError(
                f"SGD: momentum must be a float between [0, 1]. Received: momentum={momentum!r}"
            )
        self.momentum = float(momentum)
        self.nesterov = bool(nesterov)
        self._slot_names = ("momentum",) if self.momentum != 0 else ()
        self._num_scratch = 2 if self.nesterov else 1

    def _constants(self, lr: float, step: int) -> tuple:
        return (lr, self.momentum)

    def _kernel(self, v, g, slots, scratch, consts) -> None:
        lr, mom = consts
        t = scratch[0]
        np.multiply(g, lr, out=t)
        if not slots:
            np.subtract(v, t, out=v)
            return
        m = slots[0]
        np.multiply(m, mom, out=m)
        np.subtract(m, t, out=m)
        if self.nesterov:
            t2 = scratch[1]
            np.multiply(m, mom, out=t2)
            np.subtract(t2, t, out=t2)
            np.add(v, t2, out=v)
        else:
            np.add(v, m, out=v)

    def update_step(self, gradient: Tensor, variable: Variable,
                    learning_rate: TensorLike) -> None:
        """The update rule in layerkit ops (the reference for ``_kernel``)."""
        step = _ew.multiply(gradient, _ew.cast(learning_rate, variable.dtype))
        if not self.momentum:
            self.assign_sub(variable, step)
            return
        m = self.get_slot(variable, "momentum")
        self.assign(m, _ew.subtract(_ew.multiply(m, self.momentum), step))
        if self.nesterov:
            self.assign_add(variable, _ew.subtract(_ew.multiply(m, self.momentum), step))
        else:
            self.assign_add(variable, m)

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(momentum=self.momentum, nesterov=self.nesterov)
        return config
