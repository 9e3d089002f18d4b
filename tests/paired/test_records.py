"""Record schema, loading and validation (SPEC B.1): every bad input names row and column."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from core.paired import (
    PAIRED_COLUMNS,
    load_records,
    load_unpaired,
    unpair,
    validate_records,
    validate_unpaired,
)


def _records(n=4):
    return pd.DataFrame(
        {
            "model": "resnet",
            "condition": "blur",
            "source": "synthetic",
            "record_id": [f"img{i}" for i in range(n)],
            "true_label": [0, 0, 1, 1][:n],
            "clean_pred": [0, 1, 1, 1][:n],
            "clean_max_prob": [0.9, 0.7, 0.8, 0.6][:n],
            "clean_true_prob": [0.9, 0.2, 0.8, 0.6][:n],
            "pert_pred": [1, 1, 1, 0][:n],
            "pert_max_prob": [0.5, 0.6, 0.7, 0.5][:n],
            "pert_true_prob": [0.4, 0.3, 0.7, 0.3][:n],
            "split": ["eval"] * n,
            "group": "cnn",
            "note": "kept",
        }
    )


def test_valid_records_are_normalised_and_extra_columns_kept():
    rec = _records().astype({"clean_max_prob": np.float32, "true_label": float})
    out = validate_records(rec)
    assert out["true_label"].dtype == np.int64 and out["clean_max_prob"].dtype == np.float64
    assert out["note"].tolist() == ["kept"] * 4
    assert list(out.columns[: len(PAIRED_COLUMNS)]) == list(PAIRED_COLUMNS)


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_round_trip_through_files(tmp_path, suffix):
    path = tmp_path / f"records{suffix}"
    (_records().to_csv(path, index=False) if suffix == ".csv" else _records().to_parquet(path))
    out = load_records(path)
    pd.testing.assert_frame_equal(out[list(PAIRED_COLUMNS)], validate_records(_records())[list(PAIRED_COLUMNS)])


def _bad(column, row, value):
    rec = _records()
    rec[column] = rec[column].astype(object)
    rec.loc[row, column] = value
    return rec


@pytest.mark.parametrize(
    "column, row, value, message",
    [
        (
            "clean_max_prob",
            2,
            1.2,
            r"row 3, column 'clean_max_prob': 1\.2 is not a probability; expected a number in \[0, 1\]",
        ),
        ("pert_true_prob", 1, -0.1, r"row 2, column 'pert_true_prob': -0\.1 is not a probability"),
        ("pert_max_prob", 0, "high", r"row 1, column 'pert_max_prob': 'high' is not a probability"),
        (
            "clean_true_prob",
            1,
            0.75,
            r"row 2, column 'clean_true_prob': true-class probability 0\.75 exceeds the maximum",
        ),
        ("pert_true_prob", 2, 0.5, r"row 3, column 'pert_true_prob': the prediction pert_pred=1 is the true label"),
        (
            "true_label",
            3,
            1.5,
            r"row 4, column 'true_label': 1\.5 is not a class label; expected a non-negative integer",
        ),
        ("clean_pred", 0, -2, r"row 1, column 'clean_pred': -2 is not a class label"),
        ("pert_pred", 0, "cat", r"row 1, column 'pert_pred': 'cat' is not a class label"),
        ("clean_max_prob", 3, np.nan, r"row 4, column 'clean_max_prob': empty cell"),
        ("model", 1, "  ", r"row 2, column 'model': empty cell"),
        ("split", 0, "test", r"row 1, column 'split': 'test' is not a split; expected one of \['dev', 'eval'\]"),
        ("record_id", 3, "img0", r"row 4, column 'record_id': 'img0' already appears in row 1 of the same cell"),
    ],
    ids=[
        "prob>1",
        "prob<0",
        "prob-text",
        "M>S",
        "correct-M!=S",
        "label-fraction",
        "label-negative",
        "label-text",
        "empty-number",
        "blank-string",
        "bad-split",
        "duplicate-id",
    ],
)
def test_bad_records_name_row_column_and_value(column, row, value, message):
    with pytest.raises(ValueError, match=message):
        validate_records(_bad(column, row, value))


def test_csv_errors_name_the_file_and_line(tmp_path):
    path = tmp_path / "records.csv"
    _bad("clean_max_prob", 2, 1.2).to_csv(path, index=False)
    with pytest.raises(ValueError, match=r"records\.csv, row 3 \(line 4\), column 'clean_max_prob'"):
        load_records(path)


def test_missing_columns_and_unknown_labels_and_files(tmp_path):
    with pytest.raises(ValueError, match=r"missing column\(s\) \['pert_pred', 'pert_max_prob'\]"):
        validate_records(_records().drop(columns=["pert_pred", "pert_max_prob"]))
    with pytest.raises(ValueError, match=r"row 3, column 'true_label': unknown label 1; the declared labels are"):
        validate_records(_records(), labels=[0, 2])
    with pytest.raises(ValueError, match="has no rows"):
        validate_records(_records().iloc[:0])
    with pytest.raises(FileNotFoundError, match=r"absent\.csv' does not exist"):
        load_records(tmp_path / "absent.csv")
    (tmp_path / "r.xlsx").write_text("x")
    with pytest.raises(ValueError, match=r"r\.xlsx': cannot tell the format from the suffix '\.xlsx'"):
        load_records(tmp_path / "r.xlsx")


def test_same_id_in_different_cells_is_fine():
    other = _records().assign(condition="fog")
    assert len(validate_records(pd.concat([_records(), other], ignore_index=True))) == 8


def test_non_default_index_is_reported():
    rec = _bad("clean_max_prob", 2, 1.2)
    rec.index = ["a", "b", "c", "d"]
    with pytest.raises(ValueError, match=r"row 3 \(index 'c'\)"):
        validate_records(rec)


# ---------------------------------------------------------------------------------------------
# Unpaired form


def _sides():
    clean = pd.DataFrame(
        {
            "record_id": [1, 2, 3, 4],
            "true_label": [0, 0, 5, 5],
            "pred": [1, 2, 5, 3],
            "max_prob": [0.6, 0.7, 0.9, 0.8],
            "true_prob": [0.2, 0.1, 0.9, 0.1],
        }
    )
    pert = pd.DataFrame(
        {
            "record_id": [10, 11, 12, 13],
            "true_label": [0, 0, 5, 5],
            "pred": [1, 2, 5, 5],
            "max_prob": [0.5, 0.6, 0.7, 0.6],
            "true_prob": [0.3, 0.2, 0.7, 0.6],
        }
    )
    return clean, pert


def test_unpaired_levels_follow_the_counts():
    clean, pert = _sides()
    assert validate_unpaired(clean, pert).level == "I0"
    ik = validate_unpaired(clean, pert, pd.DataFrame({"true_label": [0, 5], "k": [0, 1]}))
    assert ik.level == "Ik" and ik.counts["k"].tolist() == [0, 1]
    five = pd.DataFrame({"true_label": [0, 5], "h": [0, 0], "r": [0, 1], "s": [2, 0], "w": [0, 0], "k": [0, 1]})
    assert validate_unpaired(clean, pert, five).level == "I5"


@pytest.mark.parametrize(
    "change, message",
    [
        ({"true_label": [0, 5, 5, 5]}, r"class 0 has 2 records in `clean` but 1 in `perturbed`"),
        ({"true_label": [0, 0, 0, 0]}, r"class 5 appears only in `clean` \(2 record\(s\)\), not in `perturbed`"),
        ({"record_id": [10, 10, 12, 13]}, r"`perturbed`, row 2, column 'record_id': 10 already appears in row 1"),
    ],
    ids=["unequal-class-sides", "class-on-one-side", "duplicate-id"],
)
def test_unpaired_sides_are_checked(change, message):
    clean, pert = _sides()
    with pytest.raises(ValueError, match=message):
        validate_unpaired(clean, pert.assign(**change))


@pytest.mark.parametrize(
    "counts, message",
    [
        ({"true_label": [0, 5], "k": [0, 2]}, r"class 5: n=2, a=1 .*: k=2 is impossible; .* \[1, 1\]"),
        ({"true_label": [0, 5, 9], "k": [0, 1, 0]}, r"class 9 has counts but no records"),
        ({"true_label": [0], "k": [0]}, r"no counts for class 5"),
        ({"true_label": [0, 0], "k": [0, 0]}, r"class 0 already has counts in row 1"),
        ({"true_label": [0, 5], "k": [0, 0.5]}, r"row 2, column 'k': 0\.5 is not a count"),
        ({"true_label": [0, 5], "k": [0, 1], "s": [1, 0]}, r"give either 'k' alone .* or all of h, r, s, w, k"),
        (
            {"true_label": [0, 5], "h": [0, 1], "r": [0, 1], "s": [2, 0], "w": [0, 0], "k": [0, 1]},
            r"class 5.*: h=1 contradicts the records; h = a − k = 0",
        ),
        (
            {"true_label": [0, 5], "h": [0, 0], "r": [0, 1], "s": [1, 0], "w": [0, 1], "k": [0, 1]},
            r"class 0.*: s \+ w = 1 but the wrong–wrong block has n − a − b \+ k = 2 pairs",
        ),
        (
            {"true_label": [0, 5], "h": [0, 0], "r": [0, 1], "s": [1, 0], "w": [1, 1], "k": [0, 1]},
            r"class 0.*: no bijection has s=1 persistent and w=1 changed errors",
        ),
    ],
    ids=[
        "k-infeasible",
        "extra-class",
        "missing-class",
        "duplicate-class",
        "fractional",
        "partial-five",
        "h-mismatch",
        "sw-sum",
        "sw-split-unrealisable",
    ],
)
def test_counts_no_bijection_can_realise_are_rejected(counts, message):
    clean, pert = _sides()
    with pytest.raises(ValueError, match=message):
        validate_unpaired(clean, pert, pd.DataFrame(counts))


def test_load_unpaired_files_and_unpair(tmp_path):
    clean, pert = _sides()
    clean.to_csv(tmp_path / "c.csv", index=False)
    pert.to_parquet(tmp_path / "p.parquet")
    pd.DataFrame({"true_label": [0, 5], "k": [0, 1]}).to_csv(tmp_path / "k.csv", index=False)
    loaded = load_unpaired(tmp_path / "c.csv", tmp_path / "p.parquet", tmp_path / "k.csv")
    assert loaded.level == "Ik"
    bad = clean.assign(max_prob=[0.6, 1.7, 0.9, 0.8])
    bad.to_csv(tmp_path / "bad.csv", index=False)
    with pytest.raises(ValueError, match=r"bad\.csv, row 2 \(line 3\), column 'max_prob'"):
        load_unpaired(tmp_path / "bad.csv", tmp_path / "p.parquet")
    five = unpair(_records(), level="I5")
    assert five.level == "I5" and five.counts.set_index("true_label").loc[0].tolist() == [1, 0, 1, 0, 0]
    with pytest.raises(ValueError, match="single cell"):
        unpair(pd.concat([_records(), _records().assign(condition="fog")]))
