"""lk.utils.to_categorical, normalize, pad_sequences and set_random_seed, against Keras 3's
documented examples and hand-computed values."""
import random

import numpy as np
import pytest

import layerkit as lk
from layerkit.autodiff.check import check_grads


# ---- to_categorical ------------------------------------------------------------------------
def test_to_categorical_keras_examples():
    # Keras's docstring: a = to_categorical([0, 1, 2, 3], num_classes=4) is the identity
    a = lk.utils.to_categorical([0, 1, 2, 3], num_classes=4)
    np.testing.assert_array_equal(a, np.eye(4))
    assert a.dtype == np.float64 and isinstance(a, np.ndarray)
    # a trailing axis of 1 is dropped; num_classes defaults to max + 1
    b = lk.utils.to_categorical(np.array([[2], [0]]))
    np.testing.assert_array_equal(b, [[0, 0, 1], [1, 0, 0]])
    c = lk.utils.to_categorical(np.array([[1, 0], [2, 2]]), 3)
    assert c.shape == (2, 2, 3) and c[1, 0].tolist() == [0, 0, 1]
    np.testing.assert_array_equal(lk.utils.to_categorical([1.0, 0.0]), [[0, 1], [1, 0]])


def test_to_categorical_tensors():
    t = lk.utils.to_categorical(lk.constant([[2], [0]]), num_classes=4)
    assert isinstance(t, lk.Tensor) and t.dtype == np.float32 and t.shape == (2, 4)
    np.testing.assert_array_equal(t.numpy(), [[0, 0, 1, 0], [1, 0, 0, 0]])
    u = lk.utils.to_categorical(lk.constant([1, 2]))      # num_classes from the values
    np.testing.assert_array_equal(u.numpy(), [[0, 1, 0], [0, 0, 1]])
    # with num_classes, no value is read: an index out of range is a row of zeros (one_hot)
    np.testing.assert_array_equal(lk.utils.to_categorical(lk.constant([5]), 3).numpy(),
                                  [[0, 0, 0]])


def test_to_categorical_errors():
    with pytest.raises(ValueError, match=r"in \[0, 3\).*\[-1\]"):
        lk.utils.to_categorical([0, -1], 3)
    with pytest.raises(ValueError, match=r"\[3\]"):
        lk.utils.to_categorical([0, 3], num_classes=3)
    with pytest.raises(ValueError, match="whole numbers.*1.5"):
        lk.utils.to_categorical([0, 1.5])
    with pytest.raises(TypeError, match="integers"):
        lk.utils.to_categorical(["a"])


# ---- normalize ---------------------------------------------------------------------------
def test_normalize_values_axes_and_orders():
    x = np.array([[3.0, 4.0], [0.0, 0.0], [1.0, -1.0]])
    np.testing.assert_allclose(lk.utils.normalize(x),
                               [[0.6, 0.8], [0, 0], [2 ** -0.5, -(2 ** -0.5)]])
    np.testing.assert_allclose(lk.utils.normalize(x, axis=0),
                               x / np.array([10 ** 0.5, 17 ** 0.5]))
    np.testing.assert_allclose(lk.utils.normalize(x, order=1),
                               [[3 / 7, 4 / 7], [0, 0], [0.5, -0.5]])
    np.testing.assert_allclose(lk.utils.normalize(np.array([1, 2, 2])), [1 / 3, 2 / 3, 2 / 3])
    t = lk.utils.normalize(lk.constant(x.astype(np.float32)))
    assert isinstance(t, lk.Tensor)
    np.testing.assert_allclose(t.numpy(), lk.utils.normalize(x), rtol=1e-6)
    t1 = lk.utils.normalize(lk.constant(x), axis=0, order=1)
    np.testing.assert_allclose(t1.numpy(), x / np.abs(x).sum(0))


def test_normalize_tensor_gradients():
    x = np.array([[0.3, -1.2, 0.5], [2.0, 0.1, -0.7]])
    check_grads(lambda t: lk.utils.normalize(t), [x])
    check_grads(lambda t: lk.utils.normalize(t, axis=0, order=3), [x])


