"""Fixtures for the dashboard tests: AppTest runs from ``app.py`` with a throw-away review DB."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "app.py")
sys.path.insert(0, str(ROOT / "tests"))
from browser_kit import ChromiumMissingError, ServerStartError, dashboard_server, launch_chromium  # noqa: E402

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
def _audits_dir(tmp_path, monkeypatch) -> Path:
    """The audits folder (where the audits of uploaded models are saved): a throw-away one."""
    path = tmp_path / "audits"
    monkeypatch.setenv("AUDIT_AUDITS_DIR", str(path))
    return path


@pytest.fixture(autouse=True)
def _finished_audits(monkeypatch):
    """Script runs wait for background audits (ui.audit_jobs.foreground_wait_s), so one AppTest run
    shows a finished audit; tests of the progress panel set the wait back to 0."""
    monkeypatch.setenv("AUDIT_FOREGROUND_WAIT_S", "600")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """A headless dashboard server on a free localhost port, with its own review DB."""
    try:
        with dashboard_server(tmp_path_factory.mktemp("server")) as url:
            yield url
    except ServerStartError as exc:
        pytest.fail(f"streamlit server did not start: {exc}")


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        try:
            chromium = launch_chromium(pw)
        except ChromiumMissingError as exc:
            pytest.fail(str(exc))
        yield chromium
        chromium.close()
