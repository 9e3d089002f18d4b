"""Review store version 3: retractions, reason codes, idempotent submissions, audit context and
migration of version 1/2 files (the queue helpers: ``test_review_queue.py``)."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from review_backends import raw

from core.reviews import (
    DECISIONS,
    REASONS,
    REVIEW_COLUMNS,
    AuditKey,
    ReviewStore,
    data_fingerprint,
)

V1_COLUMNS = list(REVIEW_COLUMNS[:7])


@pytest.fixture
def store(store_target: str) -> ReviewStore:
    return ReviewStore(store_target)


def _replay(history: pd.DataFrame) -> dict[tuple[str, str], int]:
    """Naive replay of a stored history: a stack per case; returns the review_id in force."""
    stacks: dict[tuple[str, str], list[int]] = {}
    for row in history.itertuples():
        stack = stacks.setdefault((row.audit_fingerprint, row.sample_id), [])
        if row.decision == "retracted":
            assert stack and stack[-1] == row.retracts, "a retraction names the case's top decision"
            stack.pop()
        else:
            stack.append(row.review_id)
    return {case: stack[-1] for case, stack in stacks.items() if stack}


# ---------------------------------------------------------------------------------------------
# Retractions
def test_retraction_restores_the_previous_decision_then_unreviewed(store):
    a = store.record("fp", 1, reviewer="ana", decision="acceptable")
    store.record("fp", 1, reviewer="bo", decision="confirmed_brittle")
    undo = store.retract("fp", 1, reviewer="ana", note="misclick")
    assert (undo.decision, undo.retracts, undo.note) == ("retracted", 2, "misclick")
    assert store.latest("fp")[["review_id", "decision"]].values.tolist() == [[a.review_id, "acceptable"]]
    store.retract("fp", 1, reviewer="ana")
    assert store.latest("fp").empty  # unreviewed again
    with pytest.raises(ValueError, match="has no decision to retract"):
        store.retract("fp", 1, reviewer="ana")
    assert store.history("fp", 1)["decision"].tolist() == [
        "acceptable",
        "confirmed_brittle",
        "retracted",
        "retracted",
    ]  # nothing removed
    c = store.record("fp", 1, reviewer="cy", decision="needs_reacquisition")
    assert store.latest("fp")["review_id"].tolist() == [c.review_id]


def test_retractions_are_refused_by_the_schema_when_inconsistent(store):
    store.record("fp", 1, reviewer="a", decision="acceptable")
    store.record("fp", 2, reviewer="a", decision="acceptable")
    cols = "review_id, created_at, audit_fingerprint, sample_id, reviewer, decision, note, retracts"
    errors = store._db.errors
    with pytest.raises(errors, match="same case"):  # names another case's decision
        raw(store, f"INSERT INTO reviews ({cols}) VALUES (10, 't', 'fp', '1', 'x', 'retracted', '', 2)")
    with pytest.raises(errors, match="(?i)check"):  # a retraction must name its target
        raw(store, f"INSERT INTO reviews ({cols}) VALUES (11, 't', 'fp', '1', 'x', 'retracted', '', NULL)")
    with pytest.raises(errors, match="(?i)check"):  # a decision names none
        raw(store, f"INSERT INTO reviews ({cols}) VALUES (12, 't', 'fp', '1', 'x', 'acceptable', '', 1)")
    raw(store, f"INSERT INTO reviews ({cols}) VALUES (13, 't', 'fp', '1', 'x', 'retracted', '', 1)")
    with pytest.raises(errors, match="(?i)unique"):  # retracted at most once
        raw(store, f"INSERT INTO reviews ({cols}) VALUES (14, 't', 'fp', '1', 'x', 'retracted', '', 1)")
    with pytest.raises(ValueError, match=r"`decision` must be one of"):
        store.record("fp", 1, reviewer="a", decision="retracted")


_case = st.tuples(st.sampled_from(["f1", "f2"]), st.integers(0, 3))
_op = st.one_of(
    st.tuples(
        st.just("record"), _case, st.sampled_from(DECISIONS), st.sets(st.sampled_from(list(REASONS)), max_size=2)
    ),
    st.tuples(st.just("retract"), _case),
    st.tuples(
        st.just("bulk"),
        st.sampled_from(["f1", "f2"]),
        st.lists(st.integers(0, 3), min_size=1, max_size=3),
        st.sampled_from(DECISIONS),
    ),
)


@settings(max_examples=20, deadline=None)
@given(ops=st.lists(_op, max_size=15))
def test_history_is_append_only_and_latest_matches_naive_replays(tmp_path_factory, ops):
    store = ReviewStore(tmp_path_factory.mktemp("prop") / "r.sqlite3")
    model: dict[tuple[str, str], list[str]] = {}  # naive twin: a stack of decisions per case
    before = store.export()
    appended = 0
    for op in ops:
        if op[0] == "record":
            (fp, sid), decision, reasons = op[1], op[2], op[3]
            review = store.record(fp, sid, reviewer="r", decision=decision, reasons=reasons)
            assert review.reasons == tuple(c for c in REASONS if c in reasons)
            model.setdefault((fp, str(sid)), []).append(decision)
            appended += 1
        elif op[0] == "retract":
            fp, sid = op[1]
            stack = model.setdefault((fp, str(sid)), [])
            if stack:
                store.retract(fp, sid, reviewer="r")
                stack.pop()
                appended += 1
            else:
                with pytest.raises(ValueError, match="no decision to retract"):
                    store.retract(fp, sid, reviewer="r")
        else:
            _, fp, sids, decision = op
            distinct = list(dict.fromkeys(sids))
            stored = store.record_many(fp, sids, reviewer="r", decision=decision)
            assert [r.sample_id for r in stored] == [str(s) for s in distinct]
            for sid in distinct:
                model.setdefault((fp, str(sid)), []).append(decision)
            appended += len(distinct)
        after = store.export()
        # Append-only: every earlier row is still there, byte for byte, in the same order.
        if len(before):
            pd.testing.assert_frame_equal(after.iloc[: len(before)], before)
        before = after
    assert len(before) == appended
    in_force = _replay(before)
    for fp in ("f1", "f2"):
        latest = store.latest(fp)
        got = {(fp, r.sample_id): r.decision for r in latest.itertuples()}
        assert got == {case: stack[-1] for case, stack in model.items() if case[0] == fp and stack}
        assert {(fp, r.sample_id): r.review_id for r in latest.itertuples()} == {
            case: rid for case, rid in in_force.items() if case[0] == fp
        }


# ---------------------------------------------------------------------------------------------
# Submissions, reasons, audit context
def test_the_same_submission_is_stored_once(store):
    first = store.record("fp", 3, reviewer="ana", decision="acceptable", submission_id="form-1")
    again = store.record("fp", 3, reviewer="ana", decision="acceptable", submission_id="form-1")
    assert again == first and len(store.history("fp")) == 1
    batch = store.record_many("fp", [4, 5], reviewer="ana", decision="acceptable", submission_id="bulk-1")
    assert store.record_many("fp", [4, 5], reviewer="ana", decision="acceptable", submission_id="bulk-1") == batch
    undo = store.retract("fp", 3, reviewer="ana", submission_id="undo-1")
    assert store.retract("fp", 3, reviewer="ana", submission_id="undo-1") == undo
    assert len(store.history("fp")) == 4
    assert store.history("fp")["submission_id"].tolist() == ["form-1", "bulk-1#4", "bulk-1#5", "undo-1"]


def test_bulk_is_all_or_nothing(store):
    with pytest.raises(ValueError, match="`sample_id` must be a string or an integer"):
        store.record_many("fp", [1, 2.5], reviewer="a", decision="acceptable")
    with pytest.raises(ValueError, match="at least one sample"):
        store.record_many("fp", [], reviewer="a", decision="acceptable")
    assert store.history("fp").empty


@pytest.mark.parametrize(
    ("reasons", "match"),
    [
        ("data_quality", r"`reasons` must be a list of reason codes"),
        (["data_quality", "gut_feeling"], r"got unknown \['gut_feeling'\]"),
        (None, r"`reasons` must be a list"),
    ],
)
def test_bad_reasons_are_refused(store, reasons, match):
    with pytest.raises(ValueError, match=match):
        store.record("fp", 1, reviewer="a", decision="acceptable", reasons=reasons)
    assert store.history("fp").empty


def test_decisions_are_found_across_audits_of_the_same_data(store):
    hgb = AuditKey("audit-hgb", data_fingerprint="d" * 64, model="hist_gb", protocol_fingerprint="p1")
    rf = AuditKey("audit-rf", data_fingerprint="d" * 64, model="random_forest", protocol_fingerprint="p2")
    elsewhere = AuditKey("audit-x", data_fingerprint="e" * 64, model="hist_gb", protocol_fingerprint="p1")
    store.record(hgb, 7, reviewer="ana", decision="acceptable", reasons=["evidence_sufficient"])
    store.record(rf, 7, reviewer="bo", decision="confirmed_brittle", reasons=["over_reliance"])
    store.record(rf, 7, reviewer="bo", decision="needs_reacquisition")
    store.retract(rf, 7, reviewer="bo")
    store.record(elsewhere, 7, reviewer="cy", decision="acceptable")
    across = store.history_across("d" * 64, 7)
    assert across["model"].tolist() == ["hist_gb", "random_forest", "random_forest", "random_forest"]
    assert across["protocol_fingerprint"].tolist() == ["p1", "p2", "p2", "p2"]
    latest = store.latest_across("d" * 64)
    assert latest[["audit_fingerprint", "decision", "reasons"]].values.tolist() == [
        ["audit-hgb", "acceptable", "evidence_sufficient"],
        ["audit-rf", "confirmed_brittle", "over_reliance"],
    ]
    assert store.latest("audit-rf")["decision"].tolist() == ["confirmed_brittle"]


def test_data_fingerprint_follows_values_ids_and_columns():
    frame = pd.DataFrame({"a": [1.0, 2.0, np.nan], "b": ["x", "y", "z"]}, index=[10, 11, 12])
    fp = data_fingerprint(frame)
    assert len(fp) == 64 and fp == data_fingerprint(frame.copy())
    changed = frame.copy()
    changed.loc[11, "a"] = 2.5
    assert data_fingerprint(changed) != fp
    assert data_fingerprint(frame.set_axis([10, 11, 13])) != fp  # other row ids
    assert data_fingerprint(frame.rename(columns={"b": "c"})) != fp
    assert data_fingerprint(frame.astype({"a": "float32"})) != fp
    with pytest.raises(ValueError, match="must be a pandas DataFrame"):
        data_fingerprint([[1, 2]])


# ---------------------------------------------------------------------------------------------
# Migration of older files
_V2_SCRIPT = """
CREATE TABLE reviews (
    review_id         INTEGER PRIMARY KEY AUTOINCREMENT,
    created_at        TEXT    NOT NULL,
    audit_fingerprint TEXT    NOT NULL CHECK (length(audit_fingerprint) > 0),
    sample_id         TEXT    NOT NULL CHECK (length(sample_id) > 0),
    reviewer          TEXT    NOT NULL CHECK (length(trim(reviewer)) > 0),
    decision          TEXT    NOT NULL CHECK (decision IN ('confirmed_brittle', 'acceptable', 'needs_reacquisition')),
    note              TEXT    NOT NULL DEFAULT ''
);
CREATE INDEX reviews_by_sample ON reviews (audit_fingerprint, sample_id, review_id);
CREATE TABLE reliability_audit_marker (marker TEXT NOT NULL);
INSERT INTO reliability_audit_marker (marker) VALUES ('reliability-audit review store');
CREATE TRIGGER reviews_append_only_update BEFORE UPDATE ON reviews
BEGIN SELECT RAISE(ABORT, 'reviews are append-only: record a new decision instead of updating one'); END;
CREATE TRIGGER reviews_append_only_delete BEFORE DELETE ON reviews
BEGIN SELECT RAISE(ABORT, 'reviews are append-only: decisions cannot be deleted'); END;
PRAGMA application_id = 1380021604;
PRAGMA user_version = 2;
"""
_V1_SCRIPT = """
CREATE TABLE reviews (review_id INTEGER PRIMARY KEY AUTOINCREMENT, created_at TEXT NOT NULL,
    audit_fingerprint TEXT NOT NULL, sample_id TEXT NOT NULL, reviewer TEXT NOT NULL,
    decision TEXT NOT NULL, note TEXT NOT NULL DEFAULT '');
