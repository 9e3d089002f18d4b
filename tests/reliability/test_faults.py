"""Fault injection for every writing command and the review store (issue 13).

Faults: a read-only folder, a small tmpfs that fills up (ENOSPC), ``ulimit -f`` (EFBIG, via
``preexec_fn`` + ``resource.setrlimit(RLIMIT_FSIZE)``), and SIGKILL mid-write. For each, the
command exits 2 with one ``error:`` line naming the path (no traceback), the previous output
stays byte-identical, and no partial file is left under a published name.

The read-only and ENOSPC tests mount a real tmpfs when run as root (``mount -t tmpfs``, and
``mount -o remount,ro`` for read-only); otherwise read-only falls back to ``chmod 0555`` (not
root) and ENOSPC to a monkeypatched ``fsync`` raising ``ENOSPC`` (stated in the skip reason /
test id), since an unprivileged user cannot mount.
"""

from __future__ import annotations

import contextlib
import errno
import io
import json
import os
import resource
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
import warnings
from pathlib import Path

import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from corpus import records, sha_tree, table  # noqa: E402

from core.cli import main  # noqa: E402
from core.reviews import ReviewStore, ReviewStoreError  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
IS_ROOT = os.geteuid() == 0


def _mount_tmpfs(path: Path, size: str) -> bool:
    path.mkdir(parents=True, exist_ok=True)
    if not IS_ROOT or shutil.which("mount") is None:
        return False
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs", str(path)], capture_output=True
    )
    return done.returncode == 0


def _umount(path: Path) -> None:
    subprocess.run(["umount", "-l", str(path)], capture_output=True)


@pytest.fixture
def inputs(tmp_path) -> dict[str, Path]:
    """Legal inputs of every command, outside the faulty folder."""
    src = tmp_path / "inputs"
    src.mkdir()
    table(120).to_csv(src / "data.csv", index=False)
    records().to_csv(src / "records.csv", index=False)
    records().to_parquet(src / "records.parquet", index=False)
    store = ReviewStore(src / "r.sqlite3")
    for i in range(3):
        store.record("fp", i, reviewer="ana", decision="acceptable", note="checked")
    with sqlite3.connect(src / "r.sqlite3") as conn:  # bulk rows: a CSV export of about 200 KB
        conn.executemany(
            "INSERT INTO reviews (created_at, audit_fingerprint, sample_id, reviewer, decision, note)"
            " VALUES ('2026-01-01T00:00:00+00:00', 'bulk', ?, 'w', 'acceptable', 'checked twice')",
            [(str(i),) for i in range(2000)],
        )
    return {
        "data": src / "data.csv",
        "records": src / "records.csv",
        "records_pq": src / "records.parquet",
        "db": src / "r.sqlite3",
    }


def _argv(command: str, inputs: dict[str, Path], out: Path) -> list[str]:
    return {
        "audit": [
            "audit",
            "--data",
            str(inputs["data"]),
            "--target",
            "y",
            "--model",
            "logreg",
            "--out",
            str(out),
            "--force",
            "--no-progress",
        ],
        "paired": [
            "paired",
            "--records",
            str(inputs["records"]),
            "--tau",
            "0.8",
            "--out",
            str(out),
            "--force",
            "--lambdas",
            "0,1",
        ],
        "certify": [
            "certify",
            "--data",
            str(inputs["data"]),
            "--target",
            "y",
            "--model",
            "logreg",
            "--fit-rows",
            "100",
            "--chunk-rows",
            "40",
            "--out",
            str(out),
            "--no-progress",
        ],
        "paired-grid": [
            "paired-grid",
            "--records",
            str(inputs["records_pq"]),
            "--tau",
            "0.8",
            "--out",
            str(out),
            "--lambdas",
            "0,1",
            "--cells-per-task",
            "1",
            "--no-progress",
        ],
        "synth": ["synth", "--rows", "20000", "--out", str(out)],
        "reviews-export": ["reviews", "export", "--db", str(inputs["db"]), "--out", str(out)],
    }[command]


# Name of the output of each command inside the faulty folder; folder commands that replace
# (audit, paired) and file commands get a previous output first.
OUTPUT = {
    "audit": "out",
    "paired": "out",
    "certify": "run",
    "paired-grid": "run",
    "synth": "big.parquet",
    "reviews-export": "export.csv",
}
COMMANDS = list(OUTPUT)


