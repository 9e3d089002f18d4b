"""AppTest: a saved audit opens like the shipped default — from its tables, its model made only
when a live panel needs it (in the background, with progress), the pages unchanged — and an
uploaded model's audit is saved into the audits folder, to be opened so after a restart."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
import skops.io as sio

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tabular"))
from app_checks import assert_ok, open_overview_tab  # noqa: E402
from own_models import default_tables, hist_gb_pipeline  # noqa: E402
from test_default_audit_app import HEAVY, HEAVY_SUBMODULES  # noqa: E402

from ui.state import OwnModelState  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")
ROOT = Path(__file__).resolve().parents[2]
APP, TIMEOUT = str(ROOT / "app.py"), 180
PAGES = ["overview", "explorer", "triage", "comparison", "calibration"]
PREPARING = "being prepared in the background"


@pytest.fixture(scope="module")
def tool_audit(tmp_path_factory):
    """A tool audit saved as ``python -m core audit --out`` writes it (not the shipped one)."""
    from core.tabular.audit import run_audit

    return run_audit("credit_data", model="logreg", seed=3).save(tmp_path_factory.mktemp("audits") / "credit_logreg")


def _app(monkeypatch, *args):
    from streamlit.testing.v1 import AppTest

    monkeypatch.setattr(sys, "argv", ["app.py", *args])
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.run()
    return at


def test_a_saved_audit_opens_without_any_model_library_and_loads_its_model_on_the_explorer(tmp_path, tool_audit):
    # A fresh interpreter: what opening the folder imports, not what earlier tests left loaded.
    script = f"""
import json, sys, time
sys.argv = ["app.py", "--audit", {str(tool_audit)!r}]
from streamlit.testing.v1 import AppTest
heavy = lambda: sorted(m for m in sys.modules if m.split(".")[0] in {HEAVY!r}
                       or any(m == h or m.startswith(h + ".") for h in {HEAVY_SUBMODULES!r}))
at = AppTest.from_file({APP!r}, default_timeout={TIMEOUT})
at.run()
report = {{"overview": {{"exception": [e.value for e in at.exception], "error": [e.value for e in at.error],
           "glance": any(s.value == "The audit at a glance" for s in at.subheader),
           "charts": {{"vega_lite": len(at.get("vega_lite_chart")), "plotly": len(at.get("plotly_chart"))}},
           "heavy": heavy()}}}}
at.switch_page("pages/explorer.py").run()
report["explorer"] = {{"exception": [e.value for e in at.exception], "error": [e.value for e in at.error],
                      "preparing": sum("{PREPARING}" in i.value for i in at.info),
                      "progress": len(at.get("progress")), "certificate": any(m.label == "FDS (risk)" for m in at.metric),
                      "pills": len(at.pills)}}
deadline = time.monotonic() + 600
while not at.pills and time.monotonic() < deadline:
    time.sleep(0.5)
    at.run()
report["later"] = {{"exception": [e.value for e in at.exception], "error": [e.value for e in at.error],
                   "preparing": sum("{PREPARING}" in i.value for i in at.info), "pills": len(at.pills),
                   "exact": any(m.label == "Exact minimum" for m in at.metric), "skops": "skops" in sys.modules}}
