"""Numeric preprocessing layers: Normalization, Rescaling, Discretization, CategoryEncoding.

``adapt(data)`` accepts arrays, Tensors, ``lk.data.Dataset``s (of batches, or of single
rank-1 samples, which are batched by 128 as Keras does; ``(x, y)`` elements use ``x``)
and other iterables of batches. Datasets are recognised by their methods, so this
package never imports ``layerkit.data``.
"""
from __future__ import annotations

import itertools
import math
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from layerkit._core.convert import to_array
from layerkit._core.tensor import Tensor
from layerkit._core.types import AxisLike, DTypeLike, TensorLike
from layerkit.layers.layer import Layer
from layerkit.primitives import array as _array
from layerkit.primitives import categorical as _cat
from layerkit.primitives import elementwise as _ew
from layerkit.primitives import reduce as _reduce

__all__ = ["Normalization", "Rescaling", "Discretization", "CategoryEncoding"]

_EPSILON = 1e-7  # Keras's backend.epsilon()


def _first(element):
    """The input part of a dataset element: ``x`` of ``(x, y)`` / ``(x, y, w)``."""
    return element[0] if isinstance(element, tuple) else element


def adapt_batches(layer: str, data, steps: int | None = None, batch_samples: bool = True):
    """(first batch's shape, an iterator of NumPy batches) for the ``adapt`` forms, or
    (shape, None) for a single array/Tensor (the caller reads it whole). With
    ``batch_samples``, a dataset of rank-1 elements is batched by 128 first."""
    if isinstance(data, (np.ndarray, Tensor)):
        return tuple(data.shape), None
    if hasattr(data, "element_spec") and hasattr(data, "batch"):  # an lk.data.Dataset
        spec = _first(data.element_spec)
        if batch_samples and len(spec.shape) == 1:
            data = data.batch(128)
        if steps is not None:
            data = data.take(steps)
        batches: Iterator[Any] = (_first(e) for e in data.as_numpy_iterator())
    elif hasattr(data, "__iter__") and not isinstance(data, (str, bytes, dict)):
        batches = (_first(e) for e in data)
        if steps is not None:
            batches = itertools.islice(batches, steps)
    else:
        raise TypeError(f"{layer}.adapt: expected an array, a Tensor, an lk.data.Dataset or "
                        f"an iterable of batches; received {type(data).__name__}")
    batches = iter(batches)
    first = next(batches, None)
    if first is None:
        raise ValueError(f"{layer}.adapt: received no data (an empty dataset or iterable)")
    if not hasattr(first, "shape"):
        raise TypeError(f"{layer}.adapt: batches must be arrays or Tensors with a shape; "
                        f"received {type(first).__name__}")
    return tuple(first.shape), (np.asarray(to_array(b)) for b in
                                itertools.chain([first], batches))


