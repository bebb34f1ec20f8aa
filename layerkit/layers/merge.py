"""Merge layers (called on a list of tensors): Add, Subtract, Multiply, Average, Maximum,
Minimum, Concatenate, Dot, and their functional forms ``add(inputs)``, ...

Elementwise merges follow Keras 3: inputs broadcast against each other (each non-batch
axis equal or 1, aligned from the last), a lower-rank input gets size-1 axes inserted
after the batch axis, and the output mask is the OR of the input masks when every input
has one.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from layerkit.layers.layer import _MASKS, Layer, get_keras_mask, set_keras_mask
from layerkit.primitives import array as _array
from layerkit.primitives import creation as _creation
from layerkit.primitives import elementwise as _ew
from layerkit.primitives import linalg as _linalg
from layerkit.primitives import nn as _nn
from layerkit.primitives import reduce as _reduce

__all__ = ["Add", "Subtract", "Multiply", "Average", "Maximum", "Minimum", "Concatenate", "Dot",
           "add", "subtract", "multiply", "average", "maximum", "minimum", "concatenate", "dot"]


def _or_masks(masks: list):
    out = masks[0]
    for m in masks[1:]:
        out = _ew.logical_or(out, m)
    return out


class _Merge(Layer):
    supports_masking = True
    _min_inputs = 1
    _merge: Callable[[list], Any]  # each subclass defines it

    def _check(self, inputs) -> list:
        n = self._min_inputs
        if not isinstance(inputs, (list, tuple)) or len(inputs) < n:
            got = f"{len(inputs)} tensor(s)" if isinstance(inputs, (list, tuple)) \
                else "a single tensor"
            raise ValueError(f"{type(self).__name__} '{self.name}' must be called on a list of "
                             f"at least {n} tensor(s); received {got}")
        return list(inputs)

    def call(self, inputs: Any) -> Any:
        xs = self._check(inputs)
        shapes = [tuple(x.shape) for x in xs]
        rank = max(len(s) for s in shapes)
        if len({len(s) for s in shapes}) > 1:  # Keras: new axes right after the batch axis
            xs = [x if x.ndim == rank else
                  _array.reshape(x, (x.shape[0],) + (1,) * (rank - x.ndim) + tuple(x.shape[1:]))
                  for x in xs]
        full = [tuple(x.shape) for x in xs]
        ok = len({s[0] for s in full}) == 1 and all(
            len({d for d in dims if d != 1}) <= 1 for dims in zip(*(s[1:] for s in full)))
        if not ok:
            raise ValueError(f"{type(self).__name__} '{self.name}': inputs must have the same "
                             f"shape, or shapes that broadcast (equal batch size; each other "
                             f"axis equal or 1); received shapes {shapes}")
        return self._merge(xs)

    def compute_mask(self, inputs: Any, mask: Any = None) -> Any:
        """The OR of the input masks if every input has one, else None."""
        if mask is None or not isinstance(mask, (list, tuple)):
            return None
        if any(m is None for m in mask):
            return None
        return _or_masks(list(mask))

    @staticmethod
    def _full_masks(xs: list) -> list:
        """Each input's mask broadcast to its shape (None where it has none)."""
        if not _MASKS[0]:  # no mask exists in this process
            return [None] * len(xs)
        out = []
        for x in xs:
            m = get_keras_mask(x)
            out.append(None if m is None else _array.broadcast_to(
                _array.expand_dims(_ew.cast(m, "bool"), -1), x.shape))
        return out

    def _or_merge(self, xs: list, op):
        """``op`` over the inputs where an input's masked entries take the running
        result's value and vice versa; the output gets the OR of the masks when every
        input has one (Keras 3's Maximum and Minimum)."""
        out: Any = None
        out_mask = None
        for x, m in zip(xs, self._full_masks(xs)):
            if out is None:
                out, out_mask = x, m
                continue
            if m is not None:
                x = _ew.where(m, x, out)
            if out_mask is not None:
                out = _ew.where(out_mask, out, x)
            out_mask = _ew.logical_or(out_mask, m) if m is not None and out_mask is not None \
                else None
            out = op(out, x)
        if out_mask is not None:
            set_keras_mask(out, _reduce.reduce_any(out_mask, axis=-1))
        return out


class Add(_Merge):
    """Elementwise sum of a list of tensors.

    Examples:
        >>> import layerkit as lk
        >>> lk.layers.Add()([lk.ones((2, 3)), lk.ones((2, 3))]).numpy()[0]
        array([2., 2., 2.], dtype=float32)
    """

    def _merge(self, xs: list):
        y = xs[0]
        for x in xs[1:]:
            y = _ew.add(y, x)
        return y


