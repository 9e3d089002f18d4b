"""Appending to the review log: decisions, adjudications, retractions, plans, and signing it.

A mixin of :class:`core.reviews.store.ReviewStore`. Every write is one transaction of the
backend (:meth:`core.reviews.backend.Backend.transaction`, serialised with every other writer
of the database): the writer's role is checked in it, the entry's id, timestamp and chain
hash are computed in it from the previous entry, and the chain head is updated in it, so the
chain stays one line whatever the number of processes, threads or machines writing.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from core.reviews.assignment import ReviewPlan, round_robin
from core.reviews.chain import GENESIS, KEY_ENV_VAR, entry_hash, entry_mac, key_check, walk_chain
from core.reviews.records import (
    _ACTIVE,
    _COLUMNS,
    _MAX_NOTE,
    _MAX_REVIEWER,
    ADJUDICATION,
    RETRACTED,
    REVIEW,
    AuditKey,
    Decision,
    Review,
    ReviewStoreError,
    _key_iv,
    _NothingToRetract,
    _now,
    _sample_id_iv,
    _split_reasons,
    _submission_iv,
    _text_iv,
)
from core.reviews.schema import seal_chain, settings, write_head
from core.reviews.team import User

if TYPE_CHECKING:
    from core.reviews.interface import Connection


class _Writes:
    """The writes of :class:`~core.reviews.store.ReviewStore`."""

    def record(
        self,
        audit: str | AuditKey,
        sample_id: str | int,
        *,
        reviewer: str | User,
        decision: Decision,
        note: str = "",
        reasons: Iterable[str] = (),
        submission_id: str | None = None,
    ) -> Review:
        """Append one decision and return it as stored.

        Parameters
        ----------
        audit : str or AuditKey
            The audit: its fingerprint (non-empty), or an :class:`AuditKey` that also records
            the data fingerprint, the model and the protocol fingerprint.
        sample_id : str or int
            Stable sample id within the audit; integers are stored as their decimal text.
        reviewer : str or User
            Who decides: the signed-in :class:`User` (required with a team), or in local mode a
            typed name (non-empty, at most 200 characters).
        decision : {"confirmed_brittle", "acceptable", "needs_reacquisition"}
            The decision.
        note : str, default=""
            Justification (at most 10,000 characters).
        reasons : iterable of str, default=()
            Reason codes, keys of :data:`REASONS` (order and repeats do not matter).
        submission_id : str, optional
            Id of this submission (e.g. one per rendered form). When an entry with this id is
            already stored, nothing is appended and that entry is returned.

        Returns
        -------
        Review
            The stored row, with its ``review_id`` and ``created_at``.

        Raises
        ------
        AccessRefused
            With a team: the user is not a reviewer (or admin), or the audit's plan assigns
            cases and this one is not assigned to them. The attempt is recorded.
        """
        return self.record_many(
            audit,
            [sample_id],
            reviewer=reviewer,
            decision=decision,
            note=note,
            reasons=reasons,
            submission_id=submission_id,
        )[0]

    def record_many(
        self,
        audit: str | AuditKey,
        sample_ids: Iterable[str | int],
        *,
        reviewer: str | User,
        decision: Decision,
        note: str = "",
        reasons: Iterable[str] = (),
        submission_id: str | None = None,
        skip_identical: bool = False,
    ) -> list[Review]:
        """Append the same decision for several samples in one transaction (all or none).

        Parameters are those of :meth:`record`; ``sample_ids`` is a non-empty iterable (a
        repeated id is stored once). With ``submission_id``, each sample of a batch of several
        is stored under ``"{submission_id}#{sample_id}"`` (a batch of one under
        ``submission_id`` itself, as :meth:`record`), so resubmitting the batch appends nothing.
        With a team, one refused sample refuses the whole batch.

        skip_identical : bool, default=False
            Leave out the samples whose decision in force by this reviewer already has this
            decision, these reasons and this note (re-applying a bulk decision stores nothing).

        Returns
        -------
        list of Review
            One stored entry per distinct sample id, in the order given (with
            ``skip_identical``, only those appended or already stored under the submission id).
        """
        key = _key_iv(audit)
        ids = list(
            dict.fromkeys(
                _sample_id_iv(s) for s in ([sample_ids] if isinstance(sample_ids, (str, bytes)) else sample_ids)
            )
        )
        if not ids:
            raise ValueError("`sample_ids` must name at least one sample; got none.")
        user, text, codes, token = self._decision_iv(reviewer, decision, note, reasons, submission_id)
        tokens = (
            [token]
            if token is not None and len(ids) == 1
            else ([f"{token}#{sid}" for sid in ids] if token is not None else [None] * len(ids))
        )
        try:
            with self._transaction() as conn:
                refused = self._why_refused(conn, user, "decide", key.fingerprint, ids)
                if not refused:
                    out = []
                    for sid, tok in zip(ids, tokens):
                        if (
                            skip_identical
                            and (tok is None or self._submitted(conn, tok) is None)
                            and self._in_force(conn, key.fingerprint, sid, user) == (decision, codes, text)
                        ):
                            continue
                        out.append(self._append(conn, key, sid, user, decision, text, codes, None, tok, REVIEW))
                    return out
        except self._db.errors as exc:
            raise self._error(exc, "storing the decision") from exc
        raise self._refuse(user, "decide", key.fingerprint, ids, refused)

    @staticmethod
    def _in_force(conn: Connection, fingerprint: str, sid: str, user: User) -> tuple[str, str, str] | None:
        """(decision, reasons, note) of ``user``'s review decision in force on the case, if any."""
        rater, value = ("reviewer_email", user.email) if user.email else ("reviewer", user.name)
        row = conn.execute(
            f"SELECT decision, reasons, note FROM reviews WHERE audit_fingerprint = ? AND sample_id = ? AND {rater} = ?"
            f" AND kind = '{REVIEW}' AND {_ACTIVE} ORDER BY review_id DESC LIMIT 1",
            (fingerprint, sid, value),
        ).fetchone()
        return None if row is None else tuple(row)

    def adjudicate(
        self,
        audit: str | AuditKey,
        sample_id: str | int,
        *,
        reviewer: str | User,
        decision: Decision,
        note: str = "",
        reasons: Iterable[str] = (),
        submission_id: str | None = None,
    ) -> Review:
        """Append an admin's final decision on a case (kind ``"adjudication"``).

        While in force it is the case's decision (:meth:`latest`), whatever the reviewers
        decided before or after; it can be retracted like any entry. Parameters are those of
        :meth:`record`.

        Raises
        ------
        AccessRefused
            With a team, when ``reviewer`` is not an admin (the attempt is recorded).
        """
        key = _key_iv(audit)
        sid = _sample_id_iv(sample_id)
        user, text, codes, token = self._decision_iv(reviewer, decision, note, reasons, submission_id)
        try:
            with self._transaction() as conn:
                refused = self._why_refused(conn, user, "adjudicate", key.fingerprint, [sid])
                if not refused:
                    return self._append(conn, key, sid, user, decision, text, codes, None, token, ADJUDICATION)
        except self._db.errors as exc:
            raise self._error(exc, "storing the adjudication") from exc
        raise self._refuse(user, "adjudicate", key.fingerprint, [sid], refused)

    def retract(
        self,
        audit: str | AuditKey,
        sample_id: str | int | None = None,
        *,
        reviewer: str | User,
        note: str = "",
        submission_id: str | None = None,
    ) -> Review:
        """Undo a decision by appending a ``"retracted"`` entry naming it.

        The entry cancels the most recent decision in force (review or adjudication) of
        ``reviewer`` — with a team, of that signed-in user only; in local mode, of anyone —
        on the case ``sample_id``, or, when ``sample_id`` is None, on whichever case of the
        audit it was. Nothing is removed.

        Raises
        ------
        ValueError
            When there is no decision left to retract.
        AccessRefused
            With a team, when ``reviewer`` is not a reviewer or admin (the attempt is recorded).
        """
        key = _key_iv(audit)
        sid = None if sample_id is None else _sample_id_iv(sample_id)
        user = self._user(reviewer)
        text = _text_iv(note, "note", max_len=_MAX_NOTE, allow_empty=True)
        token = _submission_iv(submission_id)
        where, params = ["audit_fingerprint = ?", _ACTIVE], [key.fingerprint]
        if sid is not None:
            where.append("sample_id = ?")
            params.append(sid)
        if self.team is not None:
            where.append("reviewer_email = ?")
            params.append(user.email)
        try:
            with self._transaction() as conn:
                if token is not None and (done := self._submitted(conn, token)) is not None:
                    return done
                refused = self._why_refused(conn, user, "retract", key.fingerprint, [] if sid is None else [sid])
                if not refused:
                    # Under the write lock: two sessions undoing at once retract two decisions in turn.
                    target = conn.execute(
                        f"SELECT review_id, sample_id, kind FROM reviews WHERE {' AND '.join(where)}"
                        " ORDER BY review_id DESC LIMIT 1",
                        params,
                    ).fetchone()
                    if target is None:
                        whose = f"{user.label} has" if self.team is not None else "there is"
                        what = f"sample {sid}" if sid is not None else "this audit"
                        raise _NothingToRetract(
                            f"Sample {sid} of audit {key.fingerprint[:12]}… has no decision to retract (it is unreviewed)."
                            if sid is not None and self.team is None
                            else f"Nothing to retract: {whose} no decision to retract in force on {what}."
                        )
                    return self._append(
                        conn, key, target[1], user, RETRACTED, text, "", int(target[0]), token, target[2]
                    )
        except self._db.errors as exc:
            raise self._error(exc, "storing the retraction") from exc
        raise self._refuse(user, "retract", key.fingerprint, [] if sid is None else [sid], refused)

    @staticmethod
    def _submitted(conn: Connection, token: str) -> Review | None:
        row = conn.execute(f"SELECT {_COLUMNS} FROM reviews WHERE submission_id = ?", (token,)).fetchone()
        return None if row is None else Review._from_row(row)

    def _append(
        self,
        conn: Connection,
        key: AuditKey,
        sid: str,
        user: User,
        decision: str,
        note: str,
        reasons: str,
        retracts: int | None,
        token: str | None,
        kind: str,
    ) -> Review:
        if token is not None and (done := self._submitted(conn, token)) is not None:
            return done
        # Inside the write lock: the clock is read in review_id order, and never earlier than
        # the previous row (a clock stepped back must not reorder the history).
        created = _now()
        last = conn.execute(
            "SELECT review_id, created_at, entry_hash FROM reviews ORDER BY review_id DESC LIMIT 1"
        ).fetchone()
        if last is not None and last[1] > created:
            created = last[1]
        # The id is chosen here (not by AUTOINCREMENT after the insert) because the entry's hash
        # covers it; under the write lock nobody else takes it.
        review_id = self._db.next_review_id(conn, last[0] if last else None)
        prev = last[2] if last is not None else GENESIS
        values = (
            created,
            key.fingerprint,
            sid,
            user.name,
            decision,
            note,
            reasons,
            retracts,
            key.data_fingerprint,
            key.model,
            key.protocol_fingerprint,
            token,
            user.email,
            kind,
        )
        digest = entry_hash(prev, (review_id, *values))
        mac = entry_mac(self._key, digest) if self._key is not None else ""
        conn.execute(
            f"INSERT INTO reviews ({_COLUMNS}, prev_hash, entry_hash, mac) VALUES ({', '.join('?' * (len(values) + 4))})",
            (review_id, *values, prev, digest, mac),
        )
        head = conn.execute("SELECT entries FROM chain_head WHERE id = 1").fetchone()
        write_head(conn, (head[0] if head else 0) + 1, digest, key=self._key)
        return Review(review_id, *values[:6], _split_reasons(reasons), *values[7:])

    def sign(self, *, admin: User | None = None) -> int:
        """Sign an existing unsigned review log with this process's key, once.

        A log started without a key holds entries without HMACs; a keyed store refuses to add
        to it until an admin adopts the key here. The chain is checked first (a log that fails
        it is not signed: signing would certify the change), then every entry and the head get
        their HMAC in one transaction.

        Parameters
        ----------
        admin : User, optional
            Who signs (required with a team, and must be an admin).

        Returns
        -------
        int
            The number of entries signed (0 when the log was already signed with this key).
        """
        if self._key is None:
            raise ValueError(f"Signing the review log needs the server's key: set {KEY_ENV_VAR} (or pass `key=`).")
        if self.team is not None:
            if not isinstance(admin, User):
                raise ValueError(f"With a team, signing names the admin who signs (`admin`); got {admin!r}.")
            if not self.team.allows(admin.email, "admin"):
                role = self.team.role_of(admin.email) or "none"
                raise self._refuse(admin, "sign", "", [], f"is a {role}; to sign the log needs the admin role")
        try:
            with self._transaction(guard=False) as conn:
                check = settings(conn).get("key_check")
                if check is not None:
                    if check != key_check(self._key):
                        raise ReviewStoreError(
                            f"Review database {self._db.name!r} is signed with another key already; nothing was changed."
                        )
                    return 0
                head = conn.execute("SELECT entries, head, mac FROM chain_head WHERE id = 1").fetchone()
                rows = (
                    (row[:-3], row[-3], row[-2], row[-1])
                    for row in conn.execute(
                        f"SELECT {_COLUMNS}, prev_hash, entry_hash, mac FROM reviews ORDER BY review_id"
                    )
                )
                found = walk_chain(rows, key=None, head=None if head is None else tuple(head), keyed=False)
                if not found.ok:
                    raise ReviewStoreError(
                        f"Review database {self._db.name!r} fails verification ({found.problem}); signing it would "
                        "certify the change. Restore it from a backup. Nothing was changed."
                    )
                conn.execute(
                    "INSERT INTO store_settings (name, value) VALUES ('key_check', ?)", (key_check(self._key),)
                )
                return seal_chain(self._db, conn, key=self._key)
        except self._db.errors as exc:
            raise self._error(exc, "signing the review log") from exc

    # ------------------------------------------------------------------------------------
    # Review plans and assignments
    def plan(
        self,
        audit: str | AuditKey,
        sample_ids: Iterable[str | int] = (),
        *,
        admin: str | User,
        reviewers_per_case: int = 1,
        reviewers: Iterable[str] | None = None,
        assign: bool = True,
    ) -> ReviewPlan:
        """Store a new review plan for an audit: reviewers per case and, optionally, assignments.

        Parameters
        ----------
        audit : str or AuditKey
        sample_ids : iterable of str or int
            The queued cases in queue order; with ``assign`` they are dealt round-robin
            (:func:`core.reviews.assignment.round_robin`), ``reviewers_per_case`` each.
        admin : str or User
            Who plans (an admin, with a team).
        reviewers_per_case : int, default=1
            1 = single review; 2 or more = double review (blind until one's own decision).
        reviewers : iterable of str, optional
            The addresses to deal the cases to, in order; default: every ``reviewer`` of the
            team, in the team file's order. Each must have at least the reviewer role.
        assign : bool, default=True
            False turns assignment off: every reviewer may decide every case.

        Returns
        -------
        ReviewPlan
            The plan now in force (the latest of the audit).

        Raises
        ------
        AccessRefused
            With a team, when ``admin`` is not an admin (the attempt is recorded).
        """
        key = _key_iv(audit)
        user = self._user(admin)
        if not isinstance(assign, bool):
            raise ValueError(f"`assign` must be True or False; got {assign!r}.")
        if isinstance(reviewers_per_case, bool) or not isinstance(reviewers_per_case, int) or reviewers_per_case < 1:
            raise ValueError(f"`reviewers_per_case` must be a whole number >= 1; got {reviewers_per_case!r}.")
        ids = list(dict.fromkeys(_sample_id_iv(s) for s in sample_ids))
        if reviewers is None:
            if self.team is None:
                pool = []
            else:
                pool = list(self.team.with_role("reviewer"))
        else:
            pool = [_text_iv(r, "reviewers", max_len=_MAX_REVIEWER, allow_empty=False) for r in reviewers]
            if self.team is not None:
                pool = [r.lower() for r in pool]
                unfit = [r for r in pool if not self.team.allows(r, "reviewer")]
                if unfit:
                    raise ValueError(
                        f"`reviewers` must be team members with the reviewer or admin role; got {unfit!r}."
                    )
        triples = []
        if assign:
            if not ids:
                raise ValueError("Assigning cases needs the queued cases (`sample_ids`); got none.")
            triples = round_robin(ids, pool, reviewers_per_case)
        try:
            with self._transaction() as conn:
                refused = self._why_refused(conn, user, "assign", key.fingerprint, [])
                if not refused:
                    plan_id = self._db.insert_id(
                        conn,
                        "INSERT INTO review_plans (created_at, audit_fingerprint, admin, admin_email, "
                        "reviewers_per_case, assigned, reviewers) VALUES (?, ?, ?, ?, ?, ?, ?)",
                        (
                            _now(),
                            key.fingerprint,
                            user.name,
                            user.email,
                            reviewers_per_case,
                            int(assign),
                            ",".join(pool) if assign else "",
                        ),
                        "plan_id",
                    )
                    conn.executemany(
                        "INSERT INTO assignments (plan_id, position, sample_id, reviewer_email) VALUES (?, ?, ?, ?)",
                        [(plan_id, *t) for t in triples],
                    )
                    return self._plan(conn, key.fingerprint)
        except self._db.errors as exc:
            raise self._error(exc, "storing the review plan") from exc
        raise self._refuse(user, "assign", key.fingerprint, [], refused)
