"""GradientTape: records ops whose inputs it watches; answers gradient queries."""
from __future__ import annotations

import enum
import sys
import threading
import weakref
from contextlib import AbstractContextManager
from typing import Any

import numpy as np

from layerkit._core import context
from layerkit._core.context import RECORDERS
from layerkit._core.convert import convert_to_tensor
from layerkit._core.nest import flatten
from layerkit._core.nest import pack_sequence_as as pack_like
from layerkit._core.op import Op, wrap
from layerkit._core.tensor import Tensor
from layerkit._core.variable import KEEPERS, Variable
from layerkit.autodiff import jacobian as _jac
from layerkit.autodiff.backprop import backward
from layerkit.primitives.creation import zeros_like
from layerkit.primitives.elementwise import add

_READ_VALUE = Op("read_value", lambda x: x.copy(), lambda g, ins, out, needs: (g,))
_SCALAR_ONES: dict = {}
_NEEDS_ONE = (True,)
# The needs of a two-input op, indexed by (first watched) + 2 * (second watched): shared
# tuples, one allocation less per recorded op.
_NEEDS2 = (None, (True, False), (False, True), (True, True))
_new = object.__new__
_get_ident = threading.get_ident
_discard = KEEPERS.discard
_refs = sys.getrefcount
_weakrefs = weakref.getweakrefcount

# Release (see GradientTape._prune): the tape looks for recorded tensors nothing but
# itself refers to any more once this many bytes were recorded since the last look
# (each op's float outputs plus _NODE_BYTES for the op itself), or as many as were
# alive after it, whichever is more: amortised O(1) per op. A loop of ops on a watched
# tensor so holds about 1 MB of dead results (about L2), or 512 dead ops of small
# tensors. Measured on `y = x * x + x` with a watched x, steady state, against torch
# requires_grad in the same process (load 6 on 2 cores): 1 MB / 2 KB gave (4,) 1.04x
# and (256, 256) 1.00-1.09x; 4 MB / 8 KB 1.02-1.14x and 1.16x (cold buffers); 4 MB /
# 256 B 1.26-1.48x on (4,) (15,000 ops between looks: longer cyclic-GC passes).
_PRUNE_BYTES = 1 << 20
_NODE_BYTES = 2 << 10
# Stand-ins replace dead values no gradient rule reads only from this size up (smaller
# ones cost more to replace than they hold); tests set it to 0 to poison everything.
_STANDIN_MIN_BYTES = 1024


_STANDINS: dict = {}  # (shape, dtype) -> stand-in: they are read-only and tiny


def _standin(v):
    """A zero-stride array shaped and typed like ``v`` whose elements are poison (NaN;
    the most negative integer; True): what a tape keeps in place of a value no gradient
    rule reads, so that reading it by mistake shows in the gradient."""
    key = (v.shape, v.dtype)
    s = _STANDINS.get(key)
    if s is not None:
        return s
    dt = v.dtype
    if dt.kind in "fc":
        fill = np.array(np.nan, dt)
    elif dt.kind in "iu":
        fill = np.array(np.iinfo(dt).min if dt.kind == "i" else np.iinfo(dt).max, dt)
    elif dt.kind == "b":
        fill = np.array(True)
    else:
        return v
    if len(_STANDINS) >= 256:
        _STANDINS.clear()
    s = _STANDINS[key] = np.broadcast_to(fill, v.shape)
    return s


def _ones(t: Tensor) -> np.ndarray:
    """The default seed: ones like ``t``; a shared read-only 0-d array for scalars (the
    common loss case; np.ones costs ~1 us of Python per call)."""
    v = t._rv
    try:  # arrays, NumPy scalars and traced values all have both
        dtype, shape = v.dtype, v.shape
    except AttributeError:  # a Python scalar
        dtype, shape = t.dtype, t.shape
    if shape:
        return np.ones(shape, dtype)
    one = _SCALAR_ONES.get(dtype)
    if one is None:
        one = np.ones((), dtype)
        one.flags.writeable = False
        _SCALAR_ONES[dtype] = one
    return one


def _target(t) -> Tensor:
    if t is None:  # a function that returned nothing: say so, not "cannot convert"
        raise TypeError("GradientTape.gradient: target must be a Tensor or a nested "
                        "structure of Tensors, received None")
    return convert_to_tensor(t)


def _self_gradient(source: Tensor, targets: list, seeds: list):
    """The gradient of targets w.r.t. an unwatched ``source`` that is one of them: its
    seed(s) (TensorFlow: a Variable w.r.t. itself is 1 even if no op read it)."""
    g = None
    if _is_float(source):
        for t, seed in zip(targets, seeds):
            if t is source:
                g = seed if g is None else add(g, seed)
    return g


