"""Screening evaluation over cells: metrics, tiers, bootstrap intervals, identity ablation, recapture queue."""

import io
import math
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core._rng import as_generator
from core.paired.records import PAIRED_COLUMNS
from core.paired.screening import (
    _derangements,
    condition_tiers,
    failure_auroc,
    failure_coverage,
    identity_ablation,
    recapture_queue,
    screening_difference,
    screening_metrics,
    summarize_screening,
)


def make_pool(seed=0, *, models=("a1", "a2", "b1", "c1"), n_images=30, n_classes=3, conditions=("x", "y", "z")):
    """A scores table (as screening_scores returns) and real outcomes with dev and eval rows."""
    rng = np.random.default_rng(seed)
    score_rows, outcome_rows = [], []
    for model in models:
        group = model[0]
        ids = np.arange(n_images)
        labels = ids % n_classes
        split = np.where(ids < n_images // 3, "dev", "eval")
        s = rng.uniform(0.5, 1.0, n_images).round(2)  # rounding makes ties
        u = np.clip(s - rng.uniform(0, 0.5, n_images), 0, 1).round(2)
        ev = split == "eval"
        frame = pd.DataFrame(
            {"model": model, "group": group, "record_id": ids[ev], "true_label": labels[ev], "S": s[ev], "U": u[ev]}
        )
        frame["delta"] = frame["S"] - frame["U"]
        frame["class_delta"] = np.where(frame["true_label"] == 2, np.nan, rng.uniform(size=ev.sum()).round(1))
        for name, sign in (("S", -1), ("U", -1), ("delta", 1), ("class_delta", 1)):
            frame[f"risk_{name}"] = sign * frame[name]
        score_rows.append(frame)
        for j, cond in enumerate(conditions):
            fail = rng.uniform(size=n_images) < (1 - u) * (0.4 + 0.4 * j)
            pert_pred = np.where(fail, (labels + 1) % n_classes, labels)
            outcome_rows.append(
                pd.DataFrame(
                    {
                        "model": model,
                        "condition": cond,
                        "source": "print",
                        "record_id": ids,
                        "true_label": labels,
                        "clean_pred": labels,
                        "clean_max_prob": s,
                        "clean_true_prob": s,
                        "pert_pred": pert_pred,
                        "pert_max_prob": 0.9,
                        "pert_true_prob": np.where(fail, 0.05, 0.9),
                        "split": split,
                        "group": group,
                    }
                )
            )
    return pd.concat(score_rows, ignore_index=True), pd.concat(outcome_rows, ignore_index=True)


# ------------------------------------------------------------------------------------------
# metrics per cell
# ------------------------------------------------------------------------------------------
def test_metrics_equal_the_single_cell_functions():
    scores, outcomes = make_pool(0)
    metrics = screening_metrics(scores, outcomes, score_names=["S", "U", "class_delta"], budgets=[0.1, 0.3])
    assert len(metrics) == 4 * 3 * 3 * 2
    ev = outcomes[outcomes["split"] == "eval"]
    for row in metrics.itertuples(index=False):
        cell = ev[(ev["model"] == row.model) & (ev["condition"] == row.condition)]
        mine = scores[scores["model"] == row.model].set_index("record_id").loc[cell["record_id"]]
        risk = mine[f"risk_{row.score}"].to_numpy()
        failed = (cell["pert_pred"] != cell["true_label"]).to_numpy()
        ok = np.isfinite(risk)
        assert row.n == ok.sum() and row.n_fail == failed[ok].sum()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            auc = failure_auroc(risk[ok], failed[ok])
            cov = failure_coverage(risk[ok], failed[ok], row.budget)
        assert (math.isnan(auc) and math.isnan(row.auroc)) or row.auroc == pytest.approx(auc, abs=1e-12)
        for field in ("coverage", "ceiling", "random", "expected_found"):
            assert getattr(row, field) == pytest.approx(getattr(cov, field), abs=1e-12, nan_ok=True)
        assert row.k == cov.k and row.group == row.model[0]


def test_tiers_by_mean_development_accuracy_with_inclusive_mild_cut():
    rows = []
    # two models; per condition their dev accuracies are (acc1, acc2); the mean decides.
    for cond, (acc1, acc2) in {"c40": (0.3, 0.5), "c20": (0.2, 0.2), "c19": (0.18, 0.2), "c90": (1.0, 0.8)}.items():
        for model, acc in (("m1", acc1), ("m2", acc2)):
            n_ok = round(acc * 50)
            for i in range(50):
                wrong = i >= n_ok
                rows.append(
                    (model, cond, "src", i, 0, 0, 0.9, 0.9, 1 if wrong else 0, 0.8, 0.1 if wrong else 0.8, "dev")
                )
            rows.append((model, cond, "src", 99, 0, 0, 0.9, 0.9, 1, 0.8, 0.1, "eval"))  # eval rows do not count
    records = pd.DataFrame(
        rows,
        columns=[*PAIRED_COLUMNS, "split"],
    )
    tiers = condition_tiers(records).set_index("condition")
    assert tiers.loc["c40", "dev_accuracy"] == pytest.approx(0.4)
    assert tiers["tier"].to_dict() == {"c19": "extreme", "c20": "severe", "c40": "mild", "c90": "mild"}
    assert (tiers["n_models"] == 2).all()
    with pytest.raises(ValueError, match="development rows"):
        condition_tiers(records[records["split"] == "eval"])
    with pytest.raises(ValueError, match="`extreme` <= `mild`"):
        condition_tiers(records, mild=0.1, extreme=0.3)


def test_metrics_carry_tiers_and_summaries_average_cells_equally():
    scores, outcomes = make_pool(1)
    metrics = screening_metrics(scores, outcomes, score_names=["U"], budgets=0.2)
    tiers = condition_tiers(outcomes).set_index("condition")["tier"]
    assert (metrics["tier"] == metrics["condition"].map(tiers)).all()
    summary = summarize_screening(metrics)
    for row in summary.itertuples(index=False):
        cells = metrics[(metrics["tier"] == row.tier) & (metrics["score"] == row.score)]
        assert row.n_cells == len(cells)
        assert row.coverage == pytest.approx(cells["coverage"].mean())
    untiered = screening_metrics(scores, outcomes.drop(columns="split"), score_names=["U"], budgets=0.2)
    assert (untiered["tier"] == "untiered").all()


def test_metrics_reject_outcomes_that_contradict_the_scores():
    scores, outcomes = make_pool(2)
    bad = outcomes.copy()
    first_eval = bad.index[bad["split"] == "eval"][0]
    bad.loc[first_eval, "clean_pred"] = (bad.loc[first_eval, "true_label"] + 1) % 3
    bad.loc[first_eval, "clean_true_prob"] = 0.05
    with pytest.raises(ValueError, match="disagrees with `scores`"):
        screening_metrics(scores, bad)
    with pytest.raises(ValueError, match="no record of any scored image"):
        screening_metrics(scores, outcomes.assign(model=outcomes["model"] + "-other"))
    with pytest.raises(ValueError, match="no column 'risk_A3'"):
        screening_metrics(scores, outcomes, score_names=["A3"])
    with pytest.raises(ValueError, match="`budgets` must be fractions"):
        screening_metrics(scores, outcomes, budgets=[0.2, 0])


# ------------------------------------------------------------------------------------------
# bootstrap intervals: naive twins replaying the same draws
# ------------------------------------------------------------------------------------------
def _cells(scores, outcomes, a, b):
    ev = outcomes[outcomes["split"] == "eval"]
    for (model, cond), cell in ev.groupby(["model", "condition"]):
        mine = scores[scores["model"] == model].set_index("record_id").loc[cell["record_id"]]
        ra, rb = mine[f"risk_{a}"].to_numpy(), mine[f"risk_{b}"].to_numpy()
        ok = np.isfinite(ra) & np.isfinite(rb)
        failed = (cell["pert_pred"] != cell["true_label"]).to_numpy()[ok]
        yield model, cond, ra[ok], rb[ok], failed, mine["true_label"].to_numpy()[ok]


def _metric(metric, risk, failed, budget):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if metric == "auroc":
            return failure_auroc(risk, failed)
        return failure_coverage(risk, failed, budget).coverage


@pytest.mark.parametrize("metric", ["coverage", "auroc"])
def test_group_bootstrap_matches_a_loop_over_replayed_draws(metric):
    scores, outcomes = make_pool(3)
    out = screening_difference(
        scores,
        outcomes,
        a="U",
        b="S",
        metric=metric,
        budget=0.2,
        resample="group",
        n_draws=50,
        seed=11,
        tiers=pd.DataFrame({"source": "print", "condition": ["x", "y", "z"], "tier": "all"}),
    )
    cells = [
        (m, _metric(metric, ra, f, 0.2) - _metric(metric, rb, f, 0.2))
        for m, _, ra, rb, f, _ in _cells(scores, outcomes, "U", "S")
    ]
    cells = [(m, d) for m, d in cells if np.isfinite(d)]
    groups = np.array(["a", "b", "c"])
    draws = as_generator(11).integers(0, groups.size, size=(50, groups.size))
    boot = []
    for draw in draws:
        values = [d for g in groups[draw] for m, d in cells if m[0] == g]
        boot.append(np.mean(values))
    (row,) = out.itertuples(index=False)
    assert row.difference == pytest.approx(np.mean([d for _, d in cells]), abs=1e-12)
    assert row.n_cells == len(cells) and row.n_draws == 50
    assert (row.low, row.high) == pytest.approx(tuple(np.quantile(boot, [0.025, 0.975])), abs=1e-12)


@pytest.mark.parametrize("metric", ["coverage", "auroc"])
def test_class_bootstrap_matches_repeating_images_by_class_multiplicity(metric):
    scores, outcomes = make_pool(4, models=("a1", "b1"))
    out = screening_difference(
        scores,
        outcomes,
        a="U",
        b="delta",
        metric=metric,
        budget=0.3,
        resample="class",
        n_draws=30,
        seed=5,
        tiers=pd.DataFrame({"source": "print", "condition": ["x", "y", "z"], "tier": "all"}),
    )
    cells = list(_cells(scores, outcomes, "U", "delta"))
    draws = as_generator(5).integers(0, 3, size=(30, 3))
    boot = []
    for draw in draws:
        mult = np.bincount(draw, minlength=3)
        diffs = []
        for _, _, ra, rb, f, labels in cells:
            w = mult[labels]
            rf = np.repeat(f, w)
            if not rf.any() or (metric == "auroc" and rf.all()):
                continue
            diffs.append(_metric(metric, np.repeat(ra, w), rf, 0.3) - _metric(metric, np.repeat(rb, w), rf, 0.3))
        if diffs:
            boot.append(np.mean(diffs))
    (row,) = out.itertuples(index=False)
    assert row.n_draws == len(boot)
    assert (row.low, row.high) == pytest.approx(tuple(np.quantile(boot, [0.025, 0.975])), abs=1e-12)


def test_bootstrap_is_deterministic_under_a_seed_and_degenerate_with_one_group():
    scores, outcomes = make_pool(5)
    kwargs = dict(a="U", b="S", n_draws=40)
    first = screening_difference(scores, outcomes, seed=3, **kwargs)
    pd.testing.assert_frame_equal(first, screening_difference(scores, outcomes, seed=3, **kwargs))
    assert not first[["low", "high"]].equals(screening_difference(scores, outcomes, seed=4, **kwargs)[["low", "high"]])
    one = screening_difference(scores.assign(group="all"), outcomes, seed=3, **kwargs)
    assert np.allclose(one["low"], one["difference"]) and np.allclose(one["high"], one["difference"])


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(metric="brier"), "`metric` must be 'auroc' or 'coverage'"),
        (dict(resample="models"), "`resample` must be 'group' or 'class'"),
        (dict(level=1.0), "`level` must be in \\(0, 1\\)"),
        (dict(n_draws=0), "`n_draws` must be a positive int"),
        (dict(a="TTA"), "no column 'risk_TTA'"),
    ],
    ids=["metric", "resample", "level", "draws", "missing-score"],
)
def test_bootstrap_options_are_checked(kwargs, message):
    scores, outcomes = make_pool(6)
    with pytest.raises(ValueError, match=message):
        screening_difference(scores, outcomes, **kwargs)
    with pytest.raises(ValueError, match="needs a `group` column"):
        screening_difference(scores.drop(columns="group"), outcomes)


