"""lk.utils.text_dataset_from_directory / image_dataset_from_directory: Keras 3's labels,
file order, RandomState shuffling and validation splits; TensorFlow's decoding and resizing
numbers (images written here by a small PNG/BMP encoder that follows the format specs)."""
import io
import struct
import sys
import zlib

import numpy as np
import pytest

import layerkit as lk


@pytest.fixture
def texts(tmp_path):
    root = tmp_path / "texts"
    for cls, n in (("neg", 4), ("pos", 6)):
        (root / cls).mkdir(parents=True)
        for i in range(n):
            (root / cls / f"{i:02d}.txt").write_text(f"{cls} review {i}")
    (root / "pos" / "notes.md").write_text("ignored: not .txt")
    (root / ".hidden").mkdir()
    return root


def _pairs(ds):
    return [(x, int(y)) for xs, ys in ds.as_numpy_iterator() for x, y in zip(xs, ys)]


def test_text_labels_follow_the_sorted_class_directories(texts, capsys):
    ds = lk.utils.text_dataset_from_directory(texts, batch_size=3, seed=1)
    assert "Found 10 files belonging to 2 classes." in capsys.readouterr().out
    assert ds.class_names == ["neg", "pos"] and isinstance(ds, lk.data.Dataset)
    pairs = _pairs(ds)
    assert len(pairs) == 10
    assert all(text.startswith({0: b"neg", 1: b"pos"}[label]) for text, label in pairs)
    unshuffled = lk.utils.text_dataset_from_directory(texts, batch_size=None, shuffle=False,
                                                      verbose=False)
    assert [(t, int(y)) for t, y in unshuffled.as_numpy_iterator()][:2] == [
        (b"neg review 0", 0), (b"neg review 1", 0)]


def test_text_label_modes_max_length_and_explicit_labels(texts):
    kw = dict(batch_size=None, shuffle=False, verbose=False)
    cat = list(lk.utils.text_dataset_from_directory(texts, label_mode="categorical", **kw)
               .as_numpy_iterator())
    assert cat[0][1].tolist() == [1.0, 0.0] and cat[-1][1].tolist() == [0.0, 1.0]
    binary = list(lk.utils.text_dataset_from_directory(texts, label_mode="binary",
                                                       batch_size=4, shuffle=False,
                                                       verbose=False).as_numpy_iterator())
    assert binary[0][1].shape == (4, 1) and binary[0][1].dtype == np.float32
    short = list(lk.utils.text_dataset_from_directory(texts, label_mode=None, max_length=3,
                                                      **kw).as_numpy_iterator())
    assert short[0] == b"neg" and len(short) == 10
    only_pos = lk.utils.text_dataset_from_directory(texts, class_names=["pos"], **kw)
    assert only_pos.class_names == ["pos"] and len(list(only_pos)) == 6
    # explicit labels, one per file in sorted order; the class names are the sorted labels
    given = lk.utils.text_dataset_from_directory(texts / "neg", labels=[3, 1, 3, 2], **kw)
    assert given.class_names == ["1", "2", "3"]
    assert [int(y) for _, y in given.as_numpy_iterator()] == [3, 1, 3, 2]
    # one-hot over len(class_names) = 3 columns: label 3 is out of range, all zeros
    onehot = lk.utils.text_dataset_from_directory(texts / "neg", labels=[3, 1, 3, 2],
                                                  label_mode="categorical", **kw)
    assert [y.tolist() for _, y in onehot.as_numpy_iterator()] == [
        [0, 0, 0], [0, 1, 0], [0, 0, 0], [0, 0, 1]]


