"""Reading the review log: the decision of every case, histories, ratings, plans and assignments.

A mixin of :class:`core.reviews.store.ReviewStore`. Every read is one statement on a new
connection (a consistent snapshot on both backends), and a team's reader is blinded by the
access policy (:mod:`core.reviews.policy`) after the query.
"""

from __future__ import annotations

from collections.abc import Iterable
from contextlib import closing
from typing import TYPE_CHECKING

import pandas as pd

from core.reviews.assignment import ReviewPlan
from core.reviews.records import (
    _ACTIVE,
    _COLUMNS,
    _COLUMNS_R,
    ADJUDICATION,
    REVIEW,
    REVIEW_COLUMNS,
    Review,
    _sample_id_iv,
    _text_iv,
)
from core.reviews.team import User

if TYPE_CHECKING:
    from core.reviews.interface import Connection


class _Reads:
    """The reads of :class:`~core.reviews.store.ReviewStore`."""

    def _query(self, sql: str, params: Iterable[object] = ()) -> pd.DataFrame:
        try:
            with closing(self._db.connect()) as conn:
                rows = conn.execute(sql, tuple(params)).fetchall()
        except self._db.errors as exc:
            raise self._error(exc, "reading") from exc
        frame = pd.DataFrame(rows, columns=list(REVIEW_COLUMNS)).astype({"review_id": "int64"})
        # Nullable ints: a column of None must not turn into floats (17.0) in exports.
        return frame.astype({"retracts": "Int64"})

    def _rows(self, sql: str, params: Iterable[object] = ()) -> list[tuple]:
        try:
            with closing(self._db.connect()) as conn:
                return conn.execute(sql, tuple(params)).fetchall()
        except self._db.errors as exc:
            raise self._error(exc, "reading") from exc

    def retractable(self, audit_fingerprint: str, *, reviewer: str | User) -> Review | None:
        """The decision :meth:`retract` without a sample would cancel now, or None (nothing to undo)."""
        fingerprint = _text_iv(audit_fingerprint, "audit_fingerprint", max_len=512, allow_empty=False)
        user = self._user(reviewer)
        where, params = f"audit_fingerprint = ? AND {_ACTIVE}", [fingerprint]
        if self.team is not None:
            where += " AND reviewer_email = ?"
            params.append(user.email)
        rows = self._rows(f"SELECT {_COLUMNS} FROM reviews WHERE {where} ORDER BY review_id DESC LIMIT 1", params)
        return Review._from_row(rows[0]) if rows else None

    @staticmethod
    def _plan(conn: Connection, fingerprint: str) -> ReviewPlan:
        row = conn.execute(
            "SELECT plan_id, created_at, admin, reviewers_per_case, assigned, reviewers FROM review_plans"
            " WHERE audit_fingerprint = ? ORDER BY plan_id DESC LIMIT 1",
            (fingerprint,),
        ).fetchone()
        if row is None:
            return ReviewPlan(audit_fingerprint=fingerprint)
        n = conn.execute("SELECT COUNT(DISTINCT sample_id) FROM assignments WHERE plan_id = ?", (row[0],)).fetchone()[0]
        return ReviewPlan(
            audit_fingerprint=fingerprint,
            plan_id=int(row[0]),
            created_at=row[1],
            admin=row[2],
            reviewers_per_case=int(row[3]),
            assigned=bool(row[4]),
            reviewers=tuple(r for r in row[5].split(",") if r),
            n_cases=int(n),
        )

    def current_plan(self, audit_fingerprint: str) -> ReviewPlan:
        """The plan in force for an audit (the default plan — 1 reviewer, no assignment — when none is stored)."""
        fingerprint = _text_iv(audit_fingerprint, "audit_fingerprint", max_len=512, allow_empty=False)
        try:
            with closing(self._db.connect()) as conn:
                return self._plan(conn, fingerprint)
        except self._db.errors as exc:
            raise self._error(exc, "reading") from exc

    def assignments(self, audit_fingerprint: str) -> pd.DataFrame:
        """The assignments of the plan in force: columns ``position, sample_id, reviewer_email``, in queue order."""
        plan = self.current_plan(audit_fingerprint)
        rows = (
            self._rows(
                "SELECT position, sample_id, reviewer_email FROM assignments WHERE plan_id = ? ORDER BY position, "
                + self._db.insertion_order,
                (plan.plan_id,),
            )
            if plan.plan_id is not None
            else []
        )
        return pd.DataFrame(rows, columns=["position", "sample_id", "reviewer_email"])

    def to_review(self, audit_fingerprint: str, sample_ids: Iterable[str | int], *, reviewer: str | User) -> list[str]:
        """The cases among ``sample_ids`` (order kept) still waiting for this reviewer's decision.

        A case waits when the reviewer may decide it (assigned to them, or any case when the
        plan assigns none), has no decision of theirs in force, is not adjudicated and — without
        assignment — has fewer reviewers with a decision in force than the plan wants. In
        local mode with the default plan: the cases without a decision in force.
        """
        fingerprint = _text_iv(audit_fingerprint, "audit_fingerprint", max_len=512, allow_empty=False)
        user = self._user(reviewer)
        ids = [_sample_id_iv(s) for s in sample_ids]
        plan = self.current_plan(fingerprint)
        ratings = self.ratings(fingerprint)
        me = user.email or user.name
        mine = set(ratings.loc[ratings["rater"] == me, "sample_id"]) if self.team is not None else set()
        raters = ratings.groupby("sample_id")["rater"].nunique().to_dict()
        settled = set(self.adjudications(fingerprint)["sample_id"])
        if plan.assigned:
            table = self.assignments(fingerprint)
            allowed = set(table.loc[table["reviewer_email"] == user.email, "sample_id"])
            return [s for s in ids if s in allowed and s not in mine and s not in settled]
        return [s for s in ids if s not in mine and s not in settled and raters.get(s, 0) < plan.reviewers_per_case]

    # ------------------------------------------------------------------------------------
    # Reads
    def latest(
        self,
        audit_fingerprint: str,
        sample_ids: Iterable[str | int] | None = None,
        *,
        viewer: User | None = None,
    ) -> pd.DataFrame:
        """The decision of every reviewed sample of one audit.

        The decision of a case is its most recent adjudication in force, else its most recent
        decision in force (one that no retraction names; see the module docstring); a case
        whose decisions are all retracted is absent, as an unreviewed one.

        Parameters
        ----------
        audit_fingerprint : str
            The audit.
        sample_ids : iterable of str or int, optional
            Restrict to these samples (unreviewed ones are simply absent).
        viewer : User, optional
            The reader (required with a team): under a double review a reviewer does not see
            the cases they have not decided themselves.

        Returns
        -------
        DataFrame
            One row per reviewed sample with columns :data:`REVIEW_COLUMNS`, ordered by
            ``sample_id``.
        """
        fingerprint = _text_iv(audit_fingerprint, "audit_fingerprint", max_len=512, allow_empty=False)
        seen = self._reader(viewer, fingerprint)
        frame = self._hide(self._latest("audit_fingerprint = ?", (fingerprint,), order="r.sample_id"), seen, viewer)
        if sample_ids is not None:
            wanted = {_sample_id_iv(s) for s in sample_ids}
            frame = frame[frame["sample_id"].isin(wanted)].reset_index(drop=True)
        return frame

    def latest_across(
        self, data_fingerprint: str, *, viewer: User | None = None, audit: str | None = None
    ) -> pd.DataFrame:
        """Decision of every (audit, sample) of the audits of one dataset.

        With a team, ``viewer`` and ``audit`` (the audit being reviewed, whose plan decides
        the blinding) are required.

        Returns
        -------
        DataFrame
            Columns :data:`REVIEW_COLUMNS`, one row per reviewed (``audit_fingerprint``,
            ``sample_id``), ordered by sample then audit.
        """
        data = _text_iv(data_fingerprint, "data_fingerprint", max_len=512, allow_empty=False)
        seen = self._reader(viewer, audit) if self.team is not None else None
        frame = self._latest("data_fingerprint = ?", (data,), order="r.sample_id, r.audit_fingerprint")
        return self._hide(frame, seen, viewer)

    def _latest(self, where: str, params: tuple, *, order: str) -> pd.DataFrame:
        return self._query(
            f"SELECT {_COLUMNS_R} FROM reviews r JOIN ("
            f"  SELECT COALESCE(MAX(CASE WHEN kind = '{ADJUDICATION}' THEN review_id END), MAX(review_id))"
            f"  AS review_id FROM reviews WHERE {where} AND {_ACTIVE}"
            f"  GROUP BY audit_fingerprint, sample_id) last USING (review_id) ORDER BY {order}",
            params,
        )

    def ratings(self, audit_fingerprint: str, *, viewer: User | None = None) -> pd.DataFrame:
        """Each reviewer's decision in force on each case (adjudications excluded): the ratings
        agreement is measured on.

        Returns
        -------
        DataFrame
            Columns ``sample_id, rater, reviewer, reviewer_email, decision, review_id``: one
            row per (case, rater), where ``rater`` is the address (the name in local mode),
            ordered by sample then ``review_id``.
        """
        fingerprint = _text_iv(audit_fingerprint, "audit_fingerprint", max_len=512, allow_empty=False)
        seen = self._reader(viewer, fingerprint) if viewer is not None else None
        rows = self._rows(
            "SELECT r.sample_id, CASE WHEN r.reviewer_email != '' THEN r.reviewer_email ELSE r.reviewer END,"
            " r.reviewer, r.reviewer_email, r.decision, r.review_id FROM reviews r JOIN ("
            "  SELECT MAX(review_id) AS review_id FROM reviews"
            f"  WHERE audit_fingerprint = ? AND kind = '{REVIEW}' AND {_ACTIVE}"
            "  GROUP BY sample_id, CASE WHEN reviewer_email != '' THEN reviewer_email ELSE reviewer END"
            ") last USING (review_id) ORDER BY r.sample_id, r.review_id",
            (fingerprint,),
        )
        frame = pd.DataFrame(
            rows, columns=["sample_id", "rater", "reviewer", "reviewer_email", "decision", "review_id"]
        )
        return self._hide(frame.astype({"review_id": "int64"}), seen, viewer)

    def adjudications(self, audit_fingerprint: str) -> pd.DataFrame:
        """The adjudication in force of every adjudicated case: columns :data:`REVIEW_COLUMNS`, by sample."""
        fingerprint = _text_iv(audit_fingerprint, "audit_fingerprint", max_len=512, allow_empty=False)
        return self._query(
            f"SELECT {_COLUMNS_R} FROM reviews r JOIN (SELECT MAX(review_id) AS review_id FROM reviews"
            f" WHERE audit_fingerprint = ? AND kind = '{ADJUDICATION}' AND {_ACTIVE} GROUP BY sample_id)"
            " last USING (review_id) ORDER BY r.sample_id",
            (fingerprint,),
        )

    def history(
        self, audit_fingerprint: str, sample_id: str | int | None = None, *, viewer: User | None = None
    ) -> pd.DataFrame:
        """Every entry (decisions and retractions) of one audit or one of its samples, oldest first.

        ``viewer`` is the reader (required with a team; see :meth:`latest`).

        Returns
        -------
        DataFrame
            Columns :data:`REVIEW_COLUMNS`, ordered by ``review_id``.
        """
        fingerprint = _text_iv(audit_fingerprint, "audit_fingerprint", max_len=512, allow_empty=False)
        seen = self._reader(viewer, fingerprint)
        if sample_id is None:
            frame = self._query(
                f"SELECT {_COLUMNS} FROM reviews WHERE audit_fingerprint = ? ORDER BY review_id", (fingerprint,)
            )
        else:
            frame = self._query(
                f"SELECT {_COLUMNS} FROM reviews WHERE audit_fingerprint = ? AND sample_id = ? ORDER BY review_id",
                (fingerprint, _sample_id_iv(sample_id)),
            )
        return self._hide(frame, seen, viewer)

    def history_across(
        self, data_fingerprint: str, sample_id: str | int, *, viewer: User | None = None, audit: str | None = None
    ) -> pd.DataFrame:
        """Every entry about one sample of a dataset, under any audit of it, oldest first.

        Entries from before schema version 3 carry no data fingerprint and are only found
        through :meth:`history` of their own audit. With a team, ``viewer`` and ``audit`` (as
        in :meth:`latest_across`) are required.

        Returns
        -------
        DataFrame
            Columns :data:`REVIEW_COLUMNS`, ordered by ``review_id``.
        """
        data = _text_iv(data_fingerprint, "data_fingerprint", max_len=512, allow_empty=False)
        seen = self._reader(viewer, audit) if self.team is not None else None
        frame = self._query(
            f"SELECT {_COLUMNS} FROM reviews WHERE data_fingerprint = ? AND sample_id = ? ORDER BY review_id",
            (data, _sample_id_iv(sample_id)),
        )
        return self._hide(frame, seen, viewer)

    def refusals(self) -> pd.DataFrame:
        """Every refused attempt, oldest first: ``refusal_id, created_at, user_email, user_name, role, action,
        audit_fingerprint, sample_id, reason`` (``sample_id`` comma-joined for a batch)."""
        columns = [
            "refusal_id",
            "created_at",
            "user_email",
            "user_name",
            "role",
            "action",
            "audit_fingerprint",
            "sample_id",
            "reason",
        ]
        return pd.DataFrame(
            self._rows(f"SELECT {', '.join(columns)} FROM access_refusals ORDER BY refusal_id"), columns=columns
        )
