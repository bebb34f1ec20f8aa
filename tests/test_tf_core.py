"""Issue 13 item 3 (part): TensorShape, UnconnectedGradients, lk.errors, init_scope,
name_scope, lk.config and lk.device."""
import numexpr
import numpy as np
import pytest

import layerkit as lk
from layerkit import config as lk_config
from layerkit.kernels import blockwise as lk_kernels


# ---- TensorShape ------------------------------------------------------------------------
def test_tensor_shape_known_and_partial():
    s = lk.TensorShape([2, None, 3])
    assert s.rank == 3 and s.ndims == 3 and len(s) == 3
    assert s.as_list() == [2, None, 3] and s.dims == [2, None, 3]
    assert s[0] == 2 and s[1] is None and s[-1] == 3
    assert s[1:] == lk.TensorShape([None, 3]) and isinstance(s[1:], lk.TensorShape)
    assert list(s) == [2, None, 3]
    assert not s.is_fully_defined() and s.num_elements() is None
    full = lk.TensorShape((4, 5))
    assert full.is_fully_defined() and full.num_elements() == 20
    assert repr(s) == "TensorShape([2, None, 3])" and str(s) == "(2, None, 3)"
    assert str(lk.TensorShape([7])) == "(7,)" and lk.TensorShape(7) == [7]
    assert lk.TensorShape([-1, 2]).as_list() == [None, 2]  # -1: unknown, as in TF protos


def test_tensor_shape_equality_and_compatibility():
    s = lk.TensorShape([None, 3])
    assert s == [None, 3] and s == (None, 3) and s == lk.TensorShape([None, 3])
    assert s != [5, 3] and s != [None, 3, 1] and s != "abc"
    t = lk.zeros((5, 3))
    assert t.shape == lk.TensorShape([5, 3]) and lk.TensorShape([5, 3]) == t.shape
    assert hash(lk.TensorShape([5, 3])) == hash((5, 3))
    assert s.is_compatible_with([5, 3]) and s.is_compatible_with(lk.TensorShape(None))
    assert not s.is_compatible_with([5, 4]) and not s.is_compatible_with([5, 3, 1])
    assert s.merge_with([8, None]) == [8, 3]
    with pytest.raises(ValueError, match="not compatible"):
        s.merge_with([1, 2])
    with pytest.raises(ValueError, match="incompatible"):
        s.assert_is_compatible_with([1, 2])
    assert lk.TensorShape([2, 3]).most_specific_compatible_shape([2, 4]) == [2, None]
    assert (s + [7]).as_list() == [None, 3, 7] and ([1] + s).as_list() == [1, None, 3]
    assert s.with_rank(2) is s
    with pytest.raises(ValueError, match="must have rank 3"):
        s.with_rank(3)


def test_tensor_shape_unknown_rank():
    u = lk.TensorShape(None)
    assert u.rank is None and u.dims is None and not u
    assert u[0] is None and u[1:].rank is None
    assert str(u) == "<unknown>" and repr(u) == "TensorShape(None)"
    assert u == lk.TensorShape(None) and u != lk.TensorShape([])
    assert u.is_compatible_with([1, 2, 3]) and u.merge_with([1, 2]) == [1, 2]
    assert u.with_rank(2) == [None, None] and u.num_elements() is None
    with pytest.raises(ValueError, match="unknown"):
        u.as_list()
    with pytest.raises(ValueError, match="unknown rank"):
        len(u)
    with pytest.raises(TypeError, match="ints or None"):
        lk.TensorShape([1.5])
    with pytest.raises(ValueError, match=">= 0"):
        lk.TensorShape([-3])


def test_tensor_spec_accepts_tensor_shapes():
    spec = lk.TensorSpec(lk.TensorShape([None, 2]), lk.float32)
    assert spec.shape == (None, 2) and spec.is_compatible_with(lk.zeros((4, 2)))
    assert lk.TensorSpec(lk.TensorShape(None)).shape is None
    assert lk.zeros(lk.TensorShape([2, 3])).shape == (2, 3)


# ---- UnconnectedGradients -------------------------------------------------------------------
def test_unconnected_gradients():
    x = lk.Variable([1.0, 2.0])
    y = lk.Variable([[3.0]])
    with lk.GradientTape(persistent=True) as tape:
        loss = lk.reduce_sum(x * x)
    gx, gy = tape.gradient(loss, [x, y], unconnected_gradients=lk.UnconnectedGradients.ZERO)
    np.testing.assert_array_equal(gx.numpy(), [2.0, 4.0])
    np.testing.assert_array_equal(gy.numpy(), np.zeros((1, 1)))
    assert gy.dtype == np.float32
    assert tape.gradient(loss, y, unconnected_gradients=lk.UnconnectedGradients.NONE) is None
    assert lk.UnconnectedGradients.ZERO == "zero" and lk.UnconnectedGradients("none") is \
        lk.UnconnectedGradients.NONE
    jac = tape.jacobian(loss, y, unconnected_gradients=lk.UnconnectedGradients.ZERO)
    np.testing.assert_array_equal(jac.numpy(), np.zeros((1, 1)))