def test_text_validation_split_is_keras_randomstate_order(texts):
    kw = dict(batch_size=None, validation_split=0.3, seed=7, verbose=False)
    train = lk.utils.text_dataset_from_directory(texts, subset="training", **kw)
    val = lk.utils.text_dataset_from_directory(texts, subset="validation", **kw)
    both = lk.utils.text_dataset_from_directory(texts, subset="both", **kw)
    files = sorted(f"{c}/{i:02d}.txt" for c, n in (("neg", 4), ("pos", 6)) for i in range(n))
    np.random.RandomState(7).shuffle(files)   # Keras: the sorted list, RandomState(seed)
    expected_val = [(texts / f).read_bytes() for f in files[-3:]]   # int(0.3 * 10) = 3
    # a lone validation subset is buffer-shuffled (Keras too): same files, any order
    assert sorted(t for t, _ in val.as_numpy_iterator()) == sorted(expected_val)
    train_texts = sorted(t for t, _ in train.as_numpy_iterator())
    assert train_texts == sorted((texts / f).read_bytes() for f in files[:-3])
    # subset="both": the validation half keeps the split's order
    assert len(both) == 2 and [t for t, _ in both[1].as_numpy_iterator()] == expected_val
    unshuffled = lk.utils.text_dataset_from_directory(
        texts, subset="validation", shuffle=False, batch_size=None, validation_split=0.3,
        verbose=False)
    assert [t for t, _ in unshuffled.as_numpy_iterator()] == [
        (texts / f).read_bytes() for f in sorted(files)[-3:]]


def test_text_argument_errors(texts, tmp_path):
    t = lk.utils.text_dataset_from_directory
    with pytest.raises(ValueError, match="must provide a `seed`"):
        t(texts, validation_split=0.2, subset="training")
    with pytest.raises(ValueError, match="`validation_split` must be set"):
        t(texts, subset="training", seed=1)
    with pytest.raises(ValueError, match="between 0 and 1"):
        t(texts, validation_split=1.5, subset="training", seed=1)
    with pytest.raises(ValueError, match="label_mode"):
        t(texts, label_mode="onehot")
    with pytest.raises(ValueError, match="did not match the names"):
        t(texts, class_names=["neg", "neutral"])
    with pytest.raises(ValueError, match="list/tuple of integer labels"):
        t(texts, labels=np.zeros(10, int))   # Keras takes lists and tuples only
    with pytest.raises(ValueError, match="len\\(labels\\) is 2 while we found 10 files"):
        t(texts, labels=[0, 1])
    (texts / "third").mkdir()
    with pytest.raises(ValueError, match="exactly 2 class_names"):
        t(texts, label_mode="binary", verbose=False)
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="no text files found"):
        t(tmp_path / "empty", verbose=False)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        t(tmp_path / "nowhere")
    with pytest.raises(ValueError, match='`format` should be either "tf" or "grain"'):
        t(texts, format="torch")
    # int(0.05 * 10) = 0 validation files: Keras's [:-0] slice leaves no training files
    for subset in ("training", "validation"):
        with pytest.raises(ValueError, match=f"no {subset} text files.*gives 0 validation"):
            t(texts, validation_split=0.05, subset=subset, seed=1, verbose=False)




# ---- image files, written from the PNG and BMP specifications --------------------------
def _paeth(a, b, c):
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    return np.where((pa <= pb) & (pa <= pc), a, np.where(pb <= pc, b, c))


