"""The review log on a PostgreSQL server (psycopg 3): several dashboard replicas, one log.

``ReviewStore("postgresql://ana@db.example:5432/reviews")`` (libpq's URL syntax; its query
options such as ``sslmode=require`` pass through) keeps the same schema version, tables and
guarantees as an SQLite file:

- **append-only in the database**: ``BEFORE UPDATE``/``DELETE`` row triggers and ``BEFORE
  TRUNCATE`` statement triggers refuse every change of the history; the schema's owner
  revokes ``UPDATE``, ``DELETE`` and ``TRUNCATE`` from ``PUBLIC``, and a store whose role is not
  the owner refuses to write while its role still holds one of them on the history
  (:data:`GRANTS` is what the owner grants an application role);
- **one writer at a time**: every write transaction first takes the database's advisory lock
  (``pg_advisory_xact_lock``), so the role checks, the entry's id and timestamp and the chain
  head are read and written by one transaction at a time, on any number of machines;
- every statement commits with the server's ``synchronous_commit`` (on by default): an
  acknowledged decision survives a crash of the server.

**The password** comes from the URL, else from libpq itself (``PGPASSWORD``, ``PGPASSFILE`` or
``~/.pgpass``), else from ``password`` in the ``[reviews]`` section of the secrets file
(``AUDIT_REVIEWS_SECRETS``, else ``.streamlit/secrets.toml`` of the working folder, else
``~/.streamlit/secrets.toml``). It is never shown: every message names the database by its
URL without the password (:func:`redact`).

**Bad input**, each one line and nothing written: an unreachable server (``connect_timeout``
of at most 5 s), a wrong password, a database holding other tables, a database without the
schema when it is only read (:meth:`PostgresBackend.require_schema`), a schema from a newer
version of the tool.
"""

from __future__ import annotations

import functools
import os
import re
import tomllib
from collections.abc import Iterator, Sequence
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote

from core.reviews.records import DECISIONS, RETRACTED, ReviewStoreError
from core.reviews.schema import _MARKER, _MARKER_TABLE, _SCHEMA_VERSION, _TRIGGERS, TABLES

__all__ = ["GRANTS", "SECRETS_ENV_VAR", "PostgresBackend", "redact"]

#: Environment variable naming the TOML secrets file whose ``[reviews] password`` is used.
SECRETS_ENV_VAR = "AUDIT_REVIEWS_SECRETS"
#: What the schema's owner grants an application role that must not own it (``{role}``).
GRANTS = (
    "GRANT SELECT, INSERT ON reviews, review_plans, assignments, access_refusals, store_settings, "
    "chain_head, reliability_audit_marker TO {role}; GRANT UPDATE ON chain_head TO {role};"
)
#: The history tables: no role but the owner may update, delete or truncate them.
_HISTORY = ("reviews", "review_plans", "assignments", "access_refusals", "store_settings")
#: The PostgreSQL triggers: SQLite's, plus one refusing TRUNCATE on every table.
PG_TRIGGERS = _TRIGGERS | {f"{t}_no_truncate" for t in TABLES}
# Advisory lock of the review store in its database ("RAud"): every writer takes it.
_LOCK = 0x52417564
_ENTRY_KINDS = ", ".join(f"'{d}'" for d in (*DECISIONS, RETRACTED))


