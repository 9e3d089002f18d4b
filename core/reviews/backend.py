"""Where the review log lives: one interface, an SQLite file or a PostgreSQL server.

:class:`Backend` is everything the store (:mod:`core.reviews.store`) asks of a database; the
store writes its SQL once, with ``?`` placeholders and the SQL both engines share (``ON
CONFLICT ... DO UPDATE``, ``JOIN ... USING``), and the backend answers for what differs:

- connecting, and the **write transaction**: SQLite's ``BEGIN IMMEDIATE`` (the file's one write
  lock, taken up front), PostgreSQL's ``pg_advisory_xact_lock`` on the database's store lock
  (every writer of the log, on any machine, in turn: the chain head is read and written by
  one transaction at a time);
- the schema's version and the migrations, the append-only triggers, and lifting the update
  trigger while the chain is sealed;
- the database's own errors, turned into one :class:`~core.reviews.records.ReviewStoreError`
  line that names the database (a URL without its password) and says what to do.

:func:`open_backend` picks the implementation: a ``postgresql://`` (or ``postgres://``) URL is
a server, anything else an SQLite file path. A URL never becomes a file path.
"""

from __future__ import annotations

import os
import random
import shutil
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any

from core.reviews.interface import Backend, Connection
from core.reviews.records import ENV_VAR, ReviewStoreError
from core.reviews.schema import (
    _SCHEMA_VERSION,
    _identify,
    sqlite_migration,
    sqlite_update_guard,
)

__all__ = [
    "URL_SCHEMES",
    "Backend",
    "Connection",
    "SQLiteBackend",
    "default_db_path",
    "default_target",
    "display_name",
    "is_url",
    "open_backend",
]

#: The URL schemes of a PostgreSQL server (libpq's connection URIs).
URL_SCHEMES = ("postgresql://", "postgres://")


def is_url(target: object) -> bool:
    """Whether ``target`` names a PostgreSQL server (``postgresql://...``) rather than a file."""
    return isinstance(target, str) and target.strip().lower().startswith(URL_SCHEMES)


def display_name(target: str | os.PathLike[str], *, short: bool = False) -> str:
    """The review database as shown to people: a file's path (``short``: its name), or a URL
    without its password (``short``: the database's name). Never the password."""
    if is_url(target):
        from core.reviews.postgres import redact

        shown = redact(str(target).strip())
        return shown.rsplit("/", 1)[-1] if short else shown
    return Path(target).name if short else str(target)


def default_db_path() -> Path:
    """Location of the review database when none is given.

    The environment variable ``AUDIT_REVIEWS_DB`` wins; otherwise ``reviews.sqlite3`` in the
    user's data directory (``platformdirs.user_data_path("reliability-audit")``), so decisions
    survive reinstalls of the code. A ``postgresql://`` URL in the variable is a server, never
    a path: it raises ``ValueError`` here (:func:`default_target` answers both).
    """
    env = os.environ.get(ENV_VAR, "").strip()
    if is_url(env):
        from core.reviews.postgres import redact

        raise ValueError(
            f"{ENV_VAR} names a PostgreSQL server ({redact(env)}), not a file; open it with ReviewStore()."
        )
    if env:
        return Path(env).expanduser()
    import platformdirs

    return platformdirs.user_data_path("reliability-audit", appauthor=False) / "reviews.sqlite3"


def default_target() -> str | Path:
    """The review database when none is given: ``AUDIT_REVIEWS_DB`` (a file path or a URL), else the default file."""
    env = os.environ.get(ENV_VAR, "").strip()
    return env if is_url(env) else default_db_path()


def open_backend(target: str | os.PathLike[str] | None, *, timeout: float) -> Backend:
    """The backend of ``target``: a PostgreSQL URL, or an SQLite file path (None: the default)."""
    if target is None:
        target = default_target()
    if is_url(target):
        from core.reviews.postgres import PostgresBackend

        return PostgresBackend(str(target).strip(), timeout=timeout)
    if isinstance(target, (str, os.PathLike)) and "://" in os.fspath(target):
        raise ValueError(
            f"Review database {os.fspath(target).split('@')[-1]!r} looks like a URL, but not a PostgreSQL one "
            "(postgresql://USER@HOST/DATABASE); give such a URL or an SQLite file path."
        )
    return SQLiteBackend(_db_path(target), timeout=timeout)


def _db_path(path: str | os.PathLike[str] | None) -> Path:
    """The database file named by ``path`` (default: :func:`default_db_path`), checked."""
    db = Path(path).expanduser() if path is not None else default_db_path()
    if db.is_dir():
        raise ValueError(f"Review database path {str(db)!r} is a directory; expected a file path.")
    if db.exists() and not db.is_file():
        raise ReviewStoreError(f"Review database path {str(db)!r} is not a regular file.")
    return db


