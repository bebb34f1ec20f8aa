"""Weight initializers (Keras classes, formulas and string names).

An initializer is called as ``init(shape, dtype=None)`` and returns a NumPy array
(float32 by default). With an integer ``seed`` it returns the same values on every
call; without one it draws a fresh seed from ``lk.random``'s global generator on each
call, so ``lk.random.set_seed(s)`` makes model initialisation reproducible.

Examples:
    >>> import layerkit as lk
    >>> lk.initializers.GlorotUniform(seed=0)((2, 3)).shape
    (2, 3)
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from layerkit._core.convert import FLOATX, as_dtype, to_array
from layerkit._core.serialization import init_kwargs
from layerkit._core.types import DTypeLike
from layerkit.primitives import random as _random

__all__ = ["Initializer", "Zeros", "Ones", "Constant", "RandomNormal", "RandomUniform",
           "TruncatedNormal", "VarianceScaling", "GlorotUniform", "GlorotNormal", "HeNormal",
           "HeUniform", "LecunNormal", "LecunUniform", "Orthogonal", "Identity",
           "zeros", "ones", "constant", "random_normal", "random_uniform", "truncated_normal",
           "variance_scaling", "glorot_uniform", "glorot_normal", "he_normal", "he_uniform",
           "lecun_normal", "lecun_uniform", "orthogonal", "identity", "get", "serialize",
           "deserialize"]


class Initializer:
    """Base class: subclasses implement ``__call__(shape, dtype=None)``."""

    def __call__(self, shape: Sequence[int], dtype: DTypeLike = None) -> np.ndarray:
        raise NotImplementedError

    def get_config(self) -> dict:
        return {}

    @classmethod
    def from_config(cls, config: dict) -> Initializer:
        """An initializer from :meth:`get_config` output (Keras 3's configs too)."""
        return cls(**init_kwargs(cls, config))

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_config().items())
        return f"{type(self).__name__}({args})"


def _dtype(dtype) -> np.dtype:
    return as_dtype(dtype) or FLOATX


class Zeros(Initializer):
    """All zeros."""

    def __call__(self, shape: Sequence[int], dtype: DTypeLike = None) -> np.ndarray:
        return np.zeros(tuple(shape), _dtype(dtype))


class Ones(Initializer):
    """All ones."""

    def __call__(self, shape: Sequence[int], dtype: DTypeLike = None) -> np.ndarray:
        return np.ones(tuple(shape), _dtype(dtype))


class Constant(Initializer):
    """Every element equal to ``value`` (a scalar, or an array broadcast to the shape)."""

    def __init__(self, value: Any = 0.0) -> None:
        self.value = value

    def __call__(self, shape: Sequence[int], dtype: DTypeLike = None) -> np.ndarray:
        return np.broadcast_to(to_array(self.value), tuple(shape)).astype(_dtype(dtype))

    def get_config(self) -> dict:
        v = self.value
        return {"value": v.tolist() if isinstance(v, np.ndarray) else v}


class _Random(Initializer):
    def __init__(self, seed: int | None = None) -> None:
        self.seed = seed

    def _rng(self) -> np.random.Generator:
        return _random.rng_for(self.seed)

    def _float_dtype(self, dtype) -> np.dtype:
        # As in Keras: random draws need a float dtype (cast to int they would be mostly
        # zeros, a silently useless weight).
        d = _dtype(dtype)
        if d.kind != "f":
            raise ValueError(f"{type(self).__name__} draws random floats and needs a "
                             f"floating-point dtype, received dtype={d.name}")
        return d

    def get_config(self) -> dict:
        return {"seed": self.seed}


class RandomNormal(_Random):
    """Normal draws with ``mean`` and ``stddev``."""

    def __init__(self, mean: float = 0.0, stddev: float = 0.05, seed: int | None = None) -> None:
        super().__init__(seed)
        self.mean, self.stddev = mean, stddev

    def __call__(self, shape: Sequence[int], dtype: DTypeLike = None) -> np.ndarray:
        dtype = self._float_dtype(dtype)
        a = self._rng().normal(self.mean, self.stddev, tuple(shape))
        return a.astype(dtype)

    def get_config(self) -> dict:
        return {"mean": self.mean, "stddev": self.stddev, "seed": self.seed}


class RandomUniform(_Random):
    """Uniform draws in ``[minval, maxval)``."""

    def __init__(self, minval: float = -0.05, maxval: float = 0.05,
                 seed: int | None = None) -> None:
        super().__init__(seed)
        self.minval, self.maxval = minval, maxval

    def __call__(self, shape: Sequence[int], dtype: DTypeLike = None) -> np.ndarray:
        dtype = self._float_dtype(dtype)
        a = self._rng().uniform(self.minval, self.maxval, tuple(shape))
        return a.astype(dtype)

    def get_config(self) -> dict:
        return {"minval": self.minval, "maxval": self.maxval, "seed": self.seed}


