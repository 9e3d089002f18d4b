"""The interface every review database implements: :class:`Backend` (SQLite or PostgreSQL).

See :mod:`core.reviews.backend` for what differs between the two and why.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, Protocol

from core.reviews.records import ReviewStoreError

__all__ = ["Backend", "Connection"]


class Connection(Protocol):
    """The part of a DB-API connection the store uses (``?`` placeholders on both backends)."""

    def execute(self, sql: str, params: Sequence[Any] = ...) -> Any: ...

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> Any: ...

    def close(self) -> None: ...


class Backend(Protocol):
    """A review database: an SQLite file or a PostgreSQL database."""

    #: ``"sqlite"`` or ``"postgresql"``.
    kind: str
    #: The database as shown in messages: a file path, or the URL without its password.
    name: str
    #: The driver's exceptions (caught and turned into :meth:`error`).
    errors: tuple[type[BaseException], ...]
    #: The column that orders rows of ``assignments`` as inserted.
    insertion_order: str

    def prepare(self, *, team: bool, key: bytes | None) -> bool:
        """Check the database before any write (ours, not newer, not edited); True when
        :func:`core.reviews.schema.upgrade` must run (new, older, or a team / key to remember)."""

    def connect(self) -> Connection:
        """A new connection, in autocommit mode (transactions are explicit)."""

    def transaction(self) -> AbstractContextManager[Connection]:
        """The write transaction: serialised with every other writer of the database."""

    def schema_version(self, conn: Connection) -> int:
        """The schema version stored in the database (0: no schema yet)."""

    def migration(self, conn: Connection, version: int) -> list[str]:
        """The statements from ``version`` to the current one (run in the write transaction)."""

    def next_review_id(self, conn: Connection, last: int | None) -> int:
        """The id of the next entry (``last``: the largest stored), inside the write transaction."""

    def insert_id(self, conn: Connection, sql: str, params: Sequence[Any], column: str) -> int:
        """Run an ``INSERT`` and return the generated ``column`` of the new row."""

    def lift_update_guard(self, conn: Connection) -> None:
        """Drop the trigger refusing ``UPDATE`` of ``reviews`` (within the transaction)."""

    def restore_update_guard(self, conn: Connection) -> None:
        """Put it back (before the transaction commits)."""

    def error(self, exc: BaseException, doing: str) -> ReviewStoreError:
        """One line: the database, what failed, what to do."""

    def same_file(self, path: Path) -> bool:
        """Whether ``path`` is the database itself (or one of its side files)."""
