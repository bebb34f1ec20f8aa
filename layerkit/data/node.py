"""The node contract: what every pipeline stage implements.

A :class:`Node` is an immutable description of one stage that knows only its input
node(s). ``node.make_iterator(ctx)`` builds a fresh :class:`NodeIterator`, which builds
its inputs' iterators in turn, so ``iter(dataset)`` is a chain of small objects.

Iterator contract:

- ``__next__()`` returns the next element (a Tensor or a nested tuple/dict of Tensors)
  or raises ``StopIteration``; once exhausted it stays exhausted.
- ``get_state()`` returns a nested dict/list of JSON values and NumPy arrays that holds
  the input iterators' states nested inside (``{"node": name, "input": {...}, ...}``);
  ``set_state(state)`` restores it. Both are called between ``__next__`` calls.
- ``close()`` stops background work and closes the inputs; idempotent.
- ``next_list(n)`` returns a list of the next ``n`` elements, fewer only at the end of
  the input (an empty list there). The default loops over ``__next__``; stages that do
  per-element Python work (sources, ``map``) override it with one loop per list, which
  is what ``batch`` calls. An exception raised while the list is gathered propagates,
  and the elements gathered before it in that call are lost, as with ``__next__``
  calls in a loop; the elements after it are not.
- ``fast_iter()`` returns an iterator over the same next elements that shares the
  stage's state (``self`` by default; serial ``map`` over ``batch`` over tensor slices
  returns a generator that fuses the three). The public Iterator runs it for the top
  stage from C, and a new one when ``fast_resumable()`` says the last one stopped early.
- Optional chunk protocol, used by ``batch`` to avoid splitting and re-stacking rows:
  ``supports_chunks()`` and ``next_chunk(n)``, which returns a flat list of NumPy arrays
  (leaves in ``codec`` order) holding the next 1..n elements stacked along a new first
  axis, or ``None`` at the end. ``next`` and ``next_chunk`` may be mixed freely.
"""
from __future__ import annotations

import copy
import functools
import itertools
from collections.abc import Callable
from typing import Any

import numpy as np

from layerkit.data import structure as _st
from layerkit.data.options import AutotuneOptions

AUTOTUNE = -1
INFINITE = -1
UNKNOWN = -2

_NODE_IDS = itertools.count()


class IterationContext:
    """Shared by the iterators of one ``iter(dataset)`` call.

    Random stages derive a per-pass seed from ``(seed, top, inner)``: ``top`` counts
    the passes started over the node's Dataset (so a new ``for`` loop reshuffles) and
    ``inner`` counts the passes a ``repeat`` started within this one iterator chain.
    Both, and the seed, are saved in iterator state; a restored stage records them
    here so the passes a ``repeat`` starts later continue the saved sequence, even in
    a new process where seeds drawn from the global generator differ.
    """

    __slots__ = ("_top", "_inner", "_seeds", "_probe", "options")

    def __init__(self, probe: bool = False, options=None) -> None:
        self._top: dict = {}
        self._inner: dict = {}
        self._seeds: dict = {}
        self._probe = probe  # a look at the first element (element_spec): counts no pass
        self.options = options  # the iterated Dataset's lk.data.Options (None: defaults)

    def autotune_options(self):
        """``options.autotune`` of the iterated Dataset (defaults when it set none)."""
        if self.options is None:
            return AutotuneOptions()
        return self.options.autotune

    def epoch(self, node: Node) -> tuple[int, int]:
        key = node.node_id
        if key not in self._top:
            self._top[key] = 0 if self._probe else node._next_top_epoch()
            self._inner[key] = 0
        else:
            self._inner[key] += 1
        return self._top[key], self._inner[key]

    def seed(self, node: Node, default: int) -> int:
        return self._seeds.get(node.node_id, default)

    def restore(self, node: Node, seed: int, top: int, inner: int) -> None:
        self._seeds[node.node_id] = int(seed)
        self._top[node.node_id] = int(top)
        self._inner[node.node_id] = int(inner)
        node._seen_top_epoch(int(top))


