"""Seeded random ops (stateful records, no gradients) and the global generator.

``lk.random.set_seed(s)`` reseeds the global generator; every consumer that takes an
optional ``seed`` (these ops, initializers, dropout, Dataset.shuffle, Model.fit
shuffling) draws its seed from it with :func:`next_seed` when none is given, so one
call makes a whole program reproducible.

The ``seed`` argument of the ops:

- ``None``: each call draws from the global generator (reproducible after ``set_seed``).
- an int: in eager code every call gives the same values (a stateless op). Inside
  ``lk.function`` the traced op owns a stream started from that seed, so the first call
  gives the eager values and later calls continue the stream: a reproducible *sequence*,
  as an op seed gives in a TensorFlow graph (a retrace starts the stream again).
- a :class:`Generator` (like a Keras 3 ``SeedGenerator``): each call continues that
  stream, in eager code and in graphs alike; layers with a ``seed`` pass theirs this way.

Each sampler is a record flagged ``stateful`` whose forward draws at execution time, so
a traced graph re-runs the draw on every call (fresh numbers, same sequence as eager
code for ``None`` and Generator seeds) instead of freezing the numbers of the trace.

A :class:`Generator` is an independent stream with the same sampling methods; its
``get_state()`` is a JSON-able dict, so checkpoints can save it (the global one too,
through :func:`get_state` / :func:`set_state`).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from layerkit._core import context
from layerkit._core.convert import FLOATX, as_dtype, to_array
from layerkit._core.op import Op, apply, wrap
from layerkit._core.tensor import Tensor
from layerkit._core.types import DTypeLike, ShapeLike, TensorLike
from layerkit.primitives.creation import _dims, dynamic_shape, shape_arg

__all__: list[str] = []  # public names are exported through layerkit.random

_INT64 = np.dtype(np.int64)


# ---- argument checks (run where the op is called, also while tracing) ------------------
def _shape(shape, op: str):
    """A static shape tuple, or (while tracing with None dimensions, e.g.
    ``(lk.shape(x)[0], 3)``) a traced shape tensor that becomes the record's input."""
    dyn = dynamic_shape(shape, f"lk.random.{op}")
    return dyn if dyn is not None else shape_arg(shape, f"lk.random.{op}", TypeError)


def _draw(op: Op, *ins, shape, **attrs) -> Tensor:
    if isinstance(shape, Tensor):  # a run-time shape: an input of the record
        return apply(op, *ins, shape, **attrs)
    return apply(op, *ins, shape=shape, **attrs)


def _float_dtype(dtype, op: str) -> np.dtype:
    dt = as_dtype(dtype)
    if dt.kind != "f":
        raise TypeError(f"lk.random.{op}: dtype must be a float dtype, received {dt.name}")
    return dt


def _param(v, dt: np.dtype):
    # Python numbers become arrays of the result dtype here, so a float64 draw keeps a
    # float64 mean (as a record input a bare Python float would become float32).
    if isinstance(v, (bool, int, float)):
        return np.asarray(v, dt)
    return v


# ---- where a draw comes from -----------------------------------------------------------
def _seed_int(seed, op: str, expected: str = "an int") -> int:
    """``seed`` as a non-negative int: TF accepts any int seed, NumPy only >= 0, so a
    negative seed maps to its 64-bit two's complement (distinct seeds stay distinct)."""
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise TypeError(f"{op}: seed must be {expected}, received {type(seed).__name__}")
    seed = int(seed)
    return seed if seed >= 0 else seed % (1 << 64)


def source_of(seed, op: str = "lk.random"):
    """The ``source`` attribute of a random record for a user-facing ``seed``.

    None (the global stream), an int (a fixed seed, or in a trace a stream owned by the
    traced op) or a :class:`Generator`.
    """
    if seed is None or isinstance(seed, Generator):
        return seed
    seed = _seed_int(seed, op, "an int, an lk.random.Generator or None")
    if context.RECORDERS and context.tracing():
        return Generator(seed)  # this graph node's own stream: a sequence across calls
    return seed


