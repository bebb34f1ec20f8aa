"""Optimizers against float64 transcriptions of Keras 3's update rules."""
import math
import warnings

import numpy as np
import pytest

import layerkit as lk
from layerkit import optimizers
from layerkit.autodiff.function import EagerFallbackWarning
from layerkit.checkpoint import trackable
from layerkit.optimizers import schedules

SHAPES = [(3, 4), (4,), (70000,), ()]  # small, bias, large (blocked), scalar


def _grads(seed, steps):
    rng = np.random.default_rng(seed)
    return [[rng.standard_normal(s) for s in SHAPES] for _ in range(steps)]


def _init(seed=0):
    rng = np.random.default_rng(seed + 100)
    return [rng.standard_normal(s) for s in SHAPES]


def _reference(kind, cfg, grads_seq, init):
    """Keras 3 formulas in float64 (lr may be a function of the 0-based step)."""
    v = [x.copy() for x in init]
    st = [dict() for _ in v]
    # Like Keras, a float learning rate lives in a float32 variable.
    lr_of = cfg.get("lr_fn", lambda t: float(np.float32(cfg["learning_rate"])))
    for t, grads in enumerate(grads_seq):
        lr = lr_of(t)
        if cfg.get("clipnorm"):
            c = cfg["clipnorm"]
            grads = [g * c / max(np.linalg.norm(g), c) for g in grads]
        if cfg.get("global_clipnorm"):
            c = cfg["global_clipnorm"]
            n = math.sqrt(sum(float(np.sum(g * g)) for g in grads))
            grads = [g * min(1.0, c / n) for g in grads]
        if cfg.get("clipvalue"):
            c = cfg["clipvalue"]
            grads = [np.clip(g, -c, c) for g in grads]
        for i, g in enumerate(grads):
            s = st[i]
            if cfg.get("weight_decay"):
                v[i] = v[i] - v[i] * cfg["weight_decay"] * lr
            if kind == "sgd":
                mom = cfg.get("momentum", 0.0)
                if mom:
                    m = s.get("m", np.zeros_like(g))
                    m = m * mom - g * lr
                    s["m"] = m
                    v[i] = v[i] + (m * mom - g * lr if cfg.get("nesterov") else m)
                else:
                    v[i] = v[i] - g * lr
            elif kind in ("adam", "adamw"):
                b1, b2 = cfg.get("beta_1", 0.9), cfg.get("beta_2", 0.999)
                eps = cfg.get("epsilon", 1e-7)
                m = s.get("m", np.zeros_like(g))
                u = s.get("v", np.zeros_like(g))
                m = m + (g - m) * (1 - b1)
                u = u + (g * g - u) * (1 - b2)
                s["m"], s["v"] = m, u
                if cfg.get("amsgrad"):
                    s["vh"] = np.maximum(s.get("vh", np.zeros_like(g)), u)
                    u = s["vh"]
                alpha = lr * math.sqrt(1 - b2 ** (t + 1)) / (1 - b1 ** (t + 1))
                v[i] = v[i] - m * alpha / (np.sqrt(u) + eps)
            elif kind == "rmsprop":
                rho, mom = cfg.get("rho", 0.9), cfg.get("momentum", 0.0)
                eps = cfg.get("epsilon", 1e-7)
                vel = s.get("vel", np.zeros_like(g))
                vel = rho * vel + (1 - rho) * g * g
                s["vel"] = vel
                if cfg.get("centered"):
                    ag = s.get("ag", np.zeros_like(g))
                    ag = rho * ag + (1 - rho) * g
                    s["ag"] = ag
                    denom = vel - ag * ag + eps
                else:
                    denom = vel + eps
                inc = lr * g / np.sqrt(denom)
                if mom > 0:
                    s["mo"] = mom * s.get("mo", np.zeros_like(g)) + inc
                    v[i] = v[i] - s["mo"]
                else:
                    v[i] = v[i] - inc
            elif kind == "adagrad":
                acc = s.get("acc", np.full_like(g, cfg.get("initial_accumulator_value", 0.1)))
                acc = acc + g * g
                s["acc"] = acc
                v[i] = v[i] - lr * g / np.sqrt(acc + cfg.get("epsilon", 1e-7))
    return v