print(json.dumps(report))
"""
    env = {**__import__("os").environ, "AUDIT_REVIEWS_DB": str(tmp_path / "r.sqlite3"), "AUDIT_FOREGROUND_WAIT_S": "0"}
    out = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, timeout=900, check=True
    )
    report = json.loads(out.stdout.strip().splitlines()[-1])
    overview, explorer, later = report["overview"], report["explorer"], report["later"]
    assert not overview["exception"] and not overview["error"], overview
    assert overview["glance"] and overview["charts"] == {"vega_lite": 2, "plotly": 0}, overview
    assert overview["heavy"] == [], "opening a saved audit reads its tables only"
    # The explorer draws the certificate at once; its two live panels say the model is coming.
    assert not explorer["exception"] and not explorer["error"], explorer
    assert explorer["certificate"] and explorer["preparing"] == 2 and explorer["progress"] == 1, explorer
    assert explorer["pills"] == 0
    # ... and fill in by themselves once it is read (skops imported only now).
    assert not later["exception"] and not later["error"], later
    assert later["pills"] == 1 and later["exact"] and later["preparing"] == 0 and later["skops"], later


def _dump(at) -> list:
    """What a page shows, element by element (text, numbers, tables, chart data)."""
    out = []
    for kind in ("title", "subheader", "markdown", "caption", "info", "warning", "error"):
        out += [(kind, e.value) for e in at.get(kind)]
    out += [("metric", m.label, m.value, m.proto.delta) for m in at.metric]
    out += [("table", d.value.to_json()) for d in at.dataframe]
    out += [("pills", list(p.options)) for p in at.pills]
    for chart in at.get("plotly_chart"):
        spec = json.loads(chart.proto.spec)
        out.append(("plotly", spec["data"], spec["layout"]))
    out += [("vega", c.proto.spec) for c in at.get("vega_lite_chart")]
    return out


def _every_page(monkeypatch, folder) -> dict[str, list]:
    import streamlit as st

    st.cache_resource.clear()  # each path opens the folder afresh
    st.cache_data.clear()
    at = _app(monkeypatch, "--audit", str(folder))
    pages = {}
    for page in PAGES:
        at.switch_page(f"pages/{page}.py").run()
        assert_ok(at)
        pages[page] = _dump(at)
        if page == "overview":  # and its other tabs (each drawn once opened)
            for tab in ("Data", "Saved files"):
                open_overview_tab(at, tab)
                pages[page] += _dump(at)
    return pages


def test_every_page_shows_what_the_eager_path_showed(monkeypatch, reviews_db, tool_audit):
    """The folder opened lazily (tables now, model on first use) against the path before it: the
    model loaded with the folder, used directly."""
    import ui.own_model as own_model
    from core.tabular import audit_folder

    lazy = _every_page(monkeypatch, tool_audit)
    monkeypatch.setattr(own_model, "open_audit_folder", lambda path, **_: audit_folder.open_audit_folder(path))
    monkeypatch.setattr(own_model, "saved_result", lambda saved, **_: audit_folder.saved_result(saved))
    eager = _every_page(monkeypatch, tool_audit)
    for page in PAGES:
        assert lazy[page] == eager[page], page
    assert any(e[0] == "pills" for e in lazy["explorer"]), "the what-if was compared with its model"
    shown = json.dumps(lazy, default=str)
    assert tool_audit.name in shown, "the folder is named by its name"
    assert str(tool_audit.parent) not in shown, "no page shows where the folder lies on the server"


def _upload_state(train, test, *, trust):
    return {
        "kind": "upload",
        "target": "default",
        "trust": trust,
        "feature_order": None,
        "files": {
            "model": ("credit pipe.skops", sio.dumps(hist_gb_pipeline(train))),
            "test": ("test.csv", test.to_csv(index=False).encode()),
            "train": ("train.csv", train.to_csv(index=False).encode()),
        },
    }


TRUST = ["sklearn.ensemble._hist_gradient_boosting.predictor.TreePredictor"]


def test_an_uploaded_models_audit_is_saved_into_the_audits_folder_and_reopens(
    monkeypatch, reviews_db, _audits_dir, tmp_path
):
    train, test = default_tables(n_train=1200, n_test=150)
    upload = _upload_state(train, test, trust=TRUST)
    at = _app(monkeypatch)
    at.session_state[OwnModelState.audit.key] = upload
    at.run()
    assert_ok(at)
    saved = [c.value for c in at.sidebar.caption if "Saved in the audits folder as" in c.value]
    assert len(saved) == 1, [c.value for c in at.sidebar.caption]
    folders = list(_audits_dir.iterdir())
    assert len(folders) == 1 and folders[0].name.startswith("credit_pipe-"), folders
    assert f"**{folders[0].name}**" in saved[0] and str(_audits_dir) not in saved[0], "its name, not a server path"
    live = [m for m in at.metric]
    # The same upload after a restart (no job, no cache) finds its folder and writes no second one.
    import streamlit as st

    st.cache_resource.clear()
    again = _app(monkeypatch)
    again.session_state[OwnModelState.audit.key] = upload
    again.run()
    assert_ok(again)
    assert list(_audits_dir.iterdir()) == folders
    assert [c.value for c in again.sidebar.caption if "Saved in the audits folder as" in c.value] == saved
    # After a restart: offered under *Open a saved audit*, shown from its tables.
    reopened = _app(monkeypatch)
    reopened.session_state[OwnModelState.folders_open.key] = True  # as a click on the expander sets it
    reopened.run()
    assert reopened.sidebar.selectbox(key="own_folder").options == [folders[0].name]
    reopened.sidebar.button(key="own_open").click().run()
    assert_ok(reopened)
    assert any(f"Saved audit: {folders[0].name}" in s.value for s in reopened.subheader)
    assert [(m.label, m.value) for m in reopened.metric] == [(m.label, m.value) for m in live]


def test_an_audits_folder_that_cannot_be_written_leaves_the_audit_shown(monkeypatch, reviews_db, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("a regular file where the audits folder should be")
    monkeypatch.setenv("AUDIT_AUDITS_DIR", str(blocker / "audits"))
    train, test = default_tables(n_train=1200, n_test=150)
    at = _app(monkeypatch)
    at.session_state[OwnModelState.audit.key] = _upload_state(train, test, trust=TRUST)
    at.run()
    assert not at.exception
    assert any("Showing **your model credit pipe.skops**" in c.value for c in at.sidebar.caption)
    warning = [w.value for w in at.sidebar.warning]
    assert len(warning) == 1 and "could not be saved in the audits folder" in warning[0], warning
    assert str(tmp_path) not in warning[0], "no server path"
    for page in PAGES:
        at.switch_page(f"pages/{page}.py").run()
        assert not at.exception and not at.error, page


def test_a_model_that_fails_in_the_background_turns_the_live_panels_off(monkeypatch, reviews_db, tool_audit, tmp_path):
    import shutil

    folder = shutil.copytree(tool_audit, tmp_path / "truncated")
    data = (folder / "_task.zip").read_bytes()
    (folder / "_task.zip").write_bytes(data[: len(data) // 2])
    monkeypatch.setenv("AUDIT_FOREGROUND_WAIT_S", "0")
    at = _app(monkeypatch, "--audit", str(folder))
    assert_ok(at)
    at.switch_page("pages/explorer.py").run()
    assert_ok(at)
    deadline = time.monotonic() + 300
    while any(PREPARING in i.value for i in at.info):
        assert time.monotonic() < deadline, "the model load never ended"
        time.sleep(0.5)
        at.run()
    assert_ok(at)
    off = [i.value for i in at.info if " is off:" in i.value]
    assert len(off) == 2 and all("_task.zip" in v and "could not be loaded" in v for v in off), off
    assert not at.pills
