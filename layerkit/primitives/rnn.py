"""Whole-sequence recurrent records: LSTM, GRU (``reset_after=True``) and a simple RNN.

One record runs a whole sequence, so an LSTM layer costs two records (forward and
backward) instead of about a dozen eager ops per time step each way. Keras layouts:
``x`` (batch, time, features), ``kernel`` (features, G*units), ``recurrent_kernel``
(units, G*units); LSTM gates i, f, c, o with ``bias`` (4*units,); GRU gates z, r, h
with ``bias`` (2, 3*units) = [input bias, recurrent bias]; the simple RNN has one tanh.

How each family closes under differentiation:

- ``<cell>_sequence(x, kernel, recurrent_kernel, bias, *states)`` loops over time in
  NumPy. Its outputs are the public ones (the output sequence and the final states)
  followed by hidden residuals (all hidden states, the gate activations, ...), which
  the public functions drop and the backward record reads.
- Its vjp is one call of ``<cell>_sequence_grad`` (BPTT in NumPy, one batched GEMM per
  step; the weight gradients after the loop). Gradients nobody asked for are not
  computed: the vjp passes which inputs need one as the static attribute ``wanted``.
- The grad record's vjp (second order) is forward-over-reverse, written with lk ops:
  for the cotangent ``v`` of ``G(p, u) = J(p)^T u``, ``d<v, G>/du = J(p) v`` (a
  JVP of the forward) and ``d<v, G>/dp = d/de G(p + e v, u)`` (a JVP of the BPTT, by
  symmetry of second derivatives). Both run as the unrolled step-by-step composite
  over a small forward-mode value (:class:`_Dual`) made of lk ops, so third and higher
  orders are the engine's differentiation of ordinary ops, and no tape is needed here.

The NumPy loops (forward and BPTT of each family, with their speed notes) are in
:mod:`layerkit.kernels.rnn`.
"""
from __future__ import annotations

import numpy as np

from layerkit._core import context
from layerkit._core.convert import convert_to_tensor
from layerkit._core.op import Op, apply
from layerkit._core.tensor import Tensor
from layerkit.kernels import rnn as _krnn
from layerkit.primitives import array as _array
from layerkit.primitives import creation as _creation
from layerkit.primitives import elementwise as _ew
from layerkit.primitives import linalg as _linalg
from layerkit.primitives import reduce as _reduce
from layerkit.primitives import selection as _selection

__all__ = ["lstm_sequence", "gru_sequence", "simple_rnn_sequence"]


# =====================================================================================
# The unrolled composites (lk ops over forward-mode duals), for second order
# =====================================================================================
class _Dual:
    """A value and its tangent (None: structurally zero), both Tensors."""

    __slots__ = ("v", "t")

    def __init__(self, v, t=None) -> None:
        self.v, self.t = v, t

    def __add__(self, o):
        v = _ew.add(self.v, _val(o))
        return _Dual(v, _fit(_tadd(self.t, _tan(o)), v))

    __radd__ = __add__

    def __sub__(self, o):
        ot = _tan(o)
        v = _ew.subtract(self.v, _val(o))
        return _Dual(v, _fit(_tadd(self.t, None if ot is None else _ew.negative(ot)), v))

    def __rsub__(self, o):
        return _Dual(_ew.subtract(o, self.v), None if self.t is None else _ew.negative(self.t))

    def __mul__(self, o):
        ov, ot = _val(o), _tan(o)
        return _Dual(_ew.multiply(self.v, ov),
                     _tadd(None if self.t is None else _ew.multiply(self.t, ov),
                           None if ot is None else _ew.multiply(self.v, ot)))

    __rmul__ = __mul__


def _val(o):
    return o.v if isinstance(o, _Dual) else o


def _tan(o):
    return o.t if isinstance(o, _Dual) else None


def _fit(t, v):
    """A tangent broadcast to its value's shape (``x + bias`` with only the bias moving)."""
    if t is None or t.shape == v.shape:
        return t
    return _array.broadcast_to(t, v.shape)


def _tadd(a, b):
    if a is None:
        return b
    return a if b is None else _ew.add(a, b)


def _lin(f, d: _Dual) -> _Dual:
    """A linear map applied to a dual (reshape, reverse, sum, ...)."""
    return _Dual(f(d.v), None if d.t is None else f(d.t))


