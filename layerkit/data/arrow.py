"""Columnar sources: from_parquet, from_arrow, from_csv. pyarrow is imported on first use.

Each source streams pyarrow record batches of ``read_batch_size`` rows (65,536 by
default), converts every column to NumPy once per record batch and then hands out rows
(elements are dicts ``column -> scalar Tensor``) or, for a ``batch()`` right after the
source, slices of those arrays (no per-row objects, no re-stacking). Memory is bounded
by one record batch plus what pyarrow needs for one row group; whole files are never
read. Parquet files are opened with ``pre_buffer=False``: pyarrow's default pre-buffers
whole row groups and tripled peak memory in our measurements (shared/FACTS.md).
Where the OS allows it, pyarrow reads a file through a read-only memory map (no copy
out of the page cache: 2M rows x 16 plain columns in 1024-row batches, 15-20M rows/s
read()-based against 23-28M/s mapped), and the pages of each row group are unmapped
(``MADV_DONTNEED``) once it is decoded, so peak memory stays that of one row group
(benchmark process: 179 MB peak RSS for 1M, 2M and 4M rows; a plain map grew with the
file: 258 / 350 / 537 MB).
The decoded arrays never point into the map. As with any memory-mapped reader, a file
truncated in place while it is being read can crash the process (SIGBUS); files
replaced by rename, as writers usually do, are safe.

Corruption: Parquet page checksums (a CRC-32 per page, written by e.g. pyarrow's
``write_page_checksum=True``) are verified by default wherever a file has them, and a
row group that fails them or fails to decode raises a ValueError naming the file and the
row group; none of its rows is returned. In our tests every flipped bit in the pages of
a checksummed file was either reported or harmless (a page-header field that changes
nothing). What cannot be detected: in files written without page checksums, any change
that still decodes (most flips in uncompressed pages, about 4 in 5 in snappy-compressed
ones) returns different values; and Parquet has no checksum over the footer (schema,
row counts, statistics), so a footer damage that still parses goes unnoticed too.
Verification costs CPU only for checksummed files (about 40% of the reading rate of a
plain 16-column file here, 32M -> 19M rows/s); ``from_parquet(verify_checksums=False)``
skips it.

Iterator state is ``(file index, rows delivered from that file)``; restoring seeks to the
row group holding that row (Parquet), slices (Arrow tables) or re-reads and skips rows
(CSV).

Conversions: integer, float, bool and timestamp columns keep their NumPy dtype (nulls in
float columns become NaN; nulls elsewhere raise an error naming the column and file);
strings and binary become NumPy bytes (``dtype('S')``, like tf.string); fixed-size lists
of numbers become vectors. Other types raise a TypeError naming the column.
"""
from __future__ import annotations

import mmap
import os
import weakref

import numpy as np

from layerkit._core.op import wrap
from layerkit._core.tuning import ARROW_READ_BATCH, ARROW_WHOLE_GROUP_BYTES
from layerkit.data import parallel as _par
from layerkit.data import structure as _st
from layerkit.data.node import UNKNOWN, Node, NodeIterator

DEFAULT_READ_BATCH = ARROW_READ_BATCH


def _pa():
    import pyarrow
    return pyarrow


# ---- type mapping --------------------------------------------------------------------------
def _leaf_spec(field, where: str) -> _st.TensorSpec:
    pa = _pa()
    t = field.type
    if pa.types.is_dictionary(t):
        t = t.value_type
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t) \
            or pa.types.is_large_binary(t):
        return _st.TensorSpec((), np.dtype("S"))
    if pa.types.is_fixed_size_list(t):
        inner = t.value_type
        if not _is_numeric(inner):
            raise TypeError(f"{where}: column {field.name!r} is a list of {inner}; only lists of "
                            f"numbers are supported")
        return _st.TensorSpec((t.list_size,), np.dtype(inner.to_pandas_dtype()))
    if _is_numeric(t) or pa.types.is_timestamp(t) or pa.types.is_date(t) or pa.types.is_duration(t):
        dt = np.dtype(t.to_pandas_dtype())
        if pa.types.is_date(t):
            dt = np.dtype("datetime64[D]") if pa.types.is_date32(t) else np.dtype("datetime64[ms]")
        return _st.TensorSpec((), dt)
    raise TypeError(f"{where}: column {field.name!r} has type {t}, which layerkit.data cannot "
                    f"convert to a tensor (supported: numbers, bool, timestamps, strings, "
                    f"binary, fixed-size lists of numbers); select other columns with columns=")