def rng_of(source) -> np.random.Generator:
    """The NumPy generator a record draws from, at execution time (see :func:`source_of`)."""
    if source is None:
        return np.random.default_rng(next_seed())
    if type(source) is int:
        return np.random.default_rng(source)
    return source._rng


# ---- samplers: record forwards ----------------------------------------------------------
def _standard_normal(rng: np.random.Generator, shape: tuple, dt: np.dtype) -> np.ndarray:
    if dt in (np.float32, np.float64):
        return rng.standard_normal(shape, dtype=dt)
    return rng.standard_normal(shape, dtype=np.float32).astype(dt)


def _scaled(z, mean, stddev, dt) -> np.ndarray:
    return np.asarray(z * stddev.astype(dt, copy=False) + mean.astype(dt, copy=False), dt)


def _normal_fwd(mean, stddev, shape, dtype, source):
    shape = _dims(shape)
    return _scaled(_standard_normal(rng_of(source), shape, dtype), mean, stddev, dtype)


def _truncated_normal_fwd(mean, stddev, shape, dtype, source):
    shape = _dims(shape)
    rng = rng_of(source)
    z = _standard_normal(rng, shape, dtype).reshape(-1)
    # Redraw values beyond two standard deviations (TF semantics); ~4.6% per round.
    bad = np.flatnonzero(np.abs(z) > 2)
    while bad.size:
        z[bad] = _standard_normal(rng, (bad.size,), dtype)
        bad = bad[np.abs(z[bad]) > 2]
    return _scaled(z.reshape(shape), mean, stddev, dtype)


def _uniform_fwd(minval, maxval, shape, dtype, source):
    shape = _dims(shape)
    rng = rng_of(source)
    if dtype.kind in "iu":
        lo, hi = int(minval), int(maxval)
        if lo >= hi:
            raise ValueError(f"lk.random.uniform: need minval < maxval, received "
                             f"minval={lo}, maxval={hi}")
        return rng.integers(lo, hi, shape, dtype=dtype)
    u = rng.random(shape, dtype=dtype) if dtype in (np.float32, np.float64) else (
        rng.random(shape, dtype=np.float32).astype(dtype))
    lo, hi = minval.astype(dtype, copy=False), maxval.astype(dtype, copy=False)
    return np.asarray(lo + u * (hi - lo), dtype)


def _categorical_fwd(logits, num_samples, dtype, source):
    # Gumbel-max: argmax(logits + Gumbel noise) is a draw from softmax(logits);
    # logits of -inf are never drawn.
    u = rng_of(source).random((logits.shape[0], num_samples, logits.shape[1]))
    with np.errstate(divide="ignore"):
        gumbel = -np.log(-np.log1p(-u))
    z = logits.astype(np.float64)[:, None, :] + gumbel
    return np.argmax(z, axis=-1).astype(dtype)


def _shuffle_fwd(value, source):
    return value[rng_of(source).permutation(value.shape[0])]


def _gamma_fwd(alpha, beta, shape, dtype, source):
    a, b = np.broadcast_arrays(alpha, beta)
    z = rng_of(source).standard_gamma(a, size=tuple(shape) + a.shape)
    return np.asarray(z / b, dtype)


def _poisson_fwd(lam, shape, dtype, source):
    return rng_of(source).poisson(lam, size=tuple(shape) + lam.shape).astype(dtype)


_GAMMA = Op("random_gamma", _gamma_fwd, stateful=True)
_POISSON = Op("random_poisson", _poisson_fwd, stateful=True)
_NORMAL = Op("random_normal", _normal_fwd, stateful=True)
_TRUNCATED_NORMAL = Op("random_truncated_normal", _truncated_normal_fwd, stateful=True)
_UNIFORM = Op("random_uniform", _uniform_fwd, stateful=True)
_CATEGORICAL = Op("random_categorical", _categorical_fwd, stateful=True)
_SHUFFLE = Op("random_shuffle", _shuffle_fwd, stateful=True)


# ---- samplers: checked front doors (shared by the functions and Generator methods) -----
def _normal(source, shape, mean, stddev, dtype) -> Tensor:
    dt = _float_dtype(dtype, "normal")
    return _draw(_NORMAL, _param(mean, dt), _param(stddev, dt), shape=_shape(shape, "normal"),
                 dtype=dt, source=source)


