"""Ranking metrics of a risk score against binary outcomes: the one home (SPEC A.6, B.5).

Every function takes ``(y_true, y_score, *, ...)`` in scikit-learn's order: ``y_true`` the
binary positives (brittle, failed, misclassified), ``y_score`` a risk score oriented
**larger = riskier** (more likely positive). All metrics are expected values under uniformly
random tie-breaking, so a constant score is exactly as good as a random ranking:

- :func:`roc_auc`: ``P(s_pos > s_neg) + ½·P(s_pos = s_neg)`` (Mann–Whitney, ties ½).
- :func:`review_budget`: ``k = max(1, ⌊q·n + ½⌋)`` reviewed samples (half-up rounding).
- :func:`top_k_coverage`: share of the positives among the top ``k``; the tie block that
  the cut-off falls into is *prorated* (each member is selected with probability
  ``(k − #above) / #tied``), with the attainable ceiling ``min(1, k / n_pos)``.
- :func:`expected_top_positives`: ``E[#positives in the top k]`` for every ``k`` (the curve
  behind capture and AURC).
- :func:`aurc`: mean residual positive rate after escalating ``j = 0 … n−1`` samples from
  the highest score down (lower is better).

The row kernels :func:`roc_auc_rows` and :func:`top_k_coverage_rows` evaluate one score
against many outcome / weight rows at once (bootstrap draws, conditions); they do no
validation, the public functions validate through :func:`check_ranking`.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from core.exceptions import UndefinedMetricWarning
from core.validation import check_budget  # re-exported: the one home of the scalar checks

__all__ = [
    "CoverageRows",
    "TopKCoverage",
    "aurc",
    "aurc_from_curve",
    "budget_sizes",
    "capture_from_curve",
    "check_budget",
    "check_ranking",
    "expected_top_positives",
    "review_budget",
    "roc_auc",
    "roc_auc_rows",
    "tie_starts",
    "top_k_coverage",
    "top_k_coverage_rows",
]


def _py(value):
    """Plain Python scalar for messages (numpy 2 reprs read ``np.float64(1.5)``)."""
    return value.item() if isinstance(value, np.generic) else value


# ------------------------------------------------------------------------------------------
# validation
# ------------------------------------------------------------------------------------------
def check_ranking(
    y_true: ArrayLike,
    y_score: ArrayLike,
    *,
    sample_weight: ArrayLike | None = None,
    allow_inf: bool = True,
    label_name: str = "y_true",
    score_name: str = "y_score",
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Validate a binary ranking problem; return ``(y_true bool, y_score float64, weight)``.

    Parameters
    ----------
    y_true : array-like of bool or 0/1, shape (n,)
    y_score : array-like of shape (n,)
        Risk score; NaN is refused (a ranking score must be defined for every sample),
        ``±inf`` too unless ``allow_inf``.
    sample_weight : array-like of non-negative int, shape (n,), optional
        Multiplicities; ``None`` is returned as ``None``.
    allow_inf : bool, default=True
    label_name, score_name : str
        The caller's parameter names, echoed in the messages.

    Examples
    --------
    >>> check_ranking([1, 0], [0.2, 0.1])[0].tolist()
    [True, False]
    """
    s = np.asarray(y_score, dtype=np.float64)
    y = np.asarray(y_true)
    if s.ndim != 1 or s.size == 0:
        raise ValueError(
            f"`{score_name}` must be a non-empty 1-D array of shape (n_samples,); got shape {s.shape}"
            f"{' (empty)' if s.size == 0 else ''}."
        )
    if y.shape != s.shape:
        raise ValueError(
            f"`{label_name}` must have the shape of `{score_name}` {s.shape} (the same shape: one "
            f"label per score); got {y.shape}."
        )
    if allow_inf:
        if np.isnan(s).any():
            bad = int(np.flatnonzero(np.isnan(s))[0])
            raise ValueError(
                f"`{score_name}` contains NaN (first at position {bad}); a ranking score must be "
                "defined for every sample."
            )
    elif not np.all(np.isfinite(s)):
        i = int(np.flatnonzero(~np.isfinite(s))[0])
        raise ValueError(
            f"`{score_name}` must be finite; element {i} is {_py(s[i])!r} (drop images without a score first)."
        )
    if y.dtype != bool:
        binary = np.isin(y, (0, 1))
        if not binary.all():
            bad = y[~binary][0]
            raise ValueError(f"`{label_name}` must be boolean or 0/1; got the value {_py(bad)!r}.")
        y = y.astype(bool)
    weight = None
    if sample_weight is not None:
        weight = np.asarray(sample_weight, dtype=np.float64)
        if weight.shape != s.shape:
            raise ValueError(f"`sample_weight` must have the shape of `{score_name}` {s.shape}; got {weight.shape}.")
        if not np.all(np.isfinite(weight)) or np.any(weight < 0) or np.any(weight != np.round(weight)):
            raise ValueError("`sample_weight` must hold non-negative integers (sample multiplicities).")
        if weight.sum() == 0:
            raise ValueError("`sample_weight` is zero everywhere; there is no sample to rank.")
    return y, s, weight


