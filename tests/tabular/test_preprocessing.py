"""Preprocessing fitted on train only, raw-origin traceability, naturalistic unavailability."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.cfc.grouping import domain_block_groups, raw_origin_groups
from core.tabular.datasets import DATASET_NAMES, UNKNOWN_TOKEN, load_dataset, split_dataset
from core.tabular.preprocessing import (
    MISSING_CATEGORY,
    UNAVAILABLE_COLUMNS,
    detect_unavailable_fields,
    fit_preprocessor,
)


@pytest.fixture(scope="module")
def splits():
    return {name: split_dataset(load_dataset(name), seed=0) for name in DATASET_NAMES}


def _frames():
    train = pd.DataFrame(
        {
            "age": [20.0, 30.0, np.nan, 50.0, 60.0, 40.0],
            "n": [1, 2, 3, 4, 5, 6],
            "home": ["own", "rent", "own", np.nan, "own", "castle"],
        }
    )
    test = pd.DataFrame(
        {
            "extra": ["ignored"] * 3,
            "home": ["rent", "igloo", np.nan],
            "n": [0, 7, 3],
            "age": [np.nan, 35.0, 100.0],
        }
    )
    return train, test


def test_numeric_pipeline_uses_training_statistics_only():
    train, test = _frames()
    pre = fit_preprocessor(train, ["age", "n"], ["home"], min_frequency=None)
    # Independent reference: median imputation, then z-scores with the *training* mean and
    # population standard deviation of the imputed training column.
    age_train = train["age"].fillna(train["age"].median()).to_numpy()
    mean, std = age_train.mean(), age_train.std()
    age_test = test["age"].fillna(train["age"].median()).to_numpy()
    n_mean, n_std = train["n"].mean(), train["n"].std(ddof=0)
    ind_train = train["age"].isna().to_numpy(float)
    ind_mean, ind_std = ind_train.mean(), ind_train.std()
    X = pre.transform(test)
    np.testing.assert_allclose(X[:, 0], (age_test - mean) / std, rtol=1e-12)
    np.testing.assert_allclose(X[:, 1], (test["n"].to_numpy() - n_mean) / n_std, rtol=1e-12)
    np.testing.assert_allclose(X[:, 2], (test["age"].isna().to_numpy(float) - ind_mean) / ind_std, rtol=1e-12)
    assert pre.feature_names[:3] == ("num__age", "num__n", "num__missingindicator_age")


def test_one_hot_has_a_missing_level_and_unseen_categories_in_the_infrequent_bucket():
    train, test = _frames()
    pre = fit_preprocessor(train, ["age", "n"], ["home"], min_frequency=2)
    # train levels: own x3 (frequent), rent / castle / missing x1 (pooled as infrequent)
    assert pre.feature_names[3:] == ("cat__home_own", "cat__home_infrequent_sklearn")
    X = pre.transform(test)
    np.testing.assert_array_equal(X[:, 3:], [[0, 1], [0, 1], [0, 1]])  # rent, unseen 'igloo', missing
    pre = fit_preprocessor(train, ["age"], ["home"], min_frequency=None)
    assert pre.feature_names[2:] == ("cat__home_castle", "cat__home_missing", "cat__home_own", "cat__home_rent")
    X = pre.transform(test)
    np.testing.assert_array_equal(X[:, 2:], [[0, 0, 0, 1], [0, 0, 0, 0], [0, 1, 0, 0]])  # unseen -> all zeros
    assert MISSING_CATEGORY == "missing"


def test_output_is_dense_float64_and_independent_of_column_order():
    train, test = _frames()
    pre = fit_preprocessor(train, ["age", "n"], ["home"])
    X = pre.transform(test)
    assert X.dtype == np.float64 and X.flags.c_contiguous and X.shape == (3, pre.n_features_out)
    np.testing.assert_array_equal(pre.transform(test[["n", "age", "home"]]), X)
    assert pre.raw_columns == ("age", "n", "home")


def _expected_groups(train: pd.DataFrame, numeric, categorical, min_frequency: int) -> dict[str, list[int]]:
    """Independent layout from the training data alone (not from the fitted encoder)."""
    groups = {c: [i] for i, c in enumerate(numeric)}
    position = len(numeric)
    for c in numeric:
        if train[c].isna().any():
            groups[c].append(position)
            position += 1
    for c in categorical:
        counts = train[c].fillna(MISSING_CATEGORY).value_counts()
        n_out = int((counts >= min_frequency).sum()) + int((counts < min_frequency).any())
        groups[c] = list(range(position, position + n_out))
        position += n_out
    return groups


@pytest.mark.parametrize("name", DATASET_NAMES)
def test_raw_origin_groups_partition_the_columns_and_keep_one_hot_levels_together(splits, name):
    split = splits[name]
    ds = split.dataset
    pre = fit_preprocessor(split.train, ds.numeric, ds.categorical)
    groups = raw_origin_groups(pre.transformer)
    expected = _expected_groups(split.train, ds.numeric, ds.categorical, 10)
    assert {g: sorted(cols) for g, cols in groups.items()} == expected
    flat = sorted(c for cols in groups.values() for c in cols)
    assert flat == list(range(pre.n_features_out))  # every column in exactly one group
    assert set(groups) == set(ds.features)
    for c in ds.categorical:
        names = [pre.feature_names[j] for j in groups[c]]
        assert all(n.startswith(f"cat__{c}_") for n in names)  # one-hot levels of c stay together
    if ds.blocks is None:  # adult, credit_g: their sources define no blocks
        return
    # the shipped domain blocks compose with the traced groups
    blocks = domain_block_groups(groups, ds.blocks)
    assert sorted(c for cols in blocks.values() for c in cols) == flat
    assert len(blocks) == len(set(ds.blocks.values()))


def test_breast_cancer_blocks_give_ten_groups_of_three(splits):
    split = splits["breast_cancer"]
    pre = fit_preprocessor(split.train, split.dataset.numeric, split.dataset.categorical)
    blocks = domain_block_groups(raw_origin_groups(pre.transformer), split.dataset.blocks)
    assert len(blocks) == 10 and all(len(cols) == 3 for cols in blocks.values())


def test_credit_data_groups_hold_the_missing_indicators(splits):
    split = splits["credit_data"]
    pre = fit_preprocessor(split.train, split.dataset.numeric, split.dataset.categorical)
    groups = raw_origin_groups(pre.transformer)
    for column in ("Income", "Assets", "Debt"):
        assert [pre.feature_names[j] for j in groups[column]] == [f"num__{column}", f"num__missingindicator_{column}"]
    assert [pre.feature_names[j] for j in groups["Home"]] == [
        "cat__Home_ignore",
        "cat__Home_other",
        "cat__Home_owner",
        "cat__Home_parents",
        "cat__Home_priv",
        "cat__Home_rent",
        "cat__Home_infrequent_sklearn",
    ]  # fmt: skip  (the 6 missing Home values are pooled as infrequent)


@pytest.mark.parametrize(
    "args, kwargs, message",
    [
        ((["a"], ["a"]), {}, r"Column 'a' is listed as both numeric and categorical"),
        (([], []), {}, r"`numeric` and `categorical` are both empty"),
        ((["a", "a"], []), {}, r"Column 'a' is listed twice in `numeric`"),
        ((["zz"], []), {}, r"`train` lacks the raw column 'zz'"),
        ((["b"], []), {}, r"`train`: numeric column 'b' has non-numeric dtype"),
        ((["a"], []), {"min_frequency": 0}, r"`min_frequency` must be a positive int or None; got 0"),
    ],
    ids=["overlap", "nothing", "duplicate", "absent column", "text as numeric", "bad min_frequency"],
)
def test_fit_rejects_bad_arguments(args, kwargs, message):
    train = pd.DataFrame({"a": [1.0, 2.0], "b": ["x", "y"]})
    with pytest.raises(ValueError, match=message):
        fit_preprocessor(train, *args, **kwargs)


def test_fit_and_transform_reject_bad_frames():
    train = pd.DataFrame({"a": [1.0, 2.0], "b": ["x", "y"]})
    with pytest.raises(ValueError, match=r"`train` has no rows"):
        fit_preprocessor(train.iloc[:0], ["a"], ["b"])
    pre = fit_preprocessor(train, ["a"], ["b"])
    with pytest.raises(ValueError, match=r"`frame` lacks the raw column 'b'"):
        pre.transform(train[["a"]])
    with pytest.raises(ValueError, match=r"`frame` must be a pandas DataFrame; got ndarray"):
        pre.transform(train.to_numpy())


# ------------------------------------------------------------------------------------------
# Naturalistic field unavailability
# ------------------------------------------------------------------------------------------


def test_detection_counts_each_kind_of_marker():
    frame = pd.DataFrame(
        {
            "inc": [10.0, np.nan, 99999999.0, 99999999.0, 5.0, 7.0],  # NaN + sentinel at the max
            "price": [9999.0, 10000.0, 1.0, 2.0, 3.0, 4.0],  # 9999 is not the max: a real price
            "debt": [-999.0, 1.0, 2.0, -999.0, 3.0, np.nan],  # negative sentinel at the min
            "job": ["a", "?", " Unknown ", "emp_unk", None, "b"],
            "home": ["own", "ignore", "rent", "own", "ignore", "unknown"],  # declared + token
            "ok": ["x", "y", "x", "y", "x", "y"],
        }
    )
    found = detect_unavailable_fields(frame, list(frame.columns), markers={"home": ("ignore",)})
    assert tuple(found.columns) == UNAVAILABLE_COLUMNS
    rows = found.set_index("column")
    assert list(rows.index) == ["inc", "debt", "job", "home"]
    assert rows.loc["inc", ["n_missing", "n_declared", "n_token", "n_sentinel", "n_unavailable"]].tolist() == [
        1,
        0,
        0,
        2,
        3,
    ]
    assert rows.loc["debt", ["n_missing", "n_sentinel"]].tolist() == [1, 2]
    assert rows.loc["job", ["n_missing", "n_token"]].tolist() == [1, 3]
    assert rows.loc["home", ["n_declared", "n_token", "n_unavailable"]].tolist() == [2, 1, 3]
    assert rows.loc["inc", "values"] == ("NaN", "99999999")
    assert rows.loc["job", "values"] == ("NaN", "?", " Unknown ", "emp_unk")
    assert rows.loc["home", "values"] == ("ignore", "unknown")
    assert rows.loc["inc", "share"] == pytest.approx(0.5)


def test_detection_declared_numeric_code_takes_precedence_over_sentinel():
    frame = pd.DataFrame({"x": [1.0, -1.0, 9999.0]})
    rows = detect_unavailable_fields(frame, ["x"], markers={"x": (-1, 9999)}).iloc[0]
    assert (rows["n_declared"], rows["n_sentinel"], rows["n_unavailable"]) == (2, 0, 2)


def test_real_values_are_not_taken_for_codes():
    frame = pd.DataFrame({"gain": [0.0, 5.0, 99999.0], "job": ["a", "?", "unknown"], "x": [1.0, 2.0, 9999.0]})
    found = detect_unavailable_fields(frame, ["gain", "job", "x"], real_values={"gain": (99999,), "job": ("?",)})
    # gain's top code is a real value; job keeps its other token; x's nines rule still applies
    assert found[["column", "n_token", "n_sentinel"]].to_numpy().tolist() == [["job", 1, 0], ["x", 0, 1]]
    with pytest.raises(ValueError, match=r"`real_values` names column 'nope', which is not among `columns`"):
        detect_unavailable_fields(frame, ["gain"], real_values={"nope": (1,)})


@pytest.mark.parametrize(
    "name, expected",
    [
        ("credit_data", {"Home": 26, "Marital": 1, "Job": 2, "Income": 381, "Assets": 47, "Debt": 18}),
        ("lending_club", {"emp_length": 645}),
        ("mlc_churn", {}),
        ("wa_churn", {"total_charges": 11}),
        ("breast_cancer", {}),
        ("adult", {"workclass": 2799, "occupation": 2809, "native-country": 857}),
        ("credit_g", {"savings_status": 183, "property_magnitude": 154}),
    ],
    ids=list(DATASET_NAMES),
)
def test_detection_on_bundled_data(splits, name, expected):
    ds = splits[name].dataset
    found = detect_unavailable_fields(ds.frame, ds.features, markers=ds.markers, real_values=ds.real_values)
    assert dict(zip(found["column"], found["n_unavailable"])) == expected
    if name == "credit_data":
        home = found.set_index("column").loc["Home"]
        assert (home["n_missing"], home["n_declared"]) == (6, 20)


def test_detection_rejects_unknown_columns():
    frame = pd.DataFrame({"a": [1]})
    with pytest.raises(ValueError, match=r"`columns` names 'b', which is not a column of `frame`"):
        detect_unavailable_fields(frame, ["b"])
    with pytest.raises(ValueError, match=r"`markers` names column 'c', which is not among `columns`"):
        detect_unavailable_fields(frame, ["a"], markers={"c": ("x",)})


def _naive_counts(values: list, numeric: bool, declared: tuple, real: tuple = ()) -> tuple[int, int, int, int]:
    """Per-value loop implementing the documented precedence rules (``real`` values are never
    counted by rules 3 and 4)."""
    present = [v for v in values if v is not None and not (isinstance(v, float) and np.isnan(v))]
    top, bottom = (max(present), min(present)) if numeric and present else (None, None)

    def nines(v):
        return v == int(v) and len(str(abs(int(v)))) >= (3 if v < 0 else 4) and set(str(abs(int(v)))) == {"9"}

    counts = [0, 0, 0, 0]
    for v in values:
        if v is None or (isinstance(v, float) and np.isnan(v)):
            counts[0] += 1
        elif (v in declared) if numeric else (str(v) in {str(d) for d in declared}):
            counts[1] += 1
        elif (v in real) if numeric else (str(v) in {str(r) for r in real}):
            continue
        elif not numeric and UNKNOWN_TOKEN.fullmatch(str(v).strip().lower()):
            counts[2] += 1
        elif numeric and ((v == top and v > 0 and nines(v)) or (v == bottom and v < 0 and nines(v))):
            counts[3] += 1
    return tuple(counts)


@given(
    text=st.lists(
        st.sampled_from(["a", "b", "?", "Unknown", "x_unk", "", "n/a", "junk", "ign", None]), min_size=1, max_size=30
    ),
    numbers=st.lists(
        st.sampled_from([1.0, 2.0, -1.0, 9999.0, 99999999.0, -999.0, 999.0, np.nan]), min_size=1, max_size=30
    ),
    declare=st.booleans(),
    real=st.booleans(),
)
def test_detection_matches_a_naive_loop(text, numbers, declare, real):
    frame = pd.DataFrame(
        {"t": pd.Series(text, dtype=object).reindex(range(30)), "x": pd.Series(numbers).reindex(range(30))}
    )
    markers = {"t": ("ign",), "x": (-1.0,)} if declare else {}
    reals = {"t": ("?",), "x": (9999.0, -999.0)} if real else {}
    found = detect_unavailable_fields(frame, ["t", "x"], markers=markers, real_values=reals).set_index("column")
    for column, numeric in (("t", False), ("x", True)):
        expected = _naive_counts(
            frame[column].tolist(), numeric, tuple(markers.get(column, ())), tuple(reals.get(column, ()))
        )
        got = (
            tuple(found.loc[column, ["n_missing", "n_declared", "n_token", "n_sentinel"]])
            if column in found.index
            else (0, 0, 0, 0)
        )
        assert got == expected
