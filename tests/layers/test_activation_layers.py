"""ReLU, LeakyReLU, PReLU, ELU, Softmax (Keras 3 layers) vs NumPy."""
import numpy as np
import pytest

import layerkit as lk
from layerkit.layers import ELU, LeakyReLU, PReLU, ReLU, Softmax

from .layer_test_util import check_layer_grads, run_layer_test


def _x(*shape, seed=0, scale=2.0):
    return (np.random.default_rng(seed).normal(size=shape) * scale).astype(np.float32)


def np_relu(x, negative_slope=0.0, max_value=None, threshold=0.0):
    """Keras 3's definition, written out: min(x, max) above the threshold,
    negative_slope * (x - threshold) below it."""
    above = np.where(x > threshold, x, 0.0)
    if max_value is not None:
        above = np.minimum(above, max_value)
    return np.where(x > threshold, above, negative_slope * (x - threshold)).astype(x.dtype)


@pytest.mark.parametrize("kwargs", [{}, {"max_value": 1.0}, {"negative_slope": 0.2},
                                    {"threshold": 0.5}, {"max_value": 6.0},
                                    {"negative_slope": 0.1, "threshold": 0.5, "max_value": 1.5}])
def test_relu_options_match_numpy(kwargs):
    x = _x(4, 5)
    y = run_layer_test(ReLU, kwargs, x, (4, 5), [])
    np.testing.assert_allclose(y, np_relu(x, **kwargs), rtol=1e-6, atol=1e-7)


def test_relu_defaults_and_errors():
    layer = ReLU()
    assert (layer.max_value, layer.negative_slope, layer.threshold) == (None, 0.0, 0.0)
    assert layer.name.startswith("re_lu")
    for bad in ({"max_value": -1.0}, {"negative_slope": -0.1}, {"threshold": None},
                {"negative_slope": None}):
        with pytest.raises(ValueError, match="non-negative"):
            ReLU(**bad)


def test_leaky_relu_keras3_default_and_alias():
    x = _x(3, 4)
    layer = LeakyReLU()
    assert layer.negative_slope == 0.3 and layer.name.startswith("leaky_re_lu")
    y = run_layer_test(LeakyReLU, {}, x, (3, 4), [])
    np.testing.assert_allclose(y, np.where(x >= 0, x, 0.3 * x), rtol=1e-6)
    assert LeakyReLU(alpha=0.1).negative_slope == 0.1  # Keras 2 name
    with pytest.raises(ValueError, match="negative_slope"):
        LeakyReLU(-0.5)


def test_prelu_weights_values_and_shared_axes():
    x = _x(2, 3, 4, 5)
    y = run_layer_test(PReLU, {"alpha_initializer": "random_normal"}, x, (2, 3, 4, 5),
                       [(3, 4, 5)])
    assert not np.allclose(y, np.maximum(x, 0))  # the random slopes act on negatives
    assert PReLU().alpha_initializer.__class__.__name__ == "Zeros"
    layer = PReLU(shared_axes=[1, 2])
    layer(x)
    assert [w.name for w in layer.weights] == ["alpha"] and layer.alpha.shape == (1, 1, 5)
    alpha = np.linspace(-0.5, 0.5, 5).astype(np.float32).reshape(1, 1, 5)
    layer.set_weights([alpha])
    np.testing.assert_allclose(layer(x).numpy(), np.where(x > 0, x, alpha * x), rtol=1e-6)
    assert layer.get_config()["shared_axes"] == [1, 2]
    with pytest.raises(ValueError, match=r"axis 3 .* value 5"):
        layer(_x(2, 3, 4, 6))  # another channel count: the input spec names it
    with pytest.raises(ValueError, match="shared_axes"):
        PReLU(shared_axes=4)(x)
    check_layer_grads(PReLU(alpha_initializer="random_normal", shared_axes=2,
                            dtype="float64"), [x.astype(np.float64)])


def test_elu_alpha():
    x = _x(3, 4)
    y = run_layer_test(ELU, {"alpha": 0.7}, x, (3, 4), [])
    np.testing.assert_allclose(y, np.where(x > 0, x, 0.7 * np.expm1(x)), rtol=1e-6)
    assert ELU.from_config(ELU(alpha=0.7).get_config()).alpha == 0.7


def np_softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


@pytest.mark.parametrize("axis", [-1, 1, [1, 2]])
def test_softmax_axes(axis):
    x = _x(2, 3, 4)
    y = run_layer_test(Softmax, {"axis": axis}, x, (2, 3, 4), [])
    np.testing.assert_allclose(y, np_softmax(x, tuple(axis) if isinstance(axis, list) else axis),
                               rtol=1e-5, atol=1e-7)


def test_softmax_mask_excludes_positions_and_zeroes_them():
    x = _x(2, 3, 4)
    mask = np.random.default_rng(1).random((2, 3, 4)) > 0.4
    mask[0, 1] = False  # a row masked entirely gives zeros (Keras 3)
    y = Softmax()(x, mask=mask).numpy()
    e = np.where(mask, np.exp(x - x.max(-1, keepdims=True)), 0.0)
    ref = np.divide(e, e.sum(-1, keepdims=True), out=np.zeros_like(e),
                    where=e.sum(-1, keepdims=True) > 0)
    np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-7)
    assert np.all(y[0, 1] == 0)
    # a float mask counts as > 0.5; a broadcastable (batch, 1, n) mask applies to each row
    y2 = Softmax()(x, mask=mask[:, :1].astype(np.float32)).numpy()
    ref2 = Softmax()(x, mask=np.broadcast_to(mask[:, :1], x.shape)).numpy()
    np.testing.assert_allclose(y2, ref2, rtol=1e-6)
    check_layer_grads(Softmax(dtype="float64"), [x.astype(np.float64)], {"mask": mask})


def test_softmax_rejects_a_sequence_mask_like_keras():
    # A (batch, time) Keras mask does not broadcast against (batch, time, classes) from
    # the right: Keras 3 raises, and so does layerkit (naming both shapes).
    with pytest.raises(ValueError, match=r"Softmax.*\(2, 3, 4\).*\(2, 3\)"):
        Softmax()(_x(2, 3, 4), mask=np.ones((2, 3), bool))


def test_activation_layers_pass_masks_and_train():
    ids = np.array([[1, 2, 0], [3, 0, 0]])
    emb = lk.layers.Embedding(4, 2, mask_zero=True)
    for layer in (ReLU(), LeakyReLU(), PReLU(), ELU()):
        y = layer(emb(ids))
        np.testing.assert_array_equal(lk.layers.get_keras_mask(y).numpy(), ids != 0)
    model = lk.Sequential([lk.Input(shape=(4,)), lk.layers.Dense(8), PReLU(), ReLU(max_value=6.0),
                           lk.layers.Dense(8), LeakyReLU(), ELU(), lk.layers.Dense(3),
                           Softmax()])
    model.compile("adam", "sparse_categorical_crossentropy")
    x, y = _x(32, 4), np.random.default_rng(2).integers(0, 3, 32)
    hist = model.fit(x, y, epochs=8, batch_size=8, verbose=0)
    assert hist.history["loss"][-1] < hist.history["loss"][0]
    np.testing.assert_allclose(model.predict(x, verbose=0).sum(-1), 1.0, rtol=1e-5)
