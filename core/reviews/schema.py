"""The review database's schema: its versions, the SQLite layout and migrations, and the chain seal.

Version numbers are shared by both backends (:mod:`core.reviews.backend`): version 5 on
PostgreSQL (:mod:`core.reviews.postgres`) holds the same tables, columns, constraints and
append-only triggers as version 5 on SQLite. Only SQLite files can be older (versions 1 to 4,
migrated in place on first open); a PostgreSQL database starts at version 5.

:func:`upgrade` runs inside the caller's write transaction on either backend: it creates or
migrates the tables, remembers the store's team and key check, and seals the chain when the
entries predate it (or a key adopts an empty log).
"""

from __future__ import annotations

import sqlite3
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from core.reviews.chain import GENESIS, entry_hash, entry_mac, head_mac, key_check
from core.reviews.records import (
    _COLUMNS,
    _V1_COLUMNS,
    ADJUDICATION,
    DECISIONS,
    RETRACTED,
    REVIEW,
    ReviewStoreError,
)

if TYPE_CHECKING:
    from core.reviews.interface import Backend, Connection

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


def reviews_table_sql(name: str = "reviews", *, dialect: str = "sqlite") -> str:
    """``CREATE TABLE`` of the review log, in SQLite or PostgreSQL (its ids as BIGINT)."""
    if dialect not in ("sqlite", "postgresql"):
        raise ValueError(f"`dialect` must be 'sqlite' or 'postgresql'; got {dialect!r}.")
    # PostgreSQL: ids are given by the store (one writer at a time), never reused (no deletes).
    ident, big = (
        ("INTEGER PRIMARY KEY AUTOINCREMENT", "INTEGER") if dialect == "sqlite" else ("BIGINT  PRIMARY KEY", "BIGINT ")
    )
    return f"""
CREATE TABLE {name} (
    review_id            {ident},
    created_at           TEXT    NOT NULL,
    audit_fingerprint    TEXT    NOT NULL CHECK (length(audit_fingerprint) > 0),
    sample_id            TEXT    NOT NULL CHECK (length(sample_id) > 0),
    reviewer             TEXT    NOT NULL CHECK (length(trim(reviewer)) > 0),
    decision             TEXT    NOT NULL CHECK (decision IN ({_ENTRY_KINDS})),
    note                 TEXT    NOT NULL DEFAULT '',
    reasons              TEXT    NOT NULL DEFAULT '',
    retracts             {big} CHECK ((decision = '{RETRACTED}') = (retracts IS NOT NULL)),
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
    reviews_table_sql("reviews_v3")
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
#: The tables of a version-5 store on either backend.
TABLES = ("reviews", "review_plans", "assignments", "access_refusals", "store_settings", "chain_head")


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
            found_settings = settings(conn) if "store_settings" in tables else {}
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
    return _Identity(app_id, version, tables, columns, marker, triggers, found_settings, journal)


def settings(conn: Connection) -> dict[str, str]:
    """The store's remembered settings (``team``, ``key_check``)."""
    return dict(conn.execute("SELECT name, value FROM store_settings").fetchall())


def sqlite_migration(version: int, has_table: bool) -> list[str]:
    """The statements that take an SQLite file from ``version`` to :data:`_SCHEMA_VERSION`."""
    if not has_table:
        script = reviews_table_sql("reviews")
    elif version == 4:
        script = _MIGRATE_V4
    elif version == 3:
        script = _MIGRATE_V3 + _MIGRATE_V4
    else:  # version 1 or 2: rebuilt at the current layout
        script = _MIGRATE
    return _statements(script + _UPGRADE)


def sqlite_update_guard() -> list[str]:
    """The statement that puts back the update trigger of ``reviews`` (lifted by :func:`seal_chain`)."""
    return [s for s in _statements(_UPGRADE) if "reviews_append_only_update" in s]


def upgrade(db: Backend, conn: Connection, *, team: bool, key: bytes | None) -> None:
    """Create or migrate the schema, remember the team and the key, seal the chain (one transaction)."""
    # Re-read inside the write lock: another process may have upgraded the database since it
    # was inspected, and migrating twice would copy only the old columns of newer rows.
    version = db.schema_version(conn)
    if version < _SCHEMA_VERSION:
        for statement in db.migration(conn, version):
            conn.execute(statement)
    found = settings(conn)
    if team and "team" not in found:
        conn.execute("INSERT INTO store_settings (name, value) VALUES ('team', 'yes')")
    migrated = version < _SCHEMA_VERSION
    # An empty log, or one migrated right now, is signed from its start by the key it opens with.
    signs = (
        key is not None
        and "key_check" not in found
        and (migrated or conn.execute("SELECT 1 FROM reviews LIMIT 1").fetchone() is None)
    )
    if signs:
        conn.execute("INSERT INTO store_settings (name, value) VALUES ('key_check', ?)", (key_check(key),))
    if migrated or signs:  # entries from before the chain, or a new head with its HMAC
        seal_chain(db, conn, key=key if signs else None)


def seal_chain(db: Backend, conn: Connection, *, key: bytes | None) -> int:
    """(Re)compute every entry's chain fields, and the head; with ``key``, their HMACs.

    Only a migration (the entries predate the chain) and :meth:`ReviewStore.sign` (an admin
    adopts a key for an existing unsigned log) do this, inside their write transaction; the
    update trigger is lifted for it and put back before the commit.
    """
    db.lift_update_guard(conn)
    prev, n = GENESIS, 0
    rows = conn.execute(f"SELECT {_COLUMNS} FROM reviews ORDER BY review_id").fetchall()
    for row in rows:
        digest = entry_hash(prev, row)
        mac = entry_mac(key, digest) if key is not None else ""
        conn.execute(
            "UPDATE reviews SET prev_hash = ?, entry_hash = ?, mac = ? WHERE review_id = ?",
            (prev, digest, mac, row[0]),
        )
        prev, n = digest, n + 1
    write_head(conn, n, prev, key=key)
    db.restore_update_guard(conn)
    return n


def write_head(conn: Connection, entries: int, head: str, *, key: bytes | None) -> None:
    """Store the chain head (upsert of its single row), with its HMAC when ``key`` is given."""
    mac = head_mac(key, entries, head) if key is not None else ""
    conn.execute(
        "INSERT INTO chain_head (id, entries, head, mac) VALUES (1, ?, ?, ?)"
        " ON CONFLICT (id) DO UPDATE SET entries = excluded.entries, head = excluded.head, mac = excluded.mac",
        (entries, head, mac),
    )


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
