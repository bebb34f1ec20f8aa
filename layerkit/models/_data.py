"""Feeding ``fit``/``evaluate``/``predict``: arrays, Tensors, dicts, or a Dataset.

Arrays are batched by index: a permutation per epoch (seeded from ``lk.random``'s global
generator, so ``lk.random.set_seed`` reproduces a run) and one ``take`` per leaf and
batch. This is the fast path: 2.3 us per batch of 32 digits samples, against 5.2 us for
``Dataset.from_tensor_slices(...).shuffle(n).batch(32)`` (measured here). Any other
iterable (``lk.data.Dataset``, a generator) is iterated as is; it must
yield ``x``, ``(x,)``, ``(x, y)`` or ``(x, y, sample_weight)`` batches.
"""
from __future__ import annotations

import math
import warnings

import numpy as np

from layerkit._core.convert import FLOATX
from layerkit._core.nest import flatten, pack_sequence_as
from layerkit._core.op import wrap
from layerkit._core.tensor import Tensor
from layerkit.primitives import random as _random


def _leaf_array(v, what: str, name: str = "x") -> np.ndarray:
    if isinstance(v, Tensor):
        v = v._v
    try:
        a = np.asarray(v)
    except ValueError as e:   # ragged nested lists
        raise ValueError(f"{what}: could not convert {name} to an array ({e})") from None
    if a.dtype == object:
        raise TypeError(f"{what}: could not convert {name} ({type(v).__name__}) to a numeric "
                        f"array")
    if a.dtype == np.float64:
        # Models compute in float32: convert once here rather than in every batch.
        a = a.astype(FLOATX)
    if a.ndim == 0:
        raise ValueError(f"{what}: {name} must be an array with a batch axis (one row per "
                         f"sample), received a scalar {type(v).__name__}: {v!r:.60}")
    return a


def check_count(value, name: str, what: str, minimum: int = 1, optional: bool = False):
    """``value`` as an int >= ``minimum`` (or None if ``optional``), else a clear error.

    Raises:
        TypeError: not an integer (bools and floats such as 2.5 included).
        ValueError: below ``minimum``.
    """
    if value is None and optional:
        return None
    kind = "a positive integer" if minimum == 1 else f"an integer >= {minimum}"
    kind += " or None" if optional else ""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{what}: {name} must be {kind}, received {name}={value!r:.60} "
                        f"({type(value).__name__})")
    if value < minimum:
        raise ValueError(f"{what}: {name} must be {kind}, received {name}={value!r}")
    return int(value)


def check_verbose(verbose, what: str) -> int:
    """Keras's ``verbose``: ``'auto'`` (1), 0 silent, 1 progress bar, 2 one line per epoch."""
    if verbose == "auto":
        return 1
    if isinstance(verbose, (bool, np.bool_)) or (isinstance(verbose, (int, np.integer))
                                                 and 0 <= verbose <= 2):
        return int(verbose)
    raise ValueError(f"{what}: verbose must be 'auto', 0, 1 or 2, received "
                     f"verbose={verbose!r:.60}")


def check_fit_options(validation_split, shuffle) -> None:
    """``fit``'s validation_split (a number in [0, 1)) and shuffle (bool or 'batch')."""
    if isinstance(validation_split, (bool, np.bool_)) or not isinstance(
            validation_split, (int, float, np.integer, np.floating)) \
            or not 0.0 <= validation_split < 1.0:
        raise ValueError(f"fit: validation_split must be a number in [0, 1), received "
                         f"validation_split={validation_split!r:.60}")
    if not (isinstance(shuffle, (bool, np.bool_)) or shuffle == "batch"):
        raise ValueError(f"fit: shuffle must be True, False or 'batch', received "
                         f"shuffle={shuffle!r:.60}")


def is_array_like(x) -> bool:
    """Arrays, Tensors, nested lists of numbers, and lists/tuples/dicts of arrays."""
    if x is None or isinstance(x, (np.ndarray, Tensor, list, tuple, dict)):
        return True
    return np.isscalar(x)


def zeros_like_shape(shape, dtype):
    """Zeros of ``shape`` (a shape, a list of shapes or a dict of them; ``None`` sizes
    become 1): the inputs ``Model.build`` and ``summary``'s probe call a model on."""
    if isinstance(shape, dict):
        return {k: zeros_like_shape(v, dtype) for k, v in shape.items()}
    if isinstance(shape, list) and shape and isinstance(shape[0], (list, tuple)):
        return [zeros_like_shape(s, dtype) for s in shape]
    dims = tuple(1 if d is None else int(d) for d in shape)
    return wrap(np.zeros(dims, dtype))


