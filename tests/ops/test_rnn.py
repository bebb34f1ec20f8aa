"""Whole-sequence recurrent records (layerkit/primitives/rnn.py): forward vs step-by-step NumPy
references in Keras layout, gradients vs central differences (first, second and third
order, per argument), the NumPy BPTT vs the unrolled composite, and input checking."""
import numpy as np
import pytest

import layerkit as lk
from layerkit._core.op import apply, wrap
from layerkit.autodiff.check import GradientCheckError, check_grads
from layerkit.primitives import rnn as R


def sigmoid(v):
    return 1 / (1 + np.exp(-v))


def ref_lstm(x, k, r, b, h, c):
    u = h.shape[1]
    outs = []
    for t in range(x.shape[1]):
        z = x[:, t] @ k + h @ r + b
        c = sigmoid(z[:, u:2 * u]) * c + sigmoid(z[:, :u]) * np.tanh(z[:, 2 * u:3 * u])
        h = sigmoid(z[:, 3 * u:]) * np.tanh(c)
        outs.append(h)
    return np.stack(outs, 1), h, c


def ref_gru(x, k, r, b, h):
    u = h.shape[1]
    outs = []
    for t in range(x.shape[1]):
        mx, mh = x[:, t] @ k + b[0], h @ r + b[1]
        z = sigmoid(mx[:, :u] + mh[:, :u])
        rr = sigmoid(mx[:, u:2 * u] + mh[:, u:2 * u])
        hh = np.tanh(mx[:, 2 * u:] + rr * mh[:, 2 * u:])
        h = z * h + (1 - z) * hh
        outs.append(h)
    return np.stack(outs, 1), h


def ref_rnn(x, k, r, b, h):
    outs = []
    for t in range(x.shape[1]):
        h = np.tanh(x[:, t] @ k + h @ r + b)
        outs.append(h)
    return np.stack(outs, 1), h


# family: (public function, reference, gates, bias shape(u), number of states)
FAMILIES = {
    "lstm": (R.lstm_sequence, ref_lstm, 4, lambda u: (4 * u,), 2),
    "gru": (R.gru_sequence, ref_gru, 3, lambda u: (2, 3 * u), 1),
    "rnn": (R.simple_rnn_sequence, ref_rnn, 1, lambda u: (u,), 1),
}


def _args(family, batch=2, steps=4, features=3, units=5, dtype=np.float64, seed=0):
    _, _, gates, bias_shape, n_states = FAMILIES[family]
    rng = np.random.default_rng(seed)
    shapes = [(batch, steps, features), (features, gates * units), (units, gates * units),
              bias_shape(units)] + [(batch, units)] * n_states
    scales = [1.0, 0.5, 0.5, 0.5] + [1.0] * n_states
    return [(rng.standard_normal(s) * sc).astype(dtype) for s, sc in zip(shapes, scales)]


