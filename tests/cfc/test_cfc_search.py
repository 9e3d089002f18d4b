"""Exact and beam flip search (SPEC A.4) against brute-force enumeration."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from cfc_reference import brute_force_exact, naive_beam, random_mlp_problem, random_problem

from core.cfc import Protocol, certify, flip_search, search_summary
from core.cfc.search import exact_levels_within_cap

SEARCH_CASES = [
    (random_problem, 0, 6, 3, None, 3),
    (random_problem, 1, 5, 2, 3, 2),
    (random_problem, 3, 4, 3, 2, 5),
    (random_mlp_problem, 1, 6, 3, None, 2),
    (random_mlp_problem, 2, 6, 4, 6, 1),
    (random_mlp_problem, 4, 7, 2, 4, 3),
]


@pytest.mark.parametrize(
    "problem,seed,G,C,depth,width",
    SEARCH_CASES,
    ids=["linear-G6-3cls", "linear-G5-bin-K3", "linear-G4-K2-B5", "mlp-G6-B2", "mlp-G6-K=G-B1", "mlp-G7-bin-K4"],
)
def test_exact_and_beam_equal_brute_force(problem, seed, G, C, depth, width):
    f, X, groups, xbar = problem(seed, n=15, d=G + 2, n_groups=G, n_classes=C)
    protocol = Protocol(depth=depth, beam_width=width)
    res = flip_search(f, X, groups, xbar, protocol, method="both", batch_size=64)
    K = protocol.resolved_depth(G)
    assert res.depth == K and res.exact_levels == K and not res.exact_capped
    for i in range(X.shape[0]):
        k_ex, subset = brute_force_exact(f, X[i], groups, xbar, depth=K)
        assert res.k_exact[i] == k_ex
        assert res.subset_names("exact", i) == subset
        k_b, b_subset = naive_beam(f, X[i], groups, xbar, depth=K, width=width)
        assert res.k_beam[i] == k_b
        assert res.subset_names("beam", i) == b_subset


def test_hand_example_needs_a_pair():
    # Class 1 iff at least two of three features are on: no single removal flips (1,1,1).
    def proba(Z):
        p1 = (np.asarray(Z).sum(axis=1) >= 2) * 0.8 + 0.1
        return np.column_stack([1 - p1, p1])

    res = flip_search(proba, [[1.0, 1.0, 1.0], [1.0, 1.0, 0.0]], {"a": [0], "b": [1], "c": [2]}, np.zeros(3))
    assert res.k_exact.tolist() == [2.0, 1.0]
    # All pairs tie on the margin: the first pair in combination order is reported.
    assert res.subset_names("exact", 0) == ("a", "b")
    assert res.subset_names("exact", 1) == ("a",)


def test_search_relations_with_greedy():
    f, X, groups, xbar = random_mlp_problem(5, n=60, d=9, n_groups=6, n_classes=3)
    for rule in ("static", "adaptive"):
        cs = certify(f, X, groups, xbar, Protocol(path=rule, beam_width=2), search="both")
        k_star = cs.table["flip_budget"].to_numpy()
        k_exact = cs.table["flip_budget_exact"].to_numpy()
        k_beam = cs.table["flip_budget_beam"].to_numpy()
        if rule == "static":
            assert (k_star > k_exact).any()  # the data contains samples where greedy is not minimal
        # The greedy path and the beam only try subsets, so neither can beat the exact minimum.
        assert (k_exact <= k_star).all() and (k_exact <= k_beam).all()
        # Both look at every single group first.
        np.testing.assert_array_equal(k_exact == 1, k_star == 1)
        np.testing.assert_array_equal(k_beam == 1, k_exact == 1)


def test_beam_of_width_one_is_the_adaptive_greedy_path():
    f, X, groups, xbar = random_mlp_problem(6, n=40, d=8, n_groups=5, n_classes=4)
    cs = certify(f, X, groups, xbar, Protocol(path="adaptive", beam_width=1), search="beam")
    np.testing.assert_array_equal(cs.table["flip_budget_beam"], cs.table["flip_budget"])


def test_wide_beam_is_exact():
    f, X, groups, xbar = random_mlp_problem(7, n=30, d=7, n_groups=5, n_classes=3)
    res = flip_search(f, X, groups, xbar, Protocol(beam_width=math.comb(5, 2)), method="both")
    np.testing.assert_array_equal(res.k_beam, res.k_exact)


def test_exact_cap_gives_nan_not_a_wrong_number():
    f, X, groups, xbar = random_problem(8, n=40, d=8, n_groups=6, n_classes=3)
    # 6 singletons + 15 pairs = 21 <= 25 < 21 + 20 triples: sizes 1 and 2 only.
    assert exact_levels_within_cap(6, 5, 25) == 2
    full = flip_search(f, X, groups, xbar, Protocol(), method="exact")
    with pytest.warns(RuntimeWarning, match="exact_cap=25"):
        capped = flip_search(f, X, groups, xbar, Protocol(exact_cap=25), method="exact")
    assert capped.exact_levels == 2 and capped.exact_capped
    decided = full.k_exact <= 2
    assert decided.any() and (~decided).any()
    np.testing.assert_array_equal(capped.k_exact[decided], full.k_exact[decided])
    assert np.isnan(capped.k_exact[~decided]).all()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        uncapped = flip_search(f, X, groups, xbar, Protocol(), method="exact")
    assert not uncapped.exact_capped


def test_cap_below_the_singletons_leaves_every_sample_undecided():
    f, X, groups, xbar = random_problem(9, n=5, d=6, n_groups=4, n_classes=2)
    with pytest.warns(RuntimeWarning):
        res = flip_search(f, X, groups, xbar, Protocol(exact_cap=3), method="exact")
    assert res.exact_levels == 0 and np.isnan(res.k_exact).all()
    with pytest.warns(RuntimeWarning, match="No sample has a decided k_exact"):
        s = search_summary([1, 2, 3, 4, 5], res.k_exact)
    assert math.isnan(s.exact_match) and s.n_exact == 0


def test_search_summary_hand_values():
    k_star = [1, 3, 4, 2, 6]
    k_exact = [1, 2, 2, 2, np.nan]
    k_beam = [1, 2, 4, 2, 5]
    s = search_summary(k_star, k_exact, k_beam)
    assert (s.n_exact, s.n_beam, s.n_samples) == (4, 5, 5)
    assert s.exact_match == 2 / 4
    assert s.greedy_over == 2 / 4
    assert s.mean_gap == (0 + 1 + 2 + 0) / 4
    assert s.pair_miss == 2 / 4
    assert s.beam_improve == 2 / 5
    only_beam = search_summary(k_star, k_beam=k_beam)
    assert math.isnan(only_beam.exact_match) and only_beam.beam_improve == 2 / 5


def test_certificate_set_search_summary():
    f, X, groups, xbar = random_problem(10, n=20, d=6, n_groups=4, n_classes=3)
    cs = certify(f, X, groups, xbar, search="both")
    s = cs.search_summary()
    direct = search_summary(cs.table["flip_budget"], cs.table["flip_budget_exact"], cs.table["flip_budget_beam"])
    assert s == direct
    with pytest.raises(ValueError, match="No flip search"):
        certify(f, X, groups, xbar).search_summary()


@pytest.mark.parametrize(
    "kwargs,match",
    [
        ({"method": "greedy"}, r"`method` must be one of \('exact', 'beam', 'both'\); got 'greedy'"),
        ({"batch_size": 0}, "`batch_size` must be a positive int"),
        ({"protocol": "default"}, "`protocol` must be a Protocol"),
    ],
)
def test_flip_search_bad_options(kwargs, match):
    f, X, groups, xbar = random_problem(11, n=3, d=4, n_groups=2, n_classes=2)
    with pytest.raises(ValueError, match=match):
        flip_search(f, X, groups, xbar, **kwargs)


def test_summary_bad_input():
    with pytest.raises(ValueError, match="must have the shape of `k_star`"):
        search_summary([1, 2], [1])
    with pytest.raises(ValueError, match="must not contain NaN"):
        search_summary([1, np.nan])


def test_beam_does_not_depend_on_how_samples_are_chunked():
    f, X, groups, xbar = random_mlp_problem(12, n=25, d=8, n_groups=6, n_classes=3)
    protocol = Protocol(beam_width=3)
    # batch_size 20 puts about one sample in each beam chunk; 65536 puts all of them in one.
    small = flip_search(f, X, groups, xbar, protocol, method="beam", batch_size=20)
    large = flip_search(f, X, groups, xbar, protocol, method="beam")
    np.testing.assert_array_equal(small.k_beam, large.k_beam)
    np.testing.assert_array_equal(small.beam_subset, large.beam_subset)