def _truncated_normal(source, shape, mean, stddev, dtype) -> Tensor:
    dt = _float_dtype(dtype, "truncated_normal")
    return _draw(_TRUNCATED_NORMAL, _param(mean, dt), _param(stddev, dt),
                 shape=_shape(shape, "truncated_normal"), dtype=dt, source=source)


def _uniform(source, shape, minval, maxval, dtype) -> Tensor:
    dt = as_dtype(dtype)
    shape = _shape(shape, "uniform")
    if dt.kind in "iu":
        if maxval is None:
            raise ValueError("lk.random.uniform: maxval must be given for integer dtypes")
        return _draw(_UNIFORM, _param(minval, dt), _param(maxval, dt), shape=shape,
                     dtype=dt, source=source)
    if dt.kind != "f":
        raise TypeError(f"lk.random.uniform: dtype must be a float or integer dtype, "
                        f"received {dt.name}")
    return _draw(_UNIFORM, _param(minval, dt), _param(1.0 if maxval is None else maxval, dt),
                 shape=shape, dtype=dt, source=source)


def _categorical(source, logits, num_samples, dtype) -> Tensor:
    if not isinstance(logits, Tensor):
        logits = to_array(logits)
    shape = logits.shape
    if len(shape) != 2:
        raise ValueError(f"lk.random.categorical: logits must have shape "
                         f"(batch, num_classes), received shape {shape}")
    if shape[1] == 0:
        raise ValueError(f"lk.random.categorical: logits has no classes (shape {shape})")
    dt = as_dtype(dtype)
    if dt.kind not in "iu":
        raise TypeError(f"lk.random.categorical: dtype must be an integer dtype, "
                        f"received {dt.name}")
    return apply(_CATEGORICAL, logits, num_samples=int(num_samples), dtype=dt, source=source)


def _shuffle(source, value) -> Tensor:
    if not isinstance(value, Tensor):
        value = to_array(value)
    if len(value.shape) == 0:
        raise ValueError("lk.random.shuffle: needs a tensor of rank >= 1, received a scalar")
    return apply(_SHUFFLE, value, source=source)


