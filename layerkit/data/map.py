"""map: a user function applied per element (the node and its serial iterator).

Serial map also answers ``next_list(n)`` (what ``batch`` asks for) with one loop over a
list of inputs taken from the source's own ``next_list``: about 0.4 µs per element less
than a ``__next__`` call per element through each stage. As the top stage over
``from_tensor_slices((x, y)).batch(k)`` it runs batch-first pipelines as one generator
(:mod:`~layerkit.data.map_fused`). The frames that call the user function keep the
element's seed source and position in locals, where ``element_rng`` finds them (see
``rng``). ``num_parallel_calls`` runs it in :mod:`~layerkit.data.map_parallel` instead.
"""
from __future__ import annotations

from collections import deque
from typing import Any

from layerkit._core.tensor import Tensor
from layerkit.data import parallel as _par
from layerkit.data import rng as _rng
from layerkit.data import structure as _st
from layerkit.data.map_fused import FusedBatchMap
from layerkit.data.map_parallel import ParallelMapIterator
from layerkit.data.node import (
    AUTOTUNE,
    IterationContext,
    Node,
    NodeIterator,
    annotate,
    call_fn,
    fn_name,
    fn_note,
)
from layerkit.primitives.random import next_seed

_normalize = _st.normalize
_PLAIN = _rng.PLAIN  # the frame walk is off: call through KeyedCall (see rng)


def _relaxed_spec(up_spec, up_first, out_first):
    """Spec of the map output, with sizes that stood for the input's unknown dims relaxed.

    The output spec is observed on the first element; a dimension whose size equals one
    that the input spec leaves unknown (a batch dimension, say) is made unknown too.
    """
    unknown_sizes = set()
    for s, t in zip(_st.flatten(up_spec), _st.flatten(up_first)):
        if s.shape is None:
            unknown_sizes.update(t.shape)
            continue
        for d, n in zip(s.shape, t.shape):
            if d is None:
                unknown_sizes.add(n)

    def leaf(t):
        spec = _st.TensorSpec.from_tensor(t)
        shape = tuple(None if n in unknown_sizes else n for n in spec.shape)
        return _st.TensorSpec(shape, spec.dtype)
    return _st.map_structure(leaf, out_first)


class MapNode(Node):
    """Applies ``fn`` to every element."""

    name = "map"

    def __init__(self, source: Node, fn, num_parallel_calls, deterministic, use_processes: bool,
                 seed) -> None:
        super().__init__(source)
        if not callable(fn):
            raise TypeError(f"Dataset.map: expected a callable, received {type(fn).__name__}")
        self.fn = fn
        if num_parallel_calls is not None and num_parallel_calls != AUTOTUNE and (
                not isinstance(num_parallel_calls, int) or num_parallel_calls < 1):
            raise ValueError(f"Dataset.map: num_parallel_calls must be a positive int, AUTOTUNE "
                             f"or None, received {num_parallel_calls!r}")
        # AUTOTUNE measures and decides per pass (map_autotune); ``workers`` is then what
        # it runs when Options.autotune.enabled is False: one worker per core.
        self.autotune = num_parallel_calls == AUTOTUNE
        self.tuned = None  # the last AUTOTUNE decision, where the next pass starts
        self.workers = (None if num_parallel_calls is None else
                        _par.default_parallelism() if self.autotune else
                        int(num_parallel_calls))
        self.deterministic = True if deterministic is None else bool(deterministic)
        self.use_processes = bool(use_processes)
        if self.use_processes:
            if self.workers is None:
                self.workers = _par.default_parallelism()
            if not _par.uses_fork():
                from multiprocessing.reduction import ForkingPickler  # spawn only: lazy

                try:
                    ForkingPickler.dumps(fn)
                except Exception as e:
                    raise TypeError(
                        f"Dataset.map(use_processes=True): the function {fn_name(fn)} cannot be "
                        f"sent to worker processes ({type(e).__name__}: {e}); define it at "
                        f"module level (not a lambda or a nested function)") from None
        # Drawn now (not per pass) so lk.random.set_seed before building the pipeline
        # makes element_rng() reproducible.
        self.seed = next_seed() if seed is None else int(seed)

    def make_iterator(self, ctx):
        up = self.inputs[0].make_iterator(ctx)
        top, inner = ctx.epoch(self)
        src = _rng.SeedSource(ctx.seed(self, self.seed), top, inner)
        if self.workers is None:
            return MapIterator(self, up, src, ctx)
        if self.autotune:
            opts = ctx.autotune_options()
            if opts.enabled is not False:
                from layerkit.data.map_autotune import AutoMapIterator  # (it imports this)

                return AutoMapIterator(self, up, src, ctx, budget=opts.cpu_budget)
        return ParallelMapIterator(self, up, src, ctx)

    def cardinality(self) -> int:
        return self.inputs[0].cardinality()

    def _compute_spec(self):
        source = self.inputs[0]
        up_spec = source.element_spec()
        it = source.make_iterator(IterationContext(probe=True))
        try:
            first = next(it)
        except StopIteration:
            raise ValueError("Dataset.map: cannot infer element_spec of a map over an empty "
                             "dataset") from None
        finally:
            it.close()
        out = _normalize(_call_keyed(self.fn, first, _rng.SeedSource(self.seed, 0, 0), 0))
        return _relaxed_spec(up_spec, first, out)


