"""Helpers of the tests that run on both review backends (SQLite and PostgreSQL)."""

from __future__ import annotations

from contextlib import closing

BACKENDS = ("sqlite", "postgresql")


def raw(store, sql: str, params: tuple = ()) -> list[tuple]:
    """Run one statement on the store's database outside the store (autocommit); its rows."""
    with closing(store._connect()) as conn:
        cursor = conn.execute(sql, params)
        return cursor.fetchall() if cursor.description else []
