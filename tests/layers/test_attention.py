"""MultiHeadAttention vs a NumPy reference written with Keras's einsum formulation."""
import numpy as np
import pytest

import layerkit as lk
from layerkit.autodiff.check import check_grads
from layerkit.layers import AdditiveAttention, Attention, MultiHeadAttention

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


# ---- MultiHeadAttention with Keras masks ----------------------------------------------------
def _masked(x, mask):
    t = lk.constant(x)
    lk.layers.set_keras_mask(t, mask)
    return t


def test_mha_uses_the_inputs_keras_masks_like_keras():
    q_in, v_in = _x(2, 3, 6), _x(2, 4, 6, seed=1)
    qm = np.array([[1, 1, 0], [1, 0, 0]], bool)
    vm = np.array([[1, 0, 1, 1], [0, 1, 1, 0]], bool)
    mha = MultiHeadAttention(num_heads=2, key_dim=3)
    mha(q_in, v_in)
    w = _random_weights(mha)
    q, v = _masked(q_in, qm), _masked(v_in, vm)
    out, scores = mha(q, v, return_attention_scores=True)
    allowed = qm[:, :, None] & vm[:, None, :]  # (B, T, S)
    ref, ref_probs = np_mha(q_in, v_in, v_in, w, 3, allowed)
    ref_scores = np.where(allowed[:, None], ref_probs, 0.0)
    # rows with no allowed position: probabilities 0 here (scores returned) ...
    ref_out = np.einsum("acbe,aecd->abcd", ref_scores, np.einsum(
        "abc,cde->abde", v_in, w[4]) + w[5])
    ref_out = np.einsum("abcd,cde->abe", ref_out, w[6]) + w[7]
    np.testing.assert_allclose(scores.numpy(), ref_scores, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out.numpy(), ref_out, rtol=1e-5, atol=1e-5)
    # Keras 3: the output carries the query's mask, the scores the attention mask, and the
    # inputs lose theirs (the layer consumed them)
    np.testing.assert_array_equal(lk.layers.get_keras_mask(out).numpy(), qm)
    np.testing.assert_array_equal(lk.layers.get_keras_mask(scores).numpy(), allowed[:, None])
    assert lk.layers.get_keras_mask(q) is None and lk.layers.get_keras_mask(v) is None
    # ... and uniform over all positions in the fused path (Keras on torch); other rows agree
    fused = mha(_masked(q_in, qm), _masked(v_in, vm)).numpy()
    np.testing.assert_allclose(fused[qm], ref[qm], rtol=1e-5, atol=1e-5)
    v_proj = np.einsum("abc,cde->abde", v_in, w[4]) + w[5]
    mean_v = np.einsum("abcd,cde->abe", np.broadcast_to(v_proj.mean(1, keepdims=True),
                                                        (2, 3) + v_proj.shape[2:]), w[6]) + w[7]
    np.testing.assert_allclose(fused[~qm], mean_v[~qm], rtol=1e-5, atol=1e-5)


# ---- Attention, AdditiveAttention -------------------------------------------------------------
def np_softmax(s):
    e = np.exp(s - s.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def np_attention(q, v, k=None, scores_fn=None, q_mask=None, v_mask=None, causal=False):
    """Keras 3's Attention: masked scores get -1e9 added, softmax, @ value, query mask."""
    k = v if k is None else k
    s = scores_fn(q, k)
    allowed = np.ones(s.shape, bool)
    if v_mask is not None:
        allowed &= v_mask[:, None, :]
    if causal:
        allowed &= np.tril(np.ones(s.shape[1:], bool))[None]
    w = np_softmax(np.where(allowed, s, s - 1e9))
    out = w @ v
    if q_mask is not None:
        out = np.where(q_mask[..., None], out, 0.0)
    return out, w


def dot_scores(scale=None):
    return lambda q, k: (q @ k.transpose(0, 2, 1)) * (1.0 if scale is None else scale)


def concat_scores(scale, weight):
    return lambda q, k: weight * np.tanh(scale * (q[:, :, None] + k[:, None])).sum(-1)


def additive_scores(scale):
    return lambda q, k: (scale * np.tanh(q[:, :, None] + k[:, None])).sum(-1)


def test_attention_dot_and_concat_match_numpy():
    q, v, k = _x(2, 3, 4), _x(2, 5, 4, seed=1), _x(2, 5, 4, seed=2)
    out = Attention()([q, v]).numpy()
    np.testing.assert_allclose(out, np_attention(q, v, scores_fn=dot_scores())[0], rtol=1e-5)
    layer = Attention(use_scale=True)
    layer([q, v, k])
    assert [w.name for w in layer.weights] == ["scale"] and layer.scale.shape == ()
    layer.set_weights([np.array(0.7, np.float32)])
    out, w = layer([q, v, k], return_attention_scores=True)
    ref, ref_w = np_attention(q, v, k, dot_scores(0.7))
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-5)
    np.testing.assert_allclose(w.numpy(), ref_w, rtol=1e-5)
    layer = Attention(use_scale=True, score_mode="concat")
    layer([q, v])
    assert [w.name for w in layer.weights] == ["scale", "concat_score_weight"]
    layer.set_weights([np.array(0.5, np.float32), np.array(1.5, np.float32)])
    np.testing.assert_allclose(layer([q, v]).numpy(),
                               np_attention(q, v, scores_fn=concat_scores(0.5, 1.5))[0],
                               rtol=1e-5)
    clone = Attention.from_config(layer.get_config())
    assert (clone.use_scale, clone.score_mode) == (True, "concat")
    with pytest.raises(ValueError, match="score_mode"):
        Attention(score_mode="add")
    with pytest.raises(ValueError, match=r"list \[query, value\]"):
        Attention()(q)