PRAGMA user_version = 1;
"""
_OLD_ROWS = [
    ("2026-01-01T09:00:00.000001+00:00", "fp", "1", "ana", "acceptable", "first"),
    ("2026-01-01T09:05:00.000002+00:00", "fp", "2", "bo", "confirmed_brittle", ""),
    ("2026-01-02T10:00:00.000003+00:00", "fp", "1", "cy", "needs_reacquisition", 'comma, "quote"'),
]


def _old_file(path: Path, script: str) -> pd.DataFrame:
    conn = sqlite3.connect(path)
    conn.executescript(script)
    conn.executemany(
        "INSERT INTO reviews (created_at, audit_fingerprint, sample_id, reviewer, decision, note)"
        " VALUES (?, ?, ?, ?, ?, ?)",
        _OLD_ROWS,
    )
    conn.commit()
    rows = pd.read_sql("SELECT * FROM reviews ORDER BY review_id", conn)
    conn.close()
    return rows


@pytest.mark.parametrize("script", [_V1_SCRIPT, _V2_SCRIPT], ids=["v1", "v2"])
def test_an_older_file_opens_with_its_history_intact(tmp_path, script):
    path = tmp_path / "old.sqlite3"
    old = _old_file(path, script)
    store = ReviewStore(path)
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 5  # migrated to the current version (5, the chain)
        assert conn.execute("PRAGMA application_id").fetchone()[0] == 0x52417564
    history = store.history("fp")
    pd.testing.assert_frame_equal(history[V1_COLUMNS], old[V1_COLUMNS])
    assert (history["reasons"] == "").all() and history["retracts"].isna().all()
    assert store.latest("fp")[["sample_id", "decision"]].values.tolist() == [
        ["1", "needs_reacquisition"],
        ["2", "confirmed_brittle"],
    ]
    # The old decisions can be retracted; new entries continue the id sequence.
    undo = store.retract("fp", 1, reviewer="dee")
    assert (undo.review_id, undo.retracts) == (4, 3)
    assert store.latest("fp", [1])["decision"].tolist() == ["acceptable"]
    with sqlite3.connect(path) as conn, pytest.raises(sqlite3.IntegrityError, match="append-only"):
        conn.execute("DELETE FROM reviews")
    # Reopening a migrated file changes nothing.
    assert ReviewStore(path).history("fp")["review_id"].tolist() == [1, 2, 3, 4]


def test_concurrent_first_opens_migrate_once(tmp_path):
    path = tmp_path / "old.sqlite3"
    _old_file(path, _V2_SCRIPT)
    errors: list[BaseException] = []

    def open_and_write(k: int) -> None:
        try:
            ReviewStore(path, timeout=30).record("fp", 100 + k, reviewer="w", decision="acceptable", reasons=["other"])
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=open_and_write, args=(k,)) for k in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    history = ReviewStore(path).export()
    assert len(history) == 3 + 4
    assert history["review_id"].tolist() == list(range(1, 8))
    assert (history["reasons"].iloc[3:] == "other").all()  # no row lost its new columns to a second migration
