"""The checkpoint file format: round trips, validation errors, atomic writes, grid64."""
from __future__ import annotations

import json
import os
import struct
import zlib

import numpy as np
import pytest

from layerkit.checkpoint import format as fmt
from layerkit.checkpoint.digest import BLOCK, Grid64, grid64
from layerkit.checkpoint.format import (
    CheckpointError,
    CheckpointNotFoundError,
    CheckpointReader,
    write_file,
)
from tests.checkpoint.helpers import rewrite_manifest


def _arrays():
    rng = np.random.default_rng(0)
    return {
        "f32": rng.standard_normal((3, 5)).astype(np.float32),
        "f64/scalar": np.float64(2.5) * np.ones(()),
        "i64": np.arange(7, dtype=np.int64),
        "u8": np.arange(200, dtype=np.uint8).reshape(10, 20),
        "bool": np.array([True, False, True]),
        "c64": (rng.standard_normal(4) + 1j).astype(np.complex64),
        "f16": np.linspace(0, 1, 9, dtype=np.float16),
        "str": np.array(["a", "bcd", ""]),
        "bytes": np.array([b"xy", b"z"]),
        "empty": np.zeros((0, 4), np.float32),
        "big-endian": np.arange(5, dtype=">i4"),
        "strided": np.arange(20, dtype=np.float32).reshape(4, 5)[:, ::2],
    }


def test_round_trip_every_dtype(tmp_path):
    arrays = _arrays()
    p = tmp_path / "a.ckpt"
    write_file(p, arrays, meta={"hello": [1, 2.5, None]})
    with CheckpointReader(p) as r:
        assert r.keys() == list(arrays)
        assert r.meta == {"hello": [1, 2.5, None]}
        got = r.read_many(r.keys())
        for k, a in arrays.items():
            assert got[k].shape == a.shape and r.shape(k) == a.shape
            assert got[k].dtype == a.dtype.newbyteorder("=")
            np.testing.assert_array_equal(got[k], a)
            assert got[k].flags.writeable
            assert r.read(k).tobytes() == np.ascontiguousarray(a).astype(got[k].dtype).tobytes()
        r.verify()


def test_layout_header_alignment_and_no_pickle(tmp_path):
    p = tmp_path / "a.ckpt"
    write_file(p, _arrays())
    raw = p.read_bytes()
    magic, version, hsize, mlen, mcrc, _, data_off, data_len, file_len, hcrc = \
        fmt._HEADER.unpack(raw[:64])
    assert magic == b"\x89LKCKPT\n" and version == 1 and hsize == 64
    assert file_len == len(raw) == data_off + data_len and data_off % 64 == 0
    assert zlib.crc32(raw[:60]) == hcrc and zlib.crc32(raw[64:64 + mlen]) == mcrc
    doc = json.loads(raw[64:64 + mlen])
    assert doc["format"] == "layerkit-checkpoint" and doc["checksum"] == "grid64"
    for e in doc["tensors"].values():
        assert e["offset"] % 64 == 0
        assert e["offset"] + e["nbytes"] <= data_len
    # the data area is the arrays' raw bytes, little-endian
    e = doc["tensors"]["i64"]
    start = data_off + e["offset"]
    assert raw[start:start + e["nbytes"]] == np.arange(7, dtype="<i8").tobytes()
    assert b"pickle" not in raw and b"\x80\x04" not in raw[64:64 + mlen]


def test_shared_array_stored_once(tmp_path):
    a = np.arange(1000, dtype=np.float64)
    p = tmp_path / "s.ckpt"
    write_file(p, {"x": a, "y": a, "z": a.copy()})
    with CheckpointReader(p) as r:
        offs = {k: r._entries[k][2] for k in r.keys()}
        assert offs["x"] == offs["y"] != offs["z"]
        np.testing.assert_array_equal(r.read("y"), a)
    assert os.path.getsize(p) < 3 * a.nbytes


def test_reads_only_what_is_asked_and_memmap(tmp_path):
    p = tmp_path / "m.ckpt"
    a = np.random.default_rng(1).standard_normal((64, 33))
    write_file(p, {"a": a, "b": np.ones(3)})
    with CheckpointReader(p) as r:
        m = r.memmap("a")
        np.testing.assert_array_equal(m, a)
        assert not m.flags.writeable
        assert r.read_many(["b"]).keys() == {"b"}
        with pytest.raises(KeyError, match="no tensor 'nope'"):
            r.read("nope")


