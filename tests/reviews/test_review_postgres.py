"""The review store on a real PostgreSQL server (the session's cluster, :mod:`pg_cluster`).

What only a server has: its bad inputs (unreachable, wrong password, no schema, a newer
schema, foreign tables), the password sources, the grants of a role that does not own the
log, ``reviews copy`` in both directions, writers killed with SIGKILL, a 40-session soak over
two processes, and the server restarted mid-run. The store's behaviour itself runs on both
backends in the other test files (the ``store_target`` fixture).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import psycopg
import pytest
from review_backends import acks_and_errors, raw

from core.cli import main
from core.reviews import DECISIONS, ReviewStore, ReviewStoreError, User, load_team
from core.reviews.copy import COPIED_TABLES
from core.reviews.maintenance import verify_log
from core.reviews.postgres import GRANTS, PG_TRIGGERS

HERE = Path(__file__).resolve().parent
WRITER = HERE / "review_writer.py"
SESSION = HERE / "review_session.py"
SOAK_S = float(os.environ.get("REVIEW_SOAK_S", "60"))
KEY = "k" * 32


def _tables(pg, db: str) -> list[str]:
    return [r[0] for r in pg.sql(db, "SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY 1")]


def _db_of(url: str) -> str:
    return url.rsplit("/", 1)[1]


# ---------------------------------------------------------------------------------------------
# Bad input: one line, nothing written, the password never shown
def test_a_url_never_becomes_a_file_and_an_unreachable_server_is_one_line(tmp_path, monkeypatch, pg):
    monkeypatch.chdir(tmp_path)
    port = pg.port + 1 if pg.port < 65000 else pg.port - 1  # nothing listens there
    url = f"postgresql://ana:hunter2@127.0.0.1:{port}/reviews"
    for target in (url, url.replace("postgresql://", "postgres://")):
        with pytest.raises(ReviewStoreError, match="unreachable") as info:
            ReviewStore(target)
        message = str(info.value)
        assert "hunter2" not in message and "\n" not in message
        assert f"postgresql://ana@127.0.0.1:{port}/reviews" in message
    monkeypatch.setenv("AUDIT_REVIEWS_DB", url)
    with pytest.raises(ReviewStoreError, match="unreachable"):
        ReviewStore()
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(ValueError, match="not a PostgreSQL one"):
        ReviewStore("mysql://ana@db.example/reviews")
    assert list(tmp_path.iterdir()) == []


def test_a_wrong_password_is_one_line_and_nothing_is_written(pg, pg_url, capsys):
    bad = pg_url.replace(":s3cret-pw@", ":not-the-pw@")
    with pytest.raises(ReviewStoreError, match="refused the password") as info:
        ReviewStore(bad)
    assert "not-the-pw" not in str(info.value) and "s3cret-pw" not in str(info.value)
    assert _tables(pg, _db_of(pg_url)) == []
    assert main(["reviews", "export", "--reviews-db", bad]) == 2
    err = capsys.readouterr().err
    assert "refused the password" in err and "not-the-pw" not in err and err.count("\n") == 1


def test_reading_a_database_without_the_schema_is_refused_and_creates_nothing(pg, pg_url, capsys):
    for action in ("verify", "export"):
        assert main(["reviews", action, "--reviews-db", pg_url]) == 2
        assert "holds no review store" in capsys.readouterr().err
    with pytest.raises(ReviewStoreError, match="holds no review store"):
        verify_log(pg_url)
    assert _tables(pg, _db_of(pg_url)) == []


def test_a_newer_schema_or_foreign_tables_are_refused_and_left_as_they_were(pg, pg_url):
    db = _db_of(pg_url)
    ReviewStore(pg_url).record("fp", 1, reviewer="ana", decision="acceptable")
    pg.sql(db, "UPDATE reliability_audit_marker SET schema_version = 6")
    with pytest.raises(
        ReviewStoreError, match=r"schema version 6, newer than this version of the tool understands \(5\)"
    ):
        ReviewStore(pg_url)
    assert pg.sql(db, "SELECT count(*) FROM reviews") == [(1,)]
    other = pg.create_database()
    pg.sql(other, "CREATE TABLE invoices (id int)")
    with pytest.raises(ReviewStoreError, match=r"holds other tables \(invoices\) and no review store"):
        ReviewStore(pg.url(other))
    assert _tables(pg, other) == ["invoices"]


def test_a_schema_created_by_another_process_while_this_one_looks_is_not_foreign(pg, pg_url, monkeypatch):
    """The interleaving CI once hit: process B commits the schema between two of A's statements."""
    import core.reviews.postgres as pgmod

    real_connect = pgmod.PostgresBackend.connect
    state = {"armed": True}

    class _Racing:
        def __init__(self, conn):
            self._conn, self.raw = conn, conn.raw

        def execute(self, sql, params=()):
            out = self._conn.execute(sql, params)
            if state["armed"]:
                state["armed"] = False
                ReviewStore(pg_url).record("fp", 1, reviewer="bo", decision="acceptable")  # "process B"
            return out

        def __getattr__(self, name):
            return getattr(self._conn, name)

    monkeypatch.setattr(pgmod.PostgresBackend, "connect", lambda self: _Racing(real_connect(self)))
    store = ReviewStore(pg_url)  # "process A": its first look saw an empty database
    assert not state["armed"]
    store.record("fp", 2, reviewer="ana", decision="acceptable")
    monkeypatch.undo()
    assert pg.sql(_db_of(pg_url), "SELECT reviewer FROM reviews ORDER BY review_id") == [("bo",), ("ana",)]
    assert verify_log(pg_url).ok


