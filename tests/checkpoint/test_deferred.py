"""Deferred restoration: values restored before their object exists are applied when it
appears (nested checkpoints, lists/dicts/tuples filled or assigned later, sublayers
made in build, objects attached to the checkpoint after restore())."""
from __future__ import annotations

import gc
import os

import numpy as np
import pytest

import layerkit as lk
from layerkit.checkpoint import Checkpoint, CheckpointError, CheckpointManager
from layerkit.checkpoint.trackable import TrackedDict, TrackedList

X = np.arange(6, dtype=np.float32).reshape(2, 3)


def _var(*values):
    return lk.Variable(np.array(values, np.float32))


def _zeros(n):
    return lk.Variable(np.zeros(n, np.float32))


class Net(lk.Model):
    def __init__(self):
        super().__init__()
        self.l1 = lk.layers.Dense(5, bias_initializer="ones")

    def call(self, x):
        return self.l1(x)


def test_nested_checkpoint_restores_like_tensorflow(tmp_path):
    """The TensorFlow guide's example: restore a model's bias through nested
    Checkpoints; their own save counters are not in the file and are not 'missing'."""
    net = Net()
    net(X)
    net.l1.bias.assign(np.arange(5, dtype=np.float32) + 0.5)
    opt = lk.optimizers.Adam(0.1)
    path = Checkpoint(step=lk.Variable(np.int64(1)), optimizer=opt, net=net).save(
        tmp_path / "ckpt")
    to_restore = _zeros(5)
    new_root = Checkpoint(net=Checkpoint(l1=Checkpoint(bias=to_restore)))
    status = new_root.restore(path)
    status.assert_existing_objects_matched()
    np.testing.assert_array_equal(to_restore.numpy(), net.l1.bias.numpy())
    with pytest.raises(AssertionError):
        status.assert_consumed()   # the kernel, step and optimizer were not used


def test_restore_into_one_nested_checkpoint(tmp_path):
    dense = lk.layers.Dense(2)
    dense(X)
    dense.bias.assign(np.array([1.5, -2.5], np.float32))
    path = Checkpoint(net=dense).write(tmp_path / "d")
    bias = _zeros(2)
    status = Checkpoint(net=Checkpoint(bias=bias)).restore(path)
    status.assert_existing_objects_matched()
    assert bias.numpy().tolist() == [1.5, -2.5]
    assert status.missing == [] and status.pending == ["net/kernel"]   # may be attached later


def test_nested_checkpoint_counter_is_restored_when_saved(tmp_path):
    inner = Checkpoint(v=_var(1.0))
    inner.save(tmp_path / "inner")
    inner.save(tmp_path / "inner")
    path = Checkpoint(inner=inner).write(tmp_path / "outer")
    fresh = Checkpoint(v=_zeros(1))
    Checkpoint(inner=fresh).restore(path).assert_consumed()
    assert int(fresh.save_counter) == 2 and fresh.v.numpy().tolist() == [1.0]


class Holder(lk.layers.Layer):
    """Keeps variables and layers in containers created empty in __init__."""

    def __init__(self):
        super().__init__()
        self.vs = []
        self.named = {}
        self.w = None


def test_layer_list_and_plain_attribute_filled_after_restore(tmp_path):
    src = Holder()
    src.vs.append(_var(3.0))
    src.vs.append(_var(4.0, 5.0))
    src.named["a"] = _var(6.0)
    src.w = _var(7.0)
    path = Checkpoint(m=src).write(tmp_path / "h")
    dst = Holder()
    status = Checkpoint(m=dst).restore(path)
    assert sorted(status.pending) == ["m/named/a", "m/vs/0", "m/vs/1", "m/w"]
    dst.vs.append(_zeros(1))
    dst.vs += [_zeros(2)]
    dst.named["a"] = _zeros(1)
    dst.w = _zeros(1)
    assert [v.numpy().tolist() for v in dst.vs] == [[3.0], [4.0, 5.0]]
    assert dst.named["a"].numpy().tolist() == [6.0] and dst.w.numpy().tolist() == [7.0]
    status.assert_consumed()
    assert sorted(status.matched) == ["m/named/a", "m/vs/0", "m/vs/1", "m/w", "save_counter"]


