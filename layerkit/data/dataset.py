"""The Dataset facade: fluent methods that build node objects, and the Iterator.

A :class:`Dataset` wraps one immutable node; every method returns a new Dataset around
a new node whose input is this one. Nodes live in their own modules and never import
this one (a function passed to ``interleave``/``flat_map`` returns a Dataset; the node
only reads its ``_node``).
"""
from __future__ import annotations

import collections.abc
import glob as _glob
import itertools
import os
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from layerkit import errors
from layerkit._core.types import DTypeLike, PathLike, TensorLike
from layerkit.data import compose as _compose
from layerkit.data import save as _save
from layerkit.data import structure as _st
from layerkit.data import tuning as _tuning
from layerkit.data.arrow import DEFAULT_READ_BATCH, ArrowNode, CsvNode, ParquetNode
from layerkit.data.assert_cardinality import AssertCardinalityNode
from layerkit.data.batch import BatchNode, PaddedBatchNode, UnbatchNode
from layerkit.data.cache import CacheNode
from layerkit.data.counter import CounterNode
from layerkit.data.directed_interleave import DirectedInterleaveNode
from layerkit.data.elements import ElementsNode
from layerkit.data.filter import FilterNode
from layerkit.data.group_by_window import GroupByWindowNode
from layerkit.data.ignore_errors import IgnoreErrorsNode
from layerkit.data.interleave import InterleaveNode
from layerkit.data.map import MapNode
from layerkit.data.node import (
    AUTOTUNE,
    INFINITE,
    UNKNOWN,
    IterationContext,
    Node,
    annotate,
    as_node,
    fast_sources,
    fn_note,
)
from layerkit.data.optional import Optional
from layerkit.data.options import Options
from layerkit.data.prefetch import PrefetchNode
from layerkit.data.random_source import ChoiceNode, RandomNode
from layerkit.data.scan import ScanNode
from layerkit.data.shuffle import ShuffleNode
from layerkit.data.simple import (
    ConcatenateNode,
    EnumerateNode,
    RepeatNode,
    ShardNode,
    SkipNode,
    TakeNode,
)
from layerkit.data.sources import GeneratorNode, RangeNode, TensorSlicesNode, TensorsNode, ZipNode
from layerkit.data.take_while import TakeWhileNode
from layerkit.data.text import TextLineNode, filename_list
from layerkit.data.unique import UniqueNode
from layerkit.data.window import WindowNode

STATE_FORMAT = "layerkit.data.Iterator/1"


class Cardinality(int):
    """The result of :meth:`Dataset.cardinality`: an int with ``numpy()`` and ``dtype``,
    as the int64 scalar tensor TensorFlow returns."""

    __slots__ = ()
    dtype = np.dtype(np.int64)
    shape = ()

    def numpy(self) -> np.int64:
        return np.int64(self)


class Iterator(itertools.chain):
    """An iterator over one pass of a :class:`Dataset` (what ``iter(dataset)`` returns).

    Besides ``next()``, it can be saved and restored mid-pass: ``get_state()`` returns
    nested dicts/lists of JSON values and NumPy arrays (shuffle buffers, prefetched
    elements and random positions included) that ``lk.Checkpoint`` stores, and
    ``set_state(state)`` on an iterator of an identically built Dataset continues
    exactly where the saved one was. ``close()`` (or leaving a ``with`` block, or
    dropping the iterator) stops its background threads.
    """

    # ``next()`` stays in C: the chain runs the top stage's ``fast_iter()`` (a generator
    # for the fused batch-first loop, else the stage itself), and a new one when it
    # stopped early (after an error, or a state change closed it); see ``fast_sources``.
    __slots__ = ("_it", "_dataset", "_ended", "__weakref__")

    def __new__(cls, dataset: Dataset) -> Iterator:
        it = dataset._node.make_iterator(IterationContext(options=_options_if_set(dataset)))
        ended = [False]
        self = cls.from_iterable(fast_sources(it, ended))
        self._it = it
        self._dataset = dataset
        self._ended = ended
        return self

    def get_next(self) -> Any:
        """The next element, as ``tf.data``'s iterator.

        Raises:
            lk.errors.OutOfRangeError: the pass is over (``next(iterator)`` raises
                ``StopIteration`` instead, as in TensorFlow).
        """
        try:
            return next(self)
        except StopIteration:
            raise errors.OutOfRangeError(None, None, "End of sequence") from None

    def get_next_as_optional(self) -> Optional:
        """The next element wrapped in an :class:`lk.experimental.Optional`, empty once the
        pass is over (``tf.data`` iterators' method of the same name)."""
        try:
            return Optional.from_value(next(self))
        except StopIteration:
            return Optional.empty(self.element_spec)

    @property
    def element_spec(self) -> Any:
        return self._dataset.element_spec

    def get_state(self) -> dict:
        """The position of this pass as JSON values and NumPy arrays (no pickle)."""
        return {"format": STATE_FORMAT, "pipeline": _pipeline_names(self._dataset._node),
                "state": self._it.get_state()}

    def set_state(self, state: dict) -> None:
        """Continue from a state saved by :meth:`get_state`.

        Raises:
            ValueError: if the state comes from a differently built pipeline, or a stage
                cannot restore its part (malformed or truncated: the message names the
                stage, and the iterator is left partly restored).
        """
        if not isinstance(state, dict) or state.get("format") != STATE_FORMAT \
                or not isinstance(state.get("state"), dict):
            raise ValueError(f"Iterator.set_state: not a layerkit.data iterator state "
                             f"(expected format {STATE_FORMAT!r} and a 'state' dict)")
        mine = _pipeline_names(self._dataset._node)
        saved = state.get("pipeline")
        if not isinstance(saved, (list, tuple)) or list(saved) != mine:
            raise ValueError(f"Iterator.set_state: the state was saved from the pipeline "
                             f"{state.get('pipeline')} but this iterator runs {mine}")
        self._it.set_state(state["state"])
        if self._ended[0]:
            # The chain has seen the end and stays there: go on through the stage's
            # __next__ (same layout, so the class can change in place).
            self.__class__ = _RestoredIterator

    def close(self) -> None:
        """Stop background threads/processes and release files. Idempotent."""
        self._it.close()

    def autotune_report(self) -> list:
        """What the ``AUTOTUNE`` stages of this pass chose, outermost stage first.

        Returns:
            One dict per autotuned stage. A ``map(num_parallel_calls=AUTOTUNE)`` reports
            ``choice`` ("inline", "2 threads", "2 processes", ...) with ``kind`` and
            ``workers``; ``deciding`` (a trial is running); the measured microseconds per
            element of the function (``function_us``), of pulling its input and of the
            consumer between calls; ``cpu_fraction`` (thread CPU over wall time of a call:
            low for a function that waits); ``gil_fraction`` (the part of the function
            that ran one thread at a time in the threads trial, or None); ``trials``
            (elements/s per configuration and round, the choice, and why it ran) and
            ``switches`` (at which input element which configuration took over, and
            why); a pass that started from an earlier pass's choice (``remembered``)
            lists that pass's trial first, with ``element`` None. A prefetch reports
            ``mode`` ("inline" or "thread"), ``buffer_size`` and ``autotuned``
            (``buffer_size=AUTOTUNE``).

        Examples:
            >>> import layerkit as lk
            >>> it = iter(lk.data.Dataset.range(100).map(lambda x: x + 1,
            ...                                          num_parallel_calls=lk.data.AUTOTUNE))
            >>> _ = list(it)
            >>> it.autotune_report()[0]["choice"]
            'inline'
        """
        return _tuning.reports(self._it)

    def __enter__(self) -> Iterator:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class _RestoredIterator(Iterator):
    """An Iterator given a state after it had reached the end: Python-level ``next()``."""

    __slots__ = ()

    def __next__(self):
        return self._it.__next__()


