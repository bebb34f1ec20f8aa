"""lk.utils.PyDataset: Keras 3's Python batch source in fit / evaluate / predict."""
import numpy as np
import pytest

import layerkit as lk


class Batches(lk.utils.PyDataset):
    def __init__(self, x, y, batch_size, **kwargs):
        super().__init__(**kwargs)
        self.x, self.y, self.batch_size = x, y, batch_size
        self.epochs_seen, self.calls = 0, []

    def __len__(self):
        return int(np.ceil(len(self.x) / self.batch_size))

    def __getitem__(self, i):
        self.calls.append(i)
        s = slice(i * self.batch_size, (i + 1) * self.batch_size)
        return self.x[s], self.y[s]

    def on_epoch_end(self):
        self.epochs_seen += 1


def _data(n=10):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((n, 3)).astype(np.float32)
    return x, (x @ np.float32([[1.0], [-2.0], [0.5]]))


def _model():
    lk.random.set_seed(1)
    model = lk.Sequential([lk.Input((3,)), lk.layers.Dense(1)])
    model.compile(lk.optimizers.SGD(0.1), "mse")
    return model


def test_fit_on_a_py_dataset_equals_fit_on_the_same_batches_of_arrays():
    x, y = _data()
    data = Batches(x, y, 4, workers=2)
    a, b = _model(), _model()
    ha = a.fit(data, epochs=3, verbose=0)
    hb = b.fit(x, y, batch_size=4, epochs=3, shuffle=False, verbose=0)
    np.testing.assert_allclose(ha.history["loss"], hb.history["loss"], rtol=1e-6)
    assert data.epochs_seen == 3 and data.calls == [0, 1, 2] * 3
    assert data.workers == 2 and not data.use_multiprocessing
    np.testing.assert_allclose(a.predict(Batches(x, y, 4), verbose=0), a.predict(x, verbose=0),
                               rtol=1e-6)
    assert a.evaluate(Batches(x, y, 4), verbose=0) == pytest.approx(
        a.evaluate(x, y, batch_size=4, verbose=0), rel=1e-6)


def test_without_len_it_runs_until_index_error():
    class Until(lk.utils.PyDataset):
        def __getitem__(self, i):
            if i >= 2:
                raise IndexError(i)
            x, y = _data(4)
            return x, y

    assert Until().num_batches is None and len(list(Until())) == 2
    assert len(_model().fit(Until(), epochs=2, verbose=0).history["loss"]) == 2


def test_a_subclass_without_getitem_says_what_to_define():
    with pytest.raises(NotImplementedError, match="must define __getitem__"):
        next(iter(type("Empty", (lk.utils.PyDataset,), {"__len__": lambda self: 1})()))
