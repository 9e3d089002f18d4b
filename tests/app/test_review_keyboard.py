"""Real browser: a reviewer walks five cases of the triage queue with the keyboard only.

Alt+1/2/3 pick a decision and Alt+S saves and opens the next unreviewed case (the
bindings of :mod:`ui.review`, :mod:`ui.shortcuts`); the review database then holds the five
decisions, in the order they were made, for the five cases that were shown.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from test_browser import ARTIFACTS, _ready, _settle

from core.reviews import DECISION_LABELS, DECISIONS, ReviewStore

pytestmark = pytest.mark.browser
_CASE = re.compile(r"Sample (\d+) — Alt\+1/2/3")


def _case(page) -> str:
    text = page.locator('[data-testid="stMarkdownContainer"]').filter(has_text="Alt+1/2/3 pick a decision").first
    found = _CASE.search(text.inner_text())
    assert found, text.inner_text()
    return found.group(1)


def _database(page) -> Path:
    caption = page.locator('[data-testid="stSidebar"] code').filter(has_text=".sqlite3").first.inner_text()
    return Path(caption.strip())


def test_five_cases_with_the_keyboard_only(server, browser):  # noqa: F811
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    problems: list[str] = []
    page.on(
        "console",
        lambda msg: (
            problems.append(msg.text)
            if msg.type == "error" and not msg.text.startswith("Failed to load resource")
            else None
        ),
    )
    page.on("pageerror", lambda exc: problems.append(f"page error: {exc}"))
    page.goto(f"{server}/triage")
    _ready(page, "Triage queue")
    db = _database(page)
    before = len(ReviewStore(db).export())

    # The name is typed; Enter only commits it (it must not submit a decision).
    page.locator(".st-key-review_reviewer input").first.focus()
    page.keyboard.type("kim")
    page.keyboard.press("Enter")
    _settle(page)
    assert len(ReviewStore(db).export()) == before

    # The bindings are installed by a component's script once the page has rendered.
    page.wait_for_function(
        "() => ((window.__auditShortcuts || {})['review_save_next'] || [])[0] === 'alt+s'", timeout=30_000
    )
    shown, pressed = [], []
    for i in range(5):
        shown.append(_case(page))
        decision = DECISIONS[i % len(DECISIONS)]
        page.keyboard.press(f"Alt+{DECISIONS.index(decision) + 1}")
        radio = page.locator('[data-testid="stRadio"]').filter(has_text="Decision")
        radio.locator("label").filter(has_text=DECISION_LABELS[decision]).locator("input:checked").wait_for(
            state="attached", timeout=60_000
        )
        _settle(page)
        page.keyboard.press("Alt+S")
        page.locator('[data-testid="stAlert"]').filter(has_text=f"Saved: sample {shown[-1]} ").first.wait_for(
            timeout=60_000
        )
        _settle(page)
        pressed.append(decision)
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "triage_keyboard_review.png"), full_page=True)

    stored = ReviewStore(db).export().iloc[before:]
    assert stored["sample_id"].tolist() == shown
    assert stored["decision"].tolist() == pressed
    assert (stored["reviewer"] == "kim").all()
    assert stored["review_id"].is_monotonic_increasing and len(set(shown)) == 5
    assert _case(page) not in shown  # moved on to a sixth, unreviewed case
    assert page.locator('[data-testid="stException"], [data-testid="stAlertContentError"]').count() == 0
    assert not problems, problems
    page.close()
