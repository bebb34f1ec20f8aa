"""Transformations that tf.data itself builds from others, built here the same way:
``rejection_resample`` and ``bucket_by_sequence_length``. Each takes the Dataset it
transforms and uses only its public methods, so element order, state save/restore and
seeding come from the stages they are made of.
"""
from __future__ import annotations

import numpy as np

from layerkit.data import structure as _st
from layerkit.data.batch import _shape_tuple
from layerkit.data.node import call_fn, fn_name

# rejection_resample's running estimate of the input's class distribution (no
# initial_dist): counts start at this value per class and are updated per batch of
# this many elements, as tf.data does.
_SMOOTHING = 10
_ESTIMATE_BATCH = 32


def _class_of(class_func, elem) -> int:
    c = call_fn(class_func, elem)
    a = np.asarray(getattr(c, "_v", c))
    if a.shape != () or a.dtype.kind not in "iu":
        raise TypeError(f"Dataset.rejection_resample: class_func {fn_name(class_func)} must "
                        f"return a scalar integer class, received {a.dtype.name} with shape "
                        f"{a.shape}")
    return int(a)


def _dist(value, what: str) -> np.ndarray:
    d = np.asarray(getattr(value, "_v", value), dtype=np.float64)
    if d.ndim != 1 or not len(d) or np.any(d < 0) or not np.all(np.isfinite(d)):
        raise ValueError(f"Dataset.rejection_resample: {what} must be a vector of "
                         f"non-negative probabilities, received {d}")
    return d


def _acceptance(initial: np.ndarray, target: np.ndarray) -> tuple:
    """Per-class acceptance probabilities of the filtered stream and the probability of
    taking an element straight from the input (tf.data's mixing scheme)."""
    ratio = target / (initial + np.finfo(np.float32).tiny)
    hi, m = np.max(ratio), np.min(ratio)
    accept = (ratio - m) / (hi - m) if hi > m else np.zeros_like(ratio)
    return accept, float(m)


def rejection_resample(ds, class_func, target_dist, initial_dist=None, seed=None):
    """See ``Dataset.rejection_resample``."""
    if not callable(class_func):
        raise TypeError(f"Dataset.rejection_resample: class_func must be callable, received "
                        f"{type(class_func).__name__}")
    target = _dist(target_dist, "target_dist")
    k = len(target)

    def check(c: int) -> int:
        if not 0 <= c < k:
            raise ValueError(f"Dataset.rejection_resample: class_func returned class {c}, "
                             f"target_dist has {k} classes")
        return c

    def with_class(*x):
        elem = x[0] if len(x) == 1 else x
        return np.int64(check(_class_of(class_func, elem))), elem

    def keep(c, p, u, elem):
        return u < p

    def drop_draws(c, p, u, elem):
        return c, elem

    if initial_dist is not None:
        initial = _dist(initial_dist, "initial_dist")
        if len(initial) != k:
            raise ValueError(f"Dataset.rejection_resample: initial_dist has {len(initial)} "
                             f"classes, target_dist {k}")
        accept, m = _acceptance(initial, target)
        original = ds.map(with_class)
        if m == 1.0:
            return original

        def draw(c, elem):
            from layerkit.data.rng import element_rng
            return c, np.float64(accept[check(int(c))]), element_rng().random(), elem
        filtered = original.map(draw, seed=seed).filter(keep).map(drop_draws)
        if m == 0.0:
            return filtered
        return ds.sample_from_datasets([original, filtered], weights=[m, 1.0 - m], seed=seed,
                                       stop_on_empty_dataset=True)

    # Estimate the input distribution as it goes (counts smoothed, per batch of 32).
    def update(counts, classes):
        c = np.asarray(classes._v)
        counts = np.asarray(counts._v) + np.bincount([check(int(v)) for v in c], minlength=k)
        dist = counts / counts.sum()
        return counts, np.broadcast_to(dist, (len(c), k)).copy()

    original = ds.map(with_class)
    dists = original.map(lambda c, elem: c).batch(_ESTIMATE_BATCH).scan(
        np.full(k, _SMOOTHING, np.int64), update).unbatch()
    mixing = dists.map(lambda d: _acceptance(np.asarray(d._v), target))

    def draw_est(pair, mix):
        (c, elem), (accept, _) = pair, mix
        from layerkit.data.rng import element_rng
        return c, np.float64(np.asarray(accept._v)[check(int(c))]), element_rng().random(), elem
    filtered = ds.zip(original, mixing).map(draw_est, seed=seed).filter(keep).map(drop_draws)
    weights = mixing.map(lambda accept, m: (m, 1.0 - m))
    return ds.sample_from_datasets([original, filtered], weights=weights, seed=seed,
                                   stop_on_empty_dataset=True)


def bucket_by_sequence_length(ds, element_length_func, bucket_boundaries, bucket_batch_sizes,
                              padded_shapes=None, padding_values=None,
                              pad_to_bucket_boundary=False, no_padding=False,
                              drop_remainder=False):
    """See ``Dataset.bucket_by_sequence_length``."""
    where = "Dataset.bucket_by_sequence_length"
    bounds = [int(b) for b in bucket_boundaries]
    sizes = [int(b) for b in bucket_batch_sizes]
    if len(sizes) != len(bounds) + 1:
        raise ValueError(f"{where}: len(bucket_batch_sizes) must equal "
                         f"len(bucket_boundaries) + 1, received {len(sizes)} and {len(bounds)}")
    if bounds != sorted(bounds):
        raise ValueError(f"{where}: bucket_boundaries must be sorted increasingly, received "
                         f"{bounds}")
    if not callable(element_length_func):
        raise TypeError(f"{where}: element_length_func must be callable, received "
                        f"{type(element_length_func).__name__}")
    edges = np.asarray(bounds, np.int64)

    def bucket_id(*x):
        n = call_fn(element_length_func, x[0] if len(x) == 1 else x)
        a = np.asarray(getattr(n, "_v", n))
        if a.shape != () or a.dtype.kind not in "iu":
            raise TypeError(f"{where}: element_length_func must return a scalar integer, "
                            f"received {a.dtype.name} with shape {a.shape}")
        # bucket i holds lengths in [bounds[i-1], bounds[i])
        return np.int64(np.searchsorted(edges, int(a), side="right"))

    def batching(key, group):
        b = int(np.asarray(key._v))
        size = sizes[b]
        if no_padding:
            return group.batch(size, drop_remainder=drop_remainder)
        filler = None
        if pad_to_bucket_boundary:
            if b >= len(bounds):
                raise ValueError(f"{where}: with pad_to_bucket_boundary=True, elements must "
                                 f"have length < max(bucket_boundaries) = "
                                 f"{max(bounds, default=None)}")
            filler = bounds[b] - 1
        shapes = padded_shapes
        if filler is not None:
            spec = group.element_spec
            codec = _st.Codec(spec)
            given = ([None] * codec.n if shapes is None else [shapes] if codec.kind == "leaf"
                     else _st.flatten_up_to(codec.template, shapes))
            shapes = codec.pack([
                [filler if d is None or d == -1 else int(d)
                 for d in (s.shape if g is None else _shape_tuple(g))]
                for s, g in zip(codec.flatten(spec), given)])
        return group.padded_batch(size, shapes, padding_values, drop_remainder)

    return ds.group_by_window(bucket_id, batching, window_size_func=lambda b: sizes[int(b)])
