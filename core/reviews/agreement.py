"""Agreement between reviewers, and the state of every case under a double review.

The ratings are each reviewer's decision in force on each case
(:meth:`ReviewStore.ratings <core.reviews.store.ReviewStore.ratings>`); adjudications are not
ratings. Two figures, each with the number of cases it rests on:

- **Cohen's kappa** per pair of reviewers, on the cases both decided
  (:func:`sklearn.metrics.cohen_kappa_score` over the three decisions);
- **Fleiss' kappa** over all reviewers (Fleiss 1971, :func:`fleiss_kappa`; the tests check it
  against ``statsmodels.stats.inter_rater.fleiss_kappa`` and a hand-written loop), on the cases decided by the same number ``m >= 2`` of reviewers — Fleiss' formula needs an
  equal number of ratings per case; ``m`` is the most frequent such number (the larger on a
  tie), and cases with another number (a third opinion, a missing one) are left out.

A kappa is undefined when its cases are none, or when chance agreement is 1 (every rating is
the same decision): then it is NaN and an :class:`~core.exceptions.UndefinedMetricWarning`
says which figure and why. Kappa is 1 for perfect agreement, 0 for chance-level agreement, and
negative below chance; larger = more agreement.
"""

from __future__ import annotations

import itertools
import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd

from core.exceptions import UndefinedMetricWarning
from core.reviews.store import DECISIONS

__all__ = ["CASE_STATES", "Agreement", "agreement", "case_states", "fleiss_kappa"]

#: States of a case under review, as :func:`case_states` names them.
CASE_STATES: dict[str, str] = {
    "open": "Waiting for decisions",
    "partial": "Waiting for more reviewers",
    "decided": "Decided",
    "agreed": "Reviewers agree",
    "disagreement": "Disagreement: to adjudicate",
    "adjudicated": "Adjudicated",
}


@dataclass(frozen=True, kw_only=True)
class Agreement:
    """Agreement between reviewers on one audit.

    Attributes
    ----------
    pairs : DataFrame
        One row per pair of reviewers who decided at least one common case, columns
        ``rater_a, rater_b`` (sorted), ``cases`` (decided by both), ``agreed`` (of those, with
        the same decision), ``kappa`` (Cohen's; NaN when undefined).
    fleiss : float
        Fleiss' kappa over all reviewers (NaN when undefined).
    fleiss_cases : int
        Cases Fleiss' kappa rests on (decided by exactly ``raters_per_case`` reviewers).
    raters_per_case : int
        Ratings per case in Fleiss' kappa (0 when no case has two).
    multi_rated : int
        Cases decided by two or more reviewers.
    disagreements : int
        Of those, cases whose reviewers' decisions differ.
    """

    pairs: pd.DataFrame
    fleiss: float
    fleiss_cases: int
    raters_per_case: int
    multi_rated: int
    disagreements: int


def _chance_is_certain(counts: np.ndarray) -> bool:
    total = counts.sum()
    return total > 0 and bool(np.isclose(((counts / total) ** 2).sum(), 1.0))


def agreement(ratings: pd.DataFrame) -> Agreement:
    """Cohen's kappa per reviewer pair and Fleiss' kappa over all, on the stored ratings.

    Parameters
    ----------
    ratings : DataFrame
        :meth:`ReviewStore.ratings <core.reviews.store.ReviewStore.ratings>`: columns
        ``sample_id, rater, decision``, one row per (case, rater).

    Returns
    -------
    Agreement

    Warns
    -----
    UndefinedMetricWarning
        Per undefined figure (no case, or chance agreement 1), naming it.

    Examples
    --------
    >>> ratings = pd.DataFrame({
    ...     "sample_id": ["1", "1", "2", "2", "3", "3"],
    ...     "rater": ["ana", "bo"] * 3,
    ...     "decision": ["acceptable", "acceptable", "acceptable", "confirmed_brittle",
    ...                  "confirmed_brittle", "confirmed_brittle"]})
    >>> result = agreement(ratings)
    >>> round(float(result.pairs.loc[0, "kappa"]), 4), result.fleiss_cases, result.disagreements
    (0.4, 3, 1)
    """
    missing = {"sample_id", "rater", "decision"} - set(ratings.columns)
    if missing:
        raise ValueError(f"`ratings` lacks the column(s) {sorted(missing)}; it has {list(ratings.columns)}.")
    unknown = sorted(set(ratings["decision"]) - set(DECISIONS))
    if unknown:
        raise ValueError(f"`ratings` holds decisions {unknown!r}; expected among {list(DECISIONS)}.")
    if ratings.duplicated(["sample_id", "rater"]).any():
        raise ValueError("`ratings` must hold one decision per (sample_id, rater); some pair appears twice.")
    from sklearn.metrics import cohen_kappa_score

    wide = ratings.pivot(index="sample_id", columns="rater", values="decision")
    rows = []
    for a, b in itertools.combinations(sorted(wide.columns), 2):
        both = wide[[a, b]].dropna()
        if both.empty:
            continue
        y1, y2 = both[a].to_numpy(), both[b].to_numpy()
        counts = np.array([(y1 == d).sum() + (y2 == d).sum() for d in DECISIONS], float)
        if _chance_is_certain(counts):
            warnings.warn(
                f"Cohen's kappa of {a} and {b} is undefined: on their {len(both)} common case(s) both chose "
                "one and the same decision every time (chance agreement 1); it is NaN.",
                UndefinedMetricWarning,
                stacklevel=2,
            )
            kappa = float("nan")
        else:
            kappa = float(cohen_kappa_score(y1, y2, labels=list(DECISIONS)))
        rows.append({"rater_a": a, "rater_b": b, "cases": len(both), "agreed": int((y1 == y2).sum()), "kappa": kappa})
    pairs = pd.DataFrame(rows, columns=["rater_a", "rater_b", "cases", "agreed", "kappa"])

    n_per_case = wide.notna().sum(axis=1)
    multi = n_per_case[n_per_case >= 2]
    distinct = wide.loc[multi.index].nunique(axis=1)
    if multi.empty:
        warnings.warn(
            "Fleiss' kappa is undefined: no case has been decided by two or more reviewers; it is NaN.",
            UndefinedMetricWarning,
            stacklevel=2,
        )
        return Agreement(
            pairs=pairs, fleiss=float("nan"), fleiss_cases=0, raters_per_case=0, multi_rated=0, disagreements=0
        )
    freq = multi.value_counts()
    m = int(max(freq[freq == freq.max()].index))
    cases = wide.loc[multi.index[multi == m]]
    table = np.stack([(cases == d).sum(axis=1).to_numpy() for d in DECISIONS], axis=1)
    if _chance_is_certain(table.sum(axis=0).astype(float)):
        warnings.warn(
            f"Fleiss' kappa is undefined: on its {len(cases)} case(s) every reviewer chose one and the same "
            "decision (chance agreement 1); it is NaN.",
            UndefinedMetricWarning,
            stacklevel=2,
        )
        fleiss = float("nan")
    else:
        fleiss = fleiss_kappa(table)
    return Agreement(
        pairs=pairs,
        fleiss=fleiss,
        fleiss_cases=len(cases),
        raters_per_case=m,
        multi_rated=len(multi),
        disagreements=int((distinct > 1).sum()),
    )


