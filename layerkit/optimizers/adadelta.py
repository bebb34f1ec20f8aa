"""Adadelta and Lion, Keras 3 update rules (``update_step`` in layerkit ops only)."""
from __future__ import annotations

from typing import Any

from layerkit._core.tensor import Tensor
from layerkit._core.types import TensorLike
from layerkit._core.variable import Variable
from layerkit.optimizers.optimizer import Optimizer
from layerkit.optimizers.schedules import LearningRateSchedule
from layerkit.primitives import elementwise as _ew


class Adadelta(Optimizer):
    """Adadelta (Zeiler), as Keras 3's: with ``rms(x) = sqrt(x + epsilon)``::

        acc_g = rho * acc_g + (1 - rho) * g**2
        delta = -rms(acc_delta) * g / rms(acc_g)
        acc_delta = rho * acc_delta + (1 - rho) * delta**2
        var += learning_rate * delta

    Args:
        learning_rate: float or schedule (default 0.001; Keras's default, the paper uses 1).
        rho: the decay rate (default 0.95).
        epsilon: inside the square roots (default 1e-7).
        **kwargs: ``weight_decay``, ``clipnorm``, ``clipvalue``, ``global_clipnorm``, ``name``.
    """

    _default_name = "adadelta"

    def __init__(self, learning_rate: float | LearningRateSchedule = 0.001,
                 rho: float = 0.95, epsilon: float = 1e-7,
                 **kwargs: Any) -> None:
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.rho = float(rho)
        self.epsilon = float(epsilon)
        self._slot_names = ("accumulated_grad", "accumulated_delta_var")

    def update_step(self, gradient: Tensor, variable: Variable,
                    learning_rate: TensorLike) -> None:
        """The update rule in layerkit ops."""
        acc_g = self.get_slot(variable, "accumulated_grad")
        acc_d = self.get_slot(variable, "accumulated_delta_var")
        rho = self.rho
        self.assign(acc_g, _ew.add(_ew.multiply(acc_g, rho),
                                   _ew.multiply(_ew.square(gradient), 1.0 - rho)))
        delta = _ew.negative(_ew.divide(
            _ew.multiply(_ew.sqrt(_ew.add(acc_d, self.epsilon)), gradient),
            _ew.sqrt(_ew.add(acc_g, self.epsilon))))
        self.assign(acc_d, _ew.add(_ew.multiply(acc_d, rho),
                                   _ew.multiply(_ew.square(delta), 1.0 - rho)))
        self.assign_add(variable, _ew.multiply(delta, _ew.cast(learning_rate, variable.dtype)))

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(rho=self.rho, epsilon=self.epsilon)
        return config


class Lion(Optimizer):
    """Lion (Chen et al., 2023), as Keras 3's: the sign of an interpolated momentum::

        var -= learning_rate * sign(beta_1 * m + (1 - beta_1) * g)
        m = beta_2 * m + (1 - beta_2) * g

    Args:
        learning_rate: float or schedule (default 0.001).
        beta_1: interpolation for the update (default 0.9, in (0, 1]).
        beta_2: decay of the momentum (default 0.99).
        **kwargs: ``weight_decay``, ``clipnorm``, ``clipvalue``, ``global_clipnorm``, ``name``.

    Raises:
        ValueError: ``beta_1`` outside (0, 1] (the optimizer would be sign SGD).
    """

    _default_name = "lion"

    def __init__(self, learning_rate: float | LearningRateSchedule = 0.001,
                 beta_1: float = 0.9, beta_2: float = 0.99,
                 **kwargs: Any) -> None:
        super().__init__(learning_rate=learning_rate, **kwargs)
        if not 0 < beta_1 <= 1:
            raise ValueError(f"Lion: beta_1 must be in (0, 1]; otherwise the optimizer "
                             f"degenerates to sign SGD. Received: beta_1={beta_1}")
        self.beta_1 = float(beta_1)
        self.beta_2 = float(beta_2)
        self._slot_names = ("momentum",)

    def update_step(self, gradient: Tensor, variable: Variable,
                    learning_rate: TensorLike) -> None:
        """The update rule in layerkit ops."""
        m = self.get_slot(variable, "momentum")
        direction = _ew.sign(_ew.add(_ew.multiply(m, self.beta_1),
                                     _ew.multiply(gradient, 1.0 - self.beta_1)))
        self.assign_sub(variable, _ew.multiply(direction,
                                               _ew.cast(learning_rate, variable.dtype)))
        self.assign(m, _ew.add(_ew.multiply(m, self.beta_2),
                               _ew.multiply(gradient, 1.0 - self.beta_2)))

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(beta_1=self.beta_1, beta_2=self.beta_2)
        return config
