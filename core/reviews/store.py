"""Persistent review decisions for flagged predictions, in an embedded SQLite database.

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
"""

from __future__ import annotations

import logging
import os
import random
import shutil
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal, get_args

import pandas as pd

from core.atomic import atomic_path
from core.csv_safe import write_csv
from core.reviews.assignment import ReviewPlan, round_robin
from core.reviews.chain import (
    GENESIS,
    KEY_ENV_VAR,
    entry_hash,
    entry_mac,
    head_mac,
    key_bytes,
    key_check,
    walk_chain,
)
from core.reviews.team import AccessRefused, Team, User

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

Decision = Literal["confirmed_brittle", "acceptable", "needs_reacquisition"]
#: The closed set of decisions, in the order they are offered to a reviewer.
DECISIONS: tuple[str, ...] = get_args(Decision)
#: Human-readable label of every decision (for display and exports).
DECISION_LABELS: dict[str, str] = {
    "confirmed_brittle": "Confirmed brittle",
    "acceptable": "Acceptable",
    "needs_reacquisition": "Needs evidence re-acquisition",
}
#: ``decision`` of an undo entry (never offered as a decision, never a case's latest decision).
RETRACTED = "retracted"
#: Labels of every kind of stored entry: the decisions plus retractions.
ENTRY_LABELS: dict[str, str] = {**DECISION_LABELS, RETRACTED: "Retracted (undo)"}
#: ``kind`` of an ordinary decision (and of its retraction).
REVIEW = "review"
#: ``kind`` of an admin's final decision on a case (and of its retraction).
ADJUDICATION = "adjudication"
#: Structured reason codes a reviewer may attach to a decision (any number of them, plus a
#: free note), in the order they are offered.
REASONS: dict[str, str] = {
    "data_quality": "Data-quality issue",
    "missing_field": "Missing field",
    "over_reliance": "Model over-relies on one group",
    "label_doubt": "True label looks wrong",
    "out_of_distribution": "Unusual case (outside the training data)",
    "evidence_sufficient": "Acceptable: the evidence supports it",
    "other": "Other (see the note)",
}
#: Environment variable that overrides the default database location.
ENV_VAR = "AUDIT_REVIEWS_DB"
#: Columns of every DataFrame this module returns, in order.
REVIEW_COLUMNS: tuple[str, ...] = (
    "review_id",
    "created_at",
    "audit_fingerprint",
    "sample_id",
    "reviewer",
    "decision",
    "note",
    "reasons",
    "retracts",
    "data_fingerprint",
    "model",
    "protocol_fingerprint",
    "submission_id",
    "reviewer_email",
    "kind",
)
# The columns of versions 1 and 2 (copied verbatim by the migration).
_V1_COLUMNS: tuple[str, ...] = REVIEW_COLUMNS[:7]

_MAX_REVIEWER = 200
_MAX_NOTE = 10_000
#: ``PRAGMA application_id`` of every review database ("RAud" in ASCII).
APPLICATION_ID = 0x52417564
_MARKER_TABLE = "reliability_audit_marker"
_MARKER = "reliability-audit review store"
#: Version 1: the table only (files from before the marker); version 2: marker + triggers;
#: version 3: reasons, retractions, audit context, submission ids; version 4: the team; version 5:
#: the tamper-evident chain, the store's settings (team, key check) (see the module docstring).
_SCHEMA_VERSION = 5
#: The triggers that make the history append-only; a file of the current version without one of
#: them was edited outside this tool (someone dropped it to change the history) and is refused.
_TRIGGERS = frozenset(
    {"reviews_append_only_update", "reviews_append_only_delete", "reviews_retraction_target", "chain_head_kept"}
    | {
        f"{t}_append_only_{op}"
        for t in ("review_plans", "assignments", "access_refusals", "store_settings")
        for op in ("update", "delete")
    }
)
_ENTRY_KINDS = ", ".join(f"'{d}'" for d in (*DECISIONS, RETRACTED))


def _table_sql(name: str) -> str:
    return f"""
CREATE TABLE {name} (
    review_id            INTEGER PRIMARY KEY AUTOINCREMENT,
    created_at           TEXT    NOT NULL,
    audit_fingerprint    TEXT    NOT NULL CHECK (length(audit_fingerprint) > 0),
    sample_id            TEXT    NOT NULL CHECK (length(sample_id) > 0),
    reviewer             TEXT    NOT NULL CHECK (length(trim(reviewer)) > 0),
    decision             TEXT    NOT NULL CHECK (decision IN ({_ENTRY_KINDS})),
    note                 TEXT    NOT NULL DEFAULT '',
    reasons              TEXT    NOT NULL DEFAULT '',
    retracts             INTEGER CHECK ((decision = '{RETRACTED}') = (retracts IS NOT NULL)),
    data_fingerprint     TEXT    NOT NULL DEFAULT '',
    model                TEXT    NOT NULL DEFAULT '',
    protocol_fingerprint TEXT    NOT NULL DEFAULT '',
    submission_id        TEXT,
    reviewer_email       TEXT    NOT NULL DEFAULT '',
    kind                 TEXT    NOT NULL DEFAULT '{REVIEW}' CHECK (kind IN ('{REVIEW}', '{ADJUDICATION}')),
    prev_hash            TEXT    NOT NULL DEFAULT '',
    entry_hash           TEXT    NOT NULL DEFAULT '',
    mac                  TEXT    NOT NULL DEFAULT ''
);
"""


