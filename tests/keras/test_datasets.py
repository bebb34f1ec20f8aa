"""lk.keras.datasets: Keras's loaders over Keras's cache files (made here: no network)."""
import gzip
import hashlib

import numpy as np
import pytest

import layerkit as lk
from layerkit.keras import datasets


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("KERAS_HOME", str(tmp_path))
    (tmp_path / "datasets").mkdir()
    return tmp_path / "datasets"


def _publish(path, monkeypatch):
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    monkeypatch.setitem(datasets._HASHES, path.name, digest)


def test_mnist_reads_keras_npz(cache, monkeypatch):
    rng = np.random.default_rng(0)
    arrays = {"x_train": rng.integers(0, 256, (6, 28, 28), dtype=np.uint8),
              "y_train": np.arange(6, dtype=np.uint8), "x_test": np.zeros((2, 28, 28), np.uint8),
              "y_test": np.array([3, 4], np.uint8)}
    np.savez(cache / "mnist.npz", **arrays)
    _publish(cache / "mnist.npz", monkeypatch)
    (x_train, y_train), (x_test, y_test) = lk.keras.datasets.mnist.load_data()
    np.testing.assert_array_equal(x_train, arrays["x_train"])
    np.testing.assert_array_equal(y_test, arrays["y_test"])
    assert x_test.shape == (2, 28, 28) and y_train.dtype == np.uint8


def test_a_cached_file_with_the_wrong_hash_is_refused(cache):
    np.savez(cache / "mnist.npz", x_train=np.zeros(1))
    with pytest.raises(FileNotFoundError, match="hash does not match"):
        datasets.mnist.load_data()


def test_missing_file_says_where_to_put_it(cache):
    with pytest.raises(FileNotFoundError, match="mnist.npz"):
        datasets.mnist.load_data()


def test_fashion_mnist_parses_idx_files(cache):
    sub = cache / "fashion-mnist"
    sub.mkdir()
    rng = np.random.default_rng(1)
    imgs = {"train": rng.integers(0, 256, (5, 28, 28), dtype=np.uint8),
            "t10k": rng.integers(0, 256, (3, 28, 28), dtype=np.uint8)}
    labels = {"train": np.array([1, 2, 3, 4, 5], np.uint8), "t10k": np.array([9, 8, 7], np.uint8)}
    for part in ("train", "t10k"):
        with gzip.open(sub / f"{part}-labels-idx1-ubyte.gz", "wb") as f:
            f.write(b"\0" * 8 + labels[part].tobytes())
        with gzip.open(sub / f"{part}-images-idx3-ubyte.gz", "wb") as f:
            f.write(b"\0" * 16 + imgs[part].tobytes())
    (x_train, y_train), (x_test, y_test) = datasets.fashion_mnist.load_data()
    np.testing.assert_array_equal(x_train, imgs["train"])
    np.testing.assert_array_equal(x_test, imgs["t10k"])
    np.testing.assert_array_equal(y_train, labels["train"])
    np.testing.assert_array_equal(y_test, labels["t10k"])


def test_boston_housing_split_is_keras_seeded_shuffle(cache, monkeypatch):
    x = np.arange(50 * 13, dtype=np.float64).reshape(50, 13)
    y = np.arange(50, dtype=np.float64)
    np.savez(cache / "boston_housing.npz", x=x, y=y)
    _publish(cache / "boston_housing.npz", monkeypatch)
    (x_train, y_train), (x_test, y_test) = datasets.boston_housing.load_data(test_split=0.2,
                                                                             seed=5)
    order = np.arange(50)
    np.random.RandomState(5).shuffle(order)
    np.testing.assert_array_equal(y_train, order[:40])
    np.testing.assert_array_equal(y_test, order[40:])
    np.testing.assert_array_equal(x_test, x[order[40:]])
    with pytest.raises(ValueError, match="test_split"):
        datasets.boston_housing.load_data(test_split=1.0)


def test_pickled_datasets_are_refused_with_the_reason():
    for name in ("cifar10", "cifar100", "imdb", "reuters"):
        with pytest.raises(NotImplementedError, match="pickle"):
            getattr(datasets, name).load_data()
