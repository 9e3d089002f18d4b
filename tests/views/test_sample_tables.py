"""The tables of one sample (``core.views.tabular``) on hand-made inputs: the removal steps, the
path's evidence with its raw values and baseline, and the raw values rounded as people read them."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.views.tabular import path_evidence_table, raw_values_table, removal_steps_table


def test_removal_steps_table_on_a_hand_made_certificate():
    cert = SimpleNamespace(
        path=("b", "a"),
        pred=1,
        preds=np.array([1, 1, 0]),
        proba=np.array([[0.1, 0.9], [0.35, 0.65], [0.61234, 0.38766]]),
        path_margins=np.array([2.19722, 0.61904, -0.45676]),
    )
    t = removal_steps_table(cert, ["no", "yes"])
    assert list(t.columns) == ["step", "group removed", "prediction", "P(yes)", "margin", "flipped"]
    assert t["group removed"].tolist() == ["none (intact)", "b", "a"]
    assert t["prediction"].tolist() == ["yes", "yes", "no"]
    assert t["P(yes)"].tolist() == [0.9, 0.65, 0.388]
    assert t["margin"].tolist() == [2.197, 0.619, -0.457]
    assert t["flipped"].tolist() == ["no", "no", "yes"]
    with pytest.raises(ValueError, match="2 path groups but 2 steps"):
        removal_steps_table(
            SimpleNamespace(
                path=("b", "a"), pred=0, preds=np.array([0, 0]), proba=np.ones((2, 2)) / 2, path_margins=np.zeros(2)
            ),
            ["no", "yes"],
        )


def test_path_evidence_table_lists_path_groups_in_order_with_their_baseline():
    groups = {"age": [0], "colour": [1, 2], "income": [3]}
    x = np.array([0.5, 1.0, 0.0, -1.23456])
    baseline = np.array([0.0, 0.25, 0.75, 0.1])
    raw = pd.Series({"age": 41, "colour": "red", "income": 52345.678912, "target": "good"})
    t = path_evidence_table(
        x,
        baseline,
        groups,
        ["income", "colour"],
        feature_names=["age", "colour_red", "colour_blue", "income"],
        origins=["age", "colour", "colour", "income"],
        raw_row=raw,
    )
    assert t.to_dict("records") == [
        {
            "step": 1,
            "group": "income",
            "raw column": "income",
            "raw value": "52345.679",
            "feature": "income",
            "value": -1.235,
            "baseline": 0.1,
        },
        {
            "step": 2,
            "group": "colour",
            "raw column": "colour",
            "raw value": "red",
            "feature": "colour_red",
            "value": 1.0,
            "baseline": 0.25,
        },
        {
            "step": 2,
            "group": "colour",
            "raw column": "colour",
            "raw value": "red",
            "feature": "colour_blue",
            "value": 0.0,
            "baseline": 0.75,
        },
    ]
    raw_missing = pd.Series({"age": np.nan})
    t = path_evidence_table(
        x,
        baseline,
        groups,
        ["age"],
        feature_names=["a", "b", "c", "d"],
        origins=["age", "colour", "colour", "income"],
        raw_row=raw_missing,
    )
    assert t["raw value"].tolist() == ["missing"]
    with pytest.raises(ValueError, match=r"not in `groups`: \['zip'\]"):
        path_evidence_table(
            x,
            baseline,
            groups,
            ["zip"],
            feature_names=["a", "b", "c", "d"],
            origins=["age", "colour", "colour", "income"],
            raw_row=raw,
        )
    with pytest.raises(ValueError, match="`x` has 4 features but `baseline` has 3"):
        path_evidence_table(
            x,
            baseline[:3],
            groups,
            [],
            feature_names=["a", "b", "c", "d"],
            origins=["age", "colour", "colour", "income"],
            raw_row=raw,
        )


@settings(max_examples=40, deadline=None)
@given(sizes=st.lists(st.integers(1, 3), min_size=1, max_size=5), data=st.data())
def test_path_evidence_table_has_one_row_per_column_of_each_path_group(sizes, data):
    d = sum(sizes)
    names = [f"g{i}" for i in range(len(sizes))]
    bounds = np.cumsum([0, *sizes])
    groups = {n: list(range(bounds[i], bounds[i + 1])) for i, n in enumerate(names)}
    path = data.draw(st.permutations(names))[: data.draw(st.integers(0, len(names)))]
    x = np.arange(d, dtype=float) / 7
    baseline = -np.arange(d, dtype=float) / 3
    origins = [n for n in names for _ in groups[n]]
    t = path_evidence_table(
        x,
        baseline,
        groups,
        path,
        feature_names=[f"f{j}" for j in range(d)],
        origins=origins,
        raw_row=pd.Series({n: i for i, n in enumerate(names)}),
    )
    cols = [c for g in path for c in groups[g]]
    assert len(t) == len(cols)
    assert t["feature"].tolist() == [f"f{c}" for c in cols]
    assert t["step"].tolist() == [path.index(g) + 1 for g in path for _ in groups[g]]
    np.testing.assert_array_equal(t["baseline"].to_numpy(float), np.round(baseline[cols], 3))
    assert t["raw value"].tolist() == [str(names.index(g)) for g in path for _ in groups[g]]


def test_raw_values_are_rounded_and_missing_stays_missing():
    row = pd.Series({"a": 0.123456789012345, "b": 3, "c": None, "d": "text", "e": 2.5e-7, "f": -1234.56789})
    groups, origins = {"A": [0], "B": [1], "C": [2], "D": [3], "E": [4], "F": [5]}, ["a", "b", "c", "d", "e", "f"]
    table = raw_values_table(row, groups, origins)
    values = table["value"].tolist()
    assert pd.isna(values[2])
    assert values[:2] + values[3:] == ["0.123", "3", "text", "0", "-1234.568"]
