"""Issue 13 item 2: lk.Module with tf.Module's contract; lk.layers.Layer is a Module."""
import numpy as np
import pytest

import layerkit as lk


class Dense(lk.Module):
    def __init__(self, n_in, n_out, name=None):
        super().__init__(name=name)
        self.w = lk.Variable(np.full((n_in, n_out), 0.5, np.float32), name="w")
        self.b = lk.Variable(np.zeros(n_out, np.float32), name="b")

    def __call__(self, x):
        return lk.nn.relu(lk.matmul(x, self.w) + self.b)


class NoSuper(lk.Module):
    """As some TF guides write it: no super().__init__()."""

    def __init__(self):
        self.a_variable = lk.Variable(5.0, name="train_me")
        self.non_trainable_variable = lk.Variable(5.0, trainable=False, name="do_not_train_me")

    def __call__(self, x):
        return self.a_variable * x + self.non_trainable_variable


class Sequential(lk.Module):
    def __init__(self, name=None):
        super().__init__(name=name)
        self.dense_1 = Dense(3, 3)
        self.dense_2 = Dense(3, 2)

    @lk.function
    def __call__(self, x):
        return self.dense_2(self.dense_1(x))


def test_tracking_without_super_init():
    m = NoSuper()
    assert m.name == "no_super"
    # sorted by attribute name: a_variable < non_trainable_variable
    assert [v.name for v in m.variables] == ["train_me", "do_not_train_me"]
    assert [v.name for v in m.trainable_variables] == ["train_me"]
    assert [v.name for v in m.non_trainable_variables] == ["do_not_train_me"]
    assert isinstance(m.variables, tuple) and m.submodules == ()
    assert float(m(lk.constant(2.0))) == 15.0
    with m.name_scope as scope:
        assert scope == "no_super/"


def test_names_and_validation():
    assert Dense(1, 1).name == "dense"
    assert Dense(1, 1, name="custom").name == "custom"
    assert lk.Module().name == "module"

    class MLPBlock(lk.Module):
        pass

    assert MLPBlock().name == "mlp_block"
    with pytest.raises(ValueError, match="'bad name' is not a valid module name"):
        lk.Module(name="bad name")


def test_variables_order_follows_tensorflow():
    # own variables sorted by attribute name, then each sub-module's in turn
    m = Sequential(name="the_model")
    names = [v.name for v in m.variables]
    assert names == ["b", "w", "b", "w"]
    assert m.variables[0] is m.dense_1.b and m.variables[3] is m.dense_2.w
    assert m.submodules == (m.dense_1, m.dense_2)
    a, b, c = lk.Module(), lk.Module(), lk.Module()
    a.b = b
    b.c = c
    assert list(a.submodules) == [b, c] and list(b.submodules) == [c]


def test_containers_and_shared_variables_are_found_once():
    m = lk.Module()
    shared = lk.Variable(1.0, name="shared")
    m.layers = [Dense(2, 2), Dense(2, 1)]
    m.table = {"z": shared, "a": lk.Variable(2.0, name="a")}
    m.alias = shared
    got = [v.name for v in m.variables]
    # attributes: alias, layers, table; dict values by sorted key; modules after leaves
    assert got == ["shared", "a", "b", "w", "b", "w"]
    assert len(m.submodules) == 2


def test_function_method_and_gradients():
    m = Sequential()
    x = np.array([[1.0, -2.0, 3.0]], np.float32)
    y = m(lk.constant(x))
    h = np.maximum(x @ np.full((3, 3), 0.5, np.float32), 0)
    np.testing.assert_allclose(y.numpy(), np.maximum(h @ np.full((3, 2), 0.5), 0), rtol=1e-6)
    with lk.GradientTape() as tape:
        loss = lk.reduce_sum(m(lk.constant(x)))
    grads = tape.gradient(loss, m.trainable_variables)
    assert len(grads) == 4 and all(g is not None for g in grads)
    # d loss / d b2 = 1 for each output unit that is active (both are: h @ w2 > 0)
    np.testing.assert_allclose(grads[2].numpy(), [1.0, 1.0])


def test_with_name_scope():
    class Scoped(lk.Module):
        @lk.Module.with_name_scope
        def __call__(self):
            return lk.get_current_name_scope()

    outer = lk.Module(name="outer")
    with outer.name_scope:
        inner = Scoped(name="inner")
    assert inner() == "outer/inner"
    assert lk.get_current_name_scope() == ""
    with lk.name_scope("elsewhere"):
        assert inner() == "outer/inner"  # a module's scope is fixed when it is made


def test_checkpoint_roundtrip(tmp_path):
    m = Sequential()
    ckpt = lk.Checkpoint(model=m)
    path = ckpt.save(str(tmp_path / "ckpt"))
    before = [v.numpy() for v in m.variables]
    for v in m.variables:
        v.assign(v + 1.0)
    ckpt.restore(path)
    for v, want in zip(m.variables, before):
        np.testing.assert_array_equal(v.numpy(), want)
    # a fresh module restores by attribute path (dense_1/w, ...)
    fresh = Sequential()
    fresh.dense_1.w.assign(np.zeros((3, 3), np.float32))
    lk.Checkpoint(model=fresh).restore(path).assert_consumed()
    np.testing.assert_array_equal(fresh.dense_1.w.numpy(), before[1])


def test_checkpoint_restores_a_variable_created_later(tmp_path):
    class Lazy(lk.Module):
        def __call__(self, x):
            if not hasattr(self, "w"):
                self.w = lk.Variable(lk.ones((x.shape[-1],)), name="w")
            return x * self.w

    saved = Lazy()
    saved(lk.ones((2,)))
    saved.w.assign([3.0, 4.0])
    path = lk.Checkpoint(m=saved).save(str(tmp_path / "lazy"))
    fresh = Lazy()
    lk.Checkpoint(m=fresh).restore(path)
    np.testing.assert_array_equal(fresh(lk.ones((2,))).numpy(), [3.0, 4.0])


def test_layers_are_modules():
    layer = lk.layers.Dense(2)
    layer(np.ones((1, 3), np.float32))
    assert isinstance(layer, lk.Module)
    assert layer.name == "dense" or layer.name.startswith("dense_")
    m = lk.Module()
    m.layer = layer
    m.scale = lk.Variable(2.0, name="scale")
    assert [v.name for v in m.variables] == ["scale", "kernel", "bias"]
    assert m.submodules == (layer,)
    # a Layer holding a plain Module counts its variables as weights
    holder = lk.layers.Layer()
    holder.inner = Dense(1, 1)
    assert [v.name for v in holder.weights] == ["b", "w"]
