"""The op record and ``apply``, the eager hot path.

An op is one record: a name, ``forward`` on NumPy arrays, ``vjp`` written with layerkit
ops (so gradients are themselves differentiable), and for elementwise ops a numexpr
``expr`` template used by graph fusion. Eager execution, tapes and tracers all read it.

``vjp(g, inputs, output, needs, **attrs)`` receives the upstream gradient ``g`` (a tuple
for multi-output ops), the input Tensors, the forward output(s) and a tuple of bools
saying which inputs need a gradient; it returns one gradient (or None) per input.

``reads`` declares which of those values the vjp reads: a tuple of input positions
and/or ``"out"`` (``()``: only shapes and dtypes, as ``add``). Tapes keep just those
alive once nothing else refers to a recorded tensor (``GradientTape`` swaps the others
for NaN-filled stand-ins of the same shape and dtype, so a wrong declaration shows as
NaN gradients, and tests/autodiff/test_tape_reads.py checks every declaration). The
default ``None`` means "everything", always correct (user ops from ``extend.defop``).
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from layerkit._core.context import RECORDERS
from layerkit._core.convert import FLOATX, to_array
from layerkit._core.tensor import Tensor
from layerkit._core.variable import Variable

_new = object.__new__
_SCALARS = (float, int, bool)


class Op:
    """One primitive: forward on arrays, vjp in lk ops, optional numexpr template."""

    __slots__ = ("name", "forward", "vjp", "expr", "num_outputs", "stateful", "updates",
                 "absorbs", "reads")

    def __init__(self, name: str, forward: Callable, vjp: Callable | None = None,
                 expr: str | None = None, num_outputs: int = 1,
                 stateful: bool = False, updates: Callable | None = None,
                 absorbs: tuple = (), reads: tuple | None = None) -> None:
        self.name = name
        self.forward = forward
        self.vjp = vjp
        self.expr = expr
        self.num_outputs = num_outputs  # 1, a fixed n, or -1 for "a tuple of any length"
        # Stateful records (random draws, in-place updates) are never constant-folded or
        # merged by graph passes and are re-run on every call of a traced function.
        self.stateful = stateful
        # For records that write into Variables' arrays in place (optimizer and metric
        # updates): ``updates(attrs)`` lists those Variables, so that a graph copies a
        # read of one that is still used after the update.
        self.updates = updates
        # A graph peephole declared here rather than in the pass: for each record ``m`` in
        # ``absorbs``, ``m(self(y, p, g), y) == self(y, p, m(g, p))`` holds exactly, so a
        # graph may apply ``m`` to this op's (smaller) last input instead of its output
        # (``passes.sink_masks``; e.g. a ReLU mask moved through a max-pool gradient).
        self.absorbs = absorbs
        # What ``vjp`` reads besides shapes and dtypes: input positions (``slice(k,
        # None)``: every input from position k on) and/or "out"; None (the default) is
        # everything (see the module docstring).
        if reads is not None:
            reads = tuple(reads)
            for r in reads:
                if not (r == "out" or (type(r) is int and r >= 0) or (
                        type(r) is slice and type(r.start) is int and r.stop is None)):
                    raise ValueError(f"Op {name!r}: reads entries are input positions "
                                     f"(ints >= 0, slice(k, None)) or 'out', received {r!r}")
        self.reads = reads

    def reads_input(self, j: int) -> bool:
        """Whether ``vjp`` reads the value of input ``j`` (see ``reads``)."""
        reads = self.reads
        if reads is None or j in reads:
            return True
        return any(type(r) is slice and j >= r.start for r in reads)

    def __repr__(self) -> str:
        return f"<Op {self.name}>"


def wrap(value) -> Tensor:
    t = _new(Tensor)
    t._v = value
    return t


def _values(args: tuple) -> list:
    # Python scalars stay weak (NumPy 2 promotion) when some operand is an array, so
    # ``float32 * 2.0`` is float32; otherwise they get the default dtypes.
    vals = []
    weak = False
    strong = False
    for a in args:
        if isinstance(a, Tensor):
            vals.append(a._rv)  # the op reading it is recorded (or runs eagerly)
            strong = True
        elif type(a) in _SCALARS:
            vals.append(a)
            weak = True
        elif isinstance(a, np.ndarray):
            vals.append(a)
            strong = True
        else:
            vals.append(to_array(a))
            strong = True
    if weak and not strong:
        # Only Python scalars: a float among them makes the op float32 (the default
        # float), never float64 from int64 + float32 promotion (``lk.pow(2, 0.5)``).
        dt = FLOATX if float in map(type, vals) else None
        vals = [to_array(v, dt) if type(v) in _SCALARS else v for v in vals]
    return vals


def apply(op: Op, *args, **attrs):
    """Run ``op`` eagerly on ``args`` and return Tensor(s); record it if a tape watches."""
    if RECORDERS:
        return _apply_recording(op, args, attrs)
    try:  # all Tensors (the common case): no per-argument type dispatch
        n = len(args)  # (a list comprehension would cost a frame: ~0.2 us per op)
        if n == 2:
            vals = (args[0]._v, args[1]._v)
        elif n == 1:
            vals = (args[0]._v,)
        else:
            vals = [a._v for a in args]
    except AttributeError:
        vals = _values(args)
    out = op.forward(*vals, **attrs)
    if op.num_outputs == 1:
        if type(out) is np.ndarray and (out.base is not None or (n and out is vals[0])):
            out = _unalias(out, args, vals, op, attrs)
        t = _new(Tensor)
        t._v = out
        return t
    return _wrap_outputs(out, args, vals, op, attrs)


def _wrap_outputs(outs, args, vals, op: Op, attrs: dict) -> tuple:
    # Not a generator expression in apply(): its free variables would turn apply's
    # locals into cells, slower to reach on every call (~50 ns).
    return tuple([wrap(_unalias(o, args, vals, op, attrs)) for o in outs])


def _unalias(out, args, vals, op: Op, attrs: dict):
    """``out``, or a copy if it is (a view of) an array that may change later: a
    Variable's buffer (optimizers update variables in place) or the caller's own NumPy
    array. A Tensor never changes after it was made (TensorFlow copies such inputs);
    views of other Tensors' arrays are safe and stay zero-copy (``x[0]``, reshape)."""
    if type(out) is np.ndarray:
        for k, a in enumerate(args):
            if type(a) is Tensor:
                continue  # the common case: a Tensor's array never changes
            src = a._v if isinstance(a, Variable) else a
            if not isinstance(src, np.ndarray) or not (
                    out is src or np.may_share_memory(out, src)):
                continue
            if out.size <= src.size or op.stateful:
                return out.copy()
            # A view larger than its input (broadcast_to): the op again on a private copy
            # of the input, so that the result stays a cheap view.
            vals = list(vals)
            vals[k] = src.copy()
            return op.forward(*vals, **attrs)
    return out