# ---- Generator ----------------------------------------------------------------------
class Generator:
    """A seeded random stream (wraps ``numpy.random.Generator`` / PCG64).

    Its sampling methods mirror the ``lk.random`` functions; successive calls continue
    the stream, so a Generator built from the same seed repeats the same sequence. It can
    also be passed as the ``seed`` of the ``lk.random`` functions and ``lk.nn.dropout``
    (each call then continues this stream, in eager code and inside ``lk.function``).

    Args:
        seed: an int; None draws one from the global generator.

    Examples:
        >>> import layerkit as lk
        >>> a = lk.random.Generator(7).normal([2])
        >>> b = lk.random.Generator(7).normal([2])
        >>> bool((a.numpy() == b.numpy()).all())
        True
    """

    def __init__(self, seed: int | None = None) -> None:
        if seed is None:
            seed = next_seed()
        self._seed = _seed_int(seed, "lk.random.Generator", "an int or None")
        self._rng = np.random.Generator(np.random.PCG64(self._seed))

    @classmethod
    def from_seed(cls, seed: int, alg: str | None = None) -> Generator:
        """TF-style constructor: ``Generator.from_seed(seed)`` (``alg`` is accepted; the
        stream is always PCG64)."""
        return cls(seed)

    @classmethod
    def from_non_deterministic_state(cls, alg: str | None = None) -> Generator:
        """A generator seeded from fresh OS entropy (``tf.random.Generator``'s name)."""
        return cls(int(np.random.SeedSequence().entropy % (2**63)))

    def split(self, count: int = 1) -> list:
        """``count`` new independent generators seeded from this stream (which advances)."""
        return [Generator(self.next_seed()) for _ in range(int(count))]

    def make_seeds(self, count: int = 1) -> Tensor:
        """A ``(2, count)`` int64 tensor of stateless seeds (one per column), drawn from
        this stream, for the ``lk.random.stateless_*`` functions."""
        return wrap(self._rng.integers(0, 2**63 - 1, (2, int(count)),
                                                     dtype=np.int64))

    def uniform_full_int(self, shape: ShapeLike, dtype: DTypeLike = np.int64) -> Tensor:
        """Integers drawn uniformly from the whole range of ``dtype``."""
        dt = as_dtype(dtype)
        info = np.iinfo(dt)
        return wrap(self._rng.integers(info.min, info.max, _shape(
            shape, "uniform_full_int"), dtype=dt, endpoint=True))

    @property
    def seed(self) -> int:
        return self._seed

    @property
    def numpy_generator(self) -> np.random.Generator:
        return self._rng

    def next_seed(self) -> int:
        """Draw a fresh 63-bit seed from this stream."""
        return int(self._rng.integers(0, 2**63 - 1))

    def normal(self, shape: ShapeLike | TensorLike, mean: TensorLike = 0.0,
               stddev: TensorLike = 1.0, dtype: DTypeLike = FLOATX) -> Tensor:
        """Normal samples of ``shape``."""
        return _normal(self, shape, mean, stddev, dtype)

    def uniform(self, shape: ShapeLike | TensorLike, minval: TensorLike = 0,
                maxval: TensorLike | None = None, dtype: DTypeLike = FLOATX) -> Tensor:
        """Uniform samples in ``[minval, maxval)`` (``maxval`` defaults to 1 for floats)."""
        return _uniform(self, shape, minval, maxval, dtype)

    def truncated_normal(self, shape: ShapeLike | TensorLike, mean: TensorLike = 0.0,
                         stddev: TensorLike = 1.0, dtype: DTypeLike = FLOATX) -> Tensor:
        """Normal samples redrawn until within two standard deviations of the mean."""
        return _truncated_normal(self, shape, mean, stddev, dtype)

    def categorical(self, logits: TensorLike, num_samples: int,
                    dtype: DTypeLike = _INT64) -> Tensor:
        """Class indices drawn from ``softmax(logits)``: shape ``(batch, num_samples)``."""
        return _categorical(self, logits, num_samples, dtype)

    def shuffle(self, value: TensorLike) -> Tensor:
        """``value`` with its first axis randomly permuted."""
        return _shuffle(self, value)

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
        # In place: graphs that draw from this stream keep a reference to _rng.
        self._rng.bit_generator.state = new
        self._seed = seed

    def __repr__(self) -> str:
        return f"<lk.random.Generator seed={self._seed}>"


# ---- SeedGenerator (Keras 3) -----------------------------------------------------------
_SEED_GENERATOR_NAMES: dict[str, int] = {}


def _seed_generator_next_fwd(source, ordered):
    return source._advance(ordered)


_SEED_GENERATOR_NEXT = Op("seed_generator_next", _seed_generator_next_fwd, stateful=True)


