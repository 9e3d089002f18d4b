"""Review store: persistence, latest/history semantics, validation, WAL and concurrency."""

from __future__ import annotations

import multiprocessing as mp
import sqlite3
import threading
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from review_backends import raw

from core.reviews import DECISIONS, ENV_VAR, REVIEW_COLUMNS, ReviewStore, ReviewStoreError, default_db_path


@pytest.fixture
def store(store_target: str) -> ReviewStore:
    return ReviewStore(store_target)


@pytest.fixture
def sqlite_store(tmp_path: Path) -> ReviewStore:
    return ReviewStore(tmp_path / "reviews.sqlite3")


def test_record_returns_what_is_stored(store):
    review = store.record("fp", 7, reviewer="  ana ", decision="acceptable", note=" fine ")
    assert (review.audit_fingerprint, review.sample_id, review.reviewer, review.decision, review.note) == (
        "fp",
        "7",
        "ana",
        "acceptable",
        "fine",
    )
    stored = store.history("fp", 7)
    assert list(stored.columns) == list(REVIEW_COLUMNS)
    row = stored.iloc[0].to_dict()
    assert {k: row[k] for k in REVIEW_COLUMNS[:7]} == {
        "review_id": review.review_id,
        "created_at": review.created_at,
        "audit_fingerprint": "fp",
        "sample_id": "7",
        "reviewer": "ana",
        "decision": "acceptable",
        "note": "fine",
    }
    assert pd.isna(row["retracts"]) and row["submission_id"] is None
    assert (row["reasons"], row["data_fingerprint"], row["model"], row["protocol_fingerprint"]) == ("", "", "", "")


def test_latest_is_last_decision_per_sample_and_fingerprint(store):
    store.record("fp", 1, reviewer="a", decision="acceptable")
    store.record("fp", 2, reviewer="a", decision="needs_reacquisition")
    store.record("fp", "1", reviewer="b", decision="confirmed_brittle", note="second look")
    store.record("other", 1, reviewer="c", decision="acceptable")
    latest = store.latest("fp")
    assert latest[["sample_id", "reviewer", "decision"]].values.tolist() == [
        ["1", "b", "confirmed_brittle"],
        ["2", "a", "needs_reacquisition"],
    ]
    assert store.latest("fp", sample_ids=[2, 99])["sample_id"].tolist() == ["2"]
    assert store.latest("other")["decision"].tolist() == ["acceptable"]
    assert store.latest("never-seen").empty
    assert store.history("fp", 1)["reviewer"].tolist() == ["a", "b"]
    assert store.history("fp")["sample_id"].tolist() == ["1", "2", "1"]


def test_numpy_integer_ids_are_the_same_key_as_python_ints(store):
    store.record("fp", np.int64(12), reviewer="a", decision="acceptable")
    assert store.latest("fp", sample_ids=[12, "12"])["sample_id"].tolist() == ["12"]


def test_persists_across_reopen(tmp_path):
    path = tmp_path / "nested" / "dir" / "r.sqlite3"
    ReviewStore(path).record("fp", "img_3", reviewer="ana", decision="needs_reacquisition", note="blurry")
    reopened = ReviewStore(path)
    row = reopened.latest("fp").iloc[0]
    assert (row.sample_id, row.reviewer, row.decision, row.note) == ("img_3", "ana", "needs_reacquisition", "blurry")


def _write_in_process(path: str, fingerprint: str, n: int) -> None:
    store = ReviewStore(path)
    for i in range(n):
        store.record(fingerprint, i, reviewer=fingerprint, decision=DECISIONS[i % 3])


def test_survives_another_process_writing(tmp_path):
    path = tmp_path / "r.sqlite3"
    ctx = mp.get_context("spawn")
    proc = ctx.Process(target=_write_in_process, args=(str(path), "child", 5))
    proc.start()
    proc.join(60)
    assert proc.exitcode == 0
    assert ReviewStore(path).latest("child")["sample_id"].tolist() == ["0", "1", "2", "3", "4"]