CASES = [
    ("sgd", optimizers.SGD, {"learning_rate": 0.1}),
    ("sgd", optimizers.SGD, {"learning_rate": 0.05, "momentum": 0.9}),
    ("sgd", optimizers.SGD, {"learning_rate": 0.05, "momentum": 0.9, "nesterov": True}),
    ("adam", optimizers.Adam, {"learning_rate": 0.01}),
    ("adam", optimizers.Adam, {"learning_rate": 0.01, "amsgrad": True, "beta_1": 0.8}),
    ("adamw", optimizers.AdamW, {"learning_rate": 0.01, "weight_decay": 0.1}),
    ("rmsprop", optimizers.RMSprop, {"learning_rate": 0.01}),
    ("rmsprop", optimizers.RMSprop, {"learning_rate": 0.01, "momentum": 0.5, "centered": True}),
    ("adagrad", optimizers.Adagrad, {"learning_rate": 0.1}),
    ("sgd", optimizers.SGD, {"learning_rate": 0.1, "clipnorm": 1.0}),
    ("adam", optimizers.Adam, {"learning_rate": 0.01, "global_clipnorm": 2.0}),
    ("rmsprop", optimizers.RMSprop, {"learning_rate": 0.01, "clipvalue": 0.3}),
    ("sgd", optimizers.SGD, {"learning_rate": 0.1, "momentum": 0.5, "weight_decay": 0.01}),
]


@pytest.mark.parametrize("kind,cls,cfg", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_update_rules_match_keras_formulas(kind, cls, cfg):
    init = _init()
    grads_seq = _grads(1, 5)
    variables = [lk.Variable(x.astype(np.float32)) for x in init]
    opt = cls(**cfg)
    for grads in grads_seq:
        opt.apply_gradients(zip([lk.constant(g.astype(np.float32)) for g in grads], variables))
    ref = _reference(kind, cfg, grads_seq, init)
    for v, r in zip(variables, ref):
        np.testing.assert_allclose(v.numpy(), r, rtol=2e-4, atol=2e-5)
    assert int(opt.iterations.numpy()) == 5
    assert opt.iterations.dtype == np.int64 and not opt.iterations.trainable


@pytest.mark.parametrize("kind,cls,cfg", CASES[:9],
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES[:9])])
def test_float64_variables_are_exact(kind, cls, cfg):
    init = _init(3)
    grads_seq = _grads(4, 3)
    variables = [lk.Variable(x) for x in init]
    opt = cls(**cfg)
    for grads in grads_seq:
        opt.apply_gradients(zip(grads, variables))
    for v, r in zip(variables, _reference(kind, cfg, grads_seq, init)):
        assert v.dtype == np.float64
        np.testing.assert_allclose(v.numpy(), r, rtol=1e-12, atol=1e-13)


def test_keras_defaults_and_doc_example():
    assert optimizers.SGD().get_config()["learning_rate"] == pytest.approx(0.01)
    a = optimizers.Adam()
    assert (a.beta_1, a.beta_2, a.epsilon) == (0.9, 0.999, 1e-7)
    assert optimizers.AdamW().weight_decay == 0.004
    r = optimizers.RMSprop()
    assert (r.rho, r.momentum, r.epsilon, r.centered) == (0.9, 0.0, 1e-7, False)
    assert optimizers.Adagrad().initial_accumulator_value == 0.1
    # Keras's RMSprop docstring example: loss = var**2 / 2 from 10.0 -> 9.683772
    var = lk.Variable(10.0)
    optimizers.RMSprop(learning_rate=0.1).minimize(lambda: (var * var) / 2.0, [var])
    assert float(var.numpy()) == pytest.approx(9.683772, abs=1e-5)


def test_schedules_values():
    e = schedules.ExponentialDecay(0.1, decay_steps=10, decay_rate=0.5)
    assert e(0) == pytest.approx(0.1) and e(5) == pytest.approx(0.1 * 0.5 ** 0.5)
    s = schedules.ExponentialDecay(0.1, decay_steps=10, decay_rate=0.5, staircase=True)
    assert s(9) == pytest.approx(0.1) and s(10) == pytest.approx(0.05)
    c = schedules.CosineDecay(1.0, decay_steps=10, alpha=0.1)
    assert c(0) == pytest.approx(1.0)
    assert c(5) == pytest.approx(0.9 * 0.5 + 0.1)
    assert c(10) == pytest.approx(0.1) and c(50) == pytest.approx(0.1)
    w = schedules.CosineDecay(0.0, decay_steps=10, warmup_target=1.0, warmup_steps=4)
    assert w(2) == pytest.approx(0.5) and w(4) == pytest.approx(1.0)
    assert w(9) == pytest.approx(0.5)
    p = schedules.PiecewiseConstantDecay([2, 4], [1.0, 0.5, 0.1])
    assert [p(i) for i in range(6)] == [1.0, 1.0, 1.0, 0.5, 0.5, 0.1]
    assert p(lk.constant(3)) == 0.5
    with pytest.raises(ValueError, match="decay_steps"):
        schedules.ExponentialDecay(0.1, 0, 0.5)
    with pytest.raises(ValueError, match="boundaries"):
        schedules.PiecewiseConstantDecay([1, 2], [1.0])
    cfg = schedules.serialize(e)
    assert schedules.deserialize(cfg)(7) == pytest.approx(e(7))


