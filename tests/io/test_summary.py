"""lk.summary (TensorFlow's tf.summary): events read back with TensorBoard's own reader."""
import os
import warnings

import numpy as np
import pytest

import layerkit as lk
from layerkit.utils.image_utils import decode_png, encode_png


def _read(logdir):
    """{tag: [(step, array), ...]} and {tag: plugin name} of a run, via TensorBoard."""
    ea = pytest.importorskip("tensorboard.backend.event_processing.event_accumulator")
    tensor_util = pytest.importorskip("tensorboard.util.tensor_util")
    acc = ea.EventAccumulator(str(logdir), size_guidance={"tensors": 0})
    acc.Reload()
    tags = acc.Tags()["tensors"]
    values = {t: [(e.step, tensor_util.make_ndarray(e.tensor_proto)) for e in acc.Tensors(t)]
              for t in tags}
    meta = {t: acc.SummaryMetadata(t) for t in tags}
    return values, meta


@pytest.fixture(autouse=True)
def _clean_state():
    yield
    lk.summary.experimental.set_step(None)
    lk.summary._summary._STATE.writer = None


def test_scalars_tags_steps_values_and_metadata(tmp_path):
    writer = lk.summary.create_file_writer(tmp_path)
    with writer.as_default():
        for step in range(3):
            assert bool(lk.summary.scalar("loss", 1.0 / (step + 1), step=step))
        lk.summary.scalar("acc", lk.constant(0.75, dtype="float64"), step=7,
                          description="accuracy")
        with lk.name_scope("val"):
            lk.summary.scalar("loss", np.float32(2.5), step=1)
    writer.close()
    values, meta = _read(tmp_path)
    assert sorted(values) == ["acc", "loss", "val/loss"]
    assert [s for s, _ in values["loss"]] == [0, 1, 2]
    np.testing.assert_allclose([v for _, v in values["loss"]], [1.0, 0.5, 1 / 3], rtol=1e-6)
    step, v = values["acc"][0]
    assert step == 7 and v.dtype == np.float32 and v.shape == () and v == 0.75
    assert values["val/loss"] == [(1, 2.5)]
    assert meta["loss"].plugin_data.plugin_name == "scalars"
    assert meta["acc"].summary_description == "accuracy"
    assert [f for f in os.listdir(tmp_path) if f.startswith("events.out.tfevents.")] == \
        [os.path.basename(writer.path)]
    assert writer.path.endswith(".v2")


def test_scalar_needs_rank_0_data(tmp_path):
    with lk.summary.create_file_writer(tmp_path).as_default(step=0):
        with pytest.raises(ValueError, match="scalar.*rank 0.*\\(2,\\)"):
            lk.summary.scalar("x", [1.0, 2.0])


def test_histogram_buckets(tmp_path, rng):
    data = rng.normal(size=(40, 5)).astype(np.float32)
    with lk.summary.create_file_writer(tmp_path).as_default(step=3):
        lk.summary.histogram("ten", np.arange(10), buckets=5)
        lk.summary.histogram("default", lk.constant(data))
        lk.summary.histogram("empty", np.zeros(0), buckets=4)
        lk.summary.histogram("single", [2.0, 2.0, 2.0], buckets=3)
        lk.summary.histogram("none", [1.0, 2.0], buckets=0)
    values, meta = _read(tmp_path)
    assert meta["ten"].plugin_data.plugin_name == "histograms"
    step, h = values["ten"][0]
    assert step == 3 and h.dtype == np.float64 and h.shape == (5, 3)
    # 0..9 in 5 buckets of width 1.8: two values in each, 9 in the closed last bucket
    np.testing.assert_allclose(h[:, 0], [0, 1.8, 3.6, 5.4, 7.2])
    np.testing.assert_allclose(h[:, 1], [1.8, 3.6, 5.4, 7.2, 9.0])
    np.testing.assert_array_equal(h[:, 2], [2, 2, 2, 2, 2])
    h = values["default"][0][1]
    d = data.astype(np.float64).ravel()
    assert h.shape == (30, 3) and h[:, 2].sum() == d.size
    assert h[0, 0] == d.min() and h[-1, 1] == d.max()
    np.testing.assert_allclose(h[1:, 0], h[:-1, 1])
    expected = np.histogram(d, bins=30, range=(d.min(), d.max()))[0]
    assert np.abs(h[:, 2] - expected).sum() <= 2  # edge rounding only
    np.testing.assert_array_equal(values["empty"][0][1], np.zeros((4, 3)))
    np.testing.assert_array_equal(values["single"][0][1], [[2, 2, 0], [2, 2, 0], [2, 2, 3]])
    assert values["none"][0][1].shape == (0, 3)


