"""Adagrad, Keras 3 update rule."""
from __future__ import annotations

from typing import Any

import numpy as np

from layerkit._core.tensor import Tensor
from layerkit._core.types import TensorLike
from layerkit._core.variable import Variable
from layerkit.optimizers.optimizer import LearningRateLike, Optimizer
from layerkit.primitives import elementwise as _ew


class Adagrad(Optimizer):
    """Adagrad: per-element learning rates shrinking with the summed squared gradients.

    Update rule (Keras 3), slot ``accumulator`` starting at ``initial_accumulator_value``::

        accumulator += g**2
        var -= learning_rate * g / sqrt(accumulator + epsilon)

    Args:
        learning_rate: float or schedule (default 0.001).
        initial_accumulator_value: starting accumulator value (default 0.1, >= 0).
        epsilon: added inside the square root (default 1e-7).
        **kwargs: ``weight_decay``, ``clipnorm``, ``clipvalue``, ``global_clipnorm``, ``name``.

    Raises:
        ValueError: a negative ``initial_accumulator_value``.
    """

    _default_name = "adagrad"

    def __init__(self, learning_rate: LearningRateLike = 0.001,
                 initial_accumulator_value: float = 0.1,
                 epsilon: float = 1e-7, **kwargs: Any) -> None:
        super().__init__(learning_rate=learning_rate, **kwargs)
        if initial_accumulator_value < 0:
            raise ValueError(
                f"Adagrad: initial_accumulator_value must be >= 0. Received: "
                f"initial_accumulator_value={initial_accumulator_value}"
            )
        self.initial_accumulator_value = float(initial_accumulator_value)
        self.epsilon = float(epsilon)
        self._slot_names = ("accumulator",)
        self._slot_init = {"accumulator": self.initial_accumulator_value}

    def _constants(self, lr: float, step: int) -> tuple:
        return (lr, self.epsilon)

    def _kernel(self, v, g, slots, scratch, consts) -> None:
        lr, eps = consts
        acc = slots[0]
        t = scratch[0]
        np.square(g, out=t)
        np.add(acc, t, out=acc)
        np.add(acc, eps, out=t)
        np.sqrt(t, out=t)
        np.divide(g, t, out=t)
        np.multiply(t, lr, out=t)
        np.subtract(v, t, out=v)

    def update_step(self, gradient: Tensor, variable: Variable,
                    learning_rate: TensorLike) -> None:
        """The update rule in layerkit ops (the reference for ``_kernel``)."""
        acc = self.get_slot(variable, "accumulator")
        self.assign_add(acc, _ew.square(gradient))
        lr = _ew.cast(learning_rate, variable.dtype)
        self.assign_sub(variable, _ew.divide(_ew.multiply(gradient, lr),
                                             _ew.sqrt(_ew.add(acc, self.epsilon))))

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(initial_accumulator_value=self.initial_accumulator_value,
                      epsilon=self.epsilon)
        return config
