"""Learning-rate schedules: callables from the optimizer step to a learning rate.

An optimizer given a schedule evaluates it once per ``apply_gradients`` with its
``iterations`` count *before* the increment (Keras semantics), so step 0 is the first
update.
"""
from __future__ import annotations

import math

import numpy as np

from layerkit._core.serialization import init_kwargs
from layerkit._core.tensor import Tensor
from layerkit._core.types import TensorLike

__all__ = ["LearningRateSchedule", "ExponentialDecay", "CosineDecay", "PiecewiseConstantDecay",
           "InverseTimeDecay", "PolynomialDecay", "CosineDecayRestarts", "serialize",
           "deserialize"]


def _check_steps(schedule: str, arg: str, value: float) -> None:
    if value <= 0:
        raise ValueError(f"{schedule}: {arg} must be > 0. Received: {arg}={value}")


def _step(step) -> float:
    if isinstance(step, Tensor):
        step = step._v
    return float(np.asarray(step))


class LearningRateSchedule:
    """Base class: subclass and override ``__call__(step)`` (and ``get_config``).

    Examples:
        >>> class InverseTime(LearningRateSchedule):
        ...     def __init__(self, lr):
        ...         self.lr = lr
        ...     def __call__(self, step):
        ...         return self.lr / (float(step) + 1)
        >>> InverseTime(0.1)(4)
        0.02
    """

    def __call__(self, step: TensorLike) -> float:
        raise NotImplementedError(
            f"learning-rate schedule '{type(self).__name__}' must override __call__(step)"
        )

    def get_config(self) -> dict:
        raise NotImplementedError(
            f"learning-rate schedule '{type(self).__name__}' must override get_config() "
            f"to be serializable"
        )

    @classmethod
    def from_config(cls, config: dict) -> LearningRateSchedule:
        """A schedule from :meth:`get_config` output (Keras's too)."""
        return cls(**init_kwargs(cls, config))


class _RateDecay(LearningRateSchedule):
    """The arguments, checks and config that ExponentialDecay and InverseTimeDecay share;
    ``_decay(p)`` maps the (possibly floored) ``step / decay_steps`` to the factor."""

    def __init__(self, initial_learning_rate: float, decay_steps: float, decay_rate: float,
                 staircase: bool = False, name: str | None = None) -> None:
        _check_steps(type(self).__name__, "decay_steps", decay_steps)
        self.initial_learning_rate = initial_learning_rate
        self.decay_steps = decay_steps
        self.decay_rate = decay_rate
        self.staircase = staircase
        self.name = name or type(self).__name__

    def _decay(self, p: float) -> float:
        raise NotImplementedError

    def __call__(self, step: TensorLike) -> float:
        p = _step(step) / self.decay_steps
        if self.staircase:
            p = math.floor(p)
        return float(self.initial_learning_rate * self._decay(p))

    def get_config(self) -> dict:
        return {"initial_learning_rate": self.initial_learning_rate,
                "decay_steps": self.decay_steps, "decay_rate": self.decay_rate,
                "staircase": self.staircase, "name": self.name}


class ExponentialDecay(_RateDecay):
    """``initial_learning_rate * decay_rate ** (step / decay_steps)``.

    Args:
        initial_learning_rate: the rate at step 0.
        decay_steps: positive int; the exponent's time scale.
        decay_rate: the factor applied every ``decay_steps`` steps.
        staircase: if True, ``step / decay_steps`` is floored (discrete drops).
        name: a name for configs.

    Raises:
        ValueError: ``decay_steps <= 0``.

    Examples:
        >>> round(ExponentialDecay(0.1, decay_steps=10, decay_rate=0.5)(10), 6)
        0.05
    """

    def __init__(self, initial_learning_rate: float, decay_steps: int, decay_rate: float,
                 staircase: bool = False, name: str = "ExponentialDecay") -> None:
        super().__init__(initial_learning_rate, decay_steps, decay_rate, staircase, name)

    def _decay(self, p: float) -> float:
        return self.decay_rate ** p