# ---- lk.errors ----------------------------------------------------------------------------------
@pytest.mark.parametrize("name, base, code", [
    ("InvalidArgumentError", ValueError, 3), ("NotFoundError", FileNotFoundError, 5),
    ("AlreadyExistsError", FileExistsError, 6), ("PermissionDeniedError", PermissionError, 7),
    ("ResourceExhaustedError", MemoryError, 8), ("FailedPreconditionError", RuntimeError, 9),
    ("OutOfRangeError", IndexError, 11), ("UnimplementedError", NotImplementedError, 12),
    ("InternalError", RuntimeError, 13), ("DeadlineExceededError", TimeoutError, 4),
    ("DataLossError", OSError, 15), ("UnauthenticatedError", PermissionError, 16),
])
def test_error_classes(name, base, code):
    cls = getattr(lk.errors, name)
    assert issubclass(cls, lk.errors.OpError) and issubclass(cls, base)
    e = cls(None, None, "the message")
    assert e.message == "the message" and str(e) == "the message"
    assert e.error_code == code and e.op is None and e.node_def is None
    assert cls("only a message").message == "only a message"
    assert lk.errors.exception_type_from_error_code(code) is cls
    assert lk.errors.error_code_from_exception_type(cls) == code
    with pytest.raises(base, match="boom"):
        raise cls(None, None, "boom")


def test_error_codes_and_bad_arguments():
    assert (lk.errors.OK, lk.errors.CANCELLED, lk.errors.INVALID_ARGUMENT,
            lk.errors.OUT_OF_RANGE, lk.errors.UNAUTHENTICATED) == (0, 1, 3, 11, 16)
    assert lk.errors.CancelledError("x").error_code == 1
    assert lk.errors.UnknownError(None, None, "x", 7).error_code == 7
    with pytest.raises(KeyError, match="unknown error code 99"):
        lk.errors.exception_type_from_error_code(99)
    with pytest.raises(TypeError, match="unexpected keyword"):
        lk.errors.OpError(None, None, "m", colour="red")


def test_get_next_past_the_end_raises_out_of_range():
    it = iter(lk.data.Dataset.range(2))
    assert [int(it.get_next()), int(it.get_next())] == [0, 1]
    with pytest.raises(lk.errors.OutOfRangeError, match="End of sequence") as info:
        it.get_next()
    assert info.value.error_code == lk.errors.OUT_OF_RANGE
    # next() and for-loops see StopIteration, as with TensorFlow's iterators
    it2 = iter(lk.data.Dataset.range(1))
    next(it2)
    with pytest.raises(StopIteration):
        next(it2)
    # the TF idiom: loop on get_next until OutOfRangeError
    it3, seen = iter(lk.data.Dataset.range(3)), []
    while True:
        try:
            seen.append(int(it3.get_next()))
        except lk.errors.OutOfRangeError:
            break
    assert seen == [0, 1, 2]


def test_missing_checkpoint_is_a_not_found_error(tmp_path):
    with pytest.raises(lk.errors.NotFoundError):
        lk.Checkpoint(v=lk.Variable(1.0)).restore(str(tmp_path / "missing"))


# ---- init_scope and name_scope ----------------------------------------------------------
def test_init_scope_pauses_tapes():
    x = lk.constant(3.0)
    with lk.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * x
        with lk.init_scope():
            z = x * x
        w = y + z
    assert float(tape.gradient(y, x)) == 6.0
    assert tape.gradient(z, x) is None
    assert float(tape.gradient(w, x)) == 6.0  # z is a constant to the tape


def test_init_scope_inside_function_runs_once_while_tracing():
    calls = []

    @lk.function
    def f(x):
        with lk.init_scope():
            calls.append(1)
            c = lk.constant(2.0) * 3.0  # eager: a constant of the traced graph
        assert isinstance(c, lk.Tensor) and float(c) == 6.0
        return x * c

    assert float(f(lk.constant(1.0))) == 6.0
    assert float(f(lk.constant(2.0))) == 12.0
    assert calls == [1]