def _append_only(table: str) -> str:
    return f"""
CREATE TRIGGER IF NOT EXISTS {table}_append_only_update BEFORE UPDATE ON {table}
BEGIN SELECT RAISE(ABORT, '{table} are append-only: record a new entry instead of updating one'); END;
CREATE TRIGGER IF NOT EXISTS {table}_append_only_delete BEFORE DELETE ON {table}
BEGIN SELECT RAISE(ABORT, '{table} are append-only: entries cannot be deleted'); END;
"""


# Indexes, the marker, append-only triggers and the identity pragmas of version 3.
_UPGRADE = f"""
CREATE INDEX IF NOT EXISTS reviews_by_sample ON reviews (audit_fingerprint, sample_id, review_id);
CREATE INDEX IF NOT EXISTS reviews_by_data ON reviews (data_fingerprint, sample_id, review_id);
CREATE UNIQUE INDEX IF NOT EXISTS reviews_one_submission ON reviews (submission_id) WHERE submission_id IS NOT NULL;
CREATE UNIQUE INDEX IF NOT EXISTS reviews_retracted_once ON reviews (retracts) WHERE retracts IS NOT NULL;
CREATE TABLE IF NOT EXISTS {_MARKER_TABLE} (marker TEXT NOT NULL);
INSERT INTO {_MARKER_TABLE} (marker) SELECT '{_MARKER}' WHERE NOT EXISTS (SELECT 1 FROM {_MARKER_TABLE});
CREATE TRIGGER IF NOT EXISTS reviews_append_only_update BEFORE UPDATE ON reviews
BEGIN SELECT RAISE(ABORT, 'reviews are append-only: record a new decision instead of updating one'); END;
CREATE TRIGGER IF NOT EXISTS reviews_append_only_delete BEFORE DELETE ON reviews
BEGIN SELECT RAISE(ABORT, 'reviews are append-only: decisions cannot be deleted'); END;
CREATE TRIGGER IF NOT EXISTS reviews_retraction_target BEFORE INSERT ON reviews WHEN NEW.retracts IS NOT NULL
BEGIN SELECT RAISE(ABORT, 'a retraction must name an earlier decision of the same case') WHERE NOT EXISTS (
    SELECT 1 FROM reviews WHERE review_id = NEW.retracts AND audit_fingerprint = NEW.audit_fingerprint
    AND sample_id = NEW.sample_id AND decision != '{RETRACTED}'); END;
CREATE INDEX IF NOT EXISTS reviews_by_reviewer ON reviews (audit_fingerprint, reviewer_email, review_id);
CREATE TABLE IF NOT EXISTS review_plans (
    plan_id            INTEGER PRIMARY KEY AUTOINCREMENT,
    created_at         TEXT    NOT NULL,
    audit_fingerprint  TEXT    NOT NULL CHECK (length(audit_fingerprint) > 0),
    admin              TEXT    NOT NULL,
    admin_email        TEXT    NOT NULL DEFAULT '',
    reviewers_per_case INTEGER NOT NULL CHECK (reviewers_per_case >= 1),
    assigned           INTEGER NOT NULL CHECK (assigned IN (0, 1)),
    reviewers          TEXT    NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS review_plans_by_audit ON review_plans (audit_fingerprint, plan_id);
CREATE TABLE IF NOT EXISTS assignments (
    plan_id        INTEGER NOT NULL REFERENCES review_plans (plan_id),
    position       INTEGER NOT NULL CHECK (position >= 0),
    sample_id      TEXT    NOT NULL CHECK (length(sample_id) > 0),
    reviewer_email TEXT    NOT NULL CHECK (length(reviewer_email) > 0),
    PRIMARY KEY (plan_id, sample_id, reviewer_email)
);
CREATE TABLE IF NOT EXISTS access_refusals (
    refusal_id        INTEGER PRIMARY KEY AUTOINCREMENT,
    created_at        TEXT NOT NULL,
    user_email        TEXT NOT NULL,
    user_name         TEXT NOT NULL,
    role              TEXT NOT NULL,
    action            TEXT NOT NULL,
    audit_fingerprint TEXT NOT NULL,
    sample_id         TEXT NOT NULL,
    reason            TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS store_settings (name TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS chain_head (
    id      INTEGER PRIMARY KEY CHECK (id = 1),
    entries INTEGER NOT NULL CHECK (entries >= 0),
    head    TEXT    NOT NULL,
    mac     TEXT    NOT NULL DEFAULT ''
);
CREATE TRIGGER IF NOT EXISTS chain_head_kept BEFORE DELETE ON chain_head
BEGIN SELECT RAISE(ABORT, 'the head of the review log cannot be deleted'); END;
{_append_only("review_plans")}{_append_only("assignments")}{_append_only("access_refusals")}{_append_only("store_settings")}
PRAGMA application_id = {APPLICATION_ID};
PRAGMA user_version = {_SCHEMA_VERSION};
"""
# Versions 1 and 2 -> 4: the CHECK on `decision` must admit retractions, and SQLite cannot
# alter a CHECK, so the table is rebuilt: rows copied verbatim (same review_id), the old table
# (and its triggers) dropped, the new one renamed. All inside the caller's transaction.
_MIGRATE = (
    _table_sql("reviews_v3")
    + f"INSERT INTO reviews_v3 ({', '.join(_V1_COLUMNS)}) SELECT {', '.join(_V1_COLUMNS)} FROM reviews"
    " ORDER BY review_id;\nDROP TABLE reviews;\nALTER TABLE reviews_v3 RENAME TO reviews;\n"
)
# Version 3 -> 4: two columns added in place (ALTER TABLE fires no trigger); rows keep their ids.
_MIGRATE_V3 = (
    "ALTER TABLE reviews ADD COLUMN reviewer_email TEXT NOT NULL DEFAULT '';\n"
    f"ALTER TABLE reviews ADD COLUMN kind TEXT NOT NULL DEFAULT '{REVIEW}' CHECK (kind IN ('{REVIEW}', '{ADJUDICATION}'));\n"
)
# Version 4 -> 5: the chain's columns (filled in by `_seal_chain` in the same transaction).
_MIGRATE_V4 = "".join(
    f"ALTER TABLE reviews ADD COLUMN {c} TEXT NOT NULL DEFAULT '';\n" for c in ("prev_hash", "entry_hash", "mac")
)
_V1_TABLES = {"reviews", "sqlite_sequence"}
_COLUMNS = ", ".join(REVIEW_COLUMNS)
_COLUMNS_R = ", ".join(f"r.{c}" for c in REVIEW_COLUMNS)
# A decision still in force: not a retraction, and named by no retraction.
_ACTIVE = f"decision != '{RETRACTED}' AND review_id NOT IN (SELECT retracts FROM reviews WHERE retracts IS NOT NULL)"


