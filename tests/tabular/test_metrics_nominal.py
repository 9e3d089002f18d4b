"""Nominal metrics against hand-computed values and naive brute-force twins."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from core.tabular.metrics import (
    NOMINAL_METRICS,
    accuracy,
    auroc,
    average_precision,
    brier,
    ece,
    macro_f1,
    nll,
    nominal_metrics,
)

# Binary toy, by hand: P[:, 1] = (.1, .4, .35, .8, .7, .6); y = (0, 0, 1, 1, 0, 1)
Y2 = np.array([0, 0, 1, 1, 0, 1])
P2 = np.array([[0.9, 0.1], [0.6, 0.4], [0.65, 0.35], [0.2, 0.8], [0.3, 0.7], [0.4, 0.6]])
# Three classes, by hand.
Y3 = np.array([0, 1, 2, 2])
P3 = np.array([[0.7, 0.2, 0.1], [0.3, 0.5, 0.2], [0.2, 0.5, 0.3], [0.1, 0.1, 0.8]])


def test_binary_toy_by_hand():
    # predictions (argmax): 0, 0, 0, 1, 1, 1 -> correct: y=0 y=0 no | y=1 no y=1  => 4/6
    assert accuracy(Y2, P2) == pytest.approx(4 / 6)
    # class 0: TP 2, FP 1, FN 1 -> F1 2/3; class 1: TP 2, FP 1, FN 1 -> F1 2/3
    assert macro_f1(Y2, P2) == pytest.approx(2 / 3)
    # positives (.35, .8, .6) vs negatives (.1, .4, .7): wins 1+0+0 / 1+1+1 / 1+1+0 = 6 of 9
    assert auroc(Y2, P2) == pytest.approx(6 / 9)
    # ranked: .8 (+) .7 (-) .6 (+) .4 (-) .35 (+) .1 (-): precision at each positive 1, 2/3, 3/5
    assert average_precision(Y2, P2) == pytest.approx((1 + 2 / 3 + 3 / 5) / 3)
    expected_nll = -np.mean(np.log([0.9, 0.6, 0.35, 0.8, 0.3, 0.6]))
    assert nll(Y2, P2) == pytest.approx(expected_nll)
    # Brier: sum over both columns = 2 * (p1 - y)^2
    assert brier(Y2, P2) == pytest.approx(np.mean(2 * (P2[:, 1] - Y2) ** 2))
    # ECE, 15 bins of width 1/15: confidences .9 .6 .65 .8 .7 .6 fall in bins 13, 8, 9, 11, 10, 8
    # bin 8: {.6 ok, .6 ok} gap |2 - 1.2|; bin 9: {.65 wrong} .65; bin 10: {.7 wrong} .7;
    # bin 11: {.8 ok} .2; bin 13: {.9 ok} .1  => (0.8 + 0.65 + 0.7 + 0.2 + 0.1) / 6
    assert ece(Y2, P2) == pytest.approx((0.8 + 0.65 + 0.7 + 0.2 + 0.1) / 6)


def test_multiclass_toy_by_hand():
    # predictions 0, 1, 1, 2 -> 3 of 4 correct
    assert accuracy(Y3, P3) == pytest.approx(0.75)
    # F1: class 0 = 1, class 1: TP1 FP1 FN0 -> 2/3, class 2: TP1 FP0 FN1 -> 2/3
    assert macro_f1(Y3, P3) == pytest.approx((1 + 2 / 3 + 2 / 3) / 3)
    # one-vs-rest AUROC: class 0: .7 vs (.3, .2, .1) -> 1; class 1: .5 vs (.2, .5, .1) -> 2.5/3;
    # class 2: (.3, .8) vs (.1, .2) -> 1
    assert auroc(Y3, P3) == pytest.approx((1 + 2.5 / 3 + 1) / 3)
    # AP class 0: 1; class 1: scores .5 (+) and .5 (-) tie at the top -> precision 1/2 -> 0.5;
    # class 2: .8 (+) .3 (+) -> 1
    assert average_precision(Y3, P3) == pytest.approx((1 + 0.5 + 1) / 3)
    assert nll(Y3, P3) == pytest.approx(-np.mean(np.log([0.7, 0.5, 0.3, 0.8])))
    # Brier rows: (.09+.04+.01) (.09+.25+.04) (.04+.25+.49) (.01+.01+.04)
    assert brier(Y3, P3) == pytest.approx((0.14 + 0.38 + 0.78 + 0.06) / 4)


def test_nll_clips_zero_probabilities_like_the_pseudo_logits():
    P = np.array([[1.0, 0.0]])
    assert nll([1], P) == pytest.approx(-math.log(1e-12 / (1 + 1e-12)))


def test_ece_puts_an_edge_value_in_the_bin_it_closes():
    # with 2 bins, confidence 0.5 belongs to (0, .5] and 1.0 to (.5, 1]
    P = np.array([[0.5, 0.5], [1.0, 0.0]])
    # bin 0: {.5, correct} gap .5; bin 1: {1.0, wrong} gap 1 => 1.5 / 2
    assert ece([0, 1], P, n_bins=2) == pytest.approx(0.75)
    assert ece([0, 0], P, n_bins=1) == pytest.approx(abs(2 - 1.5) / 2)


def test_ece_defaults_to_15_equal_width_bins():
    # SPEC A.7: 15 bins. Confidences .62 (correct) and .68 (wrong) fall in (9/15, 10/15] and
    # (10/15, 11/15] => (|1 − .62| + |0 − .68|) / 2 = .53; 10 bins would pool them: |1 − 1.3| / 2.
    P = np.array([[0.62, 0.38], [0.68, 0.32]])
    assert ece([0, 1], P) == pytest.approx(0.53)
    assert nominal_metrics([0, 1], P)["ece"] == pytest.approx(0.53)
    assert ece([0, 1], P, n_bins=10) == pytest.approx(0.15)


def test_nominal_metrics_returns_every_metric_in_order():
    result = nominal_metrics(Y3, P3)
    assert tuple(result) == NOMINAL_METRICS
    assert result == {
        "accuracy": accuracy(Y3, P3), "macro_f1": macro_f1(Y3, P3), "auroc": auroc(Y3, P3),
        "average_precision": average_precision(Y3, P3), "nll": nll(Y3, P3), "ece": ece(Y3, P3),
        "brier": brier(Y3, P3),
    }  # fmt: skip


# ------------------------------------------------------------------------------------------
# Undefined cases warn and return NaN; caller mistakes raise
# ------------------------------------------------------------------------------------------


def test_single_class_y_makes_auroc_and_binary_ap_undefined():
    P = np.array([[0.8, 0.2], [0.4, 0.6]])
    with pytest.warns(UserWarning, match="AUROC is undefined: y has only one class"):
        assert math.isnan(auroc([0, 0], P))
    with pytest.warns(UserWarning, match="average precision is undefined: y has no positive rows"):
        assert math.isnan(average_precision([0, 0], P))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert average_precision([1, 1], P) == pytest.approx(1.0)  # defined: all rows positive


def test_multiclass_average_skips_classes_absent_from_y():
    y = np.array([0, 0, 1, 1])
    P = np.array([[0.6, 0.3, 0.1], [0.5, 0.2, 0.3], [0.2, 0.7, 0.1], [0.3, 0.4, 0.3]])
    with pytest.warns(UserWarning, match=r"AUROC: classes \[2\] lack positive or negative rows"):
        value = auroc(y, P)
    assert value == pytest.approx(1.0)  # class 0 and class 1 both separate perfectly


@pytest.mark.parametrize(
    "y, P, message",
    [
        ([0], [0.5, 0.5], r"`P` must have shape \(n_samples >= 1, n_classes >= 2\); got shape \(2,\)"),
        ([0], [[1.0]], r"got shape \(1, 1\)"),
        ([0, 1], [[0.5, 0.5], [np.nan, 0.5]], r"`P` must be finite; row 1 is \[nan, 0\.5\]"),
        ([0, 1], [[0.5, 0.5], [1.2, -0.2]], r"`P` must hold probabilities in \[0, 1\]; row 1"),
        ([0, 1], [[0.5, 0.5], [0.5, 0.4]], r"Rows of `P` must sum to 1; row 1 sums to 0\.9"),
        ([0, 1, 1], [[0.5, 0.5], [0.5, 0.5]], r"`y` must have shape \(2,\) to match `P`; got shape \(3,\)"),
        ([0, 2], [[0.5, 0.5], [0.5, 0.5]], r"`y` must hold class codes 0\.\.1 \(columns of `P`\); y\[1\] = 2"),
        (["a", "b"], [[0.5, 0.5], [0.5, 0.5]], r"`y` must hold integer class codes 0\.\.1; got dtype <U1"),
        ([0.5, 1], [[0.5, 0.5], [0.5, 0.5]], r"`y` must hold integer class codes"),
    ],
    ids=["1-d P", "one class column", "NaN", "outside [0,1]", "row sum", "length", "code range", "text y", "float y"],
)
@pytest.mark.parametrize("metric", [accuracy, macro_f1, auroc, average_precision, nll, ece, brier, nominal_metrics])
def test_bad_inputs_raise_for_every_metric(metric, y, P, message):
    with pytest.raises(ValueError, match=message):
        metric(y, P)


def test_ece_rejects_bad_bin_counts():
    with pytest.raises(ValueError, match=r"`n_bins` must be a positive int; got 0"):
        ece(Y2, P2, n_bins=0)


def test_float32_probabilities_from_xgboost_are_accepted():
    P = np.array([[0.3, 0.7], [0.9, 0.1]], dtype=np.float32)
    assert accuracy([1, 0], P) == 1.0


# ------------------------------------------------------------------------------------------
# Brute-force twins on random inputs
# ------------------------------------------------------------------------------------------


def _naive_auc(positive: np.ndarray, scores: np.ndarray) -> float:
    pos, neg = scores[positive], scores[~positive]
    wins = sum(1.0 if p > n else 0.5 if p == n else 0.0 for p in pos for n in neg)
    return wins / (len(pos) * len(neg))


def _naive_ap(positive: np.ndarray, scores: np.ndarray) -> float:
    total, ap, previous_recall = positive.sum(), 0.0, 0.0
    for threshold in sorted(set(scores.tolist()), reverse=True):
        selected = scores >= threshold
        tp = (positive & selected).sum()
        recall = tp / total
        ap += (recall - previous_recall) * (tp / selected.sum())
        previous_recall = recall
    return ap


def _naive_ece(y, P, n_bins):
    total = 0.0
    for b in range(n_bins):
        low, high = np.linspace(0, 1, n_bins + 1)[b : b + 2]
        rows = [i for i in range(len(y)) if low < P[i].max() <= high or (b == 0 and P[i].max() == 0)]
        if rows:
            acc = np.mean([P[i].argmax() == y[i] for i in rows])
            conf = np.mean([P[i].max() for i in rows])
            total += len(rows) / len(y) * abs(acc - conf)
    return total


def _naive_macro_f1(y, pred):
    scores = []
    for c in sorted(set(y.tolist()) | set(pred.tolist())):
        tp = np.sum((pred == c) & (y == c))
        fp = np.sum((pred == c) & (y != c))
        fn = np.sum((pred != c) & (y == c))
        scores.append(0.0 if tp == 0 else 2 * tp / (2 * tp + fp + fn))
    return float(np.mean(scores))


@st.composite
def labelled_probabilities(draw):
    n_classes = draw(st.integers(2, 4))
    n = draw(st.integers(2, 25))
    # coarse grid of weights -> many ties, the hard case for rank metrics
    weights = draw(hnp.arrays(np.int64, (n, n_classes), elements=st.integers(0, 4)))
    weights[:, 0] += weights.sum(axis=1) == 0
    P = weights / weights.sum(axis=1, keepdims=True)
    y = draw(hnp.arrays(np.int64, n, elements=st.integers(0, n_classes - 1)))
    return y, P


@given(labelled_probabilities(), st.integers(1, 20))
def test_metrics_match_naive_twins(data, n_bins):
    y, P = data
    n_classes = P.shape[1]
    pred = np.array([int(np.flatnonzero(row == row.max())[0]) for row in P])  # lowest index wins ties
    assert accuracy(y, P) == pytest.approx(np.mean(pred == y))
    assert macro_f1(y, P) == pytest.approx(_naive_macro_f1(y, pred))
    assert ece(y, P, n_bins=n_bins) == pytest.approx(_naive_ece(y, P, n_bins), abs=1e-12)
    assert brier(y, P) == pytest.approx(
        np.mean([sum((P[i, c] - (y[i] == c)) ** 2 for c in range(n_classes)) for i in range(len(y))])
    )
    p_true = np.maximum(P, 1e-12)[np.arange(len(y)), y] / np.maximum(P, 1e-12).sum(axis=1)
    assert nll(y, P) == pytest.approx(-np.mean(np.log(p_true)))

    classes = [1] if n_classes == 2 else range(n_classes)
    auc_defined = [c for c in classes if 0 < np.sum(y == c) < len(y)]
    ap_defined = [c for c in classes if np.sum(y == c) > 0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got_auc, got_ap = auroc(y, P), average_precision(y, P)
    if auc_defined:
        assert got_auc == pytest.approx(np.mean([_naive_auc(y == c, P[:, c]) for c in auc_defined]))
    else:
        assert math.isnan(got_auc)
    if ap_defined:
        assert got_ap == pytest.approx(np.mean([_naive_ap(y == c, P[:, c]) for c in ap_defined]))
    else:
        assert math.isnan(got_ap)


@given(labelled_probabilities(), st.randoms(use_true_random=False))
def test_metrics_are_invariant_to_row_order_and_bounded(data, random):
    y, P = data
    order = list(range(len(y)))
    random.shuffle(order)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a, b = nominal_metrics(y, P), nominal_metrics(y[order], P[order])
    for key in NOMINAL_METRICS:
        assert (math.isnan(a[key]) and math.isnan(b[key])) or a[key] == pytest.approx(b[key], abs=1e-12)
    assert 0 <= a["ece"] <= 1 and 0 <= a["brier"] <= 2 and a["nll"] >= 0
    assert 0 <= a["accuracy"] <= 1 and 0 <= a["macro_f1"] <= 1


@given(labelled_probabilities())
def test_binary_auroc_of_the_swapped_columns_is_one_minus(data):
    y, P = data
    if P.shape[1] != 2 or len(set(y.tolist())) < 2:
        return
    assert auroc(y, P[:, ::-1]) == pytest.approx(1 - auroc(y, P))