def test_wal_mode_and_busy_timeout_are_set(sqlite_store):
    store = sqlite_store
    with sqlite3.connect(store.path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    conn = store._connect()
    try:
        assert conn.execute("PRAGMA busy_timeout").fetchone()[0] == int(store.timeout * 1000)
    finally:
        conn.close()


def test_concurrent_threads_with_separate_stores_lose_nothing(tmp_path):
    path = tmp_path / "r.sqlite3"
    ReviewStore(path)
    n_threads, n_each = 4, 25
    errors: list[BaseException] = []

    def work(t: int) -> None:
        try:
            _write_in_process(str(path), f"fp{t}", n_each)
        except BaseException as exc:  # surfaced in the main thread below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(n_threads)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    everything = ReviewStore(path).export()
    assert len(everything) == n_threads * n_each
    assert everything["review_id"].is_unique and everything["review_id"].is_monotonic_increasing
    for t in range(n_threads):
        assert ReviewStore(path).latest(f"fp{t}")["sample_id"].astype(int).sort_values().tolist() == list(range(n_each))


def test_writer_waits_for_a_held_lock_and_reader_is_not_blocked(sqlite_store):
    store = sqlite_store
    store.record("fp", 0, reviewer="a", decision="acceptable")
    blocker = sqlite3.connect(store.path, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")
    blocker.execute(
        "INSERT INTO reviews (created_at, audit_fingerprint, sample_id, reviewer, decision, note)"
        " VALUES ('t', 'fp', '1', 'blocker', 'acceptable', '')"
    )
    # WAL: a reader sees the committed state while a write transaction is open elsewhere.
    assert store.latest("fp")["sample_id"].tolist() == ["0"]

    started, done = threading.Event(), threading.Event()
    result: dict = {}

    def write() -> None:
        started.set()
        try:
            result["review"] = store.record("fp", 2, reviewer="b", decision="confirmed_brittle")
        except BaseException as exc:
            result["error"] = exc
        done.set()

    thread = threading.Thread(target=write)
    thread.start()
    started.wait()
    assert not done.wait(0.3), "the second writer must wait for the lock, not fail or skip it"
    blocker.execute("COMMIT")
    blocker.close()
    thread.join()
    assert "error" not in result
    assert store.latest("fp")["sample_id"].tolist() == ["0", "1", "2"]


def test_locked_database_raises_after_timeout(tmp_path):
    store = ReviewStore(tmp_path / "r.sqlite3", timeout=0.05)
    blocker = sqlite3.connect(store.path, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")
    try:
        with pytest.raises(ReviewStoreError, match="locked"):
            store.record("fp", 1, reviewer="a", decision="acceptable")
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    assert store.history("fp").empty


def test_failed_transaction_rolls_back(store):
    store.record("fp", 1, reviewer="a", decision="acceptable")
    with pytest.raises(RuntimeError):
        with store._transaction() as conn:
            conn.execute(
                "INSERT INTO reviews (review_id, created_at, audit_fingerprint, sample_id, reviewer, decision, note)"
                " VALUES (99, 't', 'fp', '9', 'x', 'acceptable', '')"
            )
            raise RuntimeError("boom")
    assert store.history("fp")["sample_id"].tolist() == ["1"]


def test_schema_checks_the_decision_enum_even_for_raw_sql(store):
    with pytest.raises(store._db.errors, match="(?i)check"):
        raw(
            store,
            "INSERT INTO reviews (review_id, created_at, audit_fingerprint, sample_id, reviewer, decision, note)"
            " VALUES (1, 't', 'fp', '1', 'x', 'maybe', '')",
        )


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"decision": "maybe"}, r"`decision` must be one of \['confirmed_brittle'.*got 'maybe'"),
        ({"reviewer": "   "}, r"`reviewer` must not be empty"),
        ({"reviewer": "x" * 201}, r"`reviewer` must have at most 200 characters; got 201"),
        ({"note": None}, r"`note` must be a string; got NoneType"),
        ({"sample_id": 1.0}, r"`sample_id` must be a string or an integer; got float 1.0"),
        ({"sample_id": True}, r"`sample_id` must be a string or an integer; got bool"),
        ({"sample_id": " "}, r"`sample_id` must not be empty"),
        ({"audit_fingerprint": ""}, r"`audit_fingerprint` must not be empty"),
    ],
    ids=[
        "bad-decision",
        "blank-reviewer",
        "long-reviewer",
        "note-none",
        "float-id",
        "bool-id",
        "blank-id",
        "blank-fingerprint",
    ],
)
def test_bad_input_is_refused_with_a_specific_message(store, kwargs, match):
    args = {"audit_fingerprint": "fp", "sample_id": 1, "reviewer": "a", "decision": "acceptable", "note": ""}
    args.update(kwargs)
    fingerprint, sample_id = args.pop("audit_fingerprint"), args.pop("sample_id")
    with pytest.raises(ValueError, match=match):
        store.record(fingerprint, sample_id, **args)
    assert store.history("fp").empty


