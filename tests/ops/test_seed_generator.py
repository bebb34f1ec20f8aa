"""lk.random.SeedGenerator: Keras 3's stateful seed source ([seed, counter] state, next()
rules), reproducible draws in eager code and inside lk.function, and checkpoints."""
import os

import numpy as np
import pytest

import layerkit as lk


def test_state_and_next_follow_keras_rules():
    g = lk.random.SeedGenerator(42)
    assert g.state.numpy().tolist() == [42, 0] and not g.state.trainable
    assert g.next().numpy().tolist() == [42, 0]
    assert g.next().numpy().tolist() == [42, 1]
    assert g.state.numpy().tolist() == [42, 2]
    # ordered=False: state <- (state + 1) * 5387 % 933199 (by hand: 43 * 5387 = 231641,
    # 3 * 5387 = 16161)
    assert g.next(ordered=False).numpy().tolist() == [42, 2]
    assert g.state.numpy().tolist() == [231641, 16161]
    assert g.get_config() == {"seed": 42, "name": g.name}
    clone = lk.random.SeedGenerator.from_config(g.get_config())
    assert clone.state.numpy().tolist() == [42, 0] and clone.name == g.name


def test_draws_advance_and_repeat_per_seed():
    g = lk.random.SeedGenerator(7)
    a = lk.random.normal((3,), seed=g).numpy()
    b = lk.random.normal((3,), seed=g).numpy()
    assert not np.array_equal(a, b) and g.state.numpy().tolist() == [7, 2]
    h = lk.random.SeedGenerator(7)
    np.testing.assert_array_equal(lk.random.normal((3,), seed=h).numpy(), a)
    np.testing.assert_array_equal(lk.random.normal((3,), seed=h).numpy(), b)
    # every sampler and lk.nn.dropout accept it
    u = lk.random.uniform((4,), seed=g, minval=2.0, maxval=3.0).numpy()
    assert ((u >= 2) & (u < 3)).all()
    assert lk.random.categorical(lk.zeros((2, 3)), 5, seed=g).shape == (2, 5)
    kept = lk.nn.dropout(lk.ones((1000,)), 0.5, seed=g).numpy()
    assert set(np.unique(kept)) == {0.0, 2.0} and 400 < (kept > 0).sum() < 600
    assert g.state.numpy().tolist() == [7, 5]
    # an int seed is stateless in eager code: the same numbers on every call
    np.testing.assert_array_equal(lk.random.normal((3,), seed=7).numpy(),
                                  lk.random.normal((3,), seed=7).numpy())


def test_inside_lk_function_each_call_draws_the_next_numbers():
    eager = lk.random.SeedGenerator(3)
    expected = [lk.random.uniform((2,), seed=eager).numpy() for _ in range(3)]
    g = lk.random.SeedGenerator(3)
    f = lk.function(lambda: lk.random.uniform((2,), seed=g))
    got = [f().numpy() for _ in range(3)]
    for e, v in zip(expected, got):
        np.testing.assert_array_equal(e, v)
    assert g.state.numpy().tolist() == [3, 3]
    nxt = lk.function(lambda: g.next())
    assert [nxt().numpy().tolist() for _ in range(2)] == [[3, 3], [3, 4]]


def test_seed_none_is_reproducible_after_set_seed_and_names_are_unique():
    lk.random.set_seed(11)
    a = lk.random.normal((2,), seed=lk.random.SeedGenerator()).numpy()
    lk.random.set_seed(11)
    b = lk.random.normal((2,), seed=lk.random.SeedGenerator()).numpy()
    np.testing.assert_array_equal(a, b)
    g1, g2 = lk.random.SeedGenerator(1), lk.random.SeedGenerator(1)
    assert g1.name != g2.name and g1.name.startswith("seed_generator")
    assert lk.random.SeedGenerator(1, name="mine").name == "mine"
    assert isinstance(g1, lk.random.Generator)


def test_checkpoints_continue_the_stream(tmp_path):
    g = lk.random.SeedGenerator(5)
    lk.random.normal((2,), seed=g)
    path = lk.Checkpoint(gen=g).write(os.fspath(tmp_path / "g"))
    after = lk.random.normal((2,), seed=g).numpy()
    fresh = lk.random.SeedGenerator(5)
    lk.Checkpoint(gen=fresh).read(path).assert_consumed()
    assert fresh.state.numpy().tolist() == [5, 1]
    np.testing.assert_array_equal(lk.random.normal((2,), seed=fresh).numpy(), after)


def test_a_layer_attribute_is_saved_with_the_layer(tmp_path):
    class Noisy(lk.layers.Layer):   # the Keras pattern
        def __init__(self):
            super().__init__()
            self.seed_generator = lk.random.SeedGenerator(1337)

        def call(self, x):
            return x + lk.random.normal(x.shape, seed=self.seed_generator)

    x = np.zeros((2, 2), np.float32)
    layer = Noisy()
    layer(x)
    path = lk.Checkpoint(layer=layer).write(os.fspath(tmp_path / "l"))
    after = layer(x).numpy()
    again = Noisy()
    lk.Checkpoint(layer=again).read(path).assert_consumed()
    np.testing.assert_array_equal(again(x).numpy(), after)
    assert again.weights == []   # the state is not a weight (as in Keras)


def test_errors():
    with pytest.raises(ValueError, match="must be an integer"):
        lk.random.SeedGenerator(1.5)
    with pytest.raises(ValueError, match="unrecognized keyword"):
        lk.random.SeedGenerator(1, dtype="int32")
    with pytest.raises(ValueError, match="not a seed generator state"):
        lk.random.SeedGenerator(1).set_state({"seed": 1})
    with pytest.raises(ValueError, match=r"\[seed, counter\]"):
        lk.random.SeedGenerator(1).set_state({"state": [1, 2, 3]})