def _options_if_set(dataset: Dataset) -> Options | None:
    """The merged options of ``dataset`` if any stage set some (else None: defaults)."""
    stack = [dataset._node]
    while stack:
        n = stack.pop()
        if n.options is not None:
            return dataset.options()
        stack.extend(n.inputs)
    return None


def _pipeline_names(node: Node) -> list:
    out = []
    stack = [node]
    while stack:
        n = stack.pop()
        out.append(n.name)
        stack.extend(reversed(n.inputs))
    return out


class Dataset:
    """A lazy, immutable, re-iterable description of an input pipeline.

    Build one from a source (``Dataset.from_tensor_slices``, ``range``,
    ``from_generator``, ``from_parquet``, ...), chain transformations (``map``,
    ``shuffle``, ``batch``, ``prefetch``, ...) and iterate: each ``iter(ds)`` (each
    ``for`` loop) is a fresh pass. Elements are ``lk.Tensor`` or nested tuples/dicts of
    them; element order matches ``tf.data`` for every deterministic transformation.

    Examples:
        >>> import layerkit as lk
        >>> ds = lk.data.Dataset.range(10).map(lambda x: x * 2).batch(4)
        >>> [b.numpy().tolist() for b in ds]
        [[0, 2, 4, 6], [8, 10, 12, 14], [16, 18]]
    """

    __slots__ = ("_node",)
    _is_dataset = True  # a Dataset can be an element (window): see structure.is_dataset

    def __init__(self, node: Node) -> None:
        if not isinstance(node, Node):
            raise TypeError("Dataset() is built by its sources, e.g. "
                            "Dataset.from_tensor_slices(x); it is not constructed directly")
        self._node = node

    # ---- iteration and introspection --------------------------------------------------------
    def __iter__(self) -> Iterator:
        return Iterator(self)

    def as_numpy_iterator(self) -> collections.abc.Iterator[Any]:
        """Iterate with NumPy values: arrays, NumPy scalars for 0-d tensors, bytes for strings.

        Examples:
            >>> import layerkit as lk
            >>> list(lk.data.Dataset.range(3).as_numpy_iterator())
            [np.int64(0), np.int64(1), np.int64(2)]
        """
        return _numpy_iter(Iterator(self))

    @property
    def element_spec(self) -> Any:
        """The nested :class:`TensorSpec` structure of one element.

        Known without running anything for sources and shape-preserving transformations;
        for ``map``, ``from_generator`` without a signature and ``interleave`` it is
        observed on the first element (and a size that stands for an unknown input
        dimension, such as a batch dimension, is reported as ``None``).
        """
        return self._node.element_spec()

    def cardinality(self) -> Cardinality:
        """The number of elements, ``lk.data.INFINITE`` (-1) or ``lk.data.UNKNOWN`` (-2).

        An int that also has TensorFlow's tensor methods ``numpy()`` and ``dtype``
        (``ds.cardinality().numpy()`` works as in TF)."""
        return Cardinality(self._node.cardinality())

    def __len__(self) -> int:
        n = self.cardinality()
        if n == INFINITE:
            raise TypeError("The dataset is infinite.")
        if n == UNKNOWN:
            raise TypeError("The dataset length is unknown.")
        return n

    def __bool__(self) -> bool:
        return True

    def __repr__(self) -> str:
        # tf.data's form: <_BatchDataset element_spec=TensorSpec(...)>
        kind = "".join(p.capitalize() for p in self._node.name.split("_"))
        try:
            spec = repr(self.element_spec)
        except Exception as e:  # an empty dataset without a signature, a failing map
            spec = f"<unknown: {type(e).__name__}>"
        return f"<_{kind}Dataset element_spec={spec}>"

    # ---- sources ----------------------------------------------------------------------------
    @staticmethod
    def from_tensor_slices(tensors: Any) -> Dataset:
        """Elements are the slices of ``tensors`` along the first axis.

        Args:
            tensors: an array/Tensor/nested list, or a tuple/dict (nested) of them, all with
                the same first dimension. A list is one tensor, as in tf.data.

        Examples:
            >>> import layerkit as lk, numpy as np
            >>> ds = lk.data.Dataset.from_tensor_slices((np.arange(6).reshape(3, 2), [7, 8, 9]))
            >>> x, y = next(iter(ds)); (x.numpy().tolist(), int(y))
            ([0, 1], 7)
        """
        return Dataset(TensorSlicesNode(tensors))

    @staticmethod
    def from_tensors(tensors: Any) -> Dataset:
        """A dataset with the single element ``tensors``."""
        return Dataset(TensorsNode(tensors))

    @staticmethod
    def range(*args: Any, dtype: DTypeLike = np.int64) -> Dataset:
        """``range(stop)``, ``range(start, stop[, step])`` as scalar Tensors (int64)."""
        if not 1 <= len(args) <= 3:
            raise TypeError(f"Dataset.range expects 1 to 3 arguments, received {len(args)}")
        for a in args:
            # int() would truncate range(2.5) to range(2) silently; tf.data refuses floats too
            if not _is_integer(a):
                raise TypeError(f"Dataset.range: arguments must be integers, received "
                                f"{type(a).__name__} {a!r}")
        start, stop, step = (0, args[0], 1) if len(args) == 1 else (
            (args[0], args[1], 1) if len(args) == 2 else args)
        return Dataset(RangeNode(int(start), int(stop), int(step), dtype))

    @staticmethod
    def from_generator(generator: Callable, output_types: Any = None, output_shapes: Any = None,
                       args: Any = None, output_signature: Any = None) -> Dataset:
        """Elements produced by ``generator()`` (called once per pass).

        Args:
            generator: a callable returning an iterator (a generator function).
            output_signature: nested :class:`TensorSpec` structure; elements are converted
                to its dtypes and checked against its shapes. Without it, elements are
                converted as they come.
            output_types: the older form of ``output_signature``.
            output_shapes: the older form of ``output_signature``.
            args: a tuple of arguments for ``generator``.

        Iterator state counts the elements produced; restoring calls the generator again
        and skips that many, so resuming is exact for deterministic generators.
        """
        if output_signature is None and output_types is not None:
            shapes = output_shapes
            if shapes is None:
                shapes = _st.map_structure(lambda _: None, output_types)
            output_signature = _zip_specs(output_types, shapes)
        return Dataset(GeneratorNode(generator, output_signature, args))

    @staticmethod
    def zip(*args: Any, datasets: Any = None) -> Dataset:
        """Elements are tuples (or the given nested structure) of the inputs' elements.

        ``Dataset.zip(a, b)`` and ``Dataset.zip((a, b))`` give ``(x_a, x_b)``;
        ``Dataset.zip({"x": a, "y": b})`` gives dicts. Stops at the shortest input.
        """
        if datasets is not None:
            if args:
                raise TypeError("Dataset.zip: pass the datasets either positionally or as "
                                "datasets=, not both")
            structure = datasets
        elif len(args) == 1 and not isinstance(args[0], Dataset):
            structure = args[0]
        else:
            structure = tuple(args)
        leaves = _st.flatten(structure)
        if not leaves:
            raise ValueError("Dataset.zip needs at least one dataset")
        nodes = [as_node(d, "Dataset.zip") for d in leaves]
        return Dataset(ZipNode(structure, nodes))

    @staticmethod
    def list_files(file_pattern: Any, shuffle: bool | None = None,
                   seed: int | None = None) -> Dataset:
        """File names matching glob pattern(s), as bytes scalars, sorted.

        Args:
            file_pattern: a pattern or a list of patterns (``*``, ``?``, ``[..]``, ``**``).
            shuffle: shuffle the names each pass (default True, as in tf.data).
            seed: the shuffle seed (None: drawn from layerkit's global generator).

        Raises:
            ValueError: if no file matches.
        """
        patterns = [file_pattern] if isinstance(file_pattern, (str, bytes, os.PathLike)) \
            else list(file_pattern)
        names = set()
        for p in patterns:
            p = os.fsdecode(p)
            names.update(_glob.glob(p, recursive=True))
        names = sorted(n for n in names if os.path.isfile(n))
        if not names:
            raise ValueError(f"Dataset.list_files: no files match {patterns}")
        ds = Dataset.from_tensor_slices(np.array([os.fsencode(n) for n in names]))
        if shuffle is None or shuffle:
            ds = ds.shuffle(len(names), seed=seed)
        return ds

    @staticmethod
    def from_parquet(paths: Any, columns: list[str] | None = None,
                     read_batch_size: int = DEFAULT_READ_BATCH, *,
                     verify_checksums: bool = True) -> Dataset:
        """Rows of Parquet files as dicts ``column -> scalar Tensor``, streamed.

        Args:
            paths: a file, a directory (all ``*.parquet`` files below it, sorted) or a list.
            columns: the columns to read (default all), in this order.
            read_batch_size: rows per record batch read from a file (a memory/speed
                knob; it does not batch the dataset: use ``.batch(n)``, which then
                slices those record batches directly).
            verify_checksums: verify the CRC-32 of every page where the file has them
                (written with e.g. pyarrow's ``write_page_checksum=True``). It costs
                CPU only for such files: reading a plain 16-column file went from 32M to
                19M rows/s here with them; False trades that for unchecked data.

        The cardinality is exact (from the files' metadata). Files are read through a
        read-only memory map where the OS allows it, and each row group's pages are
        released once it is decoded, so memory stays about one row group whatever the
        file size. As with any memory-mapped reader, truncating a file in place while it
        is being read can crash the process (SIGBUS); replacing it by a rename is safe.
        A file that is not Parquet raises a ``ValueError`` naming it, and so does a row
        group that cannot be decoded or whose page checksum does not match (naming the
        row group too); no value of such a row group is returned. In a file written
        without page checksums a flipped bit that leaves the pages decodable (most of
        them in uncompressed pages, many in compressed ones) cannot be detected and
        gives different values: write files with checksums where that matters. Example::

            ds = lk.data.Dataset.from_parquet("data/", columns=["x", "y"]).batch(1024)
        """
        return Dataset(ParquetNode(paths, columns, read_batch_size, verify_checksums))

    @staticmethod
    def from_arrow(table_or_reader: Any, columns: list[str] | None = None,
                   read_batch_size: int = DEFAULT_READ_BATCH) -> Dataset:
        """Rows of a ``pyarrow.Table``/``RecordBatch`` (re-iterable) or a
        ``RecordBatchReader`` (one pass only) as dicts ``column -> scalar Tensor``."""
        return Dataset(ArrowNode(table_or_reader, columns, read_batch_size))

    @staticmethod
    def from_csv(paths: Any, column_names: list[str] | None = None,
                 column_types: dict | None = None, select_columns: list[str] | None = None,
                 header: bool = True, delimiter: str = ",", column_defaults: dict | None = None,
                 block_size: int = 1 << 20) -> Dataset:
        """Rows of CSV files as dicts ``column -> scalar Tensor``, streamed with pyarrow.

        Args:
            paths: a file, a directory (its ``*.csv`` files, sorted) or a list.
            column_names: names for the columns (replacing the header if there is one).
            column_types: ``{name: dtype}`` (NumPy dtypes, ``str``, or pyarrow types);
                other columns are inferred from the first block.
            select_columns: read only these columns.
            header: whether the first line is a header.
            delimiter: the field separator.
            column_defaults: ``{name: value}`` used for empty fields.
            block_size: bytes per block read.
        """
        return Dataset(CsvNode(paths, column_names, column_types, select_columns, header,
                               delimiter, column_defaults, block_size))

    # ---- transformations --------------------------------------------------------------------
    def map(self, map_func: Callable, num_parallel_calls: int | None = None,
            deterministic: bool | None = None, *, use_processes: bool = False,
            seed: int | None = None) -> Dataset:
        """Apply ``map_func`` to every element (a tuple element is unpacked into arguments).

        Args:
            map_func: takes an element's components, returns Tensors/arrays/scalars or a
                tuple/dict of them.
            num_parallel_calls: None runs it in the consumer's thread; an int runs that
                many calls at once in worker threads (useful when the function spends its
                time in NumPy/pyarrow code that releases the GIL, or waits). ``AUTOTUNE``
                measures and decides: the map starts in the consumer's thread, times a
                sparse sample of calls, and when the function is costly enough for
                workers to pay off it tries threads (and processes, with
                ``use_processes=True``) against inline on the running pipeline and keeps
                the fastest; it re-decides when its rate or timings change, and later
                passes of the Dataset start with the choice. ``Iterator.
                autotune_report()`` shows what it chose and why; ``Options.autotune``
                (``enabled=False``: one thread per core; ``cpu_budget``) applies.
            deterministic: keep input order (default). False delivers results as they finish.
            use_processes: run the calls in ``num_parallel_calls`` worker processes instead
                (default the number of cores; with ``AUTOTUNE``: allow processes among the
                configurations it tries): for Python-heavy functions that hold the GIL.
                Elements and results travel as NumPy arrays through pipes (about 5 µs per
                element of overhead here), so it pays off from about 50-100 µs of work per
                element. On Linux the workers are forked, so any function works (lambdas
                too); where fork is unavailable it must be picklable (module level).
            seed: seed of :func:`lk.data.element_rng` inside ``map_func`` (None: drawn
                from layerkit's global generator now).

        An exception in ``map_func`` reaches the consumer unchanged (type, message and
        traceback) with a note naming the map and the element's position; the elements
        after it still come. If a worker process dies (killed, crashed, ``os._exit``),
        every input element it held raises its own ``RuntimeError`` at that element's
        position, naming the element and how the process ended; a new process takes its
        place and the other elements still come. So a loop that goes on past errors
        receives every element or an error for it. Lost elements are not retried (one
        of them may be what killed the process).
        """
        return Dataset(MapNode(self._node, map_func, num_parallel_calls, deterministic,
                               use_processes, seed))

    def filter(self, predicate: Callable) -> Dataset:
        """Keep the elements for which ``predicate`` returns a True scalar bool."""
        return Dataset(FilterNode(self._node, predicate))

    def batch(self, batch_size: int, drop_remainder: bool = False,
              num_parallel_calls: int | None = None, deterministic: bool | None = None,
              name: str | None = None) -> Dataset:
        """Stack ``batch_size`` consecutive elements; the last batch may be smaller unless
        ``drop_remainder``. Right after an in-memory or columnar source it slices the
        source's arrays directly instead of stacking rows.

        ``num_parallel_calls``, ``deterministic`` and ``name`` are accepted for tf.data
        compatibility; batches are always stacked in order in the consumer's thread (a
        stack is one NumPy call per leaf, which threads would not speed up here).
        """
        return Dataset(BatchNode(self._node, batch_size, drop_remainder))

    def padded_batch(self, batch_size: int, padded_shapes: Any = None, padding_values: Any = None,
                     drop_remainder: bool = False) -> Dataset:
        """Batch elements of different shapes, padding every component.

        Args:
            padded_shapes: per component a shape whose ``None``/-1 dimensions pad to the
                longest in the batch (default: pad every dimension to the longest).
            padding_values: per component (or one for all) the fill value (default 0,
                ``b""`` for strings).
        """
        return Dataset(PaddedBatchNode(self._node, batch_size, padded_shapes, padding_values,
                                       drop_remainder))

    def rebatch(self, batch_size: int, drop_remainder: bool = False) -> Dataset:
        """Split the elements into batches of ``batch_size`` (``tf.data``'s rebatch on
        one replica: the same as ``unbatch().batch(batch_size, drop_remainder)``)."""
        return self.unbatch().batch(batch_size, drop_remainder=drop_remainder)

    def unbatch(self) -> Dataset:
        """Split elements along their first axis into consecutive elements."""
        return Dataset(UnbatchNode(self._node))

    def shuffle(self, buffer_size: int, seed: int | None = None,
                reshuffle_each_iteration: bool | None = True) -> Dataset:
        """Shuffle with a buffer of ``buffer_size`` elements (memory is bounded by it).

        Args:
            seed: None draws one from layerkit's global generator now, so
                ``lk.random.set_seed(s)`` before building the pipeline makes it reproducible.
            reshuffle_each_iteration: a new order for each pass (and each ``repeat``).
        """
        return Dataset(ShuffleNode(self._node, buffer_size, seed, reshuffle_each_iteration))

    def repeat(self, count: int | None = None) -> Dataset:
        """Repeat ``count`` times (None or -1: forever)."""
        return Dataset(RepeatNode(self._node, count))

    def take(self, count: int) -> Dataset:
        """The first ``count`` elements (-1: all)."""
        return Dataset(TakeNode(self._node, count))

    def skip(self, count: int) -> Dataset:
        """All but the first ``count`` elements (-1: none)."""
        return Dataset(SkipNode(self._node, count))

    def prefetch(self, buffer_size: int = AUTOTUNE) -> Dataset:
        """Prepare up to ``buffer_size`` elements ahead in a background thread (0: no-op).

        The thread is used only while both the input and the consumer take long enough
        per element for overlapping them to pay (else the consumer's thread pulls).
        ``AUTOTUNE`` starts with 2 elements and doubles the buffer while the consumer
        finds it empty although the input keeps up on average (a bursty input), up to
        64 elements and ``Options.autotune.ram_budget`` bytes (default 256 MiB).
        """
        if buffer_size == 0:
            return self
        return Dataset(PrefetchNode(self._node, buffer_size))

    def cache(self, filename: str = "") -> Dataset:
        """Record the first complete pass (in memory, or in ``filename + '.lkcache'``) and
        replay it in later passes."""
        return Dataset(CacheNode(self._node, filename))

    def concatenate(self, dataset: Dataset) -> Dataset:
        """This dataset's elements followed by ``dataset``'s (same structure and dtypes)."""
        return Dataset(ConcatenateNode(self._node, as_node(dataset, "Dataset.concatenate")))

    def enumerate(self, start: int = 0) -> Dataset:
        """Pair each element with its int64 position: ``(i, element)``."""
        return Dataset(EnumerateNode(self._node, start))

    def interleave(self, map_func: Callable, cycle_length: int | None = None,
                   block_length: int | None = None, num_parallel_calls: int | None = None,
                   deterministic: bool | None = None) -> Dataset:
        """Map each element to a Dataset and interleave them, tf.data's cycle order.

        Args:
            cycle_length: datasets open at once (default AUTOTUNE: the number of cores).
            block_length: consecutive elements taken from one before moving on (default 1).
            num_parallel_calls: read the open datasets ahead in that many threads.
            deterministic: False lets a ready dataset go ahead of a slow one.
        """
        return Dataset(InterleaveNode(self._node, map_func, cycle_length,
                                      1 if block_length is None else block_length,
                                      num_parallel_calls, deterministic))

    def flat_map(self, map_func: Callable) -> Dataset:
        """Map each element to a Dataset and concatenate them."""
        return Dataset(InterleaveNode(self._node, map_func, 1, 1, None, None, name="flat_map"))

    def shard(self, num_shards: int, index: int) -> Dataset:
        """Every ``num_shards``-th element starting at ``index`` (one worker's share)."""
        return Dataset(ShardNode(self._node, num_shards, index))

    def apply(self, transformation_func: Callable[[Dataset], Any]) -> Dataset:
        """``transformation_func(self)``, which must return a Dataset."""
        out = transformation_func(self)
        if not isinstance(out, Dataset):
            raise TypeError(f"Dataset.apply: the function must return a Dataset, received "
                            f"{type(out).__name__}")
        return out

    # ---- tf.data's further transformations --------------------------------------------------
    def reduce(self, initial_state: Any, reduce_func: Callable) -> Any:
        """Fold all elements into one value: ``state = reduce_func(state, element)``.

        Args:
            initial_state: a Tensor/array/scalar or a tuple/dict of them.
            reduce_func: takes ``(state, element)`` and returns the new state, of the same
                structure and dtypes as ``initial_state``.

        Returns:
            The final state (Tensors).

        Examples:
            >>> import layerkit as lk
            >>> zero = lk.constant(0, lk.int64)  # range() gives int64; a Python 0 is int32
            >>> int(lk.data.Dataset.range(5).reduce(zero, lambda s, x: s + x))
            10
        """
        from layerkit.data.scan import check_state_structure

        state = _st.normalize(initial_state)
        for i, elem in enumerate(self):
            try:
                new = _st.normalize(reduce_func(state, elem))
                check_state_structure(new, state, "Dataset.reduce")
            except Exception as e:
                raise annotate(e, fn_note(reduce_func, i, "reduce"))  # noqa: B904
            state = new
        return state

    def get_single_element(self) -> Any:
        """The only element of this dataset.

        Raises:
            ValueError: if the dataset has no element or more than one.
        """
        it = iter(self)
        try:
            first = next(it)
        except StopIteration:
            raise ValueError("Dataset.get_single_element: the dataset is empty; it must "
                             "have exactly one element") from None
        try:
            next(it)
        except StopIteration:
            return first
        finally:
            it.close()
        raise ValueError("Dataset.get_single_element: the dataset has more than one "
                         "element; it must have exactly one")

    def window(self, size: int, shift: int | None = None, stride: int = 1,
               drop_remainder: bool = False) -> Dataset:
        """Windows of ``size`` elements, each a Dataset (a nested structure of them for
        nested elements), as tf.data.

        Window ``k`` holds input elements ``k * shift + j * stride`` (``j < size``).

        Args:
            size: elements per window.
            shift: input elements between window starts (default ``size``).
            stride: step between the input elements of one window.
            drop_remainder: drop the windows at the end that have fewer than ``size``.

        Examples:
            >>> import layerkit as lk
            >>> ds = lk.data.Dataset.range(5).window(3, shift=1, drop_remainder=True)
            >>> [b.numpy().tolist() for b in ds.flat_map(lambda w: w.batch(3))]
            [[0, 1, 2], [1, 2, 3], [2, 3, 4]]
        """
        return Dataset(WindowNode(self._node, size, shift, stride, drop_remainder))

    def scan(self, initial_state: Any, scan_func: Callable) -> Dataset:
        """Thread a state through the elements: ``scan_func(state, element)`` returns
        ``(new_state, output_element)``; the outputs are the elements.

        Examples:
            >>> import layerkit as lk
            >>> zero = lk.constant(0, lk.int64)  # the state keeps range()'s int64
            >>> ds = lk.data.Dataset.range(4).scan(zero, lambda s, x: (s + x, s + x))
            >>> [int(v) for v in ds]
            [0, 1, 3, 6]
        """
        return Dataset(ScanNode(self._node, initial_state, scan_func))

    def take_while(self, predicate: Callable) -> Dataset:
        """The elements before the first one for which ``predicate`` is False."""
        return Dataset(TakeWhileNode(self._node, predicate))

    def unique(self) -> Dataset:
        """Each distinct element once, at its first position (scalar int32/int64/string
        elements only, as in tf.data)."""
        return Dataset(UniqueNode(self._node))

    def ignore_errors(self, log_warning: bool = False) -> Dataset:
        """Drop the elements whose production raised an error (in ``map``, a source, ...).

        Args:
            log_warning: log each dropped error on the ``layerkit.data`` logger.
        """
        return Dataset(IgnoreErrorsNode(self._node, log_warning))

    def group_by_window(self, key_func: Callable, reduce_func: Callable,
                        window_size: int | None = None,
                        window_size_func: Callable | None = None) -> Dataset:
        """Group elements by ``key_func`` (an int64 key) and replace each window of up to
        ``window_size`` same-key elements by the elements of ``reduce_func(key, window)``
        (``window`` is a Dataset). Groups left at the end are reduced in increasing key
        order.

        Args:
            key_func: element -> int64 scalar.
            reduce_func: ``(key, window dataset)`` -> Dataset.
            window_size: elements per window; or ``window_size_func(key)`` instead.
        """
        return Dataset(GroupByWindowNode(self._node, key_func, reduce_func, window_size,
                                         window_size_func))

    def bucket_by_sequence_length(self, element_length_func: Callable, bucket_boundaries: Any,
                                  bucket_batch_sizes: Any, padded_shapes: Any = None,
                                  padding_values: Any = None, pad_to_bucket_boundary: bool = False,
                                  no_padding: bool = False,
                                  drop_remainder: bool = False) -> Dataset:
        """Batch elements of similar length together (``group_by_window`` + ``padded_batch``).

        An element of length ``n`` goes to bucket ``i`` with
        ``bucket_boundaries[i-1] <= n < bucket_boundaries[i]``; each bucket is batched by
        ``bucket_batch_sizes[i]`` and padded to its longest element (or, with
        ``pad_to_bucket_boundary``, to ``bucket_boundaries[i] - 1``).
        """
        return _compose.bucket_by_sequence_length(
            self, element_length_func, bucket_boundaries, bucket_batch_sizes, padded_shapes,
            padding_values, pad_to_bucket_boundary, no_padding, drop_remainder)

    def rejection_resample(self, class_func: Callable, target_dist: TensorLike,
                           initial_dist: TensorLike | None = None,
                           seed: int | None = None) -> Dataset:
        """Resample so that the classes follow ``target_dist``, as tf.data: elements
        become ``(class, element)``.

        Elements are kept with a per-class probability (rejection sampling) mixed with
        elements taken straight from the input, the scheme tf.data uses; without
        ``initial_dist`` the input's class distribution is estimated as it goes.
        Seeded by ``seed`` (None: drawn from layerkit's global generator), so
        ``lk.random.set_seed`` reproduces it; iterator state restores it exactly.
        """
        return _compose.rejection_resample(self, class_func, target_dist, initial_dist, seed)

    def assert_cardinality(self, expected_cardinality: int) -> Dataset:
        """Declare the number of elements (``cardinality()`` reports it); iterating raises
        a ValueError when the input has fewer or more."""
        return Dataset(AssertCardinalityNode(self._node, expected_cardinality))

    @staticmethod
    def sample_from_datasets(datasets: Sequence[Dataset], weights: TensorLike | None = None,
                             seed: int | None = None, stop_on_empty_dataset: bool = False,
                             rerandomize_each_iteration: bool | None = None) -> Dataset:
        """Each element from a randomly chosen input: ``datasets[i]`` with probability
        ``weights[i] / sum(weights)`` (uniform by default).

        Args:
            weights: a list of non-negative weights, or a Dataset of weight vectors (one
                per element drawn).
            seed: the seed (None: drawn from layerkit's global generator now).
            stop_on_empty_dataset: end when the chosen input is exhausted; by default it
                is skipped and the stream ends when every input is exhausted.
            rerandomize_each_iteration: new choices on each pass (default: the same).
        """
        nodes = [as_node(d, "Dataset.sample_from_datasets") for d in datasets]
        if not nodes:
            raise ValueError("Dataset.sample_from_datasets: datasets must not be empty")
        weights_node = None
        if isinstance(weights, Dataset):
            weights_node, weights = weights._node, None
        elif weights is not None:
            w = np.asarray(getattr(weights, "_v", weights), dtype=np.float64)
            if w.shape != (len(nodes),):
                raise ValueError(f"Dataset.sample_from_datasets: weights must have one entry "
                                 f"per dataset ({len(nodes)}), received shape {w.shape}")
            keep = [i for i in range(len(nodes)) if w[i] > 0]
            if not keep:
                return Dataset(nodes[0]).take(0)
            nodes, weights = [nodes[i] for i in keep], w[keep]
        if len(nodes) == 1 and weights_node is None:
            return Dataset(nodes[0])
        if weights is None and weights_node is None:
            weights = np.ones(len(nodes))
        selector = ChoiceNode(weights, weights_node, seed, rerandomize_each_iteration)
        return Dataset(DirectedInterleaveNode(selector, nodes, stop_on_empty_dataset,
                                              "Dataset.sample_from_datasets"))

    @staticmethod
    def choose_from_datasets(datasets: Sequence[Dataset], choice_dataset: Dataset,
                             stop_on_empty_dataset: bool = True) -> Dataset:
        """Element ``k`` comes from ``datasets[c_k]``, ``c_k`` the k-th element of
        ``choice_dataset`` (int64 scalars).

        Examples:
            >>> import layerkit as lk
            >>> a, b = lk.data.Dataset.range(0, 3), lk.data.Dataset.range(10, 13)
            >>> choice = lk.data.Dataset.from_tensor_slices(lk.constant([0, 1, 1, 0], lk.int64))
            >>> [int(x) for x in lk.data.Dataset.choose_from_datasets([a, b], choice)]
            [0, 10, 11, 1]
        """
        nodes = [as_node(d, "Dataset.choose_from_datasets") for d in datasets]
        if not nodes:
            raise ValueError("Dataset.choose_from_datasets: datasets must not be empty")
        sel = as_node(choice_dataset, "Dataset.choose_from_datasets (choice_dataset)")
        return Dataset(DirectedInterleaveNode(sel, nodes, stop_on_empty_dataset,
                                              "Dataset.choose_from_datasets"))

    @staticmethod
    def counter(start: int = 0, step: int = 1, dtype: DTypeLike = np.int64) -> Dataset:
        """``start, start + step, start + 2 * step, ...`` without end."""
        for a in (start, step):
            if not _is_integer(a):
                raise TypeError(f"Dataset.counter: start and step must be integers, received "
                                f"{type(a).__name__} {a!r}")
        return Dataset(CounterNode(int(start), int(step), dtype))

    @staticmethod
    def random(seed: int | None = None,
               rerandomize_each_iteration: bool | None = None) -> Dataset:
        """An infinite stream of random int64 scalars in ``[0, 2**32)``.

        Args:
            seed: the seed (None: drawn from layerkit's global generator now, so
                ``lk.random.set_seed`` before building reproduces it).
            rerandomize_each_iteration: a new sequence on each pass (default: the same).
        """
        return Dataset(RandomNode(seed=seed, rerandomize=rerandomize_each_iteration))

    def save(self, path: PathLike, compression: str | None = None,
             shard_func: Callable | None = None, checkpoint_args: Any = None) -> None:
        """Write all elements to the directory ``path`` (replaced if it holds an earlier save).

        The format (``docs/data_save_format.md``): ``dataset_spec.json`` and one
        checksummed record file per shard; no pickle. The directory appears complete
        or not at all.

        Args:
            compression: only None (uncompressed) is supported.
            shard_func: element -> non-negative int64 shard index (default: all in
                shard 0). :meth:`load` interleaves the shards.
            checkpoint_args: not supported (must be None).
        """
        if checkpoint_args is not None:
            raise ValueError("Dataset.save: checkpoint_args is not supported (a save is "
                             "atomic: it completes or leaves nothing)")
        _save.save(self._node, path, compression, shard_func)

    @staticmethod
    def load(path: PathLike, element_spec: Any = None, compression: str | None = None,
             reader_func: Callable | None = None) -> Dataset:
        """A dataset saved by :meth:`save`, with its element_spec.

        Args:
            element_spec: the expected spec (checked against the saved one), optional.
            reader_func: takes the Dataset of shard Datasets (in shard index order) and
                returns the dataset; default: interleave them one element at a time
                (one shard: the saved order).
        """
        spec, shard_nodes, total = _save.read_meta(path, element_spec, compression)
        shards = Dataset(ElementsNode([Dataset(n) for n in shard_nodes], _st.DatasetSpec(spec)))
        if reader_func is None:
            if not shard_nodes:
                return Dataset(ElementsNode([], spec))
            if len(shard_nodes) == 1:
                return Dataset(shard_nodes[0])
            return shards.interleave(lambda d: d, cycle_length=len(shard_nodes),
                                     block_length=1).assert_cardinality(total)
        out = reader_func(shards)
        if not isinstance(out, Dataset):
            raise TypeError(f"Dataset.load: reader_func must return a Dataset, received "
                            f"{type(out).__name__}")
        return out

    def options(self) -> Options:
        """The options of this dataset and its inputs, merged (see :meth:`with_options`)."""
        out = Options()
        seen = set()
        order = []
        stack = [self._node]
        while stack:  # inputs' options first, so the outer ones win
            n = stack.pop()
            if id(n) in seen:
                continue
            seen.add(id(n))
            order.append(n)
            stack.extend(n.inputs)
        for n in reversed(order):
            if n.options is not None:
                out = out.merge(n.options)
        return out

    def with_options(self, options: Options) -> Dataset:
        """This dataset with ``options`` merged over its own (recorded; see ``Options``)."""
        if not isinstance(options, Options):
            raise TypeError(f"Dataset.with_options: expected lk.data.Options, received "
                            f"{type(options).__name__}")
        mine = self._node.options
        return Dataset(self._node.with_options(options if mine is None else mine.merge(options)))


