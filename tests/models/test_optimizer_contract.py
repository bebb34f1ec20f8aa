"""Keras 3's optimizer contract: ``build`` + ``update_step`` in layerkit ops.

User optimizers written with public names only give the built-ins' numbers eagerly, in
custom loops, under ``lk.function``, in ``fit``, through checkpoints and ``.keras``
files; each built-in's fused NumPy kernel agrees with its own ``update_step``.
"""
import ast
import inspect
import textwrap
import warnings

import numpy as np
import pytest

import layerkit as lk
from layerkit import optimizers
from layerkit.autodiff.function import EagerFallbackWarning
from layerkit.checkpoint import Checkpoint

SHAPES = [(3, 4), (4,), (70000,), ()]  # small (grouped), bias, large (blocked), scalar


class UserMomentum(lk.optimizers.Optimizer):
    """SGD with (Nesterov) momentum, written as a user would (Keras 3 rule)."""

    def __init__(self, learning_rate=0.01, momentum=0.9, nesterov=False, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.momentum = momentum
        self.nesterov = nesterov

    def build(self, variables):
        if self.built:
            return
        super().build(variables)
        for v in variables:
            self.add_variable_from_reference(v, "momentum")

    def update_step(self, gradient, variable, learning_rate):
        m = self.get_slot(variable, "momentum")
        step = gradient * lk.cast(learning_rate, variable.dtype)
        self.assign(m, m * self.momentum - step)
        if self.nesterov:
            self.assign_add(variable, m * self.momentum - step)
        else:
            self.assign_add(variable, m)

    def get_config(self):
        config = super().get_config()
        config.update(momentum=self.momentum, nesterov=self.nesterov)
        return config


class UserAdam(lk.optimizers.Optimizer):
    """Adam (with AMSGrad) in lk ops; slots made with add_optimizer_variables."""

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7,
                 amsgrad=False, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta_1, self.beta_2 = beta_1, beta_2
        self.epsilon, self.amsgrad = epsilon, amsgrad

    def build(self, variables):
        if self.built:
            return
        super().build(variables)
        self.add_optimizer_variables(variables, ["m", "v"])
        if self.amsgrad:
            self.add_optimizer_variables(variables, "vhat")
        self.steps_seen = self.add_variable((), dtype="int64", name="steps_seen")

    def update_step(self, gradient, variable, learning_rate):
        t = lk.cast(self.iterations + 1, variable.dtype)
        lr = lk.cast(learning_rate, variable.dtype)
        alpha = lr * lk.sqrt(1.0 - self.beta_2 ** t) / (1.0 - self.beta_1 ** t)
        m, v = self.get_slot(variable, "m"), self.get_slot(variable, "v")
        self.assign_add(m, (gradient - m) * (1.0 - self.beta_1))
        self.assign_add(v, (lk.square(gradient) - v) * (1.0 - self.beta_2))
        if self.amsgrad:
            vhat = self.get_slot(variable, "vhat")
            self.assign(vhat, lk.maximum(vhat, v))
            v = vhat
        self.assign_sub(variable, m * alpha / (lk.sqrt(v) + self.epsilon))
        self.assign(self.steps_seen, self.iterations + 1)

    def get_config(self):
        config = super().get_config()
        config.update(beta_1=self.beta_1, beta_2=self.beta_2, epsilon=self.epsilon,
                      amsgrad=self.amsgrad)
        return config


PAIRS = [  # (user optimizer, the built-in it must match)
    (lambda: UserMomentum(0.05), lambda: optimizers.SGD(0.05, momentum=0.9)),
    (lambda: UserMomentum(0.05, momentum=0.5, nesterov=True, weight_decay=0.01),
     lambda: optimizers.SGD(0.05, momentum=0.5, nesterov=True, weight_decay=0.01)),
    (lambda: UserAdam(0.01), lambda: optimizers.Adam(0.01)),
    (lambda: UserAdam(0.01, beta_1=0.8, amsgrad=True, global_clipnorm=2.0),
     lambda: optimizers.Adam(0.01, beta_1=0.8, amsgrad=True, global_clipnorm=2.0)),
    (lambda: UserAdam(lk.optimizers.schedules.ExponentialDecay(0.02, 2, 0.5), clipnorm=1.0),
     lambda: optimizers.Adam(lk.optimizers.schedules.ExponentialDecay(0.02, 2, 0.5),
                             clipnorm=1.0)),
]
PAIR_IDS = ["momentum", "nesterov-decay", "adam", "amsgrad-globalclip", "adam-schedule-clip"]


def _init(seed=0, shapes=SHAPES):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s).astype(np.float32) for s in shapes]