def test_large_reads_are_grouped_in_slabs(tmp_path):
    rng = np.random.default_rng(5)
    arrays = {f"a{i}": rng.standard_normal(1_125_000) for i in range(3)}   # 9 MB each
    p = tmp_path / "slabs.ckpt"
    write_file(p, arrays)
    with CheckpointReader(p) as r:
        got = r.read_many(r.keys())
    for k, a in arrays.items():
        np.testing.assert_array_equal(got[k], a)
    assert got["a0"].base is got["a1"].base          # one 18 MB slab ...
    assert got["a2"].base is not got["a0"].base      # ... then a new one
    got["a0"][:] = 0
    np.testing.assert_array_equal(got["a1"], arrays["a1"])


def test_object_dtype_refused_at_write(tmp_path):
    with pytest.raises(CheckpointError, match="object dtypes"):
        write_file(tmp_path / "o.ckpt", {"o": np.array([{}, None], dtype=object)})
    assert list(tmp_path.iterdir()) == []


# ---- bad input: each names the file and what is wrong -----------------------------------
@pytest.fixture
def good(tmp_path):
    p = tmp_path / "good.ckpt"
    write_file(p, {"w": np.arange(4096, dtype=np.float32), "b": np.ones(3, np.float32)},
               meta={"m": 1})
    return p


def _expect(path, match):
    with pytest.raises(CheckpointError, match=match) as info:
        with CheckpointReader(path) as r:
            r.verify()
    assert str(path) in str(info.value)
    return info.value


@pytest.mark.parametrize("keep", [0, 5, 63, 64, 100, -1, -4000])
def test_truncated_file(good, keep):
    data = good.read_bytes()
    good.write_bytes(data[:keep] if keep >= 0 else data[:len(data) + keep])
    err = _expect(good, "truncated|not a layerkit")
    if keep >= 8 or keep < 0:
        assert "truncated" in str(err)


def test_flipped_byte_in_data_detected(good):
    data = bytearray(good.read_bytes())
    with CheckpointReader(good) as r:
        start = r._data_offset + r._entries["w"][2]
    data[start + 1234] ^= 0x01
    good.write_bytes(bytes(data))
    _expect(good, "tensor 'w' is corrupted")


@pytest.mark.parametrize("where", ["header", "manifest"])
def test_flipped_byte_in_header_or_manifest(good, where):
    data = bytearray(good.read_bytes())
    data[20 if where == "header" else 80] ^= 0x10
    good.write_bytes(bytes(data))
    _expect(good, f"corrupted {where}")


def test_manifest_pointing_past_the_end(good):
    rewrite_manifest(good, lambda d: d["tensors"]["w"].update(offset=1 << 20))
    _expect(good, "tensor 'w' .* points past the end of the data area")


def test_manifest_shape_disagrees_with_size(good):
    rewrite_manifest(good, lambda d: d["tensors"]["w"].update(shape=[4097]))
    _expect(good, "tensor 'w': shape \\(4097,\\) and dtype float32 need")


def test_manifest_with_object_dtype_refused(good):
    rewrite_manifest(good, lambda d: d["tensors"]["b"].update(dtype="|O"))
    _expect(good, "no object dtypes")


def test_unknown_checksum_and_newer_version(good, tmp_path):
    rewrite_manifest(good, lambda d: d.update(checksum="md5"))
    _expect(good, "unsupported checksum algorithm 'md5'")
    p = tmp_path / "v.ckpt"
    write_file(p, {"a": np.ones(2)})
    raw = bytearray(p.read_bytes())
    raw[8:12] = struct.pack("<I", 99)
    raw[60:64] = struct.pack("<I", zlib.crc32(bytes(raw[:60])))
    p.write_bytes(bytes(raw))
    _expect(p, "format version 99 is newer")


def test_trailing_garbage(good):
    with open(good, "ab") as f:
        f.write(b"junk")
    _expect(good, "trailing data")


def test_not_a_checkpoint(tmp_path):
    p = tmp_path / "notes.txt"
    p.write_text("hello, I am a text file that is long enough to have a header" * 3)
    _expect(p, "not a layerkit checkpoint")
    npz = tmp_path / "w.npz"
    np.savez(npz, a=np.ones(3))
    _expect(npz, "not a layerkit checkpoint")
    empty = tmp_path / "empty"
    empty.write_bytes(b"")
    _expect(empty, "not a layerkit checkpoint")


def test_directory_and_missing_file(tmp_path):
    with pytest.raises(CheckpointError, match="is a directory"):
        CheckpointReader(tmp_path)
    with pytest.raises(CheckpointNotFoundError, match="no such file") as info:
        CheckpointReader(tmp_path / "missing.ckpt")
    assert isinstance(info.value, FileNotFoundError)


# ---- atomic writes --------------------------------------------------------------------------
def test_failed_write_leaves_old_file_and_no_temp(tmp_path, monkeypatch):
    p = tmp_path / "a.ckpt"
    write_file(p, {"v": np.zeros(10)})
    before = p.read_bytes()
    calls = []

    def failing_write_all(f, mv):
        calls.append(len(mv))
        if len(calls) == 3:
            raise OSError(28, "No space left on device")
        return real(f, mv)

    real = fmt.write_all
    monkeypatch.setattr(fmt, "write_all", failing_write_all)
    with pytest.raises(OSError, match="No space"):
        write_file(p, {"v": np.ones(10)})
    assert p.read_bytes() == before
    assert os.listdir(tmp_path) == ["a.ckpt"]


