"""What a tape keeps: ``Op.reads`` declarations and the release of dead recordings.

Every declaration is checked against the gradient table: each rule runs with the values
it does not declare replaced by NaN-filled stand-ins (the tape's own), and the table's
first and second order checks must still pass. A wrong declaration fails here.
"""
import gc
import weakref

import numpy as np
import pytest

import layerkit as lk
from layerkit._core.op import Op, wrap
from layerkit.autodiff import tape as _tape
from tests.ops.test_grad_table import ROWS, _check_row, _row_id


def _all_records():
    return [o for o in gc.get_objects() if type(o) is Op and o.vjp is not None]


def _poison(t):
    """A new Tensor shaped and typed like ``t`` whose values are poison."""
    v = t._rv
    if isinstance(v, np.generic):
        v = np.asarray(v)
    if type(v) is not np.ndarray:
        return t  # a weak Python scalar: tapes keep those as they are
    return wrap(_tape._standin(v))


def _poisoning(vjp, reads):
    probe = Op("probe", None, reads=reads)

    def rule(g, ins, out, needs, *args, **attrs):
        ins = tuple(t if probe.reads_input(j) else _poison(t) for j, t in enumerate(ins))
        if "out" not in reads:
            out = tuple(_poison(o) for o in out) if isinstance(out, tuple) else _poison(out)
        return vjp(g, ins, out, needs, *args, **attrs)
    return rule


@pytest.fixture
def poisoned(monkeypatch):
    """Every record with a ``reads`` declaration sees poison for what it leaves out."""
    for op in _all_records():
        if op.reads is not None:
            monkeypatch.setattr(op, "vjp", _poisoning(op.vjp, op.reads))


def test_many_records_declare_what_they_read():
    declared = [op.name for op in _all_records() if op.reads is not None]
    assert len(declared) >= 60, declared


@pytest.mark.parametrize("row", ROWS, ids=[_row_id(r) for r in ROWS])
def test_rules_read_only_what_they_declare(row, poisoned):
    _check_row(row, row.get("order", 2))


@pytest.mark.parametrize("name,wrong", [("multiply", (0,)), ("exp", ()), ("tanh", ()),
                                        ("matmul", (1,)), ("divide", ("out",))])
def test_a_wrong_declaration_is_caught(name, wrong, monkeypatch):
    op = next(o for o in _all_records() if o.name == name)
    monkeypatch.setattr(op, "vjp", _poisoning(op.vjp, wrong))
    rows = [r for r in ROWS if r["name"] == name]
    assert rows
    for row in rows:
        with pytest.raises(AssertionError):
            _check_row(row, 1)


@pytest.fixture
def eager_release(monkeypatch):
    """Tapes look for dead recordings at every op and replace even tiny values."""
    monkeypatch.setattr(_tape, "_PRUNE_BYTES", 0)
    monkeypatch.setattr(_tape, "_NODE_BYTES", 1)
    monkeypatch.setattr(_tape, "_STANDIN_MIN_BYTES", 0)
    monkeypatch.setattr(_tape.GradientTape, "_left", 0)


@pytest.mark.parametrize("row", ROWS, ids=[_row_id(r) for r in ROWS])
def test_gradients_unchanged_when_released_at_every_op(row, eager_release):
    _check_row(row, row.get("order", 2))


def test_reads_entries_are_checked():
    with pytest.raises(ValueError, match="'bad'.*input positions"):
        Op("bad", lambda x: x, lambda g, ins, out, needs: (g,), reads=("y",))


# ---- release ------------------------------------------------------------------------
def test_a_loop_on_a_watched_tensor_keeps_only_the_live_result(eager_release):
    x = lk.constant(np.linspace(-1, 1, 64 * 64).reshape(64, 64))
    with lk.GradientTape() as tape:
        tape.watch(x)
        for _ in range(50):
            y = x * x + x
        # Live ops: the last y's two (and those of the y before, alive while the next
        # is computed); the tape looks again once as many bytes as are live were added.
        assert len(tape._nodes) <= 8
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), 2 * x.numpy() + 1)


def test_dropped_results_free_their_chain_and_values():
    x = lk.constant(np.linspace(0.1, 1, 4096))
    with lk.GradientTape(persistent=True) as tape:
        tape.watch(x)
        h = lk.sin(lk.exp(x) * 2.0)
        arr = weakref.ref(h._v)
        keep = lk.tanh(x)
        del h
        tape._prune()
        assert arr() is None  # h and its chain went; only tanh's op is left
        assert [n[0].name for n in tape._nodes] == ["tanh"]
    np.testing.assert_allclose(tape.gradient(keep, x).numpy(), 1 - np.tanh(x.numpy()) ** 2)


