"""What a review queue catches: its ceiling and a lower confidence bound for new data (SPEC A.6).

A queue at budget ``q`` reviews the ``k = max(1, ⌊q·n + ½⌋)`` highest-scored of ``n`` ranked
predictions (:func:`core.metrics.ranking.review_budget`); its capture is the share of the
``n_pos`` positives (brittle predictions) among them.

- :func:`capture_ceiling`: the best capture any ranking can reach with ``k`` reviews,
  ``min(1, k / n_pos)`` — a perfect ranking puts every positive first.
- :func:`capture_bound`: a lower bound, at a stated confidence, on the share of the positives
  *of new data from the same source* that the rule "review every prediction whose score is at
  least the queue's cut" catches. The cut is chosen on the same rows the bound is computed
  from, so the exact binomial (Clopper–Pearson) argument at that cut does not apply. The
  bound holds uniformly over every cut instead:
  by the one-sided Dvoretzky–Kiefer–Wolfowitz inequality with Massart's constant, for ``B``
  positives drawn i.i.d. from the positives' score distribution,
  ``P(sup_t [F̂(t) − F(t)] > ε) ≤ exp(−2 B ε²)`` where ``F(t) = P(score ≥ t | positive)`` and
  ``F̂`` its empirical share, so with ``ε = √(ln(1/α) / (2B))``, ``F(t) ≥ F̂(t) − ε`` for
  every ``t`` at once with probability at least ``1 − α`` — in particular at the cut the data
  chose. docs/method.md ("A capture guarantee") states the assumptions.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from core.metrics.ranking import check_budget, check_ranking, review_budget

__all__ = ["CaptureBound", "capture_bound", "capture_ceiling", "guarantee_text"]

#: The method :func:`capture_bound` uses, as reported in :attr:`CaptureBound.method`.
METHOD = "DKW (Massart) simultaneous lower band on the positives' score survival"


def capture_ceiling(y_true: ArrayLike, *, q: float) -> float:
    """The best capture any ranking of these rows reaches at budget ``q``: ``min(1, k / n_pos)``.

    Parameters
    ----------
    y_true : array-like of bool or 0/1, shape (n,)
        Positives (brittle predictions).
    q : float
        Review budget in (0, 1]; ``k = max(1, ⌊q·n + ½⌋)`` rows are reviewed.

    Returns
    -------
    float
        In (0, 1]; NaN without positive (capture is undefined then).

    Examples
    --------
    >>> capture_ceiling([1, 1, 1, 1, 0, 0, 0, 0, 0, 0], q=0.2)   # k = 2 of 4 positives
    0.5
    >>> capture_ceiling([1, 0, 0, 0, 0, 0, 0, 0, 0, 0], q=0.2)
    1.0
    """
    check_budget(q)
    y = _binary(y_true)
    n_pos = int(y.sum())
    if n_pos == 0:
        return float("nan")
    return min(1.0, review_budget(q, len(y)) / n_pos)


@dataclass(frozen=True, kw_only=True)
class CaptureBound:
    """A lower confidence bound on what a review queue catches on new data.

    Attributes
    ----------
    lower : float
        With probability at least ``confidence``, a new positive from the same source has a
        score of at least ``threshold`` with probability at least ``lower``: the rule "review
        every prediction scored ``≥ threshold``" catches at least this share of the positives
        of new data. In [0, 1]; NaN without positive.
    threshold : float
        The score at the queue's cut: the ``k``-th highest score (same scale as the scores).
    captured : int
        Positives scored ``≥ threshold`` among the audited rows.
    capture : float
        ``captured / n_pos``: the audited rows' own share (the point estimate).
    margin : float
        ``ε = √(ln(1/(1−confidence)) / (2·n_pos))``; ``lower = max(0, capture − ε)``.
    n, n_pos, k : int
        Ranked rows, positives among them, rows the budget reviews.
    n_reviewed : int
        Rows scored ``≥ threshold`` (``k`` plus the rows tied with the cut).
    review_share : float
        ``n_reviewed / n``: about the share of new predictions the rule sends to review.
    review_share_upper : float
        With probability at least ``confidence`` (on its own; both bounds together at least
        ``2·confidence − 1``), the rule sends at most this share of new predictions to review:
        ``min(1, review_share + √(ln(1/(1−confidence)) / (2n)))``, the same DKW band over all
        ``n`` ranked rows.
    budget : float
    confidence : float
    method : str
    """

    lower: float
    threshold: float
    captured: int
    capture: float
    margin: float
    n: int
    n_pos: int
    k: int
    n_reviewed: int
    review_share: float
    review_share_upper: float
    budget: float
    confidence: float
    method: str = METHOD


def capture_bound(y_true: ArrayLike, y_score: ArrayLike, *, q: float, confidence: float = 0.9) -> CaptureBound:
    """Lower confidence bound on the share of new positives the queue at budget ``q`` catches.

    The queue's cut is the ``k``-th highest score (``k = max(1, ⌊q·n + ½⌋)``); the rule is
    "review every prediction scored at least that". Treating the audited rows as i.i.d. draws
    from the source new data comes from (exchangeable with it), the share of new positives the
    rule catches is at least ``lower`` with probability ``confidence`` over the audited rows;
    this holds although the cut is chosen on those rows, because the DKW band behind it holds
    for every cut at once (module docstring; docs/method.md).

    Parameters
    ----------
    y_true : array-like of bool or 0/1, shape (n,)
        Positives (brittle predictions).
    y_score : array-like of shape (n,)
        Risk score, larger = riskier; NaN refused.
    q : float
        Review budget in (0, 1].
    confidence : float, default=0.9
        In [0.5, 1): Massart's constant holds for ``exp(−2Bε²) ≤ ½``.

    Returns
    -------
    CaptureBound

    Examples
    --------
    >>> b = capture_bound([1, 1, 0, 1, 0, 0, 0, 0, 0, 0], [9, 8, 7, 6, 5, 4, 3, 2, 1, 0], q=0.3)
    >>> b.k, b.threshold, b.captured, round(b.capture, 3), round(b.margin, 3), round(b.lower, 3)
    (3, 7.0, 2, 0.667, 0.619, 0.047)
    """
    check_budget(q)
    if isinstance(confidence, bool) or not isinstance(confidence, (int, float, np.floating)):
        raise ValueError(f"`confidence` must be a number in [0.5, 1); got {confidence!r}.")
    if not 0.5 <= confidence < 1:
        raise ValueError(f"`confidence` must be in [0.5, 1); got {confidence!r}.")
    y, s, _ = check_ranking(y_true, y_score)
    n = len(y)
    if n == 0:
        raise ValueError("`y_true` is empty: no prediction to rank.")
    k = review_budget(q, n)
    threshold = float(np.sort(s)[::-1][k - 1])
    above = s >= threshold
    n_pos = int(y.sum())
    captured = int((above & y).sum())
    if n_pos == 0:
        capture = margin = lower = float("nan")
    else:
        capture = captured / n_pos
        margin = math.sqrt(math.log(1.0 / (1.0 - confidence)) / (2.0 * n_pos))
        lower = max(0.0, capture - margin)
    n_reviewed = int(above.sum())
    review_margin = math.sqrt(math.log(1.0 / (1.0 - confidence)) / (2.0 * n))
    return CaptureBound(
        lower=lower,
        threshold=threshold,
        captured=captured,
        capture=capture,
        margin=margin,
        n=n,
        n_pos=n_pos,
        k=k,
        n_reviewed=n_reviewed,
        review_share=n_reviewed / n,
        review_share_upper=min(1.0, n_reviewed / n + review_margin),
        budget=float(q),
        confidence=float(confidence),
    )


def guarantee_text(bound: CaptureBound) -> str:
    """The guarantee in words, as Triage and the report state it.

    Examples
    --------
    >>> b = capture_bound([1] * 30 + [0] * 270, list(range(300, 0, -1)), q=0.1)
    >>> guarantee_text(b)
    'reviewing the top 10 % catches at least 80 % of brittle cases (90 % confidence)'
    """
    if not math.isfinite(bound.lower):
        return f"reviewing the top {_percent(bound.budget)} %: no guarantee, no brittle case to learn from"
    return (
        f"reviewing the top {_percent(bound.budget)} % catches at least {math.floor(100 * bound.lower)} % of "
        f"brittle cases ({_percent(bound.confidence)} % confidence)"
    )


def _percent(share: float) -> str:
    return f"{100 * share:.3g}"


def _binary(y_true: ArrayLike) -> np.ndarray:
    y = np.asarray(y_true)
    if y.ndim != 1:
        raise ValueError(f"`y_true` must be one-dimensional; got shape {y.shape}.")
    if y.dtype != bool:
        values = set(np.unique(y).tolist())
        if not values <= {0, 1}:
            raise ValueError(f"`y_true` must be binary (bool or 0/1); got values {sorted(values)[:5]}.")
        y = y.astype(bool)
    return y
