"""Seeded random ops (no gradients) and the global generator.

``lk.random.set_seed(s)`` reseeds the global generator; every consumer that takes an
optional ``seed`` (these ops, initializers, dropout, Dataset.shuffle, Model.fit
shuffling) draws its seed from it with :func:`next_seed` when none is given, so one
call makes a whole program reproducible. An op-level ``seed`` alone gives the same
result on every call.

A :class:`Generator` is an independent stream with the same sampling methods; its
``get_state()`` is a JSON-able dict, so checkpoints can save it (the global one too,
through :func:`get_state` / :func:`set_state`).
"""
from __future__ import annotations

import numpy as np

from layerkit._core.convert import FLOATX, as_dtype, to_array
from layerkit._core.op import wrap
from layerkit._core.tensor import Tensor

__all__: list[str] = []  # public names are exported through layerkit.random

_INT64 = np.dtype(np.int64)


# ---- samplers on a numpy Generator (shared by the functions and Generator methods) ---
def _shape(shape, op: str) -> tuple:
    if isinstance(shape, Tensor):
        shape = np.asarray(shape._v).tolist()
    elif isinstance(shape, np.ndarray):
        shape = shape.tolist()
    if isinstance(shape, (int, np.integer)):
        shape = [shape]
    try:
        dims = tuple(int(d) for d in shape)
    except (TypeError, ValueError):
        raise TypeError(f"lk.random.{op}: shape must be a sequence of ints, received "
                        f"{shape!r}") from None
    if any(d < 0 for d in dims):
        raise ValueError(f"lk.random.{op}: shape {dims} has a negative dimension")
    return dims


def _float_dtype(dtype, op: str) -> np.dtype:
    dt = as_dtype(dtype)
    if dt.kind != "f":
        raise TypeError(f"lk.random.{op}: dtype must be a float dtype, received {dt.name}")
    return dt


def _param(v, dt: np.dtype) -> np.ndarray | float:
    if isinstance(v, (int, float)):
        return v
    return to_array(v).astype(dt, copy=False)


def _standard_normal(rng: np.random.Generator, shape: tuple, dt: np.dtype) -> np.ndarray:
    if dt in (np.float32, np.float64):
        return rng.standard_normal(shape, dtype=dt)
    return rng.standard_normal(shape, dtype=np.float32).astype(dt)


def _normal(rng, shape, mean, stddev, dtype) -> Tensor:
    dt = _float_dtype(dtype, "normal")
    z = _standard_normal(rng, _shape(shape, "normal"), dt)
    return wrap(np.asarray(z * _param(stddev, dt) + _param(mean, dt), dt))


def _truncated_normal(rng, shape, mean, stddev, dtype) -> Tensor:
    dt = _float_dtype(dtype, "truncated_normal")
    shape = _shape(shape, "truncated_normal")
    z = _standard_normal(rng, shape, dt).reshape(-1)
    # Redraw values beyond two standard deviations (TF semantics); ~4.6% per round.
    bad = np.flatnonzero(np.abs(z) > 2)
    while bad.size:
        z[bad] = _standard_normal(rng, (bad.size,), dt)
        bad = bad[np.abs(z[bad]) > 2]
    z = z.reshape(shape)
    return wrap(np.asarray(z * _param(stddev, dt) + _param(mean, dt), dt))


def _uniform(rng, shape, minval, maxval, dtype) -> Tensor:
    dt = as_dtype(dtype)
    shape = _shape(shape, "uniform")
    if dt.kind in "iu":
        if maxval is None:
            raise ValueError("lk.random.uniform: maxval must be given for integer dtypes")
        lo, hi = int(to_array(minval)), int(to_array(maxval))
        if lo >= hi:
            raise ValueError(f"lk.random.uniform: need minval < maxval, received "
                             f"minval={lo}, maxval={hi}")
        return wrap(rng.integers(lo, hi, shape, dtype=dt))
    if dt.kind != "f":
        raise TypeError(f"lk.random.uniform: dtype must be a float or integer dtype, "
                        f"received {dt.name}")
    lo = _param(minval, dt)
    hi = _param(1.0 if maxval is None else maxval, dt)
    u = rng.random(shape, dtype=dt) if dt in (np.float32, np.float64) else (
        rng.random(shape, dtype=np.float32).astype(dt))
    return wrap(np.asarray(lo + u * (hi - lo), dt))