_WRITE_LOCKS: dict[str, threading.RLock] = {}
_WRITE_LOCKS_GUARD = threading.Lock()


def _write_lock(path: Path) -> threading.RLock:
    """This process's write lock of one database file (shared by every store object on it)."""
    key = os.path.realpath(path)
    with _WRITE_LOCKS_GUARD:
        return _WRITE_LOCKS.setdefault(key, threading.RLock())


def _free_bytes(folder: Path) -> int:
    try:
        return shutil.disk_usage(folder).free
    except OSError:
        return 1 << 62


class SQLiteBackend:
    """An SQLite file: WAL mode, ``synchronous = FULL``, one ``BEGIN IMMEDIATE`` per write.

    The file is ours or refused before anything writes to it (:func:`core.reviews.schema._identify`
    reads it through a read-only SQLite connection: nothing but SQLite ever opens the file, since
    closing any other descriptor of it would drop the locks of SQLite's connections in this process).
    """

    kind = "sqlite"
    errors: tuple[type[BaseException], ...] = (sqlite3.Error,)
    insertion_order = "rowid"

    def __init__(self, path: Path, *, timeout: float) -> None:
        self.path = path
        self.name = str(path)
        self.timeout = timeout

    def prepare(self, *, team: bool, key: bytes | None) -> bool:
        found = _identify(self.path, self.timeout) if self.path.exists() and self.path.stat().st_size > 0 else None
        if found is not None:
            found.refuse_unusable(self.path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if found is None or found.journal != "wal":
            self._enable_wal()
        return found is None or found.version < _SCHEMA_VERSION or not found.adopted(team, key)

    def _enable_wal(self) -> None:
        # Switching the journal mode needs an exclusive lock, and SQLite answers "locked" at
        # once (without its busy handler) when another connection is mid-transaction, e.g.
        # several processes creating the same new file: retry until `timeout`.
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                with closing(self.connect()) as conn:
                    conn.execute("PRAGMA journal_mode=WAL")
                return
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or time.monotonic() > deadline:
                    raise
                time.sleep(0.01)

    def connect(self) -> sqlite3.Connection:
        # isolation_level=None: transactions are opened explicitly (BEGIN IMMEDIATE) so a
        # writer takes the write lock up front instead of failing half-way on an upgrade.
        conn = sqlite3.connect(self.path, timeout=self.timeout, isolation_level=None)
        conn.execute(f"PRAGMA busy_timeout = {int(self.timeout * 1000)}")
        # An acknowledged decision is on disk: in WAL mode FULL syncs the log at every commit
        # (NORMAL would only survive a crash of the process, not of the machine).
        conn.execute("PRAGMA synchronous = FULL")
        return conn

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        deadline = time.monotonic() + self.timeout
        # One writer per process and file at a time: the threads of a dashboard queue here
        # instead of all polling SQLite's lock, and only one waiter per process competes with
        # the other processes for it.
        lock = _write_lock(self.path)
        if not lock.acquire(timeout=self.timeout):
            raise sqlite3.OperationalError("database is locked (by this process's other writers)")
        try:
            with closing(self.connect()) as conn:
                self._begin(conn, deadline)
                try:
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

    def schema_version(self, conn: sqlite3.Connection) -> int:
        return conn.execute("PRAGMA user_version").fetchone()[0]

    def migration(self, conn: sqlite3.Connection, version: int) -> list[str]:
        has_table = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'reviews'").fetchone()
        return sqlite_migration(version, has_table is not None)

    def next_review_id(self, conn: sqlite3.Connection, last: int | None) -> int:
        # sqlite_sequence keeps ids of deleted rows from being reused.
        seq = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'reviews'").fetchone()
        return max(seq[0] if seq else 0, last or 0) + 1

    def insert_id(self, conn: sqlite3.Connection, sql: str, params: Sequence[Any], column: str) -> int:
        return int(conn.execute(sql, tuple(params)).lastrowid)

    def lift_update_guard(self, conn: sqlite3.Connection) -> None:
        conn.execute("DROP TRIGGER IF EXISTS reviews_append_only_update")

    def restore_update_guard(self, conn: sqlite3.Connection) -> None:
        for statement in sqlite_update_guard():
            conn.execute(statement)

    def error(self, exc: BaseException, doing: str) -> ReviewStoreError:
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
        return ReviewStoreError(f"Review database {self.name!r}: {doing} failed ({text}); {hint}.")

    def same_file(self, path: Path) -> bool:
        return Path(path).expanduser().resolve() in {
            self.path.resolve().with_name(self.path.name + sfx) for sfx in ("", "-wal", "-shm", "-journal")
        }