class ReviewStoreError(ValueError):
    """The review database cannot be used: not ours, newer, corrupted, locked, full, unwritable.

    The message names the file and says what to do; the file is left as it was.
    """


def default_db_path() -> Path:
    """Location of the review database when none is given.

    The environment variable ``AUDIT_REVIEWS_DB`` wins; otherwise ``reviews.sqlite3`` in the
    user's data directory (``platformdirs.user_data_path("reliability-audit")``), so decisions
    survive reinstalls of the code.
    """
    env = os.environ.get(ENV_VAR, "").strip()
    if env:
        return Path(env).expanduser()
    import platformdirs

    return platformdirs.user_data_path("reliability-audit", appauthor=False) / "reviews.sqlite3"


@dataclass(frozen=True)
class AuditKey:
    """The audit a decision is made under, and the data it is about.

    Attributes
    ----------
    fingerprint : str
        Certificate fingerprint of the audit (protocol + model outputs on a fixed probe):
        the key decisions are stored and attached under.
    data_fingerprint : str, default=""
        Fingerprint of the dataset the sample ids refer to (:func:`core.reviews.data_fingerprint`):
        audits of the same data (another model or protocol) share it, so their decisions can
        be shown side by side. Empty when unknown (entries written before schema version 3).
    model : str, default=""
        Model of the audit (display name or key).
    protocol_fingerprint : str, default=""
        Fingerprint of the audit's protocol.
    """

    fingerprint: str
    data_fingerprint: str = ""
    model: str = ""
    protocol_fingerprint: str = ""

    def __post_init__(self) -> None:
        _text_iv(self.fingerprint, "audit_fingerprint", max_len=512, allow_empty=False)
        for name in ("data_fingerprint", "model", "protocol_fingerprint"):
            _text_iv(getattr(self, name), name, max_len=512, allow_empty=True)


@dataclass(frozen=True)
class Review:
    """One stored entry: a decision, or the retraction of one.

    Attributes
    ----------
    review_id : int
        Monotone id assigned by the database; a larger id is a later entry.
    created_at : str
        UTC timestamp, ISO 8601 with microseconds (``2026-01-31T09:15:02.123456+00:00``).
    audit_fingerprint : str
        Fingerprint of the audit the sample belongs to.
    sample_id : str
        Stable id of the sample within that audit.
    reviewer : str
        Who decided (stripped of surrounding white space).
    decision : {"confirmed_brittle", "acceptable", "needs_reacquisition", "retracted"}
        The decision, or ``"retracted"`` for an undo entry.
    note : str
        Free-text justification (may be empty).
    reasons : tuple of str
        Reason codes (keys of :data:`REASONS`) in declared order; empty for a retraction.
    retracts : int or None
        For a retraction, the ``review_id`` of the decision it cancels; else None.
    data_fingerprint, model, protocol_fingerprint : str
        The :class:`AuditKey` context (empty for entries from before schema version 3).
    submission_id : str or None
        The submission that stored the entry (unique), if given.
    reviewer_email : str
        The signed-in address of the reviewer; empty in local mode (and before schema version 4).
    kind : {"review", "adjudication"}
        An ordinary decision, or an admin's final decision on the case (a retraction takes
        the kind of the entry it cancels).
    """

    review_id: int
    created_at: str
    audit_fingerprint: str
    sample_id: str
    reviewer: str
    decision: str
    note: str
    reasons: tuple[str, ...] = ()
    retracts: int | None = None
    data_fingerprint: str = ""
    model: str = ""
    protocol_fingerprint: str = ""
    submission_id: str | None = None
    reviewer_email: str = ""
    kind: str = REVIEW

    @classmethod
    def _from_row(cls, row: tuple) -> Review:
        values = dict(zip(REVIEW_COLUMNS, row))
        values["reasons"] = _split_reasons(values["reasons"])
        return cls(**values)


