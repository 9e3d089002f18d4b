"""Queue management for reviewers: filters, "next unreviewed", previous/next, display of entries.

Pure functions on the triage queue (a DataFrame in queue order with a ``sample_id`` column)
and :meth:`core.reviews.ReviewStore.latest`; the dashboard lays them out.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Literal, get_args

import pandas as pd

from core.reviews.records import DECISIONS, REASONS, _split_reasons

__all__ = ["UNREVIEWED", "QueueFilter", "filter_queue", "minutes", "next_unreviewed", "step_case"]

Status = Literal["all", "unreviewed", "reviewed"]
#: Label of a case without a decision in force (never reviewed, or every decision retracted).
UNREVIEWED = "Unreviewed"


@dataclass(frozen=True)
class QueueFilter:
    """Which queued cases to show. Every given criterion must hold (AND); empty = any.

    Attributes
    ----------
    status : {"all", "unreviewed", "reviewed"}, default="all"
        On the case's latest decision (see :meth:`core.reviews.ReviewStore.latest`).
    decisions : tuple of str
        Latest decision among these (keys of :data:`core.reviews.DECISIONS`).
    reviewers : tuple of str
        Latest decision made by one of these reviewers.
    reasons : tuple of str
        Latest decision citing at least one of these reason codes.
    """

    status: Status = "all"
    decisions: tuple[str, ...] = ()
    reviewers: tuple[str, ...] = ()
    reasons: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.status not in get_args(Status):
            raise ValueError(f"`status` must be one of {list(get_args(Status))}; got {self.status!r}.")
        for name, allowed in (("decisions", DECISIONS), ("reasons", tuple(REASONS))):
            bad = [v for v in getattr(self, name) if v not in allowed]
            if bad:
                raise ValueError(f"`{name}` must be among {list(allowed)}; got {bad!r}.")
        object.__setattr__(self, "decisions", tuple(self.decisions))
        object.__setattr__(self, "reviewers", tuple(self.reviewers))
        object.__setattr__(self, "reasons", tuple(self.reasons))

    @property
    def active(self) -> bool:
        """Whether the filter hides anything at all."""
        return self.status != "all" or bool(self.decisions or self.reviewers or self.reasons)


def filter_queue(queue: pd.DataFrame, latest: pd.DataFrame, criteria: QueueFilter) -> pd.DataFrame:
    """The rows of ``queue`` (order kept) whose latest decision meets ``criteria``.

    Parameters
    ----------
    queue : DataFrame
        Cases in queue order, with a ``sample_id`` column.
    latest : DataFrame
        :meth:`core.reviews.ReviewStore.latest` of the audit (``sample_id`` as text).
    criteria : QueueFilter

    Returns
    -------
    DataFrame
        A subset of ``queue``'s rows, same columns and order, original index kept.
    """
    if "sample_id" not in queue.columns:
        raise ValueError(f"`queue` has no column 'sample_id'; it has {list(queue.columns)}.")
    keys = queue["sample_id"].map(str)
    by_id = latest.set_index("sample_id")
    reviewed = keys.isin(by_id.index)
    keep = pd.Series(True, index=queue.index)
    if criteria.status == "unreviewed":
        keep &= ~reviewed
    elif criteria.status == "reviewed":
        keep &= reviewed
    if criteria.decisions:
        keep &= keys.map(by_id["decision"]).isin(criteria.decisions)
    if criteria.reviewers:
        keep &= keys.map(by_id["reviewer"]).isin(criteria.reviewers)
    if criteria.reasons:
        wanted = set(criteria.reasons)
        cited = keys.map(by_id["reasons"]).map(
            lambda text: isinstance(text, str) and bool(wanted & set(_split_reasons(text)))
        )
        keep &= cited.astype(bool)
    return queue[keep.to_numpy()]


def next_unreviewed(order: Sequence[Hashable], reviewed: set, current: Hashable | None) -> Hashable | None:
    """The first unreviewed case after ``current`` in queue order, wrapping around to the top.

    Parameters
    ----------
    order : sequence
        Case ids in queue order.
    reviewed : set
        Ids of the cases with a decision in force.
    current : hashable or None
        The case just handled; when it is not in ``order`` the search starts at the top.

    Returns
    -------
    hashable or None
        Never ``current`` itself; ``None`` when every other case is reviewed.
    """
    ids = list(order)
    start = ids.index(current) + 1 if current in ids else 0
    for sid in ids[start:] + ids[:start]:
        if sid != current and sid not in reviewed:
            return sid
    return None


def step_case(order: Sequence[Hashable], current: Hashable | None, delta: int) -> Hashable | None:
    """The case ``delta`` places after (``delta < 0``: before) ``current``, clamped to the ends.

    ``current`` outside ``order`` gives the first case; an empty ``order`` gives ``None``.
    """
    ids = list(order)
    if not ids:
        return None
    if current not in ids:
        return ids[0]
    return ids[min(max(ids.index(current) + int(delta), 0), len(ids) - 1)]


def minutes(timestamps: pd.Series) -> pd.Series:
    """ISO 8601 timestamps (UTC, microseconds) shown to the minute: ``2026-01-31 09:15 UTC``.

    Missing values stay missing (``None``).
    """
    parsed = pd.to_datetime(timestamps, utc=True, errors="coerce", format="ISO8601")
    return parsed.dt.strftime("%Y-%m-%d %H:%M UTC").astype(object).where(parsed.notna(), None)
