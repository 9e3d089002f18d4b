"""Failure coverage and AUROC of screening scores (SPEC B.5): hand values, brute-force twins, properties."""

import itertools
import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import roc_auc_score

from core.paired.screening import FailureCoverage, failure_auroc, failure_coverage


def brute_force_coverage(risk, failed, budget):
    """Average, over every tie-breaking order, of the failures among the top k, over all failures."""
    risk = np.asarray(risk, dtype=float)
    failed = np.asarray(failed, dtype=float)
    n = risk.size
    k = max(1, math.floor(budget * n + 0.5 + 1e-9))
    n_fail = failed.sum()
    total, count = 0.0, 0
    for tiebreak in itertools.permutations(range(n)):
        order = sorted(range(n), key=lambda i: (-risk[i], tiebreak[i]))
        total += failed[order[:k]].sum()
        count += 1
    return total / count / n_fail, min(1.0, k / n_fail), k


small_cases = st.integers(2, 6).flatmap(
    lambda n: st.tuples(
        st.lists(st.integers(0, 3), min_size=n, max_size=n),  # few distinct risks -> many ties
        st.lists(st.booleans(), min_size=n, max_size=n).filter(any),
        st.sampled_from([0.1, 0.2, 0.3, 0.5, 0.7, 1.0]),
    )
)


@pytest.mark.parametrize(
    "risk, failed, budget, expected",
    [
        # k = 2 cuts the tie {0.5, 0.5} in half: 1 + 0.5 of 2 failures.
        ([0.9, 0.5, 0.5, 0.1], [1, 1, 0, 0], 0.5, FailureCoverage(0.75, 1.0, 0.5, 2, 4, 2, 1.5)),
        # q n = 0.3 rounds to 0, k is at least 1; 1 of 2 failures, ceiling 1/2.
        ([3.0, 2.0, 1.0], [1, 0, 1], 0.1, FailureCoverage(0.5, 0.5, 1 / 3, 1, 3, 2, 1.0)),
        # round half up: q n = 2.5 -> k = 3; the three top risks hold 2 of 3 failures.
        ([5, 4, 3, 2, 1], [0, 1, 1, 0, 1], 0.5, FailureCoverage(2 / 3, 1.0, 0.6, 3, 5, 3, 2.0)),
        # 0.7 * 5 = 3.4999999999999996 in floating point still rounds up to 4.
        ([5, 4, 3, 2, 1], [0, 0, 0, 0, 1], 0.7, FailureCoverage(0.0, 1.0, 0.8, 4, 5, 1, 0.0)),
        # all tied: every image is selected with probability k / n, as random selection.
        ([1, 1, 1, 1, 1], [1, 0, 1, 0, 0], 0.4, FailureCoverage(0.4, 1.0, 0.4, 2, 5, 2, 0.8)),
        # a tie group of 3 straddles k = 2 after one image above: 1/3 of it is taken.
        ([9, 5, 5, 5, 1, 0], [0, 1, 1, 0, 1, 1], 0.3, FailureCoverage(2 / 3 / 4, 0.5, 1 / 3, 2, 6, 4, 2 / 3)),
    ],
    ids=["half-tie", "k-at-least-1", "round-half-up", "float-guard", "all-tied", "third-of-tie"],
)
def test_failure_coverage_hand_values(risk, failed, budget, expected):
    got = failure_coverage(risk, failed, budget)
    for field in ("coverage", "ceiling", "random", "expected_found"):
        assert getattr(got, field) == pytest.approx(getattr(expected, field), abs=1e-12), field
    assert (got.k, got.n, got.n_fail) == (expected.k, expected.n, expected.n_fail)


@given(small_cases)
def test_failure_coverage_equals_average_over_all_tie_breaks(case):
    risk, failed, budget = case
    coverage, ceiling, k = brute_force_coverage(risk, failed, budget)
    got = failure_coverage(risk, failed, budget)
    assert got.coverage == pytest.approx(coverage, abs=1e-12)
    assert got.ceiling == pytest.approx(ceiling, abs=1e-12)
    assert got.k == k


@given(small_cases)
def test_coverage_lies_between_zero_and_the_ceiling_which_the_oracle_attains(case):
    risk, failed, budget = case
    got = failure_coverage(risk, failed, budget)
    assert 0.0 <= got.coverage <= got.ceiling + 1e-12
    oracle = failure_coverage(np.asarray(failed, dtype=float), failed, budget)
    assert oracle.coverage == pytest.approx(oracle.ceiling, abs=1e-12)


