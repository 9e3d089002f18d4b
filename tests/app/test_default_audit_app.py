"""AppTest: the app opens on the shipped default audit without heavy imports, and a new audit
runs in the background with its progress shown while the cached pages stay usable."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
APP, TIMEOUT = str(ROOT / "app.py"), 180
HEAVY = ("torch", "shap", "skops", "onnxruntime", "xgboost", "lightgbm", "catboost")
# Seconds of import each on the first screen (issue 12): imported only by the functions that
# compute (a fit, a metric, an image perturbation), never to show the shipped audit.
HEAVY_SUBMODULES = (
    "sklearn",
    "scipy.stats",
    "scipy.optimize",
    "scipy.spatial",
    "scipy.sparse",
    "scipy.ndimage",
    "scipy.special",
    "scipy.linalg",
)
BACKGROUND = "being computed in the background"


def _progress(at) -> list[str]:
    return [p.proto.text for p in at.get("progress")]


def _background_note(at) -> bool:
    return any(BACKGROUND in i.value for i in at.info)


def _wait_until_computed(at, *, timeout_s: float = 900.0) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        at.run()
        assert not at.exception
        if not _background_note(at):
            return
        assert time.monotonic() < deadline, "the background audit never finished"
        time.sleep(1.0)


def test_the_shipped_overview_imports_no_heavy_library(tmp_path):
    # A fresh interpreter: what opening the dashboard imports, not what earlier tests left loaded.
    script = f"""
import json, sys
from streamlit.testing.v1 import AppTest
at = AppTest.from_file({APP!r}, default_timeout={TIMEOUT})
at.run()
report = {{"exception": [e.value for e in at.exception], "error": [e.value for e in at.error],
          "captions": [c.value for c in at.caption], "progress": len(at.get("progress")),
          "charts": {{"vega_lite": len(at.get("vega_lite_chart")), "plotly": len(at.get("plotly_chart"))}}}}
at.session_state["overview_tab"] = "Data"  # as a click on the tab sets it
at.run()
report["data_tab"] = {{"exception": [e.value for e in at.exception], "error": [e.value for e in at.error],
                      "charts": {{"vega_lite": len(at.get("vega_lite_chart")), "plotly": len(at.get("plotly_chart"))}}}}
report["paired"] = sorted(m for m in sys.modules if m == "core.paired" or m.startswith("core.paired."))
report["heavy"] = sorted(m for m in sys.modules if m.split(".")[0] in {HEAVY!r}
                         or any(m == h or m.startswith(h + ".") for h in {HEAVY_SUBMODULES!r}))
print(json.dumps(report))
"""
    env = {**__import__("os").environ, "AUDIT_REVIEWS_DB": str(tmp_path / "r.sqlite3"), "AUDIT_FOREGROUND_WAIT_S": "0"}
    out = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600, check=True
    )
    report = json.loads(out.stdout.strip().splitlines()[-1])
    assert not report["exception"] and not report["error"], report
    assert any("Audit: **credit_data**" in c and "Histogram gradient boosting" in c for c in report["captions"])
    assert report["progress"] == 0, "the shipped audit is shown at once, nothing is computed"
    # Drawn without plotly.js (4.7 MB the browser compiles before any chart: ~3 s of a start): the
    # first screen's two charts, and the Data tab's column chart.
    assert report["charts"] == {"vega_lite": 2, "plotly": 0}, report["charts"]
    data_tab = report["data_tab"]
    assert not data_tab["exception"] and not data_tab["error"], data_tab
    assert data_tab["charts"] == {"vega_lite": 1, "plotly": 0}, data_tab
    assert report["paired"] == [], "the image pages' engine is imported by those pages only"
    assert report["heavy"] == [], report["heavy"]


def test_a_new_audit_runs_in_the_background_and_is_picked_up(monkeypatch, reviews_db):
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("AUDIT_FOREGROUND_WAIT_S", "0")
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.run()
    assert not at.exception and not _progress(at) and not _background_note(at)  # the shipped audit
    started = time.monotonic()
    at.sidebar.number_input(key="seed").set_value(7).run()
    assert time.monotonic() - started < 60  # the run returned while the audit is still computing
    assert not at.exception
    assert _background_note(at) and _progress(at), "progress is shown"
    assert any("Histogram gradient boosting on credit_data" in t for t in _progress(at))
    # a cached page renders meanwhile
    at.switch_page("pages/paired_bounds.py").run()
    assert not at.exception and not at.error and at.title and not _background_note(at)
    at.switch_page("pages/overview.py")
    _wait_until_computed(at)
    assert any("seed 7" in c.value and "Histogram gradient boosting" in c.value for c in at.caption)
    assert not _progress(at)


def test_every_page_waits_for_its_audit_without_failing(monkeypatch, reviews_db):
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("AUDIT_FOREGROUND_WAIT_S", "0")
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.run()
    at.sidebar.number_input(key="seed").set_value(11).run()
    for page in ("explorer", "triage", "comparison", "calibration"):
        at.switch_page(f"pages/{page}.py").run()
        assert not at.exception and not at.error, page
        assert at.title and (_background_note(at) or at.metric or at.dataframe), page
    _wait_until_computed(at)  # every page then shows its finished audit; no thread outlives the test
    assert any(m.label.startswith("Global temperature") for m in at.metric)


def test_every_page_has_the_browser_load_vega_lite_first(app):
    """app.py's first element, before it imports the app's modules, has the browser import the
    Vega-Lite bundle at once (ui.preload.preload_vega), in a container hidden by a style-only
    element, so the Overview's charts need not wait for it."""
    from ui.preload import vega_bundle

    bundle = vega_bundle()
    assert bundle is not None, "Streamlit's Vega-Lite bundle is not where preload_vega looks for it"
    scripts = [h.proto for h in app.get("html") if bundle in h.proto.body]
    assert len(scripts) == 1 and scripts[0].unsafe_allow_javascript, scripts
    assert "import(" in scripts[0].body and "requestIdleCallback" not in scripts[0].body
    assert any(
        ".st-key-chart_library_preload, " in h.proto.body and "display: none" in h.proto.body for h in app.get("html")
    )
    first = next(iter(app.main.children.values()))
    assert bundle in first.children[0].proto.body  # the first element of the page


def test_the_overview_has_the_browser_load_plotly_for_the_next_pages(app):
    """The Overview draws Vega-Lite only; its last element has the browser import Streamlit's plotly
    bundle when idle (ui.preload.preload_plotly), so the next page's charts need not wait for it."""
    from ui.preload import plotly_bundle

    bundle = plotly_bundle()
    assert bundle is not None, "Streamlit's plotly bundle is not where preload_plotly looks for it"
    scripts = [h.proto.body for h in app.get("html") if bundle in h.proto.body]
    assert len(scripts) == 1 and "requestIdleCallback" in scripts[0] and "import(" in scripts[0], scripts
    assert all(h.proto.unsafe_allow_javascript for h in app.get("html") if bundle in h.proto.body)
    assert not app.get("plotly_chart")