def _split_reasons(text: str) -> tuple[str, ...]:
    return tuple(code for code in text.split(",") if code)


def _reasons_iv(value: object) -> str:
    """Reason codes as stored: comma-joined, unique, in the declared order of :data:`REASONS`."""
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise ValueError(
            f"`reasons` must be a list of reason codes from {list(REASONS)}; got {type(value).__name__} {value!r}."
        )
    codes = list(value)
    unknown = [c for c in codes if c not in REASONS]
    if unknown:
        raise ValueError(f"`reasons` must be codes from {list(REASONS)}; got unknown {unknown!r}.")
    return ",".join(code for code in REASONS if code in codes)


def _key_iv(audit: str | AuditKey) -> AuditKey:
    if isinstance(audit, AuditKey):
        return audit
    _text_iv(audit, "audit_fingerprint", max_len=512, allow_empty=False)
    return AuditKey(audit.strip())


def _submission_iv(value: object) -> str | None:
    return None if value is None else _text_iv(value, "submission_id", max_len=200, allow_empty=False)


def _text_iv(value: object, name: str, *, max_len: int, allow_empty: bool) -> str:
    if not isinstance(value, str):
        raise ValueError(f"`{name}` must be a string; got {type(value).__name__} {value!r}.")
    text = value.strip()
    if not text and not allow_empty:
        raise ValueError(f"`{name}` must not be empty; got {value!r}.")
    if len(text) > max_len:
        raise ValueError(f"`{name}` must have at most {max_len} characters; got {len(text)}.")
    return text


def _sample_id_iv(value: object) -> str:
    # ints (dataset row ids) and strings (record ids) are both legitimate sample ids; floats
    # are refused because 3.0 and "3" would silently become two different keys.
    if isinstance(value, str):
        text = value.strip()
    elif hasattr(value, "__index__") and not isinstance(value, bool):
        text = str(value.__index__())
    else:
        raise ValueError(f"`sample_id` must be a string or an integer; got {type(value).__name__} {value!r}.")
    if not text:
        raise ValueError(f"`sample_id` must not be empty; got {value!r}.")
    return text


def _db_path(path: str | os.PathLike[str] | None) -> Path:
    """The database file named by ``path`` (default: :func:`default_db_path`), checked."""
    if isinstance(path, str) and "://" in path:
        raise ValueError(
            f"Review database {path!r} looks like a URL; this version stores reviews in an SQLite file: "
            "give a file path."
        )
    db = Path(path).expanduser() if path is not None else default_db_path()
    if db.is_dir():
        raise ValueError(f"Review database path {str(db)!r} is a directory; expected a file path.")
    if db.exists() and not db.is_file():
        raise ReviewStoreError(f"Review database path {str(db)!r} is not a regular file.")
    return db


@dataclass(frozen=True)
class _Identity:
    """What an existing file says it is, read through SQLite in one read transaction."""

    app_id: int
    version: int
    tables: frozenset[str]
    columns: tuple[str, ...]
    marker: tuple[tuple, ...]
    triggers: frozenset[str]
    settings: dict
    journal: str

    def refuse_unusable(self, path: Path, *, edited_ok: bool = False) -> None:
        """Raise :class:`ReviewStoreError` unless the file is an empty SQLite file or ours, not newer.

        ``edited_ok`` lets a file whose append-only triggers were dropped through (the
        verification reports that itself).
        """
        where = f"Review database {str(path)!r}"
        if self.empty or self.ours_v1:
            return
        if self.app_id != APPLICATION_ID or self.marker != ((_MARKER,),):
            raise ReviewStoreError(
                f"{where} is not a review database of this tool (application_id {self.app_id:#x}, tables "
                f"{sorted(self.tables)}); refusing to modify it. Choose a new file path."
            )
        if self.version > _SCHEMA_VERSION:
            raise ReviewStoreError(
                f"{where} has schema version {self.version}, newer than this version of the tool understands "
                f"({_SCHEMA_VERSION}); upgrade the tool. The file was not modified."
            )
        missing = sorted(_TRIGGERS - self.triggers)
        if self.version == _SCHEMA_VERSION and missing and not edited_ok:
            raise ReviewStoreError(
                f"{where} was edited outside this tool: the trigger(s) that keep its history append-only "
                f"({', '.join(missing)}) were removed, so entries may have been changed or deleted. Restore "
                "it from a backup; the review log verification names the first changed entry. "
                "The file was not modified."
            )

    @property
    def empty(self) -> bool:
        return self.app_id == 0 and self.version == 0 and not self.tables

    @property
    def ours_v1(self) -> bool:
        return self.app_id == 0 and self.version == 1 and self.tables == _V1_TABLES and self.columns == _V1_COLUMNS

    def adopted(self, team: bool, key: bytes | None) -> bool:
        """Whether the file already remembers this store's team and key (nothing to write at open)."""
        if team and "team" not in self.settings:
            return False
        return key is None or "key_check" in self.settings or self.version < _SCHEMA_VERSION


