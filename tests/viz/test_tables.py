"""Table text as people read it (``core.viz.tables``): column labels, ∞ and whole seconds, and k*
as "no flip ≤ K", never K + 1 (with the views' ``flip_budget_shown``, which writes it)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.views.tabular import flip_budget_shown
from core.viz.tables import column_label, display_values, flip_budget_text, flip_budget_texts


@pytest.mark.parametrize(
    ("name", "label"),
    [
        ("flip_budget", "k*"),
        ("mean_rcma", "mean RCMA"),
        ("share_k_le_2", "share k* ≤ 2"),
        ("lambda_star_attenuate_single", "λ* attenuate_single"),
        ("true_label", "true label"),
        ("average_precision", "AP"),
        ("macro_f1", "macro-F1"),
        ("dM_k", "dM_k"),
        ("J_low", "J_low"),
        ("D_plus", "D⁺"),
        ("model", "model"),
        ("capture@20", "capture @ 20"),
        ("n_failed", "n failed"),
    ],
)
def test_column_labels(name, label):
    assert column_label(name) == label


def test_display_values_writes_infinity_and_whole_seconds():
    frame = pd.DataFrame(
        {
            "lambda_star_attenuate_all": [0.3, np.inf, np.nan],
            "rcma": [1.0, 2.5, 3.0],
            "created_at": ["2026-12-01T20:03:11.123456+00:00", "2026-12-01T22:03:11.5+02:00", None],
            "when": pd.to_datetime(["2026-01-02 03:04:05.678901", None, "2026-01-02 03:04:06"], format="ISO8601"),
        }
    )
    shown = display_values(frame)
    assert shown["lambda_star_attenuate_all"].tolist() == ["0.3", "∞", None]
    assert shown["rcma"].tolist() == [1.0, 2.5, 3.0] and shown["rcma"].dtype.kind == "f"  # untouched
    assert shown["created_at"].tolist() == ["2026-12-01 20:03:11", "2026-12-01 20:03:11", None]
    assert shown["when"].tolist() == ["2026-01-02 03:04:05", None, "2026-01-02 03:04:06"]
    assert frame["lambda_star_attenuate_all"].iloc[1] == np.inf  # the input is not modified


@given(
    st.lists(
        st.one_of(st.floats(allow_nan=False, allow_infinity=False, width=32), st.sampled_from([math.inf, -math.inf])),
        min_size=1,
        max_size=20,
    )
)
def test_display_values_round_trips_every_finite_value_to_four_digits(values):
    shown = display_values(pd.DataFrame({"v": values}))["v"].tolist()
    for raw, text in zip(values, shown):
        if math.isinf(raw):
            assert text == ("∞" if raw > 0 else "−∞")
        elif any(math.isinf(v) for v in values):
            assert float(text) == pytest.approx(raw, rel=5e-4, abs=1e-300)
        else:
            assert text == raw


def test_flip_budget_text_says_no_flip_within_depth():
    assert flip_budget_text(6, 5) == "no flip ≤ 5"  # before: "6" under a "> 5" header, then "> 5"
    assert flip_budget_text(5, 5) == "5"
    with pytest.raises(ValueError, match=r"between 1 and depth \+ 1 \(6\); got 7"):
        flip_budget_text(7, 5)


def test_flip_budget_texts_read_the_flipped_column():
    got = flip_budget_texts(np.array([1, 5, 6, 6]), np.array([True, True, False, False]), depth=5)
    assert got.tolist() == ["1", "5", "no flip ≤ 5", "no flip ≤ 5"]
    with pytest.raises(ValueError, match=r"row 1: k\* = 6, flipped = True \(depth 5\)"):
        flip_budget_texts([2, 6], [True, True], depth=5)
    with pytest.raises(ValueError, match="1-D of one length"):
        flip_budget_texts([2, 6], [True], depth=5)


def test_flip_budget_shown_never_writes_k_plus_one():
    frame = pd.DataFrame({"sample_id": [1, 2, 3], "flip_budget": [3, 4, 4], "flipped": [True, False, False]})
    shown = flip_budget_shown(frame, depth=3)
    assert shown["flip_budget"].tolist() == ["3", "no flip ≤ 3", "no flip ≤ 3"]
    assert "flipped" not in shown and "flipped" in frame  # a copy
    # a table written before the flipped column existed: derived from k* <= K
    old = flip_budget_shown(frame.drop(columns="flipped"), depth=3)
    assert old["flip_budget"].tolist() == ["3", "no flip ≤ 3", "no flip ≤ 3"]
    assert flip_budget_shown(frame[["sample_id"]], depth=3).equals(frame[["sample_id"]])