def _lin_many(f, ds: list) -> _Dual:
    """A linear map of a list of duals (stack, concat)."""
    ts = [d.t for d in ds]
    if all(t is None for t in ts):
        return _Dual(f([d.v for d in ds]))
    return _Dual(f([d.v for d in ds]),
                 f([_creation.zeros_like(d.v) if t is None else t for d, t in zip(ds, ts)]))


def _parts(f, d: _Dual) -> list:
    """A linear map returning a list (split, unstack), applied to a dual."""
    vs = f(d.v)
    ts = f(d.t) if d.t is not None else [None] * len(vs)
    return [_Dual(v, t) for v, t in zip(vs, ts)]


def _matmul(a: _Dual, b: _Dual, transpose_a: bool = False, transpose_b: bool = False) -> _Dual:
    def mm(p, q):
        return _linalg.matmul(p, q, transpose_a=transpose_a, transpose_b=transpose_b)
    return _Dual(mm(a.v, b.v), _tadd(None if a.t is None else mm(a.t, b.v),
                                     None if b.t is None else mm(a.v, b.t)))


def _sigmoid(d: _Dual) -> _Dual:
    y = _ew.sigmoid(d.v)
    return _Dual(y, None if d.t is None else
                 _ew.multiply(d.t, _ew.multiply(y, _ew.subtract(1.0, y))))


def _tanh(d: _Dual) -> _Dual:
    y = _ew.tanh(d.v)
    return _Dual(y, None if d.t is None else
                 _ew.multiply(d.t, _ew.subtract(1.0, _ew.multiply(y, y))))


def _split(d: _Dual, n: int) -> list:
    return _parts(lambda t: _array.split(t, n, axis=-1), d)


def _concat(ds: list) -> _Dual:
    return _lin_many(lambda ts: _array.concat(ts, axis=-1), ds)


def _stack_time(ds: list) -> _Dual:
    return _lin_many(lambda ts: _array.stack(ts, axis=1), ds)


def _rows(d: _Dual) -> _Dual:
    """(batch, time, n) -> (batch*time, n)."""
    return _lin(lambda t: _array.reshape(t, (t.shape[0] * t.shape[1], t.shape[2])), d)


def _composite_steps(x: _Dual, kernel: _Dual, bias: _Dual, go_backwards: bool):
    """Rows of x in processing order (for dkernel) and the per-step input projections."""
    if go_backwards:
        x = _lin(lambda t: _array.reverse(t, [1]), x)
    x2 = _rows(x)
    batch, steps = x.v.shape[0], x.v.shape[1]
    width = kernel.v.shape[1]
    proj = _lin(lambda t: _array.reshape(t, (batch, steps, width)), _matmul(x2, kernel) + bias)
    return x2, _parts(lambda t: _array.unstack(t, axis=1), proj)


def _composite_grads(x: _Dual, kernel: _Dual, x2: _Dual, h_prev: list, dxs: list,
                     dms: list | None, go_backwards: bool) -> list:
    """dx, dkernel, drecurrent, dbias from per-step pre-activation gradients (duals)."""
    dx2 = _rows(_stack_time(dxs))
    dm2 = dx2 if dms is None else _rows(_stack_time(dms))
    dkernel = _matmul(x2, dx2, transpose_a=True)
    drec = _matmul(_rows(_stack_time(h_prev)), dm2, transpose_a=True)
    dbias = _lin(lambda t: _reduce.reduce_sum(t, axis=0), dx2)
    if dms is not None:
        dbias = _lin_many(lambda ts: _array.stack(ts, axis=0),
                          [dbias, _lin(lambda t: _reduce.reduce_sum(t, axis=0), dm2)])
    dx = _lin(lambda t: _array.reshape(t, x.v.shape), _matmul(dx2, kernel, transpose_b=True))
    if go_backwards:
        dx = _lin(lambda t: _array.reverse(t, [1]), dx)
    return [dx, dkernel, drec, dbias]


