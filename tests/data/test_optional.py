"""Iterator.get_next / get_next_as_optional and lk.experimental.Optional (tf.data's contract)."""
import numpy as np
import pytest

import layerkit as lk


def test_get_next_raises_out_of_range_after_the_last_element_and_next_stops():
    it = iter(lk.data.Dataset.range(2))
    assert [int(it.get_next()), int(it.get_next())] == [0, 1]
    with pytest.raises(lk.errors.OutOfRangeError):
        it.get_next()
    with pytest.raises(IndexError):  # OutOfRangeError subclasses IndexError
        iter(lk.data.Dataset.range(0)).get_next()
    with pytest.raises(StopIteration):
        next(iter(lk.data.Dataset.range(0)))


def test_get_next_as_optional_walks_a_pass_then_is_empty():
    ds = lk.data.Dataset.from_tensor_slices({"a": np.arange(3.0, dtype=np.float32)})
    it = iter(ds)
    seen = []
    while True:
        opt = it.get_next_as_optional()
        if not opt.has_value():
            break
        seen.append(float(opt.get_value()["a"]))
    assert seen == [0.0, 1.0, 2.0]
    assert opt.element_spec == ds.element_spec
    with pytest.raises(lk.errors.InvalidArgumentError, match="no value"):
        opt.get_value()
    assert not lk.data.experimental.get_next_as_optional(it).has_value()


def test_optional_from_value_and_empty():
    full = lk.experimental.Optional.from_value((1, 2))
    assert full.has_value() and full.get_value() == (1, 2)
    empty = lk.experimental.Optional.empty(lk.TensorSpec([], lk.float32))
    assert not empty.has_value() and "empty" in repr(empty)
    with pytest.raises(AttributeError, match="layerkit.experimental"):
        lk.experimental.no_such_name  # noqa: B018