def _is_numeric(t) -> bool:
    pa = _pa()
    return pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t)


def _column(arr, name: str, spec: _st.TensorSpec, where: str) -> np.ndarray:
    pa = _pa()
    t = arr.type
    if pa.types.is_dictionary(t):
        arr = arr.dictionary_decode()
        t = arr.type
    if arr.null_count and not (pa.types.is_floating(t) or spec.dtype.kind == "M"):
        raise ValueError(f"{where}: column {name!r} has {arr.null_count} null values; a "
                         f"{t} tensor cannot hold nulls (fill them, e.g. with "
                         f"pyarrow.compute.fill_null, or read a float column)")
    if spec.dtype.kind == "S":
        out = arr.cast(pa.large_binary()).to_numpy(zero_copy_only=False)
        return out.astype("S") if len(out) else np.zeros(0, "S1")
    if pa.types.is_fixed_size_list(t):
        flat = arr.flatten().to_numpy(zero_copy_only=False)
        return flat.reshape(len(arr), t.list_size)
    a = arr.to_numpy(zero_copy_only=False)
    if a.dtype != spec.dtype:
        a = a.astype(spec.dtype)
    return a


def _schema_specs(schema, where: str) -> dict:
    return {f.name: _leaf_spec(f, where) for f in schema}


def _project(schema, columns, where: str):
    if columns is None:
        return list(schema.names)
    if isinstance(columns, str):
        raise TypeError(f"{where}: columns must be a list of names, received the string "
                        f"{columns!r} (use [{columns!r}])")
    columns = list(columns)
    missing = [c for c in columns if c not in schema.names]
    if missing:
        raise KeyError(f"{where}: no column(s) {missing}; the columns are {list(schema.names)}")
    return columns


# ---- the shared node and iterator ----------------------------------------------------------
class ColumnarNode(Node):
    """Base of the record-batch sources; subclasses define the parts (files) and how to
    stream one from a given row."""

    read_ahead = True  # read the next record batch in a worker thread (files)

    def __init__(self) -> None:
        super().__init__()
        self._specs = None  # column -> TensorSpec, in output order

    # Subclasses set ``_schema`` (the projected pyarrow.Schema) and define
    # open_part(i, start_row) -> iterator of RecordBatch. Parts are the files in ``paths``
    # unless a subclass overrides num_parts() and part_label(i).
    def num_parts(self) -> int:
        return len(self.paths)

    def part_label(self, i: int) -> str:
        return self.paths[i]

    def specs(self) -> dict:
        if self._specs is None:
            self._specs = _schema_specs(self._schema, f"Dataset.{self.name}")
        return self._specs

    def static_chunk_spec(self):
        return dict(self.specs())

    def _compute_spec(self):
        return dict(self.specs())

    def make_iterator(self, ctx):
        return ColumnarIterator(self)

    def convert(self, rb, part: int) -> list:
        where = f"Dataset.{self.name}({self.part_label(part)})"
        specs = self.specs()
        if rb.schema.names != list(specs):
            rb = rb.select(list(specs)) if all(n in rb.schema.names for n in specs) else None
            if rb is None:
                raise ValueError(f"{where}: the columns differ from the first file's "
                                 f"{list(specs)}")
        if not rb.schema.equals(self._schema):  # one C call; per-field only when it differs
            for field in rb.schema:
                if field.type != self._schema.field(field.name).type:
                    _check_same_kind(field, specs[field.name], where)
        out = []
        for name, arr in zip(specs, rb.columns):
            spec = specs[name]
            a = _column(arr, name, spec, where)
            if a.dtype != spec.dtype and not (a.dtype.kind == spec.dtype.kind == "S"):
                raise TypeError(f"{where}: column {name!r} is {a.dtype.name} here but "
                                f"{spec.dtype.name} in the first file")
            out.append(a)
        return out


