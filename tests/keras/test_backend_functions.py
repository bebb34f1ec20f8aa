"""tf.keras 2's backend functions (``K.mean``, ``K.batch_dot``, ...) against NumPy, and
Keras's activation signatures."""
import numpy as np
import pytest

import layerkit as lk

K = lk.keras.backend
A = lk.keras.activations
rng = np.random.default_rng(0)
X = rng.normal(size=(3, 4)).astype(np.float32)


@pytest.mark.parametrize("name, ref", [
    ("mean", np.mean), ("sum", np.sum), ("max", np.max), ("min", np.min), ("std", np.std),
    ("var", np.var), ("prod", np.prod),
])
@pytest.mark.parametrize("axis, keepdims", [(None, False), (1, False), (0, True), (-1, True)])
def test_reductions(name, ref, axis, keepdims):
    got = getattr(K, name)(lk.constant(X), axis=axis, keepdims=keepdims)
    np.testing.assert_allclose(got, ref(X, axis=axis, keepdims=keepdims), rtol=1e-5, atol=1e-6)


def test_elementwise_and_shape_helpers():
    x = lk.constant(X)
    np.testing.assert_allclose(K.clip(x, -0.5, 0.5), np.clip(X, -0.5, 0.5))
    np.testing.assert_allclose(K.pow(K.abs(x), 3), np.abs(X) ** 3, rtol=1e-5)
    np.testing.assert_array_equal(K.argmax(x), X.argmax(-1))
    np.testing.assert_array_equal(K.argmin(x, axis=0), X.argmin(0))
    np.testing.assert_allclose(K.dot(x, lk.constant(X.T)), X @ X.T, rtol=1e-5)
    assert K.int_shape(x) == (3, 4) and K.ndim(x) == 2 and K.dtype(x) == "float32"
    assert K.count_params(x) == 12
    np.testing.assert_allclose(K.batch_flatten(lk.ones((2, 3, 4))), np.ones((2, 12)))
    assert K.flatten(x).shape == (12,)
    np.testing.assert_allclose(K.permute_dimensions(x, (1, 0)), X.T)
    np.testing.assert_allclose(K.repeat_elements(x, 2, axis=1), np.repeat(X, 2, axis=1))
    np.testing.assert_allclose(K.concatenate([x, x]), np.concatenate([X, X], -1))
    np.testing.assert_allclose(K.expand_dims(x).shape, (3, 4, 1))
    np.testing.assert_allclose(K.gather(x, [2, 0]), X[[2, 0]])
    np.testing.assert_allclose(K.switch(x > 0, x, -x), np.abs(X))
    np.testing.assert_allclose(K.switch(x > 0, lambda: x, lambda: 0.0 * x), np.maximum(X, 0))
    np.testing.assert_allclose(K.l2_normalize(x, axis=1),
                               X / np.linalg.norm(X, axis=1, keepdims=True), rtol=1e-5)
    np.testing.assert_allclose(K.logsumexp(x, axis=1),
                               np.log(np.exp(X).sum(1)), rtol=1e-5)
    np.testing.assert_allclose(K.bias_add(x, lk.constant([1.0, 2, 3, 4])), X + [1, 2, 3, 4])
    np.testing.assert_allclose(K.bias_add(lk.ones((1, 2, 3)), lk.constant([1.0, 2.0]),
                                          data_format="channels_first"),
                               np.ones((1, 2, 3)) + np.array([1.0, 2.0])[:, None])


@pytest.mark.parametrize("xs, ys, axes", [
    ((4, 3), (4, 3), None), ((4, 2, 3), (4, 3, 5), None), ((4, 2, 3), (4, 3), None),
    ((4, 3), (4, 3, 5), None), ((4, 3, 2), (4, 3, 5), (1, 1)),
])
def test_batch_dot_against_per_sample_numpy(xs, ys, axes):
    a = rng.normal(size=xs).astype(np.float32)
    b = rng.normal(size=ys).astype(np.float32)
    got = K.batch_dot(lk.constant(a), lk.constant(b), axes=axes).numpy()
    if len(xs) == 2 and len(ys) == 2:
        want = (a * b).sum(1, keepdims=True)
    else:
        ax = (len(xs) - 1, len(ys) - 1 if len(ys) == 2 else len(ys) - 2) if axes is None else axes
        want = np.stack([np.tensordot(a[i], b[i], axes=(ax[0] - 1, ax[1] - 1))
                         for i in range(xs[0])])
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_variables_values_and_random():
    v = K.variable([1.0, 2.0])
    assert isinstance(v, lk.Variable) and v.dtype == np.float32
    K.set_value(v, [3.0, 4.0])
    np.testing.assert_array_equal(K.get_value(v), [3.0, 4.0])
    K.batch_set_value([(v, [5.0, 6.0])])
    np.testing.assert_array_equal(K.batch_get_value([v])[0], [5.0, 6.0])
    assert K.zeros((2,)).numpy().tolist() == [0.0, 0.0] and isinstance(K.ones(2), lk.Variable)
    assert K.constant([1.0]).dtype == np.float32 and K.eval(K.constant(2.0)) == 2.0
    assert K.random_normal((1000,), seed=1).dtype == np.float32
    u = K.random_uniform((1000,), minval=2.0, maxval=3.0, seed=1).numpy()
    assert u.min() >= 2.0 and u.max() < 3.0
    assert K.learning_phase() == 0
    with pytest.raises(NotImplementedError, match="training=True"):
        K.set_learning_phase(1)


def test_crossentropies_are_elementwise_like_tf_keras_2():
    t = np.array([[1.0, 0.0]], np.float32)
    p = np.array([[0.8, 0.3]], np.float32)
    np.testing.assert_allclose(K.binary_crossentropy(lk.constant(t), lk.constant(p)),
                               -(t * np.log(p) + (1 - t) * np.log(1 - p)), rtol=1e-5)
    np.testing.assert_allclose(
        K.sparse_categorical_crossentropy(lk.constant([1]), lk.constant([[0.2, 0.8]])),
        [-np.log(0.8)], rtol=1e-5)


def test_keras_activation_signatures_and_layers_keep_the_fused_kernel():
    x = np.array([-3.0, -1.0, 1.0, 2.5, 9.0], np.float32)
    want = np.where(x > 2.0, np.minimum(x, 6.0), 0.1 * (x - 2.0))
    np.testing.assert_allclose(A.relu(lk.constant(x), negative_slope=0.1, threshold=2.0,
                                      max_value=6.0), want, rtol=1e-6)
    np.testing.assert_allclose(A.relu(lk.constant(x)), np.maximum(x, 0))
    np.testing.assert_allclose(A.leaky_relu(lk.constant(x), negative_slope=0.3),
                               np.where(x > 0, x, 0.3 * x), rtol=1e-6)
    np.testing.assert_allclose(A.elu(lk.constant(x), alpha=0.5),
                               np.where(x > 0, x, 0.5 * np.expm1(x)), rtol=1e-6)
    assert lk.layers.Dense(2, activation=A.relu).activation is lk.nn.relu
    assert A.serialize(A.relu) == "relu" and A.serialize(A.elu) == "elu"