def test_a_disabled_or_dropped_trigger_is_refused_at_open_and_by_verify(pg, pg_url):
    db = _db_of(pg_url)
    ReviewStore(pg_url).record("fp", 1, reviewer="ana", decision="acceptable")
    assert verify_log(pg_url).ok
    pg.sql(db, "ALTER TABLE reviews DISABLE TRIGGER reviews_append_only_update")
    with pytest.raises(ReviewStoreError, match="reviews_append_only_update"):
        ReviewStore(pg_url)
    found = verify_log(pg_url)
    assert not found.ok and "reviews_append_only_update" in found.problem


def test_history_is_append_only_in_the_database_truncate_included(pg_url):
    store = ReviewStore(pg_url)
    store.record("fp", 1, reviewer="ana", decision="acceptable")
    store.plan("fp", ["1"], admin="ana", reviewers=["a@x"])
    for statement in (
        "UPDATE reviews SET note = 'x'",
        "DELETE FROM reviews",
        "TRUNCATE reviews CASCADE",
        "TRUNCATE chain_head",
        "DELETE FROM assignments",
        "UPDATE review_plans SET admin = 'x'",
    ):
        with pytest.raises(psycopg.Error, match="append-only|cannot be"):
            raw(store, statement)
    assert len(store.history("fp")) == 1 and len(store.assignments("fp")) == 1
    assert verify_log(pg_url).ok


# ---------------------------------------------------------------------------------------------
# Passwords and roles
def test_the_password_comes_from_pgpassfile_or_the_secrets_file(pg, pg_url, tmp_path, monkeypatch):
    ReviewStore(pg_url).record("fp", 1, reviewer="ana", decision="acceptable")
    bare = pg_url.replace(":s3cret-pw@", "@")
    monkeypatch.delenv("PGPASSWORD", raising=False)
    monkeypatch.setenv("PGPASSFILE", str(tmp_path / "none"))
    monkeypatch.setenv("AUDIT_REVIEWS_SECRETS", str(tmp_path / "none.toml"))
    with pytest.raises(ReviewStoreError, match="password"):
        ReviewStore(bare)
    secrets = tmp_path / "secrets.toml"
    secrets.write_text('[auth]\ncookie_secret = "c"\n\n[reviews]\npassword = "s3cret-pw"\n')
    monkeypatch.setenv("AUDIT_REVIEWS_SECRETS", str(secrets))
    assert len(ReviewStore(bare).history("fp")) == 1
    monkeypatch.setenv("AUDIT_REVIEWS_SECRETS", str(tmp_path / "none.toml"))
    passfile = tmp_path / "pgpass"
    passfile.write_text(f"127.0.0.1:{pg.port}:*:audit_admin:s3cret-pw\n")
    passfile.chmod(0o600)
    monkeypatch.setenv("PGPASSFILE", str(passfile))
    assert len(ReviewStore(bare).history("fp")) == 1


