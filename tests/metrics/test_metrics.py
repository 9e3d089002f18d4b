"""core.metrics against independent references: sklearn, pairwise counts, every tie-break order."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from sklearn.metrics import brier_score_loss, log_loss, roc_auc_score

from core.exceptions import AuditWarning, UndefinedMetricWarning
from core.metrics import calibration, ranking
from core.metrics.ranking import (
    aurc,
    expected_top_positives,
    review_budget,
    roc_auc,
    roc_auc_rows,
    top_k_coverage,
    top_k_coverage_rows,
)

small_cases = st.integers(2, 7).flatmap(
    lambda n: st.tuples(
        st.lists(st.sampled_from([0.0, 0.3, 0.5, 0.9]), min_size=n, max_size=n),
        st.lists(st.booleans(), min_size=n, max_size=n),
    )
)


def _pairwise_auc(y, s):
    pos = [a for a, t in zip(s, y) if t]
    neg = [a for a, t in zip(s, y) if not t]
    wins = sum(1.0 if p > q else 0.5 if p == q else 0.0 for p in pos for q in neg)
    return wins / (len(pos) * len(neg))


def _tie_break_orders(s):
    """Every ranking consistent with ``s`` descending (ties in every order), as index lists."""
    n = len(s)
    for perm in itertools.permutations(range(n)):
        if all(s[perm[i]] >= s[perm[i + 1]] for i in range(n - 1)):
            yield perm


def test_hand_values():
    y, s = [1, 0, 1, 0], [0.9, 0.8, 0.8, 0.1]
    assert roc_auc(y, s) == 0.875
    assert expected_top_positives(y, s).tolist() == [0.0, 1.0, 1.5, 2.0, 2.0]
    r = top_k_coverage(y, s, q=0.5)
    assert (r.coverage, r.ceiling, r.random, r.k, r.n, r.n_pos, r.expected_found) == (0.75, 1.0, 0.5, 2, 4, 2, 1.5)
    # residual rates after j = 0..3 escalations: 2/4, 1/3, 0.5/2, 0/1
    assert aurc(y, s) == pytest.approx((0.5 + 1 / 3 + 0.25 + 0.0) / 4, abs=1e-15)


@pytest.mark.parametrize(
    ("q", "n", "k"), [(0.05, 30, 2), (0.2, 7, 1), (0.01, 10, 1), (0.25, 10, 3), (1.0, 5, 5), (0.5, 3, 2), (0.1, 25, 3)]
)
def test_review_budget_rounds_half_up(q, n, k):
    assert review_budget(q, n) == k == max(1, math.floor(q * n + 0.5 + 1e-9))


@given(small_cases)
def test_roc_auc_matches_sklearn_and_pairwise(case):
    s, y = case
    if 0 < sum(y) < len(y):
        assert roc_auc(y, s) == pytest.approx(roc_auc_score(y, s), abs=1e-12)
        assert roc_auc(y, s) == pytest.approx(_pairwise_auc(y, s), abs=1e-12)


def test_roc_auc_large_random_matches_sklearn():
    rng = np.random.default_rng(3)
    s = rng.integers(0, 50, 5000).astype(float)  # many ties
    y = rng.random(5000) < 0.3
    assert roc_auc(y, s) == pytest.approx(roc_auc_score(y, s), abs=1e-12)


@given(small_cases, st.lists(st.integers(0, 3), min_size=7, max_size=7))
def test_weights_equal_repetition(case, w):
    s, y = case
    w = np.asarray(w[: len(s)], dtype=float)
    if w.sum() == 0:
        return
    rep_s, rep_y = np.repeat(s, w.astype(int)), np.repeat(y, w.astype(int))
    weighted = top_k_coverage(y, s, q=0.5, sample_weight=w) if any(rep_y) else None
    if weighted is not None:
        assert weighted.coverage == pytest.approx(top_k_coverage(rep_y, rep_s, q=0.5).coverage, abs=1e-12)
    if 0 < rep_y.sum() < rep_y.size:
        assert roc_auc(y, s, sample_weight=w) == pytest.approx(roc_auc_score(rep_y, rep_s), abs=1e-12)


@given(small_cases, st.sampled_from([0.1, 0.25, 0.5, 0.8, 1.0]))
def test_coverage_is_the_average_over_tie_breaks(case, q):
    s, y = case
    if not any(y):
        return
    k = review_budget(q, len(s))
    orders = list(_tie_break_orders(s))
    brute = np.mean([sum(y[i] for i in order[:k]) for order in orders]) / sum(y)
    assert top_k_coverage(y, s, q=q).coverage == pytest.approx(brute, abs=1e-12)
    curve = np.mean([np.r_[0, np.cumsum([y[i] for i in order])] for order in orders], axis=0)
    np.testing.assert_allclose(expected_top_positives(y, s), curve, atol=1e-12)
    n = len(s)
    brute_aurc = np.mean(
        [np.mean([(sum(y) - sum(y[i] for i in order[:j])) / (n - j) for j in range(n)]) for order in orders]
    )
    assert aurc(y, s) == pytest.approx(brute_aurc, abs=1e-12)


def test_rows_kernels_match_the_scalar_functions():
    rng = np.random.default_rng(0)
    s = rng.integers(0, 5, 40).astype(float)
    Y = (rng.random((6, 40)) < 0.4).astype(float)
    W = rng.integers(0, 3, (6, 40)).astype(float)
    auc = roc_auc_rows(Y, s, W)
    cov = top_k_coverage_rows(Y, s, W, 0.2)
    for r in range(6):
        assert auc[r] == pytest.approx(roc_auc(Y[r], s, sample_weight=W[r]), abs=1e-12)
        assert cov.coverage[r] == pytest.approx(top_k_coverage(Y[r], s, q=0.2, sample_weight=W[r]).coverage, abs=1e-12)


def test_undefined_values_warn_with_the_named_class():
    with pytest.warns(UndefinedMetricWarning, match="only one class"):
        assert math.isnan(roc_auc([1, 1], [0.1, 0.2]))
    with pytest.warns(UndefinedMetricWarning, match="no positive"):
        assert math.isnan(top_k_coverage([0, 0], [0.1, 0.2], q=0.5).coverage)
    assert aurc([0, 0], [0.1, 0.2]) == 0.0
    assert issubclass(UndefinedMetricWarning, AuditWarning)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: roc_auc([0, 1], [0.1, np.nan]), r"`y_score` contains NaN \(first at position 1\)"),
        (lambda: roc_auc([0, 1, 1], [0.1, 0.2]), r"`y_true` must have the shape of `y_score` \(2,\)"),
        (lambda: roc_auc([[0, 1]], [[0.1, 0.2]]), "1-D"),
        (lambda: roc_auc([0, 2], [0.1, 0.2]), "0/1; got the value 2"),
        (lambda: roc_auc([], []), "empty"),
        (lambda: roc_auc([0, 1], [0.1, 0.2], sample_weight=[1, -1]), "non-negative integers"),
        (lambda: top_k_coverage([0, 1], [0.1, 0.2], q=0.0), r"`q` must be a fraction in \(0, 1\]; got 0.0"),
        (lambda: top_k_coverage([0, 1], [0.1, 0.2], q=True), "got True"),
        (lambda: ranking.check_ranking([0, 1], [0.1, np.inf], allow_inf=False), "element 1 is inf"),
    ],
    ids=["nan", "shape", "2d", "label", "empty", "weight", "q-zero", "q-bool", "inf"],
)
def test_bad_input(call, match):
    with pytest.raises(ValueError, match=match):
        call()


# ------------------------------------------------------------------------------------------
# calibration

probas = st.integers(1, 6).flatmap(
    lambda n: st.tuples(
        st.lists(st.integers(0, 2), min_size=n, max_size=n),
        st.lists(st.lists(st.floats(0.01, 1.0), min_size=3, max_size=3), min_size=n, max_size=n),
    )
)


@given(probas)
def test_nll_and_brier_match_sklearn(case):
    y, raw = case
    P = np.asarray(raw) / np.asarray(raw).sum(axis=1, keepdims=True)
    assert calibration.nll(y, P) == pytest.approx(log_loss(y, P, labels=[0, 1, 2]), abs=1e-9)
    onehot = np.eye(3)[y]
    assert calibration.brier(y, P) == pytest.approx(np.mean(((P - onehot) ** 2).sum(axis=1)), abs=1e-12)


def test_binary_brier_is_twice_sklearns():
    y, p1 = np.array([0, 1, 1, 0]), np.array([0.2, 0.7, 0.4, 0.1])
    P = np.c_[1 - p1, p1]
    assert calibration.brier(y, P) == pytest.approx(2 * brier_score_loss(y, p1), abs=1e-12)


@given(probas, st.integers(1, 12))
def test_ece_matches_a_loop_over_bins(case, n_bins):
    y, raw = case
    P = np.asarray(raw) / np.asarray(raw).sum(axis=1, keepdims=True)
    conf, pred = P.max(axis=1), P.argmax(axis=1)
    total = 0.0
    edges = np.linspace(0.0, 1.0, n_bins + 1)  # the same float edges, so a boundary falls alike
    for b in range(n_bins):
        lo, hi = edges[b], edges[b + 1]
        inside = [i for i in range(len(y)) if (lo < conf[i] <= hi) or (b == 0 and conf[i] <= hi)]
        if inside:
            acc = np.mean([pred[i] == y[i] for i in inside])
            total += len(inside) / len(y) * abs(acc - np.mean(conf[inside]))
    assert calibration.ece(y, P, n_bins=n_bins) == pytest.approx(total, abs=1e-9)


def test_calibration_bad_input_names_the_parameter():
    with pytest.raises(ValueError, match=r"`y_prob` must have shape"):
        calibration.nll([0], [0.5, 0.5])
    with pytest.raises(
        ValueError, match=r"`y_true` must hold class codes 0\.\.1 \(columns of `y_prob`\); y_true\[1\] = 2"
    ):
        calibration.brier([0, 2], [[0.5, 0.5], [0.5, 0.5]])
    with pytest.raises(ValueError, match=r"`n_bins` must be a positive int; got 0"):
        calibration.ece([0], [[0.5, 0.5]], n_bins=0)