def _scanlines(samples, depth, filters):
    """Pack (h, w, c) samples into filtered scanlines; filters[r] is row r's filter."""
    h, w, c = samples.shape
    if depth == 16:
        rows = samples.astype(">u2").view(np.uint8).reshape(h, -1)
    elif depth == 8:
        rows = samples.astype(np.uint8).reshape(h, -1)
    else:   # sub-byte samples, most significant bits first, rows padded to a byte
        per = 8 // depth
        v = np.zeros((h, -(-w // per) * per), np.int64)
        v[:, :w] = samples[..., 0]
        v = v.reshape(h, -1, per) << (8 - depth * (np.arange(per) + 1))
        rows = v.sum(-1).astype(np.uint8)
    bpp = max(1, depth * c // 8)
    out, prev = [], np.zeros(rows.shape[1], np.int64)
    for r in range(h):
        cur = rows[r].astype(np.int64)
        left = np.concatenate([np.zeros(bpp, np.int64), cur[:-bpp]])
        upleft = np.concatenate([np.zeros(bpp, np.int64), prev[:-bpp]])
        pred = [0, left, prev, (left + prev) // 2, _paeth(left, prev, upleft)][filters[r]]
        out.append(bytes([filters[r]]) + ((cur - pred) % 256).astype(np.uint8).tobytes())
        prev = cur
    return b"".join(out)


def _chunk(kind, body):
    return struct.pack(">I", len(body)) + kind + body + struct.pack(
        ">I", zlib.crc32(kind + body))


def png_bytes(samples, color_type, depth=8, palette=None, trns=None, interlace=False):
    samples = np.asarray(samples)
    if samples.ndim == 2:
        samples = samples[..., None]
    h, w, _ = samples.shape
    passes = ([(0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4),
               (1, 0, 2, 2), (0, 1, 1, 2)] if interlace else [(0, 0, 1, 1)])
    raw = b""
    for x0, y0, dx, dy in passes:
        sub = samples[y0::dy, x0::dx]
        if sub.size:
            raw += _scanlines(sub, depth, [r % 5 for r in range(sub.shape[0])])
    data = b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", struct.pack(
        ">IIBBBBB", w, h, depth, color_type, 0, 0, int(interlace)))
    if palette is not None:
        data += _chunk(b"PLTE", np.asarray(palette, np.uint8).tobytes())
    if trns is not None:
        data += _chunk(b"tRNS", trns)
    raw_z = zlib.compress(raw)
    return (data + _chunk(b"IDAT", raw_z[:5]) + _chunk(b"IDAT", raw_z[5:])
            + _chunk(b"IEND", b""))


def bmp_bytes(rgb=None, index=None, palette=None, top_down=False, alpha=None):
    """An uncompressed BMP: 24-bit from ``rgb``, 32-bit with ``alpha``, or 8-bit from
    palette ``index``."""
    if index is not None:
        h, w = index.shape
        bpp, pixels = 8, index.astype(np.uint8)[..., None]
        table = np.concatenate([np.asarray(palette, np.uint8)[:, ::-1],
                                np.zeros((len(palette), 1), np.uint8)], 1).tobytes()
    else:
        h, w, _ = rgb.shape
        pixels = rgb[..., ::-1] if alpha is None else np.dstack([rgb[..., ::-1], alpha])
        bpp, table = 8 * pixels.shape[-1], b""
    stride = (bpp * w + 31) // 32 * 4
    rows = np.zeros((h, stride), np.uint8)
    rows[:, :w * bpp // 8] = pixels.reshape(h, -1)
    body = (rows if top_down else rows[::-1]).tobytes()
    offset = 54 + len(table)
    header = b"BM" + struct.pack("<IHHI", offset + len(body), 0, 0, offset)
    info = struct.pack("<IiiHHIIiiII", 40, w, -h if top_down else h, 1, bpp, 0, len(body),
                       2835, 2835, 0 if index is None else len(palette), 0)
    return header + info + table + body


decode = lk.utils.image_utils.decode_image


@pytest.fixture(params=["numpy", "pillow"])
def png_path(request, monkeypatch):
    """Run a test with PNG pixel data unpacked by NumPy (Pillow hidden) and by Pillow."""
    if request.param == "numpy":
        monkeypatch.setitem(sys.modules, "PIL", None)
    else:
        pytest.importorskip("PIL.Image")
    return request.param


@pytest.mark.parametrize("interlace", [False, True])
@pytest.mark.parametrize("depth", [8, 16])
def test_png_rgb_rgba_gray_all_filters_and_interlacing(interlace, depth, png_path):
    rng = np.random.default_rng(depth + interlace)
    top = 255 if depth == 8 else 65535
    rgba = rng.integers(0, top + 1, (13, 11, 4))
    to8 = (rgba >> 8) if depth == 16 else rgba   # TF keeps the high byte of 16-bit samples
    rgb_png = png_bytes(rgba[..., :3], 2, depth, interlace=interlace)
    np.testing.assert_array_equal(decode(rgb_png, 3), to8[..., :3])
    np.testing.assert_array_equal(decode(rgb_png, 4)[..., 3], 255)   # alpha added
    np.testing.assert_array_equal(decode(png_bytes(rgba, 6, depth, interlace=interlace), 4),
                                  to8)
    np.testing.assert_array_equal(decode(png_bytes(rgba, 6, depth), 3), to8[..., :3])
    # grayscale: libpng's 601 luma, (9797 R + 19234 G + 3737 B) >> 15 on the full-depth
    # samples, truncated at 8 bits and rounded at 16
    dot = 9797 * rgba[..., 0] + 19234 * rgba[..., 1] + 3737 * rgba[..., 2]
    np.testing.assert_array_equal(decode(rgb_png, 1)[..., 0],
                                  ((dot + 16384) >> 15) >> 8 if depth == 16 else dot >> 15)
    gray_alpha = png_bytes(rgba[..., :2], 4, depth, interlace=interlace)
    np.testing.assert_array_equal(decode(gray_alpha, 3), np.repeat(to8[..., :1], 3, -1))
    np.testing.assert_array_equal(decode(gray_alpha, 4)[..., 3], to8[..., 1])


@pytest.mark.parametrize("depth", [1, 2, 4, 8])
def test_png_low_bit_depths_palettes_and_transparency(depth, png_path):
    rng = np.random.default_rng(depth)
    values = rng.integers(0, 2 ** depth, (9, 19))
    scale = 255 // (2 ** depth - 1)   # gray samples expand by bit replication
    gray = png_bytes(values, 0, depth, interlace=depth == 2)
    np.testing.assert_array_equal(decode(gray, 1)[..., 0], values * scale)
    trns = png_bytes(values, 0, depth, trns=struct.pack(">H", 1))   # gray level 1 clear
    np.testing.assert_array_equal(decode(trns, 4)[..., 3], np.where(values == 1, 0, 255))
    palette = rng.integers(0, 256, (2 ** depth, 3))
    alpha = bytes([7, 99])   # the first two entries; the rest stay opaque
    pal = png_bytes(values, 3, depth, palette=palette, trns=alpha, interlace=True)
    np.testing.assert_array_equal(decode(pal, 3), palette[values])
    expected_alpha = np.where(values == 0, 7, np.where(values == 1, 99, 255))
    np.testing.assert_array_equal(decode(pal, 4)[..., 3], expected_alpha)


def test_pillow_unpacks_8_bit_and_palette_pngs_when_installed():
    pytest.importorskip("PIL.Image")
    unpack = lk.utils.image_utils._pillow_png_samples
    rng = np.random.default_rng(9)
    rgba = rng.integers(0, 256, (5, 6, 4))
    for ct, ch in ((0, 1), (2, 3), (4, 2), (6, 4)):
        got = unpack(png_bytes(rgba[..., :ch], ct, interlace=True), ct, (5, 6, ch))
        np.testing.assert_array_equal(got, rgba[..., :ch])
    index = rng.integers(0, 4, (5, 6))
    pal = png_bytes(index, 3, 2, palette=rng.integers(0, 256, (4, 3)), trns=b"\0")
    np.testing.assert_array_equal(unpack(pal, 3, (5, 6, 1))[..., 0], index)


def test_rgb_trns_and_damaged_png_errors(png_path):
    rgb = np.array([[[1, 2, 3], [4, 5, 6]]])
    clear = png_bytes(rgb, 2, trns=struct.pack(">HHH", 4, 5, 6))
    assert decode(clear, 4)[..., 3].tolist() == [[255, 0]]
    good = png_bytes(rgb, 2)
    bad_crc = good[:40] + bytes([good[40] ^ 1]) + good[41:]
    with pytest.raises(ValueError, match="CRC"):
        decode(bad_crc, 3)
    with pytest.raises(ValueError, match="unknown image format"):
        decode(b"GIF-ish but not", 3)
    with pytest.raises(ValueError, match="invalid PNG header"):
        decode(b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", struct.pack(">IIBBBBB", 2, 1, 3, 2,
                                                                     0, 0, 0))
               + _chunk(b"IDAT", zlib.compress(b"\0" * 3)), 3)   # RGB at 3 bits: invalid


def test_bmp_24_32_bit_and_palette():
    rng = np.random.default_rng(5)
    rgb = rng.integers(0, 256, (5, 7, 3)).astype(np.uint8)   # 21-byte rows: padded to 24
    for top_down in (False, True):
        np.testing.assert_array_equal(decode(bmp_bytes(rgb, top_down=top_down), 3), rgb)
    alpha = rng.integers(0, 256, (5, 7)).astype(np.uint8)
    np.testing.assert_array_equal(decode(bmp_bytes(rgb, alpha=alpha), 4),
                                  np.dstack([rgb, alpha]))
    assert (decode(bmp_bytes(rgb), 4)[..., 3] == 255).all()
    palette = rng.integers(0, 256, (6, 3))
    index = rng.integers(0, 6, (3, 5))
    np.testing.assert_array_equal(decode(bmp_bytes(index=index, palette=palette), 3),
                                  palette[index])


def test_jpeg_and_gif_need_the_pillow_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "PIL", None)
    with pytest.raises(ImportError, match=r"pip install layerkit\[images\]"):
        decode(b"\xff\xd8\xff\xe0" + b"\0" * 20, 3)
    with pytest.raises(ImportError, match="Pillow"):
        decode(b"GIF89a" + b"\0" * 20, 3)


def test_jpeg_through_pillow_gives_its_pixels_and_libjpeg_luma():
    Image = pytest.importorskip("PIL.Image")
    rng = np.random.default_rng(3)
    buf = io.BytesIO()
    Image.fromarray(rng.integers(0, 256, (16, 24, 3)).astype(np.uint8)).save(buf, "JPEG")
    ref = Image.open(io.BytesIO(buf.getvalue()))
    np.testing.assert_array_equal(decode(buf.getvalue(), 3), np.asarray(ref.convert("RGB")))
    ref = Image.open(io.BytesIO(buf.getvalue()))
    ref.draft("L", ref.size)   # the decoder's own Y channel, as TensorFlow's
    np.testing.assert_array_equal(decode(buf.getvalue(), 1)[..., 0], np.asarray(ref))


def _bilinear(img, out_h, out_w):
    """Half-pixel-centre bilinear resize with clamped edges (tf.image.resize)."""
    def taps(n_in, n_out):
        s = np.clip((np.arange(n_out) + 0.5) * n_in / n_out - 0.5, 0, n_in - 1)
        lo = np.floor(s).astype(int)
        hi = np.minimum(lo + 1, n_in - 1)
        return lo, hi, s - lo
    lo, hi, t = taps(img.shape[0], out_h)
    img = img[lo] * (1 - t)[:, None, None] + img[hi] * t[:, None, None]
    lo, hi, t = taps(img.shape[1], out_w)
    return img[:, lo] * (1 - t)[None, :, None] + img[:, hi] * t[None, :, None]


def test_resize_crop_and_pad_arithmetic():
    resize = lk.utils.image_utils.resize_image
    rng = np.random.default_rng(0)
    img = rng.integers(0, 256, (6, 10, 3)).astype(np.uint8)
    out = resize(img, (4, 7), "bilinear")
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, _bilinear(img.astype(np.float64), 4, 7), atol=1e-4)
    near = resize(img, (3, 5), "nearest")   # TF keeps the input dtype for nearest
    assert near.dtype == np.uint8
    np.testing.assert_array_equal(near, img[[1, 3, 5]][:, [1, 3, 5, 7, 9]])
    # crop: the largest centred 1:1 window of 6x10 is columns 2..7
    np.testing.assert_array_equal(resize(img, (6, 6), "nearest", crop_to_aspect_ratio=True),
                                  img[:, 2:8])
    # pad (tf.image.resize_with_pad): fit 6x10 into 10x10 -> 6x10, 2 zero rows above
    padded = resize(img, (10, 10), "bilinear", pad_to_aspect_ratio=True)
    assert padded.shape == (10, 10, 3) and padded[:2].max() == 0 and padded[8:].max() == 0
    np.testing.assert_array_equal(padded[2:8], img)
    # 6x10 into 5x4: ratio max(10/4, 6/5) = 2.5 -> resized to floor(2.4)=2 x 4, 1 row above
    small = resize(img, (5, 4), "bilinear", pad_to_aspect_ratio=True)
    np.testing.assert_allclose(small[1:3], _bilinear(img.astype(np.float64), 2, 4),
                               atol=1e-4)
    assert small[0].max() == 0 and small[3:].max() == 0


