"""Ranking metrics, score construction, sensitivity and bootstrap of core.cfc.evaluation."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import expit
from scipy.stats import spearmanr
from sklearn.metrics import roc_auc_score

from core._rng import as_generator
from core.cfc.certification import certify
from core.cfc.evaluation import (
    EVALUATION_COLUMNS,
    SCORES,
    ProtocolVariant,
    UndefinedMetricWarning,
    aurc,
    auroc,
    capture_at,
    certificate_scores,
    confidence_scores,
    evaluate_scores,
    expected_top_positives,
    group_shap_concentration,
    paired_bootstrap,
    permutation_group_importance,
    protocol_sensitivity,
    random_order_scores,
    review_budget,
    search_diagnostics,
)
from core.cfc.protocol import Protocol
from core.cfc.scores import max_softmax
from core.cfc.stressors import BrittleLabels, LabelChannel, brittle_labels


# ------------------------------------------------------------------------------------------
# Brute-force twins: average over every tie-break order consistent with the scores
# ------------------------------------------------------------------------------------------
def _tie_break_orders(scores):
    """All rankings (index sequences) sorted by score descending, one per tie-break."""
    n = len(scores)
    return [p for p in itertools.permutations(range(n)) if all(scores[p[i]] >= scores[p[i + 1]] for i in range(n - 1))]


def _brute_top_positives(scores, labels):
    orders = _tie_break_orders(scores)
    counts = np.array([[sum(labels[i] for i in p[:k]) for k in range(len(scores) + 1)] for p in orders], float)
    return counts.mean(axis=0)


def _brute_capture(scores, labels, k):
    orders = _tie_break_orders(scores)
    return np.mean([sum(labels[i] for i in p[:k]) / sum(labels) for p in orders])


def _brute_aurc(scores, labels):
    n = len(scores)
    orders = _tie_break_orders(scores)
    per_order = []
    for p in orders:
        residual = [sum(labels[i] for i in p[j:]) / (n - j) for j in range(n)]
        per_order.append(np.mean(residual))
    return np.mean(per_order)


def _brute_auroc(scores, labels):
    pos = [s for s, y in zip(scores, labels) if y]
    neg = [s for s, y in zip(scores, labels) if not y]
    wins = sum((p > q) + 0.5 * (p == q) for p in pos for q in neg)
    return wins / (len(pos) * len(neg))


small_cases = st.integers(2, 7).flatmap(
    lambda n: st.tuples(
        st.lists(st.integers(0, 3), min_size=n, max_size=n), st.lists(st.booleans(), min_size=n, max_size=n)
    )
)


# ------------------------------------------------------------------------------------------
# Hand-computed values
# ------------------------------------------------------------------------------------------
TOY_S = [0.9, 0.8, 0.8, 0.1]
TOY_B = [1, 0, 1, 0]


def test_toy_values_by_hand():
    # Ranks: 0.9 (brittle), then a tie {brittle, not}, then 0.1 (not): E[top k] = 0, 1, 1.5, 2, 2.
    assert expected_top_positives(TOY_S, TOY_B).tolist() == [0.0, 1.0, 1.5, 2.0, 2.0]
    # Pairs (pos, neg): (.9,.8)=1, (.9,.1)=1, (.8,.8)=½, (.8,.1)=1 -> 3.5/4.
    assert auroc(TOY_S, TOY_B) == 0.875
    # k = 2 of 4: 1 sure + ½ of the tied brittle -> 1.5 / 2.
    assert capture_at(TOY_S, TOY_B, 0.5) == 0.75
    # k = 1: only the top sample.
    assert capture_at(TOY_S, TOY_B, 0.25) == 0.5
    # Residual risks after 0,1,2,3 escalations: 2/4, 1/3, 0.5/2, 0/1.
    assert aurc(TOY_S, TOY_B) == pytest.approx((0.5 + 1 / 3 + 0.25 + 0.0) / 4, abs=1e-15)


@pytest.mark.parametrize(
    ("q", "n", "k"),
    [(0.05, 30, 2), (0.05, 10, 1), (0.2, 7, 1), (0.2, 8, 2), (0.1, 25, 3), (0.2, 100, 20), (1.0, 3, 3), (0.01, 10, 1)],
    ids=["half-up-1.5", "floor-to-1", "1.4-to-1", "1.6-to-2", "2.5-to-3", "exact-20", "all", "at-least-1"],
)
def test_review_budget_rounds_half_up_and_at_least_one(q, n, k):
    assert review_budget(q, n) == k


def test_prorated_tie_at_cutoff_by_hand():
    # Five tied samples, two brittle, k = 2 of 10 (q = 0.2) cuts into the tie after one sure positive.
    s = [5, 3, 3, 3, 3, 3, 1, 1, 1, 1]
    b = [1, 1, 0, 1, 0, 0, 0, 0, 0, 1]
    # Top-1 is the sure brittle (score 5); 1 more slot from a block of 5 holding 2 brittle -> 2/5.
    assert capture_at(s, b, 0.2) == pytest.approx((1 + 2 / 5) / 4)


def test_constant_score_is_random_ranking():
    b = np.array([1, 0, 0, 1, 0, 0, 0, 1, 0, 0], bool)
    s = np.zeros(10)
    assert auroc(s, b) == 0.5
    assert capture_at(s, b, 0.2) == pytest.approx(0.2)
    assert aurc(s, b) == pytest.approx(0.3)


def test_perfect_ranking():
    b = np.array([1, 1, 0, 0, 0])
    s = np.array([5.0, 4, 3, 2, 1])
    assert auroc(s, b) == 1.0
    assert capture_at(s, b, 0.4) == 1.0
    assert aurc(s, b) == pytest.approx((2 / 5 + 1 / 4) / 5)


def test_infinite_scores_rank_first():
    assert auroc([np.inf, 1.0, -np.inf], [1, 0, 0]) == 1.0


# ------------------------------------------------------------------------------------------
# Brute-force twins (hypothesis)
# ------------------------------------------------------------------------------------------
@given(small_cases)
def test_expected_top_positives_matches_tie_break_average(case):
    s, b = case
    np.testing.assert_allclose(expected_top_positives(s, b), _brute_top_positives(s, b), atol=1e-12)


@given(small_cases, st.sampled_from([0.05, 0.1, 0.2, 0.5]))
def test_capture_matches_tie_break_average(case, q):
    s, b = case
    if not any(b):
        return
    k = max(1, math.floor(q * len(s) + 0.5 + 1e-9))
    assert capture_at(s, b, q) == pytest.approx(_brute_capture(s, b, k), abs=1e-12)


@given(small_cases)
def test_aurc_matches_tie_break_average(case):
    s, b = case
    assert aurc(s, b) == pytest.approx(_brute_aurc(s, b), abs=1e-12)


@given(small_cases)
def test_auroc_matches_pairwise_count_and_sklearn(case):
    s, b = case
    if all(b) or not any(b):
        return
    assert auroc(s, b) == pytest.approx(_brute_auroc(s, b), abs=1e-12)
    assert auroc(s, b) == pytest.approx(roc_auc_score(b, s), abs=1e-12)


def test_auroc_large_random_matches_sklearn():
    rng = np.random.default_rng(3)
    s = rng.integers(0, 50, 5000).astype(float)
    b = rng.random(5000) < 0.3
    assert auroc(s, b) == pytest.approx(roc_auc_score(b, s), abs=1e-12)


# ------------------------------------------------------------------------------------------
# Undefined values and bad input
# ------------------------------------------------------------------------------------------
def test_one_class_auroc_warns_nan():
    with pytest.warns(UndefinedMetricWarning, match="one class"):
        assert math.isnan(auroc([0.1, 0.2], [1, 1]))


def test_no_positive_capture_warns_nan_and_aurc_zero():
    with pytest.warns(UndefinedMetricWarning, match="no positive"):
        assert math.isnan(capture_at([0.1, 0.2], [0, 0], 0.5))
    assert aurc([0.1, 0.2], [0, 0]) == 0.0


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: auroc([0.1, np.nan], [0, 1]), r"NaN \(first at position 1\)"),
        (lambda: auroc([0.1, 0.2], [0, 1, 1]), "same shape"),
        (lambda: auroc([[0.1, 0.2]], [[0, 1]]), "1-D"),
        (lambda: auroc([0.1, 0.2], [0, 2]), "0/1; got the value 2"),
        (lambda: auroc([], []), "empty"),
        (lambda: capture_at([0.1, 0.2], [0, 1], 0.0), r"`q` must be a fraction in \(0, 1\]; got 0.0"),
        (lambda: capture_at([0.1, 0.2], [0, 1], 20), "got 20"),
    ],
    ids=["nan-score", "shape", "2d", "label-value", "empty", "q-zero", "q-percent"],
)
def test_bad_input_raises(call, match):
    with pytest.raises(ValueError, match=match):
        call()


# ------------------------------------------------------------------------------------------
# Score construction and evaluation tables (a small logistic model with four groups)
# ------------------------------------------------------------------------------------------
GROUPS = {"a": [0, 1], "b": [2], "c": [3], "d": [4, 5]}
COEF = np.array([2.5, -1.0, 1.5, 0.3, -2.0, 0.8])
BASE = np.zeros(6)


def logistic(Z):
    z = np.asarray(Z) @ COEF + 0.2
    return np.column_stack([expit(-z), expit(z)])


@pytest.fixture(scope="module")
def toy():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 6))
    y = (rng.random(120) < logistic(X)[:, 1]).astype(int)
    cert = certify(logistic, X, GROUPS, BASE)
    mild = LabelChannel(masking_rates=(0.1,), dropout_rates=(0.1,), noise_scales=(0.1,), n_draws=2, tau_p=0.8)
    labels = brittle_labels(logistic, X, GROUPS, BASE, channel=mild, noise_scale=np.ones(6), seed=1)
    return X, y, cert, labels


def test_certificate_and_confidence_scores(toy):
    X, _, cert, _ = toy
    s = certificate_scores(cert)
    t = cert.table
    np.testing.assert_array_equal(s["fds"], t["u"])  # ranked by u: same order as FDS, no saturation
    assert (np.diff(t["fds"].to_numpy()[np.argsort(s["fds"])]) >= 0).all()
    np.testing.assert_array_equal(s["inv_flip_budget"], 1.0 / t["flip_budget"])
    np.testing.assert_array_equal(s["one_step"], cert.drops.max(axis=1))
    c = confidence_scores(logistic(X))
    assert list(c) == ["max_softmax", "entropy", "margin", "neg_energy"]
    np.testing.assert_allclose(c["max_softmax"], -max_softmax(logistic(X)))
    assert set(s) | set(c) <= set(SCORES)


def test_evaluate_scores_matches_metric_functions(toy):
    X, y, cert, labels = toy
    scores = certificate_scores(cert) | confidence_scores(logistic(X))
    table = evaluate_scores(scores, labels, y)
    assert list(table.columns) == list(EVALUATION_COLUMNS)
    hc = labels.high_confidence
    wrong = (labels.prediction != y) & hc
    assert 0 < labels.labels[hc].sum() < hc.sum() and wrong[hc].any()
    for row in table.itertuples():
        s = scores[row.score][hc]
        assert row.n == hc.sum() and row.n_brittle == labels.labels.sum()
        assert row.auroc == pytest.approx(auroc(s, labels.labels[hc]))
        assert getattr(row, "_9") == pytest.approx(capture_at(s, labels.labels[hc], 0.10))  # capture@10
        assert row.aurc == pytest.approx(aurc(s, labels.labels[hc]))
        assert getattr(row, "_12") == pytest.approx(capture_at(s, wrong[hc], 0.2))  # false_conf_captured@20
        assert row.note == ""
    everyone = evaluate_scores(scores, labels, y, population="all")
    assert (everyone["n"] == len(y)).all()
    assert everyone.loc[0, "auroc"] == pytest.approx(auroc(scores["fds"], labels.labels))


def test_evaluate_scores_reports_unavailable_and_undefined(toy):
    X, y, cert, labels = toy
    n = len(y)
    table = evaluate_scores(
        {"group_shap": np.full(n, np.nan), "fds": certificate_scores(cert)["fds"]},
        labels,
        y,
        notes={"group_shap": "no fast explainer"},
    )
    assert table.loc[0, "note"] == "no fast explainer" and np.isnan(table.loc[0, "auroc"])
    strict = LabelChannel(tau_p=1.0)
    none_high = brittle_labels(logistic, X, GROUPS, BASE, channel=strict, noise_scale=np.ones(6), seed=0)
    t2 = evaluate_scores({"fds": certificate_scores(cert)["fds"]}, none_high, y)
    assert t2.loc[0, "n"] == 0 and "no sample with p̂ ≥ 1.0" in t2.loc[0, "note"]
    with pytest.raises(ValueError, match=r"NaN \(first at position"):
        evaluate_scores({"x": np.r_[np.nan, np.zeros(n - 1)]}, labels, y, population="all")
    with pytest.raises(ValueError, match="population"):
        evaluate_scores({}, labels, y, population="high")
    with pytest.raises(ValueError, match=r"Score 'x' must have shape \(120,\)"):
        evaluate_scores({"x": np.zeros(3)}, labels, y)


def test_false_conf_captured_counts_only_high_confidence_errors_on_all_samples():
    # Ten samples ranked 0 > 1 > … > 9; Top_20% = samples 0 and 1. Misclassified: 0 (p̂ = 0.6),
    # 1 and 5 (p̂ = 0.95). FalseConfCaptured@20 counts high-confidence errors only: 1 of {1, 5}.
    n = 10
    conf = np.full(n, 0.95)
    conf[0] = 0.6
    pred = np.zeros(n, dtype=int)
    y_true = np.zeros(n, dtype=int)
    y_true[[0, 1, 5]] = 1
    brittle = np.zeros(n, dtype=bool)
    brittle[[1, 2]] = True
    high = conf >= 0.9
    labels = BrittleLabels(
        labels=brittle & high,
        high_confidence=high,
        confidence=conf,
        prediction=pred,
        flip_share=np.zeros(n),
        max_collapse=np.zeros(n),
        hits=brittle[:, None],
        settings=(("group_masking", 0.1),),
        tau_p=0.9,
        tau_kappa=0.5,
        n_forward=n,
    )
    s = np.arange(n, 0, -1, dtype=float)
    everyone = evaluate_scores({"s": s}, labels, y_true, population="all").iloc[0]
    assert everyone["n"] == 10 and everyone["false_conf_captured@20"] == 0.5
    assert everyone["capture@20"] == 0.5  # brittle {1, 2}; Top_2 = {0, 1}
    high_only = evaluate_scores({"s": s}, labels, y_true).iloc[0]
    # On the 9 high-confidence samples Top_20% is round(1.8) = 2 samples: 1 and 2, holding error 1 of {1, 5}.
    assert high_only["n"] == 9 and high_only["false_conf_captured@20"] == 0.5 and high_only["capture@20"] == 1.0


def test_random_order_scores_match_naive_orders(toy):
    X = toy[0][:30]
    got = random_order_scores(logistic, X, GROUPS, BASE, n_orders=3, seed=9)
    rng = as_generator(9)
    us = []
    for _ in range(3):
        order = [list(GROUPS)[i] for i in rng.permutation(4)]
        cs = certify(logistic, X, GROUPS, BASE, order=order)
        assert cs.path_rule == "fixed" and cs.table["path"].iloc[0] == order
        us.append(cs.table["u"].to_numpy())
    np.testing.assert_allclose(got, np.mean(us, axis=0), rtol=1e-12)


def test_permutation_importance_matches_naive_loop(toy):
    X, y = toy[0][:50], toy[1][:50]
    res = permutation_group_importance(logistic, X, y, GROUPS, n_repeats=2, seed=4, batch_size=37)
    rng = as_generator(4)
    base = -np.log(logistic(X)[np.arange(50), y]).mean()
    expected = {}
    for name, cols in GROUPS.items():
        losses = []
        for _ in range(2):
            perm = rng.permutation(50)
            Z = X.copy()
            Z[:, cols] = X[perm][:, cols]
            losses.append(-np.log(logistic(Z)[np.arange(50), y]).mean())
        expected[name] = np.mean(losses) - base
    np.testing.assert_allclose(res.importance.to_numpy(), list(expected.values()), rtol=1e-10)
    assert res.order == tuple(sorted(expected, key=lambda g: -expected[g]))
    assert res.baseline_loss == pytest.approx(base)
    # Group 'a' (coefficients 2.5, -1) matters most; 'c' (0.3) least.
    assert res.order[0] == "a" and res.order[-1] == "c"


def test_group_shap_linear_closed_form(toy):
    from sklearn.linear_model import LogisticRegression

    X, y = toy[0], toy[1]
    model = LogisticRegression().fit(X, y)
    res = group_shap_concentration(model, X[:20], GROUPS, explainer="linear", background=X)
    # Independent masker: SHAP_j = coef_j (x_j − mean_j) in log-odds space.
    phi = np.abs(model.coef_[0] * (X[:20] - X.mean(axis=0)))
    totals = np.column_stack([phi[:, c].sum(axis=1) for c in GROUPS.values()])
    np.testing.assert_allclose(res.group_totals, totals, rtol=1e-8)
    np.testing.assert_allclose(res.scores, totals.max(axis=1) / totals.sum(axis=1), rtol=1e-8)
    assert res.explainer == "linear" and res.note == ""


def test_group_shap_tree_single_group_model_is_fully_concentrated():
    from sklearn.tree import DecisionTreeClassifier

    rng = np.random.default_rng(2)
    X = rng.normal(size=(200, 6))
    y = np.select([X[:, 2] < -0.5, X[:, 2] > 0.5], [0, 2], 1)  # three classes from feature 2 only
    model = DecisionTreeClassifier(max_depth=3, random_state=0).fit(X, y)
    res = group_shap_concentration(model, X[:25], GROUPS, explainer="tree")
    np.testing.assert_allclose(res.scores, 1.0)
    assert (res.group_totals[:, [0, 2, 3]] == 0).all() and (res.group_totals[:, 1] > 0).all()


def test_group_shap_unavailable_model_gives_nan_with_reason(toy):
    res = group_shap_concentration(object(), toy[0][:5], GROUPS, explainer=None)
    assert np.isnan(res.scores).all() and "too slow" in res.note
    with pytest.raises(ValueError, match="background"):
        group_shap_concentration(object(), toy[0][:5], GROUPS, explainer="linear")
    with pytest.raises(ValueError, match="explainer"):
        group_shap_concentration(object(), toy[0][:5], GROUPS, explainer="kernel")


def test_protocol_sensitivity(toy):
    X, _, cert, labels = toy
    ref = certificate_scores(cert)["fds"]
    merged = {"ab": [0, 1, 2], "cd": [3, 4, 5]}
    variants = [
        ProtocolVariant("baseline", "mean", GROUPS, BASE, Protocol()),
        ProtocolVariant("baseline", "median", GROUPS, np.full(6, 0.5), Protocol(baseline="median")),
        ProtocolVariant("grouping", "domain_block", merged, BASE, Protocol(grouping="domain_block")),
    ]
    table = protocol_sensitivity(logistic, X, variants, labels, ref)
    hc = labels.high_confidence
    assert table.loc[0, "spearman"] == pytest.approx(1.0)
    assert table.loc[0, "auroc"] == pytest.approx(auroc(ref[hc], labels.labels[hc]))
    u = certify(logistic, X, merged, BASE, Protocol(grouping="domain_block")).table["u"].to_numpy()
    assert table.loc[2, "n_groups"] == 2
    assert table.loc[2, "auroc"] == pytest.approx(auroc(u[hc], labels.labels[hc]))
    assert table.loc[2, "spearman"] == pytest.approx(spearmanr(u[hc], ref[hc]).statistic)
    assert table.loc[1, "fingerprint"] != table.loc[0, "fingerprint"]


def test_protocol_sensitivity_warns_when_undefined(toy):
    # No sample reaches p̂ ≥ 1.0: AUROC and Spearman are undefined, so NaN with a warning.
    X, _, cert, _ = toy
    none_high = brittle_labels(
        logistic, X, GROUPS, BASE, channel=LabelChannel(tau_p=1.0), noise_scale=np.ones(6), seed=0
    )
    variants = [ProtocolVariant("baseline", "mean", GROUPS, BASE, Protocol())]
    with pytest.warns(UndefinedMetricWarning, match="AUROC and Spearman undefined on the 0 evaluated samples"):
        table = protocol_sensitivity(logistic, X, variants, none_high, certificate_scores(cert)["fds"])
    assert np.isnan(table.loc[0, "auroc"]) and np.isnan(table.loc[0, "spearman"])


def test_search_diagnostics_reads_the_certificate_search(toy):
    X = toy[0][:40]
    cs = certify(logistic, X, GROUPS, BASE, search="both")
    table = search_diagnostics(cs).set_index("statistic")
    k, ke, kb = cs.table["flip_budget"], cs.table["flip_budget_exact"], cs.table["flip_budget_beam"]
    assert table.loc["exact_match", "value"] == pytest.approx(np.mean(k == ke))
    assert table.loc["greedy_over", "value"] == pytest.approx(np.mean(k > ke))
    assert table.loc["beam_improve", "value"] == pytest.approx(np.mean(kb < k))
    assert (ke <= k).all()  # exact search is never worse than greedy
    with pytest.raises(ValueError, match="No flip search"):
        search_diagnostics(certify(logistic, X, GROUPS, BASE))


# ------------------------------------------------------------------------------------------
# Paired bootstrap
# ------------------------------------------------------------------------------------------
def _units(values):
    rows = []
    for u, per_score in enumerate(values):
        for score, v in per_score.items():
            rows.append({"dataset": "d", "model": f"m{u}", "seed": 0, "score": score, "auroc": v, "aurc": 1 - v})
    return pd.DataFrame(rows)


def test_bootstrap_by_hand_and_against_naive_resampling():
    units = _units(
        [
            {"fds": 0.9, "rcma": 0.7, "max_softmax": 0.6, "one_step": 0.65},
            {"fds": 0.8, "rcma": 0.5, "max_softmax": 0.7, "one_step": 0.6},
            {"fds": 0.6, "rcma": 0.8, "max_softmax": 0.65, "one_step": 0.55},
        ]
    )
    res = paired_bootstrap(units, n_resamples=500, seed=3).set_index("score")
    # Strongest non-certificate score by mean: max_softmax 0.65 > one_step 0.6.
    assert (res["reference"] == "max_softmax").all()
    assert res.loc["fds", "mean"] == pytest.approx(0.7667, abs=1e-4)
    assert res.loc["fds", "diff_mean"] == pytest.approx((0.3 + 0.1 - 0.05) / 3)
    assert res.loc["fds", "win_rate"] == pytest.approx(2 / 3)
    assert res.loc["rcma", "win_rate"] == pytest.approx(2 / 3)
    # Naive twin with the same resample indices.
    idx = as_generator(3).integers(0, 3, size=(500, 3))
    fds = np.array([0.9, 0.8, 0.6])
    ref = np.array([0.6, 0.7, 0.65])
    means = fds[idx].mean(axis=1)
    diffs = (fds - ref)[idx].mean(axis=1)
    assert res.loc["fds", "ci_low"] == pytest.approx(np.quantile(means, 0.025))
    assert res.loc["fds", "ci_high"] == pytest.approx(np.quantile(means, 0.975))
    assert res.loc["fds", "diff_ci_low"] == pytest.approx(np.quantile(diffs, 0.025))
    assert res.loc["fds", "kind"] == "certificate"
    # AURC is lower-is-better: differences and wins flip sign.
    lower = paired_bootstrap(units, metric="aurc", reference="max_softmax", n_resamples=50).set_index("score")
    assert lower.loc["fds", "diff_mean"] == pytest.approx((0.3 + 0.1 - 0.05) / 3)


def test_bootstrap_skips_undefined_units():
    units = _units(
        [{"fds": 0.9, "max_softmax": 0.6}, {"fds": np.nan, "max_softmax": 0.7}, {"fds": 0.5, "max_softmax": 0.65}]
    )
    res = paired_bootstrap(units, n_resamples=200, seed=0).set_index("score")
    assert res.loc["fds", "n_units"] == 2
    assert res.loc["fds", "mean"] == pytest.approx(0.7)
    assert res.loc["fds", "win_rate"] == pytest.approx(0.5)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"metric": "f1"}, r"lacks the column\(s\) \['f1'\]"),
        ({"reference": "nope"}, "`reference` 'nope' is not a score"),
        ({"n_resamples": 0}, "n_resamples"),
        ({"confidence_level": 1.5}, "confidence_level"),
    ],
    ids=["metric", "reference", "resamples", "level"],
)
def test_bootstrap_bad_input(kwargs, match):
    units = _units([{"fds": 0.9, "max_softmax": 0.6}, {"fds": 0.7, "max_softmax": 0.7}])
    with pytest.raises(ValueError, match=match):
        paired_bootstrap(units, **kwargs)


def test_bootstrap_refuses_duplicates_and_missing_reference():
    units = _units([{"fds": 0.9, "max_softmax": 0.6}])
    with pytest.raises(ValueError, match="more than one row"):
        paired_bootstrap(pd.concat([units, units]))
    with pytest.raises(ValueError, match="no non-certificate score"):
        paired_bootstrap(units[units["score"] == "fds"])


# ---------------------------------------------------------------------------------------------
# The strongest confidence score (one function for the overview, the summary and the sweep)


def _naive_strongest(rows):
    best = None
    for score, kind, value in rows:
        if kind == "confidence" and value == value and (best is None or value > best[1]):
            best = (score, value)
    return None if best is None else best[0]


@settings(max_examples=60)
@given(
    rows=st.lists(
        st.tuples(
            st.sampled_from(["fds", "max_softmax", "margin", "entropy", "x"]),
            st.sampled_from(["certificate", "confidence", "perturbation"]),
            st.one_of(st.just(float("nan")), st.sampled_from([0.5, 0.7]), st.floats(0, 1)),
        ),
        max_size=8,
    )
)
def test_strongest_confidence_score_matches_a_naive_loop(rows):
    from core.cfc.evaluation import strongest_confidence_score

    frame = pd.DataFrame(rows, columns=["score", "kind", "auroc"])
    assert strongest_confidence_score(frame) == _naive_strongest(rows)


def test_strongest_confidence_score_fallback_and_validation():
    from core.cfc.evaluation import strongest_confidence_score

    ev = pd.DataFrame(
        {
            "score": ["fds", "max_softmax", "margin"],
            "kind": ["certificate", "confidence", "confidence"],
            "auroc": [0.9, 0.7, 0.7],
        }
    )
    assert strongest_confidence_score(ev) == "max_softmax"  # tie: first in table order
    assert strongest_confidence_score(ev.assign(auroc=[0.9, np.nan, np.nan])) is None
    assert strongest_confidence_score(ev.iloc[:1]) is None
    with pytest.raises(ValueError, match=r"missing \['kind'\]"):
        strongest_confidence_score(ev.drop(columns="kind"))
