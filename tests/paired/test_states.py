"""Five-state counts, targets and coverage thresholds (SPEC B.1) against hand-computed values."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from paired_records import cell as _cell
from paired_records import cell_from_arrays

from core.paired import (
    UndefinedTargetWarning,
    coverage_threshold,
    development_thresholds,
    five_state_counts,
    paired_targets,
    variance_ratios,
)

# One record per state in class 0, plus a second class; τ = 0.5.
ROWS = [
    (1, 0, 0, 0.9, 0.9, 1, 0.7, 0.2),  # h: accepted correct → accepted error
    (2, 0, 2, 0.6, 0.3, 0, 0.4, 0.4),  # r
    (3, 0, 2, 0.8, 0.1, 2, 0.5, 0.2),  # s (same wrong label)
    (4, 0, 1, 0.7, 0.2, 3, 0.9, 0.05),  # w (changed wrong label)
    (5, 0, 0, 0.8, 0.8, 0, 0.45, 0.45),  # k, loses acceptance
    (6, 1, 1, 0.6, 0.6, 1, 0.9, 0.9),  # k, gains confidence
]


def test_five_state_counts_by_hand():
    counts = five_state_counts(_cell(ROWS), tau=0.5).set_index("true_label")
    c0 = counts.loc[0]
    assert [c0[s] for s in ("n", "a", "b", "h", "r", "s", "w", "k")] == [5, 2, 2, 1, 1, 1, 1, 1]
    # u: clean correct & accepted (ids 1, 5); v: perturbed correct & rejected (ids 2, 5); t: wrong & accepted (1, 3, 4)
    assert (c0["u"], c0["v"], c0["t"]) == (2, 2, 3)
    assert counts.loc[1, ["n", "k", "u", "v", "t"]].tolist() == [1, 1, 1, 0, 0]


def test_paired_targets_by_hand():
    t = paired_targets(_cell(ROWS), 0.5).iloc[0]
    assert t.N == 6 and t.K == 2
    assert (t.h, t.r, t.s, t.w, t.k) == pytest.approx((1 / 6, 1 / 6, 1 / 6, 1 / 6, 2 / 6))
    assert t.a0 == pytest.approx(3 / 6) and t.a1 == pytest.approx(3 / 6) and t.F == pytest.approx(3 / 6)
    assert t.H == pytest.approx(1 / 6)  # id 1
    assert t.L == pytest.approx(1 / 6)  # id 5
    assert t.E_tau == pytest.approx(3 / 6)  # ids 1, 3, 4
    assert t.dM_k == pytest.approx(((0.8 - 0.45) + (0.6 - 0.9)) / 2)
    assert t.ds_s == pytest.approx(0.8 - 0.5) and t.ds_w == pytest.approx(0.7 - 0.9)
    S = np.array([r[3] for r in ROWS])
    S2 = np.array([r[6] for r in ROWS])
    assert t.A == pytest.approx(np.abs(S - S2).mean())
    assert t.Q == pytest.approx(np.corrcoef(S, S2)[0, 1])


def test_undefined_targets_are_nan_with_a_warning():
    rows = [(1, 0, 1, 0.5, 0.2, 1, 0.5, 0.2), (2, 0, 1, 0.5, 0.2, 1, 0.5, 0.2)]
    with pytest.warns(UndefinedTargetWarning, match="dM_k"):
        t = paired_targets(_cell(rows), 0.5).iloc[0]
    assert np.isnan(t.dM_k) and np.isnan(t.ds_w) and np.isnan(t.Q)
    assert t.ds_s == pytest.approx(0.0)


def test_the_undefined_targets_warning_is_in_plain_words():
    rows = [(1, 0, 1, 0.5, 0.2, 1, 0.5, 0.2), (2, 0, 1, 0.5, 0.2, 1, 0.5, 0.2)]
    with pytest.warns(UndefinedTargetWarning) as caught:
        paired_targets(pd.concat([_cell(rows, condition="a"), _cell(rows, condition="b")]), 0.5)
    [message] = {str(w.message) for w in caught}
    assert message == (
        "some targets have no value, left empty: dM_k in 2 cells (no pair is correct on both sides); "
        "ds_w in 2 cells (no pair is wrong on both sides with two different labels); Q in 2 cells (the clean "
        "or the perturbed confidence is the same for every pair)."
    )
    assert "NaN" not in message and "{" not in message


def test_section_3_1_targets_under_both_pairings():
    lose = [(1, 0, 0, 0.9, 0.9, 0, 0.6, 0.6), (2, 0, 0, 0.6, 0.6, 1, 0.8, 0.2)]
    err = [(1, 0, 0, 0.9, 0.9, 1, 0.8, 0.2), (2, 0, 0, 0.6, 0.6, 0, 0.6, 0.6)]
    with pytest.warns(UndefinedTargetWarning):
        both = paired_targets(pd.concat([_cell(lose, condition="lose"), _cell(err, condition="err")]), 0.8).set_index(
            "condition"
        )
    assert both.loc["lose", ["H", "L", "dM_k"]].tolist() == pytest.approx([0, 0.5, 0.3])
    assert both.loc["err", ["H", "L", "dM_k"]].tolist() == pytest.approx([0.5, 0, 0])


def test_variance_ratio_against_numpy():
    rng = np.random.default_rng(0)
    n = 50
    y = rng.integers(0, 3, n)
    cp = np.where(rng.random(n) < 0.8, y, 5)
    pp = np.where(rng.random(n) < 0.5, y, 5)
    cs, ps = rng.uniform(0.4, 1, n), rng.uniform(0.4, 1, n)
    cm, pm = np.where(cp == y, cs, cs / 2), np.where(pp == y, ps, ps / 2)
    cell = cell_from_arrays(y, cp, cs, cm, pp, ps, pm)
    out = variance_ratios(cell).iloc[0]
    for name, x, x2 in (("C", (cp == y) * 1.0, (pp == y) * 1.0), ("S", cs, ps), ("M", cm, pm)):
        assert out[f"ratio_{name}"] == pytest.approx(np.var(x - x2) / (np.var(x) + np.var(x2)))


# ---------------------------------------------------------------------------------------------
# Coverage thresholds


@pytest.mark.parametrize(
    "scores, q, expected",
    [
        ([0.9, 0.8, 0.8, 0.6, 0.3], 0.6, 0.8),  # rank 3
        ([0.9, 0.8, 0.8, 0.6, 0.3], 0.7, 0.6),  # rank round(3.5) = 4, half up
        ([0.9, 0.8, 0.8, 0.6, 0.3], 0.5, 0.8),  # rank round(2.5) = 3
        ([0.9, 0.8, 0.8, 0.6, 0.3], 1.0, 0.3),
        ([0.9, 0.8], 0.1, 0.9),  # rank round(0.2) = 0 → at least 1
    ],
    ids=["exact", "half-up", "half-up-tie", "full", "rank-floor"],
)
def test_coverage_threshold(scores, q, expected):
    assert coverage_threshold(scores, q) == expected


@settings(max_examples=100)
@given(
    scores=st.lists(st.sampled_from([0.2, 0.5, 0.5, 0.7, 0.9, 1.0]), min_size=1, max_size=30),
    q=st.sampled_from([0.6, 0.7, 0.8, 0.9, 1.0]),
)
def test_ties_are_accepted_so_coverage_is_reached(scores, q):
    tau = coverage_threshold(scores, q)
    accepted = np.mean(np.asarray(scores) >= tau)
    assert accepted >= np.floor(q * len(scores) + 0.5) / len(scores) - 1e-12
    assert tau in scores


def test_bad_coverage_and_scores_are_rejected():
    with pytest.raises(ValueError, match=r"`coverage` must be in \(0, 1\]; got 0"):
        coverage_threshold([0.5], 0)
    with pytest.raises(ValueError, match="`scores` is empty"):
        coverage_threshold([], 0.8)


def _with_split(rows, split, condition="c"):
    return _cell(rows, condition=condition).assign(split=split)


def test_a_models_thresholds_depend_on_its_own_records_only():
    """Paired bounds computes the shown model's thresholds from its records alone."""
    from core.imaging.demo import load_demo_pool

    records = load_demo_pool().records
    every = development_thresholds(records, [0.6, 0.8, 1.0])
    for model in records["model"].unique()[:3]:
        alone = development_thresholds(records[records["model"] == model], [0.6, 0.8, 1.0])
        pd.testing.assert_frame_equal(alone, every[every["model"] == model].reset_index(drop=True))


def test_development_thresholds_deduplicate_and_check_clean_records():
    dev = [(i, 0, 0, s, s, 0, 0.5, 0.5) for i, s in enumerate([0.9, 0.8, 0.7, 0.6, 0.5])]
    records = pd.concat(
        [
            _with_split(dev, "dev", "blur"),
            _with_split(dev, "dev", "fog"),
            _with_split([(9, 0, 0, 0.99, 0.99, 0, 0.5, 0.5)], "eval"),
        ]
    )
    th = development_thresholds(records, [0.6, 0.8])
    assert th["tau"].tolist() == [0.7, 0.6] and th["n_dev"].tolist() == [5, 5] and set(th["scope"]) == {"dev"}
    no_split = development_thresholds(_cell(dev), [1.0])
    assert no_split["scope"].tolist() == ["all"] and no_split["tau"].tolist() == [0.5]
    clash = records.copy()
    clash.loc[(clash["condition"] == "fog") & (clash["record_id"] == 2), ["clean_max_prob", "clean_true_prob"]] = 0.75
    with pytest.raises(ValueError, match=r"model 'm', record_id 2: the clean maximum probability differs"):
        development_thresholds(clash, [0.8])