def _check_same_kind(field, spec: _st.TensorSpec, where: str) -> None:
    """A later file's column of another type converts to the first file's only if nothing
    is lost: a float or wider int cast down, a string parsed as a number or a list of
    another length would give silently wrong values."""
    got = _leaf_spec(field, where)
    if got.shape == spec.shape and (
            got.dtype.kind == spec.dtype.kind == "S"
            or (got.dtype.kind != "S" and np.can_cast(got.dtype, spec.dtype, "safe"))):
        return
    raise TypeError(f"{where}: column {field.name!r} is {field.type} here, which does not "
                    f"convert without loss to {spec.dtype.name}"
                    f"{'' if spec.shape == () else ' ' + str(spec.shape)} (its type in the "
                    f"first file); give every file the same schema")


def _read(batches, node, part: int):
    """Worker task: the next record batch of a part, converted (None at the part's end)."""
    rb = next(batches, None)
    if rb is None:
        return None
    return node.convert(rb, part), rb.num_rows


def _stop_reader(pool, holder: list) -> None:
    def close_part():
        b = holder[0]
        holder[0] = None
        close = getattr(b, "close", None)
        if close is not None:
            close()
    pool.shutdown(wait=False, after=close_part)


class ColumnarIterator(NodeIterator):
    """Rows or slices of converted record batches.

    With ``node.read_ahead`` (files), one worker thread reads and converts the next record
    batches of the current file while the consumer slices the current one: pyarrow's
    decoding releases the GIL, so it overlaps the consumer's Python work.
    """

    __slots__ = ("_node", "_part", "_row", "_holder", "_arrays", "_pos", "_len", "codec", "_done",
                 "_pool", "_window", "_finalizer", "__weakref__")
    kind = "columnar"

    def __init__(self, node: ColumnarNode) -> None:
        self._node = node
        self._part = 0
        self._row = 0  # rows of the current part already delivered
        self._holder = [None]  # the open part's record-batch iterator
        self._arrays = None
        self._pos = 0
        self._len = 0
        self.codec = _st.Codec(node.specs())
        self._done = False
        self._pool = self._window = self._finalizer = None
        if node.read_ahead:
            self._pool = _par.ThreadPool(1, node.name)
            self._window = _par.Window(self._pool, 2)
            self._finalizer = weakref.finalize(self, _stop_reader, self._pool, self._holder)

    def _next_batch(self):
        batches, node = self._holder[0], self._node
        w = self._window
        if w is None:
            return _read(batches, node, self._part)
        while not w.full():
            w.submit(_read, (batches, node, self._part))
        slot = w.take()
        if slot.error is not None:
            err, slot = slot.error, None
            try:
                raise err
            finally:
                err = None  # no cycle through the traceback (see parallel.release)
        return slot.value

    def _load(self) -> bool:
        node = self._node
        while self._pos >= self._len:
            if self._done:
                return False
            if self._holder[0] is None:
                if self._part >= node.num_parts():
                    self._done = True
                    return False
                self._holder[0] = node.open_part(self._part, self._row)
            got = self._next_batch()
            if got is None:
                self._close_part()
                self._part += 1
                self._row = 0
                continue
            self._arrays, self._len = got
            self._pos = 0
        return True

    def _close_part(self) -> None:
        if self._window is not None:
            self._window.clear()  # the worker is idle afterwards
        b, self._holder[0] = self._holder[0], None
        close = getattr(b, "close", None)
        if close is not None:
            close()
        self._arrays, self._pos, self._len = None, 0, 0

    def __next__(self):
        if self._pos >= self._len and not self._load():
            raise StopIteration
        i = self._pos
        self._pos = i + 1
        self._row += 1
        return self.codec.pack([wrap(a[i, ...]) for a in self._arrays])

    def supports_chunks(self) -> bool:
        return True

    def next_chunk(self, n: int):
        if self._pos >= self._len and not self._load():
            return None
        i = self._pos
        j = min(i + n, self._len)
        self._pos = j
        self._row += j - i
        return [a[i:j] for a in self._arrays]

    def get_state(self) -> dict:
        # Read-ahead does not matter: the position is what was delivered.
        return {"node": self.kind, "source": self._node.name, "part": self._part, "row": self._row,
                "done": self._done}

    def set_state(self, state: dict) -> None:
        self._check_state(state)
        if state.get("source") != self._node.name:
            raise ValueError(f"iterator state is from a {state.get('source')} source, this "
                             f"pipeline reads with {self._node.name}")
        part, row = int(state["part"]), int(state["row"])
        if part < 0 or row < 0:
            raise ValueError(f"negative position: part {part}, row {row}")
        self._close_part()
        self._part, self._row = part, row
        self._done = bool(state["done"])

    def close(self) -> None:
        if self._finalizer is not None and self._finalizer.detach() is not None:
            self._pool.shutdown(wait=True)
            self._window._slots.clear()
            self._window = None
        self._close_part()
        self._done = True