@settings(max_examples=40)
@given(
    st.integers(2, 5).flatmap(
        lambda n: st.tuples(
            st.lists(st.booleans(), min_size=n, max_size=n).filter(any), st.sampled_from([0.1, 0.2, 0.5, 0.9])
        )
    )
)
def test_random_ranking_expects_k_over_n(case):
    """Averaged over every assignment of distinct risks to images, coverage is exactly k / n (~ q)."""
    failed, budget = case
    n = len(failed)
    values = []
    for perm in itertools.permutations(range(n)):
        values.append(failure_coverage(np.array(perm, dtype=float), failed, budget).coverage)
    got = failure_coverage(np.zeros(n), failed, budget)
    assert np.mean(values) == pytest.approx(got.random, abs=1e-12)
    assert got.random == pytest.approx(got.k / n)
    assert abs(got.random - budget) <= 0.5 / n + 1e-12 or got.k == 1


@given(
    st.integers(1, 8).flatmap(
        lambda n: st.tuples(
            st.lists(st.integers(0, 4), min_size=n, max_size=n),
            st.lists(st.booleans(), min_size=n, max_size=n),
            st.lists(st.integers(0, 3), min_size=n, max_size=n),
            st.sampled_from([0.1, 0.25, 0.5, 1.0]),
        )
    )
)
def test_integer_weights_equal_repeated_images(case):
    risk, failed, weight, budget = case
    if sum(weight) == 0:
        return
    rep_risk = np.repeat(risk, weight)
    rep_failed = np.repeat(failed, weight)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        weighted = failure_coverage(risk, failed, budget, sample_weight=weight)
        repeated = failure_coverage(rep_risk, rep_failed, budget)
        for field in ("coverage", "ceiling", "random", "expected_found", "k", "n", "n_fail"):
            a, b = getattr(weighted, field), getattr(repeated, field)
            assert (math.isnan(a) and math.isnan(b)) or a == pytest.approx(b, abs=1e-12), field
        if 0 < sum(np.asarray(failed) * weight) < sum(weight):
            assert failure_auroc(risk, failed, sample_weight=weight) == pytest.approx(
                failure_auroc(rep_risk, rep_failed), abs=1e-12
            )


def test_failure_auroc_hand_value_counts_ties_half():
    # positives 0.9, 0.5; negatives 0.5, 0.1: 1 + 1 + 1/2 + 1 of 4 pairs.
    assert failure_auroc([0.9, 0.5, 0.5, 0.1], [1, 1, 0, 0]) == 0.875


@settings(max_examples=50)
@given(
    st.integers(2, 30).flatmap(
        lambda n: st.tuples(
            st.lists(st.integers(0, 6), min_size=n, max_size=n),
            st.lists(st.booleans(), min_size=n, max_size=n),
            st.lists(st.integers(1, 3), min_size=n, max_size=n),
        )
    )
)
def test_failure_auroc_matches_sklearn(case):
    risk, failed, weight = case
    if all(failed) or not any(failed):
        return
    assert failure_auroc(risk, failed) == pytest.approx(roc_auc_score(failed, risk), abs=1e-12)
    assert failure_auroc(risk, failed, sample_weight=weight) == pytest.approx(
        roc_auc_score(failed, risk, sample_weight=weight), abs=1e-12
    )


def test_undefined_metrics_warn_and_return_nan():
    with pytest.warns(UserWarning, match="AUROC is undefined"):
        assert math.isnan(failure_auroc([0.1, 0.2], [1, 1]))
    with pytest.warns(UserWarning, match="no image failed"):
        got = failure_coverage([0.1, 0.2], [0, 0], 0.5)
    assert math.isnan(got.coverage) and math.isnan(got.ceiling) and got.random == 0.5


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(risk=[0.1, 0.2], failed=[1, 0], budget=0.0), "`budget` must be a fraction in \\(0, 1\\]; got 0.0"),
        (dict(risk=[0.1, 0.2], failed=[1, 0], budget=1.5), "got 1.5"),
        (dict(risk=[0.1, 0.2], failed=[1, 0], budget=True), "got True"),
        (dict(risk=[0.1, np.nan], failed=[1, 0], budget=0.5), "element 1 is nan"),
        (dict(risk=[0.1, 0.2], failed=[1, 0, 1], budget=0.5), "`failed` must have the shape"),
        (dict(risk=[0.1, 0.2], failed=[1, 2], budget=0.5), "boolean or 0/1"),
        (dict(risk=[], failed=[], budget=0.5), "non-empty 1-D"),
        (dict(risk=[0.1, 0.2], failed=[1, 0], budget=0.5, sample_weight=[1, -1]), "non-negative integers"),
        (dict(risk=[0.1, 0.2], failed=[1, 0], budget=0.5, sample_weight=[0.5, 1]), "non-negative integers"),
        (dict(risk=[0.1, 0.2], failed=[1, 0], budget=0.5, sample_weight=[0, 0]), "zero everywhere"),
    ],
    ids=[
        "budget-zero",
        "budget-above-one",
        "budget-bool",
        "nan-risk",
        "shape",
        "not-binary",
        "empty",
        "negative-weight",
        "fractional-weight",
        "zero-weights",
    ],
)
def test_bad_input_is_rejected_with_a_specific_message(kwargs, message):
    with pytest.raises(ValueError, match=message):
        failure_coverage(**kwargs)
