"""lk.data.experimental.make_csv_dataset: TF's (features, label) batches, type inference
and column defaults."""
import numpy as np
import pytest

import layerkit as lk

make = lk.data.experimental.make_csv_dataset


@pytest.fixture
def csv(tmp_path):
    path = tmp_path / "iris.csv"
    rows = [(5.1, 3, "a", 0), (4.9, 4, "b", 1), (6.2, 5, "", 2), (5.9, 6, "d", 1),
            (6.0, 7, "e", 0)]
    path.write_text("len,count,tag,species\n" +
                    "".join(f"{a},{b},{c},{d}\n" for a, b, c, d in rows))
    return path, rows


def test_batches_of_features_and_label_with_tensorflows_types(csv):
    path, rows = csv
    ds = make(str(path), batch_size=2, label_name="species", num_epochs=1, shuffle=False)
    batches = list(ds)
    assert [len(label) for _, label in batches] == [2, 2, 1]
    features, label = batches[0]
    assert list(features) == ["len", "count", "tag"]
    assert features["len"].dtype == np.float32 and features["count"].dtype == np.int32
    assert label.dtype == np.int32
    got = np.concatenate([f["len"].numpy() for f, _ in batches])
    np.testing.assert_allclose(got, np.float32([r[0] for r in rows]))
    assert np.concatenate([y.numpy() for _, y in batches]).tolist() == [r[3] for r in rows]


def test_large_integers_become_int64_and_defaults_fill_empty_fields(tmp_path):
    path = tmp_path / "big.csv"
    path.write_text("id,score\n1,\n3000000000,2.5\n")
    ds = make(str(path), batch_size=2, num_epochs=1, shuffle=False,
              column_defaults=[lk.int64, -1.0])
    (batch,) = list(ds)
    assert batch["id"].dtype == np.int64 and batch["id"].numpy().tolist() == [1, 3000000000]
    np.testing.assert_allclose(batch["score"].numpy(), [-1.0, 2.5])


def test_epochs_and_seeded_shuffle_cover_every_row(csv):
    path, rows = csv
    ds = make(str(path), batch_size=5, label_name="species", num_epochs=2, shuffle=True,
              shuffle_seed=3)
    first = [y.numpy().tolist() for _, y in ds]
    assert sorted(sum(first, [])) == sorted([r[3] for r in rows] * 2)
    again = [y.numpy().tolist() for _, y in make(str(path), batch_size=5,
                                                  label_name="species", num_epochs=2,
                                                  shuffle=True, shuffle_seed=3)]
    assert again == first   # the same seed gives the same order


def test_glob_patterns_and_bad_arguments(csv, tmp_path):
    path, rows = csv
    (tmp_path / "more.csv").write_text("len,count,tag,species\n1.0,1,x,2\n")
    ds = make(str(tmp_path / "*.csv"), batch_size=10, num_epochs=1, shuffle=False,
              label_name="species")
    assert sum(len(y) for _, y in ds) == len(rows) + 1
    with pytest.raises(ValueError, match="no files match"):
        make(str(tmp_path / "none*.csv"), batch_size=2)
    with pytest.raises(ValueError, match="label_name 'kind'"):
        make(str(path), batch_size=2, label_name="kind")
    with pytest.raises(ValueError, match="column_defaults has 2 entries"):
        make(str(path), batch_size=2, column_defaults=[0.0, 0])
