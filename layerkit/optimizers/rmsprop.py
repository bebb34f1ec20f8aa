"""RMSprop (plain momentum, optional centering), Keras 3 update rule."""
from __future__ import annotations

from typing import Any

import numpy as np

from layerkit._core.tensor import Tensor
from layerkit._core.types import TensorLike
from layerkit._core.variable import Variable
from layerkit.optimizers.optimizer import LearningRateLike, Optimizer
from layerkit.primitives import elementwise as _ew


class RMSprop(Optimizer):
    """RMSprop: divide the gradient by a running root mean square.

    Update rule (Keras 3), slots ``velocity``, ``momentum`` (if momentum > 0) and
    ``average_gradient`` (if centered)::

        velocity = rho * velocity + (1 - rho) * g**2
        avg = rho * avg + (1 - rho) * g                               # centered
        denominator = velocity - avg**2 + epsilon  (centered) or velocity + epsilon
        increment = learning_rate * g / sqrt(denominator)
        momentum = momentum_coef * momentum + increment; var -= momentum   # momentum > 0
        var -= increment                                                   # otherwise

    Args:
        learning_rate: float or schedule (default 0.001).
        rho: discount of the squared-gradient average (default 0.9).
        momentum: plain momentum coefficient (default 0).
        epsilon: added inside the square root (default 1e-7).
        centered: normalise by the estimated variance instead of the second moment.
        **kwargs: ``weight_decay``, ``clipnorm``, ``clipvalue``, ``global_clipnorm``, ``name``.
    """

    _default_name = "rmsprop"

    def __init__(self, learning_rate: LearningRateLike = 0.001, rho: float = 0.9,
                 momentum: float = 0.0,
                 epsilon: float = 1e-7, centered: bool = False, **kwargs: Any) -> None:
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.rho = float(rho)
        self.momentum = float(momentum)
        self.epsilon = float(epsilon)
        self.centered = bool(centered)
        names = ["velocity"]
        if self.momentum > 0:
            names.append("momentum")
        if self.centered:
            names.append("average_gradient")
        self._slot_names = tuple(names)

    def _constants(self, lr: float, step: int) -> tuple:
        return (lr, self.rho, 1.0 - self.rho, self.epsilon, self.momentum)

    def _kernel(self, v, g, slots, scratch, consts) -> None:
        lr, rho, c, eps, mom = consts
        vel = slots[0]
        t = scratch[0]
        np.multiply(vel, rho, out=vel)
        np.square(g, out=t)
        np.multiply(t, c, out=t)
        np.add(vel, t, out=vel)
        if self.centered:
            avg = slots[-1]
            np.multiply(avg, rho, out=avg)
            np.multiply(g, c, out=t)
            np.add(avg, t, out=avg)
            np.square(avg, out=t)
            np.subtract(vel, t, out=t)
            np.add(t, eps, out=t)
        else:
            np.add(vel, eps, out=t)
        np.sqrt(t, out=t)
        np.divide(g, t, out=t)
        np.multiply(t, lr, out=t)
        if mom > 0:
            mo = slots[1]
            np.multiply(mo, mom, out=mo)
            np.add(mo, t, out=mo)
            np.subtract(v, mo, out=v)
        else:
            np.subtract(v, t, out=v)

    def update_step(self, gradient: Tensor, variable: Variable,
                    learning_rate: TensorLike) -> None:
        """The update rule in layerkit ops (the reference for ``_kernel``)."""
        rho, c = self.rho, 1.0 - self.rho
        vel = self.get_slot(variable, "velocity")
        self.assign(vel, _ew.add(_ew.multiply(vel, rho), _ew.multiply(_ew.square(gradient), c)))
        if self.centered:
            avg = self.get_slot(variable, "average_gradient")
            self.assign(avg, _ew.add(_ew.multiply(avg, rho), _ew.multiply(gradient, c)))
            denominator = _ew.add(_ew.subtract(vel, _ew.square(avg)), self.epsilon)
        else:
            denominator = _ew.add(vel, self.epsilon)
        lr = _ew.cast(learning_rate, variable.dtype)
        increment = _ew.divide(_ew.multiply(gradient, lr), _ew.sqrt(denominator))
        if self.momentum > 0:
            mo = self.get_slot(variable, "momentum")
            self.assign(mo, _ew.add(_ew.multiply(mo, self.momentum), increment))
            self.assign_sub(variable, mo)
        else:
            self.assign_sub(variable, increment)

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(rho=self.rho, momentum=self.momentum, epsilon=self.epsilon,
                      centered=self.centered)
        return config
