"""Full-page screenshots of every dashboard page at 1400 px and 1000 px width.

``python3 scripts/screenshots.py [--out docs/screenshots] [--widths 1400 1000] [--url URL]``

Starts its own headless dashboard server on a free localhost port (with a throw-away review
database, so no reviewer's decisions appear), opens it in Debian's Chromium through
Playwright, visits every page from the sidebar navigation, waits until the script run has
finished and the charts are drawn, and writes ``<page>_<width>.png``. With ``--url`` it uses a
server that is already running instead. Exits 2 with one line on stderr when Chromium or the
server is missing; exits 1 if a page shows an exception or an error box (the screenshot is
still written, so the broken page can be looked at).
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from browser_kit import CHROMIUM, dashboard_server, healthy, launch_chromium, settle  # noqa: E402
from browser_kit import ready as _ready  # noqa: E402

# A cold start computes the default audit; the comparison page trains further models.
RUN_TIMEOUT_MS = 240_000
#: (url path, page heading) of every page, in navigation order.
PAGES = (
    ("", "Overview: data & protocol"),
    ("explorer", "Certificate explorer"),
    ("triage", "Triage queue"),
    ("comparison", "Model comparison"),
    ("calibration", "Calibration"),
    ("paired_bounds", "Paired bounds"),
    ("recapture", "Recapture queue"),
)
# Longer pages are cut here: a 30,000 px PNG helps nobody and Chromium caps textures anyway.
MAX_HEIGHT = 12_000


def ready(page, heading: str) -> None:
    """Wait for the page's heading, the end of its script run and its first chart."""
    _ready(page, heading, timeout_ms=RUN_TIMEOUT_MS)
    page.wait_for_timeout(500)  # plotly's resize to the final column width


def full_page_png(page, path: Path, *, width: int, height: int = 900) -> None:
    """Whole page: Streamlit scrolls inside its main container, so grow the viewport to it."""
    total = page.evaluate("() => document.querySelector('[data-testid=\"stMain\"]').scrollHeight")
    page.set_viewport_size({"width": width, "height": min(MAX_HEIGHT, max(height, int(total)))})
    settle(page, timeout_ms=RUN_TIMEOUT_MS)
    page.wait_for_timeout(500)
    page.screenshot(path=str(path), full_page=True)
    page.set_viewport_size({"width": width, "height": height})


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")


def take(url: str, out: Path, widths: list[int]) -> list[str]:
    """Screenshot every page at every width; returns the problems seen (empty = all clean)."""
    from playwright.sync_api import sync_playwright

    out.mkdir(parents=True, exist_ok=True)
    problems: list[str] = []
    with sync_playwright() as pw:
        browser = launch_chromium(pw)
        try:
            for width in widths:
                page = browser.new_page(viewport={"width": width, "height": 900})
                for path, heading in PAGES:
                    # Opened by URL, not by a click: below about 1050 px the sidebar overlays the
                    # page, and each page should show its own defaults anyway.
                    page.goto(f"{url}/{path}")
                    ready(page, heading)
                    path = out / f"{slug(heading)}_{width}.png"
                    full_page_png(page, path, width=width)
                    for testid in ("stException", "stAlertContentError"):
                        boxes = page.locator(f'[data-testid="{testid}"]')
                        if boxes.count():
                            problems.append(f"{heading} at {width} px: {boxes.first.inner_text()[:300]}")
                    print(f"wrote {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}", file=sys.stderr)
                page.close()
        finally:
            browser.close()
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=str(ROOT / "docs" / "screenshots"), help="folder of the PNG files")
    parser.add_argument("--widths", type=int, nargs="+", default=[1400, 1000], help="viewport widths in px")
    parser.add_argument("--url", help="use this running dashboard instead of starting one")
    args = parser.parse_args(argv)
    try:
        from playwright.sync_api import Error as PlaywrightError
    except ModuleNotFoundError:
        print("error: the screenshots need Playwright (pip install playwright).", file=sys.stderr)
        return 2
    if not Path(CHROMIUM).exists():
        print(f"error: Debian's chromium is required at {CHROMIUM} (apt-get install chromium).", file=sys.stderr)
        return 2
    if any(w < 320 or w > 4000 for w in args.widths):
        print(f"error: --widths must be between 320 and 4000 px; got {args.widths}.", file=sys.stderr)
        return 2
    try:
        if args.url:
            if not healthy(args.url.rstrip("/")):
                print(f"error: no dashboard answers at {args.url}.", file=sys.stderr)
                return 2
            problems = take(args.url.rstrip("/"), Path(args.out), args.widths)
        else:
            with (
                tempfile.TemporaryDirectory(prefix="screenshots-") as tmp,
                dashboard_server(tmp, timeout_s=90, tail_chars=2000) as url,
            ):
                problems = take(url, Path(args.out), args.widths)
    except (RuntimeError, TimeoutError, PlaywrightError) as exc:
        print(f"error: {str(exc).splitlines()[0]}", file=sys.stderr)
        return 2
    for problem in problems:
        print(f"problem: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
