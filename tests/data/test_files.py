"""File sources: Parquet, Arrow, CSV, text lines (small files written into tmp_path)."""
from __future__ import annotations

import gzip

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import layerkit.data as lkd
from layerkit.data import Dataset, TensorSpec

from .data_test_util import assert_save_restore, values

pytestmark = pytest.mark.timeout(60)


def _table(n: int, start: int = 0) -> pa.Table:
    i = np.arange(start, start + n)
    return pa.table({
        "i": pa.array(i, pa.int64()),
        "f": pa.array(i * 0.5, pa.float32()),
        "b": pa.array(i % 2 == 0),
        "s": pa.array([f"row{k}" for k in i]),
        "v": pa.FixedSizeListArray.from_arrays(pa.array(np.repeat(i, 2).astype(np.float64)), 2),
    })


def _rows(n: int, start: int = 0) -> list:
    return [{"i": k, "f": k * 0.5, "b": k % 2 == 0, "s": f"row{k}".encode(), "v": [float(k)] * 2}
            for k in range(start, start + n)]


@pytest.fixture
def pq_files(tmp_path):
    d = tmp_path / "pq"
    d.mkdir()
    pq.write_table(_table(250), d / "a.parquet", row_group_size=60)
    pq.write_table(_table(130, 250), d / "b.parquet", row_group_size=50)
    (d / "_SUCCESS").write_text("")
    return d


# ---- Parquet -------------------------------------------------------------------------------
def test_parquet_rows_spec_and_cardinality(pq_files):
    ds = Dataset.from_parquet(str(pq_files / "a.parquet"), read_batch_size=32)
    assert values(ds) == _rows(250)
    assert ds.cardinality() == 250 and len(ds) == 250
    spec = ds.element_spec
    assert spec == {"i": TensorSpec((), np.int64), "f": TensorSpec((), np.float32),
                    "b": TensorSpec((), np.bool_), "s": TensorSpec((), np.dtype("S")),
                    "v": TensorSpec((2,), np.float64)}


def test_parquet_directory_list_and_columns(pq_files):
    ds = Dataset.from_parquet(pq_files, columns=["f", "i"])
    rows = values(ds)
    assert rows == [{"f": r["f"], "i": r["i"]} for r in _rows(380)]
    assert list(rows[0]) == ["f", "i"]
    assert ds.cardinality() == 380
    ds2 = Dataset.from_parquet([pq_files / "b.parquet", pq_files / "a.parquet"], columns=["i"])
    assert [r["i"] for r in values(ds2)] == list(range(250, 380)) + list(range(250))


def test_parquet_batch_slices_record_batches(pq_files):
    ds = Dataset.from_parquet(pq_files, read_batch_size=64).batch(100)
    batches = values(ds)
    assert [len(b["i"]) for b in batches] == [100, 100, 100, 80]
    assert sum((b["i"] for b in batches), []) == list(range(380))
    assert batches[1]["s"][:2] == [b"row100", b"row101"]
    assert np.asarray(batches[0]["v"]).shape == (100, 2)
    # the same as batching rows one by one
    slow = values(Dataset.from_parquet(pq_files, read_batch_size=64).map(lambda r: r).batch(100))
    assert slow == batches
    b = next(iter(Dataset.from_parquet(pq_files).batch(8)))
    assert b["f"].dtype == np.float32 and b["f"].shape == (8,)


def test_parquet_state_across_row_groups_and_files(pq_files):
    assert_save_restore(lambda: Dataset.from_parquet(pq_files, read_batch_size=40),
                        ks=[0, 1, 59, 60, 61, 249, 250, 251, 379, 380], expected=_rows(380))
    assert_save_restore(lambda: Dataset.from_parquet(pq_files, read_batch_size=40).batch(33),
                        ks=[0, 3, 7, 12])


