"""The review store's tests run on both backends: an SQLite file, and a PostgreSQL database.

One PostgreSQL cluster serves the whole test session (:mod:`pg_cluster`: initdb + pg_ctl on
127.0.0.1); every test that asks for it gets a new, empty database on it.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import pg_cluster  # noqa: E402
from review_backends import BACKENDS  # noqa: E402


@pytest.fixture(scope="session")
def pg():
    """The session's PostgreSQL cluster (started on first use, removed at the end)."""
    cluster = pg_cluster.start_cluster()
    yield cluster
    pg_cluster.remove(cluster)


@pytest.fixture
def pg_url(pg) -> str:
    """The URL of a new, empty database on the session's cluster."""
    return pg.url(pg.create_database())


@pytest.fixture(params=BACKENDS)
def store_target(request, tmp_path) -> str:
    """Where a test's review store lives: a new SQLite file, or a new PostgreSQL database."""
    if request.param == "sqlite":
        return str(tmp_path / "reviews.sqlite3")
    return request.getfixturevalue("pg_url")
