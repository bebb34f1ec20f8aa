"""InverseTimeDecay, PolynomialDecay and CosineDecayRestarts against Keras's formulas
written out by hand, plus config round trips and use by an optimizer."""
import math

import numpy as np
import pytest

import layerkit as lk

S = lk.optimizers.schedules


@pytest.mark.parametrize("step", [0, 1, 7, 10, 25, 99])
def test_inverse_time_decay(step):
    s = S.InverseTimeDecay(0.5, decay_steps=10, decay_rate=2.0)
    assert s(step) == pytest.approx(0.5 / (1 + 2.0 * step / 10))
    st = S.InverseTimeDecay(0.5, decay_steps=10, decay_rate=2.0, staircase=True)
    assert st(step) == pytest.approx(0.5 / (1 + 2.0 * (step // 10)))


@pytest.mark.parametrize("step", [0, 3, 10, 15, 20, 31])
def test_polynomial_decay(step):
    s = S.PolynomialDecay(1.0, decay_steps=10, end_learning_rate=0.1, power=2.0)
    p = min(step, 10)
    assert s(step) == pytest.approx(0.9 * (1 - p / 10) ** 2 + 0.1)
    c = S.PolynomialDecay(1.0, decay_steps=10, end_learning_rate=0.1, power=1.0, cycle=True)
    horizon = 10 * max(math.ceil(step / 10), 1)
    assert c(step) == pytest.approx(0.9 * (1 - step / horizon) + 0.1)


def test_cosine_decay_restarts_periods_grow_and_peaks_shrink():
    s = S.CosineDecayRestarts(1.0, first_decay_steps=10, t_mul=2.0, m_mul=0.5, alpha=0.1)

    def expect(step):
        # periods [0, 10), [10, 30), [30, 70): the i-th has length 10 * 2**i, peak 0.5**i
        start, length, i = 0, 10, 0
        while step >= start + length:
            start, length, i = start + length, length * 2, i + 1
        cosine = 0.5 * 0.5 ** i * (1 + math.cos(math.pi * (step - start) / length))
        return 0.9 * cosine + 0.1
    for step in [0, 5, 9, 10, 20, 29, 30, 50, 69, 70]:
        assert s(step) == pytest.approx(expect(step), rel=1e-6), step


@pytest.mark.parametrize("schedule", [
    S.InverseTimeDecay(0.1, 5, 0.5, staircase=True),
    S.PolynomialDecay(0.1, 5, end_learning_rate=0.01, power=0.5, cycle=True),
    S.CosineDecayRestarts(0.1, 5, t_mul=1.5, m_mul=0.9, alpha=0.01),
])
def test_configs_round_trip_and_an_optimizer_uses_them(schedule):
    again = S.deserialize(S.serialize(schedule))
    assert type(again) is type(schedule) and again.get_config() == schedule.get_config()
    assert [again(i) for i in range(12)] == [schedule(i) for i in range(12)]
    v = lk.Variable([0.0])
    opt = lk.optimizers.SGD(learning_rate=schedule)
    for _ in range(3):
        opt.apply_gradients([(np.ones(1, np.float32), v)])
    expected = -sum(schedule(i) for i in range(3))
    np.testing.assert_allclose(v.numpy(), [expected], rtol=1e-6)


def test_bad_decay_steps_are_refused():
    for make in (lambda: S.InverseTimeDecay(0.1, 0, 1.0), lambda: S.PolynomialDecay(0.1, -1),
                 lambda: S.CosineDecayRestarts(0.1, 0)):
        with pytest.raises(ValueError, match="decay_steps must be > 0"):
            make()
