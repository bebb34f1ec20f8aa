"""One table drives the gradient check of every differentiable op.

Each family module (rows_*.py) lists rows ``{"name", "fn", "args", "order"}``; this test
runs ``check_grads`` (float64 central differences, second order by default) on each,
checks that every registered primitive with a gradient rule appears in the table, and
checks that the rows can fail: for every record, some row must catch a deliberately
wrong rule (see ``MUTANTS``).
"""
import importlib
import pkgutil

import numpy as np
import pytest

import layerkit as lk
import layerkit.primitives
from layerkit._core.op import Op, wrap
from layerkit.autodiff.check import GradientCheckError, check_grads
from tests.ops import (
    rows_conv,
    rows_conv_nd,
    rows_elementwise,
    rows_nn,
    rows_reduce_array_linalg,
    rows_rnn,
    rows_tf_namespaces,
)

ROWS = [
    *rows_elementwise.ROWS,
    *rows_reduce_array_linalg.ROWS,
    *rows_nn.ROWS,
    *rows_conv.ROWS,
    *rows_conv_nd.ROWS,
    *rows_rnn.ROWS,
    *rows_tf_namespaces.ROWS,
]


def _row_id(row):
    shapes = "x".join(str(np.shape(a)) for a in row["args"])
    return f"{row['name']}-{shapes}"


def _check_row(row, order):
    with np.errstate(all="ignore"):
        check_grads(row["fn"], row["args"], order=order,
                    rtol=row.get("rtol", 1e-5), atol=row.get("atol", 1e-6))


@pytest.mark.parametrize("row", ROWS, ids=[_row_id(r) for r in ROWS])
def test_gradient(row):
    _check_row(row, row.get("order", 2))


def _registered_differentiable_ops():
    ops = {}
    for info in pkgutil.iter_modules(layerkit.primitives.__path__):
        mod = importlib.import_module(f"layerkit.primitives.{info.name}")
        for value in vars(mod).values():
            if isinstance(value, Op) and value.vjp is not None:
                ops[value.name] = value
    return ops


_RECORDS = _registered_differentiable_ops()


def test_every_differentiable_primitive_is_in_the_table():
    covered = {row["name"] for row in ROWS}
    missing = sorted(set(_RECORDS) - covered)
    assert not missing, f"differentiable ops with no gradient-check row: {missing}"


def test_every_row_names_a_record_or_a_public_composite():
    # A misspelt name would leave the row's record looking covered by nothing.
    public = ({n for n in dir(lk) if not n.startswith("_")} | set(lk.nn.__all__)
              | set(lk.math.__all__) | set(lk.linalg.__all__))
    unknown = sorted({row["name"] for row in ROWS} - set(_RECORDS) - public)
    assert not unknown, f"rows named after neither a record nor a public function: {unknown}"


def test_table_is_not_trivially_small():
    assert len(_RECORDS) >= 60


# ---- the rows can fail: deliberately wrong rules ------------------------------------------
def _scaled(vjp):
    """A rule off by 0.1%: the first-order check must catch it."""

    def rule(g, ins, y, needs, **attrs):
        return tuple(None if gi is None else lk.multiply(gi, 1.001)
                     for gi in vjp(g, ins, y, needs, **attrs))

    return rule


def _detached(vjp):
    """A rule that reads its upstream gradient as a constant: right at first order, wrong
    at second (its output no longer depends on ``g`` for an outer tape)."""

    def rule(g, ins, y, needs, **attrs):
        g = tuple(wrap(np.asarray(t._v)) for t in g) if isinstance(g, tuple) \
            else wrap(np.asarray(g._v))
        return vjp(g, ins, y, needs, **attrs)

    return rule


MUTANTS = {"scaled": (_scaled, 1), "detached": (_detached, 2)}  # name: (wrapper, check order)

# Piecewise-constant records: their correct gradient is identically zero, so 1.001 * 0 and
# a detached 0 are still exact and neither mutant can make a check fail. Their rows
# multiply by a smooth factor so a non-zero rule would show, and test_elementwise checks
# the zero gradients directly.
ZERO_GRADIENT = {"floor", "ceil", "round", "sign", "floordiv"}


def _catches(row, order):
    try:
        _check_row(row, order)
    except GradientCheckError:
        return True
    return False


@pytest.mark.parametrize("mutant", sorted(MUTANTS))
@pytest.mark.parametrize("name", sorted(_RECORDS))
def test_some_row_catches_a_wrong_rule(name, mutant, monkeypatch):
    wrong, order = MUTANTS[mutant]
    op = _RECORDS[name]
    # Cheapest rows first; the first that fails is enough.
    rows = sorted((r for r in ROWS if r["name"] == name and r.get("order", 2) >= order),
                  key=lambda r: sum(np.size(a) for a in r["args"]))
    monkeypatch.setattr(op, "vjp", wrong(op.vjp))
    caught = any(_catches(r, order) for r in rows)
    if name in ZERO_GRADIENT:
        assert not caught, f"a row of {name} catches the {mutant} rule: drop it from ZERO_GRADIENT"
    else:
        assert caught, f"no order-{order} row of record {name} catches the {mutant} rule"