def test_a_role_that_does_not_own_the_log_writes_only_with_insert_grants(pg, pg_url):
    db = _db_of(pg_url)
    owner = ReviewStore(pg_url)
    owner.record("fp", 1, reviewer="ana", decision="acceptable")
    role = f"app_{db}"
    pg.sql("postgres", f"CREATE ROLE {role} LOGIN PASSWORD 'app-pw'")
    app_url = pg.url(db, user=role, password="app-pw")
    pg.sql(db, GRANTS.format(role=role).split(";")[0])
    pg.sql(db, GRANTS.format(role=role).split(";")[1])
    app = ReviewStore(app_url)
    app.record("fp", 2, reviewer="bo", decision="confirmed_brittle")
    app.plan("fp", ["1", "2"], admin="bo", reviewers=["a@x"])
    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        raw(app, "UPDATE reviews SET note = 'x'")
    assert verify_log(app_url).ok and verify_log(app_url).entries == 2
    pg.sql(db, f"GRANT UPDATE ON reviews TO {role}")
    with pytest.raises(
        ReviewStoreError, match=r"does not own the review log yet may update or delete its history \(reviews\)"
    ):
        ReviewStore(app_url)
    assert pg.sql(db, "SELECT count(*) FROM reviews") == [(2,)]


# ---------------------------------------------------------------------------------------------
# reviews copy
def _counts(target: str) -> dict[str, int]:
    store = ReviewStore(target)
    return {t: raw(store, f"SELECT COUNT(*) FROM {t}")[0][0] for t in (*COPIED_TABLES, "chain_head")}


