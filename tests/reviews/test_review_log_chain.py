"""The tamper-evident review log (core.reviews.chain, ``reviews verify``), the key and the team a
database remembers, and the O(1) open. Each kind of tampering is made with plain SQL, as
someone holding only the database file would, and must be named by ``verify`` (exit 3)."""

from __future__ import annotations

import hashlib
import hmac
import json
import sqlite3

import psycopg
import pytest
from review_backends import raw

from core.cli import main
from core.reviews import ReviewStore, ReviewStoreError, User, load_team
from core.reviews.backend import is_url
from core.reviews.chain import GENESIS, entry_hash
from core.reviews.maintenance import verify_log
from core.reviews.schema import TABLES
from core.reviews.store import REVIEW_COLUMNS

KEY = "k" * 32
OTHER = "o" * 32


@pytest.fixture
def signed(store_target, monkeypatch):
    """A signed log of 6 entries (5 decisions and a retraction), the key in the environment,
    in an SQLite file or a PostgreSQL database."""
    monkeypatch.setenv("AUDIT_REVIEWS_KEY", KEY)
    db = store_target
    store = ReviewStore(db)
    for i in range(5):
        store.record("fp", i, reviewer="ana", decision="acceptable", note=f"n{i}")
    store.retract("fp", 4, reviewer="ana")
    return db


def _tamper(db, *statements, params=()):
    """Run SQL with the append-only triggers lifted and put back, as an attacker would."""
    if is_url(db):  # the owner of a PostgreSQL database (no sqlite_sequence there)
        with psycopg.connect(db, autocommit=True) as conn:
            for table in TABLES:
                conn.execute(f"ALTER TABLE {table} DISABLE TRIGGER USER")
            for statement in statements:
                if "sqlite_sequence" not in statement:
                    conn.execute(statement.replace("?", "%s"), params or None)
            for table in TABLES:
                conn.execute(f"ALTER TABLE {table} ENABLE TRIGGER USER")
        return
    with sqlite3.connect(db) as conn:
        triggers = conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'trigger'").fetchall()
        for name, _ in triggers:
            conn.execute(f"DROP TRIGGER {name}")
        for statement in statements:
            conn.execute(statement, params)
        for _, sql in triggers:
            conn.execute(sql)


def _verify_exit(db, capsys) -> tuple[int, str]:
    code = main(["reviews", "verify", "--reviews-db", str(db)])
    out = capsys.readouterr()
    return code, out.out + out.err


def test_an_intact_signed_log_verifies_and_the_chain_matches_an_independent_recomputation(signed, capsys):
    result = verify_log(signed)
    assert result.ok and result.entries == 6 and result.keyed and result.checked_macs
    # Recompute the chain and every HMAC by hand from the rows (no code of core.reviews.chain).
    store = ReviewStore(signed)
    rows = raw(store, f"SELECT {', '.join(REVIEW_COLUMNS)}, prev_hash, entry_hash, mac FROM reviews ORDER BY review_id")
    head = raw(store, "SELECT entries, head, mac FROM chain_head")[0]
    prev = "0" * 64
    for row in rows:
        body = json.dumps(list(row[:-3]), ensure_ascii=False, separators=(",", ":"))
        digest = hashlib.sha256(f"{prev}\n{body}".encode()).hexdigest()
        assert row[-3:] == (prev, digest, hmac.new(KEY.encode(), digest.encode(), hashlib.sha256).hexdigest())
        prev = digest
    assert head[:2] == (6, prev)
    assert head[2] == hmac.new(KEY.encode(), f"head:6:{prev}".encode(), hashlib.sha256).hexdigest()
    code, text = _verify_exit(signed, capsys)
    assert code == 0 and "review log verified: 6 entries (signed with the key)" in text and prev in text


