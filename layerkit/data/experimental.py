"""``lk.data.experimental``: the names TF programs use from ``tf.data.experimental``.

The transformation functions return a function ``Dataset -> Dataset`` for
``dataset.apply(...)``, as in tf.data.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from layerkit._core.types import TensorLike
from layerkit.data.dataset import Dataset
from layerkit.data.node import AUTOTUNE, INFINITE, UNKNOWN
from layerkit.data.optional import Optional
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


def get_single_element(dataset: Dataset) -> Any:
    """``dataset.get_single_element()``."""
    return dataset.get_single_element()


def assert_cardinality(expected_cardinality: int) -> Callable[[Any], Any]:
    """For ``apply``: ``dataset.assert_cardinality(expected_cardinality)``."""
    return lambda ds: ds.assert_cardinality(expected_cardinality)


def ignore_errors(log_warning: bool = False) -> Callable[[Any], Any]:
    """For ``apply``: ``dataset.ignore_errors(log_warning)``."""
    return lambda ds: ds.ignore_errors(log_warning)


def unique() -> Any:
    """For ``apply``: ``dataset.unique()``."""
    return lambda ds: ds.unique()


def scan(initial_state: Any, scan_func: Callable) -> Any:
    """For ``apply``: ``dataset.scan(initial_state, scan_func)``."""
    return lambda ds: ds.scan(initial_state, scan_func)


def take_while(predicate: Callable) -> Callable[[Any], Any]:
    """For ``apply``: ``dataset.take_while(predicate)``."""
    return lambda ds: ds.take_while(predicate)


def group_by_window(key_func: Callable, reduce_func: Callable, window_size: int | None = None,
                    window_size_func: Callable | None = None) -> Callable[[Any], Any]:
    """For ``apply``: ``dataset.group_by_window(...)``."""
    return lambda ds: ds.group_by_window(key_func, reduce_func, window_size, window_size_func)


def bucket_by_sequence_length(element_length_func: Callable, bucket_boundaries: Sequence[int],
                              bucket_batch_sizes: Sequence[int], padded_shapes: Any = None,
                              padding_values: Any = None, pad_to_bucket_boundary: bool = False,
                              no_padding: bool = False,
                              drop_remainder: bool = False) -> Callable[[Any], Any]:
    """For ``apply``: ``dataset.bucket_by_sequence_length(...)``."""
    return lambda ds: ds.bucket_by_sequence_length(
        element_length_func, bucket_boundaries, bucket_batch_sizes, padded_shapes,
        padding_values, pad_to_bucket_boundary, no_padding, drop_remainder)


def rejection_resample(class_func: Callable, target_dist: TensorLike,
                       initial_dist: TensorLike | None = None,
                       seed: int | None = None) -> Callable[[Any], Any]:
    """For ``apply``: ``dataset.rejection_resample(...)``."""
    return lambda ds: ds.rejection_resample(class_func, target_dist, initial_dist, seed)


__all__ = ["AUTOTUNE", "INFINITE_CARDINALITY", "UNKNOWN_CARDINALITY", "Counter",
           "AutoShardPolicy", "DistributeOptions", "OptimizationOptions", "ThreadingOptions",
           "sample_from_datasets", "choose_from_datasets", "save", "load", "cardinality",
           "get_single_element", "assert_cardinality", "ignore_errors", "unique", "scan",
           "take_while", "group_by_window", "bucket_by_sequence_length", "rejection_resample",
           "Optional", "get_next_as_optional"]


def _csv_types(ds: Dataset, rows: int) -> dict:
    """TensorFlow's inference from the first ``rows`` rows: int32 when every value fits,
    else int64; float32 for floats; strings stay bytes."""
    import numpy as np

    sample = list(ds.take(rows).as_numpy_iterator())
    types: dict[str, type] = {}
    for name, spec in ds.element_spec.items():
        kind = np.dtype(spec.dtype).kind
        if kind == "f":
            types[name] = np.float32
        elif kind in "iu":
            vals = np.array([row[name] for row in sample], np.int64)
            fits = vals.size == 0 or (np.min(vals) >= -2**31 and np.max(vals) < 2**31)
            types[name] = np.int32 if fits else np.int64
    return types


def make_csv_dataset(file_pattern, batch_size: int, column_names=None, column_defaults=None,
                     label_name: str | None = None, select_columns=None,
                     field_delim: str = ",", use_quote_delim: bool = True, na_value: str = "",
                     header: bool = True, num_epochs: int | None = None, shuffle: bool = True,
                     shuffle_buffer_size: int = 10000, shuffle_seed: int | None = None,
                     prefetch_buffer_size: int | None = None, num_parallel_reads=None,
                     sloppy: bool = False, num_rows_for_inference: int = 100,
                     compression_type=None, ignore_errors: bool = False,
                     encoding: str = "utf-8") -> Dataset:
    """Batches of CSV rows as ``(features, label)``, as ``tf.data.experimental.make_csv_dataset``.

    Each element is a dict ``column -> (batch,) Tensor`` (without ``label_name``'s column),
    and the label batch when ``label_name`` is given. Column types are inferred from the
    first ``num_rows_for_inference`` rows as TensorFlow does (int32, else int64; float32;
    strings as bytes) unless ``column_defaults`` gives them (a default value, or a dtype
    for a column without a default). The files are read in sorted order, shuffled with
    ``shuffle_buffer_size`` and repeated ``num_epochs`` times (None: forever), as in TF.

    Args:
        file_pattern: a glob pattern, a file, or a list of them.
        batch_size: rows per batch (the last batch may be smaller).
        column_names: the CSV layout (names replace
            the header; ``select_columns`` keeps only those columns, names or indices).
        select_columns: the CSV layout (names replace
            the header; ``select_columns`` keeps only those columns, names or indices).
        header: the CSV layout (names replace
            the header; ``select_columns`` keeps only those columns, names or indices).
        field_delim: the CSV layout (names replace
            the header; ``select_columns`` keeps only those columns, names or indices).
        column_defaults: one entry per (selected) column: a value used for empty fields
            (its type sets the column's type) or a dtype.
        label_name: the column returned as the label.
        num_epochs: as
            in TensorFlow.
        shuffle: as
            in TensorFlow.
        shuffle_buffer_size: as
            in TensorFlow.
        shuffle_seed: as
            in TensorFlow.
        prefetch_buffer_size: as
            in TensorFlow.
        num_parallel_reads, sloppy, use_quote_delim, na_value, num_rows_for_inference,
        compression_type: accepted for TensorFlow compatibility;
            layerkit reads files one after another, quotes per RFC 4180, treats empty fields
            as missing, and supports uncompressed UTF-8 files.
        ignore_errors: accepted for TensorFlow compatibility;
            layerkit reads files one after another, quotes per RFC 4180, treats empty fields
            as missing, and supports uncompressed UTF-8 files.
        encoding: accepted for TensorFlow compatibility;
            layerkit reads files one after another, quotes per RFC 4180, treats empty fields
            as missing, and supports uncompressed UTF-8 files.

    Raises:
        ValueError: no file matches, ``label_name`` is not a column, or ``column_defaults``
            does not have one entry per column.

    Examples:
        >>> import os, tempfile, layerkit as lk
        >>> path = os.path.join(tempfile.mkdtemp(), "iris.csv")
        >>> _ = open(path, "w").write("len,width,species\\n5.1,3.5,0\\n4.9,3.0,1\\n")
        >>> ds = lk.data.experimental.make_csv_dataset(path, batch_size=2, label_name="species",
        ...                                            num_epochs=1, shuffle=False)
        >>> features, label = next(iter(ds))
        >>> sorted(features), features["len"].dtype.name, label.numpy().tolist()
        (['len', 'width'], 'float32', [0, 1])
    """
    import glob
    import os

    import numpy as np

    from layerkit.data.node import AUTOTUNE as _AUTOTUNE

    if compression_type not in (None, "", "NONE"):
        raise ValueError(f"make_csv_dataset: compression_type={compression_type!r} is not "
                         f"supported; decompress the files first")
    patterns = [file_pattern] if isinstance(file_pattern, (str, os.PathLike)) \
        else list(file_pattern)
    files = sorted({f for p in patterns for f in (glob.glob(os.fspath(p))
                                                  or ([os.fspath(p)] if os.path.isfile(p)
                                                      else []))})
    if not files:
        raise ValueError(f"make_csv_dataset: no files match {file_pattern!r}")
    if select_columns is not None and all(isinstance(c, int) for c in select_columns):
        names = column_names or list(Dataset.from_csv(files[:1], header=header,
                                                      delimiter=field_delim).element_spec)
        select_columns = [names[i] for i in select_columns]
    base = Dataset.from_csv(files, column_names=column_names, select_columns=select_columns,
                            header=header, delimiter=field_delim)
    names = list(base.element_spec)
    types, defaults = {}, {}
    if column_defaults is not None:
        if len(column_defaults) != len(names):
            raise ValueError(f"make_csv_dataset: column_defaults has {len(column_defaults)} "
                             f"entries for {len(names)} columns {names}")
        for name, d in zip(names, column_defaults):
            if isinstance(d, (list, tuple)):
                d = d[0] if d else None
            if d is None:
                continue
            try:
                types[name] = np.dtype(d) if not isinstance(d, (int, float, str, bytes)) \
                    else None
            except TypeError:
                types[name] = None
            if types[name] is None:
                del types[name]
                kind = (np.float32 if isinstance(d, float) else np.int32
                        if isinstance(d, int) else str)
                types[name], defaults[name] = kind, d
    inferred = _csv_types(base, num_rows_for_inference)
    types = {**inferred, **types}
    ds = Dataset.from_csv(files, column_names=column_names, select_columns=select_columns,
                          header=header, delimiter=field_delim, column_types=types,
                          column_defaults=defaults or None)
    if label_name is not None and label_name not in names:
        raise ValueError(f"make_csv_dataset: label_name {label_name!r} is not one of the "
                         f"columns {names}")
    if shuffle:
        ds = ds.shuffle(shuffle_buffer_size, seed=shuffle_seed)
    if num_epochs != 1:
        ds = ds.repeat(num_epochs)
    ds = ds.batch(batch_size)
    if label_name is not None:
        def split(row):
            features = {k: v for k, v in row.items() if k != label_name}
            return features, row[label_name]
        ds = ds.map(split)
    return ds.prefetch(prefetch_buffer_size or _AUTOTUNE)


def get_next_as_optional(iterator: Any) -> Optional:
    """``iterator.get_next_as_optional()`` (TF 2's ``tf.data.experimental`` spelling)."""
    return iterator.get_next_as_optional()
