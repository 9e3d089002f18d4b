"""Real browser: a saved audit (``--audit DIR``) opens from its tables, the browser loads plotly's
bundle while the Overview is read, and the explorer's live panels fill in once the model is read."""

from __future__ import annotations

import pytest
from browser_kit import ServerStartError, dashboard_server
from test_browser import _ready

from core.tabular.audit import run_audit
from ui.preload import plotly_bundle, vega_bundle

pytestmark = pytest.mark.browser
PILLS = '[data-testid="stButtonGroup"]'


@pytest.fixture(scope="module")
def saved_server(tmp_path_factory):
    folder = run_audit("credit_data", model="logreg", seed=5).save(tmp_path_factory.mktemp("audits") / "credit_logreg")
    try:
        with dashboard_server(tmp_path_factory.mktemp("server"), app_args=["--audit", str(folder)]) as url:
            yield url
    except ServerStartError as exc:
        pytest.fail(f"streamlit server did not start: {exc}")


def test_a_saved_audit_fills_its_live_panels_in_by_itself(saved_server, browser):
    page = browser.new_page(viewport={"width": 1440, "height": 1000})
    problems: list[str] = []
    page.on("pageerror", lambda exc: problems.append(f"page error: {exc}"))
    page.goto(saved_server)
    _ready(page, "Overview: data & protocol")
    page.get_by_role("heading", name="Saved audit: credit_logreg").first.wait_for()
    # Loaded while the Overview is read, before any plotly chart is asked for.
    bundle = plotly_bundle()
    page.wait_for_function(
        f"() => performance.getEntriesByType('resource').some(e => e.name.endsWith('/{bundle}'))", timeout=60_000
    )
    assert page.locator(".js-plotly-plot").count() == 0
    # The Vega-Lite bundle is imported from app.py's first element, which takes no space.
    assert page.evaluate(
        f"() => performance.getEntriesByType('resource').some(e => e.name.endsWith('/{vega_bundle()}'))"
    )
    hidden = page.locator('[data-testid="stLayoutWrapper"]:has(> .st-key-chart_library_preload)')
    assert hidden.count() == 1 and hidden.is_hidden()
    page.locator('[data-testid="stSidebarNav"] a', has_text="Certificate explorer").first.click()
    page.get_by_role("heading", name="Certificate explorer").first.wait_for(timeout=150_000)
    # The polled progress ends in a rerun of the page: the what-if toggles appear without a click.
    page.locator(PILLS).filter(has_text="Groups set to the baseline").first.wait_for(timeout=150_000)
    _ready(page, "Certificate explorer")
    assert page.get_by_text("being prepared in the background").count() == 0
    assert page.locator('[data-testid="stMetricLabel"]').filter(has_text="Exact minimum").count() == 1
    assert page.locator('[data-testid="stAlertContentError"], [data-testid="stException"]').count() == 0
    assert not problems, problems
    page.close()