# ------------------------------------------------------------------------------------------
# identity ablation
# ------------------------------------------------------------------------------------------
@settings(max_examples=40)
@given(st.integers(2, 7), st.integers(1, 20), st.integers(0, 1000))
def test_derangements_are_permutations_without_fixed_points(size, n_draws, seed):
    perms = _derangements(size, n_draws, np.random.default_rng(seed))
    assert perms.shape == (n_draws, size)
    assert (np.sort(perms, axis=1) == np.arange(size)).all()
    assert not (perms == np.arange(size)).any()


def test_derangements_of_three_reach_both_cycles():
    perms = _derangements(3, 200, np.random.default_rng(0))
    assert {tuple(p) for p in perms} == {(1, 2, 0), (2, 0, 1)}


def test_identity_ablation_with_pairs_swaps_within_class():
    # two images per class: the only derangement and the leave-one-out mean both swap values.
    scores = pd.DataFrame(
        {
            "model": "m",
            "group": "g",
            "record_id": range(6),
            "true_label": [0, 0, 1, 1, 2, 2],
            "S": [0.9, 0.8, 0.7, 0.95, 0.6, 0.99],
            "U": [0.2, 0.7, 0.5, 0.9, 0.1, 0.6],
        }
    )
    scores["risk_S"], scores["risk_U"] = -scores["S"], -scores["U"]
    failed = np.array([1, 0, 1, 0, 0, 1])
    outcomes = pd.DataFrame(
        {
            "model": "m",
            "condition": "c",
            "source": "s",
            "record_id": range(6),
            "true_label": scores["true_label"],
            "clean_pred": scores["true_label"],
            "clean_max_prob": scores["S"],
            "clean_true_prob": scores["S"],
            "pert_pred": np.where(failed, 9, scores["true_label"]),
            "pert_max_prob": 0.9,
            "pert_true_prob": np.where(failed, 0.01, 0.9),
        }
    )
    out = identity_ablation(scores, outcomes, n_draws=3, seed=0)
    swapped = -scores["U"].to_numpy()[[1, 0, 3, 2, 5, 4]]
    (row,) = out.itertuples(index=False)
    assert row.auroc_score == pytest.approx(failure_auroc(-scores["U"], failed))
    assert row.auroc_derangement == pytest.approx(failure_auroc(swapped, failed))
    assert row.auroc_loo == pytest.approx(row.auroc_derangement)
    assert row.auroc_S == pytest.approx(failure_auroc(-scores["S"], failed))
    assert row.gap == pytest.approx(row.auroc_score - row.auroc_derangement)
    # a class with a single image has no control and leaves the comparison
    single = identity_ablation(scores.iloc[1:], outcomes.iloc[1:], n_draws=3, seed=0)
    assert single["n"].item() == 4