def test_copy_sqlite_to_postgresql_and_back_loses_nothing(pg, pg_url, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("AUDIT_REVIEWS_KEY", KEY)
    team_file = tmp_path / "team.toml"
    team_file.write_text('[members]\n"ana@x.org" = "admin"\n"bo@x.org" = "reviewer"\n"dee@x.org" = "viewer"\n')
    team = load_team(team_file)
    ana, bo, dee = User(email="ana@x.org", name="Ana"), User(email="bo@x.org", name="Bo"), User(email="dee@x.org")
    first = tmp_path / "first.sqlite3"
    store = ReviewStore(first, team=team)
    store.plan("fp", [str(i) for i in range(6)], admin=ana, reviewers_per_case=2, reviewers=["bo@x.org", "ana@x.org"])
    for i in range(6):
        store.record("fp", str(i), reviewer=bo, decision=DECISIONS[i % 3], note=f"{i}% sure", reasons=["other"])
    store.retract("fp", "5", reviewer=bo)
    store.adjudicate("fp", "1", reviewer=ana, decision="acceptable")
    with pytest.raises(Exception, match="viewer"):
        store.record("fp", "1", reviewer=dee, decision="acceptable")
    assert main(["reviews", "copy", "--from", str(first), "--to", pg_url]) == 0
    printed = capsys.readouterr().out
    assert "s3cret-pw" not in printed and "reviews 8" in printed and "assignments 12" in printed
    assert _counts(pg_url) == _counts(str(first))
    assert main(["reviews", "verify", "--reviews-db", pg_url]) == 0
    assert "review log verified: 8 entries (signed with the key)" in capsys.readouterr().out
    # The copy is a working store: it remembers the team and the key, and goes on from the same ids.
    server = ReviewStore(pg_url, team=team)
    assert server.record("fp", "0", reviewer=ana, decision="acceptable").review_id == 9
    server.plan("fp", ["0"], admin=ana, reviewers=["bo@x.org"])
    with pytest.raises(ReviewStoreError, match="belongs to a team"):
        ReviewStore(pg_url).record("fp", "0", reviewer="x", decision="acceptable")
    back = tmp_path / "back.sqlite3"
    assert main(["reviews", "copy", "--from", pg_url, "--to", str(back)]) == 0
    capsys.readouterr()
    assert _counts(str(back)) == _counts(pg_url)
    assert main(["reviews", "verify", "--reviews-db", str(back)]) == 0
    for name in ("history", "assignments"):
        a = getattr(ReviewStore(back, team=team), name)("fp", **({"viewer": ana} if name == "history" else {}))
        b = getattr(server, name)("fp", **({"viewer": ana} if name == "history" else {}))
        assert a.equals(b), name
    assert ReviewStore(back, team=team).refusals().equals(server.refusals())
    # Never into an existing store or file; nothing half-written.
    assert main(["reviews", "copy", "--from", str(back), "--to", pg_url]) == 2
    assert main(["reviews", "copy", "--from", pg_url, "--to", str(back)]) == 2
    assert "exists already" in capsys.readouterr().err
    assert _counts(pg_url)["reviews"] == 9


# ---------------------------------------------------------------------------------------------
# Load: SIGKILL, a soak, a restart
def _stored(url: str) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for token, rid in raw(ReviewStore(url), "SELECT submission_id, review_id FROM reviews ORDER BY review_id"):
        out.setdefault(token, []).append(rid)
    return out


def test_processes_times_threads_with_writers_killed_lose_no_acknowledged_decision(pg_url, tmp_path):
    logs = [tmp_path / f"writer{p}.log" for p in range(4)]

    def start(p: int, n: int) -> subprocess.Popen:
        cmd = [sys.executable, str(WRITER), pg_url, str(p), "5", str(n), str(logs[p])]
        return subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)

    doomed = [start(p, -1) for p in range(2)]  # every thread opens a new store per decision, until killed
    steady = [start(p, 40) for p in range(2, 4)]
    deadline = time.monotonic() + 300
    while len(acks_and_errors(logs[:2])[0]) < 200:
        assert time.monotonic() < deadline and all(p.poll() is None for p in doomed), "a writer stopped"
        time.sleep(0.02)
    for proc in doomed:
        proc.send_signal(signal.SIGKILL)
    assert [p.wait(30) for p in doomed] == [-signal.SIGKILL] * 2
    for proc in steady:
        _, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err
    acks, errors = acks_and_errors(logs)
    assert errors == []
    stored = _stored(pg_url)
    lost = {t: rid for t, rid in acks.items() if stored.get(t) != [rid]}
    duplicated = {t: r for t, r in stored.items() if len(r) > 1}
    assert not lost and not duplicated
    n = sum(len(r) for r in stored.values())
    assert n >= len(acks) >= 200 + 2 * 5 * 40
    assert verify_log(pg_url).ok
    assert ReviewStore(pg_url).record("fp", "after", reviewer="ana", decision="acceptable").review_id == n + 1
    print(
        f"\n[postgres durability] 2 of 4 writers SIGKILLed: {len(acks)} acknowledged, {n} stored, none lost or duplicated"
    )


_SESSIONS = """
import sys, threading
sys.path.insert(0, {here!r})
from review_session import run_session
url, team, first, seconds, folder = sys.argv[1:6]
first = int(first)
threads = [threading.Thread(target=run_session, args=(url, team, i, float(seconds), f"{{folder}}/session{{i}}.log"))
           for i in range(first, first + 20)]
for t in threads: t.start()
for t in threads: t.join()
"""