def _skip_rows(batches, start: int):
    """Drop the first ``start`` rows of a stream of record batches."""
    for rb in batches:
        if start >= rb.num_rows:
            start -= rb.num_rows
            continue
        if start:
            rb = rb.slice(start)
            start = 0
        yield rb


# ---- Parquet -------------------------------------------------------------------------------
_PARQUET_EXT = (".parquet", ".parq", ".pq")


def _expand_paths(paths, exts, what: str) -> list:
    if isinstance(paths, (str, bytes, os.PathLike)):
        paths = [paths]
    out = []
    for p in paths:
        p = os.fsdecode(p)
        if os.path.isdir(p):
            found = []
            for root, dirs, files in os.walk(p):
                dirs[:] = sorted(d for d in dirs if not d.startswith((".", "_")))
                found.extend(os.path.join(root, f) for f in files
                             if f.endswith(exts) and not f.startswith((".", "_")))
            if not found:
                raise FileNotFoundError(f"Dataset.{what}: directory {p} holds no {'/'.join(exts)} "
                                        f"files")
            out.extend(sorted(found))
        elif os.path.exists(p):
            out.append(p)
        else:
            raise FileNotFoundError(f"Dataset.{what}: no such file or directory: {p}")
    if not out:
        raise ValueError(f"Dataset.{what}: no files given")
    return out