# ---- pad_sequences -------------------------------------------------------------------------
def test_pad_sequences_keras_docstring_examples():
    seqs = [[1], [2, 3], [4, 5, 6]]
    assert lk.utils.pad_sequences(seqs).tolist() == [[0, 0, 1], [0, 2, 3], [4, 5, 6]]
    assert lk.utils.pad_sequences(seqs, value=-1).tolist() == [[-1, -1, 1], [-1, 2, 3],
                                                               [4, 5, 6]]
    assert lk.utils.pad_sequences(seqs, padding="post").tolist() == [[1, 0, 0], [2, 3, 0],
                                                                     [4, 5, 6]]
    assert lk.utils.pad_sequences(seqs, maxlen=2).tolist() == [[0, 1], [2, 3], [5, 6]]
    assert lk.utils.pad_sequences(seqs).dtype == np.int32


def test_pad_sequences_arguments():
    seqs = [[1, 2, 3, 4], [], [5]]
    out = lk.utils.pad_sequences(seqs, maxlen=3, truncating="post", padding="post", value=9)
    assert out.tolist() == [[1, 2, 3], [9, 9, 9], [5, 9, 9]]
    f = lk.utils.pad_sequences([[0.5, 1.5]], maxlen=3, dtype="float32", value=0.25)
    assert f.dtype == np.float32 and f.tolist() == [[0.25, 0.5, 1.5]]
    words = lk.utils.pad_sequences([["a", "b"], ["c"]], dtype=object, value="<pad>")
    assert words.tolist() == [["a", "b"], ["<pad>", "c"]]
    vectors = lk.utils.pad_sequences([np.ones((2, 3)), np.full((1, 3), 2.0)], dtype="float64")
    assert vectors.shape == (2, 2, 3) and vectors[1].tolist() == [[0] * 3, [2] * 3]
    assert lk.utils.pad_sequences([[1, 2]], maxlen=0).shape == (1, 0)
    assert lk.utils.pad_sequences([], maxlen=4).shape == (0, 4)


def test_pad_sequences_errors():
    with pytest.raises(ValueError, match="padding must be 'pre' or 'post'"):
        lk.utils.pad_sequences([[1]], padding="middle")
    with pytest.raises(ValueError, match="truncating"):
        lk.utils.pad_sequences([[1]], truncating="both")
    with pytest.raises(ValueError, match="non-iterable at position 1"):
        lk.utils.pad_sequences([[1], 2])
    with pytest.raises(ValueError, match="dtype=object"):
        lk.utils.pad_sequences([["a"]], value="x")
    with pytest.raises(ValueError, match=r"sequence 1 have shape \(2,\), expected \(3,\)"):
        lk.utils.pad_sequences([np.ones((1, 3)), np.ones((1, 2))], dtype="float32")
    with pytest.raises(ValueError, match="must be iterable"):
        lk.utils.pad_sequences(5)
    with pytest.raises(ValueError, match="no maxlen"):
        lk.utils.pad_sequences([])


# ---- set_random_seed ---------------------------------------------------------------------
def test_set_random_seed_seeds_python_numpy_and_lk():
    def draw():
        return (random.random(), np.random.rand(), lk.random.uniform([3]).numpy().tolist(),
                np.asarray(lk.initializers.glorot_uniform()((2, 2))).tolist())

    lk.utils.set_random_seed(1234)
    first = draw()
    lk.utils.set_random_seed(1234)
    assert draw() == first
    lk.utils.set_random_seed(99)
    assert draw() != first
    random.seed(1234)   # what Keras does for Python and NumPy
    np.random.seed(1234)
    assert (random.random(), np.random.rand()) == first[:2]
    with pytest.raises(ValueError, match="integer"):
        lk.utils.set_random_seed(1.5)
    with pytest.raises(ValueError, match="integer"):
        lk.utils.set_random_seed("7")
