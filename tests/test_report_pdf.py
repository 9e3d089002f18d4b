"""The PDF variant of the stakeholder report: Chromium's print of the HTML report, offline."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from core.cli import main

ROOT = Path(__file__).resolve().parents[1]
PAIRED_DEMO = ROOT / "assets" / "paired_demo"


@pytest.fixture(scope="module")
def audit_dir(tmp_path_factory):
    from core.tabular.audit import run_audit, write_audit

    folder = tmp_path_factory.mktemp("audit") / "bc"
    folder.mkdir()
    write_audit(run_audit("breast_cancer", model="logreg", seed=0), folder)
    return folder


@pytest.fixture(autouse=True)
def _no_default_db(tmp_path, monkeypatch):
    monkeypatch.setenv("AUDIT_REVIEWS_DB", str(tmp_path / "absent.sqlite3"))


def _pages(pdf: bytes) -> int:
    return len(re.findall(rb"/Type\s*/Page(?![s\w])", pdf))


@pytest.mark.browser
def test_pdf_is_printed_by_chromium_beside_the_html(audit_dir, tmp_path, capsys):
    html, pdf = tmp_path / "report.html", tmp_path / "report.pdf"
    code = main(["report", str(audit_dir), "--out", str(html), "--pdf", str(pdf), "--paired", str(PAIRED_DEMO)])
    err = capsys.readouterr().err
    assert code == 0, err
    data = pdf.read_bytes()
    assert data.startswith(b"%PDF-") and data.rstrip().endswith(b"%%EOF")
    assert b"Skia/PDF" in data  # Chromium's own PDF writer, not a hand-written file
    # Eleven figures, tables and text do not fit on fewer than four A4 pages.
    assert _pages(data) >= 4
    title = re.search(r"<title>(.*?)</title>", html.read_text(encoding="utf-8")).group(1)
    assert f"/Title ({title[:20]}".encode() in data
    assert f"wrote {pdf}" in err and f"wrote {html}" in err
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary file left


@pytest.mark.browser
def test_pdf_alone_writes_no_html(audit_dir, tmp_path, capsys):
    pdf = tmp_path / "only.pdf"
    assert main(["report", str(audit_dir), "--pdf", str(pdf)]) == 0, capsys.readouterr().err
    assert pdf.read_bytes().startswith(b"%PDF-")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["only.pdf"]


def test_missing_chromium_is_one_line_and_writes_nothing(audit_dir, tmp_path, capsys):
    out, pdf = tmp_path / "r.html", tmp_path / "r.pdf"
    code = main(
        ["report", str(audit_dir), "--out", str(out), "--pdf", str(pdf), "--chromium", str(tmp_path / "no-chromium")]
    )
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and "--chromium" in err and "not an executable file" in err
    assert not out.exists() and not pdf.exists()


def test_no_browser_anywhere_says_how_to_get_one(monkeypatch):
    from core import report_pdf

    monkeypatch.setattr(report_pdf, "DEFAULT_CHROMIUM", "/nonexistent/chromium")
    monkeypatch.setattr(report_pdf.shutil, "which", lambda name: None)
    with pytest.raises(report_pdf.PdfUnavailableError, match=r"apt-get install chromium.*--chromium PATH"):
        report_pdf.find_chromium()


def test_missing_playwright_is_a_clear_error(monkeypatch):
    from core.report_pdf import PdfUnavailableError, html_to_pdf

    monkeypatch.setitem(sys.modules, "playwright", None)  # import playwright -> ModuleNotFoundError
    monkeypatch.setitem(sys.modules, "playwright.sync_api", None)
    with pytest.raises(PdfUnavailableError, match=r"pip install playwright"):
        html_to_pdf("<html></html>")


def test_report_needs_an_output(audit_dir, capsys):
    assert main(["report", str(audit_dir)]) == 2
    assert "give --out report.html, --pdf report.pdf or both" in capsys.readouterr().err