class ArrayFeeder:
    """Batches of in-memory arrays (nested in lists/tuples/dicts) by index.

    Args:
        x: structures of arrays with the same first dimension.
        y: structures of arrays with the same first dimension.
        sample_weight: structures of arrays with the same first dimension.
        batch_size: samples per batch (the last batch may be smaller).
        shuffle: True (a permutation per epoch), ``'batch'`` (shuffle the batch order
            only) or False.
        steps: optional number of batches per epoch (see :meth:`epoch`).
        what: the calling method, for messages.
    """

    def __init__(self, x, y=None, sample_weight=None, batch_size: int | None = 32,
                 shuffle=False, steps: int | None = None, what: str = "fit") -> None:
        batch_size = check_count(batch_size, "batch_size", what, optional=True) or 32
        self.what = what
        self.structure = (x,) if y is None else ((x, y) if sample_weight is None
                                                 else (x, y, sample_weight))
        if isinstance(x, (list, tuple)) and x and not any(
                isinstance(e, (np.ndarray, Tensor, dict, list, tuple)) for e in x):
            # A plain nested list of numbers is one input, not a list of inputs.
            self.structure = (np.asarray(x),) + self.structure[1:]
        self.leaves = [_leaf_array(v, what, name)
                       for name, part in zip(("x", "y", "sample_weight"), self.structure)
                       for v in flatten(part)]
        sizes = {a.shape[0] for a in self.leaves}
        if len(sizes) > 1:
            names = ["x", "y", "sample_weight"]
            counts = iter(a.shape[0] for a in self.leaves)
            detail = ", ".join(f"{name}: {[next(counts) for _ in flatten(part)]}"
                               for name, part in zip(names, self.structure))
            raise ValueError(
                f"{what}: data cardinality is ambiguous: all arrays must have the same number "
                f"of samples (first dimension). Received sizes {detail}"
            )
        self.n = sizes.pop()
        self._flat_structure = not any(isinstance(p, (list, tuple, dict))
                                       for p in self.structure)
        # Keras passes a lone x to the steps as is, not as (x,) (GAN-style train_steps
        # read `data.shape`); a tuple/list x stays wrapped so that it is not taken for (x, y).
        self._bare = len(self.structure) == 1 and not isinstance(self.structure[0],
                                                                 (list, tuple))
        if self.n == 0:
            raise ValueError(f"{what}: the input data is empty (0 samples); expected at least "
                             f"one sample")
        self.batch_size = int(batch_size)
        self.shuffle = shuffle
        self.steps = steps
        self._rng = _random.Generator(_random.next_seed()) if shuffle else None
        self._cursor = 0  # batches of the current pass done (0: none drawn yet)
        self._pass: tuple = ((), None)
        self._pass_rng = None  # the shuffling stream's state before the current pass

    @property
    def num_batches(self) -> int:
        return self.steps or math.ceil(self.n / self.batch_size)

    def split(self, fraction: float):
        """Split off the last ``fraction`` of the samples (Keras's validation_split)."""
        if not 0.0 < fraction < 1.0:
            raise ValueError(f"fit: validation_split must be in (0, 1), received {fraction}")
        cut = int(math.floor(self.n * (1.0 - fraction)))
        if cut == 0 or cut == self.n:
            empty = "training" if cut == 0 else "validation"
            raise ValueError(f"fit: validation_split={fraction} leaves no {empty} samples "
                             f"out of {self.n}")
        train = [a[:cut] for a in self.leaves]
        val = [a[cut:] for a in self.leaves]
        return pack_sequence_as(self.structure, train), pack_sequence_as(self.structure, val)

    def _batch(self, idx) -> tuple:
        if isinstance(idx, slice):
            vals = [wrap(a[idx]) for a in self.leaves]
        else:
            vals = [wrap(a.take(idx, axis=0)) for a in self.leaves]
        if self._bare:
            return vals[0] if self._flat_structure else pack_sequence_as(self.structure[0], vals)
        if self._flat_structure:  # (x, y[, sw]) of plain arrays: no structure to rebuild
            return tuple(vals)
        return pack_sequence_as(self.structure, vals)

    def _new_pass(self) -> tuple:
        """The batch starts and sample order of one pass over the data."""
        starts = list(range(0, self.n, self.batch_size))
        order = None
        if self.shuffle == "batch":
            self._rng.numpy_generator.shuffle(starts)
        elif self.shuffle:
            order = self._rng.numpy_generator.permutation(self.n)
        return starts, order

    def epoch(self, done: int = 0):
        """Yield the batches of one epoch as tuples ``(x[, y[, sample_weight]])``.

        With ``steps`` (fit's steps_per_epoch) a pass over the data spans epochs, as in
        Keras 3: each epoch takes the next ``steps`` batches of the current pass, an epoch
        that reaches the end of the data stops there (with a warning if it was owed more
        batches), and the next epoch starts a new, reshuffled pass. ``done``: batches of
        this epoch already trained (a resumed epoch yields only the rest).
        """
        n, bs = self.n, self.batch_size
        if self._cursor == 0:
            self._pass_rng = self._rng.get_state() if self._rng is not None else None
            self._pass = self._new_pass()
        starts, order = self._pass
        owed = None if self.steps is None else self.steps - done
        produced = 0
        while owed is None or produced < owed:
            if self._cursor >= len(starts):
                if owed is not None:
                    warnings.warn(
                        f"{self.what}: the input ran out of data after {done + produced} of "
                        f"steps_per_epoch={self.steps} batches in this epoch ({len(starts)} "
                        f"batches per pass over the data); the next epoch starts a new pass",
                        stacklevel=3)
                break
            s = starts[self._cursor]
            self._cursor += 1
            produced += 1
            e = min(s + bs, n)
            yield self._batch(slice(s, e) if order is None else order[s:e])
        if self._cursor >= len(starts):
            self._cursor = 0

    def get_state(self) -> dict:
        """The position in the data (for ``BackupAndRestore``): batches done in the current
        pass and the shuffling stream (the pass's order is drawn again on restore)."""
        return {"kind": "arrays", "n": self.n, "batch_size": self.batch_size,
                "cursor": self._cursor, "pass_rng": self._pass_rng,
                "rng": None if self._rng is None else self._rng.get_state()}

    def set_state(self, state: dict) -> None:
        """Continue from :meth:`get_state` of a feeder over the same data and settings.

        Raises:
            ValueError: the state is from different data (sample count, batch size,
                shuffling) or not a feeder state.
        """
        mine = {"kind": "arrays", "n": self.n, "batch_size": self.batch_size}
        if not isinstance(state, dict) or any(state.get(k) != v for k, v in mine.items()) \
                or (state.get("rng") is None) != (self._rng is None):
            got = {k: state.get(k) for k in mine} if isinstance(state, dict) else state
            raise ValueError(f"{self.what}: cannot resume: the saved position is for other "
                             f"data or settings ({got!r:.200}); this fit has {mine} "
                             f"(shuffle={self.shuffle!r})")
        self._cursor = int(state["cursor"])
        if self._rng is not None:
            if self._cursor:
                self._rng.set_state(state["pass_rng"])
                self._pass_rng = state["pass_rng"]
                self._pass = self._new_pass()
            self._rng.set_state(state["rng"])
        elif self._cursor:
            self._pass = self._new_pass()