def _categorical(rng, logits, num_samples, dtype) -> Tensor:
    lv = to_array(logits)
    if lv.ndim != 2:
        raise ValueError(f"lk.random.categorical: logits must have shape "
                         f"(batch, num_classes), received shape {lv.shape}")
    if lv.shape[1] == 0:
        raise ValueError("lk.random.categorical: logits has no classes (shape "
                         f"{lv.shape})")
    dt = as_dtype(dtype)
    if dt.kind not in "iu":
        raise TypeError(f"lk.random.categorical: dtype must be an integer dtype, "
                        f"received {dt.name}")
    n = int(num_samples)
    # Gumbel-max: argmax(logits + Gumbel noise) is a draw from softmax(logits);
    # logits of -inf are never drawn.
    u = rng.random((lv.shape[0], n, lv.shape[1]))
    with np.errstate(divide="ignore"):
        gumbel = -np.log(-np.log1p(-u))
    z = lv.astype(np.float64)[:, None, :] + gumbel
    return wrap(np.argmax(z, axis=-1).astype(dt))


def _shuffle(rng, value) -> Tensor:
    v = to_array(value)
    if v.ndim == 0:
        raise ValueError("lk.random.shuffle: needs a tensor of rank >= 1, received a scalar")
    return wrap(v[rng.permutation(v.shape[0])])


# ---- Generator ----------------------------------------------------------------------
class Generator:
    """A seeded random stream (wraps ``numpy.random.Generator`` / PCG64).

    Its sampling methods mirror the ``lk.random`` functions; successive calls continue
    the stream, so a Generator built from the same seed repeats the same sequence.

    Args:
        seed: an int; None draws one from the global generator.

    Example:
        >>> import layerkit as lk
        >>> a = lk.random.Generator(7).normal([2])
        >>> b = lk.random.Generator(7).normal([2])
        >>> bool((a.numpy() == b.numpy()).all())
        True
    """

    def __init__(self, seed: int | None = None) -> None:
        if seed is None:
            seed = next_seed()
        self._seed = int(seed)
        self._rng = np.random.Generator(np.random.PCG64(self._seed))

    @classmethod
    def from_seed(cls, seed: int) -> Generator:
        """TF-style constructor: ``Generator.from_seed(seed)``."""
        return cls(seed)

    @property
    def seed(self) -> int:
        return self._seed

    @property
    def numpy_generator(self) -> np.random.Generator:
        return self._rng

    def next_seed(self) -> int:
        """Draw a fresh 63-bit seed from this stream."""
        return int(self._rng.integers(0, 2**63 - 1))

    def normal(self, shape, mean=0.0, stddev=1.0, dtype=FLOATX) -> Tensor:
        """Normal samples of ``shape``."""
        return _normal(self._rng, shape, mean, stddev, dtype)

    def uniform(self, shape, minval=0, maxval=None, dtype=FLOATX) -> Tensor:
        """Uniform samples in ``[minval, maxval)`` (``maxval`` defaults to 1 for floats)."""
        return _uniform(self._rng, shape, minval, maxval, dtype)

    def truncated_normal(self, shape, mean=0.0, stddev=1.0, dtype=FLOATX) -> Tensor:
        """Normal samples redrawn until within two standard deviations of the mean."""
        return _truncated_normal(self._rng, shape, mean, stddev, dtype)

    def categorical(self, logits, num_samples: int, dtype=_INT64) -> Tensor:
        """Class indices drawn from ``softmax(logits)``: shape ``(batch, num_samples)``."""
        return _categorical(self._rng, logits, num_samples, dtype)

    def shuffle(self, value) -> Tensor:
        """``value`` with its first axis randomly permuted."""
        return _shuffle(self._rng, value)

    def get_state(self) -> dict:
        """The stream position as a JSON-able dict (for checkpoints)."""
        st = self._rng.bit_generator.state
        return {"seed": self._seed, "state": str(st["state"]["state"]),
                "inc": str(st["state"]["inc"]), "has_uint32": int(st["has_uint32"]),
                "uinteger": int(st["uinteger"])}

    def set_state(self, state: dict) -> None:
        """Restore a position saved by :meth:`get_state`.

        Raises:
            ValueError: ``state`` is not a dict written by ``get_state``.
        """
        try:
            new = {
                "bit_generator": "PCG64",
                "state": {"state": int(state["state"]), "inc": int(state["inc"])},
                "has_uint32": int(state["has_uint32"]), "uinteger": int(state["uinteger"]),
            }
            seed = int(state["seed"])
        except (KeyError, TypeError, ValueError) as e:
            raise ValueError(f"Generator.set_state: not a generator state ({e!r}); "
                             f"expected the dict returned by get_state()") from None
        self._rng.bit_generator.state = new
        self._seed = seed

    def __repr__(self) -> str:
        return f"<lk.random.Generator seed={self._seed}>"


