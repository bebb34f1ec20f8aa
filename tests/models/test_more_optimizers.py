"""Nadam, Adamax, Adadelta and Lion against Keras 3 trajectories (fixtures), and the
rest of the optimizer contract for them: lk.function, fit, checkpoints, configs."""
import json
from pathlib import Path

import numpy as np
import pytest

import layerkit as lk

DATA = json.loads((Path(__file__).parent.parent / "fixtures/keras/more_optimizers.json")
                  .read_text())
NAMES = ["nadam", "nadam_b", "adamax", "adadelta", "lion"]


def _make(name):
    case = DATA[name]
    return getattr(lk.optimizers, case["class"]).from_config(case["config"])


def _run(opt, steps, wrap=None):
    ws = [lk.Variable(np.float32(w)) for w in DATA["w0"]]
    apply = (lambda gs: opt.apply_gradients(zip(gs, ws))) if wrap is None else wrap(opt, ws)
    out = []
    for gs in DATA["grads"][:steps]:
        apply([lk.constant(np.float32(g)) for g in gs])
        out.append([w.numpy() for w in ws])
    return out


@pytest.mark.parametrize("name", NAMES)
def test_matches_keras_step_by_step(name):
    for got, want in zip(_run(_make(name), 5), DATA[name]["steps"]):
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=2e-5, atol=2e-6)


@pytest.mark.parametrize("name", NAMES)
def test_same_numbers_under_lk_function(name):
    def wrap(opt, ws):
        step = lk.function(lambda g0, g1: opt.apply_gradients(zip([g0, g1], ws)))
        return lambda gs: step(*gs)
    for got, want in zip(_run(_make(name), 5, wrap), DATA[name]["steps"]):
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=2e-5, atol=2e-6)


@pytest.mark.parametrize("name", NAMES)
def test_checkpoint_resume_continues_exactly(name, tmp_path):
    opt = _make(name)
    ws = [lk.Variable(np.float32(w)) for w in DATA["w0"]]
    grads = [[lk.constant(np.float32(g)) for g in gs] for gs in DATA["grads"]]
    for gs in grads[:2]:
        opt.apply_gradients(zip(gs, ws))
    path = lk.Checkpoint(opt=opt, w0=ws[0], w1=ws[1]).save(str(tmp_path / "c"))
    opt2 = _make(name)
    ws2 = [lk.Variable(np.zeros_like(np.float32(w))) for w in DATA["w0"]]
    lk.Checkpoint(opt=opt2, w0=ws2[0], w1=ws2[1]).restore(path)
    for gs in grads[2:]:
        opt.apply_gradients(zip(gs, ws))
        opt2.apply_gradients(zip(gs, ws2))
    for a, b in zip(ws, ws2):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


@pytest.mark.parametrize("name", ["nadam", "adamax", "adadelta", "lion"])
def test_string_names_fit_and_legacy_spelling(name):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 3)).astype(np.float32)
    y = x @ np.float32([[1.0], [-2.0], [0.5]])
    m = lk.Sequential([lk.Input((3,)), lk.layers.Dense(1)])
    opt = lk.optimizers.get(name)
    opt.learning_rate = 1.0 if name == "adadelta" else 0.05
    m.compile(opt, "mse")
    h = m.fit(x, y, epochs=15, verbose=0).history["loss"]
    # (Adadelta's step sizes start tiny by design: it only has to make progress)
    assert h[-1] < (0.95 if name == "adadelta" else 0.5) * h[0]
    assert lk.optimizers.legacy.Adam is lk.optimizers.Adam
    assert lk.keras.optimizers.legacy.Nadam is lk.optimizers.Nadam


def test_lion_refuses_a_bad_beta_1():
    with pytest.raises(ValueError, match="beta_1"):
        lk.optimizers.Lion(beta_1=0.0)
