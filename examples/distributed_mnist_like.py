"""Data-parallel training of a small CNN on scikit-learn's 8x8 digits, on N MPI ranks.

    python -m layerkit.distribute.launch -n 2 examples/distributed_mnist_like.py
    mpiexec -n 2 python examples/distributed_mnist_like.py        # the same
    python examples/distributed_mnist_like.py                     # one rank works too
    ... examples/distributed_mnist_like.py --smoke                # tiny and fast (tests)

What it shows (TensorFlow's MultiWorkerMirroredStrategy recipe, unchanged):
- the model is built and compiled inside ``strategy.scope()``: its weights are
  broadcast from rank 0 as they are created;
- ``fit`` on an ``lk.data`` pipeline batched with the *global* batch size: each rank
  gets its part of every batch, gradients are averaged over all ranks each step, and the
  epoch metrics (``History``, the progress bar) are computed over all ranks;
- the progress bar and ``ModelCheckpoint`` run on rank 0 only; every rank restores the
  checkpoint and ``evaluate`` (every rank evaluates its part) reports the test accuracy
  over the whole test set;
- a custom step with ``strategy.run`` and an all-reducing optimizer, TensorFlow style.

Needs mpi4py with an MPI (``pip install 'layerkit[mpi]'``) and scikit-learn
(``pip install 'layerkit[examples]'``); nothing is downloaded.
"""
from __future__ import annotations

import argparse
import os
import tempfile

import numpy as np

import layerkit as lk
from layerkit import callbacks, layers, losses, optimizers


def load_digits_split(seed: int = 0, test_fraction: float = 0.2):
    """Digits as (N, 8, 8, 1) float32 in [0, 1] and int64 labels, split train/test (the
    same on every rank: the split is seeded)."""
    from sklearn.datasets import load_digits

    d = load_digits()
    x = (d.images / 16.0).astype(np.float32)[..., None]
    y = d.target.astype(np.int64)
    order = np.random.default_rng(seed).permutation(len(x))
    cut = int(len(x) * (1 - test_fraction))
    return (x[order[:cut]], y[order[:cut]]), (x[order[cut:]], y[order[cut:]])


def make_model() -> lk.Model:
    return lk.Sequential([
        lk.Input((8, 8, 1)),
        layers.Conv2D(16, 3, padding="same", activation="relu"), layers.MaxPooling2D(2),
        layers.Conv2D(32, 3, padding="same", activation="relu"), layers.MaxPooling2D(2),
        layers.Flatten(), layers.Dense(64, activation="relu"), layers.Dense(10)])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="a tiny, fast run")
    parser.add_argument("--epochs", type=int, default=8)
    parser.add_argument("--global-batch", type=int, default=64)
    parser.add_argument("--out", default=os.path.join(tempfile.gettempdir(), "lk-distributed"),
                        help="checkpoint directory, the same for every rank (on several "
                             "machines: a shared file system)")
    args = parser.parse_args()
    epochs = 2 if args.smoke else args.epochs

    strategy = lk.distribute.MultiWorkerMirroredStrategy()
    rank = strategy.cluster_resolver.task_id
    n = strategy.num_replicas_in_sync
    chief = rank == 0
    lk.random.set_seed(0)

    (x_train, y_train), (x_test, y_test) = load_digits_split()
    if args.smoke:
        x_train, y_train = x_train[:256], y_train[:256]
    if chief:
        print(f"{n} rank(s); {len(x_train)} training and {len(x_test)} test images; global "
              f"batch {args.global_batch} ({args.global_batch // n} per rank)")

    train_ds = (lk.data.Dataset.from_tensor_slices((x_train, y_train))
                .shuffle(len(x_train)).batch(args.global_batch))
    test_ds = lk.data.Dataset.from_tensor_slices((x_test, y_test)).batch(args.global_batch)

    with strategy.scope():
        model = make_model()
        model.compile(optimizer=optimizers.Adam(2e-3),
                      loss=losses.SparseCategoricalCrossentropy(from_logits=True),
                      metrics=["accuracy"])

    out = args.out
    ckpt_path = os.path.join(out, "digits-{epoch:02d}.weights")
    history = model.fit(train_ds, epochs=epochs, validation_data=test_ds,
                        verbose=2 if chief else 0,
                        callbacks=[callbacks.ModelCheckpoint(ckpt_path)])

    # Every rank restores rank 0's last checkpoint into a fresh model, then evaluates.
    with strategy.scope():
        restored = make_model()
        restored.compile(loss=losses.SparseCategoricalCrossentropy(from_logits=True),
                         metrics=["accuracy"])
    restored.load_weights(ckpt_path.format(epoch=epochs))
    same = all(np.array_equal(a, b) for a, b in zip(restored.get_weights(),
                                                    model.get_weights()))
    result = restored.evaluate(test_ds, verbose=0, return_dict=True)

    # A custom step, TensorFlow style: per-example losses scaled by the global batch;
    # the optimizer created in the scope sums the gradients over the ranks.
    with strategy.scope():
        opt = optimizers.SGD(0.01)

    def step(batch):
        x, y = batch
        with lk.GradientTape() as tape:
            per_example = losses.sparse_categorical_crossentropy(y, restored(x),
                                                                 from_logits=True)
            loss = lk.nn.compute_average_loss(per_example,
                                              global_batch_size=args.global_batch)
        grads = tape.gradient(loss, restored.trainable_variables)
        opt.apply_gradients(zip(grads, restored.trainable_variables))
        return loss

    batch = next(iter(strategy.experimental_distribute_dataset(train_ds)))
    loss = strategy.reduce("sum", strategy.run(step, args=(batch,)), axis=None)

    if chief:
        print(f"final training loss {history.history['loss'][-1]:.4f}, accuracy "
              f"{history.history['accuracy'][-1]:.4f} (over all ranks)")
        print(f"every rank restored the checkpoint: {same}")
        print(f"test accuracy: {result['accuracy']:.4f}")
        print(f"one custom step: global loss {float(loss):.4f}")
        print(f"checkpoints (written by rank 0): {sorted(os.listdir(out))}")


if __name__ == "__main__":
    main()
