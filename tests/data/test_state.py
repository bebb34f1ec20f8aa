"""Save/restore of iterator state for every node, through the one generic helper."""
from __future__ import annotations

import os
import time

import numpy as np
import pytest

import layerkit.data as lkd
from layerkit.checkpoint import trackable
from layerkit.data import Dataset

from .data_test_util import assert_save_restore, roundtrip, values

pytestmark = pytest.mark.timeout(60)

X = np.arange(40, dtype=np.float32).reshape(20, 2)
Y = np.arange(20)


def _sq(x):
    return x * x


def _slow_sq(x):
    time.sleep(0.0005)
    return x * x


def _gen():
    for i in range(12):
        yield i, np.full(i % 3 + 1, i)


def _noise(x):
    return x + int(lkd.element_rng().integers(0, 100))


PIPELINES = {
    "from_tensor_slices": lambda: Dataset.from_tensor_slices((X, Y)),
    "from_tensors": lambda: Dataset.from_tensors((X, Y)),
    "range": lambda: Dataset.range(3, 30, 2),
    "from_generator": lambda: Dataset.from_generator(_gen),
    "zip": lambda: Dataset.zip(Dataset.range(10), Dataset.range(5, 30).map(_sq)),
    "zip_chunks": lambda: Dataset.zip(Dataset.range(10), Dataset.range(5, 30)).batch(3),
    "map": lambda: Dataset.range(20).map(_sq),
    "map_rng": lambda: Dataset.range(20).map(_noise, seed=1),
    "map_threads": lambda: Dataset.range(30).map(_slow_sq, num_parallel_calls=3),
    "map_threads_rng": lambda: Dataset.range(30).map(_noise, num_parallel_calls=2),
    "map_unordered_single": lambda: Dataset.range(20).map(_sq, num_parallel_calls=1,
                                                          deterministic=False),
    "map_processes": lambda: Dataset.range(20).map(_sq, num_parallel_calls=2, use_processes=True),
    "filter": lambda: Dataset.range(30).filter(lambda x: int(x) % 3 != 0),
    "batch_rows": lambda: Dataset.range(20).map(_sq).batch(6),
    "batch_chunks": lambda: Dataset.from_tensor_slices((X, Y)).batch(6),
    "padded_batch": lambda: Dataset.from_generator(_gen).padded_batch(5),
    "unbatch": lambda: Dataset.from_tensor_slices(X).batch(7).unbatch(),
    "unbatch_chunks": lambda: Dataset.from_tensor_slices(X).batch(7).map(_sq).unbatch().batch(3),
    "shuffle_columnar": lambda: Dataset.range(50).shuffle(8, seed=3),
    "shuffle_columnar_batched": lambda: Dataset.range(50).shuffle(8, seed=3).batch(4),
    "shuffle_list": lambda: Dataset.range(50).map(_sq).shuffle(8, seed=3),
    "shuffle_big_buffer": lambda: Dataset.range(30).shuffle(100, seed=2),
    "shuffle_strings": lambda: Dataset.from_tensor_slices(
        np.array([b"a", b"bb", b"ccc"] * 6)).shuffle(5, seed=1).batch(4),
    "shuffle_seedless_repeat": lambda: Dataset.range(10).shuffle(10).repeat(3),
    "repeat": lambda: Dataset.range(7).repeat(3),
    "repeat_shuffle": lambda: Dataset.range(12).shuffle(5, seed=4).repeat(3),
    "repeat_forever_take": lambda: Dataset.range(5).shuffle(5, seed=1).repeat().take(23),
    "take": lambda: Dataset.range(20).take(9),
    "skip": lambda: Dataset.range(20).skip(9),
    "skip_chunks": lambda: Dataset.range(20).skip(9).batch(4),
    "prefetch": lambda: Dataset.range(30).map(_slow_sq).prefetch(3),
    "prefetch_inline": lambda: Dataset.range(300).prefetch(2),
    "cache_memory": lambda: Dataset.range(20).map(_sq).cache(),
    "concatenate": lambda: Dataset.range(5).concatenate(Dataset.range(10, 17)),
    "enumerate": lambda: Dataset.range(10, 20).enumerate(3),
    "interleave": lambda: Dataset.range(1, 6).interleave(
        lambda x: Dataset.range(int(x) * 10, int(x) * 10 + int(x)), cycle_length=2, block_length=2),
    "interleave_parallel": lambda: Dataset.range(1, 6).interleave(
        lambda x: Dataset.range(int(x) * 10, int(x) * 10 + int(x)).map(_slow_sq), cycle_length=3,
        block_length=2, num_parallel_calls=2),
    "interleave_shuffled_inner": lambda: Dataset.range(3).interleave(
        lambda x: Dataset.range(6).shuffle(3, seed=int(x)).map(lambda v: v + 10 * x),
        cycle_length=2),
    "flat_map": lambda: Dataset.range(4).flat_map(lambda x: Dataset.range(int(x))),
    "shard": lambda: Dataset.range(20).shard(3, 2),
    "everything": lambda: Dataset.range(100).shuffle(16, seed=5).map(
        _slow_sq, num_parallel_calls=2).filter(lambda x: int(x) % 2 == 0).batch(4).prefetch(2)
    .unbatch().enumerate().take(40),
}