def _lstm_composite(x, kernel, rec, bias, h0, c0, go_backwards):
    x2, proj = _composite_steps(x, kernel, bias, go_backwards)
    h, c, trace = h0, c0, []
    for p in proj:
        zi, zf, zg, zo = _split(p + _matmul(h, rec), 4)
        i, f, g, o = _sigmoid(zi), _sigmoid(zf), _tanh(zg), _sigmoid(zo)
        c_prev, h_prev = c, h
        c = f * c + i * g
        tc = _tanh(c)
        h = o * tc
        trace.append((h_prev, c_prev, i, f, g, o, tc, h))
    return (_stack_time([s[-1] for s in trace]), h, c), (x2, trace)


def _lstm_composite_grad(params, saved, ups, go_backwards):
    x, kernel, rec = params[:3]
    x2, trace = saved
    gseq, dh, dc = ups
    gsteps = _parts(lambda t: _array.unstack(t, axis=1), gseq)
    dzs = [None] * len(trace)
    for t in range(len(trace) - 1, -1, -1):
        _, c_prev, i, f, g, o, tc, _ = trace[t]
        dh = dh + gsteps[t]
        dc = dc + dh * o * (1.0 - tc * tc)
        dzs[t] = _concat([dc * g * i * (1.0 - i), dc * c_prev * f * (1.0 - f),
                          dc * i * (1.0 - g * g), dh * tc * o * (1.0 - o)])
        dc = dc * f
        dh = _matmul(dzs[t], rec, transpose_b=True)
    h_prev = [s[0] for s in trace]
    return _composite_grads(x, kernel, x2, h_prev, dzs, None, go_backwards) + [dh, dc]


def _gru_composite(x, kernel, rec, bias, h0, go_backwards):
    b_in, b_rec = _parts(lambda t: _array.unstack(t, axis=0), bias)
    x2, proj = _composite_steps(x, kernel, b_in, go_backwards)
    h, trace = h0, []
    for p in proj:
        m = _matmul(h, rec) + b_rec
        xz, xr, xh = _split(p, 3)
        mz, mr, mh = _split(m, 3)
        z, r = _sigmoid(xz + mz), _sigmoid(xr + mr)
        hh = _tanh(xh + r * mh)
        h_prev = h
        h = z * h + (1.0 - z) * hh
        trace.append((h_prev, z, r, hh, mh, h))
    return (_stack_time([s[-1] for s in trace]), h), (x2, trace)


def _gru_composite_grad(params, saved, ups, go_backwards):
    x, kernel, rec = params[:3]
    x2, trace = saved
    gseq, dh = ups
    gsteps = _parts(lambda t: _array.unstack(t, axis=1), gseq)
    dxs, dms = [None] * len(trace), [None] * len(trace)
    for t in range(len(trace) - 1, -1, -1):
        h_prev, z, r, hh, mh, _ = trace[t]
        dh = dh + gsteps[t]
        dpz = dh * (h_prev - hh) * z * (1.0 - z)
        dph = dh * (1.0 - z) * (1.0 - hh * hh)
        dpr = dph * mh * r * (1.0 - r)
        dxs[t] = _concat([dpz, dpr, dph])
        dms[t] = _concat([dpz, dpr, dph * r])
        dh = dh * z + _matmul(dms[t], rec, transpose_b=True)
    h_prev = [s[0] for s in trace]
    return _composite_grads(x, kernel, x2, h_prev, dxs, dms, go_backwards) + [dh]


def _rnn_composite(x, kernel, rec, bias, h0, go_backwards):
    x2, proj = _composite_steps(x, kernel, bias, go_backwards)
    h, trace = h0, []
    for p in proj:
        h_prev = h
        h = _tanh(p + _matmul(h, rec))
        trace.append((h_prev, h))
    return (_stack_time([s[-1] for s in trace]), h), (x2, trace)


def _rnn_composite_grad(params, saved, ups, go_backwards):
    x, kernel, rec = params[:3]
    x2, trace = saved
    gseq, dh = ups
    gsteps = _parts(lambda t: _array.unstack(t, axis=1), gseq)
    dzs = [None] * len(trace)
    for t in range(len(trace) - 1, -1, -1):
        _, h = trace[t]
        dzs[t] = (dh + gsteps[t]) * (1.0 - h * h)
        dh = _matmul(dzs[t], rec, transpose_b=True)
    h_prev = [s[0] for s in trace]
    return _composite_grads(x, kernel, x2, h_prev, dzs, None, go_backwards) + [dh]