def test_histogram_buckets_must_be_int(tmp_path):
    with lk.summary.create_file_writer(tmp_path).as_default(step=0):
        with pytest.raises(TypeError, match="buckets"):
            lk.summary.histogram("h", [1.0], buckets=2.5)


def test_text(tmp_path):
    with lk.summary.create_file_writer(tmp_path).as_default(step=5):
        lk.summary.text("note", "hello **world**")
        lk.summary.text("table", lk.constant([["a", "b"], ["c", "déjà"]]))
        with pytest.raises(TypeError, match="text.*string"):
            lk.summary.text("bad", 3.0)
    values, meta = _read(tmp_path)
    assert meta["note"].plugin_data.plugin_name == "text"
    assert values["note"] == [(5, np.array(b"hello **world**", dtype=object))]
    table = values["table"][0][1]
    assert table.shape == (2, 2)
    assert [x.decode() for x in table.ravel()] == ["a", "b", "c", "déjà"]


def test_images_are_png_with_tf_dtype_conversion(tmp_path, rng):
    floats = rng.uniform(size=(4, 3, 5, 3)).astype(np.float32)
    floats[0, 0, 0] = [-1.0, 0.5, 2.0]  # clipped, scaled by 255.5, truncated
    gray = rng.integers(0, 256, size=(2, 6, 2, 1), dtype=np.uint8)
    with lk.summary.create_file_writer(tmp_path).as_default(step=1):
        lk.summary.image("rgb", lk.constant(floats), max_outputs=2)
        lk.summary.image("gray", gray)
        lk.summary.image("none", gray, max_outputs=0)
    values, meta = _read(tmp_path)
    assert meta["rgb"].plugin_data.plugin_name == "images"
    rgb = values["rgb"][0][1]
    assert list(rgb[:2]) == [b"5", b"3"] and len(rgb) == 4  # width, height, two PNGs
    expected = np.clip(floats.astype(np.float64) * 255.5, 0, 255).astype(np.uint8)
    assert list(expected[0, 0, 0]) == [0, 127, 255]
    for png, want in zip(rgb[2:], expected[:2]):
        px, info = decode_png(png, use_pillow=False)
        assert info["color_type"] == 2
        np.testing.assert_array_equal(px, want)
    g = values["gray"][0][1]
    assert list(g[:2]) == [b"2", b"6"] and len(g) == 4
    for png, want in zip(g[2:], gray):
        np.testing.assert_array_equal(decode_png(png, use_pillow=False)[0], want)
    assert list(values["none"][0][1]) == [b"2", b"6"]


def test_image_rank_and_max_outputs_checked(tmp_path):
    with lk.summary.create_file_writer(tmp_path).as_default(step=0):
        with pytest.raises(ValueError, match="rank 4"):
            lk.summary.image("x", np.zeros((3, 3, 1)))
        with pytest.raises(ValueError, match="max_outputs"):
            lk.summary.image("x", np.zeros((1, 3, 3, 1)), max_outputs=-1)


@pytest.mark.parametrize("channels,color_type", [(1, 0), (2, 4), (3, 2), (4, 6)])
def test_encode_png_round_trip(rng, channels, color_type):
    px = rng.integers(0, 256, size=(7, 9, channels), dtype=np.uint8)
    png = encode_png(px)
    got, info = decode_png(png, use_pillow=False)
    assert info["color_type"] == color_type and info["depth"] == 8
    np.testing.assert_array_equal(got, px)
    pil = pytest.importorskip("PIL.Image")
    import io
    np.testing.assert_array_equal(np.asarray(pil.open(io.BytesIO(png))).reshape(px.shape), px)