def test_parquet_shuffle_batch_and_interleave_files(pq_files):
    ds = Dataset.from_parquet(pq_files, columns=["i"]).shuffle(64, seed=1).batch(50)
    got = sorted(v for b in values(ds) for v in b["i"])
    assert got == list(range(380))
    files = Dataset.list_files(str(pq_files / "*.parquet"), shuffle=False)
    inter = files.interleave(lambda f: Dataset.from_parquet(f.numpy().item().decode(),
                                                            columns=["i"]), cycle_length=2)
    order = [r["i"] for r in values(inter)]
    assert order[:4] == [0, 250, 1, 251] and sorted(order) == list(range(380))


def test_parquet_errors(pq_files, tmp_path):
    with pytest.raises(KeyError, match=r"no column\(s\) \['nope'\]"):
        Dataset.from_parquet(pq_files, columns=["nope"])
    with pytest.raises(FileNotFoundError, match="no such file"):
        Dataset.from_parquet(tmp_path / "missing.parquet")
    nulls = tmp_path / "nulls.parquet"
    pq.write_table(pa.table({"k": pa.array([1, None, 3], pa.int64()),
                             "x": pa.array([1.0, None, 2.0], pa.float64())}), nulls)
    with pytest.raises(ValueError, match=r"nulls.parquet.*column .k. has 1 null"):
        list(Dataset.from_parquet(nulls))
    x = [r["x"] for r in values(Dataset.from_parquet(nulls, columns=["x"]))]
    assert x[0] == 1.0 and np.isnan(x[1])
    nested = tmp_path / "nested.parquet"
    pq.write_table(pa.table({"l": pa.array([[1], [2, 3]])}), nested)
    with pytest.raises(TypeError, match="column 'l'"):
        Dataset.from_parquet(nested)


def _flipped_reads(path, expected, positions):
    """Read ``path`` with one bit flipped at each position: (errors, silently wrong reads)."""
    good = path.read_bytes()
    errors, wrong = [], []
    for pos, bit in positions:
        bad = bytearray(good)
        bad[pos] ^= 1 << bit
        path.write_bytes(bytes(bad))
        try:
            got = values(Dataset.from_parquet(str(path)))
        except ValueError as e:
            errors.append(str(e))
            continue
        if got != expected:
            wrong.append(pos)
    path.write_bytes(good)
    return errors, wrong


def _data_positions(path, n: int, seed: int = 0) -> list:
    """``n`` random (byte, bit) positions inside the column chunks (pages) of ``path``."""
    md = pq.read_metadata(path)
    spans = []
    for g in range(md.num_row_groups):
        for c in range(md.num_columns):
            col = md.row_group(g).column(c)
            start = col.dictionary_page_offset if col.has_dictionary_page else col.data_page_offset
            spans.append((start, start + col.total_compressed_size))
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        a, b = spans[int(rng.integers(len(spans)))]
        out.append((int(rng.integers(a, b)), int(rng.integers(8))))
    return out


@pytest.mark.parametrize("compression", ["none", "snappy"])
def test_parquet_page_checksums_are_verified(tmp_path, compression):
    # A file written with page checksums: a flipped bit in a page is an error naming the
    # file and the row group, never different values.
    path = tmp_path / "crc.parquet"
    pq.write_table(pa.table({"x": np.arange(3000), "y": np.linspace(0, 1, 3000)}), path,
                   row_group_size=1000, compression=compression, write_page_checksum=True)
    expected = [{"x": i, "y": y} for i, y in enumerate(np.linspace(0, 1, 3000).tolist())]
    errors, wrong = _flipped_reads(path, expected, _data_positions(path, 60))
    assert wrong == [], f"flips at bytes {wrong} returned other values without an error"
    assert len(errors) >= 50  # the rest hit page-header fields that change nothing
    for msg in errors:
        assert "crc.parquet" in msg and "row group" in msg, msg


