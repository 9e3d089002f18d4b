"""The view steps the pages call instead of the engines: each equals the engine call it wraps
(computed independently here), and mutes only what the page shows as "undefined"."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from core.cfc.protocol import Protocol
from core.cfc.search import flip_search
from core.paired.bounds import identified_intervals
from core.paired.coverage_grid import coverage_grid
from core.paired.policies import LAMBDAS
from core.paired.records import unpair
from core.paired.states import five_state_counts
from core.views.audit_inputs import protocol_from_form
from core.views.bounds import (
    cell_intervals,
    computed_grid,
    development_thresholds_of,
    five_state_table,
    unpaired_cell_intervals,
    unpaired_threshold,
)
from core.views.calibration import ece_verdict
from core.views.tabular import flip_count_text, sample_flip_search

_FORM = dict(
    grouping="redundancy_merged",
    baseline="mean",
    operators=["attenuate_single"],
    weights=(0.5, 1.0, 0.0),
    path="adaptive",
    merge_threshold=0.7,
)


@pytest.mark.parametrize(("depth", "expected"), [("auto", None), (3, 3), ("2", 2)], ids=["auto", "int", "text"])
def test_protocol_from_form_is_the_protocol_typed(depth, expected):
    got = protocol_from_form(depth=depth, severities="0.25, 0.5,1", **_FORM)
    assert got == Protocol(depth=expected, severities=(0.25, 0.5, 1.0), **{**_FORM, "operators": ("attenuate_single",)})


def test_protocol_from_form_refuses_a_bad_grid_with_its_value():
    with pytest.raises(ValueError, match="severities"):
        protocol_from_form(depth="auto", severities="0.5, lots", **_FORM)


def test_five_state_table_is_the_engine_counts_and_their_total(records):
    cell = records[
        (records["model"] == records["model"].iloc[0]) & (records["condition"] == records["condition"].iloc[0])
    ]
    table = five_state_table(cell, 0.6)
    counts = five_state_counts(cell, 0.6)
    pd.testing.assert_frame_equal(
        table.iloc[:-1].reset_index(drop=True), counts[table.columns].astype(table.dtypes.to_dict())
    )
    total = table.iloc[-1]
    assert total["true_label"] == "all"
    for column in ("n", "h", "r", "s", "w", "k", "u", "v", "t"):
        assert total[column] == counts[column].sum()
    assert total["n"] == len(cell)


def test_grid_and_intervals_equal_the_engine_and_warn_nothing(records):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected_fixed = coverage_grid(records, tau=0.7)
        expected = coverage_grid(records, 0.8, thresholds=development_thresholds_of(records))
        cell = records[records["condition"] == records["condition"].iloc[0]]
        expected_cell = identified_intervals(cell[cell["model"] == cell["model"].iloc[0]], 0.99)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an undefined target is shown as NaN, never warned
        pd.testing.assert_frame_equal(computed_grid(records, 0.8, fixed_tau=0.7), expected_fixed)
        pd.testing.assert_frame_equal(
            computed_grid(records, 0.8, thresholds=development_thresholds_of(records)), expected
        )
        pd.testing.assert_frame_equal(cell_intervals(cell[cell["model"] == cell["model"].iloc[0]], 0.99), expected_cell)


def test_unpaired_threshold_accepts_the_top_share_of_the_clean_table(records):
    unpaired = unpair(
        records[(records["model"] == records["model"].iloc[0]) & (records["condition"] == records["condition"].iloc[0])]
    )
    scores = np.sort(unpaired.clean["max_prob"].to_numpy())[::-1]
    for q in (0.6, 0.8, 1.0):
        k = int(np.floor(q * len(scores) + 0.5))  # round half up: SPEC B.3's rank
        assert unpaired_threshold(unpaired, q) == scores[k - 1]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        unpaired_cell_intervals(unpaired, 0.99)


def test_ece_verdict_names_the_lowest_and_says_when_bats_is_plain_temperature():
    labels = {"uncalibrated": "uncalibrated", "temperature": "global temperature", "bats": "BATS"}
    ece = {"uncalibrated": 0.07, "temperature": 0.04, "bats": 0.05}
    assert ece_verdict(ece, labels=labels, bats_eta=0.5) == (
        "**global temperature** has the lowest ECE (0.0400); then BATS 0.0500, uncalibrated 0.0700."
    )
    assert ece_verdict(ece, labels=labels, bats_eta=0.0).endswith(
        "BATS chose η = 0 here, which is plain global temperature scaling."
    )


def test_sample_flip_search_is_the_engine_search_of_that_row(small_audit):
    r = small_audit
    got = sample_flip_search(r, 3)
    expected = flip_search(r.model.predict_proba, r.X_test[3:4], r.groups, r.baseline, r.protocol, method="both")
    assert len(got) == 1
    np.testing.assert_array_equal(got.k_exact, expected.k_exact)
    np.testing.assert_array_equal(got.k_beam, expected.k_beam)
    depth = r.protocol.depth or 5
    assert flip_count_text(float(got.k_exact[0]), depth=depth) in {
        *map(str, range(1, depth + 1)),
        f"no flip ≤ {depth}",
        "undecided (cap)",
    }


def test_lambdas_are_the_engines():
    from core.views.bounds import LAMBDAS as shown

    assert shown is LAMBDAS