class CosineDecay(LearningRateSchedule):
    """Cosine decay from ``initial_learning_rate`` to ``alpha * initial`` over ``decay_steps``.

    With ``warmup_target`` set, the rate first rises linearly from
    ``initial_learning_rate`` to ``warmup_target`` over ``warmup_steps`` and then decays
    from ``warmup_target``. After the schedule ends the rate stays at its last value.

    Args:
        initial_learning_rate: the starting rate.
        decay_steps: number of decay steps (after warmup).
        alpha: the final rate as a fraction of the rate decayed from.
        name: a name for configs.
        warmup_target: the rate reached at the end of warmup (None: no warmup).
        warmup_steps: the warmup length in steps.

    Examples:
        >>> round(CosineDecay(1.0, decay_steps=10)(5), 6)
        0.5
    """

    def __init__(self, initial_learning_rate: float, decay_steps: int, alpha: float = 0.0,
                 name: str = "CosineDecay", warmup_target: float | None = None,
                 warmup_steps: int = 0) -> None:
        _check_steps("CosineDecay", "decay_steps", decay_steps)
        self.initial_learning_rate = initial_learning_rate
        self.decay_steps = decay_steps
        self.alpha = alpha
        self.name = name
        self.warmup_target = warmup_target
        self.warmup_steps = warmup_steps

    def _decay(self, step: float, start_lr: float) -> float:
        cosine = 0.5 * (1.0 + math.cos(math.pi * step / self.decay_steps))
        return start_lr * ((1.0 - self.alpha) * cosine + self.alpha)

    def __call__(self, step: TensorLike) -> float:
        s = _step(step)
        if self.warmup_target is None:
            return float(self._decay(min(s, self.decay_steps), self.initial_learning_rate))
        s = min(s, self.decay_steps + self.warmup_steps)
        if s < self.warmup_steps:
            frac = s / self.warmup_steps
            return float(self.initial_learning_rate
                         + (self.warmup_target - self.initial_learning_rate) * frac)
        return float(self._decay(s - self.warmup_steps, self.warmup_target))

    def get_config(self) -> dict:
        return {"initial_learning_rate": self.initial_learning_rate,
                "decay_steps": self.decay_steps, "alpha": self.alpha, "name": self.name,
                "warmup_target": self.warmup_target, "warmup_steps": self.warmup_steps}


class PiecewiseConstantDecay(LearningRateSchedule):
    """``values[0]`` while ``step <= boundaries[0]``, ``values[i]`` while
    ``boundaries[i-1] < step <= boundaries[i]``, ``values[-1]`` after the last boundary.

    Raises:
        ValueError: ``len(values) != len(boundaries) + 1``.

    Examples:
        >>> s = PiecewiseConstantDecay([10, 20], [1.0, 0.5, 0.1])
        >>> s(10), s(11), s(21)
        (1.0, 0.5, 0.1)
    """

    def __init__(self, boundaries: list, values: list, name: str = "PiecewiseConstant") -> None:
        if len(boundaries) != len(values) - 1:
            raise ValueError(
                f"PiecewiseConstantDecay: expected len(values) == len(boundaries) + 1. "
                f"Received: boundaries={boundaries} (length {len(boundaries)}), "
                f"values={values} (length {len(values)})"
            )
        self.boundaries = list(boundaries)
        self.values = list(values)
        self.name = name

    def __call__(self, step: TensorLike) -> float:
        s = _step(step)
        for b, v in zip(self.boundaries, self.values):
            if s <= b:
                return float(v)
        return float(self.values[-1])

    def get_config(self) -> dict:
        return {"boundaries": self.boundaries, "values": self.values, "name": self.name}


class InverseTimeDecay(_RateDecay):
    """``initial_learning_rate / (1 + decay_rate * step / decay_steps)`` (Keras's formula).

    Args:
        initial_learning_rate: the rate at step 0.
        decay_steps: positive; the time scale of the decay.
        decay_rate: how fast the rate falls.
        staircase: if True, ``step / decay_steps`` is floored.
        name: a name for configs.

    Raises:
        ValueError: ``decay_steps <= 0``.

    Examples:
        >>> InverseTimeDecay(0.1, decay_steps=10, decay_rate=1.0)(10)
        0.05
    """

    def __init__(self, initial_learning_rate: float, decay_steps: float, decay_rate: float,
                 staircase: bool = False, name: str = "InverseTimeDecay") -> None:
        super().__init__(initial_learning_rate, decay_steps, decay_rate, staircase, name)

    def _decay(self, p: float) -> float:
        return 1.0 / (1.0 + self.decay_rate * p)


