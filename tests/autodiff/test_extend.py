"""layerkit.extend.defop: a user-defined op works eagerly, on tapes to higher orders,
under lk.function, with attributes and several outputs, and bad definitions raise."""
import numpy as np
import pytest

import layerkit as lk
from layerkit import extend
from layerkit.autodiff.check import check_grads


def _softclip_gradient(g, inputs, output, limit):
    (x,) = inputs
    return (g * (1.0 - lk.square(output / limit)),)


softclip = extend.defop("softclip", lambda x, limit: limit * np.tanh(x / limit),
                        _softclip_gradient)


def test_forward_matches_numpy_and_attributes_reach_both_functions():
    x = np.linspace(-3, 3, 7).astype(np.float32)
    np.testing.assert_allclose(softclip(x, limit=2.0).numpy(), 2.0 * np.tanh(x / 2.0),
                               rtol=1e-6)
    assert softclip.__name__ == "softclip" and softclip.record.name == "softclip"


def test_gradients_to_third_order_match_finite_differences():
    x = np.linspace(-2, 2, 5)
    check_grads(lambda t: softclip(t, limit=1.5), [x], order=3)


def test_two_input_op_with_unbroadcast_gradients_and_a_none():
    def grad(g, inputs, output):
        a, b = inputs
        return (g * b, None)          # no gradient for b

    scaled = extend.defop("scaled", lambda a, b: a * b, grad)
    a, b = lk.constant([1.0, 2.0]), lk.constant([3.0, 4.0])
    with lk.GradientTape() as tape:
        tape.watch([a, b])
        y = lk.reduce_sum(scaled(a, b))
    ga, gb = tape.gradient(y, [a, b])
    np.testing.assert_allclose(ga.numpy(), [3.0, 4.0])
    assert gb is None


def test_several_outputs():
    def grad(g, inputs, outputs):
        gs, gc = g
        s, c = outputs
        return (gs * c - gc * s,)

    sincos = extend.defop("sincos", lambda x: (np.sin(x), np.cos(x)), grad, num_outputs=2)
    check_grads(lambda t: sincos(t)[0] * sincos(t)[1] + sincos(t)[1], [np.array([0.3, 1.1])],
                order=2)


def test_inside_lk_function_the_op_is_one_node_and_follows_new_inputs():
    calls = []

    def forward(x):
        calls.append(1)
        return x * 2.0

    double = extend.defop("double", forward, lambda g, ins, out: (g * 2.0,))
    f = lk.function(lambda x: double(x) + 1.0)
    f(lk.constant([1.0]))
    np.testing.assert_allclose(f(lk.constant([5.0])).numpy(), [11.0])
    assert f.trace_count == 1
    assert len(calls) == 2                 # traced once, then run by the graph


def test_non_differentiable_op_gives_no_gradient():
    parity = extend.defop("parity", lambda x: np.mod(x, 2))
    x = lk.constant([3.0])
    with lk.GradientTape() as tape:
        tape.watch(x)
        y = parity(x) * x
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), [1.0])  # only through `* x`


def test_bad_definitions_and_bad_gradients_raise():
    with pytest.raises(TypeError, match="forward must be callable"):
        extend.defop("f", 3)
    with pytest.raises(TypeError, match="name must be a non-empty string"):
        extend.defop("", np.sin)
    with pytest.raises(TypeError, match="num_outputs"):
        extend.defop("f", np.sin, num_outputs=0)
    wrong = extend.defop("wrong", np.sin, lambda g, ins, out: g)   # not a tuple
    x = lk.constant([1.0])
    with lk.GradientTape() as tape:
        tape.watch(x)
        y = wrong(x)
    with pytest.raises(TypeError, match="wrong: the gradient must return a tuple of 1"):
        tape.gradient(y, x)
