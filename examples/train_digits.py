"""Train a small CNN on scikit-learn's bundled 8x8 digits and check it end to end.

    python examples/train_digits.py            # a few seconds on 2 cores
    python examples/train_digits.py --smoke    # a tiny, fast run (used by the tests)

What it shows:
- a convolution block written by subclassing ``lk.layers.Layer`` (``build`` creates the
  weights with ``add_weight``, ``call`` computes with ``lk.nn`` ops), used in a
  subclassed ``Model``;
- the data streamed through ``lk.data`` (shuffled and batched each epoch);
- ``compile``/``fit`` with the progress bar, a validation set and callbacks;
- a checkpoint written with ``save_weights`` and restored into a fresh model;
- the test accuracy (0.97 or more expected) and a PNG of the training curves
  (needs matplotlib, the ``examples`` extra; without it the script says so).

Needs scikit-learn (``pip install layerkit[examples]``); nothing is downloaded.
Set ``LAYERKIT_SMOKE=1`` for the same effect as ``--smoke``.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

import layerkit as lk
import layerkit.nn
import layerkit.random
from layerkit import callbacks, layers, losses, optimizers
from layerkit.data import Dataset
from layerkit.models import Model


class ConvBlock(layers.Layer):
    """3x3 'same' convolution + bias, ReLU, then 2x2 max pooling.

    Input shape: (batch, height, width, channels).
    Output shape: (batch, height // 2, width // 2, filters).
    """

    def __init__(self, filters: int, **kwargs) -> None:
        super().__init__(**kwargs)
        self.filters = filters

    def build(self, input_shape) -> None:
        self.kernel = self.add_weight("kernel", (3, 3, input_shape[-1], self.filters),
                                      initializer="he_normal")
        self.bias = self.add_weight("bias", (self.filters,), initializer="zeros")

    def call(self, x):
        x = lk.nn.conv2d(x, self.kernel, padding="SAME") + self.bias
        return lk.nn.max_pool2d(lk.nn.relu(x), ksize=2, strides=2, padding="VALID")

    def get_config(self) -> dict:
        return {**super().get_config(), "filters": self.filters}


class DigitsCNN(Model):
    """ConvBlock(16) -> ConvBlock(32) -> Flatten -> Dense(64, relu) -> Dropout -> Dense(10)."""

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.block1 = ConvBlock(16)
        self.block2 = ConvBlock(32)
        self.flatten = layers.Flatten()
        self.hidden = layers.Dense(64, activation="relu")
        self.dropout = layers.Dropout(0.2)
        self.logits = layers.Dense(10)

    def call(self, x, training=None):
        x = self.flatten(self.block2(self.block1(x)))
        return self.logits(self.dropout(self.hidden(x), training=training))


def load_digits_split(seed: int = 0, test_fraction: float = 0.2):
    """Digits as (N, 8, 8, 1) float32 in [0, 1] and int64 labels, split train/test."""
    try:
        from sklearn.datasets import load_digits
    except ImportError:
        sys.exit("train_digits.py needs scikit-learn: pip install scikit-learn "
                 "(or pip install layerkit[examples])")
    digits = load_digits()
    x = (digits.images / 16.0).astype(np.float32)[..., None]
    y = digits.target.astype(np.int64)
    order = np.random.default_rng(seed).permutation(len(x))
    n_test = int(len(x) * test_fraction)
    test, train = order[:n_test], order[n_test:]
    return (x[train], y[train]), (x[test], y[test])


def build_model() -> DigitsCNN:
    model = DigitsCNN(name="digits_cnn")
    model.compile(optimizer=optimizers.Adam(learning_rate=3e-3),
                  loss=losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    return model


def main(argv=None) -> float:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true",
                        help="tiny fast run (also LAYERKIT_SMOKE=1)")
    parser.add_argument("--epochs", type=int, default=None)
    parser.add_argument("--out", default="train_digits_output",
                        help="directory for the checkpoint and the training-curves PNG")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    smoke = args.smoke or os.environ.get("LAYERKIT_SMOKE", "") not in ("", "0")
    epochs = args.epochs or (2 if smoke else 12)
    os.makedirs(args.out, exist_ok=True)

    lk.random.set_seed(args.seed)  # one call seeds initializers, dropout and shuffling
    (x_train, y_train), (x_test, y_test) = load_digits_split(args.seed)
    if smoke:
        x_train, y_train = x_train[:256], y_train[:256]
    print(f"digits: {len(x_train)} training and {len(x_test)} test images of shape "
          f"{x_train.shape[1:]}")

    train = Dataset.from_tensor_slices((x_train, y_train)).shuffle(len(x_train)).batch(32)
    test = Dataset.from_tensor_slices((x_test, y_test)).batch(256)

    model = build_model()
    model.build((None, 8, 8, 1))
    model.summary()
    start = time.perf_counter()
    history = model.fit(train, epochs=epochs, validation_data=test, verbose=1,
                        callbacks=[callbacks.TerminateOnNaN()])
    print(f"trained {epochs} epochs in {time.perf_counter() - start:.1f}s")

    checkpoint = model.save_weights(os.path.join(args.out, "digits_cnn.weights"))
    print(f"saved checkpoint: {checkpoint}")
    restored = build_model()  # a fresh, unbuilt model: values apply as layers are built
    restored.load_weights(checkpoint)
    loss, accuracy = restored.evaluate(test, verbose=0)
    same = np.allclose(restored.predict(x_test[:16], verbose=0),
                       model.predict(x_test[:16], verbose=0), atol=1e-5)
    print(f"restored model matches the trained one: {same}")
    print(f"test accuracy: {accuracy:.4f} (loss {loss:.4f})")

    try:
        png = history.plot(os.path.join(args.out, "training_curves.png"),
                           title="digits CNN")
        print(f"training curves: {png}")
    except ImportError as e:
        print(f"training curves: not written ({e})")
    return accuracy


if __name__ == "__main__":
    main()
