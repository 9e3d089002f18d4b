"""Real browser, real sign-in: a viewer finds no upload, trust, start-audit or probe control.

The OpenID provider and the four users are those of ``test_review_team_browser.py`` (its
``provider`` fixture, its sign-in helper); the dashboard is started by the ``dashboard``
command's line with a team file whose ``[permissions]`` grants uploads to reviewers (so the
file's new table goes through the command's check and the server's). In Chromium, the viewer
opens the Overview (sidebar and Data tab), Paired bounds and the Recapture queue and finds no
file uploader, no own-model form, no trust button and no probe run; the admin, on the same
server, finds each of them (the check is not vacuous); the reviewer finds the uploads the file
grants them, and no probe run (``run`` stays an admin's).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
from browser_kit import ServerStartError, ready, settle, team_dashboard  # noqa: E402
from test_review_team_browser import TIMEOUT_MS, USERS, _sign_in, provider  # noqa: E402, F401

pytestmark = pytest.mark.browser
UPLOADER = '[data-testid="stFileUploader"], [data-testid="stFileUploaderDropzone"], input[type="file"]'
#: Texts of the controls a viewer must not find (expanders, buttons, the records choice).
CONTROLS = (
    "Audit a fitted model",
    "Upload your own table",
    "Upload paired records",
    "Probe your own ONNX model",
    "Your per-probe outputs",
    "Run the probes",
    "Audit my model",
    "and retry",  # "Trust this type and retry"
)


@pytest.fixture(scope="module")
def permissions_server(provider, tmp_path_factory):  # noqa: F811 - the imported fixture
    """The dashboard with sign-in and a team file with a [permissions] table; yields its URL."""
    team = (
        'default_role = "none"\n[members]\n'
        + "".join(f'"{e}" = "{r}"\n' for e, (_, r) in USERS.items())
        + '\n[permissions]\nupload = "reviewer"\n'
    )
    try:
        with team_dashboard(tmp_path_factory.mktemp("permissions_server"), provider, team) as url:
            yield url
    except ServerStartError as exc:
        pytest.fail(str(exc))


def _open(page, url: str, path: str, heading: str) -> None:
    """Open a page and wait until it is drawn down to its first chart (below every upload control)."""
    page.goto(f"{url}/{path}")
    ready(page, heading, timeout_ms=TIMEOUT_MS)


def _found(page) -> list[str]:
    """The upload / trust / run controls on the page (main area and sidebar)."""
    # By locator, not by the body's inner text (which left the main area out in Chromium here).
    found = [c for c in CONTROLS if page.get_by_text(c, exact=False).count()]
    if page.locator(UPLOADER).count():
        found.append(f"{page.locator(UPLOADER).count()} file uploader element(s)")
    if page.get_by_role("button", name="Trust", exact=False).count():
        found.append("a Trust button")
    return found


def _tour(page, url: str) -> dict[str, list[str]]:
    """What each place that offers uploads shows: Overview (sidebar, Data tab), Paired bounds, Recapture."""
    shown = {}
    _open(page, url, "", "Overview: data & protocol")
    page.get_by_text("Your model", exact=True).first.wait_for(timeout=TIMEOUT_MS)  # the sidebar's section
    shown["overview + sidebar"] = _found(page)
    page.get_by_role("tab", name="Data").click()
    page.get_by_role("heading", name="Data: credit_data").first.wait_for(timeout=TIMEOUT_MS)
    settle(page, timeout_ms=TIMEOUT_MS)
    shown["overview Data tab"] = _found(page)
    _open(page, url, "paired_bounds", "Paired bounds")
    shown["paired bounds"] = _found(page)
    _open(page, url, "recapture", "Recapture queue")
    shown["recapture"] = _found(page)
    return shown


def test_viewer_has_no_upload_or_trust_control_in_chromium(permissions_server, browser):
    url = permissions_server
    dee = _sign_in(browser, url, "dee@example.org")
    shown = _tour(dee, url)
    assert {place: found for place, found in shown.items() if found} == {}
    assert dee.get_by_text("viewer — reads only", exact=False).count() == 1
    # The Recapture page says why there is no upload (the file grants uploads to reviewers).
    assert dee.get_by_text("uploading needs the reviewer role", exact=False).count() == 1
    dee.context.close()

    # The admin finds every control on the same pages: the viewer's tour would have seen them.
    ana = _sign_in(browser, url, "ana@example.org")
    shown = _tour(ana, url)
    assert "Audit a fitted model" in shown["overview + sidebar"]
    assert "Upload your own table" in shown["overview Data tab"]
    assert "Upload paired records" in shown["paired bounds"]
    assert {"Probe your own ONNX model", "Your per-probe outputs", "Run the probes"} <= set(shown["recapture"])
    assert any("file uploader" in f for f in shown["recapture"])
    ana.context.close()

    # The reviewer gets the uploads the team file's [permissions] grants them (upload), not
    # the probe run (run stays an admin's).
    bo = _sign_in(browser, url, "bo@example.org")
    shown = _tour(bo, url)
    assert "Upload your own table" in shown["overview Data tab"]
    assert "Your per-probe outputs" in shown["recapture"] and "Run the probes" not in shown["recapture"]
    bo.context.close()
