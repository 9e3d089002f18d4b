"""The Overview's *Download report* button: present on the first screen, and served by a real
dashboard server (the report itself is tested in ``tests/test_report.py``)."""

from __future__ import annotations

import pytest
from browser_kit import ChromiumMissingError, ServerStartError, dashboard_server, launch_chromium

# The report's sections (as in tests/test_report.py), each an ``id`` of the downloaded HTML.
SECTIONS = ("protocol", "models", "fds", "triage", "examples", "paired")


def test_overview_has_the_download_report_button(app):
    assert not app.exception, [e.value for e in app.exception]
    buttons = [b for b in app.get("download_button") if b.label == "Download report"]
    assert len(buttons) == 1


@pytest.mark.browser
def test_download_report_button_serves_the_report(tmp_path):
    """The button's deferred builder runs on Streamlit's download thread in a real server."""
    from playwright.sync_api import sync_playwright

    try:
        with dashboard_server(tmp_path) as url, sync_playwright() as pw:
            browser = launch_chromium(pw)
            try:
                page = browser.new_page(accept_downloads=True, viewport={"width": 1400, "height": 900})
                page.goto(f"{url}/")
                button = page.get_by_role("button", name="Download report")
                button.wait_for(timeout=180_000)
                with page.expect_download(timeout=180_000) as info:
                    button.click()
                download = info.value
                assert download.suggested_filename == "report_credit_data_hist_gb_seed0.html"
                download.save_as(tmp_path / "report.html")
            finally:
                browser.close()
    except (ServerStartError, ChromiumMissingError) as exc:
        pytest.fail(str(exc))
    text = (tmp_path / "report.html").read_text(encoding="utf-8")
    for section in SECTIONS:
        assert f"id='{section}'" in text, section
    assert "Fragility audit: credit_data / hist_gb / seed 0" in text
    assert "Recapture queue" in text  # the shipped demo pool
    # The sidebar opened (created) the fresh database; it holds no decision of this audit.
    assert "none is in force for this audit's fingerprint" in text