def test_dead_values_no_rule_reads_become_stand_ins():
    x = lk.constant(np.linspace(-1, 1, 4096))
    with lk.GradientTape(persistent=True) as tape:
        tape.watch(x)
        t = x * x          # read by nothing: exp reads only its output, add nothing
        u = t + 1.0
        y = lk.exp(u)
        refs = weakref.ref(t._v), weakref.ref(u._v)
        del t, u
        tape._prune()
        assert refs[0]() is None and refs[1]() is None
        kept = {id(o): o for n in tape._nodes for o in n[1] + n[2]}
        standins = [o for o in kept.values() if getattr(o._rv, "strides", None) == (0,)]
        assert len(standins) == 2 and all(np.isnan(o._rv).all() for o in standins)
    g = tape.gradient(y, x)
    xv = x.numpy()
    np.testing.assert_allclose(g.numpy(), np.exp(xv * xv + 1) * 2 * xv, rtol=1e-12)
    # a second gradient from the persistent tape, and a second order one
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), g.numpy())


def test_live_and_weakly_referenced_tensors_are_never_touched():
    x = lk.constant(np.linspace(-1, 1, 4096))
    with lk.GradientTape() as tape:
        tape.watch(x)
        t = x * 3.0
        w = x * 5.0
        wr = weakref.ref(w)
        y = lk.exp(t) + lk.exp(w)
        del w
        tape._prune()
        np.testing.assert_array_equal(t.numpy(), x.numpy() * 3.0)
        np.testing.assert_array_equal(wr()._v, x.numpy() * 5.0)
    g = tape.gradient(y, x)
    xv = x.numpy()
    np.testing.assert_allclose(g.numpy(), 3 * np.exp(3 * xv) + 5 * np.exp(5 * xv))


def test_nested_tapes_release_and_still_give_second_derivatives(eager_release):
    x = lk.constant(np.linspace(-1, 1, 256))
    with lk.GradientTape() as outer:
        outer.watch(x)
        with lk.GradientTape() as inner:
            inner.watch(x)
            for _ in range(5):
                y = lk.sin(x * x) + x
        dy = inner.gradient(y, x)
    d2 = outer.gradient(dy, x)
    xv = x.numpy()
    np.testing.assert_allclose(dy.numpy(), np.cos(xv * xv) * 2 * xv + 1)
    np.testing.assert_allclose(d2.numpy(),
                               -np.sin(xv * xv) * 4 * xv * xv + 2 * np.cos(xv * xv))


def test_variables_keep_the_values_ops_read_after_a_release(eager_release):
    v = lk.Variable(np.linspace(-1, 1, 256))
    with lk.GradientTape() as tape:
        y = lk.reduce_sum(lk.exp(v * 2.0))
    before = v.numpy()
    v.assign_add(np.ones(256))
    g = tape.gradient(y, v)
    np.testing.assert_allclose(g.numpy(), 2 * np.exp(2 * before))


def test_defop_declares_what_its_gradient_reads():
    from layerkit import extend
    softexp = extend.defop("softexp", np.exp, lambda g, ins, out: (g * out,), reads=("out",))
    wrong = extend.defop("softexp_wrong", np.exp, lambda g, ins, out: (g * lk.exp(ins[0]),),
                         reads=("out",))
    x = lk.constant(np.linspace(-1, 1, 4096))
    for op, ok in ((softexp, True), (wrong, False)):
        with lk.GradientTape() as tape:
            tape.watch(x)
            y = op(x * 2.0)  # x * 2.0: dead once recorded; only the op's output is read
            tape._prune()
        g = tape.gradient(y, x).numpy()
        if ok:
            np.testing.assert_allclose(g, 2 * np.exp(2 * x.numpy()))
        else:
            assert np.isnan(g).all()  # a wrong declaration is loud, never silently wrong


def test_an_interrupted_release_leaves_a_working_tape(monkeypatch):
    calls = []

    def weakrefs(t):
        calls.append(t)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return 0

    x = lk.constant(np.linspace(-1, 1, 256))
    with lk.GradientTape() as tape:
        tape.watch(x)
        ys = [lk.sin(x * float(k)) for k in range(1, 5)]
        del ys[1:3]
        monkeypatch.setattr(_tape, "_weakrefs", weakrefs)
        with pytest.raises(KeyboardInterrupt):
            tape._prune()
        monkeypatch.undo()
        assert all(n is not None and n[0] is not None for n in tape._nodes)
        y = ys[0] + ys[1]
    xv = x.numpy()
    np.testing.assert_allclose(tape.gradient(y, x).numpy(),
                               np.cos(xv) + 4 * np.cos(4 * xv))
