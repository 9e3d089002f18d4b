"""Capture against its ceiling and the capture guarantee (core.metrics.capture; issue 40, goals 2-3)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import norm

from core.metrics.capture import CaptureBound, capture_bound, capture_ceiling
from core.metrics.ranking import review_budget, top_k_coverage


# ------------------------------------------------------------------------------------------
# ceiling
# ------------------------------------------------------------------------------------------
def _brute_ceiling(y: np.ndarray, q: float) -> float:
    """The best capture over every choice of the k reviewed rows (every ranking's top k)."""
    k = review_budget(q, len(y))
    best = max(int(y[list(chosen)].sum()) for chosen in itertools.combinations(range(len(y)), k))
    return best / int(y.sum())


@settings(max_examples=150, deadline=None)
@given(
    y=st.lists(st.booleans(), min_size=1, max_size=10).filter(any),
    q=st.floats(0.01, 1.0, allow_nan=False),
)
def test_ceiling_is_the_best_capture_of_any_ranking(y, q):
    y = np.array(y)
    assert capture_ceiling(y, q=q) == pytest.approx(_brute_ceiling(y, q), abs=1e-12)


@settings(max_examples=100, deadline=None)
@given(
    rows=st.lists(st.tuples(st.booleans(), st.integers(0, 5)), min_size=1, max_size=30).filter(
        lambda r: any(b for b, _ in r)
    ),
    q=st.floats(0.01, 1.0, allow_nan=False),
)
def test_no_score_captures_above_the_ceiling_and_a_perfect_one_reaches_it(rows, q):
    y = np.array([b for b, _ in rows])
    s = np.array([v for _, v in rows], dtype=float)
    ceiling = capture_ceiling(y, q=q)
    assert top_k_coverage(y, s, q=q).coverage <= ceiling + 1e-12
    assert top_k_coverage(y, y.astype(float), q=q).coverage == pytest.approx(ceiling, abs=1e-12)
    assert top_k_coverage(y, s, q=q).ceiling == pytest.approx(ceiling, abs=1e-12)


@pytest.mark.parametrize(
    ("y", "q", "expected"),
    [([1] * 4 + [0] * 6, 0.2, 0.5), ([1] + [0] * 9, 0.2, 1.0), ([1] * 10, 0.05, 0.1)],
    ids=["k-below-positives", "k-above-positives", "budget-at-least-one"],
)
def test_ceiling_hand_values(y, q, expected):
    assert capture_ceiling(y, q=q) == expected


def test_ceiling_without_positive_is_nan_and_bad_budget_refused():
    assert math.isnan(capture_ceiling([0, 0, 0], q=0.5))
    with pytest.raises(ValueError, match="budget|q"):
        capture_ceiling([1, 0], q=0.0)


# ------------------------------------------------------------------------------------------
# bound: hand values and invariants
# ------------------------------------------------------------------------------------------
def test_bound_hand_values():
    # 10 rows, brittle at scores 9, 8, 6; k = 3 -> cut at 7, 2 of 3 brittle caught.
    b = capture_bound([1, 1, 0, 1, 0, 0, 0, 0, 0, 0], [9, 8, 7, 6, 5, 4, 3, 2, 1, 0], q=0.3, confidence=0.9)
    eps = math.sqrt(math.log(10) / 6)
    assert (b.k, b.threshold, b.captured, b.n_pos, b.n_reviewed) == (3, 7.0, 2, 3, 3)
    assert b.margin == pytest.approx(eps) and b.lower == pytest.approx(max(0.0, 2 / 3 - eps))
    assert b.review_share == 0.3 and "DKW" in b.method and b.confidence == 0.9
    assert b.review_share_upper == pytest.approx(min(1.0, 0.3 + math.sqrt(math.log(10) / 20)))


def test_ties_at_the_cut_are_reviewed_and_counted():
    b = capture_bound([1, 0, 1, 0], [5, 3, 3, 3], q=0.5)
    assert (b.k, b.threshold, b.n_reviewed, b.captured) == (2, 3.0, 4, 2)


@settings(max_examples=100, deadline=None)
@given(
    rows=st.lists(st.tuples(st.booleans(), st.floats(-5, 5, allow_nan=False)), min_size=1, max_size=40),
    q=st.floats(0.01, 1.0),
    confidence=st.floats(0.5, 0.99),
)
def test_bound_invariants(rows, q, confidence):
    y = np.array([b for b, _ in rows])
    s = np.array([v for _, v in rows])
    b = capture_bound(y, s, q=q, confidence=confidence)
    assert isinstance(b, CaptureBound)
    assert b.n_reviewed >= b.k == review_budget(q, len(y))
    assert b.threshold == np.sort(s)[::-1][b.k - 1]
    if y.any():
        assert 0.0 <= b.lower <= b.capture <= 1.0
        assert b.captured == int((y & (s >= b.threshold)).sum())
        # higher confidence -> a lower (or equal) bound
        assert capture_bound(y, s, q=q, confidence=min(0.995, confidence + 0.005)).lower <= b.lower
    else:
        assert math.isnan(b.lower)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"confidence": 0.4}, "confidence"),
        ({"confidence": 1.0}, "confidence"),
        ({"confidence": True}, "confidence"),
        ({"q": 1.5}, "budget|q"),
    ],
    ids=["below-half", "one", "bool", "budget"],
)
def test_bound_refuses_bad_options(kwargs, match):
    with pytest.raises(ValueError, match=match):
        capture_bound([1, 0], [1.0, 0.0], **({"q": 0.5} | kwargs))


