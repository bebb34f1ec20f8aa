"""A training loop written by hand with ``lk.GradientTape`` (no ``fit``).

    python examples/custom_training_loop.py            # a few seconds
    python examples/custom_training_loop.py --smoke    # tiny run (used by the tests)

The task: classify points of three interleaved spirals (generated here, no download).
Each step records the forward pass on a tape, asks it for the gradients of the loss with
respect to the model's trainable variables, and lets the optimizer apply them. Metrics
are stateful objects updated per batch and reset per epoch, as in Keras.
"""
from __future__ import annotations

import argparse
import os

import numpy as np

import layerkit as lk
import layerkit.random
from layerkit import layers, losses, metrics, optimizers
from layerkit.data import Dataset
from layerkit.models import Input, Sequential


def spirals(n_per_class: int, classes: int = 3, noise: float = 0.2, seed: int = 0):
    """Points on ``classes`` interleaved spiral arms, with labels."""
    rng = np.random.default_rng(seed)
    xs, ys = [], []
    for c in range(classes):
        r = np.linspace(0.05, 1.0, n_per_class)
        t = np.linspace(c * 2 * np.pi / classes, c * 2 * np.pi / classes + 2.5 * np.pi, n_per_class)
        t = t + rng.normal(0, noise, n_per_class)
        xs.append(np.stack([r * np.sin(t), r * np.cos(t)], axis=1))
        ys.append(np.full(n_per_class, c))
    x = np.concatenate(xs).astype(np.float32)
    y = np.concatenate(ys).astype(np.int64)
    order = rng.permutation(len(x))
    return x[order], y[order]


def main(argv=None) -> float:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="tiny fast run")
    parser.add_argument("--epochs", type=int, default=None)
    args = parser.parse_args(argv)
    smoke = args.smoke or os.environ.get("LAYERKIT_SMOKE", "") not in ("", "0")
    epochs = args.epochs or (3 if smoke else 40)

    lk.random.set_seed(0)
    x, y = spirals(100 if smoke else 300)
    split = int(0.8 * len(x))
    train = Dataset.from_tensor_slices((x[:split], y[:split])).shuffle(split).batch(32)
    x_val, y_val = x[split:], y[split:]

    model = Sequential([Input(shape=(2,)), layers.Dense(64, activation="relu"),
                        layers.Dense(64, activation="relu"), layers.Dense(3)])
    optimizer = optimizers.Adam(learning_rate=0.01)
    loss_fn = losses.SparseCategoricalCrossentropy(from_logits=True)
    train_loss = metrics.Mean(name="loss")
    train_acc = metrics.SparseCategoricalAccuracy(name="accuracy")
    val_acc = metrics.SparseCategoricalAccuracy(name="val_accuracy")

    def train_step(xb, yb):
        with lk.GradientTape() as tape:
            logits = model(xb, training=True)
            loss = loss_fn(yb, logits)
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        train_loss.update_state(loss)
        train_acc.update_state(yb, logits)

    for epoch in range(epochs):
        for m in (train_loss, train_acc, val_acc):
            m.reset_state()
        for xb, yb in train:
            train_step(xb, yb)
        val_acc.update_state(y_val, model(x_val, training=False))
        if epoch % max(1, epochs // 10) == 0 or epoch == epochs - 1:
            print(f"epoch {epoch + 1:3d}/{epochs}: loss {float(train_loss.result()):.4f} "
                  f"accuracy {float(train_acc.result()):.4f} "
                  f"val_accuracy {float(val_acc.result()):.4f}")
    final = float(val_acc.result())
    print(f"optimizer steps: {int(optimizer.iterations.numpy())}")
    print(f"validation accuracy: {final:.4f}")
    return final


if __name__ == "__main__":
    main()