def test_schedule_is_evaluated_at_iterations_before_increment():
    sched = schedules.PiecewiseConstantDecay([0, 1], [1.0, 0.1, 0.01])
    v = lk.Variable([0.0])
    opt = optimizers.SGD(learning_rate=sched)
    for _ in range(3):
        opt.apply_gradients([(lk.constant([1.0]), v)])
    np.testing.assert_allclose(v.numpy(), [-(1.0 + 0.1 + 0.01)], rtol=1e-6)
    with pytest.raises(TypeError, match="LearningRateSchedule"):
        opt.learning_rate = 0.5
    # a float learning rate can be changed between steps (LearningRateScheduler does that)
    opt2 = optimizers.SGD(learning_rate=1.0)
    opt2.apply_gradients([(lk.constant([1.0]), v)])
    opt2.learning_rate = 0.5
    opt2.apply_gradients([(lk.constant([1.0]), v)])
    np.testing.assert_allclose(v.numpy(), [-1.11 - 1.5], rtol=1e-6)
    assert float(opt2.learning_rate.numpy()) == 0.5


def test_none_gradients_are_skipped_and_all_none_raises():
    a, b = lk.Variable([1.0, 2.0]), lk.Variable([3.0])
    opt = optimizers.SGD(learning_rate=1.0)
    with pytest.warns(UserWarning, match="gradients do not exist"):
        opt.apply_gradients([(lk.constant([1.0, 1.0]), a), (None, b)])
    np.testing.assert_allclose(a.numpy(), [0.0, 1.0])
    np.testing.assert_allclose(b.numpy(), [3.0])
    with pytest.raises(ValueError, match="no gradients"):
        opt.apply_gradients([(None, b)])


def test_grouped_variables_with_missing_gradient_and_reassignment():
    # Small variables share flat buffers; a missing gradient or an assign() must not
    # corrupt the others.
    rng = np.random.default_rng(0)
    init = [rng.standard_normal(s).astype(np.float32) for s in [(3,), (2, 2), (5,)]]
    vs = [lk.Variable(x) for x in init]
    ref = [lk.Variable(x) for x in init]
    opt = optimizers.Adam(0.1)
    opt.build(vs)
    assert len(opt._groups) == 1  # the three share flat buffers
    singles = [optimizers.Adam(0.1) for _ in ref]
    for step in range(4):
        gs = [rng.standard_normal(x.shape).astype(np.float32) for x in init]
        if step == 1:
            gs[1] = None
        if step == 2:
            vs[2].assign([9.0, 8.0, 7.0, 6.0, 5.0])
            ref[2].assign([9.0, 8.0, 7.0, 6.0, 5.0])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            opt.apply_gradients(zip(gs, vs))
        for g, r, o in zip(gs, ref, singles):
            if g is not None:
                o.apply_gradients([(g, r)])
            else:  # the shared step counter still advances for a skipped variable
                o.iterations.assign(o.iterations.numpy() + 1)
    for v, r in zip(vs, ref):
        np.testing.assert_allclose(v.numpy(), r.numpy(), rtol=1e-6)


def test_checkpoint_variables_names_and_deferred_slots():
    v0, v1 = lk.Variable(np.ones((2, 2), np.float32)), lk.Variable(np.ones(3, np.float32))
    opt = optimizers.Adam(0.01)
    trackable.defer(opt, "m/1", np.full(3, 0.5, np.float32))
    opt.apply_gradients([(np.ones((2, 2), np.float32), v0), (np.ones(3, np.float32), v1)])
    names = set(opt._checkpoint_variables())
    assert names == {"iterations", "learning_rate", "m/0", "v/0", "m/1", "v/1"}
    # the parked value was assigned at creation, then updated once: m += (g - m) * 0.1
    np.testing.assert_allclose(opt.get_slot(v1, "m").numpy(), 0.5 + 0.5 * 0.1, rtol=1e-6)
    np.testing.assert_allclose(opt.get_slot(v0, "m").numpy(), 0.1, rtol=1e-6)
    sgd = optimizers.SGD(momentum=0.0)
    sgd.apply_gradients([(np.ones(3, np.float32), v1)])
    assert set(sgd._checkpoint_variables()) == {"iterations", "learning_rate"}
    rms = optimizers.RMSprop(momentum=0.5, centered=True)
    rms.apply_gradients([(np.ones(3, np.float32), v1)])
    assert set(rms._checkpoint_variables()) == {"iterations", "learning_rate", "velocity/0",
                                                "momentum/0", "average_gradient/0"}