def test_encode_png_rejects_bad_arrays():
    with pytest.raises(ValueError, match="uint8.*float32"):
        encode_png(np.zeros((2, 2, 3), np.float32))
    with pytest.raises(ValueError, match="channels.*\\(2, 2, 5\\)"):
        encode_png(np.zeros((2, 2, 5), np.uint8))


def test_no_default_writer_returns_false(tmp_path):
    assert not bool(lk.summary.scalar("x", 1.0, step=0))
    assert not bool(lk.summary.histogram("x", [1.0]))  # no step needed either
    assert not bool(lk.summary.should_record_summaries())
    noop = lk.summary.create_noop_writer()
    with noop.as_default(step=1):
        assert not bool(lk.summary.text("t", "a"))
    noop.set_as_default()
    assert not bool(lk.summary.image("i", np.zeros((1, 2, 2, 1))))
    noop.flush()
    noop.close()


def test_missing_step_raises_only_when_writing(tmp_path):
    with lk.summary.create_file_writer(tmp_path).as_default():
        with pytest.raises(ValueError, match="No step set.*set_step"):
            lk.summary.scalar("x", 1.0)
        with lk.summary.record_if(False):
            assert not bool(lk.summary.scalar("x", 1.0))


def test_default_step_and_writer_scoping(tmp_path):
    outer = lk.summary.create_file_writer(tmp_path / "outer")
    inner = lk.summary.create_file_writer(tmp_path / "inner")
    assert lk.summary.experimental.get_step() is None
    lk.summary.experimental.set_step(10)
    outer.set_as_default()
    lk.summary.scalar("x", 1.0)
    with inner.as_default(step=20):
        assert lk.summary.experimental.get_step() == 20
        lk.summary.scalar("x", 2.0)
        lk.summary.scalar("x", 3.0, step=21)  # the argument wins
    assert lk.summary.experimental.get_step() == 10
    lk.summary.scalar("x", 4.0)
    step = lk.Variable(5, dtype="int64")
    lk.summary.experimental.set_step(step)
    step.assign(6)
    lk.summary.scalar("x", 5.0)  # a Variable step is read when writing
    lk.summary.flush()
    outer.close()
    inner.close()
    assert _read(tmp_path / "outer")[0]["x"] == [(10, 1.0), (10, 4.0), (6, 5.0)]
    assert _read(tmp_path / "inner")[0]["x"] == [(20, 2.0), (21, 3.0)]


def test_record_if(tmp_path):
    every_other = lk.Variable(0, dtype="int64")
    with lk.summary.create_file_writer(tmp_path).as_default():
        assert bool(lk.summary.should_record_summaries())
        with lk.summary.record_if(False):
            assert not bool(lk.summary.should_record_summaries())
            assert not bool(lk.summary.scalar("a", 1.0, step=0))
            with lk.summary.record_if(True):
                assert bool(lk.summary.scalar("a", 2.0, step=1))
            assert not bool(lk.summary.scalar("a", 3.0, step=2))
        with lk.summary.record_if(lambda: every_other % 2 == 0):
            for i in range(4):
                lk.summary.scalar("b", float(i), step=i)
                every_other.assign_add(1)
        with lk.summary.record_if(lk.constant(False)):
            assert not bool(lk.summary.scalar("c", 1.0, step=0))
    values, _ = _read(tmp_path)
    assert values["a"] == [(1, 2.0)]
    assert values["b"] == [(0, 0.0), (2, 2.0)]
    assert "c" not in values