class SeedGenerator(Generator):
    """A stateful seed source for random ops: Keras 3's ``keras.random.SeedGenerator``.

    Its state is ``[seed, counter]`` (the non-trainable :attr:`state` Variable, as in
    Keras). Passed as the ``seed`` of an ``lk.random`` op (or ``lk.nn.dropout``), each
    call draws from a generator keyed by the current state and advances the counter, so
    successive calls give different numbers and the same sequence on every run; this
    happens when the op runs, so inside ``lk.function`` too (the draw is a stateful graph
    node). Its state is saved by ``lk.Checkpoint`` (directly, or as an attribute of a
    layer). It is an :class:`Generator`, so it has the same sampling methods. The numbers
    differ from Keras's (another bit generator); the semantics are the same.

    Args:
        seed: an int (None: drawn from layerkit's global generator, so
            ``lk.random.set_seed`` makes it reproducible).
        name: the name (default ``seed_generator``, ``seed_generator_1``, ...).

    Raises:
        ValueError: a ``seed`` that is not an int, or an unknown keyword (as Keras).

    Examples:
        >>> import layerkit as lk
        >>> gen = lk.random.SeedGenerator(seed=42)
        >>> a = lk.random.normal((2, 3), seed=gen)
        >>> b = lk.random.normal((2, 3), seed=gen)   # the counter moved: new numbers
        >>> bool((a.numpy() != b.numpy()).all()), gen.state.numpy().tolist()
        (True, [42, 2])
    """

    def __init__(self, seed: int | None = None, name: str | None = None, **kwargs: Any) -> None:
        from layerkit._core.variable import Variable

        kwargs.pop("backend", None)
        if kwargs:
            raise ValueError(f"SeedGenerator: unrecognized keyword arguments: {kwargs}")
        if name is None:
            n = _SEED_GENERATOR_NAMES.get("seed_generator", 0)
            _SEED_GENERATOR_NAMES["seed_generator"] = n + 1
            name = "seed_generator" if n == 0 else f"seed_generator_{n}"
        self.name = name
        self._initial_seed = seed
        if seed is None:
            seed = next_seed()
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
            raise ValueError(f"SeedGenerator: argument `seed` must be an integer. Received: "
                             f"seed={seed!r}")
        self._seed = _seed_int(seed, "lk.random.SeedGenerator")
        self.state = Variable(np.array([self._seed % (1 << 63), 0], np.int64), trainable=False,
                              name=f"{name}/seed_generator_state")

    def _advance(self, ordered: bool = True) -> np.ndarray:
        """The current state (a copy), then move it on (Keras's two update rules)."""
        current = self.state._v.copy()
        if ordered:
            self.state._v = current + np.array([0, 1], np.int64)
        else:   # a sequence of near-unique values below 933199
            self.state._v = (current + 1) * 5387 % 933199
        return current

    @property
    def _rng(self) -> np.random.Generator:
        # Read where a random record runs: the draw of the current state, which moves on.
        seed, counter = (int(v) for v in self._advance())
        return np.random.Generator(np.random.PCG64([seed, counter]))

    @property
    def numpy_generator(self) -> np.random.Generator:
        """A NumPy generator for the next draw (this advances the state)."""
        return self._rng

    def next(self, ordered: bool = True) -> Tensor:
        """Return the current state ``[seed, counter]`` as a Tensor and advance it.

        ``ordered=True`` adds 1 to the counter; ``False`` moves both entries to
        ``(state + 1) * 5387 % 933199`` (Keras's rules). Inside ``lk.function`` this is a
        stateful node (run on every call).
        """
        return apply(_SEED_GENERATOR_NEXT, source=self, ordered=bool(ordered))

    def get_state(self) -> dict:
        """``{'state': [seed, counter]}`` (JSON-able, for checkpoints)."""
        return {"state": [int(v) for v in self.state._v]}

    def set_state(self, state: dict) -> None:
        """Restore a state from :meth:`get_state`.

        Raises:
            ValueError: ``state`` is not such a dict.
        """
        try:
            value = np.array([int(v) for v in state["state"]], np.int64)
        except (KeyError, TypeError, ValueError) as e:
            raise ValueError(f"SeedGenerator.set_state: not a seed generator state ({e!r}); "
                             f"expected the dict returned by get_state()") from None
        if value.shape != (2,):
            raise ValueError(f"SeedGenerator.set_state: the state must be [seed, counter], "
                             f"received {state['state']!r:.60}")
        self.state._v = value

    def get_config(self) -> dict:
        return {"seed": self._initial_seed, "name": self.name}

    @classmethod
    def from_config(cls, config: dict) -> SeedGenerator:
        return cls(**config)

    def __repr__(self) -> str:
        return f"<lk.random.SeedGenerator name={self.name!r} state={self.state._v.tolist()}>"


_GLOBAL = [Generator(seed=np.random.SeedSequence().entropy % (2**63))]


def global_generator() -> Generator:
    """The process-wide generator that ``set_seed`` resets."""
    return _GLOBAL[0]


def set_seed(seed: int | None) -> None:
    """Make every seedless random consumer reproducible from ``seed``.

    ``None`` reseeds from fresh OS entropy (TF: clears the global seed).

    Raises:
        TypeError: ``seed`` is not an int or None.
    """
    if seed is None:
        _GLOBAL[0] = Generator(seed=np.random.SeedSequence().entropy % (2**63))
    else:
        _GLOBAL[0] = Generator(_seed_int(seed, "lk.random.set_seed", "an int or None"))


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