class ParquetNode(ColumnarNode):
    """Streams the rows of Parquet files, row group by row group."""

    name = "from_parquet"

    def __init__(self, paths, columns, read_batch_size: int,
                 verify_checksums: bool = True) -> None:
        super().__init__()
        self.paths = _expand_paths(paths, _PARQUET_EXT, self.name)
        self.read_batch_size = int(read_batch_size)
        self.verify = bool(verify_checksums)
        pq = self._pq()
        first = _checked(self.paths[0], pq.ParquetFile, self.paths[0], pre_buffer=False)
        try:
            where = f"Dataset.from_parquet({self.paths[0]})"
            self.columns = _project(first.schema_arrow, columns, where)
            self._schema = pa_select(first.schema_arrow, self.columns)
        finally:
            first.close()
        self.specs()  # fail now on unsupported column types
        self._rows = None
        # None: every row group; else per path the row groups to read (lk.distribute's
        # sharding by row group gives each rank its own).
        self.row_groups: list | None = None

    def row_group_sizes(self) -> list:
        """Per path, the row counts of its row groups (from the files' metadata)."""
        pq = self._pq()
        out = []
        for p in self.paths:
            md = _checked(p, pq.read_metadata, p)
            out.append([md.row_group(g).num_rows for g in range(md.num_row_groups)])
        return out

    @staticmethod
    def _pq():
        import pyarrow.parquet as pq
        return pq

    def cardinality(self) -> int:
        if self._rows is None:
            if self.row_groups is not None:
                sizes = self.row_group_sizes()
                self._rows = sum(sizes[i][g] for i, groups in enumerate(self.row_groups)
                                 for g in groups)
            else:
                pq = self._pq()
                self._rows = sum(_checked(p, pq.read_metadata, p).num_rows for p in self.paths)
        return self._rows

    def open_part(self, i: int, start_row: int):
        pf, mapped = _open_parquet(self._pq(), self.paths[i], self.verify)
        missing = [c for c in self.columns if c not in pf.schema_arrow.names]
        if missing:
            pf.close()
            _unmap(mapped)
            raise KeyError(f"Dataset.from_parquet({self.paths[i]}): no column(s) {missing} "
                           f"(they are in {self.paths[0]})")
        md = pf.metadata
        groups = range(md.num_row_groups) if self.row_groups is None else self.row_groups[i]
        first, skip = 0, start_row
        while first < len(groups) and skip >= md.row_group(groups[first]).num_rows:
            skip -= md.row_group(groups[first]).num_rows
            first += 1
        return _ParquetBatches(pf, self.paths[i], groups[first:], self.columns,
                               self.read_batch_size, skip, mapped)


_CAN_UNMAP = hasattr(mmap, "MADV_DONTNEED") and hasattr(mmap.mmap, "madvise")


def _open_parquet(pq, path: str, verify: bool):
    """``(ParquetFile, map)``: the file read through a read-only memory map when the OS
    can map it and drop its pages (see the module docstring), else ``(ParquetFile, None)``."""
    if _CAN_UNMAP:
        try:
            with open(path, "rb") as f:
                mapped = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        except (OSError, ValueError):  # an empty file, a pipe, a file system without mmap
            mapped = None
        if mapped is not None:
            try:
                buf = _pa().py_buffer(mapped)
                return pq.ParquetFile(_pa().BufferReader(buf), pre_buffer=False,
                                      page_checksum_verification=verify), mapped
            except Exception:
                buf = None  # our view of the map: released, so that it can close
                _unmap(mapped)
                # not a Parquet file, say: the plain open below reports it with its path
    return _checked(path, pq.ParquetFile, path, pre_buffer=False,
                    page_checksum_verification=verify), None


def _checked(path: str, fn, *args, **kwargs):
    """``fn(*args, **kwargs)``; pyarrow's "not Parquet" errors name ``path``."""
    try:
        return fn(*args, **kwargs)
    except _pa().ArrowInvalid as e:
        raise ValueError(f"Dataset.from_parquet: {path} is not a readable Parquet file "
                         f"({e})") from e


def _unmap(mapped) -> None:
    if mapped is not None:
        try:
            mapped.close()
        except BufferError:  # pyarrow still holds its view: the map goes when that does
            pass


def _drop_pages(mapped, end: int) -> None:
    """Unmap the pages of ``mapped`` before byte ``end`` (read-only file pages: touching
    them again re-reads them from the page cache, so nothing is lost)."""
    end -= end % mmap.PAGESIZE
    if mapped is not None and end > 0:
        mapped.madvise(mmap.MADV_DONTNEED, 0, end)


def pa_select(schema, columns):
    return _pa().schema([schema.field(c) for c in columns])


# A row group whose selected columns take at most this many bytes is read in one call
# (read_row_group: 20M rows/s on a plain float/int file here, against 15M/s for
# iter_batches of 65,536 rows); bigger ones are streamed in read_batch_size batches, so
# memory stays bounded whatever the writer chose for the row group size.
WHOLE_GROUP_BYTES = ARROW_WHOLE_GROUP_BYTES


