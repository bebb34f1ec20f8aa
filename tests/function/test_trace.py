"""lk.function tracing: first/later calls equal eager, retrace rules, variables, structures."""
import collections
import threading
import warnings

import numpy as np
import pytest

import layerkit as lk
from layerkit.autodiff.function import TensorSpec, function


def _f(x, y):
    z = lk.matmul(x, y) + 1.0
    return lk.reduce_sum(lk.tanh(z) * z, axis=1) - lk.exp(-lk.square(z[:, 0]))


def _data(rng, n=4):
    return (lk.constant(rng.standard_normal((n, 3)).astype(np.float32)),
            lk.constant(rng.standard_normal((3, 5)).astype(np.float32)))


def test_first_and_later_calls_equal_eager(rng):
    f = function(_f)
    x, y = _data(rng)
    first = f(x, y)
    assert isinstance(first, lk.Tensor) and type(first) is lk.Tensor
    np.testing.assert_allclose(first.numpy(), _f(x, y).numpy(), rtol=1e-6)
    for _ in range(3):  # later calls run the graph on new values
        x2, y2 = _data(rng)
        np.testing.assert_allclose(f(x2, y2).numpy(), _f(x2, y2).numpy(), rtol=1e-5, atol=1e-6)
    assert f.trace_count == 1
    assert f.get_concrete_function(x, y).mode == "graph"


def test_numpy_arrays_and_python_lists_as_arguments(rng):
    f = function(lambda x, s: x * s)
    a = rng.standard_normal(3).astype(np.float32)
    out = f(a, 2.0)
    assert isinstance(out, lk.Tensor) and out.dtype == np.float32
    np.testing.assert_allclose(f(a + 1, 2.0).numpy(), (a + 1) * 2, rtol=1e-6)
    assert f.trace_count == 1


def test_retrace_rules_shape_dtype_python_value(rng):
    f = function(lambda x, k: x * k)
    x3 = lk.constant(np.ones(3, np.float32))
    f(x3, 2.0)
    f(lk.constant(np.full(3, 5.0, np.float32)), 2.0)
    assert f.trace_count == 1                 # same shape, dtype, Python value
    f(lk.constant(np.ones(4, np.float32)), 2.0)
    assert f.trace_count == 2                 # shape changed
    f(lk.constant(np.ones(4, np.float64)), 2.0)
    assert f.trace_count == 3                 # dtype changed
    out = f(lk.constant(np.ones(4, np.float64)), 3.0)
    assert f.trace_count == 4                 # Python value changed
    np.testing.assert_allclose(out.numpy(), 3.0)
    f(lk.constant(np.ones(4, np.float64)), k=3.0)
    assert f.trace_count == 5                 # keyword vs positional is another key
    f(x3, 2.0)
    assert f.trace_count == 5                 # earlier signatures stay cached


def test_python_bool_argument_selects_branch():
    @function
    def f(x, training):
        return x * 2.0 if training else x
    x = lk.constant([1.0, 2.0])
    np.testing.assert_allclose(f(x, True).numpy(), [2.0, 4.0])
    np.testing.assert_allclose(f(x, False).numpy(), [1.0, 2.0])
    np.testing.assert_allclose(f(x, True).numpy(), [2.0, 4.0])
    assert f.trace_count == 2


def test_tensorspec_signature_converts_and_checks():
    f = function(lambda x: x * 2.0, input_signature=[TensorSpec([None, 2], "float32")])
    out = f([[1.0, 2.0]])                     # a Python list becomes float32
    assert out.dtype == np.float32 and out.shape == (1, 2)
    np.testing.assert_allclose(f(np.ones((3, 2), np.float32)).numpy(), 2.0)
    with pytest.raises(ValueError, match=r"shape \(3, 3\).*TensorSpec"):
        f(np.ones((3, 3), np.float32))
    with pytest.raises(TypeError, match="float64"):
        f(np.ones((3, 2), np.float64))
    with pytest.raises(TypeError, match="1 argument"):
        f(np.ones((3, 2), np.float32), np.ones(2))


