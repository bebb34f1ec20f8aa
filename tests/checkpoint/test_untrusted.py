"""Checkpoint directories and files are untrusted input.

Crafted indexes (hostile paths, symbolic links, wrong types, huge or broken JSON) and
crafted or damaged checkpoint files (truncated, bit-flipped, fuzzed manifests) must
never make layerkit read or delete anything outside the checkpoint directory; every bad
file is refused with a CheckpointError that names it, and a valid older checkpoint in
the same directory stays restorable.
"""
from __future__ import annotations

import hashlib
import json
import os
import random

import numpy as np
import pytest

import layerkit as lk
from layerkit.checkpoint import Checkpoint, CheckpointError, CheckpointManager
from layerkit.checkpoint import format as fmt
from layerkit.checkpoint import index as ckpt_index
from layerkit.checkpoint.format import CheckpointReader
from tests.checkpoint.helpers import Stateful, rewrite_manifest


# ---- a sandbox: the checkpoint directory, and files outside it that must stay intact ----
@pytest.fixture
def sandbox(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "victim.txt").write_text("do not touch")
    # a genuine checkpoint outside the directory: a link to it must not be followed
    Checkpoint(v=lk.Variable(np.full(3, 99.0, np.float32))).write(outside / "ckpt-9")
    run = tmp_path / "run"
    run.mkdir()
    return tmp_path, outside, run


def _snapshot(root, skip):
    """{path: (content hash, mtime)} of every file under ``root`` outside ``skip``."""
    out = {}
    for dirpath, _, filenames in os.walk(root):
        if os.path.abspath(dirpath).startswith(os.path.abspath(skip)):
            continue
        for f in filenames:
            p = os.path.join(dirpath, f)
            st = os.lstat(p)
            out[p] = (hashlib.sha256(open(p, "rb").read()).hexdigest(), st.st_mtime_ns)
    return out


def _write_index(run, checkpoints, latest=None, **extra):
    doc = {"format": "layerkit-checkpoint-index", "version": 1, "latest": latest,
           "checkpoints": checkpoints, "last_preserved_time": None, **extra}
    (run / ckpt_index.INDEX_NAME).write_text(json.dumps(doc))


def _values(n=3, fill=1.0):
    return lk.Variable(np.full(n, fill, np.float32))


HOSTILE_PATHS = [
    "../outside/victim.txt", "../outside/ckpt-9", "..", ".", "", "sub/ckpt-1",
    "ckpt-1/../../outside/ckpt-9", "ckpt-1\x00", "victim.txt", "ckpt", "ckpt-x",
    "..\\outside\\ckpt-9", 5, None, ["ckpt-1"], {"path": "ckpt-1"}, True,
]


@pytest.mark.parametrize("bad", HOSTILE_PATHS + ["<abs-victim>", "<abs-ckpt>"],
                         ids=repr)
def test_manager_never_touches_files_outside_its_directory(sandbox, bad):
    tmp_path, outside, run = sandbox
    if bad == "<abs-victim>":
        bad = str(outside / "victim.txt")
    elif bad == "<abs-ckpt>":
        bad = str(outside / "ckpt-9")
    before = _snapshot(tmp_path, run)
    _write_index(run, [{"path": bad, "time": 0.0}, {"path": "ckpt-1", "time": 1.0}],
                 latest=bad)
    v = _values()
    with pytest.warns(UserWarning, match="checkpoint_index.json.*invalid entr"):
        mgr = CheckpointManager(Checkpoint(v=v), run, max_to_keep=1)
    assert mgr.checkpoints == []          # ckpt-1 is listed but does not exist
    for i in range(3):
        v.assign(np.full(3, float(i), np.float32))
        mgr.save()
    assert sorted(os.listdir(run)) == ["checkpoint_index.json", "ckpt-3"]
    assert _snapshot(tmp_path, run) == before
    assert lk.latest_checkpoint(run) == str(run / "ckpt-3")
    fresh = _values(fill=0.0)
    Checkpoint(v=fresh).restore(run).assert_consumed()
    assert fresh.numpy().tolist() == [2.0, 2.0, 2.0]


