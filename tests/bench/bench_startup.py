"""Startup and page-switch benchmark of the dashboard, in a real headless Chromium.

    python tests/bench/bench_startup.py [--rounds 2]

Measures, in one run and side by side:

1. **cold start**: from launching ``streamlit run app.py`` (fresh process, empty caches) to the
   Overview page fully rendered on the default data (heading shown, script run finished,
   plotly charts drawn); split into server start and first render;
2. **first visit** of every other page (may compute: extra models, the paired demo pool);
3. **cached page switches**: later visits of every page, which must only read caches.

Targets (issue): cold start < 15 s on a 2-core machine; cached switches < 1 s. The printed
ratios are measured / target.
"""
from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
PAGES = [
    ("Overview: data & protocol", "Overview"),
    ("Certificate explorer", "Certificate explorer"),
    ("Triage queue", "Triage queue"),
    ("Model comparison", "Model comparison"),
    ("Calibration", "Calibration"),
    ("Paired bounds", "Paired bounds"),
    ("Recapture queue", "Recapture queue"),
]
COLD_TARGET_S, SWITCH_TARGET_S = 15.0, 1.0


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait_idle(page, timeout_s: float = 300.0) -> float:
    """Block until the script run is over; return the moment it was first seen over."""
    status = page.locator('[data-testid="stStatusWidget"]')
    deadline = time.perf_counter() + timeout_s
    idle_since = None
    while True:
        now = time.perf_counter()
        if now > deadline:
            raise TimeoutError("app still running")
        idle = status.count() == 0 or not status.first.is_visible()
        if idle and idle_since is None:
            idle_since = now
        elif not idle:
            idle_since = None
        if idle_since is not None and now - idle_since >= 0.5:  # steady, not between two reruns
            return idle_since
        page.wait_for_timeout(25)


def _visit(page, nav_title: str, heading: str) -> float:
    start = time.perf_counter()
    page.locator('[data-testid="stSidebarNav"] a', has_text=nav_title).first.click()
    page.get_by_role("heading", name=heading).first.wait_for(timeout=300_000)
    page.locator(".js-plotly-plot").first.wait_for(state="visible", timeout=300_000)
    return _wait_idle(page) - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=2, help="cached rounds over all pages")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "AUDIT_REVIEWS_DB": str(Path(tmp) / "reviews.sqlite3")}
        t0 = time.perf_counter()
        proc = subprocess.Popen(
            [sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true",
             "--browser.gatherUsageStats", "false", "--server.port", str(port), "--server.address", "127.0.0.1",
             "--server.fileWatcherType", "none"],
            cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        try:
            while True:
                try:
                    with urllib.request.urlopen(f"{url}/_stcore/health", timeout=1) as resp:
                        if resp.read().strip() == b"ok":
                            break
                except OSError:
                    time.sleep(0.05)
            t_server = time.perf_counter() - t0
            with sync_playwright() as pw:
                browser = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
                page = browser.new_page(viewport={"width": 1440, "height": 1000})
                page.goto(url)
                # The audit's own section and charts, not just the data preview drawn before it.
                page.get_by_role("heading", name="The audit at a glance").first.wait_for(timeout=300_000)
                page.locator(".js-plotly-plot").nth(2).wait_for(state="visible", timeout=300_000)
                t_cold = _wait_idle(page) - t0
                first = {heading: _visit(page, nav, heading) for nav, heading in PAGES[1:]}
                cached: dict[str, list[float]] = {heading: [] for _, heading in PAGES}
                for _ in range(args.rounds):
                    for nav, heading in PAGES:
                        cached[heading].append(_visit(page, nav, heading))
                browser.close()
        finally:
            proc.terminate()
            proc.wait(timeout=20)

    print(f"cold start to rendered Overview: {t_cold:6.2f} s  (server up {t_server:.2f} s, "
          f"first render {t_cold - t_server:.2f} s)  ratio to {COLD_TARGET_S:.0f} s target: {t_cold / COLD_TARGET_S:.2f}")
    print(f"{'page':<24}{'first visit s':>15}{'cached median s':>17}{'cached max s':>14}{'max / 1 s':>11}")
    for _, heading in PAGES:
        runs = cached[heading]
        print(f"{heading:<24}{first.get(heading, float('nan')):>15.2f}{statistics.median(runs):>17.3f}"
              f"{max(runs):>14.3f}{max(runs) / SWITCH_TARGET_S:>11.2f}")


if __name__ == "__main__":
    main()