def test_configs_round_trip_and_names():
    for name, cls in [("sgd", optimizers.SGD), ("adam", optimizers.Adam),
                      ("adamw", optimizers.AdamW), ("rmsprop", optimizers.RMSprop),
                      ("adagrad", optimizers.Adagrad)]:
        opt = optimizers.get(name)
        assert type(opt) is cls
        assert type(optimizers.get(name.upper())) is cls
        clone = cls.from_config(opt.get_config())
        assert clone.get_config() == opt.get_config()
    sched = schedules.CosineDecay(0.1, 100)
    opt = optimizers.SGD(learning_rate=sched, momentum=0.9, nesterov=True, clipnorm=1.0)
    again = optimizers.deserialize(optimizers.serialize(opt))
    assert isinstance(again, optimizers.SGD) and again.nesterov and again.clipnorm == 1.0
    assert again._current_lr() == pytest.approx(0.1)
    with pytest.raises(ValueError, match="unknown optimizer 'adamx'.*adam"):
        optimizers.get("adamx")


def test_bad_arguments_raise():
    with pytest.raises(ValueError, match="only one of clipnorm"):
        optimizers.Adam(clipnorm=1.0, clipvalue=1.0)
    with pytest.raises(ValueError, match="momentum"):
        optimizers.SGD(momentum=1.5)
    with pytest.raises(ValueError, match="learning_rate"):
        optimizers.Adam(learning_rate="fast")
    with pytest.raises(ValueError, match="gradient shape"):
        optimizers.SGD().apply_gradients([(np.ones(2), lk.Variable([1.0, 2.0, 3.0]))])
    opt = optimizers.AdamW()
    opt.build([lk.Variable([1.0])])
    with pytest.raises(ValueError, match="before"):
        opt.exclude_from_weight_decay(var_names=["bias"])


def test_exclude_from_weight_decay():
    kernel = lk.Variable([1.0, 1.0], name="kernel")
    bias = lk.Variable([1.0, 1.0], name="bias")
    opt = optimizers.SGD(learning_rate=0.5, weight_decay=0.1)
    opt.exclude_from_weight_decay(var_names=["bias"])
    zero = np.zeros(2, np.float32)
    opt.apply_gradients([(zero, kernel), (zero, bias)])
    np.testing.assert_allclose(kernel.numpy(), [0.95, 0.95])
    np.testing.assert_allclose(bias.numpy(), [1.0, 1.0])


@pytest.mark.parametrize("kind,cls,cfg", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_updates_inside_lk_function_are_graph_nodes(kind, cls, cfg):
    """apply_gradients in a traced step: one stateful node that re-runs the kernels on
    every call (same values as eager steps, slots and iterations included)."""
    init = _init(5)
    grads_seq = _grads(6, 4)
    variables = [lk.Variable(x.astype(np.float32)) for x in init]
    opt = cls(**cfg)

    @lk.function
    def step(*grads):
        opt.apply_gradients(zip(grads, variables))
        return opt.iterations + 0          # read after the update: the new count

    with warnings.catch_warnings():
        warnings.simplefilter("error", EagerFallbackWarning)
        counts = [int(step(*[lk.constant(g.astype(np.float32)) for g in grads]).numpy())
                  for grads in grads_seq]
    assert counts == [1, 2, 3, 4] and step.trace_count == 1
    ref = _reference(kind, cfg, grads_seq, init)
    for v, r in zip(variables, ref):
        np.testing.assert_allclose(v.numpy(), r, rtol=2e-4, atol=2e-5)
    eager_vars = [lk.Variable(x.astype(np.float32)) for x in init]
    eager = cls(**cfg)
    for grads in grads_seq:
        eager.apply_gradients(zip([lk.constant(g.astype(np.float32)) for g in grads],
                                  eager_vars))
    for a, b in zip(variables, eager_vars):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    for a, b in zip(opt.variables, eager.variables):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_traced_update_checks_shapes_and_skips_none_gradients():
    a, b = lk.Variable(np.ones(3, np.float32)), lk.Variable(np.ones(2, np.float32))
    opt = optimizers.SGD(0.5)

    @lk.function
    def step(g):
        opt.apply_gradients([(g, a), (None, b)])

    with pytest.warns(UserWarning, match=r"gradients do not exist for variables \['Variable'\]"):
        step(lk.constant(np.ones(3, np.float32)))
    step(lk.constant(np.full(3, 2.0, np.float32)))
    np.testing.assert_allclose(a.numpy(), [-0.5] * 3)
    np.testing.assert_allclose(b.numpy(), [1.0, 1.0])

    @lk.function
    def bad(g):
        opt.apply_gradients([(g, a)])

    with pytest.raises(ValueError, match=r"gradient shape \(2,\) does not match the shape "
                                         r"\(3,\) of variable"):
        bad(lk.constant(np.ones(2, np.float32)))