def test_parquet_decode_errors_name_the_file_and_row_group(tmp_path):
    # Without checksums a flip is caught only when it breaks decoding (here snappy).
    path = tmp_path / "snappy.parquet"
    pq.write_table(pa.table({"x": np.arange(3000)}), path, row_group_size=1000,
                   compression="snappy")
    errors, _ = _flipped_reads(path, None, _data_positions(path, 40, seed=1))
    assert errors, "no flip broke the snappy stream: choose other positions"
    for msg in errors:
        assert "snappy.parquet" in msg and "row group" in msg and "corrupted" in msg, msg


def test_parquet_memory_map_drops_each_row_group_and_is_closed(pq_files, monkeypatch):
    # Files are read through a memory map whose pages are dropped after each row group
    # is decoded; the values must be what pyarrow reads, the drops must move forward over
    # the whole file, and the map must be closed when the file is done.
    from layerkit.data import arrow
    if not arrow._CAN_UNMAP:
        pytest.skip("no madvise(MADV_DONTNEED) here: files are read without a map")
    maps, drops = [], []
    open_orig, drop_orig = arrow._open_parquet, arrow._drop_pages

    def spy_open(pqmod, path, *args):
        pf, mapped = open_orig(pqmod, path, *args)
        maps.append((str(path), mapped))
        return pf, mapped

    def spy_drop(mapped, end):
        drops.append((mapped, end))
        drop_orig(mapped, end)
    monkeypatch.setattr(arrow, "_open_parquet", spy_open)
    monkeypatch.setattr(arrow, "_drop_pages", spy_drop)
    want = pa.concat_tables([pq.read_table(pq_files / "a.parquet"),
                             pq.read_table(pq_files / "b.parquet")])
    for whole in (arrow.WHOLE_GROUP_BYTES, 0):  # row groups read whole, then streamed
        monkeypatch.setattr(arrow, "WHOLE_GROUP_BYTES", whole)
        maps.clear()
        drops.clear()
        got = values(Dataset.from_parquet(pq_files, read_batch_size=16).batch(1000))
        assert [g["i"] for g in got] == [want.column("i").to_pylist()]
        assert [g["s"] for g in got] == [[v.encode() for v in want.column("s").to_pylist()]]
        assert [p.rsplit("/", 1)[-1] for p, _ in maps] == ["a.parquet", "b.parquet"]
        for path, mapped in maps:
            assert mapped is not None and mapped.closed
            ends = [e for m, e in drops if m is mapped]
            assert len(ends) == pq.ParquetFile(path).num_row_groups  # one drop per group
            assert ends == sorted(ends)
            assert 0 < ends[-1] <= len(open(path, "rb").read())


def test_parquet_without_a_map_and_broken_later_files(pq_files, tmp_path, monkeypatch):
    from layerkit.data import arrow
    ref = values(Dataset.from_parquet(pq_files).batch(64))
    monkeypatch.setattr(arrow, "_CAN_UNMAP", False)  # an OS without madvise: plain reads
    assert values(Dataset.from_parquet(pq_files).batch(64)) == ref
    monkeypatch.undo()
    d = tmp_path / "broken"
    d.mkdir()
    pq.write_table(_table(10), d / "a.parquet")
    (d / "b.parquet").write_bytes(b"not parquet at all, just some bytes")
    ds = Dataset.from_parquet([d / "a.parquet", d / "b.parquet"])  # only a.parquet is opened
    with pytest.raises(ValueError, match="b.parquet is not a readable Parquet file"):
        list(ds)
    (d / "b.parquet").write_bytes(b"")  # empty: cannot be mapped, reported the same way
    with pytest.raises(ValueError, match="b.parquet is not a readable Parquet file"):
        list(ds)
    with pytest.raises(ValueError, match="b.parquet is not a readable Parquet file"):
        Dataset.from_parquet(d / "b.parquet")  # the first file, opened for the schema


