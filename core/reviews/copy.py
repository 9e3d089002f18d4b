"""Copy a review store between SQLite and PostgreSQL (either direction), without loss.

Every row of every table is copied verbatim, ids included: the entries with their chain
fields and HMACs, the plans and their assignments (in insertion order), the refusals, the
store's settings (its team and key check) and the chain head, so the copy verifies exactly as
the source did (``reviews verify``) and remembers the same team and key.

The source is read in one snapshot, while dashboards write to it. The destination must be
new: an SQLite file that does not exist yet (written under a temporary name and linked into
place only when complete and checked), or a PostgreSQL database without any table (filled
in one transaction). Nothing is half-written: a failure leaves no file and no table.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass
from pathlib import Path

from core.atomic import fsync_folder
from core.reviews.backend import SQLiteBackend, _db_path, is_url, open_backend
from core.reviews.interface import Backend, Connection
from core.reviews.records import ReviewStoreError
from core.reviews.schema import _SCHEMA_VERSION, upgrade

__all__ = ["COPIED_TABLES", "CopyResult", "copy_store"]

#: The tables copied, in an order that satisfies their references; and their columns.
COPIED_TABLES: dict[str, tuple[str, ...]] = {
    "reviews": (
        "review_id", "created_at", "audit_fingerprint", "sample_id", "reviewer", "decision", "note", "reasons",
        "retracts", "data_fingerprint", "model", "protocol_fingerprint", "submission_id", "reviewer_email", "kind",
        "prev_hash", "entry_hash", "mac",
    ),
    "review_plans": (
        "plan_id", "created_at", "audit_fingerprint", "admin", "admin_email", "reviewers_per_case", "assigned",
        "reviewers",
    ),
    "assignments": ("plan_id", "position", "sample_id", "reviewer_email"),
    "access_refusals": (
        "refusal_id", "created_at", "user_email", "user_name", "role", "action", "audit_fingerprint", "sample_id",
        "reason",
    ),
    "store_settings": ("name", "value"),
}  # fmt: skip
_ORDER = {
    "reviews": "review_id",
    "review_plans": "plan_id",
    "access_refusals": "refusal_id",
    "store_settings": "name",
}
_IDENTITIES = {"review_plans": "plan_id", "access_refusals": "refusal_id"}


@dataclass(frozen=True)
class CopyResult:
    """A finished copy.

    Attributes
    ----------
    source, destination : str
        The two databases (a file path, or a URL without its password).
    rows : dict of str to int
        Rows copied per table (the same in both databases, checked after the copy), plus
        ``chain_head`` (1).
    head : str
        The chain head, identical in both.
    """

    source: str
    destination: str
    rows: dict[str, int]
    head: str


def copy_store(source: str | os.PathLike[str], destination: str | os.PathLike[str]) -> CopyResult:
    """Copy the review store at ``source`` into the new database ``destination``.

    Parameters
    ----------
    source, destination : str or os.PathLike
        An SQLite file path or a ``postgresql://`` URL each. ``source`` must hold a review
        store of the current schema version; ``destination`` must be a file that does not exist
        yet, or an empty PostgreSQL database.

    Returns
    -------
    CopyResult

    Raises
    ------
    ValueError
        Bad input (missing source, existing destination file, the same database twice);
        :class:`~core.reviews.records.ReviewStoreError` for a database that cannot be used.
    """
    src = _source(source)
    if not is_url(destination):
        out = _db_path(destination)
        if out.exists() or out.is_symlink():
            raise ValueError(
                f"Destination {str(destination)!r} exists already; a copy never replaces a file: choose a new name."
            )
        if not out.parent.is_dir():
            raise ValueError(f"Destination {str(destination)!r}: the folder {str(out.parent)!r} does not exist.")
        if isinstance(src, SQLiteBackend) and src.same_file(out):
            raise ValueError("The source and the destination are the same file.")
    elif is_url(source) and open_backend(source, timeout=10.0).name == open_backend(destination, timeout=10.0).name:
        raise ValueError("The source and the destination are the same database.")
    with _snapshot(src) as (conn, version):
        if version != _SCHEMA_VERSION:
            raise ReviewStoreError(
                f"Review database {src.name!r} has schema version {version}; open it once with this version of "
                "the tool (any `reviews` command that writes, or the dashboard) to upgrade it, then copy it."
            )
        tables = {
            table: conn.execute(_select(src, table, columns)).fetchall() for table, columns in COPIED_TABLES.items()
        }
        head = conn.execute("SELECT id, entries, head, mac FROM chain_head").fetchall()
    if len(head) != 1:
        raise ReviewStoreError(f"Review database {src.name!r} has no chain head; `reviews verify` says why.")
    if is_url(destination):
        dst = open_backend(destination, timeout=10.0)
        if not dst.prepare(team=False, key=None):
            raise ValueError(f"Destination {dst.name!r} already holds a review store; copy into an empty database.")
        counts = _fill(dst, tables, head[0], source=src.name)
    else:
        out = _db_path(destination)
        tmp = out.with_name(f".{out.name}.{uuid.uuid4().hex}.tmp")
        try:
            dst = SQLiteBackend(tmp, timeout=10.0)
            dst.prepare(team=False, key=None)
            counts = _fill(dst, tables, head[0], source=src.name)
            os.link(tmp, out)  # fails if the destination appeared meanwhile: nothing is replaced
            fsync_folder(out.parent)
        except FileExistsError as exc:
            raise ValueError(
                f"Destination {str(destination)!r} appeared during the copy; nothing was replaced."
            ) from exc
        finally:
            for suffix in ("", "-wal", "-shm", "-journal"):
                Path(f"{tmp}{suffix}").unlink(missing_ok=True)
        dst = SQLiteBackend(out, timeout=10.0)
    return CopyResult(src.name, dst.name, {**counts, "chain_head": 1}, head[0][2])


def _source(source: str | os.PathLike[str]) -> Backend:
    db = open_backend(source, timeout=10.0)
    if isinstance(db, SQLiteBackend):
        from core.reviews.maintenance import _existing

        _existing(db.path)
    else:
        db.require_schema()
    return db


@contextmanager
def _snapshot(db: Backend) -> Iterator[tuple[Connection, int]]:
    """One read-only snapshot of the source, and its schema version."""
    try:
        if isinstance(db, SQLiteBackend):
            import sqlite3

            conn = sqlite3.connect(
                f"{db.path.resolve().as_uri()}?mode=ro", uri=True, timeout=10.0, isolation_level=None
            )
            begin = "BEGIN"
        else:
            conn = db.connect()
            begin = "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"
        with closing(conn):
            conn.execute(begin)
            yield conn, db.schema_version(conn)
            conn.execute("ROLLBACK")
    except db.errors as exc:
        raise db.error(exc, "reading the source") from exc


def _select(db: Backend, table: str, columns: tuple[str, ...]) -> str:
    order = _ORDER.get(table) or f"plan_id, {db.insertion_order}"
    return f"SELECT {', '.join(columns)} FROM {table} ORDER BY {order}"


def _fill(db: Backend, tables: dict[str, list[tuple]], head: tuple, *, source: str) -> dict[str, int]:
    """Create the schema and insert every row, in one transaction of the destination; the rows
    per table, counted in that transaction (a count that differs from the source's rolls it back)."""
    try:
        with db.transaction() as conn:
            if db.schema_version(conn) != 0:
                raise ValueError(f"Destination {db.name!r} already holds a review store; copy into an empty database.")
            upgrade(db, conn, team=False, key=None)
            for table, rows in tables.items():
                columns = COPIED_TABLES[table]
                overriding = " OVERRIDING SYSTEM VALUE" if db.kind == "postgresql" and table in _IDENTITIES else ""
                conn.executemany(
                    f"INSERT INTO {table} ({', '.join(columns)}){overriding} VALUES ({', '.join('?' * len(columns))})",
                    rows,
                )
            conn.execute("UPDATE chain_head SET entries = ?, head = ?, mac = ? WHERE id = 1", head[1:])
            if db.kind == "postgresql":  # the next generated ids follow the copied ones
                for table, column in _IDENTITIES.items():
                    conn.execute(
                        f"SELECT setval(pg_get_serial_sequence('{table}', '{column}'),"
                        f" COALESCE((SELECT MAX({column}) FROM {table}), 0) + 1, false)"
                    )
            counts = {t: int(conn.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0]) for t in COPIED_TABLES}
            _check(source, tables, counts)
            return counts
    except db.errors as exc:
        raise db.error(exc, "writing the copy") from exc


def _check(source: str, tables: dict[str, list[tuple]], counts: dict[str, int]) -> None:
    expected = {table: len(rows) for table, rows in tables.items()}
    if counts != expected:
        raise ReviewStoreError(f"The copy of {source!r} holds {counts} rows, expected {expected}; it was not kept.")