def _prior(folder: Path, command: str) -> tuple[Path | None, str | None]:
    """An earlier result where ``command`` writes, and its digest; (None, None) for a new run folder."""
    prior = folder / OUTPUT[command]
    if command in ("audit", "paired"):
        prior.mkdir()
        (prior / "summary.md").write_text("previous result\n")
    elif command == "synth":
        table(5).to_parquet(prior, index=False)
    elif command == "reviews-export":
        table(5).to_csv(prior, index=False)
    else:
        return None, None  # certify / paired-grid: a new run folder
    return prior, sha_tree(prior)


def _run(argv: list[str]) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        code = main(argv)
    return code, err.getvalue()


def _published_files_complete(folder: Path) -> list[str]:
    """Problems with what a failed run left in ``folder``: temporary or unreadable files."""
    problems = []
    for p in folder.rglob("*"):
        if p.is_dir():
            continue
        if p.name.endswith(".tmp") or ".tmp-" in str(p):
            problems.append(f"temporary file left: {p}")
        elif p.suffix == ".parquet":
            try:
                pd.read_parquet(p)
            except Exception as exc:  # noqa: BLE001
                problems.append(f"unreadable {p}: {exc}")
        elif p.suffix == ".json":
            try:
                json.loads(p.read_text())
            except ValueError as exc:
                problems.append(f"truncated {p}: {exc}")
    return problems


def _assert_clean_failure(code: int, err: str, folder: Path, command: str, prior: Path | None, digest) -> None:
    assert code == 2, err
    assert "Traceback" not in err, err
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(lines) == 1, err
    assert str(folder) in lines[0] or OUTPUT[command] in lines[0], lines[0]
    if prior is not None:
        assert sha_tree(prior) == digest, "the previous output changed"
    leftovers = [p.name for p in folder.iterdir() if p.name.startswith(".") and p.name != ".lock"]
    assert not leftovers, leftovers
    assert not _published_files_complete(folder)


# ------------------------------------------------------------------------------------------
# Read-only folder


@pytest.fixture
def readonly(tmp_path):
    """A folder that becomes read-only after ``make_readonly()``; real ro mount when root."""
    folder = tmp_path / "ro"
    mounted = _mount_tmpfs(folder, "4m")

    def make_readonly() -> None:
        if mounted:
            subprocess.run(["mount", "-o", "remount,ro", str(folder)], check=True)
        else:
            folder.chmod(0o555)

    yield folder, make_readonly
    if mounted:
        _umount(folder)
    else:
        folder.chmod(0o755)


@pytest.mark.parametrize("command", COMMANDS)
def test_read_only_folder(command, inputs, readonly):
    folder, make_readonly = readonly
    prior, digest = _prior(folder, command)
    make_readonly()
    code, err = _run(_argv(command, inputs, folder / OUTPUT[command]))
    _assert_clean_failure(code, err, folder, command, prior, digest)
    assert "Read-only file system" in err or "Permission denied" in err, err


def test_review_store_in_a_read_only_folder(inputs, readonly):
    folder, make_readonly = readonly
    shutil.copy(inputs["db"], folder / "r.sqlite3")
    digest = sha_tree(folder / "r.sqlite3")
    make_readonly()
    with pytest.raises(ReviewStoreError, match=r"r\.sqlite3"):
        store = ReviewStore(folder / "r.sqlite3")
        store.record("fp", 1, reviewer="a", decision="acceptable")
    assert sha_tree(folder / "r.sqlite3") == digest


# ------------------------------------------------------------------------------------------
# Disk full


def _fill(folder: Path) -> None:
    """Fill the file system of ``folder`` to the last byte."""
    with open(folder / "filler", "wb", buffering=0) as fh:  # unbuffered: close() has nothing left to flush
        for size in (65536, 4096, 1):
            try:
                while fh.write(b"\0" * size):
                    pass
            except OSError as exc:
                assert exc.errno == errno.ENOSPC


