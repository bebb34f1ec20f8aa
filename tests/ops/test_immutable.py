"""Tensors are immutable: a Tensor never changes after it was made.

Its array may not be shared with anything that can change later: a Variable's buffer
(optimizers update it in place), the caller's own NumPy array, a buffer a traced
function reuses on its next call. Views of other Tensors' arrays stay zero-copy.
"""
import numpy as np
import pytest

import layerkit as lk
from layerkit.primitives import array as A

# Ops whose forward may return a view of its input (or the input itself), with what
# they compute in NumPy.
VIEW_OPS = {
    "stop_gradient": (lk.stop_gradient, lambda x: x),
    "cast_same_dtype": (lambda x: lk.cast(x, "float32"), lambda x: x),
    "reshape": (lambda x: lk.reshape(x, [-1]), lambda x: x.reshape(-1)),
    "transpose": (lk.transpose, lambda x: x.T),
    "expand_dims": (lambda x: lk.expand_dims(x, 0), lambda x: x[None]),
    "squeeze": (lk.squeeze, lambda x: x),
    "reverse": (lambda x: lk.reverse(x, [0]), lambda x: x[::-1]),
    "broadcast_to": (lambda x: lk.broadcast_to(x, [4, 2, 3]),
                     lambda x: np.broadcast_to(x, (4, 2, 3))),
    "getitem_row": (lambda x: A.getitem(x, 1), lambda x: x[1]),
    "getitem_slice": (lambda x: A.getitem(x, (slice(None), slice(1, None))), lambda x: x[:, 1:]),
    "getitem_ellipsis": (lambda x: A.getitem(x, Ellipsis), lambda x: x),
    "slice": (lambda x: lk.slice(x, [0, 1], [2, 2]), lambda x: x[0:2, 1:3]),
    "unstack": (lambda x: lk.unstack(x)[0], lambda x: x[0]),
    "split": (lambda x: lk.split(x, 3, axis=1)[2], lambda x: x[:, 2:]),
    "convert_to_tensor": (lk.convert_to_tensor, lambda x: x),
    "constant": (lk.constant, lambda x: x),
    "Tensor": (lk.Tensor, lambda x: x),
}
_OPS = [v[0] for v in VIEW_OPS.values()]
_REFS = [v[1] for v in VIEW_OPS.values()]

_X = np.arange(1.0, 7.0, dtype=np.float32).reshape(2, 3)


def _snapshot(t):
    return np.array(t._v, copy=True)


_CASES = pytest.mark.parametrize(("op", "ref"), list(zip(_OPS, _REFS)), ids=list(VIEW_OPS))


@_CASES
def test_results_of_a_variable_do_not_change_with_it(op, ref):
    v = lk.Variable(_X)
    if op is lk.convert_to_tensor:
        assert op(v) is v   # Variables pass through (API.md): the variable itself
        return
    t = op(v)
    lk.optimizers.SGD(1.0).apply_gradients([(np.ones_like(_X), v)])   # in place
    v.assign_add(np.ones_like(_X))
    np.testing.assert_array_equal(t._v, ref(_X), strict=True)


@_CASES
def test_results_of_a_numpy_array_do_not_change_with_it(op, ref):
    a = _X.copy()
    t = op(a)
    a[...] = -5.0                                   # the caller reuses their array
    np.testing.assert_array_equal(t._v, ref(_X), strict=True)


@_CASES
def test_results_of_a_numpy_array_recorded_by_a_tape_do_not_change_with_it(op, ref):
    a = _X.copy()
    w = lk.Variable(2.0)
    with lk.GradientTape() as tape:
        y = lk.reduce_sum(op(a) * w)
    a[...] = -5.0
    want = np.sum(ref(_X))
    np.testing.assert_allclose(float(tape.gradient(y, w)), want, rtol=1e-6)


@pytest.mark.parametrize("make", [lk.data.Dataset.from_tensor_slices,
                                  lk.data.Dataset.from_tensors])
def test_dataset_elements_do_not_change_with_the_source(make):
    a = _X.copy()
    v = lk.Variable(_X)
    ds = make((a, v))
    a[...] = -1.0
    v.assign_add(np.ones_like(_X))
    lk.optimizers.SGD(1.0).apply_gradients([(np.ones_like(_X), v)])
    x, y = next(iter(ds.batch(2) if make is lk.data.Dataset.from_tensor_slices else ds))
    np.testing.assert_array_equal(x.numpy(), _X)
    np.testing.assert_array_equal(y.numpy(), _X)


def test_views_of_plain_tensors_stay_zero_copy():
    x = lk.constant(_X) * 1.0
    for t in (lk.reshape(x, [-1]), lk.transpose(x), x[1], lk.stop_gradient(x)):
        assert np.shares_memory(t._v, x._v)