@pytest.mark.parametrize(
    ("attack", "first_bad", "words"),
    [
        (["UPDATE reviews SET decision = 'confirmed_brittle' WHERE review_id = 3"], 3, "edited"),
        (["UPDATE reviews SET note = '=HYPERLINK(1)' WHERE review_id = 1"], 1, "edited"),
        (["DELETE FROM reviews WHERE review_id = 2"], 3, "deleted, inserted or reordered"),
        (["DELETE FROM reviews WHERE review_id = 6"], None, "deleted from the end"),
        (
            ["DELETE FROM reviews WHERE review_id >= 5", "UPDATE sqlite_sequence SET seq = 4"],
            None,
            "deleted from the end",
        ),
        (
            [  # swap the fields of entries 2 and 3 (a reordering that keeps the ids)
                "UPDATE reviews SET sample_id = CASE review_id WHEN 2 THEN '2x' WHEN 3 THEN '1' END WHERE review_id IN (2, 3)",
                "UPDATE reviews SET sample_id = '2' WHERE sample_id = '2x'",
            ],
            2,
            "edited",
        ),
        (["UPDATE reviews SET review_id = review_id + 100 WHERE review_id = 6"], 106, "edited"),
    ],
    ids=[
        "decision-edited",
        "note-edited",
        "middle-deleted",
        "last-deleted",
        "tail-deleted-sequence-fixed",
        "reordered",
        "renumbered",
    ],
)
def test_verify_names_the_first_tampered_entry(signed, capsys, attack, first_bad, words):
    _tamper(signed, *attack)
    result = verify_log(signed)
    assert not result.ok and result.first_bad == first_bad and words in result.problem
    code, text = _verify_exit(signed, capsys)
    assert code == 3 and words in text
    if first_bad is not None:
        assert f"first bad entry: review_id {first_bad}" in text


def test_an_entry_forged_without_the_key_with_a_correct_hash_fails_on_its_hmac(signed, capsys):
    store = ReviewStore(signed)
    last = raw(store, "SELECT entry_hash FROM reviews ORDER BY review_id DESC LIMIT 1")[0][0]
    values = (
        7,
        "2030-01-01T00:00:00.000000+00:00",
        "fp",
        "99",
        "bo",
        "acceptable",
        "",
        "",
        None,
        "",
        "",
        "",
        None,
        "",
        "review",
    )
    digest = entry_hash(last, values)
    raw(
        store,
        f"INSERT INTO reviews ({', '.join(REVIEW_COLUMNS)}, prev_hash, entry_hash, mac) VALUES ({', '.join('?' * 18)})",
        (*values, last, digest, "0" * 64),
    )
    raw(store, "UPDATE chain_head SET entries = 7, head = ?", (digest,))
    result = verify_log(signed)
    assert not result.ok and result.first_bad == 7 and "not written with the server's key" in result.problem
    assert _verify_exit(signed, capsys)[0] == 3


def test_a_keyless_process_cannot_write_to_a_signed_log_and_a_wrong_key_is_named(signed, monkeypatch):
    monkeypatch.delenv("AUDIT_REVIEWS_KEY")
    with pytest.raises(ReviewStoreError, match="signed with the server's key, and this process has none"):
        ReviewStore(signed).record("fp", 9, reviewer="dee", decision="acceptable")
    with pytest.raises(ReviewStoreError, match="another key"):
        ReviewStore(signed, key=OTHER).record("fp", 9, reviewer="dee", decision="acceptable")
    with pytest.raises(ValueError, match="set AUDIT_REVIEWS_KEY"):
        verify_log(signed)
    with pytest.raises(ValueError, match="not the one"):
        verify_log(signed, key=OTHER)
    assert verify_log(signed, key=KEY).entries == 6  # nothing was stored by the refused writes
    assert main(["reviews", "verify", "--reviews-db", str(signed)]) == 2


def test_dropped_triggers_are_refused_at_open_and_named_by_verify(signed):
    raw(ReviewStore(signed), "DROP TRIGGER reviews_append_only_delete" + (" ON reviews" if is_url(signed) else ""))
    with pytest.raises(ReviewStoreError, match="edited outside this tool.*reviews_append_only_delete"):
        ReviewStore(signed)
    result = verify_log(signed)
    assert not result.ok and "reviews_append_only_delete" in result.problem


