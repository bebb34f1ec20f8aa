"""Subtract, Multiply, Average, Maximum, Minimum, Dot, the functional forms, broadcasting
and masks of the merge layers, vs NumPy."""
import numpy as np
import pytest

import layerkit as lk
from layerkit.autodiff.check import check_grads
from layerkit.layers import (
    Add,
    Average,
    Concatenate,
    Dot,
    Maximum,
    Minimum,
    Multiply,
    Subtract,
    get_keras_mask,
    set_keras_mask,
)


def _check_merge_grads(layer, inputs):
    """Gradient check of ``layer(list_of_inputs)`` w.r.t. every input (float64)."""
    check_grads(lambda *xs: layer(list(xs)), [x.astype(np.float64) for x in inputs],
                order=1, rtol=1e-5, atol=1e-6)


def _x(*shape, seed=0):
    return np.random.default_rng(seed).normal(size=shape).astype(np.float32)


A, B, C = _x(3, 4), _x(3, 4, seed=1), _x(3, 4, seed=2)


@pytest.mark.parametrize("cls, ref", [
    (Subtract, lambda a, b, c: a - b),
    (Multiply, lambda a, b, c: a * b * c),
    (Average, lambda a, b, c: (a + b + c) / 3),
    (Maximum, lambda a, b, c: np.maximum(np.maximum(a, b), c)),
    (Minimum, lambda a, b, c: np.minimum(np.minimum(a, b), c)),
])
def test_elementwise_merges_match_numpy(cls, ref):
    inputs = [A, B] if cls is Subtract else [A, B, C]
    layer = cls()
    np.testing.assert_allclose(layer(inputs).numpy(), ref(A, B, C), rtol=1e-6)
    clone = cls.from_config(layer.get_config())
    np.testing.assert_allclose(clone(inputs).numpy(), ref(A, B, C), rtol=1e-6)
    _check_merge_grads(cls(dtype="float64"), inputs)
    sym = [lk.Input(shape=(4,)) for _ in inputs]
    assert cls()(sym).shape == (None, 4)


def test_functional_forms():
    np.testing.assert_allclose(lk.layers.add([A, B]).numpy(), A + B)
    np.testing.assert_allclose(lk.layers.subtract([A, B]).numpy(), A - B)
    np.testing.assert_allclose(lk.layers.multiply([A, B]).numpy(), A * B)
    np.testing.assert_allclose(lk.layers.average([A, B]).numpy(), (A + B) / 2)
    np.testing.assert_allclose(lk.layers.maximum([A, B]).numpy(), np.maximum(A, B))
    np.testing.assert_allclose(lk.layers.minimum([A, B]).numpy(), np.minimum(A, B))
    np.testing.assert_allclose(lk.layers.concatenate([A, B], axis=0).numpy(),
                               np.concatenate([A, B]))
    np.testing.assert_allclose(lk.layers.dot([A, B], axes=1).numpy(),
                               (A * B).sum(1, keepdims=True), rtol=1e-5)
    assert lk.layers.add([A, B], name="my_add") is not None
    inp = lk.Input(shape=(4,))
    model = lk.Model(inp, lk.layers.multiply([inp, lk.layers.Dense(4)(inp)]))
    assert model(A).shape == (3, 4)


def test_broadcasting_and_rank_expansion_as_keras():
    x3, col = _x(2, 3, 4), _x(2, 1, 4, seed=1)
    np.testing.assert_allclose(Add()([x3, col]).numpy(), x3 + col)
    vec = _x(2, 4, seed=2)  # lower rank: new axes after the batch axis
    np.testing.assert_allclose(Multiply()([x3, vec]).numpy(), x3 * vec[:, None])
    np.testing.assert_allclose(Maximum()([vec, x3]).numpy(), np.maximum(vec[:, None], x3))
    with pytest.raises(ValueError, match=r"Subtract.*\(2, 3, 4\), \(2, 5, 4\)"):
        Subtract()([x3, _x(2, 5, 4)])
    with pytest.raises(ValueError, match=r"batch size.*\(2, 3, 4\), \(3, 3, 4\)"):
        Add()([x3, _x(3, 3, 4)])
    with pytest.raises(ValueError, match="exactly 2 inputs"):
        Subtract()([A, B, C])
    with pytest.raises(ValueError, match="list of at least 2"):
        Subtract()([A])


def np_batch_dot(x, y, ax, ay):
    out = np.stack([np.tensordot(x[i], y[i], axes=(ax - 1, ay - 1)) for i in range(len(x))])
    return out.reshape(len(x), 1) if out.ndim == 1 else out


@pytest.mark.parametrize("sx, sy, axes", [
    ((3, 4), (3, 4), 1), ((3, 4), (3, 4), -1), ((2, 4, 5), (2, 3, 4), (1, 2)),
    ((2, 4, 5), (2, 3, 5), -1), ((2, 4), (2, 3, 4), (1, 2)), ((2, 3, 4), (2, 4), (2, 1)),
    ((2, 3, 2, 5), (2, 5, 3), (3, 1)),
])
def test_dot_matches_batched_tensordot(sx, sy, axes):
    x, y = _x(*sx), _x(*sy, seed=1)
    pair = axes if isinstance(axes, tuple) else (axes, axes)
    ax, ay = (a % len(s) for a, s in zip(pair, (sx, sy)))
    out = Dot(axes=axes)([x, y]).numpy()
    np.testing.assert_allclose(out, np_batch_dot(x, y, ax, ay), rtol=1e-5, atol=1e-6)
    _check_merge_grads(Dot(axes=axes, dtype="float64"), [x, y])


