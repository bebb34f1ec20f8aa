"""lk.debugging: TensorFlow's run-time assertions, eagerly and inside lk.function."""
import numpy as np
import pytest

import layerkit as lk

D = lk.debugging


@pytest.mark.parametrize("fn, ok, bad", [
    (D.assert_equal, ([1, 2], [1, 2]), ([1, 2], [1, 3])),
    (D.assert_none_equal, ([1, 2], [3, 4]), ([1, 2], [3, 2])),
    (D.assert_less, ([1, 2], 3), ([1, 3], 3)),
    (D.assert_less_equal, ([1, 3], 3), ([1, 4], 3)),
    (D.assert_greater, ([4, 5], 3), ([3, 5], 3)),
    (D.assert_greater_equal, ([3, 5], 3), ([2, 5], 3)),
])
def test_comparisons_pass_and_fail_eagerly_and_in_graphs(fn, ok, bad):
    fn(*(lk.constant(v) for v in ok))
    with pytest.raises(lk.errors.InvalidArgumentError, match=fn.__name__):
        fn(*(lk.constant(v) for v in bad))
    with pytest.raises(ValueError):  # InvalidArgumentError is a ValueError
        fn(*bad)

    @lk.function
    def f(a, b):
        fn(a, b)
        return a + 0

    np.testing.assert_array_equal(f(lk.constant(ok[0]), lk.constant(ok[1])), ok[0])
    with pytest.raises(lk.errors.InvalidArgumentError, match=fn.__name__):
        f(lk.constant(bad[0]), lk.constant(bad[1]))  # same trace, checked on this call


def test_the_message_names_the_condition_count_and_values():
    with pytest.raises(lk.errors.InvalidArgumentError) as e:
        D.assert_less(lk.constant([1, 5, 7]), 3, message="x too big")
    text = str(e.value)
    assert "x < y did not hold for 2 of 3" in text and "x too big" in text
    assert "[1, 5, 7]" in text


def test_sign_assertions():
    D.assert_positive(lk.constant([1.0, 2.0]))
    D.assert_non_negative(lk.constant([0, 2]))
    D.assert_negative(lk.constant([-1.0]))
    D.assert_non_positive(lk.constant([0.0, -2.0]))
    for fn, v in [(D.assert_positive, [0.0]), (D.assert_non_negative, [-1]),
                  (D.assert_negative, [0.0]), (D.assert_non_positive, [1.0])]:
        with pytest.raises(lk.errors.InvalidArgumentError, match=fn.__name__):
            fn(lk.constant(v))


def test_assert_near_uses_tensorflow_default_tolerances():
    x = np.float32(1.0)
    D.assert_near(lk.constant(x), lk.constant(x + 5 * np.finfo(np.float32).eps))
    with pytest.raises(lk.errors.InvalidArgumentError, match="assert_near"):
        D.assert_near(lk.constant(x), lk.constant(x + 1e-3))
    D.assert_near(lk.constant(x), lk.constant(x + 1e-3), atol=1e-2)


def test_rank_and_shape_assertions():
    D.assert_rank(lk.ones((2, 3)), 2)
    D.assert_rank_at_least(lk.ones((2, 3)), 1)
    D.assert_rank_in(lk.ones((2, 3)), [1, 2])
    D.assert_scalar(lk.constant(1.0))
    for call in (lambda: D.assert_rank(lk.ones((2, 3)), 1),
                 lambda: D.assert_rank_at_least(lk.ones(2), 2),
                 lambda: D.assert_rank_in(lk.ones(2), [0, 2]),
                 lambda: D.assert_scalar(lk.ones(2))):
        with pytest.raises(ValueError, match="rank"):
            call()
    D.assert_shapes([(lk.ones((4, 3)), ("N", "D")), (lk.ones(4), ("N",)),
                     (lk.ones((5, 4, 3)), ("...", "N", 3)), (lk.constant(1.0), ())])
    with pytest.raises(ValueError, match="'N' is 4 in an earlier tensor but 5"):
        D.assert_shapes([(lk.ones((4, 3)), ("N", "D")), (lk.ones(5), ("N",))])
    with pytest.raises(ValueError, match="expected rank 1"):
        D.assert_shapes({lk.ones((2, 2)): ("N",)}.items())


def test_types():
    D.assert_type(lk.constant(1.0), lk.float32)
    with pytest.raises(TypeError, match="float64"):
        D.assert_type(lk.constant(1.0), lk.float64)
    D.assert_integer(lk.constant([1, 2]))
    with pytest.raises(TypeError, match="integer"):
        D.assert_integer(lk.constant([1.0]))
    assert D.is_numeric_tensor(lk.constant(1)) and not D.is_numeric_tensor(lk.constant(True))
    assert not D.is_numeric_tensor(np.ones(2))
    D.assert_proper_iterable([1, 2])
    with pytest.raises(TypeError):
        D.assert_proper_iterable(lk.ones(2))


def test_check_numerics_returns_its_input_and_catches_nan_and_inf_in_graphs():
    x = lk.constant([1.0, 2.0])
    assert D.check_numerics(x, "fine") is x

    @lk.function
    def f(a):
        return D.check_numerics(lk.math.log(a), "log went bad") * 2.0

    np.testing.assert_allclose(f(lk.constant([1.0, np.e])), [0.0, 2.0], rtol=1e-6)
    with np.errstate(all="ignore"), pytest.raises(lk.errors.InvalidArgumentError,
                                                  match="NaN.*\n.*log went bad"):
        f(lk.constant([-1.0, 1.0]))
    with np.errstate(all="ignore"), pytest.raises(lk.errors.InvalidArgumentError, match="Inf"):
        D.assert_all_finite(lk.constant([np.inf]), "inf")


def test_assert_op_and_top_level_aliases():
    lk.Assert(lk.constant(True), [lk.constant([1, 2])])
    with pytest.raises(lk.errors.InvalidArgumentError, match=r"data\[0\] = \[1, 2\]"):
        lk.Assert(lk.constant([True, False]), [lk.constant([1, 2])])
    assert lk.assert_equal is D.assert_equal and lk.assert_rank is D.assert_rank
    D.set_log_device_placement(True)
    D.enable_check_numerics()
    D.disable_check_numerics()