_GLOBAL = [Generator(seed=np.random.SeedSequence().entropy % (2**63))]


def global_generator() -> Generator:
    """The process-wide generator that ``set_seed`` resets."""
    return _GLOBAL[0]


def set_seed(seed: int) -> None:
    """Make every seedless random consumer reproducible from ``seed``."""
    _GLOBAL[0] = Generator(int(seed))


def get_state() -> dict:
    """The global generator's state (JSON-able), for checkpoints."""
    return _GLOBAL[0].get_state()


def set_state(state: dict) -> None:
    """Restore the global generator to a state returned by :func:`get_state`."""
    _GLOBAL[0].set_state(state)


def next_seed() -> int:
    """A fresh seed drawn from the global generator."""
    return _GLOBAL[0].next_seed()


def rng_for(seed: int | None) -> np.random.Generator:
    """A NumPy generator for an op-level ``seed`` (None: drawn from the global one)."""
    return np.random.default_rng(next_seed() if seed is None else int(seed))


# ---- stateless-by-seed functions (the lk.random namespace) ---------------------------
def normal(shape, mean=0.0, stddev=1.0, dtype=FLOATX, seed: int | None = None) -> Tensor:
    """Samples from a normal distribution.

    Args:
        shape: output shape (ints, a list, or a 1-D integer tensor).
        mean, stddev: scalars or tensors broadcasting to ``shape``.
        dtype: a float dtype (float32 by default).
        seed: an int for a reproducible result; None draws from the global generator.
    """
    return _normal(rng_for(seed), shape, mean, stddev, dtype)


def uniform(shape, minval=0, maxval=None, dtype=FLOATX, seed: int | None = None) -> Tensor:
    """Samples from a uniform distribution on ``[minval, maxval)``.

    ``maxval`` defaults to 1 for floats and must be given for integer dtypes (TF).

    Raises:
        ValueError: an integer dtype without ``maxval``, or ``minval >= maxval`` for ints.
    """
    return _uniform(rng_for(seed), shape, minval, maxval, dtype)


def truncated_normal(shape, mean=0.0, stddev=1.0, dtype=FLOATX,
                     seed: int | None = None) -> Tensor:
    """Normal samples, redrawn when more than two standard deviations from the mean."""
    return _truncated_normal(rng_for(seed), shape, mean, stddev, dtype)


def categorical(logits, num_samples: int, dtype=_INT64, seed: int | None = None) -> Tensor:
    """Draw class indices from ``softmax(logits)``.

    Args:
        logits: shape ``(batch, num_classes)`` unnormalised log-probabilities.
        num_samples: draws per row.
        dtype: integer dtype of the result (int64 by default).

    Returns:
        Integer tensor of shape ``(batch, num_samples)``.
    """
    return _categorical(rng_for(seed), logits, num_samples, dtype)


def shuffle(value, seed: int | None = None) -> Tensor:
    """Randomly permute ``value`` along its first axis."""
    return _shuffle(rng_for(seed), value)
