"""The fused batch-first loop of a serial map.

As the top stage over ``from_tensor_slices((x, y)).batch(k)``, a serial map runs the
three stages as one generator (``FusedBatchMap._fused``) that slices, wraps and maps
each batch in one frame, resumed from C by the public Iterator. Its position lives in
the iterators, so state and errors stay exact.
"""
from __future__ import annotations

import sys
import weakref

from layerkit._core import tricks as _tricks
from layerkit._core.tensor import Tensor
from layerkit._core.tuning import FUSED_MAP_BLOCK
from layerkit.data import rng as _rng
from layerkit.data import structure as _st
from layerkit.data.batch import BatchIterator
from layerkit.data.node import annotate, fn_note
from layerkit.data.sources import SlicesIterator

_normalize = _st.normalize
_new = object.__new__
_RECYCLE = _tricks.RECYCLE
# Full batches sliced at once by the fused batch-then-map loop: one reshape per block
# instead of one slice per batch per leaf.
_BLOCK = FUSED_MAP_BLOCK


class FusedBatchMap:
    """Mixin of ``MapIterator``: ``fast_iter`` and the fused loop. It uses the serial
    iterator's ``_up``, ``_fn``, ``_src``, ``_count``, ``_carry``, ``_gen``,
    ``_gen_ended`` and ``_base`` slots and its ``__next__`` (as ``_serial_next``, which
    a subclass that overrides ``__next__`` keeps)."""

    __slots__ = ()

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
        src = self._src  # element_rng reads it from this frame
        call = _rng.KeyedCall(fn, src, self._count) if _rng.PLAIN else fn
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
        # The count of a Tensor only this frame references; with the trick off (see
        # layerkit._core.tricks) no count matches and every batch gets new Tensors.
        alone = refs(u) if _RECYCLE else -1
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
                # make and free: half of what this loop adds to fn and the consumer
                # (a CPython trick: its measurement is in layerkit._core.tricks).
                if refs(u) != alone or weakrefs(u):
                    u = new(tensor)
                u._v = x
                v, w = w, v
                if refs(v) != alone or weakrefs(v):
                    v = new(tensor)
                v._v = y
                self._count = count
                try:
                    out = call(u, v)
                except Exception as e:
                    raise annotate(e, fn_note(fn, count - 1))  # noqa: B904 (the caught error itself)
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
                    raise annotate(e, fn_note(fn, count - 1))  # noqa: B904 (the caught error itself)
                yield out
        self._sync()
        self._gen = None  # __next__ below must not close this generator
        while True:
            try:
                out = self._serial_next()
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