def _truncated(rng: np.random.Generator, shape: tuple, stddev: float) -> np.ndarray:
    """Normal(0, stddev) redrawn until every value lies within two standard deviations."""
    a = rng.standard_normal(shape)
    bad = np.abs(a) > 2.0
    while bad.any():
        a[bad] = rng.standard_normal(int(bad.sum()))
        bad = np.abs(a) > 2.0
    return a * stddev


class TruncatedNormal(_Random):
    """Normal draws within two standard deviations of the mean."""

    def __init__(self, mean: float = 0.0, stddev: float = 0.05, seed: int | None = None) -> None:
        super().__init__(seed)
        self.mean, self.stddev = mean, stddev

    def __call__(self, shape: Sequence[int], dtype: DTypeLike = None) -> np.ndarray:
        dtype = self._float_dtype(dtype)
        a = self.mean + _truncated(self._rng(), tuple(shape), self.stddev)
        return a.astype(dtype)

    def get_config(self) -> dict:
        return {"mean": self.mean, "stddev": self.stddev, "seed": self.seed}


def compute_fans(shape: tuple) -> tuple[float, float]:
    """Keras's (fan_in, fan_out): kernels are (..., in, out); leading dims are receptive."""
    shape = tuple(shape)
    if len(shape) == 0:
        return 1.0, 1.0
    if len(shape) == 1:
        return float(shape[0]), float(shape[0])
    receptive = math.prod(shape[:-2]) if len(shape) > 2 else 1
    return float(shape[-2] * receptive), float(shape[-1] * receptive)


class VarianceScaling(_Random):
    """Draws with variance ``scale / n``, ``n`` the fan in, out or their mean.

    Args:
        scale: positive factor.
        mode: ``'fan_in'``, ``'fan_out'`` or ``'fan_avg'``.
        distribution: ``'truncated_normal'``, ``'untruncated_normal'`` or ``'uniform'``.
        seed: optional int.
    """

    def __init__(self, scale: float = 1.0, mode: str = "fan_in",
                 distribution: str = "truncated_normal", seed: int | None = None) -> None:
        super().__init__(seed)
        if scale <= 0:
            raise ValueError(f"VarianceScaling: scale must be positive, received {scale}")
        if mode not in ("fan_in", "fan_out", "fan_avg"):
            raise ValueError(f"VarianceScaling: mode must be 'fan_in', 'fan_out' or "
                             f"'fan_avg', received {mode!r}")
        distribution = "untruncated_normal" if distribution == "normal" else distribution
        if distribution not in ("truncated_normal", "untruncated_normal", "uniform"):
            raise ValueError(f"VarianceScaling: unknown distribution {distribution!r}")
        self.scale, self.mode, self.distribution = scale, mode, distribution

    def __call__(self, shape: Sequence[int], dtype: DTypeLike = None) -> np.ndarray:
        dtype = self._float_dtype(dtype)
        shape = tuple(shape)
        fan_in, fan_out = compute_fans(shape)
        n = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2}[self.mode]
        var = self.scale / max(1.0, n)
        rng = self._rng()
        if self.distribution == "truncated_normal":
            # 0.8796... is the stddev of a unit normal truncated to [-2, 2].
            a = _truncated(rng, shape, math.sqrt(var) / 0.87962566103423978)
        elif self.distribution == "untruncated_normal":
            a = rng.normal(0.0, math.sqrt(var), shape)
        else:
            limit = math.sqrt(3.0 * var)
            a = rng.uniform(-limit, limit, shape)
        return a.astype(dtype)

    def get_config(self) -> dict:
        return {"scale": self.scale, "mode": self.mode, "distribution": self.distribution,
                "seed": self.seed}


def _preset(name: str, scale: float, mode: str, distribution: str, doc: str):
    def __init__(self, seed: int | None = None) -> None:
        VarianceScaling.__init__(self, scale, mode, distribution, seed)

    def get_config(self) -> dict:
        return {"seed": self.seed}

    return type(name, (VarianceScaling,), {"__init__": __init__, "get_config": get_config,
                                           "__doc__": doc, "__module__": __name__})


GlorotUniform = _preset("GlorotUniform", 1.0, "fan_avg", "uniform",
                        "Uniform in ±sqrt(6 / (fan_in + fan_out)) (Keras's default kernel).")
GlorotNormal = _preset("GlorotNormal", 1.0, "fan_avg", "truncated_normal",
                       "Truncated normal with stddev sqrt(2 / (fan_in + fan_out)).")
HeNormal = _preset("HeNormal", 2.0, "fan_in", "truncated_normal",
                   "Truncated normal with stddev sqrt(2 / fan_in).")
HeUniform = _preset("HeUniform", 2.0, "fan_in", "uniform", "Uniform in ±sqrt(6 / fan_in).")
LecunNormal = _preset("LecunNormal", 1.0, "fan_in", "truncated_normal",
                      "Truncated normal with stddev sqrt(1 / fan_in).")