def test_failed_rename_leaves_old_file(tmp_path, monkeypatch):
    p = tmp_path / "a.ckpt"
    write_file(p, {"v": np.zeros(10)})

    def boom(src, dst):
        raise OSError("rename failed")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError, match="rename failed"):
        write_file(p, {"v": np.ones(10)})
    monkeypatch.undo()
    with CheckpointReader(p) as r:
        np.testing.assert_array_equal(r.read("v"), np.zeros(10))
    assert os.listdir(tmp_path) == ["a.ckpt"]


def test_large_write_uses_the_overlapped_flush(tmp_path):
    a = np.random.default_rng(2).standard_normal(700_000)   # 5.6 MB > _OVERLAP_BYTES
    assert a.nbytes > fmt._OVERLAP_BYTES
    p = tmp_path / "big.ckpt"
    write_file(p, {"a": a, "b": a[:10].copy()})
    with CheckpointReader(p) as r:
        r.verify()
        np.testing.assert_array_equal(r.read("a"), a)


# ---- grid64 ----------------------------------------------------------------------------------
def _grid64_reference(data: bytes) -> int:
    """A direct, slow transcription of the definition in digest.py's docstring."""
    mask = (1 << 64) - 1

    def mix(z):
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & mask
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & mask
        return z ^ (z >> 31)

    row_sums, lanes = [], [0] * 1024
    for b in range(0, max(len(data), 1), BLOCK):
        block = data[b:b + BLOCK]
        block += bytes(-len(block) % 8192)
        for r in range(0, len(block), 8192):
            row = struct.unpack("<1024Q", block[r:r + 8192])
            row_sums.append(sum(row) & mask)
            for lane, w in enumerate(row):
                lanes[lane] = (lanes[lane] + w) & mask
    d = sum(mix((s + (i + 1) * 0x9E3779B97F4A7C15) & mask) for i, s in enumerate(row_sums))
    d += sum(mix((v + (lane + 1) * 0xC2B2AE3D27D4EB4F) & mask) for lane, v in enumerate(lanes))
    return mix((d + len(data) * 0x165667B19E3779F9) & mask)


@pytest.mark.parametrize("n", [0, 1, 7, 8, 8191, 8192, 8193, 65536 * 2 + 100, BLOCK,
                               BLOCK + 8 * 8192 * 3 + 17])
def test_grid64_matches_its_definition(n):
    data = np.random.default_rng(n).integers(0, 256, n, dtype=np.uint8).tobytes()
    assert grid64(data) == _grid64_reference(data)


def test_grid64_detects_small_changes():
    rng = np.random.default_rng(3)
    base = rng.integers(0, 256, 3 * 8192 + 40, dtype=np.uint8)
    ref = grid64(base)
    for pos in rng.choice(base.size, 300, replace=False):
        for bit in (0, 7):
            changed = base.copy()
            changed[pos] ^= 1 << bit
            assert grid64(changed) != ref
    # opposite-polarity flips of the same bit in two words (sum and xor both cancel)
    w = base[:8 * 8192].view("<u8").copy()
    w[0], w[5] = w[0] & ~np.uint64(1 << 63), w[5] | np.uint64(1 << 63)
    w2 = w.copy()
    w2[0], w2[5] = w[0] | np.uint64(1 << 63), w[5] & ~np.uint64(1 << 63)
    assert grid64(w.view(np.uint8)) != grid64(w2.view(np.uint8))
    # swapped 8 KiB rows and 4 KiB pages, swapped words, zeroed page, extra zero byte
    rows = base[:3 * 8192].reshape(3, 8192)
    assert grid64(rows[[1, 0, 2]].copy()) != grid64(rows.copy())
    pages = base[:6 * 4096].reshape(6, 4096)
    assert grid64(pages[[2, 1, 0, 3, 4, 5]].copy()) != grid64(pages.copy())
    words = base[:8192].view("<u8").copy()
    swapped = words.copy()
    swapped[[3, 900]] = swapped[[900, 3]]
    assert words[3] != words[900] and grid64(swapped) != grid64(words)
    zeroed = base.copy()
    zeroed[4096:8192] = 0
    assert grid64(zeroed) != ref
    assert grid64(np.append(base, np.uint8(0))) != ref


def test_grid64_incremental_rules():
    h = Grid64()
    h.update(np.zeros(100, np.uint8))
    with pytest.raises(ValueError, match="only the last block"):
        h.update(np.zeros(100, np.uint8))