def _grads(seed, steps, shapes=SHAPES):
    rng = np.random.default_rng(seed)
    return [[rng.standard_normal(s).astype(np.float32) for s in shapes] for _ in range(steps)]


def _run_eager(opt, init, grads_seq):
    variables = [lk.Variable(x) for x in init]
    for grads in grads_seq:
        opt.apply_gradients(zip([lk.constant(g) for g in grads], variables))
    return [v.numpy() for v in variables]


def _run_traced(opt, init, grads_seq):
    variables = [lk.Variable(x) for x in init]

    @lk.function
    def step(*grads):
        opt.apply(list(grads), variables)
        return opt.iterations + 0

    with warnings.catch_warnings():
        warnings.simplefilter("error", EagerFallbackWarning)
        counts = [int(step(*[lk.constant(g) for g in grads]).numpy()) for grads in grads_seq]
    assert counts == list(range(1, len(grads_seq) + 1)) and step.trace_count == 1
    return [v.numpy() for v in variables]


def _close(got, want):
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_user_optimizers_use_public_names_only():
    """Every attribute the test optimizers touch is public (dunders aside)."""
    for cls in (UserMomentum, UserAdam):
        tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
        private = [n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)
                   and n.attr.startswith("_") and not n.attr.startswith("__")]
        assert private == [], (cls.__name__, private)


@pytest.mark.parametrize("make_user,make_builtin", PAIRS, ids=PAIR_IDS)
def test_user_optimizer_matches_builtin_eagerly(make_user, make_builtin):
    init, grads_seq = _init(), _grads(1, 5)
    user = make_user()
    _close(_run_eager(user, init, grads_seq), _run_eager(make_builtin(), init, grads_seq))
    assert int(user.iterations.numpy()) == 5


@pytest.mark.parametrize("make_user,make_builtin", PAIRS, ids=PAIR_IDS)
def test_user_optimizer_matches_builtin_under_lk_function(make_user, make_builtin):
    init, grads_seq = _init(2), _grads(3, 4)
    user = make_user()
    traced = _run_traced(user, init, grads_seq)
    _close(traced, _run_eager(make_builtin(), init, grads_seq))
    # the traced step also matches the same optimizer run eagerly
    _close(traced, _run_eager(make_user(), init, grads_seq))
    if isinstance(user, UserAdam):   # a variable made by add_variable changed in the graph
        assert int(user.steps_seen.numpy()) == 4


def test_user_optimizer_in_a_custom_loop_with_minimize_and_tape():
    x = np.linspace(-1, 1, 12, dtype=np.float32).reshape(6, 2)
    y = x @ np.array([[2.0], [-1.0]], np.float32) + 0.5
    results = []
    for opt in (UserAdam(0.05), optimizers.Adam(0.05)):
        w = lk.Variable(np.zeros((2, 1), np.float32), name="w")
        b = lk.Variable(np.zeros(1, np.float32), name="b")

        def loss(w=w, b=b):
            return lk.reduce_mean(lk.square(x @ w + b - y))

        for i in range(6):
            if i % 2:
                opt.minimize(loss, [w, b])
            else:
                with lk.GradientTape() as tape:
                    value = loss()
                opt.apply(tape.gradient(value, [w, b]), [w, b])
        results.append([w.numpy(), b.numpy()])
    _close(*results)
    assert not np.allclose(results[0][0], 0.0)


def _model(seed=3):
    lk.random.set_seed(seed)
    return lk.Sequential([lk.Input((4,)), lk.layers.Dense(5, activation="tanh"),
                          lk.layers.Dense(2)])