@pytest.mark.parametrize("name", list(PIPELINES))
def test_save_restore(name):
    ks = None if name != "everything" else [0, 7, 25]
    assert_save_restore(PIPELINES[name], ks=ks)


def test_save_restore_expected_values():
    expected = [x * x for x in range(20)]
    assert_save_restore(lambda: Dataset.range(20).map(_sq), expected=expected)
    assert_save_restore(lambda: Dataset.range(20).map(_slow_sq, num_parallel_calls=2)
                        .prefetch(2), expected=expected)


def test_cache_file_state(tmp_path):
    path = str(tmp_path / "cache")
    build = lambda: Dataset.range(700).map(_sq).cache(path)  # noqa: E731
    values(build())  # write the file
    assert_save_restore(build, ks=[0, 255, 256, 300, 699, 700])


def test_cache_memory_restore_in_a_fresh_pipeline_replays_the_state():
    calls = []

    def sq(x):
        calls.append(int(x))
        return x * x
    ds = Dataset.range(10).map(sq).cache()
    values(ds)
    it = iter(ds)
    for _ in range(4):
        next(it)
    state = roundtrip(it.get_state())
    calls.clear()
    fresh = iter(Dataset.range(10).map(sq).cache())  # a new process has no memory cache
    fresh.set_state(state)  # as in tf.data, the state holds the cached elements
    assert values(fresh) == [x * x for x in range(4, 10)] and calls == []


def test_state_of_another_pipeline_is_refused():
    it = iter(Dataset.range(5).map(_sq))
    state = it.get_state()
    with pytest.raises(ValueError, match="pipeline"):
        iter(Dataset.range(5).batch(2)).set_state(state)
    with pytest.raises(ValueError, match="not a layerkit.data iterator state"):
        iter(Dataset.range(5)).set_state({"x": 1})


def test_iterator_takes_part_in_checkpoints():
    # lk.Checkpoint reads and writes iterator state through the trackable protocol
    build = lambda: Dataset.range(30).shuffle(10, seed=1).batch(4)  # noqa: E731
    it = iter(build())
    next(it)
    state = roundtrip(trackable.get_state(it))
    rest = values(it)
    it2 = iter(build())
    trackable.set_state(it2, state)
    assert values(it2) == rest


def test_midepoch_resume_of_a_training_style_pipeline_matches_uninterrupted_run():
    from layerkit.primitives import random as lkr

    def build():
        lkr.set_seed(123)  # seedless shuffles and maps: seeds come from the global generator
        return (Dataset.from_tensor_slices((X, Y)).shuffle(7).map(lambda x, y: (x * 2, y))
                .batch(3).repeat(2).prefetch(2))
    full = values(build())
    it = iter(build())
    head = [next(it) for _ in range(5)]
    state = roundtrip(it.get_state())
    del it
    it2 = iter(build())
    it2.set_state(state)
    assert [tuple(np.asarray(v._v).tolist() for v in e) for e in head] + values(it2) == full


