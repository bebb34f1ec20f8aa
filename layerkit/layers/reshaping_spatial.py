"""Spatial reshaping layers: UpSampling1D/2D/3D, ZeroPadding1D/2D/3D, Cropping1D/2D/3D.

Upsampling by repetition is ``broadcast_to`` on an inserted axis and a reshape (its
gradient sums the copies back); ``UpSampling2D(interpolation='bilinear')`` is the
``resize`` record (Keras 3's numbers: half-pixel centres, edges clamped).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from layerkit.layers.conv import check_data_format, from_channels_last, ntuple, to_channels_last
from layerkit.layers.input_spec import InputSpec
from layerkit.layers.layer import Layer
from layerkit.primitives import array as _array
from layerkit.primitives import image as _image

__all__ = ["UpSampling1D", "UpSampling2D", "UpSampling3D", "ZeroPadding1D", "ZeroPadding2D",
           "ZeroPadding3D", "Cropping1D", "Cropping2D", "Cropping3D"]


def repeat_axis(x, repeats: int, axis: int):
    """Each slice of ``x`` along ``axis`` repeated ``repeats`` times in place
    (``np.repeat``), differentiably."""
    if repeats == 1:
        return x
    shape = tuple(x.shape)
    y = _array.expand_dims(x, axis + 1)
    y = _array.broadcast_to(y, shape[:axis + 1] + (repeats,) + shape[axis + 1:])
    return _array.reshape(y, shape[:axis] + (shape[axis] * repeats,) + shape[axis + 1:])


def _spatial_pairs(layer: str, arg: str, value, n: int) -> tuple:
    """Keras's padding/cropping forms: an int, ``n`` ints (symmetric per axis) or ``n``
    (before, after) pairs (for ``n = 1``: an int or one pair) -> ``n`` pairs of
    non-negative ints."""
    if n == 1 and not isinstance(value, int):
        value = (value,)
    if isinstance(value, int) and not isinstance(value, bool):
        if value < 0:
            raise ValueError(f"{layer}: `{arg}` cannot be negative; received {arg}={value!r}")
        return ((value, value),) * n
    if not hasattr(value, "__len__") or len(value) != n:
        raise ValueError(f"{layer}: `{arg}` must be an int, {n} ints or {n} (before, after) "
                         f"pairs; received {arg}={value!r}")
    return tuple(ntuple(layer, f"entry {i} of {arg}", v, 2, allow_zero=True)
                 for i, v in enumerate(value))


class _Spatial(Layer):
    """Shared data-format handling: ``_last(x)`` computes on channels-last input."""

    rank = 2
    _last: Callable[..., Any]  # each subclass defines it

    def __init__(self, data_format: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.data_format = check_data_format(type(self).__name__, data_format)
        self.input_spec = InputSpec(ndim=self.rank + 2)

    def call(self, inputs: Any) -> Any:
        return from_channels_last(self._last(to_channels_last(inputs, self.data_format)),
                                  self.data_format)

    def get_config(self) -> dict:
        return {**super().get_config(), "data_format": self.data_format}


class _UpSampling(_Spatial):
    def __init__(self, size: Any, data_format: str | None = None, **kwargs: Any) -> None:
        super().__init__(data_format, **kwargs)
        self.size = ntuple(type(self).__name__, "size", size, self.rank)

    def _last(self, x):
        for axis, s in enumerate(self.size, start=1):
            x = repeat_axis(x, s, axis)
        return x

    def get_config(self) -> dict:
        return {**super().get_config(), "size": self.size}


class UpSampling1D(Layer):
    """Repeats each step ``size`` times: ``(batch, steps, c) -> (batch, steps * size, c)``.

    Examples:
        >>> import layerkit as lk
        >>> lk.layers.UpSampling1D(2)(lk.constant([[[1.0], [2.0]]])).numpy()[0, :, 0]
        array([1., 1., 2., 2.], dtype=float32)
    """

    def __init__(self, size: int = 2, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if not isinstance(size, int) or isinstance(size, bool):
            raise TypeError(f"UpSampling1D: `size` must be an int; received "
                            f"{type(size).__name__} {size!r}")
        if size <= 0:
            raise ValueError(f"UpSampling1D: `size` must be a positive int; received "
                             f"size={size}")
        self.size = size
        self.input_spec = InputSpec(ndim=3)

    def call(self, inputs: Any) -> Any:
        return repeat_axis(inputs, self.size, 1)

    def get_config(self) -> dict:
        return {**super().get_config(), "size": self.size}


class UpSampling2D(_UpSampling):
    """Upsamples images by ``size`` = (rows, cols) factors.

    Args:
        size: int or pair of upsampling factors.
        data_format: ``'channels_last'`` (default) or ``'channels_first'``.
        interpolation: ``'nearest'`` (repeat rows and columns) or ``'bilinear'``
            (Keras 3's ``image.resize``: half-pixel centres, edges clamped).

    Input shape: ``(batch, h, w, c)``. Output shape: ``(batch, h * size[0], w * size[1], c)``.
    """

    rank = 2

    def __init__(self, size: Any = (2, 2), data_format: str | None = None,
                 interpolation: str = "nearest", **kwargs: Any) -> None:
        super().__init__(size, data_format, **kwargs)
        self.interpolation = str(interpolation).lower()
        if self.interpolation not in _image.RESIZE_METHODS:
            raise ValueError(f"UpSampling2D: `interpolation` must be one of "
                             f"{_image.RESIZE_METHODS}; received {interpolation!r}")

    def _last(self, x):
        if self.interpolation == "nearest":
            return super()._last(x)
        size = (x.shape[1] * self.size[0], x.shape[2] * self.size[1])
        return _image.resize(x, size, "bilinear")

    def get_config(self) -> dict:
        return {**super().get_config(), "interpolation": self.interpolation}


class UpSampling3D(_UpSampling):
    """Repeats depth, rows and columns by ``size`` (int or triple):
    ``(batch, d, h, w, c) -> (batch, d * s0, h * s1, w * s2, c)``."""

    rank = 3

    def __init__(self, size: Any = (2, 2, 2), data_format: str | None = None,
                 **kwargs: Any) -> None:
        super().__init__(size, data_format, **kwargs)


class _Pairs(_Spatial):
    """Zero padding or cropping: ``arg`` is one (before, after) pair per spatial axis
    (its config value: that pair for 1-D layers, as Keras)."""

    arg = "padding"

    def __init__(self, value: Any, data_format: str | None = None, **kwargs: Any) -> None:
        super().__init__(data_format, **kwargs)
        setattr(self, self.arg, _spatial_pairs(type(self).__name__, self.arg, value,
                                               self.rank))

    def get_config(self) -> dict:
        pairs = getattr(self, self.arg)
        return {**super().get_config(), self.arg: pairs[0] if self.rank == 1 else pairs}


class _ZeroPadding(_Pairs):
    def _last(self, x):
        return _array.pad(x, ((0, 0), *self.padding, (0, 0)))


class ZeroPadding1D(_ZeroPadding):
    """Zeros before and after the steps: ``padding`` is an int or (before, after).

    Examples:
        >>> import layerkit as lk
        >>> lk.layers.ZeroPadding1D((1, 2))(lk.ones((1, 3, 2))).shape
        (1, 6, 2)
    """

    rank = 1

    def __init__(self, padding: int | tuple[int, int] = 1, data_format: str | None = None,
                 **kwargs: Any) -> None:
        super().__init__(padding, data_format, **kwargs)


class ZeroPadding2D(_ZeroPadding):
    """Zero rows and columns around images: ``padding`` is an int, (rows, cols) or
    ((top, bottom), (left, right))."""

    rank = 2

    def __init__(self, padding: int | tuple[Any, Any] = (1, 1), data_format: str | None = None,
                 **kwargs: Any) -> None:
        super().__init__(padding, data_format, **kwargs)


class ZeroPadding3D(_ZeroPadding):
    """Zeros around volumes: ``padding`` is an int, three ints or three (before, after)
    pairs."""

    rank = 3

    def __init__(self, padding: int | tuple[Any, Any, Any] = ((1, 1), (1, 1), (1, 1)),
                 data_format: str | None = None, **kwargs: Any) -> None:
        super().__init__(padding, data_format, **kwargs)


class _Cropping(_Pairs):
    arg = "cropping"

    def _last(self, x):
        sizes = x.shape[1:-1]
        if any(lo + hi >= n for (lo, hi), n in zip(self.cropping, sizes)):
            raise ValueError(f"{type(self).__name__} '{self.name}': `cropping` "
                             f"{self.cropping} must leave at least one element of each "
                             f"spatial axis of the input (spatial shape {tuple(sizes)})")
        return x[(slice(None), *(slice(lo, n - hi) for (lo, hi), n in
                                 zip(self.cropping, sizes)), slice(None))]


class Cropping1D(_Cropping):
    """Removes steps from the start and end: ``cropping`` is an int or (start, end).

    Examples:
        >>> import layerkit as lk
        >>> lk.layers.Cropping1D((1, 2))(lk.ones((1, 6, 2))).shape
        (1, 3, 2)
    """

    rank = 1

    def __init__(self, cropping: Any = (1, 1), **kwargs: Any) -> None:
        super().__init__(cropping, **kwargs)

    def get_config(self) -> dict:
        config = super().get_config()
        del config["data_format"]  # Keras's Cropping1D has no data_format
        return config


class Cropping2D(_Cropping):
    """Crops rows and columns: ``cropping`` is an int, (rows, cols) or
    ((top, bottom), (left, right))."""

    rank = 2

    def __init__(self, cropping: Any = ((0, 0), (0, 0)), data_format: str | None = None,
                 **kwargs: Any) -> None:
        super().__init__(cropping, data_format, **kwargs)


class Cropping3D(_Cropping):
    """Crops volumes: ``cropping`` is an int, three ints or three (start, end) pairs."""

    rank = 3

    def __init__(self, cropping: Any = ((1, 1), (1, 1), (1, 1)), data_format: str | None = None,
                 **kwargs: Any) -> None:
        super().__init__(cropping, data_format, **kwargs)