@pytest.fixture
def full_disk(tmp_path, monkeypatch):
    """(folder, fill): a small tmpfs to fill up, or (not root) an fsync that raises ENOSPC."""
    folder = tmp_path / "small"
    mounted = _mount_tmpfs(folder, "8m")

    def fill() -> None:
        if mounted:
            _fill(folder)
        else:  # simulated: every atomic write fails at its fsync, as on a full disk
            import core.atomic

            def enospc(path):
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))

            monkeypatch.setattr(core.atomic, "_fsync_file", enospc)

    yield folder, fill, mounted
    if mounted:
        _umount(folder)


@pytest.mark.parametrize("command", COMMANDS)
def test_disk_full(command, inputs, full_disk):
    folder, fill, mounted = full_disk
    prior, digest = _prior(folder, command)
    fill()
    code, err = _run(_argv(command, inputs, folder / OUTPUT[command]))
    (folder / "filler").unlink(missing_ok=True)
    _assert_clean_failure(code, err, folder, command, prior, digest)
    assert "No space left on device" in err, err
    if command in ("certify", "paired-grid"):  # resumable: the same command completes once space is back
        code, err = _run(_argv(command, inputs, folder / OUTPUT[command]))
        assert code == 0, err


def test_review_store_on_a_full_disk(inputs, full_disk):
    folder, fill, mounted = full_disk
    if not mounted:
        pytest.skip("needs a real full file system (root, tmpfs): SQLite does its own I/O")
    store = ReviewStore(folder / "r.sqlite3")
    store.record("fp", 0, reviewer="a", decision="acceptable")
    _fill(folder)
    with pytest.raises(ReviewStoreError, match=r"r\.sqlite3.*(disk is full|no space)"):
        for i in range(1, 5000):
            store.record("fp", i, reviewer="a", decision="acceptable", note="x" * 2000)
    (folder / "filler").unlink()
    frame = ReviewStore(folder / "r.sqlite3").export()
    assert frame["review_id"].tolist() == list(range(1, len(frame) + 1))  # every stored row intact, no gap
    with sqlite3.connect(folder / "r.sqlite3") as conn:
        assert conn.execute("PRAGMA quick_check").fetchone()[0] == "ok"


# ------------------------------------------------------------------------------------------
# ulimit -f (subprocess: the limit applies to the whole process)


def _limit_fsize(limit: int):
    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return apply


@pytest.mark.parametrize("command", COMMANDS)
def test_file_size_limit(command, inputs, tmp_path):
    folder = tmp_path / "lim"
    folder.mkdir()
    prior, digest = _prior(folder, command)
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    # SQLite maps a 32 KiB -shm file to read a WAL database: the export's limit lets that through.
    limit = 65536 if command == "reviews-export" else 2048
    done = subprocess.run(
        [sys.executable, "-m", "core", *_argv(command, inputs, folder / OUTPUT[command])],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        preexec_fn=_limit_fsize(limit),
    )
    _assert_clean_failure(done.returncode, done.stderr, folder, command, prior, digest)
    assert "File too large" in done.stderr, done.stderr


# ------------------------------------------------------------------------------------------
# SIGKILL mid-write


