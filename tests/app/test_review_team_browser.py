"""Real browser, real sign-in: a review team against a local OpenID Connect provider.

``oidc-provider-mock`` runs on 127.0.0.1 on a free port with four predefined users; the
dashboard is started as ``reliability-audit dashboard --team ... --secrets ...`` would start it
(:func:`core.cli.dashboard.streamlit_command`), from a folder without ``.streamlit/``, with a
``secrets.toml`` whose ``[auth]`` points at the provider. In Chromium: a signed-out visitor of a
deep link sees only the sign-in page; the admin plans a double review; two reviewers decide the
same five cases (one disagreement), each blind to the other until they have decided; the admin
sees the agreement and adjudicates the disagreement; a viewer finds no decision control. The
store then holds exactly those entries, with the signed-in addresses.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from core.reviews import ReviewStore, agreement

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
from browser_kit import (  # noqa: E402
    ServerStartError,
    free_port,
    settle,
    stop_server,
    team_dashboard,
)

pytestmark = pytest.mark.browser
TIMEOUT_MS = 150_000
USERS = {
    "ana@example.org": ("Ana Admin", "admin"),
    "bo@example.org": ("Bo Reviewer", "reviewer"),
    "cy@example.org": ("Cy Reviewer", "reviewer"),
    "dee@example.org": ("Dee Viewer", "viewer"),
}
BO = ["acceptable", "acceptable", "confirmed_brittle", "acceptable", "needs_reacquisition"]
CY = ["acceptable", "acceptable", "confirmed_brittle", "confirmed_brittle", "needs_reacquisition"]
LABEL = {"confirmed_brittle": "Confirmed brittle", "acceptable": "Acceptable", "needs_reacquisition": "Needs evidence"}


@pytest.fixture(scope="module")
def provider(tmp_path_factory):
    """oidc-provider-mock on 127.0.0.1:<free port> with the four users; yields its base URL."""
    port = free_port()
    claims = [json.dumps({"sub": email, "email": email, "name": name}) for email, (name, _) in USERS.items()]
    log = open(tmp_path_factory.mktemp("oidc") / "provider.log", "w+")
    proc = subprocess.Popen(
        [sys.executable, "-m", "oidc_provider_mock", "--host", "127.0.0.1", "--port", str(port)]
        + [arg for c in claims for arg in ("--user-claims", c)],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            with urllib.request.urlopen(f"{url}/.well-known/openid-configuration", timeout=2) as resp:
                if resp.status == 200:
                    break
        except OSError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            log.seek(0)
            stop_server(proc)
            pytest.fail(f"the OIDC provider did not start:\n{log.read()[-2000:]}")
        time.sleep(0.2)
    yield url
    stop_server(proc)
    log.close()


@pytest.fixture(scope="module")
def team_server(provider, tmp_path_factory):
    """The dashboard with sign-in and a team file; yields (url, review database)."""
    folder = tmp_path_factory.mktemp("team_server")
    team = 'default_role = "none"\n[members]\n' + "".join(f'"{e}" = "{r}"\n' for e, (_, r) in USERS.items())
    try:
        with team_dashboard(folder, provider, team) as url:
            yield url, folder / "reviews.sqlite3"
    except ServerStartError as exc:
        pytest.fail(str(exc))


def _sign_in(browser, url: str, email: str):
    """A fresh browser context (its own cookies) signed in as ``email``; returns its page."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    page.goto(f"{url}/")
    page.get_by_role("button", name="Sign in").click(timeout=TIMEOUT_MS)
    page.get_by_role("button", name=email).click(timeout=60_000)  # the provider's predefined user
    page.get_by_text(f"Signed in as {USERS[email][0]}").wait_for(timeout=TIMEOUT_MS)
    settle(page, timeout_ms=TIMEOUT_MS)
    return page


def _triage(page, url: str) -> None:
    page.goto(f"{url}/triage")
    page.get_by_role("heading", name="Triage queue").first.wait_for(timeout=TIMEOUT_MS)
    settle(page, timeout_ms=TIMEOUT_MS)
    _panel(page).wait_for(timeout=TIMEOUT_MS)


def _panel(page):
    return page.locator('[data-testid="stMarkdownContainer"]').filter(has_text="Alt+1/2/3 pick a decision").first


def _case(page) -> str:
    return re.search(r"Sample (\d+) — Alt", _panel(page).inner_text()).group(1)


def _history_count(page) -> int:
    text = page.locator('[data-testid="stMarkdownContainer"]').filter(has_text="History of sample").first.inner_text()
    return int(re.search(r"\((\d+) entries", text).group(1))


def _decide_five(page, decisions: list[str]) -> list[str]:
    cases = []
    for decision in decisions:
        cases.append(_case(page))
        page.locator('[data-testid="stRadio"] label').filter(has_text=LABEL[decision]).first.click()
        settle(page, timeout_ms=TIMEOUT_MS)
        page.get_by_role("button", name="Save & next (Alt+S)").click()
        settle(page, timeout_ms=TIMEOUT_MS)
        page.get_by_text(f"Saved: sample {cases[-1]}").first.wait_for(timeout=TIMEOUT_MS)
    return cases