def test_identity_ablation_is_seeded():
    scores, outcomes = make_pool(7)
    a = identity_ablation(scores, outcomes, n_draws=4, seed=1)
    pd.testing.assert_frame_equal(a, identity_ablation(scores, outcomes, n_draws=4, seed=1))
    assert (a["n"] == 20).all()


# ------------------------------------------------------------------------------------------
# recapture queue
# ------------------------------------------------------------------------------------------
def _queue_pool():
    scores = pd.DataFrame(
        {
            "model": ["m"] * 5 + ["n"] * 2,
            "record_id": [10, 11, 12, 13, 14, 10, 11],
            "true_label": 0,
            "U": [0.1, 0.4, 0.4, 0.4, 0.9, 0.3, np.nan],
        }
    )
    scores["risk_U"] = -scores["U"]
    fails = {("m", "c1"): [1, 1, 0, 0, 0], ("m", "c2"): [1, 0, 0, 1, 1], ("n", "c1"): [0, 1]}
    rows = []
    for (model, cond), f in fails.items():
        ids = scores.loc[scores["model"] == model, "record_id"].to_numpy()
        for rid, failed in zip(ids, f):
            rows.append((model, cond, "s", rid, 0, 0, 0.9, 0.9, 1 if failed else 0, 0.9, 0.05 if failed else 0.9))
    outcomes = pd.DataFrame(
        rows,
        columns=list(PAIRED_COLUMNS),
    )
    return scores, outcomes


