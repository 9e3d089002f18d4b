"""Persistent review decisions for flagged predictions, in an SQLite file or on a PostgreSQL server.

Reviewers triage the brittle-looking predictions of an audit over days, from several browser
sessions at once. Every decision is appended (never updated in place), so the full history of
a case is kept and the *latest* decision is simply the one with the highest ``review_id``.

A review is keyed by ``(audit_fingerprint, sample_id)``: the fingerprint of the audit (the
protocol plus the model's predictions on a fixed probe, see :mod:`core.cfc`) and a sample id
that is stable across runs (the row id of the sample in its dataset). Re-running the same
audit after a restart gives the same fingerprint, so the decisions re-attach to the same
samples; a different model or protocol gives a different fingerprint and starts a clean slate.

The file is ours or refused: a new database is stamped with :data:`APPLICATION_ID` (``PRAGMA
application_id``) and a one-row marker table ``reliability_audit_marker``; opening any other
SQLite file (another application's, or a review database written by a *newer* version of this
tool) is refused with a :class:`ReviewStoreError` and the file is left byte-identical (it is
inspected through a read-only SQLite connection first: nothing but SQLite ever opens the file,
since closing any other descriptor of it would drop the locks of SQLite's connections in this
process). Opening costs O(1); the whole-file check is :func:`core.reviews.maintenance.check_integrity`,
on demand. The history is append-only in the schema itself: triggers abort any ``UPDATE`` or
``DELETE``, and a file of the current version whose triggers were dropped is refused.
``created_at`` is taken inside the write transaction (and never earlier than the previous
row's), so time order and ``review_id`` order agree.

Schema version 3 (this version) adds structured reason codes (:data:`REASONS`), the audit
context of every entry (data fingerprint, model, protocol fingerprint: decisions are shown
across audits of the same data), retractions and a submission id. An older file (version 1
or 2) is migrated in place in one transaction on first open: every row is copied verbatim
(same ``review_id``, timestamps, reviewer, decision, note; the new fields empty), so its
history is intact; a failure leaves the old file as it was.

**Retractions (undo).** Nothing is ever removed: undo appends an entry whose ``decision`` is
``"retracted"`` and whose ``retracts`` names the decision it cancels, always the case's most
recent decision not yet retracted (a stack). The *latest decision* of a case is therefore its
most recent decision that no retraction names: after ``A, B, retract`` it is ``A``; after
``A, B, retract, retract`` the case is unreviewed again; after ``A, retract, C`` it is ``C``.
Retracting an unreviewed case is refused.

**Double submission.** An entry may carry a ``submission_id`` (unique in the file): recording
the same submission twice returns the stored entry instead of appending a second one, so a
double click, a resent request or a rerun never duplicates a decision.

Schema version 4 adds the team: every entry records the signed-in ``reviewer_email`` and its
``kind`` (``"review"``, or ``"adjudication"``: an admin's final decision on a case), and three
append-only tables hold the review plans (``review_plans``: reviewers per case, whether cases
are assigned), the assignments (``assignments``) and every refused write (``access_refusals``).
A version-3 file gains the two columns (empty address, kind ``review``) and the tables in place.

**A team.** Opened with a :class:`~core.reviews.team.Team` (``ReviewStore(path, team=team)``),
the store checks every write against the writer's role and refuses it with
:class:`~core.reviews.team.AccessRefused`, recording the attempt in ``access_refusals`` and on
the ``reliability_audit.reviews`` logger: a viewer decides nothing; a reviewer decides on the
cases assigned to them (every case when the audit's plan assigns none) and retracts only their
own decisions; only an admin plans, adjudicates and exports. Reads take the reader
(``viewer=``): under a double review (two or more reviewers per case) a reviewer sees the other
reviewers' entries on a case only once they have recorded their own. Without a team the store
is single-user (local mode): every write is allowed and the reviewer is a typed name.

Schema version 5 adds the tamper-evident chain (:mod:`core.reviews.chain`: every entry's
``prev_hash``, ``entry_hash`` and ``mac``, and the ``chain_head``) and ``store_settings``, where
the file remembers that it belongs to a team and the check of its key: a store opened without
the team, or without the key (``key=`` or ``AUDIT_REVIEWS_KEY``), or with another key, refuses
every write. A version-4 file is chained (and signed, when opened with a key) in place.

**Durability** (``docs/review_team.md``): every connection runs ``synchronous = FULL`` in WAL
mode, so a returned write is on disk.

**The decision of a case** (:meth:`ReviewStore.latest`) is its most recent adjudication in
force, else its most recent decision in force.

Concurrency: the database runs in WAL mode (readers never block the writer), every connection
waits up to ``timeout`` seconds on a lock (``busy_timeout``), and each write is one
``BEGIN IMMEDIATE`` transaction. A connection is opened per operation, so one store object is
safe to share between threads (Streamlit serves every browser session from its own thread).

**PostgreSQL** (``ReviewStore("postgresql://user@host/db")``, :mod:`core.reviews.postgres`):
the same schema version, the same append-only triggers (and the app's role loses ``UPDATE``
and ``DELETE`` when it does not own the tables), the same chain, with every write serialised
on the database's advisory lock, so several dashboard replicas share one log.

The store is split by idea, one module each: :mod:`~core.reviews.records` (entries and their
validation), :mod:`~core.reviews.schema` (versions, migrations, the chain seal),
:mod:`~core.reviews.backend` (the backend interface and SQLite), :mod:`~core.reviews.postgres`,
:mod:`~core.reviews.policy` (who may do what), :mod:`~core.reviews.writes`,
:mod:`~core.reviews.reads` and :mod:`~core.reviews.export`; this module joins them.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from core.reviews.backend import Backend, Connection, SQLiteBackend, default_db_path, open_backend
from core.reviews.chain import KEY_ENV_VAR, key_bytes
from core.reviews.export import _Export
from core.reviews.policy import _Policy
from core.reviews.reads import _Reads
from core.reviews.records import (
    ADJUDICATION,
    DECISION_LABELS,
    DECISIONS,
    ENTRY_LABELS,
    ENV_VAR,
    REASONS,
    RETRACTED,
    REVIEW,
    REVIEW_COLUMNS,
    AuditKey,
    Decision,
    Review,
    ReviewStoreError,
    reason_labels,
)
from core.reviews.schema import APPLICATION_ID, upgrade
from core.reviews.team import Team
from core.reviews.writes import _Writes

__all__ = [
    "ADJUDICATION",
    "APPLICATION_ID",
    "DECISIONS",
    "DECISION_LABELS",
    "ENTRY_LABELS",
    "ENV_VAR",
    "REASONS",
    "RETRACTED",
    "REVIEW",
    "REVIEW_COLUMNS",
    "AuditKey",
    "Decision",
    "Review",
    "ReviewStore",
    "ReviewStoreError",
    "default_db_path",
    "reason_labels",
]


class ReviewStore(_Policy, _Writes, _Reads, _Export):
    """Append-only store of review decisions in an SQLite file or a PostgreSQL database.

    Parameters
    ----------
    path : str or os.PathLike, optional
        Database file; created (with its parent directories) when missing. ``None`` uses
        :func:`default_db_path`. A ``postgresql://`` URL (libpq syntax) names a database on a
        PostgreSQL server instead (:mod:`core.reviews.postgres`): its schema is created when
        the database is empty.
    timeout : float, default=10.0
        Seconds a connection waits for a lock held by another writer before failing.
    team : Team, optional
        The team whose roles every write is checked against (see the module docstring);
        None = single-user local mode, every write allowed.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> store = ReviewStore(pathlib.Path(tempfile.mkdtemp()) / "r.sqlite3")
    >>> _ = store.record("fp1", 17, reviewer="ana", decision="acceptable", note="checked")
    >>> _ = store.record("fp1", 17, reviewer="bo", decision="confirmed_brittle")
    >>> store.latest("fp1")[["sample_id", "reviewer", "decision"]].to_dict("records")
    [{'sample_id': '17', 'reviewer': 'bo', 'decision': 'confirmed_brittle'}]
    >>> len(store.history("fp1", 17))
    2
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        timeout: float = 10.0,
        team: Team | None = None,
        key: str | bytes | None = None,
    ) -> None:
        if not (isinstance(timeout, (int, float)) and not isinstance(timeout, bool) and timeout > 0):
            raise ValueError(f"`timeout` must be a positive number of seconds; got {timeout!r}.")
        if team is not None and not isinstance(team, Team):
            raise ValueError(f"`team` must be a core.reviews.Team or None; got {type(team).__name__}.")
        self.team = team
        self._key = key_bytes(key if key is not None else (os.environ.get(KEY_ENV_VAR) or None))
        self.timeout = float(timeout)
        self._db: Backend = open_backend(path, timeout=self.timeout)
        #: The SQLite file (None on a PostgreSQL server: see :attr:`url`).
        self.path: Path | None = self._db.path if isinstance(self._db, SQLiteBackend) else None
        #: The PostgreSQL URL without its password (None for an SQLite file).
        self.url: str | None = None if self.path is not None else self._db.name
        try:
            if self._db.prepare(team=team is not None, key=self._key):
                # A new database, ours at an older version, or a team / key to remember: one transaction.
                with self._transaction(guard=False) as conn:
                    upgrade(self._db, conn, team=team is not None, key=self._key)
        except ReviewStoreError:
            raise
        except (OSError, *self._db.errors) as exc:
            if self._db.kind != "sqlite":
                raise self._db.error(exc, "opening") from exc
            raise ReviewStoreError(
                f"Cannot open the review database at {self._db.name!r} ({exc}); choose a writable "
                f"file path (`--reviews-db` or the {ENV_VAR} environment variable)."
            ) from exc

    @property
    def keyed(self) -> bool:
        """Whether this process holds a key for the review log (``key=`` or ``AUDIT_REVIEWS_KEY``)."""
        return self._key is not None

    @property
    def backend(self) -> str:
        """``"sqlite"`` or ``"postgresql"``."""
        return self._db.kind

    def __repr__(self) -> str:
        return f"ReviewStore({self._db.name!r})"

    def _connect(self) -> Connection:
        return self._db.connect()

    def _error(self, exc: BaseException, doing: str) -> ReviewStoreError:
        return self._db.error(exc, doing)

    @contextmanager
    def _transaction(self, *, guard: bool = True) -> Iterator[Connection]:
        """One write transaction, serialised with every writer of the database; with ``guard``,
        refused when the database's settings forbid this store to write (:meth:`_guard`)."""
        with self._db.transaction() as conn:
            if guard:
                self._guard(conn)
            yield conn
