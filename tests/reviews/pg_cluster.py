"""A throw-away PostgreSQL cluster for the review store's tests: initdb, pg_ctl, one per test session.

The server listens on 127.0.0.1 on a free port and on a socket folder inside the cluster's
own temporary folder; it runs as the current user, or as ``postgres`` when the tests run as
root (PostgreSQL refuses to run as root). The binaries come from ``pg_config --bindir``, else
``/usr/lib/postgresql/*/bin``, else ``PATH`` (Debian's ``postgresql`` package:
``scripts/install.sh dev`` installs it).
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import uuid
from dataclasses import dataclass
from pathlib import Path

#: The superuser the tests connect as; the password is set by initdb.
SUPERUSER = "audit_admin"
PASSWORD = "s3cret-pw"  # a test-only cluster on 127.0.0.1, gone at the end of the session


class PostgresMissing(RuntimeError):
    """initdb / pg_ctl are not installed."""


def bindir() -> Path:
    """The folder of ``initdb`` and ``pg_ctl``."""
    candidates = []
    if shutil.which("pg_config"):
        out = subprocess.run(["pg_config", "--bindir"], capture_output=True, text=True, check=False).stdout.strip()
        if out:
            candidates.append(Path(out))
    candidates += [Path(p) for p in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True)]
    if shutil.which("initdb"):
        candidates.append(Path(shutil.which("initdb")).parent)
    for folder in candidates:
        if (folder / "initdb").exists() and (folder / "pg_ctl").exists():
            return folder
    raise PostgresMissing(
        "PostgreSQL's initdb/pg_ctl were not found: install Debian's `postgresql` package "
        "(`bash scripts/install.sh dev` does)."
    )


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Cluster:
    """A running cluster: ``url(db)`` is a libpq URL of database ``db`` on it."""

    root: Path
    port: int
    bindir: Path
    run_as: str | None

    @property
    def data(self) -> Path:
        return self.root / "data"

    def url(self, database: str = "postgres", *, user: str = SUPERUSER, password: str | None = PASSWORD) -> str:
        auth = f"{user}:{password}" if password is not None else user
        return f"postgresql://{auth}@127.0.0.1:{self.port}/{database}"

    def _ctl(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        cmd = [str(self.bindir / "pg_ctl"), "-D", str(self.data), *args]
        if self.run_as:
            cmd = ["runuser", "-u", self.run_as, "--", *cmd]
        return subprocess.run(cmd, capture_output=True, text=True, check=check, timeout=120)

    def start(self) -> None:
        opts = f"-p {self.port} -k {self.root / 'sock'} -c listen_addresses=127.0.0.1 -c fsync=on"
        self._ctl("-w", "-t", "60", "-l", str(self.root / "log.txt"), "-o", opts, "start")

    def stop(self) -> None:
        self._ctl("-w", "-m", "fast", "stop", check=False)

    def restart(self) -> None:
        self.stop()
        self.start()

    def create_database(self) -> str:
        """A new empty database; its name."""
        import psycopg

        name = f"t_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return name

    def sql(self, database: str, statement: str, params: tuple = ()) -> list[tuple]:
        """Run one statement as the superuser (autocommit); its rows."""
        import psycopg

        with psycopg.connect(self.url(database), autocommit=True) as conn:
            cur = conn.execute(statement, params)
            return cur.fetchall() if cur.description else []


def start_cluster() -> Cluster:
    """initdb + pg_ctl start into a new temporary folder (readable by the server's user)."""
    folder = bindir()
    run_as = "postgres" if os.geteuid() == 0 else None
    root = Path(tempfile.mkdtemp(prefix="audit-pg-"))
    (root / "sock").mkdir()
    pwfile = root / "pw"
    pwfile.write_text(PASSWORD + "\n")
    if run_as:
        entry = pwd.getpwnam(run_as)
        for path in (root, root / "sock", pwfile):
            os.chown(path, entry.pw_uid, entry.pw_gid)
    cmd = [
        str(folder / "initdb"),
        "-D",
        str(root / "data"),
        "-U",
        SUPERUSER,
        f"--pwfile={pwfile}",
        "--auth=scram-sha-256",
        "-E",
        "UTF8",
        "--locale=C",
    ]
    if run_as:
        cmd = ["runuser", "-u", run_as, "--", *cmd]
    subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=300)
    cluster = Cluster(root, _free_port(), folder, run_as)
    cluster.start()
    return cluster


def remove(cluster: Cluster) -> None:
    cluster.stop()
    shutil.rmtree(cluster.root, ignore_errors=True)
