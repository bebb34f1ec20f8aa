"""MultiHeadAttention vs a NumPy reference written with Keras's einsum formulation."""
import numpy as np
import pytest

from layerkit.layers import MultiHeadAttention

from .layer_test_util import check_layer_grads


def _x(*shape, seed=0):
    return np.random.default_rng(seed).normal(size=shape).astype(np.float32)


def np_mha(q_in, v_in, k_in, w, key_dim, mask=None):
    """Keras 3: EinsumDense projections, scaled dot product, -1e9 mask adder, softmax."""
    qk, qb, kk, kb, vk, vb, ok, ob = w
    q = np.einsum("abc,cde->abde", q_in, qk) + qb  # (B, T, H, Dk)
    k = np.einsum("abc,cde->abde", k_in, kk) + kb
    v = np.einsum("abc,cde->abde", v_in, vk) + vb
    q = q / np.sqrt(key_dim)
    scores = np.einsum("aecd,abcd->acbe", k, q)  # (B, H, T, S)
    if mask is not None:
        scores = scores + (1.0 - mask[:, None].astype(np.float32)) * -1e9
    scores = np.exp(scores - scores.max(-1, keepdims=True))
    scores /= scores.sum(-1, keepdims=True)
    out = np.einsum("acbe,aecd->abcd", scores, v)  # (B, T, H, Dv)
    return np.einsum("abcd,cde->abe", out, ok) + ob, scores


def _random_weights(layer, seed=1):
    rng = np.random.default_rng(seed)
    layer.set_weights([rng.normal(0, 0.5, w.shape).astype(np.float32) for w in layer.weights])
    return layer.get_weights()


def test_mha_weight_shapes_keras_order():
    mha = MultiHeadAttention(num_heads=2, key_dim=3, value_dim=4, output_shape=5)
    mha(_x(1, 3, 6), _x(1, 4, 7), _x(1, 4, 8))
    assert [tuple(w.shape) for w in mha.weights] == [
        (6, 2, 3), (2, 3), (8, 2, 3), (2, 3), (7, 2, 4), (2, 4), (2, 4, 5), (5,)]


def test_mha_matches_numpy_with_mask_and_scores():
    q_in, v_in = _x(2, 3, 6), _x(2, 4, 6, seed=1)
    mha = MultiHeadAttention(num_heads=2, key_dim=3)
    mha(q_in, v_in)
    w = _random_weights(mha)
    mask = np.random.default_rng(2).random((2, 3, 4)) > 0.4
    mask[:, :, 0] = True
    out, scores = mha(q_in, v_in, attention_mask=mask, return_attention_scores=True)
    ref, ref_scores = np_mha(q_in, v_in, v_in, w, 3, mask)
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(scores.numpy(), ref_scores, rtol=1e-4, atol=1e-6)
    assert np.all(scores.numpy()[np.broadcast_to(~mask[:, None], scores.shape)] == 0)
    k_in = _x(2, 4, 6, seed=3)
    ref_k, _ = np_mha(q_in, v_in, k_in, w, 3)
    np.testing.assert_allclose(mha(q_in, v_in, key=k_in).numpy(), ref_k, rtol=1e-4, atol=1e-5)


def test_mha_causal_mask_and_dropout():
    x = _x(1, 4, 6)
    mha = MultiHeadAttention(num_heads=1, key_dim=2, dropout=0.5, seed=0)
    _, scores = mha(x, x, use_causal_mask=True, return_attention_scores=True)
    np.testing.assert_array_equal(np.triu(scores.numpy()[0, 0], 1), 0)
    a = mha(x, x).numpy()
    b = mha(x, x, training=True).numpy()
    assert not np.allclose(a, b)
    np.testing.assert_array_equal(mha(x, x).numpy(), a)


def test_mha_errors_and_config():
    mha = MultiHeadAttention(2, 3, name="att")
    with pytest.raises(ValueError, match=r"att.*attention_mask of shape \(2, 5\).*\(1, 3, 4\)"):
        mha(_x(1, 3, 6), _x(1, 4, 6), attention_mask=np.ones((2, 5), bool))
    config = mha.get_config()
    assert config["num_heads"] == 2 and config["key_dim"] == 3 and config["value_dim"] == 3
    assert MultiHeadAttention.from_config(config).get_config() == config


def test_mha_gradients_float64():
    q, v = _x(1, 2, 3).astype(np.float64), _x(1, 3, 3, seed=1).astype(np.float64)
    mask = np.array([[[1, 1, 0], [1, 0, 1]]], bool)
    check_layer_grads(MultiHeadAttention(2, 2, dtype="float64"), [q, v],
                      {"attention_mask": mask})


def test_mha_symbolic_call():
    from layerkit.layers import SymbolicTensor

    q, v = SymbolicTensor((None, 5, 8)), SymbolicTensor((None, None, 8))
    out, scores = MultiHeadAttention(2, 4)(q, v, return_attention_scores=True)
    assert out.shape == (None, 5, 8) and scores.shape == (None, 2, 5, None)
    assert out.inputs == [q, v] and out.node is scores.node
