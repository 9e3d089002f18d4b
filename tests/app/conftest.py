"""Fixtures for the dashboard tests: AppTest runs from ``app.py`` with a throw-away review DB."""
from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "app.py")
# First run computes the default audit and loads the demo pool (cached for later runs).
TIMEOUT = 180


@pytest.fixture
def reviews_db(tmp_path, monkeypatch) -> Path:
    """A fresh review database for the test, passed to the app through the env var."""
    path = tmp_path / "reviews.sqlite3"
    monkeypatch.setenv("AUDIT_REVIEWS_DB", str(path))
    return path


@pytest.fixture
def new_app(reviews_db):
    """Factory of fresh ``AppTest`` sessions of the whole app, after their first run."""
    from streamlit.testing.v1 import AppTest

    def make():
        at = AppTest.from_file(APP, default_timeout=TIMEOUT)
        at.run()
        return at

    return make


@pytest.fixture
def app(new_app):
    """``AppTest`` of the whole app after its first run (the Overview page)."""
    return new_app()


@pytest.fixture(autouse=True)
def _finished_audits(monkeypatch):
    """Script runs wait for background audits (ui.audit_jobs.foreground_wait_s), so one AppTest run
    shows a finished audit; tests of the progress panel set the wait back to 0."""
    monkeypatch.setenv("AUDIT_FOREGROUND_WAIT_S", "600")
