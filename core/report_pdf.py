"""The stakeholder report as PDF: the self-contained HTML report printed by Chromium.

No PDF is written by hand: the HTML of :func:`core.report.build_report` is opened in a
headless Chromium (through Playwright) with the network disabled, every Vega-Lite figure is
waited for, and Chromium's own print (``page.pdf``) produces the file, which is then
published atomically (:mod:`core.atomic`). Without Playwright or Chromium,
:class:`PdfUnavailableError` says which one is missing and how to get it.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from pathlib import Path

from core.atomic import atomic_write_bytes, check_output_file

__all__ = ["DEFAULT_CHROMIUM", "PdfUnavailableError", "find_chromium", "html_to_pdf", "write_pdf"]

#: Debian's Chromium, which the browser tests use too.
DEFAULT_CHROMIUM = "/usr/bin/chromium"
# Figures are drawn for this window (content 952 px after the body's padding); A4 less the
# margins is 718 CSS px, 1026 px at this print scale, so no figure is cut at the right edge.
_VIEWPORT = {"width": 1000, "height": 1400}
_SCALE = 0.7
_RENDER_TIMEOUT_MS = 60_000


class PdfUnavailableError(ValueError):
    """The PDF cannot be made here: Playwright or Chromium is missing (the HTML report still can)."""


def find_chromium(path: str | os.PathLike[str] | None = None) -> Path:
    """The Chromium executable to print with: ``path``, else ``/usr/bin/chromium``, else
    ``chromium`` / ``chromium-browser`` on ``PATH``.

    Raises
    ------
    PdfUnavailableError
        When none exists.
    """
    if path is not None:
        candidate = Path(path)
        if not (candidate.is_file() and os.access(candidate, os.X_OK)):
            raise PdfUnavailableError(f"--chromium {str(path)!r} is not an executable file.")
        return candidate
    for name in (DEFAULT_CHROMIUM, shutil.which("chromium"), shutil.which("chromium-browser")):
        if name and Path(name).is_file() and os.access(name, os.X_OK):
            return Path(name)
    raise PdfUnavailableError(
        f"a PDF needs Chromium, found neither at {DEFAULT_CHROMIUM} nor on PATH (Debian/Ubuntu: apt-get install "
        "chromium; or pass --chromium PATH). The HTML report (--out) needs no browser."
    )


def html_to_pdf(html: str, *, chromium: str | os.PathLike[str] | None = None) -> bytes:
    """Print the report HTML to PDF bytes with headless Chromium, offline.

    Every request other than the page itself is refused (the report is self-contained, so
    nothing is lost), the page's Vega-Lite figures are awaited (drawn as SVG), then Chromium prints A4 pages
    with the background colours kept.

    Raises
    ------
    PdfUnavailableError
        Playwright is not installed or Chromium is missing.
    RuntimeError
        The page logged an error or its figures did not render within 60 s.
    """
    try:
        from playwright.sync_api import Error as PlaywrightError
        from playwright.sync_api import sync_playwright
    except ModuleNotFoundError:
        raise PdfUnavailableError(
            "a PDF needs the playwright package (pip install playwright) and Chromium; the "
            "HTML report (--out) needs neither."
        ) from None
    executable = find_chromium(chromium)
    n_figures = len(re.findall(r'class="vega-fig"', html))
    # A file URL (not set_content): the page's origin is then file://, which the route lets through.
    with tempfile.TemporaryDirectory(prefix="report-pdf-") as tmp:
        page_file = Path(tmp) / "report.html"
        page_file.write_text(html, encoding="utf-8")
        errors: list[str] = []
        with sync_playwright() as pw:
            try:
                browser = pw.chromium.launch(executable_path=str(executable), args=["--no-sandbox", "--disable-gpu"])
            except PlaywrightError as exc:
                raise PdfUnavailableError(
                    f"Chromium at {executable} did not start: {str(exc).splitlines()[0]}"
                ) from None
            try:
                context = browser.new_context(offline=True, viewport=_VIEWPORT)
                context.route("**/*", lambda r: r.continue_() if r.request.url.startswith("file:") else r.abort())
                page = context.new_page()
                page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
                page.on("pageerror", lambda e: errors.append(str(e)))
                page.goto(page_file.as_uri(), wait_until="load")
                try:
                    page.wait_for_function(
                        f"document.querySelectorAll('.vega-fig svg.marks').length >= {n_figures}",
                        timeout=_RENDER_TIMEOUT_MS,
                    )
                except PlaywrightError:
                    raise RuntimeError(
                        f"the report's {n_figures} figures did not render within "
                        f"{_RENDER_TIMEOUT_MS // 1000} s; no PDF was written."
                    ) from None
                if errors:
                    raise RuntimeError(f"the report page logged an error while rendering: {errors[0]}")
                page.emulate_media(media="print")
                return page.pdf(
                    format="A4",
                    print_background=True,
                    scale=_SCALE,
                    margin={"top": "12mm", "bottom": "12mm", "left": "10mm", "right": "10mm"},
                )
            finally:
                browser.close()


def write_pdf(html: str, out: str | os.PathLike[str], *, chromium: str | os.PathLike[str] | None = None) -> Path:
    """Print ``html`` to the PDF file ``out`` (replaced atomically; untouched on any failure)."""
    path = check_output_file(out, flag="--pdf")
    data = html_to_pdf(html, chromium=chromium)
    atomic_write_bytes(path, data)
    return path
