"""Near-ties and the RCMA headline (issue 40, goal 1; core.cfc.fds).

The headline is the triple of :func:`core.cfc.fds.rcma_headline`: ``mean_rcma`` (mean RCMA
over the rows with ``|m| ≥ NEAR_TIE_MARGIN``), ``n_near_tie`` and ``median_rcma`` (over every
row), and beside it the shares of :attr:`AuditResult.fragility` (``share_k_le_2``, …). The
property: adding ``t`` near-tied rows, whatever their RCMA, to ``n`` rows

- leaves ``mean_rcma`` unchanged (a change of 0, at most their share ``t / (n + t)``);
- raises ``n_near_tie`` by exactly ``t``;
- changes any share (a mean of a 0/1 indicator) by at most their share ``t / (n + t)``;
- keeps ``median_rcma`` between the old rows' order statistics of ranks ``⌈(n+1)/2⌉ − t`` and
  ``⌊(n+1)/2⌋ + t`` where those exist: the median's rank moves by at most ``t``.

The all-rows mean (the paper's average of RCMA, the headline before) has no such bound: one
near-tie moves it by about ``10⁵`` (the last test shows the property failing for it).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.cfc.fds import EPS, NEAR_TIE_MARGIN, collapse_terms, near_tie, rcma_headline, rcma_headline_text

_margin = st.floats(NEAR_TIE_MARGIN, 25.0, allow_nan=False)
_signed_margin = st.tuples(_margin, st.booleans()).map(lambda p: p[0] if p[1] else -p[0])
_rcma = st.floats(0.0, 50.0, allow_nan=False)
_tied_margin = st.floats(0.0, NEAR_TIE_MARGIN, exclude_max=True, allow_nan=False)
_tied_rcma = st.floats(0.0, 1e12, allow_nan=False)


def _share(flags) -> float:
    return float(np.mean(flags))


@settings(max_examples=200, deadline=None)
@given(
    base=st.lists(st.tuples(_rcma, _signed_margin, st.integers(1, 6)), min_size=1, max_size=60),
    tied=st.lists(st.tuples(_tied_rcma, _tied_margin, st.integers(1, 6)), min_size=1, max_size=20),
)
def test_adding_tied_rows_moves_the_headline_by_at_most_their_share(base, tied):
    n, t = len(base), len(tied)
    rcma, margin, k = (np.array(c, dtype=float) for c in zip(*base))
    rcma2, margin2, k2 = (np.concatenate([a, np.array(b, dtype=float)]) for a, b in zip((rcma, margin, k), zip(*tied)))
    before, after = rcma_headline(rcma, margin), rcma_headline(rcma2, margin2)
    share = t / (n + t)
    assert after["mean_rcma"] == pytest.approx(before["mean_rcma"], rel=1e-12, abs=0)
    assert abs(after["mean_rcma"] - before["mean_rcma"]) <= share
    assert after["n_near_tie"] == before["n_near_tie"] + t
    assert abs(_share(k2 <= 2) - _share(k <= 2)) <= share + 1e-12
    # The median over every row moves by at most t ranks of the old rows (while those ranks exist:
    # with t >= n the tied rows can hold the middle themselves).
    old = np.sort(rcma)
    lo, hi = math.ceil((n + 1) / 2) - t, math.floor((n + 1) / 2) + t
    if lo >= 1:
        assert after["median_rcma"] >= old[lo - 1] - 1e-9
    if hi <= n and math.ceil((n + t + 1) / 2) <= n:
        assert after["median_rcma"] <= old[hi - 1] + 1e-9


def test_the_all_rows_mean_fails_the_same_property():
    """The headline before issue 40: one near-tie (the HMDA row, RCMA 222,293) moves it by ~10^5."""
    rcma, margin = np.full(100, 0.14), np.full(100, 1.2)
    rcma2, margin2 = np.append(rcma, 222_293.0), np.append(margin, 8.9e-7)
    old_change = abs(rcma2.mean() - rcma.mean())
    assert old_change > 2000 > 1 / 101
    assert rcma_headline(rcma2, margin2)["mean_rcma"] == pytest.approx(0.14)


def test_a_tied_row_has_the_papers_rcma_and_is_flagged():
    """RCMA keeps SPEC A.3's ε = 1e-8: a margin of 8.9e-7 that falls to -2 gives ~10^6."""
    traj = np.array([[8.9e-7, -1.0, -2.0], [1.5, 1.0, -2.0]])
    _, rcma = collapse_terms(traj, 2)
    expected = (0 + (8.9e-7 + 1.0) / (8.9e-7 + EPS) + (8.9e-7 + 2.0) / (8.9e-7 + EPS)) / 3
    assert rcma[0] == pytest.approx(expected, rel=1e-12)
    assert near_tie(traj[:, 0]).tolist() == [True, False]


@pytest.mark.parametrize(
    ("margin", "tied"),
    [(0.0, True), (-0.0009999, True), (NEAR_TIE_MARGIN, False), (-NEAR_TIE_MARGIN, False), (0.5, False)],
    ids=["zero", "just-below", "at-threshold", "negative-at-threshold", "clear"],
)
def test_near_tie_is_strictly_below_the_threshold(margin, tied):
    assert near_tie([margin]).tolist() == [tied]


def test_the_threshold_is_a_displayed_coin_flip_for_two_classes():
    """docs/method.md: |m| < 0.001 nats ⇔ p̂ < 1/(1+e^-0.001) ≈ 0.50025, shown as 0.500."""
    p = 1 / (1 + math.exp(-NEAR_TIE_MARGIN))
    assert f"{p:.3f}" == "0.500" and f"{p + 1e-9:.3f}" == "0.500"
    assert near_tie([math.log(0.5002 / 0.4998)]).tolist() == [True]
    assert near_tie([math.log(0.5003 / 0.4997)]).tolist() == [False]


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: near_tie([0.1], threshold=-1.0), "threshold"),
        (lambda: near_tie([[0.1]]), "one-dimensional"),
        (lambda: rcma_headline([0.1, 0.2], [1.0]), "same length"),
    ],
    ids=["negative-threshold", "2d", "lengths"],
)
def test_bad_input_is_refused(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_every_row_tied_gives_nan_mean_and_says_so():
    h = rcma_headline([5e5, 7e5], [0.0, 1e-6])
    assert math.isnan(h["mean_rcma"]) and h["n_near_tie"] == 2 and h["median_rcma"] == 6e5
    assert rcma_headline_text(h, n=2).startswith(
        "mean RCMA – over the 0 predictions that are not near-ties (2 near-ties"
    )