# ---- forward ----------------------------------------------------------------------------
@pytest.mark.parametrize("family", list(FAMILIES))
@pytest.mark.parametrize("go_backwards", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_forward_matches_numpy_reference(family, go_backwards, dtype):
    fn, ref, *_ = FAMILIES[family]
    args = _args(family, dtype=dtype)
    out = fn(*args, go_backwards=go_backwards)
    x = args[0][:, ::-1] if go_backwards else args[0]
    want = ref(x, *args[1:])
    tol = {"rtol": 1e-5, "atol": 1e-6} if dtype == np.float32 else {"rtol": 1e-12,
                                                                      "atol": 1e-13}
    assert len(out) == len(want)
    for got, w in zip(out, want):
        assert got.dtype == dtype and got.shape == w.shape
        np.testing.assert_allclose(got.numpy(), w, **tol)


@pytest.mark.parametrize("family", list(FAMILIES))
def test_default_bias_and_zero_states(family):
    fn, ref, _, bias_shape, n_states = FAMILIES[family]
    x, k, r, *_ = _args(family)
    units = r.shape[0]
    out = fn(x, k, r)
    want = ref(x, k, r, np.zeros(bias_shape(units)), *[np.zeros((2, units))] * n_states)
    for got, w in zip(out, want):
        np.testing.assert_allclose(got.numpy(), w, rtol=1e-12, atol=1e-13)


def test_mixed_dtypes_promote_like_numpy():
    x, k, r, b, h, c = _args("lstm")
    x, b = x.astype(np.float32), b.astype(np.float32)
    seq, hT, cT = R.lstm_sequence(x, k, r, b, h, c)
    assert seq.dtype == np.float64
    np.testing.assert_allclose(seq.numpy(), ref_lstm(x.astype(np.float64), k, r,
                                                     b.astype(np.float64), h, c)[0], rtol=1e-12)


def test_one_step_and_long_sequence():
    for steps in (1, 40):
        args = _args("lstm", steps=steps, units=3)
        np.testing.assert_allclose(R.lstm_sequence(*args)[0].numpy(), ref_lstm(*args)[0],
                                   rtol=1e-11, atol=1e-12)


# ---- gradients (tests/ops/test_grad_table.py runs the rows of rows_rnn.py) ----------------
@pytest.mark.parametrize("family", list(FAMILIES))
@pytest.mark.parametrize("go_backwards", [False, True])
def test_gradients_per_argument_to_second_order(family, go_backwards):
    # One argument at a time: a small error in one gradient is not diluted by the others.
    fn = FAMILIES[family][0]
    args = _args(family, steps=3, units=2)
    for i in range(len(args)):
        check_grads(lambda *a: fn(*a, go_backwards=go_backwards), args, order=2, argnums=[i])


def test_lstm_third_order():
    args = _args("lstm", steps=2, units=2)
    check_grads(lambda *a: R.lstm_sequence(*a)[1:], args, order=3)


def test_gru_third_order():
    args = _args("gru", steps=2, units=2)
    check_grads(lambda *a: R.gru_sequence(*a, go_backwards=True), args, order=3)


def test_the_checks_catch_a_wrong_bptt():
    # A BPTT record off by 0.1% in dkernel must fail the first-order check.
    good = R._LSTM_GRAD.forward

    def wrong(*arrays, **attrs):
        out = list(good(*arrays, **attrs))
        out[1] = out[1] * 1.001
        return tuple(out)

    R._LSTM_GRAD.forward = wrong
    try:
        with pytest.raises(GradientCheckError, match="order 1"):
            check_grads(lambda *a: R.lstm_sequence(*a), _args("lstm", steps=3, units=2),
                        order=1, argnums=[1])
    finally:
        R._LSTM_GRAD.forward = good


@pytest.mark.parametrize("family", list(FAMILIES))
@pytest.mark.parametrize("go_backwards", [False, True])
def test_numpy_bptt_equals_unrolled_composite(family, go_backwards):
    """The fast BPTT record and the lk-op composite used for higher orders agree."""
    op, grad_op, composite, composite_grad, n_states = {
        "lstm": (R._LSTM, R._LSTM_GRAD, R._lstm_composite, R._lstm_composite_grad, 2),
        "gru": (R._GRU, R._GRU_GRAD, R._gru_composite, R._gru_composite_grad, 1),
        "rnn": (R._RNN, R._RNN_GRAD, R._rnn_composite, R._rnn_composite_grad, 1),
    }[family]
    args = [wrap(a) for a in _args(family)]
    rng = np.random.default_rng(3)
    ups = [wrap(rng.standard_normal(args[0].shape[:2] + (args[2].shape[0],)))] + \
        [wrap(rng.standard_normal(args[4].shape)) for _ in range(n_states)]
    outs = apply(op, *args, go_backwards=go_backwards)
    fast = apply(grad_op, *args, *outs[1 + n_states:], *ups, go_backwards=go_backwards,
                 wanted=(True,) * len(args))
    duals = [R._Dual(a) for a in args]
    pub, saved = composite(*duals, go_backwards)
    for got, want in zip(pub, outs):
        np.testing.assert_allclose(got.v.numpy(), want.numpy(), rtol=1e-12, atol=1e-13)
    slow = composite_grad(duals, saved, [R._Dual(u) for u in ups], go_backwards)
    assert len(slow) == len(fast) == len(args)
    for got, want, a in zip(fast, slow, args):
        assert got.shape == a.shape
        np.testing.assert_allclose(got.numpy(), want.v.numpy(), rtol=1e-11, atol=1e-12)


def test_only_requested_gradients_are_computed():
    x, k, r, b, h, c = (lk.constant(a) for a in _args("lstm"))
    kv = lk.Variable(k)
    with lk.GradientTape() as tape:
        _, hT, _ = R.lstm_sequence(x, kv, r, b, h, c)
        loss = lk.reduce_sum(hT * hT)
    gk, gx = tape.gradient(loss, [kv, x])
    assert gx is None  # x was not watched
    with lk.GradientTape() as tape:
        tape.watch([x, kv])
        _, hT, _ = R.lstm_sequence(x, kv, r, b, h, c)
        loss = lk.reduce_sum(hT * hT)
    gk2, gx2 = tape.gradient(loss, [kv, x])
    np.testing.assert_allclose(gk.numpy(), gk2.numpy(), rtol=1e-12)
    assert gx2.shape == x.shape and np.abs(gx2.numpy()).max() > 0


def test_same_tensor_for_both_initial_states():
    # The two partials of a tensor used twice are summed, at first and second order.
    x, k, r, b, h, _ = _args("lstm", steps=3, units=2)
    check_grads(lambda x, k, r, b, s: R.lstm_sequence(x, k, r, b, s, s), [x, k, r, b, h],
                order=2)


def test_float32_gradients_match_float64():
    args = _args("gru", batch=4, steps=6, features=3, units=4)
    grads = []
    for dtype in (np.float32, np.float64):
        ts = [lk.constant(a.astype(dtype)) for a in args]
        with lk.GradientTape() as tape:
            tape.watch(ts)
            seq, h = R.gru_sequence(*ts)
            loss = lk.reduce_sum(seq * seq) + lk.reduce_sum(h)
        g = tape.gradient(loss, ts)
        assert all(gi.dtype == dtype for gi in g)
        grads.append(g)
    for g32, g64 in zip(*grads):
        np.testing.assert_allclose(g32.numpy(), g64.numpy(), rtol=2e-4, atol=2e-5)


# ---- bad input ----------------------------------------------------------------------------
def test_bad_shapes_name_the_argument_and_both_shapes():
    x, k, r, b, h, c = _args("lstm", units=5)
    with pytest.raises(ValueError, match=r"lstm_sequence: kernel must have shape .*"
                                         r"\(3, 20\).*received shape \(3, 16\)"):
        R.lstm_sequence(x, k[:, :16], r, b, h, c)
    with pytest.raises(ValueError, match=r"recurrent_kernel must have shape \(units, "
                                         r"4 \* units\); received shape \(5, 15\)"):
        R.lstm_sequence(x, k, r[:, :15], b, h, c)
    with pytest.raises(ValueError, match=r"bias must have shape \(20,\); received shape "
                                         r"\(19,\)"):
        R.lstm_sequence(x, k, r, b[:19], h, c)
    with pytest.raises(ValueError, match=r"initial state 1 must have shape \(2, 5\); "
                                         r"received shape \(2, 4\)"):
        R.lstm_sequence(x, k, r, b, h, c[:, :4])
    with pytest.raises(ValueError, match=r"gru_sequence: bias must have shape \(2, 15\)"):
        R.gru_sequence(x, *_args("gru", units=5)[1:3], np.zeros(15))
    with pytest.raises(ValueError, match=r"time >= 1; received shape \(2, 0, 3\)"):
        R.simple_rnn_sequence(x[:, :0], *_args("rnn")[1:3])
    with pytest.raises(ValueError, match="floating point"):
        R.simple_rnn_sequence(np.ones((2, 3, 3), np.int64), *_args("rnn", units=5)[1:3])


@pytest.mark.parametrize("family", list(FAMILIES))
def test_empty_batch(family):
    fn = FAMILIES[family][0]
    args = [a[:0] if i == 0 or i >= 4 else a for i, a in enumerate(_args(family))]
    ts = [lk.constant(a) for a in args]
    with lk.GradientTape() as tape:
        tape.watch(ts)
        out = fn(*ts, go_backwards=True)
        loss = sum(lk.reduce_sum(o) for o in out)
    assert out[0].shape == (0, 4, 5)
    grads = tape.gradient(loss, ts)
    assert [g.shape for g in grads] == [a.shape for a in args]
    assert all(not np.any(g.numpy()) for g in grads)


@pytest.mark.parametrize("family", list(FAMILIES))
def test_gradient_of_a_partial_gradient(family):
    # The inner tape wants only d/dkernel (dx is never computed), the outer one
    # differentiates that w.r.t. x and the kernel: the skipped output must not matter.
    fn = FAMILIES[family][0]
    x, k, *rest = _args(family, steps=3, units=2)

    def dkernel(x, k):
        with lk.GradientTape() as tape:
            tape.watch(k)
            seq, *states = fn(x, k, *rest)
            loss = lk.reduce_sum(seq * seq) + lk.reduce_sum(lk.tanh(states[-1]))
        return tape.gradient(loss, k)

    check_grads(dkernel, [x, k], order=2)
