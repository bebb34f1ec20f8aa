"""Random image augmentation: RandomFlip, RandomRotation, RandomZoom, RandomTranslation,
RandomContrast, RandomBrightness, RandomCrop.

As in Keras 3, they augment only when ``training`` is true, and ``call``'s default is
``training=True``: a direct call (and a call inside ``Dataset.map``) augments, while
``Model.predict``/``evaluate`` (training=False) pass images through (cast to the layer's
float dtype, except RandomContrast, which returns them unchanged).

Random draws are ``lk.random`` records: with ``seed=None`` each call draws from the
global stream (``lk.random.set_seed`` reproduces a run); with an int seed the layer owns
an ``lk.random.Generator`` (saved by checkpoints) and every call continues it. Inside
``lk.function`` the draws re-run on every call. The geometric layers build Keras 3's
affine matrices from the draws with float32 layerkit ops and resample with the
``affine_transform`` record (fill modes ``'reflect'``, ``'wrap'``, ``'constant'``,
``'nearest'``; interpolation ``'bilinear'`` or ``'nearest'``).
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from layerkit.layers.preprocessing.image import ImageLayer
from layerkit.primitives import array as _array
from layerkit.primitives import creation as _creation
from layerkit.primitives import elementwise as _ew
from layerkit.primitives import image as _image
from layerkit.primitives import random as _random
from layerkit.primitives import reduce as _reduce

__all__ = ["RandomFlip", "RandomRotation", "RandomZoom", "RandomTranslation",
           "RandomContrast", "RandomBrightness", "RandomCrop"]

_FILL_MODES = ("reflect", "wrap", "constant", "nearest")


def factor_range(layer: str, arg: str, factor, low: float, high: float,
                 low_open: bool = False) -> tuple:
    """Keras's factor forms: a number ``f`` -> ``(-|f|, |f|)``, a pair -> sorted; every
    value must lie in [low, high] (``(low, high]`` with ``low_open``)."""
    if isinstance(factor, (tuple, list)) and len(factor) == 2:
        values = [float(f) for f in factor]
    elif isinstance(factor, (int, float)) and not isinstance(factor, bool):
        values = [-abs(float(factor)), abs(float(factor))]
    else:
        values = None
    if values is None or any(v > high or v < low or (low_open and v == low) for v in values):
        interval = f"({low}, {high}]" if low_open else f"[{low}, {high}]"
        raise ValueError(f"{layer}: `{arg}` must be a number or a pair of numbers in "
                         f"{interval}; received {arg}={factor!r}")
    return tuple(sorted(values))


class _Random(ImageLayer):
    """Seed handling, the inference pass-through and the affine resampling."""

    _cast_int_inputs = True

    def __init__(self, seed: int | None = None, data_format: str | None = None,
                 **kwargs: Any) -> None:
        super().__init__(data_format, **kwargs)
        self.seed = seed
        self._generator = _random.Generator(seed) if seed is not None else None

    def _checkpoint_children(self) -> dict:
        # A seeded layer owns its stream: checkpoints save its position.
        children = super()._checkpoint_children()
        if self._generator is not None:
            children["seed_generator"] = self._generator
        return children

    def _uniform(self, shape, low: float, high: float):
        return _random._uniform(self._generator, shape, low, high, self._dtype)

    def _images(self, x, training):
        return self._augment(x) if training else x

    def _affine(self, x, transforms):
        return _image.affine_transform(x, transforms, self.interpolation, self.fill_mode,
                                       self.fill_value)

    def get_config(self) -> dict:
        return {**super().get_config(), "seed": self.seed}


class _Geometric(_Random):
    def __init__(self, fill_mode: str = "reflect", interpolation: str = "bilinear",
                 seed: int | None = None, fill_value: float = 0.0, data_format: str | None = None,
                 **kwargs: Any) -> None:
        super().__init__(seed, data_format, **kwargs)
        cls = type(self).__name__
        if fill_mode not in _FILL_MODES:
            raise NotImplementedError(f"{cls}: unknown `fill_mode` {fill_mode!r}; expected one "
                                      f"of {_FILL_MODES}")
        if interpolation not in _image.INTERPOLATIONS:
            raise NotImplementedError(f"{cls}: unknown `interpolation` {interpolation!r}; "
                                      f"expected one of {_image.INTERPOLATIONS}")
        self.fill_mode, self.interpolation = fill_mode, interpolation
        self.fill_value = fill_value

    def get_config(self) -> dict:
        return {**super().get_config(), "fill_mode": self.fill_mode,
                "interpolation": self.interpolation, "fill_value": self.fill_value}


def _columns(cols: list):
    """(B, 8) transforms from eight (B, 1) columns."""
    return _array.concat(cols, axis=1)


class RandomFlip(_Random):
    """Flips images at random (each image with probability 1/2) when training.

    Args:
        mode: ``'horizontal'`` (left-right), ``'vertical'`` (up-down) or
            ``'horizontal_and_vertical'`` (default: a drawn image is flipped both ways,
            as in Keras 3).
        seed: optional int (the layer's own random stream).
        data_format: ``'channels_last'`` (default) or ``'channels_first'``.

    Examples:
        >>> import layerkit as lk
        >>> x = lk.reshape(lk.range(6.0), (1, 1, 6, 1))
        >>> lk.layers.RandomFlip("horizontal")(x, training=False).numpy().ravel()
        array([0., 1., 2., 3., 4., 5.], dtype=float32)
    """

    _MODES = ("horizontal", "vertical", "horizontal_and_vertical")

    def __init__(self, mode: str = "horizontal_and_vertical", seed: int | None = None,
                 data_format: str | None = None, **kwargs: Any) -> None:
        super().__init__(seed, data_format, **kwargs)
        if mode not in self._MODES:
            raise ValueError(f"RandomFlip: `mode` must be one of {self._MODES}; received "
                             f"{mode!r}")
        self.mode = mode

    def _augment(self, x):
        flips = _ew.less_equal(self._uniform((x.shape[0], 1, 1, 1), 0.0, 1.0), 0.5)
        if self.mode != "vertical":
            x = _ew.where(flips, _array.reverse(x, [2]), x)
        if self.mode != "horizontal":
            x = _ew.where(flips, _array.reverse(x, [1]), x)
        return x

    def get_config(self) -> dict:
        return {**super().get_config(), "mode": self.mode}


class RandomRotation(_Geometric):
    """Rotates images by a random angle about their centre when training.

    Args:
        factor: a fraction of a full turn: ``f`` draws angles in ``[-f, f] * 360``
            degrees, a pair ``(lo, hi)`` in ``[lo, hi] * 360`` (within [-1, 1]).
        fill_mode: ``'reflect'`` (default), ``'wrap'``, ``'constant'`` or ``'nearest'``.
        interpolation: ``'bilinear'`` (default) or ``'nearest'``.
        seed: optional int.
        fill_value: the value outside the image with ``'constant'``.
        data_format: ``'channels_last'`` (default) or ``'channels_first'``.
    """

    def __init__(self, factor: Any, fill_mode: str = "reflect", interpolation: str = "bilinear",
                 seed: int | None = None, fill_value: float = 0.0, data_format: str | None = None,
                 **kwargs: Any) -> None:
        super().__init__(fill_mode, interpolation, seed, fill_value, data_format, **kwargs)
        self.factor = factor_range("RandomRotation", "factor", factor, -1.0, 1.0)

    def _augment(self, x):
        b, h, w = x.shape[:3]
        angle = self._uniform((b, 1), self.factor[0] * 360.0, self.factor[1] * 360.0)
        angle = _ew.multiply(angle, np.asarray(math.pi / 180.0, self._dtype))
        cos, sin = _ew.cos(angle), _ew.sin(angle)
        cx, cy = 0.5 * (w - 1), 0.5 * (h - 1)
        a2 = _ew.subtract(_ew.subtract(cx, _ew.multiply(cos, cx)),
                          _ew.multiply(_ew.negative(sin), cy))
        b2 = _ew.subtract(_ew.subtract(cy, _ew.multiply(sin, cx)), _ew.multiply(cos, cy))
        zero = _creation.zeros((b, 1), self._dtype)
        t = _columns([cos, _ew.negative(sin), a2, sin, cos, b2, zero, zero])
        return self._affine(x, t)

    def get_config(self) -> dict:
        return {**super().get_config(), "factor": self.factor}


class RandomZoom(_Geometric):
    """Zooms images by random factors about their centre when training.

    Args:
        height_factor: ``f`` draws vertical factors ``1 + [-f, f]``, a pair ``(lo, hi)``
            ``1 + [lo, hi]`` (values in (-1, 1]); a positive value zooms out (the image
            shrinks), a negative one zooms in, as in Keras.
        width_factor: likewise for the width; None (default) keeps the aspect ratio
            (the height's factor is used).
        fill_mode: as :class:`RandomRotation`.
        interpolation: as :class:`RandomRotation`.
        seed: as :class:`RandomRotation`.
        fill_value: as :class:`RandomRotation`.
        data_format: as :class:`RandomRotation`.
    """

    def __init__(self, height_factor: Any, width_factor: Any = None, fill_mode: str = "reflect",
                 interpolation: str = "bilinear", seed: int | None = None,
                 fill_value: float = 0.0, data_format: str | None = None, **kwargs: Any) -> None:
        super().__init__(fill_mode, interpolation, seed, fill_value, data_format, **kwargs)
        cls = "RandomZoom"
        self.height_factor, self.width_factor = height_factor, width_factor
        self._height = factor_range(cls, "height_factor", height_factor, -1.0, 1.0, True)
        self._width = None if width_factor is None else factor_range(
            cls, "width_factor", width_factor, -1.0, 1.0, True)

    def _augment(self, x):
        b, h, w = x.shape[:3]
        zy = self._uniform((b, 1), 1.0 + self._height[0], 1.0 + self._height[1])
        zx = zy if self._width is None else self._uniform((b, 1), 1.0 + self._width[0],
                                                          1.0 + self._width[1])
        x_off = _ew.multiply((w - 1.0) / 2.0, _ew.subtract(1.0, zx))
        y_off = _ew.multiply((h - 1.0) / 2.0, _ew.subtract(1.0, zy))
        zero = _creation.zeros((b, 1), self._dtype)
        return self._affine(x, _columns([zx, zero, x_off, zero, zy, y_off, zero, zero]))

    def get_config(self) -> dict:
        return {**super().get_config(), "height_factor": self.height_factor,
                "width_factor": self.width_factor}


class RandomTranslation(_Geometric):
    """Shifts images by random fractions of their size when training.

    Args:
        height_factor: ``f`` shifts by ``[-f, f] * height`` rows, a pair ``(lo, hi)`` by
            ``[lo, hi] * height`` (values in [-1, 1]); positive moves the image down.
        width_factor: likewise for columns (positive moves right).
        fill_mode: as :class:`RandomRotation`.
        interpolation: as :class:`RandomRotation`.
        seed: as :class:`RandomRotation`.
        fill_value: as :class:`RandomRotation`.
        data_format: as :class:`RandomRotation`.
    """

    def __init__(self, height_factor: Any, width_factor: Any, fill_mode: str = "reflect",
                 interpolation: str = "bilinear", seed: int | None = None,
                 fill_value: float = 0.0, data_format: str | None = None, **kwargs: Any) -> None:
        super().__init__(fill_mode, interpolation, seed, fill_value, data_format, **kwargs)
        cls = "RandomTranslation"
        self.height_factor, self.width_factor = height_factor, width_factor
        self._height = factor_range(cls, "height_factor", height_factor, -1.0, 1.0)
        self._width = factor_range(cls, "width_factor", width_factor, -1.0, 1.0)

    def _augment(self, x):
        b, h, w = x.shape[:3]
        ty = _ew.multiply(self._uniform((b, 1), *self._height), float(h))
        tx = _ew.multiply(self._uniform((b, 1), *self._width), float(w))
        zero = _creation.zeros((b, 1), self._dtype)
        one = _creation.ones((b, 1), self._dtype)
        t = _columns([one, zero, _ew.negative(tx), zero, one, _ew.negative(ty), zero, zero])
        return self._affine(x, t)

    def get_config(self) -> dict:
        return {**super().get_config(), "height_factor": self.height_factor,
                "width_factor": self.width_factor}


class RandomContrast(_Random):
    """Scales each image's deviation from its per-channel mean by a random factor when
    training, then clips to ``value_range``.

    Args:
        factor: Keras 3's convention: a number ``f`` in [0, 1] draws contrast factors in
            ``[1, 1 + f]`` (its lower bound is ``max(-f, 0) = 0``); a pair ``(lo, hi)``
            draws them in ``[1 - lo, 1 + hi]``.
        value_range: the ``(min, max)`` the output is clipped to (default (0, 255)).
        seed: optional int.

    At inference the input is returned unchanged (not even cast), as in Keras 3.
    """

    _cast_int_inputs = False

    def __init__(self, factor: Any, value_range: Any = (0, 255), seed: int | None = None,
                 **kwargs: Any) -> None:
        super().__init__(seed, kwargs.pop("data_format", None), **kwargs)
        if isinstance(factor, (tuple, list)) and len(factor) == 2 and \
                factor[0] <= 1 and factor[1] >= 0:
            lo, hi = sorted(float(f) for f in factor)
        elif isinstance(factor, (int, float)) and not isinstance(factor, bool) and \
                0 <= factor <= 1:
            lo, hi = 0.0, float(factor)  # Keras: max(-factor, 0) and factor
        else:
            raise ValueError(f"RandomContrast: `factor` must be a number in [0, 1] or a pair "
                             f"of numbers; received factor={factor!r}")
        self.factor = (lo, hi)
        self.value_range = tuple(value_range)

    def _augment(self, x):
        x = self._float(x)
        f = self._uniform((x.shape[0], 1, 1, 1), 1.0 - self.factor[0], 1.0 + self.factor[1])
        mean = _reduce.reduce_mean(_reduce.reduce_mean(x, axis=1, keepdims=True), axis=2,
                                   keepdims=True)
        y = _ew.add(_ew.multiply(_ew.subtract(x, mean), f), mean)
        return _ew.clip_by_value(y, float(self.value_range[0]), float(self.value_range[1]))

    def get_config(self) -> dict:
        return {**super().get_config(), "factor": self.factor, "value_range": self.value_range}


class RandomBrightness(_Random):
    """Adds a random brightness offset to each image when training, then clips to
    ``value_range`` (Keras 3's RandomBrightness).

    Args:
        factor: a number ``f`` in [-1, 1] draws offsets in ``[-|f|, |f|]``; a pair
            ``(lo, hi)`` draws them in ``[lo, hi]``. Offsets are fractions of the value
            range's width: ``0.1`` with ``(0, 255)`` adds up to 25.5.
        value_range: the ``(min, max)`` of the pixel values (default (0, 255)).
        seed: optional int.

    At inference the input is returned unchanged, as in Keras 3.

    Examples:
        >>> import layerkit as lk
        >>> y = lk.layers.RandomBrightness((0.1, 0.1))(lk.fill((1, 2, 2, 3), 100.0))
        >>> float(y[0, 0, 0, 0])
        125.5
    """

    _cast_int_inputs = False

    def __init__(self, factor: float | tuple[float, float],
                 value_range: tuple[float, float] = (0, 255), seed: int | None = None,
                 **kwargs: Any) -> None:
        super().__init__(seed, kwargs.pop("data_format", None), **kwargs)
        self.factor = factor_range("RandomBrightness", "factor", factor, -1.0, 1.0)
        if not isinstance(value_range, (tuple, list)) or len(value_range) != 2:
            raise ValueError(f"RandomBrightness: `value_range` must be a pair (min, max); "
                             f"received value_range={value_range!r}")
        self.value_range = tuple(sorted(float(v) for v in value_range))

    def _augment(self, x):
        x = self._float(x)
        lo, hi = self.value_range
        delta = self._uniform((x.shape[0], 1, 1, 1), self.factor[0], self.factor[1])
        return _ew.clip_by_value(_ew.add(x, _ew.multiply(delta, hi - lo)), lo, hi)

    def get_config(self) -> dict:
        return {**super().get_config(), "factor": self.factor,
                "value_range": self.value_range}


class RandomCrop(_Random):
    """Crops a random ``(height, width)`` window when training, the same window for every
    image of a batch (Keras 3's RandomCrop).

    When an image is not larger than the target along both axes, the window is instead
    the centred crop with the target's aspect ratio, resized (bilinear) to the target,
    as Keras 3 does. At inference the input is returned unchanged (Keras 3.15's
    behaviour); call with ``training=True`` to crop then.

    Args:
        height: target height.
        width: target width.
        seed: optional int.
        data_format: ``'channels_last'`` (default) or ``'channels_first'``.

    Examples:
        >>> import layerkit as lk
        >>> lk.layers.RandomCrop(2, 3, seed=1)(lk.ones((1, 4, 6, 1)), training=True).shape
        (1, 2, 3, 1)
    """

    def __init__(self, height: int, width: int, seed: int | None = None,
                 data_format: str | None = None, **kwargs: Any) -> None:
        super().__init__(seed, data_format, **kwargs)
        self.height, self.width = int(height), int(width)
        if min(self.height, self.width) < 1:
            raise ValueError(f"RandomCrop: `height` and `width` must be positive; received "
                             f"height={height}, width={width}")

    def _augment(self, x):
        x = self._float(x)
        h, w = x.shape[1:3]
        if h > self.height and w > self.width:
            # Offsets are drawn as tensors (they change on every call of an lk.function),
            # and the window is gathered with them.
            u = self._uniform((2,), 0.0, 1.0)
            span = np.array([h - self.height + 1, w - self.width + 1], self._dtype)
            start = _ew.cast(_ew.floor(_ew.multiply(u, span)), np.int64)
            rows = _ew.add(start[0], np.arange(self.height))
            cols = _ew.add(start[1], np.arange(self.width))
            return _array.gather(_array.gather(x, rows, axis=1), cols, axis=2)
        else:
            ch = max(min(h, int(float(w * self.height) / self.width)), 1)
            cw = max(min(w, int(float(h * self.width) / self.height)), 1)
            top, left = int(float(h - ch) / 2), int(float(w - cw) / 2)
        y = x[:, top:top + self.height, left:left + self.width, :]
        if tuple(y.shape[1:3]) != (self.height, self.width):
            y = _image.resize(y, (self.height, self.width), "bilinear")
        return y

    def get_config(self) -> dict:
        return {**super().get_config(), "height": self.height, "width": self.width}