class TextLineDataset(Dataset):
    """The lines of one or more text files, as bytes scalars (without ``\\n``/``\\r\\n``).

    Args:
        filenames: a file name, a list of them, or a Dataset of file names (e.g. from
            ``Dataset.list_files``).
        compression_type: None/'' or 'GZIP'.
        buffer_size: read buffer in bytes.
        num_parallel_reads: read that many files at once, interleaving their lines.
    """

    __slots__ = ()

    def __init__(self, filenames: Any, compression_type: str | None = None,
                 buffer_size: int | None = None, num_parallel_reads: int | None = None) -> None:
        if isinstance(filenames, Dataset) or num_parallel_reads:
            if isinstance(filenames, Dataset):
                names = filenames
            else:
                encoded = [os.fsencode(f) for f in filename_list(filenames)]
                names = Dataset.from_tensor_slices(np.array(encoded))

            def one(name):
                return TextLineDataset(name, compression_type, buffer_size)
            if num_parallel_reads:
                ds = names.interleave(one, cycle_length=num_parallel_reads, block_length=1,
                                      num_parallel_calls=num_parallel_reads)
            else:
                ds = names.flat_map(one)
            super().__init__(ds._node)
            return
        super().__init__(TextLineNode(filename_list(filenames), compression_type, buffer_size))


def _is_integer(a) -> bool:
    """An int, NumPy integer or 0-d integer Tensor (not a bool)."""
    v = getattr(a, "_v", a)
    if isinstance(v, np.ndarray) and v.ndim == 0:
        v = v[()]
    return isinstance(v, (int, np.integer)) and not isinstance(v, bool)


def _zip_specs(types, shapes):
    if isinstance(types, dict):
        return {k: _zip_specs(types[k], shapes[k] if shapes is not None else None) for k in types}
    if isinstance(types, (tuple, list)):
        return tuple(_zip_specs(t, s) for t, s in zip(types, shapes or [None] * len(types)))
    return _st.TensorSpec(None if shapes is None else tuple(shapes), types)


def _numpy_iter(it: Iterator):
    try:
        for e in it:
            yield _st.to_numpy(e)
    finally:
        it.close()


_st.DATASET_TYPE[:] = [Dataset]
