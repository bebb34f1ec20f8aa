"""``lk.data.experimental``: the names TF programs use from ``tf.data.experimental``.

The transformation functions return a function ``Dataset -> Dataset`` for
``dataset.apply(...)``, as in tf.data.
"""
from __future__ import annotations

from layerkit.data.dataset import Dataset
from layerkit.data.node import AUTOTUNE, INFINITE, UNKNOWN
from layerkit.data.options import (
    AutoShardPolicy,
    DistributeOptions,
    OptimizationOptions,
    ThreadingOptions,
)

INFINITE_CARDINALITY = INFINITE
UNKNOWN_CARDINALITY = UNKNOWN
Counter = Dataset.counter
sample_from_datasets = Dataset.sample_from_datasets
choose_from_datasets = Dataset.choose_from_datasets
save = Dataset.save
load = Dataset.load


def cardinality(dataset: Dataset) -> int:
    """``dataset.cardinality()`` (``INFINITE_CARDINALITY`` -1, ``UNKNOWN_CARDINALITY`` -2)."""
    return dataset.cardinality()


def get_single_element(dataset: Dataset):
    """``dataset.get_single_element()``."""
    return dataset.get_single_element()


def assert_cardinality(expected_cardinality: int):
    """For ``apply``: ``dataset.assert_cardinality(expected_cardinality)``."""
    return lambda ds: ds.assert_cardinality(expected_cardinality)


def ignore_errors(log_warning: bool = False):
    """For ``apply``: ``dataset.ignore_errors(log_warning)``."""
    return lambda ds: ds.ignore_errors(log_warning)


def unique():
    """For ``apply``: ``dataset.unique()``."""
    return lambda ds: ds.unique()


def scan(initial_state, scan_func):
    """For ``apply``: ``dataset.scan(initial_state, scan_func)``."""
    return lambda ds: ds.scan(initial_state, scan_func)


def take_while(predicate):
    """For ``apply``: ``dataset.take_while(predicate)``."""
    return lambda ds: ds.take_while(predicate)


def group_by_window(key_func, reduce_func, window_size=None, window_size_func=None):
    """For ``apply``: ``dataset.group_by_window(...)``."""
    return lambda ds: ds.group_by_window(key_func, reduce_func, window_size, window_size_func)


def bucket_by_sequence_length(element_length_func, bucket_boundaries, bucket_batch_sizes,
                              padded_shapes=None, padding_values=None,
                              pad_to_bucket_boundary=False, no_padding=False,
                              drop_remainder=False):
    """For ``apply``: ``dataset.bucket_by_sequence_length(...)``."""
    return lambda ds: ds.bucket_by_sequence_length(
        element_length_func, bucket_boundaries, bucket_batch_sizes, padded_shapes,
        padding_values, pad_to_bucket_boundary, no_padding, drop_remainder)


def rejection_resample(class_func, target_dist, initial_dist=None, seed=None):
    """For ``apply``: ``dataset.rejection_resample(...)``."""
    return lambda ds: ds.rejection_resample(class_func, target_dist, initial_dist, seed)


__all__ = ["AUTOTUNE", "INFINITE_CARDINALITY", "UNKNOWN_CARDINALITY", "Counter",
           "AutoShardPolicy", "DistributeOptions", "OptimizationOptions", "ThreadingOptions",
           "sample_from_datasets", "choose_from_datasets", "save", "load", "cardinality",
           "get_single_element", "assert_cardinality", "ignore_errors", "unique", "scan",
           "take_while", "group_by_window", "bucket_by_sequence_length", "rejection_resample"]