def test_checkpoint_containers_filled_or_assigned_after_restore(tmp_path):
    src = Checkpoint(vs=[_var(1.0), _var(2.0)], d={"k": _var(3.0)}, t=(_var(4.0),),
                     nested=[[_var(5.0)]])
    path = src.write(tmp_path / "c")
    # existing, empty containers filled afterwards (append, insert, setitem, setdefault)
    ck = Checkpoint(vs=[], d={}, nested=[])
    status = ck.restore(path)
    ck.vs.insert(0, _zeros(1))
    ck.vs.extend([_zeros(1)])
    ck.d.setdefault("k", _zeros(1))
    ck.nested.append([])
    ck.nested[0].append(_zeros(1))
    ck.t = (_zeros(1),)
    assert [v.numpy()[0] for v in ck.vs] == [1.0, 2.0] and ck.d["k"].numpy()[0] == 3.0
    assert ck.nested[0][0].numpy()[0] == 5.0 and ck.t[0].numpy()[0] == 4.0
    status.assert_consumed()
    # containers assigned only after the restore
    ck = Checkpoint()
    status = ck.restore(path)
    assert sorted(status.unexpected) == ["d/k", "nested/0/0", "t/0", "vs/0", "vs/1"]
    ck.vs = [_zeros(1), _zeros(1)]
    ck.d = {"k": _zeros(1)}
    ck.t = (_zeros(1),)
    ck.nested = [[_zeros(1)]]
    assert [v.numpy()[0] for v in ck.vs] == [1.0, 2.0] and ck.d["k"].numpy()[0] == 3.0
    assert ck.t[0].numpy()[0] == 4.0 and ck.nested[0][0].numpy()[0] == 5.0
    assert status.unexpected == []
    status.assert_consumed()


class Block(lk.layers.Layer):
    """Sublayers made in build (one alone, a tuple) and a list filled by the caller."""

    def __init__(self):
        super().__init__()
        self.parts = []

    def build(self, input_shape):
        self.inner = lk.layers.Dense(4)
        self.pair = (lk.layers.Dense(3), lk.layers.Dense(2))

    def call(self, x):
        y = self.inner(x)
        for part in self.parts:
            y = part(y)
        return self.pair[1](self.pair[0](y))


def _block():
    b = Block()
    b.parts.append(lk.layers.Dense(4, activation="relu"))
    return b


def _same_weights(a, b):
    assert [w.name for w in a.weights] == [w.name for w in b.weights]
    for wa, wb in zip(a.weights, b.weights):
        np.testing.assert_array_equal(wa.numpy(), wb.numpy())


@pytest.mark.parametrize("attach", ["before", "after"])
def test_layers_appended_and_built_after_restore(tmp_path, attach):
    src = _block()
    src(X)
    path = Checkpoint(model=src).write(tmp_path / "b")
    dst = Block()
    ck = Checkpoint(model=dst) if attach == "before" else Checkpoint()
    status = ck.restore(path)
    if attach == "after":
        ck.model = dst
    dst.parts.append(lk.layers.Dense(4, activation="relu"))
    out = dst(X)
    _same_weights(src, dst)
    np.testing.assert_array_equal(out.numpy(), src(X).numpy())
    status.assert_consumed()