def test_iterator_in_lk_checkpoint(tmp_path):
    ckpt = pytest.importorskip("layerkit.checkpoint")
    if not hasattr(ckpt, "Checkpoint"):
        pytest.skip("layerkit.checkpoint.Checkpoint is not available")

    def build():
        return (Dataset.range(40).shuffle(10, seed=1).map(_slow_sq, num_parallel_calls=2)
                .batch(4).prefetch(2))
    it = iter(build())
    for _ in range(3):
        next(it)
    path = ckpt.Checkpoint(iterator=it).save(str(tmp_path / "ck"))
    rest = values(it)
    it2 = iter(build())
    ckpt.Checkpoint(iterator=it2).restore(path).assert_consumed()
    assert values(it2) == rest


# ---- cache: exact resume in a new process, every position, memory and file ----------------
def _inc(x):
    return x + 100


CACHE_ORDERS = {
    "shuffle_cache_repeat": lambda f: Dataset.range(10).shuffle(10, seed=9).cache(f).repeat(2),
    "cache_shuffle_repeat": lambda f: Dataset.range(10).cache(f).shuffle(4, seed=2).repeat(2),
    "shuffle_once_cache": lambda f: Dataset.range(10).shuffle(
        10, seed=9, reshuffle_each_iteration=False).cache(f).repeat(2),
    "map_between": lambda f: Dataset.range(10).shuffle(10, seed=9).map(_sq).cache(f)
    .map(_inc).repeat(2),
    "take_after": lambda f: Dataset.range(12).shuffle(12, seed=3).cache(f).take(8).repeat(2),
    "skip_after": lambda f: Dataset.range(12).shuffle(12, seed=3).cache(f).skip(3).repeat(2),
    "take_before": lambda f: Dataset.range(12).shuffle(12, seed=3).take(8).cache(f).repeat(2),
    "seedless": lambda f: _seeded(lambda: Dataset.range(9).shuffle(9).cache(f).repeat(2)),
    "batched": lambda f: Dataset.range(10).shuffle(10, seed=9).cache(f).repeat(2).batch(3),
}


def _seeded(build):
    from layerkit.primitives import random as lkr
    lkr.set_seed(7)
    return build()


@pytest.mark.parametrize("where", ["memory", "file"])
@pytest.mark.parametrize("name", list(CACHE_ORDERS))
def test_cache_resume_is_exact_at_every_position(name, where, tmp_path):
    """A state saved anywhere in either epoch restores, in a freshly built pipeline with
    nothing cached yet (as in a new process), to exactly the rest of the uninterrupted
    stream, also when the saving iterator is closed before finishing its pass."""
    build = CACHE_ORDERS[name]

    def fname(tag):
        if where == "memory":
            return ""
        (tmp_path / tag).mkdir()
        return str(tmp_path / tag / "c")
    full = values(build(fname("full")))
    for k in range(len(full) + 1):
        f = fname(f"k{k}")
        it = iter(build(f))
        head = [next(it) for _ in range(k)]
        state = roundtrip(it.get_state())
        it.close()  # the run stops here, its recording pass unfinished
        assert values(head) == full[:k]
        it2 = iter(build(f))
        it2.set_state(state)
        assert values(it2) == full[k:], f"{name} ({where}) resumed at {k}"


def test_cache_file_state_whose_file_was_deleted_names_the_file(tmp_path):
    path = str(tmp_path / "c")
    build = lambda: Dataset.range(10).cache(path).repeat(2)  # noqa: E731
    it = iter(build())
    for _ in range(13):  # into the second pass: replaying the file
        next(it)
    state = roundtrip(it.get_state())
    it.close()
    os.remove(path + ".lkcache")
    with pytest.raises(ValueError, match=r"c\.lkcache"):
        iter(build()).set_state(state)


# ---- malformed, truncated and foreign states: a clear error naming the stage ---------------
_JUNK = [None, "x", -1, 10**30, 1.5, [], {}, [0], {"node": "zip"}, True, np.zeros(2),
         np.zeros((2, 2), np.int64)]
_BARE = (TypeError, KeyError, IndexError, AttributeError)


def _tree_paths(obj, path=()):
    yield path
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _tree_paths(v, path + (k,))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _tree_paths(v, path + (i,))