def test_name_scope_nesting():
    assert lk.get_current_name_scope() == ""
    with lk.name_scope("a") as a:
        with lk.name_scope("b") as b:
            assert (a, b, lk.get_current_name_scope()) == ("a/", "a/b/", "a/b")
            with lk.name_scope("x/") as absolute:  # a trailing slash: a full name
                assert absolute == "x/" and lk.get_current_name_scope() == "x"
            with lk.name_scope("") as top:
                assert top == "" and lk.get_current_name_scope() == ""
        assert lk.get_current_name_scope() == "a"
    assert lk.get_current_name_scope() == ""
    with pytest.raises(ValueError, match="must be a string"):
        lk.name_scope(3)


# ---- lk.config and lk.device ------------------------------------------------------------
def test_device_listing():
    cpu = lk.config.list_physical_devices()
    assert cpu == [lk.config.PhysicalDevice("/physical_device:CPU:0", "CPU")]
    assert cpu[0].name == "/physical_device:CPU:0" and cpu[0].device_type == "CPU"
    assert lk.config.list_physical_devices("GPU") == []
    assert lk.config.list_physical_devices("cpu") == cpu
    assert lk.config.list_logical_devices() == [
        lk.config.LogicalDevice("/device:CPU:0", "CPU")]
    assert lk.config.experimental.list_physical_devices("GPU") == []
    lk.config.set_visible_devices([], "GPU")
    lk.config.set_visible_devices(cpu, "CPU")
    assert lk.config.get_visible_devices() == cpu
    with pytest.raises(ValueError, match="cannot be hidden"):
        lk.config.set_visible_devices([], "CPU")
    with pytest.raises(ValueError, match="unrecognized device"):
        lk.config.set_visible_devices([lk.config.PhysicalDevice("/physical_device:GPU:0",
                                                                "GPU")])
    lk.config.experimental.set_memory_growth(cpu[0], True)
    assert lk.config.experimental.get_memory_growth(cpu[0]) is False


def test_op_determinism_is_accepted():
    lk.config.experimental.enable_op_determinism()
    assert lk.config.experimental.is_op_determinism_enabled()
    lk.config.experimental.disable_op_determinism()
    assert not lk.config.experimental.is_op_determinism_enabled()


def test_intra_op_threads_drive_blas_numexpr_and_kernels():
    th = lk.config.threading
    assert th.get_intra_op_parallelism_threads() == 0
    before = (lk_config.blas_threads(), numexpr.get_num_threads(), lk_kernels.THREADS)
    try:
        th.set_intra_op_parallelism_threads(1)
        assert th.get_intra_op_parallelism_threads() == 1
        assert numexpr.get_num_threads() == 1 and lk_kernels.THREADS == 1
        if before[0] is not None:  # NumPy's BLAS was found and is driven
            assert lk_config.blas_threads() == 1
        a = np.random.default_rng(0).standard_normal((64, 64)).astype(np.float32)
        np.testing.assert_allclose(lk.matmul(a, a).numpy(), a @ a, rtol=1e-5)
    finally:
        th.set_intra_op_parallelism_threads(0)
    assert (lk_config.blas_threads(), numexpr.get_num_threads(), lk_kernels.THREADS) == before
    assert th.get_intra_op_parallelism_threads() == 0
    th.set_inter_op_parallelism_threads(2)
    assert th.get_inter_op_parallelism_threads() == 2
    th.set_inter_op_parallelism_threads(0)
    with pytest.raises(ValueError, match="number of threads"):
        th.set_intra_op_parallelism_threads(-1)


@pytest.mark.parametrize("name", ["/CPU:0", "cpu:0", "CPU", "/device:CPU:0", "",
                                  "/job:localhost/replica:0/task:0/device:CPU:0", None])
def test_device_accepts_cpu_names(name):
    with lk.device(name):
        out = lk.constant([1.0, 2.0]) * 2.0
    np.testing.assert_array_equal(out.numpy(), [2.0, 4.0])


def test_device_gpu_names_and_bad_names():
    with lk.device("/GPU:0"):  # soft placement (the default): runs on the CPU
        assert float(lk.constant(1.0) + 1.0) == 2.0
    lk.config.set_soft_device_placement(False)
    try:
        with pytest.raises(lk.errors.InvalidArgumentError, match="CPU only"):
            with lk.device("/GPU:0"):
                pass
    finally:
        lk.config.set_soft_device_placement(True)
    with pytest.raises(ValueError, match="cannot parse device name"):
        with lk.device("/banana:0"):
            pass
    with lk.device(lk.config.list_logical_devices()[0]):
        pass


