"""lk.random: reproducibility (global seed, op seed, Generator), distributions, state."""
import json
import math
import warnings

import numpy as np
import pytest

import layerkit as lk
from layerkit import random as lkrandom
from layerkit.autodiff.function import EagerFallbackWarning
from layerkit.primitives import random as R


def _draws():
    return [
        lkrandom.normal([5]).numpy(),
        lkrandom.uniform([5]).numpy(),
        lkrandom.truncated_normal([5]).numpy(),
        lkrandom.categorical([[0.0, 1.0, 2.0]], 6).numpy(),
        lkrandom.shuffle(np.arange(10)).numpy(),
    ]


def test_set_seed_makes_the_sequence_of_seedless_calls_reproducible():
    lkrandom.set_seed(123)
    a = _draws()
    lkrandom.set_seed(123)
    b = _draws()
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)
    lkrandom.set_seed(124)
    c = _draws()
    assert not np.array_equal(a[0], c[0])
    # successive seedless calls differ
    assert not np.array_equal(a[0], lkrandom.normal([5]).numpy())


def test_op_seed_alone_is_reproducible():
    lkrandom.set_seed(1)
    a = lkrandom.normal([4], seed=7).numpy()
    lkrandom.set_seed(2)
    lkrandom.normal([3])
    np.testing.assert_array_equal(lkrandom.normal([4], seed=7).numpy(), a)
    assert not np.array_equal(lkrandom.normal([4], seed=8).numpy(), a)
    np.testing.assert_array_equal(lkrandom.uniform([3], seed=5).numpy(),
                                  lkrandom.uniform([3], seed=5).numpy())


def test_normal_moments_dtype_and_parameters():
    x = lkrandom.normal([200_000], seed=0)
    assert x.dtype == np.float32 and x.shape == (200_000,)
    v = x.numpy().astype(np.float64)
    assert abs(v.mean()) < 0.01 and abs(v.std() - 1) < 0.01
    y = lkrandom.normal((400, 500), mean=3.0, stddev=0.5, dtype="float64", seed=1).numpy()
    assert y.dtype == np.float64 and y.shape == (400, 500)
    assert abs(y.mean() - 3) < 0.01 and abs(y.std() - 0.5) < 0.01
    # per-column parameters broadcast against the shape
    z = lkrandom.normal([100_000, 2], mean=[0.0, 10.0], stddev=[1.0, 2.0], seed=2).numpy()
    np.testing.assert_allclose(z.mean(0), [0, 10], atol=0.03)
    np.testing.assert_allclose(z.std(0), [1, 2], atol=0.03)
    assert lkrandom.normal(3, seed=0).shape == (3,)
    assert lkrandom.normal(lk.constant([2, 3]), seed=0).shape == (2, 3)


def test_uniform_range_and_integers():
    u = lkrandom.uniform([100_000], seed=0).numpy()
    assert u.dtype == np.float32 and u.min() >= 0 and u.max() < 1
    assert abs(u.mean() - 0.5) < 0.01 and abs(u.var() - 1 / 12) < 0.003
    v = lkrandom.uniform([50_000], minval=-2, maxval=3, dtype=np.float64, seed=1).numpy()
    assert v.min() >= -2 and v.max() < 3 and abs(v.mean() - 0.5) < 0.05
    k = lkrandom.uniform([10_000], minval=2, maxval=7, dtype="int32", seed=2).numpy()
    assert k.dtype == np.int32 and set(np.unique(k)) == {2, 3, 4, 5, 6}
    with pytest.raises(ValueError, match="maxval must be given for integer dtypes"):
        lkrandom.uniform([3], dtype="int64")
    with pytest.raises(ValueError, match="need minval < maxval"):
        lkrandom.uniform([3], minval=5, maxval=5, dtype="int64")


