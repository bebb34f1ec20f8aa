"""map (serial, threads or processes) and filter: user functions applied per element.

Serial map also answers ``next_list(n)`` (what ``batch`` asks for) with one loop over a
list of inputs taken from the source's own ``next_list``: about 0.4 µs per element less
than a ``__next__`` call per element through each stage. As the top stage over
``from_tensor_slices((x, y)).batch(k)`` it runs batch-first pipelines as one generator
(``MapIterator._fused``) that slices, wraps and maps each batch in one frame, resumed
from C by the public Iterator. The frames that call the user function keep the element's
seed source and position in locals, where ``element_rng`` finds them (see ``rng``).

Parallel map pulls input elements in the consumer thread, hands chunks of them to the
workers of one :mod:`~layerkit.data.parallel` pool and delivers results in input order
(or as they complete when ``deterministic=False``). Chunk sizes adapt to the measured
cost of the function (about 2 ms of work per task for threads, 5 ms for processes), so
cheap functions do not drown in hand-off overhead, and at most ``IN_FLIGHT`` (256)
elements are submitted but not yet delivered; while the consumer waits for the next
result in order, it hands new chunks to any worker that finished, so no worker idles
behind a slower one. Worker processes receive and return a chunk as one stacked array
per leaf when the elements' shapes agree. Errors are caught per element: an exception in
element ``i`` reaches the consumer at position ``i`` and the elements after it still come.
A worker process that dies fails each element of the chunks it held with its own
``WorkerLostError`` (a RuntimeError naming the element and how the process ended), at
those elements' positions; the pool starts a new process for the rest. So every element
is either delivered or accounted for by one error, and nothing is retried.
"""
from __future__ import annotations

import functools
import sys
import time
import traceback
import weakref
from collections import deque

import numpy as np

from layerkit._core.tensor import Tensor
from layerkit.data import parallel as _par
from layerkit.data import rng as _rng
from layerkit.data import structure as _st
from layerkit.data.batch import BatchIterator
from layerkit.data.node import (
    AUTOTUNE,
    IterationContext,
    Node,
    NodeIterator,
    ScalarStateIterator,
    annotate,
    call_fn,
    fn_name,
)
from layerkit.data.sources import SlicesIterator
from layerkit.ops.random import next_seed

