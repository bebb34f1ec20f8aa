"""The models of the ONNX export tests, also timed by benchmarks/bench_onnx.py: an MLP,
a CNN, an LSTM text model, the DCGAN generator of the keras-io guide "Customizing what
happens in fit()" and a small transformer block. Sizes default to the (fast) test sizes.

``example_input(name, model, batch, rng)`` makes a matching input batch.
"""
import numpy as np

import layerkit as lk

L = lk.layers


def leaky(x):
    # LeakyReLU(0.2) as an Activation (a LeakyReLU layer is being added on another branch)
    return lk.nn.leaky_relu(x, 0.2)


def mlp(features=20, hidden=(32, 16), classes=3):
    layers = [lk.Input((features,), name="features"), L.Dense(hidden[0], activation="relu"),
              L.Dropout(0.5)]
    layers += [L.Dense(h, activation="tanh") for h in hidden[1:]]
    return lk.Sequential(layers + [L.Dense(classes, activation="softmax")], name="mlp")


def cnn(size=16, classes=10):
    inputs = lk.Input((size, size, 1), name="image")
    x = L.Conv2D(8, 3, padding="same", activation="relu")(inputs)
    x = L.BatchNormalization()(x)
    x = L.MaxPooling2D()(x)
    x = L.DepthwiseConv2D(3, padding="same")(x)
    x = L.Conv2D(12, 3, strides=2, activation="relu")(x)
    x = L.AveragePooling2D(pool_size=1)(x)
    flat = L.Flatten()(x)
    pooled = L.GlobalAveragePooling2D()(x)
    x = L.Concatenate()([L.Dense(6)(flat), pooled])
    outputs = L.Dense(classes, activation="softmax")(L.Dropout(0.3)(x))
    return lk.Model(inputs, outputs, name="cnn")


def lstm_text(seq_len=12, vocab=50, dim=8, units=16):
    return lk.Sequential([lk.Input((seq_len,), dtype="int32", name="tokens"),
                          L.Embedding(vocab, dim), L.LSTM(units, return_sequences=True),
                          L.Bidirectional(L.LSTM(units // 2)),
                          L.Dense(1, activation="sigmoid")], name="lstm_text")


def dcgan_generator(latent_dim=128):
    return lk.Sequential([
        lk.Input((latent_dim,), name="latent"),
        L.Dense(7 * 7 * 128), L.Activation(leaky),
        L.Reshape((7, 7, 128)),
        L.Conv2DTranspose(128, (4, 4), strides=(2, 2), padding="same"), L.Activation(leaky),
        L.Conv2DTranspose(128, (4, 4), strides=(2, 2), padding="same"), L.Activation(leaky),
        L.Conv2D(1, (7, 7), padding="same", activation="sigmoid"),
    ], name="generator")


def transformer_block(seq_len=10, vocab=40, dim=16, heads=2, ff=32):
    tokens = lk.Input((seq_len,), dtype="int32", name="tokens")
    x = L.Embedding(vocab, dim)(tokens)
    attn = L.MultiHeadAttention(heads, dim // heads)(x, x)
    x = L.LayerNormalization(epsilon=1e-6)(L.Add()([x, attn]))
    ffn = L.Dense(dim)(L.Dense(ff, activation="gelu")(x))
    x = L.LayerNormalization(epsilon=1e-6)(L.Add()([x, L.Dropout(0.1)(ffn)]))
    return lk.Model(tokens, L.Dense(vocab)(x), name="transformer_block")


def example_input(model, batch: int, rng) -> np.ndarray:
    """A batch for ``model``'s single input: token ids for int inputs, else normals."""
    spec = model.inputs[0]   # the model's one lk.Input
    shape, dtype = spec.shape, spec.dtype
    shape = (batch,) + tuple(shape[1:])
    if np.dtype(dtype).kind in "iu":
        emb = next(layer for layer in model.layers if isinstance(layer, L.Embedding))
        return rng.integers(0, emb.input_dim, shape).astype(dtype)
    return rng.standard_normal(shape).astype(np.float32)
