"""``reviews backup`` and ``reviews check`` while the database is in use, and the refusals."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from core.cli import main
from core.reviews import ReviewStore
from core.reviews.maintenance import backup, check_integrity, verify_log

WRITER = Path(__file__).resolve().parent / "review_writer.py"


def test_a_backup_taken_while_two_processes_write_is_a_consistent_verified_prefix(tmp_path, capsys):
    db = tmp_path / "reviews.sqlite3"
    ReviewStore(db)
    writers = [
        subprocess.Popen([sys.executable, str(WRITER), str(db), str(p), "3", "-1", str(tmp_path / f"w{p}.log")])
        for p in range(2)
    ]
    try:
        deadline = time.monotonic() + 120
        while len(ReviewStore(db).export()) < 100 and time.monotonic() < deadline:
            time.sleep(0.05)
        outs = []
        for i in range(3):  # three backups in the middle of the writes
            out = tmp_path / f"backup{i}.sqlite3"
            assert main(["reviews", "backup", "--reviews-db", str(db), "--out", str(out)]) == 0
            assert main(["reviews", "check", "--reviews-db", str(db)]) == 0
            outs.append(out)
    finally:
        for w in writers:
            w.kill()
            w.wait(30)
    final = ReviewStore(db).export()
    sizes = []
    for out in outs:
        with sqlite3.connect(out) as conn:
            assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"  # one self-contained file
        copy = ReviewStore(out).export()
        sizes.append(len(copy))
        assert verify_log(out).ok and check_integrity(out).ok
        # A prefix of the live log: the same entries, in the same order, with the same fields.
        assert copy.equals(final.iloc[: len(copy)].reset_index(drop=True))
    assert sizes == sorted(sizes) and sizes[0] >= 100
    assert "backed up" in capsys.readouterr().out


def test_a_backup_never_replaces_a_file_nor_the_database(tmp_path):
    db = tmp_path / "reviews.sqlite3"
    ReviewStore(db).record("fp", 1, reviewer="ana", decision="acceptable")
    (tmp_path / "old.sqlite3").write_bytes(b"keep me")
    for dest in (tmp_path / "old.sqlite3", db):
        with pytest.raises(ValueError, match="never replaces a file"):
            backup(db, dest)
    assert (tmp_path / "old.sqlite3").read_bytes() == b"keep me"
    assert main(["reviews", "backup", "--reviews-db", str(db), "--out", str(tmp_path / "nope" / "b.sqlite3")]) == 2
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_export_refuses_to_write_over_the_database(tmp_path):
    db = tmp_path / "reviews.sqlite3"
    ReviewStore(db).record("fp", 1, reviewer="ana", decision="acceptable")
    before = db.read_bytes()
    with pytest.raises(ValueError, match="is the review database itself"):
        ReviewStore(db).export(db)
    assert db.read_bytes() == before


def test_check_finds_a_damaged_page_and_says_how_to_restore(tmp_path, capsys):
    db = tmp_path / "reviews.sqlite3"
    store = ReviewStore(db)
    for i in range(300):
        store.record("fp", i, reviewer="c", decision="acceptable", note="n" * 200)
    with sqlite3.connect(db) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    data = bytearray(db.read_bytes())
    for start in range(3 * 4096, len(data) - 4096, 3 * 4096):
        data[start + 8 : start + 600] = b"\xa5" * 592
    db.write_bytes(bytes(data))
    found = check_integrity(db)
    assert not found.ok and found.problems and "backup" in found.advice
    assert main(["reviews", "check", "--reviews-db", str(db)]) == 3
    err = capsys.readouterr().err
    assert "integrity check FAILED" in err and "Backups and restore" in err


def test_check_and_verify_of_a_missing_file_are_bad_input(tmp_path, capsys):
    for action in ("check", "verify", "backup"):
        extra = ["--out", str(tmp_path / "b.sqlite3")] if action == "backup" else []
        assert main(["reviews", action, "--reviews-db", str(tmp_path / "none.sqlite3"), *extra]) == 2
        assert "does not exist" in capsys.readouterr().err
    assert not (tmp_path / "none.sqlite3").exists()


def test_a_url_never_becomes_a_file(tmp_path, monkeypatch):
    # A postgresql:// URL is a server (tests/reviews/test_review_postgres.py); any other URL is refused.
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match="looks like a URL, but not a PostgreSQL one"):
        ReviewStore("sqlite://ana@db.example/reviews")
    assert list(tmp_path.iterdir()) == []