class Node:
    """One immutable pipeline stage.

    Subclasses set ``name`` (the Dataset method that builds them, used in messages) and
    implement ``make_iterator``; they override ``cardinality`` and ``_compute_spec``
    when they know better than the defaults (unknown count; spec observed from the
    first element).
    """

    name = "node"
    options = None  # lk.data.Options set by Dataset.with_options on this stage

    def __init__(self, *inputs: Node) -> None:
        self.inputs = inputs
        self.node_id = next(_NODE_IDS)
        self._spec = None
        self._top_epochs = 0

    # ---- to override ------------------------------------------------------------------------
    def make_iterator(self, ctx: IterationContext) -> NodeIterator:
        raise NotImplementedError

    def cardinality(self) -> int:
        return UNKNOWN

    def _compute_spec(self):
        it = self.make_iterator(IterationContext(probe=True))
        try:
            first = next(it)
        except StopIteration:
            raise ValueError(
                f"Dataset.{self.name}: cannot infer element_spec because the dataset is "
                f"empty; give the source an explicit signature"
            ) from None
        finally:
            it.close()
        return _st.spec_of(first)

    # ---- shared -----------------------------------------------------------------------------
    def element_spec(self):
        if self._spec is None:
            self._spec = self._compute_spec()
        return self._spec

    def static_chunk_spec(self):
        """The element spec if it is known without running anything, else None."""
        return None

    def with_options(self, options) -> Node:
        """A copy of this stage (same inputs) carrying ``options``."""
        node = copy.copy(self)
        node.node_id = next(_NODE_IDS)
        node.options = options
        return node

    def _next_top_epoch(self) -> int:
        e = self._top_epochs
        self._top_epochs = e + 1
        return e

    def _seen_top_epoch(self, top: int) -> None:
        self._top_epochs = max(self._top_epochs, top + 1)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name}>"


class StateError(ValueError):
    """An iterator state that a stage cannot restore (malformed, truncated, foreign)."""


# What reading a malformed state raises in a stage's set_state: a missing key, a wrong type,
# a short list, a bad number. They become one StateError naming the stage.
_STATE_ERRORS = (TypeError, KeyError, IndexError, ValueError, AttributeError, OverflowError)


def _guard_set_state(fn):
    @functools.wraps(fn)
    def set_state(self, state):
        try:
            return fn(self, state)
        except StateError:
            raise  # an inner stage's, which names it already
        except _STATE_ERRORS as e:
            node = getattr(self, "_node", None)
            name = getattr(node, "name", None) or self.kind
            what = name if name[:1].isupper() else f"Dataset.{name}"
            raise StateError(
                f"{what}: cannot restore this stage from the iterator state "
                f"({type(e).__name__}: {e}); was the state saved from an identically built "
                f"pipeline and left unchanged? The iterator is left partly restored: make a "
                f"new one") from e
    set_state.guarded = True
    return set_state


class NodeIterator:
    """Base of every stage's iterator (see the module docstring for the contract).

    Every subclass's ``set_state`` is wrapped so that a malformed, truncated or foreign
    state raises a :class:`StateError` (a ValueError) naming the stage, never a bare
    TypeError/KeyError/IndexError from deep inside it.
    """

    __slots__ = ()
    kind = "node"
    # Iterators that serve chunks (supports_chunks() is True) define these two.
    next_chunk: Callable[[int], Any]
    codec: Any

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        fn = cls.__dict__.get("set_state")
        if fn is not None and not getattr(fn, "guarded", False):
            cls.set_state = _guard_set_state(fn)

    def __iter__(self):
        return self

    def __next__(self):
        raise NotImplementedError

    def get_state(self) -> dict:
        raise NotImplementedError

    def set_state(self, state: dict) -> None:
        raise NotImplementedError

    def close(self) -> None:
        for it in self._inputs():
            if it is not None:
                it.close()

    def _inputs(self) -> tuple:
        up = getattr(self, "_up", None)
        return (up,) if up is not None else ()

    def next_list(self, n: int) -> list:
        return list(itertools.islice(self, n))

    def fast_iter(self):
        """An iterator giving this stage's next elements at less cost, sharing its state
        (``Dataset.__iter__`` runs it for the top stage), or ``self``."""
        return self

    def fast_resumable(self) -> bool:
        """Whether a new ``fast_iter()`` continues after the last one stopped."""
        return False

    def supports_chunks(self) -> bool:
        return False

    def _check_state(self, state) -> None:
        if not isinstance(state, dict) or state.get("node") != self.kind:
            got = state.get("node") if isinstance(state, dict) else type(state).__name__
            raise ValueError(
                f"iterator state does not match the pipeline: expected the state of a "
                f"'{self.kind}' stage, received one of '{got}' (was it saved from a "
                f"differently built Dataset?)"
            )