class Normalization(Layer):
    """Standardises features: ``(x - mean) / sqrt(variance)`` (or the inverse).

    Args:
        axis: the axis or axes that keep their own statistics (default -1, the features);
            None for one mean and variance over everything.
        mean: given statistics (scalars or arrays broadcasting over the kept
            axes), or None to learn them with :meth:`adapt`.
        variance: given statistics (scalars or arrays broadcasting over the kept
            axes), or None to learn them with :meth:`adapt`.
        invert: compute ``mean + x * sqrt(variance)`` instead.

    The divisor is ``max(sqrt(variance), 1e-7)``. Without given statistics the layer owns
    non-trainable weights ``mean`` and ``variance`` (shaped like the kept axes) and
    ``count`` (an int32 scalar), in that order, as Keras 3.

    Examples:
        >>> import numpy as np, layerkit as lk
        >>> norm = lk.layers.Normalization()
        >>> norm.adapt(np.array([[0.0, 10.0], [2.0, 30.0]]))
        >>> norm(np.array([[1.0, 20.0]])).numpy()
        array([[0., 0.]], dtype=float32)
    """

    _cast_int_inputs = True

    def __init__(self, axis: AxisLike = -1, mean: Any = None, variance: Any = None,
                 invert: bool = False, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if axis is None:
            axis = ()
        self.axis = (axis,) if isinstance(axis, int) else tuple(axis)
        self.input_mean, self.input_variance = mean, variance
        self.invert = bool(invert)
        if (mean is None) != (variance is None):
            raise ValueError(f"Normalization: set both `mean` and `variance` or neither; "
                             f"received mean={mean} and variance={variance}")
        if mean is not None:
            if np.shape(mean) != np.shape(variance):
                raise ValueError(f"Normalization: `mean` and `variance` must have the same "
                                 f"shape; received {np.shape(mean)} and {np.shape(variance)}")
            if len(np.shape(mean)) > len(self.axis):
                raise ValueError(f"Normalization: the rank of `mean` ({len(np.shape(mean))})"
                                 f" must be at most the number of axes {self.axis}")
        self.mean = self.variance = None

    def build(self, input_shape: Any) -> None:
        ndim = len(input_shape)
        if any(not -ndim <= a < ndim for a in self.axis):
            raise ValueError(f"Normalization '{self.name}': every axis must be in "
                             f"[-{ndim}, {ndim}) for inputs of rank {ndim}; received "
                             f"axis={self.axis}")
        self._keep = tuple(sorted(a % ndim for a in self.axis))
        if any(input_shape[d] is None for d in self._keep):
            raise ValueError(f"Normalization '{self.name}': the kept axes {self.axis} must "
                             f"have known sizes; received input shape {tuple(input_shape)}")
        self._reduce_axes = tuple(d for d in range(ndim) if d not in self._keep)
        self._kept_shape = tuple(input_shape[d] for d in self._keep)
        self._broadcast = tuple(input_shape[d] if d in self._keep else 1 for d in range(ndim))
        self._build_input_shape = tuple(input_shape)
        if self.input_mean is None:
            self.adapt_mean = self.add_weight("mean", self._kept_shape, "zeros",
                                              trainable=False)
            self.adapt_variance = self.add_weight("variance", self._kept_shape, "ones",
                                                  trainable=False)
            self.count = self.add_weight("count", (), "zeros", dtype="int32", trainable=False)
            return
        # Given statistics fill the kept axes from the right (Keras's broadcasting).
        stats = []
        for value in (self.input_mean, self.input_variance):
            v = np.asarray(value, self.dtype)
            if v.ndim:
                shape = [1] * ndim
                for i in range(1, v.ndim + 1):
                    shape[self._keep[-i]] = v.shape[-i]
                v = v.reshape(shape)
            stats.append(np.broadcast_to(v, self._broadcast).copy())
        self.mean, self.variance = stats

    def adapt(self, data: Any, steps: int | None = None) -> None:
        """Learn ``mean`` and ``variance`` over every axis but the kept ones.

        Args:
            data: an array, a Tensor, an ``lk.data.Dataset`` or an iterable of batches.
            steps: read at most this many batches.

        Raises:
            ValueError: the layer has given statistics, or a batch's kept axes differ
                from the shape the layer was built for.
        """
        if self.input_mean is not None:
            raise ValueError(f"Normalization '{self.name}': cannot adapt a layer built with "
                             f"given `mean` and `variance`")
        shape, batches = adapt_batches("Normalization", data, steps)
        if not self.built:
            self.build(shape)
        if batches is None:
            batches = iter([np.asarray(to_array(data))])
        mean = np.zeros(self._kept_shape)
        var = np.zeros(self._kept_shape)
        count = 0
        for batch in batches:
            if len(batch.shape) != len(self._build_input_shape) or any(
                    batch.shape[d] != self._build_input_shape[d] for d in self._keep):
                raise ValueError(f"Normalization '{self.name}': adapt() received a batch of "
                                 f"shape {batch.shape}, incompatible with the shape "
                                 f"{self._build_input_shape} the layer was built for")
            b = batch.astype(np.float64)
            n = math.prod(b.shape[d] for d in self._reduce_axes)
            b_mean = b.mean(axis=self._reduce_axes)
            b_var = b.var(axis=self._reduce_axes)
            # Merge the batch into the running statistics (exact for mean and variance).
            count += n
            w = n / count
            new_mean = mean * (1 - w) + b_mean * w
            var = (var + (mean - new_mean) ** 2) * (1 - w) + (b_var + (b_mean - new_mean) ** 2) * w
            mean = new_mean
        self.adapt_mean.assign(mean.astype(self.dtype))
        self.adapt_variance.assign(var.astype(self.dtype))

    def call(self, inputs: Any) -> Any:
        if self.input_mean is None:
            mean = _array.reshape(self.adapt_mean, self._broadcast)
            variance = _array.reshape(self.adapt_variance, self._broadcast)
        else:
            mean, variance = self.mean, self.variance
        scale = _ew.maximum(_ew.sqrt(variance), _EPSILON)
        if self.invert:
            return _ew.add(mean, _ew.multiply(inputs, scale))
        return _ew.divide(_ew.subtract(inputs, mean), scale)

    def get_config(self) -> dict:
        return {**super().get_config(), "axis": self.axis, "invert": self.invert,
                "mean": np.array(self.input_mean).tolist(),
                "variance": np.array(self.input_variance).tolist()}


class Rescaling(Layer):
    """``inputs * scale + offset`` in the layer's dtype (e.g. ``scale=1/255`` for images).

    Args:
        scale: a scalar or an array broadcasting over the inputs (e.g. per channel).
        offset: likewise.

    Examples:
        >>> import layerkit as lk
        >>> lk.layers.Rescaling(1 / 127.5, offset=-1)(lk.constant([[0, 255]])).numpy()
        array([[-1.,  1.]], dtype=float32)
    """

    _cast_int_inputs = True

    def __init__(self, scale: float, offset: float = 0.0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.scale, self.offset = scale, offset

    def call(self, inputs: Any) -> Any:
        scale = np.asarray(self.scale, self.dtype)
        offset = np.asarray(self.offset, self.dtype)
        return _ew.add(_ew.multiply(inputs, scale), offset)

    def get_config(self) -> dict:
        def plain(v):
            return np.asarray(v).tolist() if isinstance(v, (np.ndarray, list, tuple)) else v
        return {**super().get_config(), "scale": plain(self.scale),
                "offset": plain(self.offset)}


def _encode(layer: str, indices, mode: str, depth: int, dtype, count_weights=None):
    """Keras's ``encode_categorical_inputs`` for the non-'int' modes."""
    if len(indices.shape) == 0:
        indices = _array.reshape(indices, (1,))
    if mode == "one_hot":
        if len(indices.shape) > 1 and indices.shape[-1] == 1:
            indices = _array.squeeze(indices, -1)
        return _cat.category_encode(indices, depth, "one_hot", dtype, layer)
    if count_weights is None:
        return _cat.category_encode(indices, depth, mode, dtype, layer)
    rows = _cat.category_encode(indices, depth, "one_hot", count_weights.dtype, layer)
    weighted = _ew.multiply(rows, _array.expand_dims(count_weights, -1))
    return _reduce.reduce_sum(weighted, axis=1 if len(indices.shape) > 1 else 0)


class Discretization(Layer):
    """Buckets continuous values: ``boundaries[i - 1] <= x < boundaries[i]`` -> ``i``.

    Args:
        bin_boundaries: sorted boundaries (``len + 1`` buckets), or None with ``num_bins``.
        num_bins: the number of buckets :meth:`adapt` should find (approximate quantiles).
        epsilon: the quantile summary's error tolerance during ``adapt`` (Keras 3's).
        output_mode: ``'int'`` (int32 bucket indices, the default), ``'one_hot'``,
            ``'multi_hot'`` or ``'count'`` (float encodings of the indices; see
            :class:`CategoryEncoding`).
        sparse: must be False.

    Examples:
        >>> import layerkit as lk
        >>> lk.layers.Discretization([0.0, 1.0])(lk.constant([[-1.0, 0.0, 0.5, 2.0]])).numpy()
        array([[0, 1, 1, 2]], dtype=int32)
    """

    _cast_int_inputs = True

    def __init__(self, bin_boundaries: Sequence[float] | None = None, num_bins: int | None = None,
                 epsilon: float = 0.01, output_mode: str = "int", sparse: bool = False,
                 dtype: DTypeLike = None, name: str | None = None, **kwargs: Any) -> None:
        super().__init__(name=name, dtype=dtype, **kwargs)
        if output_mode not in ("int", *_cat.MODES):
            raise ValueError(f"Discretization: `output_mode` must be one of "
                             f"{('int', *_cat.MODES)}; received {output_mode!r}")
        if sparse:
            raise ValueError("Discretization: sparse=True is not supported (layerkit has no "
                             "sparse tensors)")
        if num_bins is not None and num_bins < 0:
            raise ValueError(f"Discretization: `num_bins` must be >= 0; received "
                             f"num_bins={num_bins}")
        if (num_bins is None) == (bin_boundaries is None):
            raise ValueError(f"Discretization: set exactly one of `num_bins` and "
                             f"`bin_boundaries`; received num_bins={num_bins}, "
                             f"bin_boundaries={bin_boundaries}")
        self.bin_boundaries = None if bin_boundaries is None else [
            float(b) for b in bin_boundaries]
        self.num_bins, self.epsilon = num_bins, float(epsilon)
        self.output_mode, self.sparse = output_mode, False
        self.summary = None if self.bin_boundaries else np.zeros((2, 0), np.float32)

    def adapt(self, data: Any, steps: int | None = None) -> None:
        """Set ``num_bins - 1`` boundaries at approximate quantiles of ``data`` (Keras 3's
        summary algorithm, so the same data give the same boundaries).

        Raises:
            ValueError: the layer was created with ``bin_boundaries``.
        """
        if self.num_bins is None:
            raise ValueError(f"Discretization '{self.name}': cannot adapt a layer created "
                             f"with `bin_boundaries`; use `num_bins`")
        _, batches = adapt_batches("Discretization", data, steps, batch_samples=False)
        if batches is None:
            batches = iter([np.asarray(to_array(data))])
        self.summary = np.zeros((2, 0), np.float32)
        for batch in batches:
            summary = quantile_summary(batch.astype(np.float32), self.epsilon)
            merged = np.concatenate([summary, self.summary], axis=1)
            merged = merged[:, np.argsort(merged[0])]
            self.summary = compress_summary(merged, self.epsilon)
        self.bin_boundaries = compress_summary(self.summary, 1.0 / self.num_bins)[0, :-1] \
            .tolist()

    def call(self, inputs: Any) -> Any:
        if self.bin_boundaries is None:
            raise ValueError(f"Discretization '{self.name}': pass `bin_boundaries` or call "
                             f"adapt() before using the layer")
        indices = _cat.bucketize(inputs, self.bin_boundaries)
        if self.output_mode == "int":
            return indices
        return _encode(f"Discretization '{self.name}'", indices, self.output_mode,
                       len(self.bin_boundaries) + 1, self.dtype)

    def get_config(self) -> dict:
        return {**super().get_config(), "bin_boundaries": self.bin_boundaries,
                "num_bins": self.num_bins, "epsilon": self.epsilon,
                "output_mode": self.output_mode, "sparse": self.sparse}

    @classmethod
    def from_config(cls, config: dict) -> Any:
        """Create the layer; an adapted layer's config (boundaries and ``num_bins``)
        restores the boundaries."""
        config = dict(config)
        bounds = config.get("bin_boundaries")
        if bounds is not None and config.get("num_bins") is not None:
            del config["bin_boundaries"]
            layer = cls(**config)
            layer.bin_boundaries = list(bounds)
            return layer
        return cls(**config)


def quantile_summary(values: np.ndarray, epsilon: float) -> np.ndarray:
    """(2, k) summary of a batch: every ``step``-th sorted value (``step`` is
    ``size * epsilon``, at least 1) with the weight ``step`` it stands for."""
    values = np.sort(values.reshape(-1))
    step = max(values.size / (1.0 / epsilon), 1)  # this rounding, as Keras
    picked = values[int(step - 1)::int(step)]
    return np.stack([picked, np.full_like(picked, step)])


def compress_summary(summary: np.ndarray, epsilon: float) -> np.ndarray:
    """Resample a sorted (values, weights) summary at ``1/epsilon`` evenly spaced
    cumulative-weight fractions (no change when it is already that small)."""
    if summary.shape[1] * epsilon < 1:
        return summary
    fractions = epsilon + np.arange(0.0, 1.0, epsilon)
    cum = summary[1].cumsum()
    at = cum / cum[-1]
    values = np.interp(fractions, at, summary[0])
    cum_new = np.interp(fractions, at, cum)
    weights = np.diff(cum_new, prepend=0.0)
    return np.stack([values, weights]).astype(np.float32)


class CategoryEncoding(Layer):
    """Encodes integer tokens in ``[0, num_tokens)`` as one-hot, multi-hot or count vectors.

    Args:
        num_tokens: the number of tokens (the output's last axis).
        output_mode: ``'multi_hot'`` (default; ``'binary'`` is an alias), ``'one_hot'``
            or ``'count'``.
        sparse: must be False.

    ``'one_hot'`` encodes every element (a trailing axis of size 1 is replaced);
    ``'multi_hot'`` and ``'count'`` encode each sample's tokens together: ``(batch, k)``
    -> ``(batch, num_tokens)``, and a rank-1 input is one sample. ``call(inputs,
    count_weights=None)``: with ``'count'``, per-token weights to sum instead of 1s.
    Tokens out of range raise a ``ValueError``.

    Examples:
        >>> import layerkit as lk
        >>> lk.layers.CategoryEncoding(4)(lk.constant([[0, 3], [1, 1]])).numpy()
        array([[1., 0., 0., 1.],
               [0., 1., 0., 0.]], dtype=float32)
    """

    def __init__(self, num_tokens: int | None = None, output_mode: str = "multi_hot",
                 sparse: bool = False, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if output_mode == "binary":
            output_mode = "multi_hot"
        if output_mode not in _cat.MODES:
            raise ValueError(f"CategoryEncoding: `output_mode` must be one of {_cat.MODES}; "
                             f"received {output_mode!r}")
        if num_tokens is None or num_tokens < 1:
            raise ValueError(f"CategoryEncoding: `num_tokens` must be an int >= 1; received "
                             f"num_tokens={num_tokens}")
        if sparse:
            raise ValueError("CategoryEncoding: sparse=True is not supported (layerkit has "
                             "no sparse tensors)")
        self.num_tokens, self.output_mode, self.sparse = int(num_tokens), output_mode, False

    def call(self, inputs: Any, count_weights: TensorLike | None = None) -> Any:
        if count_weights is not None and self.output_mode != "count":
            raise ValueError(f"CategoryEncoding '{self.name}': `count_weights` is only used "
                             f"with output_mode='count'; this layer's is "
                             f"{self.output_mode!r}")
        return _encode(f"CategoryEncoding '{self.name}'", inputs, self.output_mode,
                       self.num_tokens, self.dtype, count_weights)

    def get_config(self) -> dict:
        return {**super().get_config(), "num_tokens": self.num_tokens,
                "output_mode": self.output_mode}
