"""Image preprocessing layers that always apply: Resizing and CenterCrop.

They take one image ``(h, w, c)`` or a batch ``(batch, h, w, c)`` (``'channels_first'``:
``(c, h, w)`` / ``(batch, c, h, w)``) and compute channels last. The numbers are Keras 3's
(``ops.image.resize``: half-pixel centres, see ``layerkit/primitives/image.py``).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from layerkit.layers.conv import check_data_format, from_channels_last, to_channels_last
from layerkit.layers.layer import Layer
from layerkit.primitives import array as _array
from layerkit.primitives import elementwise as _ew
from layerkit.primitives import image as _image

__all__ = ["Resizing", "CenterCrop", "ImageLayer"]


class ImageLayer(Layer):
    """Base of the image layers: checks the rank, adds and removes the batch axis of a
    single image and transposes channels-first input; subclasses implement
    ``_images(x, training)`` on a channels-last batch."""

    def __init__(self, data_format: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.data_format = check_data_format(type(self).__name__, data_format)

    def call(self, inputs: Any, training: bool | None = True) -> Any:
        rank = len(inputs.shape)
        if rank not in (3, 4):
            raise ValueError(f"{type(self).__name__} '{self.name}': expected one image of "
                             f"rank 3 or a batch of rank 4; received shape "
                             f"{tuple(inputs.shape)}")
        x = inputs if rank == 4 else _array.expand_dims(inputs, 0)
        y = self._images(to_channels_last(x, self.data_format), training)
        y = from_channels_last(y, self.data_format)
        return y if rank == 4 else _array.squeeze(y, 0)

    def _images(self, x, training):
        raise NotImplementedError

    def _float(self, x):
        return x if x.dtype == self._dtype else _ew.cast(x, self._dtype)

    def get_config(self) -> dict:
        return {**super().get_config(), "data_format": self.data_format}


def aspect_crop(x, height: int, width: int):
    """The centred crop of an NHWC batch with the aspect ratio of ``height``/``width``
    (Keras's ``crop_to_aspect_ratio`` / ``smart_resize`` arithmetic)."""
    h, w = x.shape[1:3]
    ch = max(min(h, int(float(w * height) / width)), 1)
    cw = max(min(w, int(float(h * width) / height)), 1)
    top, left = int(float(h - ch) / 2), int(float(w - cw) / 2)
    return x[:, top:top + ch, left:left + cw, :]


class Resizing(ImageLayer):
    """Resizes images to ``(height, width)``.

    Args:
        height: the output size.
        width: the output size.
        interpolation: ``'bilinear'`` (default) or ``'nearest'`` (Keras 3's numbers).
        crop_to_aspect_ratio: first crop the largest centred window with the target's
            aspect ratio (no distortion).
        pad_to_aspect_ratio: first pad with ``fill_value`` to the target's aspect ratio.
        fill_mode: only ``'constant'``.
        fill_value: the padding value.
        antialias: widen the bilinear kernel when downsampling.
        data_format: ``'channels_last'`` (default) or ``'channels_first'``.

    Integer images come back rounded and saturated to their integer dtype, as in Keras.

    Examples:
        >>> import layerkit as lk
        >>> lk.layers.Resizing(2, 3)(lk.ones((1, 4, 4, 3))).shape
        (1, 2, 3, 3)
    """

    def __init__(self, height: int, width: int, interpolation: str = "bilinear",
                 crop_to_aspect_ratio: bool = False, pad_to_aspect_ratio: bool = False,
                 fill_mode: str = "constant", fill_value: float = 0.0, antialias: bool = False,
                 data_format: str | None = None, **kwargs: Any) -> None:
        super().__init__(data_format, **kwargs)
        self.height, self.width = int(height), int(width)
        if min(self.height, self.width) < 1:
            raise ValueError(f"Resizing: `height` and `width` must be positive; received "
                             f"height={height}, width={width}")
        if interpolation not in _image.RESIZE_METHODS:
            raise ValueError(f"Resizing: `interpolation` must be one of "
                             f"{_image.RESIZE_METHODS} in layerkit; received {interpolation!r}")
        if crop_to_aspect_ratio and pad_to_aspect_ratio:
            raise ValueError("Resizing: only one of `crop_to_aspect_ratio` and "
                             "`pad_to_aspect_ratio` can be True")
        if fill_mode != "constant":
            raise ValueError(f"Resizing: `fill_mode` must be 'constant'; received "
                             f"{fill_mode!r}")
        self.interpolation = interpolation
        self.crop_to_aspect_ratio = bool(crop_to_aspect_ratio)
        self.pad_to_aspect_ratio = bool(pad_to_aspect_ratio)
        self.fill_mode, self.fill_value = fill_mode, fill_value
        self.antialias = bool(antialias)

    def _images(self, x, training):
        dtype = x.dtype
        if dtype != self._dtype:
            x = _ew.cast(x, self._dtype)
        if self.crop_to_aspect_ratio:
            x = aspect_crop(x, self.height, self.width)
        elif self.pad_to_aspect_ratio:
            h, w = x.shape[1:3]
            top = int(float(max(h, int(float(w * self.height) / self.width)) - h) / 2)
            left = int(float(max(w, int(float(h * self.width) / self.height)) - w) / 2)
            if top or left:
                x = _array.pad(x, ((0, 0), (top, top), (left, left), (0, 0)),
                               constant_values=self.fill_value)
        y = _image.resize(x, (self.height, self.width), self.interpolation, self.antialias)
        if dtype.kind in "iu":
            info = np.iinfo(dtype)
            y = _ew.cast(_ew.clip_by_value(_ew.round(y), float(info.min), float(info.max)),
                         dtype)
        return y

    def get_config(self) -> dict:
        return {**super().get_config(), "height": self.height, "width": self.width,
                "interpolation": self.interpolation,
                "crop_to_aspect_ratio": self.crop_to_aspect_ratio,
                "pad_to_aspect_ratio": self.pad_to_aspect_ratio, "fill_mode": self.fill_mode,
                "fill_value": self.fill_value, "antialias": self.antialias}


class CenterCrop(ImageLayer):
    """Crops the centre ``(height, width)`` of images.

    An image smaller than the target along an axis is instead cropped to the target's
    aspect ratio and resized (bilinear), as Keras 3 does. The output is in the layer's
    float dtype.

    Examples:
        >>> import layerkit as lk
        >>> lk.layers.CenterCrop(2, 2)(lk.ones((3, 5, 1))).shape
        (2, 2, 1)
    """

    _cast_int_inputs = True

    def __init__(self, height: int, width: int, data_format: str | None = None,
                 **kwargs: Any) -> None:
        super().__init__(data_format, **kwargs)
        self.height, self.width = int(height), int(width)
        if min(self.height, self.width) < 1:
            raise ValueError(f"CenterCrop: `height` and `width` must be positive; received "
                             f"height={height}, width={width}")

    def _images(self, x, training):
        h, w = x.shape[1:3]
        if h >= self.height and w >= self.width:
            top, left = (h - self.height) // 2, (w - self.width) // 2
            return x[:, top:top + self.height, left:left + self.width, :]
        return _image.resize(aspect_crop(x, self.height, self.width),
                             (self.height, self.width), "bilinear")

    def get_config(self) -> dict:
        return {**super().get_config(), "height": self.height, "width": self.width}