def test_recapture_queue_by_hand():
    scores, outcomes = _queue_pool()
    q = recapture_queue(scores, score="U", budget=0.5, outcomes=outcomes)
    m = q[q["model"] == "m"]
    # n = 5, k = round(2.5) = 3: record 10 surely, then 2 of the 3 tied at U = 0.4.
    assert m["record_id"].tolist() == [10, 11, 12, 13]
    np.testing.assert_allclose(m["selection_prob"], [1, 2 / 3, 2 / 3, 2 / 3])
    assert m["cutoff_tie"].tolist() == [False, True, True, True]
    assert m["n_failed"].tolist() == [2, 1, 0, 1] and (m["n_conditions"] == 2).all()
    # expected failures: 2 + 2/3 (1 + 0 + 1) = 10/3 of 5 in total; ceilings min(3, 2) + min(3, 3) = 5.
    assert m["queue_expected_failures"].iloc[0] == pytest.approx(10 / 3)
    assert m["total_failures"].iloc[0] == 5
    assert m["coverage"].iloc[0] == pytest.approx(10 / 3 / 5)
    assert m["ceiling"].iloc[0] == pytest.approx(1.0)
    assert m["selection_prob"].sum() == pytest.approx(m["k"].iloc[0])
    # model n: the NaN score is not ranked; n = 1, k = 1
    n = q[q["model"] == "n"]
    assert n["record_id"].tolist() == [10] and n["k"].tolist() == [1] and n["n"].tolist() == [1]
    assert n["total_failures"].iloc[0] == 0 and math.isnan(n["coverage"].iloc[0])
    # agrees with the per-condition metrics: expected failures found per condition add up
    metrics = screening_metrics(scores.iloc[:5], outcomes[outcomes["model"] == "m"], score_names=["U"], budgets=0.5)
    assert metrics["expected_found"].sum() == pytest.approx(10 / 3)


def test_recapture_queue_exports_to_csv_without_outcomes():
    scores, _ = _queue_pool()
    q = recapture_queue(scores, score="U", budget=0.2)
    assert list(q.columns) == [
        "model",
        "rank",
        "record_id",
        "true_label",
        "U",
        "risk",
        "selection_prob",
        "cutoff_tie",
        "k",
        "n",
    ]
    back = pd.read_csv(io.StringIO(q.to_csv(index=False)))
    pd.testing.assert_frame_equal(back, q, check_dtype=False)
    with pytest.raises(ValueError, match="`score` must be one of"):
        recapture_queue(scores, score="V")
    with pytest.raises(ValueError, match="no column 'risk_S'"):
        recapture_queue(scores, score="S")
