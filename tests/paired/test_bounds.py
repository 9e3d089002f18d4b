"""Identified intervals (SPEC B.2) against brute-force enumeration and the SPEC reference values."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pandas as pd
import pytest
from _pairs_bruteforce import brute_intervals
from _pairs_strategies import TAU_GRID, five_state_cell, small_cell
from hypothesis import given, settings
from hypothesis import strategies as st
from paired_records import cell as _cell
from paired_records import cell_from_arrays

from core.paired import (
    UndefinedTargetWarning,
    accuracy_only_k,
    identified_intervals,
    identified_intervals_grid,
    unpair,
    unpaired_intervals,
    validate_unpaired,
)
from core.paired._fivestate import _enumerate, _solve, flip_endpoint_range, placement_is_feasible

TOL = 1e-12


def _as_dict(frame: pd.DataFrame) -> dict:
    return {(r.target, r.level): (r.low, r.high, r.observed) for r in frame.itertuples()}


def _quiet(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedTargetWarning)
        return fn(*args, **kwargs)


# ---------------------------------------------------------------------------------------------
# SPEC reference values

# Paper 001 §3.1: class 0 vs alternative class 1; clean (0.9, 0.1), (0.6, 0.4); perturbed
# (0.6, 0.4), (0.2, 0.8); τ = 0.8.
LOSE_ACCEPTANCE = [(1, 0, 0, 0.9, 0.9, 0, 0.6, 0.6), (2, 0, 0, 0.6, 0.6, 1, 0.8, 0.2)]
ACCEPTED_ERROR = [(1, 0, 0, 0.9, 0.9, 1, 0.8, 0.2), (2, 0, 0, 0.6, 0.6, 0, 0.6, 0.6)]


@pytest.mark.parametrize(
    "rows, expected",
    [(LOSE_ACCEPTANCE, (0.0, 0.5, 0.3)), (ACCEPTED_ERROR, (0.5, 0.0, 0.0))],
    ids=["loses-acceptance", "accepted-error"],
)
def test_section_3_1_observed_values_and_i0_contains_both(rows, expected):
    got = _as_dict(identified_intervals(_cell(rows), 0.8))
    for target, value in zip(("H", "L", "dM_k"), expected):
        assert got[target, "I0"][2] == pytest.approx(value, abs=TOL)
    # Both pairings have the same five-state counts, so every level must contain both values.
    for level in ("I0", "Ik", "I5"):
        assert got["H", level][:2] == pytest.approx((0.0, 0.5), abs=TOL)
        assert got["L", level][:2] == pytest.approx((0.0, 0.5), abs=TOL)
        assert got["dM_k", level][:2] == pytest.approx((0.0, 0.3), abs=TOL)


# Paper 001 Appendix A.6, Table 5: labels (T, A, B) = (0, 1, 2), τ = 0.6.
CLEAN_T5 = [(0, 0.6, 0.6), (1, 0.8, 0.1), (1, 0.8, 0.1)]


def _table5(persistent: bool, extra_correct: bool = False):
    """Clean T ↔ perturbed A (w = 1) or B (s = 1); optional extra correct pair (k = 1)."""
    pert_for_clean_t = (2, 0.4, 0.3) if persistent else (1, 0.8, 0.1)
    pert_for_clean_a = (1, 0.8, 0.1) if persistent else (2, 0.4, 0.3)
    rows = [
        (1, 0, *CLEAN_T5[0], *pert_for_clean_t),
        (2, 0, *CLEAN_T5[1], *(0, 0.6, 0.6)),
        (3, 0, *CLEAN_T5[2], *pert_for_clean_a),
    ]
    if extra_correct:
        rows.append((4, 0, 0, 0.9, 0.9, 0, 0.9, 0.9))
    return _cell(rows)


@pytest.mark.parametrize("extra_correct, n", [(False, 3), (True, 4)], ids=["k=0", "k=1"])
def test_table5_five_state_counts_narrow_h(extra_correct, n):
    persistent = _as_dict(_quiet(identified_intervals, _table5(True, extra_correct), 0.6))
    changed = _as_dict(_quiet(identified_intervals, _table5(False, extra_correct), 0.6))
    for got in (persistent, changed):
        assert got["H", "Ik"][:2] == pytest.approx((0.0, 1 / n), abs=TOL)
        assert got["H", "I0"][:2] == pytest.approx((0.0, 1 / n), abs=TOL)
    assert persistent["H", "I5"][:2] == pytest.approx((0.0, 0.0), abs=TOL)
    assert changed["H", "I5"][:2] == pytest.approx((1 / n, 1 / n), abs=TOL)


def test_table5_k0_has_undefined_dmk_with_warning():
    with pytest.warns(UndefinedTargetWarning, match="K = 0"):
        got = _as_dict(identified_intervals(_table5(True), 0.6))
    assert np.isnan(got["dM_k", "Ik"][0]) and np.isnan(got["dM_k", "I5"][1]) and np.isnan(got["dM_k", "Ik"][2])
    # At I0 the support is free: one retained pair (T, T) with drop 0.6 − 0.6.
    assert got["dM_k", "I0"][:2] == pytest.approx((0.0, 0.0), abs=TOL)


def test_dmk_undefined_everywhere_when_no_class_can_retain_a_pair():
    # No clean record is correct, so no class can retain a correct pair.
    rows = [(1, 0, 1, 0.5, 0.2, 0, 0.7, 0.7), (2, 0, 1, 0.5, 0.2, 1, 0.6, 0.1)]
    with pytest.warns(UndefinedTargetWarning, match="undefined"):
        got = _as_dict(identified_intervals(_cell(rows), 0.5))
    assert all(np.isnan(got["dM_k", lv][0]) for lv in ("I0", "Ik", "I5"))


# ---------------------------------------------------------------------------------------------
# Brute-force parity


def _check_against_brute(cell: pd.DataFrame, tau: float):
    got = _as_dict(_quiet(identified_intervals, cell, tau))
    expected, observed = brute_intervals(cell, tau)
    for key, (lo, hi) in expected.items():
        g_lo, g_hi, g_obs = got[key]
        if np.isnan(lo):
            assert np.isnan(g_lo) and np.isnan(g_hi), key
            continue
        assert g_lo == pytest.approx(lo, abs=TOL), key
        assert g_hi == pytest.approx(hi, abs=TOL), key
        target = key[0]
        if np.isnan(observed[target]):
            assert np.isnan(g_obs)
        else:
            assert g_obs == pytest.approx(observed[target], abs=TOL)
            assert g_lo - TOL <= g_obs <= g_hi + TOL, key
    for target in ("H", "L", "dM_k"):
        i0, ik, i5 = (got[target, lv] for lv in ("I0", "Ik", "I5"))
        if not np.isnan(ik[0]):
            assert i0[0] - TOL <= ik[0] <= i5[0] + TOL and i5[1] - TOL <= ik[1] <= i0[1] + TOL, target


@pytest.mark.slow
@settings(max_examples=500)
@given(cell=small_cell(), tau=st.sampled_from(TAU_GRID))
def test_every_bound_matches_brute_force_enumeration(cell, tau):
    _check_against_brute(cell, tau)


@pytest.mark.slow
@settings(max_examples=300)
@given(cell=five_state_cell())
def test_five_state_h_bound_matches_brute_force_where_counts_bind(cell):
    # About one cell in six of this strategy has an I5 interval for H narrower than Ik's.
    _check_against_brute(cell, 0.6)


@pytest.mark.parametrize("case", ["ties", "threshold-equality", "zero-overlap", "unequal-classes"])
def test_named_boundary_cases_match_brute_force(case):
    rows = {
        # Identical scores on both sides and in both classes.
        "ties": [
            (1, 0, 0, 0.6, 0.6, 0, 0.6, 0.6),
            (2, 0, 0, 0.6, 0.6, 1, 0.6, 0.2),
            (3, 0, 1, 0.6, 0.2, 0, 0.6, 0.6),
            (4, 1, 1, 0.6, 0.6, 1, 0.6, 0.6),
            (5, 1, 0, 0.6, 0.2, 1, 0.6, 0.6),
        ],
        # Every score equals τ = 0.6: all accepted.
        "threshold-equality": [
            (1, 0, 0, 0.6, 0.6, 2, 0.6, 0.1),
            (2, 0, 2, 0.6, 0.3, 0, 0.6, 0.6),
            (3, 0, 0, 0.6, 0.6, 0, 0.6, 0.6),
            (4, 0, 3, 0.6, 0.1, 3, 0.6, 0.2),
        ],
        # k = 0 in every class.
        "zero-overlap": [
            (1, 0, 0, 0.9, 0.9, 1, 0.7, 0.2),
            (2, 0, 1, 0.8, 0.1, 0, 0.8, 0.8),
            (3, 1, 1, 0.9, 0.9, 2, 0.9, 0.05),
            (4, 1, 2, 0.5, 0.3, 1, 0.5, 0.5),
        ],
        # Classes of 1 and 5 records.
        "unequal-classes": [
            (1, 0, 0, 0.9, 0.9, 0, 0.4, 0.4),
            (2, 1, 1, 0.9, 0.9, 2, 0.8, 0.1),
            (3, 1, 2, 0.7, 0.2, 1, 0.6, 0.6),
            (4, 1, 1, 0.5, 0.5, 3, 0.9, 0.05),
            (5, 1, 3, 0.8, 0.1, 2, 0.5, 0.4),
            (6, 1, 2, 0.6, 0.3, 3, 0.7, 0.2),
        ],
    }[case]
    _check_against_brute(_cell(rows), 0.6)


# ---------------------------------------------------------------------------------------------
# Grid, unpaired input


def test_grid_equals_single_cell_results_cell_by_cell():
    rng = np.random.default_rng(5)
    cells = []
    for m, c in itertools.product(("alpha", "beta"), ("blur", "fog", "noise")):
        n = 40
        y = rng.integers(0, 4, n)
        cp = np.where(rng.random(n) < 0.7, y, rng.integers(0, 6, n))
        pp = np.where(rng.random(n) < 0.5, y, rng.integers(0, 6, n))
        cs = np.round(rng.uniform(0.3, 1.0, n), 2)
        ps = np.round(rng.uniform(0.3, 1.0, n), 2)
        cm = np.where(cp == y, cs, np.round(cs * rng.random(n), 2))
        pm = np.where(pp == y, ps, np.round(ps * rng.random(n), 2))
        cells.append(cell_from_arrays(y, cp, cs, cm, pp, ps, pm, model=m, condition=c, source="synthetic"))
    records = pd.concat(cells[::-1], ignore_index=True)  # deliberately unsorted
    grid = _quiet(identified_intervals_grid, records, 0.7)
    assert len(grid) == 6 * 9
    for cell in cells:
        single = _quiet(identified_intervals, cell, 0.7)
        key = (cell["model"].iloc[0], cell["condition"].iloc[0])
        part = grid[(grid["model"] == key[0]) & (grid["condition"] == key[1])].reset_index(drop=True)
        pd.testing.assert_frame_equal(part[["target", "level", "low", "high", "observed"]], single)


@settings(max_examples=60)
@given(cell=small_cell(), tau=st.sampled_from(TAU_GRID), level=st.sampled_from(["I0", "Ik", "I5"]))
def test_unpaired_input_gives_the_paired_intervals_without_observed(cell, tau, level):
    paired = _quiet(identified_intervals, cell, tau)
    got = _quiet(unpaired_intervals, unpair(cell, level=level), tau)
    levels = ["I0", "Ik", "I5"][: ["I0", "Ik", "I5"].index(level) + 1]
    expected = paired[paired["level"].isin(levels)].reset_index(drop=True)
    pd.testing.assert_frame_equal(got[["target", "level", "low", "high"]], expected[["target", "level", "low", "high"]])
    assert got["observed"].isna().all()


def test_unpaired_tables_in_any_row_order():
    cell = _table5(False, extra_correct=True)
    unpaired = unpair(cell, level="I5")
    shuffled = validate_unpaired(
        unpaired.clean.iloc[::-1], unpaired.perturbed.sample(frac=1, random_state=3), unpaired.counts
    )
    got = _as_dict(_quiet(unpaired_intervals, shuffled, 0.6))
    assert got["H", "I5"][:2] == pytest.approx((0.25, 0.25), abs=TOL)


def test_levels_argument_is_validated():
    with pytest.raises(ValueError, match="`levels` must be a non-empty subset"):
        identified_intervals_grid(_cell(LOSE_ACCEPTANCE), 0.8, levels=["I3"])
    with pytest.raises(ValueError, match="`tau` must be in \\[0, 1\\]; got 1.5"):
        identified_intervals(_cell(LOSE_ACCEPTANCE), 1.5)


def test_single_cell_function_refuses_several_cells():
    two = pd.concat([_cell(LOSE_ACCEPTANCE), _cell(ACCEPTED_ERROR, condition="d")])
    with pytest.raises(ValueError, match="holds 2 cells"):
        identified_intervals(two, 0.8)


# ---------------------------------------------------------------------------------------------
# dM_k at I0 (variable support): Dinkelbach against the paper's bisection


def _bisection_low(cell: pd.DataFrame) -> float:
    """Reference: bisection on r with the oracle min Σ_y (D_y(k) − r·k) < 0 over K > 0 (A.10)."""
    options = []
    for y, part in cell.groupby("true_label"):
        x = np.sort(part.loc[part.clean_pred == y, "clean_true_prob"].to_numpy())
        z = np.sort(part.loc[part.pert_pred == y, "pert_true_prob"].to_numpy())
        n, a, b = len(part), len(x), len(z)
        ks = range(max(0, a + b - n), min(a, b) + 1)
        options.append([(k, x[:k].sum() - (z[b - k :].sum() if k else 0.0)) for k in ks])

    def exists_below(r):
        best = [min(d - r * k for k, d in opts) for opts in options]
        if sum(best) < 0:
            return True
        # All-zero choices cannot give a strict inequality; try forcing k ≥ 1 in one class.
        for i, opts in enumerate(options):
            pos = [d - r * k for k, d in opts if k >= 1]
            if pos and sum(best) - best[i] + min(pos) < 0:
                return True
        return False

    lo, hi = -1.0, 1.0 + 1e-9
    for _ in range(80):
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if exists_below(mid) else (mid, hi)
    return hi


@pytest.mark.parametrize("seed", range(6))
def test_variable_support_dmk_matches_bisection_on_larger_cells(seed):
    rng = np.random.default_rng(seed)
    n = 60
    y = rng.integers(0, 5, n)
    cp = np.where(rng.random(n) < 0.6, y, (y + 1 + rng.integers(0, 3, n)) % 7)
    pp = np.where(rng.random(n) < 0.5, y, (y + 1 + rng.integers(0, 3, n)) % 7)
    cs, ps = rng.uniform(0.3, 1, n), rng.uniform(0.3, 1, n)
    cell = pd.DataFrame(
        {
            "record_id": np.arange(n),
            "true_label": y,
            "clean_pred": cp,
            "clean_max_prob": cs,
            "clean_true_prob": np.where(cp == y, cs, cs * rng.random(n)),
            "pert_pred": pp,
            "pert_max_prob": ps,
            "pert_true_prob": np.where(pp == y, ps, ps * rng.random(n)),
        }
    )
    got = _as_dict(_quiet(identified_intervals, cell, 0.7))
    assert got["dM_k", "I0"][0] == pytest.approx(_bisection_low(cell), abs=1e-9)
    assert got["dM_k", "I0"][0] <= got["dM_k", "Ik"][0] + TOL
    assert got["dM_k", "I0"][1] >= got["dM_k", "Ik"][1] - TOL


# ---------------------------------------------------------------------------------------------
# The five-state placement solver


def _brute_placement(c, d, p, s, w):
    """Does some (q, x) complete placement p? Enumerates q and the wrong–wrong bijections."""
    labels = range(len(c))
    r = sum(c) - s - w
    for q in itertools.product(*[range(ci + 1) for ci in c]):
        if sum(q) != r:
            continue
        rest_c = [lab for lab in labels for _ in range(c[lab] - q[lab])]
        rest_d = [lab for lab in labels for _ in range(d[lab] - p[lab])]
        if len(rest_c) != len(rest_d):
            continue
        for perm in set(itertools.permutations(rest_d)):
            if sum(a == b for a, b in zip(rest_c, perm)) == s:
                return True
    return False


@settings(max_examples=150)
@given(c=st.lists(st.integers(0, 2), min_size=1, max_size=3), data=st.data())
def test_closed_form_placement_check_matches_enumeration(c, data):
    d = data.draw(st.lists(st.integers(0, 2), min_size=len(c), max_size=len(c)))
    p = [data.draw(st.integers(0, di)) for di in d]
    m = sum(d) - sum(p)
    s = data.draw(st.integers(0, m))
    w = m - s
    if sum(c) < m:
        return
    assert placement_is_feasible(c, d, p, s=s, w=w) == _brute_placement(c, d, p, s, w)


def test_solver_handles_instance_that_breaks_highs_presolve():
    # scipy 1.17's HiGHS presolve calls this feasible program infeasible.
    c, d_in, d_out = np.array([3, 3, 1]), np.array([1, 0, 1]), np.array([0, 0, 2])
    assert _solve(c, d_in, d_out, h=0, r=3, s=1, w=3) == (0, 0)


@settings(max_examples=200)
@given(c=st.lists(st.integers(0, 3), min_size=2, max_size=4), data=st.data())
def test_integer_program_agrees_with_exhaustive_placements(c, data):
    c = np.array(c)
    d_in = np.array(data.draw(st.lists(st.integers(0, 2), min_size=len(c), max_size=len(c))))
    d_out = np.array(data.draw(st.lists(st.integers(0, 2), min_size=len(c), max_size=len(c))))
    m = data.draw(st.integers(0, int(min(c.sum(), (d_in + d_out).sum()))))
    s = data.draw(st.integers(0, m))
    w = m - s
    h, r = int((d_in + d_out).sum()) - m, int(c.sum()) - m
    assert _solve(c, d_in, d_out, h=h, r=r, s=s, w=w) == _enumerate(c, d_in, d_out, h=h, s=s, w=w)


def test_large_class_i5_range_is_inside_ik_and_attained():
    rng = np.random.default_rng(0)
    L = 60
    c = np.bincount(rng.integers(0, L, 300), minlength=L)
    pert = rng.integers(0, L, 500)
    accepted = rng.random(500) < 0.4
    d_in = np.bincount(pert[accepted], minlength=L)
    d_out = np.bincount(pert[~accepted], minlength=L)
    s, w = 40, 150
    h = int((d_in + d_out).sum()) - s - w
    low, high = flip_endpoint_range(c, d_in, d_out, s=s, w=w)
    assert max(0, h - d_out.sum()) <= low <= high <= min(h, d_in.sum())


# ---------------------------------------------------------------------------------------------
# Accuracy-only identification of K


def test_accuracy_only_k_by_hand():
    # class 0: n=2, a=2, b=1 → K ∈ [1, 1]; class 1: n=3, a=1, b=2 → K ∈ [0, 1].
    rows = [
        (1, 0, 0, 0.9, 0.9, 0, 0.8, 0.8),
        (2, 0, 0, 0.7, 0.7, 1, 0.6, 0.3),
        (3, 1, 1, 0.9, 0.9, 1, 0.9, 0.9),
        (4, 1, 0, 0.6, 0.3, 1, 0.7, 0.7),
        (5, 1, 2, 0.5, 0.2, 0, 0.5, 0.1),
    ]
    out = accuracy_only_k(_cell(rows)).iloc[0]
    assert (out.K_low_classwise, out.K_high_classwise) == (1, 2)
    # global: A = 3, B = 3, N = 5 → [1, 3]
    assert (out.K_low_global, out.K_high_global) == (1, 3)
    assert out.K_observed == 2
    assert out.width_classwise == pytest.approx(1 / 5) and out.width_global == pytest.approx(2 / 5)
    assert out.pinned_share == pytest.approx(0.5)