# ------------------------------------------------------------------------------------------
# budget and tie blocks
# ------------------------------------------------------------------------------------------
def budget_sizes(q: float, n: ArrayLike) -> np.ndarray:
    """``max(1, ⌊q·n + ½⌋)`` for every entry of ``n`` (float64; no validation, no cap at ``n``).

    The ``1e-9`` guards products such as ``0.05 * 30 = 1.4999999999999998``.

    Examples
    --------
    >>> budget_sizes(0.05, [30, 10]).tolist()
    [2.0, 1.0]
    """
    return np.maximum(1.0, np.floor(float(q) * np.asarray(n, dtype=np.float64) + 0.5 + 1e-9))


def review_budget(q: float, n: int) -> int:
    """Number of samples reviewed under a budget of ``q`` (a fraction) of ``n`` samples.

    ``k = max(1, ⌊q·n + ½⌋)`` (half-up rounding, unlike Python's round-half-even), capped at ``n``.

    Examples
    --------
    >>> review_budget(0.05, 30), review_budget(0.2, 7), review_budget(0.01, 10)
    (2, 1, 1)
    """
    q = check_budget(q)
    if n < 1:
        raise ValueError(f"`n` must be at least 1; got {n}.")
    return int(min(n, budget_sizes(q, n)))


def tie_starts(sorted_scores: np.ndarray) -> np.ndarray:
    """Start index of every maximal run of equal values in a sorted 1-D array.

    Examples
    --------
    >>> tie_starts(np.array([3.0, 2.0, 2.0, 1.0])).tolist()
    [0, 1, 3]
    """
    return np.flatnonzero(np.r_[True, sorted_scores[1:] != sorted_scores[:-1]])


# ------------------------------------------------------------------------------------------
# AUROC
# ------------------------------------------------------------------------------------------
def roc_auc_rows(y_true: np.ndarray, y_score: np.ndarray, sample_weight: np.ndarray) -> np.ndarray:
    """AUROC (ties ½) of one score against every row of ``y_true`` / ``sample_weight``.

    Parameters
    ----------
    y_true : ndarray of float 0/1, shape (R, n)
    y_score : ndarray of shape (n,)
        Risk score, larger = riskier; ``±inf`` allowed.
    sample_weight : ndarray of shape (R, n)
        Row-wise multiplicities.

    Returns
    -------
    ndarray of shape (R,)
        NaN for a row without both classes (no warning: the caller words it).
    """
    order = np.argsort(y_score, kind="stable")
    starts = tie_starts(y_score[order])
    pos = np.add.reduceat((sample_weight * y_true)[:, order], starts, axis=1)
    neg = np.add.reduceat((sample_weight * (1.0 - y_true))[:, order], starts, axis=1)
    below = np.cumsum(neg, axis=1) - neg
    n_pos, n_neg = pos.sum(axis=1), neg.sum(axis=1)
    num = (pos * (below + 0.5 * neg)).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where((n_pos > 0) & (n_neg > 0), num / (n_pos * n_neg), np.nan)


def roc_auc(y_true: ArrayLike, y_score: ArrayLike, *, sample_weight: ArrayLike | None = None) -> float:
    """Area under the ROC curve of a risk score, ties counted ½ (= ``sklearn.metrics.roc_auc_score``).

    Parameters
    ----------
    y_true : array-like of bool or 0/1, shape (n,)
    y_score : array-like of shape (n,)
        Risk score, larger = riskier (more likely positive).
    sample_weight : array-like of non-negative int, shape (n,), optional
        Multiplicities: the AUROC of the data with every sample repeated that many times.

    Returns
    -------
    float
        ``NaN`` with an :class:`~core.exceptions.UndefinedMetricWarning` when only one class
        is present.

    Examples
    --------
    >>> roc_auc([1, 0, 1, 0], [0.9, 0.8, 0.8, 0.1])
    0.875
    """
    y, s, w = check_ranking(y_true, y_score, sample_weight=sample_weight)
    w = np.ones_like(s) if w is None else w
    value = float(roc_auc_rows(y.astype(np.float64)[None], s, w[None])[0])
    if math.isnan(value):
        warnings.warn(
            "AUROC is undefined: the labels contain only one class; returning NaN.",
            UndefinedMetricWarning,
            stacklevel=2,
        )
    return value