def test_shape_errors_are_invalid_argument_errors_as_in_tensorflow():
    a, b = lk.ones((2, 3)), lk.ones((4, 5))
    for fn, match in ((lambda: a + lk.ones((4,)), "add: incompatible shapes"),
                      (lambda: lk.add(a, lk.ones((4,))), "add: incompatible shapes"),
                      (lambda: lk.matmul(a, b), "matmul: incompatible shapes"),
                      (lambda: lk.reshape(a, (4, 2)), "reshape: cannot reshape")):
        with pytest.raises(lk.errors.InvalidArgumentError, match=match) as info:
            fn()
        assert isinstance(info.value, ValueError)  # what layerkit raised before
        assert info.value.error_code == lk.errors.INVALID_ARGUMENT


def test_tensors_report_the_cpu_device():
    with lk.device("/CPU:0"):
        t = lk.constant([1.0])
    assert t.device.endswith("device:CPU:0") and lk.Variable(1.0).device == t.device
    assert t.device == "/job:localhost/replica:0/task:0/device:CPU:0"


def test_run_functions_eagerly():
    calls = []

    @lk.function
    def f(x):
        calls.append(float(x) if lk.config.functions_run_eagerly() else None)
        return x * 2.0

    assert float(f(lk.constant(1.0))) == 2.0 and float(f(lk.constant(1.0))) == 2.0
    assert calls == [None]  # traced once, then the graph ran
    lk.config.run_functions_eagerly(True)
    try:
        assert lk.config.functions_run_eagerly()
        assert float(f(lk.constant(3.0))) == 6.0 and float(f(lk.constant(4.0))) == 8.0
        assert calls == [None, 3.0, 4.0]  # the Python function ran on every call
    finally:
        lk.config.run_functions_eagerly(False)
    assert float(f(lk.constant(5.0))) == 10.0 and calls == [None, 3.0, 4.0]


def test_experimental_run_functions_eagerly_is_the_same_switch():
    assert lk.config.experimental_run_functions_eagerly is lk.config.run_functions_eagerly


def test_tensor_shape_is_a_tuple_with_tensorshape_methods():
    x = lk.ones((2, 3, 4))
    s = x.shape
    assert isinstance(s, tuple) and s == (2, 3, 4) and repr(s) == "(2, 3, 4)"
    assert s.as_list() == [2, 3, 4] and s.rank == s.ndims == 3 and s.dims == [2, 3, 4]
    assert s[1:].as_list() == [3, 4] and s[0] == 2 and type(s[0]) is int
    assert s.num_elements() == 24 and s.is_fully_defined()
    assert s.is_compatible_with([None, 3, 4]) and not s.is_compatible_with([2, 3])
    assert s.merge_with([None, None, 4]).as_list() == [2, 3, 4]
    assert s.concatenate([5]).as_list() == [2, 3, 4, 5]
    assert s + (5,) == (2, 3, 4, 5) and x.get_shape() == s
    s.assert_has_rank(3)
    with pytest.raises(ValueError):
        s.assert_has_rank(2)
    assert lk.Variable([1.0, 2.0]).shape.as_list() == [2]
    assert lk.constant(1.0).shape.as_list() == [] and lk.constant(1.0).shape.rank == 0

    @lk.function
    def f(t):
        return lk.reshape(t, [t.shape.as_list()[0], -1])

    assert f(x).shape == (2, 12)


def test_variable_scatter_updates_and_assign_arguments():
    v = lk.Variable([1.0, 2.0, 3.0, 4.0])
    assert v.scatter_nd_update([[1], [3]], [9.0, 8.0]) is v
    v.scatter_nd_add([[0], [0]], [1.0, 1.0])  # repeated indices add up
    v.scatter_nd_sub([[2]], [0.5])
    np.testing.assert_array_equal(v.numpy(), [3.0, 9.0, 2.5, 8.0])
    assert v.assign([0.0, 0.0, 0.0, 0.0], read_value=False) is None
    assert v.assign_add([1.0, 1.0, 1.0, 1.0], use_locking=True) is v
    assert v.assign_sub([1.0, 1.0, 1.0, 1.0], read_value=False) is None
    np.testing.assert_array_equal(v.numpy(), [0.0, 0.0, 0.0, 0.0])
    w = lk.Variable(lk.zeros((2, 2)))

    @lk.function
    def f(i):
        w.scatter_nd_add([[0, 0]], lk.reshape(i, [1]))
        return w.read_value()

    f(lk.constant(1.0))
    np.testing.assert_array_equal(f(lk.constant(2.0)), [[3.0, 0.0], [0.0, 0.0]])
