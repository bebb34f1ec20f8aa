"""lk.train: tf.train's checkpoint names, and reading a checkpoint without its objects."""
import numpy as np
import pytest

import layerkit as lk


def test_checkpoint_names_are_layerkits():
    assert lk.train.Checkpoint is lk.Checkpoint
    assert lk.train.CheckpointManager is lk.CheckpointManager
    assert lk.train.latest_checkpoint is lk.latest_checkpoint


def test_list_and_load_variables_from_a_directory_and_a_file(tmp_path):
    w = np.arange(6, dtype=np.float32).reshape(2, 3)
    ckpt = lk.train.Checkpoint(w=lk.Variable(w), step=lk.Variable(7, dtype="int64"))
    manager = lk.train.CheckpointManager(ckpt, tmp_path, max_to_keep=2)
    manager.save()
    ckpt.w.assign(w * 2)
    path = manager.save()
    suffix = "/.ATTRIBUTES/VARIABLE_VALUE"  # TensorFlow's spelling of the names
    names = dict(lk.train.list_variables(tmp_path))
    assert names["w" + suffix] == (2, 3) and names["step" + suffix] == ()
    np.testing.assert_array_equal(lk.train.load_variable(tmp_path, "w"), w * 2)
    np.testing.assert_array_equal(lk.train.load_variable(tmp_path, "w" + suffix), w * 2)
    reader = lk.train.load_checkpoint(path)
    assert reader.has_tensor("step") and reader.has_tensor("step" + suffix)
    assert not reader.has_tensor("nope")
    assert reader.get_variable_to_shape_map()["w" + suffix] == [2, 3]
    assert reader.get_tensor("step") == 7


def test_missing_checkpoint_and_name_are_clear(tmp_path):
    with pytest.raises(FileNotFoundError, match="holds no recorded checkpoint"):
        lk.train.list_variables(tmp_path)
    path = lk.train.Checkpoint(v=lk.Variable(1.0)).save(tmp_path / "c")
    with pytest.raises(KeyError, match="no tensor 'u'"):
        lk.train.load_variable(path, "u")


def test_checkpoint_options_are_accepted(tmp_path):
    ckpt = lk.train.Checkpoint(v=lk.Variable(3.0))
    options = lk.train.CheckpointOptions()
    path = ckpt.save(tmp_path / "c", options=options)
    ckpt.write(tmp_path / "w", options=options)
    ckpt.v.assign(0.0)
    ckpt.restore(path, options=options).assert_consumed()
    assert ckpt.v.numpy() == 3.0
    manager = lk.train.CheckpointManager(ckpt, tmp_path / "m", max_to_keep=1)
    assert lk.train.load_variable(manager.save(options=options), "v") == 3.0
