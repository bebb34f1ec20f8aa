"""AutoGraph loops and len() with the one-trace None dimensions of an input_signature:
loops run the run-time number of iterations; len() of a None dimension is refused in
converted code too (never the trace-time size)."""
import numpy as np
import pytest

import layerkit as lk


@lk.function(input_signature=[lk.TensorSpec([None, 2])])
def row_sum(x):
    total = lk.zeros([2])
    for row in x:
        total = total + row
    return total


@lk.function(input_signature=[lk.TensorSpec([None])])
def indexed_sum(x):
    s = lk.constant(0.0)
    for i in lk.range(lk.shape(x)[0]):
        s = s + x[i]
    return s


def test_for_over_a_none_dimension_runs_the_run_time_length():
    for n in (2, 3, 5, 1):
        x = np.arange(2 * n, dtype=np.float32).reshape(n, 2)
        np.testing.assert_allclose(row_sum(x), x.sum(0))
        v = np.arange(n, dtype=np.float32)
        assert float(indexed_sum(v)) == v.sum()
    assert row_sum.trace_count == 1 and indexed_sum.trace_count == 1


def test_len_of_a_none_dimension_in_converted_code_is_refused():
    @lk.function(input_signature=[lk.TensorSpec([None, 3])])
    def f(x):
        if lk.reduce_sum(x) > 0:  # (makes AutoGraph convert the function)
            x = x * 2.0
        return x * float(len(x))

    with pytest.raises(TypeError, match=r"len\(\).*lk.shape"):
        f(np.ones((2, 3), np.float32))
