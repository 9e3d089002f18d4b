"""core.views.paired: grid summary, policy comparison, unpaired class summary."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from view_data import MODELS
from view_data import csv_bytes as _csv

from core.paired.records import unpair
from core.views.paired import (
    cell_choices,
    evaluation_cell,
    evaluation_records,
    grid_summary,
    policy_matrix,
    unpaired_class_summary,
)
from core.views.uploads import load_unpaired_upload


def test_grid_summary_and_policy_matrix():
    grid = pd.DataFrame(
        [
            # cell 1: I5 narrows H, dM_k straddles 0
            ("m", "c1", "syn", "H", "Ik", 0.0, 0.2),
            ("m", "c1", "syn", "H", "I5", 0.05, 0.2),
            ("m", "c1", "syn", "dM_k", "Ik", -0.1, 0.1),
            # cell 2: nothing narrows, K = 0
            ("m", "c2", "syn", "H", "Ik", 0.0, 0.1),
            ("m", "c2", "syn", "H", "I5", 0.0, 0.1),
            ("m", "c2", "syn", "dM_k", "Ik", np.nan, np.nan),
        ],
        columns=["model", "condition", "source", "target", "level", "low", "high"],
    )
    overview = grid_summary(grid)
    summary = overview.widths
    # Straddling is a share of the cells where dM_k is defined (cell 2 has K = 0), as in core.paired.
    assert (overview.cells, overview.i5_narrows_h, overview.dmk_straddles_zero, overview.k_zero) == (2, 0.5, 1.0, 0.5)
    h_ik = summary[(summary["target"] == "H") & (summary["level"] == "Ik")]["mean_width"].item()
    assert h_ik == pytest.approx(0.15)

    diffs = pd.DataFrame(
        [
            {
                "model": "m",
                "condition": "c",
                "source": "s",
                "level": "Ik",
                "lambda": 0.5,
                "policy": j,
                "versus": l,
                "coverage": 0.6 + 0.1 * j,
                "D_plus": d,
            }
            for (j, l), d in {
                (0, 1): -0.02,
                (1, 0): 0.05,
                (0, 2): 0.01,
                (2, 0): 0.0,
                (1, 2): 0.03,
                (2, 1): -0.01,
            }.items()
        ]
    )
    pm = policy_matrix(diffs, level="Ik", lam=0.5)
    coverages, matrix, regret = pm.coverages, pm.matrix, pm.regret
    assert coverages == pytest.approx([0.6, 0.7, 0.8])
    np.testing.assert_allclose(matrix, [[0, -0.02, 0.01], [0.05, 0, 0.03], [0.0, -0.01, 0]])
    np.testing.assert_allclose(regret, [0.01, 0.05, 0.0])
    with pytest.raises(ValueError, match="No policy differences"):
        policy_matrix(diffs, level="I5", lam=0.5)


def test_unpaired_class_summary_matches_a_naive_loop(records):
    cell = records[(records["model"] == MODELS[1]) & (records["split"] == "eval")]
    known = unpair(cell[cell["condition"] == cell["condition"].iloc[0]], level="I5")
    unpaired = load_unpaired_upload(
        ("x.csv", _csv(known.clean)), ("y.csv", _csv(known.perturbed)), ("z.csv", _csv(known.counts))
    )
    tau = 0.9
    out = unpaired_class_summary(unpaired, tau)
    rows = []
    for y in sorted(unpaired.clean["true_label"].unique()):
        c = unpaired.clean[unpaired.clean["true_label"] == y]
        p = unpaired.perturbed[unpaired.perturbed["true_label"] == y]
        n = a = b = u = v = t = 0
        for pred, prob in zip(c["pred"], c["max_prob"]):
            n += 1
            a += pred == y
            u += pred == y and prob >= tau
        for pred, prob in zip(p["pred"], p["max_prob"]):
            b += pred == y
            v += pred == y and prob < tau
            t += pred != y and prob >= tau
        rows.append((y, n, a, b, u, v, t))
    naive = pd.DataFrame(rows, columns=["true_label", "n", "a", "b", "u", "v", "t"])
    pd.testing.assert_frame_equal(out[naive.columns].astype(np.int64), naive.astype(np.int64))
    assert list(out.columns[-5:]) == ["h", "r", "s", "w", "k"]
    with pytest.raises(ValueError, match="`tau` must be in"):
        unpaired_class_summary(unpaired, 1.5)


# ---------------------------------------------------------------------------------------------
# New views of the Paired bounds page


def test_model_threshold_is_the_development_row_of_the_model_and_coverage(records):
    from core.constants import COVERAGES
    from core.paired.states import coverage_threshold, development_thresholds
    from core.views.paired import model_threshold

    thresholds = development_thresholds(records, COVERAGES)
    for model in MODELS:
        dev = records[(records["model"] == model) & (records["split"] == "dev")].drop_duplicates("record_id")
        for q in COVERAGES:
            t = model_threshold(thresholds, model, q)
            # Independent twin: the threshold straight from the model's clean development scores.
            assert t.tau == coverage_threshold(dev["clean_max_prob"].to_numpy(), q)
            assert (t.scope, t.n_dev) == ("dev", len(dev))
    with pytest.raises(ValueError, match=r"No threshold for model 'nope' at coverage 0\.8; the thresholds hold"):
        model_threshold(thresholds, "nope", 0.8)
    with pytest.raises(ValueError, match="coverage 0.55"):
        model_threshold(thresholds, MODELS[0], 0.55)


def test_policy_comparison_is_the_report_at_one_level_and_lambda(records):
    from core.paired.policies import LAMBDAS, evaluate_policies
    from core.views.paired import policy_comparison

    cell = records[(records["model"] == MODELS[0]) & (records["condition"] == records["condition"].iloc[0])]
    report = evaluate_policies(cell, lambdas=LAMBDAS)
    for level in ("I0", "Ik", "I5"):
        for lam in (LAMBDAS[0], LAMBDAS[-1]):
            out = policy_comparison(report, level=level, lam=lam)
            # Independent twin: boolean masks over the report, row by row.
            sel = [r for _, r in report.selection.iterrows() if r["level"] == level and abs(r["lambda"] - lam) < 1e-12]
            assert len(sel) == 1
            assert out.minimax_coverage == sel[0]["minimax_coverage"]
            assert out.mean_coverage == sel[0]["mean_coverage"] and out.mean_method == sel[0]["mean_method"]
            assert out.chosen == f"q = {sel[0]['minimax_coverage']:.0%}"
            d = report.differences
            mine = d[(d["level"] == level) & (abs(d["lambda"] - lam) < 1e-12)]
            certified = mine[mine["certified"]]
            assert out.certified["D_plus"].tolist() == certified["D_plus"].tolist()
            assert out.certified["ordering"].tolist() == [
                f"q = {a:.0%} cheaper than q = {b:.0%}"
                for a, b in zip(certified["coverage"], certified["versus_coverage"])
            ]
            costs = report.costs[(report.costs["level"] == level) & (abs(report.costs["lambda"] - lam) < 1e-12)]
            assert out.costs["J_high"].tolist() == costs["J_high"].tolist()
            assert list(out.costs.columns) == [
                "coverage",
                "tau",
                "J_low",
                "J_high",
                "J_mean",
                "J_observed",
                "mean_method",
            ]
            # The matrix: D⁺[j, ℓ] of the report, zero diagonal; regret the row maximum off it.
            p = len(out.matrix.coverages)
            for _, row in mine.iterrows():
                assert out.matrix.matrix[int(row["policy"]), int(row["versus"])] == row["D_plus"]
            for j in range(p):
                assert out.matrix.regret[j] == max(out.matrix.matrix[j, k] for k in range(p) if k != j)
            assert out.matrix.labels == [f"q = {q:.0%}" for q in out.matrix.coverages]
    with pytest.raises(ValueError, match="No policy differences at level 'Ik' and λ = 0.123"):
        policy_comparison(report, level="Ik", lam=0.123)


def _choices_twin(records: pd.DataFrame) -> tuple:
    """The page's former selectors: gather the evaluation rows, then their distinct values."""
    ev = evaluation_records(records)
    sources = tuple(sorted(ev["source"].unique()))
    return (
        sources,
        tuple(sorted(ev["model"].unique())),
        {s: tuple(sorted(ev.loc[ev["source"] == s, "condition"].unique())) for s in sources},
    )