# =====================================================================================
# The records
# =====================================================================================
def _family(name: str, fwd, bwd, composite, composite_grad, n_states: int, n_res: int):
    """The forward record and its BPTT record for one cell family."""
    n_par = 4 + n_states  # x, kernel, recurrent_kernel, bias, initial states
    n_pub = 1 + n_states  # the sequence and the final states

    def vjp(g, ins, outs, needs, go_backwards):
        grads = apply(grad_op, *ins, *outs[n_pub:], *g[:n_pub],
                      go_backwards=go_backwards, wanted=tuple(needs))
        return tuple(gr if need else None for gr, need in zip(grads, needs))

    def grad_vjp(v, ins, outs, needs, go_backwards, wanted):
        # G(p, u) = J(p)^T u. For the cotangent v: d<v,G>/du = J(p) v (the JVP of the
        # forward) and d<v,G>/dp = d/de G(p + e v, u) (the JVP of the BPTT). Outputs
        # that were not computed (wanted False) are constants: no tangent from them.
        need_p, need_u = needs[:n_par], needs[n_par + n_res:]
        if not any(need_p) and not any(need_u):
            return (None,) * len(ins)
        params = [_Dual(p, vi if w else None) for p, vi, w in zip(ins[:n_par], v, wanted)]
        pub, saved = composite(*params, go_backwards)
        gp = [None] * n_par
        if any(need_p):
            ups = [_Dual(u) for u in ins[n_par + n_res:]]
            gd = composite_grad(params, saved, ups, go_backwards)
            gp = [d.t if need else None for d, need in zip(gd, need_p)]
        gu = [d.t if need else None for d, need in zip(pub, need_u)]
        return (*gp, *([None] * n_res), *gu)

    op = Op(name, fwd, vjp, num_outputs=n_pub + n_res)
    grad_op = Op(name + "_grad", bwd, grad_vjp, num_outputs=n_par)
    return op, grad_op


_LSTM, _LSTM_GRAD = _family("lstm_sequence", _krnn.lstm_forward, _krnn.lstm_backward,
                            _lstm_composite, _lstm_composite_grad, n_states=2, n_res=4)
_GRU, _GRU_GRAD = _family("gru_sequence", _krnn.gru_forward, _krnn.gru_backward,
                          _gru_composite, _gru_composite_grad, n_states=1, n_res=3)
_RNN, _RNN_GRAD = _family("simple_rnn_sequence", _krnn.rnn_forward, _krnn.rnn_backward,
                          _rnn_composite, _rnn_composite_grad, n_states=1, n_res=1)


# =====================================================================================
# Public functions
# =====================================================================================
def _inputs(op: str, x, kernel, recurrent_kernel, bias, states: list, gates: int,
            bias_shape) -> list:
    """Tensors of one float dtype, with every shape checked against the others.

    A None bias or state becomes zeros (a constant: it gets no gradient).
    """
    x, kernel, recurrent_kernel = (a if isinstance(a, Tensor) else convert_to_tensor(a)
                                   for a in (x, kernel, recurrent_kernel))
    xs, ks, rs = x.shape, kernel.shape, recurrent_kernel.shape
    if len(xs) != 3 or xs[1] == 0:
        raise ValueError(f"{op}: x must have shape (batch, time, features) with time >= 1; "
                         f"received shape {xs}")
    if len(rs) != 2 or rs[1] != gates * rs[0]:
        raise ValueError(f"{op}: recurrent_kernel must have shape (units, {gates} * units); "
                         f"received shape {rs}")
    units = rs[0]
    if ks != (xs[2], gates * units):
        raise ValueError(f"{op}: kernel must have shape (features, {gates} * units) = "
                         f"{(xs[2], gates * units)} for x of shape {xs} and units={units}; "
                         f"received shape {ks}")
    ts = [x, kernel, recurrent_kernel]
    for what, a, want in [("bias", bias, bias_shape(units))] + [
            (f"initial state {i}", s, (xs[0], units)) for i, s in enumerate(states)]:
        if a is None:
            if what != "bias" and context.RECORDERS and context.dynamic_dims(x):
                # tracing with a None batch: zeros of the batch size at run time
                a = _creation.zeros([_array.getitem(_selection.shape(x), 0), units], x.dtype)
            else:
                a = _creation.zeros(want, x.dtype)
        elif not isinstance(a, Tensor):
            a = convert_to_tensor(a)
        if a.shape != want:
            raise ValueError(f"{op}: {what} must have shape {want}; received shape {a.shape}")
        ts.append(a)
    dtypes = {t.dtype for t in ts}
    if any(d.kind != "f" for d in dtypes):
        raise ValueError(f"{op}: inputs must be floating point; received dtypes "
                         f"{sorted(str(d) for d in dtypes)}")
    if len(dtypes) > 1:
        common = np.result_type(*dtypes)
        ts = [t if t.dtype == common else _ew.cast(t, common) for t in ts]
    return ts