def test_dot_normalize_is_cosine_similarity():
    x, y = _x(3, 5), _x(3, 5, seed=1)
    out = Dot(axes=1, normalize=True)([x, y]).numpy()
    cos = (x * y).sum(1) / np.linalg.norm(x, axis=1) / np.linalg.norm(y, axis=1)
    np.testing.assert_allclose(out[:, 0], cos, rtol=1e-5)
    _check_merge_grads(Dot(axes=1, normalize=True, dtype="float64"), [x, y])
    layer = Dot(axes=[1, 2], normalize=True)
    assert Dot.from_config(layer.get_config()).axes == [1, 2]
    with pytest.raises(ValueError, match="cannot contract axis 1"):
        Dot(axes=1)([_x(2, 3), _x(2, 4)])
    with pytest.raises(ValueError, match="cannot contract axis 0"):
        Dot(axes=0)([x, y])
    with pytest.raises(ValueError, match="pair of ints"):
        Dot(axes=(1, 2, 3))


# ---- masks -------------------------------------------------------------------------------------
M1 = np.array([[True, True, False], [True, False, False]])
M2 = np.array([[True, False, False], [False, True, False]])


def _masked(x, mask):
    t = lk.constant(x)
    set_keras_mask(t, mask)
    return t


def test_merge_masks_are_the_or_of_input_masks():
    x, y = _x(2, 3, 4), _x(2, 3, 4, seed=1)
    for cls in (Add, Subtract, Average):
        out = cls()([_masked(x, M1), _masked(y, M2)])
        np.testing.assert_array_equal(get_keras_mask(out).numpy(), M1 | M2)
    # one unmasked input: no output mask
    assert get_keras_mask(Add()([_masked(x, M1), lk.constant(y)])) is None


def test_multiply_with_masks_matches_keras_rule():
    x, y = _x(2, 3, 4), _x(2, 3, 4, seed=1)
    out = Multiply()([_masked(x, M1), _masked(y, M2)])
    m1, m2 = M1[..., None], M2[..., None]
    ref = np.where(m1 | m2, np.where(m1, x, 1) * np.where(m2, y, 1), 0)
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-6)
    np.testing.assert_array_equal(get_keras_mask(out).numpy(), M1 | M2)
    # a mask on one input only: its masked entries count as 1, nothing is zeroed
    out = Multiply()([_masked(x, M1), lk.constant(y)])
    np.testing.assert_allclose(out.numpy(), np.where(m1, x, 1) * y, rtol=1e-6)


def test_maximum_with_masks_takes_the_unmasked_value():
    x, y = _x(2, 3, 4), _x(2, 3, 4, seed=1)
    out = Maximum()([_masked(x, M1), _masked(y, M2)])
    m1, m2 = M1[..., None], M2[..., None]
    a = x
    b = np.where(m2, y, a)
    a = np.where(m1, a, b)
    np.testing.assert_allclose(out.numpy(), np.maximum(a, b), rtol=1e-6)
    np.testing.assert_array_equal(get_keras_mask(out).numpy(), M1 | M2)
    # a mask on the first input only: its masked entries take the other input's value
    out = Minimum()([_masked(x, M1), lk.constant(y)])
    np.testing.assert_allclose(out.numpy(), np.minimum(np.where(m1, x, y), y), rtol=1e-6)
    assert get_keras_mask(out) is None


def test_concatenate_and_dot_masks():
    x, y = _x(2, 3, 4), _x(2, 3, 2, seed=1)
    out = Concatenate()([_masked(x, M1), lk.constant(y)])
    np.testing.assert_array_equal(get_keras_mask(out).numpy(), np.ones((2, 3), bool))
    out = Concatenate(axis=1)([_masked(x, M1), _masked(_x(2, 3, 4), M2)])
    np.testing.assert_array_equal(get_keras_mask(out).numpy(), np.concatenate([M1, M2], 1))
    d = Dot(axes=2)([_masked(x, M1), _masked(_x(2, 3, 4, seed=3), M2)])
    assert get_keras_mask(d) is None


def test_merges_train_in_a_functional_model_and_trace():
    a_in, b_in = lk.Input(shape=(4,)), lk.Input(shape=(4,))
    a, b = lk.layers.Dense(4)(a_in), lk.layers.Dense(4)(b_in)
    merged = lk.layers.concatenate([Subtract()([a, b]), Multiply()([a, b]), Average()([a, b]),
                                    Maximum()([a, b]), Minimum()([a, b]),
                                    Dot(axes=1, normalize=True)([a, b])])
    model = lk.Model([a_in, b_in], lk.layers.Dense(1)(merged))
    model.compile(lk.optimizers.Adam(0.01), "mse")
    x, y = [_x(32, 4), _x(32, 4, seed=1)], _x(32, 1, seed=2)
    before = model.evaluate(x, y, verbose=0)
    model.fit(x, y, epochs=10, batch_size=8, verbose=0)
    assert model.evaluate(x, y, verbose=0) < before
    traced = lk.function(lambda p, q: model([p, q]))
    np.testing.assert_allclose(traced(*x).numpy(), model(x).numpy(), rtol=1e-5)
