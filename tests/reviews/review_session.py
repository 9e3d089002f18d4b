"""One simulated reviewer session writing to a team review store until a deadline.

Used by ``test_review_concurrency.py`` in threads (:func:`run_session`) and as a script in
separate processes (``python review_session.py DB TEAM SESSION SECONDS LOG [GO]``). Every submission
has its own id; before each call the session logs ``intent <id> <sample ids> <decision>``, after
the store answers ``ack <id> <review_id>...`` (the log is flushed line by line, so a killed process leaves every
acknowledged write in it). A locked database (``ReviewStoreError``) is retried with the same
submission id, so a retry can never store a decision twice; one submission in ten is sent a
second time on purpose (a double click) and must come back as the stored entry.
"""

from __future__ import annotations

import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from core.reviews import DECISIONS, ReviewStore, ReviewStoreError, User, load_team  # noqa: E402

CASES = 300


def run_session(db: str, team_file: str, session: int, seconds: float, log_path: str, go: str = "") -> dict:
    """Write until ``seconds`` have passed; return counts (``submissions``, ``retries``, ``repeats``).

    With ``go``, the session opens the store, creates ``<log_path>.ready`` and waits for the
    file ``go`` before writing, so that all sessions write at the same time.
    """
    store = ReviewStore(db, team=load_team(team_file), timeout=2.0)
    user = User(email=f"r{session}@example.org", name=f"Reviewer {session}")
    rng = random.Random(session)
    counts = {"submissions": 0, "retries": 0, "repeats": 0}
    if go:
        Path(f"{log_path}.ready").touch()
        while not Path(go).exists():
            time.sleep(0.01)
    deadline = time.monotonic() + seconds
    with open(log_path, "a", buffering=1, encoding="utf-8") as log:

        def retrying(call) -> list:
            while True:
                try:
                    return call()
                except ReviewStoreError as exc:  # locked longer than the timeout: retry, same id
                    if "lock" not in str(exc) and "busy" not in str(exc):
                        raise
                    counts["retries"] += 1

        def submit(token: str, ids: list[int], decision: str, call) -> list:
            log.write(f"intent {token} {','.join(map(str, ids))} {decision}\n")
            stored = retrying(call)
            log.write(f"ack {token} {' '.join(str(r.review_id) for r in stored)}\n")
            return stored

        n = 0
        while time.monotonic() < deadline:
            n += 1
            token = f"s{session}-{n}"
            decision = rng.choice(DECISIONS)
            if rng.random() < 0.15:  # a bulk decision on three cases, one transaction
                ids = rng.sample(range(CASES), 3)
                stored = submit(
                    token,
                    ids,
                    decision,
                    lambda ids=ids, d=decision, t=token: store.record_many(
                        "fp", ids, reviewer=user, decision=d, submission_id=t
                    ),
                )
            else:
                sid = rng.randrange(CASES)
                stored = submit(
                    token,
                    [sid],
                    decision,
                    lambda sid=sid, d=decision, t=token: [
                        store.record("fp", sid, reviewer=user, decision=d, submission_id=t)
                    ],
                )
            counts["submissions"] += 1
            if rng.random() < 0.1:  # the same click delivered twice
                ids = [int(r.sample_id) for r in stored]
                again = retrying(
                    lambda ids=ids, d=decision, t=token: (
                        store.record_many("fp", ids, reviewer=user, decision=d, submission_id=t)
                        if len(ids) > 1
                        else [store.record("fp", ids[0], reviewer=user, decision=d, submission_id=t)]
                    )
                )
                assert [r.review_id for r in again] == [r.review_id for r in stored], (token, again, stored)
                counts["repeats"] += 1
    return counts


if __name__ == "__main__":
    db, team, session, seconds, log = sys.argv[1:6]
    result = run_session(db, team, int(session), float(seconds), log, sys.argv[6] if len(sys.argv) > 6 else "")
    print(" ".join(f"{k}={v}" for k, v in result.items()))
