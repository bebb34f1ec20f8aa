"""A character-level LSTM language model on a small text shipped with the examples.

    python examples/char_rnn.py            # a few seconds on 2 cores
    python examples/char_rnn.py --smoke    # tiny run (used by the tests)

The model reads 40 characters and predicts the next one at every position:
``Embedding -> LSTM(return_sequences=True) -> Dense(vocabulary)``, trained with
``fit`` on an ``lk.data`` pipeline. Afterwards it writes new text one character at a
time, sampling from its own predictions. The corpus (``examples/data/tiny_corpus.txt``)
was written for layerkit.
"""
from __future__ import annotations

import argparse
import os

import numpy as np

import layerkit as lk
import layerkit.nn
import layerkit.random
from layerkit import callbacks, layers, losses, optimizers
from layerkit.data import Dataset
from layerkit.models import Input, Sequential

CORPUS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "tiny_corpus.txt")


def windows(ids: np.ndarray, length: int, stride: int):
    """(inputs, targets): each target sequence is its input shifted by one character."""
    starts = np.arange(0, len(ids) - length - 1, stride)
    idx = starts[:, None] + np.arange(length + 1)
    seqs = ids[idx]
    return seqs[:, :-1], seqs[:, 1:]


def sample(model, vocab: list, seed_text: str, n: int, length: int, temperature: float,
           rng: np.random.Generator) -> str:
    """Extend ``seed_text`` by ``n`` characters drawn from the model's predictions."""
    index = {c: i for i, c in enumerate(vocab)}
    ids = [index[c] for c in seed_text if c in index]
    for _ in range(n):
        window = np.array([ids[-length:]], dtype=np.int64)
        logits = model(window, training=False).numpy()[0, -1] / temperature
        p = np.exp(logits - logits.max())
        ids.append(int(rng.choice(len(vocab), p=p / p.sum())))
    return "".join(vocab[i] for i in ids)


def main(argv=None) -> float:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="tiny fast run")
    parser.add_argument("--epochs", type=int, default=None)
    parser.add_argument("--temperature", type=float, default=0.5)
    args = parser.parse_args(argv)
    smoke = args.smoke or os.environ.get("LAYERKIT_SMOKE", "") not in ("", "0")
    epochs = args.epochs or (1 if smoke else 15)
    length = 40

    lk.random.set_seed(0)
    with open(CORPUS, encoding="utf-8") as f:
        text = f.read()
    vocab = sorted(set(text))
    ids = np.array([vocab.index(c) for c in text], dtype=np.int64)
    x, y = windows(ids, length, stride=3)
    if smoke:
        x, y = x[:64], y[:64]
    print(f"corpus: {len(text)} characters, vocabulary of {len(vocab)}, "
          f"{len(x)} training sequences of {length}")

    data = Dataset.from_tensor_slices((x, y)).shuffle(len(x)).batch(32)
    model = Sequential([
        Input(shape=(None,), dtype="int64"),
        layers.Embedding(len(vocab), 32),
        layers.LSTM(128, return_sequences=True),
        layers.Dense(len(vocab)),
    ])
    model.compile(optimizer=optimizers.Adam(learning_rate=0.01, global_clipnorm=1.0),
                  loss=losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    model.summary()
    history = model.fit(data, epochs=epochs, verbose=2,
                        callbacks=[callbacks.TerminateOnNaN()])
    final_loss = history.history["loss"][-1]
    print(f"final loss: {final_loss:.4f} (a uniform guess would be "
          f"{np.log(len(vocab)):.4f})")
    rng = np.random.default_rng(0)
    generated = sample(model, vocab, "The keeper ", n=20 if smoke else 240, length=length,
                       temperature=args.temperature, rng=rng)
    print("sample:")
    print(generated)
    return final_loss


if __name__ == "__main__":
    main()