def _identify(path: Path, timeout: float) -> _Identity:
    """Read what an existing file is, without changing it, through SQLite only.

    Nothing but SQLite opens the file while a connection may exist: closing any other
    descriptor of it would drop every POSIX lock this process holds on it, the locks of
    SQLite's other connections included (SQLite's "How To Corrupt An SQLite Database File",
    section 2.2). SQLite itself reads the header: a file that is not a database fails the first
    read with "file is not a database".
    """
    where = f"Review database {str(path)!r}"
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=timeout)
    except sqlite3.Error as exc:
        raise ReviewStoreError(f"{where} cannot be opened ({exc}).") from exc
    with closing(conn):
        try:
            # One read transaction: every value below comes from the same snapshot. Read one by
            # one, a file that another process creates meanwhile could show its tables but not
            # yet its application_id, and be refused as a foreign file.
            conn.isolation_level = None
            conn.execute("BEGIN")
            app_id = conn.execute("PRAGMA application_id").fetchone()[0]
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            master = conn.execute("SELECT type, name FROM sqlite_master").fetchall()
            tables = frozenset(n for t, n in master if t == "table")
            triggers = frozenset(n for t, n in master if t == "trigger")
            columns = tuple(r[1] for r in conn.execute("PRAGMA table_info(reviews)")) if "reviews" in tables else ()
            marker = (
                tuple(conn.execute(f"SELECT marker FROM {_MARKER_TABLE}").fetchall()) if _MARKER_TABLE in tables else ()
            )
            settings = _settings(conn) if "store_settings" in tables else {}
            journal = conn.execute("PRAGMA journal_mode").fetchone()[0]
            if journal != "wal":
                # Turning it to WAL writes its header: a file in another mode (a restored backup,
                # a file from elsewhere) is checked in full once, before it is first written.
                problems = [r[0] for r in conn.execute("PRAGMA quick_check(3)").fetchall()]
                if problems != ["ok"]:
                    raise sqlite3.DatabaseError(f"malformed (PRAGMA quick_check: {'; '.join(problems)})")
            conn.execute("ROLLBACK")
        except sqlite3.DatabaseError as exc:
            if "not a database" in str(exc):
                raise ReviewStoreError(
                    f"{where} is not an SQLite database (SQLite: {exc}): either another kind of file, or a "
                    "review database whose first page is corrupted. Choose another file, or restore it from "
                    "a backup. It was not modified."
                ) from exc
            if "malformed" in str(exc):
                raise ReviewStoreError(
                    f"{where} is corrupted ({exc}); restore it from a backup or choose another file. "
                    "It was not modified."
                ) from exc
            raise ReviewStoreError(f"{where}: opening failed ({exc}); nothing was changed.") from exc
    return _Identity(app_id, version, tables, columns, marker, triggers, settings, journal)


_WRITE_LOCKS: dict[str, threading.RLock] = {}
_WRITE_LOCKS_GUARD = threading.Lock()


def _write_lock(path: Path) -> threading.RLock:
    """This process's write lock of one database file (shared by every store object on it)."""
    key = os.path.realpath(path)
    with _WRITE_LOCKS_GUARD:
        return _WRITE_LOCKS.setdefault(key, threading.RLock())


def _settings(conn: sqlite3.Connection) -> dict[str, str]:
    return dict(conn.execute("SELECT name, value FROM store_settings").fetchall())


