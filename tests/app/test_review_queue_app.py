"""Triage queue management in the app: save & next, retract (the reviewer's latest decision,
whichever case it was on), bulk (no default decision; re-applying records nothing new), filters,
double submission, the default decision, decisions across audits of the same data, and a restart."""

from __future__ import annotations

from app_checks import assert_ok

from core.reviews import AuditKey, ReviewStore, remembered_reviewer
from ui.state import ReviewState, SharedState, TriageState

PAGE = "pages/triage.py"


def _button(at, label: str):
    return next(b for b in at.button if b.label == label)


def _queue(at):
    return at.dataframe(key="triage_table").value


def _history(at):
    return next(f.value for f in at.dataframe if "audit" in f.value.columns and "entry" in f.value.columns)


def _stored(db) -> list[tuple[str, str, str]]:
    frame = ReviewStore(db).export()
    return list(zip(frame["sample_id"], frame["reviewer"], frame["decision"]))


def test_reviewer_walks_the_queue_and_finds_it_again_after_a_restart(new_app, reviews_db):
    app = new_app()
    app.switch_page(PAGE).run()
    assert_ok(app)
    queue = _queue(app)
    ids = [str(s) for s in queue["sample_id"]]
    assert len(ids) >= 7
    assert set(queue["decision"]) == {"Unreviewed"}  # a label, not None
    assert app.session_state[SharedState.selected_sample.key] == int(ids[0])
    assert app.radio(key="review_decision").value is None  # unreviewed: no decision preselected

    # Enter in the reviewer field commits the name only: nothing is submitted.
    app.text_input(key="review_reviewer").input("ana").run()
    assert_ok(app)
    assert _stored(reviews_db) == []

    # Save & next: the decision is stored with its reasons; the next unreviewed case opens.
    app.radio(key="review_decision").set_value("acceptable")
    app.multiselect(key="review_reasons").select("evidence_sufficient")
    app.text_area(key="review_note").input("path is plausible")
    _button(app, "Save & next (Alt+S)").click().run()
    assert_ok(app)
    assert _stored(reviews_db) == [(ids[0], "ana", "acceptable")]
    assert app.session_state[SharedState.selected_sample.key] == int(ids[1])
    assert app.radio(key="review_decision").value is None and app.text_area(key="review_note").value == ""

    # The same click twice is one entry; the form's token guards a resent click as well.
    app.radio(key="review_decision").set_value("confirmed_brittle")
    _button(app, "Save decision").click().run()
    _button(app, "Save decision").click().run()
    assert_ok(app)
    assert _stored(reviews_db)[1:] == [(ids[1], "ana", "confirmed_brittle")]

    # Next / Previous: back on ids[1], the form starts on its latest decision.
    _button(app, "Next (Alt+N)").click().run()
    assert app.session_state[SharedState.selected_sample.key] == int(ids[2])
    _button(app, "Previous (Alt+P)").click().run()
    assert app.session_state[SharedState.selected_sample.key] == int(ids[1])
    assert app.radio(key="review_decision").value == "confirmed_brittle"

    # Retract undoes the reviewer's latest saved decision (named on the button), whichever case is
    # on screen: from ids[2] it still retracts the decision on ids[1] and opens that case.
    _button(app, "Next (Alt+N)").click().run()
    assert app.session_state[SharedState.selected_sample.key] == int(ids[2])
    _button(app, f"Retract my latest (sample {ids[1]})").click().run()
    assert_ok(app)
    assert _stored(reviews_db)[-1] == (ids[1], "ana", "retracted")
    assert len(_stored(reviews_db)) == 3
    assert app.session_state[SharedState.selected_sample.key] == int(ids[1])
    assert app.radio(key="review_decision").value is None
    assert _history(app)["decision"].tolist() == ["Confirmed brittle", "Retracted (undo) #2"]
    row = _queue(app).set_index("sample_id").loc[int(ids[1])]
    assert row["decision"] == "Unreviewed"

    # Bulk decision on three selected rows (one transaction), then the rows are deselected.
    app.session_state[TriageState.table.key] = {"selection": {"rows": [3, 4, 5], "columns": [], "cells": []}}
    app.run()
    assert_ok(app)
    # No decision is pre-set: nothing can be applied until one is chosen.
    assert app.selectbox(key="review_bulk_decision").value is None
    assert _button(app, "Apply to 3 cases").disabled
    app.selectbox(key="review_bulk_decision").set_value("needs_reacquisition")
    app.multiselect(key="review_bulk_reasons").select("missing_field")
    app.run()
    assert not _button(app, "Apply to 3 cases").disabled
    _button(app, "Apply to 3 cases").click().run()
    assert_ok(app)
    assert _stored(reviews_db)[3:] == [(ids[i], "ana", "needs_reacquisition") for i in (3, 4, 5)]
    assert not [b for b in app.button if b.label.startswith("Apply to")]
    # The same bulk decision applied again records nothing new, and says so.
    app.session_state[TriageState.table.key] = {"selection": {"rows": [3, 4, 5], "columns": [], "cells": []}}
    app.run()
    _button(app, "Apply to 3 cases").click().run()
    assert_ok(app)
    assert len(_stored(reviews_db)) == 6
    assert any("Nothing new recorded" in s.value for s in app.success)

    # Filters.
    shown = _queue(app)
    assert shown["decision"].tolist().count("Needs evidence re-acquisition") == 3
    assert shown.set_index("sample_id").loc[int(ids[0]), "reasons"] == "Acceptable: the evidence supports it"
    assert ":" in shown.set_index("sample_id").loc[int(ids[0]), "reviewed_at"]  # minutes, no microseconds
    assert "." not in shown.set_index("sample_id").loc[int(ids[0]), "reviewed_at"]
    app.selectbox(key="review_filter_status").set_value("unreviewed").run()
    unreviewed = _queue(app)
    assert set(unreviewed["decision"]) == {"Unreviewed"} and len(unreviewed) == len(ids) - 4
    assert int(ids[1]) in set(unreviewed["sample_id"])  # retracted = unreviewed again
    app.selectbox(key="review_filter_status").set_value("all")
    app.multiselect(key="review_filter_decisions").select("needs_reacquisition").run()
    assert [str(s) for s in _queue(app)["sample_id"]] == [ids[3], ids[4], ids[5]]
    app.multiselect(key="review_filter_decisions").unselect("needs_reacquisition")
    app.multiselect(key="review_filter_reasons").select("evidence_sufficient").run()
    assert [str(s) for s in _queue(app)["sample_id"]] == [ids[0]]
    app.multiselect(key="review_filter_reasons").unselect("evidence_sufficient")
    app.multiselect(key="review_filter_reviewers").select("ana").run()
    assert_ok(app)
    assert [str(s) for s in _queue(app)["sample_id"]] == [ids[0], ids[3], ids[4], ids[5]]

    # A decision made under another audit of the same data (another model) is shown with it.
    fingerprint = app.session_state[ReviewState.case.key][0]
    data = next(k for k in [ReviewStore(reviews_db).export()["data_fingerprint"].iloc[0]])
    assert len(data) == 64
    ReviewStore(reviews_db).record(
        AuditKey("other-audit", data_fingerprint=data, model="random_forest", protocol_fingerprint="abcdef123456"),
        int(ids[0]),
        reviewer="bo",
        decision="confirmed_brittle",
    )

    # Restart: a new session on the same database finds everything, and the reviewer's name.
    assert remembered_reviewer(reviews_db) == "ana"
    fresh = new_app()
    fresh.switch_page(PAGE).run()
    assert_ok(fresh)
    assert fresh.text_input(key="review_reviewer").value == "ana"
    table = _queue(fresh).set_index("sample_id")
    assert table.loc[int(ids[0]), "decision"] == "Acceptable"
    assert table.loc[int(ids[0]), "elsewhere"] == "Confirmed brittle (random_forest)"
    assert table.loc[int(ids[1]), "decision"] == "Unreviewed"
    assert [table.loc[int(ids[i]), "decision"] for i in (3, 4, 5)] == ["Needs evidence re-acquisition"] * 3
    assert fresh.session_state[SharedState.selected_sample.key] == int(ids[0])
    assert fresh.radio(key="review_decision").value == "acceptable"  # the latest decision
    assert fresh.multiselect(key="review_reasons").value == ["evidence_sufficient"]
    history = _history(fresh)
    assert history["audit"].tolist() == ["this audit", "random_forest · protocol abcdef12"]
    assert ReviewStore(reviews_db).latest(fingerprint)["sample_id"].tolist() == sorted([ids[0], ids[3], ids[4], ids[5]])