def test_numpy_returns_a_writable_copy():
    t = lk.constant([1.0, 2.0]) * 1.0
    a = t.numpy()
    a[0] = 9.0
    np.testing.assert_array_equal(t.numpy(), [1.0, 2.0])
    assert not np.shares_memory(a, t._v)


def test_asarray_is_a_read_only_view():
    t = lk.constant([1.0, 2.0]) * 1.0
    a = np.asarray(t)
    assert np.shares_memory(a, t._v) and not a.flags.writeable
    with pytest.raises(ValueError, match="read-only"):
        a[0] = 9.0
    b = np.array(t)                                  # np.array copies: writable
    b[0] = 9.0
    np.testing.assert_array_equal(t.numpy(), [1.0, 2.0])
    assert np.asarray(t, dtype=np.float64).flags.writeable


def test_a_read_only_view_keeps_operator_elision_off_its_buffer():
    # ``x * y + x`` reuses the buffer of the temporary ``x * y`` (ops/methods.py), but
    # never one that a view handed out by np.asarray can still see.
    x = lk.constant(np.ones((300, 300), np.float32))
    views = []

    def peek(t):
        views.append(np.asarray(t))
        return t

    r = peek(x * 2.0) + x
    np.testing.assert_array_equal(views[0], 2.0)
    np.testing.assert_array_equal(r.numpy(), 3.0)


# ---- lk.function --------------------------------------------------------------------------
def test_function_results_do_not_change_on_the_next_call():
    big = (256, 256)

    @lk.function
    def f(x):
        h = x * 2.0 + 1.0
        return h, lk.reshape(h * h, [-1]), lk.tanh(h) * x, lk.transpose(h - x)

    x1 = lk.constant(np.full(big, 1.0, np.float32))
    x2 = lk.constant(np.full(big, 3.0, np.float32))
    first = f(x1)
    saved = [_snapshot(t) for t in first]
    for _ in range(2):
        f(x2)
    for t, s in zip(first, saved):
        np.testing.assert_array_equal(t._v, s)


def test_function_results_viewing_a_variable_do_not_change_with_it():
    v = lk.Variable(_X)
    f = lk.function(lambda: (lk.reshape(v, [-1]), lk.stop_gradient(v), lk.cast(v, "float32"),
                             v[1], lk.transpose(v)))
    f()
    outs = f()                                       # a graph call
    saved = [_snapshot(t) for t in outs]
    lk.optimizers.SGD(1.0).apply_gradients([(np.ones_like(_X), v)])
    for t, s in zip(outs, saved):
        np.testing.assert_array_equal(t._v, s)


def test_function_results_viewing_a_numpy_argument_do_not_change_with_it():
    f = lk.function(lambda x: (x, lk.reshape(x, [-1]), x[0], lk.stop_gradient(x) * 2.0))
    f(_X.copy())
    a = _X.copy()
    outs = f(a)                                      # a graph call
    a[...] = -1.0
    np.testing.assert_array_equal(outs[0].numpy(), _X)
    np.testing.assert_array_equal(outs[1].numpy(), _X.reshape(-1))
    np.testing.assert_array_equal(outs[2].numpy(), _X[0])
    np.testing.assert_array_equal(outs[3].numpy(), _X * 2.0)


def test_a_read_used_after_an_in_place_update_in_the_same_graph_keeps_its_value():
    def body(v, opt, g):
        r = v.value()
        flat = lk.reshape(r, [-1])                   # a view of the read
        opt.apply_gradients([(g, v)])                # updates v's array in place
        return r * 1.0, flat * 2.0, lk.reshape(v, [-1])

    results = []
    for fn in (body, lk.function(body)):
        v = lk.Variable(_X)
        opt = lk.optimizers.SGD(1.0)
        results.append([[t.numpy() for t in fn(v, opt, lk.constant(np.ones_like(_X)))]
                        for _ in range(3)])
    for got, want in zip(results[1], results[0]):
        for a, b in zip(got, want):
            np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(results[0][2][0], _X - 2.0)


@pytest.mark.parametrize("sig", [None, [lk.TensorSpec([2, 3], "float32")]],
                         ids=["no_signature", "input_signature"])
def test_a_numpy_argument_kept_by_a_tape_does_not_change_with_the_callers_array(sig):
    w = lk.Variable(2.0)
    f = lk.function(lambda x: lk.reduce_sum(x * w), input_signature=sig)
    for _ in range(3):                               # the tracing call, then graph calls
        a = _X.copy()
        with lk.GradientTape() as tape:
            y = f(a)
        a[...] = -7.0
        assert float(tape.gradient(y, w)) == float(_X.sum())
