"""Nadam and Adamax, Keras 3 update rules (written only as ``update_step`` in layerkit
ops: no fused NumPy kernel, so they take the reference path of the contract)."""
from __future__ import annotations

from typing import Any

from layerkit._core.tensor import Tensor
from layerkit._core.types import TensorLike
from layerkit._core.variable import Variable
from layerkit.optimizers.optimizer import Optimizer
from layerkit.optimizers.schedules import LearningRateSchedule
from layerkit.primitives import elementwise as _ew


class _TwoMoments(Optimizer):
    """The constructor and config that Nadam and Adamax share (two decay rates and an
    epsilon, slots named by ``_slot_names``)."""

    def __init__(self, learning_rate: float | LearningRateSchedule = 0.001,
                 beta_1: float = 0.9, beta_2: float = 0.999,
                 epsilon: float = 1e-7, **kwargs: Any) -> None:
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta_1 = float(beta_1)
        self.beta_2 = float(beta_2)
        self.epsilon = float(epsilon)

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(beta_1=self.beta_1, beta_2=self.beta_2, epsilon=self.epsilon)
        return config


class Nadam(_TwoMoments):
    """Adam with Nesterov momentum (Dozat), as Keras 3's ``Nadam``.

    With ``t = iterations + 1``, ``u_t = beta_1 * (1 - 0.5 * 0.96**t)`` and ``P_t`` the
    product ``u_1 * ... * u_t``::

        m += (g - m) * (1 - beta_1);  v += (g**2 - v) * (1 - beta_2)
        m_hat = u_{t+1} * m / (1 - P_t * u_{t+1}) + (1 - u_t) * g / (1 - P_t)
        var -= learning_rate * m_hat / (sqrt(v / (1 - beta_2**t)) + epsilon)

    Args:
        learning_rate: float or schedule (default 0.001).
        beta_1: decay of the first moment (default 0.9).
        beta_2: decay of the second moment (default 0.999).
        epsilon: added to the denominator (default 1e-7).
        **kwargs: ``weight_decay``, ``clipnorm``, ``clipvalue``, ``global_clipnorm``, ``name``.

    Examples:
        >>> import layerkit as lk
        >>> v = lk.Variable([1.0])
        >>> _ = lk.optimizers.Nadam(0.1).apply_gradients([(lk.constant([2.0]), v)])
        >>> v.numpy().round(4)
        array([0.8937], dtype=float32)
    """

    _default_name = "nadam"
    _slot_names = ("momentum", "velocity")

    def __init__(self, learning_rate: float | LearningRateSchedule = 0.001,
                 beta_1: float = 0.9, beta_2: float = 0.999,
                 epsilon: float = 1e-7, **kwargs: Any) -> None:
        super().__init__(learning_rate, beta_1, beta_2, epsilon, **kwargs)
        self._products = [1.0]  # P_0, P_1, ...: the momentum schedule's running product

    def _u(self, t: int) -> float:
        return self.beta_1 * (1.0 - 0.5 * 0.96 ** t)

    def _product(self, t: int) -> float:
        while len(self._products) <= t:  # (after a restore, rebuilt from the step count)
            self._products.append(self._products[-1] * self._u(len(self._products)))
        return self._products[t]

    def update_step(self, gradient: Tensor, variable: Variable,
                    learning_rate: TensorLike) -> None:
        """The update rule in layerkit ops."""
        t = int(self.iterations.numpy()) + 1
        u_t, u_next, p_t = self._u(t), self._u(t + 1), self._product(t)
        dtype = variable.dtype
        m, v = self.get_slot(variable, "momentum"), self.get_slot(variable, "velocity")
        self.assign_add(m, _ew.multiply(_ew.subtract(gradient, m), 1.0 - self.beta_1))
        self.assign_add(v, _ew.multiply(_ew.subtract(_ew.square(gradient), v),
                                        1.0 - self.beta_2))
        m_hat = _ew.add(_ew.multiply(m, u_next / (1.0 - p_t * u_next)),
                        _ew.multiply(gradient, (1.0 - u_t) / (1.0 - p_t)))
        v_hat = _ew.divide(v, 1.0 - self.beta_2 ** t)
        lr = _ew.cast(learning_rate, dtype)
        self.assign_sub(variable, _ew.divide(_ew.multiply(m_hat, lr),
                                             _ew.add(_ew.sqrt(v_hat), self.epsilon)))


class Adamax(_TwoMoments):
    """Adam with the infinity norm (Kingma & Ba, section 7), as Keras 3's ``Adamax``::

        m += (g - m) * (1 - beta_1)
        u = max(beta_2 * u, |g|)
        var -= learning_rate * m / ((1 - beta_1**t) * (u + epsilon))

    Args:
        learning_rate: float or schedule (default 0.001).
        beta_1: decay of the first moment (default 0.9).
        beta_2: decay of the infinity norm (default 0.999).
        epsilon: added to the norm (default 1e-7).
        **kwargs: ``weight_decay``, ``clipnorm``, ``clipvalue``, ``global_clipnorm``, ``name``.

    Examples:
        >>> import layerkit as lk
        >>> v = lk.Variable([1.0])
        >>> _ = lk.optimizers.Adamax(0.1).apply_gradients([(lk.constant([2.0]), v)])
        >>> v.numpy().round(4)
        array([0.9], dtype=float32)
    """

    _default_name = "adamax"
    _slot_names = ("momentum", "norm")

    def update_step(self, gradient: Tensor, variable: Variable,
                    learning_rate: TensorLike) -> None:
        """The update rule in layerkit ops."""
        t = int(self.iterations.numpy()) + 1
        m, u = self.get_slot(variable, "momentum"), self.get_slot(variable, "norm")
        self.assign_add(m, _ew.multiply(_ew.subtract(gradient, m), 1.0 - self.beta_1))
        self.assign(u, _ew.maximum(_ew.multiply(u, self.beta_2), _ew.abs(gradient)))
        lr = _ew.cast(learning_rate, variable.dtype)
        self.assign_sub(variable, _ew.divide(
            _ew.multiply(m, lr), _ew.multiply(_ew.add(u, self.epsilon),
                                              1.0 - self.beta_1 ** t)))
