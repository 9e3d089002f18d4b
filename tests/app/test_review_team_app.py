"""The dashboard under a review team (AppTest): the sign-in gate, roles in the Triage page and the
local-mode note (the ``dashboard`` command's ``--team`` / ``--secrets``: ``tests/cli/test_cli_dashboard.py``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from app_checks import assert_ok
from team_settings import AUTH, TEAM

from core.reviews import ReviewStore

APP = str(Path(__file__).resolve().parents[2] / "app.py")
TIMEOUT = 180  # the first run computes the default audit (as tests/app/conftest.py allows)
PAGE = "pages/triage.py"


@pytest.fixture
def team_file(tmp_path, monkeypatch):
    path = tmp_path / "team.toml"
    path.write_text(TEAM)
    monkeypatch.setenv("AUDIT_TEAM", str(path))
    return path


def _session(email: str | None, name: str = ""):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.secrets = {"auth": AUTH}
    at.user = {"is_logged_in": False} if email is None else {"is_logged_in": True, "email": email, "name": name}
    return at


def _texts(at) -> str:
    return " ".join(str(e.value) for kind in ("markdown", "caption", "info", "warning", "title") for e in at.get(kind))


def test_a_signed_out_visitor_sees_only_the_sign_in_page(reviews_db, team_file):
    at = _session(None).run()
    assert_ok(at)
    assert [b.label for b in at.button] == ["Sign in"]
    assert not at.dataframe and not at.metric and not at.get("plotly_chart") and not at.sidebar.selectbox
    # Only the sign-in page is registered: no other page can be opened (the browser test opens a deep link).
    with pytest.raises(ValueError, match=r"Could not find a navigation page for .*triage\.py"):
        at.switch_page(PAGE)


def test_an_address_without_a_role_gets_no_access(reviews_db, team_file):
    at = _session("zed@example.org", "Zed").run()
    assert_ok(at)
    assert "zed@example.org, which has no role" in _texts(at)
    assert [b.label for b in at.button] == ["Sign out"] and not at.dataframe


def test_a_viewer_finds_no_decision_control(reviews_db, team_file):
    at = _session("dee@example.org", "Dee").run()
    at.switch_page(PAGE).run()
    assert_ok(at)
    assert "Signed in as **Dee**" in _texts(at) and "viewer — reads only" in _texts(at)
    labels = [b.label for b in at.button]
    assert not [b for b in labels if b.startswith(("Save", "Retract", "Apply", "Adjudicate"))], labels
    assert not [r for r in at.radio if r.key == "review_decision"]
    assert not [t for t in at.text_input if t.key == "review_reviewer"]  # no typed name with sign-in
    assert "you can read the queue" in _texts(at)
    assert at.dataframe(key="triage_table").value is not None  # reading is allowed


def test_a_reviewer_decides_as_the_signed_in_user(reviews_db, team_file):
    at = _session("bo@example.org", "Bo Reviewer").run()
    at.switch_page(PAGE).run()
    assert_ok(at)
    assert not [t for t in at.text_input if t.key == "review_reviewer"]
    assert "Deciding as **Bo Reviewer <bo@example.org>** (reviewer)" in _texts(at)
    retract = next(b for b in at.button if b.label.startswith("Retract my latest"))
    assert retract.disabled  # nothing saved yet
    at.radio(key="review_decision").set_value("acceptable")
    next(b for b in at.button if b.label == "Save decision").click().run()
    assert_ok(at)
    stored = ReviewStore(reviews_db).export()
    assert stored[["reviewer", "reviewer_email", "decision"]].values.tolist() == [
        ["Bo Reviewer", "bo@example.org", "acceptable"]
    ]
    assert not next(b for b in at.button if b.label.startswith("Retract my latest")).disabled
    assert not [b for b in at.button if b.label.startswith("Export all")]  # export is an admin's


def test_local_mode_says_so_in_the_sidebar(app):
    assert_ok(app)
    assert any("Single-user local mode" in c.value for c in app.sidebar.caption)
