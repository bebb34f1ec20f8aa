"""``lk.keras.datasets``: Keras's small datasets, read from Keras's own cache files.

``mnist``, ``fashion_mnist``, ``boston_housing`` and ``california_housing`` return
Keras's arrays (same files, same splits, same dtypes). layerkit downloads nothing
(:func:`layerkit.utils.get_file`): each loader reads the file Keras stores in
``~/.keras/datasets`` (put there by any Keras/TensorFlow program, or by hand from the
URL the error message gives). ``cifar10``, ``cifar100``, ``imdb`` and ``reuters`` are
distributed as Python pickles, which layerkit never loads: their loaders raise.
"""
from __future__ import annotations

import gzip
import os
import types
from typing import Any

import numpy as np

from layerkit.utils import get_file

__all__ = ["boston_housing", "california_housing", "cifar10", "cifar100", "fashion_mnist",
           "imdb", "mnist", "reuters"]

_BASE = "https://storage.googleapis.com/tensorflow/tf-keras-datasets/"
# Keras's sha256 of each published file (a cached file that does not match is refused).
_HASHES = {
    "mnist.npz": "731c5ac602752760c8e48fbffcf8c3b850d9dc2a2aedcf2cc48468fc17b673d1",
    "boston_housing.npz": "f553886a1f8d56431e820c5b82552d9d95cfcb96d1e678153f8839538947dff5",
    "california_housing.npz":
        "1a2e3a52e0398de6463aebe6f4a8da34fb21fbb6b934cf88c3425e766f2a1a6f",
}


def _npz(path: str, what: str) -> dict:
    try:
        with np.load(path, allow_pickle=False) as f:
            return {k: f[k] for k in f.files}
    except ValueError as e:
        raise ValueError(f"{what}: '{path}' is not the plain-array .npz file Keras "
                         f"publishes ({e})") from None


def _mnist_load_data(path: str = "mnist.npz") -> tuple:
    """``(x_train, y_train), (x_test, y_test)``: 60,000 + 10,000 28x28 uint8 digits."""
    f = _npz(get_file(fname=path, origin=_BASE + "mnist.npz", file_hash=_HASHES["mnist.npz"]),
             "mnist.load_data")
    return (f["x_train"], f["y_train"]), (f["x_test"], f["y_test"])


def _idx(path: str, offset: int) -> np.ndarray:
    with gzip.open(path, "rb") as f:
        return np.frombuffer(f.read(), np.uint8, offset=offset)


def _fashion_load_data() -> tuple:
    """``(x_train, y_train), (x_test, y_test)``: Fashion-MNIST, 28x28 uint8 images."""
    names = ["train-labels-idx1-ubyte.gz", "train-images-idx3-ubyte.gz",
             "t10k-labels-idx1-ubyte.gz", "t10k-images-idx3-ubyte.gz"]
    paths = [get_file(n, origin=_BASE + n,
                      cache_subdir=os.path.join("datasets", "fashion-mnist")) for n in names]
    y_train, y_test = _idx(paths[0], 8), _idx(paths[2], 8)
    x_train = _idx(paths[1], 16).reshape(len(y_train), 28, 28)
    x_test = _idx(paths[3], 16).reshape(len(y_test), 28, 28)
    return (x_train, y_train), (x_test, y_test)


def _split(x, y, test_split: float, seed: int):
    order = np.arange(len(x))
    np.random.RandomState(seed).shuffle(order)   # Keras's order for the same seed
    x, y = x[order], y[order]
    cut = int(len(x) * (1 - test_split))
    return (x[:cut], y[:cut]), (x[cut:], y[cut:])


def _boston_load_data(path: str = "boston_housing.npz", test_split: float = 0.2,
                      seed: int = 113) -> tuple:
    """``(x_train, y_train), (x_test, y_test)``: 506 houses, 13 features each."""
    if not 0 <= test_split < 1:
        raise ValueError(f"boston_housing.load_data: test_split must be in [0, 1); received "
                         f"{test_split}")
    f = _npz(get_file(path, origin=_BASE + "boston_housing.npz",
                      file_hash=_HASHES["boston_housing.npz"]), "boston_housing.load_data")
    return _split(f["x"], f["y"], test_split, seed)


def _california_load_data(version: str = "large", path: str = "california_housing.npz",
                          test_split: float = 0.2, seed: int = 113) -> tuple:
    """``(x_train, y_train), (x_test, y_test)``: California housing (8 features);
    ``version='small'`` keeps the first 600 rows, as Keras does."""
    if version not in ("small", "large"):
        raise ValueError(f"california_housing.load_data: version must be 'small' or 'large'; "
                         f"received {version!r}")
    f = _npz(get_file(path, origin=_BASE + "california_housing.npz",
                      file_hash=_HASHES["california_housing.npz"]), "california_housing.load_data")
    x, y = f["x"], f["y"]
    if version == "small":
        x, y = x[:600], y[:600]
    return _split(x, y, test_split, seed)


def _pickled(name: str):
    def load_data(*args: Any, **kwargs: Any) -> tuple:
        raise NotImplementedError(
            f"lk.keras.datasets.{name}.load_data: Keras distributes {name} as Python "
            f"pickles, and layerkit never unpickles (it can run code); convert the data to "
            f"NumPy arrays with Keras once and load them with np.load")
    return load_data


def _module(name: str, load_data) -> types.ModuleType:
    m = types.ModuleType(f"{__name__}.{name}", f"Keras's {name} dataset: ``load_data()``.")
    m.load_data = load_data
    return m


mnist = _module("mnist", _mnist_load_data)
fashion_mnist = _module("fashion_mnist", _fashion_load_data)
boston_housing = _module("boston_housing", _boston_load_data)
california_housing = _module("california_housing", _california_load_data)
cifar10 = _module("cifar10", _pickled("cifar10"))
cifar100 = _module("cifar100", _pickled("cifar100"))
imdb = _module("imdb", _pickled("imdb"))
reuters = _module("reuters", _pickled("reuters"))