def fleiss_kappa(table: np.ndarray) -> float:
    """Fleiss' kappa (Fleiss 1971) of a table of counts: ``(P̄ - P̄e) / (1 - P̄e)``.

    Parameters
    ----------
    table : ndarray of int, shape (n_cases, n_categories)
        How many of the ``m`` raters of each case chose each category; every row sums to the
        same ``m >= 2``.

    Returns
    -------
    float
        1 for perfect agreement, 0 at chance, negative below; larger = more agreement. ``P̄``
        is the mean over cases of ``(sum_j n_ij^2 - m) / (m (m - 1))``, ``P̄e`` the sum of the
        squared category shares. Infinite or NaN when ``P̄e = 1`` (one category only; the
        caller warns and reports NaN).

    Examples
    --------
    >>> round(fleiss_kappa(np.array([[2, 0], [0, 2], [1, 1]])), 4)
    0.3333
    """
    table = np.asarray(table, dtype=float)
    m = table.sum(axis=1) if table.ndim == 2 and table.shape[0] else np.zeros(1)
    if table.ndim != 2 or m.min() != m.max() or m[0] < 2:
        raise ValueError(
            f"`table` must be (n_cases, n_categories) counts with the same number >= 2 of ratings per case; "
            f"got shape {table.shape} and ratings per case {sorted(set(m.tolist()))[:5]}."
        )
    m = m[0]
    shares = table.sum(axis=0) / table.sum()
    agreement = ((table * table).sum(axis=1) - m) / (m * (m - 1.0))
    expected = (shares * shares).sum()
    return float((agreement.mean() - expected) / (1.0 - expected))


def case_states(ratings: pd.DataFrame, adjudicated: pd.DataFrame, *, reviewers_per_case: int) -> pd.DataFrame:
    """Where every case with a rating or an adjudication stands.

    Parameters
    ----------
    ratings : DataFrame
        Columns ``sample_id, rater, decision`` (:meth:`ReviewStore.ratings`).
    adjudicated : DataFrame
        Columns ``sample_id, decision`` (:meth:`ReviewStore.adjudications`).
    reviewers_per_case : int
        Decisions the plan wants per case.

    Returns
    -------
    DataFrame
        Indexed by ``sample_id``: ``opinions`` (reviewers with a decision in force),
        ``state`` (a key of :data:`CASE_STATES`: ``adjudicated`` when an adjudication is in
        force; else ``disagreement`` when two decisions differ; else ``agreed`` when at least
        ``reviewers_per_case`` (and two) reviewers decided alike; else ``decided`` for one
        decision under a single-review plan, ``partial`` when more are wanted, or ``open``
        when no one decided), ``decisions`` (the reviewers' decisions, sorted and
        ``", "``-joined).
    """
    if isinstance(reviewers_per_case, bool) or not isinstance(reviewers_per_case, int) or reviewers_per_case < 1:
        raise ValueError(f"`reviewers_per_case` must be a whole number >= 1; got {reviewers_per_case!r}.")
    grouped = ratings.groupby("sample_id")["decision"]
    frame = pd.DataFrame(
        {
            "opinions": grouped.size(),
            "distinct": grouped.nunique(),
            "decisions": grouped.agg(lambda d: ", ".join(sorted(d))),
        }
    )
    frame = frame.reindex(frame.index.union(pd.Index(adjudicated["sample_id"], name="sample_id")))
    frame["opinions"] = frame["opinions"].fillna(0).astype(int)
    frame["decisions"] = frame["decisions"].fillna("")
    state = np.where(frame["opinions"] == 0, "open", "partial").astype(object)
    state[(frame["distinct"] == 1).to_numpy() & (frame["opinions"] >= max(2, reviewers_per_case)).to_numpy()] = "agreed"
    if reviewers_per_case == 1:
        state[(frame["opinions"] == 1).to_numpy()] = "decided"
    state[(frame["distinct"] > 1).to_numpy()] = "disagreement"
    state[frame.index.isin(adjudicated["sample_id"])] = "adjudicated"
    frame["state"] = state
    return frame[["opinions", "state", "decisions"]]
