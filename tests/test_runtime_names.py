"""TensorFlow's runtime odds and ends: control_dependencies, group, no_op, version,
get_logger, lk.test, lk.compat.v1.logging."""
import logging

import pytest

import layerkit as lk


def test_control_dependencies_runs_in_program_order_eagerly_and_in_graphs():
    v = lk.Variable(1.0)
    with lk.control_dependencies([v.assign_add(1.0)]):
        y = v * 2.0
    assert float(y) == 4.0
    w = lk.Variable(0.0)

    @lk.function
    def step():
        update = w.assign_add(1.0)
        with lk.control_dependencies([update]):
            out = lk.identity(w.read_value())
        lk.group(update)
        lk.no_op()
        return out

    assert [float(step()) for _ in range(3)] == [1.0, 2.0, 3.0]


def test_version_logger_test_and_compat_logging():
    assert lk.version.VERSION == lk.__version__
    assert isinstance(lk.get_logger(), logging.Logger)
    assert lk.test.is_gpu_available() is False and lk.test.is_built_with_cuda() is False
    assert lk.test.gpu_device_name() == ""
    lk.compat.v1.logging.set_verbosity(lk.compat.v1.logging.ERROR)
    assert lk.compat.v1.logging.get_verbosity() == logging.ERROR
    lk.get_logger().setLevel(logging.WARNING)
    with pytest.raises(AttributeError, match="TensorFlow 1 APIs are not supported"):
        lk.compat.v1.placeholder  # noqa: B018
    with pytest.raises(AttributeError, match="lk.compat.v2 is not supported"):
        lk.compat.v2  # noqa: B018


def test_dataset_cardinality_has_numpy_like_a_tf_tensor():
    c = lk.data.Dataset.range(6).cardinality()
    assert c == 6 and c.numpy() == 6 and c.dtype == "int64"
    assert lk.data.Dataset.range(3).repeat().cardinality().numpy() == lk.data.INFINITE