@pytest.mark.parametrize("bad", HOSTILE_PATHS, ids=repr)
def test_latest_checkpoint_ignores_hostile_entries(sandbox, bad):
    tmp_path, outside, run = sandbox
    Checkpoint(v=_values(fill=7.0)).write(run / "ckpt-1")
    _write_index(run, [{"path": "ckpt-1", "time": 1.0}, {"path": bad, "time": 2.0}],
                 latest=bad)
    with pytest.warns(UserWarning, match="checkpoint_index.json.*invalid entr"):
        assert lk.latest_checkpoint(run) == str(run / "ckpt-1")
    fresh = _values(fill=0.0)
    with pytest.warns(UserWarning, match="invalid entr"):
        Checkpoint(v=fresh).restore(run).assert_consumed()   # the valid older checkpoint
    assert fresh.numpy().tolist() == [7.0, 7.0, 7.0]


def test_symlinks_leading_out_are_neither_read_nor_deleted(sandbox):
    tmp_path, outside, run = sandbox
    before = _snapshot(tmp_path, run)
    os.symlink(outside / "ckpt-9", run / "ckpt-5")         # a link out: refused
    Checkpoint(v=_values(fill=4.0)).write(run / "ckpt-2")
    os.symlink("ckpt-2", run / "ckpt-3")                    # a link inside: fine
    _write_index(run, [{"path": "ckpt-2", "time": 1.0}, {"path": "ckpt-3", "time": 2.0},
                       {"path": "ckpt-5", "time": 3.0}], latest="ckpt-5")
    with pytest.warns(UserWarning, match="symbolic link leading out"):
        assert lk.latest_checkpoint(run) == str(run / "ckpt-3")
    v = _values()
    with pytest.warns(UserWarning, match="symbolic link leading out"):
        mgr = CheckpointManager(Checkpoint(v=v), run, max_to_keep=1)
    assert [os.path.basename(p) for p in mgr.checkpoints] == ["ckpt-2", "ckpt-3"]
    mgr.save()   # rotates ckpt-2 and the link ckpt-3 (the link itself), never ckpt-5
    assert os.path.islink(run / "ckpt-5") and not os.path.lexists(run / "ckpt-3")
    assert _snapshot(tmp_path, run) == before


def test_the_index_itself_as_a_symlink_is_refused(sandbox):
    tmp_path, outside, run = sandbox
    (outside / "index.json").write_text(json.dumps(
        {"format": "layerkit-checkpoint-index", "checkpoints": [], "latest": None}))
    os.symlink(outside / "index.json", run / ckpt_index.INDEX_NAME)
    with pytest.raises(CheckpointError, match="checkpoint_index.json.*symbolic link"):
        lk.latest_checkpoint(run)


def test_manager_only_deletes_its_own_names(sandbox):
    tmp_path, outside, run = sandbox
    Checkpoint(v=_values()).write(run / "model-1")   # another prefix, listed in the index
    Checkpoint(v=_values()).write(run / "ckpt-1")
    _write_index(run, [{"path": "model-1", "time": 0.0}, {"path": "ckpt-1", "time": 1.0}])
    mgr = CheckpointManager(Checkpoint(v=_values()), run, max_to_keep=1)
    assert [os.path.basename(p) for p in mgr.checkpoints] == ["ckpt-1"]
    mgr.save()   # save_counter 1: rewrites ckpt-1
    mgr.save()
    assert sorted(os.listdir(run)) == ["checkpoint_index.json", "ckpt-2", "model-1"]


@pytest.mark.parametrize("entry, why", [
    ({"path": "ckpt-1"}, "not an object with 'path' and 'time'"),
    ({"time": 1.0}, "not an object with 'path' and 'time'"),
    ("ckpt-1", "not an object"),
    (None, "not an object"),
    ({"path": "ckpt-1", "time": "1.0"}, "not a finite number"),
    ({"path": "ckpt-1", "time": None}, "not a finite number"),
    ({"path": "ckpt-1", "time": True}, "not a finite number"),
    ({"path": "ckpt-1", "time": float("nan")}, "not a finite number"),
    ({"path": "ckpt-1", "time": float("inf")}, "not a finite number"),
])
def test_malformed_index_entries_are_reported_and_ignored(sandbox, entry, why):
    tmp_path, outside, run = sandbox
    Checkpoint(v=_values(fill=3.0)).write(run / "ckpt-2")
    _write_index(run, [entry, {"path": "ckpt-2", "time": 5.0}],
                 last_preserved_time="yesterday")
    with pytest.warns(UserWarning) as record:
        assert lk.latest_checkpoint(run) == str(run / "ckpt-2")
    message = str(record[0].message)
    assert str(run / ckpt_index.INDEX_NAME) in message and why in message
    assert "last_preserved_time 'yesterday'" in message


