"""Real browser: every page opened by a deep link (``/triage``, ``/recapture``, …) in a fresh tab.

What the browser may log: Streamlit's frontend does not know the server's base path, so on a
page URL ``/<page>`` it first probes ``/<page>/_stcore/health`` and ``/<page>/_stcore/host-config``
(404) and then ``/_stcore/…`` (200) — ``getPossibleBaseUris`` in the frontend, streamlit issue
#7074. Only ``window.__streamlit.BACKEND_BASE_URL`` skips the probe, and Streamlit's server
never sets it (see docs/dashboard.md). Those two 404s of the page's own path, with the root
probe answering 200, are the only failed requests tolerated; anything else fails the test.
"""

from __future__ import annotations

import re

import pytest
from test_browser import _ready

pytestmark = pytest.mark.browser

PAGES = {
    "": "Overview: data & protocol",
    "explorer": "Certificate explorer",
    "triage": "Triage queue",
    "comparison": "Model comparison",
    "calibration": "Calibration",
    "paired_bounds": "Paired bounds",
    "recapture": "Recapture queue",
}


def test_every_page_opens_by_deep_link_without_errors(server, browser):
    for path, heading in PAGES.items():
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        failed: list[str] = []
        probes: dict[str, int] = {}
        console: list[str] = []
        probe = re.compile(rf"/{re.escape(path)}/_stcore/(health|host-config)$") if path else None

        def on_response(resp, probe=probe, failed=failed, probes=probes) -> None:
            root = re.search(r"127\.0\.0\.1:\d+/_stcore/(health|host-config)$", resp.url)
            if root:
                probes[root.group(1)] = resp.status
            if resp.status >= 400 and not (probe is not None and resp.status == 404 and probe.search(resp.url)):
                failed.append(f"HTTP {resp.status}: {resp.url}")

        def on_console(msg, console=console) -> None:
            # A failed resource is judged by its URL above; every other console error counts.
            if msg.type == "error" and not msg.text.startswith("Failed to load resource"):
                console.append(msg.text)

        page.on("response", on_response)
        page.on("console", on_console)
        page.on("pageerror", lambda exc, console=console: console.append(f"page error: {exc}"))
        page.on("requestfailed", lambda req, failed=failed: failed.append(f"request failed: {req.url}"))
        page.goto(f"{server}/{path}")
        _ready(page, heading)
        assert page.get_by_role("heading", name=heading).count() >= 1, path
        assert page.locator('[data-testid="stException"], [data-testid="stAlertContentError"]').count() == 0, path
        assert probes.get("health") == 200 and probes.get("host-config") == 200, (path, probes)
        assert not failed, (path, failed)
        assert not console, (path, console)
        page.close()