def test_bad_paths_are_refused(tmp_path):
    with pytest.raises(ValueError, match="is a directory"):
        ReviewStore(tmp_path)
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(ValueError, match="Cannot open the review database"):
        ReviewStore(blocker / "sub" / "r.sqlite3")
    with pytest.raises(ValueError, match="`timeout` must be a positive number"):
        ReviewStore(tmp_path / "r.sqlite3", timeout=0)


def test_export_writes_csv_with_labels(store, tmp_path):
    store.record("fp", 1, reviewer="a", decision="needs_reacquisition", note='comma, "quote"\nnewline')
    store.record("fp2", 2, reviewer="b", decision="acceptable")
    dest = tmp_path / "out.csv"
    frame = store.export(dest, audit_fingerprint="fp")
    back = pd.read_csv(dest, dtype={"sample_id": str})
    assert back["note"].tolist() == ['comma, "quote"\nnewline']
    assert back["decision_label"].tolist() == ["Needs evidence re-acquisition"]
    assert frame["sample_id"].tolist() == ["1"]
    assert len(store.export()) == 2


def test_default_path_honours_env_var_then_user_data_dir(monkeypatch, tmp_path):
    monkeypatch.setenv(ENV_VAR, str(tmp_path / "x.sqlite3"))
    assert default_db_path() == tmp_path / "x.sqlite3"
    assert ReviewStore().path == tmp_path / "x.sqlite3"
    monkeypatch.delenv(ENV_VAR)
    import platformdirs

    assert default_db_path().parent == platformdirs.user_data_path("reliability-audit", appauthor=False)


_ops = st.lists(
    st.tuples(
        st.sampled_from(["f1", "f2"]),
        st.integers(0, 4),
        st.sampled_from(DECISIONS),
        st.text(alphabet="abc", min_size=1, max_size=3),
    ),
    max_size=25,
)


@settings(max_examples=25)
@given(ops=_ops)
def test_latest_matches_a_naive_replay(tmp_path_factory, ops):
    store = ReviewStore(tmp_path_factory.mktemp("prop") / "r.sqlite3")
    naive: dict[tuple[str, str], tuple[str, str]] = {}
    for fingerprint, sid, decision, who in ops:
        store.record(fingerprint, sid, reviewer=who, decision=decision)
        naive[(fingerprint, str(sid))] = (who, decision)
    for fingerprint in ("f1", "f2"):
        got = {(fingerprint, r.sample_id): (r.reviewer, r.decision) for r in store.latest(fingerprint).itertuples()}
        assert got == {k: v for k, v in naive.items() if k[0] == fingerprint}
        assert len(store.history(fingerprint)) == sum(op[0] == fingerprint for op in ops)