class ReviewStore:
    """Append-only store of review decisions in a SQLite file.

    Parameters
    ----------
    path : str or os.PathLike, optional
        Database file; created (with its parent directories) when missing. ``None`` uses
        :func:`default_db_path`.
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
        self.path = _db_path(path)
        self.timeout = float(timeout)
        try:
            found = _identify(self.path, self.timeout) if self.path.exists() and self.path.stat().st_size > 0 else None
            if found is not None:
                found.refuse_unusable(self.path)
            self.path.parent.mkdir(parents=True, exist_ok=True)
            if found is None or found.journal != "wal":
                self._enable_wal()
            if found is None or found.version < _SCHEMA_VERSION or not found.adopted(team is not None, self._key):
                # A new file, ours at versions 1 to 4, or a team / key to remember: one transaction.
                with self._transaction(guard=False) as conn:
                    self._upgrade(conn)
        except ReviewStoreError:
            raise
        except (OSError, sqlite3.Error) as exc:
            raise ReviewStoreError(
                f"Cannot open the review database at {str(self.path)!r} ({exc}); choose a writable "
                f"file path (`--reviews-db` or the {ENV_VAR} environment variable)."
            ) from exc

    @property
    def keyed(self) -> bool:
        """Whether this process holds a key for the review log (``key=`` or ``AUDIT_REVIEWS_KEY``)."""
        return self._key is not None

    def _upgrade(self, conn: sqlite3.Connection) -> None:
        # Re-read inside the write lock: another process may have upgraded the file since it
        # was inspected, and migrating twice would copy only the old columns of newer rows.
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version < _SCHEMA_VERSION:
            has_table = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'reviews'").fetchone()
            if not has_table:
                script = _table_sql("reviews")
            elif version == 4:
                script = _MIGRATE_V4
            elif version == 3:
                script = _MIGRATE_V3 + _MIGRATE_V4
            else:  # version 1 or 2: rebuilt at the current layout
                script = _MIGRATE
            for statement in _statements(script + _UPGRADE):
                conn.execute(statement)
        settings = _settings(conn)
        if self.team is not None and "team" not in settings:
            conn.execute("INSERT INTO store_settings (name, value) VALUES ('team', 'yes')")
        migrated = version < _SCHEMA_VERSION
        # An empty log, or one migrated right now, is signed from its start by the key it opens with.
        signs = (
            self._key is not None
            and "key_check" not in settings
            and (migrated or conn.execute("SELECT 1 FROM reviews LIMIT 1").fetchone() is None)
        )
        if signs:
            conn.execute("INSERT INTO store_settings (name, value) VALUES ('key_check', ?)", (key_check(self._key),))
        if migrated or signs:  # entries from before the chain, or a new head with its HMAC
            self._seal_chain(conn, sign=signs)

    def _seal_chain(self, conn: sqlite3.Connection, *, sign: bool) -> int:
        """(Re)compute every entry's chain fields, and the head; with ``sign``, their HMACs.

        Only a migration (the entries predate the chain) and :meth:`sign` (an admin adopts a
        key for an existing unsigned log) do this, inside their write transaction; the
        update trigger is lifted for it and put back before the commit.
        """
        conn.execute("DROP TRIGGER IF EXISTS reviews_append_only_update")
        prev, n = GENESIS, 0
        rows = conn.execute(f"SELECT {_COLUMNS} FROM reviews ORDER BY review_id").fetchall()
        for row in rows:
            digest = entry_hash(prev, row)
            mac = entry_mac(self._key, digest) if sign else ""
            conn.execute(
                "UPDATE reviews SET prev_hash = ?, entry_hash = ?, mac = ? WHERE review_id = ?",
                (prev, digest, mac, row[0]),
            )
            prev, n = digest, n + 1
        self._write_head(conn, n, prev, sign=sign)
        for statement in _statements(_UPGRADE):
            if "reviews_append_only_update" in statement:
                conn.execute(statement)
        return n

    def _write_head(self, conn: sqlite3.Connection, entries: int, head: str, *, sign: bool) -> None:
        mac = head_mac(self._key, entries, head) if sign else ""
        conn.execute(
            "INSERT INTO chain_head (id, entries, head, mac) VALUES (1, ?, ?, ?)"
            " ON CONFLICT (id) DO UPDATE SET entries = excluded.entries, head = excluded.head, mac = excluded.mac",
            (entries, head, mac),
        )

    def _enable_wal(self) -> None:
        # Switching the journal mode needs an exclusive lock, and SQLite answers "locked" at
        # once (without its busy handler) when another connection is mid-transaction, e.g.
        # several processes creating the same new file: retry until `timeout`.
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                with closing(self._connect()) as conn:
                    conn.execute("PRAGMA journal_mode=WAL")
                return
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or time.monotonic() > deadline:
                    raise
                time.sleep(0.01)

    def __repr__(self) -> str:
        return f"ReviewStore({str(self.path)!r})"

    # ------------------------------------------------------------------------------------
    def _connect(self) -> sqlite3.Connection:
        # isolation_level=None: transactions are opened explicitly (BEGIN IMMEDIATE) so a
        # writer takes the write lock up front instead of failing half-way on an upgrade.
        conn = sqlite3.connect(self.path, timeout=self.timeout, isolation_level=None)
        conn.execute(f"PRAGMA busy_timeout = {int(self.timeout * 1000)}")
        # An acknowledged decision is on disk: in WAL mode FULL syncs the log at every commit
        # (NORMAL would only survive a crash of the process, not of the machine).
        conn.execute("PRAGMA synchronous = FULL")
        return conn

    def _error(self, exc: sqlite3.Error, doing: str) -> ReviewStoreError:
        text = str(exc)
        if "disk I/O error" in text and _free_bytes(self.path.parent) < 1 << 20:
            text += ", no space left on the device"  # SQLite reports a full tmpfs as an I/O error
        if "locked" in text or "busy" in text:
            hint = f"other writers kept the database busy for more than {self.timeout:g} s; retry"
        elif "full" in text or "no space" in text:
            hint = "the disk is full; free space and retry (nothing was stored)"
        elif isinstance(exc, sqlite3.DatabaseError) and ("malformed" in text or "not a database" in text):
            hint = (
                "the file is corrupted; stop every dashboard and script using it, then put your latest "
                "backup in its place (docs/review_team.md, 'Backups and restore')"
            )
        else:
            hint = "nothing was changed"
        return ReviewStoreError(f"Review database {str(self.path)!r}: {doing} failed ({text}); {hint}.")

    @contextmanager
    def _transaction(self, *, guard: bool = True) -> Iterator[sqlite3.Connection]:
        deadline = time.monotonic() + self.timeout
        # One writer per process and file at a time: the threads of a dashboard queue here
        # instead of all polling SQLite's lock, and only one waiter per process competes with
        # the other processes for it.
        lock = _write_lock(self.path)
        if not lock.acquire(timeout=self.timeout):
            raise sqlite3.OperationalError("database is locked (by this process's other writers)")
        try:
            with closing(self._connect()) as conn:
                self._begin(conn, deadline)
                try:
                    if guard:
                        self._guard(conn)
                    yield conn
                except BaseException:
                    if conn.in_transaction:
                        conn.execute("ROLLBACK")
                    raise
                conn.execute("COMMIT")
        finally:
            lock.release()

    def _begin(self, conn: sqlite3.Connection, deadline: float) -> None:
        """``BEGIN IMMEDIATE``, retried every few milliseconds until ``deadline``.

        SQLite's own busy handler backs off to one try every 100 ms, so under steady load a
        waiter keeps losing the lock to newcomers that try sooner, and times out although no
        transaction held the lock for long (seen: 3 of 8,000 writes at 10 s under 20 writers).
        Short, jittered retries give every waiter the same chance; the jitter only spreads the
        waiters in time, no result depends on it.
        """
        conn.execute("PRAGMA busy_timeout = 0")
        while True:
            try:
                conn.execute("BEGIN IMMEDIATE")
                break
            except sqlite3.OperationalError as exc:
                if ("locked" not in str(exc) and "busy" not in str(exc)) or time.monotonic() >= deadline:
                    raise
                time.sleep(0.0005 + 0.002 * random.random())
        conn.execute(f"PRAGMA busy_timeout = {int(self.timeout * 1000)}")

    def _guard(self, conn: sqlite3.Connection) -> None:
        """Refuse a write the file's settings forbid (read under the write lock): a team's file
        opened without its team, a signed file opened without its key or with another key."""
        settings = _settings(conn)
        where = f"Review database {str(self.path)!r}"
        if "team" in settings and self.team is None:
            raise ReviewStoreError(
                f"{where} belongs to a team: open it with its team file to record decisions (every write "
                "names a signed-in member). Nothing was stored."
            )
        check = settings.get("key_check")
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

    def _query(self, sql: str, params: Iterable[object] = ()) -> pd.DataFrame:
        try:
            with closing(self._connect()) as conn:
                rows = conn.execute(sql, tuple(params)).fetchall()
        except sqlite3.Error as exc:
            raise self._error(exc, "reading") from exc
        frame = pd.DataFrame(rows, columns=list(REVIEW_COLUMNS)).astype({"review_id": "int64"})
        # Nullable ints: a column of None must not turn into floats (17.0) in exports.
        return frame.astype({"retracts": "Int64"})

    def _rows(self, sql: str, params: Iterable[object] = ()) -> list[tuple]:
        try:
            with closing(self._connect()) as conn:
                return conn.execute(sql, tuple(params)).fetchall()
        except sqlite3.Error as exc:
            raise self._error(exc, "reading") from exc

    # ------------------------------------------------------------------------------------
    # Who acts, and what their role allows
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

    def _why_refused(self, conn: sqlite3.Connection, user: User, action: str, fingerprint: str, ids: list[str]) -> str:
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
        except sqlite3.Error:  # the log line above still records it; the refusal stands either way
            _LOG.exception("could not record the refused attempt in %s", self.path)
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

    # ------------------------------------------------------------------------------------
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
        except sqlite3.Error as exc:
            raise self._error(exc, "storing the decision") from exc
        raise self._refuse(user, "decide", key.fingerprint, ids, refused)

    @staticmethod
    def _in_force(conn: sqlite3.Connection, fingerprint: str, sid: str, user: User) -> tuple[str, str, str] | None:
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
        except sqlite3.Error as exc:
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
        except sqlite3.Error as exc:
            raise self._error(exc, "storing the retraction") from exc
        raise self._refuse(user, "retract", key.fingerprint, [] if sid is None else [sid], refused)

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
    def _submitted(conn: sqlite3.Connection, token: str) -> Review | None:
        row = conn.execute(f"SELECT {_COLUMNS} FROM reviews WHERE submission_id = ?", (token,)).fetchone()
        return None if row is None else Review._from_row(row)

    def _append(
        self,
        conn: sqlite3.Connection,
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
        # covers it; under the write lock nobody else takes it. sqlite_sequence keeps ids of
        # deleted rows from being reused.
        seq = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'reviews'").fetchone()
        review_id = max(seq[0] if seq else 0, last[0] if last else 0) + 1
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
        self._write_head(conn, (head[0] if head else 0) + 1, digest, sign=self._key is not None)
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
                check = _settings(conn).get("key_check")
                if check is not None:
                    if check != key_check(self._key):
                        raise ReviewStoreError(
                            f"Review database {str(self.path)!r} is signed with another key already; nothing was changed."
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
                        f"Review database {str(self.path)!r} fails verification ({found.problem}); signing it would "
                        "certify the change. Restore it from a backup. Nothing was changed."
                    )
                conn.execute(
                    "INSERT INTO store_settings (name, value) VALUES ('key_check', ?)", (key_check(self._key),)
                )
                return self._seal_chain(conn, sign=True)
        except sqlite3.Error as exc:
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
                    cursor = conn.execute(
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
                    )
                    conn.executemany(
                        "INSERT INTO assignments (plan_id, position, sample_id, reviewer_email) VALUES (?, ?, ?, ?)",
                        [(cursor.lastrowid, *t) for t in triples],
                    )
                    return self._plan(conn, key.fingerprint)
        except sqlite3.Error as exc:
            raise self._error(exc, "storing the review plan") from exc
        raise self._refuse(user, "assign", key.fingerprint, [], refused)

    @staticmethod
    def _plan(conn: sqlite3.Connection, fingerprint: str) -> ReviewPlan:
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
            with closing(self._connect()) as conn:
                return self._plan(conn, fingerprint)
        except sqlite3.Error as exc:
            raise self._error(exc, "reading") from exc

    def assignments(self, audit_fingerprint: str) -> pd.DataFrame:
        """The assignments of the plan in force: columns ``position, sample_id, reviewer_email``, in queue order."""
        plan = self.current_plan(audit_fingerprint)
        rows = (
            self._rows(
                "SELECT position, sample_id, reviewer_email FROM assignments WHERE plan_id = ? ORDER BY position, rowid",
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

    def export(
        self,
        dest: str | os.PathLike[str] | None = None,
        *,
        audit_fingerprint: str | None = None,
        viewer: User | None = None,
    ) -> pd.DataFrame:
        """Full history (all audits, or one), optionally written to a CSV file.

        Parameters
        ----------
        dest : str or os.PathLike, optional
            CSV file to write (UTF-8, header row, no index), replaced atomically: on failure
            the previous export stays byte-identical. A folder or a device is refused.
        audit_fingerprint : str, optional
            Restrict to one audit.
        viewer : User, optional
            Who exports; with a team it must be an admin (else :class:`AccessRefused`, recorded).

        Returns
        -------
        DataFrame
            Columns :data:`REVIEW_COLUMNS` plus ``decision_label`` and ``reason_labels``
            (``"; "``-joined), ordered by ``review_id``. Retractions are rows with
            ``decision == "retracted"`` and ``retracts`` = the cancelled ``review_id``.
        """
        if self.team is not None:
            if not isinstance(viewer, User):
                raise ValueError(f"With a team, an export names who exports (`viewer`); got {viewer!r}.")
            if not self.team.allows(viewer.email, "admin"):
                role = self.team.role_of(viewer.email) or "none"
                raise self._refuse(
                    viewer, "export", audit_fingerprint or "", [], f"is a {role}; to export needs the admin role"
                )
        frame = self._query(
            f"SELECT {_COLUMNS} FROM reviews"
            + (" WHERE audit_fingerprint = ?" if audit_fingerprint is not None else "")
            + " ORDER BY review_id",
            ()
            if audit_fingerprint is None
            else (_text_iv(audit_fingerprint, "audit_fingerprint", max_len=512, allow_empty=False),),
        )
        frame = frame.assign(
            decision_label=frame["decision"].map(ENTRY_LABELS), reason_labels=frame["reasons"].map(reason_labels)
        )
        if dest is not None:
            if Path(dest).expanduser().resolve() in {
                self.path.resolve().with_name(self.path.name + sfx) for sfx in ("", "-wal", "-shm", "-journal")
            }:
                raise ValueError(f"Export file {str(dest)!r} is the review database itself; choose another file.")
            with atomic_path(dest) as tmp:
                write_csv(frame, tmp, index=False)  # a note such as "=HYPERLINK(...)" is not a formula
        return frame


#: The least role each write needs.
_NEEDS = {"decide": "reviewer", "retract": "reviewer", "adjudicate": "admin", "assign": "admin", "export": "admin"}
_LOG = logging.getLogger("reliability_audit.reviews")


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds")


class _NothingToRetract(ValueError):
    """Raised inside the transaction (rolled back) when a case has nothing to retract."""


def reason_labels(codes: str | Iterable[str]) -> str:
    """Human labels of stored reason codes (``"data_quality,missing_field"`` or a list), ``"; "``-joined."""
    items = _split_reasons(codes) if isinstance(codes, str) else tuple(codes)
    return "; ".join(REASONS.get(code, code) for code in items)


def _free_bytes(folder: Path) -> int:
    try:
        return shutil.disk_usage(folder).free
    except OSError:
        return 1 << 62


def _statements(script: str) -> list[str]:
    """The statements of a schema script, one per ``execute`` (executescript would commit)."""
    out, buf = [], []
    for line in script.strip().splitlines():
        buf.append(line)
        text = "\n".join(buf).strip()
        if text and sqlite3.complete_statement(text):
            out.append(text)
            buf = []
    return out