def _data():
    rng = np.random.default_rng(11)
    return (rng.standard_normal((24, 4)).astype(np.float32),
            rng.standard_normal((24, 2)).astype(np.float32))


@pytest.mark.parametrize("run_eagerly", [False, True], ids=["graph", "eager"])
def test_user_optimizer_in_fit_matches_builtin(run_eagerly):
    x, y = _data()
    weights = []
    for opt in (UserAdam(0.01, amsgrad=True), optimizers.Adam(0.01, amsgrad=True)):
        model = _model()
        model.compile(opt, "mse", run_eagerly=run_eagerly)
        model.fit(x, y, batch_size=8, epochs=3, shuffle=False, verbose=0)
        assert int(opt.iterations.numpy()) == 9
        weights.append(model.get_weights())
    _close(*weights)


def test_user_optimizer_checkpoint_round_trip_and_deferred_restore(tmp_path):
    init, grads_seq = _init(4), _grads(5, 6)
    straight = _run_eager(UserAdam(0.01, amsgrad=True), init, grads_seq)

    variables = [lk.Variable(x) for x in init]
    opt = UserAdam(0.01, amsgrad=True)
    for grads in grads_seq[:3]:
        opt.apply_gradients(zip(grads, variables))
    names = set(Checkpoint(optimizer=opt)._checkpoint_children()["optimizer"]
                ._checkpoint_variables())
    assert {"iterations", "learning_rate", "m/0", "v/3", "vhat/2", "steps_seen"} <= names
    path = Checkpoint(optimizer=opt, vs=variables).write(tmp_path / "u")

    # restore into an optimizer that has no slots yet: they are filled at build
    fresh_vars = [lk.Variable(np.zeros_like(x)) for x in init]
    fresh = UserAdam(0.01, amsgrad=True)
    status = Checkpoint(optimizer=fresh, vs=fresh_vars).restore(path)
    assert int(fresh.iterations.numpy()) == 3
    for grads in grads_seq[3:]:
        fresh.apply_gradients(zip(grads, fresh_vars))
    status.assert_consumed()
    _close([v.numpy() for v in fresh_vars], straight)
    assert int(fresh.steps_seen.numpy()) == 6


def test_user_optimizer_keras_file_round_trip(tmp_path):
    x, y = _data()
    fit = dict(batch_size=8, shuffle=False, verbose=0)
    straight = _model()
    straight.compile(UserMomentum(0.05, nesterov=True), "mse")
    straight.fit(x, y, epochs=3, **fit)
    first = _model()
    first.compile(UserMomentum(0.05, nesterov=True), "mse")
    first.fit(x, y, epochs=1, **fit)
    path = first.save(tmp_path / "u.keras")
    with pytest.raises((TypeError, ValueError), match="UserMomentum"):
        lk.models.load_model(path)
    resumed = lk.models.load_model(path, custom_objects={"UserMomentum": UserMomentum})
    assert type(resumed.optimizer) is UserMomentum
    assert resumed.optimizer.get_config() == first.optimizer.get_config()
    for a, b in zip(resumed.optimizer.variables, first.optimizer.variables):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    resumed.fit(x, y, epochs=2, **fit)
    _close(resumed.get_weights(), straight.get_weights())


# ---- built-ins: fused kernels against their own update_step --------------------------------
BUILTINS = [
    (optimizers.SGD, {"learning_rate": 0.1}),
    (optimizers.SGD, {"learning_rate": 0.05, "momentum": 0.9}),
    (optimizers.SGD, {"learning_rate": 0.05, "momentum": 0.9, "nesterov": True}),
    (optimizers.Adam, {"learning_rate": 0.01}),
    (optimizers.Adam, {"learning_rate": 0.01, "amsgrad": True, "beta_1": 0.8}),
    (optimizers.AdamW, {"learning_rate": 0.01, "weight_decay": 0.1}),
    (optimizers.RMSprop, {"learning_rate": 0.01}),
    (optimizers.RMSprop, {"learning_rate": 0.01, "momentum": 0.5}),
    (optimizers.RMSprop, {"learning_rate": 0.01, "momentum": 0.5, "centered": True}),
    (optimizers.Adagrad, {"learning_rate": 0.1}),
    (optimizers.Adagrad, {"learning_rate": 0.1, "initial_accumulator_value": 0.5,
                          "clipvalue": 0.3, "weight_decay": 0.05}),
]
BUILTIN_IDS = [f"{c.__name__}-{i}" for i, (c, _) in enumerate(BUILTINS)]


