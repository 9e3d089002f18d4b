"""certify() refuses bad input with a specific ValueError, never a silent wrong answer."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from cfc_reference import random_problem

from core.cfc import Protocol, certify

F, X, GROUPS, XBAR = random_problem(0, n=6, d=5, n_groups=3, n_classes=3)


def _with(X_=None, groups=None, baseline=None):
    return (X if X_ is None else X_), (GROUPS if groups is None else groups), (XBAR if baseline is None else baseline)


def _bad_X(value):
    Z = X.copy()
    Z[1, 2] = value
    return Z


@pytest.mark.parametrize(
    "args,match",
    [
        (_with(X_=_bad_X(np.nan)), r"`X` must be finite; found nan at row 1, column 2"),
        (_with(X_=_bad_X(np.inf)), r"`X` must be finite; found inf at row 1, column 2"),
        (_with(X_=X[0]), r"`X` must be 2-D"),
        (_with(X_=np.empty((0, 5))), r"at least one row"),
        (_with(X_=np.array([["a"] * 5])), r"`X` must contain only numbers"),
        (_with(X_=sp.csr_matrix(X)), r"dense array"),
        (
            _with(groups={"g0": [0, 1], "g1": [1, 2], "g2": [3, 4]}),
            r"Groups overlap: column 1 is in both 'g0' and 'g1'",
        ),
        (_with(groups={"g0": [0, 1], "g1": [2]}), r"do not cover the columns: columns \[3, 4\]"),
        (_with(groups={"g0": [0, 1, 5], "g1": [2, 3, 4]}), r"column 5, outside 0..4"),
        (_with(groups={"g0": [0, 1], "g1": [], "g2": [2, 3, 4]}), r"Group 'g1' is empty"),
        (_with(groups={"g0": [0, 0, 1], "g1": [2, 3, 4]}), r"lists column 0 twice"),
        (_with(groups={"g0": [0, 1.5], "g1": [2, 3, 4]}), r"non-integer column index 1.5"),
        (_with(groups={}), r"`groups` is empty"),
        (_with(groups=[[0, 1], [2, 3, 4]]), r"ordered mapping"),
        (_with(baseline=np.zeros(4)), r"`baseline` must have shape \(5,\) to match X; got shape \(4,\)"),
        (_with(baseline=np.zeros((1, 5))), r"`baseline` must have shape \(5,\)"),
        (_with(baseline=np.array([0, 0, np.nan, 0, 0])), r"`baseline` must be finite; found nan at column 2"),
    ],
    ids=[
        "nan-X",
        "inf-X",
        "1d-X",
        "empty-X",
        "text-X",
        "sparse-X",
        "overlap",
        "uncovered",
        "out-of-range",
        "empty-group",
        "repeated-column",
        "float-column",
        "no-groups",
        "groups-not-mapping",
        "baseline-length",
        "baseline-2d",
        "baseline-nan",
    ],
)
def test_bad_data(args, match):
    with pytest.raises(ValueError, match=match):
        certify(F, *args)


def _model(transform):
    def predict_proba(Z):
        return transform(F(Z))

    return predict_proba


@pytest.mark.parametrize(
    "model,match",
    [
        (_model(lambda P: P[:, 0]), r"must return a 2-D array \(n_rows, n_classes\); got shape"),
        (_model(lambda P: P[:-1]), r"returned \d+ rows for \d+ input rows"),
        (_model(lambda P: P[:, :1]), r"at least 2 class columns"),
        (_model(lambda P: P - 0.5), r"probabilities must lie in \[0, 1\]"),
        (_model(lambda P: P * 2), r"\[0, 1\]|does not sum to 1"),
        (_model(lambda P: P * 0.9), r"does not sum to 1 \(row 0 sums to 0.899999"),
        (_model(lambda P: np.where(P > 0.5, np.nan, P)), r"non-finite probability nan"),
        (_model(lambda P: np.log(P)), r"probabilities must lie in \[0, 1\]"),
        (
            lambda Z: np.full((len(Z), 3), 1 / 3) if len(Z) < 10 else np.full((len(Z), 2), 0.5),
            r"returned 2 class columns; earlier calls returned 3",
        ),
        (_model(lambda P: [["x"] * P.shape[1]] * P.shape[0]), r"numeric array of probabilities"),
    ],
    ids=["1d", "rows", "one-class", "negative", "above-one", "sum", "nan", "logits", "class-count", "strings"],
)
def test_predict_proba_that_does_not_return_probabilities(model, match):
    with pytest.raises(ValueError, match=match):
        certify(model, X, GROUPS, XBAR)


@pytest.mark.parametrize(
    "kwargs,match",
    [
        ({"protocol": Protocol(depth=5)}, r"`depth` must be between 1 and the number of groups \(3\); got 5\."),
        ({"protocol": {"depth": 2}}, r"`protocol` must be a Protocol or None; got dict"),
        ({"order": ["g0", "g1"]}, r"`order` must list at least `depth` \(3\) distinct group names; got 2"),
        ({"order": ["g0", "g1", "zz"]}, r"`order` names unknown group\(s\) \['zz'\]"),
        ({"order": ["g0", "g0", "g1"]}, r"`order` must not repeat a group"),
        ({"order": "g0g1g2"}, r"`order` must be a sequence of group names"),
        ({"search": "all"}, r"`method` must be one of \('exact', 'beam', 'both'\); got 'all'"),
        ({"batch_size": 0}, r"`batch_size` must be a positive int"),
        ({"batch_size": 2.5}, r"`batch_size` must be a positive int"),
        ({"progress": "bar"}, r"`progress` must be a callable"),
    ],
    ids=[
        "depth>G",
        "protocol-dict",
        "order-short",
        "order-unknown",
        "order-repeat",
        "order-str",
        "search",
        "batch-0",
        "batch-float",
        "progress",
    ],
)
def test_bad_options(kwargs, match):
    with pytest.raises(ValueError, match=match):
        certify(F, X, GROUPS, XBAR, **kwargs)


def test_predict_proba_not_callable():
    with pytest.raises(ValueError, match="`predict_proba` must be callable"):
        certify("model", X, GROUPS, XBAR)


def test_float32_probabilities_are_accepted():
    cs32 = certify(lambda Z: F(Z).astype(np.float32), X, GROUPS, XBAR)
    cs64 = certify(F, X, GROUPS, XBAR)
    np.testing.assert_array_equal(cs32.table["pred"], cs64.table["pred"])
    np.testing.assert_allclose(cs32.table["margin"], cs64.table["margin"], rtol=1e-5)


def test_model_failing_only_on_stressed_inputs_is_reported_with_the_rows():
    # Probabilities are fine on the data and the probe, NaN once g1 alone sits at the baseline.
    def fragile(Z):
        P = F(Z)
        at_baseline = np.isclose(Z[:, GROUPS["g1"]], XBAR[GROUPS["g1"]]).all(axis=1)
        at_baseline &= ~np.isclose(Z[:, GROUPS["g0"]], XBAR[GROUPS["g0"]]).all(axis=1)
        P[at_baseline] = np.nan
        return P

    with pytest.raises(ValueError, match=r"on the stressed inputs of rows 0..5 of X .*non-finite probability nan"):
        certify(fragile, X, GROUPS, XBAR)


def test_missing_values_in_a_nullable_dataframe_are_reported():
    import pandas as pd

    df = pd.DataFrame(X).astype("Float64")
    df.iloc[4, 3] = pd.NA
    with pytest.raises(ValueError, match=r"`X` must be finite; found nan at row 4, column 3"):
        certify(F, df, GROUPS, XBAR)