def test_truncated_normal_is_bounded_with_the_truncated_variance():
    x = lkrandom.truncated_normal([200_000], seed=3).numpy().astype(np.float64)
    assert np.abs(x).max() <= 2
    # variance of a standard normal truncated to [-2, 2]
    phi2 = math.exp(-2) / math.sqrt(2 * math.pi)
    mass = math.erf(2 / math.sqrt(2))
    assert abs(x.std() - math.sqrt(1 - 4 * phi2 / mass)) < 0.01
    assert abs(x.mean()) < 0.01
    y = lkrandom.truncated_normal([10_000], mean=5.0, stddev=0.1, dtype="float64",
                                  seed=4).numpy()
    assert y.dtype == np.float64 and np.all(np.abs(y - 5) <= 0.2 + 1e-12)


def test_categorical_frequencies_and_edge_cases():
    logits = np.log(np.array([[0.2, 0.5, 0.3], [0.9, 0.05, 0.05]]))
    s = lkrandom.categorical(logits, 20_000, seed=0)
    assert s.shape == (2, 20_000) and s.dtype == np.int64
    freq = np.stack([np.bincount(row, minlength=3) / 20_000 for row in s.numpy()])
    np.testing.assert_allclose(freq, np.exp(logits), atol=0.015)
    t = lkrandom.categorical([[0.0, -np.inf, 1000.0, -1000.0]], 100, dtype="int32", seed=1)
    assert t.dtype == np.int32 and np.all(t.numpy() == 2)
    u = lkrandom.categorical([[0.0, -np.inf]], 200, seed=2).numpy()
    assert np.all(u == 0)
    with pytest.raises(ValueError, match=r"shape \(batch, num_classes\)"):
        lkrandom.categorical([0.0, 1.0], 3)


def test_shuffle_permutes_rows():
    x = np.arange(20).reshape(10, 2)
    y = lkrandom.shuffle(x, seed=0).numpy()
    assert sorted(map(tuple, y)) == sorted(map(tuple, x))
    assert not np.array_equal(x, y)
    np.testing.assert_array_equal(lkrandom.shuffle(x, seed=0).numpy(), y)
    with pytest.raises(ValueError, match="rank >= 1"):
        lkrandom.shuffle(3.0)


def test_generator_streams_and_methods():
    g1, g2 = lkrandom.Generator(5), lkrandom.Generator(5)
    for g in (g1, g2):
        g.normal([3]), g.uniform([2]), g.truncated_normal([4]), g.categorical([[0.0, 1.0]], 3)
    np.testing.assert_array_equal(g1.normal([6]).numpy(), g2.normal([6]).numpy())
    np.testing.assert_array_equal(g1.shuffle(np.arange(8)).numpy(),
                                  g2.shuffle(np.arange(8)).numpy())
    a, b = g1.normal([3]).numpy(), g1.normal([3]).numpy()
    assert not np.array_equal(a, b)                  # the stream advances
    assert lkrandom.Generator.from_seed(5).seed == 5
    u = lkrandom.Generator(0).uniform([1000], minval=1, maxval=2, dtype="float64").numpy()
    assert u.dtype == np.float64 and u.min() >= 1 and u.max() < 2


def test_generator_state_round_trip_through_json():
    g = lkrandom.Generator(42)
    g.normal([7])
    state = json.loads(json.dumps(g.get_state()))
    want = [g.normal([5]).numpy(), g.uniform([3]).numpy(), g.next_seed()]
    h = lkrandom.Generator(0)
    h.set_state(state)
    got = [h.normal([5]).numpy(), h.uniform([3]).numpy(), h.next_seed()]
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])
    assert got[2] == want[2] and h.seed == 42
    with pytest.raises(ValueError, match="expected the dict returned by get_state"):
        h.set_state({"seed": 1})


def test_global_state_round_trip():
    lkrandom.set_seed(77)
    lkrandom.normal([3])
    state = json.loads(json.dumps(lkrandom.get_state()))
    a = [lkrandom.normal([4]).numpy(), lkrandom.uniform([2]).numpy()]
    lkrandom.normal([10])
    lkrandom.set_state(state)
    b = [lkrandom.normal([4]).numpy(), lkrandom.uniform([2]).numpy()]
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)
    assert R.global_generator().get_state() == lkrandom.get_state()


def test_seedless_generator_draws_its_seed_from_the_global_one():
    lkrandom.set_seed(3)
    a = lkrandom.Generator().normal([4]).numpy()
    lkrandom.set_seed(3)
    np.testing.assert_array_equal(lkrandom.Generator().normal([4]).numpy(), a)