@pytest.mark.slow
def test_forty_sessions_over_two_processes_with_sigkills_lose_and_duplicate_nothing(pg_url, tmp_path):
    """40 reviewer sessions (20 threads in each of 2 processes) for SOAK_S seconds; one process is
    killed with SIGKILL twice and started again each time: its sessions replay their submissions
    (same ids, as a browser resending), which must store nothing twice."""
    team = tmp_path / "team.toml"
    team.write_text(
        'default_role = "none"\n[members]\n' + "".join(f'"r{i}@example.org" = "reviewer"\n' for i in range(40))
    )
    ReviewStore(pg_url, team=load_team(team))
    script = _SESSIONS.format(here=str(HERE))

    def start(first: int, seconds: float) -> subprocess.Popen:
        cmd = [sys.executable, "-c", script, pg_url, str(team), str(first), str(seconds), str(tmp_path)]
        return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    begin = time.monotonic()
    steady = start(0, SOAK_S)
    kills = 0
    for _ in range(2):
        victim = start(20, SOAK_S)
        time.sleep(SOAK_S / 3)
        victim.send_signal(signal.SIGKILL)
        assert victim.wait(30) == -signal.SIGKILL
        kills += 1
    last = start(20, max(5.0, SOAK_S - (time.monotonic() - begin)))
    for proc in (steady, last):
        _, err = proc.communicate(timeout=SOAK_S + 300)
        assert proc.returncode == 0, err
    intents, acks = {}, {}
    for log in tmp_path.glob("session*.log"):
        for line in log.read_text(encoding="utf-8").splitlines():
            kind, token, *rest = line.split(" ")
            if kind == "intent":
                intents[token] = rest[0].split(",")
            elif kind == "ack" and rest:
                acks.setdefault(token, [int(r) for r in rest])
    stored = _stored(pg_url)

    def tokens(token: str) -> list[str]:
        ids = intents[token]
        return [token] if len(ids) == 1 else [f"{token}#{sid}" for sid in ids]

    lost = sum(stored.get(t) != [rid] for token, rids in acks.items() for t, rid in zip(tokens(token), rids))
    duplicated = sum(len(r) - 1 for r in stored.values())
    phantom = sum(t not in {x for token in intents for x in tokens(token)} for t in stored)
    n = sum(len(r) for r in stored.values())
    print(
        f"\n[postgres soak] 40 sessions x 2 processes, {time.monotonic() - begin:.0f} s, {kills} SIGKILLs: "
        f"{len(acks)} submissions acknowledged, {n} decisions stored; lost {lost}, duplicated {duplicated}, "
        f"phantom {phantom}"
    )
    assert (lost, duplicated, phantom) == (0, 0, 0)
    assert n > 0 and verify_log(pg_url).ok
    history = ReviewStore(pg_url).export()
    assert history["review_id"].tolist() == list(range(1, n + 1))


def test_a_server_restart_mid_run_is_reported_unreachable_then_recovers_losing_nothing(pg, pg_url):
    store = ReviewStore(pg_url, timeout=5.0)
    acks: dict[str, int] = {}
    unreachable: list[str] = []
    stop = threading.Event()
    lock = threading.Lock()

    def writer(w: int) -> None:
        i = 0
        while not stop.is_set():
            token = f"w{w}-{i}"
            while True:  # the same submission again until acknowledged, as the dashboard's button
                try:
                    stored = store.record(
                        "fp", f"{w}-{i}", reviewer=f"r{w}", decision="acceptable", submission_id=token
                    )
                    break
                except ReviewStoreError as exc:
                    assert "unreachable" in str(exc) and "s3cret-pw" not in str(exc), exc
                    with lock:
                        unreachable.append(str(exc))
                    time.sleep(0.1)
            with lock:
                acks[token] = stored.review_id
            i += 1

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(4)]
    for t in threads:
        t.start()
    while len(acks) < 50:
        time.sleep(0.01)
    pg.restart()
    after = len(acks)
    deadline = time.monotonic() + 60
    while len(acks) < after + 50 and time.monotonic() < deadline:
        time.sleep(0.01)
    stop.set()
    for t in threads:
        t.join(60)
    assert unreachable, "no write saw the server down"
    assert "Review database 'postgresql://audit_admin@127.0.0.1" in unreachable[0] and "\n" not in unreachable[0]
    stored = _stored(pg_url)
    assert {t: r for t, r in stored.items() if len(r) > 1} == {}
    assert all(stored.get(t) == [rid] for t, rid in acks.items())
    assert len(acks) >= after + 50 and verify_log(pg_url).ok
    print(
        f"\n[postgres restart] {len(unreachable)} unreachable answers during the restart; {len(acks)} acknowledged, none lost"
    )