_NO_ATTRS: dict = {}


def record_binary(op: Op, x: Tensor, y: Tensor) -> Tensor:
    """``apply`` for a one-output, attribute-free op on two plain Tensors while some
    recorder is active (the elementwise operators' taped hot path)."""
    r = _new(Tensor)
    r._v = op.forward(x._v, y._v)
    outs = (r,)
    ins = (x, y)
    for rec in RECORDERS:
        rec.record(op, ins, outs, _NO_ATTRS)
    return r


def _apply_recording(op: Op, args: tuple, attrs: dict):
    recs = RECORDERS
    ins = args
    if len(args) == 1 and type(args[0]) is Tensor:  # unary ops on a plain Tensor
        out = op.forward(args[0]._v, **attrs) if attrs else op.forward(args[0]._v)
        first = vals = None  # a plain Tensor: its views are safe
    else:
        vals = []
        for a in args:
            if type(a) is Tensor:
                vals.append(a._v)
            elif isinstance(a, Tensor):  # a TracedTensor or Variable: this op is recorded
                vals.append(a._rv)
                if isinstance(a, Variable):
                    for r in recs:
                        r.read_variable(a)
            else:  # Python scalars, lists, arrays: convert, wrap as constant inputs
                # The tapes keep these inputs: never the caller's own array (TF copies).
                vals = [v.copy() if v is a and isinstance(v, np.ndarray) else v
                        for a, v in zip(args, _values(args))]
                ins = tuple(a if isinstance(a, Tensor) else wrap(v) for a, v in zip(args, vals))
                for a in ins:
                    if isinstance(a, Variable):
                        for r in recs:
                            r.read_variable(a)
                break
        out = op.forward(*vals, **attrs)
        first = vals[0] if vals else None
    if op.num_outputs == 1:
        if type(out) is np.ndarray and (out.base is not None or out is first):
            out = _unalias(out, ins, vals, op, attrs)
        result = _new(Tensor)
        result._v = out
        outs = (result,)
    else:
        result = _wrap_outputs(out, ins, vals, op, attrs)
        outs = result
    for r in recs:
        r.record(op, ins, outs, attrs)
    return result