class _ParquetBatches:
    """Record batches of one Parquet file from a row group on; closes the file at the end."""

    def __init__(self, pf, path: str, groups, columns, batch_size: int, skip: int,
                 mapped=None) -> None:
        self.pf = pf
        self.mapped = mapped
        self.it = _skip_rows(self._batches(pf, path, groups, columns, batch_size, mapped), skip)

    @staticmethod
    def _batches(pf, path: str, groups, columns, batch_size: int, mapped):
        md = pf.metadata
        index = {md.schema.column(k).path.split(".")[0]: k for k in range(md.num_columns)}
        for g in groups:
            rg = md.row_group(g)
            size = sum(rg.column(index[c]).total_uncompressed_size for c in columns if c in index)
            end = max((_column_end(rg.column(k)) for k in range(rg.num_columns)), default=0)
            try:
                if size <= WHOLE_GROUP_BYTES:
                    batches = pf.read_row_group(g, columns=columns).to_batches()
                    _drop_pages(mapped, end)  # decoded: the group's file pages are done
                    yield from batches
                else:
                    yield from pf.iter_batches(batch_size=batch_size, row_groups=[g],
                                               columns=columns)
                    _drop_pages(mapped, end)
            except (OSError, _pa().ArrowException) as e:
                raise _decode_error(e, path, g, md.num_row_groups) from e

    def __iter__(self):
        return self

    def __next__(self):
        return next(self.it)

    def close(self) -> None:
        self.it = iter(())  # drops the generator, which holds the file too
        pf, self.pf = self.pf, None
        if pf is not None:
            pf.close()
        del pf  # pyarrow's view of the map goes with the file object
        _unmap(self.mapped)
        self.mapped = None


def _decode_error(e: BaseException, path: str, group: int, groups: int) -> ValueError:
    checked = "checksum" in str(e).lower()
    return ValueError(
        f"Dataset.from_parquet({path}): row group {group} (of {groups}) cannot be decoded: "
        f"{e}. The file is corrupted{' (a page checksum does not match)' if checked else ''} "
        f"or could not be read; no value of this row group is returned")


def _column_end(col) -> int:
    """The byte after a column chunk's pages in its file."""
    start = col.data_page_offset
    if col.has_dictionary_page and col.dictionary_page_offset is not None:
        start = min(start, col.dictionary_page_offset)
    return start + col.total_compressed_size


# ---- Arrow tables and readers --------------------------------------------------------------
class ArrowNode(ColumnarNode):
    """Rows of an in-memory ``pyarrow.Table`` / ``RecordBatch``, or of a
    ``RecordBatchReader`` (which can be read only once)."""

    name = "from_arrow"
    read_ahead = False  # in memory already: conversion is zero-copy

    def __init__(self, source, columns, read_batch_size: int) -> None:
        super().__init__()
        pa = _pa()
        if isinstance(source, pa.RecordBatch):
            source = pa.Table.from_batches([source])
        if isinstance(source, pa.Table):
            self.kind_ = "table"
        elif isinstance(source, pa.RecordBatchReader):
            self.kind_ = "reader"
        else:
            raise TypeError(f"Dataset.from_arrow: expected a pyarrow Table, RecordBatch or "
                            f"RecordBatchReader, received {type(source).__name__}")
        self.columns = _project(source.schema, columns, "Dataset.from_arrow")
        self.source = source
        self._schema = pa_select(source.schema, self.columns)
        self.read_batch_size = int(read_batch_size)
        self.specs()
        self._reader_used = False

    def num_parts(self) -> int:
        return 1

    def part_label(self, i: int) -> str:
        return "table" if self.kind_ == "table" else "reader"

    def cardinality(self) -> int:
        return self.source.num_rows if self.kind_ == "table" else UNKNOWN

    def open_part(self, i: int, start_row: int):
        if self.kind_ == "table":
            t = self.source.select(self.columns).slice(start_row)
            return iter(t.to_batches(max_chunksize=self.read_batch_size))
        if self._reader_used:
            raise RuntimeError("Dataset.from_arrow: a RecordBatchReader can be read only once; "
                               "pass a pyarrow.Table to iterate (or restore) more than once")
        self._reader_used = True
        reader = self.source
        cols = self.columns
        return _skip_rows((rb.select(cols) for rb in reader), start_row)


