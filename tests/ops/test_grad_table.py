"""One table drives the gradient check of every differentiable op.

Each family module (rows_*.py) lists rows ``{"name", "fn", "args", "order"}``; this test
runs ``check_grads`` (float64 central differences, second order by default) on each, and
checks that every registered primitive with a gradient rule appears in the table.
"""
import importlib
import pkgutil

import numpy as np
import pytest

import layerkit.ops
from layerkit._core.op import Op
from layerkit.autodiff.check import check_grads
from tests.ops import rows_conv, rows_elementwise, rows_nn, rows_reduce_array_linalg, rows_rnn

ROWS = [
    *rows_elementwise.ROWS,
    *rows_reduce_array_linalg.ROWS,
    *rows_nn.ROWS,
    *rows_conv.ROWS,
    *rows_rnn.ROWS,
]


def _row_id(row):
    shapes = "x".join(str(np.shape(a)) for a in row["args"])
    return f"{row['name']}-{shapes}"


@pytest.mark.parametrize("row", ROWS, ids=[_row_id(r) for r in ROWS])
def test_gradient(row):
    with np.errstate(all="ignore"):
        check_grads(row["fn"], row["args"], order=row.get("order", 2),
                    rtol=row.get("rtol", 1e-5), atol=row.get("atol", 1e-6))


def _registered_differentiable_ops():
    ops = {}
    for info in pkgutil.iter_modules(layerkit.ops.__path__):
        mod = importlib.import_module(f"layerkit.ops.{info.name}")
        for value in vars(mod).values():
            if isinstance(value, Op) and value.vjp is not None:
                ops[value.name] = value
    return ops


def test_every_differentiable_primitive_is_in_the_table():
    covered = {row["name"] for row in ROWS}
    missing = sorted(set(_registered_differentiable_ops()) - covered)
    assert not missing, f"differentiable ops with no gradient-check row: {missing}"


def test_table_is_not_trivially_small():
    assert len(_registered_differentiable_ops()) >= 60
