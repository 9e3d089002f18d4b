"""Keeping a review database sound while it is in use: verify its chain, check its pages, back it up.

All three read the file through SQLite only, in one read transaction each, so they run while
dashboards and scripts write to it (WAL mode: readers never block the writer):

- :func:`verify_log` walks the tamper-evident chain (:mod:`core.reviews.chain`): every entry's
  hash, its link to the previous entry, the head, and with the server's key every HMAC;
- :func:`check_integrity` runs ``PRAGMA integrity_check`` (every page: it costs time in
  proportion to the file, which is why opening a store never runs it);
- :func:`backup` copies the database with SQLite's online backup API into a new file, a
  consistent snapshot even while writers commit, never a copy of the file's bytes.
"""

from __future__ import annotations

import os
import sqlite3
import uuid
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

from core.atomic import fsync_folder
from core.reviews.backend import _db_path, is_url, open_backend
from core.reviews.chain import KEY_ENV_VAR, LogVerification, key_bytes, key_check, walk_chain
from core.reviews.interface import Connection
from core.reviews.postgres import PG_TRIGGERS, PostgresBackend
from core.reviews.records import _COLUMNS, ReviewStoreError
from core.reviews.schema import _SCHEMA_VERSION, _TRIGGERS, _identify

__all__ = ["BackupResult", "IntegrityCheck", "backup", "check_integrity", "verify_log"]

_RESTORE = (
    "Stop every dashboard and script that uses it, keep the damaged file aside, and put your latest "
    "backup (`reliability-audit reviews backup`) in its place; see docs/review_team.md, 'Backups and restore'."
)


@dataclass(frozen=True)
class IntegrityCheck:
    """The outcome of ``PRAGMA integrity_check`` on a review database.

    Attributes
    ----------
    ok : bool
        True when SQLite found no problem.
    problems : tuple of str
        SQLite's findings (at most 20), empty when ``ok``.
    advice : str
        What to do when not ``ok`` (empty otherwise).
    """

    ok: bool
    problems: tuple[str, ...] = ()
    advice: str = ""


@dataclass(frozen=True)
class BackupResult:
    """A finished backup.

    Attributes
    ----------
    path : Path
        The backup file (a self-contained SQLite database, rollback-journal mode).
    entries : int
        Decisions and retractions it holds.
    size_bytes : int
        Its size on disk.
    """

    path: Path
    entries: int
    size_bytes: int


def _existing(path: str | os.PathLike[str] | None, *, edited_ok: bool = False) -> Path:
    db = _db_path(path)
    if not db.is_file() or db.stat().st_size == 0:
        raise ValueError(f"Review database {str(db)!r} does not exist (or is empty); nothing to read.")
    _identify(db, 10.0).refuse_unusable(db, edited_ok=edited_ok)
    return db


def _read_only(db: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True, timeout=10.0, isolation_level=None)
    conn.execute("PRAGMA busy_timeout = 10000")
    return conn


def verify_log(path: str | os.PathLike[str] | None, *, key: str | bytes | None = None) -> LogVerification:
    """Check the review log's chain, and with the key its HMACs.

    Parameters
    ----------
    path : str or os.PathLike or None
        The review database (None: the default one).
    key : str or bytes, optional
        The server's key; default: the ``AUDIT_REVIEWS_KEY`` environment variable. With a key,
        every entry must carry its valid HMAC (an unsigned log fails); without one, only the
        hash chain is checked, which a signed log does not allow (``ValueError``).

    Returns
    -------
    LogVerification
        ``ok`` False names the first bad entry (``first_bad``) and the problem.

    Raises
    ------
    ValueError
        The file is missing, not a review database, older than the chain, or signed and no key
        (or another key) was given.
    """
    raw = key_bytes(key if key is not None else (os.environ.get(KEY_ENV_VAR) or None))
    if is_url(path):
        return _verify_server(open_backend(path, timeout=10.0), raw)
    db = _existing(path, edited_ok=True)
    with closing(_read_only(db)) as conn:
        conn.execute("BEGIN")  # one snapshot: writers may go on meanwhile
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version < _SCHEMA_VERSION:
            raise ValueError(
                f"Review database {str(db)!r} has schema version {version}, from before the tamper-evident "
                "chain: open it once with this version of the tool (the dashboard, or any `reviews` command "
                "that writes) to add the chain, then verify it."
            )
        triggers = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")}
        result, keyed = _walk(conn, raw, str(db))
        conn.execute("ROLLBACK")
    return _with_triggers(result, keyed, _TRIGGERS - triggers)


def _verify_server(db: PostgresBackend, raw: bytes | None) -> LogVerification:
    """:func:`verify_log` of a PostgreSQL database, in one read-only snapshot."""
    db.require_schema()
    try:
        with closing(db.connect()) as conn:
            conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            triggers = db.trigger_names(conn)
            result, keyed = _walk(conn, raw, db.name)
            conn.execute("ROLLBACK")
    except db.errors as exc:
        raise db.error(exc, "verifying") from exc
    return _with_triggers(result, keyed, PG_TRIGGERS - triggers)