# ---- CSV -----------------------------------------------------------------------------------
def _arrow_type(t, name: str):
    pa = _pa()
    if isinstance(t, pa.DataType):
        return t
    if t in (str, bytes, "str", "string", "bytes") or (isinstance(t, np.dtype) and t.kind in "SU"):
        return pa.string()
    try:
        return pa.from_numpy_dtype(np.dtype(t))
    except (TypeError, NotImplementedError, pa.ArrowNotImplementedError):
        raise TypeError(f"Dataset.from_csv: column_types[{name!r}] = {t!r} is not a type "
                        f"(use a NumPy dtype, str, or a pyarrow type)") from None


class CsvNode(ColumnarNode):
    """Streams CSV files through pyarrow's incremental CSV reader."""

    name = "from_csv"

    def __init__(self, paths, column_names, column_types, select_columns, header: bool,
                 delimiter: str, column_defaults, block_size: int) -> None:
        super().__init__()
        self.paths = _expand_paths(paths, (".csv", ".tsv", ".txt"), self.name)
        self.column_names = list(column_names) if column_names is not None else None
        self.column_types = dict(column_types or {})
        self.select_columns = list(select_columns) if select_columns is not None else None
        self.header = bool(header)
        self.delimiter = delimiter
        self.column_defaults = dict(column_defaults or {})
        self.block_size = int(block_size)
        r = self._open(0)
        try:
            self._schema = r.schema
        finally:
            r.close()
        # A column with no value to infer a type from (a header-only file, or only empty
        # fields in the first block) is a string column, as in tf.data's make_csv_dataset.
        untyped = [f.name for f in self._schema if _pa().types.is_null(f.type)]
        if untyped:
            self.column_types.update((name, _pa().string()) for name in untyped)
            r = self._open(0)
            try:
                self._schema = r.schema
            finally:
                r.close()
        self.specs()

    def _options(self):
        import pyarrow.csv as pcsv
        ro = pcsv.ReadOptions(block_size=self.block_size)
        if self.column_names is not None:
            ro.column_names = self.column_names
            ro.skip_rows = 1 if self.header else 0
        elif not self.header:
            ro.autogenerate_column_names = True
        types = {k: _arrow_type(v, k) for k, v in self.column_types.items()}
        co = pcsv.ConvertOptions(column_types=types)
        if self.select_columns is not None:
            co.include_columns = self.select_columns
        return ro, pcsv.ParseOptions(delimiter=self.delimiter), co

    def _open(self, i: int):
        import pyarrow.csv as pcsv
        ro, po, co = self._options()
        try:
            return pcsv.open_csv(self.paths[i], read_options=ro, parse_options=po,
                                 convert_options=co)
        except _pa().ArrowInvalid as e:
            raise ValueError(f"Dataset.from_csv({self.paths[i]}): {e}") from None

    def open_part(self, i: int, start_row: int):
        return _skip_rows(self._csv_batches(i), start_row)

    def _csv_batches(self, i: int):
        import pyarrow.compute as pc
        reader = self._open(i)
        try:
            while True:
                try:
                    rb = reader.read_next_batch()
                except StopIteration:
                    return
                except _pa().ArrowInvalid as e:
                    raise ValueError(f"Dataset.from_csv({self.paths[i]}): {e}") from None
                if self.column_defaults:
                    cols = []
                    for name, col in zip(rb.schema.names, rb.columns):
                        if name in self.column_defaults and col.null_count:
                            col = pc.fill_null(col, self.column_defaults[name])
                        cols.append(col)
                    rb = _pa().RecordBatch.from_arrays(cols, names=rb.schema.names)
                yield rb
        finally:
            reader.close()
