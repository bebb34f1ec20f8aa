"""AutoGraph converts functions defined in code compiled from a string (notebook cells,
cell runners) when linecache holds their source, as Jupyter registers it; without a
source they are traced as written."""
import linecache

import pytest

import layerkit as lk

CELL = '''
@lk.function
def clip_small(x):
    if lk.reduce_sum(x) <= 1:
        return x * x
    return x - 1
'''


def _run_cell(name, register):
    if register:
        linecache.cache[name] = (len(CELL), None, CELL.splitlines(True), name)
    ns = {"lk": lk}
    exec(compile(CELL, name, "exec"), ns)  # noqa: S102 - the test's own cell
    return ns["clip_small"]


def test_a_cell_with_its_source_in_linecache_is_converted():
    f = _run_cell("<cell test-autograph 1>", register=True)
    assert float(f(lk.constant(2.0))) == 1.0
    assert float(f(lk.constant(0.5))) == 0.25
    assert f.trace_count == 1


def test_without_a_source_it_is_traced_as_written():
    f = _run_cell("<cell test-autograph 2>", register=False)
    with pytest.raises(TypeError, match="traced tensor as a Python bool"):
        f(lk.constant(2.0))
