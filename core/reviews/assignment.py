"""Review plans: how many reviewers decide each case, and who is assigned which case.

An admin sets, per audit, the number of reviewers per case (1 by default, 2 or more for a
double review) and, optionally, assigns the queued cases round-robin in queue order
(:func:`round_robin`). The store keeps every plan (append-only, :meth:`ReviewStore.plan
<core.reviews.store.ReviewStore.plan>`); the most recent one of an audit is in force.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["ReviewPlan", "round_robin"]


@dataclass(frozen=True, kw_only=True)
class ReviewPlan:
    """The review plan of one audit.

    Attributes
    ----------
    audit_fingerprint : str
        The audit.
    reviewers_per_case : int, default=1
        Decisions wanted per case; 2 or more is a double review, and then a reviewer does not
        see the other reviewers' decisions on a case before recording their own.
    assigned : bool, default=False
        Whether cases are assigned: a reviewer may then decide only on their assigned cases;
        otherwise any reviewer may decide any case.
    reviewers : tuple of str, default=()
        The reviewers (addresses, or names in local mode) the cases were dealt to, in order.
    n_cases : int, default=0
        Number of cases assigned.
    plan_id : int or None, default=None
        Id of the stored plan; None for the default plan (nothing stored yet).
    created_at : str, default=""
        When the plan was stored (UTC, ISO 8601).
    admin : str, default=""
        Who stored it.
    """

    audit_fingerprint: str
    reviewers_per_case: int = 1
    assigned: bool = False
    reviewers: tuple[str, ...] = ()
    n_cases: int = 0
    plan_id: int | None = None
    created_at: str = ""
    admin: str = ""

    @property
    def double(self) -> bool:
        """Whether each case wants two or more independent decisions (blind review)."""
        return self.reviewers_per_case >= 2


def round_robin(sample_ids: Sequence[str], reviewers: Sequence[str], per_case: int) -> list[tuple[int, str, str]]:
    """Deal cases to reviewers in queue order, ``per_case`` distinct reviewers each.

    Case ``i`` (0-based queue position) goes to ``reviewers[(i * per_case + j) % R]`` for
    ``j = 0 … per_case - 1``: every reviewer gets the same number of cases (± 1 per round),
    the reviewers of one case are distinct, and a longer queue keeps the assignment of its
    first cases.

    Parameters
    ----------
    sample_ids : sequence of str
        Cases in queue order (distinct).
    reviewers : sequence of str
        The reviewers, distinct, at least ``per_case`` of them.
    per_case : int
        Reviewers per case (>= 1).

    Returns
    -------
    list of (position, sample_id, reviewer)
        ``len(sample_ids) * per_case`` triples, in queue order.

    Examples
    --------
    >>> round_robin(["a", "b", "c"], ["x", "y", "z"], 2)
    [(0, 'a', 'x'), (0, 'a', 'y'), (1, 'b', 'z'), (1, 'b', 'x'), (2, 'c', 'y'), (2, 'c', 'z')]
    """
    if isinstance(per_case, bool) or not isinstance(per_case, int) or per_case < 1:
        raise ValueError(f"`reviewers_per_case` must be a whole number >= 1; got {per_case!r}.")
    pool = list(reviewers)
    if len(set(pool)) != len(pool):
        raise ValueError(f"`reviewers` must be distinct; got {pool!r}.")
    if len(pool) < per_case:
        raise ValueError(
            f"{per_case} reviewers per case need at least {per_case} reviewers to deal the cases to; got "
            f"{len(pool)} ({', '.join(pool) or 'none'})."
        )
    ids = list(sample_ids)
    if len(set(ids)) != len(ids):
        raise ValueError("`sample_ids` must be distinct (each queued case once).")
    return [(i, sid, pool[(i * per_case + j) % len(pool)]) for i, sid in enumerate(ids) for j in range(per_case)]