# ---- image_dataset_from_directory -------------------------------------------------------
@pytest.fixture
def images(tmp_path):
    root = tmp_path / "images"
    (root / "red").mkdir(parents=True)
    (root / "split").mkdir()
    red = np.zeros((10, 20, 3), np.uint8)
    red[..., 0] = 255
    for i, (h, w) in enumerate([(10, 20), (13, 7), (16, 16)]):
        (root / "red" / f"{i}.png").write_bytes(png_bytes(red[:1, :1].repeat(h, 0)
                                                          .repeat(w, 1), 2))
    half = np.zeros((10, 20, 3), np.uint8)   # height 10, width 20: left black, right white
    half[:, 10:] = 255
    (root / "split" / "half.bmp").write_bytes(bmp_bytes(half))
    (root / "split" / "readme.txt").write_text("not an image")
    return root


def test_images_resized_to_image_size_as_float32(images):
    ds = lk.utils.image_dataset_from_directory(images, image_size=(8, 6), batch_size=2,
                                               shuffle=False, verbose=False)
    assert ds.class_names == ["red", "split"]
    batches = list(ds.as_numpy_iterator())
    x, y = batches[0]
    assert x.shape == (2, 8, 6, 3) and x.dtype == np.float32 and y.dtype == np.int32
    assert y.tolist() == [0, 0]
    np.testing.assert_array_equal(x[0], np.broadcast_to([255.0, 0.0, 0.0], (8, 6, 3)))
    assert [b[0].shape[0] for b in batches] == [2, 2]
    gray = next(iter(lk.utils.image_dataset_from_directory(
        images, image_size=4, color_mode="grayscale", shuffle=False, verbose=False,
        data_format="channels_first")))[0]
    assert gray.shape == (4, 1, 4, 4)
    np.testing.assert_array_equal(gray.numpy()[0], (9797 * 255) >> 15)   # 76
    rgba = next(iter(lk.utils.image_dataset_from_directory(
        images, image_size=4, color_mode="rgba", batch_size=None, verbose=False)))[0]
    assert rgba.shape == (4, 4, 4) and float(rgba.numpy()[0, 0, 3]) == 255.0
    near = next(iter(lk.utils.image_dataset_from_directory(
        images, image_size=(3, 3), interpolation="nearest", verbose=False, seed=0)))[0]
    assert near.numpy().dtype == np.uint8


