"""Real-browser test: a headless Chromium opens every page of a running dashboard server.

For every page it waits until the script run has finished and the charts are drawn, moves one
widget, waits again, saves a full-page screenshot under ``test-artifacts/`` and fails on any
console error, uncaught page error or Streamlit exception box.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from functools import partial
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
from browser_kit import ready, settle  # noqa: E402

ARTIFACTS = ROOT / "test-artifacts"
# Cold start computes the default audit; the comparison page trains further models.
RUN_TIMEOUT_MS = 150_000

pytestmark = pytest.mark.browser
_BASE_PATH_PROBE = re.compile(r"/explorer/_stcore/(health|host-config)$")
_settle = partial(settle, timeout_ms=RUN_TIMEOUT_MS)
_ready = partial(ready, timeout_ms=RUN_TIMEOUT_MS)


def _widget(page, testid: str, label: str):
    return page.locator(f'[data-testid="{testid}"]').filter(has_text=label).first


def _slider_right(page, label: str, presses: int = 3) -> None:
    thumb = _widget(page, "stSlider", label).get_by_role("slider")
    thumb.focus()
    for _ in range(presses):
        thumb.press("ArrowRight")


def _choose(page, label: str, steps: int = 1) -> None:
    """Pick the option ``steps`` below the current one with the keyboard (opens the list too)."""
    box = page.get_by_role("combobox", name=label).first
    box.click()
    for _ in range(steps):
        box.press("ArrowDown")
    page.get_by_role("option").first.wait_for(timeout=10_000)
    box.press("Enter")


def _interact_overview(page) -> None:
    # The Protocol and Data tabs are drawn once opened (a rerun each).
    page.get_by_role("tab", name="Protocol").click()
    page.get_by_role("button", name="Apply protocol").wait_for(timeout=RUN_TIMEOUT_MS)
    page.get_by_role("tab", name="Data").click()
    _choose(page, "Column to inspect", 3)


def _interact_explorer(page) -> None:
    # The what-if appears once the model is made (in the background, on the first visit).
    _widget(page, "stButtonGroup", "Groups set to the baseline").locator("button").first.click(timeout=RUN_TIMEOUT_MS)


def _interact_triage(page) -> None:
    _slider_right(page, "Review budget")


def _interact_comparison(page) -> None:
    _choose(page, "Sample shown under every model", 1)


def _interact_calibration(page) -> None:
    page.get_by_role("combobox", name="Methods shown").first.click()
    page.keyboard.press("Backspace")  # drops the last method from the selection
    page.keyboard.press("Escape")


def _interact_paired(page) -> None:
    _choose(page, "Condition", 2)


def _interact_recapture(page) -> None:
    _slider_right(page, "Re-test budget")


def _screenshot(page, path: Path) -> None:
    """Whole page: Streamlit scrolls inside its main container, so grow the viewport to it."""
    height = page.evaluate("() => document.querySelector('[data-testid=\"stMain\"]').scrollHeight")
    page.set_viewport_size({"width": 1440, "height": max(1000, int(height))})
    _settle(page)
    page.screenshot(path=str(path), full_page=True)
    page.set_viewport_size({"width": 1440, "height": 1000})


PAGES: list[tuple[str, str, Callable]] = [
    ("Overview: data & protocol", "Overview: data & protocol", _interact_overview),
    ("Certificate explorer", "Certificate explorer", _interact_explorer),
    ("Triage queue", "Triage queue", _interact_triage),
    ("Model comparison", "Model comparison", _interact_comparison),
    ("Calibration", "Calibration", _interact_calibration),
    ("Paired bounds", "Paired bounds", _interact_paired),
    ("Recapture queue", "Recapture queue", _interact_recapture),
]


def test_every_page_renders_and_reacts(server, browser):
    ARTIFACTS.mkdir(exist_ok=True)
    page = browser.new_page(viewport={"width": 1440, "height": 1000})
    problems: list[str] = []

    def on_console(msg) -> None:
        # A failed resource is reported with its URL by the two listeners below.
        if msg.type == "error" and not msg.text.startswith("Failed to load resource"):
            problems.append(f"console {msg.type}: {msg.text}")

    def on_response(resp) -> None:
        # Opened at /explorer, Streamlit's frontend first probes /explorer/_stcore/... for a base
        # path and falls back to /_stcore/... on the 404; that probe is not an app error.
        if resp.status >= 400 and not _BASE_PATH_PROBE.search(resp.url):
            problems.append(f"HTTP {resp.status}: {resp.url}")

    page.on("console", on_console)
    page.on("pageerror", lambda exc: problems.append(f"page error: {exc}"))
    page.on("response", on_response)
    page.on("requestfailed", lambda req: problems.append(f"request failed: {req.url} ({req.failure})"))
    # The first visit of a fresh server is a deep link: the view must still get app.py's state.
    page.goto(f"{server}/explorer")
    _ready(page, "Certificate explorer")
    assert page.locator('[data-testid="stAlertContentError"], [data-testid="stException"]').count() == 0
    for nav_title, heading, interact in PAGES:
        page.locator('[data-testid="stSidebarNav"] a', has_text=nav_title).first.click()
        _ready(page, heading)
        slug = re.sub(r"[^a-z0-9]+", "_", heading.lower()).strip("_")
        _screenshot(page, ARTIFACTS / f"{slug}.png")
        interact(page)
        _ready(page, heading)
        _screenshot(page, ARTIFACTS / f"{slug}_after.png")
        exceptions = page.locator('[data-testid="stException"]')
        assert exceptions.count() == 0, f"{heading}: {exceptions.first.inner_text()}"
        errors = page.locator('[data-testid="stAlertContentError"]')
        assert errors.count() == 0, f"{heading}: {errors.first.inner_text()}"
        assert not problems, f"{heading}: {problems}"
    page.close()
