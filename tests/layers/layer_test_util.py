"""Shared checks for layers: build, output shape, weights round trip, config round trip and
float64 gradient checks with respect to inputs and every trainable weight."""
from __future__ import annotations

import numpy as np

import layerkit as lk
from layerkit.autodiff.check import check_grads
from layerkit.layers import Layer


def _weight_slots(layer: Layer) -> list:
    """(owner, attribute) for every trainable weight, found among the layers' attributes."""
    owners = [layer] + layer.submodules
    slots = []
    for w in layer.trainable_weights:
        for owner in owners:
            attr = next((k for k, v in vars(owner).items() if v is w), None)
            if attr is not None:
                slots.append((owner, attr))
                break
        else:
            raise AssertionError(f"weight {w.name} is not an attribute of any layer")
    return slots


def check_layer_grads(layer: Layer, inputs: list, call_kwargs: dict | None = None,
                      order: int = 1, rtol: float = 1e-5, atol: float = 1e-6) -> None:
    """Gradient-check ``layer(*inputs)`` with respect to its float inputs and weights.

    The layer must have dtype float64. Weights are swapped for the checker's tensors by
    replacing the attributes that hold them during each call.
    """
    call_kwargs = call_kwargs or {}
    layer(*inputs, **call_kwargs)  # build
    slots = _weight_slots(layer)
    n = len(inputs)

    def f(*args):
        xs, ws = args[:n], args[n:]
        saved = [owner.__dict__[attr] for owner, attr in slots]
        for (owner, attr), w in zip(slots, ws):
            owner.__dict__[attr] = w
        try:
            return layer(*xs, **call_kwargs)
        finally:
            for (owner, attr), v in zip(slots, saved):
                owner.__dict__[attr] = v

    values = [np.asarray(x) for x in inputs] + [w.numpy() for w in layer.trainable_weights]
    # Every weight must be connected to the output, or the check would pass vacuously.
    tensors = [lk.constant(v) for v in values[n:]]
    with lk.GradientTape() as tape:
        tape.watch(tensors)
        out = f(*inputs, *tensors)
        total = sum(lk.reduce_sum(o) for o in (out if isinstance(out, (list, tuple)) else [out]))
    missing = [w.name for w, g in zip(layer.trainable_weights, tape.gradient(total, tensors))
               if g is None]
    assert not missing, f"no gradient reaches weights {missing}"
    check_grads(f, values, order=order, rtol=rtol, atol=atol)


def run_layer_test(cls, kwargs: dict, input_data, expected_output_shape: tuple | None = None,
                   expected_weight_shapes: list | None = None, call_kwargs: dict | None = None,
                   grad: bool = True, grad_order: int = 1):
    """Build ``cls(**kwargs)`` on ``input_data`` and check shapes, weights and config.

    Returns the float32 layer's output (a NumPy array).
    """
    call_kwargs = call_kwargs or {}
    layer = cls(**kwargs)
    out = layer(input_data, **call_kwargs)
    if expected_output_shape is not None:
        assert tuple(out.shape) == tuple(expected_output_shape)
    assert out.dtype == np.float32 or np.asarray(input_data).dtype.kind in "iu"
    if expected_weight_shapes is not None:
        assert [tuple(w.shape) for w in layer.weights] == [tuple(s) for s in expected_weight_shapes]
    # get/set weights round trip, and a clone from the config computes the same thing
    clone = cls.from_config(layer.get_config())
    assert clone.get_config() == {**layer.get_config(), "name": clone.name}
    clone(input_data, **call_kwargs)
    clone.set_weights(layer.get_weights())
    for a, b in zip(clone.get_weights(), layer.get_weights()):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(np.asarray(clone(input_data, **call_kwargs)),
                               np.asarray(layer(input_data, **call_kwargs)), rtol=1e-6)
    # symbolic call: shapes with a None batch dimension
    x = lk.layers.SymbolicTensor((None,) + tuple(np.shape(input_data))[1:],
                                 np.asarray(input_data).dtype)
    y = cls(**kwargs)(x)
    assert y.shape == (None,) + tuple(out.shape)[1:]
    if grad:
        layer64 = cls(**{**kwargs, "dtype": "float64"})
        data = np.asarray(input_data)
        data = data.astype(np.float64) if data.dtype.kind == "f" else data
        check_layer_grads(layer64, [data], call_kwargs, order=grad_order)
    return np.asarray(out)


def loss_and_grads_fn(layers: list):
    """``x -> [loss, *gradients]`` for ``loss = sum(stack(x) ** 2)`` through ``layers`` in
    turn, with the gradients of every trainable weight: compare it eagerly and compiled."""
    def loss_and_grads(x):
        with lk.GradientTape() as tape:
            h = x
            for layer in layers:
                h = layer(h)
            loss = lk.reduce_sum(h * h)
        weights = [w for layer in layers for w in layer.trainable_weights]
        return [loss] + tape.gradient(loss, weights)

    return loss_and_grads
