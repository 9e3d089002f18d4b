"""A ranked population as the Triage page shows it: the review queue, the decisions taken on it,
the capture curves of every risk score, and their AUROC / Capture@q summary.

Metrics come from :mod:`core.metrics.ranking` (the one home of AUROC, the review budget and the
prorated top-k count); every score is oriented larger = riskier.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from core.cfc.evaluation import SCORES
from core.metrics.ranking import expected_top_positives, review_budget, roc_auc
from core.reviews.queue import UNREVIEWED, filter_queue

# SCORES (each risk score's orientation), review_budget, filter_queue and UNREVIEWED are the
# engines' own, re-exported for the Triage page, which reaches the engines through the views only.
__all__ = [
    "SCORES",
    "UNREVIEWED",
    "CaptureCurves",
    "QueueGuarantee",
    "attach_decisions",
    "capture_curves",
    "filter_queue",
    "queue_guarantee",
    "rank_queue",
    "review_budget",
    "score_summary",
]


def rank_queue(frame: pd.DataFrame, score: str, *, budget: float, id_column: str = "sample_id") -> pd.DataFrame:
    """The review queue: the top ``k = max(1, ⌊q·n + ½⌋)`` rows of ``frame`` by a risk score.

    Parameters
    ----------
    frame : DataFrame
        The ranked population (e.g. the high-confidence test predictions), one row per sample,
        with the columns ``id_column`` and ``score``.
    score : str
        Risk-score column (larger = riskier). NaN scores are ranked last.
    budget : float
        Review budget ``q`` in (0, 1] as a fraction of ``len(frame)``.

    Returns
    -------
    DataFrame
        The first ``k`` rows in decreasing score, with a 1-based ``rank`` column in front.
        Rows tied on the score keep their order in ``frame`` (a deterministic choice; the
        Capture@q metric instead prorates ties at the cut-off).

    Examples
    --------
    >>> f = pd.DataFrame({"sample_id": [10, 11, 12, 13], "fds": [0.2, 0.9, 0.5, 0.9]})
    >>> rank_queue(f, "fds", budget=0.5).to_dict("list")
    {'rank': [1, 2], 'sample_id': [11, 13], 'fds': [0.9, 0.9]}
    """
    for column in (id_column, score):
        if column not in frame.columns:
            raise ValueError(f"`frame` has no column {column!r}; it has {list(frame.columns)}.")
    if len(frame) == 0:
        raise ValueError("The population to rank is empty; lower the confidence threshold or use all samples.")
    k = review_budget(budget, len(frame))
    order = np.argsort(-frame[score].to_numpy(dtype=float, na_value=-np.inf), kind="stable")
    queue = frame.iloc[order[:k]].reset_index(drop=True)
    queue.insert(0, "rank", np.arange(1, k + 1))
    return queue


def attach_decisions(queue: pd.DataFrame, latest: pd.DataFrame, *, id_column: str = "sample_id") -> pd.DataFrame:
    """Add the latest review decision of every queued sample (blank when unreviewed).

    Parameters
    ----------
    queue : DataFrame
        Rows to annotate, with ``id_column``.
    latest : DataFrame
        :meth:`core.reviews.ReviewStore.latest` of the same audit.

    Returns
    -------
    DataFrame
        ``queue`` plus ``decision`` (human label), ``reviewer``, ``note`` and ``reviewed_at``.
    """
    from core.reviews import DECISION_LABELS

    if id_column not in queue.columns:
        raise ValueError(f"`queue` has no column {id_column!r}; it has {list(queue.columns)}.")
    reviews = latest.set_index("sample_id")[["decision", "reviewer", "note", "created_at"]]
    keys = queue[id_column].map(str).rename("_key")
    out = queue.join(keys).join(reviews, on="_key").drop(columns="_key")
    out["decision"] = out["decision"].map(DECISION_LABELS)
    return out.rename(columns={"created_at": "reviewed_at"})


@dataclass(frozen=True, kw_only=True)
class CaptureCurves:
    """Share of the positives inside the top ``q`` of every risk score, for every budget.

    Attributes
    ----------
    budgets : ndarray of shape (B,)
        The budgets ``q``.
    k : ndarray of shape (B,), int
        Items reviewed at each budget, ``max(1, ⌊q·n + ½⌋)``.
    curves : dict of str -> ndarray of shape (B,)
        ``E|Top_k ∩ positives| / |positives|`` of every score, ties at the cut-off prorated
        (NaN when there is no positive); larger = the score finds more of them.
    ceiling : ndarray of shape (B,)
        Best attainable share ``min(1, k / n_positive)`` (NaN without positives).
    random : ndarray of shape (B,)
        Expected share under random selection, ``k / n``.
    """

    budgets: np.ndarray
    k: np.ndarray
    curves: dict[str, np.ndarray]
    ceiling: np.ndarray
    random: np.ndarray


def capture_curves(scores: pd.DataFrame, positives: np.ndarray, budgets: np.ndarray) -> CaptureCurves:
    """Share of the positives inside the top ``q`` of every risk score, for every budget.

    Parameters
    ----------
    scores : DataFrame of shape (n, n_scores)
        Risk scores (larger = riskier) of the ranked population, one column per score.
    positives : ndarray of shape (n,), bool
        The positives (e.g. held-out brittle labels).
    budgets : ndarray of shape (B,)
        Budgets ``q`` in (0, 1]; ``k = max(1, ⌊q·n + ½⌋)`` items are reviewed.

    Returns
    -------
    CaptureCurves

    Examples
    --------
    >>> c = capture_curves(pd.DataFrame({"s": [0.9, 0.5, 0.1, 0.0]}), np.array([1, 0, 1, 0], bool), np.array([0.5]))
    >>> c.k.tolist(), c.curves["s"].tolist(), c.ceiling.tolist(), c.random.tolist()
    ([2], [0.5], [1.0], [0.5])
    """
    y = np.asarray(positives, dtype=bool)
    n = y.size
    if len(scores) != n:
        raise ValueError(f"`scores` has {len(scores)} rows but `positives` has {n}.")
    q = np.asarray(budgets, dtype=float)
    k = np.array([review_budget(float(v), n) for v in q], dtype=np.int64)
    n_pos = int(y.sum())
    curves = {}
    for name in scores.columns:
        top = expected_top_positives(y, scores[name].to_numpy(dtype=float))
        curves[str(name)] = top[k] / n_pos if n_pos else np.full(k.shape, np.nan)
    ceiling = np.minimum(1.0, k / n_pos) if n_pos else np.full(k.shape, np.nan)
    return CaptureCurves(budgets=q, k=k, curves=curves, ceiling=ceiling, random=k / n)


def score_summary(scores: pd.DataFrame, positives: np.ndarray, budget: float) -> pd.DataFrame:
    """AUROC and Capture@q of every risk score on one population.

    Returns
    -------
    DataFrame
        Columns ``score``, ``kind`` and ``orientation`` (from :data:`core.cfc.evaluation.SCORES`;
        ``custom`` / ``larger = riskier`` for a score it does not name), ``auroc`` (NaN unless
        both classes are present), ``capture`` (share of positives in the top ``q``; NaN
        without positives), ``ceiling`` (the best capture any ranking reaches with the same
        ``k``, ``min(1, k / n_pos)``) and ``capture_ratio`` (``capture / ceiling``).
    """
    from core.cfc.evaluation import SCORES

    y = np.asarray(positives, dtype=bool)
    curves = capture_curves(scores, y, np.array([budget]))
    capture, ceiling = curves.curves, float(curves.ceiling[0])
    rows = []
    for name in scores.columns:
        info = SCORES.get(str(name))
        s = scores[name].to_numpy(dtype=float)
        value = roc_auc(y, s) if 0 < y.sum() < y.size else np.nan
        rows.append(
            {
                "score": str(name),
                "kind": info.kind if info else "custom",
                "orientation": info.orientation if info else "larger = riskier",
                "auroc": value,
                "capture": float(capture[str(name)][0]),
                "ceiling": ceiling,
                "capture_ratio": float(capture[str(name)][0]) / ceiling if ceiling > 0 else np.nan,
            }
        )
    return pd.DataFrame(rows, columns=["score", "kind", "orientation", "auroc", "capture", "ceiling", "capture_ratio"])


@dataclass(frozen=True, kw_only=True)
class QueueGuarantee:
    """What a queue at one budget is guaranteed to catch on new data, for the Triage page.

    Attributes
    ----------
    bound : core.metrics.capture.CaptureBound
        The bound itself (``lower``, ``threshold``, ``method``, counts).
    text : str
        "reviewing the top 10 % catches at least 62 % of brittle cases (90 % confidence)".
    detail : str
        What exactly is guaranteed, under which assumption, in plain words.
    """

    bound: object
    text: str
    detail: str


def queue_guarantee(
    scores: np.ndarray, positives: np.ndarray, budget: float, *, score_name: str, confidence: float = 0.9
) -> QueueGuarantee:
    """The capture guarantee of the queue ranking ``scores`` at ``budget`` (:func:`core.metrics.capture.capture_bound`).

    Parameters
    ----------
    scores : ndarray of shape (n,)
        The ranking score of every ranked prediction (larger = riskier).
    positives : ndarray of bool, shape (n,)
        Held-out brittle labels.
    budget : float
        Review budget in (0, 1].
    score_name : str
        The score's name, as people read it.
    confidence : float, default=0.9
    """
    from core.metrics.capture import capture_bound, guarantee_text

    bound = capture_bound(
        np.asarray(positives, dtype=bool), np.asarray(scores, dtype=float), q=budget, confidence=confidence
    )
    if not np.isfinite(bound.lower):
        detail = "No held-out brittle prediction among the ranked ones: nothing to bound."
    else:
        detail = (
            f"If new predictions come from the same source as this test split, reviewing every one whose "
            f"{score_name} is at least {bound.threshold:.4g} (where this queue's cut falls; about "
            f"{bound.review_share:.0%} of them, at most {bound.review_share_upper:.0%} with the same confidence) catches at least {bound.lower:.0%} of the brittle ones, with "
            f"{bound.confidence:.0%} confidence. Here it caught {bound.captured} of {bound.n_pos} "
            f"({bound.capture:.0%}); the bound is lower by {bound.margin:.2f}, the price of a guarantee that "
            "holds for any score distribution and for a cut chosen on these very rows (DKW band)."
        )
    return QueueGuarantee(bound=bound, text=guarantee_text(bound), detail=detail)