def test_images_labels_split_and_crop(images):
    kw = dict(image_size=(2, 2), batch_size=None, validation_split=0.25, seed=11,
              verbose=False, label_mode="categorical")
    train, val = lk.utils.image_dataset_from_directory(images, subset="both", **kw)
    files = ["red/0.png", "red/1.png", "red/2.png", "split/half.bmp"]
    labels = [0, 0, 0, 1]
    np.random.RandomState(11).shuffle(files)
    np.random.RandomState(11).shuffle(labels)
    (x, y), = list(val.as_numpy_iterator())   # int(0.25 * 4) = 1: the last shuffled file
    assert y.tolist() == np.eye(2)[labels[-1]].tolist()
    assert len(list(train)) == 3 and train.class_names == ["red", "split"]
    (cropped, _), = list(lk.utils.image_dataset_from_directory(
        images, class_names=["split"], image_size=(2, 2), interpolation="nearest",
        crop_to_aspect_ratio=True, batch_size=None, verbose=False).as_numpy_iterator())
    # the centre 10x10 square of the 10x20 image: columns 5-9 black, 10-14 white
    np.testing.assert_array_equal(cropped[..., 0], [[0, 255], [0, 255]])


def test_image_argument_errors(images, tmp_path):
    f = lk.utils.image_dataset_from_directory
    with pytest.raises(ValueError, match="color_mode"):
        f(images, color_mode="cmyk")
    with pytest.raises(ValueError, match="image_size"):
        f(images, image_size=(1, 2, 3))
    with pytest.raises(ValueError, match="should be one of"):
        f(images, interpolation="cubic")
    with pytest.raises(ValueError, match="'bicubic' is not available in layerkit"):
        f(images, interpolation="bicubic")
    with pytest.raises(ValueError, match="only one of"):
        f(images, crop_to_aspect_ratio=True, pad_to_aspect_ratio=True)
    (images / "red" / "broken.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"\0" * 10)
    with pytest.raises(ValueError, match="cannot decode .*broken.png"):
        list(f(images, shuffle=False, verbose=False))
    (tmp_path / "no_images").mkdir()
    with pytest.raises(ValueError, match="no images found"):
        f(tmp_path / "no_images", verbose=False)


# ---- load_img / img_to_array / array_to_img / save_img (Pillow images, as Keras) --------
def test_load_img_and_array_conversions(tmp_path):
    pytest.importorskip("PIL.Image")
    u = lk.utils
    rng = np.random.default_rng(2)
    x = rng.integers(0, 256, (6, 8, 3)).astype(np.uint8)
    u.save_img(tmp_path / "x.png", x, scale=False)
    img = u.load_img(tmp_path / "x.png")
    assert img.mode == "RGB" and img.size == (8, 6)   # Pillow's (width, height)
    arr = u.img_to_array(img)
    assert arr.dtype == np.float32
    np.testing.assert_array_equal(arr, x)
    np.testing.assert_array_equal(u.img_to_array(img, "channels_first"), x.transpose(2, 0, 1))
    with open(tmp_path / "x.png", "rb") as f:
        from_bytes = u.load_img(io.BytesIO(f.read()), target_size=(6, 6),
                                keep_aspect_ratio=True)
    # the centred 6x6 crop of the 6x8 image (columns 1..6), resized to its own size
    np.testing.assert_array_equal(u.img_to_array(from_bytes), x[:, 1:7])
    gray = u.img_to_array(u.load_img(tmp_path / "x.png", color_mode="grayscale"))
    assert gray.shape == (6, 8, 1)
    assert u.load_img(tmp_path / "x.png", target_size=(3, 5)).size == (5, 3)
    # array_to_img: scaled linearly to [0, 255] then truncated to uint8
    v = np.linspace(-1.0, 3.0, 12).reshape(2, 2, 3)
    np.testing.assert_array_equal(np.asarray(u.array_to_img(v)),
                                  ((v + 1) / 4 * 255).astype(np.uint8))
    big = u.array_to_img(np.array([[[0.0], [1000.0]]]), scale=False)
    assert big.mode == "I" and np.asarray(big).tolist() == [[0, 1000]]
    assert u.array_to_img(np.ones((1, 3, 1)) * 7, scale=False).mode == "L"
    with pytest.warns(UserWarning, match="JPEG format does not support RGBA"):
        u.save_img(tmp_path / "y.jpg", rng.random((4, 4, 4)))
    assert u.load_img(tmp_path / "y.jpg").size == (4, 4)


def test_load_img_errors(tmp_path, monkeypatch):
    pytest.importorskip("PIL.Image")
    u = lk.utils
    u.save_img(tmp_path / "x.png", np.zeros((2, 2, 3)))
    with pytest.raises(TypeError, match="path-like or io.BytesIO"):
        u.load_img(3)
    with pytest.raises(ValueError, match="color_mode"):
        u.load_img(tmp_path / "x.png", color_mode="cmyk")
    with pytest.raises(ValueError, match="invalid interpolation method 'area'"):
        u.load_img(tmp_path / "x.png", target_size=(3, 3), interpolation="area")
    with pytest.raises(ValueError, match="rank 3"):
        u.array_to_img(np.zeros((2, 2)))
    with pytest.raises(ValueError, match="channel number: 2"):
        u.array_to_img(np.zeros((2, 2, 2)))
    with pytest.raises(ValueError, match="unsupported image shape"):
        u.img_to_array(np.zeros((2, 2, 2, 2)))
    monkeypatch.setitem(sys.modules, "PIL", None)
    with pytest.raises(ImportError, match=r"layerkit\[images\]"):
        u.load_img(tmp_path / "x.png")