def _reference(cls, cfg):
    opt = cls(**cfg)
    opt.use_fused_kernel = False
    return opt


@pytest.mark.parametrize("cls,cfg", BUILTINS, ids=BUILTIN_IDS)
def test_fused_kernel_matches_update_step(cls, cfg):
    init, grads_seq = _init(6), _grads(7, 5)
    fused, ref = cls(**cfg), _reference(cls, cfg)
    _close(_run_eager(fused, init, grads_seq), _run_eager(ref, init, grads_seq))
    assert fused._groups and not ref._groups   # the fast path grouped the small variables
    for a, b in zip(fused.variables, ref.variables):   # slots and counters too
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6)
    # and under lk.function
    _close(_run_traced(_reference(cls, cfg), init, grads_seq),
           _run_eager(cls(**cfg), init, grads_seq))


def test_reference_path_is_used_and_float64_exact():
    calls = []

    class Counting(optimizers.RMSprop):
        def update_step(self, gradient, variable, learning_rate):
            calls.append(variable.name)
            super().update_step(gradient, variable, learning_rate)

    init = [np.arange(3, dtype=np.float64), np.ones((), np.float64)]
    grads = [[np.full(3, 0.5), np.float64(2.0)]]
    a = _run_eager(Counting(0.1, centered=True), init, grads)
    assert calls == ["Variable", "Variable"]   # an overriding subclass takes update_step
    b = _run_eager(optimizers.RMSprop(0.1, centered=True), init, grads)
    for x, y in zip(a, b):
        assert x.dtype == np.float64
        np.testing.assert_allclose(x, y, rtol=1e-12)


def test_subclass_overriding_update_step_of_a_builtin_is_not_fused():
    class Halved(optimizers.SGD):
        def update_step(self, gradient, variable, learning_rate):
            super().update_step(gradient * 0.5, variable, learning_rate)

    assert optimizers.SGD._fused and optimizers.AdamW._fused and not Halved._fused
    assert not UserAdam._fused and not optimizers.Optimizer._fused
    v = lk.Variable([1.0])
    Halved(0.1).apply_gradients([(lk.constant([2.0]), v)])
    np.testing.assert_allclose(v.numpy(), [0.9])


def test_contract_errors():
    v = lk.Variable([1.0, 2.0], name="w")

    class NoStep(optimizers.Optimizer):
        pass

    with pytest.raises(NotImplementedError, match="NoStep must define update_step"):
        NoStep(0.1).apply_gradients([(lk.constant([1.0, 1.0]), v)])
    opt = UserMomentum()
    opt.apply_gradients([(lk.constant([1.0, 1.0]), v)])
    with pytest.raises(ValueError, match="unknown variable 'other'.*new optimizer"):
        opt.apply_gradients([(lk.constant([1.0]), lk.Variable([0.0], name="other"))])
    with pytest.raises(ValueError, match="'w' already has a slot named 'momentum'"):
        opt.add_variable_from_reference(v, "momentum")
    with pytest.raises(KeyError, match=r"no slot 'm' for variable 'w'; its slots are "
                                       r"\['momentum'\]"):
        opt.get_slot(v, "m")
    assert [x.name for x in opt.variables] == ["iteration", "learning_rate", "w_momentum"]
    extra = opt.add_variable((2,), initializer="ones", name="extra")
    again = opt.add_variable((2,), initializer=0.5, name="extra")
    assert extra.dtype == np.float32 and not extra.trainable
    np.testing.assert_array_equal(again.numpy(), [0.5, 0.5])
    assert opt.variables[-2:] == [extra, again]