class Subtract(_Merge):
    """``inputs[0] - inputs[1]`` (exactly two inputs)."""

    _min_inputs = 2

    def _merge(self, xs: list):
        if len(xs) != 2:
            raise ValueError(f"Subtract '{self.name}' must be called on exactly 2 inputs; "
                             f"received {len(xs)}")
        return _ew.subtract(xs[0], xs[1])


class Multiply(_Merge):
    """Elementwise product of a list of tensors. With masks on every input, masked entries
    count as 1 and entries masked in all inputs give 0 (Keras 3)."""

    def _merge(self, xs: list):
        masks = self._full_masks(xs)
        every = all(m is not None for m in masks)
        out = None
        for x, m in zip(xs, masks):
            if m is not None:
                x = _ew.where(m, x, 1.0)
            out = x if out is None else _ew.multiply(out, x)
        if every:
            union = _or_masks(masks)
            out = _ew.where(union, out, 0.0)
            set_keras_mask(out, _reduce.reduce_any(union, axis=-1))
        return out


class Average(_Merge):
    """Elementwise mean of a list of tensors."""

    def _merge(self, xs: list):
        y = xs[0]
        for x in xs[1:]:
            y = _ew.add(y, x)
        return _ew.divide(y, float(len(xs)))


class Maximum(_Merge):
    """Elementwise maximum of a list of tensors (masked entries take the other input's
    value, as in Keras 3)."""

    def _merge(self, xs: list):
        return self._or_merge(xs, _ew.maximum)


class Minimum(_Merge):
    """Elementwise minimum of a list of tensors (masked entries take the other input's
    value, as in Keras 3)."""

    def _merge(self, xs: list):
        return self._or_merge(xs, _ew.minimum)