def test_parquet_reads_with_bounded_memory_per_row_group(pq_files, monkeypatch):
    # Record batches hold at most one (small) row group or read_batch_size rows, and files
    # are opened with pre_buffer=False (pyarrow's default pre-buffers whole row groups).
    seen = []
    orig = pq.ParquetFile

    def spy(*a, **kw):
        seen.append(kw.get("pre_buffer"))
        return orig(*a, **kw)
    monkeypatch.setattr(pq, "ParquetFile", spy)
    from layerkit.data import arrow
    conv = arrow.ColumnarNode.convert
    sizes = []

    def count(self, rb, part):
        sizes.append(rb.num_rows)
        return conv(self, rb, part)
    monkeypatch.setattr(arrow.ColumnarNode, "convert", count)
    ref = values(Dataset.from_parquet(pq_files, read_batch_size=16).batch(7))
    assert seen and all(v is False for v in seen)
    assert max(sizes) <= 60  # small row groups are read whole (at most 60 rows here)
    sizes.clear()
    monkeypatch.setattr(arrow, "WHOLE_GROUP_BYTES", 0)  # big row groups are streamed
    assert values(Dataset.from_parquet(pq_files, read_batch_size=16).batch(7)) == ref
    assert max(sizes) <= 16


# ---- Arrow ---------------------------------------------------------------------------------
def test_from_arrow_table_and_record_batch():
    t = _table(20)
    ds = Dataset.from_arrow(t, columns=["i", "s"], read_batch_size=6)
    assert values(ds) == [{"i": r["i"], "s": r["s"]} for r in _rows(20)]
    assert values(ds) == values(ds) and ds.cardinality() == 20
    assert [len(b["i"]) for b in values(ds.batch(8))] == [8, 8, 4]
    assert_save_restore(lambda: Dataset.from_arrow(t, read_batch_size=6).batch(5), ks=[0, 1, 3])
    rb = t.to_batches()[0]
    assert values(Dataset.from_arrow(rb).take(2)) == _rows(2)


def test_from_arrow_reader_is_single_pass():
    t = _table(10)
    ds = Dataset.from_arrow(pa.RecordBatchReader.from_batches(t.schema, t.to_batches(4)))
    assert ds.cardinality() == lkd.UNKNOWN
    assert values(ds) == _rows(10)
    with pytest.raises(RuntimeError, match="read only once"):
        values(ds)
    with pytest.raises(TypeError, match="pyarrow Table"):
        Dataset.from_arrow({"a": [1]})


# ---- CSV -----------------------------------------------------------------------------------
def test_from_csv_types_header_defaults_and_state(tmp_path):
    p = tmp_path / "d.csv"
    lines = ["a,b,c"] + [f"{k},{k * 1.5},{'x' if k % 2 else ''}" for k in range(50)]
    p.write_text("\n".join(lines) + "\n")
    ds = Dataset.from_csv(p, column_types={"a": np.int32, "c": str}, block_size=64)
    rows = values(ds)
    assert rows[:2] == [{"a": 0, "b": 0.0, "c": b""}, {"a": 1, "b": 1.5, "c": b"x"}]
    assert len(rows) == 50 and ds.cardinality() == lkd.UNKNOWN
    assert ds.element_spec["a"] == TensorSpec((), np.int32)
    assert_save_restore(lambda: Dataset.from_csv(p, block_size=64), ks=[0, 1, 17, 49, 50])
    sel = Dataset.from_csv(p, select_columns=["b"]).batch(20)
    assert [len(b["b"]) for b in values(sel)] == [20, 20, 10]


def test_from_csv_without_header_names_and_defaults(tmp_path):
    p = tmp_path / "n.csv"
    p.write_text("1;2\n3;\n5;6\n")
    ds = Dataset.from_csv(p, column_names=["x", "y"], header=False, delimiter=";",
                          column_defaults={"y": -1})
    assert values(ds) == [{"x": 1, "y": 2}, {"x": 3, "y": -1}, {"x": 5, "y": 6}]
    with pytest.raises(ValueError, match="column 'y' has 1 null"):
        values(Dataset.from_csv(p, column_names=["x", "y"], header=False, delimiter=";"))