@pytest.mark.parametrize("content, match", [
    (b"{not json", "unreadable"),
    (b"\xff\xfe garbage", "unreadable"),
    (b"[" * 200_000 + b"]" * 200_000, "nested too deeply"),
    (b'{"format": "layerkit-checkpoint-index", "checkpoints": 5}', "not a list"),
    (b'{"format": "something-else", "checkpoints": []}', "not a layerkit checkpoint index"),
    (b'["format"]', "not a layerkit checkpoint index"),
    (b'{"format": "layerkit-checkpoint-index", "x": ' + b"9" * 5000 + b"}", "unreadable"),
    (b" " * (ckpt_index.MAX_INDEX_BYTES + 1), "more than any index"),
], ids=["not-json", "not-utf8", "deep", "entries-not-list", "other-format", "list",
        "long-int", "huge"])
def test_broken_index_files_are_refused_naming_the_file(sandbox, content, match):
    tmp_path, outside, run = sandbox
    index = run / ckpt_index.INDEX_NAME
    index.write_bytes(content)
    for call in (lambda: lk.latest_checkpoint(run),
                 lambda: CheckpointManager(Checkpoint(v=_values()), run),
                 lambda: Checkpoint(v=_values()).restore(run)):
        with pytest.raises(CheckpointError, match=match) as info:
            call()
        assert str(index) in str(info.value)


# ---- crafted and damaged checkpoint files ------------------------------------------------
def _graph():
    """A checkpoint with variables, a nested object and a state holding arrays."""
    return Checkpoint(
        w=lk.Variable(np.arange(6, dtype=np.float32).reshape(2, 3)),
        inner=Checkpoint(b=lk.Variable(np.ones(3, np.float32))),
        it=Stateful({"pos": 3, "buf": np.arange(5.0), "scalar": np.float32(2.5),
                     "raw": b"\x00\x01", "pair": (1, "a"), 4: "int key"}))


@pytest.fixture
def good(tmp_path):
    p = tmp_path / "good-1"
    _graph().write(p)
    return p


def _restore_fails(path, match):
    target = _graph()
    before = {k: v.numpy() for k, v in (("w", target.w), ("b", target.inner.b))}
    with pytest.raises(CheckpointError, match=match) as info:
        target.restore(path)
    assert str(path) in str(info.value)
    np.testing.assert_array_equal(target.w.numpy(), before["w"])   # nothing assigned
    np.testing.assert_array_equal(target.inner.b.numpy(), before["b"])
    return info.value


def _tensor(key, **fields):
    return lambda d: d["tensors"][key].update(fields)


def _drop(key, field):
    return lambda d: d["tensors"][key].pop(field)


def _state(value):
    return lambda d: d["meta"]["states"]["it"].update(value=value)


