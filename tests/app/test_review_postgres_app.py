"""The Triage page on a PostgreSQL review store (AppTest, ``AUDIT_REVIEWS_DB=postgresql://...``):
decisions are stored on the server; while the server is stopped the page says the database is
unreachable (errors only, no traceback, no password), and once it is back the page is whole
again and the decision is stored, once."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from app_checks import assert_ok

from core.reviews import ReviewStore

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "reviews"))
import pg_cluster  # noqa: E402

PAGE = "pages/triage.py"


@pytest.fixture(scope="module")
def cluster():
    started = pg_cluster.start_cluster()
    yield started
    pg_cluster.remove(started)


@pytest.fixture
def reviews_db(cluster, monkeypatch) -> str:
    """A new database on the module's cluster, passed to the app through the env var."""
    url = cluster.url(cluster.create_database())
    monkeypatch.setenv("AUDIT_REVIEWS_DB", url)
    return url


def _button(at, label: str):
    return next(b for b in at.button if b.label == label)


def _stored(url: str) -> list[tuple[str, str, str]]:
    frame = ReviewStore(url).export()
    return list(zip(frame["sample_id"], frame["reviewer"], frame["decision"]))


def test_triage_says_the_server_is_unreachable_then_recovers_losing_nothing(new_app, reviews_db, cluster):
    app = new_app()
    app.switch_page(PAGE).run()
    assert_ok(app)
    ids = [str(s) for s in app.dataframe(key="triage_table").value["sample_id"]]
    app.text_input(key="review_reviewer").input("ana").run()
    app.radio(key="review_decision").set_value("acceptable")
    _button(app, "Save & next (Alt+S)").click().run()
    assert_ok(app)
    assert _stored(reviews_db) == [(ids[0], "ana", "acceptable")]
    cluster.stop()
    try:
        app.radio(key="review_decision").set_value("confirmed_brittle")
        _button(app, "Save decision").click().run()
        errors = [str(e.value) for e in app.error]
        assert not app.exception, [e.value for e in app.exception]
        assert errors and all("unreachable" in e for e in errors), errors
        assert not [e for e in errors if "s3cret-pw" in e]
    finally:
        cluster.start()
    app.run()  # the next rerun once the server is back: the page is whole again (the failed save's note stays once)
    assert not app.exception and app.radio(key="review_decision") is not None
    app.radio(key="review_decision").set_value("confirmed_brittle")
    _button(app, "Save decision").click().run()
    assert_ok(app)
    assert _stored(reviews_db) == [(ids[0], "ana", "acceptable"), (ids[1], "ana", "confirmed_brittle")]