def test_triage_shows_the_review_log_verified_or_the_entry_that_was_changed(new_app, reviews_db, monkeypatch, tmp_path):
    import sqlite3

    store = ReviewStore(reviews_db)
    store.record("fp-a", 1, reviewer="ana", decision="acceptable")
    store.record("fp-a", 2, reviewer="ana", decision="acceptable")
    app = new_app()
    app.switch_page(PAGE).run()
    assert_ok(app)
    assert "Review log verified: 2 entries (hash chain only, no key)." in [c.value for c in app.caption]
    # Another database, changed behind the tool's back (its triggers lifted and put back).
    changed = tmp_path / "changed.sqlite3"
    other = ReviewStore(changed)
    other.record("fp-a", 1, reviewer="ana", decision="acceptable")
    other.record("fp-a", 2, reviewer="ana", decision="acceptable")
    with sqlite3.connect(changed) as conn:
        (sql,) = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'reviews_append_only_update'").fetchone()
        conn.execute("DROP TRIGGER reviews_append_only_update")
        conn.execute("UPDATE reviews SET decision = 'confirmed_brittle' WHERE review_id = 2")
        conn.execute(sql)
    monkeypatch.setenv("AUDIT_REVIEWS_DB", str(changed))
    tampered = new_app()
    tampered.switch_page(PAGE).run()
    errors = [e.value for e in tampered.error]
    assert any("changed.sqlite3 failed its verification: entry 2 was edited" in e for e in errors), errors
    assert not any(str(tmp_path) in e for e in errors)  # the file's name, never its folder