_normalize = _st.normalize
_new = object.__new__
# Full batches sliced at once by the fused batch-then-map loop: one reshape per block
# instead of one slice per batch per leaf.
_BLOCK = 256


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
        self.workers = (None if num_parallel_calls is None else
                        _par.default_parallelism() if num_parallel_calls == AUTOTUNE else
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
    return call_fn(fn, elem)


def _note(fn, i: int, what: str = "map") -> str:
    return f"raised by {fn_name(fn)} in Dataset.{what} on input element {i} of this pass"


class MapIterator(NodeIterator):
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
        self._carry = None
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
        src = self._src  # noqa: F841 (element_rng reads it from this frame)
        try:
            out = self._fn(*elem) if type(elem) is tuple else self._fn(elem)
        except Exception as e:
            raise annotate(e, _note(self._fn, index))  # noqa: B904 (the caught error itself)
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
            raise annotate(e, _note(self._fn, index))  # noqa: B904 (the caught error itself)

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
        out = []
        append = out.append
        try:
            for index, elem in enumerate(elems, self._count):  # noqa: B007 (element_rng reads it)
                r = fn(*elem) if type(elem) is tuple else fn(elem)
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
            raise annotate(e, _note(fn, index))  # noqa: B904 (the caught error itself)
        self._count = index + 1
        return out

    # ---- fused batch-first loop ------------------------------------------------------------
    def fast_iter(self):
        """A generator for ``from_tensor_slices((x, y)).batch(k).map(fn)`` (see ``_fused``),
        else ``self``. Its position lives in the iterators, so state and errors stay exact."""
        if self._gen is not None:
            self._stop_gen()
        up = self._up
        if (self._carry is None and type(up) is BatchIterator and up._chunked and not up._done
                and type(up._up) is SlicesIterator and up._up._pair):
            self._base = (up._up._i, self._count)  # where the generator starts
            gen = self._fused(up, up._up)
            self._gen = weakref.ref(gen)  # weak: the generator references self
            self._gen_ended = False
            return gen
        self._gen_ended = True
        return self

    def fast_resumable(self) -> bool:
        """After fast_iter()'s iterator stopped: True if it stopped early (an error, or a
        state change closed it) and a new one continues the pass."""
        return not self._gen_ended

    @_rng.keyed(index="count", offset=-1)
    def _fused(self, bt: BatchIterator, sl: SlicesIterator):
        # Slices, wraps and maps one batch per resume, nothing else: ~1 us per batch less
        # than the stage-by-stage path, the difference that matters when fn is a few
        # elementwise ops on 128 rows. The full batches of a block are views of one
        # reshape; the last, partial batch takes the general path. Only the map's count
        # is written per batch: _sync() derives the input's position from it.
        fn = self._fn
        src = self._src  # noqa: F841 (element_rng reads it from this frame)
        new, tensor, tp = _new, Tensor, type
        refs, weakrefs = sys.getrefcount, weakref.getweakrefcount
        size = bt._n
        n = sl._n
        a, b = sl._arrays
        ashape = (size,) + a.shape[1:]
        bshape = (size,) + b.shape[1:]
        pos = sl._i
        u = new(tensor)
        v = w = new(tensor)
        alone = refs(u)  # the count of a Tensor only this frame references
        while True:
            m = min((n - pos) // size, _BLOCK)
            if not m:
                break
            stop = pos + m * size
            blocks = zip(a[pos:stop].reshape((m,) + ashape), b[pos:stop].reshape((m,) + bshape))
            pos = stop
            for count, (x, y) in enumerate(blocks, self._count + 1):
                # Tensors nothing else references any more are recycled: the first
                # leaf's from the last batch (fn usually drops its inputs), the second's
                # from the one before (the consumer holds the last one while it asks for
                # the next). No one can tell, and a Tensor costs ~1000 instructions to
                # make and free: half of what this loop adds to fn and the consumer.
                if refs(u) != alone or weakrefs(u):
                    u = new(tensor)
                u._v = x
                v, w = w, v
                if refs(v) != alone or weakrefs(v):
                    v = new(tensor)
                v._v = y
                self._count = count
                try:
                    out = fn(u, v)
                except Exception as e:
                    raise annotate(e, _note(fn, count - 1))  # noqa: B904 (the caught error itself)
                if tp(out) is tuple:
                    try:
                        p, q = out
                    except ValueError:  # not a pair
                        p = q = None
                    if tp(p) is tensor and (q is v or tp(q) is tensor):  # v: labels passed on
                        yield out
                        continue
                try:
                    out = _normalize(out)
                except (TypeError, ValueError) as e:
                    raise annotate(e, _note(fn, count - 1))  # noqa: B904 (the caught error itself)
                yield out
        self._sync()
        self._gen = None  # __next__ below must not close this generator
        while True:
            try:
                out = self.__next__()
            except StopIteration:
                break
            yield out
        self._gen_ended = True

    def _sync(self) -> None:
        """Set the input's position from the count the fused loop keeps."""
        pos, count = self._base
        bt = self._up
        bt._up._i = pos + (self._count - count) * bt._n

    def _stop_gen(self) -> None:
        self._sync()
        gen = self._gen()
        self._gen = None
        if gen is not None:
            gen.close()  # it holds positions as locals: any other entry makes it stale

    # ---- carry-over after an error, state --------------------------------------------------
    def _carry_over(self, rest: list) -> None:
        if not rest:
            return
        if self._carry is None:
            self._carry = _Carry(self._up)
            self._upnext = self._carry.__next__
            self._uplist = self._carry.next_list
        self._carry.items.extendleft(reversed(rest))

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


# ---- parallel ------------------------------------------------------------------------------
@_rng.keyed
def _call_one(fn, elem, src, index: int) -> tuple:
    try:
        return True, _normalize(call_fn(fn, elem))
    except Exception as e:
        return False, annotate(e, _note(fn, index))


def _run_chunk(fn, elems: list, src, start: int) -> tuple:
    """Worker task (threads): outcomes ``(ok, value_or_error)`` per element, and the time."""
    t0 = time.perf_counter()
    out = [_call_one(fn, elem, src, start + j) for j, elem in enumerate(elems)]
    box = [(out, time.perf_counter() - t0)]
    del out
    return _par.release(box)


def _run_chunk_process(fn, chunk, src, start: int) -> tuple:
    """Worker task (processes; ``fn`` is bound when the workers start). Elements travel
    as one stacked array per leaf when they can (see ``structure.encode_chunk``): a few
    pickles per chunk instead of one per element and leaf."""
    out, dt = _run_chunk(fn, _st.decode_chunk(chunk), src, start)
    if all(ok for ok, _ in out):
        payload = ("ok", _st.encode_chunk([v for _, v in out]))
    else:
        for ok, v in out:
            if not ok:  # the frames stay here: the consumer gets them as text
                v.add_note("the user function's traceback in the Dataset worker process:\n"
                           + "".join(traceback.format_tb(v.__traceback__)).rstrip())
        payload = ("mixed", [(ok, _st.to_arrays(v) if ok else v) for ok, v in out])
    box = [(payload, dt)]
    del out
    return _par.release(box)


def _process_outcomes(payload) -> list:
    kind, data = payload
    if kind == "ok":
        return [(True, e) for e in _st.decode_chunk(data)]
    return [(ok, _st.from_arrays(v) if ok else v) for ok, v in data]


IN_FLIGHT = 256


class ParallelMapIterator(NodeIterator):
    __slots__ = ("_up", "_node", "_count", "_src", "_pool", "_window", "_pending", "_exhausted",
                 "_chunk", "_cost", "_max_chunk", "_target", "_finalizer", "_ctx", "__weakref__")
    kind = "map"

    def __init__(self, node: MapNode, up: NodeIterator, src, ctx) -> None:
        self._ctx = ctx
        self._up = up
        self._node = node
        self._count = 0
        self._src = src
        k = node.workers
        if node.use_processes:
            self._pool = _par.ProcessPool(k, "map", functools.partial(_run_chunk_process, node.fn))
            self._target, queued = 5e-3, 2
        else:
            self._pool = _par.ThreadPool(k, "map")
            # 2 ms tasks: with 0.5 ms ones, waking threads for each result cost 57% more
            # CPU than a serial map on ~200 us NumPy work (12% with 2 ms). 4 tasks queued
            # per worker: the consumer thread, woken to submit more, can wait up to the
            # interpreter's 5 ms switch interval for the GIL while the workers run.
            self._target, queued = 2e-3, 4
        # Up to ``queued`` tasks per worker submitted and unfinished, twice that not yet
        # delivered, and at most IN_FLIGHT elements not delivered (the memory bound).
        self._window = _par.Window(self._pool, 2 * queued * k, node.deterministic,
                                   running=queued * k)
        self._max_chunk = max(1, IN_FLIGHT // (2 * queued * k))
        self._pending: deque = deque()  # outcomes of the chunk being delivered
        self._exhausted = False
        self._chunk = 1
        self._cost = None  # seconds per element, running estimate
        self._finalizer = weakref.finalize(self, _shutdown_and_close, self._pool, up)

    def _fill(self) -> None:
        w = self._window
        up = self._up
        node = self._node
        while not self._exhausted and not w.full():
            elems = []
            err = None
            for _ in range(self._chunk):
                try:
                    elems.append(next(up))
                except StopIteration:
                    self._exhausted = True
                    break
                except Exception as e:
                    err = e
                    break
            if elems:
                start = self._count
                self._count += len(elems)
                if node.use_processes:
                    w.submit(None, (_st.encode_chunk(elems), self._src, start),
                             (start, len(elems)))
                else:
                    w.submit(_run_chunk, (node.fn, elems, self._src, start))
            if err is not None:
                outcomes = [(False, err)]
                w.put_ready((("mixed", outcomes) if node.use_processes else outcomes, 0.0))

    def __next__(self):
        pending = self._pending
        if not pending:
            self._take_chunk()
        ok, value = pending.popleft()
        if not ok:
            try:
                raise value
            finally:
                value = None  # no cycle through the traceback (see parallel.release)
        return value

    def _take_chunk(self) -> None:
        # A separate frame: the chunk's outcomes may hold an exception that __next__ raises
        # afterwards, and __next__'s frame must not reference them (a reference cycle).
        self._fill()
        w = self._window
        if not len(w):
            raise StopIteration
        while not w.ready():  # keep every worker busy while the next result is pending
            w.wait()
            self._fill()
        outcomes = self._outcomes(w.take(), tune=True)
        self._pending.extend(outcomes)
        self._fill()

    def _outcomes(self, slot, tune: bool = False) -> list:
        """A chunk's outcomes ``(ok, value or error)``, one per input element."""
        if slot.error is not None:  # the worker machinery failed, not the user function
            err, tag, slot = slot.error, slot.tag, None
            if isinstance(err, _par.WorkerLostError):
                return _lost(err, *tag)
            try:
                raise err
            finally:
                err = None  # no cycle through the traceback (see parallel.release)
        outcomes, dt = slot.value
        if self._node.use_processes:
            outcomes = _process_outcomes(outcomes)
        if tune:
            self._tune(len(outcomes), dt)
        return outcomes

    def _tune(self, n: int, dt: float) -> None:
        if n == 0 or dt <= 0:
            return
        per = dt / n
        self._cost = per if self._cost is None else 0.7 * self._cost + 0.3 * per
        self._chunk = int(min(self._max_chunk, max(1, self._target / max(self._cost, 1e-9))))

    def get_state(self) -> dict:
        outcomes = list(self._pending)
        for slot in self._window.settle():
            outcomes.extend(self._outcomes(slot))
        buf = []
        for ok, v in outcomes:
            buf.append({"ok": _st.encode(v)} if ok else _st.encode_error(v))
        return {"node": self.kind, "count": self._count, "rng": list(self._src.as_tuple()),
                "exhausted": self._exhausted, "buffer": buf, "input": self._up.get_state()}

    def set_state(self, state: dict) -> None:
        self._check_state(state)
        self._window.clear()
        self._pending.clear()
        self._count = int(state["count"])
        self._src = _rng.SeedSource(*state["rng"])
        self._ctx.restore(self._node, *state["rng"])
        self._exhausted = bool(state["exhausted"])
        self._up.set_state(state["input"])
        for entry in state["buffer"]:
            if "ok" in entry:
                self._pending.append((True, _st.decode(entry["ok"])))
            else:
                self._pending.append((False, _st.decode_error(entry)))

    def close(self) -> None:
        self._finalizer.detach()
        self._pool.shutdown(wait=True)
        self._window._slots.clear()
        self._exhausted = True
        self._pending.clear()
        self._up.close()


def _lost(err, start: int, n: int) -> list:
    """One error per input element of a chunk whose worker process died."""
    return [(False, _par.WorkerLostError(
        f"Dataset.map: input element {i} of this pass is lost: the worker process (pid "
        f"{err.pid}) running it {_par.describe_exit(err.exitcode)}. The other elements "
        f"still come (a new worker process takes its place), so a loop that goes on past "
        f"this error receives or is told about every element", err.pid, err.exitcode))
        for i in range(start, start + n)]


def _shutdown_and_close(pool, up) -> None:
    # Workers never touch ``up`` (the consumer pulls inputs), so closing it now is safe.
    pool.shutdown(wait=False)
    up.close()


# ---- filter --------------------------------------------------------------------------------
class FilterNode(Node):
    """Keeps the elements for which ``predicate`` returns True."""

    name = "filter"

    def __init__(self, source: Node, predicate) -> None:
        super().__init__(source)
        if not callable(predicate):
            raise TypeError(f"Dataset.filter: expected a callable, received "
                            f"{type(predicate).__name__}")
        self.predicate = predicate

    def make_iterator(self, ctx):
        return FilterIterator(self, self.inputs[0].make_iterator(ctx))

    def _compute_spec(self):
        return self.inputs[0].element_spec()


class FilterIterator(ScalarStateIterator):
    __slots__ = ("_up", "_fn", "_count")
    kind = "filter"
    _saved = (("count", "_count", int),)

    def __init__(self, node: FilterNode, up: NodeIterator) -> None:
        self._up = up
        self._fn = node.predicate
        self._count = 0

    def __next__(self):
        up = self._up
        fn = self._fn
        while True:
            elem = next(up)
            i = self._count
            self._count = i + 1
            try:
                keep = fn(*elem) if type(elem) is tuple else fn(elem)
                keep = _as_bool(keep)
            except Exception as e:
                raise annotate(e, _note(fn, i, "filter"))  # noqa: B904 (the caught error itself)
            if keep:
                return elem


def _as_bool(value) -> bool:
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    a = np.asarray(value._v if isinstance(value, Tensor) else value)
    if a.shape != () or a.dtype != np.bool_:
        raise TypeError(f"the filter predicate must return a scalar bool, received "
                        f"{a.dtype.name} with shape {a.shape}")
    return bool(a)
