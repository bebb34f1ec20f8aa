"""lk.callbacks.TensorBoard, read back with TensorBoard's own event reader."""
import os
import struct

import numpy as np
import pytest

import layerkit as lk
from layerkit.io import tfevents

ea_module = pytest.importorskip("tensorboard.backend.event_processing.event_accumulator")
L = lk.layers


def _read(directory):
    acc = ea_module.EventAccumulator(str(directory), size_guidance={
        "scalars": 0, "histograms": 0, "tensors": 0})
    acc.Reload()
    return acc


def _scalars(acc, tag):
    return [(e.step, e.value) for e in acc.Scalars(tag)]


def _model():
    inp = lk.Input((4,), name="features")
    h = L.Dense(6, activation="relu", name="hidden")(inp)
    out = L.Dense(1, name="out")(h)
    model = lk.Model(inp, out)
    model.compile(lk.optimizers.Adam(0.01), "mse", metrics=["mae"])
    return model


@pytest.fixture
def trained(tmp_path, rng):
    x = rng.normal(size=(40, 4)).astype(np.float32)
    y = x.sum(axis=1, keepdims=True)
    model = _model()
    tb = lk.callbacks.TensorBoard(tmp_path / "logs", histogram_freq=2, update_freq=3)
    history = model.fit(x, y, epochs=3, batch_size=10, validation_split=0.25, verbose=0,
                        callbacks=[tb])
    return model, history, tmp_path / "logs"


def test_epoch_scalars_match_history(trained):
    model, history, logs = trained
    assert sorted(os.listdir(logs)) == ["train", "validation"]
    train, val = _read(logs / "train"), _read(logs / "validation")
    for name in ("loss", "mae"):
        got = _scalars(train, f"epoch_{name}")
        assert [s for s, _ in got] == [0, 1, 2]
        np.testing.assert_allclose([v for _, v in got], history.history[name], rtol=1e-6)
        got = _scalars(val, f"epoch_{name}")
        np.testing.assert_allclose([v for _, v in got], history.history[f"val_{name}"],
                                   rtol=1e-6)
    assert [v for _, v in _scalars(train, "epoch_learning_rate")] == pytest.approx([0.01] * 3)
    assert "epoch_val_loss" not in train.Tags()["scalars"]


def test_batch_scalars_every_update_freq_batches(trained):
    _, _, logs = trained
    train = _read(logs / "train")
    # 30 training samples / 10 = 3 batches per epoch, 9 in all; every 3rd is written.
    assert [s for s, _ in _scalars(train, "batch_loss")] == [3, 6, 9]
    assert [s for s, _ in _scalars(train, "batch_mae")] == [3, 6, 9]


def test_evaluation_vs_iterations(trained):
    _, _, logs = trained
    val = _read(logs / "validation")
    assert [s for s, _ in _scalars(val, "evaluation_loss_vs_iterations")] == [3, 6, 9]
    np.testing.assert_allclose([v for _, v in _scalars(val, "evaluation_loss_vs_iterations")],
                               [v for _, v in _scalars(val, "epoch_loss")], rtol=1e-6)


def test_weight_histograms(trained):
    model, _, logs = trained
    train = _read(logs / "train")
    tags = set(train.Tags()["histograms"])
    assert tags == {"hidden/kernel/histogram", "hidden/bias/histogram",
                    "out/kernel/histogram", "out/bias/histogram"}
    events = train.Histograms("hidden/kernel/histogram")
    assert [e.step for e in events] == [0, 2]  # histogram_freq=2
    h = events[-1].histogram_value
    w = model.get_layer("hidden").kernel.numpy().astype(np.float64)  # after the last epoch
    assert h.num == w.size and sum(h.bucket) == w.size
    assert h.min == pytest.approx(w.min()) and h.max == pytest.approx(w.max())
    assert h.sum == pytest.approx(w.sum()) and h.sum_squares == pytest.approx((w * w).sum())


def test_graph_of_a_functional_model(trained):
    _, _, logs = trained
    graph = _read(logs / "train").Graph()
    nodes = {n.name: n for n in graph.node}
    assert {n: (nodes[n].op, list(nodes[n].input)) for n in nodes} == {
        "features": ("InputLayer", []), "hidden": ("Dense", ["features"]),
        "out": ("Dense", ["hidden"])}
    dims = [d.size for d in nodes["hidden"].attr["_output_shapes"].list.shape[0].dim]
    assert dims == [-1, 6]


def test_graph_of_a_sequential_model(tmp_path, rng):
    model = lk.Sequential([lk.Input((3,)), L.Dense(2, name="a"), L.Dense(1, name="b")])
    model.compile("sgd", "mse")
    model.fit(rng.normal(size=(8, 3)), rng.normal(size=(8, 1)), verbose=0,
              callbacks=[lk.callbacks.TensorBoard(tmp_path)])
    graph = _read(tmp_path / "train").Graph()
    assert [(n.name, n.op, list(n.input)) for n in graph.node] == [
        ("input_layer", "InputLayer", []), ("a", "Dense", ["input_layer"]),
        ("b", "Dense", ["a"])]
    assert not os.path.exists(tmp_path / "validation")


def test_arguments_as_keras():
    tb = lk.callbacks.TensorBoard()
    assert (tb.log_dir, tb.histogram_freq, tb.write_graph, tb.update_freq) == \
        ("logs", 0, True, "epoch")
    assert lk.callbacks.TensorBoard(update_freq="batch").update_freq == 1
    with pytest.raises(ValueError, match="update_freq"):
        lk.callbacks.TensorBoard(update_freq="often")
    with pytest.raises(ValueError, match="profil"):
        lk.callbacks.TensorBoard(profile_batch=2)
    with pytest.raises(NotImplementedError, match="write_images"):
        lk.callbacks.TensorBoard(write_images=True)


def test_crc32c_and_record_framing():
    assert tfevents.crc32c(b"123456789") == 0xE3069283  # the CRC-32C check value
    from tensorboard.compat.tensorflow_stub.pywrap_tensorflow import masked_crc32c
    for data in (b"", b"a", bytes(range(256)) * 3):
        assert tfevents.masked_crc32c(data) == masked_crc32c(data)
    rec = tfevents.record(b"payload")
    (n,) = struct.unpack("<Q", rec[:8])
    assert n == 7 and rec[12:19] == b"payload"


def test_corrupted_file_is_detected_by_the_reader(tmp_path):
    w = tfevents.EventFileWriter(tmp_path)
    w.add_scalar("x", 1.5, step=4)
    w.close()
    assert _scalars(_read(tmp_path), "x") == [(4, 1.5)]
    data = bytearray(open(w.path, "rb").read())
    data[-6] ^= 0xFF  # a byte of the float value: still parses, only the CRC can tell
    open(w.path, "wb").write(bytes(data))
    assert "x" not in _read(tmp_path).Tags()["scalars"]