def test_tensorspec_none_dims_accept_any_size(rng):
    f = function(lambda x: lk.reduce_mean(x, axis=0) * 3.0,
                 input_signature=[TensorSpec([None, 4])])
    for n in (2, 5, 2, 7, 5):
        a = rng.standard_normal((n, 4)).astype(np.float32)
        np.testing.assert_allclose(f(a).numpy(), a.mean(0) * 3, rtol=1e-5, atol=1e-6)
    # One trace serves every size of a None dimension (TensorFlow's unknown dimension).
    assert f.trace_count == 1
    assert TensorSpec([None, 4]).is_compatible_with(np.zeros((9, 4), np.float32))
    assert not TensorSpec([None, 4]).is_compatible_with(np.zeros((9, 3), np.float32))
    assert repr(TensorSpec([None, 4])) == "TensorSpec(shape=(None, 4), dtype=float32)"


def test_variables_are_live_between_calls():
    v = lk.Variable([1.0, 2.0], name="v")
    f = function(lambda x: x * v)
    x = lk.constant([3.0, 4.0])
    np.testing.assert_allclose(f(x).numpy(), [3.0, 8.0])
    v.assign([10.0, 20.0])
    np.testing.assert_allclose(f(x).numpy(), [30.0, 80.0])
    v.assign_add([1.0, 1.0])
    np.testing.assert_allclose(f(x).numpy(), [33.0, 84.0])
    assert f.trace_count == 1


def test_assigns_inside_run_every_call_in_order():
    v = lk.Variable([1.0, 1.0], name="counter")
    w = lk.Variable([0.0, 0.0], name="w")

    @function
    def step(x):
        before = v * 1.0
        v.assign_add(x)
        w.assign(v * 2.0)          # sees the value just added
        v.assign_sub([0.5, 0.5])
        return before, v.value(), w * 1.0

    x = lk.constant([1.0, 2.0])
    for k in range(1, 4):
        before, after, wv = step(x)
        expect_before = 1.0 + (k - 1) * np.array([0.5, 1.5])
        np.testing.assert_allclose(before.numpy(), expect_before)
        np.testing.assert_allclose(after.numpy(), expect_before + [0.5, 1.5])
        np.testing.assert_allclose(wv.numpy(), 2 * (expect_before + [1.0, 2.0]))
    assert step.trace_count == 1
    np.testing.assert_allclose(v.numpy(), 1.0 + 3 * np.array([0.5, 1.5]))


def test_value_snapshot_is_not_aliased_to_the_variable():
    v = lk.Variable([1.0, 2.0])
    f = function(lambda: v.value())
    a = f()
    b = f()
    v.assign_add([1.0, 1.0])
    np.testing.assert_allclose(a.numpy(), [1.0, 2.0])
    np.testing.assert_allclose(b.numpy(), [1.0, 2.0])
    np.testing.assert_allclose(f().numpy(), [2.0, 3.0])


def test_variable_argument_is_read_live():
    f = function(lambda var, x: var * x)
    v1, v2 = lk.Variable([2.0]), lk.Variable([3.0])
    x = lk.constant([5.0])
    np.testing.assert_allclose(f(v1, x).numpy(), [10.0])
    np.testing.assert_allclose(f(v2, x).numpy(), [15.0])
    v1.assign([4.0])
    np.testing.assert_allclose(f(v1, x).numpy(), [20.0])
    assert f.trace_count == 1   # another Variable of the same shape and dtype: no retrace


def test_nested_structures_in_and_out():
    Pair = collections.namedtuple("Pair", "a b")

    @function
    def f(d, seq, pair):
        return {"sum": d["x"] + d["y"], "list": [seq[0] * 2.0, (seq[1], None)],
                "pair": Pair(pair.a - pair.b, "tag"), "n": 3}

    d = {"x": lk.constant([1.0]), "y": lk.constant([2.0])}
    seq = [lk.constant([3.0]), lk.constant([4.0])]
    pair = Pair(lk.constant([5.0]), lk.constant([1.0]))
    for scale in (1.0, 2.0):  # first call (trace), second call (graph)
        d2 = {k: v * scale for k, v in d.items()}
        out = f(d2, seq, pair)
        np.testing.assert_allclose(out["sum"].numpy(), [3.0 * scale])
        np.testing.assert_allclose(out["list"][0].numpy(), [6.0])
        assert out["list"][1][1] is None
        np.testing.assert_allclose(out["list"][1][0].numpy(), [4.0])
        assert isinstance(out["pair"], Pair) and out["pair"].b == "tag"
        np.testing.assert_allclose(out["pair"].a.numpy(), [4.0])
        assert out["n"] == 3
    assert f.trace_count == 1


