"""The real-browser kit: a dashboard server on a free port, Debian's Chromium, and the waits.

One home for what the browser tests (``tests/app/test_browser*.py``, ``tests/test_report*.py``), the
screenshots (``scripts/screenshots.py``) and the startup benchmark
(``tests/bench/bench_startup.py``) all need. It lives under ``tests/`` because it is a test
helper, not part of the product (``core/`` owns no test helpers); the scripts put ``tests/`` on
``sys.path`` to import it, as ``tests/portable.py`` is imported.

Errors are of two kinds, so that a test can turn them into ``pytest.fail`` and a script into a
one-line exit 2: :class:`ServerStartError` (the server exited or never answered, with the tail of
its log) and :class:`ChromiumMissingError` (no Chromium at :data:`CHROMIUM`). A wait that runs
out raises :class:`TimeoutError`.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import IO

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
#: Headless Chromium in a container: no user namespace for the sandbox, no GPU.
LAUNCH_ARGS = ("--no-sandbox", "--disable-gpu")
STATUS_WIDGET = '[data-testid="stStatusWidget"]'
#: A drawn chart: a plotly figure, or a Vega-Lite chart's canvas (the Overview's charts).
CHART = '.js-plotly-plot, [data-testid="stVegaLiteChart"] canvas, [data-testid="stVegaLiteChart"] svg'


class ServerStartError(RuntimeError):
    """The dashboard server exited or did not answer its health check in time."""


class ChromiumMissingError(FileNotFoundError):
    """Debian's Chromium is not installed where the kit launches it."""


def free_port() -> int:
    """A localhost TCP port that was free a moment ago."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_server(
    port: int,
    *,
    reviews_db: str | os.PathLike[str],
    log: IO[str] | int = subprocess.DEVNULL,
    script: str | os.PathLike[str] | None = None,
    env: dict[str, str] | None = None,
    app_args: Sequence[str] = (),
) -> subprocess.Popen:
    """``streamlit run app.py`` headless on ``127.0.0.1:port``, with its own review database.

    ``log`` takes the server's stdout and stderr (a text file open for writing, or
    ``subprocess.DEVNULL``); unbuffered, so that the log is complete when the server dies.
    ``script`` runs another Streamlit script instead (from its own folder); ``env`` replaces
    this process's environment; ``app_args`` are the script's own arguments (after ``--``, e.g.
    ``["--audit", DIR]``).
    """
    env = {**(os.environ if env is None else env), "AUDIT_REVIEWS_DB": str(reviews_db), "PYTHONUNBUFFERED": "1"}
    path = ROOT / "app.py" if script is None else Path(script)
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "streamlit",
            "run",
            path.name,
            "--server.headless",
            "true",
            "--browser.gatherUsageStats",
            "false",
            "--server.port",
            str(port),
            "--server.address",
            "127.0.0.1",
            "--server.fileWatcherType",
            "none",
            *(["--", *app_args] if app_args else []),
        ],
        cwd=path.parent,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )


def healthy(url: str, *, timeout_s: float = 2.0) -> bool:
    """Whether the Streamlit server at ``url`` answers ``ok`` on its health endpoint."""
    try:
        with urllib.request.urlopen(f"{url}/_stcore/health", timeout=timeout_s) as resp:
            return resp.read().strip() == b"ok"
    except OSError:
        return False


def wait_healthy(
    url: str,
    proc: subprocess.Popen,
    *,
    timeout_s: float = 60.0,
    poll_s: float = 0.3,
    log: IO[str] | None = None,
    tail_chars: int = 3000,
) -> None:
    """Block until the server answers; raise :class:`ServerStartError` (with the last
    ``tail_chars`` of ``log``, a file open for reading too) if it exits or ``timeout_s`` passes."""
    deadline = time.monotonic() + timeout_s
    while not healthy(url):
        if proc.poll() is not None or time.monotonic() > deadline:
            tail = ""
            if log is not None:
                log.seek(0)
                tail = log.read()[-tail_chars:]
            stop_server(proc)
            raise ServerStartError(f"the dashboard server did not start:\n{tail}")
        time.sleep(poll_s)


def stop_server(proc: subprocess.Popen, *, timeout_s: float = 15.0) -> None:
    """Terminate the server, killing it if it does not exit within ``timeout_s``."""
    proc.terminate()
    try:
        proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@contextmanager
def dashboard_server(
    folder: str | os.PathLike[str],
    *,
    timeout_s: float = 60.0,
    tail_chars: int = 3000,
    app_args: Sequence[str] = (),
) -> Iterator[str]:
    """A started dashboard server; yields its URL and stops it on exit.

    ``folder`` (which must exist) receives the server's review database ``reviews.sqlite3``, its
    audits folder ``audits/`` and its log ``server.log``, whose tail :class:`ServerStartError`
    quotes; ``app_args`` go to ``app.py`` (:func:`start_server`).
    """
    folder = Path(folder)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with open(folder / "server.log", "w+") as log:
        env = {**os.environ, "AUDIT_AUDITS_DIR": str(folder / "audits")}  # never the user's audits folder
        proc = start_server(port, reviews_db=folder / "reviews.sqlite3", log=log, env=env, app_args=app_args)
        wait_healthy(url, proc, timeout_s=timeout_s, log=log, tail_chars=tail_chars)
        try:
            yield url
        finally:
            stop_server(proc)


def launch_chromium(playwright, **options):
    """Debian's Chromium, headless, through a running ``sync_playwright()`` context."""
    if not Path(CHROMIUM).exists():
        raise ChromiumMissingError(f"Debian's chromium is required at {CHROMIUM} (apt-get install chromium).")
    return playwright.chromium.launch(executable_path=CHROMIUM, args=list(LAUNCH_ARGS), **options)