def _cell_twin(records: pd.DataFrame, model: str, condition: str, source: str) -> pd.DataFrame:
    ev = evaluation_records(records)
    return ev[(ev["model"] == model) & (ev["condition"] == condition) & (ev["source"] == source)]


@settings(max_examples=60, deadline=None)
@given(
    rows=st.lists(
        st.tuples(
            st.sampled_from(["m1", "m2", "m3"]),
            st.sampled_from(["blur", "noise", "zoom"]),
            st.sampled_from(["synthetic", "sim"]),
            st.sampled_from(["dev", "eval", "test"]),
        ),
        min_size=1,
        max_size=30,
    ),
    with_split=st.booleans(),
)
def test_cell_choices_and_cells_equal_gathering_the_evaluation_rows(rows, with_split):
    """Selectors and cells read without gathering the evaluation rows equal the gathered ones:
    with eval rows, without any (every row reported) and without a split column."""
    records = pd.DataFrame(rows, columns=["model", "condition", "source", "split"]).assign(x=np.arange(len(rows)))
    if not with_split:
        records = records.drop(columns="split")
    choices = cell_choices(records)
    assert (choices.sources, choices.models, choices.conditions) == _choices_twin(records)
    for source in choices.sources:
        for condition in choices.conditions[source]:
            for model in choices.models:
                got = evaluation_cell(records, model=model, condition=condition, source=source)
                pd.testing.assert_frame_equal(got, _cell_twin(records, model, condition, source), check_exact=True)


def test_cell_choices_of_the_demo_pool(records):
    choices = cell_choices(records)
    assert (choices.sources, choices.models, choices.conditions) == _choices_twin(records)
    source, condition = choices.sources[0], choices.conditions[choices.sources[0]][0]
    cell = evaluation_cell(records, model=choices.models[0], condition=condition, source=source)
    assert len(cell) > 0 and set(cell["split"]) == {"eval"}
    pd.testing.assert_frame_equal(cell, _cell_twin(records, choices.models[0], condition, source), check_exact=True)