def test_from_csv_header_only_is_an_empty_dataset(tmp_path):
    # As in tf.data's make_csv_dataset: a column without a value to infer its type from
    # is a string column; a header-only file is an empty dataset.
    p = tmp_path / "h.csv"
    p.write_text("a,b\n")
    ds = Dataset.from_csv(p)
    assert values(ds) == [] and values(ds.batch(4)) == []
    string = TensorSpec((), np.dtype("S"))
    assert ds.element_spec == {"a": string, "b": string}
    typed = Dataset.from_csv(p, column_types={"a": np.int64})
    assert values(typed) == [] and typed.element_spec["a"] == TensorSpec((), np.int64)
    more = tmp_path / "m.csv"  # an empty column beside a full one
    more.write_text("a,b\n1,\n2,\n")
    assert values(Dataset.from_csv(more)) == [{"a": 1, "b": b""}, {"a": 2, "b": b""}]


# ---- text lines ----------------------------------------------------------------------------
def test_text_line_dataset_files_endings_gzip_and_state(tmp_path):
    a = tmp_path / "a.txt"
    a.write_bytes(b"first\r\nsecond\n\nlast-no-newline")
    b = tmp_path / "b.txt.gz"
    with gzip.open(b, "wb") as f:
        f.write("héllo\nworld\n".encode())
    ds = lkd.TextLineDataset([str(a)])
    assert values(ds) == [b"first", b"second", b"", b"last-no-newline"]
    assert ds.element_spec == TensorSpec((), np.dtype("S"))
    assert values(lkd.TextLineDataset(b, compression_type="GZIP")) == ["héllo".encode(), b"world"]
    assert_save_restore(lambda: lkd.TextLineDataset([str(a), str(a)]), ks=[0, 1, 3, 4, 5, 8])
    gz = lambda: lkd.TextLineDataset(str(b), compression_type="GZIP")  # noqa: E731
    assert_save_restore(gz, ks=[0, 1, 2])
    with pytest.raises(FileNotFoundError, match="cannot open"):
        list(lkd.TextLineDataset(str(tmp_path / "nope.txt")))


def test_text_line_dataset_from_list_files_and_parallel_reads(tmp_path):
    for name, n in [("x1.txt", 3), ("x2.txt", 2), ("x3.txt", 1)]:
        (tmp_path / name).write_text("".join(f"{name}:{i}\n" for i in range(n)))
    files = Dataset.list_files(str(tmp_path / "x*.txt"), shuffle=False)
    assert [v.decode() for v in values(lkd.TextLineDataset(files))] == [
        "x1.txt:0", "x1.txt:1", "x1.txt:2", "x2.txt:0", "x2.txt:1", "x3.txt:0"]
    names = [str(tmp_path / n) for n in ["x1.txt", "x2.txt", "x3.txt"]]
    par = values(lkd.TextLineDataset(names, num_parallel_reads=2))
    assert [v.decode() for v in par] == [
        "x1.txt:0", "x2.txt:0", "x1.txt:1", "x2.txt:1", "x1.txt:2", "x3.txt:0"]


def test_parquet_reader_thread_stops_with_the_iterator(pq_files):
    import gc
    import threading

    from .data_test_util import wait_for_threads
    gc.collect()
    baseline = threading.active_count()
    for i, _ in enumerate(Dataset.from_parquet(pq_files, read_batch_size=16)):
        if i == 40:
            break
    assert wait_for_threads(baseline) == baseline
    it = iter(Dataset.from_parquet(pq_files, read_batch_size=16).batch(10))
    next(it)
    it.close()
    assert wait_for_threads(baseline) == baseline