def is_idle(page) -> bool:
    """Whether no script run is shown in progress (Streamlit's status widget absent or hidden)."""
    status = page.locator(STATUS_WIDGET)
    return status.count() == 0 or not status.first.is_visible()


#: True while no script run is in progress, by the app root's script state (which Streamlit sets
#: as each run starts and ends; a fragment's run counts too).
RUN_OVER = """() => { const app = document.querySelector('[data-testid="stApp"]');
    return !app || app.getAttribute('data-test-script-state') === 'notRunning'; }"""


def run_over(page) -> bool:
    """Whether no script run is in progress, by the script state and the status widget. Stricter
    than :func:`is_idle`: the status widget is shown only some time into a run, so a short run,
    or the start of one, can pass for idle there."""
    return bool(page.evaluate(RUN_OVER)) and is_idle(page)


def wait_idle(page, *, timeout_s: float = 300.0, steady_s: float = 0.5, poll_ms: float = 25) -> float:
    """Block until the app has been idle for ``steady_s`` (not merely between two reruns).

    Returns the ``time.perf_counter()`` moment it was first seen idle in that steady span, so a
    benchmark can time up to it; raises :class:`TimeoutError` after ``timeout_s``.
    """
    deadline = time.perf_counter() + timeout_s
    idle_since = None
    while True:
        now = time.perf_counter()
        if now > deadline:
            raise TimeoutError("the app was still running after the timeout")
        if not is_idle(page):
            idle_since = None
        elif idle_since is None:
            idle_since = now
        if idle_since is not None and now - idle_since >= steady_s:
            return idle_since
        page.wait_for_timeout(poll_ms)


def settle(page, *, timeout_ms: float = 150_000) -> None:
    """Wait until no script run is in progress (status widget hidden for a steady 0.75 s)."""
    wait_idle(page, timeout_s=timeout_ms / 1000, steady_s=0.75, poll_ms=250)


def ready(page, heading: str, *, timeout_ms: float = 150_000) -> None:
    """Wait for the page's heading, the end of its script run and its first chart."""
    page.get_by_role("heading", name=heading).first.wait_for(timeout=timeout_ms)
    settle(page, timeout_ms=timeout_ms)
    page.locator(CHART).first.wait_for(state="visible", timeout=timeout_ms)
    settle(page, timeout_ms=timeout_ms)


@contextmanager
def team_dashboard(
    folder: str | os.PathLike[str],
    provider: str,
    team_toml: str,
    *,
    timeout_s: float = 90.0,
    reviews_db: str | None = None,
) -> Iterator[str]:
    """The dashboard with OIDC sign-in (``provider``: the test provider's URL) and a team file;
    yields its URL and stops it on exit.

    ``folder`` (which must exist) receives ``team.toml`` (``team_toml``), ``secrets.toml``, the
    review database ``reviews.sqlite3`` (unless ``reviews_db`` names another one, e.g. a
    ``postgresql://`` URL shared by several replicas), the audits folder ``audits/`` and ``server.log``.
    """
    import secrets

    from core.cli.dashboard import streamlit_command

    folder = Path(folder)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    (folder / "team.toml").write_text(team_toml)
    (folder / "secrets.toml").write_text(
        "[auth]\n"
        f'redirect_uri = "{url}/oauth2callback"\n'
        f'cookie_secret = "{secrets.token_hex(16)}"\n'
        'client_id = "reliability-audit"\n'
        'client_secret = "not-a-secret"\n'
        f'server_metadata_url = "{provider}/.well-known/openid-configuration"\n'
    )
    command = streamlit_command(
        reviews_db=reviews_db if reviews_db is not None else str(folder / "reviews.sqlite3"),
        team=str(folder / "team.toml"),
        secrets=str(folder / "secrets.toml"),
        streamlit_options=[
            "--server.headless=true",
            "--browser.gatherUsageStats=false",
            f"--server.port={port}",
            "--server.address=127.0.0.1",
            "--server.fileWatcherType=none",
        ],
    )
    env = {k: v for k, v in os.environ.items() if k not in ("AUDIT_REVIEWS_DB", "AUDIT_TEAM")}
    env.update(PYTHONUNBUFFERED="1", AUDIT_AUDITS_DIR=str(folder / "audits"))  # never the user's audits folder
    with open(folder / "server.log", "w+") as log:
        proc = subprocess.Popen(command, cwd=folder, stdout=log, stderr=subprocess.STDOUT, env=env)
        wait_healthy(url, proc, timeout_s=timeout_s, log=log)
        try:
            yield url
        finally:
            stop_server(proc)