def _schema_statements() -> list[str]:
    """The version-5 schema: SQLite's tables, constraints, indexes and triggers, in PostgreSQL."""
    refuse = (
        "CREATE OR REPLACE FUNCTION reliability_audit_refuse() RETURNS trigger LANGUAGE plpgsql AS $f$"
        " BEGIN RAISE EXCEPTION USING MESSAGE = TG_ARGV[0], ERRCODE = 'integrity_constraint_violation'; END $f$"
    )
    target = (
        "CREATE OR REPLACE FUNCTION reliability_audit_retraction_target() RETURNS trigger LANGUAGE plpgsql"
        " SET search_path FROM CURRENT AS $f$ BEGIN"
        " IF NOT EXISTS (SELECT 1 FROM reviews WHERE review_id = NEW.retracts"
        " AND audit_fingerprint = NEW.audit_fingerprint AND sample_id = NEW.sample_id"
        f" AND decision != '{RETRACTED}') THEN RAISE EXCEPTION USING"
        " MESSAGE = 'a retraction must name an earlier decision of the same case',"
        " ERRCODE = 'integrity_constraint_violation'; END IF; RETURN NEW; END $f$"
    )
    out = [
        f"CREATE TABLE {_MARKER_TABLE} (marker TEXT NOT NULL, schema_version INTEGER NOT NULL)",
        f"""CREATE TABLE reviews (
    review_id            BIGINT  PRIMARY KEY,
    created_at           TEXT    NOT NULL,
    audit_fingerprint    TEXT    NOT NULL CHECK (length(audit_fingerprint) > 0),
    sample_id            TEXT    NOT NULL CHECK (length(sample_id) > 0),
    reviewer             TEXT    NOT NULL CHECK (length(trim(reviewer)) > 0),
    decision             TEXT    NOT NULL CHECK (decision IN ({_ENTRY_KINDS})),
    note                 TEXT    NOT NULL DEFAULT '',
    reasons              TEXT    NOT NULL DEFAULT '',
    retracts             BIGINT  CHECK ((decision = '{RETRACTED}') = (retracts IS NOT NULL)),
    data_fingerprint     TEXT    NOT NULL DEFAULT '',
    model                TEXT    NOT NULL DEFAULT '',
    protocol_fingerprint TEXT    NOT NULL DEFAULT '',
    submission_id        TEXT,
    reviewer_email       TEXT    NOT NULL DEFAULT '',
    kind                 TEXT    NOT NULL DEFAULT 'review' CHECK (kind IN ('review', 'adjudication')),
    prev_hash            TEXT    NOT NULL DEFAULT '',
    entry_hash           TEXT    NOT NULL DEFAULT '',
    mac                  TEXT    NOT NULL DEFAULT ''
)""",
        "CREATE INDEX reviews_by_sample ON reviews (audit_fingerprint, sample_id, review_id)",
        "CREATE INDEX reviews_by_data ON reviews (data_fingerprint, sample_id, review_id)",
        "CREATE UNIQUE INDEX reviews_one_submission ON reviews (submission_id) WHERE submission_id IS NOT NULL",
        "CREATE UNIQUE INDEX reviews_retracted_once ON reviews (retracts) WHERE retracts IS NOT NULL",
        "CREATE INDEX reviews_by_reviewer ON reviews (audit_fingerprint, reviewer_email, review_id)",
        """CREATE TABLE review_plans (
    plan_id            BIGINT  GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    created_at         TEXT    NOT NULL,
    audit_fingerprint  TEXT    NOT NULL CHECK (length(audit_fingerprint) > 0),
    admin              TEXT    NOT NULL,
    admin_email        TEXT    NOT NULL DEFAULT '',
    reviewers_per_case INTEGER NOT NULL CHECK (reviewers_per_case >= 1),
    assigned           INTEGER NOT NULL CHECK (assigned IN (0, 1)),
    reviewers          TEXT    NOT NULL DEFAULT ''
)""",
        "CREATE INDEX review_plans_by_audit ON review_plans (audit_fingerprint, plan_id)",
        # entry_no: the insertion order (SQLite's rowid), the order of a case's reviewers.
        """CREATE TABLE assignments (
    plan_id        BIGINT  NOT NULL REFERENCES review_plans (plan_id),
    position       INTEGER NOT NULL CHECK (position >= 0),
    sample_id      TEXT    NOT NULL CHECK (length(sample_id) > 0),
    reviewer_email TEXT    NOT NULL CHECK (length(reviewer_email) > 0),
    entry_no       BIGINT  GENERATED ALWAYS AS IDENTITY,
    PRIMARY KEY (plan_id, sample_id, reviewer_email)
)""",
        """CREATE TABLE access_refusals (
    refusal_id        BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    created_at        TEXT NOT NULL,
    user_email        TEXT NOT NULL,
    user_name         TEXT NOT NULL,
    role              TEXT NOT NULL,
    action            TEXT NOT NULL,
    audit_fingerprint TEXT NOT NULL,
    sample_id         TEXT NOT NULL,
    reason            TEXT NOT NULL
)""",
        "CREATE TABLE store_settings (name TEXT PRIMARY KEY, value TEXT NOT NULL)",
        """CREATE TABLE chain_head (
    id      INTEGER PRIMARY KEY CHECK (id = 1),
    entries BIGINT  NOT NULL CHECK (entries >= 0),
    head    TEXT    NOT NULL,
    mac     TEXT    NOT NULL DEFAULT ''
)""",
        refuse,
        target,
        "CREATE TRIGGER reviews_retraction_target BEFORE INSERT ON reviews FOR EACH ROW"
        " WHEN (NEW.retracts IS NOT NULL) EXECUTE FUNCTION reliability_audit_retraction_target()",
        _row_trigger("reviews_append_only_update", "UPDATE", "reviews", _UPDATE_REVIEWS),
        _row_trigger(
            "reviews_append_only_delete", "DELETE", "reviews", "reviews are append-only: decisions cannot be deleted"
        ),
        _row_trigger("chain_head_kept", "DELETE", "chain_head", "the head of the review log cannot be deleted"),
    ]
    for table in ("review_plans", "assignments", "access_refusals", "store_settings"):
        out.append(
            _row_trigger(
                f"{table}_append_only_update", "UPDATE", table,
                f"{table} are append-only: record a new entry instead of updating one",
            )
        )  # fmt: skip
        out.append(
            _row_trigger(
                f"{table}_append_only_delete", "DELETE", table, f"{table} are append-only: entries cannot be deleted"
            )
        )
    for table in TABLES:
        out.append(
            f"CREATE TRIGGER {table}_no_truncate BEFORE TRUNCATE ON {table} FOR EACH STATEMENT"
            f" EXECUTE FUNCTION reliability_audit_refuse('{table} cannot be truncated: the review log is append-only')"
        )
    out.append(f"REVOKE UPDATE, DELETE, TRUNCATE ON {', '.join(_HISTORY)} FROM PUBLIC")
    out.append(f"INSERT INTO {_MARKER_TABLE} (marker, schema_version) VALUES ('{_MARKER}', {_SCHEMA_VERSION})")
    return out