def test_a_review_team_signs_in_double_reviews_and_adjudicates(team_server, browser):
    url, db = team_server
    # A signed-out visitor of a deep link: the sign-in page and nothing else.
    visitor = browser.new_context().new_page()
    visitor.goto(f"{url}/triage")
    visitor.get_by_role("button", name="Sign in").wait_for(timeout=TIMEOUT_MS)
    settle(visitor, timeout_ms=TIMEOUT_MS)
    body = visitor.locator("body").inner_text()
    for absent in ("Triage queue", "Audit selection", "Review database", "Raw data", "Overview", "Page not found"):
        assert absent not in body, absent
    assert visitor.locator('[data-testid="stDataFrame"], [data-testid="stSidebarNav"], .js-plotly-plot').count() == 0
    visitor.context.close()

    # The admin plans a double review of the queue (round-robin over the two reviewers).
    ana = _sign_in(browser, url, "ana@example.org")
    _triage(ana, url)
    ana.get_by_text("Review plan — one reviewer per case").first.click()
    ana.locator(".st-key-review_plan_per_case input").fill("2")
    ana.keyboard.press("Enter")
    settle(ana, timeout_ms=TIMEOUT_MS)
    ana.get_by_role("button", name=re.compile(r"Apply the plan to the \d+ queued cases")).click()
    settle(ana, timeout_ms=TIMEOUT_MS)
    ana.get_by_text("Plan saved: 2 reviewers per case, blind").first.wait_for(timeout=TIMEOUT_MS)

    # Two reviewers decide the same five cases; cy is blind to bo's decisions until deciding.
    bo = _sign_in(browser, url, "bo@example.org")
    _triage(bo, url)
    assert bo.locator(".st-key-review_reviewer").count() == 0  # no typed name with sign-in
    bo_cases = _decide_five(bo, BO)
    cy = _sign_in(browser, url, "cy@example.org")
    _triage(cy, url)
    assert _case(cy) == bo_cases[0] and _history_count(cy) == 0  # bo's decision is not shown to cy
    cy_cases = _decide_five(cy, CY)
    assert cy_cases == bo_cases
    for _ in range(2):  # from the sixth case (Save & next moved on) back to the fourth
        cy.get_by_role("button", name="Previous (Alt+P)").click()
        settle(cy, timeout_ms=TIMEOUT_MS)
    assert _case(cy) == cy_cases[3] and _history_count(cy) == 2  # after deciding, both are visible

    # The admin sees the agreement and adjudicates the one disagreement.
    ana.reload()
    _triage(ana, url)
    ana.get_by_text("Adjudication queue — 1 case(s) whose reviewers disagree").wait_for(timeout=TIMEOUT_MS)
    assert ana.get_by_text("Fleiss' kappa (all reviewers)").count() == 1
    for _ in range(3):  # to the fourth case, the disagreement
        ana.get_by_role("button", name="Next (Alt+N)").click()
        settle(ana, timeout_ms=TIMEOUT_MS)
    assert _case(ana) == bo_cases[3]
    ana.get_by_text(f"Final decision on sample {bo_cases[3]}").wait_for(timeout=TIMEOUT_MS)
    ana.locator(".st-key-adjudicate_decision").click()
    ana.get_by_role("option", name="Needs evidence re-acquisition").click()
    settle(ana, timeout_ms=TIMEOUT_MS)
    ana.get_by_role("button", name="Adjudicate").click()
    settle(ana, timeout_ms=TIMEOUT_MS)
    ana.get_by_text(f"Adjudicated sample {bo_cases[3]}").wait_for(timeout=TIMEOUT_MS)
    ana.get_by_text("Adjudication queue — 0 case(s)").wait_for(timeout=TIMEOUT_MS)

    # A viewer reads the queue but finds no decision control.
    dee = _sign_in(browser, url, "dee@example.org")
    _triage(dee, url)
    dee.get_by_text("you can read the queue").wait_for(timeout=TIMEOUT_MS)
    for label in ("Save decision", "Save & next (Alt+S)", "Adjudicate"):
        assert dee.get_by_role("button", name=label).count() == 0, label
    assert dee.locator(".st-key-review_decision").count() == 0
    assert dee.get_by_role("button", name=re.compile("Retract")).count() == 0

    # The store holds exactly that, under the signed-in addresses.
    history = ReviewStore(db).export()
    fingerprint = history["audit_fingerprint"].iloc[0]
    reviews = history[history["kind"] == "review"]
    assert reviews[["sample_id", "reviewer_email", "decision"]].values.tolist() == [
        [c, "bo@example.org", d] for c, d in zip(bo_cases, BO)
    ] + [[c, "cy@example.org", d] for c, d in zip(cy_cases, CY)]
    final = history[history["kind"] == "adjudication"]
    assert final[["sample_id", "reviewer_email", "decision"]].values.tolist() == [
        [bo_cases[3], "ana@example.org", "needs_reacquisition"]
    ]
    plan = ReviewStore(db).current_plan(fingerprint)
    assert (plan.reviewers_per_case, plan.assigned, plan.reviewers) == (2, True, ("bo@example.org", "cy@example.org"))
    result = agreement(ReviewStore(db).ratings(fingerprint))
    assert (result.multi_rated, result.disagreements) == (5, 1)
    assert ReviewStore(db).refusals().empty