def _at(obj, path):
    for k in path:
        obj = obj[k]
    return obj


def _mutants(state: dict, foreign: list):
    """(description, mutated copy) for every position of ``state['state']``: each value
    replaced by junk or by a piece of another pipeline's state, keys deleted, lists cut."""
    import copy
    for path in list(_tree_paths(state["state"]))[1:]:
        value = _at(state["state"], path)
        edits = [(f"= {j!r}"[:30], lambda p, k, j=j: p.__setitem__(k, j)) for j in _JUNK]
        edits += [(f"= foreign {i}", lambda p, k, f=f: p.__setitem__(k, f))
                  for i, f in enumerate(foreign)]
        if isinstance(_at(state["state"], path[:-1]), dict):
            edits.append(("deleted", lambda p, k: p.__delitem__(k)))
        if isinstance(value, list) and value:
            edits.append(("cut", lambda p, k: p.__setitem__(k, p[k][:len(p[k]) // 2])))
            edits.append(("grown", lambda p, k: p.__setitem__(k, p[k] + p[k][-1:])))
        for what, edit in edits:
            m = copy.deepcopy(state)
            edit(_at(m["state"], path[:-1]), path[-1])
            yield f"{list(path)} {what}", m


def _fuzz_set_state(build, foreign: list, probe: int = 3) -> int:
    it = iter(build())
    for _ in range(probe):
        next(it, None)
    state = roundtrip(it.get_state())
    it.close()
    tried = 0
    for what, bad in _mutants(state, foreign):
        tried += 1
        it = iter(build())
        try:
            it.set_state(bad)
        except ValueError as e:
            assert "Dataset." in str(e) or "TextLineDataset" in str(e), (what, str(e))
            it.close()
            continue
        except Exception as e:  # noqa: BLE001 (any other type is the failure reported)
            raise AssertionError(f"{what}: {type(e).__name__}: {e}") from e
        try:  # accepted: the stream may be odd, but must not fail with a bare error
            for _ in range(4):
                next(it)
        except StopIteration:
            pass
        except _BARE as e:
            if "Dataset." not in str(e):
                raise AssertionError(f"{what} was accepted, then {type(e).__name__}: {e}") from e
        except Exception:  # noqa: BLE001, S110 (clear errors are fine here)
            pass
        finally:
            it.close()
    return tried


def _fuzz_foreign() -> list:
    """Pieces of real states of other stages, to plant where they do not belong."""
    out = []
    for name in ("map", "shuffle_list", "batch_chunks", "repeat_shuffle"):
        it = iter(PIPELINES[name]())
        next(it)
        out.append(roundtrip(it.get_state())["state"])
        it.close()
    return out


FUZZED = [n for n in PIPELINES if n not in ("everything", "map_processes")]


@pytest.mark.parametrize("name", FUZZED)
def test_set_state_with_a_malformed_state_names_the_stage(name):
    assert _fuzz_set_state(PIPELINES[name], _fuzz_foreign()) > 0


def test_set_state_fuzz_of_file_sources_and_caches(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq
    pq.write_table(pa.table({"a": np.arange(30), "b": np.arange(30) * 0.5}),
                   str(tmp_path / "t.parquet"), row_group_size=10)
    (tmp_path / "t.csv").write_text("a,b\n" + "".join(f"{i},{i / 2}\n" for i in range(30)))
    (tmp_path / "t.txt").write_text("".join(f"line {i}\n" for i in range(30)))
    cache = str(tmp_path / "c")
    values(Dataset.range(600).cache(cache))  # a complete file: states replay it
    builds = [
        lambda: Dataset.from_parquet(str(tmp_path / "t.parquet")).batch(4),
        lambda: Dataset.from_csv(str(tmp_path / "t.csv")),
        lambda: lkd.TextLineDataset(str(tmp_path / "t.txt")),
        lambda: Dataset.range(600).cache(cache),
        lambda: Dataset.range(20).cache(str(tmp_path / "w")),  # recording
        lambda: Dataset.range(20).shuffle(5, seed=1).cache(),
    ]
    foreign = _fuzz_foreign()
    for build in builds:
        assert _fuzz_set_state(build, foreign, probe=300 if build is builds[3] else 3) > 0