def test_optimizer_attached_after_restore_gets_its_slots(tmp_path):
    model = lk.Sequential([lk.Input((3,)), lk.layers.Dense(2)])
    opt = lk.optimizers.Adam(0.05)
    model.compile(opt, "mse")
    model.fit(X, np.ones((2, 2), np.float32), epochs=2, verbose=0)
    path = Checkpoint(model=model, optimizer=opt).write(tmp_path / "o")
    fresh = lk.Sequential([lk.Input((3,)), lk.layers.Dense(2)])
    ck = Checkpoint(model=fresh)
    status = ck.restore(path)
    assert "optimizer/iterations" in status.unexpected
    fresh_opt = lk.optimizers.Adam(0.05)
    ck.optimizer = fresh_opt
    assert int(fresh_opt.iterations.numpy()) == 2
    fresh_opt.build(fresh.trainable_variables)   # slots are created: restored now
    for a, b in zip(opt.variables, fresh_opt.variables):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    status.assert_consumed()


def test_mismatch_on_attach_names_the_file_and_keeps_the_value(tmp_path):
    path = Checkpoint(vs=[_var(1.0, 2.0)]).write(tmp_path / "m")
    ck = Checkpoint(vs=[])
    ck.restore(path)
    with pytest.raises(CheckpointError, match="'vs/0': the checkpoint has float32 \\(2,\\)") \
            as info:
        ck.vs.append(_zeros(3))
    assert str(tmp_path / "m") in str(info.value)
    ck.vs[0] = _zeros(2)   # a fitting variable at the same place gets the value
    assert ck.vs[0].numpy().tolist() == [1.0, 2.0]


def test_a_newer_restore_replaces_parked_values(tmp_path):
    def saved(fill, name):
        m = lk.layers.Dense(2)
        m(X)
        m.kernel.assign(np.full((3, 2), fill, np.float32))
        return Checkpoint(m=m).write(tmp_path / name)

    first, second = saved(1.0, "first"), saved(2.0, "second")
    dst = lk.layers.Dense(2)
    ck = Checkpoint(m=dst)
    ck.restore(first)
    ck.restore(second)
    dst(X)
    assert np.all(dst.kernel.numpy() == 2.0)


def _open_fds_to(path):
    out = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith(str(path)):
            out.append(target)
    return out


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc")
def test_values_for_unattached_names_outlive_rotation_and_release_the_file(tmp_path):
    mgr = CheckpointManager(Checkpoint(extra=Checkpoint(v=_var(8.0))), tmp_path / "run",
                            max_to_keep=1)
    path = mgr.save()
    ck = Checkpoint()
    status = ck.restore(path)
    assert sorted(status.unexpected) == ["extra/save_counter", "extra/v"]
    assert _open_fds_to(path)   # read when (if) "extra" is attached
    mgr.save()   # rotation deletes the file the values are read from
    assert not os.path.exists(path)
    ck.extra = Checkpoint(v=_zeros(1))
    assert ck.extra.v.numpy().tolist() == [8.0]
    status.assert_consumed()
    del ck, status
    gc.collect()
    assert _open_fds_to(path) == []
    # nothing parked: the file is closed right away
    Checkpoint(extra=Checkpoint(v=_zeros(1))).restore(mgr.latest_checkpoint)
    assert _open_fds_to(tmp_path) == []


def test_load_weights_keeps_nothing_for_unknown_names(tmp_path):
    src = lk.Sequential([lk.Input((3,)), lk.layers.Dense(2)])
    opt = lk.optimizers.SGD(0.1)
    path = Checkpoint(model=src, optimizer=opt).write(tmp_path / "w")
    dst = lk.Sequential([lk.Input((3,)), lk.layers.Dense(2)])
    dst.load_weights(path)
    _same_weights(src, dst)
    assert _open_fds_to(tmp_path) == []


def test_tracked_containers_behave_as_plain_ones():
    layer = Holder()
    assert type(layer.vs) is TrackedList and type(layer.named) is TrackedDict
    layer.vs.append(1)
    layer.vs[0:1] = [2, 3]
    assert layer.vs == [2, 3] and isinstance(layer.vs, list)
    import copy
    assert type(copy.copy(layer.vs)) is list and type(copy.deepcopy(layer.named)) is dict
    assert layer.vs.copy() == [2, 3]