class Concatenate(_Merge):
    """Concatenates a list of tensors along ``axis`` (default -1); every other dimension
    must match. Masks: the output mask joins the input masks (all-true for unmasked
    inputs) and is reduced over the last axis, as in Keras."""

    def __init__(self, axis: int = -1, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.axis = int(axis)

    def call(self, inputs: Any) -> Any:
        xs = self._check(inputs)
        shapes = [tuple(x.shape) for x in xs]
        rank = len(shapes[0])
        if not -rank <= self.axis < rank:  # a wrapped axis would join along another one
            raise ValueError(f"Concatenate '{self.name}': axis {self.axis} is out of range "
                             f"for inputs of rank {rank}; received shapes {shapes}")
        axis = self.axis % rank
        rest = {s[:axis] + s[axis + 1:] for s in shapes}
        if any(len(s) != rank for s in shapes) or len(rest) > 1:
            raise ValueError(f"Concatenate '{self.name}' needs inputs with matching shapes "
                             f"except along axis {self.axis}; received shapes {shapes}")
        return _array.concat(xs, axis=axis)

    def compute_mask(self, inputs: Any, mask: Any = None) -> Any:
        if mask is None or not isinstance(mask, (list, tuple)) or all(m is None for m in mask):
            return None
        full = []
        for x, m in zip(inputs, mask):
            if m is None:
                m = _creation.ones(x.shape, "bool")
            elif m.ndim < x.ndim:
                m = _array.broadcast_to(_array.expand_dims(_ew.cast(m, "bool"), -1), x.shape)
            full.append(m)
        return _reduce.reduce_any(_array.concat(full, axis=self.axis), axis=-1)

    def get_config(self) -> dict:
        return {**super().get_config(), "axis": self.axis}


def _batch_dot(x, y, ax: int, ay: int):
    """Keras's batch_dot: contract ``x``'s axis ``ax`` with ``y``'s axis ``ay`` per sample.

    The output keeps ``x``'s other axes, then ``y``'s (without the batch axis); a result
    of rank 1 becomes ``(batch, 1)``.
    """
    x = _array.transpose(x, [i for i in range(x.ndim) if i != ax] + [ax])
    y = _array.transpose(y, [0, ay] + [i for i in range(1, y.ndim) if i != ay])
    b, d = x.shape[0], x.shape[-1]
    x_mid, y_rest = tuple(x.shape[1:-1]), tuple(y.shape[2:])
    out = _linalg.matmul(_array.reshape(x, (b, -1, d)), _array.reshape(y, (b, d, -1)))
    shape = (b,) + x_mid + y_rest
    return _array.reshape(out, shape if len(shape) > 1 else (b, 1))


class Dot(_Merge):
    """Dot product of two tensors per sample, along ``axes``.

    Args:
        axes: one axis for both inputs, or a pair ``(axis_of_x, axis_of_y)``; never the
            batch axis 0. Negative axes count from the end.
        normalize: L2-normalize both inputs along those axes first (the output is then
            the cosine similarity).

    Output shape: ``x``'s shape without its ``axes[0]``, then ``y``'s without the batch
    axis and ``axes[1]``; ``(batch, 1)`` for two ``(batch, dim)`` inputs.

    Examples:
        >>> import layerkit as lk
        >>> lk.layers.Dot(axes=1)([lk.ones((2, 3)), lk.ones((2, 3))]).numpy()
        array([[3.],
               [3.]], dtype=float32)
    """

    _min_inputs = 2

    def __init__(self, axes: Any, normalize: bool = False, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if isinstance(axes, (list, tuple)):
            if len(axes) != 2 or not all(isinstance(a, int) for a in axes):
                raise ValueError(f"Dot: `axes` must be an int or a pair of ints; received "
                                 f"axes={axes!r}")
            axes = list(axes)
        elif not isinstance(axes, int):
            raise TypeError(f"Dot: `axes` must be an int or a list of two ints; received "
                            f"axes={axes!r}")
        self.axes = axes
        self.normalize = bool(normalize)

    def call(self, inputs: Any) -> Any:
        xs = self._check(inputs)
        if len(xs) != 2:
            raise ValueError(f"Dot '{self.name}' must be called on exactly 2 inputs; received "
                             f"{len(xs)}")
        x, y = xs
        pair = self.axes if isinstance(self.axes, list) else [self.axes, self.axes]
        ax, ay = (a % t.ndim if a < 0 else a for a, t in zip(pair, (x, y)))
        if x.ndim < 2 or y.ndim < 2 or 0 in (ax, ay) or ax >= x.ndim or ay >= y.ndim \
                or x.shape[ax] != y.shape[ay] or x.shape[0] != y.shape[0]:
            raise ValueError(f"Dot '{self.name}': cannot contract axis {ax} of shape "
                             f"{tuple(x.shape)} with axis {ay} of shape {tuple(y.shape)} (the "
                             f"axes must be non-batch axes of equal size, and the batch sizes "
                             f"equal)")
        if self.normalize:  # Keras: x * min(rsqrt(sum(x^2)), 1 / 1e-7)
            x = _nn.l2_normalize(x, ax, epsilon=1e-14)
            y = _nn.l2_normalize(y, ay, epsilon=1e-14)
        return _batch_dot(x, y, ax, ay)

    def compute_mask(self, inputs: Any, mask: Any = None) -> None:
        return None

    def get_config(self) -> dict:
        return {**super().get_config(), "axes": self.axes, "normalize": self.normalize}


# ---- functional forms (Keras: keras.layers.add(inputs, **kwargs), ...) --------------------
def add(inputs: Any, **kwargs: Any) -> Any:
    """``Add(**kwargs)(inputs)``."""
    return Add(**kwargs)(inputs)


def subtract(inputs: Any, **kwargs: Any) -> Any:
    """``Subtract(**kwargs)(inputs)``."""
    return Subtract(**kwargs)(inputs)


def multiply(inputs: Any, **kwargs: Any) -> Any:
    """``Multiply(**kwargs)(inputs)``."""
    return Multiply(**kwargs)(inputs)


def average(inputs: Any, **kwargs: Any) -> Any:
    """``Average(**kwargs)(inputs)``."""
    return Average(**kwargs)(inputs)


def maximum(inputs: Any, **kwargs: Any) -> Any:
    """``Maximum(**kwargs)(inputs)``."""
    return Maximum(**kwargs)(inputs)


def minimum(inputs: Any, **kwargs: Any) -> Any:
    """``Minimum(**kwargs)(inputs)``."""
    return Minimum(**kwargs)(inputs)


def concatenate(inputs: Any, axis: int = -1, **kwargs: Any) -> Any:
    """``Concatenate(axis=axis, **kwargs)(inputs)``."""
    return Concatenate(axis=axis, **kwargs)(inputs)


def dot(inputs: Any, axes: Any = -1, normalize: bool = False, **kwargs: Any) -> Any:
    """``Dot(axes=axes, normalize=normalize, **kwargs)(inputs)``."""
    return Dot(axes=axes, normalize=normalize, **kwargs)(inputs)