@_rng.keyed
def _call_keyed(fn, elem, src, index: int):
    """``fn(elem)`` as element ``index`` of the pass ``src`` (what element_rng reads)."""
    return call_fn(_rng.KeyedCall(fn, src, index) if _PLAIN else fn, elem)


class MapIterator(FusedBatchMap, NodeIterator):
    """Serial map. ``src`` and ``index`` are locals of the frames that call the function
    (``__next__``, ``next_list``, ``_fused``): element_rng reads them there."""

    __slots__ = ("_up", "_upnext", "_uplist", "_fn", "_count", "_src", "_node", "_ctx",
                 "_carry", "_gen", "_gen_ended", "_base")
    kind = "map"

    def __init__(self, node: MapNode, up: NodeIterator, src, ctx) -> None:
        self._node = node
        self._ctx = ctx
        self._up = up
        # The input's bound methods (no cycle through self); a _Carry's after an error.
        self._upnext = up.__next__
        self._uplist = up.next_list
        self._carry: _Carry | None = None
        self._fn = node.fn
        self._count = 0
        self._src = src
        self._gen = None  # weak reference to the live generator of fast_iter()
        self._gen_ended = True

    @_rng.keyed
    def __next__(self):
        if self._gen is not None:
            self._stop_gen()
        elem = self._upnext()
        index = self._count
        self._count = index + 1
        src = self._src  # element_rng reads it from this frame
        call = _rng.KeyedCall(self._fn, src, index) if _PLAIN else self._fn
        try:
            out = call(*elem) if type(elem) is tuple else call(elem)
        except Exception as e:
            raise annotate(e, fn_note(self._fn, index))  # noqa: B904 (the caught error itself)
        t = type(out)
        if t is Tensor:
            return out
        if t is tuple and len(out) == 2:  # the common (features, label) case, already Tensors
            a, b = out
            if type(a) is Tensor and type(b) is Tensor:
                return out
        try:
            return _normalize(out)
        except (TypeError, ValueError) as e:  # a value that is no element (None, objects)
            raise annotate(e, fn_note(self._fn, index))  # noqa: B904 (the caught error itself)

    @_rng.keyed
    def next_list(self, n: int) -> list:
        if self._gen is not None:
            self._stop_gen()
        if self._carry is not None and not self._carry.items:
            self._drop_carry()
        elems = self._uplist(n)
        if not elems:
            return elems
        fn = self._fn
        src = self._src  # noqa: F841 (element_rng reads it from this frame)
        call = _rng.KeyedCall(fn, src, self._count) if _PLAIN else fn
        out: list[Any] = []
        append = out.append
        try:
            for index, elem in enumerate(elems, self._count):  # noqa: B007 (element_rng reads it)
                r = call(*elem) if type(elem) is tuple else call(elem)
                if type(r) is tuple and len(r) == 2:  # (features, label): the common case
                    a, b = r
                    if type(a) is not Tensor or type(b) is not Tensor:
                        r = _normalize(r)
                elif type(r) is not Tensor:
                    r = _normalize(r)
                append(r)
        except Exception as e:
            # Element index failed: the inputs after it come next, as with __next__ calls.
            self._count = index + 1
            self._carry_over(elems[len(out) + 1:])
            raise annotate(e, fn_note(fn, index))  # noqa: B904 (the caught error itself)
        self._count = index + 1
        return out

    _serial_next = __next__  # what the fused loop and AUTOTUNE's inline mode call

    # ---- carry-over after an error, state --------------------------------------------------
    def _carry_over(self, rest: list) -> None:
        if not rest:
            return
        carry = self._carry
        if carry is None:
            carry = self._carry = _Carry(self._up)
            self._upnext = carry.__next__
            self._uplist = carry.next_list
        carry.items.extendleft(reversed(rest))

    def _drop_carry(self) -> None:
        self._carry = None
        self._upnext = self._up.__next__
        self._uplist = self._up.next_list

    def get_state(self) -> dict:
        if self._gen is not None:
            self._sync()
        state = {"node": self.kind, "count": self._count, "rng": list(self._src.as_tuple()),
                 "input": self._up.get_state()}
        if self._carry is not None and self._carry.items:
            state["carried"] = _st.encode_elements(list(self._carry.items))
        return state

    def set_state(self, state: dict) -> None:
        self._check_state(state)
        if self._gen is not None:
            self._stop_gen()
        self._count = int(state["count"])
        self._src = _rng.SeedSource(*state["rng"])
        self._ctx.restore(self._node, *state["rng"])
        self._up.set_state(state["input"])
        self._drop_carry()
        if "carried" in state:
            self._carry_over(_st.decode_elements(state["carried"]))

    def close(self) -> None:
        if self._gen is not None:
            self._stop_gen()
        self._up.close()


class _Carry:
    """Inputs that ``MapIterator.next_list`` pulled but did not map because the function
    raised on an earlier one; they are delivered before the rest of the input."""

    __slots__ = ("items", "up")

    def __init__(self, up: NodeIterator) -> None:
        self.items: deque = deque()
        self.up = up

    def __next__(self):
        if self.items:
            return self.items.popleft()
        return next(self.up)

    def next_list(self, n: int) -> list:
        items = self.items
        out = [items.popleft() for _ in range(min(n, len(items)))]
        if len(out) < n:
            out += self.up.next_list(n - len(out))
        return out
