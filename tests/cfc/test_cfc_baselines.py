"""Baseline vectors: hand-computed mean / median / zero / mode."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.compose import ColumnTransformer
from sklearn.impute import SimpleImputer
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler

from core.cfc import baseline_vector, categorical_groups, raw_origin_groups

# Columns: one-hot colour (red, green, blue) | numeric | numeric + its missing indicator.
X = np.array(
    [
        [1, 0, 0, 2.0, 0.5, 0],
        [0, 1, 0, 4.0, 0.7, 1],
        [0, 1, 0, 9.0, 0.7, 1],
        [0, 0, 1, 1.0, 0.1, 0],
        [0, 1, 0, 4.0, 0.2, 0],
    ],
    dtype=float,
)
GROUPS = {"colour": [0, 1, 2], "size": [3], "weight": [4, 5]}


def test_mean_median_zero():
    np.testing.assert_allclose(baseline_vector(X, GROUPS, "mean"), [0.2, 0.6, 0.2, 4.0, 0.44, 0.4])
    np.testing.assert_allclose(baseline_vector(X, rule="median"), [0, 1, 0, 4.0, 0.5, 0])
    np.testing.assert_array_equal(baseline_vector(X, rule="zero"), np.zeros(6))
    np.testing.assert_allclose(baseline_vector(X), baseline_vector(X, rule="mean"))


def test_mode_takes_the_most_frequent_pattern_of_categorical_groups():
    assert categorical_groups(X, GROUPS) == ["colour"]
    # colour: green (0, 1, 0) appears 3 times; numeric groups keep the mean.
    np.testing.assert_allclose(baseline_vector(X, GROUPS, "mode"), [0, 1, 0, 4.0, 0.44, 0.4])
    # Declaring weight categorical: its most frequent (value, indicator) pattern is (0.7, 1).
    np.testing.assert_allclose(
        baseline_vector(X, GROUPS, "mode", categorical=["colour", "weight"]), [0, 1, 0, 4.0, 0.7, 1]
    )


def test_mode_can_be_the_missing_token():
    df = pd.DataFrame({"job": ["a", None, None, "b", None, "a"], "x": [1.0, 2, 3, 4, 5, 6]})
    ct = ColumnTransformer(
        [
            (
                "job",
                make_pipeline(
                    SimpleImputer(strategy="constant", fill_value="missing"), OneHotEncoder(sparse_output=False)
                ),
                ["job"],
            ),
            ("x", StandardScaler(), ["x"]),
        ]
    ).fit(df)
    Xt = ct.transform(df)
    groups = raw_origin_groups(ct)
    b = baseline_vector(Xt, groups, "mode")
    # Categories are sorted: a, b, missing; the missing token is the most frequent.
    np.testing.assert_allclose(b, [0, 0, 1, 0.0], atol=1e-12)


def test_mode_ties_go_to_the_lexicographically_smallest_pattern():
    Xt = np.array([[1, 0], [0, 1], [1, 0], [0, 1]], dtype=float)
    np.testing.assert_array_equal(baseline_vector(Xt, {"c": [0, 1]}, "mode"), [0, 1])
    np.testing.assert_array_equal(baseline_vector(Xt[::-1], {"c": [0, 1]}, "mode"), [0, 1])


@pytest.mark.parametrize(
    "kwargs,match",
    [
        ({"rule": "average"}, r"`rule` must be one of \('mean', 'median', 'zero', 'mode'\); got 'average'"),
        ({"rule": "mode", "groups": None}, "`groups` is required for rule='mode'"),
        ({"rule": "mode", "categorical": ["shape"]}, r"`categorical` names \['shape'\]"),
    ],
)
def test_bad_options(kwargs, match):
    args = {"groups": GROUPS, **kwargs}
    with pytest.raises(ValueError, match=match):
        baseline_vector(X, **args)


def test_bad_training_data():
    Z = X.copy()
    Z[2, 4] = np.nan
    with pytest.raises(ValueError, match=r"`X_train` must be finite \(impute first\); found nan at row 2, column 4"):
        baseline_vector(Z)
    with pytest.raises(ValueError, match="non-empty 2-D"):
        baseline_vector(np.zeros((0, 3)))