_UPDATE_REVIEWS = "reviews are append-only: record a new decision instead of updating one"


def _row_trigger(name: str, op: str, table: str, message: str) -> str:
    return (
        f"CREATE TRIGGER {name} BEFORE {op} ON {table} FOR EACH ROW"
        f" EXECUTE FUNCTION reliability_audit_refuse('{message}')"
    )


def redact(url: str) -> str:
    """``url`` without its password (and without other secrets in its query string)."""
    from psycopg.conninfo import conninfo_to_dict

    try:
        parts = conninfo_to_dict(url)
    except Exception:  # noqa: BLE001 - an unparsable URL is shown by its scheme only
        return url.split("://", 1)[0] + "://…"
    user = parts.get("user")
    host = parts.get("host") or "localhost"
    port = f":{parts['port']}" if parts.get("port") else ""
    return f"postgresql://{quote(user, safe='') + '@' if user else ''}{host}{port}/{parts.get('dbname', '')}"


def _secrets_password() -> str | None:
    """``[reviews] password`` of the secrets file, if any."""
    env = os.environ.get(SECRETS_ENV_VAR, "").strip()
    candidates = (
        [Path(env).expanduser()] if env else [Path(".streamlit/secrets.toml"), Path.home() / ".streamlit/secrets.toml"]
    )
    for path in candidates:
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        section = data.get("reviews")
        if isinstance(section, dict) and isinstance(section.get("password"), str):
            return section["password"]
    return None


# A quoted SQL string or identifier ('' and "" escape their quote): `?` there is text.
_QUOTED = re.compile(r"""('(?:[^']|'')*'|"(?:[^"]|"")*")""")


@functools.lru_cache(maxsize=512)
def _pg_sql(sql: str) -> str:
    """The store's ``?`` placeholders as psycopg's ``%s``; a ``?`` inside quotes stays, every ``%`` is doubled.

    Examples
    --------
    >>> print(_pg_sql("SELECT ?, '?', 'it''s ?' FROM t WHERE n LIKE 'x%' AND m = ?"))
    SELECT %s, '?', 'it''s ?' FROM t WHERE n LIKE 'x%%' AND m = %s
    """
    parts = _QUOTED.split(sql.replace("%", "%%"))
    return "".join(part if i % 2 else part.replace("?", "%s") for i, part in enumerate(parts))


class _Connection:
    """A psycopg connection answering the store's ``?``-placeholder SQL."""

    def __init__(self, raw: Any) -> None:
        self.raw = raw

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Any:
        if not params:
            return self.raw.execute(sql)
        return self.raw.execute(_pg_sql(sql), tuple(params))

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> Any:
        cursor = self.raw.cursor()
        rows = [tuple(r) for r in rows]
        if rows:
            cursor.executemany(_pg_sql(sql), rows)
        return cursor

    def close(self) -> None:
        self.raw.close()


