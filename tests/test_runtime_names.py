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


def test_recompute_grad_and_atrous_conv2d():
    import numpy as np

    f = lk.recompute_grad(lambda x: x * x)
    x = lk.Variable(3.0)
    with lk.GradientTape() as t:
        y = f(x)
    assert float(t.gradient(y, x)) == 6.0
    rng = np.random.default_rng(0)
    value = rng.normal(size=(1, 7, 7, 2)).astype(np.float32)
    k = rng.normal(size=(2, 2, 2, 3)).astype(np.float32)
    dilated = np.zeros((3, 3, 2, 3), np.float32)  # rate 2: taps two apart
    dilated[::2, ::2] = k
    np.testing.assert_allclose(lk.nn.atrous_conv2d(value, k, rate=2, padding="VALID"),
                               lk.nn.conv2d(value, dilated, 1, "VALID"), rtol=1e-5, atol=1e-6)