class ScalarStateIterator(NodeIterator):
    """An iterator whose own state is a few scalar attributes.

    Subclasses list them in ``_saved`` as ``(state key, attribute, type)``; the state is
    ``{"node": kind, <key>: value, ...}`` plus ``"input": <its state>`` for a stage with an
    input (``_up``).
    """

    __slots__ = ()
    _saved: tuple = ()

    def get_state(self) -> dict:
        state = {"node": self.kind}
        for key, attr, _ in self._saved:
            state[key] = getattr(self, attr)
        for up in self._inputs():
            state["input"] = up.get_state()
        return state

    def set_state(self, state: dict) -> None:
        self._check_state(state)
        for key, attr, kind in self._saved:
            setattr(self, attr, kind(state[key]))
        for up in self._inputs():
            up.set_state(state["input"])


def as_node(obj, what: str) -> Node:
    """The node behind a Dataset (duck-typed, so nodes never import the facade)."""
    node = getattr(obj, "_node", None)
    if not isinstance(node, Node):
        raise TypeError(f"{what}: expected a layerkit.data.Dataset, received {type(obj).__name__}")
    return node


def call_fn(fn, element):
    """Call a user function the tf.data way: a tuple element is unpacked into arguments."""
    if type(element) is tuple:
        return fn(*element)
    return fn(element)


def annotate(err: BaseException, note: str) -> BaseException:
    """Add ``note`` to ``err`` (or wrap a StopIteration, which would end iteration silently)."""
    if isinstance(err, StopIteration):
        new = RuntimeError(f"a user function raised StopIteration: {err!r}")
        new.__cause__ = err
        err = new
    err.add_note(note)
    return err


def fn_name(fn) -> str:
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None)
    return name or type(fn).__name__


def fn_note(fn, i: int, what: str = "map") -> str:
    """The note added to an error that ``fn`` raised on input element ``i`` of a pass."""
    return f"raised by {fn_name(fn)} in Dataset.{what} on input element {i} of this pass"


def positive_int(value, where: str, arg: str) -> int:
    """``value`` as an int >= 1, else a ValueError naming ``where`` and ``arg``."""
    v = getattr(value, "_v", value)
    if isinstance(v, np.ndarray) and v.ndim == 0:
        v = v[()]
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
        raise ValueError(f"{where}: {arg} must be a positive integer, received {value!r}")
    return int(v)


def fast_sources(it: NodeIterator, ended: list):
    """What a chain over ``it``'s elements runs: ``it.fast_iter()``, and a new one while
    the last one stopped early; ``ended[0]`` is set when the chain has seen the end."""
    while True:
        yield it.fast_iter()
        if not it.fast_resumable():
            ended[0] = True
            return


def pull_rows(it: NodeIterator, want: int):
    """Exactly ``want`` rows from a chunk iterator (fewer only at its end; None if none)."""
    pieces = []
    got = 0
    while got < want:
        c = it.next_chunk(want - got)
        if c is None:
            break
        pieces.append(c)
        got += len(c[0])
    if not pieces:
        return None
    if len(pieces) == 1:
        return pieces[0]
    return [np.concatenate(cols) for cols in zip(*pieces)]