def lstm_sequence(x, kernel, recurrent_kernel, bias=None, initial_h=None, initial_c=None,
                  go_backwards: bool = False) -> tuple:
    """Run a Keras-layout LSTM over a whole sequence (one record each way).

    ``z = x_t @ kernel + h @ recurrent_kernel + bias`` split into gates i, f, c, o;
    ``c = sigmoid(z_f) * c + sigmoid(z_i) * tanh(z_c)``; ``h = sigmoid(z_o) * tanh(c)``.

    Args:
        x: (batch, time, features).
        kernel: (features, 4 * units). recurrent_kernel: (units, 4 * units).
        bias: (4 * units,) or None.
        initial_h: (batch, units) initial states (zeros if None).
        initial_c: (batch, units) initial states (zeros if None).
        go_backwards: process the time steps in reverse order.

    Returns:
        ``(sequence, h, c)``: every step's ``h`` as (batch, time, units) in processing
        order, and the final states.

    Raises:
        ValueError: naming the argument, the expected and the received shape.
    """
    ts = _inputs("lstm_sequence", x, kernel, recurrent_kernel, bias, [initial_h, initial_c], 4,
                 lambda u: (4 * u,))
    return apply(_LSTM, *ts, go_backwards=bool(go_backwards))[:3]


def gru_sequence(x, kernel, recurrent_kernel, bias=None, initial_h=None,
                 go_backwards: bool = False) -> tuple:
    """Run a Keras-layout GRU (``reset_after=True``) over a whole sequence.

    With ``mx = x_t @ kernel + bias[0]`` and ``mh = h @ recurrent_kernel + bias[1]``
    split into z, r, h parts: ``z = sigmoid(mx_z + mh_z)``, ``r = sigmoid(mx_r + mh_r)``,
    ``hh = tanh(mx_h + r * mh_h)``, ``h = z * h + (1 - z) * hh``.

    Args:
        x: (batch, time, features).
        kernel: (features, 3 * units). recurrent_kernel: (units, 3 * units).
        bias: (2, 3 * units) or None.
        initial_h: (batch, units) (zeros if None).
        go_backwards: process the time steps in reverse order.

    Returns:
        ``(sequence, h)``.

    Raises:
        ValueError: naming the argument, the expected and the received shape.
    """
    ts = _inputs("gru_sequence", x, kernel, recurrent_kernel, bias, [initial_h], 3,
                 lambda u: (2, 3 * u))
    return apply(_GRU, *ts, go_backwards=bool(go_backwards))[:2]


def simple_rnn_sequence(x, kernel, recurrent_kernel, bias=None, initial_h=None,
                        go_backwards: bool = False) -> tuple:
    """Run ``h = tanh(x_t @ kernel + bias + h @ recurrent_kernel)`` over a whole sequence.

    Args:
        x: (batch, time, features).
        kernel: (features, units). recurrent_kernel: (units, units). bias: (units,) or None.
        initial_h: (batch, units) (zeros if None).
        go_backwards: process the time steps in reverse order.

    Returns:
        ``(sequence, h)``.

    Raises:
        ValueError: naming the argument, the expected and the received shape.
    """
    ts = _inputs("simple_rnn_sequence", x, kernel, recurrent_kernel, bias, [initial_h], 1,
                 lambda u: (u,))
    return apply(_RNN, *ts, go_backwards=bool(go_backwards))[:2]