class PolynomialDecay(LearningRateSchedule):
    """From ``initial_learning_rate`` to ``end_learning_rate`` over ``decay_steps`` along
    ``(1 - step / decay_steps) ** power``; then constant, or with ``cycle=True`` the
    horizon grows to the next multiple of ``decay_steps`` (Keras's formula).

    Raises:
        ValueError: ``decay_steps <= 0``.

    Examples:
        >>> s = PolynomialDecay(1.0, decay_steps=10, end_learning_rate=0.0)
        >>> s(0), s(5), s(20)
        (1.0, 0.5, 0.0)
    """

    def __init__(self, initial_learning_rate: float, decay_steps: int,
                 end_learning_rate: float = 0.0001, power: float = 1.0, cycle: bool = False,
                 name: str = "PolynomialDecay") -> None:
        _check_steps("PolynomialDecay", "decay_steps", decay_steps)
        self.initial_learning_rate = initial_learning_rate
        self.decay_steps = decay_steps
        self.end_learning_rate = end_learning_rate
        self.power = power
        self.cycle = cycle
        self.name = name

    def __call__(self, step: TensorLike) -> float:
        s = _step(step)
        steps = float(self.decay_steps)
        if self.cycle:
            steps *= max(math.ceil(s / steps), 1.0)  # step 0 uses the first horizon
        else:
            s = min(s, steps)
        frac = (1.0 - s / steps) ** self.power
        return float((self.initial_learning_rate - self.end_learning_rate) * frac
                     + self.end_learning_rate)

    def get_config(self) -> dict:
        return {"initial_learning_rate": self.initial_learning_rate,
                "decay_steps": self.decay_steps, "end_learning_rate": self.end_learning_rate,
                "power": self.power, "cycle": self.cycle, "name": self.name}


class CosineDecayRestarts(LearningRateSchedule):
    """Cosine decay with warm restarts (SGDR): periods of ``first_decay_steps``, each
    ``t_mul`` times longer than the last, restarting at ``m_mul`` times the previous
    peak; ``alpha`` is the floor as a fraction of the peak.

    Examples:
        >>> s = CosineDecayRestarts(1.0, first_decay_steps=10, t_mul=1.0)
        >>> round(s(5), 6), round(s(10), 6), round(s(15), 6)
        (0.5, 1.0, 0.5)
    """

    def __init__(self, initial_learning_rate: float, first_decay_steps: int,
                 t_mul: float = 2.0, m_mul: float = 1.0, alpha: float = 0.0,
                 name: str = "SGDRDecay") -> None:
        _check_steps("CosineDecayRestarts", "first_decay_steps", first_decay_steps)
        self.initial_learning_rate = initial_learning_rate
        self.first_decay_steps = first_decay_steps
        self._t_mul = t_mul
        self._m_mul = m_mul
        self.alpha = alpha
        self.name = name

    def __call__(self, step: TensorLike) -> float:
        frac = _step(step) / self.first_decay_steps
        t, m = float(self._t_mul), float(self._m_mul)
        if t == 1.0:
            restart = math.floor(frac)
            frac -= restart
        else:
            restart = math.floor(math.log(1.0 - frac * (1.0 - t)) / math.log(t))
            done = (1.0 - t ** restart) / (1.0 - t)
            frac = (frac - done) / t ** restart
        cosine = 0.5 * m ** restart * (1.0 + math.cos(math.pi * frac))
        return float(self.initial_learning_rate * ((1.0 - self.alpha) * cosine + self.alpha))

    def get_config(self) -> dict:
        return {"initial_learning_rate": self.initial_learning_rate,
                "first_decay_steps": self.first_decay_steps, "t_mul": self._t_mul,
                "m_mul": self._m_mul, "alpha": self.alpha, "name": self.name}


_SCHEDULES = {c.__name__: c for c in (ExponentialDecay, CosineDecay, PiecewiseConstantDecay,
                                      InverseTimeDecay, PolynomialDecay, CosineDecayRestarts)}


def serialize(schedule: LearningRateSchedule) -> dict:
    """Keras's config of a schedule (see ``lk.saving``)."""
    from layerkit.saving.serialization_lib import serialize_keras_object

    return serialize_keras_object(schedule)


def deserialize(config: dict, custom_objects: dict | None = None) -> LearningRateSchedule:
    """Rebuild a schedule from :func:`serialize` output (or Keras's).

    Raises:
        ValueError: the class name is unknown (pass custom_objects for your own).
    """
    from layerkit.saving.serialization_lib import deserialize_keras_object

    return deserialize_keras_object(config, custom_objects, kind="schedules")