# ------------------------------------------------------------------------------------------
# top-k coverage (capture)
# ------------------------------------------------------------------------------------------
@dataclass(frozen=True, kw_only=True)
class CoverageRows:
    """:func:`top_k_coverage_rows` for ``R`` rows; every field has shape ``(R,)`` (float64).

    Attributes
    ----------
    coverage : expected share of the positives among the top ``k`` (NaN without positive).
    ceiling : ``min(1, k / n_pos)`` (NaN without positive).
    random : ``min(k, n) / n``, the expected coverage of ``k`` random samples.
    k : ``max(1, round(q n))``.
    n, n_pos : ranked samples and positives among them (weighted counts).
    found : ``coverage · n_pos``, the expected positives found.
    """

    coverage: np.ndarray
    ceiling: np.ndarray
    random: np.ndarray
    k: np.ndarray
    n: np.ndarray
    n_pos: np.ndarray
    found: np.ndarray


def top_k_coverage_rows(y_true: np.ndarray, y_score: np.ndarray, sample_weight: np.ndarray, q: float) -> CoverageRows:
    """Prorated top-``k`` coverage of one score against every row of ``y_true`` / ``sample_weight``.

    Parameters
    ----------
    y_true : ndarray of float 0/1, shape (R, n)
    y_score : ndarray of shape (n,)
    sample_weight : ndarray of shape (R, n)
    q : float
        Budget fraction in (0, 1] (not validated here).
    """
    order = np.argsort(-y_score, kind="stable")
    starts = tie_starts(y_score[order])
    size = np.add.reduceat(sample_weight[:, order], starts, axis=1)
    pos = np.add.reduceat((sample_weight * y_true)[:, order], starts, axis=1)
    n = size.sum(axis=1)
    n_pos = pos.sum(axis=1)
    k = budget_sizes(q, n)
    before = np.cumsum(size, axis=1) - size
    take = np.clip(k[:, None] - before, 0.0, size)
    # The cut-off tie block is selected in part: each member is equally likely to be chosen.
    share = np.divide(take, size, out=np.zeros_like(take), where=size > 0)
    found = (pos * share).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        coverage = np.where(n_pos > 0, found / n_pos, np.nan)
        ceiling = np.where(n_pos > 0, np.minimum(1.0, k / n_pos), np.nan)
        random = np.where(n > 0, np.minimum(k, n) / n, np.nan)
    return CoverageRows(coverage=coverage, ceiling=ceiling, random=random, k=k, n=n, n_pos=n_pos, found=found)


@dataclass(frozen=True, kw_only=True)
class TopKCoverage:
    """Coverage of the positives by the top ``q`` fraction of a risk ranking.

    Attributes
    ----------
    coverage : float
        Expected share of all positives among the ``k`` selected, cut-off ties prorated.
        NaN without positive.
    ceiling : float
        Attainable maximum ``min(1, k / n_pos)``; NaN without positive.
    random : float
        ``k / n``: the expected coverage of ``k`` samples drawn at random.
    k, n, n_pos : int
        Selected, ranked, positive (weighted counts with ``sample_weight``).
    expected_found : float
        ``coverage · n_pos``.
    """

    coverage: float
    ceiling: float
    random: float
    k: int
    n: int
    n_pos: int
    expected_found: float