def _as_batch(element):
    if isinstance(element, list):
        element = tuple(element)
    if isinstance(element, tuple):
        if not 1 <= len(element) <= 3:
            raise ValueError(
                f"a dataset element must be x, (x, y) or (x, y, sample_weight); received a "
                f"tuple of length {len(element)}"
            )
        return element
    return element  # a lone x goes to the steps as is, as in Keras


class IterableFeeder:
    """Batches from a Dataset or any iterable (a fresh ``iter()`` per epoch).

    With ``steps`` set, one iterator is kept across epochs (so an infinite dataset
    works); when it runs out it is restarted, and if a fresh pass yields nothing the
    epoch ends with a warning.
    """

    def __init__(self, data, steps: int | None = None, what: str = "fit") -> None:
        self.data = data
        self.steps = steps
        self.what = what
        self._it = None
        self._reiterable = not hasattr(data, "__next__")  # a generator is consumed once
        card = getattr(data, "cardinality", None)
        if steps is None and callable(card):
            try:
                infinite = int(card()) == -1  # lk.data's INFINITE cardinality
            except (TypeError, ValueError):
                infinite = False
            if infinite:  # as in TensorFlow: an epoch would never end
                steps_arg = {"fit": "steps_per_epoch",
                             "fit (validation)": "validation_steps"}.get(what, "steps")
                raise ValueError(
                    f"{what}: the dataset is infinite (e.g. .repeat() without a count); pass "
                    f"{steps_arg}=... to say how many batches make an epoch")

    @property
    def num_batches(self) -> int | None:
        if self.steps:
            return self.steps
        card = getattr(self.data, "cardinality", None)
        if callable(card):
            try:
                c = int(card())
                return c if c >= 0 else None
            except (TypeError, ValueError):
                return None
        try:
            return len(self.data)
        except TypeError:
            return None

    def _fresh(self):
        return iter(self.data)

    def epoch(self, done: int = 0):
        """Yield the batches of one epoch (``done``: batches of it already trained, for a
        resumed epoch: with ``steps`` only the rest are owed)."""
        if self.steps is None:
            if self._it is None:
                self._it = self._fresh()
            for element in self._it:
                yield _as_batch(element)
            self._it = None
            return
        if self._it is None:
            self._it = self._fresh()
        produced = 0
        restarted = False
        while produced < self.steps - done:
            try:
                element = next(self._it)
            except StopIteration:
                if restarted or not self._reiterable:
                    warnings.warn(
                        f"{self.what}: the input ran out of data after {done + produced} of "
                        f"steps_per_epoch={self.steps} batches in this epoch; make sure the "
                        f"dataset can produce at least steps_per_epoch * epochs batches (e.g. "
                        f"with .repeat())", stacklevel=4)
                    self.exhausted = True
                    return
                self._it = self._fresh()
                restarted = True
                continue
            restarted = False
            produced += 1
            yield _as_batch(element)

    exhausted = False

    def get_state(self) -> dict:
        """The position in the data: the current iterator's own state (a
        ``lk.data`` iterator's ``get_state()``), or None between passes.

        Raises:
            TypeError: the data is mid-pass and its iterator cannot save its position
                (a Python generator, a plain iterable).
        """
        it = self._it
        if it is None:
            return {"kind": "iterable", "iterator": None, "exhausted": self.exhausted}
        get = getattr(it, "get_state", None)
        if get is None:
            raise TypeError(
                f"{self.what}: cannot save the position in the input data: its iterator "
                f"({type(it).__name__}) has no get_state(); use array data or a "
                f"lk.data.Dataset, or save only at epoch ends (save_freq='epoch') with a "
                f"re-iterable input and no steps_per_epoch")
        return {"kind": "iterable", "iterator": get(), "exhausted": self.exhausted}

    def set_state(self, state: dict) -> None:
        """Continue from :meth:`get_state` (a fresh iterator of the same data, moved to the
        saved position).

        Raises:
            ValueError: not a state of an iterable feeder.
            TypeError: the data cannot be restarted or its iterator cannot be positioned.
        """
        if not isinstance(state, dict) or state.get("kind") != "iterable":
            raise ValueError(f"{self.what}: cannot resume: the saved position is not for a "
                             f"dataset input ({state!r:.200})")
        self.exhausted = bool(state.get("exhausted", False))
        if state["iterator"] is None:
            self._it = None
            return
        if not self._reiterable:
            raise TypeError(f"{self.what}: cannot resume mid-pass: the input "
                            f"({type(self.data).__name__}) can be iterated only once")
        # Starting an iterator may draw seeds (an unseeded shuffle) from the global
        # generator, which the same restore sets: leave it as it was.
        rng_state = _random.get_state()
        try:
            it = self._fresh()
        finally:
            _random.set_state(rng_state)
        if not callable(getattr(it, "set_state", None)):
            raise TypeError(f"{self.what}: cannot resume mid-pass: the input's iterator "
                            f"({type(it).__name__}) has no set_state()")
        it.set_state(state["iterator"])
        self._it = it


