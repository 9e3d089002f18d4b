"""Real browser: upload a ``.skops`` model and a CSV in the sidebar, reach the certificate explorer."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import skops.io as sio
from test_browser import ARTIFACTS, _ready, _settle

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tabular"))
from own_models import default_tables, raw_logreg  # noqa: E402

pytestmark = pytest.mark.browser


def _pick(page, box, option: str, attempts: int = 4) -> None:
    """Open a select box and click ``option``; a rerun in flight can close the list, so retry."""
    for attempt in range(attempts):
        _settle(page)
        box.click()
        target = page.get_by_role("option", name=option, exact=True).first
        try:
            target.wait_for(timeout=10_000)
            target.click()
            return
        except Exception:
            if attempt == attempts - 1:
                raise
            page.keyboard.press("Escape")


def test_upload_a_skops_model_and_a_csv_then_open_the_explorer(server, browser, tmp_path):  # noqa: F811
    train, test = default_tables(n_train=1500, n_test=200)
    sio.dump(raw_logreg(train), tmp_path / "logreg.skops")
    test.to_csv(tmp_path / "test.csv", index=False)
    train.to_csv(tmp_path / "train.csv", index=False)

    page = browser.new_page(viewport={"width": 1440, "height": 1000})
    problems: list[str] = []
    page.on("pageerror", lambda exc: problems.append(f"page error: {exc}"))
    page.goto(server)
    _ready(page, "Overview: data & protocol")
    sidebar = page.locator('[data-testid="stSidebar"]')
    sidebar.get_by_text("Audit a fitted model (.skops / .onnx)").click()
    _settle(page)  # the form is drawn once its expander is opened (a rerun)
    uploaders = sidebar.locator('[data-testid="stFileUploader"]')
    uploaders.filter(has_text="Model").first.locator('input[type="file"]').set_input_files(tmp_path / "logreg.skops")
    _settle(page)
    uploaders.filter(has_text="Test table").first.locator('input[type="file"]').set_input_files(tmp_path / "test.csv")
    _settle(page)
    uploaders.filter(has_text="Training table").first.locator('input[type="file"]').set_input_files(
        tmp_path / "train.csv"
    )
    _settle(page)
    _pick(page, sidebar.get_by_role("combobox", name="Target column").first, "default")
    _settle(page)
    sidebar.get_by_role("button", name="Audit my model").click()
    _settle(page)
    page.locator('[data-testid="stSidebarNav"] a', has_text="Certificate explorer").first.click()
    _ready(page, "Certificate explorer")
    main = page.locator('[data-testid="stMain"]')
    assert main.get_by_text("your model logreg.skops").count() > 0
    assert page.locator('[data-testid="stAlertContentError"], [data-testid="stException"]').count() == 0
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "own_model_explorer.png"), full_page=True)
    assert not problems, problems
    page.close()