def test_an_unsigned_log_is_signed_once_by_an_admin_then_refuses_keyless_writers(store_target, monkeypatch, capsys):
    db = store_target
    store = ReviewStore(db)
    store.record("fp", 1, reviewer="ana", decision="acceptable")
    assert verify_log(db).ok and not verify_log(db).keyed
    with pytest.raises(ReviewStoreError, match="started without a key"):
        ReviewStore(db, key=KEY).record("fp", 2, reviewer="ana", decision="acceptable")
    # A key given to verify an unsigned log demands HMACs it does not have.
    assert not verify_log(db, key=KEY).ok
    monkeypatch.setenv("AUDIT_REVIEWS_KEY", KEY)
    assert main(["reviews", "sign", "--reviews-db", str(db)]) == 0
    assert "signed 1 entries" in capsys.readouterr().out
    assert verify_log(db).ok and verify_log(db).checked_macs
    ReviewStore(db).record("fp", 2, reviewer="ana", decision="acceptable")
    assert ReviewStore(db).sign() == 0  # already signed
    monkeypatch.delenv("AUDIT_REVIEWS_KEY")
    with pytest.raises(ReviewStoreError, match="this process has none"):
        ReviewStore(db).record("fp", 3, reviewer="ana", decision="acceptable")


def test_a_tampered_unsigned_log_is_not_signed(store_target):
    db = store_target
    store = ReviewStore(db)
    for i in range(3):
        store.record("fp", i, reviewer="ana", decision="acceptable")
    _tamper(db, "UPDATE reviews SET decision = 'confirmed_brittle' WHERE review_id = 2")
    with pytest.raises(ReviewStoreError, match="fails verification.*entry 2 was edited"):
        ReviewStore(db, key=KEY).sign()


def test_a_team_database_refuses_writes_from_a_store_opened_without_its_team(tmp_path, store_target):
    team_file = tmp_path / "team.toml"
    team_file.write_text('[members]\n"ana@example.org" = "admin"\n"bo@example.org" = "reviewer"\n')
    db = store_target
    ReviewStore(db, team=load_team(team_file)).record(
        "fp", 1, reviewer=User(email="bo@example.org"), decision="acceptable"
    )
    plain = ReviewStore(db)
    with pytest.raises(ReviewStoreError, match="belongs to a team"):
        plain.record("fp", 111, reviewer="dee", decision="acceptable")
    with pytest.raises(ReviewStoreError, match="belongs to a team"):
        plain.adjudicate("fp", 1, reviewer="dee", decision="confirmed_brittle")
    assert len(plain.export()) == 1  # reads stay open; nothing was stored


def test_a_store_opened_on_a_signed_log_with_the_key_extends_the_chain_across_migrations(tmp_path):
    # A version-4 file (before the chain) is migrated, chained and signed in one transaction.
    db = tmp_path / "r.sqlite3"
    store = ReviewStore(db)
    for i in range(3):
        store.record("fp", i, reviewer="ana", decision="acceptable")
    with sqlite3.connect(db) as conn:  # make it look like version 4: no chain yet
        for name in ("chain_head", "store_settings"):
            conn.execute(f"DROP TABLE {name}")
        for column in ("prev_hash", "entry_hash", "mac"):
            conn.execute(f"ALTER TABLE reviews DROP COLUMN {column}")
        conn.execute("PRAGMA user_version = 4")
    migrated = ReviewStore(db, key=KEY)
    migrated.record("fp", 3, reviewer="ana", decision="acceptable")
    result = verify_log(db, key=KEY)
    assert result.ok and result.entries == 4 and result.checked_macs


def test_opening_a_store_runs_no_whole_file_check(tmp_path, monkeypatch):
    db = tmp_path / "r.sqlite3"
    store = ReviewStore(db)
    store.record_many("fp", range(2000), reviewer="ana", decision="acceptable")
    seen: list[str] = []
    real = sqlite3.connect

    def tracing(*args, **kwargs):
        conn = real(*args, **kwargs)
        conn.set_trace_callback(seen.append)
        return conn

    monkeypatch.setattr(sqlite3, "connect", tracing)
    ReviewStore(db)
    assert seen and not [s for s in seen if "check" in s.lower() or "count(" in s.lower()], seen


def test_every_write_connection_syncs_in_full(tmp_path):
    store = ReviewStore(tmp_path / "r.sqlite3")
    conn = store._connect()
    try:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
    finally:
        conn.close()


def test_an_empty_log_verifies_with_the_genesis_head(tmp_path):
    db = tmp_path / "r.sqlite3"
    ReviewStore(db)
    result = verify_log(db)
    assert result.ok and result.entries == 0 and result.head == GENESIS
