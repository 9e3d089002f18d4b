"""Who may do what in the review log: the acting user, their role, refusals, blinded reads.

A mixin of :class:`core.reviews.store.ReviewStore`. Every check of a write runs inside the
write transaction (``conn``), so a plan stored meanwhile by an admin is seen by the next write;
a refused attempt is recorded in ``access_refusals`` and on the ``reliability_audit.reviews``
logger. The roles themselves are those of :class:`core.reviews.team.Team`
(:mod:`core.reviews.permissions` says what the dashboard offers each of them).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING

import pandas as pd

from core.reviews.chain import KEY_ENV_VAR, key_check
from core.reviews.records import (
    _MAX_NOTE,
    _MAX_REVIEWER,
    DECISIONS,
    ReviewStoreError,
    _now,
    _reasons_iv,
    _submission_iv,
    _text_iv,
)
from core.reviews.schema import settings
from core.reviews.team import AccessRefused, Team, User

if TYPE_CHECKING:
    from core.reviews.interface import Backend, Connection

#: The least role each write needs.
_NEEDS = {"decide": "reviewer", "retract": "reviewer", "adjudicate": "admin", "assign": "admin", "export": "admin"}
_LOG = logging.getLogger("reliability_audit.reviews")


class _Policy:
    """The access rules of :class:`~core.reviews.store.ReviewStore` (see its module docstring)."""

    team: Team | None
    _key: bytes | None
    _db: Backend

    def _guard(self, conn: Connection) -> None:
        """Refuse a write the file's settings forbid (read under the write lock): a team's file
        opened without its team, a signed file opened without its key or with another key."""
        found = settings(conn)
        where = f"Review database {self._db.name!r}"
        if "team" in found and self.team is None:
            raise ReviewStoreError(
                f"{where} belongs to a team: open it with its team file to record decisions (every write "
                "names a signed-in member). Nothing was stored."
            )
        check = found.get("key_check")
        if check is not None and self._key is None:
            raise ReviewStoreError(
                f"{where} is signed with the server's key, and this process has none ({KEY_ENV_VAR} is not "
                "set): a decision written without it would not verify. Nothing was stored."
            )
        if check is not None and key_check(self._key) != check:
            raise ReviewStoreError(
                f"{where} is signed with another key than this process's ({KEY_ENV_VAR}): a decision "
                "written with it would not verify. Nothing was stored."
            )
        if check is None and self._key is not None:
            raise ReviewStoreError(
                f"{where} was started without a key and already holds entries: an admin signs them "
                "once with the key (`reliability-audit reviews sign`, see docs/security.md) before "
                "this process may add more. Nothing was stored."
            )

    def _user(self, reviewer: str | User) -> User:
        """The acting user: a :class:`User`, or (local mode only) a typed reviewer name."""
        if isinstance(reviewer, User):
            user = reviewer
        elif self.team is not None:
            raise ValueError(
                "With a team, a write names the signed-in user (a core.reviews.User with an e-mail address); "
                f"got {type(reviewer).__name__} {reviewer!r}."
            )
        else:
            user = User(name=_text_iv(reviewer, "reviewer", max_len=_MAX_REVIEWER, allow_empty=False))
        if self.team is not None and not user.email:
            raise ValueError(f"With a team, the acting user needs an e-mail address; got {user.name!r} without one.")
        return user

    def _decision_iv(
        self, reviewer: str | User, decision: object, note: object, reasons: object, submission_id: object
    ) -> tuple[User, str, str, str | None]:
        """The checked (user, note, reason codes, submission id) of a decision (review or adjudication)."""
        user = self._user(reviewer)
        if decision not in DECISIONS:
            raise ValueError(f"`decision` must be one of {list(DECISIONS)}; got {decision!r}.")
        text = _text_iv(note, "note", max_len=_MAX_NOTE, allow_empty=True)
        return user, text, _reasons_iv(reasons), _submission_iv(submission_id)

    def _role(self, user: User) -> str:
        if self.team is None:
            return "local"
        return self.team.role_of(user.email) or "none"

    def _why_refused(self, conn: Connection, user: User, action: str, fingerprint: str, ids: list[str]) -> str:
        """Why ``user`` may not do ``action`` (empty when allowed); read inside the write lock."""
        if self.team is None:
            return ""
        role = self.team.role_of(user.email)
        if role is None:
            return "has no access to this review database (not in the team file)"
        need = _NEEDS[action]
        if not self.team.allows(user.email, need):
            return f"is a {role}; to {action} needs the {need} role"
        if action == "decide":
            plan = self._plan(conn, fingerprint)
            if plan.assigned:
                mine = {
                    r[0]
                    for r in conn.execute(
                        "SELECT sample_id FROM assignments WHERE plan_id = ? AND reviewer_email = ?",
                        (plan.plan_id, user.email),
                    )
                }
                missing = [sid for sid in ids if sid not in mine]
                if missing:
                    shown = ", ".join(missing[:10]) + (" …" if len(missing) > 10 else "")
                    return f"is not assigned sample(s) {shown} of this audit"
        return ""

    def _refuse(self, user: User, action: str, fingerprint: str, ids: Iterable[str], reason: str) -> AccessRefused:
        """Record a refused attempt (``access_refusals`` and the log) and return the exception to raise."""
        role = self._role(user)
        samples = ",".join(ids)
        _LOG.warning(
            "refused: %s (%s) tried to %s on audit %s sample(s) [%s]: %s",
            user.email or user.name,
            role,
            action,
            fingerprint[:12],
            samples[:200],
            reason,
        )
        try:
            with self._transaction(guard=False) as conn:
                conn.execute(
                    "INSERT INTO access_refusals (created_at, user_email, user_name, role, action, audit_fingerprint,"
                    " sample_id, reason) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (_now(), user.email, user.name, role, action, fingerprint, samples, reason),
                )
        except self._db.errors:  # the log line above still records it; the refusal stands either way
            _LOG.exception("could not record the refused attempt in %s", self._db.name)
        return AccessRefused(f"{user.label} {reason}: nothing was stored.", user=user, role=role, action=action)

    def _reader(self, viewer: User | None, fingerprint: str) -> frozenset[str] | None:
        """The samples on which a blind reader may see other reviewers' entries (None: no blinding).

        With a team, a read names its reader; a reviewer under a double-review plan sees others'
        entries only on the cases where they have recorded an entry of their own.
        """
        if self.team is None:
            return None
        if not isinstance(viewer, User):
            raise ValueError(
                f"With a team, a read names its reader (`viewer`, the signed-in core.reviews.User); got {viewer!r}."
            )
        role = self.team.role_of(viewer.email)
        if role is None:
            raise self._refuse(viewer, "read", fingerprint, [], "has no access to this review database")
        if role != "reviewer" or not self.current_plan(fingerprint).double:
            return None
        rows = self._rows(
            "SELECT DISTINCT sample_id FROM reviews WHERE audit_fingerprint = ? AND reviewer_email = ?",
            (fingerprint, viewer.email),
        )
        return frozenset(r[0] for r in rows)

    @staticmethod
    def _hide(frame: pd.DataFrame, seen: frozenset[str] | None, viewer: User | None) -> pd.DataFrame:
        if seen is None:
            return frame
        keep = (frame["reviewer_email"] == viewer.email) | frame["sample_id"].isin(seen)
        return frame[keep.to_numpy()].reset_index(drop=True)