def top_k_coverage(
    y_true: ArrayLike, y_score: ArrayLike, *, q: float, sample_weight: ArrayLike | None = None
) -> TopKCoverage:
    """Share of the positives found by reviewing the top ``q`` fraction of a risk ranking.

    ``k = max(1, round(q n))`` samples with the largest score are selected; a tie block
    straddling the ``k``-th place is prorated (expected value under random tie-breaking).

    Parameters
    ----------
    y_true : array-like of bool or 0/1, shape (n,)
    y_score : array-like of shape (n,)
        Risk score, larger = riskier.
    q : float
        Budget fraction in (0, 1].
    sample_weight : array-like of non-negative int, shape (n,), optional

    Returns
    -------
    TopKCoverage
        ``coverage`` NaN with an :class:`~core.exceptions.UndefinedMetricWarning` without positive.

    Examples
    --------
    >>> r = top_k_coverage([1, 1, 0, 0], [0.9, 0.5, 0.5, 0.1], q=0.5)
    >>> r.coverage, r.ceiling, r.random, r.k
    (0.75, 1.0, 0.5, 2)
    """
    y, s, w = check_ranking(y_true, y_score, sample_weight=sample_weight)
    q = check_budget(q)
    w = np.ones_like(s) if w is None else w
    rows = top_k_coverage_rows(y.astype(np.float64)[None], s, w[None], q)
    if rows.n_pos[0] == 0:
        warnings.warn(
            "Top-k coverage is undefined: there is no positive sample; returning NaN.",
            UndefinedMetricWarning,
            stacklevel=2,
        )
    return TopKCoverage(
        coverage=float(rows.coverage[0]),
        ceiling=float(rows.ceiling[0]),
        random=float(rows.random[0]),
        k=int(rows.k[0]),
        n=int(rows.n[0]),
        n_pos=int(rows.n_pos[0]),
        expected_found=float(rows.found[0]),
    )


# ------------------------------------------------------------------------------------------
# the expected-positives curve, capture and AURC
# ------------------------------------------------------------------------------------------
def _expected_top_positives(y: np.ndarray, s: np.ndarray) -> np.ndarray:
    order = np.argsort(-s, kind="stable")
    s_sorted, y_sorted = s[order], y[order].astype(float)
    n = s.size
    starts = tie_starts(s_sorted)
    sizes = np.diff(np.r_[starts, n])
    block_pos = np.add.reduceat(y_sorted, starts)
    pos_before = np.r_[0.0, np.cumsum(block_pos)[:-1]]
    b = np.repeat(np.arange(starts.size), sizes)  # block holding rank k (1-based) - 1
    k = np.arange(1, n + 1)
    expected = pos_before[b] + (k - starts[b]) * block_pos[b] / sizes[b]
    return np.r_[0.0, expected]


def expected_top_positives(y_true: ArrayLike, y_score: ArrayLike) -> np.ndarray:
    """Expected number of positives among the ``k`` highest scores, for every ``k``.

    Within a block of tied scores the order is uniformly random, so a block of size ``t``
    holding ``p`` positives contributes ``p/t`` expected positives per rank taken from it.

    Parameters
    ----------
    y_true : array-like of bool or 0/1, shape (n,)
    y_score : array-like of shape (n,)
        Risk scores, larger = riskier.

    Returns
    -------
    ndarray of shape (n + 1,)
        Entry ``k`` is ``E[#positives in the top k]``; entry 0 is 0, entry ``n`` is ``Σ y_true``.

    Examples
    --------
    >>> expected_top_positives([1, 0, 1, 0], [0.9, 0.8, 0.8, 0.1]).tolist()
    [0.0, 1.0, 1.5, 2.0, 2.0]
    """
    y, s, _ = check_ranking(y_true, y_score)
    return _expected_top_positives(y, s)


def capture_from_curve(curve: np.ndarray, q: float) -> float:
    """``curve[k] / curve[n]`` with ``k = review_budget(q, n)``; NaN without positive.

    ``curve`` is the output of :func:`expected_top_positives` (shape ``(n + 1,)``).
    """
    n = curve.size - 1
    total = curve[-1]
    if total == 0:
        return math.nan
    return float(curve[review_budget(q, n)] / total)


def aurc_from_curve(curve: np.ndarray) -> float:
    """AURC from the :func:`expected_top_positives` curve (shape ``(n + 1,)``)."""
    n = curve.size - 1
    residual = (curve[-1] - curve[:-1]) / (n - np.arange(n))
    return float(residual.mean())


def aurc(y_true: ArrayLike, y_score: ArrayLike) -> float:
    """Area under the residual risk–coverage curve of an escalation ranking (lower is better).

    Samples are escalated from the highest score down. After ``j`` escalations
    (``j = 0 … n−1``) the residual risk is the expected positive rate among the ``n − j``
    samples not yet escalated (ties prorated); AURC is the mean over these ``n`` coverages.
    With ``p`` positives among ``n``, a perfect ranking gives ``(1/n) Σ_j (p−j)⁺/(n−j)`` and a
    constant score gives exactly ``p/n``.

    Returns
    -------
    float
        In [0, 1]; 0 when there is no positive.

    Examples
    --------
    >>> round(aurc([1, 0, 1, 0], [0.9, 0.8, 0.8, 0.1]), 6)
    0.270833
    """
    y, s, _ = check_ranking(y_true, y_score)
    return aurc_from_curve(_expected_top_positives(y, s))