def test_outputs_are_not_overwritten_by_later_calls(rng):
    f = function(lambda x: (x * 2.0 + 1.0) * x)
    a = rng.standard_normal(1000).astype(np.float32)
    r1 = f(lk.constant(a))
    r2 = f(lk.constant(a + 1))
    r3 = f(lk.constant(a + 2))
    np.testing.assert_allclose(r1.numpy(), (a * 2 + 1) * a, rtol=1e-6)
    np.testing.assert_allclose(r2.numpy(), ((a + 1) * 2 + 1) * (a + 1), rtol=1e-6)
    assert r3.numpy() is not r2.numpy()


def test_returned_input_and_constants():
    c = lk.constant([7.0])

    @function
    def f(x):
        return x, c, lk.constant(2.0) * 3.0
    x = lk.constant([1.0])
    for _ in range(2):
        a, b, k = f(x)
        np.testing.assert_allclose(a.numpy(), [1.0])
        np.testing.assert_allclose(b.numpy(), [7.0])
        np.testing.assert_allclose(k.numpy(), 6.0)


def test_multi_output_ops_and_iteration():
    @function
    def f(x):
        a, b = lk.split(x, 2, axis=1)
        rows = [r * 2.0 for r in x]          # iteration unstacks (static length)
        return a + b, lk.stack(rows)
    x = lk.constant(np.arange(8, dtype=np.float32).reshape(2, 4))
    for _ in range(2):
        s, r = f(x)
        np.testing.assert_allclose(s.numpy(), [[2, 4], [10, 12]])
        np.testing.assert_allclose(r.numpy(), x.numpy() * 2)


def test_decorator_forms_and_methods():
    class Model:
        def __init__(self, k):
            self.k = lk.Variable(k)

        @function
        def __call__(self, x):
            return x * self.k

    m1, m2 = Model(2.0), Model(3.0)
    x = lk.constant([1.0])
    np.testing.assert_allclose(m1(x).numpy(), [2.0])
    np.testing.assert_allclose(m2(x).numpy(), [3.0])
    np.testing.assert_allclose(m1(x).numpy(), [2.0])
    assert Model.__call__.__get__(m1, Model).trace_count == 1

    @function(input_signature=[TensorSpec([2])])
    def g(x):
        return x + 1.0
    np.testing.assert_allclose(g([1.0, 2.0]).numpy(), [2.0, 3.0])


def test_nested_functions_inline():
    inner = function(lambda x: lk.exp(x) * 2.0)

    @function
    def outer(x):
        return inner(x) + inner(x * 0.5)
    x = lk.constant([0.0, 1.0])
    want = np.exp([0.0, 1.0]) * 2 + np.exp([0.0, 0.5]) * 2
    for _ in range(2):
        np.testing.assert_allclose(outer(x).numpy(), want, rtol=1e-6)
    assert inner.trace_count == 0 and outer.trace_count == 1


def test_concurrent_calls_from_threads(rng):
    f = function(lambda x: lk.tanh(x * 2.0 + 1.0) * x)
    f(lk.constant(np.zeros(5000, np.float32)))
    arrays = [rng.standard_normal(5000).astype(np.float32) for _ in range(8)]
    results = [None] * 8

    def work(i):
        for _ in range(20):
            results[i] = f(lk.constant(arrays[i])).numpy()

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for a, r in zip(arrays, results):
        np.testing.assert_allclose(r, np.tanh(a * 2 + 1) * a, rtol=1e-5, atol=1e-6)


def test_exception_during_trace_leaves_no_state():
    @function
    def f(x):
        y = x * 2.0  # noqa: F841 - a traced op before the error
        raise RuntimeError("boom")
    with pytest.raises(RuntimeError, match="boom"):
        f(lk.constant([1.0]))
    # tensors created during the failed trace are ordinary tensors again
    assert lk.constant([1.0]) * 2.0 is not None
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(RuntimeError):
            f(lk.constant([1.0]))


def test_method_cache_does_not_keep_instances_alive():
    import gc
    import weakref

    class M:
        @function
        def f(self, x):
            return x * 2.0

    m = M()
    m.f(lk.constant([1.0]))
    r = weakref.ref(m)
    del m
    gc.collect()
    assert r() is None