# ---- the lk.random namespace -----------------------------------------------------------
def normal(shape: ShapeLike | TensorLike, mean: TensorLike = 0.0, stddev: TensorLike = 1.0,
           dtype: DTypeLike = FLOATX, seed: int | Generator | None = None) -> Tensor:
    """Samples from a normal distribution.

    Args:
        shape: output shape (ints, a list, or a 1-D integer tensor).
        mean: scalars or tensors broadcasting to ``shape``.
        stddev: scalars or tensors broadcasting to ``shape``.
        dtype: a float dtype (float32 by default).
        seed: None (the global generator), an int (the same values on every eager call;
            a reproducible sequence inside ``lk.function``) or a :class:`Generator`
            (each call continues its stream).
    """
    return _normal(source_of(seed, "lk.random.normal"), shape, mean, stddev, dtype)


def uniform(shape: ShapeLike | TensorLike, minval: TensorLike = 0,
            maxval: TensorLike | None = None, dtype: DTypeLike = FLOATX,
            seed: int | Generator | None = None) -> Tensor:
    """Samples from a uniform distribution on ``[minval, maxval)``.

    ``maxval`` defaults to 1 for floats and must be given for integer dtypes (TF).
    ``seed`` as in :func:`normal`.

    Raises:
        ValueError: an integer dtype without ``maxval``, or ``minval >= maxval`` for ints.
    """
    return _uniform(source_of(seed, "lk.random.uniform"), shape, minval, maxval, dtype)


def truncated_normal(shape: ShapeLike | TensorLike, mean: TensorLike = 0.0,
                     stddev: TensorLike = 1.0, dtype: DTypeLike = FLOATX,
                     seed: int | Generator | None = None) -> Tensor:
    """Normal samples, redrawn when more than two standard deviations from the mean.

    ``seed`` as in :func:`normal`.
    """
    return _truncated_normal(source_of(seed, "lk.random.truncated_normal"), shape, mean,
                             stddev, dtype)


def categorical(logits: TensorLike, num_samples: int, dtype: DTypeLike = _INT64,
                seed: int | Generator | None = None) -> Tensor:
    """Draw class indices from ``softmax(logits)``.

    Args:
        logits: shape ``(batch, num_classes)`` unnormalised log-probabilities.
        num_samples: draws per row.
        dtype: integer dtype of the result (int64 by default).
        seed: as in :func:`normal`.

    Returns:
        Integer tensor of shape ``(batch, num_samples)``.
    """
    return _categorical(source_of(seed, "lk.random.categorical"), logits, num_samples, dtype)


def gamma(shape: ShapeLike, alpha: TensorLike, beta: TensorLike | None = None,
          dtype: DTypeLike = FLOATX, seed: int | Generator | None = None) -> Tensor:
    """Gamma samples of shape ``shape + broadcast(alpha, beta).shape`` (``tf.random.gamma``:
    ``alpha`` the concentration, ``beta`` the rate, 1 by default). ``seed`` as in
    :func:`normal`. No gradient flows to ``alpha``/``beta``."""
    dt = _float_dtype(dtype, "gamma")
    return apply(_GAMMA, _param(alpha, dt), _param(1.0 if beta is None else beta, dt),
                 shape=_shape(shape, "gamma"), dtype=dt,
                 source=source_of(seed, "lk.random.gamma"))


def poisson(shape: ShapeLike, lam: TensorLike, dtype: DTypeLike = FLOATX,
            seed: int | Generator | None = None) -> Tensor:
    """Poisson counts of shape ``shape + lam.shape`` with rates ``lam`` (``tf.random.poisson``;
    float32 by default, integer dtypes allowed). ``seed`` as in :func:`normal`."""
    dt = as_dtype(dtype)
    return apply(_POISSON, _param(lam, np.dtype(np.float64)), shape=_shape(shape, "poisson"),
                 dtype=dt, source=source_of(seed, "lk.random.poisson"))


def shuffle(value: TensorLike, seed: int | Generator | None = None) -> Tensor:
    """Randomly permute ``value`` along its first axis (``seed`` as in :func:`normal`)."""
    return _shuffle(source_of(seed, "lk.random.shuffle"), value)