LecunUniform = _preset("LecunUniform", 1.0, "fan_in", "uniform",
                       "Uniform in ±sqrt(3 / fan_in).")


class Orthogonal(_Random):
    """A (semi-)orthogonal matrix times ``gain``; shape (..., n) is treated as (prod(...), n)."""

    def __init__(self, gain: float = 1.0, seed: int | None = None) -> None:
        super().__init__(seed)
        self.gain = gain

    def __call__(self, shape: Sequence[int], dtype: DTypeLike = None) -> np.ndarray:
        dtype = self._float_dtype(dtype)
        shape = tuple(shape)
        if len(shape) < 2:
            raise ValueError(f"Orthogonal initializer needs a shape of rank >= 2, received "
                             f"{shape}")
        rows, cols = math.prod(shape[:-1]), shape[-1]
        a = self._rng().standard_normal((max(rows, cols), min(rows, cols)))
        q, r = np.linalg.qr(a)
        q = q * np.sign(np.diag(r))  # makes the distribution uniform (Haar)
        if rows < cols:
            q = q.T
        return (self.gain * q).reshape(shape).astype(dtype)

    def get_config(self) -> dict:
        return {"gain": self.gain, "seed": self.seed}


class Identity(Initializer):
    """``gain`` times the identity matrix (2-D shapes only)."""

    def __init__(self, gain: float = 1.0) -> None:
        self.gain = gain

    def __call__(self, shape: Sequence[int], dtype: DTypeLike = None) -> np.ndarray:
        if len(shape) != 2:
            raise ValueError(f"Identity initializer needs a 2-D shape, received {tuple(shape)}")
        return (self.gain * np.eye(shape[0], shape[1])).astype(_dtype(dtype))

    def get_config(self) -> dict:
        return {"gain": self.gain}


# Keras exposes lowercase aliases of the classes: ``initializers.glorot_uniform(seed=1)``.
zeros, ones, constant = Zeros, Ones, Constant
random_normal, random_uniform, truncated_normal = RandomNormal, RandomUniform, TruncatedNormal
variance_scaling, orthogonal, identity = VarianceScaling, Orthogonal, Identity
glorot_uniform, glorot_normal, he_normal, he_uniform = (GlorotUniform, GlorotNormal, HeNormal,
                                                        HeUniform)
lecun_normal, lecun_uniform = LecunNormal, LecunUniform

_BY_NAME = {c.__name__: c for c in (Zeros, Ones, Constant, RandomNormal, RandomUniform,
                                    TruncatedNormal, VarianceScaling, GlorotUniform,
                                    GlorotNormal, HeNormal, HeUniform, LecunNormal,
                                    LecunUniform, Orthogonal, Identity)}
_BY_NAME.update({"zeros": Zeros, "ones": Ones, "constant": Constant,
                 "random_normal": RandomNormal, "random_uniform": RandomUniform,
                 "truncated_normal": TruncatedNormal, "variance_scaling": VarianceScaling,
                 "glorot_uniform": GlorotUniform, "glorot_normal": GlorotNormal,
                 "he_normal": HeNormal, "he_uniform": HeUniform, "lecun_normal": LecunNormal,
                 "lecun_uniform": LecunUniform, "orthogonal": Orthogonal,
                 "identity": Identity, "uniform": RandomUniform, "normal": RandomNormal})


def get(identifier: Any) -> Any:
    """An initializer from a name, a config dict, an instance or a callable.

    Raises:
        ValueError: for an unknown name, listing the known ones.
    """
    if identifier is None or isinstance(identifier, Initializer):
        return identifier
    if isinstance(identifier, str):
        cls = _BY_NAME.get(identifier)
        if cls is None:
            raise ValueError(f"unknown initializer {identifier!r}; known: "
                             f"{sorted(k for k in _BY_NAME if k.islower())}")
        return cls()
    if isinstance(identifier, dict):
        return deserialize(identifier)
    if isinstance(identifier, type) and issubclass(identifier, Initializer):
        return identifier()
    if callable(identifier):
        return identifier
    raise ValueError(f"cannot interpret {identifier!r} as an initializer")


def serialize(initializer: Any) -> dict | str | None:
    """Keras's config of an initializer (None and names stay as they are).

    Raises:
        TypeError: a callable that is neither an Initializer nor a function.
    """
    if initializer is None or isinstance(initializer, str):
        return initializer
    from layerkit.saving.serialization_lib import serialize_keras_object

    return serialize_keras_object(initializer)


def deserialize(config: dict[str, Any], custom_objects: dict | None = None) -> Any:
    """An initializer from :func:`serialize` output or Keras's (see ``lk.saving``).

    Raises:
        ValueError: an unknown class name.
    """
    from layerkit.saving.serialization_lib import deserialize_keras_object

    obj = deserialize_keras_object(config, custom_objects, kind="initializers")
    return get(obj) if isinstance(obj, str) else obj