CRAFTED = {
    # tensor table entries
    "dtype object": (_tensor("w", dtype="O"), "no object dtypes"),
    "dtype |O": (_tensor("w", dtype="|O"), "no object dtypes"),
    "dtype void": (_tensor("w", dtype="V24"), "no object dtypes"),
    "dtype datetime": (_tensor("w", dtype="<M8[s]"), "no object dtypes"),
    "dtype structured": (_tensor("w", dtype="f4,i4"), "no object dtypes"),
    "dtype subarray": (_tensor("w", dtype="(2,)f4"), "no object dtypes"),
    "dtype S0": (_tensor("w", dtype="S0", shape=[0], nbytes=0), "zero-size dtype"),
    "dtype nonsense": (_tensor("w", dtype="float99"), "not a NumPy dtype"),
    "dtype number": (_tensor("w", dtype=4), "not a dtype string"),
    "dtype huge": (_tensor("w", dtype="f" * 10_000), "not a dtype string"),
    "shape string": (_tensor("w", shape="abc"), "invalid shape"),
    "shape negative": (_tensor("w", shape=[-2, -3]), "invalid shape"),
    "shape float": (_tensor("w", shape=[2.0, 3]), "invalid shape"),
    "shape bool": (_tensor("w", shape=[True, 6]), "invalid shape"),
    "shape huge": (_tensor("w", shape=[10 ** 30]), "need 4"),
    "shape 65 dims": (_tensor("w", shape=[1] * 65), "invalid shape"),
    "offset negative": (_tensor("w", offset=-64), "invalid shape, offset"),
    "offset huge": (_tensor("w", offset=10 ** 30), "past the end"),
    "offset string": (_tensor("w", offset="0"), "invalid shape, offset"),
    "nbytes huge": (_tensor("w", shape=[10 ** 29], nbytes=4 * 10 ** 29), "past the end"),
    "checksum number": (_tensor("w", grid64=5), "not 16 hex"),
    "checksum text": (_tensor("w", grid64="not hex!"), "not 16 hex"),
    "no dtype": (_drop("w", "dtype"), "no dtype"),
    "no offset": (_drop("w", "offset"), "no offset"),
    "entry list": (lambda d: d["tensors"].update(w=[1, 2]), "not an object"),
    "tensors list": (lambda d: d.update(tensors=[]), "no 'tensors' table"),
    "overlap": (lambda d: d["tensors"]["inner/b"].update(
        offset=d["tensors"]["w"]["offset"] + 8), "overlap"),
    "bad checksum name": (lambda d: d.update(checksum={"a": 1}), "unsupported checksum"),
    # the object graph
    "no object graph": (lambda d: d.update(meta=None), "no layerkit object graph"),
    "variables list": (lambda d: d["meta"].update(variables=[]), "must be objects"),
    "object not list": (lambda d: d["meta"]["variables"]["w"].update(object="w"),
                        "no valid 'object' path"),
    "object unhashable": (lambda d: d["meta"]["variables"]["w"].update(object=[{}]),
                          "no valid 'object' path"),
    "name missing": (lambda d: d["meta"]["variables"]["w"].pop("name"), "no 'name'"),
    "path mismatch": (lambda d: d["meta"]["variables"]["w"].update(name="b"),
                      "claims the path"),
    "unknown tensor": (lambda d: d["meta"]["states"]["it"].update(arrays=["nope"]),
                       "refers to tensor 'nope'"),
    "arrays not list": (lambda d: d["meta"]["states"]["it"].update(arrays="it/.state/0"),
                        "'arrays'"),
    "state no value": (lambda d: d["meta"]["states"]["it"].pop("value"), "no 'value'"),
    # state values referring to the stored arrays
    "ndarray index huge": (_state({"__ndarray__": 10 ** 9}), "does not refer to one"),
    "ndarray index negative": (_state({"__ndarray__": -1}), "does not refer to one"),
    "ndarray index bool": (_state({"__ndarray__": True}), "does not refer to one"),
    "ndarray index string": (_state({"__ndarray__": "0"}), "does not refer to one"),
    "tensor index": (_state({"__tensor__": 99}), "does not refer to one"),
    "npscalar of array": (_state({"__npscalar__": 0}), "not a scalar"),
    "bytes not base64": (_state({"__bytes__": "@@@"}), "not base64"),
    "bytes number": (_state({"__bytes__": 5}), "not base64"),
    "tuple not list": (_state({"__tuple__": 5}), "not a list"),
    "dict not list": (_state({"__dict__": {"a": 1}}), "not a list"),
    "dict bad pair": (_state({"__dict__": [[1]]}), "not a \\[key, value\\] pair"),
    "dict unhashable key": (_state({"__dict__": [[{"a": 1}, 2]]}), "cannot be a dict key"),
}


@pytest.mark.parametrize("name", list(CRAFTED))
def test_crafted_manifest_is_refused_naming_the_file(good, name):
    edit, match = CRAFTED[name]
    rewrite_manifest(good, edit)
    _restore_fails(good, match)


@pytest.mark.parametrize("raw, match", [
    (b'{"format": "layerkit-checkpoint", "x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
     "nested too deeply"),
    (b'{"format": "layerkit-checkpoint", "x": ' + b"7" * 6000 + b"}", "not valid JSON"),
    (b'{"format": "layerkit-checkpoint" \xff}', "not valid JSON"),
    (b"[1, 2]", "does not describe a layerkit checkpoint"),
], ids=["deep", "long-int", "not-utf8", "list"])
def test_unparseable_manifest_is_refused_naming_the_file(good, raw, match):
    rewrite_manifest(good, None, raw_manifest=raw)
    _restore_fails(good, match)


def test_deeply_nested_state_is_refused_naming_the_file(good):
    raw = good.read_bytes()
    doc = json.loads(raw[64:64 + fmt._HEADER.unpack(raw[:64])[3]])
    doc["meta"]["states"]["it"]["value"] = "__DEEP__"
    depth = 5000   # under the JSON parser's limit, beyond a recursive decoder's
    text = json.dumps(doc).replace('"__DEEP__"', "[" * depth + "]" * depth)
    rewrite_manifest(good, None, raw_manifest=text.encode())
    _restore_fails(good, "nested too deeply")


