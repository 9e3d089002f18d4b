"""Helpers of the tests that run on both review backends (SQLite and PostgreSQL)."""

from __future__ import annotations

from contextlib import closing
from pathlib import Path

BACKENDS = ("sqlite", "postgresql")


def raw(store, sql: str, params: tuple = ()) -> list[tuple]:
    """Run one statement on the store's database outside the store (autocommit); its rows."""
    with closing(store._connect()) as conn:
        cursor = conn.execute(sql, params)
        return cursor.fetchall() if cursor.description else []


def acks_and_errors(logs: list[Path]) -> tuple[dict[str, int], list[str]]:
    """What the writer processes (``review_writer.py``) logged: acknowledged submission token ->
    review id, and every other line (a writer's error)."""
    acks, errors = {}, []
    for log in logs:
        for line in log.read_text(encoding="utf-8").splitlines() if log.exists() else []:
            kind, token, *rest = line.split(" ", 2)
            if kind == "ack":
                acks[token] = int(rest[0])
            else:
                errors.append(line)
    return acks, errors