def _walk(conn: Connection, raw: bytes | None, name: str) -> tuple[LogVerification, bool]:
    """Walk the chain inside the caller's read snapshot; (the result, whether the log is signed)."""
    settings = dict(conn.execute("SELECT name, value FROM store_settings").fetchall())
    keyed = "key_check" in settings
    if keyed and raw is None:
        raise ValueError(
            f"Review database {name!r} is signed with the server's key: set {KEY_ENV_VAR} (or pass the key) to verify it."
        )
    if keyed and key_check(raw) != settings["key_check"]:
        raise ValueError(
            f"The key given is not the one review database {name!r} was signed with: nothing can be verified with it."
        )
    head = conn.execute("SELECT entries, head, mac FROM chain_head WHERE id = 1").fetchone()
    rows = (
        (row[:-3], row[-3], row[-2], row[-1])
        for row in conn.execute(f"SELECT {_COLUMNS}, prev_hash, entry_hash, mac FROM reviews ORDER BY review_id")
    )
    return walk_chain(rows, key=raw, head=None if head is None else tuple(head), keyed=keyed), keyed


def _with_triggers(result: LogVerification, keyed: bool, missing_triggers: set[str]) -> LogVerification:
    """A chain that verifies still fails when an append-only trigger is gone."""
    missing = sorted(missing_triggers)
    if result.ok and missing:
        return LogVerification(
            False,
            result.entries,
            keyed,
            result.checked_macs,
            result.head,
            None,
            f"the append-only trigger(s) {', '.join(missing)} were removed: the file was edited outside this tool",
        )
    return result


def check_integrity(path: str | os.PathLike[str] | None) -> IntegrityCheck:
    """``PRAGMA integrity_check`` of a review database, read-only, while it is in use.

    Returns
    -------
    IntegrityCheck
        ``ok``, SQLite's findings and, when it fails, what to do.
    """
    db = _db_path(path)
    if not db.is_file() or db.stat().st_size == 0:
        raise ValueError(f"Review database {str(db)!r} does not exist (or is empty); nothing to check.")
    try:
        _identify(db, 10.0).refuse_unusable(db, edited_ok=True)
        with closing(_read_only(db)) as conn:
            found = [r[0] for r in conn.execute("PRAGMA integrity_check(20)").fetchall()]
    except ReviewStoreError as exc:
        if "corrupt" not in str(exc):
            raise
        return IntegrityCheck(False, (str(exc),), _RESTORE)
    except sqlite3.DatabaseError as exc:
        return IntegrityCheck(False, (str(exc),), _RESTORE)
    if found == ["ok"]:
        return IntegrityCheck(True)
    return IntegrityCheck(False, tuple(found), _RESTORE)


def backup(path: str | os.PathLike[str] | None, dest: str | os.PathLike[str]) -> BackupResult:
    """Copy a review database, online and consistent, into a new file.

    SQLite's backup API copies one snapshot while other processes go on writing; the copy is
    then switched to a rollback journal (one self-contained file; SQLite syncs it, with
    ``synchronous = FULL``), checked with ``PRAGMA quick_check`` and linked under ``dest``, which must not exist yet
    (a backup never replaces a file: that file could be a database in use).

    Parameters
    ----------
    path : str or os.PathLike or None
        The review database (None: the default one).
    dest : str or os.PathLike
        The new backup file.

    Returns
    -------
    BackupResult
    """
    db = _existing(path)
    out = Path(dest).expanduser()
    if out.exists() or out.is_symlink():
        raise ValueError(
            f"Backup file {str(dest)!r} exists already; a backup never replaces a file: choose a new name."
        )
    if not out.parent.is_dir():
        raise ValueError(f"Backup file {str(dest)!r}: the folder {str(out.parent)!r} does not exist.")
    tmp = out.with_name(f".{out.name}.{uuid.uuid4().hex}.tmp")
    try:
        with closing(sqlite3.connect(db, timeout=10.0)) as src, closing(sqlite3.connect(tmp)) as copy:
            src.execute("PRAGMA busy_timeout = 10000")
            copy.execute("PRAGMA synchronous = FULL")  # SQLite syncs the copy at the backup's commit
            src.backup(copy)
            copy.execute("PRAGMA journal_mode = DELETE")
            if copy.execute("PRAGMA quick_check").fetchone()[0] != "ok":
                raise ReviewStoreError(f"The backup of {str(db)!r} failed its check; nothing was written.")
            entries = copy.execute("SELECT COUNT(*) FROM reviews").fetchone()[0]
        os.link(tmp, out)  # fails if `dest` appeared meanwhile: nothing is replaced
        fsync_folder(out.parent)
    except FileExistsError as exc:
        raise ValueError(f"Backup file {str(dest)!r} appeared while the backup ran; nothing was replaced.") from exc
    except sqlite3.Error as exc:
        raise ReviewStoreError(f"Backing up {str(db)!r} failed ({exc}); nothing was written.") from exc
    finally:
        tmp.unlink(missing_ok=True)
    return BackupResult(out, int(entries), out.stat().st_size)