def test_unicode_paths_round_trip(tmp_path):
    src = Checkpoint(**{"wé": lk.Variable([1.0]), "数据": Checkpoint(v=lk.Variable([2.0]))})
    p = src.write(tmp_path / "u-1")
    dst = Checkpoint(**{"wé": lk.Variable([0.0]), "数据": Checkpoint(v=lk.Variable([0.0]))})
    dst.restore(p).assert_consumed()
    assert float(dst.wé.numpy()[0]) == 1.0
    assert float(dst.数据.v.numpy()[0]) == 2.0


_POOL = [None, -1, 0, 10 ** 20, 1.5, True, "", "x", "O", "../x", [], {}, [[[]]],
         {"__ndarray__": 10 ** 9}, {"__bytes__": "?"}, [-1, -2], "f4", "\ud800"]


def _paths(node, prefix=()):
    yield prefix
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _paths(v, prefix + (i,))


def test_fuzzed_manifests_restore_correctly_or_fail_naming_the_file(tmp_path):
    """Random single-field replacements: a restore either succeeds (a field that does
    not matter, a renamed path) or raises CheckpointError naming the file."""
    rng = random.Random(11)
    base = tmp_path / "base-1"
    _graph().write(base)
    p = tmp_path / "fuzz-1"
    raw = base.read_bytes()
    mlen = fmt._HEADER.unpack(raw[:64])[3]
    paths = [q for q in _paths(json.loads(raw[64:64 + mlen])) if q]
    outcomes = {"ok": 0, "refused": 0}
    for _ in range(400):
        where = rng.choice(paths)
        value = rng.choice(_POOL)

        def edit(d, where=where, value=value):
            node = d
            for seg in where[:-1]:
                node = node[seg]
            node[where[-1]] = value

        p.write_bytes(raw)
        rewrite_manifest(p, edit)
        target = _graph()
        try:
            target.restore(p).expect_partial()
        except CheckpointError as e:
            assert str(p) in str(e), (where, value, e)
            outcomes["refused"] += 1
        else:
            outcomes["ok"] += 1
    assert outcomes["refused"] > 200 and outcomes["ok"] > 0


def test_bit_flips_and_truncations_are_caught_or_harmless(good):
    raw = good.read_bytes()
    expected = _graph()
    rng = random.Random(3)
    for _ in range(300):
        data = bytearray(raw)
        i = rng.randrange(len(data))
        data[i] ^= 1 << rng.randrange(8)
        good.write_bytes(bytes(data))
        target = _graph()
        target.w.assign(np.zeros((2, 3), np.float32))
        try:
            target.restore(good).assert_consumed()
        except CheckpointError as e:
            assert str(good) in str(e)
        else:   # the flip hit zero padding, which no value reads: the values are right
            np.testing.assert_array_equal(target.w.numpy(), expected.w.numpy())
            np.testing.assert_array_equal(target.inner.b.numpy(), expected.inner.b.numpy())
    for keep in sorted(rng.sample(range(len(raw)), 40)):
        good.write_bytes(raw[:keep])
        _restore_fails(good, "truncated|not a layerkit")


def test_valid_older_checkpoint_stays_restorable_next_to_damaged_ones(tmp_path):
    v = _values(fill=1.0)
    mgr = CheckpointManager(Checkpoint(v=v), tmp_path / "run", max_to_keep=3)
    first = mgr.save()
    v.assign(np.full(3, 2.0, np.float32))
    second = mgr.save()
    v.assign(np.full(3, 3.0, np.float32))
    third = mgr.save()
    data = bytearray(open(second, "rb").read())
    with CheckpointReader(second) as r:
        data[r._data_offset + r._entries["v"][2] + 5] ^= 0x40   # inside v's bytes
    open(second, "wb").write(bytes(data))
    head = open(third, "rb").read()[:100]
    open(third, "wb").write(head)
    fresh = _values(fill=0.0)
    with pytest.raises(CheckpointError, match="truncated") as info:
        Checkpoint(v=fresh).restore(tmp_path / "run")
    assert third in str(info.value)
    with pytest.raises(CheckpointError, match="corrupted") as info:
        Checkpoint(v=fresh).restore(second)
    assert second in str(info.value)
    assert fresh.numpy().tolist() == [0.0, 0.0, 0.0]
    Checkpoint(v=fresh).restore(first).assert_consumed()
    assert fresh.numpy().tolist() == [1.0, 1.0, 1.0]
