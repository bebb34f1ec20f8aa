"""Image files to arrays for ``image_dataset_from_directory``, with TensorFlow's numbers.

``decode_image`` reads PNG (every colour type and bit depth, palettes, transparency,
interlacing) and BMP (uncompressed 1/4/8-bit palette, 24 and 32-bit) with NumPy and the
standard library's ``zlib`` (Pillow, when installed, only speeds up unpacking PNG pixel
data); JPEG, GIF and the rarer BMP variants need Pillow, an optional extra
(``pip install layerkit[images]``). The channel conversions are
``tf.io.decode_image``'s (libpng's): 16-bit samples keep their high byte, RGB to grayscale
is ``(9797 R + 19234 G + 3737 B) >> 15`` (ITU-R 601; 16-bit rounds), a missing alpha channel
is 255 and a dropped one is discarded (no compositing).

``resize_image`` is the resize step of Keras's loader: ``tf.image.resize`` (half-pixel
centres, through layerkit's ``resize`` record), Keras's ``crop_to_aspect_ratio`` crop,
or ``tf.image.resize_with_pad``'s fit-then-pad for ``pad_to_aspect_ratio``.
"""
from __future__ import annotations

import struct
import zlib
from typing import Any

import numpy as np

from layerkit._core.types import DTypeLike, PathLike, TensorLike
from layerkit.primitives import image as _image

__all__: list[str] = []

PILLOW_HINT = "pip install layerkit[images] (or pip install pillow)"
_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
# (channels per pixel) of each PNG colour type: gray, RGB, palette, gray+alpha, RGBA
_PNG_CHANNELS = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}
_ADAM7 = ((0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4),
          (1, 0, 2, 2), (0, 1, 1, 2))   # (x0, y0, dx, dy) of the seven interlace passes
_PILLOW_PNG_MODES = {0: "L", 2: "RGB", 3: "P", 4: "LA", 6: "RGBA"}
_GRAY_COEFFS = (9797, 19234, 3737)  # libpng's 0.299/0.587 in 1/32768, blue the rest


class NotDecodable(ValueError):
    """The bytes are a variant the built-in decoders do not read (Pillow may)."""


# =====================================================================================
# PNG
# =====================================================================================
def _unfilter(raw: np.ndarray, height: int, row_bytes: int, bpp: int) -> np.ndarray:
    """Undo PNG's per-row filters: ``raw`` holds ``height`` rows of one filter-type byte
    and ``row_bytes`` data bytes; ``bpp`` is the bytes per complete pixel (at least 1).

    Rows whose filters only read the row above (None/Up) or are a running sum (Sub) are
    vectorised; Average and Paeth, which read the reconstructed left neighbour, run as a
    wavefront over anti-diagonals of pixels (all rows at once), so the Python loop is
    ``height + width`` long rather than ``height * width``."""
    rows = raw.reshape(height, row_bytes + 1)
    ftype = rows[:, 0].copy()
    if ftype.max(initial=0) > 4:
        raise ValueError(f"unknown PNG filter type {int(ftype.max())}")
    data = rows[:, 1:].astype(np.int32)
    n = row_bytes // bpp
    # out[r + 1, j + 1] is pixel (r, j): a zero row above and a zero column to the left
    out = np.zeros((height + 1, n + 1, bpp), np.int32)
    cells = data.reshape(height, n, bpp)
    if not np.isin(ftype, (3, 4)).any():
        for r in range(height):
            f, x = ftype[r], cells[r]
            if f == 1:
                x = np.cumsum(x, axis=0)
            elif f == 2:
                x = x + out[r, 1:]
            out[r + 1, 1:] = x & 255
        return out[1:, 1:].reshape(height, row_bytes).astype(np.uint8)
    # flat indices of each pixel in ``out`` (as rows of bpp bytes), by anti-diagonal
    rr, jj = np.meshgrid(np.arange(height), np.arange(n), indexing="ij")
    order = np.argsort((rr + jj).ravel(), kind="stable")
    r_all, j_all = rr.ravel()[order], jj.ravel()[order]
    bounds = np.searchsorted((r_all + j_all), np.arange(height + n))
    dst_all = (r_all + 1) * (n + 1) + j_all + 1
    f_all = ftype[r_all][:, None]
    src_all = cells.reshape(-1, bpp)[r_all * n + j_all]
    flat = out.reshape(-1, bpp)
    for d in range(height + n - 1):
        lo, hi = bounds[d], bounds[d + 1]
        dst, f = dst_all[lo:hi], f_all[lo:hi]
        a, b, c = flat[dst - 1], flat[dst - n - 1], flat[dst - n - 2]
        pa, pb, pc = np.abs(b - c), np.abs(a - c), np.abs(a + b - 2 * c)
        paeth = np.where((pa <= pb) & (pa <= pc), a, np.where(pb <= pc, b, c))
        pred = np.where(f == 4, paeth, np.where(f == 3, (a + b) >> 1,
                                                np.where(f == 2, b, np.where(f == 1, a, 0))))
        flat[dst] = (src_all[lo:hi] + pred) & 255
    return out[1:, 1:].reshape(height, row_bytes).astype(np.uint8)