class PostgresBackend:
    """A review database on a PostgreSQL server (see the module docstring)."""

    kind = "postgresql"
    insertion_order = "entry_no"
    path = None

    def __init__(self, url: str, *, timeout: float) -> None:
        import psycopg
        from psycopg.conninfo import conninfo_to_dict

        self.errors: tuple[type[BaseException], ...] = (psycopg.Error,)
        self.timeout = timeout
        try:
            parts = conninfo_to_dict(url)
        except psycopg.ProgrammingError as exc:
            raise ValueError(
                f"Review database URL {redact(url)!r} is not a valid PostgreSQL URL ({_first_line(exc)}); "
                "expected postgresql://USER@HOST:PORT/DATABASE."
            ) from None
        self.name = redact(url)
        self._password = parts.get("password")
        if not parts.get("dbname"):
            raise ValueError(
                f"Review database URL {self.name!r} names no database; expected postgresql://USER@HOST/DATABASE."
            )
        extra: dict[str, Any] = {"application_name": "reliability-audit"}
        if "connect_timeout" not in parts:
            extra["connect_timeout"] = max(1, min(5, round(timeout)))
        if self._password is None and not os.environ.get("PGPASSWORD") and not _passfile_exists():
            secret = _secrets_password()
            if secret is not None:
                extra["password"] = secret
                self._password = secret
        from psycopg.conninfo import make_conninfo

        self._conninfo = make_conninfo(url, **extra)

    # -------------------------------------------------------------------------------------
    def connect(self) -> _Connection:
        import psycopg

        return _Connection(psycopg.connect(self._conninfo, autocommit=True))

    @contextmanager
    def transaction(self) -> Iterator[_Connection]:
        with closing(self.connect()) as conn:
            conn.execute("BEGIN")
            try:
                # A writer waits at most `timeout` for the others (then the store's "busy" error).
                conn.execute(f"SET LOCAL lock_timeout = '{int(self.timeout * 1000)}ms'")
                conn.execute(f"SELECT pg_advisory_xact_lock({_LOCK})")
                yield conn
            except BaseException:
                if not conn.raw.closed:
                    try:
                        conn.execute("ROLLBACK")
                    except Exception:  # noqa: BLE001 - the connection is gone: the server rolled back
                        pass
                raise
            conn.execute("COMMIT")

    def _has_schema(self, conn: _Connection) -> bool:
        return conn.execute(f"SELECT to_regclass('{_MARKER_TABLE}') IS NOT NULL").fetchone()[0]

    def schema_version(self, conn: _Connection) -> int:
        if not self._has_schema(conn):
            return 0
        row = conn.execute(f"SELECT max(schema_version) FROM {_MARKER_TABLE}").fetchone()
        return int(row[0] or 0)

    def migration(self, conn: _Connection, version: int) -> list[str]:
        if version != 0:  # no PostgreSQL database predates version 5
            raise ReviewStoreError(f"Review database {self.name!r} has schema version {version}; nothing was changed.")
        return _schema_statements()

    def next_review_id(self, conn: _Connection, last: int | None) -> int:
        return (last or 0) + 1  # rows are never deleted (triggers), so the largest id is never reused

    def insert_id(self, conn: _Connection, sql: str, params: Sequence[Any], column: str) -> int:
        return int(conn.execute(f"{sql} RETURNING {column}", params).fetchone()[0])

    def lift_update_guard(self, conn: _Connection) -> None:
        conn.execute("ALTER TABLE reviews DISABLE TRIGGER reviews_append_only_update")

    def restore_update_guard(self, conn: _Connection) -> None:
        conn.execute("ALTER TABLE reviews ENABLE TRIGGER reviews_append_only_update")

    def same_file(self, path: Path) -> bool:
        return False

    # -------------------------------------------------------------------------------------
    def prepare(self, *, team: bool, key: bytes | None) -> bool:
        try:
            with closing(self.connect()) as conn:
                found = self._identity(conn)
        except self.errors as exc:
            raise self.error(exc, "connecting") from exc
        if found is None:
            return True
        settings, _ = found
        if team and "team" not in settings:
            return True
        return key is not None and "key_check" not in settings

    def require_schema(self) -> None:
        """Refuse (one line) a database without the review store, when it is only to be read
        (a log whose triggers were removed is let through: the verification reports it)."""
        try:
            with closing(self.connect()) as conn:
                found = self._identity(conn, edited_ok=True)
        except self.errors as exc:
            raise self.error(exc, "connecting") from exc
        if found is None:
            raise ReviewStoreError(
                f"Review database {self.name!r} holds no review store (its schema was never created); "
                "check the database name. Nothing was read or written."
            )

    def _identity(self, conn: _Connection, *, edited_ok: bool = False) -> tuple[dict[str, str], bool] | None:
        """None for an empty database; else (its settings, whether this role owns the log)."""
        where = f"Review database {self.name!r}"
        # One statement, so one snapshot: another process creating the schema commits every
        # table with the marker at once, and two statements could see the tables without it.
        tables = [r[0] for r in conn.execute(
            "SELECT relname FROM pg_class WHERE relnamespace = current_schema()::regnamespace"
            " AND relkind IN ('r', 'p', 'v', 'm', 'f') ORDER BY 1"
        ).fetchall()]  # fmt: skip
        if _MARKER_TABLE not in tables:
            if tables:
                shown = ", ".join(tables[:8])
                raise ReviewStoreError(
                    f"{where} holds other tables ({shown}) and no review store; refusing to write to it. "
                    "Give the review store its own database."
                )
            return None
        marker = conn.execute(f"SELECT marker, schema_version FROM {_MARKER_TABLE}").fetchall()
        if len(marker) != 1 or marker[0][0] != _MARKER:
            raise ReviewStoreError(f"{where} is not a review database of this tool; refusing to modify it.")
        version = int(marker[0][1])
        if version > _SCHEMA_VERSION:
            raise ReviewStoreError(
                f"{where} has schema version {version}, newer than this version of the tool understands "
                f"({_SCHEMA_VERSION}); upgrade the tool. The database was not modified."
            )
        missing = sorted(PG_TRIGGERS - self.trigger_names(conn))
        if missing and not edited_ok:
            raise ReviewStoreError(
                f"{where} was edited outside this tool: the trigger(s) that keep its history append-only "
                f"({', '.join(missing)}) were removed or disabled, so entries may have been changed or deleted. "
                "Restore it from a backup. The database was not modified."
            )
        owner = conn.execute("SELECT pg_has_role(current_user, tableowner, 'USAGE') FROM pg_tables"
                             " WHERE schemaname = current_schema() AND tablename = 'reviews'").fetchone()[0]  # fmt: skip
        if not owner:
            loose = conn.execute(
                "SELECT t FROM unnest(?::text[]) t WHERE has_table_privilege(current_user, t, 'UPDATE')"
                " OR has_table_privilege(current_user, t, 'DELETE') OR has_table_privilege(current_user, t, 'TRUNCATE')",
                (list(_HISTORY),),
            ).fetchall()
            if loose:
                raise ReviewStoreError(
                    f"{where}: this role does not own the review log yet may update or delete its history "
                    f"({', '.join(r[0] for r in loose)}); the owner must revoke UPDATE, DELETE and TRUNCATE "
                    "(docs/review_team.md, 'Deploying a team'). Nothing was written."
                )
        settings = dict(conn.execute("SELECT name, value FROM store_settings").fetchall())
        return settings, bool(owner)

    @staticmethod
    def trigger_names(conn: _Connection) -> set[str]:
        """The enabled, user-defined triggers on the store's tables."""
        rows = conn.execute(
            "SELECT t.tgname FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid"
            " WHERE NOT t.tgisinternal AND t.tgenabled != 'D' AND c.relnamespace = current_schema()::regnamespace"
        ).fetchall()
        return {r[0] for r in rows}

    def error(self, exc: BaseException, doing: str) -> ReviewStoreError:
        import psycopg

        text = _first_line(exc)
        if self._password:
            text = text.replace(self._password, "***")
        lowered = text.lower()
        if "password authentication failed" in lowered or "no password supplied" in lowered:
            hint = (
                "wrong or missing password: check the URL, PGPASSFILE, or `password` in the [reviews] section "
                "of the secrets file; nothing was stored"
            )
            text = "the server refused the password"
        elif isinstance(exc, psycopg.errors.LockNotAvailable) or "lock timeout" in lowered:
            hint = f"other writers kept the database busy for more than {self.timeout:g} s; retry"
        elif "does not exist" in lowered and "database" in lowered:
            hint = "create the database on the server (createdb), or correct its name in the URL; nothing was stored"
        elif isinstance(exc, psycopg.OperationalError) or "terminating connection" in lowered:
            hint = (
                "the database server is unreachable (stopped, restarting, or the host or port is wrong); "
                "retry when it is back: nothing was stored by this attempt"
            )
            text = f"unreachable: {text}"
        else:
            hint = "nothing was changed"
        return ReviewStoreError(f"Review database {self.name!r}: {doing} failed ({text}); {hint}.")


def _first_line(exc: BaseException) -> str:
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return lines[0] if lines else type(exc).__name__


def _passfile_exists() -> bool:
    path = os.environ.get("PGPASSFILE") or str(Path.home() / ".pgpass")
    return Path(path).is_file()
