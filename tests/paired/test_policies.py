"""Policy comparisons (SPEC B.3) against brute-force enumeration of every correspondence."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from _pairs_bruteforce import LEVELS, cell_outcomes
from _pairs_strategies import PROB_GRID, five_state_cell, small_cell
from hypothesis import given, settings
from hypothesis import strategies as st
from paired_records import cell, cell_from_arrays

from core.paired import UndefinedTargetWarning, evaluate_policies, policy_thresholds, select_policy
from core.paired.policies import _lemma1
from core.paired.records import PAIRED_COLUMNS

TOL = 1e-12
LAMS = (0.0, 0.3, 0.5, 1.0)


def _thresholds(taus, tau_clean, model="m"):
    return pd.DataFrame(
        {
            "model": model,
            "policy": range(len(taus)),
            "coverage": [0.6, 0.7, 0.8, 0.9, 1.0][: len(taus)],
            "tau": taus,
            "tau_clean": tau_clean,
        }
    )


def _brute(cell, taus, tau_clean, lam):
    """Every policy quantity by enumeration, per level: dict level -> dict of arrays."""
    classes = cell_outcomes(cell, tau_clean, tau_clean, taus)
    N = sum(c.n for c in classes)
    P = len(taus)
    E = np.array([((cell.pert_pred != cell.true_label) & (cell.pert_max_prob >= t)).sum() / N for t in taus])
    out = {}
    for level in LEVELS:
        J_lo = np.zeros(P)
        J_hi = np.zeros(P)
        J_mean = np.zeros(P)
        Jp_lo = lam * E.copy()
        Jp_hi = lam * E.copy()
        D = np.zeros((P, P))
        Dp = lam * (E[:, None] - E[None, :])
        for c in classes:
            m = c.mask(level)
            cost = lam * c.cost_h[m] + (1 - lam) * c.cost_l[m]  # (n_perm, P)
            J_lo += cost.min(axis=0) / N
            J_hi += cost.max(axis=0) / N
            J_mean += cost.mean(axis=0) / N
            Jp_lo += (1 - lam) * c.cost_l[m].min(axis=0) / N
            Jp_hi += (1 - lam) * c.cost_l[m].max(axis=0) / N
            D += (cost[:, :, None] - cost[:, None, :]).max(axis=0) / N
            lp = (1 - lam) * c.cost_l[m]
            Dp += (lp[:, :, None] - lp[:, None, :]).max(axis=0) / N
        observed = sum(lam * c.cost_h[0] + (1 - lam) * c.cost_l[0] for c in classes) / N
        out[level] = dict(
            J_low=J_lo, J_high=J_hi, J_mean=J_mean, Jp_low=Jp_lo, Jp_high=Jp_hi, D=D, Dp=Dp, J_observed=observed
        )
    return out


def _report(cell, taus, tau_clean, lams=LAMS):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedTargetWarning)
        return evaluate_policies(cell, thresholds=_thresholds(taus, tau_clean), lambdas=lams)


@st.composite
def policy_case(draw):
    cell = draw(small_cell(max_classes=2, max_size=5))
    taus = sorted(draw(st.lists(st.sampled_from(PROB_GRID), min_size=2, max_size=5)), reverse=True)
    return cell, taus, draw(st.sampled_from(PROB_GRID))


@pytest.mark.slow
@settings(max_examples=100)
@given(case=policy_case())
def test_costs_differences_and_means_match_brute_force(case):
    _check_policies(*case)


@st.composite
def binding_policy_case(draw):
    return draw(five_state_cell()), [0.9, 0.6, 0.45], 0.6


@pytest.mark.slow
@settings(max_examples=60)
@given(case=binding_policy_case())
def test_policies_match_brute_force_where_five_state_counts_bind(case):
    _check_policies(*case)


def _check_policies(cell, taus, tau_clean):
    report = _report(cell, taus, tau_clean)
    P = len(taus)
    costs = dict(tuple(report.costs.sort_values("policy").groupby(["level", "lambda"])))
    diffs = dict(tuple(report.differences.groupby(["level", "lambda"])))
    sels = dict(tuple(report.selection.groupby(["level", "lambda"])))
    for lam in LAMS:
        brute = _brute(cell, taus, tau_clean, lam)
        for level in LEVELS:
            b, c, d = brute[level], costs[level, lam], diffs[level, lam]
            for col in ("J_low", "J_high", "J_mean", "Jp_low", "Jp_high", "J_observed"):
                np.testing.assert_allclose(c[col].to_numpy(), b[col], atol=TOL, err_msg=f"{col} {level} λ={lam}")
            for col, key in (("D_plus", "D"), ("Dp_plus", "Dp")):
                got = np.zeros((P, P))
                got[d.policy, d.versus] = d[col]
                np.testing.assert_allclose(got, b[key], atol=TOL, err_msg=f"{col} {level} λ={lam}")
            sel = sels[level, lam].iloc[0]
            cov = c["coverage"].to_numpy()
            assert sel.minimax_policy == select_policy(b["D"].max(axis=1), cov)
            assert sel.worst_case_regret == pytest.approx(b["D"].max(axis=1).min(), abs=TOL)
            assert sel.mean_policy == select_policy(b["J_mean"], cov)
            assert sel.mean_method == ("closed form" if level != "I5" else "exact")


@settings(max_examples=150)
@given(case=st.one_of(policy_case(), binding_policy_case()), lam=st.sampled_from((0.0, 0.2, 0.5, 0.7, 1.0)))
def test_lemma1_upper_bound_equals_joint_maximum(case, lam):
    """Lemma 1: the separate sharp count intervals with h + l ≤ u give max_π J_j exactly."""
    cell, taus, tau_clean = case
    for c in cell_outcomes(cell, tau_clean, tau_clean, taus):
        for level in LEVELS:
            m = c.mask(level)
            for j in range(len(taus)):
                h, l = c.cost_h[m, j], c.cost_l[m, j]
                joint = (lam * h + (1 - lam) * l).max()
                assert _lemma1(h.min(), h.max(), l.min(), l.max(), c.u, lam) == pytest.approx(joint, abs=TOL)


@settings(max_examples=120)
@given(case=st.one_of(policy_case(), binding_policy_case()), lam=st.sampled_from((0.0, 0.4, 0.5, 1.0)))
def test_corollary1_total_error_cost_gains_nothing_from_five_state_counts(case, lam):
    """Corollary 1, on brute force: J′ intervals and D′⁺ are the same at Ik and I5."""
    cell, taus, tau_clean = case
    brute = _brute(cell, taus, tau_clean, lam)
    for key in ("Jp_low", "Jp_high", "Dp"):
        np.testing.assert_allclose(brute["I5"][key], brute["Ik"][key], atol=TOL)


def _pinned_certificate_cell():
    # Class 0: its only clean record is correct and accepted and meets a correct perturbed record
    # that policy 0 (τ=0.5) accepts and policy 1 (τ=0.8) rejects: J_0 − J_1 = −(1−λ)/N always.
    # Class 1: the correct accepted clean record meets either an error both policies accept or a
    # correct record both accept, moving J_0 and J_1 together.
    rows = [(1, 0, 0, 0.9, 0.9, 0, 0.6, 0.6), (2, 1, 1, 0.9, 0.9, 1, 0.9, 0.9), (3, 1, 2, 0.9, 0.1, 2, 0.9, 0.05)]
    return cell(rows)


def test_shared_correspondence_certifies_what_separate_intervals_miss():
    report = evaluate_policies(_pinned_certificate_cell(), thresholds=_thresholds([0.5, 0.8], 0.5), lambdas=(0.5,))
    d = report.differences.set_index(["level", "policy", "versus"])
    row = d.loc[("I0", 0, 1)]
    assert row.D_plus == pytest.approx(-0.5 / 3, abs=TOL)
    assert row.separate_gap == pytest.approx(0.0, abs=TOL)
    assert row.certified and not row.certified_separately and row.missed_by_separate
    assert not row.mixed_switch  # only a correct record switches acceptance
    # With the observed k the separate intervals shrink to points and certify it too.
    assert d.loc[("Ik", 0, 1)].certified_separately
    sel = report.selection.set_index("level").loc["I0"]
    assert sel.minimax_policy == 0 and sel.worst_case_regret == pytest.approx(0.0, abs=TOL)


@pytest.mark.parametrize("seed", range(4))
def test_information_nests_costs_and_differences_on_larger_cells(seed):
    rng = np.random.default_rng(seed)
    n = 80
    y = rng.integers(0, 3, n)
    cp = np.where(rng.random(n) < 0.7, y, 3 + rng.integers(0, 3, n))
    pp = np.where(rng.random(n) < 0.5, y, 3 + rng.integers(0, 3, n))
    cs, ps = np.round(rng.uniform(0.3, 1, n), 1), np.round(rng.uniform(0.3, 1, n), 1)
    cell = cell_from_arrays(y, cp, cs, np.where(cp == y, cs, cs / 3), pp, ps, np.where(pp == y, ps, ps / 3))
    report = _report(cell, [0.9, 0.7, 0.5], 0.6, lams=(0.3, 0.5))
    costs = report.costs.set_index(["lambda", "policy", "level"])
    for (lam, pol), part in costs.groupby(level=[0, 1]):
        i0, ik, i5 = (part.xs(lv, level="level").iloc[0] for lv in LEVELS)
        assert i0.J_low <= ik.J_low + TOL <= i5.J_low + 2 * TOL
        assert i5.J_high <= ik.J_high + TOL <= i0.J_high + 2 * TOL
        for lv in (i0, ik, i5):
            assert lv.J_low - TOL <= lv.J_observed <= lv.J_high + TOL
            assert lv.J_low - TOL <= lv.J_mean <= lv.J_high + TOL
    diffs = report.differences.set_index(["lambda", "policy", "versus", "level"])["D_plus"].unstack("level")
    assert (diffs["I5"] <= diffs["Ik"] + TOL).all() and (diffs["Ik"] <= diffs["I0"] + TOL).all()
    np.testing.assert_allclose(
        report.differences.query("level == 'I5'")["Dp_plus"],
        report.differences.query("level == 'Ik'")["Dp_plus"],
        atol=TOL,
    )


def test_i5_feasible_mean_estimate_is_labelled_seeded_and_close_to_exact():
    rng = np.random.default_rng(7)
    n = 14
    y = np.zeros(n, dtype=int)
    cp = np.where(rng.random(n) < 0.4, 0, 1 + rng.integers(0, 3, n))
    pp = np.where(rng.random(n) < 0.3, 0, 1 + rng.integers(0, 3, n))
    cs, ps = np.round(rng.uniform(0.4, 1, n), 1), np.round(rng.uniform(0.4, 1, n), 1)
    cell = cell_from_arrays(y, cp, cs, np.where(cp == 0, cs, 0.0), pp, ps, np.where(pp == 0, ps, 0.0))
    th = _thresholds([0.9, 0.7, 0.5], 0.5)
    exact = evaluate_policies(cell, thresholds=th, lambdas=(1.0,), levels=("I5",))
    est1 = evaluate_policies(cell, thresholds=th, lambdas=(1.0,), levels=("I5",), max_placements=1, seed=3)
    est2 = evaluate_policies(cell, thresholds=th, lambdas=(1.0,), levels=("I5",), max_placements=1, seed=3)
    assert set(exact.costs.mean_method) == {"exact"} and set(est1.costs.mean_method) == {"estimate"}
    pd.testing.assert_frame_equal(est1.costs, est2.costs)
    np.testing.assert_allclose(est1.costs.J_mean, exact.costs.J_mean, atol=0.01)


# ---------------------------------------------------------------------------------------------
# Thresholds and selection rule


def test_policy_thresholds_from_development_coverage():
    dev_scores = [0.95, 0.9, 0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2]
    rows = [("m", "c", "s", i, 0, 0, sc, sc, 0, 0.5, 0.5, "dev") for i, sc in enumerate(dev_scores)]
    rows += [("m", "c", "s", 100, 0, 0, 0.99, 0.99, 0, 0.5, 0.5, "eval")]
    rec = pd.DataFrame(
        rows,
        columns=[*PAIRED_COLUMNS, "split"],
    )
    th = policy_thresholds(rec)
    # rank round(q·10): 6, 7, 8, 9, 10 → 0.6, 0.5, 0.4, 0.3, 0.2; clean (0.8): rank 8 → 0.4
    assert th["tau"].tolist() == [0.6, 0.5, 0.4, 0.3, 0.2]
    assert (th["tau_clean"] == 0.4).all() and (th["n_dev"] == 10).all() and (th["scope"] == "dev").all()


@pytest.mark.parametrize(
    "values, expected",
    [
        ([0.3, 0.1, 0.2, 0.4, 0.5], 1),
        ([0.1, 0.1, 0.1, 0.1, 0.1], 2),  # all tied: coverage .8
        ([0.1, 0.2, 0.3, 0.1, 0.1 + 5e-13], 3),  # .9 and 1.0 tie with .6; .9 is closest to .8... then lower
        ([0.1, 0.2, 0.3, 0.4, 0.1], 0),  # .6 vs 1.0: both .2 from .8 → lower coverage
    ],
    ids=["unique-min", "all-tied", "closest-to-nominal", "equidistant-lower"],
)
def test_select_policy_tie_rule(values, expected):
    assert select_policy(values, [0.6, 0.7, 0.8, 0.9, 1.0]) == expected


def test_bad_policy_arguments_are_rejected():
    cell = _pinned_certificate_cell()
    with pytest.raises(ValueError, match="`lambdas` must be"):
        evaluate_policies(cell, thresholds=_thresholds([0.5, 0.8], 0.5), lambdas=(1.5,))
    with pytest.raises(ValueError, match="`thresholds` lacks column"):
        evaluate_policies(cell, thresholds=_thresholds([0.5, 0.8], 0.5).drop(columns="tau_clean"))
    with pytest.raises(ValueError, match="no row for model 'm'"):
        evaluate_policies(cell, thresholds=_thresholds([0.5, 0.8], 0.5, model="other"))
    with pytest.raises(ValueError, match="`n_draws` must be a positive integer; got 0"):
        evaluate_policies(cell, thresholds=_thresholds([0.5, 0.8], 0.5), n_draws=0)
    with pytest.raises(ValueError, match="`coverages` must be distinct"):
        policy_thresholds(cell, coverages=(0.8, 0.8))