def _unpack(rows: np.ndarray, width: int, depth: int, channels: int) -> np.ndarray:
    """(h, row_bytes) uint8 scanlines -> (h, width, channels) samples (uint8 or uint16)."""
    h = rows.shape[0]
    if depth == 16:
        return rows.view(">u2").reshape(h, -1)[:, :width * channels].reshape(
            h, width, channels).astype(np.uint16)
    if depth == 8:
        return rows[:, :width * channels].reshape(h, width, channels)
    per_byte = 8 // depth   # sub-byte depths are single-channel (gray or palette)
    shifts = (8 - depth * (np.arange(per_byte) + 1)).astype(np.uint8)
    vals = (rows[:, :, None] >> shifts) & ((1 << depth) - 1)
    return vals.reshape(h, -1)[:, :width, None].astype(np.uint8)


def decode_png(data: bytes, use_pillow: bool = True) -> tuple[np.ndarray, dict]:
    """``(samples, info)``: the (h, w, c) samples of a PNG (uint8, or uint16 for 16-bit;
    palette images give their indices) and ``info`` with ``color_type``, ``depth``,
    ``palette`` ((n, 3) uint8 or None) and ``trns`` (the tRNS chunk or None).

    The chunks are read and checked here; the pixel data of 8-bit and palette images is
    unpacked by Pillow when it is installed (about 50 times faster), else (and for the
    other depths) by NumPy: the same samples either way.

    Raises:
        ValueError: not a PNG, a damaged one (bad CRC, truncated, bad header).
    """
    if data[:8] != _PNG_SIGNATURE:
        raise ValueError("not a PNG file (bad signature)")
    pos, idat, header, palette, trns = 8, [], None, None, None
    while pos + 8 <= len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if len(body) != length or pos + 12 + length > len(data):
            raise ValueError(f"truncated PNG chunk {kind!r}")
        (crc,) = struct.unpack(">I", data[pos + 8 + length:pos + 12 + length])
        if zlib.crc32(kind + body) != crc:
            raise ValueError(f"PNG chunk {kind!r} fails its CRC check")
        pos += 12 + length
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"PLTE":
            palette = np.frombuffer(body, np.uint8).reshape(-1, 3)
        elif kind == b"tRNS":
            trns = body
        elif kind == b"IDAT":
            idat.append(body)
        elif kind == b"IEND":
            break
    if header is None or not idat:
        raise ValueError("PNG without IHDR or IDAT chunks")
    width, height, depth, color_type, compression, filt, interlace = header
    if (color_type not in _PNG_CHANNELS or depth not in (1, 2, 4, 8, 16) or compression
            or filt or interlace > 1 or width == 0 or height == 0
            or (color_type in (2, 4, 6) and depth < 8) or (color_type == 3 and depth > 8)):
        raise ValueError(f"invalid PNG header: {width}x{height}, bit depth {depth}, colour "
                         f"type {color_type}, interlace {interlace}")
    if color_type == 3 and palette is None:
        raise ValueError("palette PNG without a PLTE chunk")
    info = {"color_type": color_type, "depth": depth, "palette": palette, "trns": trns}
    if use_pillow and (depth == 8 or color_type == 3):
        samples = _pillow_png_samples(data, color_type, (height, width,
                                                         _PNG_CHANNELS[color_type]))
        if samples is not None:
            return samples, info
    try:
        raw = np.frombuffer(zlib.decompress(b"".join(idat)), np.uint8)
    except zlib.error as e:
        raise ValueError(f"PNG image data does not decompress: {e}") from e
    channels = _PNG_CHANNELS[color_type]
    bits = depth * channels
    bpp = max(1, bits // 8)
    passes = _ADAM7 if interlace else ((0, 0, 1, 1),)
    out = np.zeros((height, width, channels), np.uint16 if depth == 16 else np.uint8)
    pos = 0
    for x0, y0, dx, dy in passes:
        w, h = -(-(width - x0) // dx), -(-(height - y0) // dy)
        if w <= 0 or h <= 0:
            continue
        row_bytes = -(-w * bits // 8)
        size = h * (row_bytes + 1)
        if pos + size > raw.size:
            raise ValueError("PNG image data is shorter than its header says")
        rows = _unfilter(raw[pos:pos + size], h, row_bytes, bpp)
        pos += size
        out[y0::dy, x0::dx] = _unpack(rows, w, depth, channels)
    return out, info


def encode_png(pixels: np.ndarray, compression: int = 6) -> bytes:
    """The bytes of a PNG file holding ``pixels``, an (h, w, c) uint8 array with c = 1
    (gray), 2 (gray + alpha), 3 (RGB) or 4 (RGBA): 8-bit samples, no filtering, the
    pixel data compressed with the standard library's ``zlib`` (no Pillow needed).

    Raises:
        ValueError: not a non-empty (h, w, c) uint8 array with 1 to 4 channels.

    Examples:
        >>> import numpy as np
        >>> px = np.arange(12, dtype=np.uint8).reshape(2, 2, 3)
        >>> samples, info = decode_png(encode_png(px))
        >>> bool((samples == px).all()), info["color_type"]
        (True, 2)
    """
    a = np.asarray(pixels)
    if a.dtype != np.uint8 or a.ndim != 3 or a.shape[2] not in (1, 2, 3, 4) or 0 in a.shape:
        raise ValueError(f"encode_png: expected a non-empty (height, width, channels) uint8 "
                         f"array with 1 to 4 channels; received dtype {a.dtype}, shape "
                         f"{a.shape}")
    h, w, c = a.shape
    color_type = {1: 0, 2: 4, 3: 2, 4: 6}[c]
    rows = np.zeros((h, 1 + w * c), np.uint8)  # filter type 0 (None) before every row
    rows[:, 1:] = a.reshape(h, w * c)

    def chunk(kind: bytes, body: bytes) -> bytes:
        return (struct.pack(">I", len(body)) + kind + body
                + struct.pack(">I", zlib.crc32(kind + body)))

    return (_PNG_SIGNATURE + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, color_type,
                                                        0, 0, 0))
            + chunk(b"IDAT", zlib.compress(rows.tobytes(), compression)) + chunk(b"IEND", b""))


def _pillow_png_samples(data: bytes, color_type: int, shape: tuple) -> np.ndarray | None:
    """The raw 8-bit samples (or palette indices) of a PNG through Pillow, when it is
    installed and gives them unconverted; else None (the NumPy decoder runs)."""
    try:
        import io

        from PIL import Image
    except ImportError:
        return None
    with Image.open(io.BytesIO(data)) as img:
        if img.mode != _PILLOW_PNG_MODES[color_type]:
            return None
        arr = np.asarray(img)
    return arr.reshape(shape) if arr.dtype == np.uint8 and arr.size == np.prod(shape) else None


def _png_to_channels(samples: np.ndarray, info: dict, channels: int) -> np.ndarray:
    """libpng's transformations as TensorFlow sets them up for ``channels`` (1, 3, 4)."""
    color_type, depth, trns = info["color_type"], info["depth"], info["trns"]
    alpha = None
    if color_type == 3:
        idx = samples[..., 0]
        if idx.max(initial=0) >= len(info["palette"]):
            raise ValueError("PNG palette index out of range")
        rgb = info["palette"][idx]
        if trns is not None:
            table = np.full(256, 255, np.uint8)
            table[:len(trns)] = np.frombuffer(trns, np.uint8)[:256]
            alpha = table[idx]
        samples, color_type, depth = rgb, 2, 8
    else:
        if color_type in (4, 6):
            alpha, samples = samples[..., -1], samples[..., :-1]
        elif trns is not None:   # one transparent gray level or RGB colour
            key = np.frombuffer(trns, ">u2")[:samples.shape[-1]].astype(samples.dtype)
            opaque = (1 << depth) - 1
            alpha = np.where((samples == key).all(-1), 0, opaque).astype(samples.dtype)
        if depth < 8:   # gray 1/2/4-bit expands to 8 bits (bit replication)
            samples = (samples.astype(np.uint16) * (255 // ((1 << depth) - 1))).astype(
                np.uint8)
            if alpha is not None:
                alpha = np.where(alpha > 0, 255, 0).astype(np.uint8)
            depth = 8
    if channels == 1 and samples.shape[-1] == 3:
        samples = rgb_to_gray(samples)
    elif channels >= 3 and samples.shape[-1] == 1:
        samples = np.repeat(samples, 3, axis=-1)
    if channels == 4:
        if alpha is None:
            alpha = np.full(samples.shape[:-1], (1 << depth) - 1, samples.dtype)
        samples = np.concatenate([samples, alpha[..., None]], axis=-1)
    if depth == 16:
        samples = (samples >> 8).astype(np.uint8)
    return samples


def rgb_to_gray(rgb: np.ndarray) -> np.ndarray:
    """libpng's (and so TensorFlow's PNG decoder's) ITU-R 601 luma: truncated for 8-bit
    samples, rounded for 16-bit ones."""
    r, g, b = (rgb[..., i].astype(np.int64) for i in range(3))
    rc, gc, bc = _GRAY_COEFFS
    gray = (rc * r + gc * g + bc * b + (16384 if rgb.dtype == np.uint16 else 0)) >> 15
    return gray.astype(rgb.dtype)[..., None]


# =====================================================================================
# BMP
# =====================================================================================
def decode_bmp(data: bytes) -> np.ndarray:
    """(h, w, 3 or 4) uint8 pixels of an uncompressed BMP (1/4/8-bit palette, 24-bit,
    32-bit with its fourth byte as alpha, as ``tf.io.decode_bmp``).

    Raises:
        ValueError: not a BMP, or truncated.
        NotDecodable: a compressed or 16-bit BMP, or an OS/2 header.
    """
    if data[:2] != b"BM" or len(data) < 30:
        raise ValueError("not a BMP file (bad signature)")
    offset, dib = struct.unpack("<I I", data[10:18])
    if dib < 40:
        raise NotDecodable("OS/2 BMP headers are not read by the built-in decoder")
    width, height, _, bpp, compression = struct.unpack("<i i H H I", data[18:34])
    (n_colors,) = struct.unpack("<I", data[46:50])
    if compression not in (0, 3) or bpp not in (1, 4, 8, 24, 32) or (
            compression == 3 and bpp != 32):
        raise NotDecodable(f"BMP with {bpp} bits per pixel and compression {compression}")
    if compression == 3:
        masks = struct.unpack("<III", data[54:66])
        if masks != (0xFF0000, 0xFF00, 0xFF):
            raise NotDecodable(f"BMP with bit-field masks {masks}")
    if width <= 0 or height == 0:
        raise ValueError(f"invalid BMP size {width}x{height}")
    h = abs(height)
    stride = (bpp * width + 31) // 32 * 4
    if offset + stride * h > len(data):
        raise ValueError("BMP pixel data is shorter than its header says")
    rows = np.frombuffer(data, np.uint8, stride * h, offset).reshape(h, stride)
    if height > 0:   # bottom-up rows
        rows = rows[::-1]
    if bpp >= 24:
        px = rows[:, :width * (bpp // 8)].reshape(h, width, bpp // 8)
        return np.concatenate([px[..., 2::-1], px[..., 3:]], axis=-1)
    idx = _unpack(rows, width, bpp, 1)[..., 0]
    n = n_colors or (1 << bpp)
    table = np.frombuffer(data, np.uint8, 4 * n, 14 + dib).reshape(n, 4)[:, 2::-1]
    if idx.max(initial=0) >= n:
        raise ValueError("BMP palette index out of range")
    return table[idx]


# =====================================================================================
# decode_image
# =====================================================================================
def _with_pillow(data: bytes, channels: int, what: str) -> np.ndarray:
    try:
        from PIL import Image
    except ImportError as e:
        raise ImportError(f"{what}: decoding this image needs Pillow, an optional extra: "
                          f"{PILLOW_HINT}") from e
    import io

    with Image.open(io.BytesIO(data)) as img:
        img.seek(0)   # the first frame of an animation, as expand_animations=False
        if channels == 1 and img.format == "JPEG":
            img.draft("L", img.size)   # libjpeg's own luma, as TensorFlow's decoder
        mode = {1: "L", 3: "RGB", 4: "RGBA"}[channels]
        arr = np.asarray(img.convert(mode), np.uint8)
    return arr.reshape(arr.shape[0], arr.shape[1], channels)


def decode_image(data: bytes, channels: int, what: str = "decode_image") -> np.ndarray:
    """The (h, w, channels) uint8 pixels of a PNG, BMP, JPEG or GIF file's bytes.

    Args:
        data: the file's bytes.
        channels: 1 (grayscale), 3 (RGB) or 4 (RGBA).
        what: the caller's name for messages.

    Returns:
        A uint8 array.

    Raises:
        ImportError: a JPEG, GIF or uncommon BMP without Pillow installed.
        ValueError: bytes of no known image format, or a damaged file.
    """
    if data[:8] == _PNG_SIGNATURE:
        samples, info = decode_png(data)
        return _png_to_channels(samples, info, channels)
    if data[:2] == b"BM":
        try:
            px = decode_bmp(data)
        except NotDecodable:
            return _with_pillow(data, channels, what)
        if channels == 1:
            return rgb_to_gray(px[..., :3])
        if channels == 3:
            return px[..., :3]
        return px if px.shape[-1] == 4 else np.concatenate(
            [px, np.full(px.shape[:-1] + (1,), 255, np.uint8)], axis=-1)
    if data[:3] == b"\xff\xd8\xff" or data[:6] in (b"GIF87a", b"GIF89a"):
        return _with_pillow(data, channels, what)
    raise ValueError(f"{what}: unknown image format (expected PNG, JPEG, GIF or BMP "
                     f"bytes); the file starts with {data[:8]!r}")


# =====================================================================================
# resize
# =====================================================================================
def resize_image(img: np.ndarray, size: tuple[int, int], interpolation: str,
                 crop_to_aspect_ratio: bool = False,
                 pad_to_aspect_ratio: bool = False) -> np.ndarray:
    """Resize one decoded (h, w, c) uint8 image as Keras's directory loader does.

    ``'bilinear'`` gives float32 (``tf.image.resize``); ``'nearest'`` keeps uint8, as
    ``tf.image.resize`` returns the input dtype for it. ``crop_to_aspect_ratio`` first
    crops the largest centred window of the target aspect ratio; ``pad_to_aspect_ratio``
    resizes to fit inside ``size`` and pads with zeros (``tf.image.resize_with_pad``).
    """
    th, tw = size
    h, w = img.shape[:2]
    pad = None
    if crop_to_aspect_ratio:
        ch = max(min(h, int(float(w * th) / tw)), 1)
        cw = max(min(w, int(float(h * tw) / th)), 1)
        top, left = int(float(h - ch) / 2), int(float(w - cw) / 2)
        img = img[top:top + ch, left:left + cw]
    elif pad_to_aspect_ratio:   # float32 arithmetic, as resize_with_pad
        f32 = np.float32
        ratio = max(f32(w) / f32(tw), f32(h) / f32(th))
        rh, rw = f32(h) / ratio, f32(w) / ratio
        pad = (max(0, int(np.floor((f32(th) - rh) / f32(2)))),
               max(0, int(np.floor((f32(tw) - rw) / f32(2)))))
        th, tw = int(np.floor(rh)), int(np.floor(rw))
    x = img[None].astype(np.float32)
    if x.shape[1:3] != (th, tw):
        x = _image.resize(x, (th, tw), interpolation).numpy()
    out = x[0].astype(np.uint8) if interpolation == "nearest" else x[0]
    if pad is not None:
        canvas = np.zeros((size[0], size[1], out.shape[-1]), out.dtype)
        canvas[pad[0]:pad[0] + th, pad[1]:pad[1] + tw] = out
        out = canvas
    return out


# =====================================================================================
# Keras's PIL helpers: load_img, img_to_array, array_to_img, save_img
# =====================================================================================
_PIL_RESAMPLING = ("nearest", "bilinear", "bicubic", "hamming", "box", "lanczos")


def _pil(what: str):
    try:
        from PIL import Image
    except ImportError as e:
        raise ImportError(f"{what} works on Pillow images and needs Pillow, an optional "
                          f"extra: {PILLOW_HINT}") from e
    return Image


def check_data_format(what: str, data_format) -> str:
    """``data_format`` with None read as ``'channels_last'`` (Keras's default)."""
    if data_format in (None, "channels_last", "channels_first"):
        return data_format or "channels_last"
    raise ValueError(f"{what}: `data_format` must be 'channels_last' or 'channels_first'. "
                     f"Received: data_format={data_format!r}")


def load_img(path: PathLike, color_mode: str = "rgb", target_size: tuple[int, int] | None = None,
             interpolation: str = "nearest", keep_aspect_ratio: bool = False) -> Any:
    """Load an image file as a Pillow image (Keras 3's ``keras.utils.load_img``).

    Args:
        path: a path (str, bytes, ``pathlib.Path``) or an ``io.BytesIO``.
        color_mode: ``'rgb'``, ``'rgba'`` or ``'grayscale'`` (16/32-bit grayscale images
            are kept as they are).
        target_size: None (the file's size) or ``(height, width)``.
        interpolation: Pillow's filter for resizing: ``'nearest'`` (default),
            ``'bilinear'``, ``'bicubic'``, ``'hamming'``, ``'box'`` or ``'lanczos'``.
        keep_aspect_ratio: resize the largest centred crop with the target's aspect ratio.

    Returns:
        A ``PIL.Image.Image``.

    Raises:
        ImportError: Pillow is not installed.
        TypeError: ``path`` is not path-like or a BytesIO.
        ValueError: an unknown ``color_mode`` or ``interpolation``.

    Examples:
        >>> img = lk.utils.load_img("cat.jpg", target_size=(180, 180))  # doctest: +SKIP
        >>> x = lk.utils.img_to_array(img)[None]                         # doctest: +SKIP
    """
    import io
    import os

    Image = _pil("load_img")
    if isinstance(path, io.BytesIO):
        img = Image.open(path)
    elif isinstance(path, (str, bytes, os.PathLike)):
        with open(path, "rb") as f:
            img = Image.open(io.BytesIO(f.read()))
    else:
        raise TypeError(f"load_img: path should be path-like or io.BytesIO, not "
                        f"{type(path).__name__}")
    modes = {"grayscale": ("L", "I;16", "I"), "rgb": ("RGB",), "rgba": ("RGBA",)}
    if color_mode not in modes:
        raise ValueError(f'load_img: color_mode must be "grayscale", "rgb", or "rgba". '
                         f"Received: color_mode={color_mode!r}")
    if img.mode not in modes[color_mode]:
        img = img.convert(modes[color_mode][0])
    if target_size is not None:
        size = (int(target_size[1]), int(target_size[0]))   # Pillow's (width, height)
        if img.size != size:
            if interpolation not in _PIL_RESAMPLING:
                raise ValueError(f"load_img: invalid interpolation method "
                                 f"{interpolation!r}. Supported methods are "
                                 f"{', '.join(_PIL_RESAMPLING)}")
            resample = getattr(Image.Resampling, interpolation.upper())
            box = None
            if keep_aspect_ratio:
                w, h = img.size
                ch, cw = min(h, w * size[1] // size[0]), min(w, h * size[0] // size[1])
                top, left = (h - ch) // 2, (w - cw) // 2
                box = (left, top, left + cw, top + ch)
            img = img.resize(size, resample, box=box)
    return img


def img_to_array(img: Any, data_format: str | None = None, dtype: DTypeLike = None) -> np.ndarray:
    """A Pillow image (or anything array-like) as a 3-D NumPy array (Keras 3's
    ``keras.utils.img_to_array``): ``(height, width, channels)``, a grayscale image
    getting a channel axis, or channels first; float32 unless ``dtype`` is given.

    Raises:
        ValueError: the image is not 2-D or 3-D, or a bad ``data_format``.
    """
    data_format = check_data_format("img_to_array", data_format)
    x = np.asarray(img, dtype=dtype or "float32")
    if x.ndim == 2:
        x = x[None] if data_format == "channels_first" else x[..., None]
    elif x.ndim == 3:
        if data_format == "channels_first":
            x = x.transpose(2, 0, 1)
    else:
        raise ValueError(f"img_to_array: unsupported image shape: {x.shape}")
    return x


def array_to_img(x: TensorLike, data_format: str | None = None, scale: bool = True,
                 dtype: DTypeLike = None) -> Any:
    """A 3-D array as a Pillow image (Keras 3's ``keras.utils.array_to_img``).

    With ``scale`` the values are mapped linearly so that the minimum is 0 and the
    maximum 255; then they are truncated to uint8 (one channel above 255: a 32-bit
    ``'I'`` image). 1, 3 or 4 channels give ``'L'``, ``'RGB'`` or ``'RGBA'``.

    Raises:
        ImportError: Pillow is not installed.
        ValueError: not a single image (rank 3) or an unsupported channel count.
    """
    data_format = check_data_format("array_to_img", data_format)
    Image = _pil("array_to_img")
    arr = np.array(x, dtype=dtype or "float32")
    if arr.ndim != 3:
        raise ValueError(f"array_to_img: expected image array to have rank 3 (single "
                         f"image). Got array with shape: {arr.shape}")
    if data_format == "channels_first":
        arr = arr.transpose(1, 2, 0)
    if scale:
        arr = arr - np.min(arr)
        top = np.max(arr)
        if top != 0:
            arr = arr / top
        arr = arr * 255
    mode = {4: "RGBA", 3: "RGB", 1: "L"}.get(arr.shape[2])
    if mode is None:
        raise ValueError(f"array_to_img: unsupported channel number: {arr.shape[2]}")
    if mode == "L":
        if np.max(arr) > 255:
            return Image.fromarray(arr[:, :, 0].astype(np.int32), "I")
        return Image.fromarray(arr[:, :, 0].astype(np.uint8), "L")
    return Image.fromarray(arr.astype(np.uint8), mode)


def save_img(path: PathLike, x: TensorLike, data_format: str | None = None,
             file_format: str | None = None, scale: bool = True, **kwargs: Any) -> None:
    """Save a 3-D array as an image file (Keras 3's ``keras.utils.save_img``): the format
    from ``file_format`` or the file name's extension; RGBA saved as JPEG is converted to
    RGB with a warning; ``kwargs`` go to Pillow's ``Image.save``."""
    import pathlib
    import warnings

    if file_format is None and isinstance(path, (str, pathlib.Path)):
        file_format = pathlib.Path(path).suffix[1:].lower()
    if file_format and file_format.lower() == "jpg":
        file_format = "jpeg"
    img = array_to_img(x, data_format=data_format, scale=scale)
    if img.mode == "RGBA" and file_format == "jpeg":
        warnings.warn("save_img: the JPEG format does not support RGBA images, converting "
                      "to RGB.", stacklevel=2)
        img = img.convert("RGB")
    img.save(path, format=file_format, **kwargs)
