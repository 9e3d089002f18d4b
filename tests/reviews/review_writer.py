"""A writer process for the durability stress test: THREADS threads, each opening a NEW
``ReviewStore`` on the same file for every decision it records (what a dashboard and a script
sharing one database do, and what lost decisions when a store's construction touched the file).

``python review_writer.py DB PROC THREADS N LOG`` (N < 0: write until killed). The log gets
``ack <submission id> <review id>`` after ``record`` returned, ``error <message>`` when a write
failed; lines are written whole and flushed, so a SIGKILL leaves every acknowledgement in it.
"""

from __future__ import annotations

import sys
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from core.reviews import DECISIONS, ReviewStore  # noqa: E402


def main(db: str, proc: int, threads: int, n: int, log_path: str) -> None:
    lock = threading.Lock()
    with open(log_path, "a", buffering=1, encoding="utf-8") as log:

        def write(line: str) -> None:
            with lock:
                log.write(line + "\n")

        def thread(t: int) -> None:
            i = 0
            while n < 0 or i < n:
                token = f"p{proc}-t{t}-{i}"
                try:
                    stored = ReviewStore(db, timeout=30.0).record(
                        "fp", f"{proc}-{t}-{i}", reviewer=f"r{proc}", decision=DECISIONS[i % 3], submission_id=token
                    )
                    write(f"ack {token} {stored.review_id}")
                except Exception as exc:  # noqa: BLE001 - every failure is the test's finding
                    write(f"error {token} {type(exc).__name__}: {exc}".replace("\n", " "))
                i += 1

        workers = [threading.Thread(target=thread, args=(t,)) for t in range(threads)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()


if __name__ == "__main__":
    db, proc, threads, n, log = sys.argv[1:6]
    main(db, int(proc), int(threads), int(n), log)