def test_argument_errors():
    with pytest.raises(TypeError, match="dtype must be a float dtype"):
        lkrandom.normal([2], dtype="int32")
    with pytest.raises(ValueError, match="negative dimension"):
        lkrandom.normal([2, -1])
    with pytest.raises(TypeError, match="shape must be a sequence of ints"):
        lkrandom.uniform("ab")


# ---- inside lk.function: stateful records re-drawn on every call ------------------------------
def _no_fallback(f, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("error", EagerFallbackWarning)
        return f(*args)


def _samplers(seed):
    return [lkrandom.normal([4], seed=seed), lkrandom.uniform([3], seed=seed),
            lkrandom.truncated_normal([4], seed=seed),
            lkrandom.uniform([5], minval=0, maxval=9, dtype="int32", seed=seed),
            lkrandom.categorical(lk.constant([[0.0, 1.0, 2.0]]), 6, seed=seed),
            lkrandom.shuffle(lk.constant(np.arange(10)), seed=seed)]


def test_seedless_samplers_in_a_graph_follow_the_global_sequence():
    f = lk.function(lambda: _samplers(None))
    lkrandom.set_seed(21)
    graph = [[t.numpy() for t in _no_fallback(f)] for _ in range(3)]
    lkrandom.set_seed(21)
    eager = [[t.numpy() for t in _samplers(None)] for _ in range(3)]
    for g, e in zip(graph, eager):
        for a, b in zip(g, e):
            np.testing.assert_array_equal(a, b)
    assert not np.array_equal(graph[0][0], graph[1][0])
    assert f.trace_count == 1 and f.get_concrete_function().mode == "graph"


def test_op_seeds_in_a_graph_give_a_sequence_that_a_retrace_repeats():
    def run():
        f = lk.function(lambda: _samplers(3))
        return [[t.numpy() for t in _no_fallback(f)] for _ in range(3)]

    first, again = run(), run()
    eager = [t.numpy() for t in _samplers(3)]
    for a, b in zip(first[0], eager):          # the first call: the op seed's eager values
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(first[0][0], first[1][0])
    assert not np.array_equal(first[1][1], first[2][1])
    for g, h in zip(first, again):
        for a, b in zip(g, h):
            np.testing.assert_array_equal(a, b)


def test_generator_methods_and_generator_seeds_in_a_graph_continue_the_stream():
    g1, g2 = lkrandom.Generator(8), lkrandom.Generator(8)
    f = lk.function(lambda: [g1.normal([3]), lkrandom.uniform([2], seed=g1)])
    graph = [[t.numpy() for t in _no_fallback(f)] for _ in range(3)]
    eager = [[g2.normal([3]).numpy(), lkrandom.uniform([2], seed=g2).numpy()]
             for _ in range(3)]
    for g, e in zip(graph, eager):
        for a, b in zip(g, e):
            np.testing.assert_array_equal(a, b)
    assert g1.get_state() == g2.get_state()


def test_tensor_parameters_are_graph_inputs():
    f = lk.function(lambda m, s: lkrandom.normal([2, 3], mean=m, stddev=s, dtype="float64",
                                                 seed=0))
    a = _no_fallback(f, lk.constant([0.0, 10.0, 20.0]), lk.constant(0.0)).numpy()
    np.testing.assert_array_equal(a, [[0.0, 10.0, 20.0]] * 2)
    b = _no_fallback(f, lk.constant([1.0, 2.0, 3.0]), lk.constant(0.0)).numpy()
    np.testing.assert_array_equal(b, [[1.0, 2.0, 3.0]] * 2)
    assert f.trace_count == 1


def test_float64_draws_keep_python_parameters_exact():
    x = lkrandom.normal([1000], mean=0.1, stddev=0.0, dtype="float64", seed=0).numpy()
    assert np.all(x == 0.1)


def test_seed_type_errors():
    with pytest.raises(TypeError, match="lk.random.normal: seed must be an int"):
        lkrandom.normal([2], seed="a")
