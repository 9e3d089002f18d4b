"""A real MLflow tracking server for the tests: SQLite backend, local artifacts, 127.0.0.1.

The server is the full ``mlflow`` package in a venv of its own, which ``bash scripts/install.sh
dev`` makes (its pins clash with the lock; the project itself needs only the client,
``mlflow-skinny``). :data:`SERVER_VENV` is where it is looked for (``$AUDIT_MLFLOW_SERVER_VENV``
to use another). Errors are :class:`MlflowServerMissingError` (no venv: a test turns it into
``pytest.fail``, as the browser tests do for a missing Chromium) and
:class:`MlflowServerStartError` (the server exited or did not answer, with the tail of its log).
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from browser_kit import free_port

#: The venv holding the tracking server (scripts/install.sh dev).
SERVER_VENV = Path(
    os.environ.get("AUDIT_MLFLOW_SERVER_VENV")
    or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "reliability-audit" / "mlflow-server"
)


class MlflowServerMissingError(FileNotFoundError):
    """The tracking server's venv is not installed where the kit looks."""


class MlflowServerStartError(RuntimeError):
    """The tracking server exited or did not answer its health check in time."""


def server_command() -> Path:
    """The ``mlflow`` command of :data:`SERVER_VENV`."""
    command = SERVER_VENV / "bin" / "mlflow"
    if not command.is_file():
        raise MlflowServerMissingError(
            f"the MLflow tracking server is not installed at {SERVER_VENV}: run `bash scripts/install.sh dev` "
            "(or set AUDIT_MLFLOW_SERVER_VENV to a venv holding the full mlflow package)."
        )
    return command


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/health", timeout=2) as resp:
            return resp.status == 200
    except OSError:
        return False


@contextmanager
def mlflow_server(folder: Path, *, timeout_s: float = 120.0) -> Iterator[str]:
    """A started ``mlflow server`` (``folder`` gets its database, artifacts and log); yields its URL.

    The server and its workers run in a process group of their own, ended on exit.
    """
    command = server_command()
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_") and k != "PYTHONPATH"},
        "MLFLOW_DISABLE_TELEMETRY": "true",
        "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false",
        "PYTHONUNBUFFERED": "1",  # the access log is complete when a test reads it
    }
    log_path = folder / "server.log"
    with open(log_path, "w+") as log:
        proc = subprocess.Popen(
            [
                str(command),
                "server",
                "--backend-store-uri",
                f"sqlite:///{folder / 'mlflow.sqlite'}",
                "--artifacts-destination",
                str(folder / "artifacts"),
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--workers",
                "1",
            ],
            cwd=folder,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            deadline = time.monotonic() + timeout_s
            while not _healthy(url):
                if proc.poll() is not None or time.monotonic() > deadline:
                    log.seek(0)
                    raise MlflowServerStartError(f"the MLflow server did not start:\n{log.read()[-3000:]}")
                time.sleep(0.5)
            yield url
        finally:
            _stop(proc)


def _stop(proc: subprocess.Popen, *, timeout_s: float = 15.0) -> None:
    """End the server's process group: SIGTERM, then SIGKILL after ``timeout_s``."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=timeout_s)
            return
        except subprocess.TimeoutExpired:
            continue