def test_attention_masks_causal_and_dropout():
    q, v = _x(2, 4, 3), _x(2, 4, 3, seed=1)
    qm = np.array([[1, 1, 0, 1], [1, 0, 0, 0]], bool)
    vm = np.array([[1, 1, 1, 0], [0, 1, 0, 1]], bool)
    layer = Attention()
    out, w = layer([q, v], mask=[qm, vm], return_attention_scores=True, use_causal_mask=True)
    ref, ref_w = np_attention(q, v, scores_fn=dot_scores(), q_mask=qm, v_mask=vm, causal=True)
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(w.numpy(), ref_w, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(lk.layers.get_keras_mask(out).numpy(), qm)
    # the inputs' Keras masks are used when no mask is given
    out2 = layer([_masked(q, qm), _masked(v, vm)], use_causal_mask=True)
    np.testing.assert_allclose(out2.numpy(), ref, rtol=1e-6)
    # dropout on the weights, in training only (and the returned scores are the dropped ones)
    drop = Attention(dropout=0.5, seed=1)
    np.testing.assert_allclose(drop([q, v]).numpy(), Attention()([q, v]).numpy(), rtol=1e-6)
    _, wd = drop([q, v], training=True, return_attention_scores=True)
    assert set(np.round(np.unique(wd.numpy() / np.maximum(np_softmax(
        q @ v.transpose(0, 2, 1)), 1e-30)), 4)) <= {0.0, 2.0}


def test_additive_attention_matches_numpy():
    q, v = _x(2, 3, 4), _x(2, 5, 4, seed=1)
    layer = AdditiveAttention()
    layer([q, v])
    assert [w.name for w in layer.weights] == ["scale"] and layer.scale.shape == (4,)
    scale = np.array([0.5, -1.0, 2.0, 0.3], np.float32)
    layer.set_weights([scale])
    vm = np.array([[1, 1, 0, 1, 0], [0, 0, 1, 1, 1]], bool)
    out, w = layer([q, v], mask=[None, vm], return_attention_scores=True)
    ref, ref_w = np_attention(q, v, scores_fn=additive_scores(scale), v_mask=vm)
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(w.numpy(), ref_w, rtol=1e-5, atol=1e-6)
    unscaled = AdditiveAttention(use_scale=False)([q, v]).numpy()
    np.testing.assert_allclose(unscaled, np_attention(q, v, scores_fn=additive_scores(1.0))[0],
                               rtol=1e-5)
    config = layer.get_config()
    assert "score_mode" not in config and config["use_scale"] is True
    assert lk.layers.get_keras_mask(out) is None


def test_attention_gradients_and_fit():
    q, v = _x(2, 3, 4).astype(np.float64), _x(2, 5, 4, seed=1).astype(np.float64)
    vm = np.array([[1, 1, 0, 1, 0], [0, 0, 1, 1, 1]], bool)
    for layer in (Attention(use_scale=True, score_mode="concat", dtype="float64"),
                  AdditiveAttention(dtype="float64")):
        layer([q, v])
        weights = [w.numpy() for w in layer.weights]

        def f(qq, vv, *ws, layer=layer):
            saved = dict(layer.__dict__)
            for name, w in zip(("scale", "concat_score_weight"), ws):
                layer.__dict__[name] = w
            try:
                return layer([qq, vv], mask=[None, vm], use_causal_mask=False)
            finally:
                layer.__dict__.update(saved)

        check_grads(f, [q, v, *weights], order=1, rtol=1e-5, atol=1e-6)
    q_in, v_in = lk.Input(shape=(3, 4)), lk.Input(shape=(5, 4))
    att = Attention(use_scale=True)([q_in, v_in])
    model = lk.Model([q_in, v_in], lk.layers.Dense(1)(AdditiveAttention()([att, v_in])))
    model.compile(lk.optimizers.Adam(0.01), "mse")
    x = [_x(16, 3, 4), _x(16, 5, 4, seed=1)]
    y = _x(16, 3, 1, seed=2)
    before = model.evaluate(x, y, verbose=0)
    model.fit(x, y, epochs=10, batch_size=8, verbose=0)
    assert model.evaluate(x, y, verbose=0) < before