def _is_float(t: Tensor) -> bool:
    try:
        return t._rv.dtype.kind in "fc"
    except AttributeError:
        return isinstance(t._rv, float)


class UnconnectedGradients(enum.StrEnum):
    """What :meth:`GradientTape.gradient` returns for a source the target does not depend
    on: ``NONE`` (``None``, the default) or ``ZERO`` (zeros shaped like the source), as
    ``tf.UnconnectedGradients``. Equal to the strings ``'none'`` and ``'zero'``, which
    are accepted too."""

    NONE = "none"
    ZERO = "zero"


class GradientTape:
    """Record operations for automatic differentiation (TensorFlow semantics).

    Trainable Variables read inside the block are watched automatically (unless
    ``watch_accessed_variables=False``); other tensors with :meth:`watch`. Tapes nest:
    a gradient computed inside an outer tape's block is recorded by the outer tape,
    which gives higher-order derivatives.

    Memory: the tape keeps only what gradients can still need. Every few MB of
    recorded results it drops recorded ops whose results nothing else refers to and
    that feed no op it keeps, and replaces dead intermediate values no gradient rule
    reads (``Op.reads``) by stand-ins; watched tensors and tensors you hold are never
    touched.

    Args:
        persistent: allow more than one :meth:`gradient` call.
        watch_accessed_variables: watch trainable Variables read in the block.

    Examples:
        >>> import layerkit as lk
        >>> x = lk.constant(3.0)
        >>> with lk.GradientTape() as tape:
        ...     tape.watch(x)
        ...     y = x * x
        >>> tape.gradient(y, x)
        Tensor(6., shape=(), dtype=float32)
    """

    # Defaults shared by every tape until it sets its own (a tape is made per step).
    _recording = False
    _used = False
    # Set when a tensor is watched after ops were recorded: the needs recorded with
    # those ops may then be stale (see gradient()).
    _late_watch = False
    _thread = None  # the thread whose ops this tape records
    # Bytes left to record before the next _prune.
    _left = _PRUNE_BYTES

    def __init__(self, persistent: bool = False, watch_accessed_variables: bool = True) -> None:
        self._persistent = persistent
        self._watch_vars = watch_accessed_variables
        self._watched: dict[int, Tensor] = {}
        self._variables: dict[int, Variable] = {}
        # Tensors watched directly (watch() or a Variable read), as opposed to results of
        # recorded ops.
        self._roots: dict[int, Tensor] = {}
        self._nodes: list = []
        # Variables that recorded ops may read: while there are any, the tape is registered
        # with ``variable.KEEPERS`` so that a change of one (before or after the block
        # ends) first hands those ops the value they read (see keep_reads).
        self._reads: dict[int, Variable] = {}

    # ---- context management --------------------------------------------------------
    def __enter__(self) -> GradientTape:
        if self._recording:
            raise RuntimeError("this GradientTape is already recording (entered twice)")
        self._recording = True
        # The recorder stack is process-wide (one list read on the eager hot path); a
        # tape records only the ops of the thread that entered it, so a prefetch or map
        # worker running while the tape is open never lands on it.
        self._thread = threading.get_ident()
        RECORDERS.append(self)
        return self

    def __exit__(self, *exc) -> None:
        self._recording = False
        if RECORDERS and RECORDERS[-1] is self:
            RECORDERS.pop()
        else:
            context.pop(self)

    # ---- recorder protocol (called by the eager dispatcher) --------------------------
    def read_variable(self, var: Variable) -> None:
        key = id(var)
        if key in self._reads or _get_ident() != self._thread:
            return  # once per variable per step
        if not self._reads:  # the first: register with KEEPERS (see variable.keep_reads)
            self._keeper = ref = weakref.ref(self, _discard)
            KEEPERS.add(ref)
        self._reads[key] = var
        if (key not in self._watched and self._watch_vars and var._trainable
                and var._v.dtype.kind in "fc"):
            # _watch_one inlined. A Variable holds an array.
            self._watched[key] = self._roots[key] = self._variables[key] = var

    def _release(self) -> None:
        """Drop the recorded ops (a non-persistent tape that answered, reset)."""
        self._nodes = []
        self._left = _PRUNE_BYTES
        if self._reads:
            self._reads = {}
            _discard(self._keeper)

    def record_read_value(self, var: Variable, snapshot: Tensor) -> None:
        # Variable.value()/read_value() in the block: the snapshot is a read of the
        # variable (TF's ReadVariableOp), so gradients reach the variable through it.
        self.read_variable(var)
        self.record(_READ_VALUE, (var,), (snapshot,), {})

    def keep_reads(self, changing: dict, snaps: dict) -> None:
        """Called (through ``variable.keep_reads``) just before the Variables in
        ``changing`` (id -> Variable) change, while this tape holds recorded ops (its
        block may have ended). Ops recorded so far that read one of them keep the value
        they read, as in TensorFlow: they get a snapshot (a copy of the current value,
        shared through ``snaps`` by all tapes), and an identity node ties it back to the
        variable so gradients still reach it."""
        reads = self._reads
        mine = {k: v for k, v in changing.items() if k in reads}
        if not mine:
            return
        used: dict = {}
        nodes = self._nodes
        for k, (op, ins, outs, attrs, needs) in enumerate(nodes):
            if op is _READ_VALUE:
                continue  # its output is already a copy, and it must stay tied to var
            for t in ins:
                if id(t) in mine:
                    break
            else:
                continue
            new = []
            for t in ins:
                key = id(t)
                if key in mine:
                    snap = snaps.get(key)
                    if snap is None:  # a copy: optimizers update in place
                        snap = snaps[key] = wrap(np.array(t._v, copy=True))
                    used[key] = snap
                    t = snap
                new.append(t)
            nodes[k] = (op, tuple(new), outs, attrs, needs)
        for key, snap in used.items():
            watched = key in self._watched
            if watched:
                self._watched[id(snap)] = snap
            nodes.insert(0, (_READ_VALUE, (mine[key],), (snap,), {}, (watched,)))

    def record(self, op: Op, ins: tuple, outs: tuple, attrs: dict) -> None:
        if op.vjp is None:
            return
        w = self._watched
        # Which inputs are watched now: the node's "needs" (see backward()).
        n = len(ins)
        if n == 1:
            if id(ins[0]) not in w:
                return
            needs = _NEEDS_ONE
        elif n == 2:
            needs = _NEEDS2[(id(ins[0]) in w) + 2 * (id(ins[1]) in w)]
            if needs is None:
                return
        else:
            needs = tuple([id(t) in w for t in ins])
            if True not in needs:
                return
        if _get_ident() != self._thread:
            return
        self._nodes.append((op, ins, outs, attrs, needs))
        left = self._left - _NODE_BYTES
        for o in outs:
            v = o._rv
            if v.dtype.kind in "fc":  # integer/bool results carry no gradient
                w[id(o)] = o
                left -= v.nbytes
        self._left = left
        if left < 0:
            self._prune()

    def _prune(self) -> None:
        """Release what no gradient can need any more (amortised: see _PRUNE_BYTES).

        A recorded tensor is *dead* when nothing but this tape refers to it: its
        reference count is exactly the tape's own references (its producer's output
        tuple, ``_watched``, the input tuples of kept ops) and it has no weak
        references. No one can use it again or ask for a gradient through it.

        One walk from the newest op back: an op whose outputs are all dead and feed no
        kept op cannot contribute to the gradient of a live tensor, so it is dropped at
        once (its input tuples go with it, which may make its inputs dead in turn:
        a dead chain goes in the same walk). A dead output that kept ops take in, but
        whose value none of their gradient rules reads (``Op.reads``), keeps its
        identity, shape and dtype for the backward walk while its array is replaced
        by a zero-stride stand-in (:func:`_standin`). A tuple something else refers to
        as well (the op being recorded returns its outputs' tuple; nested tapes share
        them) gives its tensors a reference the tape does not count, so they stay
        alive. Watched tensors (roots) and anything not a plain Tensor are never
        touched. A probe op, walked first, calibrates both counts.
        """
        nodes = self._nodes
        w = self._watched
        roots = self._roots
        refs, weakrefs, plain = _refs, _weakrefs, Tensor
        wget = w.get
        nodes.append((None, (), (_new(Tensor),), None, None))  # the probe
        tbase = base = 0  # counts of a tuple / tensor only its node refers to
        fed: dict = {}    # tensor id -> places in the input tuples of kept ops
        fget = fed.get
        read: set = set()  # tensors whose values kept ops' gradient rules read
        kept = []
        live = 0
        i = len(nodes)
        try:
            for i in range(len(nodes) - 1, -1, -1):
                node = nodes[i]
                outs = node[2]
                if not tbase:  # the probe
                    tbase = refs(outs)
                    o = outs[0]
                    base = refs(o)
                    o = node = nodes[i] = None
                    continue
                alive = refs(outs) != tbase
                if not alive and len(outs) == 1:  # the common case, without loops
                    o = outs[0]
                    k = id(o)
                    inw = wget(k) is o
                    if (k not in fed and type(o) is plain and refs(o) == base + inw
                            and k not in roots and not weakrefs(o)):
                        if inw:
                            del w[k]
                        o = node = outs = nodes[i] = None
                        continue
                    o = None
                    alive = True
                if not alive:
                    for o in outs:
                        k = id(o)
                        if (k in fed or type(o) is not plain or k in roots
                                or refs(o) != base + (wget(k) is o) or weakrefs(o)):
                            alive = True
                            break
                    o = None
                if not alive:  # dead and feeding nothing kept: drop it now
                    for o in outs:
                        if wget(id(o)) is o:
                            del w[id(o)]
                    o = node = outs = nodes[i] = None
                    continue
                kept.append(node)
                op = node[0]
                reads = op.reads
                if reads is None or "out" in reads:
                    read.update(map(id, outs))
                own = refs(outs) == tbase  # (before the loop: its iterator refers to outs)
                for o in outs:
                    v = o._rv
                    if type(v) is not np.ndarray:
                        continue
                    k = id(o)
                    if (own and k not in read and type(o) is plain and k not in roots
                            and v.nbytes >= _STANDIN_MIN_BYTES and v.strides.count(0) < v.ndim
                            and refs(o) == base + (wget(k) is o) + fget(k, 0)
                            and not weakrefs(o)):
                        o._v = _standin(v)
                    else:
                        live += v.nbytes
                o = v = None
                ins = node[1]
                if refs(ins) == tbase:
                    for t in ins:
                        k = id(t)
                        fed[k] = fget(k, 0) + 1
                    t = None
                if reads is None:
                    read.update(map(id, ins))
                elif reads:
                    read.update([id(t) for j, t in enumerate(ins) if op.reads_input(j)])
        except BaseException:  # (an interrupt): keep every op not dropped yet
            rest = [n for n in nodes[:i + 1] if n is not None and n[0] is not None]
            if kept and rest and rest[-1] is kept[-1]:
                rest.pop()
            self._nodes = rest + kept[::-1]
            raise
        kept.reverse()
        self._nodes = kept
        self._left = max(_PRUNE_BYTES, live + _NODE_BYTES * len(kept))

    # ---- public API ---------------------------------------------------------------------
    def _watch_one(self, t: Tensor) -> None:
        if not _is_float(t):
            return  # integer and bool tensors get no gradient (TF warns and skips)
        key = id(t)
        if key not in self._watched:
            self._watched[key] = t
            self._roots[key] = t
        if isinstance(t, Variable):
            self._variables[id(t)] = t

    def watch(self, tensor: Any) -> None:
        """Watch a tensor or a nested structure of tensors."""
        for t in flatten(tensor):
            if not isinstance(t, Tensor):
                raise TypeError(
                    f"GradientTape.watch expects Tensors or Variables, received "
                    f"{type(t).__name__}"
                )
            if self._nodes and id(t) not in self._watched:
                # It may already be an input of a recorded op, whose needs say "no".
                self._late_watch = True
            self._watch_one(t)

    def watched_variables(self) -> tuple:
        """The Variables watched so far, in the order they were first watched."""
        return tuple(self._variables.values())

    def stop_recording(self) -> AbstractContextManager[None]:
        """Context manager that pauses recording on this tape."""
        if not self._recording:
            raise ValueError("stop_recording() is only valid while the tape is recording")
        return context.paused(self)

    def reset(self) -> None:
        """Clear everything recorded (and watched) so far."""
        self._watched.clear()
        self._variables.clear()
        self._roots.clear()
        self._late_watch = False
        self._release()

    def gradient(self, target: Any, sources: Any, output_gradients: Any = None,
                 unconnected_gradients: str = "none") -> Any:
        """Gradient of ``target`` (summed if not scalar) w.r.t. ``sources``.

        Args:
            target: a Tensor or a nested structure of Tensors (their sum is differentiated).
            sources: a Tensor/Variable or a nested list/tuple/dict of them.
            output_gradients: upstream gradients, one per target (default ones).
            unconnected_gradients: ``'none'`` (default) or ``'zero'``, or
                :class:`UnconnectedGradients` ``NONE`` / ``ZERO``.

        Returns:
            Gradients in the structure of ``sources``; ``None`` for unconnected or
            integer sources unless ``unconnected_gradients='zero'``. A float source that
            is itself one of the targets gets that target's seed (1) even if no op read
            it (TensorFlow: a Variable w.r.t. itself). Gradients are taken at the values
            the recorded ops read, even if a Variable changed since (assign, an optimizer
            step).

        Raises:
            RuntimeError: a non-persistent tape was already used.
        """
        if unconnected_gradients not in ("none", "zero"):
            raise ValueError(
                f"unconnected_gradients must be 'none' or 'zero', received "
                f"{unconnected_gradients!r}"
            )
        if self._used and not self._persistent:
            raise RuntimeError(
                "A non-persistent GradientTape can only be used to compute one set of "
                "gradients; use GradientTape(persistent=True) for more"
            )
        self._used = True
        single = isinstance(sources, Tensor)
        flat_sources = [sources] if single else flatten(sources)
        watched = self._watched
        srcs = []
        for s in flat_sources:
            if not isinstance(s, Tensor):
                raise TypeError(
                    f"GradientTape.gradient: sources must be Tensors or Variables, received "
                    f"{type(s).__name__}"
                )
            # Only watched float tensors receive gradients (TF: an unwatched source is
            # unconnected even if it took part in a recorded op).
            if id(s) in watched:
                srcs.append(s)
        if isinstance(target, Tensor):
            targets = [target]
            if output_gradients is None:
                seed = _new(Tensor)
                seed._v = _ones(target)
                seeds = [seed]
        else:
            targets = [_target(t) for t in flatten(target)]
            if output_gradients is None:
                seeds = [wrap(_ones(t)) for t in targets]
        if output_gradients is not None:
            # None entries mean "ones" (TF), e.g. output_gradients=[g1, None].
            seeds = [None if g is None else convert_to_tensor(g)
                     for g in flatten(output_gradients)]
            if len(seeds) != len(targets):
                raise ValueError(
                    f"output_gradients: expected {len(targets)} gradients (one per target), "
                    f"received {len(seeds)}"
                )
            seeds = [wrap(_ones(t)) if s is None else s for t, s in zip(targets, seeds)]
            for t, s in zip(targets, seeds):
                if s.shape != t.shape:
                    raise ValueError(
                        f"output_gradients: shape {s.shape} does not match target shape {t.shape}"
                    )
        # The needs recorded with each op (which inputs were watched then) are exactly
        # the ones a sweep from the sources would find when every directly watched tensor
        # is a source and none was watched after being used; otherwise backward() sweeps.
        roots = self._roots
        swept = not self._late_watch and len(roots) <= len(srcs)
        if swept:
            src_ids = {id(s) for s in srcs} if len(srcs) > 1 else (id(srcs[0]),) if srcs else ()
            for key in roots:
                if key not in src_ids:
                    swept = False
                    break
        if self._persistent:
            grads = backward(list(self._nodes), targets, seeds, srcs, swept)
        else:
            # A non-persistent tape does not record its own backward pass; outer tapes do.
            nodes = self._nodes
            self._release()
            self._watched = {}
            if not self._recording:
                grads = backward(nodes, targets, seeds, srcs, swept)
            else:  # gradient() inside the tape's own block
                context.pop(self)
                try:
                    grads = backward(nodes, targets, seeds, srcs, swept)
                finally:
                    context.push(self)
        if single:
            g = grads[0] if srcs else _self_gradient(sources, targets, seeds)
            if g is None and unconnected_gradients == "zero":
                g = zeros_like(sources) if _is_float(sources) else zeros_like(
                    sources, dtype=np.float32)
            return g
        it = iter(grads)
        out = []
        for s in flat_sources:
            g = next(it) if id(s) in watched else _self_gradient(s, targets, seeds)
            if g is None and unconnected_gradients == "zero":
                g = zeros_like(s) if _is_float(s) else zeros_like(s, dtype=np.float32)
            out.append(g)
        return pack_like(sources, out)

    def jacobian(self, target: Tensor, source: Any, unconnected_gradients: str = "none",
                 parallel_iterations: int | None = None, experimental_use_pfor: bool = True) -> Any:
        """Jacobian of ``target`` w.r.t. ``source``: shape ``target.shape + source.shape``.

        ``source`` may be a nested structure (the result has its structure). An
        unwatched source gives None (zeros with ``'zero'``). ``parallel_iterations`` and
        ``experimental_use_pfor`` are accepted for TensorFlow compatibility and ignored.
        """
        return _jac.jacobian(self, target, source, unconnected_gradients)

    def batch_jacobian(self, target: Tensor, source: Tensor, unconnected_gradients: str = "none",
                       parallel_iterations: int | None = None,
                       experimental_use_pfor: bool = True) -> Tensor | None:
        """Per-example Jacobian: shape ``(batch,) + target.shape[1:] + source.shape[1:]``
        (arguments as in :meth:`jacobian`)."""
        return _jac.batch_jacobian(self, target, source, unconnected_gradients)