def test_summaries_in_lk_function_write_on_every_call(tmp_path):
    writer = lk.summary.create_file_writer(tmp_path)
    step = lk.Variable(0, dtype="int64")
    w = lk.Variable(1.0)

    @lk.function
    def train_step(x):
        w.assign_add(x[0])
        lk.summary.scalar("w", w, step=step)
        with lk.summary.record_if(step % 2 == 0):
            lk.summary.histogram("x", x * w, step=step, buckets=2)
        lk.summary.text("const", "step", step=step)
        step.assign_add(1)
        return w * 2.0

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no eager fallback
        with writer.as_default():
            outs = [float(train_step(lk.constant([1.0, 3.0]))) for _ in range(4)]
    assert train_step.trace_count == 1
    cf = train_step.get_concrete_function(lk.constant([1.0, 3.0]))
    assert cf.mode == "graph"
    assert outs == [4.0, 6.0, 8.0, 10.0]
    values, _ = _read(tmp_path)
    # w after the assign_add (1 + call + 1): one event per call at the live step
    assert [(s, float(v)) for s, v in values["w"]] == [(0, 2.0), (1, 3.0), (2, 4.0), (3, 5.0)]
    assert [s for s, _ in values["x"]] == [0, 2]
    np.testing.assert_allclose(values["x"][1][1], [[4, 8, 1], [8, 12, 1]])  # [1, 3] * 4
    assert [s for s, _ in values["const"]] == [0, 1, 2, 3]


def test_step_required_in_lk_function_too(tmp_path):
    @lk.function
    def f(x):
        lk.summary.scalar("x", x)
        return x

    with lk.summary.create_file_writer(tmp_path).as_default():
        with pytest.raises(ValueError, match="No step set"):
            f(lk.constant(1.0))


def test_summary_under_gradient_tape(tmp_path):
    x = lk.Variable(3.0)
    with lk.summary.create_file_writer(tmp_path).as_default(step=0):
        with lk.GradientTape() as tape:
            y = x * x
            assert bool(lk.summary.scalar("y", y))
    assert float(tape.gradient(y, x)) == 6.0
    assert _read(tmp_path)[0]["y"] == [(0, 9.0)]


def test_max_queue_and_flush(tmp_path):
    writer = lk.summary.create_file_writer(tmp_path, max_queue=2, filename_suffix=".mine")
    assert writer.path.endswith(".mine")
    size0 = os.path.getsize(writer.path)
    with writer.as_default(step=0):
        lk.summary.scalar("x", 1.0)
        assert os.path.getsize(writer.path) == size0  # queued
        lk.summary.scalar("x", 2.0)
        size2 = os.path.getsize(writer.path)
        assert size2 > size0  # the queue of 2 was flushed
        lk.summary.scalar("x", 3.0)
        assert os.path.getsize(writer.path) == size2
        writer.flush()
        assert os.path.getsize(writer.path) > size2
    now = lk.summary.create_file_writer(tmp_path / "b", flush_millis=0)
    size0 = os.path.getsize(now.path)
    with now.as_default(step=0):
        lk.summary.scalar("x", 1.0)
        assert os.path.getsize(now.path) > size0


def test_closed_writer(tmp_path):
    writer = lk.summary.create_file_writer(tmp_path)
    writer.set_as_default(step=0)
    writer.close()
    with pytest.raises(RuntimeError, match="closed"):  # still the default, as in TF
        lk.summary.scalar("x", 1.0)
    with pytest.raises(RuntimeError, match="closed"):
        with writer.as_default():
            pass
    with pytest.raises(RuntimeError, match="closed"):
        writer.set_as_default()
    writer.flush()  # nothing to do
    with pytest.raises(ValueError, match="logdir"):
        lk.summary.create_file_writer(None)


def test_trace_functions():
    with pytest.raises(NotImplementedError, match="trace_on"):
        lk.summary.trace_on(graph=True)
    lk.summary.trace_off()
    with pytest.warns(UserWarning, match="trace_export"):
        lk.summary.trace_export("graph", step=0)


def test_summary_scope():
    with lk.name_scope("outer"):
        with lk.summary.experimental.summary_scope("loss", "scalar_summary") as (tag, scope):
            assert tag == "outer/loss"
            assert scope == "outer/loss/"