def _kill_when(proc: subprocess.Popen, ready, timeout: float = 240) -> int:
    """SIGKILL ``proc`` as soon as ``ready()`` holds (polled every millisecond)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        if ready():
            os.kill(proc.pid, signal.SIGKILL)
            break
        time.sleep(0.001)
    return proc.wait(60)


def _writing(folder: Path, name: str):
    """True once a temporary file or folder of ``name`` holds bytes (the write has begun)."""

    def ready() -> bool:
        for p in folder.glob(f".{name}*"):
            if p.is_file() and p.stat().st_size > 0:
                return True
            if p.is_dir() and any(q.is_file() for q in p.rglob("*")):
                return True
        run = folder / name
        return run.is_dir() and any(run.glob("**/part-*.parquet"))

    return ready


@pytest.mark.parametrize("command", COMMANDS)
def test_sigkill_mid_write(command, inputs, tmp_path):
    folder = tmp_path / "kill"
    folder.mkdir()
    prior, digest = _prior(folder, command)
    argv = _argv(command, inputs, folder / OUTPUT[command])
    if command == "synth":
        argv[argv.index("--rows") + 1] = "3000000"  # long enough to be killed while writing
    if command == "reviews-export":  # enough rows that the CSV is still being written when killed
        with sqlite3.connect(inputs["db"]) as conn:
            conn.executemany(
                "INSERT INTO reviews (created_at, audit_fingerprint, sample_id, reviewer, decision, note)"
                " VALUES ('2026-01-01T00:00:00+00:00', 'bulk', ?, 'w', 'acceptable', 'n')",
                [(str(i),) for i in range(300_000)],
            )
    proc = subprocess.Popen(
        [sys.executable, "-m", "core", *argv], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    code = _kill_when(proc, _writing(folder, OUTPUT[command]))
    assert code in (-signal.SIGKILL, 0), proc.stderr.read()
    out = folder / OUTPUT[command]
    # Published names hold the previous output or a complete new one, never a partial file.
    if code == -signal.SIGKILL and prior is not None:
        assert sha_tree(prior) == digest
    published = [p for p in folder.iterdir() if not p.name.startswith(".")]
    resumable = command in ("certify", "paired-grid")
    for p in published:
        problems = _published_files_complete(p) if p.is_dir() else []
        if resumable:
            # A partitioned run folder is published as it grows; a kill during a partition's
            # write leaves that attempt's hidden temporary, which the resumed run removes
            # (paired-grid writes its partitions in sub-folders: policy_costs/.part-...).
            prefix = f"temporary file left: {p}/"
            problems = [
                q for q in problems if not (q.startswith(prefix) and Path(q[len(prefix) :]).name.startswith(".part-"))
            ]
        assert not problems, problems
    if resumable:
        assert not [p for p in out.rglob("part-*.parquet") if not _readable(p)]
        code, err = _run(argv)  # the same command resumes to a complete run
        assert code == 0, err
        assert not _published_files_complete(out), "the resumed run left temporaries"
    elif command in ("synth", "reviews-export") and code == 0:
        assert out.stat().st_size > 0 and _readable(out)


def _readable(path: Path) -> bool:
    try:
        (pd.read_parquet if path.suffix == ".parquet" else pd.read_csv)(path)
    except Exception:  # noqa: BLE001
        return False
    return True


def _write_reviews(path: str, n: int) -> None:
    store = ReviewStore(path)
    for i in range(n):
        store.record("fp", i, reviewer="w", decision="acceptable")


def test_sigkill_mid_review_writes_keeps_every_committed_row(tmp_path):
    path = tmp_path / "r.sqlite3"
    ReviewStore(path)
    code = (
        "import sys; sys.path.insert(0, %r); from core.reviews import ReviewStore\n"
        "s = ReviewStore(%r)\n"
        "for i in range(100000): s.record('fp', i, reviewer='w', decision='acceptable')\n"
    ) % (str(ROOT), str(path))
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT)

    def enough() -> bool:
        try:
            with sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5) as conn:
                return conn.execute("SELECT count(*) FROM reviews").fetchone()[0] >= 200
        except sqlite3.Error:
            return False

    assert _kill_when(proc, enough) == -signal.SIGKILL
    frame = ReviewStore(path).export()  # opens (quick_check passes) after the crash
    assert len(frame) >= 200
    assert frame["review_id"].tolist() == list(range(1, len(frame) + 1))
    assert frame["sample_id"].astype(int).tolist() == list(range(len(frame)))
    assert frame["created_at"].is_monotonic_increasing


def test_eight_processes_creating_and_writing_one_new_store(tmp_path):
    # No process creates the file first: all race to create it, then write 50 decisions each.
    path = tmp_path / "new.sqlite3"
    code = (
        "import sys; sys.path.insert(0, %r); from core.reviews import ReviewStore\n"
        "s = ReviewStore(%r, timeout=60)\n"
        "for i in range(50): s.record('fp' + sys.argv[1], i, reviewer='w', decision='acceptable')\n"
    )
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", code % (str(ROOT), str(path)), str(k)], cwd=ROOT, stderr=subprocess.PIPE
        )
        for k in range(8)
    ]
    for proc in procs:
        assert proc.wait(300) == 0, proc.stderr.read()
    frame = ReviewStore(path).export()
    assert len(frame) == 400
    assert frame["review_id"].tolist() == list(range(1, 401))
    assert frame["created_at"].is_monotonic_increasing
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT count(*) FROM reliability_audit_marker").fetchone()[0] == 1
