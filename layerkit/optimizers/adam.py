"""Adam and AdamW (decoupled weight decay), Keras 3 update rules."""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from layerkit._core.tensor import Tensor
from layerkit._core.types import TensorLike
from layerkit._core.variable import Variable
from layerkit.optimizers.optimizer import LearningRateLike, Optimizer
from layerkit.primitives import elementwise as _ew


class Adam(Optimizer):
    """Adam: adaptive moment estimation.

    Update rule (Keras 3), with slots ``m``, ``v`` (and ``vhat`` for AMSGrad) and
    ``t = iterations + 1``::

        alpha = learning_rate * sqrt(1 - beta_2**t) / (1 - beta_1**t)
        m += (g - m) * (1 - beta_1)
        v += (g**2 - v) * (1 - beta_2)
        vhat = max(vhat, v)                     # amsgrad only, then used for v
        var -= alpha * m / (sqrt(v) + epsilon)

    Args:
        learning_rate: float or schedule (default 0.001).
        beta_1: decay of the first moment (default 0.9).
        beta_2: decay of the second moment (default 0.999).
        epsilon: added to the denominator (default 1e-7, the "epsilon hat" of the paper).
        amsgrad: use the AMSGrad variant.
        **kwargs: ``weight_decay``, ``clipnorm``, ``clipvalue``, ``global_clipnorm``, ``name``.

    Examples:
        >>> import layerkit as lk
        >>> v = lk.Variable([1.0])
        >>> _ = Adam(learning_rate=0.1).apply_gradients([(lk.constant([2.0]), v)])
        >>> round(float(v.numpy()[0]), 4)
        0.9
    """

    _default_name = "adam"

    def __init__(self, learning_rate: LearningRateLike = 0.001, beta_1: float = 0.9,
                 beta_2: float = 0.999,
                 epsilon: float = 1e-7, amsgrad: bool = False, **kwargs: Any) -> None:
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta_1 = float(beta_1)
        self.beta_2 = float(beta_2)
        self.epsilon = float(epsilon)
        self.amsgrad = bool(amsgrad)
        self._slot_names = ("m", "v", "vhat") if self.amsgrad else ("m", "v")

    def _constants(self, lr: float, step: int) -> tuple:
        t = step + 1
        alpha = lr * math.sqrt(1.0 - self.beta_2 ** t) / (1.0 - self.beta_1 ** t)
        return (alpha, 1.0 - self.beta_1, 1.0 - self.beta_2, self.epsilon)

    def _kernel(self, v, g, slots, scratch, consts) -> None:
        alpha, c1, c2, eps = consts
        m, s = slots[0], slots[1]
        t = scratch[0]
        np.subtract(g, m, out=t)
        np.multiply(t, c1, out=t)
        np.add(m, t, out=m)
        np.square(g, out=t)
        np.subtract(t, s, out=t)
        np.multiply(t, c2, out=t)
        np.add(s, t, out=s)
        if self.amsgrad:
            np.maximum(slots[2], s, out=slots[2])
            s = slots[2]
        np.sqrt(s, out=t)
        np.add(t, eps, out=t)
        np.divide(m, t, out=t)
        np.multiply(t, alpha, out=t)
        np.subtract(v, t, out=v)

    def update_step(self, gradient: Tensor, variable: Variable,
                    learning_rate: TensorLike) -> None:
        """The update rule in layerkit ops (the reference for ``_kernel``)."""
        dtype = variable.dtype
        t = _ew.cast(_ew.add(self.iterations, 1), dtype)
        beta_1_power = _ew.pow(_ew.cast(self.beta_1, dtype), t)
        beta_2_power = _ew.pow(_ew.cast(self.beta_2, dtype), t)
        alpha = _ew.divide(_ew.multiply(_ew.cast(learning_rate, dtype),
                                        _ew.sqrt(_ew.subtract(1.0, beta_2_power))),
                           _ew.subtract(1.0, beta_1_power))
        m, v = self.get_slot(variable, "m"), self.get_slot(variable, "v")
        self.assign_add(m, _ew.multiply(_ew.subtract(gradient, m), 1.0 - self.beta_1))
        self.assign_add(v, _ew.multiply(_ew.subtract(_ew.square(gradient), v),
                                        1.0 - self.beta_2))
        if self.amsgrad:
            vhat = self.get_slot(variable, "vhat")
            self.assign(vhat, _ew.maximum(vhat, v))
            v = vhat
        self.assign_sub(variable, _ew.divide(_ew.multiply(m, alpha),
                                             _ew.add(_ew.sqrt(v), self.epsilon)))

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(beta_1=self.beta_1, beta_2=self.beta_2, epsilon=self.epsilon,
                      amsgrad=self.amsgrad)
        return config


class AdamW(Adam):
    """Adam with decoupled weight decay (Loshchilov & Hutter), as in Keras 3.

    Each step first shrinks every (non-excluded) variable,
    ``var -= var * weight_decay * learning_rate``, then applies the Adam update.

    Args:
        learning_rate: float or schedule (default 0.001).
        weight_decay: the decay coefficient (default 0.004).
        beta_1: as in :class:`Adam`.
        beta_2: as in :class:`Adam`.
        epsilon: as in :class:`Adam`.
        amsgrad: as in :class:`Adam`.
        **kwargs: ``clipnorm``, ``clipvalue``, ``global_clipnorm``, ``name``.

    Raises:
        ValueError: ``weight_decay`` is None.
    """

    _default_name = "adamw"

    def __init__(self, learning_rate: LearningRateLike = 0.001, weight_decay: float = 0.004,
                 beta_1: float = 0.9,
                 beta_2: float = 0.999, epsilon: float = 1e-7, amsgrad: bool = False,
                 **kwargs: Any) -> None:
        if weight_decay is None:
            raise ValueError("AdamW: weight_decay must be a float, received None")
        super().__init__(learning_rate=learning_rate, beta_1=beta_1, beta_2=beta_2,
                         epsilon=epsilon, amsgrad=amsgrad, weight_decay=weight_decay, **kwargs)