# ------------------------------------------------------------------------------------------
# bound: coverage by simulation with known truth
# ------------------------------------------------------------------------------------------
# Brittle scores ~ N(mu, 1), others ~ N(0, 1), brittle share pi; the truth at the cut t̂ is
# F(t̂) = P(score ≥ t̂ | brittle) = 1 - Φ(t̂ - mu). Each scenario is repeated R = 2000 times
# (seeded). Under-coverage is detected with a one-sided tolerance of 3 binomial standard errors at
# the nominal level: sqrt(0.9 · 0.1 / 2000) ≈ 0.0067, so coverage must be at least 0.88.
_R = 2000
_TOL = 3 * math.sqrt(0.9 * 0.1 / _R)


@pytest.mark.parametrize(
    ("n", "pi", "mu", "q"),
    [(300, 0.1, 1.5, 0.1), (200, 0.25, 1.0, 0.2), (1000, 0.05, 2.0, 0.05), (80, 0.3, 0.5, 0.3)],
    ids=["few-brittle", "mid", "large-rare", "small-weak"],
)
def test_the_bound_covers_the_truth_on_synthetic_data(n, pi, mu, q):
    rng = np.random.default_rng(40)
    covered = share_covered = 0
    lowers = []
    for _ in range(_R):
        y = rng.random(n) < pi
        if not y.any():
            y[0] = True
        s = rng.normal(size=n) + mu * y
        b = capture_bound(y, s, q=q, confidence=0.9)
        truth = float(norm.sf(b.threshold - mu))
        covered += b.lower <= truth
        share = pi * norm.sf(b.threshold - mu) + (1 - pi) * norm.sf(b.threshold)  # P(score ≥ t̂) on new data
        share_covered += share <= b.review_share_upper
        lowers.append(b.lower)
    coverage = covered / _R
    assert coverage >= 0.9 - _TOL, f"coverage {coverage:.4f} below 0.9 - {_TOL:.4f}"
    assert share_covered / _R >= 0.9 - _TOL, f"review-share coverage {share_covered / _R:.4f}"
    assert np.mean(lowers) > 0  # not a trivial bound of 0


def test_the_simulation_detects_an_invalid_bound():
    """The same check fails the point estimate used as a bound (coverage about one half)."""
    rng = np.random.default_rng(40)
    covered = 0
    for _ in range(_R):
        y = rng.random(300) < 0.1
        y[0] = True
        s = rng.normal(size=300) + 1.5 * y
        b = capture_bound(y, s, q=0.1)
        covered += b.capture <= float(norm.sf(b.threshold - 1.5))
    assert covered / _R < 0.9 - _TOL