def make_feeder(x, y=None, sample_weight=None, batch_size=32, shuffle=False, steps=None,
                what: str = "fit"):
    """An :class:`ArrayFeeder` for array-like ``x``, else an :class:`IterableFeeder`.

    Raises:
        ValueError: ``y`` or ``sample_weight`` given with a dataset (they come from its
            elements), or ``x`` is None.
    """
    if x is None:
        raise ValueError(f"{what}: x is None; pass arrays, Tensors, a dict of arrays or a "
                         f"lk.data.Dataset")
    for name, part in (("x", x), ("y", y), ("sample_weight", sample_weight)):
        if isinstance(part, (str, bytes)):
            raise TypeError(f"{what}: {name} must be arrays, Tensors, a list/dict of them"
                            f"{' or a lk.data.Dataset' if name == 'x' else ''}; received a "
                            f"{type(part).__name__}: {part!r:.60}")
    if is_array_like(x):
        return ArrayFeeder(x, y, sample_weight, batch_size, shuffle, steps, what)
    if y is not None or sample_weight is not None:
        raise ValueError(
            f"{what}: when x is a dataset or generator, y and sample_weight must be None "
            f"(they come from its elements); received y of type {type(y).__name__}"
        )
    if not hasattr(x, "__iter__"):
        raise TypeError(
            f"{what}: unsupported input type {type(x).__name__}; expected arrays, Tensors, a "
            f"dict of arrays, a lk.data.Dataset or an iterable of batches"
        )
    return IterableFeeder(x, steps, what)