def test_the_postgres_triggers_cover_sqlites_and_truncate():
    assert {t for t in PG_TRIGGERS if t.endswith("_no_truncate")} == {
        f"{t}_no_truncate" for t in (*COPIED_TABLES, "chain_head")
    }


def test_the_dashboard_takes_a_url_as_is_and_shows_it_without_the_password(tmp_path, monkeypatch):
    from core.cli.dashboard import streamlit_command
    from core.reviews.backend import display_name

    monkeypatch.chdir(tmp_path)
    url = "postgresql://ana:hunter2@db.example:5432/reviews?sslmode=require"
    command = streamlit_command(reviews_db=url)
    assert command[command.index("--reviews-db") + 1] == url
    assert display_name(url) == "postgresql://ana@db.example:5432/reviews"
    assert display_name(url, short=True) == "reviews"
    assert display_name(tmp_path / "r.sqlite3", short=True) == "r.sqlite3"
    assert list(tmp_path.iterdir()) == []


def test_the_report_reads_a_server_store_as_it_reads_its_sqlite_copy(pg_url, tmp_path, monkeypatch, capsys):
    from core.report import load_reviews

    monkeypatch.delenv("AUDIT_REVIEWS_KEY", raising=False)
    with pytest.raises(ValueError, match="holds no review store") as refused:
        load_reviews(pg_url, "fp")  # nothing there yet: refused, and nothing created
    assert "s3cret-pw" not in str(refused.value)
    assert _tables_of(pg_url) == []
    local = tmp_path / "local.sqlite3"
    store = ReviewStore(local)
    for i in range(4):
        store.record("fp", str(i), reviewer="bo", decision=DECISIONS[i % 3])
    store.retract("fp", "3", reviewer="bo")
    assert main(["reviews", "copy", "--from", str(local), "--to", pg_url]) == 0
    capsys.readouterr()
    server, copy = load_reviews(pg_url, "fp"), load_reviews(local, "fp")
    assert "s3cret-pw" not in server.path and server.path.startswith("postgresql://")
    assert server.latest.equals(copy.latest) and server.history.equals(copy.history)
    assert server.verification == copy.verification == "review log verified: 5 entries (hash chain only, no key)"


def _tables_of(url: str) -> list[str]:
    with psycopg.connect(url) as conn:
        rows = conn.execute("SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'")
        return [r[0] for r in rows]


def test_a_question_mark_inside_quotes_is_text_not_a_placeholder(pg_url):
    """The store writes ``?`` placeholders; in a quoted string or identifier a ``?`` is text."""
    from core.reviews.postgres import PostgresBackend

    conn = PostgresBackend(pg_url, timeout=5.0).connect()
    try:
        row = conn.execute("""SELECT ?, '?', 'it''s ?', 'a%b', ? AS "why?" """, ("first", "last")).fetchone()
    finally:
        conn.close()
    assert row == ("first", "?", "it's ?", "a%b", "last")


def test_both_backends_create_the_same_tables_and_columns(pg, pg_url, tmp_path):
    """One table definition of the review log for both dialects: the same columns, in order, nullable alike."""
    import sqlite3

    from core.reviews.schema import TABLES

    ReviewStore(pg_url).record("fp", 1, reviewer="ana", decision="acceptable")
    path = tmp_path / "reviews.sqlite3"
    ReviewStore(path).record("fp", 1, reviewer="ana", decision="acceptable")
    with sqlite3.connect(path) as conn:
        lite = {t: [(r[1], bool(r[3]) or bool(r[5])) for r in conn.execute(f"PRAGMA table_info({t})")] for t in TABLES}
    server = {
        t: [
            (name, nullable == "NO")
            for name, nullable in pg.sql(
                _db_of(pg_url),
                "SELECT column_name, is_nullable FROM information_schema.columns"
                f" WHERE table_schema = 'public' AND table_name = '{t}' ORDER BY ordinal_position",
            )
        ]
        for t in TABLES
    }
    assert server["assignments"].pop() == ("entry_no", True)  # SQLite's rowid: the insertion order
    assert server == lite
